/* mdflow — neighbour lists, CUDA implementation (same arithmetic as the CPU
 * one, from nlist_kernel.h, whose decisions are rounded as on the CPU).
 *
 * Binning gives exactly the CPU's bins: the same cells, the same wrap
 * offsets, and each cell's atoms in atom order (the CPU's stable counting
 * sort), whatever order the atomics run in. A system that needs no rebuild
 * is left alone (grid.rebuilt = 0). Two paths:
 *
 *  - one thread block per system (nl_bin_kernel), for systems of at most
 *    mdf_nl_bin_args.big_atoms atoms: skin check, fractional bounds,
 *    counting sort (atomic counts, a segmented block scan, atomic scatter),
 *    then an insertion sort of each cell by atom index;
 *  - for larger systems, a sequence of kernels over their atoms, so that a
 *    1 M-atom system fills the GPU (nl_bin_big): the per-system rebuild
 *    flag (static reasons, then a per-atom skin check), the basis, the
 *    bounds through the deterministic per-system maxima of mdf_cuda_util.cuh,
 *    per-cell counts with atomics (each atom keeping its rank in its cell),
 *    a scan of the counts over many blocks, a scatter by rank, and the
 *    insertion sort of each cell.
 *
 * Lists: one thread per atom of the chunk, for the atoms of systems that were
 * just binned; the same kernel sums the chunk's list statistics (atomics on
 * integers: exact in any order). */
#include <cfloat>
#include <cstddef>
#include <starpu.h>
#include "nlist_kernel.h"
#include "nlist_codelet.h"
#include "../common/mdf_cuda_util.cuh"

#define MDF_NL_BIN_BLOCK 256
#define MDF_NL_BUILD_BLOCK 128
#define MDF_NL_SYS_THREADS 128 /* per-system kernels with one thread per system */
#define MDF_NL_BIG_BLOCK MDF_SEG_BLOCK /* per-atom kernels of the multi-block path */

static void mdf_nl_check_launch(void) { mdf_cuda_try(cudaGetLastError()); }

/* The systems binned by the multi-block path: those of more than min_atoms
 * atoms among systems [s0, s1), whose atoms all lie in [a0, a1). */
typedef struct nl_big {
    int32_t s0, s1, a0, a1, min_atoms;
} nl_big;

__device__ static inline int nl_is_big(const mdf_sys_info *si, int32_t s, const nl_big r)
{
    return s >= r.s0 && s < r.s1 && si->natoms > r.min_atoms && si->atom_start >= r.a0 &&
           si->atom_start + si->natoms <= r.a1;
}

/* The system of atom a when it is one of the multi-block path's, else -1. */
__device__ static inline int32_t nl_big_sys_of(int32_t a, const mdf_sys_info *sys, const nl_big r)
{
    if (a < r.a0 || a >= r.a1) return -1;
    const int32_t s = mdf_sys_of_atom(sys, r.s0, r.s1, a);
    return s >= 0 && nl_is_big(&sys[s], s, r) ? s : -1;
}

/* ---- binning, one block per system ---------------------------------------- */

