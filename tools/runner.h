/* mdflow — pieces the program's commands share (md, relax, run): hooks from
 * options, Lennard-Jones parameters for every element of a dataset, frozen
 * atoms in the input, the installed example files. */
#ifndef MDF_RUNNER_H
#define MDF_RUNNER_H

#include <stdint.h>
#include <stdio.h>
#include "mdflow/mdflow.h"

/* The built-in hooks a command asks for; a field at its "off" value adds
 * nothing. */
typedef struct runner_hooks {
    int freeze;              /* keep flagged atoms in place */
    double max_force;        /* eV/Å, < 0: no clamp */
    int nan_check;           /* stop on NaN/Inf */
    int64_t wrap_every;      /* 0: never */
    double drift;            /* eV/atom, <= 0: no monitor */
    FILE *thermo;            /* NULL: no thermo rows */
    int64_t thermo_every;
    int thermo_per_system;
    double dt_fs;            /* for the thermo time column */
    const char *log_file;    /* NULL: no CSV log */
    int64_t log_every;       /* also the drift monitor's interval */
} runner_hooks;

/* Fills h with every hook off. */
void runner_hooks_init(runner_hooks *h);

/* Adds the hooks to sub-stage `part` (0 for a plain stage) in the order they
 * should act: constraints on the forces first, checks, then what writes. */
mdf_status runner_add_hooks(mdf_stage *s, int part, const runner_hooks *h, mdf_error *err);

/* Adds species (epsilon, sigma, cutoff) for every element found in frames. */
mdf_status runner_lj_every_element(mdf_lj_config *lj, const mdf_frame_list *frames, double epsilon, double sigma,
                                   double cutoff, mdf_error *err);

/* Warnings for choices the library makes silently (stderr, one line each,
 * once per run, only when they apply): Lennard-Jones pairs without
 * parameters of their own whose species' cutoffs differ (max(rc_i, rc_j),
 * not LAMMPS's mean); a method that changes cells (npt) given systems that
 * are not periodic in all three directions (they keep their volume: NVT).
 * `where` names the option or workflow key. */
void runner_warn_mixed_cutoffs(const mdf_lj_config *lj, const char *where);
void runner_warn_npt_open(const char *method, const char *where, const mdf_frame_list *frames);

/* Whether any frame flags frozen atoms ("fixed" or "move_mask" columns). */
int runner_frames_have_frozen(const mdf_frame_list *frames);

/* Systems that ended a run with NaN/Inf, found on the host after it (a
 * check that costs one pass over the final frames): without a NaN check
 * hook an exploded run would otherwise finish "successfully" with NaN
 * everywhere. Systems a hook already set aside (status MDF_STATUS_FAILED)
 * are not counted. */
typedef struct runner_nonfinite {
    size_t count;            /* systems found */
    size_t total;            /* systems looked at */
    char names[400];         /* the first few, "system id 3, system id 7, ..." */
} runner_nonfinite;

/* 1 when a frame's positions, velocities, cell and energy are all finite. */
int runner_frame_finite(const mdf_frame *f);

/* Looks at one system's final frame. */
void runner_nonfinite_check(runner_nonfinite *n, const mdf_frame *f, int64_t id, int32_t status);

/* MDF_OK when no system was found; else MDF_ERR_PHYSICS naming them, with
 * hint (what to change) at the end. */
mdf_status runner_nonfinite_error(const runner_nonfinite *n, const char *hint, mdf_error *err);

/* The installed or source copy of a data file such as
 * "examples/argon_mixed.xyz", searched under $MDFLOW_DATA, pkgdatadir and
 * the source tree; NULL when none is readable. */
const char *runner_find_data(const char *relative);

#endif
