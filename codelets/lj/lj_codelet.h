/* mdflow — Lennard-Jones codelet: energy, forces and virial of one chunk of
 * a shard from its Verlet lists. */
#ifndef MDF_LJ_CODELET_H
#define MDF_LJ_CODELET_H

#include <starpu.h>
#include "lj_kernel.h"
#include "mdflow/extension.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The model task's argument (mdflow/extension.h). */
typedef mdf_model_args mdf_lj_args;

void mdf_lj_cpu(void *buffers[], void *cl_arg);
void mdf_lj_cuda(void *buffers[], void *cl_arg);

/* buffers: pos R, atoms R, sys R, list R, bins R, forces RW, results RW,
 * params R (mdflow/extension.h). Forces over the chunk's touch range (on a
 * GPU, with `partial`, over its atom range only), and energy and virial of
 * its systems, are overwritten; kinetic energies are kept. */
extern const mdf_model_def mdf_lj_model_def;

#ifdef __cplusplus
}
#endif
#endif
