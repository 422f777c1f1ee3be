/* mdflow — the wrap hook: positions go back into the cell along periodic
 * directions, by whole lattice vectors. Trajectories are otherwise kept
 * unwrapped (continuous); wrapping is for output that wants atoms inside.
 * A wrapped atom has "moved" by a lattice vector for the neighbour lists,
 * so its system rebuilds its lists at the next step. */
#include <stdlib.h>
#include "../hook_internal.h"
#include "../../codelets/hooks/hooks_codelet.h"
#include "mdflow/extension.h"

static int wrap_submit(mdf_hook *h, const mdf_hook_ctx *c)
{
    (void)h;
    mdf_hooks_args a = mdf_hooks_args_of(c);
    return mdf_insert_hook_wrap(c->sh->pos, c->sh->sys, &a);
}

static const mdf_hook_ops wrap_ops = {.kind = "wrap", .submit = wrap_submit};

mdf_status mdf_hook_create_wrap(int64_t every, mdf_hook **out, mdf_error *err)
{
    return mdf_hook_new(&wrap_ops, "wrap", MDF_AFTER_POST_UPDATE, every, NULL, out, err);
}

/* ---- by name ---------------------------------------------------------------------- */

typedef struct wrap_params {
    int32_t every;
} wrap_params;

static const mdf_param_def wrap_defs[] = {
    MDF_PARAM_INT(wrap_params, every, 100, 1, INT32_MAX, "steps", "wrap every N steps"), MDF_PARAM_END};

static mdf_status wrap_create_named(const void *params, mdf_hook **out, mdf_error *err)
{
    return mdf_hook_create_wrap(((const wrap_params *)params)->every, out, err);
}

const mdf_hook_def mdf_hook_def_wrap = {MDFLOW_API_VERSION, "wrap",
                                        "wraps positions into the cell along periodic directions", wrap_defs,
                                        sizeof(wrap_params), wrap_create_named};
