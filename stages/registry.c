/* mdflow — the registries: one line per integrator or optimiser, one per
 * model. */
#include <string.h>
#include "integrator.h"
#include "mdflow/stage.h"
#include "mdflow/model.h"
#include "../dataflow/model_internal.h"
#include "../codelets/lj/lj_codelet.h"

static const mdf_integrator_ops *const integrators[] = {
    &mdf_velocity_verlet,
    &mdf_langevin,
    &mdf_nose_hoover,
    &mdf_bussi,
    &mdf_npt,
    &mdf_fire,
    &mdf_fire2,
    &mdf_gd,
    &mdf_lbfgs,
};

/* Names users also type (the ensemble names of `mdflow md --ensemble`). */
static const struct {
    const char *alias, *name;
} aliases[] = {
    {"nve", "velocity_verlet"}, {"verlet", "velocity_verlet"}, {"nvt-langevin", "langevin"},
    {"nose-hoover", "nose_hoover"}, {"nhc", "nose_hoover"}, {"csvr", "bussi"}, {"l-bfgs", "lbfgs"},
};


const mdf_integrator_ops *mdf_find_integrator(const char *name)
{
    for (size_t k = 0; k < sizeof aliases / sizeof aliases[0]; k++)
        if (strcmp(aliases[k].alias, name) == 0) name = aliases[k].name;
    for (size_t k = 0; k < sizeof integrators / sizeof integrators[0]; k++)
        if (strcmp(integrators[k]->name, name) == 0) return integrators[k];
    return NULL;
}

int32_t mdf_integrator_number(const mdf_integrator_ops *ops)
{
    for (size_t k = 0; k < sizeof integrators / sizeof integrators[0]; k++)
        if (integrators[k] == ops) return (int32_t)k + 1;
    return 0;
}

size_t mdf_integrator_count(void) { return sizeof integrators / sizeof integrators[0]; }

const char *mdf_integrator_name(size_t k) { return k < mdf_integrator_count() ? integrators[k]->name : NULL; }

const char *mdf_integrator_summary(size_t k) { return k < mdf_integrator_count() ? integrators[k]->summary : NULL; }

int mdf_integrator_is_optimiser(const char *name)
{
    const mdf_integrator_ops *o = name ? mdf_find_integrator(name) : NULL;
    return o ? (o->flags & MDF_INTEG_OPTIMISER) != 0 : -1;
}

int mdf_integrator_changes_cell(const char *name)
{
    const mdf_integrator_ops *o = name ? mdf_find_integrator(name) : NULL;
    return o ? (o->flags & MDF_INTEG_CELL) != 0 : -1;
}


extern const mdf_hook_def mdf_hook_def_log, mdf_hook_def_nan_check, mdf_hook_def_force_clamp, mdf_hook_def_drift,
    mdf_hook_def_freeze, mdf_hook_def_wrap, mdf_hook_def_timing, mdf_hook_def_thermo;
extern const mdf_sink_def mdf_sink_def_host, mdf_sink_def_device, mdf_sink_def_hdf5, mdf_sink_def_h5md;

/* The built-in extensions, registered through the public calls: one line
 * each. */
mdf_status mdf_register_builtins(mdf_error *err)
{
    mdf_status st = mdf_register_model(&mdf_lj_model_def, err);
    const mdf_hook_def *const hook_defs[] = {&mdf_hook_def_log,    &mdf_hook_def_nan_check, &mdf_hook_def_force_clamp,
                                             &mdf_hook_def_drift,  &mdf_hook_def_freeze,    &mdf_hook_def_wrap,
                                             &mdf_hook_def_timing, &mdf_hook_def_thermo};
    for (size_t k = 0; st == MDF_OK && k < sizeof hook_defs / sizeof hook_defs[0]; k++)
        st = mdf_register_hook(hook_defs[k], err);
    const mdf_sink_def *const sink_defs[] = {&mdf_sink_def_host, &mdf_sink_def_device, &mdf_sink_def_hdf5,
                                             &mdf_sink_def_h5md};
    for (size_t k = 0; st == MDF_OK && k < sizeof sink_defs / sizeof sink_defs[0]; k++)
        st = mdf_register_sink(sink_defs[k], err);
    return st;
}
