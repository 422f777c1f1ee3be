/* mdflow — NPT: isotropic stochastic cell rescaling (Bernetti & Bussi,
 * J. Chem. Phys. 153, 114107 (2020)) with the Bussi thermostat (time tau_t).
 * Per step:
 *   pre_update   ε = ln V moves by
 *                  dε = -(β_T/τ_p)(P0 - P) dt + sqrt(2 kT β_T dt/(V τ_p)) R
 *                with P = (2K + tr W)/(3V) at the current positions and
 *                velocities (the virial of the last evaluation: the method
 *                asks the model for it every step); positions and the cell
 *                scale by μ = exp(dε/3), inv_cell by 1/μ, velocities by 1/μ;
 *                then velocity Verlet's first half.
 *   post_update  B(dt/2), Bussi rescaling with c = exp(-dt/τ_T).
 * On the kT/V term of the paper's equation: see mdf_npt_deps
 * (thermostat_kernel.h); taken with the Itô reading used here it cancels,
 * and the sampled volume distribution is the isothermal–isobaric one. The
 * kick after the rescaling uses the forces of the unscaled positions (as
 * GROMACS's C-rescale does): an O(dε dt) splitting error, far below the
 * sampling noise for τ_p ≫ dt.
 *
 * Cost: the cell changes every step, so the neighbour lists of every NPT
 * system are rebuilt every step (the list code rebuilds on any cell change).
 * That is correct but not cheap: for LJ argon with an 8.5 Å cutoff on two
 * CPU workers, NPT runs 7× slower than NVT Bussi for 864-atom crystals and
 * 11× for 256 atoms, whose cells are too small for three bins per direction.
 * (An isotropic rescaling keeps fractional coordinates, so lists could stay
 * valid while |μ - 1| r_list plus the displacements stays below skin/2: an
 * optimisation for the list code.) The half-width limit (cutoff + skin <=
 * half of every periodic width) is checked when the stage starts, and after
 * every rescaling by the task itself (mdf_npt_check_cell): a cell that
 * shrinks below it is flagged, and the stage stops the run with an error
 * naming the system, its width and the cutoff at its next check (every
 * check_interval steps, and at the end). Leave margin for the cell to
 * shrink.
 *
 * Frozen atoms (freeze hook) are rescaled with the cell like every atom:
 * their fractional coordinates stay fixed.
 *
 * Systems that are not periodic in all three directions have no volume to
 * couple: they run at constant volume with the Bussi thermostat alone
 * (NVT); the library says nothing, the mdflow program warns once per run
 * (mdf_integrator_changes_cell tells a caller which methods do this).
 * Periodic slabs (pbc in two directions) are in that case: an isotropic
 * barostat would couple the vacuum gap.
 *
 * res.extra_energy = P0 V minus the energy the thermostat and the rescalings
 * added (ΔK exactly, ΔU ≈ -tr W dε/3 to first order), Bernetti & Bussi's
 * effective energy: potential + kinetic + extra_energy drifts only by the
 * integration error. */
#include <math.h>
#include "mdflow/units.h"
#include "npt.h"
#include "thermostat.h"

/* 1 bar in eV/Å³. */
#define MDF_BAR_IN_EV_PER_A3 (1e-4 / MDF_EV_PER_A3_IN_GPA)

#define POSITIVE (MDF_PARAM_MIN_OPEN | MDF_PARAM_MAX_OPEN) /* (0, inf): finite and > 0 */

static const mdf_param_def npt_defs[] = {
    MDF_PARAM_DOUBLE(mdf_npt_params, pressure_bar, 1.0, -INFINITY, INFINITY, MDF_PARAM_MIN_OPEN | MDF_PARAM_MAX_OPEN,
                     "bar", "target pressure (finite; may be negative)"),
    MDF_PARAM_DOUBLE(mdf_npt_params, tau_p_fs, 1000.0, 0.0, INFINITY, POSITIVE, "fs",
                     "barostat relaxation time (typical 1000; at least 100 dt)"),
    MDF_PARAM_DOUBLE(mdf_npt_params, compressibility_per_bar, 4.5e-5, 0.0, INFINITY, POSITIVE, "1/bar",
                     "isothermal compressibility (water 4.5e-5, metals ~1e-6; only the barostat's speed depends "
                     "on it)"),
    MDF_PARAM_DOUBLE(mdf_npt_params, tau_t_fs, 100.0, 0.0, INFINITY, POSITIVE, "fs",
                     "Bussi thermostat time (typical 100)"),
    MDF_PARAM_END};

static mdf_thermo_args npt_args(const mdf_method_ctx *c)
{
    const mdf_npt_params *p = mdf_method_params(c);
    mdf_thermo_args a = mdf_thermo_args_of(c, &mdf_npt);
    a.c1 = exp(-mdf_method_dt_fs(c) / p->tau_t_fs);
    a.p0 = p->pressure_bar * MDF_BAR_IN_EV_PER_A3;
    a.beta_t = p->compressibility_per_bar / MDF_BAR_IN_EV_PER_A3;
    a.tau_p = mdf_fs_to_internal(p->tau_p_fs);
    a.r_list = mdf_method_list_radius(c);
    a.kind = MDF_THERMO_NPT;
    return a;
}

static int npt_pre(const mdf_method_ctx *c)
{
    mdf_thermo_handles h = mdf_thermo_handles_of(c);
    mdf_thermo_args a = npt_args(c);
    return mdf_insert_npt_pre(&h, &a);
}

static int npt_post(const mdf_method_ctx *c)
{
    mdf_thermo_handles h = mdf_thermo_handles_of(c);
    mdf_thermo_args a = npt_args(c);
    return mdf_insert_thermo_post(&h, &a);
}

/* temperature_K > 0: the volume noise is proportional to kT. */
const mdf_method mdf_npt = {
    .api_version = MDFLOW_API_VERSION,
    .name = "npt",
    .summary = "NPT: isotropic stochastic cell rescaling (Bernetti & Bussi 2020) + Bussi thermostat",
    .flags = MDF_METHOD_NEEDS_VIRIAL | MDF_METHOD_MOMENTUM | MDF_METHOD_CELL | MDF_METHOD_TEMPERATURE |
             MDF_METHOD_POSITIVE_TEMPERATURE,
    .params = npt_defs,
    .params_size = sizeof(mdf_npt_params),
    .pre_update = npt_pre,
    .post_update = npt_post,
};
