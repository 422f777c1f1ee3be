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
#include "../codelets/verlet/verlet_codelet.h"
#include "thermostat.h"

static mdf_status bussi_check(const mdf_dynamics_params *p, mdf_error *err)
{
    if (!(p->temperature_K >= 0.0) || !isfinite(p->temperature_K))
        return mdf_error_set(err, MDF_ERR_INVALID, "bussi: temperature_K %g must be finite and >= 0 K",
                             p->temperature_K);
    if (!(p->bussi.tau_fs > 0.0) || !isfinite(p->bussi.tau_fs))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "bussi: tau_fs %g must be finite and > 0 fs (typical 10 to 1000 dt)", p->bussi.tau_fs);
    return MDF_OK;
}

static int bussi_pre(const mdf_step_ctx *c)
{
    const mdf_shard *sh = c->sh;
    mdf_vv_args a = {.dt = c->dt, .status = c->status, .nsys = sh->nsys};
    return mdf_insert_vv_pre(sh->pos, sh->vel, sh->force, sh->atoms, sh->sys, sh->natoms, &a);
}

static int bussi_post(const mdf_step_ctx *c)
{
    const mdf_shard *sh = c->sh;
    const mdf_dynamics_params *p = c->p;
    mdf_thermo_handles h = mdf_thermo_handles_of(sh);
    mdf_thermo_args a = {.work = sh->natoms, .dt = c->dt, .kT = MDF_KB * p->temperature_K,
                         .c1 = exp(-p->dt_fs / p->bussi.tau_fs), .seed = p->seed, .status = c->status,
                         .nsys = sh->nsys, .kind = MDF_THERMO_BUSSI,
                         .momentum = mdf_integrator_momentum(&mdf_bussi)};
    return mdf_insert_thermo_post(&h, &a);
}

const mdf_integrator_ops mdf_bussi = {
    .name = "bussi",
    .summary = "NVT stochastic velocity rescaling, CSVR (Bussi, Donadio & Parrinello 2007)",
    .flags = MDF_INTEG_MOMENTUM,
    .check = bussi_check,
    .pre_update = bussi_pre,
    .post_update = bussi_post,
};
