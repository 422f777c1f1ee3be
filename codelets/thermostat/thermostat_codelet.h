/* mdflow — thermostat and barostat codelets (Langevin BAOAB, Bussi CSVR,
 * Nosé–Hoover chain, stochastic cell rescaling). */
#ifndef MDF_THERMOSTAT_CODELET_H
#define MDF_THERMOSTAT_CODELET_H

#include <starpu.h>
#include "thermostat_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The shard's handles a thermostat task may use. */
typedef struct mdf_thermo_handles {
    starpu_data_handle_t pos, vel, force, atoms, sys, res, state;
} mdf_thermo_handles;

void mdf_langevin_pre_cpu(void *buffers[], void *cl_arg);
void mdf_nhc_pre_cpu(void *buffers[], void *cl_arg);
void mdf_npt_pre_cpu(void *buffers[], void *cl_arg);
void mdf_thermo_post_cpu(void *buffers[], void *cl_arg);
void mdf_langevin_pre_cuda(void *buffers[], void *cl_arg);
void mdf_nhc_pre_cuda(void *buffers[], void *cl_arg);
void mdf_npt_pre_cuda(void *buffers[], void *cl_arg);
void mdf_thermo_post_cuda(void *buffers[], void *cl_arg);

/* BAOAB's B A O A for the systems with args->status (pos, vel RW; res RW for
 * extra_energy; state RW: fresh systems restart their bookkeeping). */
int mdf_insert_langevin_pre(const mdf_thermo_handles *h, const mdf_thermo_args *args);
/* Chain half step, then v += dt/2 F/m, x += dt v. */
int mdf_insert_nhc_pre(const mdf_thermo_handles *h, const mdf_thermo_args *args);
/* Cell, positions and velocities rescaled, then v += dt/2 F/m, x += dt v. */
int mdf_insert_npt_pre(const mdf_thermo_handles *h, const mdf_thermo_args *args);
/* v += dt/2 F/m, then the method's end of step (args->kind), kinetic energy,
 * step counters. */
int mdf_insert_thermo_post(const mdf_thermo_handles *h, const mdf_thermo_args *args);

#ifdef __cplusplus
}
#endif
#endif
