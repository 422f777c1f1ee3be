/* mdflow — variable-cell relaxation: FIRE and L-BFGS exactly as ASE's (the
 * fixed-cell methods' arithmetic, optim_kernel.h) on the atoms and the cell
 * together, in the form of ASE's FrechetCellFilter with scalar_pressure
 * (codelets/optim/cell_kernel.h has the equations).
 *
 * The stress comes from the virial the model computes every step
 * (MDF_METHOD_NEEDS_VIRIAL): σ = -W/V. A stage running one of these methods
 * judges MDF_CRITERION_SMAX, max |σ_ij + P δ_ij|, against the method's
 * pressure_GPa (stages/stage.c reads the parameter by name).
 *
 * Every step changes every relaxing system's cell, so its neighbour lists
 * are rebuilt every step (the list code rebuilds on any cell change, see
 * npt.c on the cost). Cells that collapse below the list radius / 16 are
 * flagged and stop the run with an error naming the system. Systems not
 * periodic in x, y and z are refused when the run starts. */
#include <math.h>
#include "cell_relax.h"
#include "lbfgs.h"
#include "mdflow/units.h"
#include "../codelets/optim/optim_codelet.h"

#define POSITIVE (MDF_PARAM_MIN_OPEN | MDF_PARAM_MAX_OPEN) /* (0, inf): finite and > 0 */
#define FINITE (MDF_PARAM_MIN_OPEN | MDF_PARAM_MAX_OPEN)
#define T_ASE "ASE time units" /* sqrt(amu Å²/eV) = 10.18 fs */

#define CELL_PARAMS(block)                                                                                        \
    MDF_PARAM_DOUBLE(block, pressure_GPa, 0.0, -INFINITY, INFINITY, FINITE, "GPa",                             \
                     "target hydrostatic pressure (finite; may be negative)"),                                  \
    MDF_PARAM_DOUBLE(block, exp_cell_factor, 0.0, 0.0, INFINITY, MDF_PARAM_MAX_OPEN, "",                       \
                     "FrechetCellFilter's exp_cell_factor (0: the system's atom count, as ASE)")

static const mdf_param_def fire_cell_defs[] = {
    MDF_PARAM_DOUBLE(mdf_fire_cell_params, dt, 0.1, 0.0, INFINITY, POSITIVE, T_ASE, "initial time step"),
    MDF_PARAM_DOUBLE(mdf_fire_cell_params, dtmax, 1.0, 0.0, INFINITY, POSITIVE, T_ASE, "largest time step"),
    MDF_PARAM_DOUBLE(mdf_fire_cell_params, maxstep, 0.2, 0.0, INFINITY, POSITIVE, "Å",
                     "largest step (norm over atoms and cell rows)"),
    MDF_PARAM_INT(mdf_fire_cell_params, nmin, 5, 0, INT32_MAX, "", "downhill steps before dt grows"),
    MDF_PARAM_DOUBLE(mdf_fire_cell_params, finc, 1.1, 1.0, INFINITY, MDF_PARAM_MAX_OPEN, "", "dt growth factor"),
    MDF_PARAM_DOUBLE(mdf_fire_cell_params, fdec, 0.5, 0.0, 1.0, POSITIVE, "", "dt cut after an uphill step"),
    MDF_PARAM_DOUBLE(mdf_fire_cell_params, astart, 0.1, 0.0, 1.0, 0u, "", "initial mixing alpha"),
    MDF_PARAM_DOUBLE(mdf_fire_cell_params, fa, 0.99, 0.0, 1.0, MDF_PARAM_MIN_OPEN, "", "alpha decay factor"),
    CELL_PARAMS(mdf_fire_cell_params),
    MDF_PARAM_END};

static const mdf_param_def lbfgs_cell_defs[] = {
    MDF_PARAM_INT(mdf_lbfgs_cell_params, memory, 100, 0, MDF_LBFGS_MAX_MEMORY, "", "history length"),
    MDF_PARAM_DOUBLE(mdf_lbfgs_cell_params, alpha, 70.0, 0.0, INFINITY, POSITIVE, "eV/Å²", "initial Hessian guess"),
    MDF_PARAM_DOUBLE(mdf_lbfgs_cell_params, damping, 1.0, 0.0, INFINITY, POSITIVE, "", "step scale"),
    MDF_PARAM_DOUBLE(mdf_lbfgs_cell_params, maxstep, 0.2, 0.0, 1.0, MDF_PARAM_MIN_OPEN, "Å",
                     "largest step of one row (atom or cell row)"),
    CELL_PARAMS(mdf_lbfgs_cell_params),
    MDF_PARAM_END};

