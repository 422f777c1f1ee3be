/* mdflow — a dynamics stage: per step and per shard,
 *
 *   [BEFORE_STEP] [BEFORE_PRE_UPDATE] pre_update [AFTER_PRE_UPDATE]
 *   [BEFORE_COMPUTE] model [AFTER_COMPUTE]
 *   [BEFORE_POST_UPDATE] post_update [AFTER_POST_UPDATE]
 *   convergence -> [ON_CONVERGE] [AFTER_STEP]
 *
 * as StarPU tasks linked only by data access modes (no barrier per step).
 * A stage moves the systems whose status is its `status` and leaves every
 * other system untouched (the model does not even evaluate them). Systems
 * that meet every convergence criterion move to `converged_status`.
 *
 * A fused stage (mdf_fuse) runs several such stages on one batch with one
 * model evaluation per step.
 *
 * Step 0 is the evaluation at the starting positions: it fires the
 * BEFORE_COMPUTE, AFTER_COMPUTE, ON_CONVERGE and AFTER_STEP hooks, so
 * constraints apply to the first forces, logs record the start, and a system
 * already converged never moves (as ASE's optimisers check before their
 * first step). */
#ifndef MDFLOW_STAGE_H
#define MDFLOW_STAGE_H

#include <stdint.h>
#include "mdflow/batch.h"
#include "mdflow/model.h"
#include "mdflow/hook.h"
#include "mdflow/sampler.h"
#include "mdflow/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-system flags (mdf_system_view.flags). */
#define MDF_SYSTEM_CONVERGED_NOW   1   /* moved by convergence at the last check */
#define MDF_SYSTEM_NONFINITE_POS   2   /* NaN detector findings */
#define MDF_SYSTEM_NONFINITE_VEL   4
#define MDF_SYSTEM_NONFINITE_FORCE 8
#define MDF_SYSTEM_NONFINITE_ENERGY 16
#define MDF_SYSTEM_BUDGET_EXIT     32  /* left a stage on its step budget, unconverged */
#define MDF_SYSTEM_ENTERED         64  /* moved into its stage, not yet checked there */
#define MDF_SYSTEM_CELL_TOO_SMALL  128 /* NPT shrank the cell below (cutoff + skin) / 16: the run fails */

/* Stage-wide settings every method may read. A method's own parameters
 * (friction, FIRE's dt, L-BFGS memory, ...) live in its own block, set by
 * name in mdf_stage_config.method_params and listed by `mdflow methods`
 * (see mdflow/extension.h); no struct here knows them. */
typedef struct mdf_dynamics_params {
    double dt_fs;              /* MD time step, fs (default 1) */
    double temperature_K;      /* thermostat target, K (default 300) */
    uint64_t seed;             /* random streams keyed by (seed, system id) */
} mdf_dynamics_params;

#define MDF_NHC_MAX 5

void mdf_dynamics_params_init(mdf_dynamics_params *p);

/* Convergence criteria, AND-combined, thresholds inclusive. */
typedef enum mdf_criterion_kind {
    MDF_CRITERION_FMAX = 0,          /* largest per-atom force norm <= threshold (eV/Å) */
    MDF_CRITERION_ENERGY_CHANGE = 1, /* |E - E_previous step| <= threshold (eV) */
    MDF_CRITERION_STEPS = 2,         /* steps in this stage >= threshold */
    MDF_CRITERION_SMAX = 3           /* stress within threshold (GPa) of the target pressure:
                                      * max_ij |σ_ij + P δ_ij| <= threshold, σ = -virial/V,
                                      * P the method's pressure_GPa parameter (0 when it has
                                      * none; the variable-cell optimisers fire_cell and
                                      * lbfgs_cell have one); systems not periodic in x, y
                                      * and z pass it. Methods without MDF_METHOD_NEEDS_VIRIAL
                                      * make the model compute the virial every step too */
} mdf_criterion_kind;

/* The largest mdf_stage_config.rebuild_every (steps). */
#define MDF_REBUILD_EVERY_MAX 1000000

