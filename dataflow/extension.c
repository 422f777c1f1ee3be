/* mdflow — the extension registries (methods, models, hooks, sinks), the
 * plugin loader and named model creation (mdflow/extension.h).
 *
 * One registry per kind, each entry remembering where it came from (built-in
 * or a plugin's file) so that a duplicate name's message names both. The
 * built-ins register on first use of any registry, through the same calls a
 * plugin makes. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "mdflow/extension.h"
#include "mdflow/frame.h"
#include "model_internal.h"
#include "../codelets/common/mdf_codelet.h"
#include "mdflow/runtime.h"

typedef struct entry {
    const void *def;
    struct starpu_codelet *aux_cl; /* models with an auxiliary pass */
    struct starpu_perfmodel *aux_pm;
    const char *name;
    const char *const *aliases;
    const char *origin;          /* "built-in" or the plugin's file */
    struct starpu_codelet *cl;   /* models: the codelet built from the def */
    struct starpu_perfmodel *pm;
} entry;

typedef struct registry {
    const char *kind;            /* "method", "model", "hook", "sink" */
    entry *e;
    size_t n, cap;
} registry;

static registry methods = {"method", NULL, 0, 0}, models = {"model", NULL, 0, 0}, hooks = {"hook", NULL, 0, 0},
                sinks = {"sink", NULL, 0, 0};

/* Plugins loaded so far (resolved paths) and the one being initialised. */
typedef struct plugin_rec {
    char *path;
    void *handle;
} plugin_rec;

struct mdf_plugin {
    const char *path;
    int declared;
};

static plugin_rec *plugins;
static size_t nplugins;
static const char *loading_origin; /* NULL: built-in */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;
static mdf_error builtins_err;
static mdf_status builtins_status = MDF_OK;

static _Thread_local int registering_builtins;

static void load_builtins(void)
{
    registering_builtins = 1;
    builtins_status = mdf_register_builtins(&builtins_err);
    registering_builtins = 0;
}

/* Fills the registries with the built-ins once; their failure is a bug
 * (two built-ins with one name), reported by every later registry call. */
static mdf_status ensure_builtins(mdf_error *err)
{
    if (registering_builtins) return MDF_OK;
    pthread_once(&builtins_once, load_builtins);
    if (builtins_status != MDF_OK)
        return mdf_error_set(err, builtins_status, "registering the built-in extensions failed: %s",
                             builtins_err.message);
    return MDF_OK;
}

/* ---- lookups ------------------------------------------------------------------- */

static const entry *find_entry(const registry *r, const char *name)
{
    for (size_t k = 0; k < r->n; k++) {
        if (strcmp(r->e[k].name, name) == 0) return &r->e[k];
        for (const char *const *a = r->e[k].aliases; a && *a; a++)
            if (strcmp(*a, name) == 0) return &r->e[k];
    }
    return NULL;
}

static const void *find_def(registry *r, const char *name)
{
    if (!name || ensure_builtins(NULL) != MDF_OK) return NULL;
    pthread_mutex_lock(&reg_lock);
    const entry *e = find_entry(r, name);
    const void *d = e ? e->def : NULL;
    pthread_mutex_unlock(&reg_lock);
    return d;
}

static size_t count_defs(registry *r)
{
    if (ensure_builtins(NULL) != MDF_OK) return 0;
    pthread_mutex_lock(&reg_lock);
    size_t n = r->n;
    pthread_mutex_unlock(&reg_lock);
    return n;
}

static const void *def_at(registry *r, size_t k)
{
    if (ensure_builtins(NULL) != MDF_OK) return NULL;
    pthread_mutex_lock(&reg_lock);
    const void *d = k < r->n ? r->e[k].def : NULL;
    pthread_mutex_unlock(&reg_lock);
    return d;
}

/* ---- registration --------------------------------------------------------------- */

/* Who is registering: a plugin's file, the built-ins, or the program itself
 * (an mdf_register_* call of its own, outside any plugin). */
static const char *origin_text(void)
{
    if (loading_origin) return loading_origin;
    return registering_builtins ? "the built-ins" : "the program";
}

static int valid_ext_name(const char *name)
{
    if (!name || !*name) return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-'))
            return 0;
    return 1;
}

/* A name taken in any registry, by name or alias (methods and models share
 * the CLI's --param, so a name means one thing). */
static const entry *taken(const char *name, const registry **in)
{
    registry *all[] = {&methods, &models, &hooks, &sinks};
    for (size_t k = 0; k < 4; k++) {
        const entry *e = find_entry(all[k], name);
        if (e) {
            *in = all[k];
            return e;
        }
    }
    return NULL;
}

