/* mdflow — sink codelets and their performance models. */
#include <stdlib.h>
#include <string.h>
#include "sink_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(pack_model, "mdf_sink_pack");
MDF_PERFMODEL(device_append_model, "mdf_sink_device_append");
MDF_PERFMODEL(device_init_model, "mdf_sink_device_init");
MDF_PERFMODEL(sink_host_model, "mdf_sink_host_write");
MDF_PERFMODEL(sink_check_model, "mdf_sink_check");

static struct starpu_codelet pack_cl = {
    .cpu_funcs = {mdf_pack_cpu},
    .cpu_funcs_name = {"mdf_pack_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_pack_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 8,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W, STARPU_W},
    .model = &pack_model,
    .name = "mdf_sink_pack",
};

static struct starpu_codelet device_append_cl = {
    .cpu_funcs = {mdf_device_append_cpu},
    .cpu_funcs_name = {"mdf_device_append_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_device_append_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 4,
    .modes = {STARPU_RW, STARPU_RW, STARPU_R, STARPU_RW},
    .model = &device_append_model,
    .name = "mdf_sink_device_append",
};

static struct starpu_codelet device_init_cl = {
    .cpu_funcs = {mdf_device_init_cpu},
    .cpu_funcs_name = {"mdf_device_init_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_device_init_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_W, STARPU_W},
    .model = &device_init_model,
    .name = "mdf_sink_device_init",
};

static void sink_host_cpu(void *buffers[], void *cl_arg)
{
    const mdf_sink_host_args *a = (const mdf_sink_host_args *)cl_arg;
    a->fn(a->user, (const void *)STARPU_VECTOR_GET_PTR(buffers[0]), (int64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
          a->sys_cap, a->atom_cap);
}

static void sink_check_cpu(void *buffers[], void *cl_arg)
{
    const mdf_sink_host_args *a = (const mdf_sink_host_args *)cl_arg;
    a->fn(a->user, NULL, (int64_t *)STARPU_VECTOR_GET_PTR(buffers[0]), a->sys_cap, a->atom_cap);
}

static struct starpu_codelet sink_host_cl = {
    .cpu_funcs = {sink_host_cpu},
    .cpu_funcs_name = {"mdf_sink_host_cpu"},
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_RW, STARPU_RW},
    .model = &sink_host_model,
    .name = "mdf_sink_host_write",
};

static struct starpu_codelet sink_check_cl = {
    .cpu_funcs = {sink_check_cpu},
    .cpu_funcs_name = {"mdf_sink_check_cpu"},
    .nbuffers = 1,
    .modes = {STARPU_R},
    .model = &sink_check_model,
    .name = "mdf_sink_check",
};

int mdf_insert_pack(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                    starpu_data_handle_t atoms, starpu_data_handle_t sys, starpu_data_handle_t res,
                    starpu_data_handle_t buf, starpu_data_handle_t cnt, const mdf_pack_args *a)
{
    starpu_data_handle_t h[] = {pos, vel, force, atoms, sys, res, buf, cnt};
    return mdf_submit(&pack_cl, a, sizeof *a, 8, h, NULL, "mdf_sink_pack");
}

int mdf_insert_device_append(starpu_data_handle_t store, starpu_data_handle_t len, starpu_data_handle_t buf,
                             starpu_data_handle_t cnt, const mdf_device_append_args *a)
{
    starpu_data_handle_t h[] = {store, len, buf, cnt};
    return mdf_submit(&device_append_cl, a, sizeof *a, 4, h, NULL, "mdf_sink_device_append");
}

int mdf_insert_device_init(starpu_data_handle_t store, starpu_data_handle_t len, const mdf_device_append_args *a,
                           int worker)
{
    struct starpu_task *task = starpu_task_create();
    if (!task) return -ENOMEM;
    mdf_device_append_args *copy = malloc(sizeof *copy);
    if (!copy) {
        starpu_task_destroy(task);
        return -ENOMEM;
    }
    *copy = *a;
    task->cl = &device_init_cl;
    task->cl_arg = copy;
    task->cl_arg_size = sizeof *copy;
    task->cl_arg_free = 1;
    task->name = "mdf_sink_device_init";
    task->handles[0] = store;
    task->handles[1] = len;
    if (worker >= 0) {
        task->execute_on_a_specific_worker = 1;
        task->workerid = (unsigned)worker;
    }
    int ret = starpu_task_submit(task);
    if (ret != 0) {
        task->destroy = 0;
        starpu_task_destroy(task);
    }
    return ret;
}

int mdf_insert_sink_host(starpu_data_handle_t buf, starpu_data_handle_t cnt, starpu_data_handle_t token,
                         const mdf_sink_host_args *a)
{
    starpu_data_handle_t h[] = {buf, cnt, token};
    return mdf_submit(&sink_host_cl, a, sizeof *a, 3, h, NULL, "mdf_sink_host_write");
}

int mdf_insert_sink_check(starpu_data_handle_t cnt, const mdf_sink_host_args *a)
{
    starpu_data_handle_t h[] = {cnt};
    return mdf_submit(&sink_check_cl, a, sizeof *a, 1, h, NULL, "mdf_sink_check");
}
