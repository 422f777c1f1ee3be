/* mdflow — trajectories of mdflow md and relax (--trajectory FILE
 * --trajectory-every N), written by the snapshot hooks that workflows use
 * for output.snapshots (mdflow/hook.h, mdflow/sink.h).
 *
 * Frames: every N steps from step 0, plus each system's last state: the
 * step a relaxation converged at (the converged-snapshot hook), and after
 * the run the final step of the systems it did not record there (last step
 * not a multiple of N). The format follows the name: FILE.h5md (H5MD; a
 * path with {id}: one file per system), FILE.h5 or FILE.hdf5 (CSR structure
 * datasets), FILE.xyz or FILE.extxyz (extended XYZ, every frame in the
 * order step, then system id; the frames are kept in memory and written
 * when the run ends). */
#ifndef MDF_TRAJECTORY_H
#define MDF_TRAJECTORY_H

#include <stdint.h>
#include "mdflow/mdflow.h"

typedef enum traj_format { TRAJ_NONE = 0, TRAJ_H5 = 1, TRAJ_H5MD = 2, TRAJ_XYZ = 3 } traj_format;

typedef struct runner_trajectory {
    const char *path;      /* NULL: no trajectory */
    int64_t every;         /* steps between frames (>= 1) */
    traj_format format;
    mdf_sink *sink;
    int64_t frames_max;    /* frames per system the xyz buffer holds */
} runner_trajectory;

/* The format of path by its name; TRAJ_NONE when mdflow writes no
 * trajectory of that name. */
traj_format trajectory_format_of(const char *path);

/* Checks path and every (MDF_ERR_INVALID naming the option and the formats
 * on a bad name or interval); path NULL: nothing to check. */
mdf_status trajectory_check(const char *path, int64_t every, mdf_error *err);

/* Creates the sink for a run of at most max_steps steps over the systems
 * of b (t->path NULL: does nothing). */
mdf_status trajectory_open(runner_trajectory *t, const mdf_batch *b, int64_t max_steps, mdf_error *err);

/* The snapshot hooks of a trajectory (or of a workflow's snapshots) on
 * stage s: every `every` steps, and, with exit_hook, the step each system
 * leaves the stage by convergence. */
mdf_status trajectory_add_hooks(mdf_stage *s, mdf_sink *sink, int64_t every, int exit_hook, mdf_error *err);

/* After the run: writes the final state of the systems the hooks left
 * without it (still at status 0, at a step that is not a multiple of
 * every; time = step × dt_fs, as the hooks'). */
mdf_status trajectory_finish(runner_trajectory *t, const mdf_batch *b, double dt_fs, mdf_error *err);

/* Writes what is buffered (xyz), closes and frees the sink; st: the run's
 * status so far (a failed run still writes what it has). */
mdf_status trajectory_close(runner_trajectory *t, mdf_status st, mdf_error *err);

#endif