static mdf_status check_new_name(const char *kind, const char *name, mdf_error *err)
{
    if (!valid_ext_name(name))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "%s registers a %s named '%s': a name is letters, digits, '_' and '-' only",
                             origin_text(), kind, name ? name : "(null)");
    const registry *in;
    const entry *e = taken(name, &in);
    if (e)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "%s registers a %s named '%s', but %s already registered a %s of that name: rename "
                             "one of them (or load only one of the plugins)",
                             origin_text(), kind, name, e->origin, in->kind);
    return MDF_OK;
}

static mdf_status check_version(const char *kind, const char *name, unsigned version, mdf_error *err)
{
    if (version == MDFLOW_API_VERSION) return MDF_OK;
    return mdf_error_set(err, MDF_ERR_INVALID,
                         "%s registers %s '%s' built against mdflow API version %u, but this mdflow has API version "
                         "%d: rebuild it against this mdflow's headers (pkg-config --cflags --libs mdflow)",
                         origin_text(), kind, name ? name : "(null)", version, MDFLOW_API_VERSION);
}

static mdf_status add_entry(registry *r, const void *def, const char *name, const char *const *aliases,
                            unsigned version, mdf_error *err)
{
    mdf_status st = check_version(r->kind, name, version, err);
    if (st != MDF_OK) return st;
    st = check_new_name(r->kind, name, err);
    for (const char *const *a = aliases; st == MDF_OK && a && *a; a++) st = check_new_name(r->kind, *a, err);
    if (st != MDF_OK) return st;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        entry *e = realloc(r->e, cap * sizeof *e);
        if (!e) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to register %s '%s'", r->kind, name);
        r->e = e;
        r->cap = cap;
    }
    r->e[r->n++] = (entry){.def = def, .name = name, .aliases = aliases, .origin = origin_text()};
    return MDF_OK;
}

/* Registration runs under the lock; built-ins register from inside
 * ensure_builtins (pthread_once), whose caller may hold no lock. */
static mdf_status register_locked(registry *r, const void *def, const char *name, const char *const *aliases,
                                  unsigned version, mdf_error *err)
{
    pthread_mutex_lock(&reg_lock);
    mdf_status st = add_entry(r, def, name, aliases, version, err);
    pthread_mutex_unlock(&reg_lock);
    return st;
}

static mdf_status check_params_table(const char *kind, const char *name, const mdf_param_def *defs, size_t size,
                                     mdf_error *err)
{
    for (size_t k = 0; defs && defs[k].name; k++) {
        size_t width = defs[k].type == MDF_PARAM_TYPE_DOUBLE   ? sizeof(double)
                       : defs[k].type == MDF_PARAM_TYPE_STRING ? (size_t)MDF_PARAM_STRING_MAX
                                                               : sizeof(int32_t);
        if (defs[k].offset + width > size)
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "%s %s of %s: parameter %s lies outside its block of %zu bytes (set params_size)",
                                 kind, name, origin_text(), defs[k].name, size);
        if (defs[k].type != MDF_PARAM_TYPE_STRING && !(defs[k].def >= defs[k].min && defs[k].def <= defs[k].max))
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "%s %s of %s: the default of parameter %s lies outside its own range", kind, name,
                                 origin_text(), defs[k].name);
    }
    return MDF_OK;
}

mdf_status mdf_register_method(const mdf_method *m, mdf_error *err)
{
    if (!m || !m->pre_update)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s registers a method without pre_update", origin_text());
    mdf_status st = check_params_table("method", m->name ? m->name : "?", m->params, m->params_size, err);
    if (st == MDF_OK) st = ensure_builtins(err);
    return st != MDF_OK ? st : register_locked(&methods, m, m->name, m->aliases, m->api_version, err);
}

/* One codelet with a performance model named `symbol`, fitted on the
 * args' work as the built-in codelets' are. */
