/* mdflow — extended XYZ reader and writer, compatible with ase.io.extxyz
 * (ASE 3.22). See include/mdflow/xyz.h for the format as mdflow reads it. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <pthread.h>
#include <unistd.h>
#include "real_text.h"
#include "mdflow/xyz.h"

/* Properties when a frame's comment line has none (ASE's default). */
#define DEFAULT_PROPERTIES "species:S:1:pos:R:3"
/* The unit of the velocities column (ASE's: Å per ASE time unit,
 * Å·sqrt(amu/eV) = 10.1805 fs), which the writer states as the info key
 * velocities_unit and the reader checks. */
#define VELOCITIES_UNIT_KEY "velocities_unit"
#define VELOCITIES_UNIT "sqrt(eV/amu)"
/* Per-atom columns a file may declare in all; far beyond any real file, and
 * keeps the column arithmetic well inside int. */
#define MAX_COLUMNS 100000

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int is_blank(const char *s)
{
    while (*s && is_space(*s)) s++;
    return *s == '\0';
}

/* Removes leading and trailing white space in place; returns the start. */
static char *trim(char *s)
{
    while (*s && is_space(*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && is_space(s[n - 1])) s[--n] = '\0';
    return s;
}

/* The whole of s must be a number: "1.5x" or "" are refused, so a typo never
 * silently becomes a truncated value. */
static int parse_double(const char *s, double *out) { return mdf_real_parse(s, out); }

static int parse_int64(const char *s, int64_t *out)
{
    if (!*s) return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno == ERANGE) return 0;
    *out = (int64_t)v;
    return 1;
}

/* extxyz logicals as ASE's Properties parser accepts them. */
static int parse_logical(const char *s, int *out)
{
    if (strcmp(s, "T") == 0 || strcmp(s, "True") == 0) { *out = 1; return 1; }
    if (strcmp(s, "F") == 0 || strcmp(s, "False") == 0) { *out = 0; return 1; }
    return 0;
}

/* pbc flags: ASE writes T/F; other tools write True/False or 1/0. */
static int parse_pbc_flag(const char *s, int *out)
{
    static const char *const yes[] = {"T", "t", "True", "true", "TRUE", "1"};
    static const char *const no[] = {"F", "f", "False", "false", "FALSE", "0"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcmp(s, yes[i]) == 0) { *out = 1; return 1; }
        if (strcmp(s, no[i]) == 0) { *out = 0; return 1; }
    }
    return 0;
}

/* Splits s in place at any run of characters from seps; stores at most max
 * field pointers and returns how many fields there are in all. */
static size_t split_fields(char *s, const char *seps, char **fields, size_t max)
{
    /* A table, not strchr per character: a million-atom file's lines
     * spent a third of their parsing time in strchr. */
    unsigned char sep[256] = {0};
    for (const char *c = seps; *c; c++) sep[(unsigned char)*c] = 1;
    size_t n = 0;
    while (*s) {
        while (sep[(unsigned char)*s]) s++;
        if (!*s) break;
        if (n < max) fields[n] = s;
        n++;
        while (*s && !sep[(unsigned char)*s]) s++;
        if (*s) *s++ = '\0';
    }
    return n;
}

/* A growable string; ok drops to 0 on the first failed allocation, so callers
 * check once at the end instead of after every character. */
typedef struct strbuf {
    char *s;
    size_t len, cap;
    int ok;
} strbuf;

static void sb_init(strbuf *b)
{
    b->s = NULL;
    b->len = b->cap = 0;
    b->ok = 1;
}

static void sb_putn(strbuf *b, const char *s, size_t n)
{
    if (!b->ok) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *grown = realloc(b->s, cap);
        if (!grown) { b->ok = 0; return; }
        b->s = grown;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_puts(strbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }
static void sb_putc(strbuf *b, char c) { sb_putn(b, &c, 1); }

/* Hands the string over (an empty string rather than NULL), or NULL when an
 * allocation failed. */
static char *sb_take(strbuf *b)
{
    if (b->ok && !b->s) sb_putn(b, "", 0);
    char *s = b->ok ? b->s : NULL;
    if (!b->ok) free(b->s);
    sb_init(b);
    return s;
}

static void sb_free(strbuf *b)
{
    free(b->s);
    sb_init(b);
}

/* A short decimal form that reads back as exactly x: "%.16g" when that
 * does (0.1 stays "0.1"), else "%.17g" (real_text.c, which finds the
 * digits without glibc's multi-precision formatting). */
static void format_real(char *buf, size_t size, double x)
{
    mdf_real_text(buf, size, x);
}

/* ------------------------------------------------------------------------ */
/* Reading: lines                                                            */

typedef struct reader {
    FILE *fp;
    const char *name;
    char *line;
    size_t cap;
    long lineno;   /* of the line in `line`, 1-based */
    mdf_error *err;
} reader;

/* Reads the next line without its LF or CRLF; *got is 0 at end of file. */
static mdf_status read_line(reader *r, int *got)
{
    errno = 0;
    ssize_t n = getline(&r->line, &r->cap, r->fp);
    if (n < 0) {
        *got = 0;
        if (errno == ENOMEM)
            return mdf_error_set(r->err, MDF_ERR_NOMEM, "%s:%ld: no memory to read the next line",
                                 r->name, r->lineno + 1);
        if (ferror(r->fp))
            return mdf_error_set(r->err, MDF_ERR_IO, "%s:%ld: read error: %s", r->name,
                                 r->lineno + 1, strerror(errno ? errno : EIO));
        return MDF_OK;
    }
    r->lineno++;
    if ((size_t)n != strlen(r->line))
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: the line contains a NUL byte: this is not a text "
                             "(extended XYZ) file", r->name, r->lineno);
    if (n > 0 && r->line[n - 1] == '\n') r->line[--n] = '\0';
    if (n > 0 && r->line[n - 1] == '\r') r->line[--n] = '\0';
    *got = 1;
    return MDF_OK;
}

/* ------------------------------------------------------------------------ */
/* Reading: the comment line as key=value pairs                              */

typedef struct kv {
    char *key;
    char *value;
} kv;

typedef struct kv_list {
    kv *items;
    size_t n, cap;
} kv_list;

static void kv_list_free(kv_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

static int kv_list_push(kv_list *l, char *key, char *value)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        kv *grown = realloc(l->items, cap * sizeof *grown);
        if (!grown) return 0;
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n].key = key;
    l->items[l->n].value = value;
    l->n++;
    return 1;
}

/* State of the comment-line scanner, which follows ASE's
 * key_val_str_to_dict character by character: white space separates pairs
 * (but "key = value" is one pair), quotes ' " and brackets { } [ ] group text,
 * a backslash takes the next character literally, a key without '=' means
 * "T", and a second '=' becomes part of the value. */
typedef struct comment_scan {
    kv_list *out;
    strbuf key, value;
    int nparts;        /* 0: no pair open; 1: key only; >= 2: key and value */
    int part_started;  /* the current part has text or quotes */
    int pending_split; /* white space after a part: the next text starts a pair */
    int any_equals;    /* an '=' outside quotes: this is an extxyz line */
    size_t pair_start; /* character index where the open pair began */
} comment_scan;

