/* mdflow — EAM codelets (CUDA): the density pass (auxiliary) and the
 * embedding + force pass, one thread per atom of the chunk over the full
 * lists (eam_kernel.h's mdf_eam_nbrs: n_up entries from slot 0, n_down from
 * slot M-1 down; an overflowed atom walks its cells). Every number is
 * computed by the MDF_HD functions of eam_kernel.h that the CPU codelets
 * (eam_cpu.c) call: mdf_eam_atom_density and mdf_eam_atom_force, per atom.
 * Each thread writes only its own atom's density or force.
 *
 * The parameter blob (header and spline tables) is a StarPU buffer, read
 * from global memory (it is tens to hundreds of kilobytes: too big for
 * shared memory; the tables' rows are read through the cache).
 *
 * Per-system energy and virial are the deterministic segmented sums of
 * mdflow/kernel/cuda_util.cuh (mdf_seg_block in the force kernel,
 * mdf_pair_total_kernel of mdflow/pair_cuda.cuh per system): results repeat
 * bit for bit from run to run. As on the CPU, the virial is summed only when
 * the task asks for it (want_virial), and a part of a chunk sum
 * (args.partial) marks its results MDF_PART_ROWS. Like the CPU codelet,
 * the force pass writes only the chunk's own atoms: a chunk of whole
 * systems has no touch range beyond them, and a part's mark tells the sum.
 * Systems outside [status_lo, status_hi] keep densities, forces and
 * results. Both run on StarPU's stream (STARPU_CUDA_ASYNC). */
#include <starpu.h>
#include "eam_codelet.h"
#include "mdflow/kernel/nlist.h"
#include "mdflow/kernel/reduce.h"
#include "mdflow/kernel/cuda_util.cuh"
#include "mdflow/pair_cuda.cuh"

#define MDF_EAM_BLOCK MDF_SEG_BLOCK /* the per-system sums' block */
#define MDF_EAM_DENSITY_BLOCK 128

/* Density of each atom of [atom_begin, atom_end) whose system is evaluated,
 * into rho[i - atom_begin]. */
__global__ void __launch_bounds__(MDF_EAM_DENSITY_BLOCK)
    mdf_eam_density_kernel(const double *x, const mdf_atom_info *atoms, const mdf_sys_info *sys, void *list_blob,
                           void *bins_blob, double *rho, const mdf_eam_params *p, int32_t atom_begin,
                           int32_t atom_end, int32_t status_lo, int32_t status_hi)
{
    const int64_t i64 = (int64_t)atom_begin + (int64_t)blockIdx.x * MDF_EAM_DENSITY_BLOCK + threadIdx.x;
    if (i64 >= atom_end) return;
    const int32_t i = (int32_t)i64, s = atoms[i].sys;
    if (!mdf_status_in(sys[s].status, status_lo, status_hi)) return;
    mdf_eam_nbrs it;
    mdf_eam_nbrs_begin(&it, x, sys, mdf_nl_list_map(list_blob), mdf_nl_bins_map(bins_blob), atom_begin, i, s,
                       p->cutsq);
    rho[i - atom_begin] = mdf_eam_atom_density(p, atoms, &it);
}

/* Forces of the atoms of [atom_begin, atom_end) whose system is evaluated,
 * and their energies (and virials) into the per-system parts. Blocks of
 * MDF_SEG_BLOCK threads, thread t of block b on atom atom_begin +
 * b*MDF_SEG_BLOCK + t: the layout mdf_seg_block needs. rho: the gathered
 * densities, by shard atom index. */
template <int WANT_VIRIAL>
__global__ void __launch_bounds__(MDF_EAM_BLOCK)
    mdf_eam_force_kernel(const double *x, const mdf_atom_info *atoms, const mdf_sys_info *sys, void *list_blob,
                         void *bins_blob, double *f, const mdf_eam_params *p, const double *rho,
                         int32_t atom_begin, int32_t atom_end, int32_t status_lo, int32_t status_hi,
                         const mdf_seg_parts parts)
{
    const int64_t i64 = (int64_t)atom_begin + (int64_t)blockIdx.x * MDF_EAM_BLOCK + threadIdx.x;
    /* Past the range: i is only compared with parts.a_hi (no atom). */
    const int32_t i = i64 < atom_end ? (int32_t)i64 : atom_end;
    const int32_t s = i < atom_end ? atoms[i].sys : -1;
    const int active = s >= 0 && mdf_status_in(sys[s].status, status_lo, status_hi);
    double e = 0.0, w[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    if (active) {
        mdf_eam_nbrs it;
        mdf_eam_nbrs_begin(&it, x, sys, mdf_nl_list_map(list_blob), mdf_nl_bins_map(bins_blob), atom_begin, i, s,
                           p->cutsq);
        double fi[3];
        e = mdf_eam_atom_force(p, atoms, rho, &it, WANT_VIRIAL, fi, w);
        for (int k = 0; k < 3; k++) f[3 * (size_t)i + k] = fi[k];
    }
    /* Per-system sums, in a fixed order: every thread of the block gets here
     * (inactive ones with zeros). */
    if constexpr (WANT_VIRIAL) {
        const double v[10] = {e, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]};
        mdf_seg_block<10>(v, i, s, sys, parts);
    } else {
        const double v[1] = {e};
        mdf_seg_block<1>(v, i, s, sys, parts);
    }
}

