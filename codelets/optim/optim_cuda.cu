/* mdflow — the optimisers, CUDA implementation, spread over many blocks per
 * system so that one large system fills the GPU.
 *
 * Each step is a chain of kernels on StarPU's stream, alternating
 *   per-atom kernels   one thread per atom of the shard, MDF_SEG_BLOCK
 *                      consecutive atoms per block (a block may span many
 *                      small systems, a system many blocks): the per-atom
 *                      arithmetic, and phase 1 of the per-system sums
 *                      (mdf_seg_block);
 *   per-system kernels one block of MDF_SYS_BLOCK threads per system: phase
 *                      2 of the sums (mdf_seg_total), then thread 0 does the
 *                      per-system scalar logic (FIRE's dt/a/N state, L-BFGS's
 *                      rho and coefficients, the longest move), writing the
 *                      scalars to a per-call device scratch array that the
 *                      next per-atom kernel reads.
 * Sums run in a fixed order (no atomics), so two runs give the same bytes.
 * The arithmetic and the order of the per-system decisions are
 * optim_kernel.h's, as in optim_cpu.c; only the order of the additions of
 * a sum differs from the CPU's. Maxima keep the CPU's fmax chain from 0:
 * an atom's NaN is ignored (fmax(acc, NaN) = acc), which optim_nan0 does
 * before the NaN-propagating maximum of mdf_seg_block.
 *
 * The first per-atom kernel of a step writes map[a]: atom a's system, or -1
 * when that system is not at the stage's status (or no system holds a); the
 * later ones read it. Only systems at the stage's status are touched.
 *
 * Scratch per call (stream-ordered, cudaMallocAsync, freed at the end): the
 * map (4 bytes per atom), a few doubles (or an optimiser's vars struct) per
 * system, and the sum parts (mdf_seg_alloc). A kernel never reads what
 * another block of the same kernel writes. */
#include <starpu.h>
#include "optim_kernel.h"
#include "optim_codelet.h"
#include "../common/mdf_cuda_util.cuh"

#define VEC(i) STARPU_VECTOR_GET_PTR(buffers[i])

/* ---- shared helpers ------------------------------------------------------------ */

/* Atom of this thread in a per-atom kernel. */
__device__ static inline int32_t optim_atom(const mdf_seg_parts &parts)
{
    return parts.a_lo + (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
}

/* First per-atom kernel of a step: atom a's system when it is at `status`
 * (else -1), stored in map[a - a_lo] for the later kernels. */
__device__ static inline int32_t optim_map_first(const mdf_sys_info *sys, int32_t nsys, int32_t status, int32_t a,
                                                 const mdf_seg_parts &parts, int32_t *map)
{
    if (a >= parts.a_hi) return -1;
    int32_t s = mdf_sys_of_atom(sys, 0, nsys, a);
    if (s >= 0 && sys[s].status != status) s = -1;
    map[a - parts.a_lo] = s;
    return s;
}

/* The later per-atom kernels: the system stored by the first (-1: none). */
__device__ static inline int32_t optim_map(const int32_t *map, int32_t a, const mdf_seg_parts &parts)
{
    return a < parts.a_hi ? map[a - parts.a_lo] : -1;
}

/* An atom's term of an fmax chain: NaN drops out (fmax(acc, NaN) = acc). */
__device__ static inline double optim_nan0(double x) { return x != x ? 0.0 : x; }

/* Atoms of the shard (the stages pass the shard's natoms as `work`). */
/* The shard's atoms (args.natoms; args.work is the performance model's size). */
static inline int32_t optim_natoms(int32_t natoms) { return natoms > 0 ? natoms : 0; }

static inline size_t optim_pad(size_t bytes) { return (bytes + 255) / 256 * 256; }

/* The per-call scratch: map, per-system arrays (carved from one
 * allocation) and the sum parts, allocated for the most values K any
 * kernel of the step sums. Every kernel pair (phase 1, then phase 2)
 * reuses them, stream order keeping pairs apart; a pair summing fewer
 * values k < K stays inside each of head, tail and whole (it indexes
 * b·k + j and s·k + j, below the regions' nblocks·K and nsys·K) and phase
 * 2 reads exactly what its own phase 1 wrote there. */
typedef struct optim_scratch {
    char *mem, *next;
    int32_t *map;
    mdf_seg_parts parts;
} optim_scratch;

/* sys_bytes: the per-system arrays together, each rounded by optim_pad. */
static void optim_scratch_alloc(optim_scratch *sc, int K, int32_t natoms, int32_t nsys, size_t sys_bytes,
                                cudaStream_t stream)
{
    cudaError_t e = mdf_seg_alloc(&sc->parts, K, 0, natoms, nsys, stream);
    if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
    const size_t bytes = optim_pad((size_t)natoms * sizeof(int32_t)) + sys_bytes;
    void *mem = NULL;
    e = cudaMallocAsync(&mem, bytes > 0 ? bytes : 1, stream);
    if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
    sc->mem = (char *)mem;
    sc->map = (int32_t *)sc->mem;
    sc->next = sc->mem + optim_pad((size_t)natoms * sizeof(int32_t));
}

/* The next per-system array of n elements of T. */
template <typename T>
static T *optim_carve(optim_scratch *sc, int32_t n)
{
    T *p = (T *)sc->next;
    sc->next += optim_pad((size_t)n * sizeof(T));
    return p;
}

static void optim_scratch_free(optim_scratch *sc, cudaStream_t stream)
{
    cudaError_t e = mdf_seg_free(&sc->parts, stream);
    if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
    if (sc->mem) {
        e = cudaFreeAsync(sc->mem, stream);
        if (e != cudaSuccess) STARPU_CUDA_REPORT_ERROR(e);
    }
    sc->mem = sc->next = NULL;
    sc->map = NULL;
}

/* Per-system kernels start with
 *   if (sys[s].status != status) return;
 * which is uniform over the block (one system per block): every thread
 * leaves together, no barrier is left waiting. */

/* ---- FIRE (5 kernels) ------------------------------------------------------------ */

/* 1. per atom: v·f, f·f, v·v. */
__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    fire_sums_kernel(const double *v, const double *f, const mdf_sys_info *sys, int32_t nsys, int32_t status,
                     int32_t *map, const mdf_seg_parts parts)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map_first(sys, nsys, status, a, parts, map);
    double val[3] = {0.0, 0.0, 0.0};
    if (s >= 0) {
        const size_t i = 3 * (size_t)a;
        val[0] = mdf_optim_dot3(f + i, v + i);
        val[1] = mdf_optim_dot3(f + i, f + i);
        val[2] = mdf_optim_dot3(v + i, v + i);
    }
    mdf_seg_block<3>(val, a, s, sys, parts);
}

