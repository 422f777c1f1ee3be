/* mdflow — thermostats and barostat, CUDA implementation. Same arithmetic as
 * the CPU, from thermostat_kernel.h.
 *
 * Every task runs one thread per atom of the shard (blocks of
 * MDF_SEG_BLOCK atoms, so a large system fills every SM), in up to three
 * kernels on StarPU's stream:
 *   1. per atom: the atom's update and its share of the per-system sums
 *      (kinetic energy, Bussi squares: mdf_seg_block, phase 1);
 *   2. per system (one block each): the sums (mdf_seg_total, phase 2) and
 *      the system's scalar work (chain, Bussi factor, cell, energies, step
 *      counters), done by thread 0 as the CPU does it; the velocity factor
 *      goes to a small device array (one double per system);
 *   3. per atom, where the velocities take that factor: the scaling (and
 *      the rest of the atom's update).
 * Sums have a fixed order and no atomics: the same bytes from run to run
 * (they match the CPU to round-off). Scratch (the sums' parts, the factors)
 * is stream-ordered device memory, allocated and freed on the stream. */
#include <starpu.h>
#include "thermostat_kernel.h"
#include "thermostat_codelet.h"
#include "../common/mdf_cuda_util.cuh"

#define VEC(i) STARPU_VECTOR_GET_PTR(buffers[i])

/* The scratch of one task: K sums per system over atoms [0, natoms), and
 * optionally one factor per system. */
typedef struct thermo_launch {
    cudaStream_t stream;
    int32_t natoms, nsys;
    unsigned nb;     /* blocks of a per-atom kernel (0: no atom, no launch) */
    mdf_seg_parts p;
    double *factor;  /* nsys doubles, or NULL */
} thermo_launch;

static void thermo_begin(thermo_launch *L, const mdf_thermo_args *a, int K, int with_factor)
{
    L->stream = starpu_cuda_get_local_stream();
    L->natoms = a->natoms > 0 ? a->natoms : 0; /* not a->work: a model size */
    L->nsys = a->nsys;
    L->nb = mdf_seg_grid(0, L->natoms);
    L->factor = NULL;
    mdf_cuda_try(mdf_seg_alloc(&L->p, K, 0, L->natoms, L->nsys, L->stream));
    if (with_factor) mdf_cuda_try(cudaMallocAsync((void **)&L->factor, (size_t)L->nsys * sizeof(double), L->stream));
}

static void thermo_end(thermo_launch *L)
{
    if (L->factor) mdf_cuda_try(cudaFreeAsync(L->factor, L->stream));
    L->factor = NULL;
    mdf_cuda_try(mdf_seg_free(&L->p, L->stream));
}

