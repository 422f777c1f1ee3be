/* mdflow — FIRE exactly as ASE 3.22's (Bitzek et al. 2006): mass-less, its
 * velocities kept in the batch's velocity array, times in ASE's unit. */
#include <math.h>
#include "integrator.h"
#include "../codelets/optim/optim_codelet.h"
#include "../codelets/optim/optim_check.h"

static mdf_status fire_check(const mdf_dynamics_params *p, mdf_error *err)
{
    mdf_status st = mdf_optim_check_range("fire.dt", p->fire.dt, 0.0, MDF_OPEN, INFINITY, MDF_OPEN, err);
    if (st == MDF_OK) st = mdf_optim_check_range("fire.dtmax", p->fire.dtmax, 0.0, MDF_OPEN, INFINITY, MDF_OPEN, err);
    if (st == MDF_OK)
        st = mdf_optim_check_range("fire.maxstep", p->fire.maxstep, 0.0, MDF_OPEN, INFINITY, MDF_OPEN, err);
    if (st == MDF_OK && p->fire.nmin < 0)
        st = mdf_error_set(err, MDF_ERR_INVALID, "fire.nmin %d must be >= 0", p->fire.nmin);
    if (st == MDF_OK) st = mdf_optim_check_range("fire.finc", p->fire.finc, 1.0, MDF_CLOSED, INFINITY, MDF_OPEN, err);
    if (st == MDF_OK) st = mdf_optim_check_range("fire.fdec", p->fire.fdec, 0.0, MDF_OPEN, 1.0, MDF_OPEN, err);
    if (st == MDF_OK) st = mdf_optim_check_range("fire.astart", p->fire.astart, 0.0, MDF_CLOSED, 1.0, MDF_CLOSED, err);
    if (st == MDF_OK) st = mdf_optim_check_range("fire.fa", p->fire.fa, 0.0, MDF_OPEN, 1.0, MDF_CLOSED, err);
    return st;
}

static int fire_pre(const mdf_step_ctx *c)
{
    const mdf_shard *sh = c->sh;
    const mdf_dynamics_params *p = c->p;
    mdf_fire_args a = {.work = sh->natoms, .nsys = sh->nsys, .status = c->status, .dt = p->fire.dt,
                       .dtmax = p->fire.dtmax, .maxstep = p->fire.maxstep, .finc = p->fire.finc,
                       .fdec = p->fire.fdec, .astart = p->fire.astart, .fa = p->fire.fa, .nmin = p->fire.nmin};
    return mdf_insert_fire(sh->pos, sh->vel, sh->force, sh->sys, sh->res, sh->state, &a);
}

const mdf_integrator_ops mdf_fire = {
    .name = "fire",
    .summary = "FIRE optimiser, exactly as ASE's (Bitzek et al. 2006)",
    .flags = MDF_INTEG_OPTIMISER,
    .check = fire_check,
    .pre_update = fire_pre,
    .post_update = NULL,
};
