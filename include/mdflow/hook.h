/* mdflow — hooks: work attached to one of nine points of a stage's step,
 * every N steps, run in the order they were added.
 *
 * A hook that is not due at a step submits nothing: it costs the workers
 * nothing. A hook that touches per-atom data is a codelet (CPU and CUDA); a
 * hook that talks to the host (a log file, a callback) is a CPU task fed by
 * StarPU's transfers of the small per-system arrays, never a global wait.
 * Host-side hooks of one shard run in submission order (they share a
 * per-shard sequence token), so callbacks see steps in order. */
#ifndef MDFLOW_HOOK_H
#define MDFLOW_HOOK_H

#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
#include "mdflow/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct starpu_codelet;

typedef enum mdf_hook_point {
    MDF_BEFORE_STEP = 0,
    MDF_BEFORE_PRE_UPDATE,
    MDF_AFTER_PRE_UPDATE,
    MDF_BEFORE_COMPUTE,
    MDF_AFTER_COMPUTE,
    MDF_BEFORE_POST_UPDATE,
    MDF_AFTER_POST_UPDATE,
    MDF_AFTER_STEP,
    MDF_ON_CONVERGE,
    MDF_HOOK_POINTS
} mdf_hook_point;

/* "BEFORE_STEP", ...; NULL outside the range. */
const char *mdf_hook_point_name(mdf_hook_point p);
/* Point from its name (case-insensitive, "before_step" or "BEFORE_STEP"); -1 if unknown. */
int mdf_hook_point_from_name(const char *name);

typedef struct mdf_hook mdf_hook;

void mdf_hook_destroy(mdf_hook *h);
const char *mdf_hook_name(const mdf_hook *h);
mdf_hook_point mdf_hook_get_point(const mdf_hook *h);
int64_t mdf_hook_get_every(const mdf_hook *h);
/* Moves a hook to another point or frequency (every >= 1) before it is added
 * to a stage. ON_CONVERGE hooks fire at every step where systems converged,
 * whatever `every` says: they would miss systems otherwise. */
mdf_status mdf_hook_set_schedule(mdf_hook *h, mdf_hook_point point, int64_t every, mdf_error *err);

/* ---- host callbacks ------------------------------------------------------ */

/* One system as a host-side hook sees it. */
typedef struct mdf_hook_row {
    int64_t id;           /* system id */
    int64_t step;         /* steps integrated by this system so far */
    int64_t stage_step;   /* steps in its current stage */
    int32_t status;
    int32_t natoms;
    int32_t flags;        /* MDF_SYSTEM_* (stage.h) */
    double energy;        /* potential, eV */
    double kinetic;       /* eV */
    double extra_energy;  /* eV, thermostat/barostat part of the conserved quantity */
    double fmax;          /* eV/Å at the last convergence check (NaN if none) */
    double temperature;   /* K, 2 kinetic / (dof k_B); 0 when dof is 0 */
    double virial_trace;  /* eV */
    double volume;        /* Å³ of the cell when periodic in x, y and z
                           * (0 otherwise: no volume, no pressure) */
    double dof;           /* degrees of freedom of the kinetic energy: 3 per
                           * free (not frozen) atom, less 3 when no atom is
                           * frozen and the method conserves the total
                           * momentum (all MD methods but Langevin) */
} mdf_hook_row;

/* The instantaneous pressure of a row in bar, as LAMMPS's thermo `press`:
 * (2 kinetic + virial_trace) / (3 volume); NaN when the row has no volume
 * (not periodic in x, y and z). */
double mdf_hook_row_pressure_bar(const mdf_hook_row *r);

typedef struct mdf_hook_event {
    mdf_hook_point point;
    int64_t step;         /* the stage's step (0: the starting evaluation) */
    int shard;
    int32_t stage_status;
    size_t nrows;
    const mdf_hook_row *rows; /* the shard's systems in the stage (status ==
                               * stage_status); at ON_CONVERGE, those that
                               * just converged */
} mdf_hook_event;

/* Runs on a StarPU CPU worker. Calls for one shard come in step order;
 * calls for different shards may run at the same time. */
typedef void (*mdf_hook_fn)(void *user, const mdf_hook_event *ev);

mdf_status mdf_hook_create_callback(const char *name, mdf_hook_point point, int64_t every, mdf_hook_fn fn,
                                    void *user, mdf_hook **out, mdf_error *err);

/* ---- codelet hooks -------------------------------------------------------- */

/* A user codelet run per shard with 7 buffers, in this order: positions
 * (3·atoms doubles), velocities, forces, atom info, system info, system
 * results, integrator state (layouts: codelets/common/mdf_kernel_common.h).
 * The codelet declares its access modes and its implementations (CPU, and
 * CUDA where it can run on a GPU). Its cl_arg is an mdf_hook_task_args
 * followed by a copy of `arg` (arg_size bytes). */
typedef struct mdf_hook_task_args {
    int64_t work;          /* atoms of the stage's systems in the shard at its latest
                            * census (performance-model size: mdf_size_by_work) */
    int64_t step;          /* the stage's step */
    int32_t status;        /* the stage's status: touch only these systems */
    int32_t nsys;          /* systems in the shard */
    int32_t natoms;        /* atoms in the shard */
    int32_t point;         /* mdf_hook_point */
} mdf_hook_task_args;

