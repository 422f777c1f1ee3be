/* mdflow — StarPU start/stop and per-worker statistics. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include <starpu_profiling.h>
#include <starpu_expert.h>
#include <sched.h>
#include "mdflow/runtime.h"
#include "../codelets/common/mdf_codelet.h"
#ifdef MDF_HAVE_MPI
#include <starpu_mpi.h>
#endif

/* Set once by mdf_runtime_start, read after: StarPU-MPI's own state. */
static int mpi_started, mpi_rank, mpi_size = 1;
#ifdef MDF_HAVE_MPI
/* Driver mode's keep-alive: a receive from this rank to itself, posted at
 * start and matched at stop (see start_starpu). */
#define MDF_KEEPALIVE_TAG ((starpu_mpi_tag_t)0x4d44460000000000LL - 1)
static int driver_mode;
static long keepalive_in, keepalive_out;
static starpu_data_handle_t keepalive_recv, keepalive_send;
#endif

void mdf_runtime_config_init(mdf_runtime_config *cfg)
{
    cfg->ncpus = -1;
    cfg->ncuda = -1;
    cfg->sched = NULL;
    cfg->profiling = 1;
    cfg->mpi = 0;
}

/* The policies the linked StarPU offers, ", "-separated. */
static void sched_names(char *buf, size_t size)
{
    struct starpu_sched_policy **p = starpu_sched_get_predefined_policies();
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; p && p[k] && used + 1 < size; k++) {
        int w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", p[k]->policy_name);
        if (w < 0) break;
        used += (size_t)w;
    }
}

mdf_status mdf_runtime_check_sched(const char *name, const char *where, mdf_error *err)
{
    if (!name || !*name) return MDF_OK;
    struct starpu_sched_policy **p = starpu_sched_get_predefined_policies();
    for (int k = 0; p && p[k]; k++)
        if (p[k]->policy_name && strcmp(p[k]->policy_name, name) == 0) return MDF_OK;
    char names[1024];
    sched_names(names, sizeof names);
    return mdf_error_set(err, MDF_ERR_INVALID, "%s: '%s' is not a StarPU scheduler: use one of %s", where, name,
                         names);
}

void mdf_runtime_versions(mdf_runtime_versions_info *v)
{
    memset(v, 0, sizeof *v);
    v->built[0] = STARPU_MAJOR_VERSION;
    v->built[1] = STARPU_MINOR_VERSION;
    v->built[2] = STARPU_RELEASE_VERSION;
    starpu_get_version(&v->running[0], &v->running[1], &v->running[2]);
#ifdef STARPU_USE_CUDA
    v->starpu_cuda = 1;
#endif
}

/* StarPU alone, or StarPU with StarPU-MPI (MPI_Init on MPI_COMM_WORLD).
 *
 * StarPU-MPI's progression thread tests its requests in a loop for as long
 * as a receive is posted, and a pipeline keeps one posted per peer: beside
 * the worker of a rank bound to one core (mpirun binds each rank to a core)
 * it took half of that core, and md on one rank ran 2x slower than on a
 * context of one CPU in one process. StarPU-MPI's driver mode
 * (STARPU_MPI_DRIVER_CALL_FREQUENCY, set to 1 here unless the environment
 * sets it) makes that thread run CPU worker 0 itself, one task between two
 * rounds of MPI tests: nothing polls beside the workers. But StarPU 1.3's
 * progression thread sleeps whenever no receive is posted, and worker 0's
 * tasks then never run: a receive from the rank to itself stays posted from
 * here to mdf_runtime_stop, which matches it. starpu_mpi_init_conf starts
 * StarPU too, and starpu_mpi_shutdown stops it. */
/* What an idle CPU worker does between two looks for a task: give its
 * core to any other thread that waits for one. With a worker on every core,
 * the thread that submits the tasks has no core of its own; without this
 * it preempted busy workers and, with the idle worker polling the
 * scheduler's locks, spent most of its time in futex waits (864-atom in.lj
 * on 2 cores: a fifth of a core, and 5% more wall time). When no other
 * thread waits, the call returns at once: a short pause in the polling. */
static int idle_hooked; /* registered once per process (StarPU keeps its hooks) */
static int cuda_only;   /* MDF_CUDA_ONLY, read by mdf_runtime_start */

static unsigned idle_yield(void *arg)
{
    (void)arg;
    sched_yield();
    return 1; /* the worker may still block (StarPU 1.4's blocking drivers) */
}