__global__ void nl_bin_kernel(const double *pos, const mdf_sys_info *sys, void *blob, double r_list,
                              double half_skin2, int32_t every, int32_t nocheck, int32_t status_lo,
                              int32_t status_hi, const nl_big big)
{
    __shared__ mdf_nl_grid sg;
    __shared__ double red[6][MDF_NL_BIN_BLOCK];
    __shared__ int32_t seg_base[MDF_NL_BIN_BLOCK];

    mdf_nl_bins_view v = mdf_nl_bins_map(blob);
    const int32_t s = (int32_t)blockIdx.x;
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    const mdf_sys_info *si = &sys[s];
    mdf_nl_grid *g = &v.grid[s];
    const int32_t a0 = si->atom_start, natoms = si->natoms, a1 = a0 + natoms;

    if (nl_is_big(si, s, big)) return; /* the multi-block path's (the whole block leaves) */
    /* No atoms (batches refuse such systems; slots past the fill have
     * none): its one cell would overlap the next system's cell_start. */
    if (!mdf_status_in(si->status, status_lo, status_hi) || natoms == 0) {
        if (tid == 0) g->rebuilt = 0;
        return;
    }
    /* (1) Does the system need a rebuild? Same rule as the CPU (which also
     * rebuilds after the all-pairs path; it clears the flag either way). */
    int need = 0;
    const int32_t age = g->age + 1; /* read by every thread before thread 0 writes it */
    const int due = mdf_nl_rebuild_due(age, every, nocheck);
    if (tid == 0)
        need = !g->valid || g->all_pairs || v.head->force_rebuild || mdf_nl_cell_changed(g, si) || due > 0;
    for (int32_t a = a0 + tid; a < a1 && !need && due < 0; a += nt)
        need = mdf_nl_moved_too_far(pos, v.ref_pos, a, a + 1, half_skin2);
    need = __syncthreads_or(need);
    if (!need) {
        if (tid == 0) {
            g->rebuilt = 0;
            g->all_pairs = 0;
            g->age = age;
        }
        return;
    }

    /* (2) The basis, in a shared copy of the grid written back at the end. */
    if (tid == 0) {
        sg = *g;
        sg.all_pairs = 0;
        sg.age = 0;
        mdf_nl_basis(si, &sg);
    }
    __syncthreads();

    /* (3) Fractional range along each direction (bin_bounds in nlist_cpu.c). */
    double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
    for (int32_t a = a0 + tid; a < a1; a += nt) {
        double u[3], o[3];
        mdf_nl_wrap(&sg, pos + 3 * (size_t)a, u, o);
        for (int k = 0; k < 3; k++) {
            lo[k] = u[k] < lo[k] ? u[k] : lo[k];
            hi[k] = u[k] > hi[k] ? u[k] : hi[k];
        }
    }
    for (int k = 0; k < 3; k++) {
        red[k][tid] = lo[k];
        red[3 + k][tid] = hi[k];
    }
    __syncthreads();
    for (int w = nt / 2; w > 0; w /= 2) {
        if (tid < w)
            for (int k = 0; k < 3; k++) {
                double l2 = red[k][tid + w], h2 = red[3 + k][tid + w];
                red[k][tid] = l2 < red[k][tid] ? l2 : red[k][tid];
                red[3 + k][tid] = h2 > red[3 + k][tid] ? h2 : red[3 + k][tid];
            }
        __syncthreads();
    }

    /* (4) Cell counts. */
    if (tid == 0) {
        for (int k = 0; k < 3; k++) {
            sg.lo[k] = sg.periodic[k] ? 0.0 : red[k][0];
            double span = sg.periodic[k] ? 1.0 : red[3 + k][0] - red[k][0];
            sg.span[k] = span > 0.0 ? span : 1e-300; /* a flat system: one cell */
        }
        mdf_nl_grid_setup(&sg, r_list, si->atom_start, natoms);
    }
    __syncthreads();

    /* (5) Counting sort into the system's cell_start entries and sorted[]. */
    const int32_t ncells = sg.n[0] * sg.n[1] * sg.n[2];
    int32_t *cs = v.cell_start + a0 + s;
    for (int32_t c = tid; c <= ncells; c += nt) cs[c] = 0;
    __syncthreads();
    for (int32_t a = a0 + tid; a < a1; a += nt) {
        double u[3];
        int32_t cc[3];
        mdf_nl_wrap(&sg, pos + 3 * (size_t)a, u, v.offset + 3 * (size_t)a);
        int32_t cell = mdf_nl_cell_index(&sg, u, cc);
        v.cell_of[a] = cell;
        atomicAdd(&cs[cell + 1], 1);
    }
    __syncthreads();
    /* Scan: thread t owns the contiguous cells [c0, c1); it reads and writes
     * only the count slots cs[c0+1 .. c1], which become the cells' ends. */
    const int32_t seg = (ncells + nt - 1) / nt;
    const int32_t c0 = min(tid * seg, ncells), c1 = min(c0 + seg, ncells);
    int32_t sum = 0;
    for (int32_t c = c0; c < c1; c++) sum += cs[c + 1];
    seg_base[tid] = sum;
    __syncthreads();
    if (tid == 0) {
        int32_t run = a0;
        for (int t = 0; t < nt; t++) {
            int32_t x = seg_base[t];
            seg_base[t] = run;
            run += x;
        }
        cs[0] = a0;
    }
    __syncthreads();
    int32_t run = seg_base[tid];
    for (int32_t c = c0; c < c1; c++) {
        run += cs[c + 1];
        cs[c + 1] = run;
    }
    __syncthreads();
    /* Now cs[c] is the start of cell c (cs[ncells] = a1). Scatter with
     * cs[c] as the cursor: afterwards cs[c] is the end of cell c. */
    for (int32_t a = a0 + tid; a < a1; a += nt) {
        int32_t slot = atomicAdd(&cs[v.cell_of[a]], 1);
        v.sorted[slot] = a;
    }
    __syncthreads();
    /* Restore the starts: cs[c] = end of c-1, cs[0] = a0 (cs[ncells] was
     * never a cursor). Each thread first reads the end just below its cells. */
    int32_t below = (c0 < c1 && c0 > 0) ? cs[c0 - 1] : a0;
    __syncthreads();
    if (c0 < c1) {
        for (int32_t c = c1 - 1; c > c0; c--) cs[c] = cs[c - 1];
        cs[c0] = below;
    }
    __syncthreads();
    /* Each cell in atom order: the CPU's stable sort, independent of which
     * thread won which atomic. */
    for (int32_t c = tid; c < ncells; c += nt) {
        int32_t b = cs[c], e = cs[c + 1];
        for (int32_t p = b + 1; p < e; p++) {
            int32_t key = v.sorted[p];
            int32_t q = p - 1;
            while (q >= b && v.sorted[q] > key) {
                v.sorted[q + 1] = v.sorted[q];
                q--;
            }
            v.sorted[q + 1] = key;
        }
    }

    /* (6) Reference state of the build. */
    for (int32_t k = tid; k < 3 * natoms; k += nt) v.ref_pos[3 * (size_t)a0 + k] = pos[3 * (size_t)a0 + k];
    if (tid == 0) {
        for (int k = 0; k < 9; k++) sg.ref_cell[k] = si->cell[k];
        sg.valid = 1;
        sg.nbuilds++;
        sg.rebuilt = 1;
        *g = sg;
    }
}

