/* mdflow — the extension API: methods (integrators and optimisers), models,
 * hooks and sinks authored as StarPU codelets, in the library or out of
 * tree as plugins. Every built-in registers through the calls below; there
 * is no private shortcut.
 *
 * An extension is a definition struct (name, parameter table, callbacks)
 * passed to mdf_register_*. Definitions and their tables must stay valid
 * while the process runs (static storage). Each definition carries the
 * MDFLOW_API_VERSION it was compiled against; a mismatch is refused.
 *
 * See docs/architecture.md ("Extension points") and examples/plugin/. */
#ifndef MDFLOW_EXTENSION_H
#define MDFLOW_EXTENSION_H

#include <stdint.h>
#include <starpu.h>
#include "mdflow/error.h"
#include "mdflow/params.h"
#include "mdflow/kernel.h"
#include "mdflow/model.h"
#include "mdflow/hook.h"
#include "mdflow/sink.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever a definition struct, a kernel record (mdflow/kernel.h) or
 * a codelet's buffer layout changes incompatibly. */
#define MDFLOW_API_VERSION 2

/* ==== helpers for an extension's own codelets ================================
 *
 * What the built-in codelets use, for a method's or hook's codelets too. */

/* Performance models, for tasks whose cl_arg starts with an int64_t `work`:
 * the work the task will really do (for a method's or hook's task,
 * mdf_method_task_work / mdf_hook_task_args.work: atoms of the systems it
 * moves).
 *
 * mdf_perfmodel_cost is the cost function of the model every mdflow codelet
 * has: a struct starpu_perfmodel with .type = STARPU_PER_ARCH, a unique
 * .symbol and .arch_cost_function = mdf_perfmodel_cost. mdflow measures
 * every task submitted through mdf_submit (StarPU's task profiling, on by
 * default) and predicts from those measurements, per symbol and CPU or
 * CUDA: the mean of the work's ~25% size class, else a least-squares line
 * over the work, else NaN (not calibrated: fewer than 10 measurements). The
 * fits persist in STARPU_HOME; `mdflow perfmodels` prints them. Unlike
 * StarPU's history models, a size class it has not seen never forces StarPU
 * to calibrate for a whole run.
 *
 * mdf_size_by_work is max(work, 1), for a StarPU size_base;
 * mdf_footprint_by_work keys ~10% wide classes of it, for a
 * STARPU_HISTORY_BASED model (a mean per class; StarPU forces calibration
 * for any class with fewer than 10 measurements). */
double mdf_perfmodel_cost(struct starpu_task *task, struct starpu_perfmodel_arch *arch, unsigned nimpl);
size_t mdf_size_by_work(struct starpu_task *task, unsigned nimpl);
uint32_t mdf_footprint_by_work(struct starpu_task *task);

/* Submits one task of codelet cl on the handles with a heap copy of args
 * (StarPU frees it with the task). modes are read only for codelets with
 * STARPU_VARIABLE_NBUFFERS (others declare theirs; pass NULL). A task
 * StarPU refuses is freed here. Returns 0 or StarPU's error code. */
int mdf_submit(struct starpu_codelet *cl, const void *args, size_t args_size, int nbuffers,
               const starpu_data_handle_t *handles, const enum starpu_data_access_mode *modes,
               const char *name);

/* ==== methods: integrators and optimisers ===================================
 *
 * A method's step for one shard is two task submissions around the model:
 *   pre_update   before the model (typically moves positions);
 *   post_update  after it (forces at the new positions): must leave
 *                res.kinetic (eV; 0 for optimisers), increment sys.step and
 *                sys.stage_step, and keep res.extra_energy (the thermostat's
 *                or barostat's part of the conserved quantity).
 * Both touch only the systems whose status is mdf_method_status(c). A method
 * whose whole step runs before the model (the optimisers) leaves post_update
 * NULL and does its bookkeeping in pre_update.
 *
 * Per-system state lives in the shard's state handle (mdf_sys_state, see
 * mdflow/kernel.h): a block with owner == 0 belongs to a system that just
 * entered the stage; the method initialises it, then sets owner = 1.
 * Random numbers should be keyed by (seed, system id) and counted by
 * sys.step, so that results do not depend on sharding or workers. */

typedef struct mdf_method_ctx mdf_method_ctx;

