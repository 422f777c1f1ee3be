/* mdflow — NVE velocity Verlet (stages/velocity_verlet.c). No parameters of
 * its own: dt_fs is stage-wide. */
#ifndef MDF_STAGES_VELOCITY_VERLET_H
#define MDF_STAGES_VELOCITY_VERLET_H

#include "mdflow/extension.h"

extern const mdf_method mdf_velocity_verlet;

#endif
