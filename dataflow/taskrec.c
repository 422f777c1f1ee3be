/* mdflow — the task graph recorder behind `mdflow sched --simulate`.
 *
 * A run with the recorder on writes, in the order the host does them, every
 * task it submits (its codelet's model symbol, priority and data with their
 * access modes) and every host wait on data (starpu_data_acquire, through
 * mdf_data_acquire) or on all tasks (mdf_task_wait_for_all). Each task's
 * work and measured length are written when it ends: the work of a list
 * build is only known once its binning ran. mdflow-simulate replays the
 * record in StarPU's SimGrid mode: the same dependencies (StarPU derives them
 * from the same access modes in the same order), the host waiting where it
 * waited, each task's length from the codelets' performance models on the
 * simulated worker's arch.
 *
 * Each host event also carries the host's own time before it: the
 * microseconds since the thread's previous event ended (the previous
 * submission's start, or a wait's end), which the replay spends on the
 * simulated host, so a run whose host cannot keep the workers busy is
 * simulated as one.
 *
 * Format (text, one event per line):
 *   mdflow-taskrec 1
 *   H <handle> <bytes>                          a handle's first use
 *   U <host us> <handle>                        the host unregisters it
 *   T <host us> <task> <priority> <symbol> <n> <handle>:<mode> ...
 *   A <host us> <handle> <mode>                 the host waits for the data
 *   S <host us>                                 the host waits for every task
 *   N <host us> <n>                             the host waits until at most n
 *                                               submitted tasks are not done
 *   E <task> <work> <measured us>               the task ended
 * Modes are StarPU's access mode bits (R 1, W 2, SCRATCH 4, REDUX 8,
 * COMMUTE 16), the same in StarPU 1.3 and 1.4. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "mdflow/runtime.h"

#define TASKREC_MAGIC "mdflow-taskrec 1"
#define TASKREC_FIRST_SLOTS 16 /* the handle table's first size (a power of 2): small, so every run grows it */

static struct {
    pthread_mutex_t lock;
    FILE *fp;
    atomic_int on;
    long long tasks;
    long long nhandles;
    /* handle pointer -> id: open addressing, at most half full (live and
     * retired slots), doubled and rehashed when it would be more. */
    const void **handle_keys;
    long long *handle_ids;
    size_t slots, used, live;
    int failed;
} rec = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A recorded task's callback argument: its end line needs the task and its
 * id, and the callback it would have had runs first. StarPU frees it. */
/* When this host thread's previous event ended (StarPU's clock, us). */
static _Thread_local double host_last_us = -1.0;

/* The host's time since its previous event; starts the clock on its first. */
static double host_gap_us(void)
{
    double now = starpu_timing_now();
    double gap = host_last_us >= 0.0 && now > host_last_us ? now - host_last_us : 0.0;
    host_last_us = now;
    return gap;
}

typedef struct recorded_end {
    long long id;
    void (*callback)(void *);
    void *callback_arg;
    struct starpu_task *task;
} recorded_end;

/* A slot whose handle was unregistered: lookups go on past it and a new
 * handle may take it; the address may come back as a new handle, which
 * gets a new id. */
#define TASKREC_GONE ((const void *)1)

static size_t handle_slot(const void *h, size_t slots)
{
    uintptr_t x = (uintptr_t)h;
    x ^= x >> 17;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 20) & (slots - 1);
}

/* A table of `slots` holding the live handles only; -1 without memory. */
static int rehash(size_t slots)
{
    const void **keys = calloc(slots, sizeof *keys);
    long long *ids = calloc(slots, sizeof *ids);
    if (!keys || !ids) {
        free(keys);
        free(ids);
        return -1;
    }
    for (size_t k = 0; k < rec.slots; k++) {
        const void *h = rec.handle_keys[k];
        if (!h || h == TASKREC_GONE) continue;
        size_t s = handle_slot(h, slots);
        while (keys[s]) s = (s + 1) & (slots - 1);
        keys[s] = h;
        ids[s] = rec.handle_ids[k];
    }
    free(rec.handle_keys);
    free(rec.handle_ids);
    rec.handle_keys = keys;
    rec.handle_ids = ids;
    rec.slots = slots;
    rec.used = rec.live;
    return 0;
}

/* The handle's slot, or -1 when it has none (caller holds the lock). */
static long long find_slot(const void *h)
{
    for (size_t s = handle_slot(h, rec.slots); rec.handle_keys[s]; s = (s + 1) & (rec.slots - 1))
        if (rec.handle_keys[s] == h) return (long long)s;
    return -1;
}

