/* mdflow — NVT Langevin dynamics, BAOAB (stages/langevin.c). */
#ifndef MDF_STAGES_LANGEVIN_H
#define MDF_STAGES_LANGEVIN_H

#include "mdflow/extension.h"

/* Parameters by name (the method's table): */
typedef struct mdf_langevin_params {
    double friction_per_fs;  /* γ, 1/fs (default 0.01) */
} mdf_langevin_params;

extern const mdf_method mdf_langevin;

#endif