static int start_starpu(struct starpu_conf *conf, int mpi, mdf_error *err)
{
    if (!mpi) return starpu_init(conf);
#ifdef MDF_HAVE_MPI
    setenv("STARPU_MPI_DRIVER_CALL_FREQUENCY", "1", 0);
    setenv("STARPU_MPI_DRIVER_TASK_FREQUENCY", "1", 0);
    const char *freq = getenv("STARPU_MPI_DRIVER_CALL_FREQUENCY");
    driver_mode = freq && atoi(freq) > 0;
    int ret = driver_mode ? starpu_mpi_init_conf(NULL, NULL, 1, MPI_COMM_WORLD, conf) : starpu_init(conf);
    if (ret == 0 && !driver_mode) {
        ret = starpu_mpi_init_comm(NULL, NULL, 1, MPI_COMM_WORLD);
        if (ret != 0) starpu_shutdown();
    }
    if (ret != 0) {
        if (ret != -ENODEV) mdf_error_set(err, MDF_ERR_STARPU, "StarPU-MPI failed to start (error %d)", ret);
        return ret;
    }
    starpu_mpi_comm_rank(MPI_COMM_WORLD, &mpi_rank);
    starpu_mpi_comm_size(MPI_COMM_WORLD, &mpi_size);
    mpi_started = 1;
    if (driver_mode) {
        starpu_variable_data_register(&keepalive_recv, STARPU_MAIN_RAM, (uintptr_t)&keepalive_in, sizeof keepalive_in);
        starpu_variable_data_register(&keepalive_send, STARPU_MAIN_RAM, (uintptr_t)&keepalive_out,
                                      sizeof keepalive_out);
        starpu_mpi_irecv_detached(keepalive_recv, mpi_rank, MDF_KEEPALIVE_TAG, MPI_COMM_WORLD, NULL, NULL);
    }
    return 0;
#else
    (void)conf;
    mdf_error_set(err, MDF_ERR_INVALID, "mdflow was built without StarPU-MPI: install libopenmpi-dev and rebuild "
                  "(scripts/build.sh), or run without mpirun");
    return -EINVAL;
#endif
}

mdf_status mdf_runtime_start(const mdf_runtime_config *cfg_in, mdf_error *err)
{
    mdf_runtime_config cfg;
    if (cfg_in) cfg = *cfg_in;
    else mdf_runtime_config_init(&cfg);
    /* StarPU itself warns about an unknown policy and falls back on its
     * default: a misspelled name would silently run another scheduler. */
    mdf_status st = mdf_runtime_check_sched(getenv("STARPU_SCHED"), "STARPU_SCHED (environment)", err);
    if (st == MDF_OK && !getenv("STARPU_SCHED")) st = mdf_runtime_check_sched(cfg.sched, "scheduler", err);
    if (st != MDF_OK) return st;
    struct starpu_conf conf;
    starpu_conf_init(&conf);
    /* starpu_conf_init already read STARPU_NCPU, STARPU_SCHED, ...: only
     * fill what the environment left open. */
    if (cfg.ncpus >= 0 && !getenv("STARPU_NCPU") && !getenv("STARPU_NCPUS")) conf.ncpus = cfg.ncpus;
    if (cfg.ncuda >= 0 && !getenv("STARPU_NCUDA")) conf.ncuda = cfg.ncuda;
    if (cfg.sched && !getenv("STARPU_SCHED")) conf.sched_policy_name = cfg.sched;
    int ret = start_starpu(&conf, cfg.mpi, err);
    if (ret == -ENODEV)
        return mdf_error_set(err, MDF_ERR_STARPU, "StarPU found no worker: check STARPU_NCPU/STARPU_NCUDA");
    if (ret != 0) return err && err->code ? err->code : mdf_error_set(err, MDF_ERR_STARPU, "StarPU failed to start "
                                                                      "(error %d)", ret);
    if (cfg.profiling) starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
    const char *only = getenv("MDF_CUDA_ONLY");
    cuda_only = only && *only && strcmp(only, "0") != 0 && starpu_cuda_worker_get_count() > 0;
#ifndef STARPU_SIMGRID
    if (!idle_hooked) idle_hooked = starpu_idle_hook_register(idle_yield, NULL) >= 0;
#endif
    return MDF_OK;
}

