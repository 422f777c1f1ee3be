/* mdflow — gradient descent: x += step · F, the longest per-atom move
 * capped at maxstep (the whole system's step scaled, as ASE's
 * determine_step). */
#include <math.h>
#include "integrator.h"
#include "../codelets/optim/optim_codelet.h"
#include "../codelets/optim/optim_check.h"

static mdf_status gd_check(const mdf_dynamics_params *p, mdf_error *err)
{
    mdf_status st = mdf_optim_check_range("gd.step", p->gd.step, 0.0, MDF_OPEN, INFINITY, MDF_OPEN, err);
    if (st == MDF_OK) st = mdf_optim_check_range("gd.maxstep", p->gd.maxstep, 0.0, MDF_OPEN, INFINITY, MDF_OPEN, err);
    return st;
}

static int gd_pre(const mdf_step_ctx *c)
{
    const mdf_shard *sh = c->sh;
    mdf_gd_args a = {.work = sh->natoms, .nsys = sh->nsys, .status = c->status, .step = c->p->gd.step,
                     .maxstep = c->p->gd.maxstep};
    return mdf_insert_gd(sh->pos, sh->force, sh->sys, sh->res, &a);
}

const mdf_integrator_ops mdf_gd = {
    .name = "gd",
    .summary = "gradient descent, x += step F with the longest atom move capped at maxstep",
    .flags = MDF_INTEG_OPTIMISER,
    .check = gd_check,
    .pre_update = gd_pre,
    .post_update = NULL,
};
