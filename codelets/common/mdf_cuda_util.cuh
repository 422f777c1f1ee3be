/* mdflow — helpers for CUDA codelets (nvcc only).
 *
 * Per-system kernels run one block per system; their reductions (kinetic
 * energy, F·v, norms, dot products) go through mdf_block_sum, whose order is
 * fixed, so results repeat from run to run. */
#ifndef MDF_CUDA_UTIL_CUH
#define MDF_CUDA_UTIL_CUH

#include <starpu.h>

/* Threads per block of the per-system kernels (a power of two). */
#define MDF_SYS_BLOCK 128

/* Sum of v over the block, returned to every thread. scratch: shared array
 * of blockDim.x doubles; blockDim.x a power of two. Every thread of the
 * block must call it (it synchronises). */
__device__ static inline double mdf_block_sum(double v, double *scratch)
{
    const int t = (int)threadIdx.x;
    scratch[t] = v;
    __syncthreads();
    for (int w = (int)blockDim.x / 2; w > 0; w /= 2) {
        if (t < w) scratch[t] += scratch[t + w];
        __syncthreads();
    }
    double total = scratch[0];
    __syncthreads(); /* scratch may be reused at once */
    return total;
}

/* Largest v over the block, returned to every thread (same rules). */
__device__ static inline double mdf_block_max(double v, double *scratch)
{
    const int t = (int)threadIdx.x;
    scratch[t] = v;
    __syncthreads();
    for (int w = (int)blockDim.x / 2; w > 0; w /= 2) {
        if (t < w && scratch[t + w] > scratch[t]) scratch[t] = scratch[t + w];
        __syncthreads();
    }
    double m = scratch[0];
    __syncthreads();
    return m;
}

/* Reports a failed launch the way StarPU's CUDA codelets do. */
static inline void mdf_cuda_check_launch(void)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
}

#endif