static mdf_status finish_pair(reader *r, comment_scan *cs)
{
    if (cs->nparts == 0) return MDF_OK;
    int has_value = cs->nparts >= 2;
    char *key = sb_take(&cs->key);
    char *value = has_value ? sb_take(&cs->value) : strdup("T");
    sb_free(&cs->value);
    cs->nparts = 0;
    cs->part_started = 0;
    cs->pending_split = 0;
    if (!key || !value || (key[0] && !kv_list_push(cs->out, key, value))) {
        free(key);
        free(value);
        return mdf_error_set(r->err, MDF_ERR_NOMEM, "%s:%ld: no memory for the comment line",
                             r->name, r->lineno);
    }
    if (!key[0]) {
        free(key);
        free(value);
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: '=' without a key at character %zu of the comment line: "
                             "write key=value pairs, e.g. energy=-1.5",
                             r->name, r->lineno, cs->pair_start + 1);
    }
    return MDF_OK;
}

/* Text that extends the current part, opening a new pair when white space
 * closed the previous one. */
static mdf_status begin_text(reader *r, comment_scan *cs, size_t pos)
{
    if (cs->pending_split) {
        mdf_status st = finish_pair(r, cs);
        if (st) return st;
    }
    if (cs->nparts == 0) {
        cs->nparts = 1;
        cs->pair_start = pos;
    }
    cs->part_started = 1;
    return MDF_OK;
}

static void append_char(comment_scan *cs, char c)
{
    sb_putc(cs->nparts == 1 ? &cs->key : &cs->value, c);
}

static char closing_delimiter(char c)
{
    switch (c) {
    case '"': return '"';
    case '\'': return '\'';
    case '{': return '}';
    case '[': return ']';
    default: return 0;
    }
}

/* Parses the comment line s into out. A line with no '=' outside quotes is a
 * plain XYZ comment: out stays empty and the text is ignored. */
static mdf_status parse_comment(reader *r, const char *s, kv_list *out)
{
    comment_scan cs;
    memset(&cs, 0, sizeof cs);
    cs.out = out;
    sb_init(&cs.key);
    sb_init(&cs.value);
    char delim = 0;
    size_t delim_pos = 0;
    int escaped = 0;
    mdf_status st = MDF_OK;
    for (size_t i = 0; s[i] && st == MDF_OK; i++) {
        char c = s[i];
        if (escaped) {
            escaped = 0;
            if ((st = begin_text(r, &cs, i)) == MDF_OK) append_char(&cs, c);
        } else if (c == '\\') {
            escaped = 1;
        } else if (delim) {
            if (c == delim) delim = 0;
            else append_char(&cs, c);
        } else if (closing_delimiter(c)) {
            if ((st = begin_text(r, &cs, i)) == MDF_OK) {
                delim = closing_delimiter(c);
                delim_pos = i;
            }
        } else if (is_space(c)) {
            if (cs.nparts > 0 && cs.part_started) cs.pending_split = 1;
        } else if (c == '=') {
            cs.any_equals = 1;
            if (cs.nparts == 0) {
                cs.nparts = 1;   /* an empty key: finish_pair reports it */
                cs.pair_start = i;
            }
            cs.pending_split = 0;  /* "key = value": '=' joins the open pair */
            if (cs.nparts >= 2) sb_putc(&cs.value, '=');
            cs.nparts++;
            cs.part_started = 0;
        } else if ((st = begin_text(r, &cs, i)) == MDF_OK) {
            append_char(&cs, c);
        }
    }
    if (st == MDF_OK && !cs.any_equals) {
        /* Plain XYZ: the comment is free text, even with stray quotes. */
        kv_list_free(out);
    } else if (st == MDF_OK && delim) {
        st = mdf_error_set(r->err, MDF_ERR_PARSE,
                           "%s:%ld: the %c opened at character %zu of the comment line is never "
                           "closed: add the closing %c, or write \\%c for a literal one",
                           r->name, r->lineno, s[delim_pos], delim_pos + 1, delim, s[delim_pos]);
    } else if (st == MDF_OK) {
        st = finish_pair(r, &cs);
    }
    if (st == MDF_OK && (!cs.key.ok || !cs.value.ok))
        st = mdf_error_set(r->err, MDF_ERR_NOMEM, "%s:%ld: no memory for the comment line",
                           r->name, r->lineno);
    sb_free(&cs.key);
    sb_free(&cs.value);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Reading: frame header (Lattice, pbc, energy, Properties)                  */

typedef enum prop_kind {
    PROP_SPECIES,
    PROP_Z,
    PROP_POS,
    PROP_VELOCITIES,
    PROP_MOMENTA,
    PROP_FORCES,
    PROP_MASSES,
    PROP_EXTRA
} prop_kind;

typedef struct prop {
    const char *name;  /* points into header.props_buf */
    char type;
    int ncols;
    int col;           /* first column, 0-based */
    prop_kind kind;
    size_t extra;      /* index in frame->extra for PROP_EXTRA */
} prop;

typedef struct header {
    size_t frame_no;   /* 1-based */
    int64_t natoms;
    long count_line;
    double cell[9];
    int has_cell;
    int pbc[3];
    int has_pbc;
    double energy;
    int has_energy;
    char *props_text;  /* Properties as written, for messages */
    char *props_buf;   /* the same, split at ':' */
    prop *props;
    size_t nprops;
    size_t nextra;
    int ncols;         /* columns per atom line */
    int has_z, has_momenta, has_velocities, has_forces, has_masses;
} header;

static void header_free(header *h)
{
    free(h->props_text);
    free(h->props_buf);
    free(h->props);
}

static mdf_status parse_lattice(reader *r, char *value, header *h)
{
    char *f[10];
    size_t n = split_fields(value, " \t,", f, 10);
    if (n != 9)
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: Lattice must hold 9 numbers, the three cell vectors "
                             "\"ax ay az bx by bz cx cy cz\", found %zu",
                             r->name, r->lineno, n);
    for (int i = 0; i < 9; i++)
        if (!parse_double(f[i], &h->cell[i]))
            return mdf_error_set(r->err, MDF_ERR_PARSE,
                                 "%s:%ld: Lattice value %d, '%s', is not a number: Lattice must "
                                 "hold 9 numbers \"ax ay az bx by bz cx cy cz\"",
                                 r->name, r->lineno, i + 1, f[i]);
    h->has_cell = 1;
    return MDF_OK;
}

static mdf_status parse_pbc(reader *r, char *value, header *h)
{
    char *copy = strdup(value);
    if (!copy) return mdf_error_set(r->err, MDF_ERR_NOMEM, "%s:%ld: no memory", r->name, r->lineno);
    char *f[4];
    size_t n = split_fields(value, " \t,", f, 4);
    int flags[3];
    int ok = n == 1 || n == 3;
    for (size_t i = 0; ok && i < n; i++) ok = parse_pbc_flag(f[i], &flags[i]);
    if (!ok) {
        mdf_status st = mdf_error_set(r->err, MDF_ERR_PARSE,
                                      "%s:%ld: pbc=\"%s\" is not understood: write one flag per "
                                      "cell vector, T (periodic) or F, e.g. pbc=\"T T F\"",
                                      r->name, r->lineno, copy);
        free(copy);
        return st;
    }
    free(copy);
    for (int i = 0; i < 3; i++) h->pbc[i] = n == 1 ? flags[0] : flags[i];
    h->has_pbc = 1;
    return MDF_OK;
}

