/* mdflow — the host-view codelet: a CPU task that hands a shard's
 * per-system arrays (sys, res) to a host function. It is how hooks that talk
 * to the host (logs, callbacks, the run's census) learn energies and
 * statuses without the host waiting: StarPU brings the two small arrays to
 * main memory before it runs. A per-shard token taken RW orders these tasks
 * in submission order. */
#ifndef MDF_HOST_VIEW_CODELET_H
#define MDF_HOST_VIEW_CODELET_H

#include <starpu.h>
#include "../common/mdf_kernel_common.h"

/* Which degrees of freedom a system's kinetic energy has (mdf_dof): the
 * method that computed it conserves the total momentum or not. A stage's
 * parts have the statuses lo .. lo + nparts - 1; a system's kinetic energy
 * is that of the part serving its status, or of the part before when it
 * has just moved on (CONVERGED_NOW); the exit status lo + nparts belongs
 * to the last part, any other status to part `own` (the hook's). A rule
 * with no parts counts every method as conserving the momentum. */
typedef struct mdf_dof_rule {
    int32_t lo, nparts, own;
    uint32_t momentum;     /* bit k: part k's method conserves the total momentum */
} mdf_dof_rule;

static inline int mdf_dof_rule_momentum(const mdf_dof_rule *r, const mdf_sys_info *s)
{
    if (!r || r->nparts <= 0) return 1;
    int32_t k = s->status - ((s->flags & MDF_SYS_CONVERGED_NOW) ? 1 : 0) - r->lo;
    if (k == r->nparts) k = r->nparts - 1;
    if (k < 0 || k >= r->nparts) k = r->own;
    return (r->momentum >> k) & 1u;
}

struct mdf_host_view_args;
typedef void (*mdf_host_view_fn)(void *user, const struct mdf_host_view_args *a, const mdf_sys_info *sys,
                                 const mdf_sys_result *res);

typedef struct mdf_host_view_args {
    int64_t work;          /* systems in the shard */
    int64_t step;          /* the stage's step */
    int64_t first_row;     /* batch index of the shard's first system */
    int32_t nsys;
    int32_t status;        /* the (sub-)stage's status */
    int32_t target;        /* where its converged systems go */
    int32_t shard;
    int32_t point;         /* mdf_hook_point, or -1 */
    mdf_dof_rule dof;      /* the stage's methods (temperatures) */
    mdf_host_view_fn fn;
    void *user;
} mdf_host_view_args;

void mdf_host_view_cpu(void *buffers[], void *cl_arg);
/* buffers: sys R, res R, token RW */
int mdf_insert_host_view(starpu_data_handle_t sys, starpu_data_handle_t res, starpu_data_handle_t token,
                         const mdf_host_view_args *args);

#endif
