/* mdflow — thermostats and barostat, CPU implementation (one system at a
 * time; the arithmetic is in thermostat_kernel.h). */
#include <starpu.h>
#include "thermostat_kernel.h"
#include "thermostat_codelet.h"

#define VEC(i) STARPU_VECTOR_GET_PTR(buffers[i])

/* Kinetic energy of a system (fixed order). */
static double system_ke(const mdf_sys_info *s, const double *v, const mdf_atom_info *atoms)
{
    double ke = 0.0;
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t a = s->atom_start; a < a1; a++) ke += mdf_thermo_ke(v + 3 * a, atoms[a].mass);
    return ke;
}

static void scale_velocities(const mdf_sys_info *s, double *v, double alpha)
{
    int32_t a1 = s->atom_start + s->natoms;
    for (int32_t k = 3 * s->atom_start; k < 3 * a1; k++) v[k] *= alpha;
}

#define NORMAL_BLOCK 64

/* The Langevin normals of shard atoms first .. first + n - 1 (the numbers
 * mdf_gauss3_step draws, to round-off), a block at a time: the Philox
 * rounds and Box–Muller vectorise over atoms. Each atom's stream is keyed
 * by its input index: the same noise whatever order its system is stored
 * in. */
MDF_CPU_CLONES static void langevin_normals(uint64_t key, int64_t step, const mdf_atom_info *atoms, int32_t first,
                                               int32_t n, double g[3][NORMAL_BLOCK])
{
#pragma omp simd
    for (int32_t i = 0; i < n; i++) {
        mdf_normal3 n3 = mdf_normal3_step(key, step, (uint32_t)atoms[first + i].index, MDF_RNG_LANGEVIN);
        g[0][i] = n3.g[0];
        g[1][i] = n3.g[1];
        g[2][i] = n3.g[2];
    }
}

/* BAOAB's first part for atoms first .. first + n - 1 of the shard, given
 * their normals: mdf_baoab_pre_atom_g's arithmetic, in its order, as one
 * loop over the atoms' 3n coordinates, which lie next to each other in x,
 * v and f. The per-atom factors (h/m, m, the noise amplitude, the normals,
 * none for frozen atoms) are spread over the three coordinates first, so
 * the loop has only contiguous loads and vectorises; over atoms, with x, v
 * and f strided by 3, the compiler left it scalar (10% of a Langevin run
 * of small clusters). Returns the kinetic energy the O steps added. */
MDF_CPU_CLONES static double baoab_block(double *x, double *v, const double *f, const mdf_atom_info *atoms,
                                            int32_t first, int32_t n, const mdf_thermo_args *a,
                                            double g[3][NORMAL_BLOCK])
{
    double hm[3 * NORMAL_BLOCK], m[3 * NORMAL_BLOCK], sd[3 * NORMAL_BLOCK], gl[3 * NORMAL_BLOCK];
    const double h = 0.5 * a->dt, c1 = a->c1, var = (1.0 - a->c1 * a->c1) * a->kT;
    for (int32_t i = 0; i < n; i++) {
        const mdf_atom_info *at = &atoms[first + i];
        /* Frozen atoms (held by the freeze hook) get no noise, so that they stay put. */
        double live = (double)((at->flags & MDF_ATOM_FROZEN) == 0), s = sqrt(var * at->inv_mass);
        for (int k = 0; k < 3; k++) {
            hm[3 * i + k] = h * at->inv_mass;
            m[3 * i + k] = at->mass;
            sd[3 * i + k] = s;
            gl[3 * i + k] = g[k][i] * live;
        }
    }
    double *restrict xs = x + 3 * (size_t)first, *restrict vs = v + 3 * (size_t)first;
    const double *restrict fs = f + 3 * (size_t)first;
    double dk = 0.0;
#pragma omp simd reduction(+ : dk)
    for (int32_t q = 0; q < 3 * n; q++) {
        double vq = vs[q] + hm[q] * fs[q];
        double xq = xs[q] + h * vq;
        double k0 = m[q] * vq * vq;
        vq = c1 * vq + sd[q] * gl[q];
        xs[q] = xq + h * vq;
        vs[q] = vq;
        dk += m[q] * vq * vq - k0;
    }
    return 0.5 * dk;
}