/* The handle's id, writing its size the first time (caller holds the lock).
 * Without memory for a larger table a handle gets a new id at each use:
 * its dependencies are lost, never invented, and the record says it failed. */
static long long handle_id(starpu_data_handle_t h)
{
    long long found = find_slot(h);
    if (found >= 0) return rec.handle_ids[found];
    if (2 * (rec.used + 1) > rec.slots && rehash(4 * (rec.live + 1) > rec.slots ? 2 * rec.slots : rec.slots) != 0)
        rec.failed = 1;
    long long id = rec.nhandles++;
    if (2 * (rec.used + 1) <= rec.slots) {
        size_t s = handle_slot(h, rec.slots);
        while (rec.handle_keys[s] && rec.handle_keys[s] != TASKREC_GONE) s = (s + 1) & (rec.slots - 1);
        rec.used += rec.handle_keys[s] == NULL;
        rec.live++;
        rec.handle_keys[s] = h;
        rec.handle_ids[s] = id;
    }
    fprintf(rec.fp, "H %lld %zu\n", id, starpu_data_get_size(h));
    return id;
}

/* An unregistered handle's id is not used again. */
static void retire_handle(const void *h)
{
    long long s = find_slot(h);
    if (s < 0) return;
    rec.handle_keys[s] = TASKREC_GONE;
    rec.live--;
}

static void close_record(void)
{
    if (rec.fp && fclose(rec.fp) != 0) rec.failed = 1;
    rec.fp = NULL;
    free(rec.handle_keys);
    free(rec.handle_ids);
    rec.handle_keys = NULL;
    rec.handle_ids = NULL;
}

mdf_status mdf_runtime_record_start(const char *path, mdf_error *err)
{
    pthread_mutex_lock(&rec.lock);
    close_record();
    rec.fp = fopen(path, "w");
    rec.slots = TASKREC_FIRST_SLOTS;
    rec.used = rec.live = 0;
    rec.handle_keys = calloc(rec.slots, sizeof *rec.handle_keys);
    rec.handle_ids = calloc(rec.slots, sizeof *rec.handle_ids);
    rec.tasks = rec.nhandles = 0;
    host_last_us = starpu_timing_now();
    rec.failed = 0;
    mdf_status st = MDF_OK;
    if (!rec.fp) {
        st = mdf_error_set(err, MDF_ERR_IO, "cannot write the task record %s: %s", path, strerror(errno));
        close_record();
    } else if (!rec.handle_keys || !rec.handle_ids) {
        st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the task record");
        close_record();
    } else {
        fprintf(rec.fp, "%s\n", TASKREC_MAGIC);
    }
    atomic_store(&rec.on, st == MDF_OK);
    pthread_mutex_unlock(&rec.lock);
    return st;
}

/* Waits for every task first: their ends are part of the record. */
mdf_status mdf_runtime_record_stop(mdf_error *err)
{
    if (!atomic_load(&rec.on)) return MDF_OK;
    starpu_task_wait_for_all();
    pthread_mutex_lock(&rec.lock);
    atomic_store(&rec.on, 0);
    if (rec.fp && ferror(rec.fp)) rec.failed = 1;
    close_record();
    int failed = rec.failed;
    pthread_mutex_unlock(&rec.lock);
    return failed ? mdf_error_set(err, MDF_ERR_IO, "writing the task record failed (disk full?)") : MDF_OK;
}

int mdf_runtime_record_on(void) { return atomic_load_explicit(&rec.on, memory_order_relaxed); }

static void task_ended(void *p)
{
    recorded_end *arg = p;
    struct starpu_task *task = arg->task;
    if (arg->callback) arg->callback(arg->callback_arg);
    int64_t work = 0;
    if (task->cl_arg && task->cl_arg_size >= sizeof work) memcpy(&work, task->cl_arg, sizeof work);
    double us = -1.0;
    const struct starpu_profiling_task_info *info = task->profiling_info;
    if (info)
        us = starpu_timing_timespec_delay_us((struct timespec *)&info->start_time,
                                             (struct timespec *)&info->end_time);
    pthread_mutex_lock(&rec.lock);
    if (rec.fp) fprintf(rec.fp, "E %lld %lld %.3f\n", arg->id, (long long)work, us);
    pthread_mutex_unlock(&rec.lock);
}

