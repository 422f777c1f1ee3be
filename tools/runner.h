/* mdflow — pieces the program's commands share (md, relax, run): hooks from
 * options, a model as the user configured it (any registered model, by
 * name), plugins' entries, frozen atoms in the input, the installed example
 * files. */
#ifndef MDF_RUNNER_H
#define MDF_RUNNER_H

#include <stdint.h>
#include <stdio.h>
#include "mdflow/mdflow.h"
#include "mdflow/extension.h"

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

/* ---- a model as configured: plain data, checked as it is given ----------------
 *
 * The registered model's name and its settings in the order given: scalar
 * parameters, per-element rows (z[0]) and per-pair rows (z[0], z[1]), as
 * text for the model's parameter tables (mdflow/extension.h). No StarPU and
 * nothing to free: the CLI and the workflow loader fill one while reading,
 * and the run builds the model from it (runner_model_create). A model that
 * takes per-element rows and is given none decides itself what that means
 * (lj: the scalar parameters for every element). */
#define RUNNER_MODEL_SETTINGS 256
#define RUNNER_NAME_MAX 64

typedef enum runner_row { RUNNER_SCALAR = 0, RUNNER_SPECIES = 1, RUNNER_PAIR = 2 } runner_row;

typedef struct runner_setting {
    runner_row kind;
    int z[2];                          /* species: z[0]; pairs: both */
    char name[MDF_PARAM_NAME_MAX];
    char value[MDF_PARAM_VALUE_MAX];
} runner_setting;

typedef struct runner_model {
    char name[RUNNER_NAME_MAX];        /* the registered name */
    int n;
    runner_setting s[RUNNER_MODEL_SETTINGS];
} runner_model;

/* Starts a configuration of the registered model `name`; an unknown name's
 * message lists the registered models (and says a plugin adds more). */
mdf_status runner_model_init(runner_model *m, const char *name, mdf_error *err);
/* As runner_model_init, from a workflow's type NAME or NAME:VALUE: VALUE is
 * the model's `name` parameter (kim:SW_StillingerWeber_1985_Si__MO_405512056662_005);
 * a file is given as file: PATH (relative to the workflow's folder). */
mdf_status runner_model_init_spec(runner_model *m, const char *spec, mdf_error *err);
/* Adds a setting after checking it against the model's table for that kind
 * of row: the name exists (else the message lists the valid ones), the value
 * parses and lies in range (else the message gives the range). */
mdf_status runner_model_add(runner_model *m, runner_row kind, int za, int zb, const char *name, const char *value,
                            mdf_error *err);
/* Whether element z has a per-element row. */
int runner_model_has_species(const runner_model *m, int z);
/* Number of per-element or per-pair settings given. */
int runner_model_count(const runner_model *m, runner_row kind);
/* The model's table for scalar parameters (NULL: none). */
const mdf_param_def *runner_model_params(const runner_model *m);
/* Builds the model (StarPU must run). */
mdf_status runner_model_create(const runner_model *m, mdf_model **out, mdf_error *err);

/* Where a registered method or model comes from: NULL for the built-ins,
 * else the plugin file that registered it (def: the definition's address). */
const char *runner_plugin_of(const void *def);

/* The registered methods' names, ", "-separated: optimisers (want 1),
 * integrators (0) or all (-1). */
void runner_method_names(int want, char *buf, size_t size);

/* Warnings for choices the library makes silently (stderr, one line each,
 * once per run, only when they apply): Lennard-Jones pairs without
 * parameters of their own whose species' cutoffs differ (max(rc_i, rc_j),
 * not LAMMPS's mean; the lj model only); a method that changes cells (npt,
 * a method with MDF_METHOD_CELL) given systems that
 * are not periodic in all three directions (they keep their volume: NVT).
 * `where` names the option or workflow key. */
void runner_warn_mixed_cutoffs(const runner_model *m, const char *where);
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

/* ---- no invented physics ------------------------------------------------------------
 *
 * The lj model's built-in parameters are argon's (epsilon 0.0104 eV, sigma
 * 3.40 Å): they are right for argon and for nothing else. An element of the
 * input the configured lj model has no parameters of its own for is refused:
 * with per-element rows, every element needs its row; without them, the
 * scalar epsilon or sigma given (--lj-epsilon, --param, a workflow's
 * params:) applies to every element, as the user chose; with neither, only
 * argon has parameters. Other models decide for themselves (a file, a KIM
 * model). MDF_ERR_INVALID naming the elements and the first system holding
 * one; `where` starts the message (the input, a workflow's line) and `fix`
 * ends it (how to give parameters, in the caller's words). */
mdf_status runner_check_model_elements(const runner_model *m, const mdf_frame_list *frames, const char *where,
                                       const char *fix, mdf_error *err);