static mdf_cell_common cell_common(const mdf_method_ctx *c, double pressure_GPa, double factor)
{
    return (mdf_cell_common){.pressure = pressure_GPa / MDF_EV_PER_A3_IN_GPA, .cell_factor = factor,
                             .r_list = mdf_method_list_radius(c)};
}

static int fire_cell_pre(const mdf_method_ctx *c)
{
    const mdf_fire_cell_params *p = mdf_method_params(c);
    mdf_cell_fire_args a = {.work = mdf_method_task_work(c), .nsys = mdf_method_nsys(c), .status = mdf_method_status(c),
                            .fire = {.dt = p->dt, .dtmax = p->dtmax, .maxstep = p->maxstep, .finc = p->finc,
                                     .fdec = p->fdec, .astart = p->astart, .fa = p->fa, .nmin = p->nmin},
                            .cell = cell_common(c, p->pressure_GPa, p->exp_cell_factor)};
    return mdf_insert_cell_fire(mdf_method_pos(c), mdf_method_vel(c), mdf_method_force(c), mdf_method_sys(c),
                                mdf_method_res(c), mdf_method_state(c), &a);
}

static size_t lbfgs_cell_work_bytes(const void *params, int32_t atom_cap, int32_t sys_cap)
{
    const mdf_lbfgs_cell_params *p = params;
    mdf_lbfgs_layout l = mdf_lbfgs_cell_layout_of(p->memory, atom_cap, sys_cap);
    return (size_t)l.total * sizeof(double);
}

static int lbfgs_cell_pre(const mdf_method_ctx *c)
{
    const mdf_lbfgs_cell_params *p = mdf_method_params(c);
    mdf_cell_lbfgs_args a = {
        .work = mdf_method_task_work(c), .nsys = mdf_method_nsys(c), .status = mdf_method_status(c),
        .lbfgs = {.memory = p->memory, .atom_cap = mdf_method_atom_cap(c), .sys_cap = mdf_method_sys_cap(c),
                  .max_natoms = mdf_method_max_natoms(c), .alpha = p->alpha, .damping = p->damping,
                  .maxstep = p->maxstep},
        .cell = cell_common(c, p->pressure_GPa, p->exp_cell_factor)};
    return mdf_insert_cell_lbfgs(mdf_method_pos(c), mdf_method_force(c), mdf_method_sys(c), mdf_method_res(c),
                                 mdf_method_state(c), mdf_method_work(c), &a);
}

static const char *const fire_cell_aliases[] = {"fire-cell", NULL};
static const char *const lbfgs_cell_aliases[] = {"lbfgs-cell", "l-bfgs-cell", NULL};

const mdf_method mdf_fire_cell = {
    .api_version = MDFLOW_API_VERSION,
    .name = "fire_cell",
    .summary = "FIRE on atoms and cell (ASE's FIRE + FrechetCellFilter, target pressure_GPa)",
    .aliases = fire_cell_aliases,
    .flags = MDF_METHOD_OPTIMISER | MDF_METHOD_NEEDS_VIRIAL | MDF_METHOD_CELL,
    .params = fire_cell_defs,
    .params_size = sizeof(mdf_fire_cell_params),
    .pre_update = fire_cell_pre,
    .post_update = NULL,
};

const mdf_method mdf_lbfgs_cell = {
    .api_version = MDFLOW_API_VERSION,
    .name = "lbfgs_cell",
    .summary = "L-BFGS on atoms and cell (ASE's LBFGS + FrechetCellFilter, target pressure_GPa)",
    .aliases = lbfgs_cell_aliases,
    .flags = MDF_METHOD_OPTIMISER | MDF_METHOD_NEEDS_VIRIAL | MDF_METHOD_CELL,
    .params = lbfgs_cell_defs,
    .params_size = sizeof(mdf_lbfgs_cell_params),
    .work_bytes = lbfgs_cell_work_bytes,
    .pre_update = lbfgs_cell_pre,
    .post_update = NULL,
};