/* ---- binning of large systems over many blocks ----------------------------
 *
 * Kernels in stream order; "per atom" kernels run one thread per atom of
 * [a0, a1) in blocks of MDF_NL_BIG_BLOCK, "per slot" ones one thread per
 * cell: the cells of a system number at most its atoms (mdf_nl_grid_dims
 * gets max_cells = natoms), so cell c of system s is taken by the thread of
 * atom atom_start(s) + c. Scratch: count[] and rank[] per atom slot (a - a0),
 * blockpart[] and carry[] per block, and the parts of the bounds' maxima. */

/* (1) Static reasons for a rebuild, as in nl_bin_kernel (one thread per system). */
__global__ void nl_big_flags_kernel(const mdf_sys_info *sys, void *blob, int32_t every, int32_t nocheck,
                                    int32_t status_lo, int32_t status_hi, const nl_big r)
{
    const int32_t s = r.s0 + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (s >= r.s1) return;
    const mdf_sys_info *si = &sys[s];
    if (!nl_is_big(si, s, r)) return;
    mdf_nl_bins_view v = mdf_nl_bins_map(blob);
    mdf_nl_grid *g = &v.grid[s];
    if (!mdf_status_in(si->status, status_lo, status_hi)) {
        g->rebuilt = 0;
        return;
    }
    /* The rule's clock advances here; the skin kernel reads it, the
     * basis kernel restarts it for the systems rebuilt. */
    g->age++;
    g->rebuilt = !g->valid || g->all_pairs || v.head->force_rebuild || mdf_nl_cell_changed(g, si) ||
                 mdf_nl_rebuild_due(g->age, every, nocheck) > 0;
    g->all_pairs = 0;
}

/* (2) Per atom: an atom past skin/2 sets its system's flag (the only value
 * ever stored here is 1; one store per warp and system). */
__global__ void nl_big_skin_kernel(const double *pos, const mdf_sys_info *sys, void *blob, double half_skin2,
                                   int32_t every, int32_t nocheck, int32_t status_lo, int32_t status_hi,
                                   const nl_big r)
{
    const int32_t a = r.a0 + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    const int32_t s = nl_big_sys_of(a, sys, r);
    mdf_nl_bins_view v = mdf_nl_bins_map(blob);
    int moved = 0;
    if (s >= 0 && mdf_status_in(sys[s].status, status_lo, status_hi) &&
        mdf_nl_rebuild_due(v.grid[s].age, every, nocheck) < 0)
        moved = mdf_nl_moved_too_far(pos, v.ref_pos, a, a + 1, half_skin2);
    /* Every lane of the warp is here (no early return above). */
    const unsigned full = 0xffffffffu, m = __ballot_sync(full, moved);
    if (m == 0) return;
    const int lane = (int)(threadIdx.x & 31u), leader = __ffs((int)m) - 1;
    const int32_t s_leader = __shfl_sync(full, s, leader);
    const int one_sys = __ballot_sync(full, moved && s != s_leader) == 0;
    if (moved && (!one_sys || lane == leader)) v.grid[s].rebuilt = 1;
}

