/* mdflow — inflight batching: a size-aware sampler over a dataset feeds a
 * batch whose finished systems are replaced in place.
 *
 * The sampler holds the dataset's systems in input order. Each time a batch
 * has room, mdf_sampler_take chooses waiting systems for it: first the oldest
 * waiting system (so none starves and results come out roughly in input
 * order), then, while room is left, the largest waiting system that fits.
 * The atom and pair budgets are bounds that the systems in flight stay
 * below (pairs counted within pair_cutoff); the system budget is a
 * maximum. Over sizes
 * [5, 5, 5, 12, 15] with a budget of 20 atoms it takes {5, 12}; with 60
 * atoms over {5, 10, 20, 50} it takes 5, then 50; with 35 atoms over ten
 * systems of 10 it takes 3. A system that could never fit (as large as a
 * budget) is refused when the sampler is created, with an error naming it.
 * The sampler only chooses: mdf_stage_run_inflight places the systems. */
#ifndef MDFLOW_SAMPLER_H
#define MDFLOW_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include "mdflow/error.h"
#include "mdflow/frame.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mdf_sampler_config {
    int64_t max_atoms;     /* atoms in flight stay below this (required, > 0) */
    int64_t max_pairs;     /* neighbour pairs in flight stay below this (0: no limit) */
    int64_t max_systems;   /* at most this many systems in flight (0: no limit) */
    double pair_cutoff;    /* Å, distance that makes a pair (needed with max_pairs) */
} mdf_sampler_config;

void mdf_sampler_config_init(mdf_sampler_config *cfg);

typedef struct mdf_sampler mdf_sampler;

/* Over frames[0..n) (borrowed: they must outlive the sampler). The id of
 * frame i is i unless it carries an "mdf_system_id" info key. */
mdf_status mdf_sampler_create(const mdf_frame *frames, size_t n, const mdf_sampler_config *cfg, mdf_sampler **out,
                              mdf_error *err);
void mdf_sampler_destroy(mdf_sampler *s);

size_t mdf_sampler_size(const mdf_sampler *s);       /* systems in the dataset */
mdf_sampler_config mdf_sampler_get_config(const mdf_sampler *s);
size_t mdf_sampler_remaining(const mdf_sampler *s);  /* not yet taken */
int64_t mdf_sampler_atoms(const mdf_sampler *s, size_t i);
int64_t mdf_sampler_pairs(const mdf_sampler *s, size_t i);
const mdf_frame *mdf_sampler_frame(const mdf_sampler *s, size_t i);

/* Chooses waiting systems that fit in the given room (atoms, pairs, systems
 * still free below the budgets; a negative value means unlimited) and marks
 * them taken; writes their dataset indices to out (at most max_out) in the
 * order chosen and returns how many. */
size_t mdf_sampler_take(mdf_sampler *s, int64_t free_atoms, int64_t free_pairs, int64_t free_systems, size_t *out,
                        size_t max_out);

#ifdef __cplusplus
}
#endif
#endif
