/* mdflow — the built-in extensions, registered through the public calls a
 * plugin makes (mdflow/extension.h): one line each. A new method is a file
 * pair (stages/NAME.c and .h, its codelets under codelets/) and one line
 * below; the registry order is the methods' numbering (mdf_sys_state.method,
 * checkpoints), so new lines go at the end of their kind.
 *
 * Also the public listing of methods (mdflow/stage.h), over the registry:
 * plugins' methods included. */
#include <string.h>
#include "method_internal.h"
#include "mdflow/stage.h"
#include "mdflow/model.h"
#include "../dataflow/model_internal.h"
#include "../codelets/lj/lj_codelet.h"
#include "../codelets/eam/eam_codelet.h"
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifdef MDF_HAVE_KIM
#include "../codelets/kim/kim_internal.h"
#endif
#include "velocity_verlet.h"
#include "langevin.h"
#include "nose_hoover.h"
#include "bussi.h"
#include "npt.h"
#include "fire.h"
#include "fire2.h"
#include "gd.h"
#include "lbfgs.h"
#include "cell_relax.h"

/* Built-in hooks (one file each in stages/hooks/) and sinks (io/sink.c) by name. */
extern const mdf_hook_def mdf_hook_def_log, mdf_hook_def_nan_check, mdf_hook_def_force_clamp, mdf_hook_def_drift,
    mdf_hook_def_freeze, mdf_hook_def_wrap, mdf_hook_def_timing, mdf_hook_def_thermo;
extern const mdf_sink_def mdf_sink_def_host, mdf_sink_def_device, mdf_sink_def_hdf5, mdf_sink_def_h5md;

mdf_method_post_pre_fn mdf_method_post_pre(const mdf_method *m)
{
    return m == &mdf_velocity_verlet ? mdf_vv_post_pre : NULL;
}

mdf_status mdf_register_builtins(mdf_error *err)
{
    mdf_status st = mdf_register_model(&mdf_lj_model_def, err);
    if (st == MDF_OK) st = mdf_register_model(&mdf_eam_model_def, err);
#ifdef MDF_HAVE_KIM
    if (st == MDF_OK) st = mdf_register_model(&mdf_kim_model_def, err);
#endif
    if (st == MDF_OK) st = mdf_register_method(&mdf_velocity_verlet, err);
    if (st == MDF_OK) st = mdf_register_method(&mdf_langevin, err);
    if (st == MDF_OK) st = mdf_register_method(&mdf_nose_hoover, err);
    if (st == MDF_OK) st = mdf_register_method(&mdf_bussi, err);
    if (st == MDF_OK) st = mdf_register_method(&mdf_npt, err);
    if (st == MDF_OK) st = mdf_register_method(&mdf_fire, err);
    if (st == MDF_OK) st = mdf_register_method(&mdf_fire2, err);
    if (st == MDF_OK) st = mdf_register_method(&mdf_gd, err);
    if (st == MDF_OK) st = mdf_register_method(&mdf_lbfgs, err);
    if (st == MDF_OK) st = mdf_register_method(&mdf_fire_cell, err);
    if (st == MDF_OK) st = mdf_register_method(&mdf_lbfgs_cell, err);
    if (st == MDF_OK) st = mdf_register_hook(&mdf_hook_def_log, err);
    if (st == MDF_OK) st = mdf_register_hook(&mdf_hook_def_nan_check, err);
    if (st == MDF_OK) st = mdf_register_hook(&mdf_hook_def_force_clamp, err);
    if (st == MDF_OK) st = mdf_register_hook(&mdf_hook_def_drift, err);
    if (st == MDF_OK) st = mdf_register_hook(&mdf_hook_def_freeze, err);
    if (st == MDF_OK) st = mdf_register_hook(&mdf_hook_def_wrap, err);
    if (st == MDF_OK) st = mdf_register_hook(&mdf_hook_def_timing, err);
    if (st == MDF_OK) st = mdf_register_hook(&mdf_hook_def_thermo, err);
    if (st == MDF_OK) st = mdf_register_sink(&mdf_sink_def_host, err);
    if (st == MDF_OK) st = mdf_register_sink(&mdf_sink_def_device, err);
    if (st == MDF_OK) st = mdf_register_sink(&mdf_sink_def_hdf5, err);
    if (st == MDF_OK) st = mdf_register_sink(&mdf_sink_def_h5md, err);
    return st;
}

/* ---- the public listing (mdflow/stage.h) ------------------------------------------ */

int32_t mdf_method_number(const mdf_method *m)
{
    size_t n = mdf_method_count();
    for (size_t k = 0; m && k < n; k++)
        if (mdf_method_at(k) == m) return (int32_t)k + 1;
    return 0;
}

size_t mdf_integrator_count(void) { return mdf_method_count(); }

const char *mdf_integrator_name(size_t k)
{
    const mdf_method *m = mdf_method_at(k);
    return m ? m->name : NULL;
}

const char *mdf_integrator_summary(size_t k)
{
    const mdf_method *m = mdf_method_at(k);
    return m ? m->summary : NULL;
}

int mdf_integrator_is_optimiser(const char *name)
{
    const mdf_method *m = name ? mdf_method_find(name) : NULL;
    return m ? mdf_method_has(m, MDF_METHOD_OPTIMISER) : -1;
}

int mdf_integrator_changes_cell(const char *name)
{
    const mdf_method *m = name ? mdf_method_find(name) : NULL;
    return m ? mdf_method_has(m, MDF_METHOD_CELL) : -1;
}
