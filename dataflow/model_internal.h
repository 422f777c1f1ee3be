/* mdflow — what a model provides to the compute pipeline (dataflow/compute.c).
 * A model is a pair codelet over the neighbour lists plus its parameters. */
#ifndef MDF_MODEL_INTERNAL_H
#define MDF_MODEL_INTERNAL_H

#include <starpu.h>
#include "mdflow/model.h"
#include "../codelets/common/mdf_kernel_common.h"

/* The handles one model task works on (see codelets/lj/lj_codelet.h). */
/* What a model evaluation must produce beyond energies and forces. */
#define MDF_COMPUTE_VIRIAL 1

typedef struct mdf_model_task {
    starpu_data_handle_t pos, atoms, sys, list, bins, forces, results;
    mdf_chunk chunk;
    int flags;             /* MDF_COMPUTE_* */
    int32_t status_lo, status_hi; /* evaluate only systems with a status in
                                   * [lo, hi]; the others keep their results */
    int partial;           /* 1: forces and results are the chunk's part,
                            * summed by mdf_reduce (see reduce_kernel.h) */
} mdf_model_task;

typedef struct mdf_model_ops {
    const char *name;
    int (*insert)(const mdf_model *m, const mdf_model_task *t);
    void (*destroy)(mdf_model *m);
} mdf_model_ops;

struct mdf_model {
    const mdf_model_ops *ops;
    void *impl;                   /* model-owned host data */
    starpu_data_handle_t params;  /* registered once, cached on each device */
    double cutoff;                /* largest cutoff, Å */
    double density_hint;          /* highest number density expected, 1/Å³:
                                   * sizes the neighbour-list slots */
    int32_t all_pairs_atoms;      /* > 0: the CPU model evaluates every pair of
                                   * an open system of at most this many atoms
                                   * whose bins the neighbour lists flag
                                   * (mdf_nl_grid.all_pairs): no list needed */
    int32_t all_pairs_small;      /* ...always at most this many atoms... */
    double all_pairs_ratio;       /* ...else when all pairs are at most this
                                   * many times the pairs within the list radius */
    int known_z[128];             /* 1 where the model has the element */
    /* Bytes of the parameters that checkpoints' fingerprints leave out: a
     * machine setting, not physics (the LJ model's CPU instruction set). */
    size_t fingerprint_skip_off, fingerprint_skip_len;
};

#endif
