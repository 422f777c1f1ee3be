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

/* epsilon, sigma and cutoff of a species or pair entry; cutoff defaults to 2.5 sigma. */
static mdf_status lj_numbers(wf_ctx *c, const yaml_node_t *n, const char *section, double v[3])
{
    static const char *const names[] = {"epsilon", "sigma", "cutoff"};
    static const wf_range ranges[] = {{0.0, INFINITY, CLOSED, OPEN, "eV"}, {0.0, INFINITY, OPEN, OPEN, "Å"},
                                      {0.0, INFINITY, OPEN, OPEN, "Å"}};
    char what[128];
    for (int k = 0; k < 3; k++) {
        yaml_node_t *x = lookup(c, n, names[k]);
        if (!x && k < 2) return missing(c, n, names[k], section, k ? "sigma: 3.40" : "epsilon: 0.0104");
        snprintf(what, sizeof what, "%s.%s", section, names[k]);
        v[k] = 2.5 * v[1];
        mdf_status st = x ? get_double(c, x, what, &ranges[k], &v[k]) : MDF_OK;
        if (st != MDF_OK) return st;
    }
    return MDF_OK;
}

static mdf_status parse_species(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    static const char *const keys[] = {"element", "epsilon", "sigma", "cutoff", NULL};
    if (n->type != YAML_SEQUENCE_NODE || n->data.sequence.items.start == n->data.sequence.items.top)
        return fail_at(c, n, MDF_ERR_INVALID,
                       "model.species must be a non-empty list: write e.g. "
                       "[{element: Ar, epsilon: 0.0104, sigma: 3.40, cutoff: 8.5}]");
    wf->species_given = 1;
    wf->species_line = line_of(n);
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = node_at(c, *it);
        mdf_status st = check_mapping(c, e, "a model.species entry", keys);
        yaml_node_t *el = st == MDF_OK ? lookup(c, e, "element") : NULL;
        if (st == MDF_OK && !el) st = missing(c, e, "element", "a model.species entry", "element: Ar");
        int z = 0;
        double v[3];
        if (st == MDF_OK) st = get_element(c, el, "model.species.element", &z);
        if (st == MDF_OK) st = lj_numbers(c, e, "model.species", v);
        if (st == MDF_OK && mdf_lj_config_add_species(&wf->lj, z, v[0], v[1], v[2], c->err) != MDF_OK)
            st = prefix_error(c, e, "model.species", MDF_ERR_INVALID);
        if (st != MDF_OK) return st;
    }
    return MDF_OK;
}

static mdf_status parse_pairs(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    static const char *const keys[] = {"elements", "epsilon", "sigma", "cutoff", NULL};
    if (n->type != YAML_SEQUENCE_NODE)
        return fail_at(c, n, MDF_ERR_INVALID,
                       "model.pairs must be a list: write e.g. [{elements: [Ar, Kr], epsilon: 0.0123, sigma: 3.5}]");
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = node_at(c, *it);
        mdf_status st = check_mapping(c, e, "a model.pairs entry", keys);
        yaml_node_t *els = st == MDF_OK ? lookup(c, e, "elements") : NULL;
        if (st == MDF_OK && !els) st = missing(c, e, "elements", "a model.pairs entry", "elements: [Ar, Kr]");
        if (st == MDF_OK && (els->type != YAML_SEQUENCE_NODE ||
                             els->data.sequence.items.top - els->data.sequence.items.start != 2))
            st = fail_at(c, els, MDF_ERR_INVALID, "model.pairs.elements must list two elements, e.g. [Ar, Kr]");
        int za = 0, zb = 0;
        double v[3];
        if (st == MDF_OK) st = get_element(c, node_at(c, els->data.sequence.items.start[0]), "model.pairs.elements", &za);
        if (st == MDF_OK) st = get_element(c, node_at(c, els->data.sequence.items.start[1]), "model.pairs.elements", &zb);
        if (st == MDF_OK) st = lj_numbers(c, e, "model.pairs", v);
        if (st == MDF_OK && mdf_lj_config_set_pair(&wf->lj, za, zb, v[0], v[1], v[2], c->err) != MDF_OK)
            st = prefix_error(c, e, "model.pairs (list both elements under model.species first)", MDF_ERR_INVALID);
        if (st != MDF_OK) return st;
    }
    return MDF_OK;
}

