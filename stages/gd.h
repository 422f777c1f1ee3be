/* mdflow — gradient descent (stages/gd.c). */
#ifndef MDF_STAGES_GD_H
#define MDF_STAGES_GD_H

#include "mdflow/extension.h"

/* Parameters by name (the method's table): */
typedef struct mdf_gd_params {
    double step;             /* Å²/eV: x += step · F (default 0.01) */
    double maxstep;          /* Å, largest move of one atom (default 0.2) */
} mdf_gd_params;

extern const mdf_method mdf_gd;

#endif