void mdf_runtime_stop(void)
{
    mdf_perfmodels_save(); /* the fits this run measured, for the next one */
    cuda_only = 0;         /* read again by the next mdf_runtime_start */
#ifdef MDF_HAVE_MPI
    if (mpi_started) {
        if (driver_mode) {
            starpu_mpi_isend_detached(keepalive_send, mpi_rank, MDF_KEEPALIVE_TAG, MPI_COMM_WORLD, NULL, NULL);
            starpu_mpi_wait_for_all(MPI_COMM_WORLD);
            starpu_data_unregister(keepalive_recv);
            starpu_data_unregister(keepalive_send);
        }
        starpu_mpi_shutdown();
        if (!driver_mode) starpu_shutdown(); /* started apart from StarPU-MPI (starpu_mpi_init_comm) */
        mpi_started = driver_mode = 0;
        mpi_rank = 0;
        mpi_size = 1;
        return;
    }
#endif
    starpu_shutdown();
}

int mdf_runtime_mpi_available(void)
{
#ifdef MDF_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

int mdf_runtime_mpi_rank(void) { return mpi_rank; }
int mdf_runtime_mpi_size(void) { return mpi_size; }

static int env_int(const char *const *names, int fallback)
{
    for (int k = 0; names[k]; k++) {
        const char *v = getenv(names[k]);
        char *end = NULL;
        long x = v ? strtol(v, &end, 10) : 0;
        if (v && end != v && !*end && x >= 0 && x < (1L << 30)) return (int)x;
    }
    return fallback;
}

int mdf_runtime_launcher_rank(void)
{
    /* Open MPI, MPICH's Hydra, MVAPICH (not Slurm's: set in every job, mpirun or not). */
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", NULL};
    return env_int(names, 0);
}

int mdf_runtime_launcher_size(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", NULL};
    return env_int(names, 1);
}

void mdf_runtime_mpi_abort(int code)
{
#ifdef MDF_HAVE_MPI
    if (mpi_started) MPI_Abort(MPI_COMM_WORLD, code);
#else
    (void)code;
#endif
}

void mdf_runtime_pause(void) { starpu_pause(); }
void mdf_runtime_resume(void) { starpu_resume(); }

int mdf_runtime_cpu_workers(void) { return (int)starpu_cpu_worker_get_count(); }
int mdf_runtime_cuda_workers(void) { return (int)starpu_cuda_worker_get_count(); }
int mdf_runtime_cuda_only(void) { return cuda_only; }

const char *mdf_runtime_sched_name(void)
{
    struct starpu_sched_policy *p = starpu_sched_ctx_get_sched_policy(0) /* the initial context */;
    return p && p->policy_name ? p->policy_name : "unknown";
}

static double timing_seconds(const struct timespec *t) { return (double)t->tv_sec + 1e-9 * (double)t->tv_nsec; }

int mdf_runtime_worker_stats(mdf_worker_stats *out, int max)
{
    int n = (int)starpu_worker_get_count();
    for (int w = 0; w < n && w < max; w++) {
        struct starpu_profiling_worker_info info;
        memset(&out[w], 0, sizeof out[w]);
        starpu_worker_get_name(w, out[w].name, sizeof out[w].name);
        if (starpu_profiling_worker_get_info(w, &info) != 0) continue;
        out[w].tasks = info.executed_tasks;
        out[w].executing_s = timing_seconds(&info.executing_time);
        out[w].total_s = timing_seconds(&info.total_time);
        out[w].sleeping_s = timing_seconds(&info.sleeping_time);
    }
    return n;
}

void mdf_runtime_reset_stats(void)
{
    int n = (int)starpu_worker_get_count();
    for (int w = 0; w < n; w++) starpu_profiling_worker_get_info(w, NULL);
}

void mdf_runtime_print_worker_stats(FILE *fp)
{
    mdf_worker_stats st[STARPU_NMAXWORKERS];
    int n = mdf_runtime_worker_stats(st, STARPU_NMAXWORKERS);
    fprintf(fp, "StarPU workers (scheduler %s):\n", mdf_runtime_sched_name());
    fprintf(fp, "  %-28s %10s %12s %8s\n", "worker", "tasks", "busy (s)", "busy %");
    for (int w = 0; w < n; w++)
        fprintf(fp, "  %-28s %10ld %12.3f %7.1f%%\n", st[w].name, st[w].tasks, st[w].executing_s,
                st[w].total_s > 0 ? 100.0 * st[w].executing_s / st[w].total_s : 0.0);
}

long long mdf_runtime_bus_bytes(long long *transfers) { return mdf_bus_bytes(transfers); }

/* ---- task trace ------------------------------------------------------------------------- */

#define TRACE_CODELETS_MAX 256

static struct {
    pthread_mutex_t lock;
    volatile int on;
    mdf_task_record *rec;
    size_t n, cap;
    size_t ncodelets;
    const char *names[TRACE_CODELETS_MAX]; /* copies: a plugin's codelet may go first */
    const void *keys[TRACE_CODELETS_MAX];  /* the task's name pointer, for a fast lookup */
} trace = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void trace_clear(void)
{
    for (size_t k = 0; k < trace.ncodelets; k++) free((void *)trace.names[k]);
    free(trace.rec);
    trace.rec = NULL;
    trace.n = trace.cap = trace.ncodelets = 0;
}

mdf_status mdf_runtime_trace_start(mdf_error *err)
{
    pthread_mutex_lock(&trace.lock);
    trace_clear();
    trace.cap = 4096;
    trace.rec = malloc(trace.cap * sizeof *trace.rec);
    trace.on = trace.rec != NULL;
    pthread_mutex_unlock(&trace.lock);
    mdf_runtime_reset_stats();
    mdf_runtime_bus_bytes(NULL);
    return trace.on ? MDF_OK : mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the task trace");
}

void mdf_runtime_trace_stop(void) { trace.on = 0; }
int mdf_runtime_trace_on(void) { return trace.on; }

const mdf_task_record *mdf_runtime_trace_tasks(size_t *n)
{
    *n = trace.n;
    return trace.rec;
}

const char *const *mdf_runtime_trace_codelets(size_t *n)
{
    *n = trace.ncodelets;
    return trace.names;
}

/* The index of a task's name among the trace's codelets (added when new);
 * -1 when the table is full. Under the lock. */
static int trace_codelet(const char *name)
{
    for (size_t k = 0; k < trace.ncodelets; k++)
        if (trace.keys[k] == name) return (int)k;
    for (size_t k = 0; k < trace.ncodelets; k++)
        if (strcmp(trace.names[k], name) == 0) return (int)k;
    if (trace.ncodelets == TRACE_CODELETS_MAX) return -1;
    char *copy = strdup(name);
    if (!copy) return -1;
    trace.keys[trace.ncodelets] = name;
    trace.names[trace.ncodelets] = copy;
    return (int)trace.ncodelets++;
}

long mdf_runtime_uncalibrated_predictions(void) { return mdf_perfmodels_uncalibrated(); }
int mdf_runtime_print_perfmodels(FILE *out) { return mdf_perfmodels_print(out); }
int mdf_runtime_perfmodels_dir(char *out, size_t n) { return mdf_perfmodels_dir(out, n); }
int mdf_runtime_merge_perfmodels(const char *cpu_dir, const char *cuda_dir, const char *out_dir, int *cuda_models)
{
    return mdf_perfmodels_merge(cpu_dir, cuda_dir, out_dir, cuda_models);
}

/* From the task's callback, on the worker that ran it: StarPU has set the
 * profiling interval by then. */

void mdf_runtime_trace_record(void *starpu_task)
{
    struct starpu_task *task = starpu_task;
    struct starpu_profiling_task_info *info = task->profiling_info;
    if (!trace.on || !info) return;
    const char *name = task->name ? task->name : task->cl && task->cl->name ? task->cl->name : "unnamed";
    /* task->predicted: set by the model-based policies when they place the
     * task, NaN (or 0 for a task without a model) otherwise. */
    double predicted = task->cl && task->cl->model && task->predicted > 0.0 ? task->predicted : NAN;
    mdf_task_record r = {info->workerid, 0, starpu_timing_timespec_to_us(&info->start_time),
                         starpu_timing_timespec_to_us(&info->end_time), predicted};
    pthread_mutex_lock(&trace.lock);
    r.codelet = trace_codelet(name);
    if (trace.n == trace.cap) {
        mdf_task_record *grown = realloc(trace.rec, 2 * trace.cap * sizeof *grown);
        if (grown) {
            trace.rec = grown;
            trace.cap *= 2;
        }
    }
    if (trace.n < trace.cap && r.codelet >= 0) trace.rec[trace.n++] = r; /* else lost: no memory */
    pthread_mutex_unlock(&trace.lock);
}

void mdf_runtime_trace_task(void *starpu_task)
{
    struct starpu_task *task = starpu_task;
    if (task->callback_func) return;
    task->callback_func = mdf_runtime_trace_record;
    task->callback_arg = task;
}
