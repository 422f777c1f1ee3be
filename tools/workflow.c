/* mdflow — workflow files (YAML, read with libyaml's document API).
 *
 * The file is loaded as one document of nodes; every node keeps its start
 * mark, so each message names the line of the offending key or value. Each
 * section is a mapping whose keys are checked against a fixed list (unknown
 * and duplicate keys are errors) before any value is read; values are then
 * read in a fixed order, because some depend on others (a stage's params on
 * its method, the composition on the stages). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>
#include "workflow.h"
#include "formats.h"
#include "mdflow/extension.h"

#define WF_DEFAULT_MAX_STEPS 1000000
#define WF_LIST_MAX 512

typedef struct wf_ctx {
    yaml_document_t *doc;
    const char *file;
    mdf_error *err;
} wf_ctx;

/* ---- messages -------------------------------------------------------------------- */

static int line_of(const yaml_node_t *n) { return n ? (int)n->start_mark.line + 1 : 1; }

static mdf_status fail_at(wf_ctx *c, const yaml_node_t *n, mdf_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static mdf_status fail_at(wf_ctx *c, const yaml_node_t *n, mdf_status code, const char *fmt, ...)
{
    char msg[MDF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mdf_error_set(c->err, code, "%s:%d: %s", c->file, line_of(n), msg);
}

/* A library error (no line of its own) as FILE:LINE: context: message. */
static mdf_status prefix_error(wf_ctx *c, const yaml_node_t *n, const char *context, mdf_status code)
{
    char msg[MDF_ERROR_MESSAGE_MAX];
    snprintf(msg, sizeof msg, "%s", c->err ? c->err->message : "");
    if (c->err) mdf_error_clear(c->err);
    return mdf_error_set(c->err, code, "%s:%d: %s: %s", c->file, line_of(n), context, msg);
}

static const char *kind_of(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    default: return "a single value";
    }
}

static void append(char *list, size_t size, const char *word)
{
    size_t len = strlen(list);
    snprintf(list + len, size - len, "%s%s", len ? ", " : "", word);
}

/* ---- scalars ---------------------------------------------------------------------- */

typedef struct wf_range {
    double lo, hi;
    int lo_open, hi_open;   /* 1: the bound itself is excluded */
    const char *unit;       /* "" or a unit, for messages */
} wf_range;

#define OPEN 1
#define CLOSED 0

static void range_text(const wf_range *r, char *out, size_t size)
{
    const char *u = r->unit && *r->unit ? " " : "";
    const char *unit = r->unit ? r->unit : "";
    if (isinf(r->lo) && isinf(r->hi)) snprintf(out, size, "finite%s%s", u, unit);
    else if (isinf(r->hi)) snprintf(out, size, "%s %g%s%s", r->lo_open ? ">" : ">=", r->lo, u, unit);
    else if (isinf(r->lo)) snprintf(out, size, "%s %g%s%s", r->hi_open ? "<" : "<=", r->hi, u, unit);
    else
        snprintf(out, size, "in %s%g, %g%s%s%s", r->lo_open ? "(" : "[", r->lo, r->hi, r->hi_open ? ")" : "]", u,
                 unit);
}

static int in_range(const wf_range *r, double v)
{
    int lo_ok = r->lo_open ? v > r->lo : v >= r->lo;
    int hi_ok = r->hi_open ? v < r->hi : v <= r->hi;
    return lo_ok && hi_ok;
}

static const char *text_of(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

/* A plain empty value, "~" or "null" is YAML's null: a key without a value. */
static int is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    const char *t = text_of(n);
    return !*t || !strcmp(t, "~") || !strcmp(t, "null") || !strcmp(t, "Null") || !strcmp(t, "NULL");
}

static mdf_status want_scalar(wf_ctx *c, const yaml_node_t *n, const char *what, const char *example)
{
    if (n->type != YAML_SCALAR_NODE)
        return fail_at(c, n, MDF_ERR_INVALID, "%s must be a single value, not %s: write e.g. %s", what, kind_of(n),
                       example);
    if (is_null(n)) return fail_at(c, n, MDF_ERR_INVALID, "%s has no value: write e.g. %s", what, example);
    return MDF_OK;
}

static mdf_status get_double(wf_ctx *c, const yaml_node_t *n, const char *what, const wf_range *r, double *out)
{
    char range[128];
    range_text(r, range, sizeof range);
    char example[160];
    snprintf(example, sizeof example, "a number %s", range);
    mdf_status st = want_scalar(c, n, what, example);
    if (st != MDF_OK) return st;
    const char *t = text_of(n);
    char *end = NULL;
    errno = 0;
    double v = strtod(t, &end);
    if (errno || end == t || *end || !isfinite(v))
        return fail_at(c, n, MDF_ERR_INVALID, "%s: '%s' is not a number: write a number %s", what, t, range);
    if (!in_range(r, v)) return fail_at(c, n, MDF_ERR_INVALID, "%s = %s is out of range: it must be %s", what, t, range);
    *out = v;
    return MDF_OK;
}

static mdf_status get_int64(wf_ctx *c, const yaml_node_t *n, const char *what, int64_t lo, int64_t hi, int64_t *out)
{
    char range[96];
    if (hi == INT64_MAX) snprintf(range, sizeof range, ">= %lld", (long long)lo);
    else snprintf(range, sizeof range, "in [%lld, %lld]", (long long)lo, (long long)hi);
    char example[128];
    snprintf(example, sizeof example, "a whole number %s", range);
    mdf_status st = want_scalar(c, n, what, example);
    if (st != MDF_OK) return st;
    const char *t = text_of(n);
    char *end = NULL;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (errno || end == t || *end)
        return fail_at(c, n, MDF_ERR_INVALID, "%s: '%s' is not a whole number: write a whole number %s", what, t,
                       range);
    if (v < lo || v > hi) return fail_at(c, n, MDF_ERR_INVALID, "%s = %s is out of range: it must be %s", what, t, range);
    *out = (int64_t)v;
    return MDF_OK;
}

static mdf_status get_int(wf_ctx *c, const yaml_node_t *n, const char *what, int lo, int hi, int *out)
{
    int64_t v = 0;
    mdf_status st = get_int64(c, n, what, lo, hi, &v);
    if (st == MDF_OK) *out = (int)v;
    return st;
}

/* YAML 1.1 booleans. */
static mdf_status get_bool(wf_ctx *c, const yaml_node_t *n, const char *what, int *out)
{
    mdf_status st = want_scalar(c, n, what, "true or false");
    if (st != MDF_OK) return st;
    static const char *const yes[] = {"true", "yes", "on", "y"}, *const no[] = {"false", "no", "off", "n"};
    for (size_t k = 0; k < sizeof yes / sizeof yes[0]; k++) {
        if (!strcasecmp(text_of(n), yes[k])) return *out = 1, MDF_OK;
        if (!strcasecmp(text_of(n), no[k])) return *out = 0, MDF_OK;
    }
    return fail_at(c, n, MDF_ERR_INVALID, "%s: '%s' is not a boolean: write true or false", what, text_of(n));
}

static mdf_status get_string(wf_ctx *c, const yaml_node_t *n, const char *what, const char *example, char *out,
                             size_t size)
{
    mdf_status st = want_scalar(c, n, what, example);
    if (st != MDF_OK) return st;
    if (strlen(text_of(n)) >= size)
        return fail_at(c, n, MDF_ERR_INVALID, "%s is longer than %zu characters: shorten it", what, size - 1);
    snprintf(out, size, "%s", text_of(n));
    return MDF_OK;
}

/* ---- mappings --------------------------------------------------------------------- */

static yaml_node_t *node_at(wf_ctx *c, int index) { return yaml_document_get_node(c->doc, index); }

static int key_is(wf_ctx *c, const yaml_node_pair_t *p, const char *key)
{
    const yaml_node_t *k = node_at(c, p->key);
    return k && k->type == YAML_SCALAR_NODE && !strcmp(text_of(k), key);
}

/* The value of key in mapping n, or NULL. */
static yaml_node_t *lookup(wf_ctx *c, const yaml_node_t *n, const char *key)
{
    if (!n || n->type != YAML_MAPPING_NODE) return NULL;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++)
        if (key_is(c, p, key)) return node_at(c, p->value);
    return NULL;
}

static int in_list(const char *const *keys, const char *name)
{
    for (size_t k = 0; keys[k]; k++)
        if (!strcmp(keys[k], name)) return 1;
    return 0;
}

/* Checks that n is a mapping whose keys are single values, unique and, when
 * keys is not NULL, among keys (NULL-terminated). */
static mdf_status check_mapping(wf_ctx *c, const yaml_node_t *n, const char *section, const char *const *keys)
{
    if (n->type != YAML_MAPPING_NODE)
        return fail_at(c, n, MDF_ERR_INVALID, "%s must be a mapping (key: value lines), not %s", section, kind_of(n));
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = node_at(c, p->key);
        if (k->type != YAML_SCALAR_NODE)
            return fail_at(c, k, MDF_ERR_INVALID, "a key of %s is %s: keys must be plain names", section, kind_of(k));
        const char *name = text_of(k);
        if (keys && !in_list(keys, name)) {
            char valid[WF_LIST_MAX] = "";
            for (size_t j = 0; keys[j]; j++) append(valid, sizeof valid, keys[j]);
            return fail_at(c, k, MDF_ERR_INVALID, "unknown key '%s' in %s: valid keys are %s", name, section, valid);
        }
        for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++)
            if (key_is(c, q, name))
                return fail_at(c, k, MDF_ERR_INVALID, "duplicate key '%s' in %s (first at line %d): keep one", name,
                               section, line_of(node_at(c, q->key)));
    }
    return MDF_OK;
}

