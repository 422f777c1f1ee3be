/* mdflow — convergence of one system, shared by CPU and CUDA.
 *
 * Criteria are AND-combined and thresholds inclusive: fmax <= f_thr,
 * |E - E_prev| <= de_thr, stage steps >= steps_thr, and the stress's
 * distance from the target pressure max |σ_ij + P δ_ij| <= smax_thr (σ =
 * -virial/V: the virial must be that of the evaluation just checked, which
 * the variable-cell optimisers make sure of with MDF_METHOD_NEEDS_VIRIAL). A system with no
 * previous energy (E_prev NaN) fails the energy criterion. A step budget
 * makes a system leave unconverged, flagged MDF_SYS_BUDGET_EXIT. One task
 * serves every sub-stage of a fused stage, each with its own criteria. */
#ifndef MDF_CONVERGE_KERNEL_H
#define MDF_CONVERGE_KERNEL_H

#include "../common/mdf_kernel_common.h"

#define MDF_CRIT_FMAX 1
#define MDF_CRIT_DE 2
#define MDF_CRIT_STEPS 4
#define MDF_CRIT_SMAX 8

/* The most sub-stages one convergence task serves (a fused stage). */
#define MDF_CONVERGE_PARTS 8

/* The criteria of one (sub-)stage. */
typedef struct mdf_converge_part {
    int32_t mask;          /* MDF_CRIT_* in force; 0: no criterion */
    int32_t target;        /* where its converged (or budget-expired) systems go */
    double fmax_thr;       /* eV/Å */
    double de_thr;         /* eV */
    int64_t steps_thr;     /* the STEPS criterion */
    int64_t budget;        /* > 0: leave after this many steps even unconverged
                            * (flagged MDF_SYS_BUDGET_EXIT) */
    double smax_thr;       /* eV/Å³: max |σ_ij + P δ_ij| (the SMAX criterion) */
    double pressure;       /* eV/Å³: P of that criterion (the method's pressure_GPa) */
} mdf_converge_part;

typedef struct mdf_converge_args {
    int64_t work;          /* atoms in the shard */
    int32_t nsys;
    int32_t lo;            /* the first sub-stage's status: a system with status
                            * lo + i is checked against part[i] */
    int32_t nparts;
    int32_t apply;         /* 0: only measure fmax and the energy */
    int32_t only_entered;  /* 1: only systems flagged ENTERED (the step 0 of
                            * systems a refill just brought in; the others'
                            * energy history stays untouched) */
    int32_t pad_;
    mdf_converge_part part[MDF_CONVERGE_PARTS];
} mdf_converge_args;

/* The part that checks a system, or NULL if it is not checked this time. */
MDF_HD const mdf_converge_part *mdf_converge_part_of(const mdf_converge_args *a, const mdf_sys_info *s)
{
    int32_t i = s->status - a->lo;
    if (i < 0 || i >= a->nparts) return (const mdf_converge_part *)0;
    if (a->only_entered && !(s->flags & MDF_SYS_ENTERED)) return (const mdf_converge_part *)0;
    return &a->part[i];
}

MDF_HD int mdf_cell_periodic(const mdf_sys_info *s) { return s->pbc[0] && s->pbc[1] && s->pbc[2]; }

MDF_HD double mdf_m3_det(const double *a)
{
    return a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) +
           a[2] * (a[3] * a[7] - a[4] * a[6]);
}

/* The stress's distance from the target pressure P (eV/Å³): with σ = -W/V
 * (W the virial, eV; ASE's sign: positive under tension), max over the
 * nine components of |σ_ij + P δ_ij|, NaN winning. A system that is not
 * periodic in x, y and z has no volume: 0. */
MDF_HD double mdf_stress_residual(const mdf_sys_info *s, const mdf_sys_result *r, double pressure)
{
    if (!mdf_cell_periodic(s)) return 0.0;
    double V = fabs(mdf_m3_det(s->cell));
    double m = 0.0;
    for (int k = 0; k < 9; k++) {
        double d = fabs(-r->virial[k] / V + ((k % 4 == 0) ? pressure : 0.0));
        if (d > m || d != d) m = d;
    }
    return m;
}

/* Squared norm of one atom's force. */
MDF_HD double mdf_force_norm2(const double *f)
{
    return f[0] * f[0] + f[1] * f[1] + f[2] * f[2];
}

/* Applies the criteria of part p to a system whose largest squared force
 * norm is fmax2: records fmax and the energy, and moves the system when all
 * hold, or when its step budget is spent (flagged). Returns 1 if it moved. */
MDF_HD int mdf_converge_system(mdf_sys_info *s, mdf_sys_result *r, mdf_sys_state *st, double fmax2,
                               const mdf_converge_part *p, int32_t apply)
{
    double fmax = sqrt(fmax2);
    double de = fabs(r->energy - r->energy_prev); /* NaN without a previous energy */
    s->flags &= ~MDF_SYS_ENTERED; /* its (new) stage has checked it */
    r->fmax = fmax;
    r->energy_prev = r->energy;
    if (!apply) return 0;
    int ok = p->mask != 0;
    if (p->mask & MDF_CRIT_FMAX) ok = ok && fmax <= p->fmax_thr;
    if (p->mask & MDF_CRIT_DE) ok = ok && de <= p->de_thr;
    if (p->mask & MDF_CRIT_STEPS) ok = ok && s->stage_step >= p->steps_thr;
    if (p->mask & MDF_CRIT_SMAX) ok = ok && mdf_stress_residual(s, r, p->pressure) <= p->smax_thr;
    int expired = !ok && p->budget > 0 && s->stage_step >= p->budget;
    if (!ok && !expired) return 0;
    s->status = p->target;
    s->flags |= MDF_SYS_CONVERGED_NOW | MDF_SYS_ENTERED;
    if (expired) s->flags |= MDF_SYS_BUDGET_EXIT;
    s->stage_step = 0;
    /* The next stage starts its own state afresh. */
    for (int k = 0; k < MDF_STATE_DOUBLES; k++) st->d[k] = 0.0;
    for (int k = 0; k < MDF_STATE_INTS; k++) st->n[k] = 0;
    st->owner = 0;
    st->method = 0;
    return 1;
}

#endif
