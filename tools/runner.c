/* mdflow — pieces the program's commands share. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runner.h"

#ifndef MDF_PKGDATADIR
#define MDF_PKGDATADIR "/usr/local/share/mdflow"
#endif
#ifndef MDF_SRCDIR
#define MDF_SRCDIR "."
#endif

void runner_hooks_init(runner_hooks *h)
{
    memset(h, 0, sizeof *h);
    h->max_force = -1.0;
    h->drift = -1.0;
    h->log_every = 10;
}

/* Adds the hook just created (st: its creation's status); h is read only
 * after creation, never as an argument evaluated alongside it. */
static mdf_status add(mdf_stage *s, int part, mdf_status st, mdf_hook **h, mdf_error *err)
{
    if (st != MDF_OK) return st;
    return mdf_stage_add_part_hook(s, part, *h, err);
}

mdf_status runner_add_hooks(mdf_stage *s, int part, const runner_hooks *o, mdf_error *err)
{
    mdf_status st = MDF_OK;
    mdf_hook *h = NULL;
    if (o->freeze) st = add(s, part, mdf_hook_create_freeze(&h, err), &h, err);
    if (st == MDF_OK && o->max_force >= 0.0)
        st = add(s, part, mdf_hook_create_force_clamp(o->max_force, &h, err), &h, err);
    if (st == MDF_OK && o->nan_check)
        st = add(s, part, mdf_hook_create_nan_check(1, MDF_NAN_STOP, stderr, &h, err), &h, err);
    if (st == MDF_OK && o->wrap_every > 0) st = add(s, part, mdf_hook_create_wrap(o->wrap_every, &h, err), &h, err);
    if (st == MDF_OK && o->drift > 0.0)
        st = add(s, part, mdf_hook_create_drift_monitor(o->drift, MDF_DRIFT_WARN, o->log_every, stderr, &h, err), &h,
                 err);
    if (st == MDF_OK && o->thermo && o->thermo_every > 0)
        st = add(s, part,
                 mdf_hook_create_thermo(o->thermo, o->thermo_per_system, o->thermo_every, o->dt_fs, &h, err), &h,
                 err);
    if (st == MDF_OK && o->log_file)
        st = add(s, part, mdf_hook_create_log(o->log_file, o->log_every, &h, err), &h, err);
    return st;
}

/* ---- a model as configured -------------------------------------------------------- */

mdf_status runner_model_init(runner_model *m, const char *name, mdf_error *err)
{
    memset(m, 0, sizeof *m);
    mdf_model_config *probe = NULL; /* its message lists the registered models */
    mdf_status st = mdf_model_config_create(name, &probe, err);
    if (st != MDF_OK) return st;
    snprintf(m->name, sizeof m->name, "%s", mdf_model_config_name(probe));
    mdf_model_config_destroy(probe);
    return MDF_OK;
}

mdf_status runner_model_init_spec(runner_model *m, const char *spec, mdf_error *err)
{
    char name[RUNNER_NAME_MAX];
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, spec, len);
    name[len] = '\0';
    mdf_status st = runner_model_init(m, name, err);
    if (st != MDF_OK || !colon) return st;
    const mdf_param_def *t = runner_model_params(m);
    if (!t || !mdf_params_find(t, "name"))
        return mdf_error_set(err, MDF_ERR_INVALID, "model %s takes no name (type NAME:VALUE is for models with a name "
                             "parameter, as kim:NAME; a file is given as file: PATH)", name);
    return runner_model_add(m, RUNNER_SCALAR, 0, 0, "name", colon + 1, err);
}

/* The table of one kind of row, and its owner for messages. */
static const mdf_param_def *row_table(const mdf_model_def *d, runner_row kind, char *owner, size_t owner_size)
{
    static const char *const what[] = {"", " (per-element parameters)", " (per-pair parameters)"};
    snprintf(owner, owner_size, "model %s%s", d->name, what[kind]);
    return kind == RUNNER_SCALAR ? d->params : kind == RUNNER_SPECIES ? d->species_params : d->pair_params;
}