/* (3) The basis of each system to rebuild (one thread per system). */
__global__ void nl_big_basis_kernel(const mdf_sys_info *sys, void *blob, const nl_big r)
{
    const int32_t s = r.s0 + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (s >= r.s1) return;
    const mdf_sys_info *si = &sys[s];
    if (!nl_is_big(si, s, r)) return;
    mdf_nl_grid *g = &mdf_nl_bins_map(blob).grid[s];
    if (!g->rebuilt) return;
    mdf_nl_basis(si, g);
    g->age = 0;
}

__device__ static inline int nl_all_periodic(const mdf_nl_grid *g)
{
    return g->periodic[0] && g->periodic[1] && g->periodic[2];
}

/* (4) Per atom: the fractional range, as maxima of (-u, u). An atom that
 * takes no part, or a NaN coordinate, gives -DBL_MAX: the CPU starts from
 * DBL_MAX / -DBL_MAX and its comparisons skip NaN. */
__global__ void __launch_bounds__(MDF_NL_BIG_BLOCK)
    nl_big_bounds_kernel(const double *pos, const mdf_sys_info *sys, void *blob, const nl_big r,
                         const mdf_seg_parts parts)
{
    const int32_t a = r.a0 + (int32_t)(blockIdx.x * MDF_NL_BIG_BLOCK + threadIdx.x);
    const int32_t s = nl_big_sys_of(a, sys, r);
    double val[6] = {-DBL_MAX, -DBL_MAX, -DBL_MAX, -DBL_MAX, -DBL_MAX, -DBL_MAX};
    if (s >= 0) {
        const mdf_nl_grid *g = &mdf_nl_bins_map(blob).grid[s];
        if (g->rebuilt && !nl_all_periodic(g)) {
            double u[3], o[3];
            mdf_nl_wrap(g, pos + 3 * (size_t)a, u, o);
            for (int k = 0; k < 3; k++)
                if (u[k] == u[k]) {
                    val[k] = -u[k];
                    val[3 + k] = u[k];
                }
        }
    }
    mdf_seg_block<6, 0x3fu>(val, a, s, sys, parts); /* every thread of the block */
}

/* (5) Per system (one block each): bounds, cell counts, and the reference
 * state of the build (read by no later kernel of this call). */
__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    nl_big_dims_kernel(const mdf_sys_info *sys, void *blob, double r_list, const nl_big r, const mdf_seg_parts parts)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = r.s0 + (int32_t)blockIdx.x;
    const mdf_sys_info *si = &sys[s];
    if (!nl_is_big(si, s, r)) return; /* the whole block */
    mdf_nl_grid *g = &mdf_nl_bins_map(blob).grid[s];
    if (!g->rebuilt) return;          /* the whole block: written by earlier kernels */
    const int some_open = !nl_all_periodic(g);
    double tot[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    if (some_open) mdf_seg_total<6, 0x3fu>(parts, s, si, tot, scratch); /* every thread of the block */
    if (threadIdx.x != 0) return;
    for (int k = 0; k < 3; k++) { /* bin_bounds in nlist_cpu.c */
        double lo = -tot[k], hi = tot[3 + k];
        int per = !some_open || g->periodic[k];
        g->lo[k] = per ? 0.0 : lo;
        double span = per ? 1.0 : hi - lo;
        g->span[k] = span > 0.0 ? span : 1e-300;
    }
    mdf_nl_grid_setup(g, r_list, si->atom_start, si->natoms);
    for (int k = 0; k < 9; k++) g->ref_cell[k] = si->cell[k];
    g->valid = 1;
    g->nbuilds++;
}

/* The system of atom (or slot) a when the multi-block path rebuilds it, else -1. */
__device__ static inline int32_t nl_big_rebuilt_sys(int32_t a, const mdf_sys_info *sys, const mdf_nl_bins_view &v,
                                                    const nl_big r)
{
    int32_t s = nl_big_sys_of(a, sys, r);
    return s >= 0 && v.grid[s].rebuilt ? s : -1;
}

__device__ static inline int32_t nl_ncells(const mdf_nl_grid *g) { return g->n[0] * g->n[1] * g->n[2]; }

