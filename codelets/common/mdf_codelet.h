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

#if defined(STARPU_USE_CUDA) && defined(MDF_USE_CUDA)
#define MDF_CUDA_ENABLED 1
#else
#define MDF_CUDA_ENABLED 0
#endif

/* Footprint of a task from its leading `work` field. */
uint32_t mdf_footprint_by_work(struct starpu_task *task);

/* A history-based model keyed by work size. */
#define MDF_PERFMODEL(var, name)                                                                   \
    static struct starpu_perfmodel var = {                                                        \
        .type = STARPU_HISTORY_BASED,                                                             \
        .symbol = name,                                                                           \
        .footprint = mdf_footprint_by_work,                                                       \
    }

/* Inserts a task with a heap copy of args (StarPU frees it) and the given
 * handles. modes are used only by codelets with STARPU_VARIABLE_NBUFFERS
 * (others declare theirs); pass NULL otherwise. Returns 0 or StarPU's
 * error code. */
int mdf_submit(struct starpu_codelet *cl, const void *args, size_t args_size, int nbuffers,
               const starpu_data_handle_t *handles, const enum starpu_data_access_mode *modes,
               const char *name);

#endif
