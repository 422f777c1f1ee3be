/* mdflow — Maxwell–Boltzmann velocities, shared by CPU and CUDA.
 * Component k of atom a of the system with id `id` is
 *   sqrt(kB T / m) · N(0,1)[philox(key = seed ⊕ id, counter = 3a + k)],
 * so the draw depends only on (seed, system id, atom, component); the total
 * momentum of each system is then removed. Frozen atoms get 0 (and a system
 * with frozen atoms keeps its momentum).
 *
 * MDF_VELOCITY_UNIFORM draws each component from the uniform distribution
 * of the same variance, sqrt(kB T / m) · sqrt(12) · U(-1/2, 1/2], as
 * LAMMPS's `velocity create` does by default (dist uniform): the same
 * temperature without the normal's tails, hence slower fastest atoms and
 * fewer neighbour-list rebuilds early in a run started from a lattice. */
#ifndef MDF_VELOCITY_KERNEL_H
#define MDF_VELOCITY_KERNEL_H

#include "../common/mdf_kernel_common.h"
#include "../common/mdf_philox.h"

typedef struct mdf_velocity_args {
    int64_t work;          /* atoms in the shard */
    double kT;             /* eV */
    uint64_t seed;
    int32_t status;        /* only systems with this status are drawn */
    int32_t nsys;
    int32_t entering_only; /* 1: only those that just arrived (MDF_SYS_ENTERED):
                            * an MD stage starting a relaxation's systems */
    int32_t dist;          /* MDF_VELOCITY_GAUSSIAN (0) or MDF_VELOCITY_UNIFORM (md.h) */
} mdf_velocity_args;

/* Whether a velocity task draws for system s. */
MDF_HD int mdf_velocity_wanted(const mdf_sys_info *s, int32_t status, int32_t entering_only)
{
    return s->status == status && (!entering_only || (s->flags & MDF_SYS_ENTERED));
}

/* Standard deviation of each velocity component of atom a: 0 for a frozen
 * atom, so that no draw moves it (a stage's entry velocities are drawn
 * after the freeze hook ran on that step's forces and velocities). */
MDF_HD double mdf_velocity_sd(const mdf_atom_info *a, double kT)
{
    return (a->flags & MDF_ATOM_FROZEN) ? 0.0 : sqrt(kT * a->inv_mass);
}

/* Whether a draw removes system s's total momentum: not for a lone atom
 * (that would stop it), nor when atoms are frozen (they push the others:
 * the momentum is not conserved, and mdf_dof counts 3 per free atom). */
MDF_HD int mdf_velocity_removes_momentum(const mdf_sys_info *s)
{
    return s->natoms > 1 && s->nfrozen == 0;
}

MDF_HD uint64_t mdf_velocity_key(uint64_t seed, int64_t id)
{
    return seed * 0x9E3779B97F4A7C15ull ^ (uint64_t)id;
}

/* Velocity of atom a (its input index within its system): normals drawn
 * for components (0,1) and (2, unused), or uniforms of the same variance
 * (dist = MDF_VELOCITY_UNIFORM, 1). */
MDF_HD void mdf_velocity_draw(uint64_t key, int64_t a, double sd, int32_t dist, double v[3])
{
    if (dist == 1) {
        /* From the same counters and stream words as the normals (a run
         * draws one or the other), shifted to (-1/2, 1/2]. */
        double u01[2], u2[2];
        mdf_uniform2(key, (uint64_t)a, 0u, u01);
        mdf_uniform2(key, (uint64_t)a, 1u, u2);
        const double width = sd * 3.4641016151377544; /* sqrt(12): the variance of U(-1/2, 1/2] is 1/12 */
        v[0] = width * (u01[0] - 0.5);
        v[1] = width * (u01[1] - 0.5);
        v[2] = width * (u2[0] - 0.5);
        return;
    }
    double g01[2], g2[2];
    mdf_gauss2(key, (uint64_t)a, 0u, g01);
    mdf_gauss2(key, (uint64_t)a, 1u, g2);
    v[0] = sd * g01[0];
    v[1] = sd * g01[1];
    v[2] = sd * g2[0];
}

#endif