/* The atom of this thread in a per-atom kernel, and its system (-1: none). */
#define THERMO_ATOM(p)                                                                       \
    const int32_t at = (p).a_lo + (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x; \
    const int in = at < (p).a_hi;                                                            \
    const int32_t s = in ? atoms[at].sys : -1;                                               \
    const size_t k3 = 3 * (size_t)(in ? at : 0)

/* ---- shared kernels ------------------------------------------------------------ */

/* Per atom: the kinetic energy of the atoms of the moving systems (phase 1). */
__global__ void thermo_ke_kernel(const double *v, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                                 int32_t status, mdf_seg_parts p)
{
    THERMO_ATOM(p);
    double ke[1] = {0.0};
    if (in && sys[s].status == status) ke[0] = mdf_thermo_ke(v + k3, atoms[at].mass);
    mdf_seg_block<1>(ke, at, s, sys, p);
}

/* ---- Langevin BAOAB, first part -------------------------------------------------- */

__global__ void langevin_pre_atoms_kernel(double *x, double *v, const double *f, const mdf_atom_info *atoms,
                                          const mdf_sys_info *sys, mdf_thermo_args a, mdf_seg_parts p)
{
    THERMO_ATOM(p);
    double dk[1] = {0.0};
    if (in && sys[s].status == a.status) {
        const mdf_sys_info *si = &sys[s];
        dk[0] = mdf_baoab_pre_atom(x + k3, v + k3, f + k3, atoms[at].mass, atoms[at].inv_mass, atoms[at].flags, &a,
                                   mdf_velocity_key(a.seed, si->id), si->step, (uint32_t)atoms[at].index);
    }
    mdf_seg_block<1>(dk, at, s, sys, p);
}

__global__ void langevin_pre_sys_kernel(const mdf_sys_info *sys, mdf_sys_result *res, mdf_sys_state *st,
                                        int32_t status, mdf_seg_parts p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    double dk[1];
    mdf_seg_total<1>(p, s, &sys[s], dk, scratch);
    if (threadIdx.x == 0 && sys[s].status == status) {
        if (st[s].owner != MDF_THERMO_OWNER(MDF_THERMO_LANGEVIN)) {
            res[s].extra_energy = 0.0;
            st[s].owner = MDF_THERMO_OWNER(MDF_THERMO_LANGEVIN);
        }
        res[s].extra_energy -= dk[0];
    }
}

/* ---- Nosé–Hoover chain, first half ------------------------------------------------- */

/* Per system: the chain's half step from the kinetic energy; factor[s] is
 * the velocity factor. */
__global__ void nhc_pre_sys_kernel(const mdf_sys_info *sys, mdf_sys_state *st, double *factor, mdf_thermo_args a,
                                   mdf_seg_parts p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    const mdf_sys_info *si = &sys[s];
    double ke[1];
    mdf_seg_total<1>(p, s, si, ke, scratch);
    if (threadIdx.x == 0 && si->status == a.status) {
        mdf_sys_state *b = &st[s];
        if (b->owner != MDF_THERMO_OWNER(MDF_THERMO_NHC)) {
            for (int k = 0; k < MDF_STATE_DOUBLES; k++) b->d[k] = 0.0;
            b->owner = MDF_THERMO_OWNER(MDF_THERMO_NHC);
        }
        double k2 = 2.0 * ke[0];
        factor[s] = mdf_nhc_half(b->d + MDF_NHC_ETA, b->d + MDF_NHC_ETA_DOT, a.chain, k2, mdf_sys_dof(si, a.momentum),
                                 a.kT, a.tau, a.dt);
    }
}

/* Per atom: v *= factor, then v += dt/2 F/m, x += dt v. */
__global__ void nhc_pre_atoms_kernel(double *x, double *v, const double *f, const mdf_atom_info *atoms,
                                     const mdf_sys_info *sys, const double *factor, int32_t status, double dt,
                                     int32_t natoms)
{
    const int32_t at = (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
    if (at >= natoms) return;
    const int32_t s = atoms[at].sys;
    if (sys[s].status != status) return;
    const size_t k3 = 3 * (size_t)at;
    const double alpha = factor[s];
    for (int k = 0; k < 3; k++) v[k3 + k] *= alpha;
    mdf_thermo_kick_drift(x + k3, v + k3, f + k3, atoms[at].inv_mass, dt);
}

/* ---- stochastic cell rescaling, first half ------------------------------------------- */

/* Per system: the barostat's step (cell, bookkeeping, res.extra_energy);
 * factor[s] is the factor mu of the coordinates (1: not rescaled). */
__global__ void npt_pre_sys_kernel(mdf_sys_info *sys, mdf_sys_result *res, mdf_sys_state *st, double *factor,
                                   mdf_thermo_args a, mdf_seg_parts p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    mdf_sys_info *si = &sys[s];
    double ke[1];
    mdf_seg_total<1>(p, s, si, ke, scratch);
    /* Thread 0 alone reads and writes the cell; the others read only
     * atom_start and natoms (in mdf_seg_total, before this). */
    if (threadIdx.x == 0 && si->status == a.status) {
        mdf_sys_state *b = &st[s];
        mdf_sys_result *r = &res[s];
        if (b->owner != MDF_THERMO_OWNER(MDF_THERMO_NPT)) {
            b->d[MDF_NPT_ACC] = 0.0;
            b->owner = MDF_THERMO_OWNER(MDF_THERMO_NPT);
        }
        double mu = 1.0;
        double V = mdf_npt_volume(si);
        if (V > 0.0) {
            double K = ke[0], trw = mdf_trace3(r->virial);
            double pr = (2.0 * K + trw) / (3.0 * V);
            double de = mdf_npt_deps(pr, V, mdf_npt_noise(mdf_velocity_key(a.seed, si->id), si->step), &a);
            mu = exp(de / 3.0);
            mdf_npt_scale_cell(si, mu);
            mdf_npt_check_cell(si, a.r_list);
            b->d[MDF_NPT_ACC] -= K / (mu * mu) - K - trw * de / 3.0;
            V = mdf_npt_volume(si);
        }
        r->extra_energy = a.p0 * V + b->d[MDF_NPT_ACC];
        factor[s] = mu;
    }
}

/* Per atom: x *= mu, v /= mu (systems that were rescaled), then v += dt/2
 * F/m, x += dt v. mu == 1 skips the rescaling, which would change nothing. */
__global__ void npt_pre_atoms_kernel(double *x, double *v, const double *f, const mdf_atom_info *atoms,
                                     const mdf_sys_info *sys, const double *factor, int32_t status, double dt,
                                     int32_t natoms)
{
    const int32_t at = (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
    if (at >= natoms) return;
    const int32_t s = atoms[at].sys;
    if (sys[s].status != status) return;
    const size_t k3 = 3 * (size_t)at;
    const double mu = factor[s];
    if (mu != 1.0)
        for (int k = 0; k < 3; k++) {
            x[k3 + k] *= mu;
            v[k3 + k] /= mu;
        }
    mdf_thermo_kick_drift(x + k3, v + k3, f + k3, atoms[at].inv_mass, dt);
}

/* ---- end of step: B(dt/2), then the method's rescaling ---------------------------------- */

/* Per atom: the kick and its kinetic energy (value 0) and, for Bussi and
 * NPT, Bussi draw number (atom index within the system) while it is below
 * the system's draw count: its sum of squares (value 1). R1 comes from draw
 * 0, which the per-system kernel draws again. A system has at most as many
 * draws as atoms. */
__global__ void thermo_post_atoms_kernel(double *v, const double *f, const mdf_atom_info *atoms,
                                         const mdf_sys_info *sys, mdf_thermo_args a, mdf_seg_parts p)
{
    THERMO_ATOM(p);
    double part[2] = {0.0, 0.0};
    if (in && sys[s].status == a.status) {
        const mdf_sys_info *si = &sys[s];
        part[0] = mdf_thermo_kick(v + k3, f + k3, atoms[at].mass, atoms[at].inv_mass, a.dt);
        if (a.kind == MDF_THERMO_BUSSI || a.kind == MDF_THERMO_NPT) {
            const double nf = mdf_sys_dof(si, a.momentum);
            const uint32_t d = (uint32_t)(at - si->atom_start);
            if (d < mdf_bussi_ndraws(nf)) {
                double r1 = 0.0;
                mdf_bussi_draw(mdf_velocity_key(a.seed, si->id), si->step, d, nf, &r1, &part[1]);
            }
        }
    }
    mdf_seg_block<2>(part, at, s, sys, p);
}

/* Per system: K (and the squares), the method's scalar step, res.kinetic,
 * the step counters; factor[s] is the velocity factor (methods other than
 * Langevin). */
__global__ void thermo_post_sys_kernel(mdf_sys_info *sys, mdf_sys_result *res, mdf_sys_state *st, double *factor,
                                       mdf_thermo_args a, mdf_seg_parts p)
{
    __shared__ double scratch[MDF_SYS_BLOCK];
    const int32_t s = (int32_t)blockIdx.x;
    mdf_sys_info *si = &sys[s];
    double tot[2];
    mdf_seg_total<2>(p, s, si, tot, scratch);
    if (threadIdx.x != 0 || si->status != a.status) return; /* no barrier follows */
    double K = tot[0], alpha = 1.0;
    const double nf = mdf_sys_dof(si, a.momentum);
    mdf_sys_state *b = &st[s];
    mdf_sys_result *r = &res[s];
    if (a.kind == MDF_THERMO_BUSSI || a.kind == MDF_THERMO_NPT) {
        /* bussi_rescale of thermostat_cpu.c, the squares summed by the atoms */
        double r1 = 0.0, unused = 0.0, knew;
        if (mdf_bussi_ndraws(nf) > 0) mdf_bussi_draw(mdf_velocity_key(a.seed, si->id), si->step, 0u, nf, &r1, &unused);
        alpha = mdf_bussi_alpha(K, 0.5 * nf * a.kT, nf, a.c1, r1, tot[1], &knew);
        if (a.kind == MDF_THERMO_BUSSI) {
            if (b->owner != MDF_THERMO_OWNER(MDF_THERMO_BUSSI)) {
                r->extra_energy = 0.0;
                b->owner = MDF_THERMO_OWNER(MDF_THERMO_BUSSI);
            }
            r->extra_energy -= knew - K;
        } else {
            b->d[MDF_NPT_ACC] -= knew - K;
            r->extra_energy = a.p0 * mdf_npt_volume(si) + b->d[MDF_NPT_ACC];
        }
        K = knew;
    } else if (a.kind == MDF_THERMO_NHC) {
        double *eta = b->d + MDF_NHC_ETA, *eta_dot = b->d + MDF_NHC_ETA_DOT;
        alpha = mdf_nhc_half(eta, eta_dot, a.chain, 2.0 * K, nf, a.kT, a.tau, a.dt);
        K *= alpha * alpha;
        r->extra_energy = mdf_nhc_energy(eta, eta_dot, a.chain, nf, a.kT, a.tau);
    }
    if (factor) factor[s] = alpha;
    r->kinetic = K;
    si->step++;
    si->stage_step++;
}

/* Per atom: v *= factor (Bussi, NHC, NPT). */
__global__ void thermo_scale_kernel(double *v, const mdf_atom_info *atoms, const mdf_sys_info *sys,
                                    const double *factor, int32_t status, int32_t natoms)
{
    const int32_t at = (int32_t)blockIdx.x * MDF_SEG_BLOCK + (int32_t)threadIdx.x;
    if (at >= natoms) return;
    const int32_t s = atoms[at].sys;
    if (sys[s].status != status) return;
    const size_t k3 = 3 * (size_t)at;
    const double alpha = factor[s];
    for (int k = 0; k < 3; k++) v[k3 + k] *= alpha;
}

/* ---- entry points ---------------------------------------------------------------------- */

/* buffers: pos RW, vel RW, force R, atoms R, sys R, res RW, state RW */
extern "C" void mdf_langevin_pre_cuda(void *buffers[], void *cl_arg)
{
    const mdf_thermo_args *a = (const mdf_thermo_args *)cl_arg;
    if (a->nsys <= 0) return;
    const mdf_atom_info *atoms = (const mdf_atom_info *)VEC(3);
    const mdf_sys_info *sys = (const mdf_sys_info *)VEC(4);
    thermo_launch L;
    thermo_begin(&L, a, 1, 0);
    if (L.nb > 0) {
        langevin_pre_atoms_kernel<<<L.nb, MDF_SEG_BLOCK, 0, L.stream>>>((double *)VEC(0), (double *)VEC(1),
                                                                         (const double *)VEC(2), atoms, sys, *a, L.p);
        mdf_cuda_check_launch();
    }
    langevin_pre_sys_kernel<<<(unsigned)L.nsys, MDF_SYS_BLOCK, 0, L.stream>>>(
        sys, (mdf_sys_result *)VEC(5), (mdf_sys_state *)VEC(6), a->status, L.p);
    mdf_cuda_check_launch();
    thermo_end(&L);
}

/* buffers: pos RW, vel RW, force R, atoms R, sys R, state RW */
extern "C" void mdf_nhc_pre_cuda(void *buffers[], void *cl_arg)
{
    const mdf_thermo_args *a = (const mdf_thermo_args *)cl_arg;
    if (a->nsys <= 0) return;
    double *x = (double *)VEC(0), *v = (double *)VEC(1);
    const mdf_atom_info *atoms = (const mdf_atom_info *)VEC(3);
    const mdf_sys_info *sys = (const mdf_sys_info *)VEC(4);
    thermo_launch L;
    thermo_begin(&L, a, 1, 1);
    if (L.nb > 0) {
        thermo_ke_kernel<<<L.nb, MDF_SEG_BLOCK, 0, L.stream>>>(v, atoms, sys, a->status, L.p);
        mdf_cuda_check_launch();
    }
    nhc_pre_sys_kernel<<<(unsigned)L.nsys, MDF_SYS_BLOCK, 0, L.stream>>>(sys, (mdf_sys_state *)VEC(5), L.factor, *a,
                                                                         L.p);
    mdf_cuda_check_launch();
    if (L.nb > 0) {
        nhc_pre_atoms_kernel<<<L.nb, MDF_SEG_BLOCK, 0, L.stream>>>(x, v, (const double *)VEC(2), atoms, sys, L.factor,
                                                                    a->status, a->dt, L.natoms);
        mdf_cuda_check_launch();
    }
    thermo_end(&L);
}

/* buffers: pos RW, vel RW, force R, atoms R, sys RW, res RW, state RW */
extern "C" void mdf_npt_pre_cuda(void *buffers[], void *cl_arg)
{
    const mdf_thermo_args *a = (const mdf_thermo_args *)cl_arg;
    if (a->nsys <= 0) return;
    double *x = (double *)VEC(0), *v = (double *)VEC(1);
    const mdf_atom_info *atoms = (const mdf_atom_info *)VEC(3);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(4);
    thermo_launch L;
    thermo_begin(&L, a, 1, 1);
    if (L.nb > 0) {
        thermo_ke_kernel<<<L.nb, MDF_SEG_BLOCK, 0, L.stream>>>(v, atoms, sys, a->status, L.p);
        mdf_cuda_check_launch();
    }
    npt_pre_sys_kernel<<<(unsigned)L.nsys, MDF_SYS_BLOCK, 0, L.stream>>>(sys, (mdf_sys_result *)VEC(5),
                                                                         (mdf_sys_state *)VEC(6), L.factor, *a, L.p);
    mdf_cuda_check_launch();
    if (L.nb > 0) {
        npt_pre_atoms_kernel<<<L.nb, MDF_SEG_BLOCK, 0, L.stream>>>(x, v, (const double *)VEC(2), atoms, sys, L.factor,
                                                                    a->status, a->dt, L.natoms);
        mdf_cuda_check_launch();
    }
    thermo_end(&L);
}

/* buffers: vel RW, force R, atoms R, sys RW, res RW, state RW */
extern "C" void mdf_thermo_post_cuda(void *buffers[], void *cl_arg)
{
    const mdf_thermo_args *a = (const mdf_thermo_args *)cl_arg;
    if (a->nsys <= 0) return;
    double *v = (double *)VEC(0);
    const mdf_atom_info *atoms = (const mdf_atom_info *)VEC(2);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(3);
    const int scales = a->kind != MDF_THERMO_LANGEVIN;
    thermo_launch L;
    thermo_begin(&L, a, 2, scales);
    if (L.nb > 0) {
        thermo_post_atoms_kernel<<<L.nb, MDF_SEG_BLOCK, 0, L.stream>>>(v, (const double *)VEC(1), atoms, sys, *a, L.p);
        mdf_cuda_check_launch();
    }
    thermo_post_sys_kernel<<<(unsigned)L.nsys, MDF_SYS_BLOCK, 0, L.stream>>>(
        sys, (mdf_sys_result *)VEC(4), (mdf_sys_state *)VEC(5), L.factor, *a, L.p);
    mdf_cuda_check_launch();
    if (scales && L.nb > 0) {
        thermo_scale_kernel<<<L.nb, MDF_SEG_BLOCK, 0, L.stream>>>(v, atoms, sys, L.factor, a->status, L.natoms);
        mdf_cuda_check_launch();
    }
    thermo_end(&L);
}