static mdf_status parse_model_type(wf_ctx *c, const yaml_node_t *n)
{
    char type[WF_NAME_MAX];
    mdf_status st = get_string(c, n, "model.type", "lj", type, sizeof type);
    if (st != MDF_OK) return st;
    char known[WF_LIST_MAX] = "";
    for (size_t k = 0; k < mdf_model_def_count(); k++) append(known, sizeof known, mdf_model_def_at(k)->name);
    /* Only Lennard-Jones has a configuration here; another model needs its own keys. */
    if (strcmp(type, "lj") != 0)
        return fail_at(c, n, MDF_ERR_INVALID, "unknown model type '%s': use one of %s", type, known);
    return MDF_OK;
}

static mdf_status parse_model(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    static const char *const keys[] = {"type", "shift", "epsilon", "sigma", "cutoff", "species", "pairs", "skin", NULL};
    mdf_status st = check_mapping(c, n, "model", keys);
    yaml_node_t *x;
    if (st == MDF_OK && !(x = lookup(c, n, "type"))) st = missing(c, n, "type", "model", "type: lj");
    if (st == MDF_OK) st = parse_model_type(c, x);
    if (st == MDF_OK && (x = lookup(c, n, "shift"))) st = get_bool(c, x, "model.shift", &wf->lj.shift);
    if (st == MDF_OK && (x = lookup(c, n, "skin")))
        st = get_double(c, x, "model.skin", &(wf_range){0.0, INFINITY, CLOSED, OPEN, "Å"}, &wf->skin);
    yaml_node_t *species = lookup(c, n, "species");
    static const char *const global[] = {"epsilon", "sigma", "cutoff"};
    for (int k = 0; st == MDF_OK && k < 3; k++)
        if ((x = lookup(c, n, global[k])) && species)
            st = fail_at(c, x, MDF_ERR_INVALID,
                         "model.%s and model.species exclude each other: put %s in each species entry, or drop "
                         "species to use one set of parameters for every element",
                         global[k], global[k]);
    if (st == MDF_OK && !species) {
        double v[3] = {wf->epsilon, wf->sigma, -1.0};
        const wf_range *r[] = {&(wf_range){0.0, INFINITY, CLOSED, OPEN, "eV"}, &(wf_range){0.0, INFINITY, OPEN, OPEN, "Å"},
                               &(wf_range){0.0, INFINITY, OPEN, OPEN, "Å"}};
        for (int k = 0; st == MDF_OK && k < 3; k++) {
            char what[32];
            snprintf(what, sizeof what, "model.%s", global[k]);
            if ((x = lookup(c, n, global[k]))) st = get_double(c, x, what, r[k], &v[k]);
        }
        wf->epsilon = v[0];
        wf->sigma = v[1];
        wf->cutoff = v[2] > 0.0 ? v[2] : 2.5 * v[1];
    }
    if (st == MDF_OK && species) st = parse_species(c, species, wf);
    if (st == MDF_OK && (x = lookup(c, n, "pairs"))) {
        if (!species)
            st = fail_at(c, x, MDF_ERR_INVALID, "model.pairs needs model.species: list each element's parameters "
                         "under species first");
        else st = parse_pairs(c, x, wf);
    }
    return st;
}

/* ---- method parameters --------------------------------------------------------------- */

/* params: of a stage -> the stage's method_params by name (the method's
 * own table checks them again at mdf_stage_create). A new method adds rows. */
typedef struct wf_param {
    const char *method, *name;
    char type;  /* 'd': double, 'i': int */
    wf_range range;
} wf_param;

#define P_DBL(m, f, lo, lo_open, hi, hi_open, unit) {#m, #f, 'd', {lo, hi, lo_open, hi_open, unit}}
#define P_INT(m, f, lo, hi) {#m, #f, 'i', {lo, hi, CLOSED, CLOSED, ""}}
#define INF INFINITY

