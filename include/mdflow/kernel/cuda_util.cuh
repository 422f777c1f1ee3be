/* mdflow — helpers for CUDA codelets (nvcc only; installed, so that a
 * plugin's CUDA codelets sum and report errors as the built-in ones do).
 *
 * Reductions (kinetic energy, F·v, norms, dot products) have a fixed order,
 * so results repeat from run to run: mdf_block_sum within a block, and the
 * segmented per-system sums below across blocks. */
#ifndef MDF_CUDA_UTIL_CUH
#define MDF_CUDA_UTIL_CUH

#include <starpu.h>
#include <stdint.h>
#include "mdflow/kernel.h"

/* Threads per block of the per-system kernels (a power of two). */
#define MDF_SYS_BLOCK 128

/* Sum of v over the block, returned to every thread. scratch: shared array
 * of blockDim.x doubles; blockDim.x a power of two. Every thread of the
 * block must call it (it synchronises). */
__device__ static inline double mdf_block_sum(double v, double *scratch)
{
    const int t = (int)threadIdx.x;
    scratch[t] = v;
    __syncthreads();
    for (int w = (int)blockDim.x / 2; w > 0; w /= 2) {
        if (t < w) scratch[t] += scratch[t + w];
        __syncthreads();
    }
    double total = scratch[0];
    __syncthreads(); /* scratch may be reused at once */
    return total;
}

/* Largest v over the block, returned to every thread (same rules). */
__device__ static inline double mdf_block_max(double v, double *scratch)
{
    const int t = (int)threadIdx.x;
    scratch[t] = v;
    __syncthreads();
    for (int w = (int)blockDim.x / 2; w > 0; w /= 2) {
        if (t < w && scratch[t + w] > scratch[t]) scratch[t] = scratch[t + w];
        __syncthreads();
    }
    double m = scratch[0];
    __syncthreads();
    return m;
}

/* ---- per-system sums over any number of blocks ------------------------------
 *
 * A shard's atoms are contiguous per system (CSR), so a per-atom kernel can
 * run one thread per atom in blocks of MDF_SEG_BLOCK consecutive atoms of a
 * range [a_lo, a_hi) (a shard, or a model chunk): a system may then span
 * thousands of blocks (a 1 M-atom system fills all SMs) and a block may hold
 * many small systems. Its per-system sums come in two phases:
 *
 *  1. inside the per-atom kernel, every thread of the block calls
 *     mdf_seg_block<K>() with its K values (zeros for atoms that take no
 *     part). A segmented inclusive scan in a fixed order (Hillis-Steele,
 *     offsets 1, 2, 4, ...) gives each system's sum over its atoms in the
 *     block, which is stored as
 *       whole[s]  when system s lies entirely in the block,
 *       head[b]   for the block's first system when it began in an earlier block,
 *       tail[b]   for the block's last system when it goes on in a later block
 *     (a block inside one system stores both);
 *  2. a later kernel with one block of threads per system calls
 *     mdf_seg_total<K>(): whole[s], or tail[b0] + (head[b0+1] + ... +
 *     head[b1-1]) + head[b1] for a system over blocks b0..b1, the middle term
 *     through mdf_block_sum over a fixed assignment of blocks to threads.
 *
 * Every addition's order depends only on the system's atom range and the
 * block size, never on timing or the grid: results repeat bit for bit from
 * run to run (no atomics). Value k is summed, or, when bit k of MAXMASK is
 * set, combined by a maximum in which NaN wins (a NaN force must not pass
 * for a small one). Atoms that take no part give the identity: 0 for sums,
 * -INFINITY (or 0 for norms) for maxima. The parts live in stream-ordered
 * device memory (mdf_seg_alloc/mdf_seg_free: cudaMallocAsync on StarPU's
 * stream). */
#define MDF_SEG_BLOCK 256 /* threads (= atoms) per block of a per-atom kernel */

typedef struct mdf_seg_parts {
    double *head, *tail, *whole; /* nblocks*K, nblocks*K, nsys*K doubles */
    int32_t a_lo, a_hi;          /* atoms covered; block b starts at a_lo + b*MDF_SEG_BLOCK */
    int32_t nblocks, nsys;
} mdf_seg_parts;