/* buffers: pos RW, vel RW, force R, atoms R, sys R, res RW, state RW */
void mdf_langevin_pre_cpu(void *buffers[], void *cl_arg)
{
    const mdf_thermo_args *a = (const mdf_thermo_args *)cl_arg;
    double *x = (double *)VEC(0), *v = (double *)VEC(1);
    const double *f = (const double *)VEC(2);
    const mdf_atom_info *atoms = (const mdf_atom_info *)VEC(3);
    const mdf_sys_info *sys = (const mdf_sys_info *)VEC(4);
    mdf_sys_result *res = (mdf_sys_result *)VEC(5);
    mdf_sys_state *st = (mdf_sys_state *)VEC(6);
    for (int32_t s = 0; s < a->nsys; s++) {
        if (sys[s].status != a->status) continue;
        if (st[s].owner != MDF_THERMO_OWNER(MDF_THERMO_LANGEVIN)) {
            res[s].extra_energy = 0.0;
            st[s].owner = MDF_THERMO_OWNER(MDF_THERMO_LANGEVIN);
        }
        uint64_t key = mdf_velocity_key(a->seed, sys[s].id);
        double dk = 0.0;
        for (int32_t i0 = 0; i0 < sys[s].natoms; i0 += NORMAL_BLOCK) {
            int32_t n = sys[s].natoms - i0 < NORMAL_BLOCK ? sys[s].natoms - i0 : NORMAL_BLOCK;
            double g[3][NORMAL_BLOCK];
            langevin_normals(key, sys[s].step, atoms, sys[s].atom_start + i0, n, g);
            dk += baoab_block(x, v, f, atoms, sys[s].atom_start + i0, n, a, g);
        }
        res[s].extra_energy -= dk;
    }
}

/* buffers: pos RW, vel RW, force R, atoms R, sys R, state RW */
void mdf_nhc_pre_cpu(void *buffers[], void *cl_arg)
{
    const mdf_thermo_args *a = (const mdf_thermo_args *)cl_arg;
    double *x = (double *)VEC(0), *v = (double *)VEC(1);
    const double *f = (const double *)VEC(2);
    const mdf_atom_info *atoms = (const mdf_atom_info *)VEC(3);
    const mdf_sys_info *sys = (const mdf_sys_info *)VEC(4);
    mdf_sys_state *st = (mdf_sys_state *)VEC(5);
    for (int32_t s = 0; s < a->nsys; s++) {
        if (sys[s].status != a->status) continue;
        if (st[s].owner != MDF_THERMO_OWNER(MDF_THERMO_NHC)) {
            for (int k = 0; k < MDF_STATE_DOUBLES; k++) st[s].d[k] = 0.0;
            st[s].owner = MDF_THERMO_OWNER(MDF_THERMO_NHC);
        }
        double k2 = 2.0 * system_ke(&sys[s], v, atoms);
        double scale = mdf_nhc_half(st[s].d + MDF_NHC_ETA, st[s].d + MDF_NHC_ETA_DOT, a->chain, k2,
                                    mdf_sys_dof(&sys[s], a->momentum), a->kT, a->tau, a->dt);
        scale_velocities(&sys[s], v, scale);
        int32_t a1 = sys[s].atom_start + sys[s].natoms;
        for (int32_t at = sys[s].atom_start; at < a1; at++)
            mdf_thermo_kick_drift(x + 3 * at, v + 3 * at, f + 3 * at, atoms[at].inv_mass, a->dt);
    }
}

/* buffers: pos RW, vel RW, force R, atoms R, sys RW, res RW, state RW */
void mdf_npt_pre_cpu(void *buffers[], void *cl_arg)
{
    const mdf_thermo_args *a = (const mdf_thermo_args *)cl_arg;
    double *x = (double *)VEC(0), *v = (double *)VEC(1);
    const double *f = (const double *)VEC(2);
    const mdf_atom_info *atoms = (const mdf_atom_info *)VEC(3);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(4);
    mdf_sys_result *res = (mdf_sys_result *)VEC(5);
    mdf_sys_state *st = (mdf_sys_state *)VEC(6);
    for (int32_t s = 0; s < a->nsys; s++) {
        if (sys[s].status != a->status) continue;
        if (st[s].owner != MDF_THERMO_OWNER(MDF_THERMO_NPT)) {
            st[s].d[MDF_NPT_ACC] = 0.0;
            st[s].owner = MDF_THERMO_OWNER(MDF_THERMO_NPT);
        }
        int32_t a0 = sys[s].atom_start, a1 = a0 + sys[s].natoms;
        double V = mdf_npt_volume(&sys[s]);
        if (V > 0.0) {
            double K = system_ke(&sys[s], v, atoms), trw = mdf_trace3(res[s].virial);
            double p = (2.0 * K + trw) / (3.0 * V);
            double de = mdf_npt_deps(p, V, mdf_npt_noise(mdf_velocity_key(a->seed, sys[s].id), sys[s].step), a);
            double mu = exp(de / 3.0);
            for (int32_t k = 3 * a0; k < 3 * a1; k++) {
                x[k] *= mu;
                v[k] /= mu;
            }
            mdf_npt_scale_cell(&sys[s], mu);
            mdf_npt_check_cell(&sys[s], a->r_list);
            st[s].d[MDF_NPT_ACC] -= K / (mu * mu) - K - trw * de / 3.0;
            V = mdf_npt_volume(&sys[s]);
        }
        res[s].extra_energy = a->p0 * V + st[s].d[MDF_NPT_ACC];
        for (int32_t at = a0; at < a1; at++)
            mdf_thermo_kick_drift(x + 3 * at, v + 3 * at, f + 3 * at, atoms[at].inv_mass, a->dt);
    }
}