static mdf_status new_codelet(const char *symbol, void (*cpu)(void **, void *), const char *cpu_name,
                              void (*cuda)(void **, void *), int nbuffers, const enum starpu_data_access_mode *modes,
                              struct starpu_codelet **cl_out, struct starpu_perfmodel **pm_out, mdf_error *err)
{
    struct starpu_codelet *cl = calloc(1, sizeof *cl);
    struct starpu_perfmodel *pm = calloc(1, sizeof *pm);
    char *name = strdup(symbol);
    if (!cl || !pm || !name) {
        free(cl);
        free(pm);
        free(name);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for codelet %s", symbol);
    }
    pm->type = STARPU_PER_ARCH; /* as the built-in codelets' (mdf_perfmodel.c) */
    pm->symbol = name;
    pm->arch_cost_function = mdf_perfmodel_cost;
    cl->cpu_funcs[0] = cpu;
    cl->cpu_funcs_name[0] = cpu_name;
#if MDF_CUDA_ENABLED
    if (cuda) {
        cl->cuda_funcs[0] = cuda;
        cl->cuda_flags[0] = STARPU_CUDA_ASYNC;
    }
#else
    (void)cuda;
#endif
    /* StarPU 1.3 declares at most STARPU_NMAXBUFS (8) buffers in a codelet;
     * more make it variable, with the modes given per task. */
    if (nbuffers > STARPU_NMAXBUFS) cl->nbuffers = STARPU_VARIABLE_NBUFFERS;
    else {
        cl->nbuffers = nbuffers;
        memcpy(cl->modes, modes, sizeof(*modes) * (size_t)nbuffers);
    }
    cl->model = pm;
    cl->name = name;
    *cl_out = cl;
    *pm_out = pm;
    return MDF_OK;
}

static void free_codelet(struct starpu_codelet *cl, struct starpu_perfmodel *pm)
{
    if (pm) free((char *)pm->symbol);
    free(cl);
    free(pm);
}

/* A model's codelets: the def's functions with the buffer layouts of
 * extension.h, performance models mdf_model_NAME (and mdf_model_NAME_aux). */
static const enum starpu_data_access_mode model_modes[9] = {STARPU_R,  STARPU_R,  STARPU_R, STARPU_R, STARPU_R,
                                                            STARPU_RW, STARPU_RW, STARPU_R, STARPU_R};

static mdf_status build_model_codelet(entry *e, const mdf_model_def *d, mdf_error *err)
{
    const enum starpu_data_access_mode *modes = model_modes;
    static const enum starpu_data_access_mode aux_modes[7] = {STARPU_R, STARPU_R, STARPU_R, STARPU_R,
                                                              STARPU_R, STARPU_W, STARPU_R};
    char symbol[128];
    snprintf(symbol, sizeof symbol, "mdf_model_%s", d->name);
    int aux = d->aux_per_atom > 0;
    mdf_status st = new_codelet(symbol, d->cpu_func, d->cpu_func_name, d->cuda_func, aux ? 9 : 8, modes, &e->cl,
                                &e->pm, err);
    if (st != MDF_OK || !aux) return st;
    snprintf(symbol, sizeof symbol, "mdf_model_%s_aux", d->name);
    st = new_codelet(symbol, d->aux_cpu_func, d->aux_cpu_func_name, d->aux_cuda_func, 7, aux_modes, &e->aux_cl,
                     &e->aux_pm, err);
    if (st != MDF_OK) {
        free_codelet(e->cl, e->pm);
        e->cl = NULL;
        e->pm = NULL;
    }
    return st;
}

mdf_status mdf_register_model(const mdf_model_def *d, mdf_error *err)
{
    if (!d || !d->setup || !d->cpu_func)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s registers a model without setup or cpu_func (both required)",
                             origin_text());
    if (d->aux_per_atom < 0 || (d->aux_per_atom > 0 && !d->aux_cpu_func))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "%s registers model %s with aux_per_atom %d but no aux_cpu_func: a model with an "
                             "auxiliary pass needs its CPU function",
                             origin_text(), d->name ? d->name : "?", (int)d->aux_per_atom);
    const char *name = d->name ? d->name : "?";
    mdf_status st = check_params_table("model", name, d->params, d->params_size, err);
    if (st == MDF_OK) st = check_params_table("model", name, d->species_params, d->species_size, err);
    if (st == MDF_OK) st = check_params_table("model", name, d->pair_params, d->pair_size, err);
    if (st == MDF_OK) st = ensure_builtins(err);
    if (st != MDF_OK) return st;
    pthread_mutex_lock(&reg_lock);
    st = add_entry(&models, d, d->name, NULL, d->api_version, err);
    if (st == MDF_OK) {
        st = build_model_codelet(&models.e[models.n - 1], d, err);
        if (st != MDF_OK) models.n--;
    }
    pthread_mutex_unlock(&reg_lock);
    return st;
}

mdf_status mdf_register_hook(const mdf_hook_def *d, mdf_error *err)
{
    if (!d || !d->create)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s registers a hook without create", origin_text());
    mdf_status st = check_params_table("hook", d->name ? d->name : "?", d->params, d->params_size, err);
    if (st == MDF_OK) st = ensure_builtins(err);
    return st != MDF_OK ? st : register_locked(&hooks, d, d->name, NULL, d->api_version, err);
}

