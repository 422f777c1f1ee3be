/* mdflow — Lennard-Jones, CUDA implementation: full lists without Newton's
 * third law, one thread per atom, so every thread writes only its own
 * atom's force. Each pair is seen from both sides and contributes half its
 * energy and virial on each. The pair arithmetic is lj_kernel.h's, as on
 * the CPU, and the cutoff test rounds r² as the CPU does (mdf_nl_norm2).
 *
 * The virial is computed and summed only when the task asks for it
 * (want_virial); otherwise it keeps its previous value, as on the CPU.
 * Per-system energy and virial are the deterministic segmented sums of
 * mdf_cuda_util.cuh (mdf_seg_block in the force kernel, mdf_seg_total in a
 * per-system kernel): GPU results repeat bit for bit from run to run.
 *
 * As a part of a chunk sum (args.partial) the task writes only its own
 * atoms' forces and marks its results MDF_PART_ROWS, so the sum adds them
 * over the chunk's atoms only (reduce_kernel.h); otherwise it also zeroes
 * the rest of the touch range, which the CPU's half lists would reach. */
#include <starpu.h>
#include "lj_kernel.h"
#include "lj_codelet.h"
#include "../reduce/reduce_kernel.h"
#include "../common/mdf_cuda_util.cuh"

#define MDF_LJ_BLOCK MDF_SEG_BLOCK /* the per-system sums' block */
#define MDF_LJ_ZERO_BLOCK 128

/* Forces of atoms [t0, t1) whose system is evaluated; the others keep theirs. */
__global__ void lj_zero_forces_kernel(double *f, const mdf_atom_info *atoms, const mdf_sys_info *sys, int32_t t0,
                                      int32_t t1, int32_t lo, int32_t hi)
{
    int32_t a = t0 + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (a >= t1 || !mdf_status_in(sys[atoms[a].sys].status, lo, hi)) return;
    for (int k = 0; k < 3; k++) f[3 * (size_t)a + k] = 0.0;
}

/* One pair seen from i: d = r_j - r_i (with its image). */
__device__ static inline void lj_pair_from_i(const mdf_lj_params *p, int ti, int tj, const double d[3],
                                             double fi[3], double *e, double w[9], int want_virial)
{
    double r2 = mdf_nl_norm2(d[0], d[1], d[2]); /* uncontracted: the CPU's cutoff decisions */
    if (r2 >= p->rc2[ti][tj]) return;
    double fpair;
    *e += 0.5 * mdf_lj_pair(p, ti, tj, r2, &fpair);
    for (int k = 0; k < 3; k++) fi[k] -= d[k] * fpair;
    if (want_virial) mdf_lj_add_virial(w, d, fpair, 0.5);
}

/* Positions are used wrapped, x + o with the offsets of the last build, as
 * on the CPU: list entry (j, n) gives d = (x_j + o_j) + n·H - (x_i + o_i).
 * Blocks of MDF_SEG_BLOCK threads, thread t of block b on atom
 * atom_begin + b*MDF_SEG_BLOCK + t: the layout mdf_seg_block needs. */