void mdf_runtime_record_task(void *starpu_task)
{
    struct starpu_task *task = starpu_task;
    recorded_end *arg = malloc(sizeof *arg);
    pthread_mutex_lock(&rec.lock);
    if (!rec.fp || !arg) {
        rec.failed |= !arg;
        pthread_mutex_unlock(&rec.lock);
        free(arg);
        return;
    }
    arg->id = rec.tasks++;
    arg->callback = task->callback_func;
    arg->callback_arg = task->callback_arg;
    arg->task = task;
    int n = task->nbuffers;
    long long ids[n > 0 ? n : 1];
    for (int i = 0; i < n; i++) ids[i] = handle_id(STARPU_TASK_GET_HANDLE(task, i));
    const char *symbol = task->cl && task->cl->model && task->cl->model->symbol ? task->cl->model->symbol
                         : task->name                                           ? task->name
                                                                                : "unnamed";
    fprintf(rec.fp, "T %.3f %lld %d %s %d", host_gap_us(), arg->id, task->priority, symbol, n);
    for (int i = 0; i < n; i++) fprintf(rec.fp, " %lld:%d", ids[i], (int)STARPU_TASK_GET_MODE(task, i) & 0x1f);
    fputc('\n', rec.fp);
    pthread_mutex_unlock(&rec.lock);
    task->callback_func = task_ended;
    task->callback_arg = arg;
    task->callback_arg_free = 1;
}

/* A host event's line: while a record is on, takes the lock and returns 1
 * (write the line, then host_event_end); else 0. */
static int host_event_begin(void)
{
    if (!mdf_runtime_record_on()) return 0;
    pthread_mutex_lock(&rec.lock);
    if (rec.fp) return 1;
    pthread_mutex_unlock(&rec.lock);
    return 0;
}

static void host_event_end(void) { pthread_mutex_unlock(&rec.lock); }

/* After a wait: the wait is simulated, the host's own time restarts. */
static void host_wait_done(void)
{
    if (mdf_runtime_record_on()) host_last_us = starpu_timing_now();
}

void mdf_runtime_record_host_waited(void) { host_wait_done(); }

int mdf_data_acquire(void *handle, int mode)
{
    if (host_event_begin()) {
        fprintf(rec.fp, "A %.3f %lld %d\n", host_gap_us(), handle_id(handle), mode & 0x1f);
        host_event_end();
    }
    int ret = starpu_data_acquire(handle, (enum starpu_data_access_mode)mode);
    host_wait_done();
    return ret;
}

/* Unregistering waits for every task on the handle and frees its copies:
 * the replay does the same. The handle's id is retired. */
void mdf_data_unregister(void *handle)
{
    if (host_event_begin()) {
        fprintf(rec.fp, "U %.3f %lld\n", host_gap_us(), handle_id(handle));
        retire_handle(handle);
        host_event_end();
    }
    starpu_data_unregister(handle);
    host_wait_done();
}

void mdf_task_wait_for_n_submitted(unsigned n)
{
    if (host_event_begin()) {
        fprintf(rec.fp, "N %.3f %u\n", host_gap_us(), n);
        host_event_end();
    }
    starpu_task_wait_for_n_submitted(n);
    host_wait_done();
}

void mdf_task_wait_for_all(void)
{
    if (host_event_begin()) {
        fprintf(rec.fp, "S %.3f\n", host_gap_us());
        host_event_end();
    }
    starpu_task_wait_for_all();
    host_wait_done();
}

/* ---- planning counts ----------------------------------------------------------------
 * How many workers (and CUDA workers) mdflow plans its shards, chunks and
 * list tasks for: the running StarPU's, unless MDF_PLAN_CPUS / MDF_PLAN_CUDA
 * say otherwise (mdflow sched --simulate records the task graph that the
 * simulated machine would run). */
static int env_count(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) return -1;
    char *end;
    long n = strtol(v, &end, 10);
    return *end == '\0' && n >= 0 && n <= 4096 ? (int)n : -1;
}

int mdf_runtime_plan_cuda_workers(void)
{
    int n = env_count("MDF_PLAN_CUDA");
    return n >= 0 ? n : (int)starpu_cuda_worker_get_count();
}

int mdf_runtime_plan_workers(void)
{
    int cpus = env_count("MDF_PLAN_CPUS"), cuda = env_count("MDF_PLAN_CUDA");
    /* MDF_CUDA_ONLY: the GPUs run every planned task (the CPU workers only
     * host-side ones), so shards and chunks are planned for them alone. */
    if (cpus < 0 && cuda < 0 && mdf_runtime_cuda_only()) return (int)starpu_cuda_worker_get_count();
    if (cpus < 0 && cuda < 0) return (int)starpu_worker_get_count();
    if (cpus < 0) cpus = (int)starpu_cpu_worker_get_count();
    return cpus + mdf_runtime_plan_cuda_workers();
}
