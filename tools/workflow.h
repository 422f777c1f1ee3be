/* mdflow — workflow files: what `mdflow run FILE` reads.
 *
 * A workflow is one YAML 1.1 document (parsed with libyaml): the input
 * dataset, the model, named stages with their parameters, how they are
 * composed (`relax + md` fuses them with mdf_fuse), the sampler's budgets for
 * inflight batching, the outputs, the hooks and the scheduler. Every key is
 * documented in examples/relax_md.yaml. A composition with '|' is a
 * pipeline (mdflow/pipe.h): `relax | md` runs each term as a pipeline stage
 * of its own (its own batch, sampler and step loop, on its own workers or
 * MPI ranks); `+` binds tighter (`(relax + md1) | md2`). Its stages' first
 * entries may carry a budget and an inbox of their own (stages.NAME.sampler,
 * stages.NAME.inbox), and the top-level `placement:` places them.
 *
 * Its `plugins:` are loaded first (mdf_plugin_load, paths relative to the
 * workflow's folder), so a plugin's model, methods and hooks are names like
 * the built-ins'. Besides, wf_load only reads and checks: it needs no StarPU
 * and writes nothing. Every
 * problem (malformed YAML, unknown or duplicate key, wrong type, value out of
 * range, unknown method, element or stage, missing required key, unreadable
 * input) is an error "FILE:LINE: what is wrong: how to fix it" with code
 * MDF_ERR_PARSE (malformed YAML) or MDF_ERR_INVALID (everything else). */
#ifndef MDF_WORKFLOW_H
#define MDF_WORKFLOW_H

#include <stdint.h>
#include "mdflow/mdflow.h"
#include "mdflow/sampler.h"
#include "runner.h"

#define WF_MAX_STAGES 8     /* a fused stage holds at most 8 sub-stages */
#define WF_PATH_MAX 4096
#define WF_NAME_MAX 64
#define WF_STAGE_HOOKS 8    /* hooks by registered name per stage */

/* A hook of a stage's `hooks:` list or the output's snapshot sink, created
 * by its registered name (mdf_hook_create_named, mdf_sink_create_named)
 * with its settings. */
typedef struct wf_named_hook {
    char type[WF_NAME_MAX];
    mdf_param_list params;
    int line;
} wf_named_hook;

/* One entry of `stages:`. */
typedef struct wf_stage {
    char name[WF_NAME_MAX];
    int line;                  /* where the stage's mapping starts */
    int is_optimiser;
    mdf_stage_config cfg;      /* integrator (points into `method`), step_budget,
                                * entry_temperature_K, params (dt_fs, temperature_K,
                                * seed), method_params (checked against the method's table) */
    char method[WF_NAME_MAX];  /* the registered name (an alias given is resolved) */
    int nhooks;
    wf_named_hook hooks[WF_STAGE_HOOKS];
    double fmax;               /* criteria; < 0: not used */
    double energy_change;
    double smax;               /* GPa: stress within smax of the target pressure; < 0: not used */
    int64_t steps;
    /* Pipeline keys, checked against the composition once it is read:
     * sampler: {...} overrides the top-level sampler's values it names
     * (-1: not given), inbox: {systems, atoms} (0: the library's default). */
    int sampler_line;          /* 0: no stages.NAME.sampler */
    mdf_sampler_config sampler;
    int64_t refill_interval;
    double refill_fraction;
    int inbox_line;            /* 0: no stages.NAME.inbox */
    int64_t inbox_systems, inbox_atoms;
} wf_stage;

/* One pipeline stage (a term of a composition with '|'): what
 * mdf_pipe_stage_config gets, resolved from the top-level sampler, its first
 * stage's sampler:/inbox: and placement:. */
typedef struct wf_pipe_stage {
    mdf_sampler_config budget;     /* pair_cutoff: set by wf_run from the model */
    int64_t refill_interval;
    double refill_fraction;
    int budget_line;               /* where its budget comes from (its sampler: or the top-level one) */
    int64_t inbox_systems, inbox_atoms; /* 0: the library's default (no limit in systems, the budget's atoms) */
    int inbox_line;                /* 0: none given */
    int ncpus, ncuda;              /* -1: the library's default */
    char sched[WF_NAME_MAX];       /* "" : the process's policy */
    int nranks;                    /* 0: the default placement over ranks */
    int ranks[MDF_PIPE_MAX_RANKS];
    int placement_line;            /* 0: no placement entry */
} wf_pipe_stage;

/* `hooks:`, added to every stage of the composition. */
typedef struct wf_hooks {
    int freeze;                /* -1: when the input flags frozen atoms, 0, 1 */
    double max_force;          /* eV/Å, < 0: no clamp */
    int nan_check;
    int64_t wrap_every;        /* 0: never */
    double drift_warn;         /* eV/atom, <= 0: no monitor */
} wf_hooks;

