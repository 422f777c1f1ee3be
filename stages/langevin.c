/* mdflow — NVT Langevin dynamics, BAOAB splitting (Leimkuhler & Matthews,
 * Appl. Math. Res. Express 2013, 34): per step
 *   pre_update   B(dt/2) A(dt/2) O(dt) A(dt/2)
 *   post_update  B(dt/2) with the new forces
 * O: v = c1 v + sqrt((1 - c1²) kT/m) ξ, c1 = exp(-γ dt), exact for any γ dt.
 * BAOAB samples configurations with an O(dt²) error that vanishes for
 * harmonic forces, and the velocities it reports (after the final B) with an
 * O(dt²) error too.
 *
 * The noise acts on every atom independently, so the total momentum is
 * thermalised too: the kinetic energy averages 3N kT/2, not (3N-3) kT/2, and
 * the method does not carry MDF_INTEG_MOMENTUM: its temperatures count 3N
 * degrees of freedom (3 per free atom; mdf_dof). Frozen atoms get no noise.
 *
 * res.extra_energy accumulates minus the kinetic energy the O steps added,
 * so potential + kinetic + extra_energy changes only by the splitting error
 * of the deterministic B and A steps: a drift monitor on it checks the time
 * step, as for NVE. */
#include <math.h>
#include "mdflow/units.h"
#include "thermostat.h"

static mdf_status langevin_check(const mdf_dynamics_params *p, mdf_error *err)
{
    if (!(p->temperature_K >= 0.0) || !isfinite(p->temperature_K))
        return mdf_error_set(err, MDF_ERR_INVALID, "langevin: temperature_K %g must be finite and >= 0 K",
                             p->temperature_K);
    if (!(p->langevin.friction_per_fs > 0.0) || !isfinite(p->langevin.friction_per_fs))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "langevin: friction_per_fs %g must be finite and > 0 (1/fs; typical 0.001 to 0.1; "
                             "for no friction use velocity_verlet)",
                             p->langevin.friction_per_fs);
    return MDF_OK;
}

static mdf_thermo_args langevin_args(const mdf_step_ctx *c)
{
    const mdf_dynamics_params *p = c->p;
    return (mdf_thermo_args){.work = c->sh->natoms, .dt = c->dt, .kT = MDF_KB * p->temperature_K,
                             .c1 = exp(-p->langevin.friction_per_fs * p->dt_fs), .seed = p->seed,
                             .status = c->status, .nsys = c->sh->nsys, .kind = MDF_THERMO_LANGEVIN,
                             .momentum = mdf_integrator_momentum(&mdf_langevin)};
}

static int langevin_pre(const mdf_step_ctx *c)
{
    mdf_thermo_handles h = mdf_thermo_handles_of(c->sh);
    mdf_thermo_args a = langevin_args(c);
    return mdf_insert_langevin_pre(&h, &a);
}

static int langevin_post(const mdf_step_ctx *c)
{
    mdf_thermo_handles h = mdf_thermo_handles_of(c->sh);
    mdf_thermo_args a = langevin_args(c);
    return mdf_insert_thermo_post(&h, &a);
}

const mdf_integrator_ops mdf_langevin = {
    .name = "langevin",
    .summary = "NVT Langevin dynamics, BAOAB splitting (Leimkuhler & Matthews 2013)",
    .check = langevin_check,
    .pre_update = langevin_pre,
    .post_update = langevin_post,
};
