/* mdflow — the freeze hook: atoms flagged MDF_ATOM_FROZEN get zero force
 * and velocity right after the model, so every integrator and optimiser
 * leaves them where they are (ASE's FixAtoms). It also fires at step 0,
 * after the first evaluation, so the first half-kick already sees zeros. */
#include <stdlib.h>
#include "../hook_internal.h"
#include "../../codelets/hooks/hooks_codelet.h"
#include "mdflow/extension.h"

static int freeze_submit(mdf_hook *h, const mdf_hook_ctx *c)
{
    (void)h;
    mdf_hooks_args a = mdf_hooks_args_of(c);
    return mdf_insert_hook_freeze(c->sh->force, c->sh->vel, c->sh->atoms, c->sh->sys, &a);
}

static const mdf_hook_ops freeze_ops = {.kind = "freeze", .submit = freeze_submit};

mdf_status mdf_hook_create_freeze(mdf_hook **out, mdf_error *err)
{
    return mdf_hook_new(&freeze_ops, "freeze", MDF_AFTER_COMPUTE, 1, NULL, out, err);
}

/* ---- by name (no parameters) ------------------------------------------------------ */

static mdf_status freeze_create_named(const void *params, mdf_hook **out, mdf_error *err)
{
    (void)params;
    return mdf_hook_create_freeze(out, err);
}

const mdf_hook_def mdf_hook_def_freeze = {MDFLOW_API_VERSION, "freeze",
                                          "keeps atoms flagged frozen in place (zero forces and velocities)", NULL, 0,
                                          freeze_create_named};
