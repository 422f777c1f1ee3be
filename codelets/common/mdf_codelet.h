/* mdflow — what every codelet's StarPU glue shares (not used by kernels).
 *
 * Every task's argument struct starts with an int64_t `work` (atoms, or
 * atoms × neighbour slots): the performance-model footprint hashes it in
 * ~10% bins, so history-based models learn a cost per size class and the
 * dmda-family schedulers can place shards of different sizes. */
#ifndef MDF_CODELET_H
#define MDF_CODELET_H

#include <starpu.h>
#include <stdint.h>
#include "mdflow/extension.h"

/* configure decides whether the CUDA codelets are compiled (MDF_USE_CUDA in
 * config.h, exactly when the StarPU found has CUDA). Every codelet's glue
 * includes this header, so it reads config.h here: without it the
 * cuda_funcs blocks below compile out silently and a GPU node runs
 * everything on its CPUs (as happened until issue 21). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#if defined(STARPU_USE_CUDA) && !defined(MDF_USE_CUDA)
#error "StarPU has CUDA but MDF_USE_CUDA is not defined: build through configure (config.h), which compiles the CUDA codelets"
#endif

#if defined(STARPU_USE_CUDA) && defined(MDF_USE_CUDA)
#define MDF_CUDA_ENABLED 1
#else
#define MDF_CUDA_ENABLED 0
#endif

/* Byte blobs (neighbour lists, cell bins, workspaces, staging buffers) as
 * StarPU vectors. StarPU counts a vector's elements in 32 bits: a blob of
 * over 4 GiB (neighbour lists pass it near 6 M atoms in one chunk) is
 * registered in elements of 2^k bytes, k the smallest that fits, so its
 * memory must hold mdf_blob_padded(bytes) bytes. Smaller blobs keep 1-byte
 * elements and their exact size. */
size_t mdf_blob_padded(size_t bytes);
void mdf_blob_register(starpu_data_handle_t *handle, int home, uintptr_t ptr, size_t bytes);

/* A history-based model keyed by work size. */
#define MDF_PERFMODEL(var, name)                                                                   \
    static struct starpu_perfmodel var = {                                                        \
        .type = STARPU_HISTORY_BASED,                                                             \
        .symbol = name,                                                                           \
        .footprint = mdf_footprint_by_work,                                                       \
    }

/* Tasks the calling thread has submitted through mdf_submit so far. */
uint64_t mdf_submit_count(void);

/* mdf_footprint_by_work and mdf_submit are public (plugins' codelets use
 * them too): mdflow/extension.h. */

#endif
