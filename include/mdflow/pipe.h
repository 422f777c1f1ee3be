/* mdflow — pipelines (ALCHEMI's `a | b`): stages on separate worker groups
 * or MPI ranks, each with its own batch, sampler and step loop; a system
 * that leaves stage k is handed to stage k + 1 with its whole state
 * (positions, velocities, forces, id, step counters, info keys), and the
 * last stage hands systems to the run's receiver.
 *
 *   - In one process each stage runs its step loop on a thread of its own,
 *     submitting to a StarPU scheduling context over its share of the
 *     workers (starpu_sched_ctx_create), with its own policy if asked.
 *   - Across processes (mpirun), stages are placed on ranks; a stage on
 *     several ranks shares the stream of systems. Systems travel as packed
 *     frames through StarPU-MPI (dataflow/transport.h).
 *
 * Back-pressure. Every stage after the first has an inbox with a capacity
 * in systems and atoms: systems that arrived and are not yet in its batch.
 * When it is full, the stage before keeps its finished systems in its own
 * batch (they stop moving) and admits no new ones; when it has nothing
 * left to move it waits. Memory stays bounded for any dataset, and since
 * the last stage's receiver never refuses, no stage waits for ever. A
 * system too large for a stage's budget or inbox is refused before any
 * work is done, with an error naming the system and the budget.
 *
 * Statuses. Pipeline stage k (a plain or a fused stage) is renumbered to
 * start at the number of sub-stages before it, so systems end with the
 * status of the same stages fused (mdf_pipe_exit_status). Random numbers
 * are keyed by (seed, system id, the system's own step): a system follows
 * the trajectory it follows in the fused run, up to the round-off of
 * neighbour lists built in another order. */
#ifndef MDFLOW_PIPE_H
#define MDFLOW_PIPE_H

#include <stdint.h>
#include "mdflow/stage.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MDF_PIPE_MAX_STAGES 8
#define MDF_PIPE_MAX_RANKS 64
#define MDF_PIPE_NAME_MAX 64

typedef struct mdf_pipeline mdf_pipeline;

typedef struct mdf_pipe_stage_config {
    char name[MDF_PIPE_NAME_MAX]; /* for messages and reports ("" : "stage K") */
    mdf_sampler_config budget;    /* the stage's batch (max_atoms required, per instance) */
    int64_t refill_interval;      /* as mdf_inflight_config (default 10) */
    double refill_fraction;       /* (default 0.1) */
    int nshards;                  /* (0: automatic) */
    /* Inbox (stages after the first): systems that arrived, not yet in the
     * batch. The stage before stops sending when it is full. */
    int64_t inbox_systems;        /* 0: no limit in systems */
    int64_t inbox_atoms;          /* 0: the stage's budget.max_atoms */
    /* Placement in a process: the stage's scheduling context. */
    int ncpus;                    /* CPU workers of its own; -1: an even share of the
                                   * process's; 0: none of its own (its CPU-only tasks,
                                   * the census and log rows, run on a CPU worker it
                                   * shares with the stage before it) */
    int ncuda;                    /* CUDA workers; -1: all of them for the last stage
                                   * of the process, none for the others */
    char sched[MDF_PIPE_NAME_MAX];/* the context's policy ("" : the process's) */
    /* Placement across MPI ranks (mdf_pipe_run_config.mpi). */
    int nranks;                   /* 0: the default (stage k on rank k; the last stage
                                   * on every rank left) */
    int ranks[MDF_PIPE_MAX_RANKS];
} mdf_pipe_stage_config;

void mdf_pipe_stage_config_init(mdf_pipe_stage_config *c);

mdf_status mdf_pipeline_create(mdf_pipeline **out, mdf_error *err);
/* Destroys the pipeline and its stages. */
void mdf_pipeline_destroy(mdf_pipeline *p);
/* Appends stage s (consumed, also on failure) with its configuration. A
 * fused stage is one pipeline stage (`relax | (md1 + md2)`). */
mdf_status mdf_pipeline_add(mdf_pipeline *p, mdf_stage *s, const mdf_pipe_stage_config *cfg, mdf_error *err);
/* a | b with the same budget for both and the default placement: a new
 * pipeline, or b appended to a pipeline (a NULL, *out the pipeline). */
mdf_status mdf_pipe(mdf_pipeline *into, mdf_stage *a, mdf_stage *b, const mdf_sampler_config *budget, mdf_pipeline **out,
                    mdf_error *err);
int mdf_pipeline_nstages(const mdf_pipeline *p);
/* The status systems leave the last stage with (sub-stages in all). */
int32_t mdf_pipeline_exit_status(const mdf_pipeline *p);
/* Stage k (0-based), e.g. to add hooks; NULL when out of range. */
mdf_stage *mdf_pipeline_stage(mdf_pipeline *p, int k);

