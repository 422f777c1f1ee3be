/* mdflow — FIRE 2.0 after Guénolé et al. (Comput. Mater. Sci. 175, 109584
 * (2020), Algorithm 2: semi-implicit Euler, half step back, initial delay),
 * mass-less like ASE's FIRE, one force evaluation per step (none after the
 * half step back), mixing from |v| after the kick, moves capped at maxstep.
 * Not LAMMPS's min_style fire, which re-evaluates the forces after the half
 * step back and mixes with |v| before the kick: the exact steps and the
 * differences are in codelets/optim/optim_kernel.h. */
#include <math.h>
#include <stdint.h>
#include "fire2.h"
#include "../codelets/optim/optim_codelet.h"

#define POSITIVE (MDF_PARAM_MIN_OPEN | MDF_PARAM_MAX_OPEN) /* (0, inf): finite and > 0 */
#define T_ASE "ASE time units" /* sqrt(amu Å²/eV) = 10.18 fs */

static const mdf_param_def fire2_defs[] = {
    MDF_PARAM_DOUBLE(mdf_fire2_params, dt, 0.1, 0.0, INFINITY, POSITIVE, T_ASE, "initial time step"),
    MDF_PARAM_DOUBLE(mdf_fire2_params, dtmax, 1.0, 0.0, INFINITY, POSITIVE, T_ASE, "largest time step"),
    MDF_PARAM_DOUBLE(mdf_fire2_params, dtmin, 2e-3, 0.0, INFINITY, POSITIVE, T_ASE,
                     "smallest time step (at most dtmax)"),
    MDF_PARAM_DOUBLE(mdf_fire2_params, maxstep, 0.2, 0.0, INFINITY, POSITIVE, "Å", "largest move of one atom"),
    MDF_PARAM_INT(mdf_fire2_params, nmin, 20, 0, INT32_MAX, "", "downhill steps before dt grows (N_delay)"),
    MDF_PARAM_DOUBLE(mdf_fire2_params, finc, 1.1, 1.0, INFINITY, MDF_PARAM_MAX_OPEN, "", "dt growth factor"),
    MDF_PARAM_DOUBLE(mdf_fire2_params, fdec, 0.5, 0.0, 1.0, POSITIVE, "", "dt cut after an uphill step"),
    MDF_PARAM_DOUBLE(mdf_fire2_params, astart, 0.25, 0.0, 1.0, 0u, "", "initial mixing alpha"),
    MDF_PARAM_DOUBLE(mdf_fire2_params, fa, 0.99, 0.0, 1.0, MDF_PARAM_MIN_OPEN, "", "alpha decay factor"),
    MDF_PARAM_END};

/* dt never drops below dtmin nor grows beyond dtmax. */
static mdf_status fire2_check(const void *params, mdf_error *err)
{
    const mdf_fire2_params *p = params;
    if (p->dtmin <= p->dtmax) return MDF_OK;
    return mdf_error_set(err, MDF_ERR_INVALID,
                         "parameter dtmin of method fire2: %g must be <= dtmax (%g): the time step stays within "
                         "[dtmin, dtmax]", p->dtmin, p->dtmax);
}

static int fire2_pre(const mdf_method_ctx *c)
{
    const mdf_fire2_params *p = mdf_method_params(c);
    mdf_fire2_args a = {.work = mdf_method_task_work(c), .nsys = mdf_method_nsys(c), .status = mdf_method_status(c),
                        .natoms = mdf_method_natoms(c),
                        .dt = p->dt, .dtmax = p->dtmax, .dtmin = p->dtmin, .maxstep = p->maxstep, .finc = p->finc,
                        .fdec = p->fdec, .astart = p->astart, .fa = p->fa, .nmin = p->nmin};
    return mdf_insert_fire2(mdf_method_pos(c), mdf_method_vel(c), mdf_method_force(c), mdf_method_sys(c),
                            mdf_method_res(c), mdf_method_state(c), &a);
}

const mdf_method mdf_fire2 = {
    .api_version = MDFLOW_API_VERSION,
    .name = "fire2",
    .summary = "FIRE 2.0 (Guenole et al. 2020), mass-less semi-implicit Euler; no force evaluation after the "
               "half step back, mixing from |v| after the kick (not LAMMPS's min_style fire)",
    .flags = MDF_METHOD_OPTIMISER,
    .params = fire2_defs,
    .params_size = sizeof(mdf_fire2_params),
    .check = fire2_check,
    .pre_update = fire2_pre,
    .post_update = NULL,
};