/* The shard's data handles (StarPU vectors over the shard's arrays). */
starpu_data_handle_t mdf_method_pos(const mdf_method_ctx *c);   /* 3*atom_cap doubles, Å */
starpu_data_handle_t mdf_method_vel(const mdf_method_ctx *c);   /* 3*atom_cap doubles, Å per internal time */
starpu_data_handle_t mdf_method_force(const mdf_method_ctx *c); /* 3*atom_cap doubles, eV/Å */
starpu_data_handle_t mdf_method_atoms(const mdf_method_ctx *c); /* atom_cap mdf_atom_info */
starpu_data_handle_t mdf_method_sys(const mdf_method_ctx *c);   /* sys_cap mdf_sys_info */
starpu_data_handle_t mdf_method_res(const mdf_method_ctx *c);   /* sys_cap mdf_sys_result */
starpu_data_handle_t mdf_method_state(const mdf_method_ctx *c); /* sys_cap mdf_sys_state */
/* The per-shard workspace (work_bytes bytes, zeroed at the start), or NULL. */
starpu_data_handle_t mdf_method_work(const mdf_method_ctx *c);
/* Counts: atoms and systems in the shard now, capacities, largest system. */
int32_t mdf_method_natoms(const mdf_method_ctx *c);
/* The work of this method's tasks in this shard, for the args' `work` field
 * (mdf_size_by_work): atoms of the shard's systems with the method's status
 * at the stage's latest census (every check_interval steps; the shard's
 * atoms when there is none yet). Not a count to loop over: a system may
 * have arrived since. */
int64_t mdf_method_task_work(const mdf_method_ctx *c);
int32_t mdf_method_nsys(const mdf_method_ctx *c);
int32_t mdf_method_atom_cap(const mdf_method_ctx *c);
int32_t mdf_method_sys_cap(const mdf_method_ctx *c);
int32_t mdf_method_max_natoms(const mdf_method_ctx *c);
/* The method's own parameter block (params_size bytes, checked). */
const void *mdf_method_params(const mdf_method_ctx *c);
/* Stage-wide settings: time step (internal units, 1 = 10.18 fs; and fs),
 * thermostat target, random seed, the systems' status, the stage's step
 * (1, 2, ...) and the neighbour lists' radius (cutoff + skin, Å). */
double mdf_method_dt(const mdf_method_ctx *c);
double mdf_method_dt_fs(const mdf_method_ctx *c);
double mdf_method_temperature(const mdf_method_ctx *c);
uint64_t mdf_method_seed(const mdf_method_ctx *c);
int32_t mdf_method_status(const mdf_method_ctx *c);
int64_t mdf_method_step(const mdf_method_ctx *c);
double mdf_method_list_radius(const mdf_method_ctx *c);

/* mdf_method.flags */
#define MDF_METHOD_OPTIMISER 1     /* moves down the forces; velocities are its own */
#define MDF_METHOD_NEEDS_VIRIAL 2  /* reads res.virial in pre_update: the model computes it every step */
#define MDF_METHOD_MOMENTUM 4      /* conserves the total momentum when no atom is frozen: the
                                    * kinetic energy has 3N - 3 degrees of freedom (mdf_dof) */
#define MDF_METHOD_CELL 8          /* changes the cell: its tasks flag MDF_SYS_CELL_TOO_SMALL
                                    * from the list radius, and the stage checks the flags */
#define MDF_METHOD_TEMPERATURE 16  /* reads mdf_method_temperature: the stage refuses one that
                                    * is not finite and >= 0 K, naming the method */
#define MDF_METHOD_POSITIVE_TEMPERATURE 32 /* needs temperature_K > 0 (masses or noise proportional to
                                    * kT); implies MDF_METHOD_TEMPERATURE */

typedef struct mdf_method {
    unsigned api_version;          /* MDFLOW_API_VERSION */
    const char *name;              /* registry name: letters, digits, '_' */
    const char *summary;           /* one line for `mdflow methods` */
    const char *const *aliases;    /* other names users type, NULL-terminated (may be NULL) */
    unsigned flags;                /* MDF_METHOD_* */
    const mdf_param_def *params;   /* the block's table (may be NULL: none) */
    size_t params_size;            /* bytes of the block */
    /* Optional: checks across parameters (each is range-checked already). */
    mdf_status (*check)(const void *params, mdf_error *err);
    /* Optional: bytes of a per-shard workspace (a StarPU vector of bytes). */
    size_t (*work_bytes)(const void *params, int32_t atom_cap, int32_t sys_cap);
    int (*pre_update)(const mdf_method_ctx *c);   /* 0, or a StarPU error code */
    int (*post_update)(const mdf_method_ctx *c);  /* may be NULL (see above) */
} mdf_method;