/* velocities_unit, which mdflow writes, may only say what the velocities
 * column holds: another unit would be read as the wrong numbers. */
static mdf_status check_velocities_unit(reader *r, const char *value)
{
    if (strcmp(value, VELOCITIES_UNIT) == 0) return MDF_OK;
    return mdf_error_set(r->err, MDF_ERR_PARSE,
                         "%s:%ld: " VELOCITIES_UNIT_KEY "=%s: mdflow reads extended XYZ velocities in ASE's "
                         "unit, " VELOCITIES_UNIT " (Å per 10.1805 fs): convert them (Å/fs values divided by "
                         "ase.units.fs, 0.0982269) and write " VELOCITIES_UNIT_KEY "=" VELOCITIES_UNIT
                         ", or drop the key", r->name, r->lineno, value);
}

static mdf_status parse_energy(reader *r, const char *value, header *h)
{
    if (!parse_double(value, &h->energy))
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: energy=%s is not a number: write the energy in eV, "
                             "e.g. energy=-12.5", r->name, r->lineno, value);
    h->has_energy = 1;
    return MDF_OK;
}

typedef struct known_prop {
    const char *name;
    prop_kind kind;
    char type;
    int ncols;
} known_prop;

static const known_prop known_props[] = {
    {"species", PROP_SPECIES, 'S', 1}, {"Z", PROP_Z, 'I', 1},
    {"pos", PROP_POS, 'R', 3},         {"velocities", PROP_VELOCITIES, 'R', 3},
    {"vel", PROP_VELOCITIES, 'R', 3},  {"momenta", PROP_MOMENTA, 'R', 3},
    {"forces", PROP_FORCES, 'R', 3},   {"masses", PROP_MASSES, 'R', 1},
};

static const known_prop *find_known_prop(const char *name)
{
    for (size_t i = 0; i < sizeof known_props / sizeof known_props[0]; i++)
        if (strcmp(known_props[i].name, name) == 0) return &known_props[i];
    return NULL;
}

/* Checks one name:type:ncols triplet and appends it to h->props. */
static mdf_status add_property(reader *r, header *h, char *name, char *type, char *ncols)
{
    int64_t n;
    if (!name[0])
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: Properties=%s has an empty property name: write "
                             "name:type:ncols triplets, e.g. species:S:1:pos:R:3",
                             r->name, r->lineno, h->props_text);
    if (strlen(type) != 1 || !strchr("RISL", type[0]))
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: Properties: unknown type '%s' for '%s': use R (real), "
                             "I (integer), S (string) or L (logical)",
                             r->name, r->lineno, type, name);
    if (!parse_int64(ncols, &n) || n < 1 || n > MAX_COLUMNS - h->ncols)
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: Properties: the column count '%s' of '%s' is not a positive "
                             "integer: write name:type:ncols, e.g. pos:R:3",
                             r->name, r->lineno, ncols, name);
    for (size_t i = 0; i < h->nprops; i++)
        if (strcmp(h->props[i].name, name) == 0)
            return mdf_error_set(r->err, MDF_ERR_PARSE,
                                 "%s:%ld: Properties=%s declares '%s' twice: keep one",
                                 r->name, r->lineno, h->props_text, name);
    const known_prop *k = find_known_prop(name);
    if (k && (type[0] != k->type || n != k->ncols))
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: Properties: '%s' must be declared %s:%c:%d, found %s:%s:%s",
                             r->name, r->lineno, name, k->name, k->type, k->ncols, name, type,
                             ncols);
    prop *p = &h->props[h->nprops++];
    p->name = name;
    p->type = type[0];
    p->ncols = (int)n;
    p->col = h->ncols;
    p->kind = k ? k->kind : PROP_EXTRA;
    p->extra = p->kind == PROP_EXTRA ? h->nextra++ : 0;
    h->ncols += (int)n;
    return MDF_OK;
}

static int has_kind(const header *h, prop_kind kind)
{
    for (size_t i = 0; i < h->nprops; i++)
        if (h->props[i].kind == kind) return 1;
    return 0;
}

static mdf_status parse_properties(reader *r, const char *text, header *h)
{
    h->props_text = strdup(text);
    h->props_buf = strdup(text);
    size_t nfields = 1;
    for (const char *c = text; *c; c++) nfields += *c == ':';
    h->props = calloc(nfields / 3 + 1, sizeof *h->props);
    if (!h->props_text || !h->props_buf || !h->props)
        return mdf_error_set(r->err, MDF_ERR_NOMEM, "%s:%ld: no memory for Properties",
                             r->name, r->lineno);
    if (nfields % 3 != 0)
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: Properties=%s must be name:type:ncols triplets, e.g. "
                             "species:S:1:pos:R:3, but has %zu ':'-separated fields",
                             r->name, r->lineno, text, nfields);
    /* Split at every ':' (empty fields included, so that "pos::3" is caught). */
    char *field = h->props_buf;
    for (size_t i = 0; i < nfields; i += 3) {
        char *parts[3];
        for (int j = 0; j < 3; j++) {
            parts[j] = field;
            char *colon = strchr(field, ':');
            if (colon) {
                *colon = '\0';
                field = colon + 1;
            }
        }
        mdf_status st = add_property(r, h, parts[0], parts[1], parts[2]);
        if (st) return st;
    }
    if (!has_kind(h, PROP_POS))
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: Properties=%s has no 'pos' column: add pos:R:3 for the "
                             "atomic positions", r->name, r->lineno, text);
    if (!has_kind(h, PROP_SPECIES) && !has_kind(h, PROP_Z))
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: Properties=%s has neither 'species' nor 'Z': add "
                             "species:S:1 (element symbols) or Z:I:1 (atomic numbers)",
                             r->name, r->lineno, text);
    h->has_z = has_kind(h, PROP_Z);
    h->has_velocities = has_kind(h, PROP_VELOCITIES);
    h->has_momenta = has_kind(h, PROP_MOMENTA);
    h->has_forces = has_kind(h, PROP_FORCES);
    h->has_masses = has_kind(h, PROP_MASSES);
    if (h->has_velocities && h->has_momenta)
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: Properties=%s has both velocities and momenta: keep one",
                             r->name, r->lineno, text);
    return MDF_OK;
}

/* Interprets Lattice, pbc, energy and Properties; the keys it consumed are
 * removed from kvs, the rest becomes the frame's info. */