static mdf_status missing(wf_ctx *c, const yaml_node_t *where, const char *key, const char *section,
                          const char *example)
{
    return fail_at(c, where, MDF_ERR_INVALID, "%s needs the key '%s': add e.g. %s", section, key, example);
}

/* ---- model ------------------------------------------------------------------------ */

static mdf_status get_element(wf_ctx *c, const yaml_node_t *n, const char *what, int *z)
{
    char sym[8];
    mdf_status st = get_string(c, n, what, "Ar", sym, sizeof sym);
    if (st != MDF_OK) return st;
    *z = mdf_element_number(sym);
    if (*z < 1)
        return fail_at(c, n, MDF_ERR_INVALID, "%s: unknown element '%s': write a chemical symbol, e.g. Ar", what,
                       text_of(n));
    return MDF_OK;
}

/* The keys of a mapping that sets parameters: `fixed` (NULL-terminated),
 * then every name of `defs`; keys must hold WF_KEYS_MAX entries. */
#define WF_KEYS_MAX 80
static void keys_with(const char *const *fixed, const mdf_param_def *defs, const char **keys)
{
    size_t n = 0;
    for (size_t k = 0; fixed && fixed[k] && n + 1 < WF_KEYS_MAX; k++) keys[n++] = fixed[k];
    for (size_t k = 0; defs && defs[k].name && n + 1 < WF_KEYS_MAX; k++) keys[n++] = defs[k].name;
    keys[n] = NULL;
}

/* The value of a parameter key as text, for the parameter tables. */
static mdf_status param_text(wf_ctx *c, const yaml_node_t *v, const char *what, const char **out)
{
    mdf_status st = want_scalar(c, v, what, "a number (or true/false)");
    if (st == MDF_OK) *out = text_of(v);
    return st;
}

static mdf_status relative_path(wf_ctx *c, const yaml_node_t *n, const mdf_workflow *wf, const char *what,
                                const char *example, char *out, size_t size);

/* One model setting from key k and value v of a mapping (`section` for
 * messages). A model's `file` (eam's potential) is a path relative to the
 * workflow file's folder, as input and plugins are. */
static mdf_status model_setting(wf_ctx *c, mdf_workflow *wf, runner_row kind, int za, int zb, const yaml_node_t *k,
                                const yaml_node_t *v, const char *section)
{
    char what[160], path[WF_PATH_MAX];
    snprintf(what, sizeof what, "%s.%s", section, text_of(k));
    const char *value = NULL;
    mdf_status st;
    if (kind == RUNNER_SCALAR && strcmp(text_of(k), "file") == 0) {
        st = relative_path(c, v, wf, what, "potentials/Cu_u3.eam", path, sizeof path);
        value = path;
    } else {
        st = param_text(c, v, what, &value);
    }
    if (st == MDF_OK && runner_model_add(&wf->model, kind, za, zb, text_of(k), value, c->err) != MDF_OK)
        st = prefix_error(c, v, what, MDF_ERR_INVALID);
    return st;
}

/* Every key of mapping n but those in `skip`, as settings of one kind of row. */
static mdf_status model_settings(wf_ctx *c, mdf_workflow *wf, runner_row kind, int za, int zb, const yaml_node_t *n,
                                 const char *const *skip, const char *section)
{
    mdf_status st = MDF_OK;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; st == MDF_OK && p < n->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = node_at(c, p->key);
        if (!skip || !in_list(skip, text_of(k))) st = model_setting(c, wf, kind, za, zb, k, node_at(c, p->value), section);
    }
    return st;
}

/* A row with nothing of its own still exists: its first parameter gets the
 * value it would take anyway (the scalar of that name, else the default). */
static mdf_status ensure_row(wf_ctx *c, mdf_workflow *wf, runner_row kind, int za, int zb, const yaml_node_t *n,
                             const mdf_param_def *defs)
{
    runner_model *m = &wf->model;
    for (int k = 0; k < m->n; k++)
        if (m->s[k].kind == kind && m->s[k].z[0] == za && m->s[k].z[1] == (kind == RUNNER_PAIR ? zb : 0))
            return MDF_OK;
    if (!defs || !defs[0].name) return MDF_OK;
    char value[MDF_PARAM_VALUE_MAX];
    snprintf(value, sizeof value, "%.17g", defs[0].def);
    if (defs[0].type == MDF_PARAM_TYPE_BOOL) snprintf(value, sizeof value, "%s", defs[0].def != 0.0 ? "true" : "false");
    for (int k = 0; k < m->n; k++)
        if (m->s[k].kind == RUNNER_SCALAR && !strcmp(m->s[k].name, defs[0].name))
            snprintf(value, sizeof value, "%s", m->s[k].value);
    if (runner_model_add(m, kind, za, zb, defs[0].name, value, c->err) != MDF_OK)
        return prefix_error(c, n, "model", MDF_ERR_INVALID);
    return MDF_OK;
}

/* species: [{element: Ar, NAME: VALUE, ...}]: the model's per-element rows. */
static mdf_status parse_species(wf_ctx *c, const yaml_node_t *n, const mdf_model_def *d, mdf_workflow *wf)
{
    static const char *const fixed[] = {"element", NULL};
    const char *keys[WF_KEYS_MAX];
    keys_with(fixed, d->species_params, keys);
    if (!d->species_params)
        return fail_at(c, n, MDF_ERR_INVALID, "model %s takes no per-element parameters: remove model.species "
                       "(mdflow models lists what it takes)", d->name);
    if (n->type != YAML_SEQUENCE_NODE || n->data.sequence.items.start == n->data.sequence.items.top)
        return fail_at(c, n, MDF_ERR_INVALID, "model.species must be a non-empty list: write e.g. [{element: Ar, %s: "
                       "...}]", d->species_params[0].name);
    wf->species_line = line_of(n);
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = node_at(c, *it);
        mdf_status st = check_mapping(c, e, "a model.species entry", keys);
        yaml_node_t *el = st == MDF_OK ? lookup(c, e, "element") : NULL;
        if (st == MDF_OK && !el) st = missing(c, e, "element", "a model.species entry", "element: Ar");
        int z = 0;
        if (st == MDF_OK) st = get_element(c, el, "model.species.element", &z);
        if (st == MDF_OK && runner_model_has_species(&wf->model, z))
            st = fail_at(c, e, MDF_ERR_INVALID, "model.species lists %s twice: keep one entry", text_of(el));
        if (st == MDF_OK) st = model_settings(c, wf, RUNNER_SPECIES, z, 0, e, fixed, "model.species");
        if (st == MDF_OK) st = ensure_row(c, wf, RUNNER_SPECIES, z, 0, e, d->species_params);
        if (st != MDF_OK) return st;
    }
    return MDF_OK;
}

/* pairs: [{elements: [Ar, Kr], NAME: VALUE, ...}]: the model's per-pair rows. */
static mdf_status parse_pairs(wf_ctx *c, const yaml_node_t *n, const mdf_model_def *d, mdf_workflow *wf)
{
    static const char *const fixed[] = {"elements", NULL};
    const char *keys[WF_KEYS_MAX];
    keys_with(fixed, d->pair_params, keys);
    if (!d->pair_params)
        return fail_at(c, n, MDF_ERR_INVALID, "model %s takes no per-pair parameters: remove model.pairs (mdflow "
                       "models lists what it takes)", d->name);
    if (n->type != YAML_SEQUENCE_NODE)
        return fail_at(c, n, MDF_ERR_INVALID, "model.pairs must be a list: write e.g. [{elements: [Ar, Kr], %s: ...}]",
                       d->pair_params[0].name);
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = node_at(c, *it);
        mdf_status st = check_mapping(c, e, "a model.pairs entry", keys);
        yaml_node_t *els = st == MDF_OK ? lookup(c, e, "elements") : NULL;
        if (st == MDF_OK && !els) st = missing(c, e, "elements", "a model.pairs entry", "elements: [Ar, Kr]");
        if (st == MDF_OK && (els->type != YAML_SEQUENCE_NODE ||
                             els->data.sequence.items.top - els->data.sequence.items.start != 2))
            st = fail_at(c, els, MDF_ERR_INVALID, "model.pairs.elements must list two elements, e.g. [Ar, Kr]");
        int z[2] = {0, 0};
        for (int t = 0; st == MDF_OK && t < 2; t++) {
            yaml_node_t *el = node_at(c, els->data.sequence.items.start[t]);
            st = get_element(c, el, "model.pairs.elements", &z[t]);
            /* A pair mixes or overrides two rows: both must be there. */
            if (st == MDF_OK && d->species_params && !runner_model_has_species(&wf->model, z[t]))
                st = fail_at(c, el, MDF_ERR_INVALID, "model.pairs names %s, which has no model.species entry: list "
                             "both elements under model.species first", text_of(el));
        }
        if (st == MDF_OK) st = model_settings(c, wf, RUNNER_PAIR, z[0], z[1], e, fixed, "model.pairs");
        if (st == MDF_OK) st = ensure_row(c, wf, RUNNER_PAIR, z[0], z[1], e, d->pair_params);
        if (st != MDF_OK) return st;
    }
    return MDF_OK;
}

