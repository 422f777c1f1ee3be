/* mdflow — velocity Verlet, CUDA implementation (same arithmetic as the CPU
 * one, from verlet_kernel.h).
 *
 * Both halves run one thread per atom of the shard, so a large system fills
 * every SM. The second half's kinetic energy is a per-system sum in a fixed
 * order (mdf_seg_block / mdf_seg_total, no atomics): the same bytes from run
 * to run. */
#include <starpu.h>
#include "verlet_kernel.h"
#include "verlet_codelet.h"
#include "../common/mdf_cuda_util.cuh"

#define MDF_BLOCK 128

__global__ void vv_pre_kernel(double *x, double *v, const double *f, const mdf_atom_info *atoms,
                              const mdf_sys_info *sys, int32_t natoms, int32_t status, double dt)
{
    const int32_t a = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (a >= natoms) return;
    if (sys[atoms[a].sys].status != status) return;
    const size_t k = 3 * (size_t)a;
    mdf_vv_pre_atom(x + k, v + k, f + k, atoms[a].inv_mass, dt);
}

/* Per atom: the second kick and the atom's kinetic energy, summed per system
 * (phase 1). One thread per atom of [0, p.a_hi), blocks of MDF_SEG_BLOCK. */
__global__ void vv_post_atoms_kernel(double *v, const double *f, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                                     int32_t status, double dt, mdf_seg_parts p)
{
    const int32_t a = p.a_lo + (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
    const int in = a < p.a_hi;
    const int32_t s = in ? atoms[a].sys : -1;
    double ke[1] = {0.0};
    if (in && sys[s].status == status) {
        const size_t k = 3 * (size_t)a;
        ke[0] = mdf_vv_post_atom(v + k, f + k, atoms[a].mass, atoms[a].inv_mass, dt);
    }
    mdf_seg_block<1>(ke, a, s, sys, p);
}

/* Per system (one block each): the kinetic energy (phase 2) and the step
 * counters of the systems that moved. */
__global__ void vv_post_sys_kernel(mdf_sys_info *sys, mdf_sys_result *res, int32_t status, mdf_seg_parts p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    mdf_sys_info *si = &sys[s];
    double ke[1];
    mdf_seg_total<1>(p, s, si, ke, scratch);
    if (threadIdx.x == 0 && si->status == status) {
        res[s].kinetic = ke[0];
        si->step++;
        si->stage_step++;
    }
}

extern "C" void mdf_vv_pre_cuda(void *buffers[], void *cl_arg)
{
    const mdf_vv_args *args = (const mdf_vv_args *)cl_arg;
    int32_t natoms = args->natoms; /* not args->work: a model size */
    if (natoms <= 0) return;
    vv_pre_kernel<<<(natoms + MDF_BLOCK - 1) / MDF_BLOCK, MDF_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)STARPU_VECTOR_GET_PTR(buffers[0]), (double *)STARPU_VECTOR_GET_PTR(buffers[1]),
        (const double *)STARPU_VECTOR_GET_PTR(buffers[2]),
        (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[3]),
        (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[4]), natoms, args->status, args->dt);
    mdf_cuda_check_launch();
}

/* buffers: vel RW, force R, atoms R, sys RW, res RW. Two kernels: per atom
 * (kick, kinetic energy partials), then per system (sums, counters). */
extern "C" void mdf_vv_post_cuda(void *buffers[], void *cl_arg)
{
    const mdf_vv_args *args = (const mdf_vv_args *)cl_arg;
    if (args->nsys <= 0) return;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    double *v = (double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const double *f = (const double *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    mdf_sys_info *sys = (mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[3]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[4]);
    const int32_t natoms = args->natoms > 0 ? args->natoms : 0; /* not args->work: a model size */
    mdf_seg_parts p;
    mdf_cuda_try(mdf_seg_alloc(&p, 1, 0, natoms, args->nsys, stream));
    if (p.nblocks > 0) {
        vv_post_atoms_kernel<<<mdf_seg_grid(0, natoms), MDF_SEG_BLOCK, 0, stream>>>(v, f, atoms, sys, args->status,
                                                                                   args->dt, p);
        mdf_cuda_check_launch();
    }
    vv_post_sys_kernel<<<(unsigned)args->nsys, MDF_SYS_BLOCK, 0, stream>>>(sys, res, args->status, p);
    mdf_cuda_check_launch();
    mdf_cuda_try(mdf_seg_free(&p, stream));
}
