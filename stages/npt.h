/* mdflow — NPT by stochastic cell rescaling (stages/npt.c). */
#ifndef MDF_STAGES_NPT_H
#define MDF_STAGES_NPT_H

#include "mdflow/extension.h"

/* Parameters by name (the method's table): */
typedef struct mdf_npt_params {
    double pressure_bar;            /* target pressure, bar (default 1) */
    double tau_p_fs;                /* barostat relaxation time, fs (default 1000) */
    double compressibility_per_bar; /* isothermal compressibility β_T, 1/bar (default 4.5e-5) */
    double tau_t_fs;                /* Bussi thermostat time, fs (default 100) */
} mdf_npt_params;

extern const mdf_method mdf_npt;

#endif