/* (6) Per atom: wrap offset, cell, and the atom's rank among its cell's
 * atoms in the order the atomics ran; the reference positions. */
__global__ void nl_big_count_kernel(const double *pos, const mdf_sys_info *sys, void *blob, int32_t *count,
                                    int32_t *rank, const nl_big r)
{
    const int32_t a = r.a0 + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    mdf_nl_bins_view v = mdf_nl_bins_map(blob);
    const int32_t s = nl_big_rebuilt_sys(a, sys, v, r);
    if (s < 0) return;
    const mdf_nl_grid *g = &v.grid[s];
    const size_t k3 = 3 * (size_t)a;
    double u[3];
    int32_t cc[3];
    mdf_nl_wrap(g, pos + k3, u, v.offset + k3);
    const int32_t cell = mdf_nl_cell_index(g, u, cc);
    v.cell_of[a] = cell;
    rank[a - r.a0] = atomicAdd(&count[sys[s].atom_start - r.a0 + cell], 1);
    for (int k = 0; k < 3; k++) v.ref_pos[k3 + k] = pos[k3 + k];
}

/* (7) Per slot: inclusive scan of the counts within the block, segmented by
 * system, into cs[c + 1]; the block's part of a system that goes on in the
 * next block into blockpart[b]. */
__global__ void __launch_bounds__(MDF_NL_BIG_BLOCK)
    nl_big_scan_local_kernel(const mdf_sys_info *sys, void *blob, const int32_t *count, int32_t *blockpart,
                             const nl_big r)
{
    __shared__ int32_t skey[MDF_NL_BIG_BLOCK], sval[MDF_NL_BIG_BLOCK];
    const int t = (int)threadIdx.x;
    const int32_t b = (int32_t)blockIdx.x;
    const int32_t a = r.a0 + b * MDF_NL_BIG_BLOCK + t;
    mdf_nl_bins_view v = mdf_nl_bins_map(blob);
    const int32_t s = nl_big_rebuilt_sys(a, sys, v, r);
    int32_t c = 0, ncells = 0;
    if (s >= 0) {
        c = a - sys[s].atom_start;
        ncells = nl_ncells(&v.grid[s]);
    }
    skey[t] = s;
    sval[t] = s >= 0 && c < ncells ? count[a - r.a0] : 0;
    __syncthreads();
    /* Systems are contiguous runs of slots, so a slot off places back with
     * the same key is in the same run (as in mdf_seg_block). */
    for (int off = 1; off < MDF_NL_BIG_BLOCK; off *= 2) {
        const int32_t y = t >= off && skey[t - off] == s ? sval[t - off] : 0;
        __syncthreads();
        sval[t] += y;
        __syncthreads();
    }
    if (s < 0) return;
    const int32_t incl = sval[t];
    if (c < ncells) v.cell_start[sys[s].atom_start + s + c + 1] = incl;
    if (t == MDF_NL_BIG_BLOCK - 1 && a + 1 < sys[s].atom_start + sys[s].natoms) blockpart[b] = incl;
}

/* (8) Per system (one block each): carry[b] for each block b after the
 * system's first, the sum of its parts in blocks before b; cs[0]. */
__global__ void __launch_bounds__(MDF_NL_BIG_BLOCK)
    nl_big_scan_blocks_kernel(const mdf_sys_info *sys, void *blob, const int32_t *blockpart, int32_t *carry,
                              const nl_big r)
{
    __shared__ int32_t sh[MDF_NL_BIG_BLOCK];
    const int t = (int)threadIdx.x;
    const int32_t s = r.s0 + (int32_t)blockIdx.x;
    const mdf_sys_info *si = &sys[s];
    if (!nl_is_big(si, s, r)) return; /* the whole block */
    mdf_nl_bins_view v = mdf_nl_bins_map(blob);
    if (!v.grid[s].rebuilt) return;   /* the whole block */
    const int32_t st = si->atom_start;
    const int32_t b0 = (st - r.a0) / MDF_NL_BIG_BLOCK, b1 = (st + si->natoms - 1 - r.a0) / MDF_NL_BIG_BLOCK;
    const int32_t n = b1 - b0; /* parts in blocks b0 .. b1-1 */
    int32_t run = 0;
    for (int32_t base = 0; base < n; base += MDF_NL_BIG_BLOCK) { /* same trip count for all threads */
        const int32_t j = base + t;
        sh[t] = j < n ? blockpart[b0 + j] : 0;
        __syncthreads();
        for (int off = 1; off < MDF_NL_BIG_BLOCK; off *= 2) {
            const int32_t y = t >= off ? sh[t - off] : 0;
            __syncthreads();
            sh[t] += y;
            __syncthreads();
        }
        const int32_t incl = sh[t], total = sh[MDF_NL_BIG_BLOCK - 1];
        __syncthreads(); /* sh is reused by the next tile */
        if (j < n) carry[b0 + 1 + j] = run + incl;
        run += total;
    }
    if (t == 0) v.cell_start[st + s] = st;
}