mdf_status mdf_register_sink(const mdf_sink_def *d, mdf_error *err)
{
    if (!d || !d->create)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s registers a sink without create", origin_text());
    mdf_status st = check_params_table("sink", d->name ? d->name : "?", d->params, d->params_size, err);
    if (st == MDF_OK) st = ensure_builtins(err);
    return st != MDF_OK ? st : register_locked(&sinks, d, d->name, NULL, d->api_version, err);
}

const mdf_method *mdf_method_find(const char *name) { return find_def(&methods, name); }
size_t mdf_method_count(void) { return count_defs(&methods); }
const mdf_method *mdf_method_at(size_t k) { return def_at(&methods, k); }
const mdf_model_def *mdf_model_def_find(const char *name) { return find_def(&models, name); }
size_t mdf_model_def_count(void) { return count_defs(&models); }
const mdf_model_def *mdf_model_def_at(size_t k) { return def_at(&models, k); }
const mdf_hook_def *mdf_hook_def_find(const char *name) { return find_def(&hooks, name); }
size_t mdf_hook_def_count(void) { return count_defs(&hooks); }
const mdf_hook_def *mdf_hook_def_at(size_t k) { return def_at(&hooks, k); }
const mdf_sink_def *mdf_sink_def_find(const char *name) { return find_def(&sinks, name); }
size_t mdf_sink_def_count(void) { return count_defs(&sinks); }
const mdf_sink_def *mdf_sink_def_at(size_t k) { return def_at(&sinks, k); }

/* The names of a registry, for "unknown NAME: use one of ..." messages. */
static void registry_names(registry *r, char *buf, size_t size)
{
    buf[0] = '\0';
    size_t used = 0, n = count_defs(r);
    for (size_t k = 0; k < n && used + 1 < size; k++) {
        pthread_mutex_lock(&reg_lock);
        const char *name = r->e[k].name;
        pthread_mutex_unlock(&reg_lock);
        int w = snprintf(buf + used, size - used, "%s%s", k ? ", " : "", name);
        if (w < 0) break;
        used += (size_t)w;
    }
}

static mdf_status unknown(registry *r, const char *name, mdf_error *err)
{
    char names[800];
    registry_names(r, names, sizeof names);
    return mdf_error_set(err, MDF_ERR_INVALID, "unknown %s '%s': the registered %ss are %s (a plugin adds more: --plugin PATH.so)",
                         r->kind, name, r->kind, names);
}

/* ---- hooks and sinks by name ---------------------------------------------------- */

/* Defaults, then the settings, into a fresh block of `size` bytes. */
static mdf_status make_block(const mdf_param_def *defs, size_t size, const mdf_param_list *l, const char *owner,
                             void **out, mdf_error *err)
{
    *out = calloc(1, size ? size : 1);
    if (!*out) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the parameters of %s", owner);
    mdf_params_defaults(defs, *out);
    mdf_status st = l ? mdf_param_list_apply(l, defs, *out, owner, err) : MDF_OK;
    if (st != MDF_OK) {
        free(*out);
        *out = NULL;
    }
    return st;
}

mdf_status mdf_hook_create_named(const char *name, const mdf_param_list *params, mdf_hook **out, mdf_error *err)
{
    *out = NULL;
    const mdf_hook_def *d = mdf_hook_def_find(name);
    if (!d) return unknown(&hooks, name, err);
    char owner[96];
    snprintf(owner, sizeof owner, "hook %s", d->name);
    void *block;
    mdf_status st = make_block(d->params, d->params_size, params, owner, &block, err);
    if (st == MDF_OK) st = d->create(block, out, err);
    free(block);
    return st;
}

mdf_status mdf_sink_create_named(const char *name, const mdf_param_list *params, mdf_sink **out, mdf_error *err)
{
    *out = NULL;
    const mdf_sink_def *d = mdf_sink_def_find(name);
    if (!d) return unknown(&sinks, name, err);
    char owner[96];
    snprintf(owner, sizeof owner, "sink %s", d->name);
    void *block;
    mdf_status st = make_block(d->params, d->params_size, params, owner, &block, err);
    if (st == MDF_OK) st = d->create(block, out, err);
    free(block);
    return st;
}

/* ---- models by name ------------------------------------------------------------ */

#define MODEL_ROWS_MAX 40

typedef struct model_row {
    int z[2];              /* species: z[1] = 0 */
    mdf_param_list p;
} model_row;

struct mdf_model_config {
    const mdf_model_def *def;
    mdf_param_list params;
    int nspecies, npairs;
    model_row species[MODEL_ROWS_MAX];
    model_row pairs[MODEL_ROWS_MAX];
};

