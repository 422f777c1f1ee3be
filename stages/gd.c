/* mdflow — gradient descent: x += step · F, the longest per-atom move
 * capped at maxstep (the whole system's step scaled, as ASE's
 * determine_step). */
#include <math.h>
#include "gd.h"
#include "../codelets/optim/optim_codelet.h"

#define POSITIVE (MDF_PARAM_MIN_OPEN | MDF_PARAM_MAX_OPEN) /* (0, inf): finite and > 0 */

static const mdf_param_def gd_defs[] = {
    MDF_PARAM_DOUBLE(mdf_gd_params, step, 0.01, 0.0, INFINITY, POSITIVE, "Å²/eV", "x += step F"),
    MDF_PARAM_DOUBLE(mdf_gd_params, maxstep, 0.2, 0.0, INFINITY, POSITIVE, "Å", "largest move of one atom"),
    MDF_PARAM_END};

static int gd_pre(const mdf_method_ctx *c)
{
    const mdf_gd_params *p = mdf_method_params(c);
    mdf_gd_args a = {.work = mdf_method_task_work(c), .nsys = mdf_method_nsys(c), .status = mdf_method_status(c),
                     .natoms = mdf_method_natoms(c),
                     .step = p->step, .maxstep = p->maxstep};
    return mdf_insert_gd(mdf_method_pos(c), mdf_method_force(c), mdf_method_sys(c), mdf_method_res(c), &a);
}

const mdf_method mdf_gd = {
    .api_version = MDFLOW_API_VERSION,
    .name = "gd",
    .summary = "gradient descent, x += step F with the longest atom move capped at maxstep",
    .flags = MDF_METHOD_OPTIMISER,
    .params = gd_defs,
    .params_size = sizeof(mdf_gd_params),
    .pre_update = gd_pre,
    .post_update = NULL,
};
