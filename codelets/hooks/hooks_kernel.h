/* mdflow — arithmetic of the built-in hooks that touch per-atom data (NaN
 * detector, force clamp, freeze, wrap), shared by the CPU and CUDA
 * implementations. Every function works on one atom or one system; the
 * callers visit only the stage's systems. */
#ifndef MDF_HOOKS_KERNEL_H
#define MDF_HOOKS_KERNEL_H

#include "../common/mdf_kernel_common.h"

/* Status of a quarantined system: the value of MDF_STATUS_FAILED in
 * mdflow/hook.h (kernels include no public header; nan_check.c checks that
 * the two agree). */
#define MDF_HOOKS_STATUS_FAILED (-1)
/* mdf_hooks_args.action of the NaN detector (mdf_nan_action). */
#define MDF_HOOKS_NAN_STOP 0
#define MDF_HOOKS_NAN_QUARANTINE 1

/* One task of a built-in hook over one shard. */
typedef struct mdf_hooks_args {
    int64_t work;        /* atoms of the stage's systems (performance-model key) */
    int32_t nsys;        /* systems in the shard */
    int32_t status;      /* the stage's systems: the only ones touched */
    int32_t action;      /* NaN detector: MDF_HOOKS_NAN_* */
    int32_t natoms;      /* atoms in the shard: a CUDA task's per-atom range */
    double max_force;    /* force clamp: eV/Å */
} mdf_hooks_args;

/* ---- NaN detector ------------------------------------------------------------ */

MDF_HD int mdf_hooks_nonfinite3(const double *v)
{
    return !(isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]));
}

/* MDF_SYS_NONFINITE_* bits of one atom's position, velocity and force. */
MDF_HD int32_t mdf_hooks_atom_nonfinite(const double *x, const double *v, const double *f)
{
    return (mdf_hooks_nonfinite3(x) ? MDF_SYS_NONFINITE_POS : 0) |
           (mdf_hooks_nonfinite3(v) ? MDF_SYS_NONFINITE_VEL : 0) |
           (mdf_hooks_nonfinite3(f) ? MDF_SYS_NONFINITE_FORCE : 0);
}

/* Records what the atoms of a system showed (`found`, OR of the atoms' bits)
 * plus its energies in the system's flags, replacing the previous findings,
 * and quarantines it when asked. Returns the bits set. */
MDF_HD int32_t mdf_hooks_nan_finish(mdf_sys_info *s, const mdf_sys_result *r, int32_t found, int32_t action)
{
    if (!(isfinite(r->energy) && isfinite(r->kinetic))) found |= MDF_SYS_NONFINITE_ENERGY;
    s->flags = (s->flags & ~MDF_SYS_NONFINITE) | found;
    if (found && action == MDF_HOOKS_NAN_QUARANTINE) {
        s->status = MDF_HOOKS_STATUS_FAILED;
        s->stage_step = 0; /* a status move starts a stage count afresh */
    }
    return found;
}

/* ---- force clamp -------------------------------------------------------------- */

/* Scales f down to length max_force when it is longer, keeping its
 * direction. A NaN force is left alone (the NaN detector reports it). */
MDF_HD void mdf_hooks_clamp_force(double *f, double max_force)
{
    double n2 = f[0] * f[0] + f[1] * f[1] + f[2] * f[2];
    if (!(n2 > max_force * max_force)) return;
    double n;
    if (isinf(n2)) { /* finite components whose squares overflow: scale first */
        double m = fmax(fabs(f[0]), fmax(fabs(f[1]), fabs(f[2])));
        double a = f[0] / m, b = f[1] / m, c = f[2] / m;
        n = m * sqrt(a * a + b * b + c * c);
    } else {
        n = sqrt(n2);
    }
    double s = max_force / n;
    f[0] *= s;
    f[1] *= s;
    f[2] *= s;
}

/* ---- freeze -------------------------------------------------------------------- */

MDF_HD void mdf_hooks_freeze_atom(double *f, double *v, int32_t atom_flags)
{
    if (!(atom_flags & MDF_ATOM_FROZEN)) return;
    f[0] = f[1] = f[2] = 0.0;
    v[0] = v[1] = v[2] = 0.0;
}

/* ---- wrap ------------------------------------------------------------------------ */

/* Moves x into the cell along the system's periodic directions by whole
 * lattice vectors (fractional s -= floor(s)). Subtracting n·a rather than
 * rebuilding x from s leaves atoms already inside bit for bit unchanged and
 * the others exact to one rounding, so an unwrapped trajectory is recovered
 * by adding lattice vectors back. */
MDF_HD void mdf_hooks_wrap_atom(double *x, const mdf_sys_info *s)
{
    double u[3];
    mdf_vec_mat(x, s->inv_cell, u);
    for (int k = 0; k < 3; k++) {
        if (!s->pbc[k]) continue;
        double n = floor(u[k]);
        if (n == 0.0 || !isfinite(n)) continue;
        x[0] -= n * s->cell[3 * k];
        x[1] -= n * s->cell[3 * k + 1];
        x[2] -= n * s->cell[3 * k + 2];
    }
}

#endif
