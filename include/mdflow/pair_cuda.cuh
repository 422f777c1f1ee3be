/* mdflow — a generic CUDA codelet for pair models (header only, nvcc).
 *
 * The CUDA twin of mdflow/pair.h, from the same two MDF_HD functions of a
 * model's kernel header (rc2_fn and pair_fn, see pair.h for their
 * contract). In one .cu file,
 *
 *   #include "mdflow/pair_cuda.cuh"
 *   MDF_PAIR_CUDA_CODELET(morse_cuda, morse_params, morse_rc2, morse_pair)
 *
 * defines `extern "C" void morse_cuda(void *buffers[], void *cl_arg)`, the
 * model's mdf_model_def.cuda_func (run with STARPU_CUDA_ASYNC on StarPU's
 * stream). The macro wraps the functions in a functor for the template
 * mdf_pair_cuda_run<Pair>(buffers, cl_arg), which C++ code may call with a
 * functor of its own:
 *
 *   struct Pair {
 *       typedef P params;
 *       __device__ static double rc2(const P *p, int32_t zi, int32_t zj);
 *       __device__ static double pair(const P *p, int32_t zi, int32_t zj, double r2, double *fpair);
 *   };
 *
 * How it works (as the built-in Lennard-Jones codelet, codelets/lj/lj_cuda.cu):
 * full lists without Newton's third law, one thread per atom, so every
 * thread writes only its own atom's force; each pair is seen from both
 * sides and contributes half its energy and virial on each. The cutoff test
 * rounds r² as the CPU does (mdf_nl_norm2, never fused), so both make the
 * same decisions. Per-system energy and virial are the deterministic
 * segmented sums of mdflow/kernel/cuda_util.cuh: results repeat bit for bit
 * from run to run. As a part of a chunk sum (args.partial) the task writes
 * only its own atoms' forces and marks its results MDF_PART_ROWS; otherwise
 * it also zeroes the rest of the touch range, which the CPU's half lists
 * would reach. A blob of at most MDF_PAIR_SHARED_PARAMS bytes is copied
 * into shared memory per block (it is read for every pair). Errors of CUDA
 * calls are reported the way StarPU's codelets do (STARPU_CUDA_REPORT_ERROR). */
#ifndef MDFLOW_PAIR_CUDA_CUH
#define MDFLOW_PAIR_CUDA_CUH

#include <stdint.h>
#include <starpu.h>
#include "mdflow/extension.h"
#include "mdflow/kernel.h"
#include "mdflow/kernel/nlist.h"
#include "mdflow/kernel/reduce.h"
#include "mdflow/kernel/cuda_util.cuh"

#define MDF_PAIR_BLOCK MDF_SEG_BLOCK /* the per-system sums' block */
#define MDF_PAIR_ZERO_BLOCK 128
#ifndef MDF_PAIR_SHARED_PARAMS
#define MDF_PAIR_SHARED_PARAMS 8192 /* bytes of blob kept in shared memory */
#endif

/* Whether blob type P is copied into shared memory: small enough, and
 * copied as whole 8-byte words. */
template <class P>
struct mdf_pair_shared {
    static constexpr bool value = sizeof(P) <= MDF_PAIR_SHARED_PARAMS && sizeof(P) % 8 == 0 && alignof(P) <= 8;
    static constexpr size_t words = value ? sizeof(P) / 8 : 1;
};

/* Forces of atoms [t0, t1) whose system is evaluated; the others keep theirs. */
__global__ static void mdf_pair_zero_forces_kernel(double *f, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                                                   int32_t t0, int32_t t1, int32_t lo, int32_t hi)
{
    int32_t a = t0 + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (a >= t1 || !mdf_status_in(sys[atoms[a].sys].status, lo, hi)) return;
    for (int k = 0; k < 3; k++) f[3 * (size_t)a + k] = 0.0;
}

/* One pair seen from i: d = r_j - r_i (with its image); half of it. */
template <class Pair, int WANT_VIRIAL>
__device__ static inline void mdf_pair_from_i(const typename Pair::params *p, int32_t zi, int32_t zj,
                                              const double d[3], double fi[3], double *e, double w[9])
{
    double r2 = mdf_nl_norm2(d[0], d[1], d[2]); /* uncontracted: the CPU's cutoff decisions */
    if (!(r2 < Pair::rc2(p, zi, zj))) return;
    double fpair;
    *e += 0.5 * Pair::pair(p, zi, zj, r2, &fpair);
    for (int k = 0; k < 3; k++) fi[k] -= d[k] * fpair;
    if (WANT_VIRIAL)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) w[3 * a + b] += 0.5 * d[a] * d[b] * fpair;
}

/* Positions are used wrapped, x + o with the offsets of the last build, as
 * on the CPU: list entry (j, n) gives d = (x_j + o_j) + n·H - (x_i + o_i).
 * Blocks of MDF_SEG_BLOCK threads, thread t of block b on atom
 * atom_begin + b*MDF_SEG_BLOCK + t: the layout mdf_seg_block needs. */