typedef struct mdf_pipe_run_config {
    const mdf_frame *frames;      /* the dataset (every rank's copy, under MPI) */
    size_t nframes;
    mdf_exit_fn on_exit;          /* every system once, finished or not (on rank 0
                                   * under MPI), from any thread: it must lock */
    void *user;
    int mpi;                      /* 1: over MPI ranks (mdf_runtime_config.mpi started
                                   * StarPU-MPI); 0: every stage in this process */
    double abort_timeout_s;       /* after a failure, how long ranks wait for each
                                   * other to stop cleanly (default 10 s) */
    /* Checkpoints: every stage instance saves its state (its batch, its
     * sampler, what waits in its inbox, the systems it handed on) to a file
     * of its own, named from checkpoint_path with the stage and the rank
     * (mdf_pipeline_checkpoint_name), every checkpoint_every of its steps
     * and at exit; resume = 1 continues from them (see mdf_inflight_config). */
    const char *checkpoint_path;  /* NULL: none */
    int64_t checkpoint_every;     /* steps (0: only at exit) */
    int resume;
} mdf_pipe_run_config;

void mdf_pipe_run_config_init(mdf_pipe_run_config *c);

/* The default placement over MPI ranks (a stage whose config lists no
 * ranks): the ranks of stage k of nstages among nranks, into out (at most
 * MDF_PIPE_MAX_RANKS); returns how many. Stage k on rank k, the last stage
 * on every rank left (so -np 3 runs the last of two stages on ranks 1 and
 * 2); with fewer ranks than stages, stage k on rank k mod nranks. */
int mdf_pipe_default_ranks(int k, int nstages, int nranks, int *out);

/* The checkpoint file of stage k's instance on `rank`: checkpoint_path with
 * ".STAGE.rRANK" before its extension (run.ckpt.h5 -> run.ckpt.md.r1.h5). */
void mdf_pipeline_checkpoint_name(const mdf_pipeline *p, const char *checkpoint_path, int k, int rank, char *out,
                                  size_t size);

/* One stage on one rank. */
typedef struct mdf_pipe_stage_report {
    char name[MDF_PIPE_NAME_MAX];
    int stage, rank;
    int64_t systems_in;           /* systems that entered its batch */
    int64_t systems_out;          /* handed on at its exit status */
    int64_t systems_unfinished;   /* handed to the receiver before its exit status */
    int64_t steps;
    double wall_s;                /* its step loop, from the first arrival */
    double atom_steps_per_second;
    int nworkers;
    double busy_share, idle_share, sleeping_share; /* of its workers over the run */
    double blocked_s;             /* waiting for room downstream, nothing to move */
    double starved_s;             /* waiting for systems to arrive, nothing to move */
    int64_t held_max;             /* most finished systems kept at once (back-pressure) */
    int64_t inbox_cap_systems, inbox_cap_atoms;   /* 0 systems: no limit */
    int64_t inbox_hwm_systems, inbox_hwm_atoms;   /* its inbox's high-water marks */
    int64_t refills;
    int64_t model_evaluations;
    int64_t list_rebuilds;        /* neighbour-list rebuilds, summed over systems */
} mdf_pipe_stage_report;

typedef struct mdf_pipe_report {
    int n;                        /* stage instances (rank 0 has them all) */
    mdf_pipe_stage_report *stages;
    double wall_s;
    int64_t finished;             /* systems at the exit status */
    int64_t budget_exits;         /* of those, some stage let go on its step budget */
    int64_t model_evaluations, list_rebuilds;
    int nranks;
} mdf_pipe_report;

void mdf_pipe_report_free(mdf_pipe_report *r);

/* Checks, before any work and without StarPU: every system against every
 * stage's budget and inbox (the error names the system, the stage and the
 * budget), the model against every system's cell, and the placement
 * against the ranks (nranks: 1 in one process). */
mdf_status mdf_pipeline_check(const mdf_pipeline *p, const mdf_model *m, const mdf_frame *frames, size_t n, int nranks,
                          mdf_error *err);

/* Runs the pipeline over the dataset. Returns when every system is out
 * (every rank then returns MDF_OK), or with the first failure: a stage that
 * fails stops every other stage (on every rank) within one step, with an
 * error naming the stage, the rank and the cause; systems already handed
 * to on_exit stay handed. Under MPI every rank calls it with the same
 * pipeline and dataset; rank 0's report holds every stage instance. */
mdf_status mdf_pipeline_run(mdf_pipeline *p, mdf_model *m, const mdf_pipe_run_config *cfg, mdf_pipe_report *report,
                        mdf_error *err);

#ifdef __cplusplus
}
#endif
#endif