mdf_status mdf_model_config_create(const char *name, mdf_model_config **out, mdf_error *err)
{
    *out = NULL;
    const mdf_model_def *d = mdf_model_def_find(name);
#ifndef MDF_HAVE_KIM
    if (!d && name && !strcmp(name, "kim"))
        return mdf_error_set(err, MDF_ERR_INVALID, "this mdflow was built without KIM support (the kim model): install "
                             "libkim-api-dev and openkim-models (scripts/install-deps.sh), then configure and build "
                             "again");
#endif
    if (!d) return unknown(&models, name ? name : "(null)", err);
    mdf_model_config *c = calloc(1, sizeof *c);
    if (!c) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a model configuration");
    c->def = d;
    *out = c;
    return MDF_OK;
}

void mdf_model_config_destroy(mdf_model_config *c) { free(c); }
const char *mdf_model_config_name(const mdf_model_config *c) { return c->def->name; }

int mdf_model_config_has_param(const mdf_model_config *c, const char *name)
{
    return mdf_params_find(c->def->params, name) != NULL;
}

mdf_status mdf_model_config_set(mdf_model_config *c, const char *name, const char *value, mdf_error *err)
{
    char owner[96];
    snprintf(owner, sizeof owner, "model %s", c->def->name);
    mdf_status st = mdf_params_check_setting(c->def->params, owner, name, value, err);
    return st != MDF_OK ? st : mdf_param_list_set(&c->params, name, value, err);
}

static mdf_status row_for(model_row *rows, int *n, int za, int zb, const char *what, model_row **out,
                          mdf_error *err)
{
    if (za < 1 || za > 118 || zb < 0 || zb > 118)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s: atomic number %d is not an element (1-118)", what,
                             za < 1 || za > 118 ? za : zb);
    for (int k = 0; k < *n; k++)
        if ((rows[k].z[0] == za && rows[k].z[1] == zb) || (rows[k].z[0] == zb && rows[k].z[1] == za)) {
            *out = &rows[k];
            return MDF_OK;
        }
    if (*n == MODEL_ROWS_MAX) return mdf_error_set(err, MDF_ERR_INVALID, "%s: more than %d rows", what, MODEL_ROWS_MAX);
    *out = &rows[(*n)++];
    (*out)->z[0] = za;
    (*out)->z[1] = zb;
    mdf_param_list_init(&(*out)->p);
    return MDF_OK;
}

/* A per-element (kind "per-element", zb 0) or per-pair parameter: checked
 * against the def's table now, kept in the row of its element(s). */
static mdf_status set_row(mdf_model_config *c, const char *kind, const mdf_param_def *defs, model_row *rows, int *n,
                          int za, int zb, const char *name, const char *value, mdf_error *err)
{
    char owner[96];
    snprintf(owner, sizeof owner, "model %s (%s parameters)", c->def->name, kind);
    if (!defs) return mdf_error_set(err, MDF_ERR_INVALID, "model %s takes no %s parameters", c->def->name, kind);
    mdf_status st = mdf_params_check_setting(defs, owner, name, value, err);
    model_row *r = NULL;
    if (st == MDF_OK) st = row_for(rows, n, za, zb, owner, &r, err);
    return st != MDF_OK ? st : mdf_param_list_set(&r->p, name, value, err);
}

mdf_status mdf_model_config_set_species(mdf_model_config *c, int z, const char *name, const char *value,
                                        mdf_error *err)
{
    return set_row(c, "per-element", c->def->species_params, c->species, &c->nspecies, z, 0,
                   name, value, err);
}

mdf_status mdf_model_config_set_pair(mdf_model_config *c, int za, int zb, const char *name, const char *value,
                                     mdf_error *err)
{
    if (zb < 1 && c->def->pair_params)
        return mdf_error_set(err, MDF_ERR_INVALID, "model %s (per-pair parameters): atomic number %d is not an element",
                             c->def->name, zb);
    return set_row(c, "per-pair", c->def->pair_params, c->pairs, &c->npairs, za, zb, name, value,
                   err);
}

/* The blocks of every row: a per-element or per-pair parameter not given
 * takes the scalar parameter of the same name when the model has one. */
