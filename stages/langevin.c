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
 * the method does not carry MDF_METHOD_MOMENTUM: its temperatures count 3N
 * degrees of freedom (3 per free atom; mdf_dof). Frozen atoms get no noise.
 *
 * res.extra_energy accumulates minus the kinetic energy the O steps added,
 * so potential + kinetic + extra_energy changes only by the splitting error
 * of the deterministic B and A steps: a drift monitor on it checks the time
 * step, as for NVE. */
#include <math.h>
#include "mdflow/units.h"
#include "langevin.h"
#include "thermostat.h"

static const mdf_param_def langevin_defs[] = {
    MDF_PARAM_DOUBLE(mdf_langevin_params, friction_per_fs, 0.01, 0.0, INFINITY,
                     MDF_PARAM_MIN_OPEN | MDF_PARAM_MAX_OPEN, "1/fs",
                     "friction gamma (typical 0.001 to 0.1; for none use velocity_verlet)"),
    MDF_PARAM_END};

static mdf_thermo_args langevin_args(const mdf_method_ctx *c)
{
    const mdf_langevin_params *p = mdf_method_params(c);
    mdf_thermo_args a = mdf_thermo_args_of(c, &mdf_langevin);
    a.c1 = exp(-p->friction_per_fs * mdf_method_dt_fs(c));
    a.kind = MDF_THERMO_LANGEVIN;
    return a;
}

static int langevin_pre(const mdf_method_ctx *c)
{
    mdf_thermo_handles h = mdf_thermo_handles_of(c);
    mdf_thermo_args a = langevin_args(c);
    return mdf_insert_langevin_pre(&h, &a);
}

static int langevin_post(const mdf_method_ctx *c)
{
    mdf_thermo_handles h = mdf_thermo_handles_of(c);
    mdf_thermo_args a = langevin_args(c);
    return mdf_insert_thermo_post(&h, &a);
}

static const char *const langevin_aliases[] = {"nvt-langevin", NULL};

/* temperature_K >= 0: at 0 K the noise vanishes and the friction damps. */
const mdf_method mdf_langevin = {
    .api_version = MDFLOW_API_VERSION,
    .name = "langevin",
    .summary = "NVT Langevin dynamics, BAOAB splitting (Leimkuhler & Matthews 2013)",
    .aliases = langevin_aliases,
    .flags = MDF_METHOD_TEMPERATURE,
    .params = langevin_defs,
    .params_size = sizeof(mdf_langevin_params),
    .pre_update = langevin_pre,
    .post_update = langevin_post,
};
