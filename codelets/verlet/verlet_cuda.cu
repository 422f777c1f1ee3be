/* mdflow — velocity Verlet, CUDA implementation (same arithmetic as the CPU
 * one, from verlet_kernel.h). */
#include <starpu.h>
#include "verlet_kernel.h"
#include "verlet_codelet.h"

#define MDF_BLOCK 128

__global__ void vv_pre_kernel(double *x, double *v, const double *f, const mdf_atom_info *atoms,
                              const mdf_sys_info *sys, int32_t natoms, int32_t status, double dt)
{
    int32_t a = blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= natoms) return;
    if (sys[atoms[a].sys].status != status) return;
    mdf_vv_pre_atom(x + 3 * a, v + 3 * a, f + 3 * a, atoms[a].inv_mass, dt);
}

/* One block per system: the kinetic energy is reduced in a fixed order, so
 * it is the same from run to run. */
__global__ void vv_post_kernel(double *v, const double *f, const mdf_atom_info *atoms, mdf_sys_info *sys,
                               mdf_sys_result *res, int32_t status, double dt)
{
    __shared__ double partial[MDF_BLOCK];
    mdf_sys_info *s = &sys[blockIdx.x];
    if (s->status != status) return;
    double ke = 0.0;
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t a = s->atom_start + threadIdx.x; a < a1; a += blockDim.x)
        ke += mdf_vv_post_atom(v + 3 * a, f + 3 * a, atoms[a].mass, atoms[a].inv_mass, dt);
    partial[threadIdx.x] = ke;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        res[blockIdx.x].kinetic = partial[0];
        s->step++;
        s->stage_step++;
    }
}

extern "C" void mdf_vv_pre_cuda(void *buffers[], void *cl_arg)
{
    const mdf_vv_args *args = (const mdf_vv_args *)cl_arg;
    int32_t natoms = (int32_t)args->work;
    if (natoms == 0) return;
    vv_pre_kernel<<<(natoms + MDF_BLOCK - 1) / MDF_BLOCK, MDF_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)STARPU_VECTOR_GET_PTR(buffers[0]), (double *)STARPU_VECTOR_GET_PTR(buffers[1]),
        (const double *)STARPU_VECTOR_GET_PTR(buffers[2]),
        (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[3]),
        (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[4]), natoms, args->status, args->dt);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
}

extern "C" void mdf_vv_post_cuda(void *buffers[], void *cl_arg)
{
    const mdf_vv_args *args = (const mdf_vv_args *)cl_arg;
    if (args->nsys == 0) return;
    vv_post_kernel<<<args->nsys, MDF_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)STARPU_VECTOR_GET_PTR(buffers[0]), (const double *)STARPU_VECTOR_GET_PTR(buffers[1]),
        (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[2]),
        (mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[3]), (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[4]),
        args->status, args->dt);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
}