static const wf_param params_table[] = {
    P_DBL(langevin, friction_per_fs, 0, OPEN, INF, OPEN, "1/fs"),
    P_DBL(nose_hoover, tau_fs, 0, OPEN, INF, OPEN, "fs"),
    P_INT(nose_hoover, chain, 1, MDF_NHC_MAX),
    P_DBL(bussi, tau_fs, 0, OPEN, INF, OPEN, "fs"),
    P_DBL(npt, pressure_bar, -INF, OPEN, INF, OPEN, "bar"),
    P_DBL(npt, tau_p_fs, 0, OPEN, INF, OPEN, "fs"),
    P_DBL(npt, compressibility_per_bar, 0, OPEN, INF, OPEN, "1/bar"),
    P_DBL(npt, tau_t_fs, 0, OPEN, INF, OPEN, "fs"),
    P_DBL(fire, dt, 0, OPEN, INF, OPEN, "(ASE time unit)"),
    P_DBL(fire, dtmax, 0, OPEN, INF, OPEN, "(ASE time unit)"),
    P_DBL(fire, maxstep, 0, OPEN, INF, OPEN, "Å"),
    P_INT(fire, nmin, 0, 1000000),
    P_DBL(fire, finc, 1, CLOSED, INF, OPEN, ""),
    P_DBL(fire, fdec, 0, OPEN, 1, OPEN, ""),
    P_DBL(fire, astart, 0, CLOSED, 1, CLOSED, ""),
    P_DBL(fire, fa, 0, OPEN, 1, CLOSED, ""),
    P_DBL(fire2, dt, 0, OPEN, INF, OPEN, "(ASE time unit)"),
    P_DBL(fire2, dtmax, 0, OPEN, INF, OPEN, "(ASE time unit)"),
    P_DBL(fire2, dtmin, 0, OPEN, INF, OPEN, "(ASE time unit)"),
    P_DBL(fire2, maxstep, 0, OPEN, INF, OPEN, "Å"),
    P_INT(fire2, nmin, 0, 1000000),
    P_DBL(fire2, finc, 1, CLOSED, INF, OPEN, ""),
    P_DBL(fire2, fdec, 0, OPEN, 1, OPEN, ""),
    P_DBL(fire2, astart, 0, CLOSED, 1, CLOSED, ""),
    P_DBL(fire2, fa, 0, OPEN, 1, CLOSED, ""),
    P_DBL(gd, step, 0, OPEN, INF, OPEN, "Å²/eV"),
    P_DBL(gd, maxstep, 0, OPEN, INF, OPEN, "Å"),
    P_INT(lbfgs, memory, 0, 10000),
    P_DBL(lbfgs, alpha, 0, OPEN, INF, OPEN, "eV/Å²"),
    P_DBL(lbfgs, damping, 0, OPEN, INF, OPEN, ""),
    P_DBL(lbfgs, maxstep, 0, OPEN, 1, CLOSED, "Å"),
};

static const wf_param *find_param(const char *method, const char *name)
{
    for (size_t k = 0; k < sizeof params_table / sizeof params_table[0]; k++)
        if (!strcmp(params_table[k].method, method) && !strcmp(params_table[k].name, name)) return &params_table[k];
    return NULL;
}

static mdf_status set_param(wf_ctx *c, const yaml_node_t *v, const wf_param *p, const char *what,
                            mdf_param_list *params)
{
    double x = 0.0;
    mdf_status st;
    if (p->type == 'i') {
        int i = 0;
        st = get_int(c, v, what, (int)p->range.lo, (int)p->range.hi, &i);
        x = i;
    } else {
        st = get_double(c, v, what, &p->range, &x);
    }
    mdf_error e;
    mdf_error_clear(&e);
    if (st == MDF_OK && mdf_param_list_set_double(params, p->name, x, &e) != MDF_OK)
        return fail_at(c, v, e.code, "%s: %s", what, e.message);
    return st;
}

static mdf_status parse_params(wf_ctx *c, const yaml_node_t *n, wf_stage *s)
{
    char section[128];
    snprintf(section, sizeof section, "stages.%s.params", s->name);
    mdf_status st = check_mapping(c, n, section, NULL);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; st == MDF_OK && p < n->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = node_at(c, p->key);
        const wf_param *param = find_param(s->method, text_of(k));
        if (!param) {
            char valid[WF_LIST_MAX] = "";
            for (size_t j = 0; j < sizeof params_table / sizeof params_table[0]; j++)
                if (!strcmp(params_table[j].method, s->method)) append(valid, sizeof valid, params_table[j].name);
            if (!*valid)
                return fail_at(c, k, MDF_ERR_INVALID, "unknown parameter '%s' of method %s: %s takes no params, "
                               "remove the key", text_of(k), s->method, s->method);
            return fail_at(c, k, MDF_ERR_INVALID, "unknown parameter '%s' of method %s: its params are %s",
                           text_of(k), s->method, valid);
        }
        char what[192];
        snprintf(what, sizeof what, "%s.%s", section, param->name);
        st = set_param(c, node_at(c, p->value), param, what, &s->cfg.method_params);
    }
    return st;
}

/* ---- stages ------------------------------------------------------------------------ */