/* acc combined with x: a sum, or a maximum in which NaN wins. */
__device__ static inline double mdf_seg_combine(double acc, double x, int is_max)
{
    if (!is_max) return acc + x;
    return (x > acc || x != x) ? x : acc;
}

/* mdf_block_sum's tree with mdf_seg_combine (same rules). */
__device__ static inline double mdf_block_combine(double v, double *scratch, int is_max)
{
    const int t = (int)threadIdx.x;
    scratch[t] = v;
    __syncthreads();
    for (int w = (int)blockDim.x / 2; w > 0; w /= 2) {
        if (t < w) scratch[t] = mdf_seg_combine(scratch[t], scratch[t + w], is_max);
        __syncthreads();
    }
    double total = scratch[0];
    __syncthreads();
    return total;
}

/* Blocks of MDF_SEG_BLOCK atoms over [a_lo, a_hi). */
static inline int32_t mdf_seg_nblocks(int32_t a_lo, int32_t a_hi)
{
    return a_hi > a_lo ? (a_hi - a_lo + MDF_SEG_BLOCK - 1) / MDF_SEG_BLOCK : 0;
}

/* Parts for K sums per system over atoms [a_lo, a_hi) of systems [0, nsys).
 * The memory pool keeps what is freed (no release threshold), so after the
 * first steps the allocation costs no driver call. */