template <class Pair, int WANT_VIRIAL>
__global__ void __launch_bounds__(MDF_PAIR_BLOCK)
    mdf_pair_force_kernel(const double *x, const mdf_atom_info *atoms, const mdf_sys_info *sys, void *list_blob,
                          void *bins_blob, double *f, const typename Pair::params *params, int32_t atom_begin,
                          int32_t atom_end, int32_t status_lo, int32_t status_hi, const mdf_seg_parts parts)
{
    typedef typename Pair::params P;
    __shared__ unsigned long long sp[mdf_pair_shared<P>::words];
    const P *p = params;
    if constexpr (mdf_pair_shared<P>::value) {
        const unsigned long long *src = (const unsigned long long *)params;
        for (int k = (int)threadIdx.x; k < (int)mdf_pair_shared<P>::words; k += (int)blockDim.x) sp[k] = src[k];
        __syncthreads();
        p = (const P *)sp;
    }

    const int32_t i = atom_begin + (int32_t)(blockIdx.x * MDF_PAIR_BLOCK + threadIdx.x);
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
        const int32_t zi = atoms[i].z;
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
                mdf_pair_from_i<Pair, WANT_VIRIAL>(p, zi, atoms[j].z, d, fi, &e, w);
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
                    mdf_pair_from_i<Pair, WANT_VIRIAL>(p, zi, atoms[j].z, d, fi, &e, w);
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
    mdf_pair_total_kernel(mdf_sys_result *res, const mdf_sys_info *sys, int32_t s0, int32_t status_lo,
                          int32_t status_hi, int32_t partial, const mdf_seg_parts parts)
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

static inline void mdf_pair_zero_forces(double *f, const mdf_atom_info *atoms, const mdf_sys_info *sys, int32_t t0,
                                        int32_t t1, const mdf_model_args *args, cudaStream_t stream)
{
    if (t1 <= t0) return;
    mdf_pair_zero_forces_kernel<<<(unsigned)((t1 - t0 + MDF_PAIR_ZERO_BLOCK - 1) / MDF_PAIR_ZERO_BLOCK),
                                  MDF_PAIR_ZERO_BLOCK, 0, stream>>>(f, atoms, sys, t0, t1, args->status_lo,
                                                                    args->status_hi);
    mdf_cuda_check_launch();
}

template <class Pair, int WANT_VIRIAL>
static void mdf_pair_cuda_chunk(void *buffers[], const mdf_model_args *args, cudaStream_t stream)
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
        mdf_pair_zero_forces(f, atoms, sys, c->touch_begin, c->atom_begin < c->touch_end ? c->atom_begin : c->touch_end,
                             args, stream);
        mdf_pair_zero_forces(f, atoms, sys, c->atom_end > c->touch_begin ? c->atom_end : c->touch_begin, c->touch_end,
                             args, stream);
    }
    const int32_t nsys = c->sys_end - c->sys_begin;
    if (nsys <= 0) return;
    constexpr int K = WANT_VIRIAL ? 10 : 1;
    mdf_seg_parts parts;
    mdf_cuda_try(mdf_seg_alloc(&parts, K, c->atom_begin, c->atom_end, c->sys_end, stream));
    if (!parts.head) return; /* reported above; nothing to launch on */
    const unsigned nb = mdf_seg_grid(c->atom_begin, c->atom_end);
    if (nb > 0) {
        mdf_pair_force_kernel<Pair, WANT_VIRIAL><<<nb, MDF_PAIR_BLOCK, 0, stream>>>(
            (const double *)STARPU_VECTOR_GET_PTR(buffers[0]), atoms, sys, (void *)STARPU_VECTOR_GET_PTR(buffers[3]),
            (void *)STARPU_VECTOR_GET_PTR(buffers[4]), f,
            (const typename Pair::params *)STARPU_VECTOR_GET_PTR(buffers[7]), c->atom_begin, c->atom_end,
            args->status_lo, args->status_hi, parts);
        mdf_cuda_check_launch();
    }
    /* Systems with no atom in the chunk's range get zeros (mdf_seg_total). */
    mdf_pair_total_kernel<WANT_VIRIAL><<<(unsigned)nsys, MDF_SYS_BLOCK, 0, stream>>>(
        res, sys, c->sys_begin, args->status_lo, args->status_hi, args->partial ? 1 : 0, parts);
    mdf_cuda_check_launch();
    mdf_cuda_try(mdf_seg_free(&parts, stream));
}

/* The codelet body: buffers pos R, atoms R, sys R, list R, bins R,
 * forces RW, results RW, blob R; cl_arg an mdf_model_args. */
template <class Pair>
static void mdf_pair_cuda_run(void *buffers[], void *cl_arg)
{
    const mdf_model_args *args = (const mdf_model_args *)cl_arg;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    if (args->want_virial) mdf_pair_cuda_chunk<Pair, 1>(buffers, args, stream);
    else mdf_pair_cuda_chunk<Pair, 0>(buffers, args, stream);
}

/* Defines `extern "C" void fn_name(void *buffers[], void *cl_arg)`: the
 * CUDA codelet of the pair model whose blob is a params_type and whose
 * arithmetic is the MDF_HD functions rc2_fn and pair_fn. */
#define MDF_PAIR_CUDA_CODELET(fn_name, params_type, rc2_fn, pair_fn)                                   \
    struct fn_name##_pair_ {                                                                           \
        typedef params_type params;                                                                    \
        __device__ static double rc2(const params_type *p, int32_t zi, int32_t zj)                     \
        {                                                                                              \
            return rc2_fn(p, zi, zj);                                                                  \
        }                                                                                              \
        __device__ static double pair(const params_type *p, int32_t zi, int32_t zj, double r2,         \
                                      double *fpair)                                                   \
        {                                                                                              \
            return pair_fn(p, zi, zj, r2, fpair);                                                      \
        }                                                                                              \
    };                                                                                                 \
    extern "C" void fn_name(void *buffers[], void *cl_arg);                                            \
    extern "C" void fn_name(void *buffers[], void *cl_arg) { mdf_pair_cuda_run<fn_name##_pair_>(buffers, cl_arg); }

#endif
