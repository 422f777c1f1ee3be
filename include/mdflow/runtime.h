/* mdflow — starting and stopping StarPU for mdflow, and the per-worker
 * statistics that end a run. */
#ifndef MDFLOW_RUNTIME_H
#define MDFLOW_RUNTIME_H

#include <stddef.h>
#include <stdio.h>
#include "mdflow/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mdf_runtime_config {
    int ncpus;          /* CPU workers; -1: StarPU's choice (STARPU_NCPU wins) */
    int ncuda;          /* CUDA workers; -1: StarPU's choice (STARPU_NCUDA wins) */
    const char *sched;  /* scheduler; NULL: StarPU's default (STARPU_SCHED wins) */
    int profiling;      /* 1: collect per-worker statistics */
    int mpi;            /* 1: also start StarPU-MPI over MPI_COMM_WORLD (MPI_Init): the
                         * process is one rank of an `mpirun` (pipelines over ranks) */
} mdf_runtime_config;

void mdf_runtime_config_init(mdf_runtime_config *cfg);
/* Initialises StarPU. Environment variables (STARPU_SCHED, STARPU_NCPU, ...)
 * take precedence over cfg, as StarPU documents. */
mdf_status mdf_runtime_start(const mdf_runtime_config *cfg, mdf_error *err);
void mdf_runtime_stop(void);

/* MPI (pipelines over ranks). 1 when mdflow was built with StarPU-MPI. */
int mdf_runtime_mpi_available(void);
/* This process's rank and the number of ranks: 0 and 1 unless started with
 * cfg.mpi. */
int mdf_runtime_mpi_rank(void);
int mdf_runtime_mpi_size(void);
/* The rank and size an MPI launcher (mpirun: Open MPI, MPICH, Slurm) gave
 * this process in its environment, before MPI is started; 0 and 1 when
 * none did. */
int mdf_runtime_launcher_rank(void);
int mdf_runtime_launcher_size(void);
/* Ends every rank of the job (MPI_Abort) after a failure that left the
 * ranks unable to finish together; a program's last resort, never called
 * by the library itself. Without MPI it returns. */
void mdf_runtime_mpi_abort(int code);

/* MDF_OK when `name` (NULL or "": none) is a scheduling policy of the
 * linked StarPU; else MDF_ERR_INVALID naming it after `where` (the option
 * or key) and listing the valid ones. mdf_runtime_start checks the
 * configured name and STARPU_SCHED so (StarPU would warn and fall back on
 * its default); callers may check earlier. No StarPU needs to run. */
mdf_status mdf_runtime_check_sched(const char *name, const char *where, mdf_error *err);

/* The StarPU version mdflow was compiled against and the one it runs with
 * (major, minor, release), and whether that StarPU was built with CUDA. */
typedef struct mdf_runtime_versions_info {
    int built[3];
    int running[3];
    int starpu_cuda;
} mdf_runtime_versions_info;
void mdf_runtime_versions(mdf_runtime_versions_info *v);

/* Idle StarPU workers poll for tasks, which takes CPU time from host-only
 * work (formatting output) on a machine with one worker per core. Pausing
 * puts them to sleep until mdf_runtime_resume; only while no task is
 * pending or about to be submitted. */
void mdf_runtime_pause(void);
void mdf_runtime_resume(void);

/* Worker counts once started. */
int mdf_runtime_cpu_workers(void);
int mdf_runtime_cuda_workers(void);
/* 1 when MDF_CUDA_ONLY=1 was set at mdf_runtime_start and CUDA workers
 * run: every task whose codelet has a CUDA implementation then runs on the
 * CUDA workers (task->where), so that the batch stays on the GPU; the
 * others (host views, callbacks, sinks to files) run on the CPU workers. */
int mdf_runtime_cuda_only(void);
/* Name of the scheduling policy in use. */
const char *mdf_runtime_sched_name(void);

typedef struct mdf_worker_stats {
    char name[64];
    long tasks;
    double executing_s;  /* time spent in codelets */
    double total_s;      /* time since profiling started */
    double sleeping_s;   /* time spent asleep (no task to run); idle = total - executing - sleeping */
} mdf_worker_stats;

/* Fills up to max entries, returns the worker count. Needs profiling.
 * Reading restarts the statistics (StarPU's counters). */
int mdf_runtime_worker_stats(mdf_worker_stats *out, int max);
/* Prints a per-worker table (tasks, busy share) to fp. */
void mdf_runtime_print_worker_stats(FILE *fp);
/* Restarts the statistics (e.g. after warm-up). */
void mdf_runtime_reset_stats(void);

/* Bytes StarPU moved between memory nodes (every bus, both directions)
 * since profiling started or the last call (StarPU restarts its bus
 * counters when they are read), and the number of transfers; 0 on a machine
 * with one memory node (CPU workers only). Needs profiling. */
long long mdf_runtime_bus_bytes(long long *transfers);

