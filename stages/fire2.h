/* mdflow — FIRE 2.0 (stages/fire2.c). */
#ifndef MDF_STAGES_FIRE2_H
#define MDF_STAGES_FIRE2_H

#include <stdint.h>
#include "mdflow/extension.h"

/* Parameters by name (the method's table); times in ASE's unit. */
typedef struct mdf_fire2_params {
    double dt, dtmax, dtmin, maxstep; /* 0.1, 1.0, 2e-3, 0.2 Å */
    int32_t nmin;                     /* 20 (N_delay) */
    double finc, fdec, astart, fa;    /* 1.1, 0.5, 0.25, 0.99 */
} mdf_fire2_params;

extern const mdf_method mdf_fire2;

#endif
