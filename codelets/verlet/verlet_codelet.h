/* mdflow — velocity Verlet codelets: the two halves of a step. */
#ifndef MDF_VERLET_CODELET_H
#define MDF_VERLET_CODELET_H

#include <starpu.h>
#include "verlet_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

void mdf_vv_pre_cpu(void *buffers[], void *cl_arg);
void mdf_vv_post_cpu(void *buffers[], void *cl_arg);
void mdf_vv_pre_cuda(void *buffers[], void *cl_arg);
void mdf_vv_post_cuda(void *buffers[], void *cl_arg);
void mdf_vv_post_pre_cpu(void *buffers[], void *cl_arg);

/* x += dt v after v += dt/2 F/m, for systems with args->status. */
int mdf_insert_vv_pre(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                      starpu_data_handle_t atoms, starpu_data_handle_t sys, int64_t work,
                      const mdf_vv_args *args);
/* v += dt/2 F/m, kinetic energy and step count, for systems with args->status. */
int mdf_insert_vv_post(starpu_data_handle_t vel, starpu_data_handle_t force, starpu_data_handle_t atoms,
                       starpu_data_handle_t sys, starpu_data_handle_t res, int64_t work,
                       const mdf_vv_args *args);
/* A step's post_update and the next step's pre_update as one task (CPU
 * only): the same arithmetic in the same order, one task and one
 * dependency hop fewer a step. */
int mdf_insert_vv_post_pre(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                           starpu_data_handle_t atoms, starpu_data_handle_t sys, starpu_data_handle_t res,
                           int64_t work, const mdf_vv_args *args);

#ifdef __cplusplus
}
#endif
#endif