/* The Bussi rescaling of system s at the end of its step: returns K'. */
static double bussi_rescale(const mdf_sys_info *s, double *v, double K, const mdf_thermo_args *a)
{
    double nf = mdf_sys_dof(s, a->momentum), r1 = 0.0, sum2 = 0.0, knew;
    uint64_t key = mdf_velocity_key(a->seed, s->id);
    uint32_t nd = mdf_bussi_ndraws(nf);
    for (uint32_t b = 0; b < nd; b++) mdf_bussi_draw(key, s->step, b, nf, &r1, &sum2);
    double alpha = mdf_bussi_alpha(K, 0.5 * nf * a->kT, nf, a->c1, r1, sum2, &knew);
    scale_velocities(s, v, alpha);
    return knew;
}

/* buffers: vel RW, force R, atoms R, sys RW, res RW, state RW */
void mdf_thermo_post_cpu(void *buffers[], void *cl_arg)
{
    const mdf_thermo_args *a = (const mdf_thermo_args *)cl_arg;
    double *v = (double *)VEC(0);
    const double *f = (const double *)VEC(1);
    const mdf_atom_info *atoms = (const mdf_atom_info *)VEC(2);
    mdf_sys_info *sys = (mdf_sys_info *)VEC(3);
    mdf_sys_result *res = (mdf_sys_result *)VEC(4);
    mdf_sys_state *st = (mdf_sys_state *)VEC(5);
    for (int32_t s = 0; s < a->nsys; s++) {
        if (sys[s].status != a->status) continue;
        int32_t a1 = sys[s].atom_start + sys[s].natoms;
        double K = 0.0;
        for (int32_t at = sys[s].atom_start; at < a1; at++)
            K += mdf_thermo_kick(v + 3 * at, f + 3 * at, atoms[at].mass, atoms[at].inv_mass, a->dt);
        if (a->kind == MDF_THERMO_BUSSI) {
            if (st[s].owner != MDF_THERMO_OWNER(MDF_THERMO_BUSSI)) {
                res[s].extra_energy = 0.0;
                st[s].owner = MDF_THERMO_OWNER(MDF_THERMO_BUSSI);
            }
            double knew = bussi_rescale(&sys[s], v, K, a);
            res[s].extra_energy -= knew - K;
            K = knew;
        } else if (a->kind == MDF_THERMO_NHC) {
            double nf = mdf_sys_dof(&sys[s], a->momentum);
            double *eta = st[s].d + MDF_NHC_ETA, *eta_dot = st[s].d + MDF_NHC_ETA_DOT;
            double scale = mdf_nhc_half(eta, eta_dot, a->chain, 2.0 * K, nf, a->kT, a->tau, a->dt);
            scale_velocities(&sys[s], v, scale);
            K *= scale * scale;
            res[s].extra_energy = mdf_nhc_energy(eta, eta_dot, a->chain, nf, a->kT, a->tau);
        } else if (a->kind == MDF_THERMO_NPT) {
            double knew = bussi_rescale(&sys[s], v, K, a);
            st[s].d[MDF_NPT_ACC] -= knew - K;
            res[s].extra_energy = a->p0 * mdf_npt_volume(&sys[s]) + st[s].d[MDF_NPT_ACC];
            K = knew;
        }
        res[s].kinetic = K;
        sys[s].step++;
        sys[s].stage_step++;
    }
}
