/* mdflow — a model as the compute pipeline (dataflow/compute.c) sees it:
 * its registered definition (mdflow/extension.h), the parameter blob
 * registered once as a StarPU handle, and what its setup said. */
#ifndef MDF_MODEL_INTERNAL_H
#define MDF_MODEL_INTERNAL_H

#include <starpu.h>
#include "mdflow/extension.h"
#include "mdflow/model.h"

/* What a model evaluation must produce beyond energies and forces. */
#define MDF_COMPUTE_VIRIAL 1

/* The handles one model task works on (the codelet's buffers, in order). */
typedef struct mdf_model_task {
    starpu_data_handle_t pos, atoms, sys, list, bins, forces, results;
    starpu_data_handle_t aux;  /* the shard's auxiliary values (models with a pass), else NULL */
    mdf_chunk chunk;
    int flags;             /* MDF_COMPUTE_* */
    int32_t status_lo, status_hi; /* evaluate only systems with a status in
                                   * [lo, hi]; the others keep their results */
    int partial;           /* 1: forces and results are the chunk's part,
                            * summed by mdf_reduce (see reduce_kernel.h) */
    int32_t halo_at;       /* mdf_model_args.halo_at */
    int32_t fuse_aux;      /* mdf_model_args.fuse_aux (no auxiliary task for this chunk) */
    int32_t halo_owned;    /* mdf_model_args.halo_owned */
} mdf_model_task;

struct mdf_model {
    const mdf_model_def *def;
    struct starpu_codelet *cl;    /* the registry's, built from def (one per name) */
    struct starpu_codelet *aux_cl; /* its auxiliary pass (def->aux_per_atom > 0), else NULL */
    void *blob;                   /* the setup's device parameters */
    starpu_data_handle_t params;  /* blob, registered once, cached on each device */
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
    char missing_element_hint[512]; /* the setup's advice for another element ("": the default) */
    /* Bytes of the parameters that checkpoints' fingerprints leave out: a
     * machine setting, not physics (the LJ model's CPU instruction set). */
    size_t fingerprint_skip_off, fingerprint_skip_len;
    char label[320];              /* setup's label, or "the NAME model" */
};

/* The radius of mdflow's neighbour lists for this model: cutoff + skin, or
 * a token one for a model that finds its own neighbours. */
double mdf_model_list_radius(const mdf_model *m, double skin);
/* Whether the model finds its neighbours itself (MDF_MODEL_OWN_NEIGHBOURS). */
int mdf_model_own_neighbours(const mdf_model *m);
/* The error for element z of atom `atom` of system `index` (id) that the
 * model lacks. */
mdf_status mdf_model_element_error(const mdf_model *m, size_t index, long long id, long long atom, int z,
                                   mdf_error *err);

/* Submits the model's task for one chunk; 0 or StarPU's error code. */
int mdf_model_insert(const mdf_model *m, const mdf_model_task *t);
/* mdf_model_insert in two halves (mdf_task_submit or mdf_task_drop the
 * task): on CPUs the chunk's list build writes the task's work, its atoms
 * plus neighbour pairs, into *mdf_model_task_work before it is placed.
 * NULL when out of memory. */
struct starpu_task *mdf_model_prepare(const mdf_model *m, const mdf_model_task *t);
int64_t *mdf_model_task_work(struct starpu_task *task);
/* Submits the auxiliary pass of one chunk, writing `aux_rows` (the chunk's
 * rows, or the shard's whole array when the chunk is the shard's only one). */
int mdf_model_insert_aux(const mdf_model *m, const mdf_model_task *t, starpu_data_handle_t aux_rows);
/* What a system with an element the model lacks is told after "...has no
 * parameters in the NAME model: ". */
static inline const char *mdf_model_missing_element_hint(const mdf_model *m)
{
    return m->missing_element_hint[0] ? m->missing_element_hint : "add it to the model's species";
}
/* Doubles per atom of the model's auxiliary pass (0: none). */
static inline int32_t mdf_model_aux_per_atom(const mdf_model *m) { return m->aux_cl ? m->def->aux_per_atom : 0; }

/* Builds a model of definition d from what its setup produced (takes the
 * blob, also on failure). */
mdf_status mdf_model_from_setup(const mdf_model_def *d, mdf_model_setup *s, mdf_model **out, mdf_error *err);

/* The registries fill themselves on first use with the built-ins
 * (stages/registry.c), through the public mdf_register_* calls. */
mdf_status mdf_register_builtins(mdf_error *err);

#endif