static mdf_status parse_model_type(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    char type[WF_NAME_MAX + MDF_PARAM_STRING_MAX];
    mdf_status st = get_string(c, n, "model.type", "lj", type, sizeof type);
    if (st != MDF_OK) return st;
    /* type: NAME:VALUE as --model NAME:VALUE (kim:NAME, eam:FILE). */
    if (runner_model_init_spec(&wf->model, type, c->err) != MDF_OK)
        return prefix_error(c, n, "model.type", MDF_ERR_INVALID);
    return MDF_OK;
}

/* model: {type: NAME, params: {NAME: VALUE}, species: [...], pairs: [...],
 * skin: Å}; a scalar parameter may also stand at model level (lj's
 * epsilon, sigma, cutoff, shift), params: wins over it. */
static mdf_status parse_model(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    static const char *const fixed[] = {"type", "params", "species", "pairs", "skin", "rebuild_every", "rebuild_check",
                                        NULL};
    mdf_status st = check_mapping(c, n, "model", NULL);
    yaml_node_t *x = NULL;
    wf->model_line = line_of(n);
    if (st == MDF_OK && !(x = lookup(c, n, "type"))) st = missing(c, n, "type", "model", "type: lj");
    if (st == MDF_OK) st = parse_model_type(c, x, wf);
    if (st != MDF_OK) return st;
    const mdf_model_def *d = mdf_model_def_find(wf->model.name);
    const char *keys[WF_KEYS_MAX];
    keys_with(fixed, d->params, keys);
    st = check_mapping(c, n, "model", keys);
    if (st == MDF_OK && (x = lookup(c, n, "skin")))
        st = get_double(c, x, "model.skin", &(wf_range){0.0, INFINITY, CLOSED, OPEN, "Å"}, &wf->skin);
    if (st == MDF_OK && (x = lookup(c, n, "rebuild_every")))
        st = get_int(c, x, "model.rebuild_every", 1, MDF_REBUILD_EVERY_MAX, &wf->rebuild_every);
    int check = 1;
    if (st == MDF_OK && (x = lookup(c, n, "rebuild_check"))) st = get_bool(c, x, "model.rebuild_check", &check);
    wf->rebuild_nocheck = !check;
    if (st == MDF_OK) st = model_settings(c, wf, RUNNER_SCALAR, 0, 0, n, fixed, "model");
    if (st == MDF_OK && (x = lookup(c, n, "params"))) {
        st = check_mapping(c, x, "model.params", NULL);
        if (st == MDF_OK) st = model_settings(c, wf, RUNNER_SCALAR, 0, 0, x, NULL, "model.params");
    }
    if (st == MDF_OK && (x = lookup(c, n, "species"))) st = parse_species(c, x, d, wf);
    if (st == MDF_OK && (x = lookup(c, n, "pairs"))) st = parse_pairs(c, x, d, wf);
    return st;
}

/* ---- method parameters --------------------------------------------------------------- */

/* params: of a stage, checked against the method's own table (name, value
 * and range) and kept by name for mdf_stage_create. */
static mdf_status parse_params(wf_ctx *c, const yaml_node_t *n, wf_stage *s)
{
    char section[128];
    snprintf(section, sizeof section, "stages.%s.params", s->name);
    mdf_status st = check_mapping(c, n, section, NULL);
    const mdf_method *m = mdf_method_find(s->method);
    char owner[96];
    snprintf(owner, sizeof owner, "method %s", s->method);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; st == MDF_OK && p < n->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = node_at(c, p->key), *v = node_at(c, p->value);
        char what[192];
        snprintf(what, sizeof what, "%s.%s", section, text_of(k));
        const char *value = NULL;
        st = mdf_params_find(m->params, text_of(k)) ? param_text(c, v, what, &value) : MDF_OK;
        /* An unknown name: the library's message lists the valid ones. */
        if (st == MDF_OK && mdf_params_check_setting(m->params, owner, text_of(k), value ? value : "0", c->err) != MDF_OK)
            st = prefix_error(c, value ? v : k, section, MDF_ERR_INVALID);
        if (st == MDF_OK && mdf_param_list_set(&s->cfg.method_params, text_of(k), value, c->err) != MDF_OK)
            st = prefix_error(c, v, section, MDF_ERR_INVALID);
    }
    return st;
}

/* A registered hook's or sink's table by name (kind "hook" or "sink"). */
typedef struct wf_registered {
    const char *name;
    const mdf_param_def *params;
    size_t params_size;
} wf_registered;

static int find_registered(const char *kind, const char *name, wf_registered *out)
{
    if (!strcmp(kind, "hook")) {
        const mdf_hook_def *d = mdf_hook_def_find(name);
        if (d) *out = (wf_registered){d->name, d->params, d->params_size};
        return d != NULL;
    }
    const mdf_sink_def *d = mdf_sink_def_find(name);
    if (d) *out = (wf_registered){d->name, d->params, d->params_size};
    return d != NULL;
}

static void registered_names(const char *kind, char *known, size_t size)
{
    int hook = !strcmp(kind, "hook");
    size_t n = hook ? mdf_hook_def_count() : mdf_sink_def_count();
    for (size_t k = 0; k < n; k++) append(known, size, hook ? mdf_hook_def_at(k)->name : mdf_sink_def_at(k)->name);
}

/* {type: NAME, params: {NAME: VALUE}}: a hook or sink by registered name,
 * its settings checked against its table now (the error names the line). */
static mdf_status parse_named(wf_ctx *c, yaml_node_t *e, const char *kind, const char *section, wf_named_hook *h)
{
    static const char *const keys[] = {"type", "params", NULL};
    char what[128];
    snprintf(what, sizeof what, "a %s entry (%s)", kind, section);
    mdf_param_list_init(&h->params);
    h->line = line_of(e);
    yaml_node_t *x = NULL;
    mdf_status st = check_mapping(c, e, what, keys);
    if (st == MDF_OK && !(x = lookup(c, e, "type"))) st = missing(c, e, "type", what, "type: NAME");
    if (st == MDF_OK) st = get_string(c, x, "type", "NAME", h->type, sizeof h->type);
    wf_registered d = {0};
    if (st == MDF_OK && !find_registered(kind, h->type, &d)) {
        char known[WF_LIST_MAX] = "";
        registered_names(kind, known, sizeof known);
        st = fail_at(c, x, MDF_ERR_INVALID, "unknown %s type '%s': the registered %ss are %s (a plugin adds "
                     "more: plugins: [PATH.so])", kind, h->type, kind, *known ? known : "none");
    }
    if (st == MDF_OK && (x = lookup(c, e, "params"))) st = check_mapping(c, x, "its params", NULL);
    if (st != MDF_OK || !x) return st;
    char owner[96];
    snprintf(owner, sizeof owner, "%s %s", kind, d.name);
    for (yaml_node_pair_t *p = x->data.mapping.pairs.start; st == MDF_OK && p < x->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = node_at(c, p->key), *v = node_at(c, p->value);
        const char *value = NULL;
        st = param_text(c, v, text_of(k), &value);
        if (st == MDF_OK && (mdf_params_check_setting(d.params, owner, text_of(k), value, c->err) != MDF_OK ||
                             mdf_param_list_set(&h->params, text_of(k), value, c->err) != MDF_OK))
            st = prefix_error(c, k, section, MDF_ERR_INVALID);
    }
    return st;
}

/* hooks: [{type: NAME, params: {NAME: VALUE}}]: hooks by registered name,
 * added to the stage after the workflow's own (hooks: at the top). */
static mdf_status parse_named_hooks(wf_ctx *c, const yaml_node_t *n, wf_stage *s)
{
    char section[128];
    snprintf(section, sizeof section, "stages.%s.hooks", s->name);
    if (n->type != YAML_SEQUENCE_NODE)
        return fail_at(c, n, MDF_ERR_INVALID, "%s must be a list: write e.g. [{type: NAME, params: {...}}] (a "
                       "plugin registers hooks by name)", section);
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = node_at(c, *it);
        if (s->nhooks == WF_STAGE_HOOKS)
            return fail_at(c, e, MDF_ERR_INVALID, "%s: at most %d hooks", section, WF_STAGE_HOOKS);
        mdf_status st = parse_named(c, e, "hook", section, &s->hooks[s->nhooks]);
        if (st != MDF_OK) return st;
        s->nhooks++;
    }
    return MDF_OK;
}

/* ---- stages ------------------------------------------------------------------------ */

static mdf_status parse_method(wf_ctx *c, const yaml_node_t *n, wf_stage *s)
{
    char what[128];
    snprintf(what, sizeof what, "stages.%s.method", s->name);
    mdf_status st = get_string(c, n, what, "fire", s->method, sizeof s->method);
    if (st != MDF_OK) return st;
    const mdf_method *m = mdf_method_find(s->method);
    if (m) {
        snprintf(s->method, sizeof s->method, "%s", m->name); /* an alias given: the registered name */
        s->is_optimiser = (m->flags & MDF_METHOD_OPTIMISER) != 0;
        s->cfg.integrator = s->method;
        return MDF_OK;
    }
    char known[WF_LIST_MAX] = "";
    runner_method_names(-1, known, sizeof known);
    return fail_at(c, n, MDF_ERR_INVALID, "unknown method '%s' in stage '%s': use one of %s (mdflow methods; a "
                   "plugin adds more: plugins: [PATH.so])", s->method, s->name, known);
}

/* Keys that only MD methods read; an optimiser refuses them rather than
 * silently ignoring them. */
