/* mdflow — Maxwell–Boltzmann velocities and kinetic energies, CUDA
 * implementation (same draws as the CPU, from velocity_kernel.h).
 *
 * One block per system: momentum and kinetic energy are reduced in a fixed
 * order, so they are the same from run to run. */
#include <starpu.h>
#include "velocity_kernel.h"
#include "velocity_codelet.h"

#define MDF_VEL_BLOCK 128 /* a power of two */

static void mdf_vel_check(cudaError_t e)
{
    if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
}

/* Block sum of x, the same on every thread; buf holds blockDim.x doubles. */
__device__ static double vel_block_sum(double x, double *buf)
{
    const int tid = (int)threadIdx.x;
    buf[tid] = x;
    __syncthreads();
    for (int w = (int)blockDim.x / 2; w > 0; w /= 2) {
        if (tid < w) buf[tid] += buf[tid + w];
        __syncthreads();
    }
    double r = buf[0];
    __syncthreads(); /* buf may be reused at once */
    return r;
}

__device__ static double vel_system_kinetic(const double *v, const mdf_atom_info *atoms, const mdf_sys_info *s,
                                            double *buf)
{
    double ke = 0.0;
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t a = s->atom_start + (int32_t)threadIdx.x; a < a1; a += (int32_t)blockDim.x)
        ke += 0.5 * atoms[a].mass * (v[3 * a] * v[3 * a] + v[3 * a + 1] * v[3 * a + 1] + v[3 * a + 2] * v[3 * a + 2]);
    return vel_block_sum(ke, buf);
}

__global__ void velocity_kernel(double *v, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                                mdf_sys_result *res, double kT, uint64_t seed, int32_t status,
                                int32_t entering_only)
{
    __shared__ double buf[MDF_VEL_BLOCK];
    const mdf_sys_info *si = &sys[blockIdx.x];
    if (!mdf_velocity_wanted(si, status, entering_only)) return; /* the whole block leaves */
    uint64_t key = mdf_velocity_key(seed, si->id);
    int32_t a0 = si->atom_start, a1 = a0 + si->natoms;
    double p[3] = {0.0, 0.0, 0.0}, m = 0.0;
    for (int32_t a = a0 + (int32_t)threadIdx.x; a < a1; a += (int32_t)blockDim.x) {
        mdf_velocity_draw(key, a - a0, sqrt(kT * atoms[a].inv_mass), v + 3 * a);
        for (int k = 0; k < 3; k++) p[k] += atoms[a].mass * v[3 * a + k];
        m += atoms[a].mass;
    }
    double ptot[3];
    for (int k = 0; k < 3; k++) ptot[k] = vel_block_sum(p[k], buf);
    double mtot = vel_block_sum(m, buf);
    /* A lone atom keeps its velocity: removing its momentum would stop it. */
    if (si->natoms > 1)
        for (int32_t a = a0 + (int32_t)threadIdx.x; a < a1; a += (int32_t)blockDim.x)
            for (int k = 0; k < 3; k++) v[3 * a + k] -= ptot[k] / mtot;
    /* Each thread reads back only the atoms it wrote: no barrier needed
     * beyond the one inside the sums. */
    double ke = vel_system_kinetic(v, atoms, si, buf);
    if (threadIdx.x == 0) res[blockIdx.x].kinetic = ke;
}

__global__ void kinetic_kernel(const double *v, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                               mdf_sys_result *res)
{
    __shared__ double buf[MDF_VEL_BLOCK];
    double ke = vel_system_kinetic(v, atoms, &sys[blockIdx.x], buf);
    if (threadIdx.x == 0) res[blockIdx.x].kinetic = ke;
}

/* buffers: vel RW, atoms R, sys R, res RW */
extern "C" void mdf_velocity_cuda(void *buffers[], void *cl_arg)
{
    const mdf_velocity_args *args = (const mdf_velocity_args *)cl_arg;
    if (args->nsys <= 0) return;
    velocity_kernel<<<args->nsys, MDF_VEL_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)STARPU_VECTOR_GET_PTR(buffers[0]), (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]),
        (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]), (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[3]),
        args->kT, args->seed, args->status, args->entering_only);
    mdf_vel_check(cudaGetLastError());
}

/* buffers: vel R, atoms R, sys R, res RW */
extern "C" void mdf_kinetic_cuda(void *buffers[], void *cl_arg)
{
    const mdf_kinetic_args *args = (const mdf_kinetic_args *)cl_arg;
    if (args->nsys <= 0) return;
    kinetic_kernel<<<args->nsys, MDF_VEL_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (const double *)STARPU_VECTOR_GET_PTR(buffers[0]), (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]),
        (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]), (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[3]));
    mdf_vel_check(cudaGetLastError());
}
