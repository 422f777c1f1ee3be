/* mdflow — Lennard-Jones, CUDA implementation: full lists without Newton's
 * third law, one thread per atom, so every thread writes only its own
 * atom's force. Each pair is seen from both sides and contributes half its
 * energy and virial on each. The pair arithmetic is lj_kernel.h's, as on
 * the CPU.
 *
 * The virial is computed, zeroed and summed only when the task asks for it
 * (want_virial); otherwise it keeps its previous value, as on the CPU.
 * Per-system energy and virial are summed within a warp when all its active
 * lanes belong to one system, then added with atomicAdd (double atomics need
 * sm_60 or newer): their last bits may vary from run to run. */
#include <starpu.h>
#include "lj_kernel.h"
#include "lj_codelet.h"

#define MDF_LJ_BLOCK 128 /* a multiple of the warp size */
#define MDF_LJ_ZERO_BLOCK 128

static void mdf_lj_check(cudaError_t e)
{
    if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
}

/* Energy (and the virial when asked; never the kinetic energy) of systems
 * [s0, s1). */
__global__ void lj_zero_results_kernel(mdf_sys_result *res, const mdf_sys_info *sys, int32_t s0, int32_t s1,
                                       int32_t want_virial, int32_t lo, int32_t hi)
{
    int32_t s = s0 + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (s >= s1 || !mdf_status_in(sys[s].status, lo, hi)) return;
    res[s].energy = 0.0;
    res[s].virial_fresh = want_virial != 0;
    if (want_virial)
        for (int k = 0; k < 9; k++) res[s].virial[k] = 0.0;
}

/* Forces of the touch range's atoms whose system is evaluated; the others
 * keep theirs. */
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
    double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (r2 >= p->rc2[ti][tj]) return;
    double fpair;
    *e += 0.5 * mdf_lj_pair(p, ti, tj, r2, &fpair);
    for (int k = 0; k < 3; k++) fi[k] -= d[k] * fpair;
    if (want_virial) mdf_lj_add_virial(w, d, fpair, 0.5);
}

/* Positions are used wrapped, x + o with the offsets of the last build, as
 * on the CPU: list entry (j, n) gives d = (x_j + o_j) + n·H - (x_i + o_i). */
__global__ void lj_force_kernel(const double *x, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                                void *list_blob, void *bins_blob, double *f, mdf_sys_result *res,
                                const mdf_lj_params *params, int32_t atom_begin, int32_t atom_end,
                                int32_t want_virial, int32_t status_lo, int32_t status_hi)
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

    const int32_t i = atom_begin + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    const int active = i < atom_end && mdf_status_in(sys[atoms[i].sys].status, status_lo, status_hi);
    int32_t s = -1;
    double e = 0.0, w[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    if (active) {
        mdf_nl_list_view l = mdf_nl_list_map(list_blob);
        mdf_nl_bins_view v = mdf_nl_bins_map(bins_blob);
        const double *o = v.offset;
        const int32_t M = l.head->slots, li = i - atom_begin;
        s = atoms[i].sys;
        const mdf_sys_info *si = &sys[s];
        double xi[3];
        mdf_nl_wrapped(x, o, i, xi);
        const int ti = p->type_of_z[atoms[i].z];
        double fi[3] = {0.0, 0.0, 0.0};
        const int32_t n_up = l.n_up[li], n_down = l.n_down[li];
        if (n_up + n_down > M) {
            /* Overflowed: every j != i of the cells around i. */
            const mdf_nl_grid *g = &v.grid[s];
            const int32_t *cs = v.cell_start + si->atom_start + s;
            mdf_nl_walk wk;
            mdf_nl_walk_begin(&wk, g, v.cell_of[i]);
            int32_t j;
            while (mdf_nl_walk_next(&wk, g, cs, v.sorted, &j)) {
                if (j == i) continue;
                double xj[3], d[3];
                mdf_nl_wrapped(x, o, j, xj);
                mdf_nl_min_image(xi, xj, si, d);
                lj_pair_from_i(p, ti, p->type_of_z[atoms[j].z], d, fi, &e, w, want_virial);
            }
        } else {
            double cell[9];
            for (int k = 0; k < 9; k++) cell[k] = si->cell[k];
            const uint32_t *nb = l.slots + (size_t)li * (size_t)M;
            /* j > i from the front, j < i from the back: the full list. */
            for (int part = 0; part < 2; part++) {
                int32_t k0 = part ? M - n_down : 0, k1 = part ? M : n_up;
                for (int32_t k = k0; k < k1; k++) {
                    uint32_t entry = nb[k];
                    int32_t j = (int32_t)(entry >> MDF_NL_IMAGE_BITS);
                    double sh[3], xj[3];
                    mdf_nl_image_shift(entry & MDF_NL_IMAGE_MASK, cell, sh);
                    mdf_nl_wrapped(x, o, j, xj);
                    double d[3] = {xj[0] + sh[0] - xi[0], xj[1] + sh[1] - xi[1], xj[2] + sh[2] - xi[2]};
                    lj_pair_from_i(p, ti, p->type_of_z[atoms[j].z], d, fi, &e, w, want_virial);
                }
            }
        }
        for (int k = 0; k < 3; k++) f[3 * (size_t)i + k] = fi[k];
    }

    /* Per-system sums: one set of atomics per warp when the warp's active
     * lanes share a system, else one per lane. */
    const unsigned full = 0xffffffffu;
    unsigned act = __ballot_sync(full, active);
    if (act == 0) return;
    int leader = __ffs((int)act) - 1;
    int32_t s0 = __shfl_sync(full, s, leader);
    if (__all_sync(full, !active || s == s0)) {
        for (int off = 16; off > 0; off /= 2) {
            e += __shfl_down_sync(full, e, off);
            if (want_virial) /* uniform across the warp */
                for (int k = 0; k < 9; k++) w[k] += __shfl_down_sync(full, w[k], off);
        }
        if ((threadIdx.x & 31u) == 0) {
            atomicAdd(&res[s0].energy, e);
            if (want_virial)
                for (int k = 0; k < 9; k++) atomicAdd(&res[s0].virial[k], w[k]);
        }
    } else if (active) {
        atomicAdd(&res[s].energy, e);
        if (want_virial)
            for (int k = 0; k < 9; k++) atomicAdd(&res[s].virial[k], w[k]);
    }
}

