/* mdflow — a CPU task that copies per-system scalars to the host and hands
 * them to a callback: how logs learn energies without the host waiting.
 * StarPU brings sys and res to main memory before it runs. */
#ifndef MDF_SAMPLE_CODELET_H
#define MDF_SAMPLE_CODELET_H

#include <starpu.h>
#include "../common/mdf_kernel_common.h"

typedef struct mdf_sample_row {
    int64_t id, step;
    int32_t status, natoms;
    double potential, kinetic;
    double virial_trace;
} mdf_sample_row;

typedef void (*mdf_sample_fn)(void *user, int64_t sample, int64_t first_row, const mdf_sample_row *rows,
                              int32_t nrows);

typedef struct mdf_sample_args {
    int64_t work;           /* systems in the shard */
    int64_t sample;         /* sample number, passed to the callback */
    int64_t first_row;      /* batch index of the shard's first system */
    int32_t nsys;
    mdf_sample_fn fn;
    void *user;
} mdf_sample_args;

void mdf_sample_cpu(void *buffers[], void *cl_arg);
/* buffers: sys R, res R */
int mdf_insert_sample(starpu_data_handle_t sys, starpu_data_handle_t res, const mdf_sample_args *args);

#endif
