/* mdflow — shared codelet glue. */
#include <stdlib.h>
#include <string.h>
#include "mdf_codelet.h"
#include "mdflow/runtime.h"

/* Frees a task that was never submitted (StarPU refuses to destroy a task
 * still marked for destruction at its end). */
static void mdf_task_discard(struct starpu_task *task)
{
    task->destroy = 0;
    starpu_task_destroy(task);
}

/* Tasks this thread submitted through mdf_submit: a pipeline stage's host
 * thread sizes its window with it (StarPU's own count is the process's). */
static _Thread_local uint64_t submitted_here;

struct starpu_task *mdf_task_new(struct starpu_codelet *cl, const void *args, size_t args_size, int nbuffers,
                                 const starpu_data_handle_t *handles, const enum starpu_data_access_mode *modes,
                                 const char *name)
{
    struct starpu_task *task = starpu_task_create();
    if (!task) return NULL;
    void *copy = malloc(args_size);
    if (!copy) {
        mdf_task_discard(task);
        return NULL;
    }
    memcpy(copy, args, args_size);
    task->cl = cl;
    /* MDF_CUDA_ONLY: what a GPU can run stays there (dmda would otherwise
     * weigh a CPU worker's copy of the batch against the GPU's each step). */
    if (cl->cuda_funcs[0] && mdf_runtime_cuda_only()) task->where = STARPU_CUDA;
    task->cl_arg = copy;
    task->cl_arg_size = args_size;
    task->cl_arg_free = 1;
    task->name = name;
    task->nbuffers = nbuffers;
    if (nbuffers > STARPU_NMAXBUFS) {
        if (cl->nbuffers != STARPU_VARIABLE_NBUFFERS) {
            mdf_task_discard(task);
            return NULL;
        }
        /* StarPU frees dyn_handles and dyn_modes with the task. */
        task->dyn_handles = malloc(sizeof *task->dyn_handles * (size_t)nbuffers);
        task->dyn_modes = malloc(sizeof *task->dyn_modes * (size_t)nbuffers);
        if (!task->dyn_handles || !task->dyn_modes) {
            free(task->dyn_handles);
            free(task->dyn_modes);
            task->dyn_handles = NULL;
            task->dyn_modes = NULL;
            mdf_task_discard(task);
            return NULL;
        }
    }
    /* Fixed-size codelets declare their modes; setting them per task would
     * write into the shared codelet. Only variable ones take modes here. */
    int variable = cl->nbuffers == STARPU_VARIABLE_NBUFFERS;
    for (int i = 0; i < nbuffers; i++) {
        STARPU_TASK_SET_HANDLE(task, handles[i], i);
        if (variable) {
            if (task->dyn_modes) task->dyn_modes[i] = modes[i];
            else task->modes[i] = modes[i];
        }
    }
    return task;
}

/* Every task's callback, on the worker that ran it (StarPU has set its
 * profiling interval by then): the model's fit, and mdflow sched's trace. */
static void task_finished(void *arg)
{
    struct starpu_task *task = arg;
    mdf_perfmodel_observe(task);
    if (mdf_runtime_trace_on()) mdf_runtime_trace_record(task);
}

int mdf_task_submit(struct starpu_task *task)
{
    if (!task->callback_func) {
        task->callback_func = task_finished;
        task->callback_arg = task;
    }
    if (mdf_runtime_record_on()) mdf_runtime_record_task(task);
    int ret = starpu_task_submit(task);
    if (ret != 0) mdf_task_discard(task);
    else submitted_here++;
    return ret;
}

void mdf_task_drop(struct starpu_task *task)
{
    if (task) mdf_task_discard(task);
}

int mdf_submit(struct starpu_codelet *cl, const void *args, size_t args_size, int nbuffers,
               const starpu_data_handle_t *handles, const enum starpu_data_access_mode *modes,
               const char *name)
{
    if (nbuffers > STARPU_NMAXBUFS && cl->nbuffers != STARPU_VARIABLE_NBUFFERS) return -EINVAL;
    struct starpu_task *task = mdf_task_new(cl, args, args_size, nbuffers, handles, modes, name);
    return task ? mdf_task_submit(task) : -ENOMEM;
}

uint64_t mdf_submit_count(void) { return submitted_here; }