/* (9) Per slot: cs[c + 1] becomes the end of cell c (the start of c + 1). */
__global__ void nl_big_scan_add_kernel(const mdf_sys_info *sys, void *blob, const int32_t *carry, const nl_big r)
{
    const int32_t b = (int32_t)blockIdx.x;
    const int32_t a = r.a0 + b * MDF_NL_BIG_BLOCK + (int32_t)threadIdx.x;
    mdf_nl_bins_view v = mdf_nl_bins_map(blob);
    const int32_t s = nl_big_rebuilt_sys(a, sys, v, r);
    if (s < 0) return;
    const int32_t st = sys[s].atom_start, c = a - st;
    if (c >= nl_ncells(&v.grid[s])) return;
    /* A system that began in an earlier block is block b's first: its carry. */
    const int32_t add = st + (st < r.a0 + b * MDF_NL_BIG_BLOCK ? carry[b] : 0);
    v.cell_start[st + s + c + 1] += add;
}

/* (10) Per atom: its place, the start of its cell plus its rank. */
__global__ void nl_big_scatter_kernel(const mdf_sys_info *sys, void *blob, const int32_t *rank, const nl_big r)
{
    const int32_t a = r.a0 + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    mdf_nl_bins_view v = mdf_nl_bins_map(blob);
    const int32_t s = nl_big_rebuilt_sys(a, sys, v, r);
    if (s < 0) return;
    const int32_t *cs = v.cell_start + sys[s].atom_start + s;
    v.sorted[cs[v.cell_of[a]] + rank[a - r.a0]] = a;
}

/* (11) Per slot: cell c in atom order (the CPU's stable sort). */
__global__ void nl_big_sort_kernel(const mdf_sys_info *sys, void *blob, const nl_big r)
{
    const int32_t a = r.a0 + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    mdf_nl_bins_view v = mdf_nl_bins_map(blob);
    const int32_t s = nl_big_rebuilt_sys(a, sys, v, r);
    if (s < 0) return;
    const int32_t st = sys[s].atom_start, c = a - st;
    if (c >= nl_ncells(&v.grid[s])) return;
    const int32_t *cs = v.cell_start + st + s;
    int32_t *srt = v.sorted;
    const int32_t b = cs[c], e = cs[c + 1];
    for (int32_t p = b + 1; p < e; p++) {
        int32_t key = srt[p];
        int32_t q = p - 1;
        while (q >= b && srt[q] > key) {
            srt[q + 1] = srt[q];
            q--;
        }
        srt[q + 1] = key;
    }
}

