/* mdflow — convergence of one system, shared by CPU and CUDA.
 *
 * Criteria are AND-combined and thresholds inclusive: fmax <= f_thr,
 * |E - E_prev| <= de_thr, stage steps >= steps_thr. A system with no
 * previous energy (E_prev NaN) fails the energy criterion. */
#ifndef MDF_CONVERGE_KERNEL_H
#define MDF_CONVERGE_KERNEL_H

#include "../common/mdf_kernel_common.h"

#define MDF_CRIT_FMAX 1
#define MDF_CRIT_DE 2
#define MDF_CRIT_STEPS 4

typedef struct mdf_converge_args {
    int64_t work;          /* atoms in the shard */
    int32_t nsys;
    int32_t status;        /* the stage's systems */
    int32_t target;        /* where converged systems go */
    int32_t mask;          /* MDF_CRIT_* in force; 0: only measure fmax */
    double fmax_thr;       /* eV/Å */
    double de_thr;         /* eV */
    int64_t steps_thr;
} mdf_converge_args;

/* Squared norm of one atom's force. */
MDF_HD double mdf_force_norm2(const double *f)
{
    return f[0] * f[0] + f[1] * f[1] + f[2] * f[2];
}

/* Applies the criteria to a system whose largest squared force norm is
 * fmax2: records fmax and the energy, and moves the system when all hold.
 * Returns 1 if it moved. */
MDF_HD int mdf_converge_system(mdf_sys_info *s, mdf_sys_result *r, mdf_sys_state *st, double fmax2,
                               const mdf_converge_args *a)
{
    double fmax = sqrt(fmax2);
    double de = fabs(r->energy - r->energy_prev); /* NaN without a previous energy */
    r->fmax = fmax;
    r->energy_prev = r->energy;
    if (a->mask == 0) return 0;
    int ok = 1;
    if (a->mask & MDF_CRIT_FMAX) ok = ok && fmax <= a->fmax_thr;
    if (a->mask & MDF_CRIT_DE) ok = ok && de <= a->de_thr;
    if (a->mask & MDF_CRIT_STEPS) ok = ok && s->stage_step >= a->steps_thr;
    if (!ok) return 0;
    s->status = a->target;
    s->flags |= MDF_SYS_CONVERGED_NOW;
    s->stage_step = 0;
    /* The next stage starts its own state afresh. */
    for (int k = 0; k < MDF_STATE_DOUBLES; k++) st->d[k] = 0.0;
    for (int k = 0; k < MDF_STATE_INTS; k++) st->n[k] = 0;
    st->owner = 0;
    st->method = 0;
    return 1;
}

#endif