static mdf_status parse_method(wf_ctx *c, const yaml_node_t *n, wf_stage *s)
{
    char what[128];
    snprintf(what, sizeof what, "stages.%s.method", s->name);
    mdf_status st = get_string(c, n, what, "fire", s->method, sizeof s->method);
    if (st != MDF_OK) return st;
    char known[WF_LIST_MAX] = "";
    for (size_t k = 0; k < mdf_integrator_count(); k++) {
        if (!strcmp(mdf_integrator_name(k), s->method)) {
            s->is_optimiser = mdf_integrator_is_optimiser(s->method) == 1;
            s->cfg.integrator = s->method;
            return MDF_OK;
        }
        append(known, sizeof known, mdf_integrator_name(k));
    }
    return fail_at(c, n, MDF_ERR_INVALID, "unknown method '%s' in stage '%s': use one of %s (mdflow methods)",
                   s->method, s->name, known);
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
    } else if (st == MDF_OK && !s->is_optimiser && strcmp(s->method, "velocity_verlet") != 0) {
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

static mdf_status parse_stage(wf_ctx *c, const yaml_node_t *key, const yaml_node_t *n, wf_stage *s)
{
    static const char *const keys[] = {"method", "fmax", "energy_change", "steps", "step_budget", "dt_fs",
                                       "temperature_K", "entry_temperature_K", "params", NULL};
    const char *name = text_of(key);
    if (!*name || strlen(name) >= sizeof s->name || strpbrk(name, "+ \t"))
        return fail_at(c, key, MDF_ERR_INVALID, "stage name '%s' must be 1 to %zu characters without '+' or "
                       "spaces: rename it, e.g. relax", name, sizeof s->name - 1);
    mdf_stage_config_init(&s->cfg);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->line = line_of(n);
    s->fmax = s->energy_change = -1.0;
    s->steps = -1;
    char section[128];
    snprintf(section, sizeof section, "stages.%s", name);
    mdf_status st = check_mapping(c, n, section, keys);
    yaml_node_t *x = st == MDF_OK ? lookup(c, n, "method") : NULL;
    if (st == MDF_OK && !x) st = missing(c, n, "method", section, "method: fire (see mdflow methods)");
    if (st == MDF_OK) st = parse_method(c, x, s);
    if (st == MDF_OK) st = parse_md_keys(c, n, s);
    if (st == MDF_OK) st = parse_criteria(c, n, s);
    if (st == MDF_OK && (x = lookup(c, n, "params"))) st = parse_params(c, x, s);
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

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) *--e = '\0';
    return s;
}