/* ---- task trace (mdflow sched's Gantt charts) ----------------------------------
 *
 * While on, every task submitted through mdf_submit records its codelet,
 * worker and execution interval from StarPU's task profiling (Debian's
 * StarPU has no FxT traces): a task callback appends one record under a
 * lock. Off (the default) it costs one test per submitted task. Needs
 * profiling (mdf_runtime_config.profiling, the default). */
typedef struct mdf_task_record {
    int worker;          /* StarPU worker id */
    int codelet;         /* index into mdf_runtime_trace_codelets' names */
    double start_us;     /* StarPU's clock, microseconds */
    double end_us;
    double predicted_us; /* the length the policy's performance model predicted
                          * (dmda family, at push); NaN when it made none */
} mdf_task_record;

/* Starts recording (clears what an earlier trace kept) and restarts the
 * worker and bus statistics, so that they cover what the trace covers.
 * StarPU must run. */
mdf_status mdf_runtime_trace_start(mdf_error *err);
/* Stops recording; what was recorded stays readable until the next start. */
void mdf_runtime_trace_stop(void);
/* The records, in completion order, and their count. */
const mdf_task_record *mdf_runtime_trace_tasks(size_t *n);
/* The codelet (task) names the records index, and their count. */
const char *const *mdf_runtime_trace_codelets(size_t *n);
/* 1 when a trace is recording; mdf_submit asks before each task. */
int mdf_runtime_trace_on(void);
/* Makes a task about to be submitted record itself at its end (its callback,
 * which must be free). */
void mdf_runtime_trace_task(void *starpu_task);
/* Predictions the codelets' performance models were asked for and could
 * not make yet (too few measurements) since the process started. */
long mdf_runtime_uncalibrated_predictions(void);
/* Prints the codelets' saved performance models (mdflow perfmodels): their
 * folder, then per codelet and arch the measurements, size classes, mean,
 * line and whether it is calibrated. -1 when neither STARPU_HOME nor HOME
 * is set. Needs no running StarPU. */
int mdf_runtime_print_perfmodels(FILE *out);
/* The folder the performance models are saved in and read from
 * ($MDF_PERFMODELS_DIR, else STARPU_HOME's, else HOME's); -1 without one. */
int mdf_runtime_perfmodels_dir(char *out, size_t n);
/* Writes to out_dir every model of cpu_dir or cuda_dir with its CPU fit from
 * cpu_dir and its CUDA fit from cuda_dir (mdflow sched --simulate: CUDA fits
 * measured on a GPU node); *cuda_models counts the calibrated CUDA fits.
 * -1 when out_dir cannot be made. Needs no running StarPU. */
int mdf_runtime_merge_perfmodels(const char *cpu_dir, const char *cuda_dir, const char *out_dir, int *cuda_models);
/* Records a finished task (from its callback, while a trace records). */
void mdf_runtime_trace_record(void *starpu_task);

/* ---- task graph record (mdflow sched --simulate; dataflow/taskrec.c) -------------
 *
 * While on, every task submitted through mdf_submit, every host wait on
 * data (mdf_data_acquire) and on all tasks (mdf_task_wait_for_all) is
 * written to the record in host order, and each task's work and measured
 * length when it ends; mdflow-simulate replays it on a simulated machine.
 * Off (the default) it costs one test per task and per wait. */
mdf_status mdf_runtime_record_start(const char *path, mdf_error *err);
/* Waits for every task, then closes the record; an error if writing failed. */
mdf_status mdf_runtime_record_stop(mdf_error *err);
int mdf_runtime_record_on(void);
/* Adds a task about to be submitted to the record; its callback (which
 * takes its argument as before) runs first at its end. */
void mdf_runtime_record_task(void *starpu_task);
/* starpu_data_acquire(handle, mode), starpu_data_unregister(handle),
 * starpu_task_wait_for_all() and starpu_task_wait_for_n_submitted(n), noted
 * in the record while one is on: the library's host waits go through them. */
int mdf_data_acquire(void *starpu_handle, int mode);
void mdf_data_unregister(void *starpu_handle);
void mdf_task_wait_for_all(void);
void mdf_task_wait_for_n_submitted(unsigned n);
/* Tells the record that the host has just waited on a condition another
 * thread signals (a stage's census answering): the time waited is not the
 * host's own work, which the replay would spend. The wait itself is not
 * replayed; the task window's waits keep a replayed host about as far
 * behind its tasks. */
void mdf_runtime_record_host_waited(void);
/* How many workers, and CUDA workers, mdflow plans shards, chunks and list
 * tasks for: StarPU's (its CUDA workers alone under MDF_CUDA_ONLY, with a
 * shard per GPU by default), or MDF_PLAN_CPUS (+ MDF_PLAN_CUDA) when set, which
 * mdflow sched --simulate sets to record the graph the simulated machine
 * would run. */
int mdf_runtime_plan_workers(void);
int mdf_runtime_plan_cuda_workers(void);

#ifdef __cplusplus
}
#endif
#endif