mdf_status mdf_register_method(const mdf_method *m, mdf_error *err);
/* By name or alias (NULL if none); the registry is filled on first use. */
const mdf_method *mdf_method_find(const char *name);
size_t mdf_method_count(void);
const mdf_method *mdf_method_at(size_t k);

/* ==== models ================================================================
 *
 * A model evaluates energies, forces and the virial of one chunk of a shard
 * per task, from the neighbour lists. Its codelet's buffers, in order:
 *   0 pos R, 1 atoms R, 2 sys R, 3 list R, 4 bins R, 5 forces RW,
 *   6 results RW, 7 the model's parameter blob R
 * and its cl_arg is an mdf_model_args. mdflow/pair.h turns a pair function
 * into such CPU and CUDA codelets. */

typedef struct mdf_model_args {
    int64_t work;          /* atoms of the chunk (the performance model's size) */
    mdf_chunk chunk;
    int32_t want_virial;   /* 0: leave res.virial as it was */
    int32_t status_lo, status_hi; /* systems outside [lo, hi] keep forces and results */
    int32_t partial;       /* 1: forces and results are the chunk's part of a sum
                            * (see mdflow/kernel/reduce.h) */
    int32_t halo_at;       /* > 0 (CPU, no CUDA worker in the run): a slice may take
                            * the halo contract, MDF_PART_ROWS_HALO; 0: it may not */
    int32_t fuse_aux;      /* 1 (models flagged MDF_MODEL_AUX_FUSED_WHOLE): no
                            * auxiliary task ran for this chunk, which holds its
                            * systems whole; the codelet computes the values
                            * itself (its aux buffer holds nothing of use) */
    int32_t halo_owned;    /* 1 (models flagged MDF_MODEL_HALO_OWNED, a slice under
                            * the halo contract): the slice's rows own their pairs
                            * by mdf_nl_pair_owned; 0: j > i */
} mdf_model_args;

/* What a model's setup produces from its parameters. */
typedef struct mdf_model_setup {
    void *blob;             /* device parameters (malloc'd; mdflow frees it) */
    size_t blob_size;       /* bytes; registered once as a StarPU vector, cached on each GPU */
    double cutoff;          /* largest interaction distance, Å */
    double density_hint;    /* highest number density expected, 1/Å³ (sizes list slots) */
    int all_elements;       /* 1: every element; else known_z says which */
    int known_z[128];
    /* Optional (0: off): CPU evaluation of every pair of small open systems
     * the lists flag (see mdf_nl_grid.all_pairs), as the LJ model does. */
    int32_t all_pairs_atoms, all_pairs_small;
    double all_pairs_ratio;
    /* Bytes of the blob that checkpoints' fingerprints skip (machine settings). */
    size_t fingerprint_skip_off, fingerprint_skip_len;
    /* Optional: what a system with an element the model lacks is told, after
     * "system I (id N), atom A: element X (Z=z) has no parameters in the
     * NAME model: " (empty: "add it to the model's species"). The EAM model
     * names its potential file and the elements the file covers. */
    char missing_element_hint[512];
    /* Optional: how that error names the model instead of "the NAME model"
     * (the kim model: "kim model SW_..._Si__MO_..."). */
    char label[320];
} mdf_model_setup;

/* Per-element and per-pair rows of a model configuration, handed to setup:
 * species[k] is a block of the def's species_params for element z[k];
 * pairs[k] a block of its pair_params for elements pair_z[k][0..1]. */
typedef struct mdf_model_species {
    int nspecies;
    const int *z;
    const void *const *species;
    int npairs;
    const int (*pair_z)[2];
    const void *const *pairs;
} mdf_model_species;