static mdf_status md_only(wf_ctx *c, const yaml_node_t *stage, const wf_stage *s)
{
    static const char *const keys[] = {"dt_fs", "temperature_K", "entry_temperature_K"};
    for (int k = 0; k < 3; k++) {
        const yaml_node_t *x = lookup(c, stage, keys[k]);
        if (x && s->is_optimiser)
            return fail_at(c, x, MDF_ERR_INVALID, "stages.%s.%s is for MD methods, and %s is an optimiser: remove it%s",
                           s->name, keys[k], s->method, k == 0 ? " (an optimiser's step is params.dt)" : "");
    }
    return MDF_OK;
}

static mdf_status parse_criteria(wf_ctx *c, const yaml_node_t *n, wf_stage *s)
{
    char what[128];
    yaml_node_t *x;
    mdf_status st = MDF_OK;
    const wf_range nonneg_ev = {0.0, INFINITY, CLOSED, OPEN, "eV"}, nonneg_f = {0.0, INFINITY, CLOSED, OPEN, "eV/Å"};
    if ((x = lookup(c, n, "fmax"))) {
        snprintf(what, sizeof what, "stages.%s.fmax", s->name);
        st = get_double(c, x, what, &nonneg_f, &s->fmax);
    }
    if (st == MDF_OK && (x = lookup(c, n, "energy_change"))) {
        snprintf(what, sizeof what, "stages.%s.energy_change", s->name);
        st = get_double(c, x, what, &nonneg_ev, &s->energy_change);
    }
    if (st == MDF_OK && (x = lookup(c, n, "smax"))) {
        snprintf(what, sizeof what, "stages.%s.smax", s->name);
        st = get_double(c, x, what, &(wf_range){0.0, INFINITY, CLOSED, OPEN, "GPa"}, &s->smax);
    }
    if (st == MDF_OK && s->smax < 0.0 && (mdf_method_find(s->method)->flags & MDF_METHOD_CELL) && s->is_optimiser) {
        char section[128];
        snprintf(section, sizeof section, "stage '%s' (%s, a variable-cell relaxation)", s->name, s->method);
        st = missing(c, n, "smax", section, "smax: 0.01 (GPa: the stress within 0.01 GPa of -pressure_GPa)");
    }
    if (st == MDF_OK && (x = lookup(c, n, "steps"))) {
        snprintf(what, sizeof what, "stages.%s.steps", s->name);
        st = get_int64(c, x, what, 1, INT64_MAX, &s->steps);
    }
    if (st == MDF_OK && (x = lookup(c, n, "step_budget"))) {
        snprintf(what, sizeof what, "stages.%s.step_budget", s->name);
        st = get_int64(c, x, what, 0, INT64_MAX, &s->cfg.step_budget);
    }
    if (st == MDF_OK && s->fmax < 0.0 && s->energy_change < 0.0 && s->steps < 0 && s->cfg.step_budget <= 0)
        st = fail_at(c, n, MDF_ERR_INVALID, "stage '%s' has no way out: add fmax, energy_change, steps or "
                     "step_budget (systems leave a stage only through them)", s->name);
    return st;
}

static mdf_status parse_md_keys(wf_ctx *c, const yaml_node_t *n, wf_stage *s)
{
    char what[128];
    yaml_node_t *x;
    mdf_status st = md_only(c, n, s);
    const wf_range temp = {0.0, INFINITY, CLOSED, OPEN, "K"};
    if (st == MDF_OK && (x = lookup(c, n, "dt_fs"))) {
        snprintf(what, sizeof what, "stages.%s.dt_fs", s->name);
        st = get_double(c, x, what, &(wf_range){0.0, INFINITY, OPEN, OPEN, "fs"}, &s->cfg.params.dt_fs);
    }
    if (st == MDF_OK && (x = lookup(c, n, "temperature_K"))) {
        snprintf(what, sizeof what, "stages.%s.temperature_K", s->name);
        st = get_double(c, x, what, &temp, &s->cfg.params.temperature_K);
    } else if (st == MDF_OK && (mdf_method_find(s->method)->flags &
                                (MDF_METHOD_TEMPERATURE | MDF_METHOD_POSITIVE_TEMPERATURE))) {
        char section[96];
        snprintf(section, sizeof section, "stage '%s' (%s, a thermostat)", s->name, s->method);
        st = missing(c, n, "temperature_K", section, "temperature_K: 300");
    }
    if (st == MDF_OK && (x = lookup(c, n, "entry_temperature_K"))) {
        snprintf(what, sizeof what, "stages.%s.entry_temperature_K", s->name);
        st = get_double(c, x, what, &temp, &s->cfg.entry_temperature_K);
    }
    return st;
}

static mdf_status parse_stage_sampler(wf_ctx *c, const yaml_node_t *n, wf_stage *s);
static mdf_status parse_stage_inbox(wf_ctx *c, const yaml_node_t *n, wf_stage *s);

static mdf_status parse_stage(wf_ctx *c, const yaml_node_t *key, const yaml_node_t *n, wf_stage *s)
{
    static const char *const keys[] = {"method", "fmax", "energy_change", "smax", "steps", "step_budget", "dt_fs",
                                       "temperature_K", "entry_temperature_K", "params", "hooks", "sampler",
                                       "inbox", NULL};
    const char *name = text_of(key);
    /* The composition's punctuation cannot be part of a name. */
    if (!*name || strlen(name) >= sizeof s->name || strpbrk(name, "+|() \t"))
        return fail_at(c, key, MDF_ERR_INVALID, "stage name '%s' must be 1 to %zu characters without '+', '|', "
                       "parentheses or spaces: rename it, e.g. relax", name, sizeof s->name - 1);
    mdf_stage_config_init(&s->cfg);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->line = line_of(n);
    s->fmax = s->energy_change = s->smax = -1.0;
    s->steps = -1;
    s->sampler.max_atoms = s->sampler.max_pairs = s->sampler.max_systems = -1; /* not given */
    s->refill_interval = -1;
    s->refill_fraction = -1.0;
    char section[128];
    snprintf(section, sizeof section, "stages.%s", name);
    mdf_status st = check_mapping(c, n, section, keys);
    yaml_node_t *x = st == MDF_OK ? lookup(c, n, "method") : NULL;
    if (st == MDF_OK && !x) st = missing(c, n, "method", section, "method: fire (see mdflow methods)");
    if (st == MDF_OK) st = parse_method(c, x, s);
    if (st == MDF_OK) st = parse_md_keys(c, n, s);
    if (st == MDF_OK) st = parse_criteria(c, n, s);
    if (st == MDF_OK && (x = lookup(c, n, "params"))) st = parse_params(c, x, s);
    if (st == MDF_OK && (x = lookup(c, n, "hooks"))) st = parse_named_hooks(c, x, s);
    if (st == MDF_OK && (x = lookup(c, n, "sampler"))) st = parse_stage_sampler(c, x, s);
    if (st == MDF_OK && (x = lookup(c, n, "inbox"))) st = parse_stage_inbox(c, x, s);
    /* The library's own checks (e.g. fire2's dtmin <= dtmax), with this stage's line. */
    mdf_stage *probe = NULL;
    if (st == MDF_OK && mdf_stage_create(&s->cfg, &probe, c->err) != MDF_OK)
        st = prefix_error(c, n, section, MDF_ERR_INVALID);
    mdf_stage_destroy(probe);
    return st;
}

static mdf_status parse_stages(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    mdf_status st = check_mapping(c, n, "stages", NULL);
    if (st != MDF_OK) return st;
    yaml_node_pair_t *p = n->data.mapping.pairs.start;
    if (p == n->data.mapping.pairs.top)
        return fail_at(c, n, MDF_ERR_INVALID, "stages is empty: define at least one, e.g. relax: {method: fire, "
                       "fmax: 0.05}");
    for (; st == MDF_OK && p < n->data.mapping.pairs.top; p++) {
        if (wf->nstages == WF_MAX_STAGES)
            return fail_at(c, node_at(c, p->key), MDF_ERR_INVALID, "at most %d stages: remove some", WF_MAX_STAGES);
        st = parse_stage(c, node_at(c, p->key), node_at(c, p->value), &wf->stages[wf->nstages++]);
    }
    return st;
}

static int find_stage(const mdf_workflow *wf, const char *name)
{
    for (int k = 0; k < wf->nstages; k++)
        if (!strcmp(wf->stages[k].name, name)) return k;
    return -1;
}

/* The composition's grammar, '+' binding tighter than '|':
 *   composition := term ('|' term)*          a pipeline of the terms (no '|': one term)
 *   term        := factor ('+' factor)*      stages fused in order (mdf_fuse)
 *   factor      := NAME | '(' NAME ('+' NAME)* ')'
 * wf->comp lists the stages in order; wf->pipe_first splits it by '|'. */
typedef struct comp_scan {
    wf_ctx *c;
    const yaml_node_t *n;
    mdf_workflow *wf;
    int depth;         /* inside '(' */
    int want_name;     /* after the start, '+', '|' or '(': a stage name must come */
} comp_scan;

static mdf_status comp_error(comp_scan *cs, const char *what)
{
    return fail_at(cs->c, cs->n, MDF_ERR_INVALID, "composition '%s' %s", text_of(cs->n), what);
}

static mdf_status empty_term(comp_scan *cs)
{
    return comp_error(cs, "has an empty term: write stage names joined by '+' (fused into one stage) or '|' (a "
                      "pipeline of stages), e.g. relax + md or relax | md");
}

