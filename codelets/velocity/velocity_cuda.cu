/* mdflow — Maxwell–Boltzmann velocities and kinetic energies, CUDA
 * implementation (same draws as the CPU, from velocity_kernel.h).
 *
 * One thread per atom of the shard, so a large system fills every SM.
 * Momentum, mass and kinetic energy are per-system sums in a fixed order
 * (mdf_seg_block / mdf_seg_total, no atomics): the same bytes from run to
 * run. A velocity draw is four kernels: per atom (draw; momentum and mass
 * partials), per system (the velocity shift p/M into a small device array),
 * per atom (shift; kinetic energy partials), per system (kinetic energy). */
#include <starpu.h>
#include "velocity_kernel.h"
#include "velocity_codelet.h"
#include "../common/mdf_cuda_util.cuh"

__device__ static double vel_atom_ke(const double *v, double mass)
{
    return 0.5 * mass * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* Per atom of a drawn system: its velocity, and m v and m as partials. */
__global__ void velocity_draw_kernel(double *v, const mdf_atom_info *atoms, const mdf_sys_info *sys, double kT,
                                     uint64_t seed, int32_t status, int32_t entering_only, int32_t dist,
                                     mdf_seg_parts p)
{
    const int32_t a = p.a_lo + (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
    const int in = a < p.a_hi;
    const int32_t s = in ? atoms[a].sys : -1;
    double part[4] = {0.0, 0.0, 0.0, 0.0};
    if (in && mdf_velocity_wanted(&sys[s], status, entering_only)) {
        const mdf_sys_info *si = &sys[s];
        double *va = v + 3 * (size_t)a;
        mdf_velocity_draw(mdf_velocity_key(seed, si->id), atoms[a].index, mdf_velocity_sd(&atoms[a], kT), dist, va);
        for (int k = 0; k < 3; k++) part[k] = atoms[a].mass * va[k];
        part[3] = atoms[a].mass;
    }
    mdf_seg_block<4>(part, a, s, sys, p);
}

/* Per system: the shift p/M each atom's velocity loses (0 for systems not
 * drawn, lone atoms and systems with frozen atoms, which the next kernel
 * leaves alone anyway). */
__global__ void velocity_shift_kernel(const mdf_sys_info *sys, double *shift, int32_t status, int32_t entering_only,
                                      mdf_seg_parts p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    const mdf_sys_info *si = &sys[s];
    double tot[4];
    mdf_seg_total<4>(p, s, si, tot, scratch);
    if (threadIdx.x == 0) {
        const int use = mdf_velocity_wanted(si, status, entering_only) && mdf_velocity_removes_momentum(si);
        for (int k = 0; k < 3; k++) shift[3 * (size_t)s + k] = use ? tot[k] / tot[3] : 0.0;
    }
}

/* Per atom of a drawn system: the momentum removed (mdf_velocity_removes_momentum),
 * then its kinetic energy. */
__global__ void velocity_fix_kernel(double *v, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                                    const double *shift, int32_t status, int32_t entering_only, mdf_seg_parts p)
{
    const int32_t a = p.a_lo + (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
    const int in = a < p.a_hi;
    const int32_t s = in ? atoms[a].sys : -1;
    double ke[1] = {0.0};
    if (in && mdf_velocity_wanted(&sys[s], status, entering_only)) {
        double *va = v + 3 * (size_t)a;
        if (mdf_velocity_removes_momentum(&sys[s]))
            for (int k = 0; k < 3; k++) va[k] -= shift[3 * (size_t)s + k];
        ke[0] = vel_atom_ke(va, atoms[a].mass);
    }
    mdf_seg_block<1>(ke, a, s, sys, p);
}

/* Per atom, every system: kinetic energy partials. */
__global__ void kinetic_atoms_kernel(const double *v, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                                     mdf_seg_parts p)
{
    const int32_t a = p.a_lo + (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
    const int in = a < p.a_hi;
    const int32_t s = in ? atoms[a].sys : -1;
    double ke[1] = {in ? vel_atom_ke(v + 3 * (size_t)a, atoms[a].mass) : 0.0};
    mdf_seg_block<1>(ke, a, s, sys, p);
}

/* Per system: res.kinetic from the partials, for every system (all = 1) or
 * the drawn ones. */
__global__ void kinetic_sys_kernel(const mdf_sys_info *sys, mdf_sys_result *res, int32_t all, int32_t status,
                                   int32_t entering_only, mdf_seg_parts p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    const mdf_sys_info *si = &sys[s];
    double ke[1];
    mdf_seg_total<1>(p, s, si, ke, scratch);
    if (threadIdx.x == 0 && (all || mdf_velocity_wanted(si, status, entering_only))) res[s].kinetic = ke[0];
}

/* buffers: vel RW, atoms R, sys R, res RW */
extern "C" void mdf_velocity_cuda(void *buffers[], void *cl_arg)
{
    const mdf_velocity_args *args = (const mdf_velocity_args *)cl_arg;
    if (args->nsys <= 0) return;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    double *v = (double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[3]);
    const int32_t natoms = args->work > 0 ? (int32_t)args->work : 0;
    const unsigned nb = mdf_seg_grid(0, natoms), ns = (unsigned)args->nsys;
    mdf_seg_parts pm, pk;
    double *shift = NULL;
    mdf_cuda_try(mdf_seg_alloc(&pm, 4, 0, natoms, args->nsys, stream));
    mdf_cuda_try(mdf_seg_alloc(&pk, 1, 0, natoms, args->nsys, stream));
    mdf_cuda_try(cudaMallocAsync((void **)&shift, 3 * (size_t)args->nsys * sizeof(double), stream));
    if (nb > 0) {
        velocity_draw_kernel<<<nb, MDF_SEG_BLOCK, 0, stream>>>(v, atoms, sys, args->kT, args->seed, args->status,
                                                               args->entering_only, args->dist, pm);
        mdf_cuda_check_launch();
    }
    velocity_shift_kernel<<<ns, MDF_SYS_BLOCK, 0, stream>>>(sys, shift, args->status, args->entering_only, pm);
    mdf_cuda_check_launch();
    if (nb > 0) {
        velocity_fix_kernel<<<nb, MDF_SEG_BLOCK, 0, stream>>>(v, atoms, sys, shift, args->status,
                                                              args->entering_only, pk);
        mdf_cuda_check_launch();
    }
    kinetic_sys_kernel<<<ns, MDF_SYS_BLOCK, 0, stream>>>(sys, res, 0, args->status, args->entering_only, pk);
    mdf_cuda_check_launch();
    mdf_cuda_try(cudaFreeAsync(shift, stream));
    mdf_cuda_try(mdf_seg_free(&pk, stream));
    mdf_cuda_try(mdf_seg_free(&pm, stream));
}

/* buffers: vel R, atoms R, sys R, res RW */
extern "C" void mdf_kinetic_cuda(void *buffers[], void *cl_arg)
{
    const mdf_kinetic_args *args = (const mdf_kinetic_args *)cl_arg;
    if (args->nsys <= 0) return;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    const double *v = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[3]);
    const int32_t natoms = args->work > 0 ? (int32_t)args->work : 0;
    const unsigned nb = mdf_seg_grid(0, natoms);
    mdf_seg_parts pk;
    mdf_cuda_try(mdf_seg_alloc(&pk, 1, 0, natoms, args->nsys, stream));
    if (nb > 0) {
        kinetic_atoms_kernel<<<nb, MDF_SEG_BLOCK, 0, stream>>>(v, atoms, sys, pk);
        mdf_cuda_check_launch();
    }
    kinetic_sys_kernel<<<(unsigned)args->nsys, MDF_SYS_BLOCK, 0, stream>>>(sys, res, 1, 0, 0, pk);
    mdf_cuda_check_launch();
    mdf_cuda_try(mdf_seg_free(&pk, stream));
}