mdf_status mdf_hook_create_codelet(const char *name, mdf_hook_point point, int64_t every,
                                   struct starpu_codelet *cl, const void *arg, size_t arg_size,
                                   mdf_hook **out, mdf_error *err);

/* ---- built-in hooks -------------------------------------------------------- */

/* Per-system CSV rows "step,system_id,status,energy_eV,fmax_eV_per_A,
 * temperature_K" every N steps (AFTER_STEP), for the stage's systems and
 * those that just converged; rows of one step come together, in batch order.
 * The file is replaced (written as path + ".tmp", renamed when the run
 * ends); a write error stops the run with the file name. */
mdf_status mdf_hook_create_log(const char *path, int64_t every, mdf_hook **out, mdf_error *err);

typedef enum mdf_nan_action {
    MDF_NAN_STOP = 0,       /* stop the run with an error naming systems, fields, step */
    MDF_NAN_QUARANTINE = 1  /* move the system to status MDF_STATUS_FAILED, warn, go on */
} mdf_nan_action;
#define MDF_STATUS_FAILED (-1)

/* Checks positions, velocities, forces and energy for NaN/Inf every N steps
 * (AFTER_POST_UPDATE). warn_to receives warnings (NULL: stderr). */
mdf_status mdf_hook_create_nan_check(int64_t every, mdf_nan_action action, FILE *warn_to, mdf_hook **out,
                                     mdf_error *err);

/* Scales down every force longer than max_force (eV/Å), keeping its
 * direction (AFTER_COMPUTE, every step). */
mdf_status mdf_hook_create_force_clamp(double max_force, mdf_hook **out, mdf_error *err);

typedef enum mdf_drift_action { MDF_DRIFT_WARN = 0, MDF_DRIFT_STOP = 1 } mdf_drift_action;

/* Watches each system's conserved energy (potential + kinetic + extra)
 * against its value when the system was first seen by the hook; beyond
 * threshold eV per atom it warns once per system (to warn_to, NULL: stderr)
 * or stops the run naming the systems (AFTER_STEP, every N steps). */
mdf_status mdf_hook_create_drift_monitor(double threshold_ev_per_atom, mdf_drift_action action, int64_t every,
                                         FILE *warn_to, mdf_hook **out, mdf_error *err);

/* Keeps atoms flagged frozen (mdf_batch_set_frozen, or the "fixed" /
 * "move_mask" extxyz columns) in place: zeroes their forces and velocities
 * (AFTER_COMPUTE, every step), as ASE's FixAtoms does for forces. */
mdf_status mdf_hook_create_freeze(mdf_hook **out, mdf_error *err);

/* Wraps positions into the cell along periodic directions every N steps
 * (AFTER_POST_UPDATE). */
mdf_status mdf_hook_create_wrap(int64_t every, mdf_hook **out, mdf_error *err);

/* Per-stage timing: wall time of the stage's steps as seen from their
 * completion (BEFORE_STEP/AFTER_STEP markers), reported when the run ends to
 * report_to (NULL: nothing printed) and through mdf_hook_timing_get. */
typedef struct mdf_timing_report {
    int64_t steps;            /* steps timed */
    double wall_seconds;      /* first step's start to last step's end */
    double mean_step_seconds;
    double max_step_seconds;  /* longest gap between consecutive step ends */
} mdf_timing_report;
mdf_status mdf_hook_create_timing(FILE *report_to, mdf_hook **out, mdf_error *err);
mdf_status mdf_hook_timing_get(const mdf_hook *h, mdf_timing_report *out, mdf_error *err);

/* ---- snapshots (sinks: mdflow/sink.h) ------------------------------------------ */

typedef struct mdf_sink mdf_sink;

/* Every N steps (AFTER_STEP), writes the stage's systems (positions,
 * velocities, forces, energies, virial, status...) to the sink, borrowed:
 * it must outlive the runs. Packing runs next to the data (CPU or GPU);
 * file writes are CPU tasks that overlap the next steps. A full sink chain
 * or a failed write stops the run with an error naming the sink. */
mdf_status mdf_hook_create_snapshot(mdf_sink *sink, int64_t every, mdf_hook **out, mdf_error *err);
/* At ON_CONVERGE: writes each system that just converged (or left on its
 * step budget, flagged) once, at the step it left the (sub-)stage. Its
 * virial is NaN unless that step computed one (hooks asking for it).
 * Added with a snapshot hook on the same sink to a stage's last part, it
 * completes the trajectories: the snapshot hook selects the part's systems
 * after the convergence check, so it misses the state a system leaves with
 * (step N of an N-step stage); this one writes exactly that state. */
mdf_status mdf_hook_create_converged_snapshot(mdf_sink *sink, mdf_hook **out, mdf_error *err);

/* LAMMPS-style thermo rows (batch totals or per system) every N steps
 * (AFTER_STEP): what `mdflow md` prints. */
mdf_status mdf_hook_create_thermo(FILE *out, int per_system, int64_t every, double dt_fs, mdf_hook **hout,
                                  mdf_error *err);

#ifdef __cplusplus
}
#endif
#endif