typedef struct mdf_model_def {
    unsigned api_version;                  /* MDFLOW_API_VERSION */
    const char *name, *summary;
    const mdf_param_def *params;           /* scalar parameters (may be NULL) */
    size_t params_size;
    const mdf_param_def *species_params;   /* per-element rows (NULL: none taken) */
    size_t species_size;
    const mdf_param_def *pair_params;      /* per-pair rows (NULL: none taken) */
    size_t pair_size;
    /* Checks the parameters and fills out (out is zeroed before). The
     * message names the parameter or element at fault. */
    mdf_status (*setup)(const void *params, const mdf_model_species *species, mdf_model_setup *out, mdf_error *err);
    void (*cpu_func)(void *buffers[], void *cl_arg);  /* required */
    const char *cpu_func_name;                       /* for StarPU's bookkeeping (may be NULL) */
    void (*cuda_func)(void *buffers[], void *cl_arg); /* NULL: CPU only; called with STARPU_CUDA_ASYNC */
    /* Optional auxiliary pass before the main one, for many-body models
     * (EAM's densities): aux_per_atom > 0 doubles per atom. One task per
     * chunk computes them for the atoms the chunk owns, [chunk.atom_begin,
     * chunk.atom_end), from the full lists (each atom's n_up entries j > i
     * from slot 0 and n_down entries j < i from slot M-1 down; an atom with
     * more than M walks its cells). Its buffers:
     *   0 pos R, 1 atoms R, 2 sys R, 3 list R, 4 bins R,
     *   5 aux W: the chunk's atoms × aux_per_atom doubles (atom i at row
     *     i - chunk.atom_begin), 6 the parameter blob R;
     * its cl_arg an mdf_model_args (systems outside [status_lo, status_hi]
     * may be skipped). mdflow gathers the chunks' rows into one array per
     * shard, which the main codelet gets as a 9th buffer, 8 aux R
     * (atom_cap × aux_per_atom doubles, by the shard's atom index). */
    int32_t aux_per_atom;
    void (*aux_cpu_func)(void *buffers[], void *cl_arg);
    const char *aux_cpu_func_name;
    void (*aux_cuda_func)(void *buffers[], void *cl_arg);
    unsigned flags;                        /* MDF_MODEL_* */
    /* Optional: releases what the blob refers to (host state the setup
     * made), before mdflow frees the blob itself. */
    void (*destroy)(void *blob);
} mdf_model_def;

/* mdf_model_def.flags */
#define MDF_MODEL_WHOLE_SYSTEMS 1  /* a chunk never slices a system: every task
                                    * gets whole systems (chunk.atom_begin ==
                                    * touch_begin, atom_end == touch_end) */
#define MDF_MODEL_OWN_NEIGHBOURS 2 /* the codelet finds its neighbours itself
                                    * (images included): mdflow's lists are built
                                    * at a token radius (MDF_MODEL_TOKEN_LIST_RADIUS)
                                    * and cells narrower than twice the cutoff are
                                    * accepted; the codelet must not read them */
#define MDF_MODEL_TOKEN_LIST_RADIUS 0.5
#define MDF_MODEL_HALF_ROWS 4      /* without CUDA workers (planned or present), the
                                    * CPU codelet reads only the front of each list
                                    * row (the n_up entries, j > i): the list builds
                                    * then leave the back out (n_down 0), about half
                                    * of their sweep, and pack the rows: read row li
                                    * with mdf_nl_row (kernel/nlist.h) */