/* 2. per system: ASE's branch on v·f. */
__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    fire_decide_kernel(const mdf_sys_info *sys, const mdf_sys_state *state, mdf_fire_vars *vars,
                       const mdf_seg_parts parts, const mdf_fire_args p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != p.status) return;
    double t[3];
    mdf_seg_total<3>(parts, s, &sys[s], t, scratch);
    if (threadIdx.x == 0) {
        mdf_fire_vars fv = mdf_fire_load(&state[s], &p);
        if (fv.fresh) t[0] = t[1] = t[2] = 0.0; /* the CPU sums nothing then */
        mdf_fire_decide(&fv, &p, t[0], t[1], t[2]);
        vars[s] = fv;
    }
}

/* 3. per atom: the new velocity, and |dt v|². */
__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    fire_velocity_kernel(double *v, const double *f, const mdf_sys_info *sys, const int32_t *map,
                         const mdf_fire_vars *vars, const mdf_seg_parts parts)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map(map, a, parts);
    double val[1] = {0.0};
    if (s >= 0) {
        const size_t i = 3 * (size_t)a;
        const mdf_fire_vars fv = vars[s];
        val[0] = mdf_fire_atom_velocity(v + i, f + i, &fv);
    }
    mdf_seg_block<1>(val, a, s, sys, parts);
}

/* 4. per system: |dr|; the state and the bookkeeping. */
__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    fire_norm_kernel(mdf_sys_info *sys, mdf_sys_result *res, mdf_sys_state *state, const mdf_fire_vars *vars,
                     double *normdr, const mdf_seg_parts parts, int32_t status)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != status) return;
    double t[1];
    mdf_seg_total<1>(parts, s, &sys[s], t, scratch);
    if (threadIdx.x == 0) {
        normdr[s] = sqrt(t[0]);
        const mdf_fire_vars fv = vars[s];
        mdf_fire_store(&state[s], &fv);
        mdf_optim_bookkeeping(&sys[s], &res[s]);
    }
}

/* 5. per atom: x += dr, scaled to maxstep. */
__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    fire_move_kernel(double *x, const double *v, const int32_t *map, const mdf_fire_vars *vars,
                     const double *normdr, const mdf_seg_parts parts, double maxstep)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map(map, a, parts);
    if (s < 0) return; /* no barrier in this kernel */
    const size_t i = 3 * (size_t)a;
    const mdf_fire_vars fv = vars[s];
    mdf_fire_atom_move(x + i, v + i, &fv, normdr[s], maxstep);
}

/* ---- FIRE2 (7 kernels) ----------------------------------------------------------- */

/* 1. per atom: v = 0 when fresh; F·v and |v|² (largest). */
__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    fire2_power_kernel(double *v, const double *f, const mdf_sys_info *sys, const mdf_sys_state *state,
                       int32_t nsys, int32_t status, int32_t *map, const mdf_seg_parts parts)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map_first(sys, nsys, status, a, parts, map);
    double val[2] = {0.0, 0.0};
    if (s >= 0) {
        const size_t i = 3 * (size_t)a;
        if (state[s].owner == 0) /* mdf_fire2_load's fresh */
            for (int k = 0; k < 3; k++) v[i + k] = 0.0;
        val[0] = mdf_optim_dot3(f + i, v + i);
        val[1] = optim_nan0(mdf_optim_dot3(v + i, v + i));
    }
    mdf_seg_block<2, 2u>(val, a, s, sys, parts);
}

