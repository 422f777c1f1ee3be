/* mdflow — the model-evaluation pipeline of a batch (internal).
 *
 * Per shard and per evaluation:
 *   nl_bin (pos R, sys R, bins RW)                    one task
 *   nl_build[c] (…, bins R, list[c] RW)               one per chunk
 *   model[c] (pos R, list[c] R, …, forces/results)    one per chunk
 *   reduce (parts R, force W, res RW)                 only if chunks > 1
 * All ordering comes from the access modes. */
#ifndef MDF_COMPUTE_H
#define MDF_COMPUTE_H

#include "batch_internal.h"
#include "model_internal.h"

typedef struct mdf_compute_config {
    double skin;          /* Å, added to the cutoff for the lists */
    int32_t rebuild_every;   /* mdf_stage_config.rebuild_every */
    int32_t rebuild_nocheck; /* mdf_stage_config.rebuild_nocheck */
    int32_t chunk_atoms;  /* atoms per model task before a shard is split;
                           * 0: automatic (from batch size and workers) */
    int32_t status_lo, status_hi; /* only systems with a status in [lo, hi]
                                   * are evaluated (default: all) */
} mdf_compute_config;

typedef struct mdf_compute mdf_compute;

void mdf_compute_config_init(mdf_compute_config *cfg);
/* Validates the batch against the model (elements known, cutoff + skin within
 * half of every periodic width) and allocates the per-shard workspaces. */
mdf_status mdf_compute_create(mdf_batch *b, mdf_model *m, const mdf_compute_config *cfg,
                              mdf_compute **out, mdf_error *err);
void mdf_compute_destroy(mdf_compute *c);
/* After a refill, before `to` (a new pipeline over the same batch) submits
 * anything: every system that was in `from` keeps its binning, and its
 * lists are made again from the positions of that binning, as they were.
 * A system's lists therefore change only when the system itself needs it
 * (never at the step a refill happened), which keeps its order of
 * summation. Tasks of `from` must be done. With CUDA workers, the lists
 * are rebuilt from the current positions instead. */
mdf_status mdf_compute_carry_lists(mdf_compute *to, const mdf_compute *from, mdf_error *err);
/* Submits one model evaluation of shard k; flags: MDF_COMPUTE_*. */
mdf_status mdf_compute_submit(mdf_compute *c, int k, int flags, mdf_error *err);
/* The virial of every system at `status`, evaluated now at its positions
 * (after every submitted task is done; waits for its own): a model
 * evaluation of just those systems on a pipeline of its own, into scratch,
 * of which only the virials (and virial_fresh) are copied into the batch.
 * No force, energy or list of any system changes, hooks' changes to forces
 * included. For systems that left a run on a step without the virial. */
mdf_status mdf_compute_refresh_virials(mdf_batch *b, mdf_model *m, double skin, int32_t status, mdf_error *err);
/* Model evaluations submitted so far (per shard, identical across shards). */
int64_t mdf_compute_evaluations(const mdf_compute *c);

/* Statistics after a sync: list rebuilds summed over systems, atoms whose
 * neighbours exceeded the list slots at their last build, largest count. */
typedef struct mdf_compute_stats {
    int64_t rebuilds;
    int64_t overflowed_atoms;
    int32_t max_neighbours;
    int32_t slots;
    int nchunks;
} mdf_compute_stats;
mdf_status mdf_compute_get_stats(mdf_compute *c, mdf_compute_stats *out, mdf_error *err);
/* Whether a frame can be evaluated by model m with lists of this skin
 * (elements known, cutoff + skin within half of every periodic width): the
 * check mdf_compute_create makes, before a frame enters a batch. */
mdf_status mdf_compute_check_frame(const mdf_model *m, double skin, const mdf_frame *f, size_t index, int64_t id,
                                   mdf_error *err);

/* Rebuild counter of one system (batch order), after a sync. */
int64_t mdf_compute_system_rebuilds(mdf_compute *c, size_t i);

#endif
