/* mdflow — the wrap hook: positions go back into the cell along periodic
 * directions, by whole lattice vectors. Trajectories are otherwise kept
 * unwrapped (continuous); wrapping is for output that wants atoms inside.
 * A wrapped atom has "moved" by a lattice vector for the neighbour lists,
 * so its system rebuilds its lists at the next step. */
#include <stdlib.h>
#include "../hook_internal.h"
#include "../../codelets/hooks/hooks_codelet.h"

static int wrap_submit(mdf_hook *h, const mdf_hook_ctx *c)
{
    (void)h;
    mdf_hooks_args a = {.work = c->sh->natoms, .nsys = c->sh->nsys, .status = c->status};
    return mdf_insert_hook_wrap(c->sh->pos, c->sh->sys, &a);
}

static const mdf_hook_ops wrap_ops = {.kind = "wrap", .submit = wrap_submit};

mdf_status mdf_hook_create_wrap(int64_t every, mdf_hook **out, mdf_error *err)
{
    return mdf_hook_new(&wrap_ops, "wrap", MDF_AFTER_POST_UPDATE, every, NULL, out, err);
}