static mdf_status row_blocks(const mdf_model_config *c, const model_row *rows, int n, const mdf_param_def *defs,
                             size_t size, const char *owner, void **blocks, mdf_error *err)
{
    for (int k = 0; k < n; k++) {
        mdf_status st = make_block(defs, size, NULL, owner, &blocks[k], err);
        for (int j = 0; st == MDF_OK && j < c->params.n; j++)
            if (mdf_params_find(defs, c->params.item[j].name))
                st = mdf_params_set(defs, blocks[k], owner, c->params.item[j].name, c->params.item[j].value, err);
        if (st == MDF_OK) st = mdf_param_list_apply(&rows[k].p, defs, blocks[k], owner, err);
        if (st != MDF_OK) return st;
    }
    return MDF_OK;
}

static void free_blocks(void **blocks, int n)
{
    for (int k = 0; k < n; k++) free(blocks[k]);
}

mdf_status mdf_model_create(const mdf_model_config *c, mdf_model **out, mdf_error *err)
{
    *out = NULL;
    const mdf_model_def *d = c->def;
    char owner[96];
    snprintf(owner, sizeof owner, "model %s", d->name);
    void *params = NULL, *sb[MODEL_ROWS_MAX] = {0}, *pb[MODEL_ROWS_MAX] = {0};
    int sz[MODEL_ROWS_MAX], pz[MODEL_ROWS_MAX][2];
    mdf_status st = make_block(d->params, d->params_size, &c->params, owner, &params, err);
    if (st == MDF_OK) st = row_blocks(c, c->species, c->nspecies, d->species_params, d->species_size, owner, sb, err);
    if (st == MDF_OK) st = row_blocks(c, c->pairs, c->npairs, d->pair_params, d->pair_size, owner, pb, err);
    if (st == MDF_OK) {
        for (int k = 0; k < c->nspecies; k++) sz[k] = c->species[k].z[0];
        for (int k = 0; k < c->npairs; k++) pz[k][0] = c->pairs[k].z[0], pz[k][1] = c->pairs[k].z[1];
        mdf_model_species sp = {.nspecies = c->nspecies, .z = sz, .species = (const void *const *)sb,
                                .npairs = c->npairs, .pair_z = (const int(*)[2])pz, .pairs = (const void *const *)pb};
        mdf_model_setup s;
        memset(&s, 0, sizeof s);
        st = d->setup(params, &sp, &s, err);
        if (st == MDF_OK) st = mdf_model_from_setup(d, &s, out, err);
        else free(s.blob);
    }
    free(params);
    free_blocks(sb, c->nspecies);
    free_blocks(pb, c->npairs);
    return st;
}

mdf_status mdf_model_from_setup(const mdf_model_def *d, mdf_model_setup *s, mdf_model **out, mdf_error *err)
{
    *out = NULL;
    if (!s->blob || s->blob_size == 0 || !(s->cutoff > 0.0) || !(s->density_hint > 0.0)) {
        free(s->blob);
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "model %s's setup gave no parameter blob, cutoff or density hint (all are required)",
                             d->name);
    }
    struct starpu_codelet *cl = NULL, *aux_cl = NULL;
    if (mdf_model_def_find(d->name) == d) { /* registers the built-ins first */
        pthread_mutex_lock(&reg_lock);
        const entry *e = find_entry(&models, d->name);
        cl = e->cl;
        aux_cl = e->aux_cl;
        pthread_mutex_unlock(&reg_lock);
    }
    mdf_model *m = cl ? calloc(1, sizeof *m) : NULL;
    if (!m) {
        free(s->blob);
        return cl ? mdf_error_set(err, MDF_ERR_NOMEM, "no memory for model %s", d->name)
                  : mdf_error_set(err, MDF_ERR_INVALID, "model %s is not registered (mdf_register_model)", d->name);
    }
    m->def = d;
    m->cl = cl;
    m->aux_cl = aux_cl;
    m->blob = s->blob;
    m->cutoff = s->cutoff;
    m->density_hint = s->density_hint;
    m->all_pairs_atoms = s->all_pairs_atoms;
    m->all_pairs_small = s->all_pairs_small;
    m->all_pairs_ratio = s->all_pairs_ratio;
    for (int z = 0; z < 128; z++) m->known_z[z] = s->all_elements ? z >= 1 && z <= 118 : s->known_z[z] != 0;
    memcpy(m->missing_element_hint, s->missing_element_hint, sizeof m->missing_element_hint);
    m->missing_element_hint[sizeof m->missing_element_hint - 1] = '\0';
    m->fingerprint_skip_off = s->fingerprint_skip_off;
    m->fingerprint_skip_len = s->fingerprint_skip_len;
    if (s->label[0]) snprintf(m->label, sizeof m->label, "%s", s->label);
    else snprintf(m->label, sizeof m->label, "the %s model", d->name);
    starpu_vector_data_register(&m->params, STARPU_MAIN_RAM, (uintptr_t)m->blob, 1, s->blob_size);
    starpu_data_set_name(m->params, cl->name);
    *out = m;
    return MDF_OK;
}

