/* mdflow sched --simulate: the simulated machine and the files StarPU's
 * SimGrid mode reads it from. */
#ifndef MDF_SIMULATE_PLATFORM_H
#define MDF_SIMULATE_PLATFORM_H

#include <stddef.h>
#include "mdflow/error.h"

#define SIM_HOST "mdflow-sim"   /* STARPU_HOSTNAME of the simulated machine */

typedef struct sim_platform {
    int cpus, gpus;
    double gpu_gbps;         /* host <-> each GPU, GB/s, each direction */
    double gpu_latency_us;   /* per transfer */
    double gpu_mem_gib;      /* each GPU's memory */
} sim_platform;

/* "cpus=16,gpus=4[,gpu_gbps=25][,gpu_latency_us=10][,gpu_mem_gib=80]". */
mdf_status sim_platform_parse(const char *spec, sim_platform *p, mdf_error *err);
/* One line: "16 CPUs + 4 GPUs (25 GB/s, 10 us, 80 GiB each)". */
void sim_platform_describe(const sim_platform *p, char *out, size_t n);
/* Writes HOME/.starpu/sampling/bus/SIM_HOST.{config,latency,bandwidth,
 * platform.xml,platform.v4.xml}: the machine StarPU simulates with
 * STARPU_HOME=HOME and STARPU_HOSTNAME=SIM_HOST. */
mdf_status sim_platform_write(const sim_platform *p, const char *home, mdf_error *err);
/* mdflow-simulate, beside this program (or above a libtool .libs folder);
 * -1 when it is not there (mdflow was configured without a SimGrid StarPU). */
int sim_find_simulator(const char *self, char *out, size_t n);

#endif