mdf_status runner_model_add(runner_model *m, runner_row kind, int za, int zb, const char *name, const char *value,
                            mdf_error *err)
{
    const mdf_model_def *d = mdf_model_def_find(m->name);
    if (!d) return mdf_error_set(err, MDF_ERR_INVALID, "model '%s' is not registered", m->name);
    char owner[128];
    const mdf_param_def *defs = row_table(d, kind, owner, sizeof owner);
    if (kind != RUNNER_SCALAR && !defs)
        return mdf_error_set(err, MDF_ERR_INVALID, "model %s takes no %s parameters (mdflow models lists what it "
                             "takes)", d->name, kind == RUNNER_SPECIES ? "per-element" : "per-pair");
    if (kind != RUNNER_SCALAR && (za < 1 || za > 118 || (kind == RUNNER_PAIR && (zb < 1 || zb > 118))))
        return mdf_error_set(err, MDF_ERR_INVALID, "%s: atomic number %d is not an element (1-118)", owner,
                             za < 1 || za > 118 ? za : zb);
    if (strlen(name) >= MDF_PARAM_NAME_MAX || strlen(value) >= MDF_PARAM_VALUE_MAX)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s: parameter '%.40s' or its value is longer than %d characters",
                             owner, name, MDF_PARAM_VALUE_MAX - 1);
    mdf_status st = mdf_params_check_setting(defs, owner, name, value, err);
    if (st != MDF_OK) return st;
    if (m->n == RUNNER_MODEL_SETTINGS)
        return mdf_error_set(err, MDF_ERR_INVALID, "more than %d model settings: %s is one too many",
                             RUNNER_MODEL_SETTINGS, name);
    runner_setting *x = &m->s[m->n++];
    x->kind = kind;
    x->z[0] = kind == RUNNER_SCALAR ? 0 : za;
    x->z[1] = kind == RUNNER_PAIR ? zb : 0;
    snprintf(x->name, sizeof x->name, "%s", name);
    snprintf(x->value, sizeof x->value, "%s", value);
    return MDF_OK;
}

int runner_model_has_species(const runner_model *m, int z)
{
    for (int k = 0; k < m->n; k++)
        if (m->s[k].kind == RUNNER_SPECIES && m->s[k].z[0] == z) return 1;
    return 0;
}

int runner_model_count(const runner_model *m, runner_row kind)
{
    int n = 0;
    for (int k = 0; k < m->n; k++) n += m->s[k].kind == kind;
    return n;
}

const mdf_param_def *runner_model_params(const runner_model *m)
{
    const mdf_model_def *d = mdf_model_def_find(m->name);
    return d ? d->params : NULL;
}

mdf_status runner_model_create(const runner_model *m, mdf_model **out, mdf_error *err)
{
    *out = NULL;
    mdf_model_config *c = NULL;
    mdf_status st = mdf_model_config_create(m->name, &c, err);
    for (int k = 0; st == MDF_OK && k < m->n; k++) {
        const runner_setting *x = &m->s[k];
        if (x->kind == RUNNER_SCALAR) st = mdf_model_config_set(c, x->name, x->value, err);
        else if (x->kind == RUNNER_SPECIES) st = mdf_model_config_set_species(c, x->z[0], x->name, x->value, err);
        else st = mdf_model_config_set_pair(c, x->z[0], x->z[1], x->name, x->value, err);
    }
    if (st == MDF_OK) st = mdf_model_create(c, out, err);
    if (c) mdf_model_config_destroy(c);
    return st;
}

/* ---- plugins' entries and the methods' names ------------------------------------------ */

const char *runner_plugin_of(const void *def)
{
    Dl_info info;
    if (!def || !dladdr(def, &info) || !info.dli_fname) return NULL;
    char real[PATH_MAX];
    if (!realpath(info.dli_fname, real)) return NULL;
    for (size_t k = 0; k < mdf_plugin_count(); k++) {
        const char *f = mdf_plugin_file(k);
        if (f && strcmp(f, real) == 0) return f;
    }
    return NULL;
}