/* 2. per system: the branch on P. */
__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    fire2_decide_kernel(const mdf_sys_info *sys, const mdf_sys_state *state, mdf_fire2_vars *vars,
                        const mdf_seg_parts parts, const mdf_fire2_args p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != p.status) return;
    double t[2];
    mdf_seg_total<2, 2u>(parts, s, &sys[s], t, scratch);
    if (threadIdx.x == 0) {
        mdf_fire2_vars fv = mdf_fire2_load(&state[s], &p);
        mdf_fire2_decide(&fv, &p, t[0], t[1]);
        vars[s] = fv;
    }
}

/* 3. per atom: half step back when uphill, the kick; v·v and F·F. */
__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    fire2_kick_kernel(double *x, double *v, const double *f, const mdf_sys_info *sys, const int32_t *map,
                      const mdf_fire2_vars *vars, const mdf_seg_parts parts)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map(map, a, parts);
    double val[2] = {0.0, 0.0};
    if (s >= 0) {
        const size_t i = 3 * (size_t)a;
        const mdf_fire2_vars fv = vars[s];
        mdf_fire2_atom_kick(x + i, v + i, f + i, &fv, &val[0], &val[1]);
    }
    mdf_seg_block<2>(val, a, s, sys, parts);
}

/* 4. per system: the mixing coefficients. */
__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    fire2_mixing_kernel(const mdf_sys_info *sys, mdf_fire2_vars *vars, const mdf_seg_parts parts, int32_t status)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != status) return;
    double t[2];
    mdf_seg_total<2>(parts, s, &sys[s], t, scratch);
    if (threadIdx.x == 0) {
        mdf_fire2_vars fv = vars[s];
        mdf_fire2_mixing(&fv, t[0], t[1]);
        vars[s] = fv;
    }
}

/* 5. per atom: the mixing; |dt v|² (largest). */
__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    fire2_mix_kernel(double *v, const double *f, const mdf_sys_info *sys, const int32_t *map,
                     const mdf_fire2_vars *vars, const mdf_seg_parts parts)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map(map, a, parts);
    double val[1] = {0.0};
    if (s >= 0) {
        const size_t i = 3 * (size_t)a;
        const mdf_fire2_vars fv = vars[s];
        val[0] = optim_nan0(mdf_fire2_atom_mix(v + i, f + i, &fv));
    }
    mdf_seg_block<1, 1u>(val, a, s, sys, parts);
}

/* 6. per system: the longest move; the state and the bookkeeping. */
__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    fire2_longest_kernel(mdf_sys_info *sys, mdf_sys_result *res, mdf_sys_state *state,
                         const mdf_fire2_vars *vars, double *dmax2, const mdf_seg_parts parts, int32_t status)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != status) return;
    double t[1];
    mdf_seg_total<1, 1u>(parts, s, &sys[s], t, scratch);
    if (threadIdx.x == 0) {
        dmax2[s] = t[0];
        const mdf_fire2_vars fv = vars[s];
        mdf_fire2_store(&state[s], &fv);
        mdf_optim_bookkeeping(&sys[s], &res[s]);
    }
}

/* 7. per atom: x += dt v, scaled to maxstep. */
__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    fire2_move_kernel(double *x, const double *v, const int32_t *map, const mdf_fire2_vars *vars,
                      const double *dmax2, const mdf_seg_parts parts, double maxstep)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map(map, a, parts);
    if (s < 0) return; /* no barrier in this kernel */
    const size_t i = 3 * (size_t)a;
    const mdf_fire2_vars fv = vars[s];
    mdf_fire2_atom_move(x + i, v + i, &fv, dmax2[s], maxstep);
}

/* ---- gradient descent (3 kernels) ---------------------------------------------- */

/* 1. per atom: |step F|² (largest). */
__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    gd_len_kernel(const double *f, const mdf_sys_info *sys, int32_t *map, const mdf_seg_parts parts,
                  const mdf_gd_args p)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map_first(sys, p.nsys, p.status, a, parts, map);
    double val[1] = {0.0};
    if (s >= 0) val[0] = optim_nan0(mdf_gd_atom_len2(f + 3 * (size_t)a, &p));
    mdf_seg_block<1, 1u>(val, a, s, sys, parts);
}

/* 2. per system: the longest move; the bookkeeping. */
__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    gd_longest_kernel(mdf_sys_info *sys, mdf_sys_result *res, double *dmax2, const mdf_seg_parts parts,
                      int32_t status)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != status) return;
    double t[1];
    mdf_seg_total<1, 1u>(parts, s, &sys[s], t, scratch);
    if (threadIdx.x == 0) {
        dmax2[s] = t[0];
        mdf_optim_bookkeeping(&sys[s], &res[s]);
    }
}

/* 3. per atom: x += step F, scaled. */
__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    gd_move_kernel(double *x, const double *f, const int32_t *map, const double *dmax2, const mdf_seg_parts parts,
                   const mdf_gd_args p)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map(map, a, parts);
    if (s < 0) return; /* no barrier in this kernel */
    const size_t i = 3 * (size_t)a;
    mdf_gd_atom_move(x + i, f + i, &p, dmax2[s]);
}