static mdf_status comp_name(comp_scan *cs, const char *name)
{
    mdf_workflow *wf = cs->wf;
    if (!cs->want_name)
        return comp_error(cs, "has two stage names in a row: join them with '+' (fused) or '|' (a pipeline)");
    cs->want_name = 0;
    int k = find_stage(wf, name);
    if (k < 0) {
        char defined[WF_LIST_MAX] = "";
        for (int j = 0; j < wf->nstages; j++) append(defined, sizeof defined, wf->stages[j].name);
        return fail_at(cs->c, cs->n, MDF_ERR_INVALID, "composition names stage '%s', which is not defined: use one "
                       "of the stages (%s)", name, defined);
    }
    for (int j = 0; j < wf->ncomp; j++)
        if (wf->comp[j] == k)
            return fail_at(cs->c, cs->n, MDF_ERR_INVALID, "composition names stage '%s' twice: define a second stage "
                           "under another name", name);
    if (wf->ncomp == WF_MAX_STAGES)
        return fail_at(cs->c, cs->n, MDF_ERR_INVALID, "composition holds at most %d stages", WF_MAX_STAGES);
    wf->comp[wf->ncomp++] = k;
    return MDF_OK;
}

/* One character of punctuation: '(', ')', '+' or '|'. */
static mdf_status comp_punct(comp_scan *cs, char ch)
{
    mdf_workflow *wf = cs->wf;
    switch (ch) {
    case '(':
        if (cs->depth) return comp_error(cs, "nests parentheses: a group is stages joined by '+', e.g. (md1 + md2)");
        if (!cs->want_name) return comp_error(cs, "has '(' right after a stage: put '+' or '|' before it");
        cs->depth = 1;
        return MDF_OK;
    case ')':
        if (!cs->depth) return comp_error(cs, "has unbalanced parentheses: a ')' closes no '(': remove it or add '('");
        if (cs->want_name) return empty_term(cs);
        cs->depth = 0;
        return MDF_OK;
    case '+':
        if (cs->want_name) return empty_term(cs);
        cs->want_name = 1;
        return MDF_OK;
    default: /* '|' */
        if (cs->depth)
            return comp_error(cs, "has '|' inside parentheses: parentheses group stages fused with '+', e.g. "
                              "(relax + md1) | md2");
        if (cs->want_name) return empty_term(cs);
        if (wf->npipe == WF_MAX_STAGES)
            return comp_error(cs, "has too many '|': a pipeline holds at most 8 stages");
        wf->pipe_first[++wf->npipe] = wf->ncomp;
        cs->want_name = 1;
        return MDF_OK;
    }
}

static mdf_status parse_composition(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    char text[1024];
    mdf_status st = get_string(c, n, "composition", "relax + md", text, sizeof text);
    if (st != MDF_OK) return st;
    wf->comp_line = line_of(n);
    comp_scan cs = {.c = c, .n = n, .wf = wf, .depth = 0, .want_name = 1};
    wf->npipe = 0;
    wf->pipe_first[0] = 0;
    for (char *p = text; st == MDF_OK && *p;) {
        if (*p == ' ' || *p == '\t') {
            p++;
        } else if (strchr("()+|", *p)) {
            st = comp_punct(&cs, *p++);
        } else {
            char *end = p + strcspn(p, "()+| \t");
            char save = *end;
            *end = '\0';
            st = comp_name(&cs, p);
            *end = save;
            p = end;
        }
    }
    if (st == MDF_OK && cs.depth)
        st = comp_error(&cs, "has unbalanced parentheses: a '(' is never closed: add ')'");
    if (st == MDF_OK && cs.want_name) st = empty_term(&cs);
    if (st == MDF_OK) wf->pipe_first[++wf->npipe] = wf->ncomp;
    return st;
}

/* ---- pipelines: per-stage budgets and inboxes, placement ---------------------------------- */

