/* mdflow — NVE velocity Verlet (stages/velocity_verlet.c). No parameters of
 * its own: dt_fs is stage-wide. */
#ifndef MDF_STAGES_VELOCITY_VERLET_H
#define MDF_STAGES_VELOCITY_VERLET_H

#include "mdflow/extension.h"

extern const mdf_method mdf_velocity_verlet;

/* Verlet's pre_update (v += dt/2 F/m, x += dt v), which Bussi's
 * thermostat shares. */
int mdf_vv_pre_update(const mdf_method_ctx *c);

/* post_update of one step and pre_update of the next as one task
 * (mdf_method_post_pre). */
int mdf_vv_post_pre(const mdf_method_ctx *post, const mdf_method_ctx *pre);

#endif