/* ---- L-BFGS (4·memory + 3 kernels; 6 when memory is 0) --------------------------
 *
 * optim_cpu.c's lbfgs_system with the history loops unrolled on the host
 * over the depth m = memory: system s takes part in loop index i when
 * i < len_s = min(it_s, m), so every system sees its own indices in the
 * CPU's order. Each loop index is a per-atom kernel (the previous index's
 * update of q, then this index's partial dot product) and a per-system
 * kernel (the coefficient from the sum):
 *   pair      ys = y·s of the new pair; q = -f; partial s·q of i = m-1
 *   pair_sys  it_s (kept in `its`), rho of the new pair, coef[m-1]
 *   down(j)   j = m-2 .. 0: q -= coef[j+1] y_{j+1}; partial s_j·q
 *   down_sys  coef[j]
 *   turn      q -= coef[0] y_0; q *= H0; partial y_0·q
 *   up_sys(i) i = 0 .. m-1: b_i (kept in `bq`)
 *   up(i)     i = 1 .. m-1: q += s_{i-1} (coef[i-1] - b_{i-1}); partial y_i·q
 *   last      q += s_{m-1} (coef[m-1] - b_{m-1}); |q|² (largest)
 *   last_sys  longest; the state, the mark and the bookkeeping
 *   move      r0 = x, f0 = f, x += the step
 * An update of index k is done only when k < len_s, a partial only when
 * the index is < len_s (else 0). A system whose len_s < m gets its last
 * update of the second loop in up(len_s), with the b of up_sys(len_s - 1):
 * up_sys(i) writes bq only for i < len_s. rho and coef stay in the
 * workspace (as on the CPU). */

/* The iteration of system s (0: no history; optim_cpu.c's `it`). */
__device__ static inline int64_t lbfgs_iteration(const mdf_sys_state *state, const double *w,
                                                 const mdf_lbfgs_layout &l, int32_t s)
{
    return (state[s].owner == 0 || w[l.mark + s] == 0.0) ? 0 : state[s].n[0];
}

__device__ static inline int64_t lbfgs_len(int64_t it, int64_t m) { return it < m ? it : m; }

/* Whether history index k exists for a system with len entries (k = m-1
 * with m = 0 is -1: none, and no slot modulo 0 is ever taken). */
__device__ static inline bool lbfgs_has(int64_t k, int64_t len) { return k >= 0 && k < len; }

/* s and y vectors of history index i of a system at iteration it. */
__device__ static inline double *lbfgs_sv(double *w, const mdf_lbfgs_layout &l, int64_t it, int64_t len, int64_t i,
                                          int64_t m)
{
    return w + l.s + mdf_lbfgs_slot(it, len, i, m) * l.slot;
}

__device__ static inline double *lbfgs_yv(double *w, const mdf_lbfgs_layout &l, int64_t it, int64_t len, int64_t i,
                                          int64_t m)
{
    return w + l.y + mdf_lbfgs_slot(it, len, i, m) * l.slot;
}

__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    lbfgs_pair_kernel(const double *x, const double *f, const mdf_sys_info *sys, const mdf_sys_state *state,
                      double *w, const mdf_lbfgs_layout l, int32_t *map, const mdf_seg_parts parts,
                      const mdf_lbfgs_args p)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map_first(sys, p.nsys, p.status, a, parts, map);
    double val[2] = {0.0, 0.0};
    if (s >= 0) {
        const size_t i = 3 * (size_t)a;
        const int64_t m = p.memory;
        const int64_t it = lbfgs_iteration(state, w, l, s);
        double *r0 = w + l.r0, *f0 = w + l.f0, *q = w + l.q;
        if (it > 0 && m > 0) {
            const int64_t slot = (it - 1) % m;
            double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
            val[0] = mdf_lbfgs_atom_pair(sv + i, yv + i, x + i, r0 + i, f + i, f0 + i);
        }
        for (int k = 0; k < 3; k++) q[i + k] = -f[i + k];
        const int64_t len = lbfgs_len(it, m);
        if (lbfgs_has(m - 1, len)) val[1] = mdf_optim_dot3(lbfgs_sv(w, l, it, len, m - 1, m) + i, q + i);
    }
    mdf_seg_block<2>(val, a, s, sys, parts);
}

__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    lbfgs_pair_sys_kernel(const mdf_sys_info *sys, const mdf_sys_state *state, double *w,
                          const mdf_lbfgs_layout l, int64_t *its, const mdf_seg_parts parts, const mdf_lbfgs_args p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != p.status) return;
    double t[2];
    mdf_seg_total<2>(parts, s, &sys[s], t, scratch);
    if (threadIdx.x == 0) {
        const int64_t m = p.memory;
        const int64_t it = lbfgs_iteration(state, w, l, s);
        double *rho = w + l.rho + (int64_t)s * m, *coef = w + l.coef + (int64_t)s * m;
        its[s] = it;
        if (it > 0 && m > 0) rho[(it - 1) % m] = mdf_lbfgs_rho(t[0]);
        const int64_t len = lbfgs_len(it, m);
        if (lbfgs_has(m - 1, len)) coef[m - 1] = rho[mdf_lbfgs_slot(it, len, m - 1, m)] * t[1];
    }
}

