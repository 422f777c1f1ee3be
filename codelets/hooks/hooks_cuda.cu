/* mdflow — built-in hook kernels, CUDA implementations: one thread per atom
 * of the shard (blocks of MDF_SEG_BLOCK atoms, so a large system fills every
 * SM), the same arithmetic as the CPU (hooks_kernel.h). Atoms of systems
 * outside the stage are left alone.
 *
 * The NaN detector's per-system findings are combined in a fixed order
 * without atomics (mdf_seg_block / mdf_seg_total, a maximum per finding),
 * then a kernel with one block per system records them. */
#include <starpu.h>
#include "hooks_codelet.h"
#include "../common/mdf_cuda_util.cuh"

#define VEC(k, type) ((type)STARPU_VECTOR_GET_PTR(buffers[k]))

/* The three per-atom findings as values 0/1, combined per system by a maximum. */
#define HOOKS_NAN_K 3
__device__ static int32_t hooks_nan_bit(int k)
{
    return k == 0 ? MDF_SYS_NONFINITE_POS : k == 1 ? MDF_SYS_NONFINITE_VEL : MDF_SYS_NONFINITE_FORCE;
}

__global__ void hook_nan_atoms_kernel(const double *x, const double *v, const double *f, const mdf_sys_info *sys,
                                      mdf_hooks_args a, mdf_seg_parts p)
{
    const int32_t at = p.a_lo + (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
    const int in = at < p.a_hi;
    const int32_t s = in ? mdf_sys_of_atom(sys, 0, a.nsys, at) : -1;
    int32_t bits = 0;
    if (s >= 0 && sys[s].status == a.status) {
        const size_t k3 = 3 * (size_t)at;
        bits = mdf_hooks_atom_nonfinite(x + k3, v + k3, f + k3);
    }
    double found[HOOKS_NAN_K];
    for (int k = 0; k < HOOKS_NAN_K; k++) found[k] = (bits & hooks_nan_bit(k)) ? 1.0 : 0.0;
    mdf_seg_block<HOOKS_NAN_K, 7u>(found, at, s, sys, p);
}

__global__ void hook_nan_sys_kernel(mdf_sys_info *sys, const mdf_sys_result *res, mdf_hooks_args a, mdf_seg_parts p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    mdf_sys_info *si = &sys[s];
    double found[HOOKS_NAN_K];
    mdf_seg_total<HOOKS_NAN_K, 7u>(p, s, si, found, scratch);
    /* Only thread 0 reads the status, before it may change it (the other
     * threads read atom_start and natoms, which it leaves alone). */
    if (threadIdx.x != 0 || si->status != a.status) return; /* no barrier follows */
    int32_t bits = 0;
    for (int k = 0; k < HOOKS_NAN_K; k++)
        if (found[k] > 0.0) bits |= hooks_nan_bit(k);
    mdf_hooks_nan_finish(si, &res[s], bits, a.action);
}

__global__ void hook_clamp_kernel(double *f, const mdf_sys_info *sys, mdf_hooks_args a, int32_t natoms)
{
    const int32_t at = (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
    if (at >= natoms) return;
    const int32_t s = mdf_sys_of_atom(sys, 0, a.nsys, at);
    if (s < 0 || sys[s].status != a.status) return;
    mdf_hooks_clamp_force(f + 3 * (size_t)at, a.max_force);
}

__global__ void hook_freeze_kernel(double *f, double *v, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                                   int32_t status, int32_t natoms)
{
    const int32_t at = (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
    if (at >= natoms) return;
    if (sys[atoms[at].sys].status != status) return;
    const size_t k3 = 3 * (size_t)at;
    mdf_hooks_freeze_atom(f + k3, v + k3, atoms[at].flags);
}

__global__ void hook_wrap_kernel(double *x, const mdf_sys_info *sys, mdf_hooks_args a, int32_t natoms)
{
    const int32_t at = (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
    if (at >= natoms) return;
    const int32_t k = mdf_sys_of_atom(sys, 0, a.nsys, at);
    if (k < 0) return;
    const mdf_sys_info *s = &sys[k];
    if (s->status != a.status || !(s->pbc[0] || s->pbc[1] || s->pbc[2])) return;
    mdf_hooks_wrap_atom(x + 3 * (size_t)at, s);
}

/* The shard's atoms (not a->work: the performance model's size). */
static int32_t hooks_natoms(const mdf_hooks_args *a) { return a->natoms > 0 ? a->natoms : 0; }

/* buffers: pos R, vel R, force R, sys RW, res R */
extern "C" void mdf_hook_nan_check_cuda(void *buffers[], void *cl_arg)
{
    const mdf_hooks_args *a = (const mdf_hooks_args *)cl_arg;
    if (a->nsys <= 0) return;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    mdf_sys_info *sys = VEC(3, mdf_sys_info *);
    const int32_t natoms = hooks_natoms(a);
    mdf_seg_parts p;
    mdf_cuda_try(mdf_seg_alloc(&p, HOOKS_NAN_K, 0, natoms, a->nsys, stream));
    if (p.nblocks > 0) {
        hook_nan_atoms_kernel<<<mdf_seg_grid(0, natoms), MDF_SEG_BLOCK, 0, stream>>>(
            VEC(0, const double *), VEC(1, const double *), VEC(2, const double *), sys, *a, p);
        mdf_cuda_check_launch();
    }
    hook_nan_sys_kernel<<<(unsigned)a->nsys, MDF_SYS_BLOCK, 0, stream>>>(sys, VEC(4, const mdf_sys_result *), *a, p);
    mdf_cuda_check_launch();
    mdf_cuda_try(mdf_seg_free(&p, stream));
}

/* buffers: force RW, sys R */
extern "C" void mdf_hook_force_clamp_cuda(void *buffers[], void *cl_arg)
{
    const mdf_hooks_args *a = (const mdf_hooks_args *)cl_arg;
    const int32_t natoms = hooks_natoms(a);
    if (a->nsys <= 0 || natoms == 0) return;
    hook_clamp_kernel<<<mdf_seg_grid(0, natoms), MDF_SEG_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        VEC(0, double *), VEC(1, const mdf_sys_info *), *a, natoms);
    mdf_cuda_check_launch();
}

/* buffers: force RW, vel RW, atoms R, sys R */
extern "C" void mdf_hook_freeze_cuda(void *buffers[], void *cl_arg)
{
    const mdf_hooks_args *a = (const mdf_hooks_args *)cl_arg;
    const int32_t natoms = hooks_natoms(a);
    if (a->nsys <= 0 || natoms == 0) return;
    hook_freeze_kernel<<<mdf_seg_grid(0, natoms), MDF_SEG_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        VEC(0, double *), VEC(1, double *), VEC(2, const mdf_atom_info *), VEC(3, const mdf_sys_info *), a->status,
        natoms);
    mdf_cuda_check_launch();
}

/* buffers: pos RW, sys R */
extern "C" void mdf_hook_wrap_cuda(void *buffers[], void *cl_arg)
{
    const mdf_hooks_args *a = (const mdf_hooks_args *)cl_arg;
    const int32_t natoms = hooks_natoms(a);
    if (a->nsys <= 0 || natoms == 0) return;
    hook_wrap_kernel<<<mdf_seg_grid(0, natoms), MDF_SEG_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        VEC(0, double *), VEC(1, const mdf_sys_info *), *a, natoms);
    mdf_cuda_check_launch();
}
