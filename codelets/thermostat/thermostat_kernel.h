/* mdflow — thermostats and barostat, the arithmetic shared by CPU and CUDA.
 *
 * Methods (stages/langevin.c, nose_hoover.c, bussi.c, npt.c):
 *   Langevin BAOAB   pre:  B(dt/2) A(dt/2) O(dt) A(dt/2)   post: B(dt/2)
 *   Bussi CSVR       pre:  velocity Verlet's first half     post: B(dt/2), rescale
 *   Nosé–Hoover NHC  pre:  chain(dt/2), B(dt/2) A(dt)       post: B(dt/2), chain(dt/2)
 *   NPT (C-rescale)  pre:  cell rescale, B(dt/2) A(dt)      post: B(dt/2), Bussi rescale
 * B: v += dt/2 F/m; A: x += h v; O: v = c1 v + sqrt((1 - c1²) kT/m) ξ.
 *
 * Random numbers are Philox draws keyed by (seed, system id) and counted by
 * (sys.step before the step's increment, index, purpose): the same on every
 * shard, worker and device.
 *
 * res.extra_energy is the thermostat/barostat part of the conserved quantity,
 * restarted when a system enters the stage:
 *   Langevin  minus the kinetic energy the O steps added;
 *   Bussi     minus the kinetic energy the rescalings added;
 *   NHC       the chain's energy Σ p_j²/2Q_j + Nf kT η_1 + Σ_{j>1} kT η_j;
 * Nf (Bussi's and the chain's) is mdf_sys_dof(system, args.momentum):
 * 3N - 3 for these momentum-conserving methods, 3 per free atom when some
 * atoms are frozen.
 *   NPT       P0 V, minus the energy the thermostat and the cell rescalings
 *             added (the rescaling's change of U to first order, -tr W dε/3,
 *             of K exactly). */
#ifndef MDF_THERMOSTAT_KERNEL_H
#define MDF_THERMOSTAT_KERNEL_H

#include "../common/mdf_kernel_common.h"
#include "../common/mdf_philox.h"
#include "../velocity/velocity_kernel.h"

/* Which post_update a task runs. */
#define MDF_THERMO_LANGEVIN 0
#define MDF_THERMO_BUSSI 1
#define MDF_THERMO_NHC 2
#define MDF_THERMO_NPT 3

/* mdf_sys_state.owner of a block a thermostat initialised: non-zero as the
 * contract asks, and different for each method, so that a method never reads
 * another's state when a batch goes through stages of different methods
 * without a status move (the convergence task zeroes owner only when it moves
 * a system). Another method's block counts as fresh: its bookkeeping restarts. */
#define MDF_THERMO_OWNER(kind) (0x54480000 | ((kind) + 1))

/* Per-system state (mdf_sys_state.d) of each method. */
#define MDF_NHC_ETA 0        /* d[0..5): chain positions η_j */
#define MDF_NHC_ETA_DOT 5    /* d[5..10): chain velocities η̇_j = p_j / Q_j */
#define MDF_NHC_LEN 5        /* = MDF_NHC_MAX (mdflow/stage.h) */
#define MDF_NPT_ACC 0        /* d[0]: energy the thermostat and barostat added (eV), negated */

/* Arguments of every thermostat task. */
typedef struct mdf_thermo_args {
    int64_t work;          /* atoms of the systems it moves (performance-model key) */
    double dt;             /* internal time units */
    double kT;             /* eV */
    double c1;             /* Langevin: exp(-γ dt); Bussi and NPT: exp(-dt/τ_T) */
    double tau;            /* NHC: τ, internal time units */
    double p0;             /* NPT: target pressure, eV/Å³ */
    double beta_t;         /* NPT: compressibility, Å³/eV */
    double tau_p;          /* NPT: barostat time, internal units */
    double r_list;         /* NPT: cutoff + skin, Å (0: no check); a cell whose
                            * periodic width falls below 2 r_list is flagged
                            * MDF_SYS_CELL_TOO_SMALL */
    uint64_t seed;
    int32_t status;        /* only systems with this status move */
    int32_t nsys;          /* systems in the shard */
    int32_t chain;         /* NHC chain length */
    int32_t kind;          /* MDF_THERMO_* (post_update) */
    int32_t momentum;      /* 1: the method conserves the total momentum
                            * (MDF_METHOD_MOMENTUM): Nf = mdf_sys_dof(s, momentum) */
    int32_t natoms;        /* atoms in the shard (mdf_method_natoms): a CUDA task's per-atom range;
                            * `work` is the performance model's size only */
} mdf_thermo_args;

