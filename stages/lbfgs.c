/* mdflow — L-BFGS exactly as ASE 3.22's LBFGS (no line search): history of
 * `memory` (s, y, rho) in a per-shard workspace, H0 = 1/alpha, damping, the
 * longest per-atom step capped at maxstep. See codelets/optim/optim_kernel.h. */
#include <math.h>
#include "integrator.h"
#include "../codelets/optim/optim_codelet.h"
#include "../codelets/optim/optim_check.h"

/* Far beyond any useful history; keeps the workspace size sane. */
#define MDF_LBFGS_MAX_MEMORY 10000

static mdf_status lbfgs_check(const mdf_dynamics_params *p, mdf_error *err)
{
    if (p->lbfgs.memory < 0 || p->lbfgs.memory > MDF_LBFGS_MAX_MEMORY)
        return mdf_error_set(err, MDF_ERR_INVALID, "lbfgs.memory %d must be in [0, %d]", p->lbfgs.memory,
                             MDF_LBFGS_MAX_MEMORY);
    mdf_status st = mdf_optim_check_range("lbfgs.alpha", p->lbfgs.alpha, 0.0, MDF_OPEN, INFINITY, MDF_OPEN, err);
    if (st == MDF_OK)
        st = mdf_optim_check_range("lbfgs.damping", p->lbfgs.damping, 0.0, MDF_OPEN, INFINITY, MDF_OPEN, err);
    if (st == MDF_OK) /* ASE refuses more than 1 A too */
        st = mdf_optim_check_range("lbfgs.maxstep", p->lbfgs.maxstep, 0.0, MDF_OPEN, 1.0, MDF_CLOSED, err);
    return st;
}

static size_t lbfgs_work_bytes(const mdf_dynamics_params *p, int32_t atom_cap, int32_t sys_cap)
{
    mdf_lbfgs_layout l = mdf_lbfgs_layout_of(p->lbfgs.memory, atom_cap, sys_cap);
    return (size_t)l.total * sizeof(double);
}

static int lbfgs_pre(const mdf_step_ctx *c)
{
    const mdf_shard *sh = c->sh;
    const mdf_dynamics_params *p = c->p;
    mdf_lbfgs_args a = {.work = sh->natoms, .nsys = sh->nsys, .status = c->status, .memory = p->lbfgs.memory,
                        .atom_cap = sh->atom_cap, .sys_cap = sh->sys_cap, .max_natoms = sh->max_natoms,
                        .alpha = p->lbfgs.alpha,
                        .damping = p->lbfgs.damping, .maxstep = p->lbfgs.maxstep};
    return mdf_insert_lbfgs(sh->pos, sh->force, sh->sys, sh->res, sh->state, c->work, &a);
}

const mdf_integrator_ops mdf_lbfgs = {
    .name = "lbfgs",
    .summary = "L-BFGS optimiser, exactly as ASE's LBFGS (no line search)",
    .flags = MDF_INTEG_OPTIMISER,
    .check = lbfgs_check,
    .work_bytes = lbfgs_work_bytes,
    .pre_update = lbfgs_pre,
    .post_update = NULL,
};
