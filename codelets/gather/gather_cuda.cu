/* mdflow — the gather on a GPU: one device-to-device copy per part on
 * StarPU's stream (asynchronous; StarPU waits on the stream). */
#include <starpu.h>
#include "gather_codelet.h"
#include "../common/mdf_cuda_util.cuh"

extern "C" void mdf_gather_cuda(void *buffers[], void *cl_arg)
{
    const mdf_gather_args *a = (const mdf_gather_args *)cl_arg;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    double *whole = (double *)STARPU_VECTOR_GET_PTR(buffers[a->nparts]);
    for (int32_t p = 0; p < a->nparts; p++) {
        size_t bytes = sizeof(double) * (size_t)a->count[p] * (size_t)a->per_atom;
        if (bytes == 0) continue;
        mdf_cuda_try(cudaMemcpyAsync(whole + (size_t)a->begin[p] * (size_t)a->per_atom,
                                     (const void *)STARPU_VECTOR_GET_PTR(buffers[p]), bytes, cudaMemcpyDeviceToDevice,
                                     stream));
    }
}