static mdf_status fail_line(wf_ctx *c, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static mdf_status fail_line(wf_ctx *c, int line, const char *fmt, ...)
{
    char msg[MDF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mdf_error_set(c->err, MDF_ERR_INVALID, "%s:%d: %s", c->file, line, msg);
}

/* The entry of stage k in the composition, or -1. */
static int comp_index(const mdf_workflow *wf, int k)
{
    for (int j = 0; j < wf->ncomp; j++)
        if (wf->comp[j] == k) return j;
    return -1;
}

/* The pipeline keys: stages.NAME.sampler, stages.NAME.inbox, placement.NAME. */
typedef enum pipe_key { PIPE_SAMPLER, PIPE_INBOX, PIPE_PLACEMENT } pipe_key;

/* Where a pipeline key of stage k may stand: k begins a pipeline stage of a
 * composition with '|' (an inbox: not the first). The error says where to
 * put it instead. */
static mdf_status pipe_key_place(wf_ctx *c, const mdf_workflow *wf, int k, int line, const char *key, pipe_key kind)
{
    static const char *const what[] = {"sampler", "inbox", "placement"};
    const char *name = wf->stages[k].name;
    char comp[512];
    wf_composition_text(wf, comp, sizeof comp);
    if (wf->npipe <= 1)
        return fail_line(c, line, "%s is for pipeline compositions ('relax | md'), and composition '%s' has no '|': "
                         "remove it%s, or compose the stages with '|'", key, comp,
                         kind == PIPE_SAMPLER ? " (the top-level sampler: budgets a fused run)" : "");
    int j = comp_index(wf, k);
    if (j < 0)
        return fail_line(c, line, "%s: stage '%s' is not in composition '%s': remove it, or add the stage to the "
                         "composition", key, name, comp);
    int g = wf_pipe_of(wf, j);
    if (wf->pipe_first[g] != j) {
        char group[WF_NAME_MAX * WF_MAX_STAGES];
        wf_pipe_name(wf, g, group, sizeof group);
        const char *first = wf->stages[wf->comp[wf->pipe_first[g]]].name;
        return fail_line(c, line, "%s: stage '%s' is fused after stage '%s' in pipeline stage %s: a pipeline stage's "
                         "%s goes on its first stage: move it to %s%s", key, name, first, group, what[kind],
                         kind == PIPE_PLACEMENT ? "placement." : "stages.", first);
    }
    if (g == 0 && kind == PIPE_INBOX) {
        const char *second = wf->stages[wf->comp[wf->pipe_first[1]]].name;
        return fail_line(c, line, "%s: stage '%s' begins the pipeline and has no inbox (its systems come from the "
                         "input): remove it, or give the next pipeline stage one (stages.%s.inbox)", key, name,
                         second);
    }
    return MDF_OK;
}

/* stages.NAME.sampler: {max_atoms, max_pairs, max_systems, refill_interval,
 * refill_fraction}, each optional (-1: the top-level sampler's value). */
static mdf_status parse_stage_sampler(wf_ctx *c, const yaml_node_t *n, wf_stage *s)
{
    static const char *const keys[] = {"max_atoms", "max_pairs", "max_systems", "refill_interval", "refill_fraction",
                                       NULL};
    char section[128], what[192];
    snprintf(section, sizeof section, "stages.%s.sampler", s->name);
    mdf_status st = check_mapping(c, n, section, keys);
    s->sampler_line = line_of(n);
    yaml_node_t *x;
    if (st == MDF_OK && (x = lookup(c, n, "max_atoms"))) {
        snprintf(what, sizeof what, "%s.max_atoms", section);
        st = get_int64(c, x, what, 1, (int64_t)1 << 26, &s->sampler.max_atoms);
    }
    if (st == MDF_OK && (x = lookup(c, n, "max_pairs"))) {
        snprintf(what, sizeof what, "%s.max_pairs", section);
        st = get_int64(c, x, what, 0, INT64_MAX, &s->sampler.max_pairs);
    }
    if (st == MDF_OK && (x = lookup(c, n, "max_systems"))) {
        snprintf(what, sizeof what, "%s.max_systems", section);
        st = get_int64(c, x, what, 0, INT64_MAX, &s->sampler.max_systems);
    }
    if (st == MDF_OK && (x = lookup(c, n, "refill_interval"))) {
        snprintf(what, sizeof what, "%s.refill_interval", section);
        st = get_int64(c, x, what, 1, INT64_MAX, &s->refill_interval);
    }
    if (st == MDF_OK && (x = lookup(c, n, "refill_fraction"))) {
        snprintf(what, sizeof what, "%s.refill_fraction", section);
        st = get_double(c, x, what, &(wf_range){0.0, 1.0, CLOSED, CLOSED, "of the atom budget"}, &s->refill_fraction);
    }
    return st;
}

/* stages.NAME.inbox: {systems: N, atoms: N}: the capacity of the pipeline
 * stage's inbox (systems handed on, not yet in its batch). */
static mdf_status parse_stage_inbox(wf_ctx *c, const yaml_node_t *n, wf_stage *s)
{
    static const char *const keys[] = {"systems", "atoms", NULL};
    char section[128], what[192];
    snprintf(section, sizeof section, "stages.%s.inbox", s->name);
    mdf_status st = check_mapping(c, n, section, keys);
    s->inbox_line = line_of(n);
    yaml_node_t *x;
    if (st == MDF_OK && (x = lookup(c, n, "systems"))) {
        snprintf(what, sizeof what, "%s.systems", section);
        st = get_int64(c, x, what, 1, INT64_MAX, &s->inbox_systems);
    }
    if (st == MDF_OK && (x = lookup(c, n, "atoms"))) {
        snprintf(what, sizeof what, "%s.atoms", section);
        st = get_int64(c, x, what, 1, INT64_MAX, &s->inbox_atoms);
    }
    if (st == MDF_OK && !lookup(c, n, "systems") && !lookup(c, n, "atoms"))
        st = fail_at(c, n, MDF_ERR_INVALID, "%s is empty: give systems, atoms or both, e.g. {systems: 4, atoms: 2000}",
                     section);
    return st;
}

/* Pipeline stage g's budget: the top-level sampler, with what its first
 * stage's sampler: names instead. */
static void resolve_budget(mdf_workflow *wf, int g)
{
    const wf_stage *s = &wf->stages[wf->comp[wf->pipe_first[g]]];
    wf_pipe_stage *p = &wf->pipe[g];
    p->budget = wf->sampler;
    p->refill_interval = wf->refill_interval;
    p->refill_fraction = wf->refill_fraction;
    p->budget_line = wf->sampler_line;
    if (!s->sampler_line) return;
    p->budget_line = s->sampler_line;
    if (s->sampler.max_atoms >= 0) p->budget.max_atoms = s->sampler.max_atoms;
    if (s->sampler.max_pairs >= 0) p->budget.max_pairs = s->sampler.max_pairs;
    if (s->sampler.max_systems >= 0) p->budget.max_systems = s->sampler.max_systems;
    if (s->refill_interval >= 0) p->refill_interval = s->refill_interval;
    if (s->refill_fraction >= 0.0) p->refill_fraction = s->refill_fraction;
}

/* After the composition and the top-level sampler: each stage's sampler:
 * and inbox: where they may stand, and each pipeline stage's settings. */
static mdf_status resolve_pipeline(wf_ctx *c, mdf_workflow *wf)
{
    for (int k = 0; k < wf->nstages; k++) {
        const wf_stage *s = &wf->stages[k];
        char key[WF_NAME_MAX + 32];
        mdf_status st = MDF_OK;
        if (s->sampler_line) {
            snprintf(key, sizeof key, "stages.%s.sampler", s->name);
            st = pipe_key_place(c, wf, k, s->sampler_line, key, PIPE_SAMPLER);
        }
        if (st == MDF_OK && s->inbox_line) {
            snprintf(key, sizeof key, "stages.%s.inbox", s->name);
            st = pipe_key_place(c, wf, k, s->inbox_line, key, PIPE_INBOX);
        }
        if (st != MDF_OK) return st;
    }
    for (int g = 0; g < wf->npipe; g++) {
        wf_pipe_stage *p = &wf->pipe[g];
        const wf_stage *s = &wf->stages[wf->comp[wf->pipe_first[g]]];
        resolve_budget(wf, g);
        p->inbox_systems = s->inbox_systems;
        p->inbox_atoms = s->inbox_atoms;
        p->inbox_line = s->inbox_line;
    }
    return MDF_OK;
}

/* placement.NAME.ranks: [R, ...]: distinct ranks >= 0. */
static mdf_status parse_ranks(wf_ctx *c, const yaml_node_t *n, const char *what, wf_pipe_stage *p)
{
    if (n->type != YAML_SEQUENCE_NODE || n->data.sequence.items.start == n->data.sequence.items.top)
        return fail_at(c, n, MDF_ERR_INVALID, "%s must be a non-empty list of MPI ranks: write e.g. [1, 2]", what);
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = node_at(c, *it);
        if (p->nranks == MDF_PIPE_MAX_RANKS)
            return fail_at(c, e, MDF_ERR_INVALID, "%s lists more than %d ranks: a pipeline stage runs on at most %d",
                           what, MDF_PIPE_MAX_RANKS, MDF_PIPE_MAX_RANKS);
        int r = 0;
        mdf_status st = get_int(c, e, what, 0, MDF_PIPE_MAX_RANKS - 1, &r);
        if (st != MDF_OK) return st;
        for (int j = 0; j < p->nranks; j++)
            if (p->ranks[j] == r)
                return fail_at(c, e, MDF_ERR_INVALID, "%s lists rank %d twice: keep one", what, r);
        p->ranks[p->nranks++] = r;
    }
    return MDF_OK;
}

/* placement.NAME: {cpus, cuda, sched, ranks}. */
static mdf_status parse_place(wf_ctx *c, const yaml_node_t *n, const char *name, wf_pipe_stage *p)
{
    static const char *const keys[] = {"cpus", "cuda", "sched", "ranks", NULL};
    char section[128], what[192];
    snprintf(section, sizeof section, "placement.%s", name);
    mdf_status st = check_mapping(c, n, section, keys);
    yaml_node_t *x;
    p->placement_line = line_of(n);
    if (st == MDF_OK && (x = lookup(c, n, "cpus"))) {
        snprintf(what, sizeof what, "%s.cpus", section);
        st = get_int(c, x, what, 0, 4096, &p->ncpus);
    }
    if (st == MDF_OK && (x = lookup(c, n, "cuda"))) {
        snprintf(what, sizeof what, "%s.cuda", section);
        st = get_int(c, x, what, 0, 64, &p->ncuda);
    }
    if (st == MDF_OK && (x = lookup(c, n, "sched"))) {
        snprintf(what, sizeof what, "%s.sched", section);
        st = get_string(c, x, what, "dmda (or eager, lws, ...)", p->sched, sizeof p->sched);
        if (st == MDF_OK && mdf_runtime_check_sched(p->sched, what, c->err) != MDF_OK) {
            char msg[sizeof c->err->message];
            snprintf(msg, sizeof msg, "%s", c->err->message);
            st = fail_at(c, x, MDF_ERR_INVALID, "%s", msg);
        }
    }
    if (st == MDF_OK && (x = lookup(c, n, "ranks"))) {
        snprintf(what, sizeof what, "%s.ranks", section);
        st = parse_ranks(c, x, what, p);
    }
    return st;
}

/* placement: {STAGE: {cpus: N, cuda: N, sched: NAME, ranks: [R, ...]}}: where
 * each pipeline stage runs, by the name of its first stage. */
static mdf_status parse_placement(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    mdf_status st = check_mapping(c, n, "placement", NULL);
    wf->placement_line = line_of(n);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; st == MDF_OK && p < n->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = node_at(c, p->key);
        int s = find_stage(wf, text_of(k));
        if (s < 0) {
            char defined[WF_LIST_MAX] = "";
            for (int j = 0; j < wf->nstages; j++) append(defined, sizeof defined, wf->stages[j].name);
            return fail_at(c, k, MDF_ERR_INVALID, "placement names stage '%s', which is not defined: use one of the "
                           "stages (%s)", text_of(k), defined);
        }
        char key[WF_NAME_MAX + 16];
        snprintf(key, sizeof key, "placement.%s", text_of(k));
        st = pipe_key_place(c, wf, s, line_of(k), key, PIPE_PLACEMENT);
        if (st == MDF_OK) st = parse_place(c, node_at(c, p->value), text_of(k), &wf->pipe[wf_pipe_of(wf, comp_index(wf, s))]);
    }
    return st;
}

/* ---- sampler, output, hooks, scheduler -------------------------------------------------- */

static mdf_status parse_sampler(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    static const char *const keys[] = {"max_atoms", "max_pairs", "max_systems", "refill_interval", "refill_fraction",
                                       NULL};
    mdf_status st = check_mapping(c, n, "sampler", keys);
    yaml_node_t *x;
    wf->sampler_line = line_of(n);
    if (st == MDF_OK && !(x = lookup(c, n, "max_atoms"))) st = missing(c, n, "max_atoms", "sampler", "max_atoms: 20000");
    /* The upper bound is what one batch holds (stages/inflight.c refuses more). */
    if (st == MDF_OK) st = get_int64(c, x, "sampler.max_atoms", 1, (int64_t)1 << 26, &wf->sampler.max_atoms);
    if (st == MDF_OK && (x = lookup(c, n, "max_pairs")))
        st = get_int64(c, x, "sampler.max_pairs", 0, INT64_MAX, &wf->sampler.max_pairs);
    if (st == MDF_OK && (x = lookup(c, n, "max_systems")))
        st = get_int64(c, x, "sampler.max_systems", 0, INT64_MAX, &wf->sampler.max_systems);
    if (st == MDF_OK && (x = lookup(c, n, "refill_interval")))
        st = get_int64(c, x, "sampler.refill_interval", 1, INT64_MAX, &wf->refill_interval);
    if (st == MDF_OK && (x = lookup(c, n, "refill_fraction")))
        st = get_double(c, x, "sampler.refill_fraction", &(wf_range){0.0, 1.0, CLOSED, CLOSED, "of the atom budget"},
                        &wf->refill_fraction);
    return st;
}

int wf_hdf5_kind(const char *path)
{
    size_t n = strlen(path);
    if (strstr(path, "{id}") || (n >= 5 && !strcmp(path + n - 5, ".h5md"))) return 2;
    if ((n >= 3 && !strcmp(path + n - 3, ".h5")) || (n >= 5 && !strcmp(path + n - 5, ".hdf5"))) return 1;
    return 0;
}

/* A structure file's format, by its name (tools/formats.h): an unknown
 * extension, or an input mdflow cannot read, is an error at its line. */
static mdf_status check_format(wf_ctx *c, const yaml_node_t *x, const char *key, const char *path, int input)
{
    fmt_kind k;
    mdf_error e;
    mdf_error_clear(&e);
    if (fmt_choose(key, path, NULL, NULL, &k, &e) == MDF_OK && (!input || fmt_check_input(key, path, k, &e) == MDF_OK))
        return MDF_OK;
    return fail_at(c, x, MDF_ERR_INVALID, "%s", e.message);
}

