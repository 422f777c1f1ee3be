/* mdflow — neighbour lists, CUDA implementation (same arithmetic as the CPU
 * one, from nlist_kernel.h).
 *
 * Binning: one thread block per system. A system that needs no rebuild is
 * left alone (grid.rebuilt = 0). Otherwise the block records each atom's
 * wrap offset (mdf_nl_wrap, as the CPU) and bins its atoms with a
 * counting sort (atomic counts, a segmented block scan, atomic scatter) and
 * then sorts each cell's atoms by index, so the cell contents are exactly
 * those of the CPU's stable counting sort, whatever order the atomics ran in.
 *
 * Lists: one thread per atom of the chunk, for the atoms of systems that were
 * just binned; then one block recomputes the chunk's list statistics. */
#include <cfloat>
#include <cstddef>
#include <starpu.h>
#include "nlist_kernel.h"
#include "nlist_codelet.h"

#define MDF_NL_BIN_BLOCK 256
#define MDF_NL_BUILD_BLOCK 128
#define MDF_NL_STATS_BLOCK 256

static void mdf_nl_check_launch(void)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
}

/* ---- binning ------------------------------------------------------------ */

__global__ void nl_bin_kernel(const double *pos, const mdf_sys_info *sys, void *blob, double r_list,
                              double half_skin2, int32_t status_lo, int32_t status_hi)
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

    if (!mdf_status_in(si->status, status_lo, status_hi)) {
        if (tid == 0) g->rebuilt = 0;
        return;
    }
    /* (1) Does the system need a rebuild? Same rule as the CPU. */
    int need = 0;
    if (tid == 0) need = !g->valid || v.head->force_rebuild || mdf_nl_cell_changed(g, si);
    for (int32_t a = a0 + tid; a < a1 && !need; a += nt)
        need = mdf_nl_moved_too_far(pos, v.ref_pos, a, a + 1, half_skin2);
    need = __syncthreads_or(need);
    if (!need) {
        if (tid == 0) g->rebuilt = 0;
        return;
    }

    /* (2) The basis, in a shared copy of the grid written back at the end. */
    if (tid == 0) {
        sg = *g;
        mdf_nl_basis(si, &sg);
    }
    __syncthreads();

    /* (3) Fractional range along each direction (bin_bounds in nlist_cpu.c). */
    double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
    for (int32_t a = a0 + tid; a < a1; a += nt) {
        double u[3], o[3];
        mdf_nl_wrap(&sg, pos + 3 * a, u, o);
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
        mdf_nl_grid_dims(&sg, r_list, natoms);
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
        mdf_nl_wrap(&sg, pos + 3 * a, u, v.offset + 3 * a);
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

/* buffers: pos R, sys R, bins RW */
extern "C" void mdf_nl_bin_cuda(void *buffers[], void *cl_arg)
{
    const mdf_nl_bin_args *args = (const mdf_nl_bin_args *)cl_arg;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    void *blob = (void *)STARPU_VECTOR_GET_PTR(buffers[2]);
    if (args->nsys > 0) {
        nl_bin_kernel<<<args->nsys, MDF_NL_BIN_BLOCK, 0, stream>>>(
            (const double *)STARPU_VECTOR_GET_PTR(buffers[0]),
            (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[1]), blob, args->r_list, args->half_skin2,
            args->status_lo, args->status_hi);
        mdf_nl_check_launch();
    }
    /* Every block has read force_rebuild once the kernel is done: reset it
     * after, in stream order. */
    cudaError_t e = cudaMemsetAsync((char *)blob + offsetof(mdf_nl_bins_head, force_rebuild), 0,
                                    sizeof(int32_t), stream);
    if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
}

/* ---- per-atom lists ----------------------------------------------------- */

/* Atom i's list when no periodic direction has fewer than 3 cells: the
 * arithmetic of build_by_cells in nlist_cpu.c (each candidate's wrapped
 * position translated by its cell's image, minus i's wrapped position), so
 * a pair at the edge of r_list is decided as on the CPU, and the entries
 * come in the same order (cells in walk order, atoms in cell order). */
__global__ void nl_build_kernel(const double *pos, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                                void *bins_blob, void *list_blob, double r_list2, int32_t atom_begin,
                                int32_t atom_end)
{
    int32_t i = atom_begin + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= atom_end) return;
    mdf_nl_bins_view v = mdf_nl_bins_map(bins_blob);
    int32_t s = atoms[i].sys;
    const mdf_nl_grid *g = &v.grid[s];
    if (!g->rebuilt) return;
    mdf_nl_list_view l = mdf_nl_list_map(list_blob);
    const mdf_sys_info *si = &sys[s];
    const int32_t M = l.head->slots;
    const int32_t li = i - atom_begin;
    const int32_t *cs = v.cell_start + si->atom_start + s;
    uint32_t *slots = l.slots + (size_t)li * (size_t)M;
    mdf_nl_build_atom(i, pos, v.offset, si, g, cs, v.sorted, v.cell_of, r_list2, M, slots, &l.n_up[li],
                      &l.n_down[li]);
}

/* list_stats of nlist_cpu.c: overflowed atoms and the largest count. */
__global__ void nl_stats_kernel(void *list_blob)
{
    __shared__ int32_t over[MDF_NL_STATS_BLOCK], maxc[MDF_NL_STATS_BLOCK];
    mdf_nl_list_view l = mdf_nl_list_map(list_blob);
    const int tid = (int)threadIdx.x, nt = (int)blockDim.x;
    const int32_t n = l.head->natoms, M = l.head->slots;
    int32_t o = 0, m = 0;
    for (int32_t i = tid; i < n; i += nt) {
        int32_t c = l.n_up[i] + l.n_down[i];
        o += c > M;
        m = c > m ? c : m;
    }
    over[tid] = o;
    maxc[tid] = m;
    __syncthreads();
    for (int w = nt / 2; w > 0; w /= 2) {
        if (tid < w) {
            over[tid] += over[tid + w];
            maxc[tid] = maxc[tid + w] > maxc[tid] ? maxc[tid + w] : maxc[tid];
        }
        __syncthreads();
    }
    if (tid == 0) {
        l.head->overflowed = over[0];
        l.head->max_count = maxc[0];
    }
}

/* buffers: pos R, atoms R, sys R, bins R, list RW */
extern "C" void mdf_nl_build_cuda(void *buffers[], void *cl_arg)
{
    const mdf_nl_build_args *args = (const mdf_nl_build_args *)cl_arg;
    const mdf_chunk *c = &args->chunk;
    cudaStream_t stream = starpu_cuda_get_local_stream();
    void *list_blob = (void *)STARPU_VECTOR_GET_PTR(buffers[4]);
    int32_t n = c->atom_end - c->atom_begin;
    if (n <= 0) return;
    nl_build_kernel<<<(n + MDF_NL_BUILD_BLOCK - 1) / MDF_NL_BUILD_BLOCK, MDF_NL_BUILD_BLOCK, 0, stream>>>(
        (const double *)STARPU_VECTOR_GET_PTR(buffers[0]), (const mdf_atom_info *)STARPU_VECTOR_GET_PTR(buffers[1]),
        (const mdf_sys_info *)STARPU_VECTOR_GET_PTR(buffers[2]), (void *)STARPU_VECTOR_GET_PTR(buffers[3]),
        list_blob, args->r_list2, c->atom_begin, c->atom_end);
    mdf_nl_check_launch();
    /* Unchanged lists give unchanged statistics: recomputing them always is
     * the same as the CPU's "only after a rebuild". */
    nl_stats_kernel<<<1, MDF_NL_STATS_BLOCK, 0, stream>>>(list_blob);
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