template <int WANT_VIRIAL>
__global__ void __launch_bounds__(MDF_LJ_BLOCK)
    lj_force_kernel(const double *x, const mdf_atom_info *atoms, const mdf_sys_info *sys, void *list_blob,
                    void *bins_blob, double *f, const mdf_lj_params *params, int32_t atom_begin, int32_t atom_end,
                    int32_t status_lo, int32_t status_hi, const mdf_seg_parts parts)
{
    /* The parameters (3.5 KB) are read for every pair: keep them in shared
     * memory. The struct is 8-byte aligned and a multiple of 8 bytes. */
    __shared__ mdf_lj_params sp;
    {
        const unsigned long long *src = (const unsigned long long *)params;
        unsigned long long *dst = (unsigned long long *)&sp;
        const int nw = (int)(sizeof(mdf_lj_params) / sizeof(unsigned long long));
        for (int k = (int)threadIdx.x; k < nw; k += (int)blockDim.x) dst[k] = src[k];
    }
    __syncthreads();
    const mdf_lj_params *p = &sp;

    const int32_t i = atom_begin + (int32_t)(blockIdx.x * MDF_LJ_BLOCK + threadIdx.x);
    const int32_t s = i < atom_end ? atoms[i].sys : -1;
    const int active = s >= 0 && mdf_status_in(sys[s].status, status_lo, status_hi);
    double e = 0.0, w[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    if (active) {
        mdf_nl_list_view l = mdf_nl_list_map(list_blob);
        mdf_nl_bins_view v = mdf_nl_bins_map(bins_blob);
        const double *o = v.offset;
        const int32_t M = l.head->slots, li = i - atom_begin;
        const mdf_sys_info *si = &sys[s];
        double xi[3];
        mdf_nl_wrapped(x, o, i, xi);
        const int ti = p->type_of_z[atoms[i].z];
        double fi[3] = {0.0, 0.0, 0.0};
        const int32_t n_up = l.n_up[li], n_down = l.n_down[li];
        if (n_up + n_down > M) {
            /* Overflowed (or no lists): every image around i, from the cells. */
            const mdf_nl_grid *g = &v.grid[s];
            const int32_t *cs = v.cell_start + si->atom_start + s;
            mdf_nl_pairs pw;
            mdf_nl_pairs_begin(&pw, i, x, o, g, cs, v.sorted, v.cell_of, HUGE_VAL);
            int32_t j, n[3];
            double d[3];
            while (mdf_nl_pairs_next(&pw, &j, n, d)) {
                lj_pair_from_i(p, ti, p->type_of_z[atoms[j].z], d, fi, &e, w, WANT_VIRIAL);
            }
        } else {
            const mdf_nl_grid *g = &v.grid[s];
            double cell[9];
            for (int k = 0; k < 9; k++) cell[k] = si->cell[k];
            const uint32_t *nb = mdf_nl_row(&l, li);
            /* Up entries from the front, the others from the back: the full list. */
            for (int part = 0; part < 2; part++) {
                int32_t k0 = part ? M - n_down : 0, k1 = part ? M : n_up;
                for (int32_t k = k0; k < k1; k++) {
                    uint32_t entry = nb[k];
                    int32_t j = mdf_nl_entry_atom(g, entry);
                    double sh[3], xj[3];
                    mdf_nl_entry_shift(g, entry, cell, sh);
                    mdf_nl_wrapped(x, o, j, xj);
                    double d[3] = {xj[0] + sh[0] - xi[0], xj[1] + sh[1] - xi[1], xj[2] + sh[2] - xi[2]};
                    lj_pair_from_i(p, ti, p->type_of_z[atoms[j].z], d, fi, &e, w, WANT_VIRIAL);
                }
            }
        }
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

/* Energy (and the virial when asked; never the kinetic energy) of each
 * evaluated system of [s0, s0 + gridDim.x): one block per system. */
template <int WANT_VIRIAL>
__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    lj_total_kernel(mdf_sys_result *res, const mdf_sys_info *sys, int32_t s0, int32_t status_lo, int32_t status_hi,
                    int32_t partial, const mdf_seg_parts parts)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = s0 + (int32_t)blockIdx.x;
    const mdf_sys_info *si = &sys[s];
    if (!mdf_status_in(si->status, status_lo, status_hi)) return; /* the whole block */
    constexpr int K = WANT_VIRIAL ? 10 : 1;
    double tot[K];
    mdf_seg_total<K>(parts, s, si, tot, scratch); /* every thread of the block */
    if (threadIdx.x != 0) return;
    mdf_sys_result *r = &res[s];
    r->energy = tot[0];
    r->virial_fresh = WANT_VIRIAL;
    if constexpr (WANT_VIRIAL)
        for (int k = 0; k < 9; k++) r->virial[k] = tot[1 + k];
    if (partial) mdf_part_mark(r, MDF_PART_ROWS);
}

static void lj_zero_forces(double *f, const mdf_atom_info *atoms, const mdf_sys_info *sys, int32_t t0, int32_t t1,
                           const mdf_lj_args *args, cudaStream_t stream)
{
    if (t1 <= t0) return;
    lj_zero_forces_kernel<<<(unsigned)((t1 - t0 + MDF_LJ_ZERO_BLOCK - 1) / MDF_LJ_ZERO_BLOCK), MDF_LJ_ZERO_BLOCK, 0,
                            stream>>>(f, atoms, sys, t0, t1, args->status_lo, args->status_hi);
    mdf_cuda_try(cudaGetLastError());
}

template <int WANT_VIRIAL>
static void lj_run(void *buffers[], const mdf_lj_args *args, cudaStream_t stream)
{
    const mdf_chunk *c = &args->chunk;
    double *f = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[6]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    /* The touch range beyond the chunk's own atoms: the CPU's half lists
     * write there (zeros and Newton's third law); a part needs nothing there
     * (its mark tells the sum). Empty for chunks of whole systems. */
    if (!args->partial) {
        lj_zero_forces(f, atoms, sys, c->touch_begin, c->atom_begin < c->touch_end ? c->atom_begin : c->touch_end,
                       args, stream);
        lj_zero_forces(f, atoms, sys, c->atom_end > c->touch_begin ? c->atom_end : c->touch_begin, c->touch_end,
                       args, stream);
    }
    const int32_t nsys = c->sys_end - c->sys_begin;
    if (nsys <= 0) return;
    constexpr int K = WANT_VIRIAL ? 10 : 1;
    mdf_seg_parts parts;
    mdf_cuda_try(mdf_seg_alloc(&parts, K, c->atom_begin, c->atom_end, c->sys_end, stream));
    const unsigned nb = mdf_seg_grid(c->atom_begin, c->atom_end);
    if (nb > 0) {
        lj_force_kernel<WANT_VIRIAL><<<nb, MDF_LJ_BLOCK, 0, stream>>>(
            (const double *)STARPU_VECTOR_GET_PTR(buffers[0]), atoms, sys, (void *)STARPU_VECTOR_GET_PTR(buffers[3]),
            (void *)STARPU_VECTOR_GET_PTR(buffers[4]), f, (const mdf_lj_params *)STARPU_VECTOR_GET_PTR(buffers[7]),
            c->atom_begin, c->atom_end, args->status_lo, args->status_hi, parts);
        mdf_cuda_try(cudaGetLastError());
    }
    /* Systems with no atom in the chunk's range get zeros (mdf_seg_total). */
    lj_total_kernel<WANT_VIRIAL><<<(unsigned)nsys, MDF_SYS_BLOCK, 0, stream>>>(
        res, sys, c->sys_begin, args->status_lo, args->status_hi, args->partial ? 1 : 0, parts);
    mdf_cuda_try(cudaGetLastError());
    mdf_cuda_try(mdf_seg_free(&parts, stream));
}

/* buffers: pos R, atoms R, sys R, list R, bins R, forces RW, results RW, params R */
extern "C" void mdf_lj_cuda(void *buffers[], void *cl_arg)
{
    const mdf_lj_args *args = (const mdf_lj_args *)cl_arg;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    if (args->want_virial) lj_run<1>(buffers, args, stream);
    else lj_run<0>(buffers, args, stream);
}
