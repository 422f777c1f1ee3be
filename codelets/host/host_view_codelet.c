/* mdflow — the host-view codelet (CPU only: it talks to the host). */
#include <errno.h>
#include "host_view_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(host_view_model, "mdf_host_view");

void mdf_host_view_cpu(void *buffers[], void *cl_arg)
{
    const mdf_host_view_args *args = (const mdf_host_view_args *)cl_arg;
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_sys_result *res = (const mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[1]);
    args->fn(args->user, args, sys, res);
}

static struct starpu_codelet host_view_cl = {
    .cpu_funcs = {mdf_host_view_cpu},
    .cpu_funcs_name = {"mdf_host_view_cpu"},
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_RW},
    .model = &host_view_model,
    .name = "mdf_host_view",
};

int mdf_insert_host_view(starpu_data_handle_t sys, starpu_data_handle_t res, starpu_data_handle_t token,
                         const mdf_host_view_args *args)
{
    /* StarPU accepts a task that no worker can run when it waits on others,
     * and a scheduler such as ws then spins for ever looking for a worker
     * once it is ready (seen on a GPU node with STARPU_NCPU=0): refuse it. */
    if (starpu_cpu_worker_get_count() == 0) return -ENODEV;
    starpu_data_handle_t h[] = {sys, res, token};
    return mdf_submit(&host_view_cl, args, sizeof *args, 3, h, NULL, "mdf_host_view");
}
