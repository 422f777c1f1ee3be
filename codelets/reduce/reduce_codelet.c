/* mdflow — the chunk-sum codelet and its performance model. */
#include "reduce_codelet.h"
#include "../common/mdf_codelet.h"

MDF_PERFMODEL(reduce_model, "mdf_reduce");

static struct starpu_codelet reduce_cl = {
    .cpu_funcs = {mdf_reduce_cpu},
    .cpu_funcs_name = {"mdf_reduce_cpu"},
#if MDF_CUDA_ENABLED
    .cuda_funcs = {mdf_reduce_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &reduce_model,
    .name = "mdf_reduce",
};

int mdf_insert_reduce(const starpu_data_handle_t *force_parts, const starpu_data_handle_t *result_parts,
                      starpu_data_handle_t forces, starpu_data_handle_t results,
                      const mdf_reduce_args *args)
{
    int K = args->nchunks;
    if (K < 1 || K > MDF_REDUCE_MAX_CHUNKS) return -EINVAL;
    starpu_data_handle_t h[2 * MDF_REDUCE_MAX_CHUNKS + 2];
    enum starpu_data_access_mode m[2 * MDF_REDUCE_MAX_CHUNKS + 2];
    for (int c = 0; c < K; c++) {
        h[c] = force_parts[c];
        h[K + c] = result_parts[c];
        m[c] = m[K + c] = STARPU_R;
    }
    h[2 * K] = forces;
    m[2 * K] = STARPU_W;
    h[2 * K + 1] = results;
    m[2 * K + 1] = STARPU_RW;
    /* Only the used part of the chunk table travels with the task. */
    size_t size = offsetof(mdf_reduce_args, chunks) + sizeof(mdf_chunk) * (size_t)K;
    return mdf_submit(&reduce_cl, args, size, 2 * K + 2, h, m, "mdf_reduce");
}
