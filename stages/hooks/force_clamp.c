/* mdflow — the force clamp hook: forces longer than a limit are scaled down
 * to it, keeping their direction, right after the model (a guard against
 * the huge forces of overlapping atoms in a starting structure). */
#include <math.h>
#include <stdlib.h>
#include "../hook_internal.h"
#include "../../codelets/hooks/hooks_codelet.h"
#include "mdflow/extension.h"

typedef struct clamp_impl {
    double max_force;
} clamp_impl;

static int clamp_submit(mdf_hook *h, const mdf_hook_ctx *c)
{
    const clamp_impl *impl = (const clamp_impl *)h->impl;
    mdf_hooks_args a = mdf_hooks_args_of(c);
    a.max_force = impl->max_force;
    return mdf_insert_hook_force_clamp(c->sh->force, c->sh->sys, &a);
}

static const mdf_hook_ops clamp_ops = {.kind = "force_clamp", .submit = clamp_submit, .destroy_impl = free};

mdf_status mdf_hook_create_force_clamp(double max_force, mdf_hook **out, mdf_error *err)
{
    *out = NULL;
    if (!(max_force > 0.0) || !isfinite(max_force))
        return mdf_error_set(err, MDF_ERR_INVALID, "the force clamp's limit must be positive and finite (got %g eV/Å)",
                             max_force);
    clamp_impl *impl = calloc(1, sizeof *impl);
    if (!impl) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the force clamp hook");
    impl->max_force = max_force;
    return mdf_hook_new(&clamp_ops, "force_clamp", MDF_AFTER_COMPUTE, 1, impl, out, err);
}

/* ---- by name ---------------------------------------------------------------------- */

typedef struct clamp_params {
    double max_force;
} clamp_params;

static const mdf_param_def clamp_defs[] = {
    MDF_PARAM_DOUBLE(clamp_params, max_force, 10.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN, "eV/Å",
                     "longest force kept; longer ones are scaled down"),
    MDF_PARAM_END};

static mdf_status clamp_create_named(const void *params, mdf_hook **out, mdf_error *err)
{
    return mdf_hook_create_force_clamp(((const clamp_params *)params)->max_force, out, err);
}

const mdf_hook_def mdf_hook_def_force_clamp = {MDFLOW_API_VERSION, "force_clamp",
                                               "scales every force longer than max_force down, keeping its direction",
                                               clamp_defs, sizeof(clamp_params), clamp_create_named};
