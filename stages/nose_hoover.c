/* mdflow — NVT Nosé–Hoover chain (Martyna, Klein & Tuckerman, J. Chem. Phys.
 * 97, 2635 (1992); Martyna, Tuckerman, Tobias & Klein, Mol. Phys. 87, 1117
 * (1996)) with the Trotter factorisation LAMMPS's fix nvt uses:
 *   pre_update   chain(dt/2) [scales velocities], B(dt/2), A(dt)
 *   post_update  B(dt/2), chain(dt/2)
 * Chain of `chain` thermostats, masses Q_1 = Nf kT τ², Q_j = kT τ² (LAMMPS's
 * choice: τ is the period of the thermostat's oscillation), Nf = 3N - 3
 * (velocity scaling keeps the total momentum), or 3 per free atom when some
 * atoms are frozen (mdf_dof). The chain variables η_j, η̇_j
 * live in the system's state block and restart at zero when the system
 * enters the stage.
 *
 * res.extra_energy = Σ Q_j η̇_j²/2 + Nf kT η_1 + Σ_{j>1} kT η_j, so that
 * potential + kinetic + extra_energy is the extended system's conserved
 * energy (fluctuating as O(dt²), no systematic drift for a stable dt). */
#include <math.h>
#include "mdflow/units.h"
#include "nose_hoover.h"
#include "thermostat.h"

_Static_assert(MDF_NHC_MAX == MDF_NHC_LEN, "chain length limit agrees with the kernel's state layout");

static const mdf_param_def nhc_defs[] = {
    MDF_PARAM_DOUBLE(mdf_nose_hoover_params, tau_fs, 100.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN | MDF_PARAM_MAX_OPEN,
                     "fs", "period of the thermostat's oscillation (typical 100 dt)"),
    MDF_PARAM_INT(mdf_nose_hoover_params, chain, 3, 1, MDF_NHC_MAX, "", "number of thermostats in the chain"),
    MDF_PARAM_END};

static mdf_thermo_args nhc_args(const mdf_method_ctx *c)
{
    const mdf_nose_hoover_params *p = mdf_method_params(c);
    mdf_thermo_args a = mdf_thermo_args_of(c, &mdf_nose_hoover);
    a.tau = mdf_fs_to_internal(p->tau_fs);
    a.chain = p->chain;
    a.kind = MDF_THERMO_NHC;
    return a;
}

static int nhc_pre(const mdf_method_ctx *c)
{
    mdf_thermo_handles h = mdf_thermo_handles_of(c);
    mdf_thermo_args a = nhc_args(c);
    return mdf_insert_nhc_pre(&h, &a);
}

static int nhc_post(const mdf_method_ctx *c)
{
    mdf_thermo_handles h = mdf_thermo_handles_of(c);
    mdf_thermo_args a = nhc_args(c);
    return mdf_insert_thermo_post(&h, &a);
}

static const char *const nhc_aliases[] = {"nose-hoover", "nhc", NULL};

/* temperature_K > 0: the chain's masses are proportional to it. */
const mdf_method mdf_nose_hoover = {
    .api_version = MDFLOW_API_VERSION,
    .name = "nose_hoover",
    .summary = "NVT Nose-Hoover chain, Trotter splitting as LAMMPS fix nvt (Martyna et al. 1996)",
    .aliases = nhc_aliases,
    .flags = MDF_METHOD_MOMENTUM | MDF_METHOD_TEMPERATURE | MDF_METHOD_POSITIVE_TEMPERATURE,
    .params = nhc_defs,
    .params_size = sizeof(mdf_nose_hoover_params),
    .pre_update = nhc_pre,
    .post_update = nhc_post,
};
