/* mdflow — what every codelet's StarPU glue shares (not used by kernels).
 *
 * Every task's argument struct starts with an int64_t `work`: the work the
 * task will really do (atoms of the systems it moves, as the stage's latest
 * census counts them; atoms to re-list for list builds, counted by the
 * binning before them), not the shard's capacity. Every codelet's
 * performance model predicts from it, fitted by mdflow on every task's
 * measured length (mdf_perfmodel.c), and the dmda-family schedulers place
 * the tasks by those predictions. */
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

/* Bytes moved between memory nodes over every bus since profiling began
 * (StarPU's bus profiling), and the transfers into *transfers (may be
 * NULL): mdf_runtime_bus_bytes, and mdflow-simulate's report. */
long long mdf_bus_bytes(long long *transfers);

/* A codelet's performance model, fitted by mdflow on the task's work
 * (mdf_perfmodel.c says why and how). */
#define MDF_PERFMODEL(var, name)                                                                   \
    static struct starpu_perfmodel var = {                                                        \
        .type = STARPU_PER_ARCH,                                                                  \
        .symbol = name,                                                                           \
        .arch_cost_function = mdf_perfmodel_cost,                                                 \
    }

/* mdf_perfmodel_cost, the models' cost function, is public
 * (mdflow/extension.h). */
/* Adds a finished task's measured length to its model's fit (tasks of
 * other models are ignored). Needs StarPU's task profiling. */
void mdf_perfmodel_observe(struct starpu_task *task);
/* Writes every fit that changed to mdf_perfmodels_dir (at shutdown). */
void mdf_perfmodels_save(void);
/* $MDF_PERFMODELS_DIR when set, else
 * $STARPU_HOME (else $HOME)/.starpu/sampling/mdflow/HOSTNAME; -1 when
 * neither is set or the path does not fit. */
int mdf_perfmodels_dir(char *out, size_t n);
/* Predictions asked for so far that found the model not calibrated. */
long mdf_perfmodels_uncalibrated(void);
/* Whether the model of that symbol has a calibrated fit for CPUs (cuda 0)
 * or CUDA devices (cuda 1), as saved or measured in this process. */
int mdf_perfmodel_calibrated(const char *symbol, int cuda);
/* Writes to out_dir every model saved in cpu_dir or cuda_dir, with its CPU
 * fit from cpu_dir and its CUDA fit from cuda_dir (either may be NULL);
 * *cuda_models: how many have a calibrated CUDA fit. -1 when out_dir cannot
 * be made. */
int mdf_perfmodels_merge(const char *cpu_dir, const char *cuda_dir, const char *out_dir, int *cuda_models);
/* Prints the saved models (mdflow perfmodels); -1 without a folder. */
int mdf_perfmodels_print(FILE *out);

/* mdf_submit in two halves, for a task whose args another task fills in
 * before it runs (a list build's work, counted by the binning before it):
 * mdf_task_new makes the task with a heap copy of args (its cl_arg; NULL
 * when out of memory or for a bad buffer count), mdf_task_submit submits
 * it (freed when StarPU refuses it), mdf_task_drop frees one never
 * submitted. */
struct starpu_task *mdf_task_new(struct starpu_codelet *cl, const void *args, size_t args_size, int nbuffers,
                                 const starpu_data_handle_t *handles, const enum starpu_data_access_mode *modes,
                                 const char *name);
int mdf_task_submit(struct starpu_task *task);
void mdf_task_drop(struct starpu_task *task);

/* Tasks the calling thread has submitted through mdf_submit so far. */
uint64_t mdf_submit_count(void);

/* mdf_size_by_work, mdf_footprint_by_work and mdf_submit are public (plugins' codelets use
 * them too): mdflow/extension.h. */

#endif