static void nl_bin_big(const double *pos, const mdf_sys_info *sys, void *blob, const mdf_nl_bin_args *args,
                       const nl_big r, cudaStream_t stream)
{
    const int32_t n = r.a1 - r.a0, nsys = r.s1 - r.s0;
    const unsigned nb = (unsigned)((n + MDF_NL_BIG_BLOCK - 1) / MDF_NL_BIG_BLOCK);
    const unsigned nsb = (unsigned)((nsys + MDF_NL_SYS_THREADS - 1) / MDF_NL_SYS_THREADS);
    /* count[n], rank[n], blockpart[nb], carry[nb] */
    int32_t *scratch = NULL;
    mdf_cuda_try(cudaMallocAsync((void **)&scratch, sizeof(int32_t) * (2 * (size_t)n + 2 * (size_t)nb), stream));
    int32_t *count = scratch, *rank = scratch + n, *blockpart = rank + n, *carry = blockpart + nb;
    mdf_seg_parts parts;
    mdf_cuda_try(mdf_seg_alloc(&parts, 6, r.a0, r.a1, r.s1, stream));
    mdf_cuda_try(cudaMemsetAsync(count, 0, sizeof(int32_t) * (size_t)n, stream));

    nl_big_flags_kernel<<<nsb, MDF_NL_SYS_THREADS, 0, stream>>>(sys, blob, args->rebuild_every,
                                                                args->rebuild_nocheck, args->status_lo,
                                                                args->status_hi, r);
    mdf_nl_check_launch();
    nl_big_skin_kernel<<<nb, MDF_NL_BIG_BLOCK, 0, stream>>>(pos, sys, blob, args->half_skin2, args->rebuild_every,
                                                            args->rebuild_nocheck, args->status_lo,
                                                            args->status_hi, r);
    mdf_nl_check_launch();
    nl_big_basis_kernel<<<nsb, MDF_NL_SYS_THREADS, 0, stream>>>(sys, blob, r);
    mdf_nl_check_launch();
    nl_big_bounds_kernel<<<nb, MDF_NL_BIG_BLOCK, 0, stream>>>(pos, sys, blob, r, parts);
    mdf_nl_check_launch();
    nl_big_dims_kernel<<<(unsigned)nsys, MDF_SYS_BLOCK, 0, stream>>>(sys, blob, args->r_list, r, parts);
    mdf_nl_check_launch();
    nl_big_count_kernel<<<nb, MDF_NL_BIG_BLOCK, 0, stream>>>(pos, sys, blob, count, rank, r);
    mdf_nl_check_launch();
    nl_big_scan_local_kernel<<<nb, MDF_NL_BIG_BLOCK, 0, stream>>>(sys, blob, count, blockpart, r);
    mdf_nl_check_launch();
    nl_big_scan_blocks_kernel<<<(unsigned)nsys, MDF_NL_BIG_BLOCK, 0, stream>>>(sys, blob, blockpart, carry, r);
    mdf_nl_check_launch();
    nl_big_scan_add_kernel<<<nb, MDF_NL_BIG_BLOCK, 0, stream>>>(sys, blob, carry, r);
    mdf_nl_check_launch();
    nl_big_scatter_kernel<<<nb, MDF_NL_BIG_BLOCK, 0, stream>>>(sys, blob, rank, r);
    mdf_nl_check_launch();
    nl_big_sort_kernel<<<nb, MDF_NL_BIG_BLOCK, 0, stream>>>(sys, blob, r);
    mdf_nl_check_launch();

    mdf_cuda_try(mdf_seg_free(&parts, stream));
    mdf_cuda_try(cudaFreeAsync(scratch, stream));
}