static inline cudaError_t mdf_seg_alloc(mdf_seg_parts *p, int K, int32_t a_lo, int32_t a_hi, int32_t nsys,
                                        cudaStream_t stream)
{
    int dev = 0;
    cudaMemPool_t pool;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
        uint64_t keep = UINT64_MAX;
        (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    /* Those three are a tuning whose failure costs nothing: clear what they
     * may have recorded, or the next launch check would report it. */
    (void)cudaGetLastError();
    p->a_lo = a_lo;
    p->a_hi = a_hi;
    p->nblocks = mdf_seg_nblocks(a_lo, a_hi);
    p->nsys = nsys;
    size_t n = (2 * (size_t)p->nblocks + (size_t)(nsys > 0 ? nsys : 0)) * (size_t)K;
    void *mem = NULL;
    cudaError_t e = cudaMallocAsync(&mem, (n > 0 ? n : 1) * sizeof(double), stream);
    if (e != cudaSuccess) {
        p->head = p->tail = p->whole = NULL;
        return e;
    }
    p->head = (double *)mem;
    p->tail = p->head + (size_t)p->nblocks * K;
    p->whole = p->tail + (size_t)p->nblocks * K;
    return cudaSuccess;
}

static inline cudaError_t mdf_seg_free(mdf_seg_parts *p, cudaStream_t stream)
{
    cudaError_t e = p->head ? cudaFreeAsync(p->head, stream) : cudaSuccess;
    p->head = p->tail = p->whole = NULL;
    return e;
}

/* Phase 1. Called by every thread of a block of MDF_SEG_BLOCK threads, the
 * thread of atom a = p.a_lo + blockIdx.x * MDF_SEG_BLOCK + threadIdx.x (a
 * >= p.a_hi: no atom, values ignored); sys_of_a is atoms[a].sys for a real
 * atom. It synchronises the block. */
template <int K, unsigned MAXMASK = 0u>
__device__ static inline void mdf_seg_block(const double (&v)[K], int32_t a, int32_t sys_of_a,
                                            const mdf_sys_info *sys, const mdf_seg_parts p)
{
    __shared__ double sv[K][MDF_SEG_BLOCK];
    __shared__ int32_t sseg[MDF_SEG_BLOCK];
    const int t = (int)threadIdx.x;
    const int32_t seg = a < p.a_hi ? sys_of_a : -1;
    sseg[t] = seg;
    for (int k = 0; k < K; k++) sv[k][t] = v[k];
    __syncthreads();
    for (int off = 1; off < MDF_SEG_BLOCK; off *= 2) {
        const int same = t >= off && sseg[t - off] == seg;
        double earlier[K];
        if (same)
            for (int k = 0; k < K; k++) earlier[k] = sv[k][t - off];
        __syncthreads();
        if (same)
            for (int k = 0; k < K; k++) sv[k][t] = mdf_seg_combine(sv[k][t], earlier[k], (MAXMASK >> k) & 1u);
        __syncthreads();
    }
    const int last_of_segment = t == MDF_SEG_BLOCK - 1 || sseg[t + 1] != seg;
    if (seg < 0 || !last_of_segment) return;
    const int32_t b = (int32_t)blockIdx.x;
    const int32_t blo = p.a_lo + b * MDF_SEG_BLOCK, bhi = blo + MDF_SEG_BLOCK;
    int32_t st = sys[seg].atom_start, en = st + sys[seg].natoms;
    st = st > p.a_lo ? st : p.a_lo;
    en = en < p.a_hi ? en : p.a_hi;
    const size_t K_ = (size_t)K;
    if (st >= blo && en <= bhi) {
        for (int k = 0; k < K; k++) p.whole[(size_t)seg * K_ + k] = sv[k][t];
        return;
    }
    if (st < blo)
        for (int k = 0; k < K; k++) p.head[(size_t)b * K_ + k] = sv[k][t];
    if (en > bhi)
        for (int k = 0; k < K; k++) p.tail[(size_t)b * K_ + k] = sv[k][t];
}

/* Phase 2. System s's K sums over its atoms in [p.a_lo, p.a_hi), returned to
 * every thread of the calling block (every thread must call it: it
 * synchronises; scratch holds blockDim.x doubles, blockDim.x a power of two).
 * A system with no atom in the range gives 0 for every value. */
template <int K, unsigned MAXMASK = 0u>
__device__ static inline void mdf_seg_total(const mdf_seg_parts p, int32_t s, const mdf_sys_info *si,
                                            double (&out)[K], double *scratch)
{
    int32_t st = si->atom_start, en = st + si->natoms;
    st = st > p.a_lo ? st : p.a_lo;
    en = en < p.a_hi ? en : p.a_hi;
    if (en <= st) {
        for (int k = 0; k < K; k++) out[k] = 0.0;
        return;
    }
    const int32_t b0 = (st - p.a_lo) / MDF_SEG_BLOCK, b1 = (en - 1 - p.a_lo) / MDF_SEG_BLOCK;
    const size_t K_ = (size_t)K;
    if (b0 == b1) {
        for (int k = 0; k < K; k++) out[k] = p.whole[(size_t)s * K_ + k];
        return;
    }
    for (int k = 0; k < K; k++) {
        const int is_max = (MAXMASK >> k) & 1u;
        double mid = is_max ? -INFINITY : 0.0;
        for (int32_t b = b0 + 1 + (int32_t)threadIdx.x; b < b1; b += (int32_t)blockDim.x)
            mid = mdf_seg_combine(mid, p.head[(size_t)b * K_ + k], is_max);
        mid = mdf_block_combine(mid, scratch, is_max);
        out[k] = mdf_seg_combine(mdf_seg_combine(p.tail[(size_t)b0 * K_ + k], mid, is_max),
                                 p.head[(size_t)b1 * K_ + k], is_max);
    }
}

/* Launch shape of a per-atom kernel over [a_lo, a_hi) that uses mdf_seg_block. */
static inline unsigned mdf_seg_grid(int32_t a_lo, int32_t a_hi) { return (unsigned)mdf_seg_nblocks(a_lo, a_hi); }

/* The system of shard atom a among systems [s_lo, s_hi), which are
 * contiguous and in atom order (CSR): the last one starting at or before a,
 * or -1 when a lies in none of them. For kernels of tasks that have no atom
 * records to read it from (convergence, hooks, optimisers, big binning). */
__device__ static inline int32_t mdf_sys_of_atom(const mdf_sys_info *sys, int32_t s_lo, int32_t s_hi, int32_t a)
{
    if (s_hi <= s_lo) return -1;
    int32_t lo = s_lo, hi = s_hi - 1;
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo + 1) / 2;
        if (sys[mid].atom_start <= a) lo = mid;
        else hi = mid - 1;
    }
    const mdf_sys_info *si = &sys[lo];
    return (a >= si->atom_start && a - si->atom_start < si->natoms) ? lo : -1;
}

/* Reports a failed CUDA runtime call the way StarPU's CUDA codelets do. */
static inline void mdf_cuda_try(cudaError_t e)
{
    if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
}

/* Reports a failed launch the way StarPU's CUDA codelets do. */
static inline void mdf_cuda_check_launch(void)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
}

#endif
