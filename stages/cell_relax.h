/* mdflow — variable-cell relaxation (stages/cell_relax.c): ASE's FIRE and
 * LBFGS on atoms and cell together, in FrechetCellFilter form. */
#ifndef MDF_STAGES_CELL_RELAX_H
#define MDF_STAGES_CELL_RELAX_H

#include <stdint.h>
#include "mdflow/extension.h"

/* Parameters by name (the methods' tables): FIRE's or L-BFGS's own, then */
typedef struct mdf_fire_cell_params {
    double dt, dtmax, maxstep;
    int32_t nmin;
    double finc, fdec, astart, fa;
    double pressure_GPa;       /* target (hydrostatic) pressure, GPa (default 0) */
    double exp_cell_factor;    /* FrechetCellFilter's; 0: the system's atom count (ASE's default) */
} mdf_fire_cell_params;

typedef struct mdf_lbfgs_cell_params {
    int32_t memory;
    double alpha, damping, maxstep;
    double pressure_GPa;
    double exp_cell_factor;
} mdf_lbfgs_cell_params;

extern const mdf_method mdf_fire_cell, mdf_lbfgs_cell;

#endif