struct starpu_task *mdf_model_prepare(const mdf_model *m, const mdf_model_task *t)
{
    mdf_model_args a = {.work = t->chunk.atom_end - t->chunk.atom_begin, .chunk = t->chunk,
                        .want_virial = (t->flags & MDF_COMPUTE_VIRIAL) != 0, .status_lo = t->status_lo,
                        .status_hi = t->status_hi, .partial = t->partial != 0, .halo_at = t->halo_at,
                        .fuse_aux = t->fuse_aux != 0, .halo_owned = t->halo_owned != 0};
    starpu_data_handle_t h[] = {t->pos, t->atoms, t->sys, t->list, t->bins, t->forces, t->results, m->params, t->aux};
    return mdf_task_new(m->cl, &a, sizeof a, m->aux_cl ? 9 : 8, h, model_modes, m->cl->name);
}

int64_t *mdf_model_task_work(struct starpu_task *task) { return &((mdf_model_args *)task->cl_arg)->work; }

int mdf_model_insert(const mdf_model *m, const mdf_model_task *t)
{
    struct starpu_task *task = mdf_model_prepare(m, t);
    return task ? mdf_task_submit(task) : -ENOMEM;
}

int mdf_model_insert_aux(const mdf_model *m, const mdf_model_task *t, starpu_data_handle_t aux_rows)
{
    mdf_model_args a = {.work = t->chunk.atom_end - t->chunk.atom_begin, .chunk = t->chunk, .want_virial = 0,
                        .status_lo = t->status_lo, .status_hi = t->status_hi, .partial = t->partial != 0};
    starpu_data_handle_t h[] = {t->pos, t->atoms, t->sys, t->list, t->bins, aux_rows, m->params};
    return mdf_submit(m->aux_cl, &a, sizeof a, 7, h, NULL, m->aux_cl->name);
}

void mdf_model_destroy(mdf_model *m)
{
    if (!m) return;
    mdf_data_unregister(m->params);
    if (m->def->destroy) m->def->destroy(m->blob);
    free(m->blob);
    free(m);
}

const char *mdf_model_name(const mdf_model *m) { return m->def->name; }
double mdf_model_cutoff(const mdf_model *m) { return m->cutoff; }
int mdf_model_has_element(const mdf_model *m, int z) { return z >= 0 && z < 128 && m->known_z[z]; }
int mdf_model_own_neighbours(const mdf_model *m) { return (m->def->flags & MDF_MODEL_OWN_NEIGHBOURS) != 0; }

double mdf_model_list_radius(const mdf_model *m, double skin)
{
    return mdf_model_own_neighbours(m) ? MDF_MODEL_TOKEN_LIST_RADIUS : m->cutoff + skin;
}

mdf_status mdf_model_element_error(const mdf_model *m, size_t index, long long id, long long atom, int z,
                                   mdf_error *err)
{
    return mdf_error_set(err, MDF_ERR_INVALID, "system %zu (id %lld), atom %lld: element %s (Z=%d) has no parameters "
                         "in %s: %s", index, id, atom, mdf_element_symbol(z), z, m->label,
                         mdf_model_missing_element_hint(m));
}

/* ---- plugins --------------------------------------------------------------------- */

mdf_status mdf_plugin_declare(mdf_plugin *p, unsigned api_version, mdf_error *err)
{
    if (api_version != MDFLOW_API_VERSION)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "%s was built against mdflow API version %u, but this mdflow has API version %d: "
                             "rebuild the plugin against this mdflow's headers (make clean all, with pkg-config "
                             "--cflags --libs mdflow finding this installation)",
                             p->path, api_version, MDFLOW_API_VERSION);
    p->declared = 1;
    return MDF_OK;
}

/* Drops every entry the plugin at `origin` registered (its load failed). */
static void unregister_origin(const char *origin)
{
    registry *all[] = {&methods, &models, &hooks, &sinks};
    for (size_t r = 0; r < 4; r++) {
        size_t kept = 0;
        for (size_t k = 0; k < all[r]->n; k++) {
            entry *e = &all[r]->e[k];
            if (e->origin == origin) {
                free_codelet(e->cl, e->pm);
                free_codelet(e->aux_cl, e->aux_pm);
            } else {
                all[r]->e[kept++] = *e;
            }
        }
        all[r]->n = kept;
    }
}

static int already_loaded(const char *path)
{
    for (size_t k = 0; k < nplugins; k++)
        if (strcmp(plugins[k].path, path) == 0) return 1;
    return 0;
}