#define MDF_MODEL_HALF_ROWS_WHOLE 8 /* as MDF_MODEL_HALF_ROWS, for the lists of chunks
                                     * that hold whole systems only (the codelet
                                     * reads a slice's back: pairs across its edge) */
#define MDF_MODEL_AUX_FUSED_WHOLE 16 /* without CUDA workers (planned or present), a
                                      * chunk that holds its systems whole gets no
                                      * auxiliary task: its main task, a CPU one, is
                                      * called with fuse_aux = 1 and computes the
                                      * per-atom values itself, so it walks the pairs
                                      * once for both passes (slices keep the two
                                      * tasks: they need other chunks' values) */
#define MDF_MODEL_HALO_OWNED 32 /* with MDF_MODEL_HALF_ROWS, for slices under the
                                 * halo contract (mdf_model_args.halo_at > 0) of a
                                 * system cut in two: the front of a slice's row holds the
                                 * pairs the row owns by mdf_nl_pair_owned (inside
                                 * the slice j > i, across its edges by parity), so
                                 * that the slices share the pairs evenly
                                 * (mdf_model_args.halo_owned says which); the
                                 * codelet must then take the halo contract for
                                 * every slice, its halo reaching atoms on both
                                 * sides (MDF_PART_ROWS_HALO) */

mdf_status mdf_register_model(const mdf_model_def *d, mdf_error *err);
const mdf_model_def *mdf_model_def_find(const char *name);
size_t mdf_model_def_count(void);
const mdf_model_def *mdf_model_def_at(size_t k);

/* A model configuration: the model's name, then settings as text. */
typedef struct mdf_model_config mdf_model_config;
mdf_status mdf_model_config_create(const char *name, mdf_model_config **out, mdf_error *err);
void mdf_model_config_destroy(mdf_model_config *c);
const char *mdf_model_config_name(const mdf_model_config *c);
/* A scalar parameter. */
mdf_status mdf_model_config_set(mdf_model_config *c, const char *name, const char *value, mdf_error *err);
/* A per-element parameter (the row for z is created on first use). */
mdf_status mdf_model_config_set_species(mdf_model_config *c, int z, const char *name, const char *value,
                                        mdf_error *err);
/* A per-pair parameter (the row for (za, zb), either order). */
mdf_status mdf_model_config_set_pair(mdf_model_config *c, int za, int zb, const char *name, const char *value,
                                     mdf_error *err);
/* Whether the model takes a scalar parameter of that name (1), or not (0). */
int mdf_model_config_has_param(const mdf_model_config *c, const char *name);
/* Builds the model (StarPU must be initialised). */
mdf_status mdf_model_create(const mdf_model_config *c, mdf_model **out, mdf_error *err);

/* ==== hooks and sinks by name =============================================== */

typedef struct mdf_hook_def {
    unsigned api_version;
    const char *name, *summary;
    const mdf_param_def *params;
    size_t params_size;
    mdf_status (*create)(const void *params, mdf_hook **out, mdf_error *err);
} mdf_hook_def;

mdf_status mdf_register_hook(const mdf_hook_def *d, mdf_error *err);
const mdf_hook_def *mdf_hook_def_find(const char *name);
size_t mdf_hook_def_count(void);
const mdf_hook_def *mdf_hook_def_at(size_t k);
/* Creates the hook registered as name with these settings. */
mdf_status mdf_hook_create_named(const char *name, const mdf_param_list *params, mdf_hook **out, mdf_error *err);

typedef struct mdf_sink_def {
    unsigned api_version;
    const char *name, *summary;
    const mdf_param_def *params;
    size_t params_size;
    mdf_status (*create)(const void *params, mdf_sink **out, mdf_error *err);
} mdf_sink_def;

mdf_status mdf_register_sink(const mdf_sink_def *d, mdf_error *err);
const mdf_sink_def *mdf_sink_def_find(const char *name);
size_t mdf_sink_def_count(void);
const mdf_sink_def *mdf_sink_def_at(size_t k);
mdf_status mdf_sink_create_named(const char *name, const mdf_param_list *params, mdf_sink **out, mdf_error *err);

/* ==== plugins ===============================================================
 *
 * A plugin is a shared object exporting one entry point, mdflow_plugin_init,
 * best written with MDFLOW_PLUGIN:
 *
 *   static mdf_status register_all(mdf_error *err)
 *   {
 *       mdf_status st = mdf_register_model(&morse_def, err);
 *       return st != MDF_OK ? st : mdf_register_method(&berendsen_def, err);
 *   }
 *   MDFLOW_PLUGIN(register_all)
 */

typedef struct mdf_plugin mdf_plugin;
typedef mdf_status (*mdf_plugin_init_fn)(mdf_plugin *p, mdf_error *err);

/* Called first by mdflow_plugin_init: the API version the plugin was
 * compiled against (a mismatch fails the load, naming the file). */
mdf_status mdf_plugin_declare(mdf_plugin *p, unsigned api_version, mdf_error *err);

#define MDFLOW_PLUGIN(register_fn)                                                     \
    mdf_status mdflow_plugin_init(mdf_plugin *p_, mdf_error *err_);                    \
    mdf_status mdflow_plugin_init(mdf_plugin *p_, mdf_error *err_)                     \
    {                                                                                  \
        mdf_status st_ = mdf_plugin_declare(p_, MDFLOW_API_VERSION, err_);             \
        return st_ != MDF_OK ? st_ : (register_fn)(err_);                              \
    }

/* Loads a plugin (a second load of the same file does nothing). Errors
 * name the file and the fix: not found, not a shared object, missing
 * mdflow_plugin_init, another API version, a name already registered. */
mdf_status mdf_plugin_load(const char *path, mdf_error *err);
/* Loads every plugin MDFLOW_PLUGIN_PATH names: ':'-separated shared
 * objects, or directories whose *.so files are loaded in name order. */
mdf_status mdf_plugin_load_env(mdf_error *err);
/* The plugin files loaded so far, in order. */
size_t mdf_plugin_count(void);
const char *mdf_plugin_file(size_t k);

#ifdef __cplusplus
}
#endif
#endif
