/* mdflow — the codelet that sums a shard's per-chunk model outputs. */
#ifndef MDF_REDUCE_CODELET_H
#define MDF_REDUCE_CODELET_H

#include <starpu.h>
#include "reduce_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

void mdf_reduce_cpu(void *buffers[], void *cl_arg);
void mdf_reduce_cuda(void *buffers[], void *cl_arg);

/* buffers: force parts[K] R, result parts[K] R, forces W, results RW. */
int mdf_insert_reduce(const starpu_data_handle_t *force_parts, const starpu_data_handle_t *result_parts,
                      starpu_data_handle_t forces, starpu_data_handle_t results,
                      const mdf_reduce_args *args);

#ifdef __cplusplus
}
#endif
#endif
