/* mdflow — Lennard-Jones codelet: energy, forces and virial of one chunk of
 * a shard from its Verlet lists. */
#ifndef MDF_LJ_CODELET_H
#define MDF_LJ_CODELET_H

#include <starpu.h>
#include "lj_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mdf_lj_args {
    int64_t work;          /* atoms of the chunk */
    mdf_chunk chunk;
    int32_t want_virial;   /* 0: leave the virial as it was (saves ~40% of
                            * the flops per pair on steps that need none) */
    int32_t status_lo, status_hi; /* systems outside [lo, hi] keep their
                                   * forces, energy and virial untouched */
    int32_t partial;       /* 1: forces and results are the chunk's part of
                            * a sum (mdf_reduce): marked with what the task
                            * wrote (MDF_PART_*, reduce_kernel.h) */
} mdf_lj_args;

void mdf_lj_cpu(void *buffers[], void *cl_arg);
void mdf_lj_cuda(void *buffers[], void *cl_arg);

/* buffers: pos R, atoms R, sys R, list R, bins R, forces RW, results RW,
 * params R. Forces over the chunk's touch range (on a GPU, with `partial`,
 * over its atom range only), and energy and virial of its systems, are
 * overwritten; kinetic energies are kept. */
int mdf_insert_lj(starpu_data_handle_t pos, starpu_data_handle_t atoms, starpu_data_handle_t sys,
                  starpu_data_handle_t list, starpu_data_handle_t bins, starpu_data_handle_t forces,
                  starpu_data_handle_t results, starpu_data_handle_t params, const mdf_lj_args *args);

#ifdef __cplusplus
}
#endif
#endif
