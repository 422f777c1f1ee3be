/* mdflow — the gather of a many-body model's per-atom values: each chunk's
 * auxiliary pass writes the rows it owns into a part of its own (so chunks
 * run side by side), and this task copies the parts into the shard's array,
 * which every chunk's main pass then reads whole. */
#ifndef MDF_GATHER_CODELET_H
#define MDF_GATHER_CODELET_H

#include <starpu.h>
#include "mdflow/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MDF_GATHER_MAX_PARTS 64

typedef struct mdf_gather_args {
    int64_t work;             /* values copied (performance-model key) */
    int32_t nparts;
    int32_t per_atom;         /* doubles per atom */
    int32_t begin[MDF_GATHER_MAX_PARTS]; /* first atom of each part in the shard */
    int32_t count[MDF_GATHER_MAX_PARTS]; /* atoms of each part */
} mdf_gather_args;

void mdf_gather_cpu(void *buffers[], void *cl_arg);
void mdf_gather_cuda(void *buffers[], void *cl_arg);

/* buffers: parts R (nparts), whole W. */
int mdf_insert_gather(const starpu_data_handle_t *parts, starpu_data_handle_t whole, const mdf_gather_args *args);

#ifdef __cplusplus
}
#endif
#endif
