/* mdflow — FIRE as ASE's (stages/fire.c). */
#ifndef MDF_STAGES_FIRE_H
#define MDF_STAGES_FIRE_H

#include <stdint.h>
#include "mdflow/extension.h"

/* Parameters by name (the method's table); times in ASE's unit,
 * sqrt(amu Å²/eV) = 10.18 fs. */
typedef struct mdf_fire_params {
    double dt, dtmax, maxstep;     /* 0.1, 1.0, 0.2 Å */
    int32_t nmin;                  /* 5 */
    double finc, fdec, astart, fa; /* 1.1, 0.5, 0.1, 0.99 */
} mdf_fire_params;

extern const mdf_method mdf_fire;

#endif