/* down(j), 0 <= j <= m-2. */
__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    lbfgs_down_kernel(const mdf_sys_info *sys, double *w, const mdf_lbfgs_layout l, const int32_t *map,
                      const int64_t *its, const mdf_seg_parts parts, int64_t m, int64_t j)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map(map, a, parts);
    double val[1] = {0.0};
    if (s >= 0) {
        const size_t i = 3 * (size_t)a;
        const int64_t it = its[s], len = lbfgs_len(it, m);
        const double *coef = w + l.coef + (int64_t)s * m;
        double *q = w + l.q;
        if (lbfgs_has(j + 1, len)) mdf_lbfgs_atom_down(q + i, lbfgs_yv(w, l, it, len, j + 1, m) + i, coef[j + 1]);
        if (lbfgs_has(j, len)) val[0] = mdf_optim_dot3(lbfgs_sv(w, l, it, len, j, m) + i, q + i);
    }
    mdf_seg_block<1>(val, a, s, sys, parts);
}

__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    lbfgs_down_sys_kernel(const mdf_sys_info *sys, double *w, const mdf_lbfgs_layout l, const int64_t *its,
                          const mdf_seg_parts parts, int32_t status, int64_t m, int64_t j)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != status) return;
    double t[1];
    mdf_seg_total<1>(parts, s, &sys[s], t, scratch);
    if (threadIdx.x == 0) {
        const int64_t it = its[s], len = lbfgs_len(it, m);
        const double *rho = w + l.rho + (int64_t)s * m;
        double *coef = w + l.coef + (int64_t)s * m;
        if (lbfgs_has(j, len)) coef[j] = rho[mdf_lbfgs_slot(it, len, j, m)] * t[0];
    }
}

__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    lbfgs_turn_kernel(const mdf_sys_info *sys, double *w, const mdf_lbfgs_layout l, const int32_t *map,
                      const int64_t *its, const mdf_seg_parts parts, int64_t m, double alpha)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map(map, a, parts);
    double val[1] = {0.0};
    if (s >= 0) {
        const size_t i = 3 * (size_t)a;
        const int64_t it = its[s], len = lbfgs_len(it, m);
        const double *coef = w + l.coef + (int64_t)s * m;
        double *q = w + l.q;
        if (lbfgs_has(0, len)) mdf_lbfgs_atom_down(q + i, lbfgs_yv(w, l, it, len, 0, m) + i, coef[0]);
        const double H0 = 1.0 / alpha;
        for (int k = 0; k < 3; k++) q[i + k] = H0 * q[i + k]; /* q is z from here */
        if (lbfgs_has(0, len)) val[0] = mdf_optim_dot3(lbfgs_yv(w, l, it, len, 0, m) + i, q + i);
    }
    mdf_seg_block<1>(val, a, s, sys, parts);
}

/* up_sys(i), 0 <= i <= m-1. */
__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    lbfgs_up_sys_kernel(const mdf_sys_info *sys, double *w, const mdf_lbfgs_layout l, const int64_t *its,
                        double *bq, const mdf_seg_parts parts, int32_t status, int64_t m, int64_t i)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != status) return;
    double t[1];
    mdf_seg_total<1>(parts, s, &sys[s], t, scratch);
    if (threadIdx.x == 0) {
        const int64_t it = its[s], len = lbfgs_len(it, m);
        const double *rho = w + l.rho + (int64_t)s * m;
        if (lbfgs_has(i, len)) bq[s] = rho[mdf_lbfgs_slot(it, len, i, m)] * t[0];
    }
}

/* up(i), 1 <= i <= m-1. */
__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    lbfgs_up_kernel(const mdf_sys_info *sys, double *w, const mdf_lbfgs_layout l, const int32_t *map,
                    const int64_t *its, const double *bq, const mdf_seg_parts parts, int64_t m, int64_t i)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map(map, a, parts);
    double val[1] = {0.0};
    if (s >= 0) {
        const size_t i3 = 3 * (size_t)a;
        const int64_t it = its[s], len = lbfgs_len(it, m);
        const double *coef = w + l.coef + (int64_t)s * m;
        double *q = w + l.q;
        if (lbfgs_has(i - 1, len)) mdf_lbfgs_atom_up(q + i3, lbfgs_sv(w, l, it, len, i - 1, m) + i3, coef[i - 1], bq[s]);
        if (lbfgs_has(i, len)) val[0] = mdf_optim_dot3(lbfgs_yv(w, l, it, len, i, m) + i3, q + i3);
    }
    mdf_seg_block<1>(val, a, s, sys, parts);
}

__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    lbfgs_last_kernel(const mdf_sys_info *sys, double *w, const mdf_lbfgs_layout l, const int32_t *map,
                      const int64_t *its, const double *bq, const mdf_seg_parts parts, int64_t m)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map(map, a, parts);
    double val[1] = {0.0};
    if (s >= 0) {
        const size_t i = 3 * (size_t)a;
        const int64_t it = its[s], len = lbfgs_len(it, m);
        const double *coef = w + l.coef + (int64_t)s * m;
        double *q = w + l.q;
        if (lbfgs_has(m - 1, len)) mdf_lbfgs_atom_up(q + i, lbfgs_sv(w, l, it, len, m - 1, m) + i, coef[m - 1], bq[s]);
        val[0] = optim_nan0(mdf_lbfgs_atom_len2(q + i));
    }
    mdf_seg_block<1, 1u>(val, a, s, sys, parts);
}

