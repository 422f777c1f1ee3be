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
    mdf_host_view_fn fn;
    void *user;
} mdf_host_view_args;

void mdf_host_view_cpu(void *buffers[], void *cl_arg);
/* buffers: sys R, res R, token RW */
int mdf_insert_host_view(starpu_data_handle_t sys, starpu_data_handle_t res, starpu_data_handle_t token,
                         const mdf_host_view_args *args);

#endif