typedef struct mdf_workflow {
    char path[WF_PATH_MAX];        /* the workflow file, as given */
    char input[WF_PATH_MAX];       /* resolved against the workflow's folder */
    int input_line;
    /* model: any registered one (plugins: are loaded before it is read) */
    runner_model model;            /* name and settings (scalar, per element, per pair) */
    int model_line;
    int species_line;              /* model.species, when given: every input element needs an entry */
    double skin;
    int rebuild_every;             /* model.rebuild_every (default 1) */
    int rebuild_nocheck;           /* model.rebuild_check false: 1 */
    /* stages and their composition */
    int nstages;
    wf_stage stages[WF_MAX_STAGES];
    int ncomp;
    int comp[WF_MAX_STAGES];       /* indices into stages, in run order */
    int comp_line;
    /* the pipeline: terms of the composition split by '|'; pipeline stage g
     * fuses comp[pipe_first[g]] .. comp[pipe_first[g + 1] - 1]. Without '|':
     * npipe 1, the whole composition fused as before. */
    int npipe;
    int pipe_first[WF_MAX_STAGES + 1];
    wf_pipe_stage pipe[WF_MAX_STAGES];
    int placement_line;            /* 0: no placement: */
    /* inflight batching */
    mdf_sampler_config sampler;    /* pair_cutoff: set by wf_run from the model (with max_pairs) */
    int64_t refill_interval;
    double refill_fraction;
    int sampler_line;
    /* outputs (relative to the current directory) */
    char structures[WF_PATH_MAX];  /* "" : none */
    char log[WF_PATH_MAX];         /* "" : none */
    int64_t log_every;
    char snapshots[WF_PATH_MAX];   /* "" : none; .h5md (or a "{id}" pattern): H5MD, else CSR HDF5 */
    int has_snapshot_sink;         /* output.snapshot_sink: the snapshots go to a sink by registered name */
    wf_named_hook snapshot_sink;   /* its type and settings (mdf_sink_create_named) */
    int64_t snapshot_every;
    char converged[WF_PATH_MAX];   /* "" : none; CSR HDF5 of systems leaving the first stage */
    int compression;               /* deflate level of HDF5 outputs, 0-9 */
    int output_line;
    wf_hooks hooks;
    /* scheduler */
    char sched[WF_NAME_MAX];       /* "" : StarPU's default */
    int ncpus, ncuda;              /* -1: StarPU's choice */
    int shards;                    /* 0: automatic */
    int window;
    int chunk_atoms;
    int64_t max_steps;             /* the run's step limit */
    uint64_t seed;
    /* checkpoints (relative to the current directory) */
    char checkpoint[WF_PATH_MAX];  /* "" : none */
    int64_t checkpoint_every;      /* steps (0: only at exit) */
    int checkpoint_line;
    int resume;                    /* set by `mdflow run --resume`, not by the file */
    int quiet;                     /* `mdflow run --quiet`: no progress line */
    double progress_every;         /* `mdflow run --progress-every S` (off a terminal) */
    int sequential;                /* set by `mdflow run --sequential`: the stages one after
                                    * another on static batches, no fusion, no refill */
    const char *sched_report;      /* `mdflow run --sched-report FILE` (hidden, mdflow sched's
                                    * children): trace the tasks, write FILE (tools/sched.h) */
    const char *pipe_report;       /* `mdflow run --pipe-report FILE.json`: the pipeline's report */
    int mpi;                       /* set by `mdflow run` under an MPI launcher: the pipeline's
                                    * stages on ranks (StarPU-MPI) */
} mdf_workflow;

/* Reads and checks the workflow file at path into wf. */
mdf_status wf_load(const char *path, mdf_workflow *wf, mdf_error *err);

/* "relax + md", "relax | (md1 + md2)": the composition, for messages. */
void wf_composition_text(const mdf_workflow *wf, char *out, size_t size);

/* Pipeline stage g's name: its stage's, or its stages' joined by '+'
 * ("relax+md1"), as reports and checkpoint files name it. */
void wf_pipe_name(const mdf_workflow *wf, int g, char *out, size_t size);

/* The pipeline stage (index into pipe) of composition entry k. */
int wf_pipe_of(const mdf_workflow *wf, int k);

/* path with ".rRANK" before its extension (run.md.csv -> run.md.r1.csv,
 * traj_{id}.h5md -> traj_{id}.r1.h5md): a file of one MPI rank. */
void wf_rank_path(const char *path, int rank, char *out, size_t size);

/* The CSV log of composition entry k: the `output.log` path, or with the
 * stage's name before the extension when the composition has several stages
 * (run.csv -> run.relax.csv, run.md.csv). */
void wf_log_path(const mdf_workflow *wf, int k, char *out, size_t size);

/* 1 if path names an HDF5 file (.h5, .hdf5, .h5md), 2 if an H5MD trajectory
 * (.h5md, or a "{id}" pattern), 0 otherwise. */
int wf_hdf5_kind(const char *path);

/* Runs a loaded workflow (tools/run_workflow.c): starts StarPU, runs the
 * composition over the input with inflight batching, writes the outputs and
 * prints a summary to standard output. With wf->resume, continues from the
 * workflow's checkpoint (an error names the file when there is none, or
 * when it belongs to another workflow or dataset). With wf->sequential, runs
 * the baseline that inflight batching is measured against: the sampler packs
 * a batch within the same budgets, each stage runs on it in turn until all
 * its systems have left, then the next batch is built (no checkpoints). */
mdf_status wf_run(const mdf_workflow *wf, mdf_error *err);

/* For --check: reads the input and checks that the model has parameters for
 * each of its elements (what wf_run checks first), running nothing. A
 * pipeline is also checked as wf_run checks it before any work (every
 * system against every stage's budget and inbox, the placement against
 * nranks ranks), without StarPU. */
mdf_status wf_check_input(const mdf_workflow *wf, int nranks, mdf_error *err);

#endif
