/* mdflow — the stage's side of a method (internal): what an
 * mdf_method_ctx holds, and registry numbers for state ownership.
 *
 * Methods themselves (stages/velocity_verlet.c, ..., and plugins) see only
 * mdflow/extension.h: the context is opaque to them, and they reach the
 * shard through the mdf_method_* accessors (stages/method_ctx.c). */
#ifndef MDF_METHOD_INTERNAL_H
#define MDF_METHOD_INTERNAL_H

#include "../dataflow/batch_internal.h"
#include "mdflow/extension.h"
#include "mdflow/stage.h"

/* One method step of one shard, as the stage hands it to pre_update and
 * post_update: built on the stack per call, valid only during it. */
struct mdf_method_ctx {
    const mdf_shard *sh;             /* pos, vel, force, atoms, sys, res, state */
    starpu_data_handle_t work;       /* per-shard workspace (work_bytes), else NULL */
    const void *params;              /* the method's block (params_size bytes) */
    const mdf_dynamics_params *p;    /* stage-wide: dt_fs, temperature_K, seed */
    double dt;                       /* p->dt_fs in internal time units */
    int32_t status;                  /* the stage's systems */
    int64_t step;                    /* the stage's step (1, 2, ...) */
    double r_list;                   /* cutoff + skin of the run's lists, Å */
    int64_t task_work;               /* mdf_method_task_work */
};

/* 1-based registry number of a method (0 if it is not registered): what
 * mdf_sys_state.method records, so that a block written by one method is
 * not read by another. Built-ins keep their numbers (registry order). */
int32_t mdf_method_number(const mdf_method *m);

static inline int mdf_method_has(const mdf_method *m, unsigned flag) { return m && (m->flags & flag) != 0; }

/* A built-in method's post_update of step s and pre_update of step s + 1
 * as one CPU task (the same arithmetic in the same order): the stage uses
 * it where nothing runs between the two (stages/stage.c, fuse_post_pre).
 * NULL for the others, plugins' included (mdf_method has no such entry:
 * adding one would change the plugin API). */
typedef int (*mdf_method_post_pre_fn)(const mdf_method_ctx *post, const mdf_method_ctx *pre);
mdf_method_post_pre_fn mdf_method_post_pre(const mdf_method *m);

#endif