static mdf_status parse_header(reader *r, kv_list *kvs, header *h)
{
    const char *properties = DEFAULT_PROPERTIES;
    mdf_status st = MDF_OK;
    for (size_t i = 0; i < kvs->n && st == MDF_OK; i++) {
        kv *e = &kvs->items[i];
        int consumed = 1;
        if (strcmp(e->key, "Lattice") == 0) st = parse_lattice(r, e->value, h);
        else if (strcmp(e->key, "pbc") == 0) st = parse_pbc(r, e->value, h);
        else if (strcmp(e->key, "energy") == 0) st = parse_energy(r, e->value, h);
        else if (strcmp(e->key, VELOCITIES_UNIT_KEY) == 0) st = check_velocities_unit(r, e->value);
        else if (strcmp(e->key, "Properties") == 0) { properties = e->value; consumed = 0; }
        else consumed = 0;
        if (consumed) {
            free(e->key);
            e->key = NULL;
        }
    }
    if (st) return st;
    st = parse_properties(r, properties, h);
    for (size_t i = 0; i < kvs->n; i++) {
        if (kvs->items[i].key && strcmp(kvs->items[i].key, "Properties") == 0) {
            free(kvs->items[i].key);
            kvs->items[i].key = NULL;
        }
    }
    if (st) return st;
    /* ASE's rule: a cell without pbc is periodic in all directions. */
    if (!h->has_pbc)
        for (int i = 0; i < 3; i++) h->pbc[i] = h->has_cell;
    return MDF_OK;
}

/* ------------------------------------------------------------------------ */
/* Reading: atom lines                                                       */

/* Values a frame's arrays first hold before more atom lines arrive. The
 * count line is a claim, not a fact: memory follows the atom lines actually
 * read (a 120-byte file announcing 990,900,002 atoms asked for 24 GB). */
#define FIRST_VALUES 65536

/* Atoms the frame is first allocated for: about FIRST_VALUES values (one per
 * column), at least one, at most the announced count. */
static int64_t first_capacity(const header *h)
{
    int64_t cap = FIRST_VALUES / (h->ncols > 0 ? h->ncols : 1);
    if (cap < 1) cap = 1;
    return cap < h->natoms ? cap : h->natoms;
}

/* Allocates the frame's arrays for the columns h announces, for
 * first_capacity() atoms; read_atoms() grows them as lines arrive. */
static mdf_status setup_frame(reader *r, const header *h, kv_list *kvs, mdf_frame *f)
{
    mdf_status st = mdf_frame_alloc(f, first_capacity(h), h->has_velocities || h->has_momenta,
                                    h->has_forces, h->has_masses, r->err);
    if (st)
        return mdf_error_prefix(r->err, st, "%s:%ld: frame %zu announces %lld atoms (is that count "
                             "right?)", r->name, h->count_line, h->frame_no, (long long)h->natoms);
    memcpy(f->cell, h->cell, sizeof f->cell);
    memcpy(f->pbc, h->pbc, sizeof f->pbc);
    f->has_cell = h->has_cell;
    f->energy = h->energy;
    f->has_energy = h->has_energy;
    for (size_t i = 0; i < kvs->n; i++) {
        if (!kvs->items[i].key) continue;
        st = mdf_frame_set_info(f, kvs->items[i].key, kvs->items[i].value, r->err);
        if (st) return st;
    }
    if (h->nextra == 0) return MDF_OK;
    f->extra = calloc(h->nextra, sizeof *f->extra);
    if (!f->extra) goto nomem;
    f->nextra = h->nextra;
    for (size_t i = 0; i < h->nprops; i++) {
        const prop *p = &h->props[i];
        if (p->kind != PROP_EXTRA) continue;
        mdf_extra_column *c = &f->extra[p->extra];
        c->type = p->type;
        c->ncols = p->ncols;
        c->name = strdup(p->name);
        if (!c->name) goto nomem;
        size_t n = (size_t)f->natoms * (size_t)p->ncols; /* small: first_capacity() */
        c->tokens = calloc(n ? n : 1, sizeof *c->tokens);
        if (!c->tokens) goto nomem;
    }
    return MDF_OK;
nomem:
    return mdf_error_set(r->err, MDF_ERR_NOMEM, "%s:%ld: no memory for the %lld atoms of frame %zu",
                         r->name, h->count_line, (long long)h->natoms, h->frame_no);
}

static const char *type_noun(char type, int n)
{
    switch (type) {
    case 'R': return n == 1 ? "number" : "numbers";
    case 'I': return n == 1 ? "integer" : "integers";
    case 'L': return n == 1 ? "logical (T/F)" : "logicals (T/F)";
    default: return n == 1 ? "string" : "strings";
    }
}

/* The atom line has a wrong number of fields: say which property falls
 * short, and point at the usual cause, an atom count that does not match. */
static mdf_status field_count_error(reader *r, const header *h, size_t nfields)
{
    if (nfields > (size_t)h->ncols)
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: found %zu fields but Properties=%s describes %d columns: "
                             "declare the extra columns in Properties or remove them, and check "
                             "that the atom count on line %ld (%lld) matches the number of atom "
                             "lines", r->name, r->lineno, nfields, h->props_text, h->ncols,
                             h->count_line, (long long)h->natoms);
    /* Properties are in column order: find the one holding the first
     * missing column. */
    const prop *p = &h->props[h->nprops - 1];
    for (size_t i = 0; i < h->nprops; i++) {
        if ((size_t)(h->props[i].col + h->props[i].ncols) > nfields) {
            p = &h->props[i];
            break;
        }
    }
    size_t found = nfields > (size_t)p->col ? nfields - (size_t)p->col : 0;
    char cols[48];
    if (p->ncols == 1) snprintf(cols, sizeof cols, "column %d", p->col + 1);
    else snprintf(cols, sizeof cols, "columns %d-%d", p->col + 1, p->col + p->ncols);
    return mdf_error_set(r->err, MDF_ERR_PARSE,
                         "%s:%ld: expected %d %s for '%s' (Properties %s), found %zu: check "
                         "that the atom count on line %ld (%lld) matches the number of atom "
                         "lines and that each atom line has the %d columns of Properties=%s",
                         r->name, r->lineno, p->ncols, type_noun(p->type, p->ncols), p->name,
                         cols, found, h->count_line, (long long)h->natoms, h->ncols,
                         h->props_text);
}

