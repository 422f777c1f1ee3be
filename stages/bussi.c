/* mdflow — NVT stochastic velocity rescaling (Bussi, Donadio & Parrinello,
 * J. Chem. Phys. 126, 014101 (2007)): velocity Verlet, then at the end of
 * each step the velocities are scaled by α so that the kinetic energy takes
 * the value the paper's appendix draws,
 *   K' = K + (1-c)(K̄ (R1² + Σ_{i=2}^{Nf} R_i²)/Nf - K) + 2 R1 sqrt(c(1-c) K K̄/Nf),
 * c = exp(-dt/τ), K̄ = Nf kT/2, Nf = 3N - 3 (the rescaling keeps the total
 * momentum, zero after a velocity draw), or 3 per free atom when some atoms
 * are frozen (mdf_dof). The Nf normals are drawn one by one
 * (O(N) Philox draws, exact for every Nf). The canonical distribution is
 * sampled up to the O(dt²) error of velocity Verlet itself.
 *
 * res.extra_energy accumulates minus the kinetic energy the rescalings added
 * (the paper's effective energy), so potential + kinetic + extra_energy
 * drifts only by the integration error. A system with exactly zero kinetic
 * energy has nothing to rescale and stays cold: draw velocities first. */
#include <math.h>
#include "mdflow/units.h"
#include "bussi.h"
#include "velocity_verlet.h"
#include "thermostat.h"

static const mdf_param_def bussi_defs[] = {
    MDF_PARAM_DOUBLE(mdf_bussi_params, tau_fs, 100.0, 0.0, INFINITY, MDF_PARAM_MIN_OPEN | MDF_PARAM_MAX_OPEN, "fs",
                     "relaxation time of the kinetic energy (typical 10 to 1000 dt)"),
    MDF_PARAM_END};

static int bussi_post(const mdf_method_ctx *c)
{
    const mdf_bussi_params *p = mdf_method_params(c);
    mdf_thermo_handles h = mdf_thermo_handles_of(c);
    mdf_thermo_args a = mdf_thermo_args_of(c, &mdf_bussi);
    a.c1 = exp(-mdf_method_dt_fs(c) / p->tau_fs);
    a.kind = MDF_THERMO_BUSSI;
    return mdf_insert_thermo_post(&h, &a);
}

static const char *const bussi_aliases[] = {"csvr", NULL};

const mdf_method mdf_bussi = {
    .api_version = MDFLOW_API_VERSION,
    .name = "bussi",
    .summary = "NVT stochastic velocity rescaling, CSVR (Bussi, Donadio & Parrinello 2007)",
    .aliases = bussi_aliases,
    .flags = MDF_METHOD_MOMENTUM | MDF_METHOD_TEMPERATURE,
    .params = bussi_defs,
    .params_size = sizeof(mdf_bussi_params),
    .pre_update = mdf_vv_pre_update, /* Bussi's first half is Verlet's */
    .post_update = bussi_post,
};
