/* mdflow — FIRE exactly as ASE 3.22's (Bitzek et al. 2006): mass-less, its
 * velocities kept in the batch's velocity array, times in ASE's unit. */
#include <math.h>
#include <stdint.h>
#include "fire.h"
#include "../codelets/optim/optim_codelet.h"

#define POSITIVE (MDF_PARAM_MIN_OPEN | MDF_PARAM_MAX_OPEN) /* (0, inf): finite and > 0 */
#define T_ASE "ASE time units" /* sqrt(amu Å²/eV) = 10.18 fs */

static const mdf_param_def fire_defs[] = {
    MDF_PARAM_DOUBLE(mdf_fire_params, dt, 0.1, 0.0, INFINITY, POSITIVE, T_ASE, "initial time step"),
    MDF_PARAM_DOUBLE(mdf_fire_params, dtmax, 1.0, 0.0, INFINITY, POSITIVE, T_ASE, "largest time step"),
    MDF_PARAM_DOUBLE(mdf_fire_params, maxstep, 0.2, 0.0, INFINITY, POSITIVE, "Å", "largest move of one atom"),
    MDF_PARAM_INT(mdf_fire_params, nmin, 5, 0, INT32_MAX, "", "downhill steps before dt grows"),
    MDF_PARAM_DOUBLE(mdf_fire_params, finc, 1.1, 1.0, INFINITY, MDF_PARAM_MAX_OPEN, "", "dt growth factor"),
    MDF_PARAM_DOUBLE(mdf_fire_params, fdec, 0.5, 0.0, 1.0, POSITIVE, "", "dt cut after an uphill step"),
    MDF_PARAM_DOUBLE(mdf_fire_params, astart, 0.1, 0.0, 1.0, 0u, "", "initial mixing alpha"),
    MDF_PARAM_DOUBLE(mdf_fire_params, fa, 0.99, 0.0, 1.0, MDF_PARAM_MIN_OPEN, "", "alpha decay factor"),
    MDF_PARAM_END};

static int fire_pre(const mdf_method_ctx *c)
{
    const mdf_fire_params *p = mdf_method_params(c);
    mdf_fire_args a = {.work = mdf_method_task_work(c), .nsys = mdf_method_nsys(c), .status = mdf_method_status(c),
                       .natoms = mdf_method_natoms(c),
                       .dt = p->dt, .dtmax = p->dtmax, .maxstep = p->maxstep, .finc = p->finc, .fdec = p->fdec,
                       .astart = p->astart, .fa = p->fa, .nmin = p->nmin};
    return mdf_insert_fire(mdf_method_pos(c), mdf_method_vel(c), mdf_method_force(c), mdf_method_sys(c),
                           mdf_method_res(c), mdf_method_state(c), &a);
}

const mdf_method mdf_fire = {
    .api_version = MDFLOW_API_VERSION,
    .name = "fire",
    .summary = "FIRE optimiser, exactly as ASE's (Bitzek et al. 2006)",
    .flags = MDF_METHOD_OPTIMISER,
    .params = fire_defs,
    .params_size = sizeof(mdf_fire_params),
    .pre_update = fire_pre,
    .post_update = NULL,
};
