/* Berendsen thermostat — the CUDA codelets, on StarPU's stream (the
 * codelets are STARPU_CUDA_ASYNC). One thread per atom; each system's
 * kinetic energy is a deterministic segmented sum (mdflow/kernel/
 * cuda_util.cuh), so results repeat bit for bit from run to run:
 *   kick   (per atom)   second half-kick, per-block parts of K
 *   finish (per system) K, λ, energies and step counts (berendsen_finish)
 *   scale  (per atom)   v *= λ of the atom's system */
#include <starpu.h>
#include "mdflow/kernel/cuda_util.cuh"
#include "berendsen.h"
#include "berendsen_kernel.h"

#define BLOCK 128
#define VEC(k) STARPU_VECTOR_GET_PTR(buffers[k])

/* Whether atom at takes part in this step. */
__device__ static inline int active(const mdf_atom_info *atoms, const mdf_sys_info *sys, int32_t at,
                                    const berendsen_args a)
{
    return at < a.natoms && sys[atoms[at].sys].status == a.status && berendsen_moves(&atoms[at]);
}

__global__ void berendsen_pre_kernel(double *x, double *v, const double *f, const mdf_atom_info *atoms,
                                     const mdf_sys_info *sys, const berendsen_args a)
{
    int32_t at = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (active(atoms, sys, at, a)) berendsen_kick_drift(x + 3 * (size_t)at, v + 3 * (size_t)at, f + 3 * (size_t)at, atoms[at].inv_mass, a.dt);
}

__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    berendsen_kick_kernel(double *v, const double *f, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                          const berendsen_args a, const mdf_seg_parts parts)
{
    int32_t at = (int32_t)(blockIdx.x * MDF_SEG_BLOCK + threadIdx.x);
    double ke[1] = {0.0};
    if (active(atoms, sys, at, a))
        ke[0] = berendsen_kick(v + 3 * (size_t)at, f + 3 * (size_t)at, atoms[at].mass, atoms[at].inv_mass, a.dt);
    mdf_seg_block<1>(ke, at, at < a.natoms ? atoms[at].sys : -1, sys, parts); /* every thread */
}

__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    berendsen_finish_kernel(mdf_sys_info *sys, mdf_sys_result *res, mdf_sys_state *st, const berendsen_args a,
                            const mdf_seg_parts parts)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != a.status) return; /* the whole block */
    double K[1];
    mdf_seg_total<1>(parts, s, &sys[s], K, scratch); /* every thread of the block */
    if (threadIdx.x == 0) berendsen_finish(&sys[s], &res[s], &st[s], K[0], &a);
}

__global__ void berendsen_scale_kernel(double *v, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                                       const mdf_sys_state *st, const berendsen_args a)
{
    int32_t at = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (!active(atoms, sys, at, a)) return;
    const double lambda = st[atoms[at].sys].d[BERENDSEN_LAMBDA];
    for (int k = 0; k < 3; k++) v[3 * (size_t)at + k] *= lambda;
}

static unsigned blocks_of(int32_t n, int size) { return (unsigned)((n + size - 1) / size); }

/* buffers: pos RW, vel RW, force R, atoms R, sys R */
extern "C" void berendsen_pre_cuda(void *buffers[], void *cl_arg)
{
    const berendsen_args a = *(const berendsen_args *)cl_arg;
    if (a.natoms <= 0) return;
    berendsen_pre_kernel<<<blocks_of(a.natoms, BLOCK), BLOCK, 0, starpu_cuda_get_local_stream()>>>(
        (double *)VEC(0), (double *)VEC(1), (const double *)VEC(2), (const mdf_atom_info *)VEC(3),
        (const mdf_sys_info *)VEC(4), a);
    mdf_cuda_check_launch();
}

/* buffers: vel RW, force R, atoms R, sys RW, res RW, state RW */
extern "C" void berendsen_post_cuda(void *buffers[], void *cl_arg)
{
    const berendsen_args a = *(const berendsen_args *)cl_arg;
    if (a.natoms <= 0 || a.nsys <= 0) return;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    double *v = (double *)VEC(0);
    const mdf_atom_info *atoms = (const mdf_atom_info *)VEC(2);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(3);
    mdf_sys_state *st = (mdf_sys_state *)VEC(5);
    mdf_seg_parts parts;
    mdf_cuda_try(mdf_seg_alloc(&parts, 1, 0, a.natoms, a.nsys, stream));
    if (!parts.head) return;
    berendsen_kick_kernel<<<mdf_seg_grid(0, a.natoms), MDF_SEG_BLOCK, 0, stream>>>(v, (const double *)VEC(1), atoms,
                                                                                   sys, a, parts);
    mdf_cuda_check_launch();
    berendsen_finish_kernel<<<(unsigned)a.nsys, MDF_SYS_BLOCK, 0, stream>>>(sys, (mdf_sys_result *)VEC(4), st, a,
                                                                             parts);
    mdf_cuda_check_launch();
    berendsen_scale_kernel<<<blocks_of(a.natoms, BLOCK), BLOCK, 0, stream>>>(v, atoms, sys, st, a);
    mdf_cuda_check_launch();
    mdf_cuda_try(mdf_seg_free(&parts, stream));
}