__global__ void __launch_bounds__(MDF_SYS_BLOCK)
    lbfgs_last_sys_kernel(mdf_sys_info *sys, mdf_sys_result *res, mdf_sys_state *state, double *w,
                          const mdf_lbfgs_layout l, const int64_t *its, double *longest2, const mdf_seg_parts parts,
                          int32_t status)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != status) return;
    double t[1];
    mdf_seg_total<1, 1u>(parts, s, &sys[s], t, scratch);
    if (threadIdx.x == 0) {
        longest2[s] = t[0];
        state[s].n[0] = its[s] + 1;
        state[s].owner = 1;
        w[l.mark + s] = 1.0;
        mdf_optim_bookkeeping(&sys[s], &res[s]);
    }
}

__global__ void __launch_bounds__(MDF_SEG_BLOCK)
    lbfgs_move_kernel(double *x, const double *f, double *w, const mdf_lbfgs_layout l, const int32_t *map,
                      const double *longest2, const mdf_seg_parts parts, const mdf_lbfgs_args p)
{
    const int32_t a = optim_atom(parts);
    const int32_t s = optim_map(map, a, parts);
    if (s < 0) return; /* no barrier in this kernel */
    const size_t i = 3 * (size_t)a;
    mdf_lbfgs_atom_move(x + i, w + l.r0 + i, w + l.f0 + i, f + i, w + l.q + i, &p, longest2[s]);
}

/* ---- entry points ------------------------------------------------------------- */

/* buffers: pos RW, vel RW, force R, sys RW, res RW, state RW */
extern "C" void mdf_fire_cuda(void *buffers[], void *cl_arg)
{
    const mdf_fire_args *p = (const mdf_fire_args *)cl_arg;
    if (p->nsys <= 0) return;
    cudaStream_t st = starpu_cuda_get_local_stream();
    double *x = (double *)VEC(0), *v = (double *)VEC(1);
    const double *f = (const double *)VEC(2);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(3);
    mdf_sys_result *res = (mdf_sys_result *)VEC(4);
    mdf_sys_state *state = (mdf_sys_state *)VEC(5);
    const int32_t ns = p->nsys, na = optim_natoms(p->natoms);
    const unsigned nb = mdf_seg_grid(0, na);
    optim_scratch sc;
    optim_scratch_alloc(&sc, 3, na, ns, optim_pad(ns * sizeof(mdf_fire_vars)) + optim_pad(ns * sizeof(double)), st);
    mdf_fire_vars *vars = optim_carve<mdf_fire_vars>(&sc, ns);
    double *normdr = optim_carve<double>(&sc, ns);

    if (nb > 0) {
        fire_sums_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(v, f, sys, ns, p->status, sc.map, sc.parts);
        mdf_cuda_check_launch();
    }
    fire_decide_kernel<<<ns, MDF_SYS_BLOCK, 0, st>>>(sys, state, vars, sc.parts, *p);
    mdf_cuda_check_launch();
    if (nb > 0) {
        fire_velocity_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(v, f, sys, sc.map, vars, sc.parts);
        mdf_cuda_check_launch();
    }
    fire_norm_kernel<<<ns, MDF_SYS_BLOCK, 0, st>>>(sys, res, state, vars, normdr, sc.parts, p->status);
    mdf_cuda_check_launch();
    if (nb > 0) {
        fire_move_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(x, v, sc.map, vars, normdr, sc.parts, p->maxstep);
        mdf_cuda_check_launch();
    }
    optim_scratch_free(&sc, st);
}

/* buffers: pos RW, vel RW, force R, sys RW, res RW, state RW */
extern "C" void mdf_fire2_cuda(void *buffers[], void *cl_arg)
{
    const mdf_fire2_args *p = (const mdf_fire2_args *)cl_arg;
    if (p->nsys <= 0) return;
    cudaStream_t st = starpu_cuda_get_local_stream();
    double *x = (double *)VEC(0), *v = (double *)VEC(1);
    const double *f = (const double *)VEC(2);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(3);
    mdf_sys_result *res = (mdf_sys_result *)VEC(4);
    mdf_sys_state *state = (mdf_sys_state *)VEC(5);
    const int32_t ns = p->nsys, na = optim_natoms(p->natoms);
    const unsigned nb = mdf_seg_grid(0, na);
    optim_scratch sc;
    optim_scratch_alloc(&sc, 2, na, ns, optim_pad(ns * sizeof(mdf_fire2_vars)) + optim_pad(ns * sizeof(double)), st);
    mdf_fire2_vars *vars = optim_carve<mdf_fire2_vars>(&sc, ns);
    double *dmax2 = optim_carve<double>(&sc, ns);

    if (nb > 0) {
        fire2_power_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(v, f, sys, state, ns, p->status, sc.map, sc.parts);
        mdf_cuda_check_launch();
    }
    fire2_decide_kernel<<<ns, MDF_SYS_BLOCK, 0, st>>>(sys, state, vars, sc.parts, *p);
    mdf_cuda_check_launch();
    if (nb > 0) {
        fire2_kick_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(x, v, f, sys, sc.map, vars, sc.parts);
        mdf_cuda_check_launch();
    }
    fire2_mixing_kernel<<<ns, MDF_SYS_BLOCK, 0, st>>>(sys, vars, sc.parts, p->status);
    mdf_cuda_check_launch();
    if (nb > 0) {
        fire2_mix_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(v, f, sys, sc.map, vars, sc.parts);
        mdf_cuda_check_launch();
    }
    fire2_longest_kernel<<<ns, MDF_SYS_BLOCK, 0, st>>>(sys, res, state, vars, dmax2, sc.parts, p->status);
    mdf_cuda_check_launch();
    if (nb > 0) {
        fire2_move_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(x, v, sc.map, vars, dmax2, sc.parts, p->maxstep);
        mdf_cuda_check_launch();
    }
    optim_scratch_free(&sc, st);
}

