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
#include "thermostat.h"

_Static_assert(MDF_NHC_MAX == MDF_NHC_LEN, "chain length limit agrees with the kernel's state layout");

static mdf_status nhc_check(const mdf_dynamics_params *p, mdf_error *err)
{
    if (!(p->temperature_K > 0.0) || !isfinite(p->temperature_K))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "nose_hoover: temperature_K %g must be finite and > 0 K (the chain's masses are "
                             "proportional to it)",
                             p->temperature_K);
    if (!(p->nose_hoover.tau_fs > 0.0) || !isfinite(p->nose_hoover.tau_fs))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "nose_hoover: tau_fs %g must be finite and > 0 fs (typical 100 dt)",
                             p->nose_hoover.tau_fs);
    if (p->nose_hoover.chain < 1 || p->nose_hoover.chain > MDF_NHC_MAX)
        return mdf_error_set(err, MDF_ERR_INVALID, "nose_hoover: chain %d must be between 1 and %d",
                             p->nose_hoover.chain, MDF_NHC_MAX);
    return MDF_OK;
}

static mdf_thermo_args nhc_args(const mdf_step_ctx *c)
{
    const mdf_dynamics_params *p = c->p;
    return (mdf_thermo_args){.work = c->sh->natoms, .dt = c->dt, .kT = MDF_KB * p->temperature_K,
                             .tau = mdf_fs_to_internal(p->nose_hoover.tau_fs), .seed = p->seed,
                             .status = c->status, .nsys = c->sh->nsys, .chain = p->nose_hoover.chain,
                             .kind = MDF_THERMO_NHC, .momentum = mdf_integrator_momentum(&mdf_nose_hoover)};
}

static int nhc_pre(const mdf_step_ctx *c)
{
    mdf_thermo_handles h = mdf_thermo_handles_of(c->sh);
    mdf_thermo_args a = nhc_args(c);
    return mdf_insert_nhc_pre(&h, &a);
}

static int nhc_post(const mdf_step_ctx *c)
{
    mdf_thermo_handles h = mdf_thermo_handles_of(c->sh);
    mdf_thermo_args a = nhc_args(c);
    return mdf_insert_thermo_post(&h, &a);
}

const mdf_integrator_ops mdf_nose_hoover = {
    .name = "nose_hoover",
    .summary = "NVT Nose-Hoover chain, Trotter splitting as LAMMPS fix nvt (Martyna et al. 1996)",
    .flags = MDF_INTEG_MOMENTUM,
    .check = nhc_check,
    .pre_update = nhc_pre,
    .post_update = nhc_post,
};