/* buffers: pos R, atoms R, sys R, list R, bins R, forces RW, results RW, params R */
extern "C" void mdf_lj_cuda(void *buffers[], void *cl_arg)
{
    const mdf_lj_args *args = (const mdf_lj_args *)cl_arg;
    const mdf_chunk *c = &args->chunk;
    const int32_t want_virial = args->want_virial ? 1 : 0;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    double *f = (double *)STARPU_VECTOR_GET_PTR(buffers[5]);
    mdf_sys_result *res = (mdf_sys_result *)STARPU_VECTOR_GET_PTR(buffers[6]);
    const mdf_atom_info *atoms = (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]);
    int32_t nt = c->touch_end - c->touch_begin;
    if (nt > 0) {
        lj_zero_forces_kernel<<<(nt + MDF_LJ_BLOCK - 1) / MDF_LJ_BLOCK, MDF_LJ_BLOCK, 0, stream>>>(
            f, atoms, sys, c->touch_begin, c->touch_end, args->status_lo, args->status_hi);
        mdf_lj_check(cudaGetLastError());
    }
    int32_t nsys = c->sys_end - c->sys_begin;
    if (nsys > 0) {
        lj_zero_results_kernel<<<(nsys + MDF_LJ_ZERO_BLOCK - 1) / MDF_LJ_ZERO_BLOCK, MDF_LJ_ZERO_BLOCK, 0, stream>>>(
            res, sys, c->sys_begin, c->sys_end, want_virial, args->status_lo, args->status_hi);
        mdf_lj_check(cudaGetLastError());
    }
    int32_t n = c->atom_end - c->atom_begin;
    if (n <= 0) return;
    lj_force_kernel<<<(n + MDF_LJ_BLOCK - 1) / MDF_LJ_BLOCK, MDF_LJ_BLOCK, 0, stream>>>(
        (const double *)STARPU_VECTOR_GET_PTR(buffers[0]), atoms, sys, (void *)STARPU_VECTOR_GET_PTR(buffers[3]),
        (void *)STARPU_VECTOR_GET_PTR(buffers[4]), f, res,
        (const mdf_lj_params *)STARPU_VECTOR_GET_PTR(buffers[7]), c->atom_begin, c->atom_end, want_virial,
        args->status_lo, args->status_hi);
    mdf_lj_check(cudaGetLastError());
}