static mdf_status parse_output(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    static const char *const keys[] = {"structures", "log", "log_every", "snapshots", "snapshot_sink",
                                       "snapshot_every", "converged", "compression", NULL};
    mdf_status st = check_mapping(c, n, "output", keys);
    yaml_node_t *x;
    wf->output_line = line_of(n);
    if (st == MDF_OK && (x = lookup(c, n, "snapshot_sink"))) {
        if (lookup(c, n, "snapshots"))
            st = fail_at(c, x, MDF_ERR_INVALID, "output.snapshot_sink and output.snapshots exclude each other: "
                         "snapshots: FILE names a file, snapshot_sink: {type: NAME, params: {...}} a registered sink");
        if (st == MDF_OK) st = parse_named(c, x, "sink", "output.snapshot_sink", &wf->snapshot_sink);
        if (st == MDF_OK) wf->has_snapshot_sink = 1;
    }
    if (st == MDF_OK && (x = lookup(c, n, "snapshots"))) {
        st = get_string(c, x, "output.snapshots", "snapshots.h5", wf->snapshots, sizeof wf->snapshots);
        if (st == MDF_OK && !wf_hdf5_kind(wf->snapshots))
            st = fail_at(c, x, MDF_ERR_INVALID, "output.snapshots '%s' is not an HDF5 name: use FILE.h5 (structure "
                         "datasets), FILE.h5md (an H5MD trajectory) or a pattern with {id} (one H5MD file per "
                         "system)", wf->snapshots);
    }
    if (st == MDF_OK && (x = lookup(c, n, "snapshot_every")))
        st = get_int64(c, x, "output.snapshot_every", 1, INT64_MAX, &wf->snapshot_every);
    if (st == MDF_OK && (x = lookup(c, n, "converged"))) {
        st = get_string(c, x, "output.converged", "relaxed.h5", wf->converged, sizeof wf->converged);
        if (st == MDF_OK && wf_hdf5_kind(wf->converged) != 1)
            st = fail_at(c, x, MDF_ERR_INVALID, "output.converged '%s' must be an HDF5 structure file: name it "
                         "FILE.h5", wf->converged);
    }
    if (st == MDF_OK && (x = lookup(c, n, "compression")))
        st = get_int(c, x, "output.compression", 0, 9, &wf->compression);
    if (st == MDF_OK && (x = lookup(c, n, "structures"))) {
        st = get_string(c, x, "output.structures", "final.xyz", wf->structures, sizeof wf->structures);
        if (st == MDF_OK && *wf->structures) st = check_format(c, x, "output.structures", wf->structures, 0);
    }
    if (st == MDF_OK && (x = lookup(c, n, "log")))
        st = get_string(c, x, "output.log", "run.csv", wf->log, sizeof wf->log);
    if (st == MDF_OK && (x = lookup(c, n, "log_every")))
        st = get_int64(c, x, "output.log_every", 1, INT64_MAX, &wf->log_every);
    return st;
}

static mdf_status parse_hooks(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    static const char *const keys[] = {"nan_check", "max_force", "drift_warn", "wrap_every", "freeze", NULL};
    mdf_status st = check_mapping(c, n, "hooks", keys);
    yaml_node_t *x;
    wf_hooks *h = &wf->hooks;
    if (st == MDF_OK && (x = lookup(c, n, "nan_check"))) st = get_bool(c, x, "hooks.nan_check", &h->nan_check);
    if (st == MDF_OK && (x = lookup(c, n, "max_force")))
        st = get_double(c, x, "hooks.max_force", &(wf_range){0.0, INFINITY, OPEN, OPEN, "eV/Å"}, &h->max_force);
    if (st == MDF_OK && (x = lookup(c, n, "drift_warn")))
        st = get_double(c, x, "hooks.drift_warn", &(wf_range){0.0, INFINITY, OPEN, OPEN, "eV/atom"}, &h->drift_warn);
    if (st == MDF_OK && (x = lookup(c, n, "wrap_every")))
        st = get_int64(c, x, "hooks.wrap_every", 0, INT64_MAX, &h->wrap_every);
    if (st == MDF_OK && (x = lookup(c, n, "freeze"))) {
        if (x->type == YAML_SCALAR_NODE && !strcmp(text_of(x), "auto")) h->freeze = -1;
        else st = get_bool(c, x, "hooks.freeze (true, false or auto)", &h->freeze);
    }
    return st;
}

static mdf_status parse_scheduler(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    static const char *const keys[] = {"name", "ncpus", "ncuda", "shards", "window", "chunk_atoms", NULL};
    mdf_status st = check_mapping(c, n, "scheduler", keys);
    yaml_node_t *x;
    if (st == MDF_OK && (x = lookup(c, n, "name")))
        st = get_string(c, x, "scheduler.name", "dmda (or eager, lws, ...)", wf->sched, sizeof wf->sched);
    if (st == MDF_OK && x && *wf->sched && mdf_runtime_check_sched(wf->sched, "scheduler.name", c->err) != MDF_OK) {
        char msg[sizeof c->err->message];
        snprintf(msg, sizeof msg, "%s", c->err->message);
        st = fail_at(c, x, MDF_ERR_INVALID, "%s", msg);
    }
    if (st == MDF_OK && (x = lookup(c, n, "ncpus"))) st = get_int(c, x, "scheduler.ncpus", -1, 4096, &wf->ncpus);
    if (st == MDF_OK && (x = lookup(c, n, "ncuda"))) st = get_int(c, x, "scheduler.ncuda", -1, 64, &wf->ncuda);
    if (st == MDF_OK && (x = lookup(c, n, "shards"))) st = get_int(c, x, "scheduler.shards", 0, 1 << 20, &wf->shards);
    if (st == MDF_OK && (x = lookup(c, n, "window"))) st = get_int(c, x, "scheduler.window", 1, 1024, &wf->window);
    if (st == MDF_OK && (x = lookup(c, n, "chunk_atoms")))
        st = get_int(c, x, "scheduler.chunk_atoms", 0, 1 << 30, &wf->chunk_atoms);
    return st;
}

/* checkpoint: {path: FILE, every: N}: the run's full state, for `mdflow run --resume`. */
static mdf_status parse_checkpoint(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    static const char *const keys[] = {"path", "every", NULL};
    mdf_status st = check_mapping(c, n, "checkpoint", keys);
    yaml_node_t *x;
    wf->checkpoint_line = line_of(n);
    if (st == MDF_OK && !(x = lookup(c, n, "path")))
        st = missing(c, n, "path", "checkpoint", "path: run.ckpt.h5");
    if (st == MDF_OK) st = get_string(c, x, "checkpoint.path", "run.ckpt.h5", wf->checkpoint, sizeof wf->checkpoint);
    if (st == MDF_OK && (x = lookup(c, n, "every")))
        st = get_int64(c, x, "checkpoint.every", 0, INT64_MAX, &wf->checkpoint_every);
    return st;
}

/* ---- the document ------------------------------------------------------------------- */

/* A path given in the workflow, relative to the workflow file's folder. */
static mdf_status relative_path(wf_ctx *c, const yaml_node_t *n, const mdf_workflow *wf, const char *what,
                                const char *example, char *out, size_t size)
{
    char given[WF_PATH_MAX];
    mdf_status st = get_string(c, n, what, example, given, sizeof given);
    if (st != MDF_OK) return st;
    const char *slash = strrchr(wf->path, '/');
    int dirlen = slash ? (int)(slash - wf->path) : 0;
    int len = given[0] == '/' || !slash ? snprintf(out, size, "%s", given)
                                        : snprintf(out, size, "%.*s/%s", dirlen, wf->path, given);
    if (len < 0 || (size_t)len >= size) return fail_at(c, n, MDF_ERR_INVALID, "%s path is too long: shorten it", what);
    return MDF_OK;
}

/* plugins: [PATH.so, ...]: loaded now, in order (a file loaded before, by
 * --plugin or MDFLOW_PLUGIN_PATH, is not loaded twice). */
static mdf_status parse_plugins(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return fail_at(c, n, MDF_ERR_INVALID, "plugins must be a list of shared objects: write e.g. plugins: "
                       "[./morse.so] (relative to the workflow file's folder)");
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = node_at(c, *it);
        char path[WF_PATH_MAX];
        mdf_status st = relative_path(c, e, wf, "a plugins entry", "./plugin.so", path, sizeof path);
        if (st == MDF_OK && mdf_plugin_load(path, c->err) != MDF_OK) st = prefix_error(c, e, "plugins", c->err->code);
        if (st != MDF_OK) return st;
    }
    return MDF_OK;
}

/* input: relative to the workflow file's folder, and readable now, so a typo
 * is reported with its line rather than after StarPU has started. */
static mdf_status parse_input(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    mdf_status st = relative_path(c, n, wf, "input", "structures.xyz", wf->input, sizeof wf->input);
    if (st != MDF_OK) return st;
    const char *slash = strrchr(wf->path, '/');
    int dirlen = slash ? (int)(slash - wf->path) : 0;
    wf->input_line = line_of(n);
    if (access(wf->input, R_OK) != 0)
        return fail_at(c, n, MDF_ERR_INVALID, "input '%s' cannot be read (%s): fix the path (relative paths are "
                       "relative to the workflow file's folder, %.*s)", wf->input, strerror(errno),
                       slash ? dirlen : 1, slash ? wf->path : ".");
    return check_format(c, n, "input", wf->input, 1);
}