typedef struct mdf_stage_config {
    const char *integrator;    /* registry name (mdf_integrator_name); default velocity_verlet */
    int32_t status;            /* systems with this status move (default 0) */
    int32_t converged_status;  /* where converged systems go (default status + 1) */
    int64_t max_steps;         /* the run stops after this many steps (default 1000) */
    int check_interval;        /* the host learns how many systems are left every
                                * N steps, without waiting (default 10) */
    int window;                /* steps in flight at most (default 16): the host
                                * submits window / 2 steps at a time */
    double skin;               /* Å, neighbour-list skin (default 1) */
    int32_t rebuild_every;     /* consider rebuilding a system's lists only every
                                * N of its steps since its last build (LAMMPS's
                                * neigh_modify every N delay 0; default 1, at
                                * most MDF_REBUILD_EVERY_MAX) */
    int32_t rebuild_nocheck;   /* 0 (default): rebuild then only if an atom moved
                                * more than skin/2 (check yes); 1: rebuild then
                                * whatever the atoms did (check no: pairs that
                                * come within the cutoff between builds are missed,
                                * as in LAMMPS; for comparisons with its inputs) */
    int32_t chunk_atoms;       /* see mdf_md_config (0: automatic) */
    int64_t step_budget;       /* > 0: a system leaves after this many steps in the
                                * stage even unconverged, flagged
                                * MDF_SYSTEM_BUDGET_EXIT (default 0: none) */
    double entry_temperature_K; /* >= 0: systems arriving from the previous stage
                                 * (MDF_SYSTEM_ENTERED, e.g. a relaxation before MD)
                                 * get Maxwell-Boltzmann velocities at this
                                 * temperature (seed: params.seed); default -1: keep */
    mdf_dynamics_params params;
    mdf_param_list method_params; /* the method's own parameters by name, e.g.
                                   * {"friction_per_fs", "0.02"}: applied over its
                                   * defaults at mdf_stage_create, which names an
                                   * unknown one and lists the valid ones */
} mdf_stage_config;

void mdf_stage_config_init(mdf_stage_config *cfg);

typedef struct mdf_stage mdf_stage;

/* Checks the configuration (integrator name, parameter names and ranges:
 * the error names the parameter and its valid range). */
mdf_status mdf_stage_create(const mdf_stage_config *cfg, mdf_stage **out, mdf_error *err);
/* Destroys the stage and every hook it owns. */
void mdf_stage_destroy(mdf_stage *s);

/* Adds a criterion; a stage without any never converges (it runs max_steps). */
mdf_status mdf_stage_add_criterion(mdf_stage *s, mdf_criterion_kind kind, double threshold, mdf_error *err);
/* Adds a hook; the stage owns it from then on, also when this fails. Hooks of
 * one point run in the order they were added. */
mdf_status mdf_stage_add_hook(mdf_stage *s, mdf_hook *h, mdf_error *err);

/* Fuses two stages into one (ALCHEMI's `a + b`): their sub-stages get the
 * status codes base, base + 1, ... (base: the first sub-stage's status, 0 by
 * default) and converge into the next one; the last converges into the exit
 * status base + n. Each step evaluates the model ONCE for every system of
 * every sub-stage, and each sub-stage updates only its own systems, in the
 * same task graph. Fusing a fused stage appends (fuse(fuse(a, b), c) has
 * three sub-stages, at most 8). The result's max_steps is the sum of the
 * parts' (mdf_stage_set_max_steps changes it); its window, check interval,
 * skin and chunking are a's. a and b are consumed, also on failure. */
mdf_status mdf_fuse(mdf_stage *a, mdf_stage *b, mdf_stage **out, mdf_error *err);
/* The run's step limit (>= 0). */
mdf_status mdf_stage_set_max_steps(mdf_stage *s, int64_t max_steps, mdf_error *err);
/* Sub-stages (1 for a plain stage) and the status systems end with. */
int mdf_stage_nparts(const mdf_stage *s);
int32_t mdf_stage_exit_status(const mdf_stage *s);
/* Adds a criterion or a hook to sub-stage k (0-based) of a fused stage. */
mdf_status mdf_stage_add_part_criterion(mdf_stage *s, int k, mdf_criterion_kind kind, double threshold,
                                        mdf_error *err);
mdf_status mdf_stage_add_part_hook(mdf_stage *s, int k, mdf_hook *h, mdf_error *err);

