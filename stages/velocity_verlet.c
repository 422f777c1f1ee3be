/* mdflow — NVE velocity Verlet as a method. */
#include "velocity_verlet.h"
#include "../codelets/verlet/verlet_codelet.h"

/* The Verlet arguments of shard c (the insert functions set `work`). */
static mdf_vv_args vv_args(const mdf_method_ctx *c)
{
    return (mdf_vv_args){.dt = mdf_method_dt(c), .status = mdf_method_status(c), .nsys = mdf_method_nsys(c),
                         .natoms = mdf_method_natoms(c)};
}

int mdf_vv_pre_update(const mdf_method_ctx *c)
{
    mdf_vv_args a = vv_args(c);
    return mdf_insert_vv_pre(mdf_method_pos(c), mdf_method_vel(c), mdf_method_force(c), mdf_method_atoms(c),
                             mdf_method_sys(c), mdf_method_task_work(c), &a);
}

static int vv_post(const mdf_method_ctx *c)
{
    mdf_vv_args a = vv_args(c);
    return mdf_insert_vv_post(mdf_method_vel(c), mdf_method_force(c), mdf_method_atoms(c), mdf_method_sys(c),
                              mdf_method_res(c), mdf_method_task_work(c), &a);
}

int mdf_vv_post_pre(const mdf_method_ctx *post, const mdf_method_ctx *pre)
{
    (void)post; /* the same part: the same dt, status and shard */
    mdf_vv_args a = vv_args(pre);
    return mdf_insert_vv_post_pre(mdf_method_pos(pre), mdf_method_vel(pre), mdf_method_force(pre),
                                  mdf_method_atoms(pre), mdf_method_sys(pre), mdf_method_res(pre),
                                  mdf_method_task_work(pre), &a);
}

static const char *const vv_aliases[] = {"nve", "verlet", NULL};

const mdf_method mdf_velocity_verlet = {
    .api_version = MDFLOW_API_VERSION,
    .name = "velocity_verlet",
    .summary = "NVE velocity Verlet (symplectic, time-reversible)",
    .aliases = vv_aliases,
    .flags = MDF_METHOD_MOMENTUM,
    .pre_update = mdf_vv_pre_update,
    .post_update = vv_post,
};
