/* mdflow — L-BFGS exactly as ASE 3.22's LBFGS (no line search): history of
 * `memory` (s, y, rho) in a per-shard workspace, H0 = 1/alpha, damping, the
 * longest per-atom step capped at maxstep. See codelets/optim/optim_kernel.h. */
#include <math.h>
#include "lbfgs.h"
#include "../codelets/optim/optim_codelet.h"

#define POSITIVE (MDF_PARAM_MIN_OPEN | MDF_PARAM_MAX_OPEN) /* (0, inf): finite and > 0 */

/* memory: far beyond any useful history; keeps the workspace size sane.
 * maxstep: ASE refuses more than 1 Å too. */
static const mdf_param_def lbfgs_defs[] = {
    MDF_PARAM_INT(mdf_lbfgs_params, memory, 100, 0, MDF_LBFGS_MAX_MEMORY, "", "history length"),
    MDF_PARAM_DOUBLE(mdf_lbfgs_params, alpha, 70.0, 0.0, INFINITY, POSITIVE, "eV/Å²", "initial Hessian guess"),
    MDF_PARAM_DOUBLE(mdf_lbfgs_params, damping, 1.0, 0.0, INFINITY, POSITIVE, "", "step scale"),
    MDF_PARAM_DOUBLE(mdf_lbfgs_params, maxstep, 0.2, 0.0, 1.0, MDF_PARAM_MIN_OPEN, "Å", "largest move of one atom"),
    MDF_PARAM_END};

static size_t lbfgs_work_bytes(const void *params, int32_t atom_cap, int32_t sys_cap)
{
    const mdf_lbfgs_params *p = params;
    mdf_lbfgs_layout l = mdf_lbfgs_layout_of(p->memory, atom_cap, sys_cap);
    return (size_t)l.total * sizeof(double);
}

static int lbfgs_pre(const mdf_method_ctx *c)
{
    const mdf_lbfgs_params *p = mdf_method_params(c);
    mdf_lbfgs_args a = {.work = mdf_method_task_work(c), .nsys = mdf_method_nsys(c), .status = mdf_method_status(c),
                        .natoms = mdf_method_natoms(c),
                        .memory = p->memory, .atom_cap = mdf_method_atom_cap(c), .sys_cap = mdf_method_sys_cap(c),
                        .max_natoms = mdf_method_max_natoms(c), .alpha = p->alpha, .damping = p->damping,
                        .maxstep = p->maxstep};
    return mdf_insert_lbfgs(mdf_method_pos(c), mdf_method_force(c), mdf_method_sys(c), mdf_method_res(c),
                            mdf_method_state(c), mdf_method_work(c), &a);
}

static const char *const lbfgs_aliases[] = {"l-bfgs", NULL};

const mdf_method mdf_lbfgs = {
    .api_version = MDFLOW_API_VERSION,
    .name = "lbfgs",
    .summary = "L-BFGS optimiser, exactly as ASE's LBFGS (no line search)",
    .aliases = lbfgs_aliases,
    .flags = MDF_METHOD_OPTIMISER,
    .params = lbfgs_defs,
    .params_size = sizeof(mdf_lbfgs_params),
    .work_bytes = lbfgs_work_bytes,
    .pre_update = lbfgs_pre,
    .post_update = NULL,
};
