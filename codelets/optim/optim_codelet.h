/* mdflow — the optimisers' codelets: one task per shard and step, run
 * before the model, that does the whole optimiser step of every system of
 * the stage (bookkeeping included: no post_update task). */
#ifndef MDF_OPTIM_CODELET_H
#define MDF_OPTIM_CODELET_H

#include <starpu.h>
#include "optim_kernel.h"
#include "cell_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

void mdf_fire_cpu(void *buffers[], void *cl_arg);
void mdf_fire2_cpu(void *buffers[], void *cl_arg);
void mdf_gd_cpu(void *buffers[], void *cl_arg);
void mdf_lbfgs_cpu(void *buffers[], void *cl_arg);
void mdf_fire_cuda(void *buffers[], void *cl_arg);
void mdf_fire2_cuda(void *buffers[], void *cl_arg);
void mdf_gd_cuda(void *buffers[], void *cl_arg);
void mdf_lbfgs_cuda(void *buffers[], void *cl_arg);
void mdf_cell_fire_cpu(void *buffers[], void *cl_arg);
void mdf_cell_lbfgs_cpu(void *buffers[], void *cl_arg);
void mdf_cell_fire_cuda(void *buffers[], void *cl_arg);
void mdf_cell_lbfgs_cuda(void *buffers[], void *cl_arg);

/* FIRE and FIRE2 (v is the optimiser's own velocity). */
int mdf_insert_fire(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                    starpu_data_handle_t sys, starpu_data_handle_t res, starpu_data_handle_t state,
                    const mdf_fire_args *args);
int mdf_insert_fire2(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                     starpu_data_handle_t sys, starpu_data_handle_t res, starpu_data_handle_t state,
                     const mdf_fire2_args *args);
int mdf_insert_gd(starpu_data_handle_t pos, starpu_data_handle_t force, starpu_data_handle_t sys,
                  starpu_data_handle_t res, const mdf_gd_args *args);
/* work: the shard's workspace of mdf_lbfgs_layout_of(...).total doubles. */
int mdf_insert_lbfgs(starpu_data_handle_t pos, starpu_data_handle_t force, starpu_data_handle_t sys,
                     starpu_data_handle_t res, starpu_data_handle_t state, starpu_data_handle_t work,
                     const mdf_lbfgs_args *args);

/* FIRE and L-BFGS on atoms and cell (cell_kernel.h); work: the shard's
 * workspace of mdf_lbfgs_cell_layout_of(...).total doubles. */
int mdf_insert_cell_fire(starpu_data_handle_t pos, starpu_data_handle_t vel, starpu_data_handle_t force,
                         starpu_data_handle_t sys, starpu_data_handle_t res, starpu_data_handle_t state,
                         const mdf_cell_fire_args *args);
int mdf_insert_cell_lbfgs(starpu_data_handle_t pos, starpu_data_handle_t force, starpu_data_handle_t sys,
                          starpu_data_handle_t res, starpu_data_handle_t state, starpu_data_handle_t work,
                          const mdf_cell_lbfgs_args *args);

#ifdef __cplusplus
}
#endif
#endif