/* ASE capitalises symbols on reading ("si", "SI" -> "Si"). */
static int species_number(const char *token)
{
    char sym[4];
    size_t n = strlen(token);
    if (n == 0 || n >= sizeof sym) return -1;
    for (size_t i = 0; i < n; i++) {
        char c = token[i];
        if (i == 0 && c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
        if (i > 0 && c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        sym[i] = c;
    }
    sym[n] = '\0';
    return mdf_element_number(sym);
}

typedef struct atom_ctx {
    reader *r;
    const header *h;
    mdf_frame *f;
    int64_t atom;      /* 0-based */
} atom_ctx;

static mdf_status bad_value(const atom_ctx *a, const prop *p, int c, const char *tok,
                            const char *what, const char *hint)
{
    return mdf_error_set(a->r->err, MDF_ERR_PARSE,
                         "%s:%ld: '%s' is not %s (atom %lld of frame %zu, column %d, property "
                         "'%s'): %s",
                         a->r->name, a->r->lineno, tok, what, (long long)a->atom + 1,
                         a->h->frame_no, p->col + c + 1, p->name, hint);
}

static mdf_status parse_reals(const atom_ctx *a, const prop *p, char **tok, double *dst)
{
    for (int c = 0; c < p->ncols; c++)
        if (!parse_double(tok[p->col + c], &dst[c]))
            return bad_value(a, p, c, tok[p->col + c], "a number",
                             "write reals such as 1.5 or -2e-3");
    return MDF_OK;
}

static mdf_status parse_extra(const atom_ctx *a, const prop *p, char **tok)
{
    mdf_extra_column *col = &a->f->extra[p->extra];
    for (int c = 0; c < p->ncols; c++) {
        const char *t = tok[p->col + c];
        double d;
        int64_t i;
        int l;
        if (p->type == 'R' && !parse_double(t, &d))
            return bad_value(a, p, c, t, "a number", "the column is declared R (real)");
        if (p->type == 'I' && !parse_int64(t, &i))
            return bad_value(a, p, c, t, "an integer", "the column is declared I (integer)");
        if (p->type == 'L' && !parse_logical(t, &l))
            return bad_value(a, p, c, t, "a logical", "write T or F");
        char **slot = &col->tokens[(size_t)a->atom * (size_t)p->ncols + (size_t)c];
        *slot = strdup(t);
        if (!*slot)
            return mdf_error_set(a->r->err, MDF_ERR_NOMEM, "%s:%ld: no memory", a->r->name,
                                 a->r->lineno);
    }
    return MDF_OK;
}

static mdf_status parse_column(const atom_ctx *a, const prop *p, char **tok)
{
    mdf_frame *f = a->f;
    size_t i = (size_t)a->atom;
    const char *t = tok[p->col];
    int64_t z;
    switch (p->kind) {
    case PROP_SPECIES: {
        int zs = species_number(t);
        if (zs < 0)
            return mdf_error_set(a->r->err, MDF_ERR_PARSE,
                                 "%s:%ld: unknown element '%s' (atom %lld of frame %zu, column "
                                 "%d): use a symbol from the periodic table such as H, C or Si, "
                                 "or declare the column as Z:I:1 for atomic numbers",
                                 a->r->name, a->r->lineno, t, (long long)a->atom + 1,
                                 a->h->frame_no, p->col + 1);
        if (!a->h->has_z) f->numbers[i] = zs;   /* as in ASE, Z wins over species */
        return MDF_OK;
    }
    case PROP_Z:
        if (!parse_int64(t, &z) || z < 0 || z > 118)
            return bad_value(a, p, 0, t, "an atomic number",
                             "Z must be an integer from 0 to 118");
        f->numbers[i] = (int32_t)z;
        return MDF_OK;
    case PROP_POS: return parse_reals(a, p, tok, &f->positions[3 * i]);
    case PROP_VELOCITIES:
    case PROP_MOMENTA: return parse_reals(a, p, tok, &f->velocities[3 * i]);
    case PROP_FORCES: return parse_reals(a, p, tok, &f->forces[3 * i]);
    case PROP_MASSES: return parse_reals(a, p, tok, &f->masses[i]);
    case PROP_EXTRA: return parse_extra(a, p, tok);
    }
    return MDF_OK;
}

/* Momenta were read into velocities; divide by the mass as ASE's
 * get_velocities() does, with the same masses, so the result is identical. */
static mdf_status momenta_to_velocities(const atom_ctx *a)
{
    mdf_frame *f = a->f;
    size_t i = (size_t)a->atom;
    double m = f->masses ? f->masses[i] : mdf_element_mass(f->numbers[i]);
    if (!(m > 0.0))
        return mdf_error_set(a->r->err, MDF_ERR_PARSE,
                             "%s:%ld: cannot turn the momenta of atom %lld of frame %zu (%s) into "
                             "velocities: it has no positive mass; add a masses:R:1 column",
                             a->r->name, a->r->lineno, (long long)a->atom + 1, a->h->frame_no,
                             mdf_element_symbol(f->numbers[i]) ? mdf_element_symbol(f->numbers[i])
                                                               : "?");
    for (int k = 0; k < 3; k++) f->velocities[3 * i + (size_t)k] /= m;
    return MDF_OK;
}

static mdf_status parse_atom_line(const atom_ctx *a, char **tok)
{
    const header *h = a->h;
    size_t n = split_fields(a->r->line, " \t\v\f\r", tok, (size_t)h->ncols);
    if (n != (size_t)h->ncols) return field_count_error(a->r, h, n);
    for (size_t p = 0; p < h->nprops; p++) {
        mdf_status st = parse_column(a, &h->props[p], tok);
        if (st) return st;
    }
    return h->has_momenta ? momenta_to_velocities(a) : MDF_OK;
}

/* ------------------------------------------------------------------------ */
/* Reading: frames                                                           */

static mdf_status parse_count(reader *r, header *h)
{
    char *s = trim(r->line);
    h->count_line = r->lineno;
    if (!parse_int64(s, &h->natoms))
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: expected the atom count of frame %zu, found '%.60s': each "
                             "frame starts with a line holding only its number of atoms",
                             r->name, r->lineno, h->frame_no, s);
    if (h->natoms < 0)
        return mdf_error_set(r->err, MDF_ERR_PARSE,
                             "%s:%ld: frame %zu announces a negative atom count (%lld): the first "
                             "line of a frame must be its number of atoms, 0 or more",
                             r->name, r->lineno, h->frame_no, (long long)h->natoms);
    return MDF_OK;
}

/* Resizes *p from old_n to new_n elements of size bytes, zeroing the new
 * ones (an extra column's token pointers must start NULL). new_n * size must
 * fit in size_t. Returns 0 when realloc failed (*p is then unchanged). */
static int grow_array(void **p, size_t old_n, size_t new_n, size_t size)
{
    void *q = realloc(*p, new_n * size);
    if (!q) return 0;
    memset((char *)q + old_n * size, 0, (new_n - old_n) * size);
    *p = q;
    return 1;
}

/* Grows f's arrays to hold twice as many atoms (at most the announced count).
 * f->natoms, which mdf_frame_free() relies on, changes only once every array
 * has grown, so a failure leaves a frame that frees correctly. */
static mdf_status grow_frame(reader *r, const header *h, mdf_frame *f)
{
    size_t old_n = (size_t)f->natoms;
    int64_t cap = f->natoms < h->natoms / 2 ? 2 * f->natoms : h->natoms;
    /* the widest arrays: 3 doubles, or an extra column's token pointers */
    size_t widest = 3 * sizeof(double) > (size_t)h->ncols * sizeof(char *) ? 3 * sizeof(double)
                                                                            : (size_t)h->ncols * sizeof(char *);
    int ok = (uint64_t)cap <= SIZE_MAX / widest;
    size_t n = (size_t)cap;
    ok = ok && grow_array((void **)&f->positions, 3 * old_n, 3 * n, sizeof(double));
    ok = ok && grow_array((void **)&f->numbers, old_n, n, sizeof(int32_t));
    if (f->velocities) ok = ok && grow_array((void **)&f->velocities, 3 * old_n, 3 * n, sizeof(double));
    if (f->forces) ok = ok && grow_array((void **)&f->forces, 3 * old_n, 3 * n, sizeof(double));
    if (f->masses) ok = ok && grow_array((void **)&f->masses, old_n, n, sizeof(double));
    for (size_t j = 0; ok && j < f->nextra; j++) {
        size_t w = (size_t)f->extra[j].ncols;
        ok = grow_array((void **)&f->extra[j].tokens, w * old_n, w * n, sizeof(char *));
    }
    if (!ok)
        return mdf_error_set(r->err, MDF_ERR_NOMEM, "%s:%ld: no memory for atom %lld of frame %zu (%lld "
                             "announced on line %ld)", r->name, r->lineno, (long long)f->natoms + 1,
                             h->frame_no, (long long)h->natoms, h->count_line);
    f->natoms = cap;
    return MDF_OK;
}

static mdf_status read_atoms(reader *r, const header *h, mdf_frame *f)
{
    char **tok = malloc(((size_t)h->ncols + 1) * sizeof *tok);
    if (!tok) return mdf_error_set(r->err, MDF_ERR_NOMEM, "%s: no memory", r->name);
    atom_ctx a = {r, h, f, 0};
    mdf_status st = MDF_OK;
    for (a.atom = 0; a.atom < h->natoms && st == MDF_OK; a.atom++) {
        int got;
        if ((st = read_line(r, &got))) break;
        if (!got)
            st = mdf_error_set(r->err, MDF_ERR_PARSE,
                               "%s:%ld: frame %zu announces %lld atoms (line %ld) but the file "
                               "ends after %lld of them: fix the count or add the missing atom "
                               "lines", r->name, r->lineno, h->frame_no, (long long)h->natoms,
                               h->count_line, (long long)a.atom);
        else if (is_blank(r->line))
            st = mdf_error_set(r->err, MDF_ERR_PARSE,
                               "%s:%ld: blank line where atom %lld of frame %zu should be; the "
                               "frame announces %lld atoms (line %ld): fix the count or remove "
                               "the blank line", r->name, r->lineno, (long long)a.atom + 1,
                               h->frame_no, (long long)h->natoms, h->count_line);
        else if (a.atom < f->natoms || (st = grow_frame(r, h, f)) == MDF_OK)
            st = parse_atom_line(&a, tok);
    }
    free(tok);
    return st;
}

/* Reads one frame whose atom-count line is in r->line. */
static mdf_status read_frame(reader *r, size_t frame_no, mdf_frame *f)
{
    header h;
    memset(&h, 0, sizeof h);
    h.frame_no = frame_no;
    kv_list kvs;
    memset(&kvs, 0, sizeof kvs);
    mdf_status st = parse_count(r, &h);
    int got = 0;
    if (!st) st = read_line(r, &got);
    if (!st && !got)
        st = mdf_error_set(r->err, MDF_ERR_PARSE,
                           "%s:%ld: frame %zu announces %lld atoms but the file ends after its "
                           "count line: a frame needs a comment line (may be empty) and one "
                           "line per atom", r->name, r->lineno, frame_no, (long long)h.natoms);
    if (!st) st = parse_comment(r, r->line, &kvs);
    if (!st) st = parse_header(r, &kvs, &h);
    if (!st) st = setup_frame(r, &h, &kvs, f);
    if (!st) st = read_atoms(r, &h, f);
    kv_list_free(&kvs);
    header_free(&h);
    return st;
}

mdf_status mdf_xyz_read_stream(FILE *fp, const char *name_for_errors, mdf_frame_list *out,
                               mdf_error *err)
{
    const char *name = name_for_errors ? name_for_errors : "<stream>";
    if (!fp || !out)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s: mdf_xyz_read_stream: NULL argument", name);
    reader r = {fp, name, NULL, 0, 0, err};
    mdf_status st = MDF_OK;
    for (size_t frame_no = 1;; frame_no++) {
        /* Blank lines between frames and at the end are allowed. */
        int got;
        do {
            st = read_line(&r, &got);
        } while (st == MDF_OK && got && is_blank(r.line));
        if (st || !got) break;
        mdf_frame f;
        memset(&f, 0, sizeof f);
        st = read_frame(&r, frame_no, &f);
        if (!st) st = mdf_frame_list_push(out, &f, err);
        if (st) {
            mdf_frame_free(&f);
            break;
        }
    }
    free(r.line);
    return st;
}

mdf_status mdf_xyz_read(const char *path, mdf_frame_list *out, mdf_error *err)
{
    if (!path || !out) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_xyz_read: NULL argument");
    FILE *fp = fopen(path, "r");
    if (!fp)
        return mdf_error_set(err, MDF_ERR_IO, "cannot open '%s' for reading: %s", path,
                             strerror(errno));
    mdf_status st = mdf_xyz_read_stream(fp, path, out, err);
    fclose(fp);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

/* Keys that the writer produces itself and so may not come from info. */
static int is_reserved_key(const char *key)
{
    return strcmp(key, "Lattice") == 0 || strcmp(key, "Properties") == 0 ||
           strcmp(key, "pbc") == 0 || strcmp(key, "energy") == 0 || strcmp(key, VELOCITIES_UNIT_KEY) == 0;
}

/* Column names the writer produces itself, or that readers interpret. */
static int is_reserved_column(const char *name)
{
    return find_known_prop(name) != NULL;
}

static int has_space(const char *s)
{
    for (; *s; s++)
        if (is_space(*s)) return 1;
    return 0;
}

static mdf_status validate_extra(const char *name, size_t fi, const mdf_frame *f,
                                 const mdf_extra_column *c, mdf_error *err)
{
    if (!c->name || !c->name[0] || has_space(c->name) || strpbrk(c->name, ":=\"'{}[]\\"))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "%s: frame %zu: extra column name '%s' is empty or holds spaces or "
                             "one of :=\"'{}[]\\; use letters, digits and '_'", name, fi + 1,
                             c->name ? c->name : "(null)");
    if (is_reserved_column(c->name))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "%s: frame %zu: extra column '%s' clashes with a column mdflow "
                             "writes or interprets; rename it", name, fi + 1, c->name);
    if (!c->type || !strchr("RISL", c->type) || c->ncols < 1)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "%s: frame %zu: extra column '%s' needs type R, I, S or L and at "
                             "least one column (has type '%c', %d columns)",
                             name, fi + 1, c->name, c->type ? c->type : '?', c->ncols);
    size_t n = (size_t)f->natoms * (size_t)c->ncols;
    if (n && !c->tokens)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s: frame %zu: extra column '%s' has no tokens",
                             name, fi + 1, c->name);
    for (size_t i = 0; i < n; i++) {
        const char *t = c->tokens[i];
        double d;
        int64_t v;
        int l;
        int ok = t && t[0] && !has_space(t);
        if (ok && c->type == 'R') ok = parse_double(t, &d);
        if (ok && c->type == 'I') ok = parse_int64(t, &v);
        if (ok && c->type == 'L') ok = parse_logical(t, &l);
        if (!ok)
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "%s: frame %zu: extra column '%s', atom %zu: token '%s' is "
                                 "empty, holds white space, or is not of type %c",
                                 name, fi + 1, c->name, i / (size_t)c->ncols + 1,
                                 t ? t : "(null)", c->type);
    }
    for (size_t j = 0; j < f->nextra; j++)
        if (&f->extra[j] != c && f->extra[j].name && strcmp(f->extra[j].name, c->name) == 0)
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "%s: frame %zu: two extra columns are named '%s'", name, fi + 1,
                                 c->name);
    return MDF_OK;
}

