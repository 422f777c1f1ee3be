/* mdflow — convergence, CUDA implementation (the same arithmetic as the CPU,
 * from converge_kernel.h). Two kernels:
 *   1. per atom of the shard (blocks of MDF_SEG_BLOCK atoms, so a large
 *      system fills every SM): the squared force norm of the atoms of the
 *      checked systems, combined per system by a maximum in which NaN wins
 *      (mdf_seg_block, phase 1; no atomics, so the result repeats);
 *   2. per system (one block each): that maximum (mdf_seg_total, phase 2),
 *      then the criteria, applied by thread 0 as the CPU does.
 * A maximum rounds nothing: fmax differs from the CPU's only by the norms'
 * round-off (nvcc may contract them into FMAs), and a NaN anywhere in a
 * system makes it NaN on both. */
#include <starpu.h>
#include "converge_codelet.h"
#include "../common/mdf_cuda_util.cuh"

__global__ void converge_atoms_kernel(const double *f, const mdf_sys_info *sys, mdf_converge_args a, mdf_seg_parts p)
{
    const int32_t at = p.a_lo + (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
    const int in = at < p.a_hi;
    const int32_t s = in ? mdf_sys_of_atom(sys, 0, a.nsys, at) : -1;
    /* 0 (the CPU's starting maximum) for atoms of systems not checked */
    double n2[1] = {0.0};
    if (s >= 0 && mdf_converge_part_of(&a, &sys[s])) n2[0] = mdf_force_norm2(f + 3 * (size_t)at);
    mdf_seg_block<1, 1u>(n2, at, s, sys, p);
}

__global__ void converge_sys_kernel(mdf_sys_info *sys, mdf_sys_result *res, mdf_sys_state *state,
                                    mdf_converge_args a, mdf_seg_parts p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    mdf_sys_info *si = &sys[s];
    /* Only thread 0 reads the status and flags, before it changes them (the
     * other threads read atom_start and natoms, which it leaves alone). */
    double m2[1];
    mdf_seg_total<1, 1u>(p, s, si, m2, scratch);
    if (threadIdx.x != 0) return; /* no barrier follows */
    si->flags &= ~MDF_SYS_CONVERGED_NOW;
    const mdf_converge_part *part = mdf_converge_part_of(&a, si);
    if (part) mdf_converge_system(si, &res[s], &state[s], m2[0], part, a.apply);
}

/* buffers: force R, sys RW, res RW, state RW */
extern "C" void mdf_converge_cuda(void *buffers[], void *cl_arg)
{
    const mdf_converge_args *a = (const mdf_converge_args *)cl_arg;
    if (a->nsys <= 0) return;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    const double *f = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    mdf_sys_info *sys = (mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const int32_t natoms = a->work > 0 ? (int32_t)a->work : 0;
    mdf_seg_parts p;
    mdf_cuda_try(mdf_seg_alloc(&p, 1, 0, natoms, a->nsys, stream));
    if (p.nblocks > 0) {
        converge_atoms_kernel<<<mdf_seg_grid(0, natoms), MDF_SEG_BLOCK, 0, stream>>>(f, sys, *a, p);
        mdf_cuda_check_launch();
    }
    converge_sys_kernel<<<(unsigned)a->nsys, MDF_SYS_BLOCK, 0, stream>>>(
        sys, (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[2]), (mdf_sys_state *)STARPU_VECTOR_GET_PTR(buffers[3]),
        *a, p);
    mdf_cuda_check_launch();
    mdf_cuda_try(mdf_seg_free(&p, stream));
}
