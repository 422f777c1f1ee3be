/* mdflow — L-BFGS as ASE's (stages/lbfgs.c). */
#ifndef MDF_STAGES_LBFGS_H
#define MDF_STAGES_LBFGS_H

#include <stdint.h>
#include "mdflow/extension.h"

#define MDF_LBFGS_MAX_MEMORY 10000

/* Parameters by name (the method's table): */
typedef struct mdf_lbfgs_params {
    int32_t memory;          /* history length (default 100) */
    double alpha;            /* initial Hessian guess, eV/Å² (default 70) */
    double damping;          /* step scale (default 1) */
    double maxstep;          /* Å, largest move of one atom (default 0.2) */
} mdf_lbfgs_params;

extern const mdf_method mdf_lbfgs;

#endif