static mdf_status validate_frame(const char *name, size_t fi, const mdf_frame *f, mdf_error *err)
{
    if (f->natoms < 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "%s: frame %zu has a negative atom count (%lld)",
                             name, fi + 1, (long long)f->natoms);
    if (f->natoms > 0 && (!f->positions || !f->numbers))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "%s: frame %zu has %lld atoms but no positions or atomic numbers",
                             name, fi + 1, (long long)f->natoms);
    for (int64_t i = 0; i < f->natoms; i++)
        if (!mdf_element_symbol(f->numbers[i]))
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "%s: frame %zu: atom %lld has atomic number %d; it must be "
                                 "0 to 118", name, fi + 1, (long long)i + 1, (int)f->numbers[i]);
    for (size_t k = 0; k < f->ninfo; k++) {
        const mdf_info_entry *e = &f->info[k];
        if (!e->key || !e->key[0] || !e->value)
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "%s: frame %zu: info entry %zu has an empty key or no value",
                                 name, fi + 1, k + 1);
        if (is_reserved_key(e->key))
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "%s: frame %zu: info key '%s' is written from the frame itself "
                                 "(cell, pbc, energy, velocities unit, columns); rename or drop it",
                                 name, fi + 1, e->key);
        if (strpbrk(e->key, "\r\n") || strpbrk(e->value, "\r\n"))
            return mdf_error_set(err, MDF_ERR_INVALID,
                                 "%s: frame %zu: info key '%s' holds a line break, which the "
                                 "one-line extxyz header cannot carry", name, fi + 1, e->key);
    }
    for (size_t j = 0; j < f->nextra; j++) {
        mdf_status st = validate_extra(name, fi, f, &f->extra[j], err);
        if (st) return st;
    }
    return MDF_OK;
}