/* Blocks of `block` threads over [a_lo, a_hi) (0 when empty). */
static unsigned eam_grid(int32_t a_lo, int32_t a_hi, int block)
{
    return a_hi > a_lo ? (unsigned)(((int64_t)a_hi - a_lo + block - 1) / block) : 0u;
}

/* buffers: pos R, atoms R, sys R, list R, bins R, rho W (chunk rows), params R */
extern "C" void mdf_eam_aux_cuda(void *buffers[], void *cl_arg)
{
    const mdf_model_args *a = (const mdf_model_args *)cl_arg;
    const mdf_chunk *c = &a->chunk;
    const unsigned nb = eam_grid(c->atom_begin, c->atom_end, MDF_EAM_DENSITY_BLOCK);
    if (nb == 0) return;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    mdf_eam_density_kernel<<<nb, MDF_EAM_DENSITY_BLOCK, 0, stream>>>(
        (const double *)STARPU_VECTOR_GET_PTR(buffers[0]), (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]),
        (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]), (void *)STARPU_VECTOR_GET_PTR(buffers[3]),
        (void *)STARPU_VECTOR_GET_PTR(buffers[4]), (double *)STARPU_VECTOR_GET_PTR(buffers[5]),
        (const mdf_eam_params *)STARPU_VECTOR_GET_PTR(buffers[6]), c->atom_begin, c->atom_end, a->status_lo,
        a->status_hi);
    mdf_cuda_check_launch();
}

template <int WANT_VIRIAL>
static void eam_force_chunk(void *buffers[], const mdf_model_args *a, cudaStream_t stream)
{
    const mdf_chunk *c = &a->chunk;
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const int32_t nsys = c->sys_end - c->sys_begin;
    if (nsys <= 0) return;
    constexpr int K = WANT_VIRIAL ? 10 : 1;
    mdf_seg_parts parts;
    mdf_cuda_try(mdf_seg_alloc(&parts, K, c->atom_begin, c->atom_end, c->sys_end, stream));
    if (!parts.head) return; /* reported above; nothing to launch on */
    const unsigned nb = mdf_seg_grid(c->atom_begin, c->atom_end);
    if (nb > 0) {
        mdf_eam_force_kernel<WANT_VIRIAL><<<nb, MDF_EAM_BLOCK, 0, stream>>>(
            (const double *)STARPU_VECTOR_GET_PTR(buffers[0]), (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]),
            sys, (void *)STARPU_VECTOR_GET_PTR(buffers[3]), (void *)STARPU_VECTOR_GET_PTR(buffers[4]),
            (double *)STARPU_VECTOR_GET_PTR(buffers[5]), (const mdf_eam_params *)STARPU_VECTOR_GET_PTR(buffers[7]),
            (const double *)STARPU_VECTOR_GET_PTR(buffers[8]), c->atom_begin, c->atom_end, a->status_lo,
            a->status_hi, parts);
        mdf_cuda_check_launch();
    }
    /* Energy and virial of each evaluated system of the chunk; systems with
     * no atom in the chunk's range get zeros (mdf_seg_total). */
    mdf_pair_total_kernel<WANT_VIRIAL><<<(unsigned)nsys, MDF_SYS_BLOCK, 0, stream>>>(
        (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[6]), sys, c->sys_begin, a->status_lo, a->status_hi,
        a->partial ? 1 : 0, parts);
    mdf_cuda_check_launch();
    mdf_cuda_try(mdf_seg_free(&parts, stream));
}

/* buffers: pos R, atoms R, sys R, list R, bins R, forces RW, results RW,
 * params R, rho R (gathered, by shard atom index) */
extern "C" void mdf_eam_cuda(void *buffers[], void *cl_arg)
{
    const mdf_model_args *a = (const mdf_model_args *)cl_arg;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    if (a->want_virial) eam_force_chunk<1>(buffers, a, stream);
    else eam_force_chunk<0>(buffers, a, stream);
}