/* Opens the file and runs its entry point, with loading_origin naming it.
 * Called with load_lock held (one plugin at a time). */
static mdf_status load_one(const char *given, const char *path, mdf_error *err)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return mdf_error_set(err, MDF_ERR_IO,
                             "plugin %s could not be loaded: %s (build it as a shared object, cc -shared -fPIC, "
                             "linked with pkg-config --libs mdflow)",
                             given, dlerror());
    mdf_plugin_init_fn init;
    *(void **)&init = dlsym(h, "mdflow_plugin_init");
    if (!init) {
        dlclose(h);
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "plugin %s exports no mdflow_plugin_init: define it with MDFLOW_PLUGIN(your_register_"
                             "function) from <mdflow/extension.h> (see examples/plugin)",
                             given);
    }
    char *copy = strdup(path);
    plugin_rec *grown = copy ? realloc(plugins, (nplugins + 1) * sizeof *plugins) : NULL;
    if (!grown) {
        free(copy);
        dlclose(h);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to load plugin %s", given);
    }
    plugins = grown;
    mdf_plugin p = {.path = copy, .declared = 0};
    loading_origin = copy;
    mdf_error cause;
    mdf_status st = init(&p, &cause);
    loading_origin = NULL;
    if (st == MDF_OK && !p.declared)
        st = mdf_error_set(&cause, MDF_ERR_INVALID,
                           "%s's mdflow_plugin_init did not call mdf_plugin_declare: write it with "
                           "MDFLOW_PLUGIN(your_register_function), which declares the API version",
                           copy);
    if (st != MDF_OK) {
        pthread_mutex_lock(&reg_lock);
        unregister_origin(copy);
        pthread_mutex_unlock(&reg_lock);
        dlclose(h);
        mdf_error_set(err, st, "plugin %s failed to load: %s", given, cause.message);
        free(copy);
        return st;
    }
    plugins[nplugins++] = (plugin_rec){.path = copy, .handle = h};
    return MDF_OK;
}

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

mdf_status mdf_plugin_load(const char *path, mdf_error *err)
{
    mdf_status st = ensure_builtins(err);
    if (st != MDF_OK) return st;
    char real[PATH_MAX];
    if (!path || !realpath(path, real))
        return mdf_error_set(err, MDF_ERR_IO, "plugin %s: no such file (give the path of the .so, e.g. ./plugin.so)",
                             path ? path : "(null)");
    pthread_mutex_lock(&load_lock);
    st = already_loaded(real) ? MDF_OK : load_one(path, real, err);
    pthread_mutex_unlock(&load_lock);
    return st;
}

static int ends_with_so(const char *name)
{
    size_t n = strlen(name);
    return n > 3 && strcmp(name + n - 3, ".so") == 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static mdf_status load_directory(const char *dir, mdf_error *err)
{
    struct dirent **list;
    int n = scandir(dir, &list, NULL, by_name);
    if (n < 0) return mdf_error_set(err, MDF_ERR_IO, "MDFLOW_PLUGIN_PATH names %s, which cannot be read", dir);
    mdf_status st = MDF_OK;
    for (int k = 0; k < n; k++) {
        if (st == MDF_OK && ends_with_so(list[k]->d_name)) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", dir, list[k]->d_name);
            st = mdf_plugin_load(path, err);
        }
        free(list[k]);
    }
    free(list);
    return st;
}

mdf_status mdf_plugin_load_env(mdf_error *err)
{
    const char *env = getenv("MDFLOW_PLUGIN_PATH");
    if (!env || !*env) return ensure_builtins(err);
    char *copy = strdup(env);
    if (!copy) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory");
    mdf_status st = MDF_OK;
    char *save = NULL;
    for (char *item = strtok_r(copy, ":", &save); st == MDF_OK && item; item = strtok_r(NULL, ":", &save)) {
        DIR *d = opendir(item);
        if (d) {
            closedir(d);
            st = load_directory(item, err);
        } else {
            st = mdf_plugin_load(item, err);
            if (st != MDF_OK) mdf_error_prefix(err, st, "MDFLOW_PLUGIN_PATH");
        }
    }
    free(copy);
    return st;
}

size_t mdf_plugin_count(void)
{
    pthread_mutex_lock(&load_lock);
    size_t n = nplugins;
    pthread_mutex_unlock(&load_lock);
    return n;
}

const char *mdf_plugin_file(size_t k)
{
    pthread_mutex_lock(&load_lock);
    const char *p = k < nplugins ? plugins[k].path : NULL;
    pthread_mutex_unlock(&load_lock);
    return p;
}
