/* mdflow — built-in hook kernels, CUDA implementations: one block per
 * system, the same arithmetic as the CPU (hooks_kernel.h). Blocks of
 * systems outside the stage return at once. */
#include <starpu.h>
#include "hooks_codelet.h"
#include "../common/mdf_cuda_util.cuh"

#define VEC(k, type) ((type)STARPU_VECTOR_GET_PTR(buffers[k]))

__global__ void hook_nan_kernel(const double *x, const double *v, const double *f, mdf_sys_info *sys,
                                const mdf_sys_result *res, mdf_hooks_args a)
{
    __shared__ int found;
    mdf_sys_info *s = &sys[blockIdx.x];
    if (s->status != a.status) return; /* uniform across the block */
    if (threadIdx.x == 0) found = 0;
    __syncthreads();
    int32_t local = 0, a1 = s->atom_start + s->natoms;
    for (int32_t i = s->atom_start + (int32_t)threadIdx.x; i < a1; i += (int32_t)blockDim.x)
        local |= mdf_hooks_atom_nonfinite(x + 3 * i, v + 3 * i, f + 3 * i);
    if (local) atomicOr(&found, local);
    __syncthreads(); /* every thread has read s->status before thread 0 may change it */
    if (threadIdx.x == 0) mdf_hooks_nan_finish(s, &res[blockIdx.x], found, a.action);
}

__global__ void hook_clamp_kernel(double *f, const mdf_sys_info *sys, mdf_hooks_args a)
{
    const mdf_sys_info *s = &sys[blockIdx.x];
    if (s->status != a.status) return;
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t i = s->atom_start + (int32_t)threadIdx.x; i < a1; i += (int32_t)blockDim.x)
        mdf_hooks_clamp_force(f + 3 * i, a.max_force);
}

__global__ void hook_freeze_kernel(double *f, double *v, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                                   mdf_hooks_args a)
{
    const mdf_sys_info *s = &sys[blockIdx.x];
    if (s->status != a.status) return;
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t i = s->atom_start + (int32_t)threadIdx.x; i < a1; i += (int32_t)blockDim.x)
        mdf_hooks_freeze_atom(f + 3 * i, v + 3 * i, atoms[i].flags);
}

__global__ void hook_wrap_kernel(double *x, const mdf_sys_info *sys, mdf_hooks_args a)
{
    const mdf_sys_info *s = &sys[blockIdx.x];
    if (s->status != a.status) return;
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t i = s->atom_start + (int32_t)threadIdx.x; i < a1; i += (int32_t)blockDim.x)
        mdf_hooks_wrap_atom(x + 3 * i, s);
}

extern "C" void mdf_hook_nan_check_cuda(void *buffers[], void *cl_arg)
{
    const mdf_hooks_args *a = (const mdf_hooks_args *)cl_arg;
    if (a->nsys == 0) return;
    hook_nan_kernel<<<a->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        VEC(0, const double *), VEC(1, const double *), VEC(2, const double *), VEC(3, mdf_sys_info *),
        VEC(4, const mdf_sys_result *), *a);
    mdf_cuda_check_launch();
}

extern "C" void mdf_hook_force_clamp_cuda(void *buffers[], void *cl_arg)
{
    const mdf_hooks_args *a = (const mdf_hooks_args *)cl_arg;
    if (a->nsys == 0) return;
    hook_clamp_kernel<<<a->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        VEC(0, double *), VEC(1, const mdf_sys_info *), *a);
    mdf_cuda_check_launch();
}

extern "C" void mdf_hook_freeze_cuda(void *buffers[], void *cl_arg)
{
    const mdf_hooks_args *a = (const mdf_hooks_args *)cl_arg;
    if (a->nsys == 0) return;
    hook_freeze_kernel<<<a->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        VEC(0, double *), VEC(1, double *), VEC(2, const mdf_atom_info *), VEC(3, const mdf_sys_info *), *a);
    mdf_cuda_check_launch();
}

extern "C" void mdf_hook_wrap_cuda(void *buffers[], void *cl_arg)
{
    const mdf_hooks_args *a = (const mdf_hooks_args *)cl_arg;
    if (a->nsys == 0) return;
    hook_wrap_kernel<<<a->nsys, MDF_SYS_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        VEC(0, double *), VEC(1, const mdf_sys_info *), *a);
    mdf_cuda_check_launch();
}