void runner_method_names(int want, char *buf, size_t size)
{
    size_t used = 0;
    if (size) buf[0] = '\0';
    for (size_t k = 0; k < mdf_method_count() && used + 1 < size; k++) {
        const mdf_method *m = mdf_method_at(k);
        int opt = (m->flags & MDF_METHOD_OPTIMISER) != 0;
        if (want >= 0 && opt != want) continue;
        int w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", m->name);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* ---- warnings ------------------------------------------------------------------------ */

/* The value of parameter `name` that an lj per-element row for z ends with:
 * the table's default, the scalar setting of that name, then the row's own
 * (the order mdf_model_create applies them in). */
static double row_value(const runner_model *m, const mdf_model_def *d, int z, const char *name)
{
    const mdf_param_def *p = mdf_params_find(d->species_params, name);
    void *block = p ? calloc(1, d->species_size) : NULL;
    if (!block) return NAN;
    mdf_params_defaults(d->species_params, block);
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < m->n; k++) {
            const runner_setting *x = &m->s[k];
            if (strcmp(x->name, name) != 0) continue;
            if ((pass == 0 && x->kind == RUNNER_SCALAR) || (pass == 1 && x->kind == RUNNER_SPECIES && x->z[0] == z))
                mdf_params_set(d->species_params, block, "", name, x->value, NULL);
        }
    double v = mdf_params_get(p, block);
    free(block);
    return v;
}

/* The species and pairs of an lj configuration with per-element rows, with
 * the cutoffs the model will use (0: 2.5 sigma); 0 when there is nothing
 * to warn about (another model, fewer than two rows). */
static int lj_rows(const runner_model *m, mdf_lj_config *lj)
{
    const mdf_model_def *d = mdf_model_def_find(m->name);
    mdf_lj_config_init(lj);
    if (!d || strcmp(m->name, "lj") != 0 || !d->species_params) return 0;
    for (int k = 0; k < m->n; k++) {
        int z = m->s[k].z[0], seen = 0;
        if (m->s[k].kind != RUNNER_SPECIES) continue;
        for (int j = 0; j < lj->nspecies; j++) seen |= lj->z[j] == z;
        if (seen) continue;
        double sigma = row_value(m, d, z, "sigma"), rc = row_value(m, d, z, "cutoff");
        if (mdf_lj_config_add_species(lj, z, row_value(m, d, z, "epsilon"), sigma, rc > 0.0 ? rc : 2.5 * sigma,
                                      NULL) != MDF_OK)
            return 0;
    }
    for (int k = 0; k < m->n; k++)
        if (m->s[k].kind == RUNNER_PAIR &&
            mdf_lj_config_set_pair(lj, m->s[k].z[0], m->s[k].z[1], 1.0, 1.0, 1.0, NULL) != MDF_OK)
            return 0;
    return lj->nspecies > 1;
}

void runner_warn_mixed_cutoffs(const runner_model *m, const char *where)
{
    mdf_lj_config cfg, *lj = &cfg;
    if (!lj_rows(m, lj)) return;
    int za = 0, zb = 0, n = mdf_lj_config_mixed_cutoffs(lj, &za, &zb);
    if (n == 0) return;
    int a = 0, b = 0;
    for (int k = 0; k < lj->nspecies; k++) {
        if (lj->z[k] == za) a = k;
        if (lj->z[k] == zb) b = k;
    }
    double ra = lj->cutoff[a][a], rb = lj->cutoff[b][b];
    fprintf(stderr,
            "mdflow: warning: the Lennard-Jones pair %s-%s has no parameters of its own: its cutoff is max(rc_%s, "
            "rc_%s) = %g Å, where LAMMPS's arithmetic mixing would give (%g + %g)/2 = %g Å (%d such pair%s); give "
            "the pair its own parameters (%s) to choose\n",
            mdf_element_symbol(za), mdf_element_symbol(zb), mdf_element_symbol(za), mdf_element_symbol(zb),
            ra > rb ? ra : rb, ra, rb, 0.5 * (ra + rb), n, n == 1 ? "" : "s", where);
}

void runner_warn_npt_open(const char *method, const char *where, const mdf_frame_list *frames)
{
    const mdf_method *m = method ? mdf_method_find(method) : NULL;
    if (!m || !(m->flags & MDF_METHOD_CELL)) return;
    size_t open = 0, first = 0;
    for (size_t i = 0; i < frames->count; i++) {
        const int *pbc = frames->frames[i].pbc;
        if (pbc[0] && pbc[1] && pbc[2]) continue;
        if (open++ == 0) first = i;
    }
    if (open == 0) return;
    const int *pbc = frames->frames[first].pbc;
    fprintf(stderr,
            "mdflow: warning: %s changes the volume of systems periodic in all three directions only: %zu of %zu "
            "system%s (the first: system %zu, pbc %c %c %c) run at constant volume under its thermostat (NVT)\n",
            where, open, frames->count, frames->count == 1 ? "" : "s", first, pbc[0] ? 'T' : 'F',
            pbc[1] ? 'T' : 'F', pbc[2] ? 'T' : 'F');
}

int runner_frames_have_frozen(const mdf_frame_list *frames)
{
    for (size_t i = 0; i < frames->count; i++)
        for (size_t k = 0; k < frames->frames[i].nextra; k++) {
            const char *name = frames->frames[i].extra[k].name;
            if (!strcmp(name, "fixed") || !strcmp(name, "move_mask")) return 1;
        }
    return 0;
}

const char *runner_find_data(const char *relative)
{
    static char path[4096];
    const char *env = getenv("MDFLOW_DATA");
    const char *dirs[] = {env, MDF_PKGDATADIR, MDF_SRCDIR};
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
        if (!dirs[k]) continue;
        snprintf(path, sizeof path, "%s/%s", dirs[k], relative);
        if (access(path, R_OK) == 0) return path;
    }
    return NULL;
}