MDF_HD double mdf_thermo_ke(const double *v, double mass)
{
    return 0.5 * mass * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* Kicks with half a step of force; returns the atom's kinetic energy after. */
MDF_HD double mdf_thermo_kick(double *v, const double *f, double mass, double inv_mass, double dt)
{
    double h = 0.5 * dt * inv_mass;
    for (int k = 0; k < 3; k++) v[k] += h * f[k];
    return mdf_thermo_ke(v, mass);
}

/* v += dt/2 F/m; x += dt v (velocity Verlet's first half). */
MDF_HD void mdf_thermo_kick_drift(double *x, double *v, const double *f, double inv_mass, double dt)
{
    double h = 0.5 * dt * inv_mass;
    for (int k = 0; k < 3; k++) {
        v[k] += h * f[k];
        x[k] += dt * v[k];
    }
}

/* BAOAB's first part for one atom given its three normals g: B(dt/2)
 * A(dt/2) O(dt) A(dt/2). Returns the kinetic energy the O step added. */
MDF_HD double mdf_baoab_pre_atom_g(double *x, double *v, const double *f, double mass, double inv_mass,
                                   const mdf_thermo_args *a, mdf_normal3 g)
{
    double h = 0.5 * a->dt;
    for (int k = 0; k < 3; k++) {
        v[k] += h * inv_mass * f[k];
        x[k] += h * v[k];
    }
    double k0 = mdf_thermo_ke(v, mass);
    double sd = sqrt((1.0 - a->c1 * a->c1) * a->kT * inv_mass);
    for (int k = 0; k < 3; k++) {
        v[k] = a->c1 * v[k] + sd * g.g[k];
        x[k] += h * v[k];
    }
    return mdf_thermo_ke(v, mass) - k0;
}

/* The same, drawing the normals: `index` is the atom's index within its
 * system. Frozen atoms (held by the freeze hook, which zeroes their forces
 * and velocities) get no noise, so that they stay put. */
MDF_HD double mdf_baoab_pre_atom(double *x, double *v, const double *f, double mass, double inv_mass, int32_t flags,
                                 const mdf_thermo_args *a, uint64_t key, int64_t step, uint32_t index)
{
    mdf_normal3 g = {{0.0, 0.0, 0.0}};
    if (!(flags & MDF_ATOM_FROZEN)) g = mdf_normal3_step(key, step, index, MDF_RNG_LANGEVIN);
    return mdf_baoab_pre_atom_g(x, v, f, mass, inv_mass, a, g);
}

/* ---- Bussi stochastic velocity rescaling ------------------------------------ */

/* The Nf normals of one rescaling: normal j is component j % 3 of draw j / 3.
 * Normal 0 is R1; the others enter as a sum of squares. */
MDF_HD uint32_t mdf_bussi_ndraws(double nf) { return (uint32_t)((nf + 2.0) / 3.0); }

/* Adds draw b's share: its R1 (b == 0) and its squares of R_2..R_Nf. */
MDF_HD void mdf_bussi_draw(uint64_t key, int64_t step, uint32_t b, double nf, double *r1, double *sum2)
{
    double g[3];
    mdf_gauss3_step(key, step, b, MDF_RNG_BUSSI, g);
    for (int c = 0; c < 3; c++) {
        double j = 3.0 * (double)b + (double)c;
        if (j == 0.0) *r1 = g[0];
        else if (j < nf) *sum2 += g[c] * g[c];
    }
}

/* Bussi, Donadio & Parrinello (2007), appendix: the new kinetic energy
 *   K' = K + (1-c)(K̄ (R1² + Σ_{i≥2} R_i²)/Nf - K) + 2 R1 sqrt(c(1-c) K K̄/Nf),
 * written as (sqrt(cK) + R1 sqrt(φ))² + φ Σ R_i² with φ = (1-c) K̄/Nf, which
 * is never negative. Returns the velocity factor α = sign · sqrt(K'/K) (the
 * sign of sqrt(cK) + R1 sqrt(φ), as in the paper) and sets *knew. A system
 * with no kinetic energy has no direction to scale along: it is left alone. */
MDF_HD double mdf_bussi_alpha(double K, double kbar, double nf, double c, double r1, double sum2, double *knew)
{
    if (!(K > 0.0) || !(nf > 0.0)) { /* (nf 0: every atom frozen) */
        *knew = K;
        return 1.0;
    }
    double phi = (1.0 - c) * kbar / nf;
    double a = sqrt(c * K) + r1 * sqrt(phi);
    *knew = a * a + phi * sum2;
    double alpha = sqrt(*knew / K);
    return a < 0.0 ? -alpha : alpha;
}

/* ---- Nosé–Hoover chain --------------------------------------------------------- */

/* Half a step (dt/2) of the chain's Trotter factorisation as LAMMPS's fix nvt
 * does it (Martyna, Tuckerman & Klein 1996; one loop, no Suzuki–Yoshida
 * weights): η̇ from the outer end in, the velocity factor, η, then η̇ back
 * out. Masses Q_1 = Nf kT τ², Q_j = kT τ². k2 = 2K before the update.
 * Returns the factor by which the velocities are scaled. A system without
 * degrees of freedom (every atom frozen) has nothing to thermostat. */
MDF_HD double mdf_nhc_half(double *eta, double *eta_dot, int m, double k2, double nf, double kT, double tau,
                           double dt)
{
    if (!(nf > 0.0)) return 1.0;
    double q1 = nf * kT * tau * tau, qj = kT * tau * tau;
    double dt2 = 0.5 * dt, dt4 = 0.25 * dt, dt8 = 0.125 * dt;
    double acc[MDF_NHC_LEN];
    acc[0] = (k2 - nf * kT) / q1;
    for (int j = 1; j < m; j++) acc[j] = ((j == 1 ? q1 : qj) * eta_dot[j - 1] * eta_dot[j - 1] - kT) / qj;
    for (int j = m - 1; j >= 0; j--) {
        double e = j + 1 < m ? exp(-dt8 * eta_dot[j + 1]) : 1.0;
        eta_dot[j] = (eta_dot[j] * e + acc[j] * dt4) * e;
    }
    double s = exp(-dt2 * eta_dot[0]);
    k2 *= s * s;
    for (int j = 0; j < m; j++) eta[j] += dt2 * eta_dot[j];
    acc[0] = (k2 - nf * kT) / q1;
    for (int j = 0; j < m; j++) {
        double e = j + 1 < m ? exp(-dt8 * eta_dot[j + 1]) : 1.0;
        if (j > 0) acc[j] = ((j == 1 ? q1 : qj) * eta_dot[j - 1] * eta_dot[j - 1] - kT) / qj;
        eta_dot[j] = (eta_dot[j] * e + acc[j] * dt4) * e;
    }
    return s;
}

/* The chain's energy: Σ Q_j η̇_j²/2 + Nf kT η_1 + Σ_{j>1} kT η_j. */
MDF_HD double mdf_nhc_energy(const double *eta, const double *eta_dot, int m, double nf, double kT, double tau)
{
    double e = 0.0;
    for (int j = 0; j < m; j++) {
        double q = (j == 0 ? nf : 1.0) * kT * tau * tau;
        e += 0.5 * q * eta_dot[j] * eta_dot[j] + (j == 0 ? nf : 1.0) * kT * eta[j];
    }
    return e;
}

/* ---- stochastic cell rescaling ----------------------------------------------------- */

/* The system's volume (Å³) if it is periodic in three directions, else 0:
 * only such systems have a volume to couple. */
MDF_HD double mdf_npt_volume(const mdf_sys_info *s)
{
    if (!(s->pbc[0] && s->pbc[1] && s->pbc[2])) return 0.0;
    const double *h = s->cell;
    double det = h[0] * (h[4] * h[8] - h[5] * h[7]) - h[1] * (h[3] * h[8] - h[5] * h[6]) +
                 h[2] * (h[3] * h[7] - h[4] * h[6]);
    return fabs(det);
}

/* Bernetti & Bussi (2020), isotropic, ε = ln V, one Euler–Maruyama step:
 *   dε = -(β_T/τ_p)(P0 - P) dt + sqrt(2 kT β_T dt / (V τ_p)) R,
 * P = (2K + tr W)/(3V). The paper writes the drift with P0 - P - kT/V for
 * the Stratonovich reading; with the noise amplitude taken at the start of
 * the step (Itô) the -kT/V term is cancelled by the Itô drift of the
 * V-dependent diffusion D = kT β_T/(V τ_p) (dD/dε = -D), so the stationary
 * density in ε is ∝ V exp(-(F(V) + P0 V)/kT): the NPT ensemble. */
MDF_HD double mdf_npt_deps(double p, double V, double r, const mdf_thermo_args *a)
{
    return -(a->beta_t / a->tau_p) * (a->p0 - p) * a->dt + sqrt(2.0 * a->kT * a->beta_t * a->dt / (V * a->tau_p)) * r;
}

/* The barostat's random number of the step. */
MDF_HD double mdf_npt_noise(uint64_t key, int64_t step)
{
    double g[3];
    mdf_gauss3_step(key, step, 0u, MDF_RNG_NPT, g);
    return g[0];
}

/* Scales the cell by mu (and its inverse by 1/mu). */
MDF_HD void mdf_npt_scale_cell(mdf_sys_info *s, double mu)
{
    for (int k = 0; k < 9; k++) {
        s->cell[k] *= mu;
        s->inv_cell[k] /= mu;
    }
}

MDF_HD double mdf_trace3(const double *w) { return w[0] + w[4] + w[8]; }

/* After a cell change: flags the system when cutoff + skin exceeds
 * MDF_NL_MAX_REACH periodic widths (the limit the model pipeline checks when
 * a stage starts), for the stage to report. The flag stays until a run
 * starts. */
MDF_HD void mdf_npt_check_cell(mdf_sys_info *s, double r_list)
{
    if (r_list > 0.0 && r_list > MDF_NL_MAX_REACH * mdf_periodic_width(s, 0)) s->flags |= MDF_SYS_CELL_TOO_SMALL;
}

#endif