typedef struct mdf_stage_report {
    int64_t steps;              /* steps submitted */
    int64_t converged;          /* systems that reached the exit status in this run */
    int64_t budget_exits;       /* of those, systems that left some sub-stage on its
                                 * step budget, unconverged */
    int64_t remaining;          /* systems still in the stage at the end */
    int64_t model_evaluations;  /* including step 0 */
    int64_t list_rebuilds;        /* summed over systems */
    int64_t overflowed_atoms;     /* neighbour-list slots too few: computed from cells */
    int32_t max_neighbours;
    int32_t list_slots;
    int nchunks;
    double wall_seconds;
    double atom_steps_per_second; /* atoms of the stage's systems at the start × steps / wall */
    int nshards;
    int64_t refills;            /* inflight: refills that handed systems out or took new ones */
} mdf_stage_report;

/* Runs until every system of the stage has converged or max_steps steps.
 * The host never waits per step; the batch is synchronised on return. A
 * hook that stops the run (NaN detector, drift monitor) makes this return
 * its error, naming systems, fields and step; what hooks wrote stays. */
mdf_status mdf_stage_run(mdf_stage *s, mdf_batch *b, mdf_model *m, mdf_stage_report *report, mdf_error *err);

/* ---- progress --------------------------------------------------------------
 *
 * What a run has done so far, from the host's own bookkeeping: the steps it
 * submitted, the censuses the stage's convergence checks already report, the
 * sampler's counts. Reading it adds no task and no wait. */
typedef struct mdf_progress {
    int64_t steps;            /* steps completed, about: those submitted less the window in flight */
    int64_t steps0;           /* of those, the steps done before this run began (a resumed checkpoint's) */
    int64_t max_steps;        /* the run's step limit */
    int64_t systems;          /* systems the run has (batch, or the sampler's dataset) */
    int64_t done;             /* of those, systems that left the stage (converged, budget, failed) */
    int64_t in_flight;        /* in the batch, in the stage */
    int64_t waiting;          /* in the sampler, not yet in the batch (inflight batching) */
    int64_t atoms;            /* atoms in the batch */
    double elapsed_s;         /* since the run began */
    int finished;             /* 1: the last call, after the run's last task */
} mdf_progress;
/* Called on the host thread that runs the stage, at most every interval_s
 * seconds while it submits steps, and once with finished = 1 at the end. */
typedef void (*mdf_progress_fn)(void *user, const mdf_progress *p);
/* fn NULL: no progress (the default). A fused stage keeps its first part's. */
void mdf_stage_set_progress(mdf_stage *s, mdf_progress_fn fn, void *user, double interval_s);

/* ---- inflight batching ------------------------------------------------------ */

/* Receives each system once, on the host: when it reaches the stage's exit
 * status (v->status == mdf_stage_exit_status), or at the end of the run
 * for systems that did not get there (max_steps, or an error). f is the
 * system's final frame (info keys mdf_system_id, mdf_status, mdf_step),
 * valid during the call. Return non-zero to stop the run (e.g. a write
 * failed); the run then returns MDF_ERR_IO. */
typedef int (*mdf_exit_fn)(void *user, const mdf_frame *f, const mdf_system_view *v);

typedef struct mdf_inflight_config {
    mdf_sampler *sampler;       /* the dataset (required) */
    int64_t refill_interval;    /* steps between refill points (default 10) */
    double refill_fraction;     /* a refill point refills when the systems that
                                 * finished since the last refill hold at least
                                 * this fraction of the batch's atom budget, or a
                                 * shard has none of the stage's systems left
                                 * (default 0.1; 0: whenever one finished) */
    int nshards;                /* shards of the batch (0: automatic) */
    mdf_exit_fn on_exit;        /* may be NULL */
    void *user;
    /* Checkpoints (see "Checkpoints" below). */
    const char *checkpoint_path; /* HDF5 file of the run's full state (NULL: none) */
    int64_t checkpoint_every;   /* > 0: a checkpoint every N steps, rounded up to a
                                 * multiple of refill_interval (checkpoints are taken
                                 * at refill points); 0: only at exit */
    int resume;                 /* 1: continue from checkpoint_path instead of the
                                 * sampler's first batch */
} mdf_inflight_config;

void mdf_inflight_config_init(mdf_inflight_config *cfg);

