/* mdflow — the convergence codelet: per system of the stage, fmax and the
 * energy change, then the criteria; converged systems move to the target
 * status with the CONVERGED_NOW flag (cleared on every system of the shard
 * at the start of the next check). */
#ifndef MDF_CONVERGE_CODELET_H
#define MDF_CONVERGE_CODELET_H

#include <starpu.h>
#include "converge_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

void mdf_converge_cpu(void *buffers[], void *cl_arg);
void mdf_converge_cuda(void *buffers[], void *cl_arg);

/* buffers: force R, sys RW, res RW, state RW */
int mdf_insert_converge(starpu_data_handle_t force, starpu_data_handle_t sys, starpu_data_handle_t res,
                        starpu_data_handle_t state, const mdf_converge_args *args);

#ifdef __cplusplus
}
#endif
#endif