/* Appends s, quoted and escaped when the comment-line scanner would
 * otherwise split or reinterpret it. */
static void put_quoted(strbuf *b, const char *s)
{
    int quote = !s[0] || strpbrk(s, " \t\v\f=\"'{}[]\\") != NULL;
    if (!quote) {
        sb_puts(b, s);
        return;
    }
    sb_putc(b, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') sb_putc(b, '\\');
        sb_putc(b, *s);
    }
    sb_putc(b, '"');
}

static void put_real(strbuf *b, double x)
{
    char num[40];
    format_real(num, sizeof num, x);
    sb_puts(b, num);
}

static char *comment_line(const mdf_frame *f)
{
    strbuf b;
    sb_init(&b);
    if (f->has_cell) {
        sb_puts(&b, "Lattice=\"");
        for (int i = 0; i < 9; i++) {
            if (i) sb_putc(&b, ' ');
            put_real(&b, f->cell[i]);
        }
        sb_puts(&b, "\" ");
    }
    sb_puts(&b, "Properties=" DEFAULT_PROPERTIES);
    if (f->velocities) sb_puts(&b, ":velocities:R:3");
    if (f->forces) sb_puts(&b, ":forces:R:3");
    if (f->masses) sb_puts(&b, ":masses:R:1");
    for (size_t j = 0; j < f->nextra; j++) {
        char spec[32];
        snprintf(spec, sizeof spec, ":%c:%d", f->extra[j].type, f->extra[j].ncols);
        sb_putc(&b, ':');
        sb_puts(&b, f->extra[j].name);
        sb_puts(&b, spec);
    }
    if (f->has_energy) {
        sb_puts(&b, " energy=");
        put_real(&b, f->energy);
    }
    if (f->velocities) sb_puts(&b, " " VELOCITIES_UNIT_KEY "=" VELOCITIES_UNIT);
    for (size_t k = 0; k < f->ninfo; k++) {
        if (!f->info[k].value[0]) continue;
        sb_putc(&b, ' ');
        put_quoted(&b, f->info[k].key);
        sb_putc(&b, '=');
        put_quoted(&b, f->info[k].value);
    }
    sb_puts(&b, " pbc=\"");
    for (int i = 0; i < 3; i++) {
        if (i) sb_putc(&b, ' ');
        sb_putc(&b, f->pbc[i] ? 'T' : 'F');
    }
    sb_putc(&b, '"');
    /* Empty values go last: ASE 3.22 reads key="" correctly only at the end
     * of the line (before another pair it swallows that pair, e.g. pbc). */
    for (size_t k = 0; k < f->ninfo; k++) {
        if (f->info[k].value[0]) continue;
        sb_putc(&b, ' ');
        put_quoted(&b, f->info[k].key);
        sb_puts(&b, "=\"\"");
    }
    return sb_take(&b);
}

/* Appends n reals right-aligned in columns wide enough for most values. */
static void put_reals(strbuf *b, const double *v, int n)
{
    static const char spaces[] = "                      ";   /* 22 */
    char num[40];
    for (int i = 0; i < n; i++) {
        format_real(num, sizeof num, v[i]);
        size_t len = strlen(num);
        sb_putc(b, ' ');
        if (len < sizeof spaces - 1) sb_putn(b, spaces, sizeof spaces - 1 - len);
        sb_putn(b, num, len);
    }
}

static mdf_status write_error(const char *name, int errnum, mdf_error *err)
{
    return mdf_error_set(err, MDF_ERR_IO, "cannot write '%s': %s: free disk space (or raise the quota) or write it "
                         "to another path", name, strerror(errnum ? errnum : EIO));
}

/* Appends frame f's text to b (header line, comment line, one line per
 * atom); b->ok drops on a failed allocation. */
static void format_frame(strbuf *b, const mdf_frame *f)
{
    char head[32];
    snprintf(head, sizeof head, "%lld\n", (long long)f->natoms);
    sb_puts(b, head);
    char *comment = comment_line(f);
    if (!comment) {
        b->ok = 0;
        return;
    }
    sb_puts(b, comment);
    sb_putc(b, '\n');
    free(comment);
    for (int64_t a = 0; a < f->natoms && b->ok; a++) {
        size_t i = (size_t)a;
        const char *sym = mdf_element_symbol(f->numbers[i]);
        sb_puts(b, sym);
        if (!sym[1]) sb_putc(b, ' ');
        put_reals(b, &f->positions[3 * i], 3);
        if (f->velocities) put_reals(b, &f->velocities[3 * i], 3);
        if (f->forces) put_reals(b, &f->forces[3 * i], 3);
        if (f->masses) put_reals(b, &f->masses[i], 1);
        for (size_t j = 0; j < f->nextra; j++) {
            const mdf_extra_column *c = &f->extra[j];
            for (int k = 0; k < c->ncols; k++) {
                sb_putc(b, ' ');
                sb_puts(b, c->tokens[i * (size_t)c->ncols + (size_t)k]);
            }
        }
        sb_putc(b, '\n');
    }
}

