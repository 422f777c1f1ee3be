/* mdflow — codelets of the built-in hooks that touch per-atom data. Each
 * runs over one shard and touches only the systems whose status is
 * args->status. */
#ifndef MDF_HOOKS_CODELET_H
#define MDF_HOOKS_CODELET_H

#include <starpu.h>
#include "hooks_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

void mdf_hook_nan_check_cpu(void *buffers[], void *cl_arg);
void mdf_hook_force_clamp_cpu(void *buffers[], void *cl_arg);
void mdf_hook_freeze_cpu(void *buffers[], void *cl_arg);
void mdf_hook_wrap_cpu(void *buffers[], void *cl_arg);
void mdf_hook_nan_check_cuda(void *buffers[], void *cl_arg);
void mdf_hook_force_clamp_cuda(void *buffers[], void *cl_arg);
void mdf_hook_freeze_cuda(void *buffers[], void *cl_arg);
void mdf_hook_wrap_cuda(void *buffers[], void *cl_arg);

/* Sets MDF_SYS_NONFINITE_* per system (quarantines on request).
 * buffers: pos R, vel R, force R, sys RW, res R */
int mdf_insert_hook_nan_check(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                              starpu_data_handle_t sys, starpu_data_handle_t res, const mdf_hooks_args *args);
/* Scales forces longer than args->max_force down to it.
 * buffers: force RW, sys R */
int mdf_insert_hook_force_clamp(starpu_data_handle_t force, starpu_data_handle_t sys, const mdf_hooks_args *args);
/* Zeroes forces and velocities of frozen atoms.
 * buffers: force RW, vel RW, atoms R, sys R */
int mdf_insert_hook_freeze(starpu_data_handle_t force, starpu_data_handle_t vel, starpu_data_handle_t atoms,
                           starpu_data_handle_t sys, const mdf_hooks_args *args);
/* Wraps positions into the cell along periodic directions.
 * buffers: pos RW, sys R */
int mdf_insert_hook_wrap(starpu_data_handle_t pos, starpu_data_handle_t sys, const mdf_hooks_args *args);

#ifdef __cplusplus
}
#endif
#endif
