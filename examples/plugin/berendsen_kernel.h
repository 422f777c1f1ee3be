/* Berendsen thermostat — the arithmetic, shared by the CPU codelets
 * (berendsen_cpu.c) and the CUDA ones (berendsen_cuda.cu).
 *
 * A step is velocity Verlet,
 *   pre_update:  v += dt/2 F/m;  x += dt v
 *   post_update: v += dt/2 F/m   (forces at the new positions)
 * and then every velocity of the system is scaled by
 *   λ = sqrt(1 + (dt/τ)(T0/T - 1)),   T = 2K / (Nf kB)
 * (Berendsen et al., J. Chem. Phys. 81, 3684 (1984)), which relaxes T
 * towards T0 with time constant τ. λ is kept within [0.8, 1.25], as GROMACS
 * does, so that a nearly cold system is not blown up in one step; a system
 * with no kinetic energy is left alone (draw velocities first). Frozen atoms
 * (MDF_ATOM_FROZEN) neither move nor count.
 *
 * The rescaling adds K(λ² - 1) to the kinetic energy; res.extra_energy
 * accumulates minus that, so potential + kinetic + extra_energy stays
 * constant up to the integration error (the Berendsen ensemble is not
 * canonical, but that sum is still a useful check of the integration). */
#ifndef BERENDSEN_KERNEL_H
#define BERENDSEN_KERNEL_H

#include "mdflow/kernel.h"

/* The argument block of every Berendsen task. Its first field is the work
 * size that the performance models' footprint reads (berendsen.c). */
typedef struct berendsen_args {
    int64_t work;       /* atoms in the shard */
    double dt;          /* time step, internal units */
    double kT0;         /* kB T0, eV */
    double dt_over_tau; /* dt / τ */
    int32_t status;     /* only systems with this status move */
    int32_t nsys;       /* systems in the shard */
    int32_t natoms;     /* atoms in the shard */
    int32_t pad_;
} berendsen_args;

/* The method's part of each system's state block (mdf_sys_state.d). */
#define BERENDSEN_LAMBDA 0 /* the last step's λ (the CUDA codelet passes it between kernels) */

MDF_HD int berendsen_moves(const mdf_atom_info *at) { return (at->flags & MDF_ATOM_FROZEN) == 0; }

/* First half of the step for one atom. */
MDF_HD void berendsen_kick_drift(double *x, double *v, const double *f, double inv_mass, double dt)
{
    double h = 0.5 * dt * inv_mass;
    for (int k = 0; k < 3; k++) {
        v[k] += h * f[k];
        x[k] += dt * v[k];
    }
}

/* Second half-kick for one atom; returns its kinetic energy after it. */
MDF_HD double berendsen_kick(double *v, const double *f, double mass, double inv_mass, double dt)
{
    double h = 0.5 * dt * inv_mass;
    for (int k = 0; k < 3; k++) v[k] += h * f[k];
    return 0.5 * mass * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* λ for a system with kinetic energy K and nf degrees of freedom. */
MDF_HD double berendsen_lambda(double K, double nf, const berendsen_args *a)
{
    if (!(K > 0.0) || !(nf > 0.0)) return 1.0;
    double t_ratio = 0.5 * nf * a->kT0 / K; /* T0 / T */
    double l2 = 1.0 + a->dt_over_tau * (t_ratio - 1.0);
    double l = l2 > 0.0 ? sqrt(l2) : 0.0;
    return l < 0.8 ? 0.8 : (l > 1.25 ? 1.25 : l);
}

/* End of system s's step, once its kinetic energy K (after the half-kick)
 * is known: starts the state on entry, books the energy the rescaling
 * adds, counts the step; returns λ (the velocities are scaled by the
 * caller). */
MDF_HD double berendsen_finish(mdf_sys_info *s, mdf_sys_result *r, mdf_sys_state *st, double K,
                               const berendsen_args *a)
{
    if (st->owner == 0) { /* the system just entered this stage */
        r->extra_energy = 0.0;
        st->owner = 1;
    }
    double lambda = berendsen_lambda(K, mdf_sys_dof(s, 1), a);
    double knew = lambda * lambda * K;
    r->extra_energy -= knew - K;
    r->kinetic = knew;
    st->d[BERENDSEN_LAMBDA] = lambda;
    s->step++;
    s->stage_step++;
    return lambda;
}

#endif