static mdf_status validate_frames(const char *name, const mdf_frame *frames, size_t n,
                                  mdf_error *err)
{
    if (n && !frames) return mdf_error_set(err, MDF_ERR_INVALID, "%s: frames is NULL", name);
    for (size_t i = 0; i < n; i++) {
        mdf_status st = validate_frame(name, i, &frames[i], err);
        if (st) return st;
    }
    return MDF_OK;
}

/* Formatting numbers is most of a write, and it parallelises: rounds of
 * frames (about WRITE_ROUND_ATOMS atoms per thread, so memory stays
 * bounded) are formatted by up to WRITE_MAX_THREADS threads into buffers,
 * which are then written in order. Small writes stay on the caller's thread. */
#define WRITE_MAX_THREADS 8
#define WRITE_ROUND_ATOMS 65536
#define WRITE_PARALLEL_ATOMS 16384

typedef struct format_job {
    const mdf_frame *frames;
    size_t begin, end;
    strbuf out;
} format_job;

static void *format_range(void *arg)
{
    format_job *j = (format_job *)arg;
    for (size_t i = j->begin; i < j->end && j->out.ok; i++) format_frame(&j->out, &j->frames[i]);
    return NULL;
}

static int write_threads(const mdf_frame *frames, size_t n)
{
    int64_t atoms = 0;
    for (size_t i = 0; i < n; i++) atoms += frames[i].natoms;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (atoms < WRITE_PARALLEL_ATOMS || n < 2 || cpus < 2) return 1;
    return (int)(cpus < WRITE_MAX_THREADS ? cpus : WRITE_MAX_THREADS);
}

/* Formats frames [begin, end) into jobs of about equal atoms, in parallel. */
static void format_round(const mdf_frame *frames, size_t begin, size_t end, int64_t atoms, format_job *jobs,
                         int *njobs, int threads)
{
    int64_t per = atoms / threads + 1, acc = 0;
    int k = 0;
    jobs[0] = (format_job){.frames = frames, .begin = begin};
    sb_init(&jobs[0].out);
    for (size_t i = begin; i < end; i++) {
        acc += frames[i].natoms;
        if (acc >= per * (k + 1) && k + 1 < threads && i + 1 < end) {
            jobs[k].end = i + 1;
            k++;
            jobs[k] = (format_job){.frames = frames, .begin = i + 1};
            sb_init(&jobs[k].out);
        }
    }
    jobs[k].end = end;
    *njobs = k + 1;
    pthread_t tid[WRITE_MAX_THREADS];
    int started[WRITE_MAX_THREADS] = {0};
    for (int t = 1; t < *njobs; t++) started[t] = pthread_create(&tid[t], NULL, format_range, &jobs[t]) == 0;
    format_range(&jobs[0]);
    for (int t = 1; t < *njobs; t++) {
        if (started[t]) pthread_join(tid[t], NULL);
        else format_range(&jobs[t]); /* no thread: format here */
    }
}

/* Writes frames that validate_frames() accepted. */
static mdf_status write_frames(FILE *fp, const char *name, const mdf_frame *frames, size_t n,
                               mdf_error *err)
{
    int threads = write_threads(frames, n);
    mdf_status st = MDF_OK;
    for (size_t i = 0; i < n && st == MDF_OK;) {
        /* The next round: at least one frame. */
        size_t end = i;
        int64_t atoms = 0;
        while (end < n && (end == i || atoms + frames[end].natoms <= (int64_t)threads * WRITE_ROUND_ATOMS))
            atoms += frames[end++].natoms;
        format_job jobs[WRITE_MAX_THREADS];
        int njobs = 0;
        format_round(frames, i, end, atoms, jobs, &njobs, threads);
        for (int k = 0; k < njobs; k++) {
            const strbuf *o = &jobs[k].out;
            errno = 0;
            if (st == MDF_OK && !o->ok)
                st = mdf_error_set(err, MDF_ERR_NOMEM, "%s: no memory to format frames %zu-%zu", name,
                                   jobs[k].begin + 1, jobs[k].end);
            else if (st == MDF_OK && o->len && (fwrite(o->s, 1, o->len, fp) != o->len || ferror(fp)))
                st = write_error(name, errno, err); /* stop early on a full disk */
            sb_free(&jobs[k].out);
        }
        i = end;
    }
    if (st != MDF_OK) return st;
    errno = 0;
    if (fflush(fp) != 0 || ferror(fp)) return write_error(name, errno, err);
    return MDF_OK;
}

mdf_status mdf_xyz_write_stream(FILE *fp, const mdf_frame *frames, size_t n, mdf_error *err)
{
    if (!fp) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_xyz_write_stream: stream is NULL");
    /* Validate everything first, so invalid input writes nothing at all. */
    mdf_status st = validate_frames("<stream>", frames, n, err);
    return st ? st : write_frames(fp, "<stream>", frames, n, err);
}

/* Writes and closes fp, reporting the first failure under the name path. */
static mdf_status write_and_close(FILE *fp, const char *path, const mdf_frame *frames, size_t n,
                                  mdf_error *err)
{
    mdf_status st = write_frames(fp, path, frames, n, err);
    errno = 0;
    int rc = fclose(fp);   /* a full disk often shows up only here */
    if (st == MDF_OK && rc != 0) st = write_error(path, errno, err);
    return st;
}

mdf_status mdf_xyz_write(const char *path, const mdf_frame *frames, size_t n, int append,
                         mdf_error *err)
{
    if (!path) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_xyz_write: path is NULL");
    /* Validate before touching the file system. */
    mdf_status vst = validate_frames(path, frames, n, err);
    if (vst) return vst;
    if (append) {
        FILE *fp = fopen(path, "a");
        if (!fp)
            return mdf_error_set(err, MDF_ERR_IO,
                                 "cannot open '%s' for appending: %s: check that the directory "
                                 "exists and is writable", path, strerror(errno));
        return write_and_close(fp, path, frames, n, err);
    }
    size_t len = strlen(path);
    char *tmp = malloc(len + 5);
    if (!tmp) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to write '%s'", path);
    memcpy(tmp, path, len);
    memcpy(tmp + len, ".tmp", 5);
    mdf_status st = MDF_OK;
    FILE *fp = fopen(tmp, "w");
    if (!fp) {
        st = mdf_error_set(err, MDF_ERR_IO,
                           "cannot create '%s' (through the temporary file '%s'): %s: check "
                           "that the directory exists and is writable", path, tmp,
                           strerror(errno));
    } else {
        st = write_and_close(fp, path, frames, n, err);
        if (st == MDF_ERR_IO && err) { /* say what a failed write left */
            char cause[MDF_ERROR_MESSAGE_MAX];
            snprintf(cause, sizeof cause, "%s", err->message);
            err->message[0] = '\0';
            mdf_error_set(err, st, "%s (nothing was written to '%s': a file already there is unchanged)", cause,
                          path);
        }
        if (st == MDF_OK && rename(tmp, path) != 0)
            st = mdf_error_set(err, MDF_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path,
                               strerror(errno));
        if (st) remove(tmp);   /* never leave a half-written file behind */
    }
    free(tmp);
    return st;
}
