/* mdflow — NVT Nose-Hoover chain (stages/nose_hoover.c). */
#ifndef MDF_STAGES_NOSE_HOOVER_H
#define MDF_STAGES_NOSE_HOOVER_H

#include <stdint.h>
#include "mdflow/extension.h"
#include "mdflow/stage.h" /* MDF_NHC_MAX */

/* Parameters by name (the method's table): */
typedef struct mdf_nose_hoover_params {
    double tau_fs;           /* thermostat period, fs (default 100) */
    int32_t chain;           /* chain length, 1..MDF_NHC_MAX (default 3) */
} mdf_nose_hoover_params;

extern const mdf_method mdf_nose_hoover;

#endif
