/* mdflow tests — the "gpu-first" StarPU scheduling policy of the CUDA tests:
 * a task that a CUDA worker can execute goes to the CUDA workers' queue, any
 * other task to the CPU worker's queue, and each worker pops only its own
 * queue. With one CPU worker beside the GPUs, every codelet with a CUDA
 * implementation then runs on a GPU and only the CPU-only ones (host-view
 * tasks: the census, NaN reports, callbacks) run on the CPU. After StarPU's
 * examples/scheduler/dummy_sched.c. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <starpu.h>
#include <starpu_scheduler.h>
#include <starpu_profiling.h>
#include "gpu_first.h"

typedef struct gpu_first {
    pthread_mutex_t lock;
    struct starpu_task_list queue[2]; /* 0: CPU workers, 1: CUDA workers */
    tu_gpu_first_counts c;
} gpu_first;

static gpu_first gf;

static void gf_init(unsigned ctx) { (void)ctx; }
static void gf_deinit(unsigned ctx) { (void)ctx; }

static int gf_is_cuda(unsigned worker) { return starpu_worker_get_type((int)worker) == STARPU_CUDA_WORKER; }

static void gf_note_name(const struct starpu_task *task)
{
    const char *name = task->cl && task->cl->name ? task->cl->name : task->name ? task->name : "(unnamed)";
    for (int k = 0; k < gf.c.nnames; k++)
        if (strcmp(gf.c.names[k], name) == 0) return;
    if (gf.c.nnames < TU_GF_NAMES) snprintf(gf.c.names[gf.c.nnames++], sizeof gf.c.names[0], "%s", name);
}

static int gf_push(struct starpu_task *task)
{
    struct starpu_worker_collection *workers = starpu_sched_ctx_get_worker_collection(task->sched_ctx);
    struct starpu_sched_ctx_iterator it;
    int to_cuda = 0, have_cuda = 0;
    workers->init_iterator(workers, &it);
    while (workers->has_next(workers, &it)) {
        unsigned w = workers->get_next(workers, &it);
        if (!gf_is_cuda(w)) continue;
        have_cuda = 1;
        if (starpu_worker_can_execute_task_first_impl(w, task, NULL)) to_cuda = 1;
    }
    pthread_mutex_lock(&gf.lock);
    starpu_task_list_push_back(&gf.queue[to_cuda], task);
    gf.c.pushed[to_cuda]++;
    if (!to_cuda) {
        gf_note_name(task);
        if (have_cuda && task->cl && task->cl->cuda_funcs[0]) gf.c.cuda_capable_on_cpu++;
    }
    starpu_push_task_end(task);
    pthread_mutex_unlock(&gf.lock);
    /* Wake the workers of that queue (after the unlock: waking takes their
     * scheduling mutexes, which poppers hold while they take ours). */
    workers->init_iterator(workers, &it);
    while (workers->has_next(workers, &it)) {
        unsigned w = workers->get_next(workers, &it);
        if (gf_is_cuda(w) == to_cuda) starpu_wake_worker_relax_light((int)w);
    }
    return 0;
}

/* Called with the worker's scheduling mutex held. */
static struct starpu_task *gf_pop(unsigned ctx)
{
    (void)ctx;
    unsigned w = starpu_worker_get_id_check();
    enum starpu_worker_archtype type = starpu_worker_get_type((int)w);
    if (type != STARPU_CUDA_WORKER && type != STARPU_CPU_WORKER) return NULL; /* none started */
    int q = type == STARPU_CUDA_WORKER;
    struct starpu_task *task = NULL;
    starpu_worker_relax_on();
    pthread_mutex_lock(&gf.lock);
    starpu_worker_relax_off();
    if (!starpu_task_list_empty(&gf.queue[q])) task = starpu_task_list_pop_front(&gf.queue[q]);
    pthread_mutex_unlock(&gf.lock);
    unsigned nimpl = 0;
    if (task && starpu_worker_can_execute_task_first_impl(w, task, &nimpl)) starpu_task_set_implementation(task, nimpl);
    return task;
}

static struct starpu_sched_policy gf_policy = {
    .init_sched = gf_init,
    .deinit_sched = gf_deinit,
    .push_task = gf_push,
    .pop_task = gf_pop,
    .policy_name = "mdf-test-gpu-first",
    .policy_description = "tasks a CUDA worker can run go to the CUDA workers, the rest to the CPU ones",
    .worker_type = STARPU_WORKER_LIST,
};

void tu_start_gpu_first(int ncuda)
{
    memset(&gf, 0, sizeof gf);
    pthread_mutex_init(&gf.lock, NULL);
    starpu_task_list_init(&gf.queue[0]);
    starpu_task_list_init(&gf.queue[1]);
    struct starpu_conf conf;
    starpu_conf_init(&conf);
    /* A policy name (STARPU_SCHED) would win over the policy. */
    conf.sched_policy_name = NULL;
    conf.sched_policy = &gf_policy;
    conf.ncpus = 1;       /* the host-view tasks */
    conf.ncuda = ncuda;   /* -1: every CUDA worker; 0: emulation on the CPU */
    conf.nopencl = 0;
    int ret = starpu_init(&conf);
    if (ret != 0) fail_msg("cannot start StarPU with the gpu-first policy (error %d)", ret);
    starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
}

tu_gpu_first_counts tu_gpu_first_counts_get(void)
{
    pthread_mutex_lock(&gf.lock);
    tu_gpu_first_counts c = gf.c;
    pthread_mutex_unlock(&gf.lock);
    return c;
}

void tu_stop_gpu_first(void)
{
    tu_stop();
    pthread_mutex_destroy(&gf.lock);
}
