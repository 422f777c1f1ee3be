/* mdflow — FIRE 2.0 after Guénolé et al. (Comput. Mater. Sci. 175, 109584
 * (2020), Algorithm 2: semi-implicit Euler, half step back, initial delay),
 * mass-less like ASE's FIRE, one force evaluation per step (none after the
 * half step back), mixing from |v| after the kick, moves capped at maxstep.
 * Not LAMMPS's min_style fire, which re-evaluates the forces after the half
 * step back and mixes with |v| before the kick: the exact steps and the
 * differences are in codelets/optim/optim_kernel.h. */
#include <math.h>
#include "integrator.h"
#include "../codelets/optim/optim_codelet.h"
#include "../codelets/optim/optim_check.h"

static mdf_status fire2_check(const mdf_dynamics_params *p, mdf_error *err)
{
    mdf_status st = mdf_optim_check_range("fire2.dt", p->fire2.dt, 0.0, MDF_OPEN, INFINITY, MDF_OPEN, err);
    if (st == MDF_OK)
        st = mdf_optim_check_range("fire2.dtmax", p->fire2.dtmax, 0.0, MDF_OPEN, INFINITY, MDF_OPEN, err);
    if (st == MDF_OK) /* dt never drops below dtmin nor grows beyond dtmax */
        st = mdf_optim_check_range("fire2.dtmin", p->fire2.dtmin, 0.0, MDF_OPEN, p->fire2.dtmax, MDF_CLOSED, err);
    if (st == MDF_OK)
        st = mdf_optim_check_range("fire2.maxstep", p->fire2.maxstep, 0.0, MDF_OPEN, INFINITY, MDF_OPEN, err);
    if (st == MDF_OK && p->fire2.nmin < 0)
        st = mdf_error_set(err, MDF_ERR_INVALID, "fire2.nmin %d must be >= 0", p->fire2.nmin);
    if (st == MDF_OK)
        st = mdf_optim_check_range("fire2.finc", p->fire2.finc, 1.0, MDF_CLOSED, INFINITY, MDF_OPEN, err);
    if (st == MDF_OK) st = mdf_optim_check_range("fire2.fdec", p->fire2.fdec, 0.0, MDF_OPEN, 1.0, MDF_OPEN, err);
    if (st == MDF_OK)
        st = mdf_optim_check_range("fire2.astart", p->fire2.astart, 0.0, MDF_CLOSED, 1.0, MDF_CLOSED, err);
    if (st == MDF_OK) st = mdf_optim_check_range("fire2.fa", p->fire2.fa, 0.0, MDF_OPEN, 1.0, MDF_CLOSED, err);
    return st;
}

static int fire2_pre(const mdf_step_ctx *c)
{
    const mdf_shard *sh = c->sh;
    const mdf_dynamics_params *p = c->p;
    mdf_fire2_args a = {.work = sh->natoms, .nsys = sh->nsys, .status = c->status, .dt = p->fire2.dt,
                        .dtmax = p->fire2.dtmax, .dtmin = p->fire2.dtmin, .maxstep = p->fire2.maxstep,
                        .finc = p->fire2.finc, .fdec = p->fire2.fdec, .astart = p->fire2.astart,
                        .fa = p->fire2.fa, .nmin = p->fire2.nmin};
    return mdf_insert_fire2(sh->pos, sh->vel, sh->force, sh->sys, sh->res, sh->state, &a);
}

const mdf_integrator_ops mdf_fire2 = {
    .name = "fire2",
    .summary = "FIRE 2.0 (Guenole et al. 2020), mass-less semi-implicit Euler; no force evaluation after the "
               "half step back, mixing from |v| after the kick (not LAMMPS's min_style fire)",
    .flags = MDF_INTEG_OPTIMISER,
    .check = fire2_check,
    .pre_update = fire2_pre,
    .post_update = NULL,
};