static int all_finite(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

int runner_frame_finite(const mdf_frame *f)
{
    size_t n = 3 * (size_t)f->natoms;
    return all_finite(f->positions, n) && (!f->velocities || all_finite(f->velocities, n)) &&
           all_finite(f->cell, 9) && (!f->has_energy || isfinite(f->energy));
}

void runner_nonfinite_check(runner_nonfinite *n, const mdf_frame *f, int64_t id, int32_t status)
{
    n->total++;
    if (status == MDF_STATUS_FAILED || runner_frame_finite(f)) return;
    size_t len = strlen(n->names);
    if (n->count < 5)
        snprintf(n->names + len, sizeof n->names - len, "%ssystem id %lld", n->count ? ", " : "", (long long)id);
    else if (n->count == 5)
        snprintf(n->names + len, sizeof n->names - len, ", ...");
    n->count++;
}

mdf_status runner_nonfinite_error(const runner_nonfinite *n, const char *hint, mdf_error *err)
{
    if (n->count == 0) return MDF_OK;
    return mdf_error_set(err, MDF_ERR_PHYSICS,
                         "the run ended with NaN/Inf positions, velocities or energies in %zu of %zu systems: %s; "
                         "they exploded (no NaN check stopped them): %s",
                         n->count, n->total, n->names, hint);
}

/* ---- no invented physics ------------------------------------------------------------- */

#define ARGON_Z 18

/* Whether a scalar setting named `name` was given. */
static int has_scalar(const runner_model *m, const char *name)
{
    for (int k = 0; k < m->n; k++)
        if (m->s[k].kind == RUNNER_SCALAR && !strcmp(m->s[k].name, name)) return 1;
    return 0;
}

/* Whether the configured lj model has parameters for element z that
 * somebody chose (see runner_check_model_elements). */
static int lj_has_element(const runner_model *m, int z)
{
    if (runner_model_count(m, RUNNER_SPECIES) > 0) return runner_model_has_species(m, z);
    return has_scalar(m, "epsilon") || has_scalar(m, "sigma") || z == ARGON_Z;
}

mdf_status runner_check_model_elements(const runner_model *m, const mdf_frame_list *frames, const char *where,
                                       const char *fix, mdf_error *err)
{
    if (strcmp(m->name, "lj") != 0) return MDF_OK;
    char seen[119] = {0}, names[400] = "";
    size_t first = 0, nmissing = 0, used = 0;
    for (size_t i = 0; i < frames->count; i++)
        for (int64_t a = 0; a < frames->frames[i].natoms; a++) {
            int z = frames->frames[i].numbers[a];
            if (z < 1 || z > 118 || seen[z] || lj_has_element(m, z)) continue;
            seen[z] = 1;
            if (nmissing++ == 0) first = i;
        }
    if (nmissing == 0) return MDF_OK;
    for (int z = 1; z <= 118 && used + 8 < sizeof names; z++) /* in order of atomic number */
        if (seen[z]) used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                                              mdf_element_symbol(z));
    int defaults = runner_model_count(m, RUNNER_SPECIES) == 0;
    return mdf_error_set(err, MDF_ERR_INVALID,
                         "%s holds %s (the first in system %zu), and model lj has no parameters for %s%s: give "
                         "them: %s",
                         where, names, first, nmissing == 1 ? "it" : "them",
                         defaults ? " (its built-in ones, epsilon 0.0104 eV and sigma 3.40 Å, are argon's and are "
                                    "used for argon only)"
                                  : " (no per-element row)",
                         fix);
}