/* buffers: pos R, sys R, bins RW */
extern "C" void mdf_nl_bin_cuda(void *buffers[], void *cl_arg)
{
    const mdf_nl_bin_args *args = (const mdf_nl_bin_args *)cl_arg;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    const double *pos = (const double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const mdf_sys_info *sys = (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[1]);
    void *blob = (void *)STARPU_VECTOR_GET_PTR(buffers[2]);
    nl_big r = {args->big_sys_begin, args->big_sys_end < args->nsys ? args->big_sys_end : args->nsys,
                args->big_atom_begin, args->big_atom_end, args->big_atoms > 0 ? args->big_atoms : 0};
    const int big = r.s0 >= 0 && r.s1 > r.s0 && r.a0 >= 0 && r.a1 > r.a0;
    if (!big) r.s0 = r.s1 = r.a0 = r.a1 = 0; /* nl_is_big is then false for every system */
    if (args->nsys > 0) {
        nl_bin_kernel<<<args->nsys, MDF_NL_BIN_BLOCK, 0, stream>>>(pos, sys, blob, args->r_list, args->half_skin2,
                                                                   args->rebuild_every, args->rebuild_nocheck,
                                                                   args->status_lo, args->status_hi, r);
        mdf_nl_check_launch();
    }
    if (big) nl_bin_big(pos, sys, blob, args, r, stream);
    /* Every kernel has read force_rebuild once they are done: reset it
     * after, in stream order. */
    mdf_cuda_try(cudaMemsetAsync((char *)blob + offsetof(mdf_nl_bins_head, force_rebuild), 0, sizeof(int32_t),
                                 stream));
}

/* ---- per-atom lists ----------------------------------------------------- */

/* Atom i's list: the arithmetic of mdf_nl_build_atom (each candidate's
 * wrapped position translated by its cell's image, minus i's wrapped
 * position, as build_by_cells in nlist_cpu.c), so a pair at the edge of
 * r_list is decided as on the CPU and the entries come in the same order
 * (cells in walk order, atoms in cell order). Then list_stats of
 * nlist_cpu.c over the chunk's atoms: *overflowed and *max_count, zeroed
 * before the launch, gather each block's count and maximum. Unchanged lists
 * give unchanged statistics, so computing them at every call is the same as
 * the CPU's "after a rebuild". */
__global__ void __launch_bounds__(MDF_NL_BUILD_BLOCK)
    nl_build_kernel(const double *pos, const mdf_atom_info *atoms, const mdf_sys_info *sys, void *bins_blob,
                    void *list_blob, double r_list2, int32_t atom_begin, int32_t atom_end)
{
    __shared__ int32_t w_over[MDF_NL_BUILD_BLOCK / 32], w_max[MDF_NL_BUILD_BLOCK / 32];
    const int32_t i = atom_begin + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    mdf_nl_list_view l = mdf_nl_list_map(list_blob);
    const int32_t M = l.head->slots;
    int32_t over = 0, maxc = 0;
    if (i < atom_end) {
        mdf_nl_bins_view v = mdf_nl_bins_map(bins_blob);
        const int32_t s = atoms[i].sys, li = i - atom_begin;
        const mdf_nl_grid *g = &v.grid[s];
        if (g->rebuilt) {
            const mdf_sys_info *si = &sys[s];
            const int32_t *cs = v.cell_start + si->atom_start + s;
            uint32_t *slots = l.slots + (size_t)li * (size_t)M;
            mdf_nl_build_atom(i, pos, v.offset, si, g, cs, v.sorted, v.cell_of, r_list2, M, slots, &l.n_up[li],
                              &l.n_down[li]);
        }
        const int32_t c = l.n_up[li] + l.n_down[li];
        over = c > M;
        maxc = c;
    }
    /* Every thread is here: warp sums and maxima, then one atomic per block. */
    const unsigned full = 0xffffffffu;
    for (int off = 16; off > 0; off /= 2) {
        over += __shfl_down_sync(full, over, off);
        int32_t m2 = __shfl_down_sync(full, maxc, off);
        maxc = m2 > maxc ? m2 : maxc;
    }
    const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5);
    if (lane == 0) {
        w_over[warp] = over;
        w_max[warp] = maxc;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int32_t o = 0, m = 0;
        for (int k = 0; k < MDF_NL_BUILD_BLOCK / 32; k++) {
            o += w_over[k];
            m = w_max[k] > m ? w_max[k] : m;
        }
        if (o) atomicAdd(&l.head->overflowed, o);
        if (m) atomicMax(&l.head->max_count, m);
    }
}

/* buffers: pos R, atoms R, sys R, bins R, list RW */
extern "C" void mdf_nl_build_cuda(void *buffers[], void *cl_arg)
{
    const mdf_nl_build_args *args = (const mdf_nl_build_args *)cl_arg;
    const mdf_chunk *c = &args->chunk;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    char *list_blob = (char *)STARPU_VECTOR_GET_PTR(buffers[4]);
    int32_t n = c->atom_end - c->atom_begin;
    if (n <= 0) return;
    /* overflowed and max_count are adjacent: zero both, then the kernel sums. */
    static_assert(offsetof(mdf_nl_list_head, max_count) == offsetof(mdf_nl_list_head, overflowed) + sizeof(int32_t),
                  "list statistics must be adjacent");
    mdf_cuda_try(cudaMemsetAsync(list_blob + offsetof(mdf_nl_list_head, overflowed), 0, 2 * sizeof(int32_t), stream));
    nl_build_kernel<<<(unsigned)((n + MDF_NL_BUILD_BLOCK - 1) / MDF_NL_BUILD_BLOCK), MDF_NL_BUILD_BLOCK, 0, stream>>>(
        (const double *)STARPU_VECTOR_GET_PTR(buffers[0]), (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]),
        (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]), (void *)STARPU_VECTOR_GET_PTR(buffers[3]),
        list_blob, args->r_list2, c->atom_begin, c->atom_end);
    mdf_nl_check_launch();
}

/* Binning, then the lists of the shard's only chunk, on the same stream. */
extern "C" void mdf_nl_update_cuda(void *buffers[], void *cl_arg)
{
    const mdf_nl_update_args *args = (const mdf_nl_update_args *)cl_arg;
    void *bin_buffers[3] = {buffers[0], buffers[2], buffers[3]};
    mdf_nl_bin_cuda(bin_buffers, (void *)&args->bin);
    mdf_nl_build_cuda(buffers, (void *)&args->build);
}