/* Runs a (fused) stage over a whole dataset with inflight batching. The
 * batch is built from the sampler's first choice, with capacities set by
 * the sampler's budgets. Every refill_interval steps, the systems that
 * reached the exit status are handed to on_exit and replaced in place by
 * new ones from the sampler, without re-registering the batch's handles.
 * Each system keeps its id. The run ends when the sampler is exhausted and
 * every system has exited, or after the stage's max_steps.
 * report->converged counts the systems that exited. */
mdf_status mdf_stage_run_inflight(mdf_stage *s, mdf_model *m, const mdf_inflight_config *cfg,
                                  mdf_stage_report *report, mdf_error *err);

/* Checks every system of the sampler's dataset against the batch rules and
 * the model (its cutoff plus skin against each periodic cell), as
 * mdf_stage_run_inflight does before any work: the error names the first
 * system that would fail. For runs that build their own batches from the
 * sampler, so that bad input is refused before any result is computed. */
mdf_status mdf_sampler_check_dataset(const mdf_sampler *s, const mdf_model *m, double skin, mdf_error *err);

/* Checkpoints. With checkpoint_path set, mdf_stage_run_inflight saves the
 * run's full state to that file every checkpoint_every steps and at exit
 * (after max_steps, after the last system, and when a hook stopped the run
 * with an error; not after an internal failure, which keeps the previous
 * one): every array of the batch (positions, velocities, forces, atoms,
 * per-system info with status and step counters, results, integrator state,
 * info keys), each sub-stage's integrator workspace (the L-BFGS history),
 * the stage's step, the sampler's position, the inflight counters, the
 * census, the position of every hook that has one (the CSV log: its bytes
 * written so far) and the final frames of the systems already handed to
 * on_exit. Random numbers are Philox keyed by (seed, system id) and counted
 * by each system's own step, so the step counters are the generators' whole
 * state. The file is replaced atomically (FILE.tmp, fsync, rename): a kill
 * during a checkpoint leaves the previous one.
 *
 * With resume = 1 the run continues from checkpoint_path: it first checks
 * that the file belongs to this stage (methods, parameters, criteria,
 * hooks), model, dataset (systems, atoms, structures) and sampler budgets,
 * and fails with an error naming what differs otherwise. It then hands the
 * final frames stored in it to on_exit again, in their order, so a receiver
 * that starts empty ends with every system once; hooks get their positions
 * back (restore) before they begin. max_steps may differ (a larger one
 * continues a run stopped by max_steps).
 *
 * Exactness. With checkpoints on, the run's course does not depend on
 * timing: a refill happens at every refill point (the host does not skip it
 * on the census' word, nor refills early when nothing is left to move), a
 * refill that removes and adds nothing keeps the model pipeline, and at
 * each checkpoint the pipeline is rebuilt (neighbour lists afresh) and the
 * virial computed on the step before, as a resumed run does at its start.
 * A run interrupted after a checkpoint (killed, or stopped by max_steps on
 * a checkpoint step) and resumed then ends in the same state, bit for bit,
 * as an uninterrupted run with the same checkpoint cadence, on CPU workers
 * under any scheduler, with the same number of workers and chunking (each
 * system's arithmetic is in a fixed order; the automatic chunk size depends
 * on the worker count). Only to round-off: a run stopped by max_steps
 * between checkpoint steps (the resumed run builds its neighbour lists at
 * another step), another worker count, and CUDA workers (sums use atomics).
 * mdf_stage_run (without a sampler) writes no checkpoint. */

/* Names of the integrators and optimisers (registry order). */
size_t mdf_integrator_count(void);
const char *mdf_integrator_name(size_t k);
/* One-line description of integrator k. */
const char *mdf_integrator_summary(size_t k);
/* 1 for optimisers (FIRE, FIRE2, GD, L-BFGS), 0 for MD integrators, -1 unknown. */
int mdf_integrator_is_optimiser(const char *name);
/* 1 if the method changes the cell (npt: the volume of systems periodic in
 * all three directions; the others it runs at constant volume), 0 if not,
 * -1 if the name is unknown. */
int mdf_integrator_changes_cell(const char *name);

#ifdef __cplusplus
}
#endif
#endif