/* "relax + md": stage names joined by '+', run (fused) in that order. */
static mdf_status parse_composition(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    char text[1024];
    mdf_status st = get_string(c, n, "composition", "relax + md", text, sizeof text);
    if (st != MDF_OK) return st;
    wf->comp_line = line_of(n);
    char defined[WF_LIST_MAX] = "";
    for (int k = 0; k < wf->nstages; k++) append(defined, sizeof defined, wf->stages[k].name);
    char *save = NULL;
    for (char *tok = strtok_r(text, "+", &save); tok; tok = strtok_r(NULL, "+", &save)) {
        char *name = trim(tok);
        if (!*name) break;
        int k = find_stage(wf, name);
        if (k < 0)
            return fail_at(c, n, MDF_ERR_INVALID, "composition names stage '%s', which is not defined: use one of "
                           "the stages (%s)", name, defined);
        for (int j = 0; j < wf->ncomp; j++)
            if (wf->comp[j] == k)
                return fail_at(c, n, MDF_ERR_INVALID, "composition names stage '%s' twice: define a second stage "
                               "under another name", name);
        if (wf->ncomp == WF_MAX_STAGES)
            return fail_at(c, n, MDF_ERR_INVALID, "composition fuses at most %d stages", WF_MAX_STAGES);
        wf->comp[wf->ncomp++] = k;
    }
    /* An empty term: "relax +", "+ md" or "relax ++ md". */
    size_t plus = 0;
    for (const char *t = text_of(n); *t; t++) plus += *t == '+';
    if (wf->ncomp == 0 || plus + 1 != (size_t)wf->ncomp)
        return fail_at(c, n, MDF_ERR_INVALID, "composition '%s' has an empty term: write stage names joined by "
                       "'+', e.g. relax + md", text_of(n));
    return MDF_OK;
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

static mdf_status parse_output(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    static const char *const keys[] = {"structures", "log", "log_every", "snapshots", "snapshot_every",
                                       "converged", "compression", NULL};
    mdf_status st = check_mapping(c, n, "output", keys);
    yaml_node_t *x;
    wf->output_line = line_of(n);
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
    if (st == MDF_OK && (x = lookup(c, n, "structures")))
        st = get_string(c, x, "output.structures", "final.xyz", wf->structures, sizeof wf->structures);
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

/* input: relative to the workflow file's folder, and readable now, so a typo
 * is reported with its line rather than after StarPU has started. */
static mdf_status parse_input(wf_ctx *c, const yaml_node_t *n, mdf_workflow *wf)
{
    char given[WF_PATH_MAX];
    mdf_status st = get_string(c, n, "input", "structures.xyz", given, sizeof given);
    if (st != MDF_OK) return st;
    const char *slash = strrchr(wf->path, '/');
    int dirlen = slash ? (int)(slash - wf->path) : 0;
    int len = given[0] == '/' || !slash ? snprintf(wf->input, sizeof wf->input, "%s", given)
                                        : snprintf(wf->input, sizeof wf->input, "%.*s/%s", dirlen, wf->path, given);
    if (len < 0 || (size_t)len >= sizeof wf->input)
        return fail_at(c, n, MDF_ERR_INVALID, "input path is too long: shorten it");
    wf->input_line = line_of(n);
    if (access(wf->input, R_OK) != 0)
        return fail_at(c, n, MDF_ERR_INVALID, "input '%s' cannot be read (%s): fix the path (relative paths are "
                       "relative to the workflow file's folder, %.*s)", wf->input, strerror(errno),
                       slash ? dirlen : 1, slash ? wf->path : ".");
    return MDF_OK;
}

static double largest_cutoff(const mdf_workflow *wf)
{
    if (!wf->species_given) return wf->cutoff;
    double rc = 0.0;
    for (int a = 0; a < wf->lj.nspecies; a++)
        for (int b = 0; b < wf->lj.nspecies; b++)
            if (wf->lj.cutoff[a][b] > rc) rc = wf->lj.cutoff[a][b];
    return rc;
}

static void workflow_defaults(mdf_workflow *wf)
{
    memset(wf, 0, sizeof *wf);
    mdf_lj_config_init(&wf->lj);
    wf->epsilon = 0.0104;    /* argon */
    wf->sigma = 3.40;
    wf->cutoff = 2.5 * 3.40;
    wf->skin = 1.0;
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
    wf->window = 8;
    wf->max_steps = WF_DEFAULT_MAX_STEPS;
    wf->seed = 1;
}

static mdf_status parse_root(wf_ctx *c, const yaml_node_t *root, mdf_workflow *wf)
{
    static const char *const keys[] = {"input", "model", "stages", "composition", "sampler", "output",
                                       "hooks", "scheduler", "max_steps", "seed", "checkpoint", NULL};
    mdf_status st = check_mapping(c, root, "the workflow", keys);
    yaml_node_t *x;
    if (st == MDF_OK && !(x = lookup(c, root, "input")))
        st = missing(c, root, "input", "the workflow", "input: structures.xyz");
    if (st == MDF_OK) st = parse_input(c, x, wf);
    if (st == MDF_OK && (x = lookup(c, root, "model"))) st = parse_model(c, x, wf);
    if (st == MDF_OK && !(x = lookup(c, root, "stages")))
        st = missing(c, root, "stages", "the workflow", "stages: {relax: {method: fire, fmax: 0.05}}");
    if (st == MDF_OK) st = parse_stages(c, x, wf);
    if (st == MDF_OK && (x = lookup(c, root, "composition"))) st = parse_composition(c, x, wf);
    else if (st == MDF_OK && wf->nstages == 1) wf->ncomp = 1; /* one stage: it is the composition */
    else if (st == MDF_OK) st = missing(c, root, "composition", "a workflow with several stages", "composition: relax + md");
    if (st == MDF_OK && !(x = lookup(c, root, "sampler")))
        st = missing(c, root, "sampler", "the workflow", "sampler: {max_atoms: 20000}");
    if (st == MDF_OK) st = parse_sampler(c, x, wf);
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
    /* Pairs are counted (O(N²) per system) only when a pair budget asks. */
    wf->sampler.pair_cutoff = wf->sampler.max_pairs > 0 ? largest_cutoff(wf) : 0.0;
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

void wf_composition_text(const mdf_workflow *wf, char *out, size_t size)
{
    out[0] = '\0';
    for (int k = 0; k < wf->ncomp; k++) {
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", k ? " + " : "", wf->stages[wf->comp[k]].name);
    }
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
    const char *name = wf->stages[wf->comp[k]].name;
    const char *slash = strrchr(wf->log, '/');
    const char *dot = strrchr(wf->log, '.');
    if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : wf->log))
        snprintf(out, size, "%s.%s", wf->log, name);
    else snprintf(out, size, "%.*s.%s%s", (int)(dot - wf->log), wf->log, name, dot);
}