/* buffers: pos RW, force R, sys RW, res RW */
extern "C" void mdf_gd_cuda(void *buffers[], void *cl_arg)
{
    const mdf_gd_args *p = (const mdf_gd_args *)cl_arg;
    if (p->nsys <= 0) return;
    cudaStream_t st = starpu_cuda_get_local_stream();
    double *x = (double *)VEC(0);
    const double *f = (const double *)VEC(1);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(2);
    mdf_sys_result *res = (mdf_sys_result *)VEC(3);
    const int32_t ns = p->nsys, na = optim_natoms(p->natoms);
    const unsigned nb = mdf_seg_grid(0, na);
    optim_scratch sc;
    optim_scratch_alloc(&sc, 1, na, ns, optim_pad(ns * sizeof(double)), st);
    double *dmax2 = optim_carve<double>(&sc, ns);

    if (nb > 0) {
        gd_len_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(f, sys, sc.map, sc.parts, *p);
        mdf_cuda_check_launch();
    }
    gd_longest_kernel<<<ns, MDF_SYS_BLOCK, 0, st>>>(sys, res, dmax2, sc.parts, p->status);
    mdf_cuda_check_launch();
    if (nb > 0) {
        gd_move_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(x, f, sc.map, dmax2, sc.parts, *p);
        mdf_cuda_check_launch();
    }
    optim_scratch_free(&sc, st);
}

/* buffers: pos RW, force R, sys RW, res RW, state RW, work RW */
/* ---- L-BFGS, one block per system: shards of small systems -------------------
 *
 * The many-block L-BFGS below unrolls the two loops on the host: 4m + 3
 * kernels per step (403 at ASE's default memory of 100), a few microseconds
 * of launch each whatever the systems' sizes. A shard whose systems all
 * have at most MDF_LBFGS_ONE_BLOCK_ATOMS atoms runs this kernel instead: one
 * block per system does the whole step, its dot products through
 * mdf_block_sum (fixed order), as before issue 21. The arithmetic is the
 * same (optim_kernel.h). */
#define MDF_LBFGS_ONE_BLOCK_ATOMS 4096

__global__ void lbfgs_small_kernel(double *x, const double *f, mdf_sys_info *sys, mdf_sys_result *res,
                             mdf_sys_state *state, double *w, mdf_lbfgs_args p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    if (sys[s].status != p.status) return;
    const int32_t a0 = sys[s].atom_start, a1 = a0 + sys[s].natoms;
    const int32_t t = (int32_t)threadIdx.x, nt = (int32_t)blockDim.x;
    const mdf_lbfgs_layout l = mdf_lbfgs_layout_of(p.memory, p.atom_cap, p.sys_cap);
    const int64_t m = p.memory;
    double *r0 = w + l.r0, *f0 = w + l.f0, *q = w + l.q;
    double *rho = w + l.rho + (int64_t)s * m, *coef = w + l.coef + (int64_t)s * m;
    const int64_t it = (state[s].owner == 0 || w[l.mark + s] == 0.0) ? 0 : state[s].n[0];
    if (it > 0 && m > 0) {
        const int64_t slot = (it - 1) % m;
        double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
        double ys = 0.0;
        for (int32_t a = a0 + t; a < a1; a += nt)
            ys += mdf_lbfgs_atom_pair(sv + 3 * a, yv + 3 * a, x + 3 * a, r0 + 3 * a, f + 3 * a, f0 + 3 * a);
        ys = mdf_block_sum(ys, scratch);
        if (t == 0) rho[slot] = mdf_lbfgs_rho(ys);
        __syncthreads(); /* rho[slot] is read by every thread below */
    }
    const int64_t len = it < m ? it : m;
    for (int32_t a = a0 + t; a < a1; a += nt)
        for (int k = 0; k < 3; k++) q[3 * a + k] = -f[3 * a + k];
    for (int64_t i = len - 1; i >= 0; i--) {
        const int64_t slot = mdf_lbfgs_slot(it, len, i, m);
        const double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
        double dot = 0.0;
        for (int32_t a = a0 + t; a < a1; a += nt) dot += mdf_optim_dot3(sv + 3 * a, q + 3 * a);
        const double ai = rho[slot] * mdf_block_sum(dot, scratch);
        if (t == 0) coef[i] = ai;
        for (int32_t a = a0 + t; a < a1; a += nt) mdf_lbfgs_atom_down(q + 3 * a, yv + 3 * a, ai);
    }
    __syncthreads(); /* coef[] is read by every thread below */
    const double H0 = 1.0 / p.alpha;
    for (int32_t a = a0 + t; a < a1; a += nt)
        for (int k = 0; k < 3; k++) q[3 * a + k] = H0 * q[3 * a + k];
    for (int64_t i = 0; i < len; i++) {
        const int64_t slot = mdf_lbfgs_slot(it, len, i, m);
        const double *sv = w + l.s + slot * l.slot, *yv = w + l.y + slot * l.slot;
        double dot = 0.0;
        for (int32_t a = a0 + t; a < a1; a += nt) dot += mdf_optim_dot3(yv + 3 * a, q + 3 * a);
        const double b = rho[slot] * mdf_block_sum(dot, scratch);
        for (int32_t a = a0 + t; a < a1; a += nt) mdf_lbfgs_atom_up(q + 3 * a, sv + 3 * a, coef[i], b);
    }
    double longest2 = 0.0;
    for (int32_t a = a0 + t; a < a1; a += nt) longest2 = fmax(longest2, mdf_lbfgs_atom_len2(q + 3 * a));
    longest2 = mdf_block_max(longest2, scratch);
    for (int32_t a = a0 + t; a < a1; a += nt)
        mdf_lbfgs_atom_move(x + 3 * a, r0 + 3 * a, f0 + 3 * a, f + 3 * a, q + 3 * a, &p, longest2);
    if (t == 0) {
        state[s].n[0] = it + 1;
        state[s].owner = 1;
        w[l.mark + s] = 1.0;
        mdf_optim_bookkeeping(&sys[s], &res[s]);
    }
}

