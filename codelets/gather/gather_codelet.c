/* mdflow — the gather codelet (CPU and CUDA copies) and its performance model. */
#include <errno.h>
#include <string.h>
#include "gather_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(gather_model, "mdf_gather");

void mdf_gather_cpu(void *buffers[], void *cl_arg)
{
    const mdf_gather_args *a = (const mdf_gather_args *)cl_arg;
    double *whole = (double *)STARPU_VECTOR_GET_PTR(buffers[a->nparts]);
    for (int32_t p = 0; p < a->nparts; p++)
        memcpy(whole + (size_t)a->begin[p] * (size_t)a->per_atom, (const double *)STARPU_VECTOR_GET_PTR(buffers[p]),
               sizeof(double) * (size_t)a->count[p] * (size_t)a->per_atom);
}

static struct starpu_codelet gather_cl = {
    .cpu_funcs = {mdf_gather_cpu},
    .cpu_funcs_name = {"mdf_gather_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_gather_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &gather_model,
    .name = "mdf_gather",
};

int mdf_insert_gather(const starpu_data_handle_t *parts, starpu_data_handle_t whole, const mdf_gather_args *args)
{
    int K = args->nparts;
    if (K < 1 || K > MDF_GATHER_MAX_PARTS) return -EINVAL;
    starpu_data_handle_t h[MDF_GATHER_MAX_PARTS + 1];
    enum starpu_data_access_mode m[MDF_GATHER_MAX_PARTS + 1];
    for (int p = 0; p < K; p++) {
        h[p] = parts[p];
        m[p] = STARPU_R;
    }
    h[K] = whole;
    m[K] = STARPU_W;
    return mdf_submit(&gather_cl, args, sizeof *args, K + 1, h, m, "mdf_gather");
}
