/* mdflow — NVT stochastic velocity rescaling (stages/bussi.c). */
#ifndef MDF_STAGES_BUSSI_H
#define MDF_STAGES_BUSSI_H

#include "mdflow/extension.h"

/* Parameters by name (the method's table): */
typedef struct mdf_bussi_params {
    double tau_fs;           /* relaxation time, fs (default 100) */
} mdf_bussi_params;

extern const mdf_method mdf_bussi;

#endif
