/* mdflow — what a hook provides to a stage (internal). A new built-in hook
 * is one file defining an mdf_hook_ops and a public constructor; its
 * kernels, if it touches per-atom data, go in codelets/hooks/.
 *
 * The stage calls begin() once per run, submit() for each shard at each
 * step where the hook is due (step % every == 0), and end() after every task
 * finished. Errors found inside tasks go to the run's control block
 * (mdf_run_fail), which stops the submission of further steps; end() may
 * also return an error (a write that failed at close). */
#ifndef MDF_HOOK_INTERNAL_H
#define MDF_HOOK_INTERNAL_H

#include <pthread.h>
#include <stdio.h>
#include "../dataflow/batch_internal.h"
#include "../codelets/host/host_view_codelet.h"
#include "../codelets/hooks/hooks_codelet.h"
#include "mdflow/hook.h"
#include "mdflow/stage.h"

/* A run's shared error state: the first failure wins; tasks set it, the host
 * loop polls `stop` after each step and submits no further steps. */
typedef struct mdf_run_control {
    pthread_mutex_t lock;
    volatile int stop;
    mdf_error err;
} mdf_run_control;

void mdf_run_control_init(mdf_run_control *c);
void mdf_run_control_destroy(mdf_run_control *c);
/* Records a failure (thread-safe; the first one is kept) and stops the run. */
void mdf_run_fail(mdf_run_control *c, mdf_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* What a hook learns when a run starts. */
typedef struct mdf_hook_begin {
    mdf_batch *b;
    mdf_run_control *ctl;
    int32_t status, converged_status;
    double dt_fs;
    int64_t max_steps;
    int window;          /* steps the host keeps in flight */
} mdf_hook_begin;

/* One submission: one shard at one step. */
typedef struct mdf_hook_ctx {
    mdf_batch *b;
    const mdf_shard *sh;
    starpu_data_handle_t token;  /* per-shard sequence token: host-side tasks take it RW */
    mdf_hook_point point;
    int64_t step;                /* the stage's step (0: starting evaluation) */
    int64_t first_row;           /* slot of the shard's first system (rows run over
                                  * [0, batch sys_cap); a slot is the batch index
                                  * in a batch without spare capacity) */
    int32_t status;              /* the (sub-)stage's systems */
    int32_t target;              /* where its converged systems go */
    mdf_run_control *ctl;
    mdf_dof_rule dof;            /* the stage's methods, for temperatures */
    int64_t work;                /* atoms of the (sub-)stage's systems in the shard at
                                  * the latest census: its tasks' model size */
} mdf_hook_ctx;

/* What every built-in hook codelet takes for shard c->sh: its model size,
 * the shard's atoms (a CUDA task's range), systems and the stage's status.
 * A hook adds its own fields (max_force, action). */
static inline mdf_hooks_args mdf_hooks_args_of(const mdf_hook_ctx *c)
{
    return (mdf_hooks_args){.work = c->work, .natoms = c->sh->natoms, .nsys = c->sh->nsys, .status = c->status};
}

/* ops->needs: what the step must compute on the hook's due steps. */
#define MDF_HOOK_NEEDS_FMAX 1    /* res.fmax fresh (the convergence task runs) */
#define MDF_HOOK_NEEDS_VIRIAL 2  /* res.virial fresh */

typedef struct mdf_hook_ops {
    const char *kind;
    unsigned needs;
    mdf_status (*begin)(mdf_hook *h, const mdf_hook_begin *b, mdf_error *err); /* optional */
    int (*submit)(mdf_hook *h, const mdf_hook_ctx *c);  /* StarPU's return code */
    mdf_status (*end)(mdf_hook *h, mdf_error *err);     /* optional */
    void (*destroy_impl)(void *impl);                    /* optional */
    /* Checkpoints (optional; called with no task pending): save writes the
     * hook's position in its outputs (e.g. systems stored by its sinks) to
     * buf (at most cap bytes) and returns the size used (-1: too small);
     * restore returns the outputs to that position when a run resumes. */
    long (*save)(mdf_hook *h, void *buf, size_t cap);
    mdf_status (*restore)(mdf_hook *h, const void *buf, size_t n, mdf_error *err);
} mdf_hook_ops;

struct mdf_hook {
    const mdf_hook_ops *ops;
    mdf_hook_point point;
    int64_t every;
    char name[64];
    void *impl;
};

/* Allocates a hook with the given ops and impl (owned from then on, also on
 * failure, when destroy_impl frees it). */
mdf_status mdf_hook_new(const mdf_hook_ops *ops, const char *name, mdf_hook_point point, int64_t every,
                        void *impl, mdf_hook **out, mdf_error *err);

/* Rows of a shard's systems as host-side hooks see them (sys, res on the
 * host); fills rows[0..n) for systems passing `keep` and returns n.
 *   keep: 0 every system, 1 the (sub-)stage's systems (status) and those
 *         that just left it (now target, CONVERGED_NOW), 2 only the latter.
 * dof: which methods conserve the momentum (the temperatures' degrees of
 * freedom, mdf_dof); NULL: all of them. */
size_t mdf_hook_rows(const mdf_sys_info *sys, const mdf_sys_result *res, int32_t nsys, int32_t status,
                     int32_t target, int keep, const mdf_dof_rule *dof, mdf_hook_row *rows);

#endif
