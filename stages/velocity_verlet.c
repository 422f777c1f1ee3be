/* mdflow — NVE velocity Verlet as an integrator. */
#include "integrator.h"
#include "../codelets/verlet/verlet_codelet.h"

static int vv_pre(const mdf_step_ctx *c)
{
    const mdf_shard *sh = c->sh;
    mdf_vv_args a = {.dt = c->dt, .status = c->status, .nsys = sh->nsys};
    return mdf_insert_vv_pre(sh->pos, sh->vel, sh->force, sh->atoms, sh->sys, sh->natoms, &a);
}

static int vv_post(const mdf_step_ctx *c)
{
    const mdf_shard *sh = c->sh;
    mdf_vv_args a = {.dt = c->dt, .status = c->status, .nsys = sh->nsys};
    return mdf_insert_vv_post(sh->vel, sh->force, sh->atoms, sh->sys, sh->res, sh->natoms, &a);
}

const mdf_integrator_ops mdf_velocity_verlet = {
    .name = "velocity_verlet",
    .summary = "NVE velocity Verlet (symplectic, time-reversible)",
    .flags = MDF_INTEG_MOMENTUM,
    .pre_update = vv_pre,
    .post_update = vv_post,
};