extern "C" void mdf_lbfgs_cuda(void *buffers[], void *cl_arg)
{
    const mdf_lbfgs_args *p = (const mdf_lbfgs_args *)cl_arg;
    if (p->nsys <= 0) return;
    cudaStream_t st = starpu_cuda_get_local_stream();
    if (p->max_natoms <= MDF_LBFGS_ONE_BLOCK_ATOMS) {
        lbfgs_small_kernel<<<p->nsys, MDF_SYS_BLOCK, 0, st>>>((double *)VEC(0), (const double *)VEC(1),
                                                               (mdf_sys_info *)VEC(2), (mdf_sys_result *)VEC(3),
                                                               (mdf_sys_state *)VEC(4), (double *)VEC(5), *p);
        mdf_cuda_check_launch();
        return;
    }
    double *x = (double *)VEC(0);
    const double *f = (const double *)VEC(1);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(2);
    mdf_sys_result *res = (mdf_sys_result *)VEC(3);
    mdf_sys_state *state = (mdf_sys_state *)VEC(4);
    double *w = (double *)VEC(5);
    const int32_t ns = p->nsys, na = optim_natoms(p->natoms), status = p->status;
    const int64_t m = p->memory;
    const mdf_lbfgs_layout l = mdf_lbfgs_layout_of(p->memory, p->atom_cap, p->sys_cap);
    const unsigned nb = mdf_seg_grid(0, na);
    optim_scratch sc;
    optim_scratch_alloc(&sc, 2, na, ns,
                        optim_pad(ns * sizeof(int64_t)) + optim_pad(ns * sizeof(double)) +
                            optim_pad(ns * sizeof(double)),
                        st);
    int64_t *its = optim_carve<int64_t>(&sc, ns);
    double *bq = optim_carve<double>(&sc, ns);
    double *longest2 = optim_carve<double>(&sc, ns);

    if (nb > 0) {
        lbfgs_pair_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(x, f, sys, state, w, l, sc.map, sc.parts, *p);
        mdf_cuda_check_launch();
    }
    lbfgs_pair_sys_kernel<<<ns, MDF_SYS_BLOCK, 0, st>>>(sys, state, w, l, its, sc.parts, *p);
    mdf_cuda_check_launch();
    for (int64_t j = m - 2; j >= 0; j--) {
        if (nb > 0) {
            lbfgs_down_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(sys, w, l, sc.map, its, sc.parts, m, j);
            mdf_cuda_check_launch();
        }
        lbfgs_down_sys_kernel<<<ns, MDF_SYS_BLOCK, 0, st>>>(sys, w, l, its, sc.parts, status, m, j);
        mdf_cuda_check_launch();
    }
    if (nb > 0) {
        lbfgs_turn_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(sys, w, l, sc.map, its, sc.parts, m, p->alpha);
        mdf_cuda_check_launch();
    }
    for (int64_t i = 0; i < m; i++) {
        if (i > 0 && nb > 0) {
            lbfgs_up_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(sys, w, l, sc.map, its, bq, sc.parts, m, i);
            mdf_cuda_check_launch();
        }
        lbfgs_up_sys_kernel<<<ns, MDF_SYS_BLOCK, 0, st>>>(sys, w, l, its, bq, sc.parts, status, m, i);
        mdf_cuda_check_launch();
    }
    if (nb > 0) {
        lbfgs_last_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(sys, w, l, sc.map, its, bq, sc.parts, m);
        mdf_cuda_check_launch();
    }
    lbfgs_last_sys_kernel<<<ns, MDF_SYS_BLOCK, 0, st>>>(sys, res, state, w, l, its, longest2, sc.parts, status);
    mdf_cuda_check_launch();
    if (nb > 0) {
        lbfgs_move_kernel<<<nb, MDF_SEG_BLOCK, 0, st>>>(x, f, w, l, sc.map, longest2, sc.parts, *p);
        mdf_cuda_check_launch();
    }
    optim_scratch_free(&sc, st);
}