static void workflow_defaults(mdf_workflow *wf)
{
    memset(wf, 0, sizeof *wf);
    wf->skin = 1.0;
    wf->rebuild_every = 1;
    wf->rebuild_nocheck = 0;
    mdf_sampler_config_init(&wf->sampler);
    mdf_inflight_config ic; /* the library's refill defaults */
    mdf_inflight_config_init(&ic);
    wf->refill_interval = ic.refill_interval;
    wf->refill_fraction = ic.refill_fraction;
    wf->log_every = 10;
    wf->snapshot_every = 100;
    wf->hooks.freeze = -1;
    wf->hooks.max_force = -1.0;
    wf->hooks.drift_warn = -1.0;
    wf->ncpus = wf->ncuda = -1;
    for (int g = 0; g < WF_MAX_STAGES; g++) wf->pipe[g].ncpus = wf->pipe[g].ncuda = -1;
    wf->window = 16;
    wf->max_steps = WF_DEFAULT_MAX_STEPS;
    wf->seed = 1;
}

static mdf_status parse_root(wf_ctx *c, const yaml_node_t *root, mdf_workflow *wf)
{
    static const char *const keys[] = {"input", "plugins", "model", "stages", "composition", "sampler", "output",
                                       "hooks", "scheduler", "max_steps", "seed", "checkpoint", "placement", NULL};
    mdf_status st = check_mapping(c, root, "the workflow", keys);
    yaml_node_t *x;
    /* Plugins first: their models, methods and hooks are names below. */
    if (st == MDF_OK && (x = lookup(c, root, "plugins"))) st = parse_plugins(c, x, wf);
    if (st == MDF_OK && !(x = lookup(c, root, "input")))
        st = missing(c, root, "input", "the workflow", "input: structures.xyz");
    if (st == MDF_OK) st = parse_input(c, x, wf);
    if (st == MDF_OK && (x = lookup(c, root, "model"))) st = parse_model(c, x, wf);
    else if (st == MDF_OK) st = runner_model_init(&wf->model, "lj", c->err); /* the default: argon */
    if (st == MDF_OK && !(x = lookup(c, root, "stages")))
        st = missing(c, root, "stages", "the workflow", "stages: {relax: {method: fire, fmax: 0.05}}");
    if (st == MDF_OK) st = parse_stages(c, x, wf);
    if (st == MDF_OK && (x = lookup(c, root, "composition"))) st = parse_composition(c, x, wf);
    else if (st == MDF_OK && wf->nstages == 1) { /* one stage: it is the composition */
        wf->ncomp = 1;
        wf->npipe = 1;
        wf->pipe_first[1] = 1;
    } else if (st == MDF_OK) st = missing(c, root, "composition", "a workflow with several stages", "composition: relax + md");
    if (st == MDF_OK && !(x = lookup(c, root, "sampler")))
        st = missing(c, root, "sampler", "the workflow", "sampler: {max_atoms: 20000}");
    if (st == MDF_OK) st = parse_sampler(c, x, wf);
    /* Pipeline stages: their budgets come from the sampler, their keys are checked against the composition. */
    if (st == MDF_OK) st = resolve_pipeline(c, wf);
    if (st == MDF_OK && (x = lookup(c, root, "placement"))) st = parse_placement(c, x, wf);
    if (st == MDF_OK && (x = lookup(c, root, "output"))) st = parse_output(c, x, wf);
    if (st == MDF_OK && (x = lookup(c, root, "hooks"))) st = parse_hooks(c, x, wf);
    if (st == MDF_OK && (x = lookup(c, root, "scheduler"))) st = parse_scheduler(c, x, wf);
    if (st == MDF_OK && (x = lookup(c, root, "max_steps"))) st = get_int64(c, x, "max_steps", 1, INT64_MAX, &wf->max_steps);
    if (st == MDF_OK && (x = lookup(c, root, "checkpoint"))) st = parse_checkpoint(c, x, wf);
    int64_t seed = 1;
    if (st == MDF_OK && (x = lookup(c, root, "seed")) && (st = get_int64(c, x, "seed", 0, INT64_MAX, &seed)) == MDF_OK)
        wf->seed = (uint64_t)seed;
    for (int k = 0; k < wf->nstages; k++) {
        wf->stages[k].cfg.params.seed = wf->seed;
        wf->stages[k].cfg.integrator = wf->stages[k].method;
    }
    return st;
}

static mdf_status yaml_problem(wf_ctx *c, const yaml_parser_t *p)
{
    const char *what = p->problem ? p->problem : "unreadable YAML";
    if (p->context)
        return mdf_error_set(c->err, MDF_ERR_PARSE, "%s:%d: %s %s (line %d): fix the YAML syntax (indentation, "
                             "':' after keys, matching brackets and quotes)", c->file, (int)p->problem_mark.line + 1,
                             what, p->context, (int)p->context_mark.line + 1);
    return mdf_error_set(c->err, MDF_ERR_PARSE, "%s:%d: %s: fix the YAML syntax (indentation, ':' after keys, "
                         "matching brackets and quotes)", c->file, (int)p->problem_mark.line + 1, what);
}

static mdf_status load_document(wf_ctx *c, FILE *fp, yaml_document_t *doc)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return mdf_error_set(c->err, MDF_ERR_NOMEM, "no memory for a YAML parser");
    yaml_parser_set_input_file(&parser, fp);
    mdf_status st = MDF_OK;
    if (!yaml_parser_load(&parser, doc)) {
        st = yaml_problem(c, &parser);
        yaml_parser_delete(&parser);
        return st;
    }
    if (!yaml_document_get_root_node(doc))
        st = mdf_error_set(c->err, MDF_ERR_INVALID, "%s:1: the workflow is empty: write at least input, stages and "
                           "sampler (see examples/relax_md.yaml)", c->file);
    /* A second document would be ignored silently: refuse it. */
    yaml_document_t next;
    if (st == MDF_OK) {
        if (!yaml_parser_load(&parser, &next)) st = yaml_problem(c, &parser);
        else {
            yaml_node_t *r = yaml_document_get_root_node(&next);
            if (r)
                st = mdf_error_set(c->err, MDF_ERR_PARSE, "%s:%d: a second YAML document ('---'): a workflow is "
                                   "one document, remove it", c->file, line_of(r));
            yaml_document_delete(&next);
        }
    }
    yaml_parser_delete(&parser);
    if (st != MDF_OK) yaml_document_delete(doc);
    return st;
}

mdf_status wf_load(const char *path, mdf_workflow *wf, mdf_error *err)
{
    workflow_defaults(wf);
    if (strlen(path) >= sizeof wf->path) return mdf_error_set(err, MDF_ERR_INVALID, "workflow path is too long");
    snprintf(wf->path, sizeof wf->path, "%s", path);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return mdf_error_set(err, MDF_ERR_IO, "cannot open the workflow file '%s': %s: check the path", path,
                             strerror(errno));
    yaml_document_t doc;
    wf_ctx c = {.doc = &doc, .file = path, .err = err};
    mdf_status st = load_document(&c, fp, &doc);
    fclose(fp);
    if (st != MDF_OK) return st;
    st = parse_root(&c, yaml_document_get_root_node(&doc), wf);
    yaml_document_delete(&doc);
    return st;
}

int wf_pipe_of(const mdf_workflow *wf, int k)
{
    for (int g = 0; g + 1 < wf->npipe; g++)
        if (k < wf->pipe_first[g + 1]) return g;
    return wf->npipe > 0 ? wf->npipe - 1 : 0;
}

void wf_pipe_name(const mdf_workflow *wf, int g, char *out, size_t size)
{
    out[0] = '\0';
    for (int k = wf->pipe_first[g]; k < wf->pipe_first[g + 1]; k++) {
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", k > wf->pipe_first[g] ? "+" : "", wf->stages[wf->comp[k]].name);
    }
}

void wf_composition_text(const mdf_workflow *wf, char *out, size_t size)
{
    out[0] = '\0';
    int pipeline = wf->npipe > 1;
    for (int k = 0; k < wf->ncomp; k++) {
        int g = wf_pipe_of(wf, k);
        int group = pipeline && wf->pipe_first[g + 1] - wf->pipe_first[g] > 1; /* a fused group in a pipeline */
        const char *sep = k == 0 ? "" : k == wf->pipe_first[g] ? " | " : " + ";
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s%s%s", sep, group && k == wf->pipe_first[g] ? "(" : "",
                 wf->stages[wf->comp[k]].name, group && k == wf->pipe_first[g + 1] - 1 ? ")" : "");
    }
}

/* Where path's extension begins (its last '.' after the last '/', not the
 * first character of the file name), or its end. */
static size_t stem_length(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : path)) return strlen(path);
    return (size_t)(dot - path);
}

void wf_rank_path(const char *path, int rank, char *out, size_t size)
{
    size_t stem = stem_length(path);
    snprintf(out, size, "%.*s.r%d%s", (int)stem, path, rank, path + stem);
}

void wf_log_path(const mdf_workflow *wf, int k, char *out, size_t size)
{
    if (!*wf->log) { /* no log asked: no file, whatever the stages */
        if (size) *out = '\0';
        return;
    }
    if (wf->ncomp <= 1) {
        snprintf(out, size, "%s", wf->log);
        return;
    }
    size_t stem = stem_length(wf->log);
    snprintf(out, size, "%.*s.%s%s", (int)stem, wf->log, wf->stages[wf->comp[k]].name, wf->log + stem);
}
