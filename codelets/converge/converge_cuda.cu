/* mdflow — convergence, CUDA implementation: one block per system (the same
 * arithmetic as the CPU, from converge_kernel.h). */
#include <starpu.h>
#include "converge_codelet.h"
#include "../common/mdf_cuda_util.cuh"

__global__ void converge_kernel(const double *f, mdf_sys_info *sys, mdf_sys_result *res, mdf_sys_state *state,
                                mdf_converge_args a)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    mdf_sys_info *s = &sys[blockIdx.x];
    /* Every thread reads the status before thread 0 may change it. */
    const mdf_converge_part *part = mdf_converge_part_of(&a, s);
    __syncthreads();
    if (threadIdx.x == 0) s->flags &= ~MDF_SYS_CONVERGED_NOW;
    if (!part) return; /* uniform across the block */
    double m2 = 0.0;
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t i = s->atom_start + (int32_t)threadIdx.x; i < a1; i += (int32_t)blockDim.x) {
        double n2 = mdf_force_norm2(f + 3 * i);
        if (!(n2 <= m2)) m2 = n2;
    }
    /* NaN wins the maximum, as on the CPU. */
    double nan_seen = mdf_block_max(m2 != m2 ? 1.0 : 0.0, scratch);
    m2 = mdf_block_max(m2 != m2 ? 0.0 : m2, scratch);
    if (nan_seen > 0.0) m2 = nan("");
    if (threadIdx.x == 0) mdf_converge_system(s, &res[blockIdx.x], &state[blockIdx.x], m2, part, a.apply);
}

extern "C" void mdf_converge_cuda(void *buffers[], void *cl_arg)
{
    const mdf_converge_args *a = (const mdf_converge_args *)cl_arg;
    if (a->nsys == 0) return;
    converge_kernel<<<a->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (const double *)STARPU_VECTOR_GET_PTR(buffers[0]), (mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[1]),
        (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[2]), (mdf_sys_state *)STARPU_VECTOR_GET_PTR(buffers[3]),
        *a);
    mdf_cuda_check_launch();
}
