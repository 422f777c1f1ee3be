/* mdflow — LAMMPS data files (mdflow/lammps.h), and what the dump writer
 * shares with them (io/lammps_internal.h). */
#include "mdflow/lammps.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lammps_internal.h"
#include "mdflow/kernel/nlist.h" /* mdf_det3, mdf_inv3, mdf_vec_mat */

/* ---- shared by the writers ------------------------------------------------------------- */

static int cmp_type(int32_t za, double ma, int32_t zb, double mb)
{
    if (za != zb) return za < zb ? -1 : 1;
    return ma < mb ? -1 : ma > mb;
}

static double atom_mass(const mdf_frame *f, int64_t a)
{
    return f->masses ? f->masses[a] : mdf_element_mass(f->numbers[a]);
}

mdf_status mdf_lmp_types_of(const mdf_frame *frames, size_t n, mdf_lmp_types *t, mdf_error *err)
{
    memset(t, 0, sizeof *t);
    int cap = 0;
    for (size_t i = 0; i < n; i++)
        for (int64_t a = 0; a < frames[i].natoms; a++) {
            int32_t z = frames[i].numbers[a];
            double m = atom_mass(&frames[i], a);
            int k = 0;
            while (k < t->n && cmp_type(t->z[k], t->mass[k], z, m) < 0) k++;
            if (k < t->n && cmp_type(t->z[k], t->mass[k], z, m) == 0) continue;
            if (t->n == cap) {
                cap = cap ? 2 * cap : 8;
                int32_t *nz = realloc(t->z, (size_t)cap * sizeof *nz);
                if (nz) t->z = nz;
                double *nm = nz ? realloc(t->mass, (size_t)cap * sizeof *nm) : NULL;
                if (!nm) {
                    mdf_lmp_types_free(t);
                    return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the LAMMPS atom types");
                }
                t->mass = nm;
            }
            memmove(t->z + k + 1, t->z + k, (size_t)(t->n - k) * sizeof *t->z);
            memmove(t->mass + k + 1, t->mass + k, (size_t)(t->n - k) * sizeof *t->mass);
            t->z[k] = z;
            t->mass[k] = m;
            t->n++;
        }
    return MDF_OK;
}

int mdf_lmp_type_of(const mdf_lmp_types *t, const mdf_frame *f, int64_t a)
{
    double m = atom_mass(f, a);
    for (int k = 0; k < t->n; k++)
        if (cmp_type(t->z[k], t->mass[k], f->numbers[a], m) == 0) return k + 1;
    return 0; /* not reached: the types come from the same frames */
}

void mdf_lmp_types_free(mdf_lmp_types *t)
{
    free(t->z);
    free(t->mass);
    memset(t, 0, sizeof *t);
}

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static void matmul3(const double *a, const double *b, double *out)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) out[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
}

static int cell_is_zero(const double *c)
{
    for (int k = 0; k < 9; k++)
        if (c[k] != 0.0) return 0;
    return 1;
}

/* LAMMPS's lower-triangular cell with the lengths and angles of c. */
static void lammps_orientation(const double *c, double *l)
{
    double ax = sqrt(dot3(c, c)), bx = dot3(c + 3, c) / ax, cx = dot3(c + 6, c) / ax;
    double by = sqrt(dot3(c + 3, c + 3) - bx * bx);
    double cy = (dot3(c + 3, c + 6) - bx * cx) / by;
    double cz = sqrt(dot3(c + 6, c + 6) - cx * cx - cy * cy);
    const double r[9] = {ax, 0, 0, bx, by, 0, cx, cy, cz};
    memcpy(l, r, sizeof r);
}

/* Tilts within half a box length, by lattice vectors of periodic directions. */
static void reduce_tilts(mdf_lmp_box *b, const int *pbc)
{
    double lx = b->hi[0] - b->lo[0], ly = b->hi[1] - b->lo[1];
    if (pbc[1]) {
        double k = round(b->yz / ly);
        b->yz -= k * ly;
        b->xz -= k * b->xy;
    }
    if (pbc[0]) {
        b->xz -= round(b->xz / lx) * lx;
        b->xy -= round(b->xy / lx) * lx;
    }
}

static void extent_box(const mdf_frame *f, mdf_lmp_box *b)
{
    for (int d = 0; d < 3; d++) {
        b->lo[d] = f->natoms ? INFINITY : 0.0;
        b->hi[d] = f->natoms ? -INFINITY : 0.0;
        for (int64_t a = 0; a < f->natoms; a++) {
            b->lo[d] = fmin(b->lo[d], f->positions[3 * a + d]);
            b->hi[d] = fmax(b->hi[d], f->positions[3 * a + d]);
        }
        b->lo[d] -= 10.0;
        b->hi[d] += 10.0;
    }
}

/* How far along box direction d the point r (box orientation) lies from
 * the box's lower face, in Å along that axis (LAMMPS's lamda_d times L_d). */
static double offset_along(const mdf_lmp_box *b, const double r[3], int d)
{
    double lz = (r[2] - b->lo[2]) / (b->hi[2] - b->lo[2]);
    if (d == 2) return r[2] - b->lo[2];
    double ly = (r[1] - b->lo[1] - b->yz * lz) / (b->hi[1] - b->lo[1]);
    if (d == 1) return r[1] - b->lo[1] - b->yz * lz;
    return r[0] - b->lo[0] - b->xy * ly - b->xz * lz;
}

/* LAMMPS loses atoms outside the box along a non-periodic direction ("Did
 * not assign all atoms correctly"): such a direction is widened, with 1 Å
 * to spare, to hold every atom. z first, then y, then x, since the lower
 * directions' fractions depend on the higher ones through the tilts. A box
 * that holds its atoms is left as it is, so files round-trip exactly. */
static void fit_open_directions(const mdf_frame *f, mdf_lmp_box *b)
{
    for (int d = 2; d >= 0; d--) {
        if (f->pbc[d] || f->natoms == 0) continue;
        double len = b->hi[d] - b->lo[d], smin = INFINITY, smax = -INFINITY, r[3];
        for (int64_t a = 0; a < f->natoms; a++) {
            mdf_lmp_box_vec(b, f->positions + 3 * a, r);
            double s = offset_along(b, r, d);
            smin = fmin(smin, s);
            smax = fmax(smax, s);
        }
        if (smin >= 0.0 && smax < len) continue;
        double lo = b->lo[d];
        if (smin < 0.0) b->lo[d] = lo + smin - 1.0;
        if (smax >= len) b->hi[d] = lo + smax + 1.0;
    }
}

/* A cell vector of zero length along a non-periodic direction (ASE's slabs
 * without vacuum) becomes the unit normal of the other two, so the box has
 * a volume; fit_open_directions then gives it the atoms' extent. */
static void fill_open_vector(const double *c, const int *pbc, double *out)
{
    memcpy(out, c, 9 * sizeof *out);
    for (int d = 0; d < 3; d++) {
        const double *v = c + 3 * d, *p = c + 3 * ((d + 1) % 3), *q = c + 3 * ((d + 2) % 3);
        if (pbc[d] || v[0] != 0.0 || v[1] != 0.0 || v[2] != 0.0) continue;
        double n[3] = {p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0]};
        double len = sqrt(dot3(n, n));
        if (len == 0.0) return; /* two zero vectors: left to the flat-cell error */
        for (int k = 0; k < 3; k++) out[3 * d + k] = n[k] / len;
    }
}

mdf_status mdf_lmp_box_of(const mdf_frame *f, const char *name, size_t fi, mdf_lmp_box *b, mdf_error *err)
{
    memset(b, 0, sizeof *b);
    double filled[9];
    fill_open_vector(f->cell, f->pbc, filled);
    const double *c = filled;
    if (cell_is_zero(c)) {
        extent_box(f, b);
        return MDF_OK;
    }
    double det = mdf_det3(c);
    if (!(det > 0.0))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "%s: system %zu: the cell is %s; LAMMPS needs a right-handed cell (a·(b×c) > 0): "
                             "swap two cell vectors", name, fi + 1, det == 0.0 ? "flat (zero volume)" : "left-handed");
    double l[9];
    if (c[1] == 0.0 && c[2] == 0.0 && c[5] == 0.0 && c[0] > 0.0 && c[4] > 0.0 && c[8] > 0.0) {
        memcpy(l, c, sizeof l); /* already LAMMPS's form: nothing moves */
    } else {
        double inv[9];
        lammps_orientation(c, l);
        mdf_inv3(c, inv); /* det > 0 */
        matmul3(inv, l, b->m);
        b->rotated = 1;
    }
    for (int d = 0; d < 3; d++) b->hi[d] = l[4 * d];
    b->xy = l[3];
    b->xz = l[6];
    b->yz = l[7];
    reduce_tilts(b, f->pbc);
    fit_open_directions(f, b);
    b->triclinic = b->xy != 0.0 || b->xz != 0.0 || b->yz != 0.0;
    return MDF_OK;
}

void mdf_lmp_box_vec(const mdf_lmp_box *b, const double *in, double out[3])
{
    if (!b->rotated) {
        memcpy(out, in, 3 * sizeof *out);
        return;
    }
    mdf_vec_mat(in, b->m, out);
}

mdf_status mdf_lmp_write_file(const char *path, mdf_lmp_writer write, const void *ctx, mdf_error *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return mdf_error_set(err, MDF_ERR_INVALID, "the path '%s' is too long", path);
    FILE *fp = fopen(tmp, "w");
    if (!fp)
        return mdf_error_set(err, MDF_ERR_IO, "cannot create '%s' (through '%s'): %s: check that the directory "
                             "exists and is writable", path, tmp, strerror(errno));
    mdf_status st = write(fp, ctx, err);
    int bad = ferror(fp) != 0;
    errno = 0;
    if (fclose(fp) != 0) bad = 1;
    if (st == MDF_OK && bad)
        st = mdf_error_set(err, MDF_ERR_IO, "writing '%s' failed (%s); a file already there is unchanged", path,
                           strerror(errno ? errno : EIO));
    if (st == MDF_OK && rename(tmp, path) != 0)
        st = mdf_error_set(err, MDF_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
    if (st != MDF_OK) remove(tmp);
    return st;
}

const mdf_extra_column *mdf_lmp_charges(const mdf_frame *f)
{
    for (size_t j = 0; j < f->nextra; j++)
        if (f->extra[j].name && !strcmp(f->extra[j].name, "initial_charges") && f->extra[j].ncols == 1 &&
            f->extra[j].type == 'R')
            return &f->extra[j];
    return NULL;
}

/* ---- writing a data file -------------------------------------------------------------------- */

typedef struct data_writer {
    const char *path;
    const mdf_frame *f;
    mdf_lmp_types types;
    mdf_lmp_box box;
} data_writer;

static void write_box(FILE *fp, const mdf_lmp_box *b)
{
    static const char *const names[3] = {"xlo xhi", "ylo yhi", "zlo zhi"};
    for (int d = 0; d < 3; d++) fprintf(fp, "%.17g %.17g %s\n", b->lo[d], b->hi[d], names[d]);
    if (b->triclinic) fprintf(fp, "%.17g %.17g %.17g xy xz yz\n", b->xy, b->xz, b->yz);
}

static void write_title(FILE *fp, const mdf_frame *f, const mdf_lmp_box *b)
{
    const char *id = mdf_frame_get_info(f, "mdf_system_id"), *step = mdf_frame_get_info(f, "mdf_step");
    fprintf(fp, "LAMMPS data file written by mdflow");
    if (id) fprintf(fp, ", system %s", id);
    if (step) fprintf(fp, ", step %s", step);
    fprintf(fp, ", pbc=\"%c %c %c\"", f->pbc[0] ? 'T' : 'F', f->pbc[1] ? 'T' : 'F', f->pbc[2] ? 'T' : 'F');
    if (b->rotated) fprintf(fp, ", cell rotated into LAMMPS's orientation (a along x, b in the xy plane)");
    fprintf(fp, "\n\n");
}

static mdf_status write_data_body(FILE *fp, const void *ctx, mdf_error *err)
{
    (void)err;
    const data_writer *w = ctx;
    const mdf_frame *f = w->f;
    const mdf_extra_column *q = mdf_lmp_charges(f);
    write_title(fp, f, &w->box);
    fprintf(fp, "%lld atoms\n%d atom types\n\n", (long long)f->natoms, w->types.n);
    write_box(fp, &w->box);
    fprintf(fp, "\nMasses\n\n");
    for (int k = 0; k < w->types.n; k++)
        fprintf(fp, "%d %.17g # %s\n", k + 1, w->types.mass[k], mdf_element_symbol(w->types.z[k]));
    fprintf(fp, "\nAtoms # %s\n\n", q ? "charge" : "atomic");
    for (int64_t a = 0; a < f->natoms; a++) {
        double r[3];
        mdf_lmp_box_vec(&w->box, f->positions + 3 * a, r);
        fprintf(fp, "%lld %d ", (long long)a + 1, mdf_lmp_type_of(&w->types, f, a));
        if (q) fprintf(fp, "%.17g ", strtod(q->tokens[a], NULL));
        fprintf(fp, "%.17g %.17g %.17g\n", r[0], r[1], r[2]);
    }
    if (!f->velocities) return MDF_OK;
    fprintf(fp, "\nVelocities\n\n");
    for (int64_t a = 0; a < f->natoms; a++) {
        double v[3];
        mdf_lmp_box_vec(&w->box, f->velocities + 3 * a, v);
        fprintf(fp, "%lld %.17g %.17g %.17g\n", (long long)a + 1, v[0] * MDF_METAL_VELOCITY_PER_INTERNAL,
                v[1] * MDF_METAL_VELOCITY_PER_INTERNAL, v[2] * MDF_METAL_VELOCITY_PER_INTERNAL);
    }
    return MDF_OK;
}

mdf_status mdf_lammps_data_write(const char *path, const mdf_frame *f, mdf_error *err)
{
    if (!path || !f) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_lammps_data_write needs a path and a frame");
    data_writer w;
    memset(&w, 0, sizeof w);
    w.path = path;
    w.f = f;
    mdf_status st = mdf_lmp_box_of(f, path, 0, &w.box, err);
    if (st == MDF_OK) st = mdf_lmp_types_of(f, 1, &w.types, err);
    if (st == MDF_OK) st = mdf_lmp_write_file(path, write_data_body, &w, err);
    mdf_lmp_types_free(&w.types);
    return st;
}

/* ---- reading a data file --------------------------------------------------------------------- */

#define MAX_TOKENS 12

typedef struct data_atom {
    long long id;
    int type;
    int img[3];
    double q, r[3];
} data_atom;

typedef struct data_velocity {
    long long id;
    double v[3];
    long line;
} data_velocity;

typedef struct data_reader {
    const char *path;
    FILE *fp;
    char *line;          /* the current line, its comment cut off */
    const char *comment; /* what followed '#' on it, or NULL */
    size_t cap;
    long lineno;
    char *tok[MAX_TOKENS + 1];
    int ntok;            /* MAX_TOKENS + 1: too many */
    long long natoms;
    long ntypes;
    double lo[3], hi[3], tilt[3];
    int have_box[3];
    int pbc[3];
    double *mass;        /* [ntypes + 1], NaN until given */
    char (*symbol)[4];   /* [ntypes + 1]: the element after a mass ("# Cu"), or "" */
    long *mass_line;     /* [ntypes + 1] */
    int has_masses;
    data_atom *atoms;
    long long nread;
    data_velocity *vel;
    long long nvel;
    int style;           /* 0 not yet known, 1 atomic, 2 charge */
} data_reader;

__attribute__((format(printf, 3, 4))) static mdf_status fail_at(const data_reader *r, mdf_error *err,
                                                                 const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return mdf_error_set(err, MDF_ERR_PARSE, "%s:%ld: %s", r->path, r->lineno, what);
}

static void split_tokens(data_reader *r)
{
    r->ntok = 0;
    char *save = NULL;
    for (char *t = strtok_r(r->line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
        if (r->ntok == MAX_TOKENS + 1) break;
        r->tok[r->ntok++] = t;
    }
}

/* The next line, comment cut off and split; 0 at the end of the file. */
static int next_line(data_reader *r)
{
    if (getline(&r->line, &r->cap, r->fp) < 0) return 0;
    r->lineno++;
    char *hash = strchr(r->line, '#');
    r->comment = NULL;
    if (hash) {
        *hash = '\0';
        r->comment = hash + 1;
    }
    split_tokens(r);
    return 1;
}

static int parse_double(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return end != s && *end == '\0' && errno != ERANGE && isfinite(*v);
}

static int parse_ll(const char *s, long long *v)
{
    char *end;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return end != s && *end == '\0' && errno != ERANGE;
}

static int starts_number(const char *s)
{
    return isdigit((unsigned char)s[0]) || ((s[0] == '-' || s[0] == '+' || s[0] == '.') && s[1]);
}

/* ---- header --------------------------------------------------------------------------------- */

static int tok_is(const data_reader *r, int i, const char *word) { return i < r->ntok && !strcmp(r->tok[i], word); }

/* Header lines mdflow does not use: type counts of bonded styles ("2 bond
 * types", "1 extra bond per atom") are harmless. */
static int ignorable_header(const data_reader *r)
{
    return tok_is(r, r->ntok - 1, "types") || tok_is(r, r->ntok - 1, "atom");
}

/* Bonds, angles, …, ellipsoids or bodies: a file of another atom_style,
 * whose Atoms rows (id mol type x y z …) would be misread as atomic or
 * charge rows. Only a count of zero is accepted. */
static int bonded_header(const data_reader *r)
{
    static const char *const last[] = {"bonds", "angles", "dihedrals", "impropers",
                                       "ellipsoids", "lines", "triangles", "bodies", NULL};
    for (int k = 0; last[k]; k++)
        if (r->ntok == 2 && tok_is(r, 1, last[k])) return 1;
    return 0;
}

static mdf_status header_box(data_reader *r, mdf_error *err)
{
    int d = r->tok[2][0] - 'x';
    double lo, hi;
    if (!parse_double(r->tok[0], &lo) || !parse_double(r->tok[1], &hi) || !(hi > lo))
        return fail_at(r, err, "'%s %s %s %s' is not a box extent: write two numbers, low below high, then %s",
                       r->tok[0], r->tok[1], r->tok[2], r->tok[3], d == 0 ? "xlo xhi" : d == 1 ? "ylo yhi" : "zlo zhi");
    r->lo[d] = lo;
    r->hi[d] = hi;
    r->have_box[d] = 1;
    return MDF_OK;
}

static mdf_status header_line(data_reader *r, mdf_error *err)
{
    static const char *const box[3][2] = {{"xlo", "xhi"}, {"ylo", "yhi"}, {"zlo", "zhi"}};
    long long n;
    if (r->ntok == 2 && tok_is(r, 1, "atoms")) {
        if (!parse_ll(r->tok[0], &n) || n < 1) return fail_at(r, err, "'%s atoms': the count must be at least 1", r->tok[0]);
        r->natoms = n;
        return MDF_OK;
    }
    if (r->ntok == 3 && tok_is(r, 1, "atom") && tok_is(r, 2, "types")) {
        if (!parse_ll(r->tok[0], &n) || n < 1 || n > 100000)
            return fail_at(r, err, "'%s atom types': the count must be between 1 and 100000", r->tok[0]);
        r->ntypes = (long)n;
        return MDF_OK;
    }
    for (int d = 0; d < 3; d++)
        if (r->ntok == 4 && tok_is(r, 2, box[d][0]) && tok_is(r, 3, box[d][1])) return header_box(r, err);
    if (r->ntok == 6 && tok_is(r, 3, "xy") && tok_is(r, 4, "xz") && tok_is(r, 5, "yz")) {
        for (int k = 0; k < 3; k++)
            if (!parse_double(r->tok[k], &r->tilt[k]))
                return fail_at(r, err, "'%s' is not a number: the tilt line is 'XY XZ YZ xy xz yz'", r->tok[k]);
        return MDF_OK;
    }
    if (bonded_header(r) && parse_ll(r->tok[0], &n)) {
        if (n == 0) return MDF_OK;
        return fail_at(r, err, "'%s %s': mdflow reads atom_style atomic and charge data files, which have no %s; "
                       "write the file with one of those styles (LAMMPS: atom_style atomic, then write_data)",
                       r->tok[0], r->tok[1], r->tok[1]);
    }
    if (ignorable_header(r) && parse_ll(r->tok[0], &n)) return MDF_OK;
    return fail_at(r, err, "'%s' is not a header line of a LAMMPS data file (N atoms, N atom types, "
                   "XLO XHI xlo xhi, …, XY XZ YZ xy xz yz) nor a section name (Masses, Atoms, Velocities, …)",
                   r->tok[0]);
}

/* pbc="T T F" in the title (mdflow's writer puts it there); else T T T. */
static void title_pbc(data_reader *r)
{
    for (int d = 0; d < 3; d++) r->pbc[d] = 1;
    const char *p = strstr(r->line, "pbc=\"");
    if (!p) return;
    p += 5;
    for (int d = 0; d < 3; d++) {
        if (p[0] != 'T' && p[0] != 'F') return;
        r->pbc[d] = p[0] == 'T';
        if (d < 2 && p[1] != ' ') return; /* "T T F": never step past the string's end */
        p += 2;
    }
}

static mdf_status read_header(data_reader *r, mdf_error *err)
{
    if (getline(&r->line, &r->cap, r->fp) < 0)
        return mdf_error_set(err, MDF_ERR_PARSE, "%s is empty: a LAMMPS data file starts with a title line", r->path);
    r->lineno = 1;
    title_pbc(r);
    mdf_status st = MDF_OK;
    while (st == MDF_OK && next_line(r)) {
        if (r->ntok == 0) continue;
        if (!starts_number(r->tok[0])) return MDF_OK; /* the first section */
        st = header_line(r, err);
    }
    if (st == MDF_OK) r->ntok = 0;
    return st;
}

static mdf_status check_header(data_reader *r, mdf_error *err)
{
    static const char *const names[3] = {"xlo xhi", "ylo yhi", "zlo zhi"};
    if (r->ntok == 0) return fail_at(r, err, "the file ends before its Atoms section");
    if (!r->natoms) return fail_at(r, err, "the header does not say how many atoms there are: add 'N atoms' before the sections");
    if (!r->ntypes) return fail_at(r, err, "the header does not say how many atom types there are: add 'N atom types'");
    for (int d = 0; d < 3; d++)
        if (!r->have_box[d]) return fail_at(r, err, "the header has no '%s' line: add 'LO HI %s'", names[d], names[d]);
    r->mass = malloc((size_t)(r->ntypes + 1) * sizeof *r->mass);
    r->symbol = calloc((size_t)(r->ntypes + 1), sizeof *r->symbol);
    r->mass_line = calloc((size_t)(r->ntypes + 1), sizeof *r->mass_line);
    r->atoms = calloc((size_t)r->natoms, sizeof *r->atoms);
    if (!r->mass || !r->symbol || !r->mass_line || !r->atoms)
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to read %s (%lld atoms)", r->path, r->natoms);
    for (long t = 0; t <= r->ntypes; t++) r->mass[t] = NAN;
    return MDF_OK;
}

/* ---- sections ---------------------------------------------------------------------------------- */

static mdf_status type_of(const data_reader *r, const char *s, long long *t, mdf_error *err)
{
    if (!parse_ll(s, t) || *t < 1 || *t > r->ntypes)
        return fail_at(r, err, "atom type '%s' is not between 1 and %ld (the header's atom types)", s, r->ntypes);
    return MDF_OK;
}

static mdf_status mass_row(data_reader *r, mdf_error *err)
{
    long long t;
    double m;
    if (r->ntok != 2) return fail_at(r, err, "a Masses line is 'TYPE MASS' (optionally '# ELEMENT'), not %d fields", r->ntok);
    mdf_status st = type_of(r, r->tok[0], &t, err);
    if (st != MDF_OK) return st;
    if (!parse_double(r->tok[1], &m) || !(m > 0.0))
        return fail_at(r, err, "mass '%s' of type %lld is not a positive number", r->tok[1], t);
    r->mass[t] = m;
    r->mass_line[t] = r->lineno;
    r->has_masses = 1;
    char sym[4] = ""; /* element symbols have at most 3 letters */
    if (r->comment && sscanf(r->comment, " %3s", sym) == 1 && mdf_element_number(sym) > 0)
        snprintf(r->symbol[t], sizeof r->symbol[t], "%s", sym);
    return MDF_OK;
}

/* The atom style from the Atoms line's comment ("Atoms # charge"). */
static mdf_status atoms_style(data_reader *r, mdf_error *err)
{
    char style[32] = "";
    if (!r->comment || sscanf(r->comment, " %31s", style) != 1) return MDF_OK;
    if (!strcmp(style, "atomic")) r->style = 1;
    else if (!strcmp(style, "charge")) r->style = 2;
    else
        return fail_at(r, err, "atom_style %s is not supported: mdflow reads atom_style atomic and charge "
                       "(write the file with one of them)", style);
    return MDF_OK;
}

static mdf_status atom_row(data_reader *r, mdf_error *err)
{
    if (r->nread == r->natoms)
        return fail_at(r, err, "more atoms than the header's %lld: fix the 'N atoms' line", r->natoms);
    int n = r->ntok;
    int style = n == 5 || n == 8 ? 1 : n == 6 || n == 9 ? 2 : 0;
    if (!style || (r->style && style != r->style))
        return fail_at(r, err, "an Atoms line of atom_style %s is 'ID TYPE %sX Y Z' with optional image flags "
                       "'IX IY IZ', not %d fields", r->style == 2 ? "charge" : r->style == 1 ? "atomic" : "atomic or charge",
                       r->style == 2 ? "Q " : "", n);
    r->style = style;
    data_atom *a = &r->atoms[r->nread];
    long long t;
    if (!parse_ll(r->tok[0], &a->id) || a->id < 1)
        return fail_at(r, err, "atom id '%s' is not a positive integer", r->tok[0]);
    mdf_status st = type_of(r, r->tok[1], &t, err);
    if (st != MDF_OK) return st;
    a->type = (int)t;
    int at = style == 2 ? 3 : 2; /* first coordinate */
    if (style == 2 && !parse_double(r->tok[2], &a->q)) return fail_at(r, err, "charge '%s' is not a number", r->tok[2]);
    for (int d = 0; d < 3; d++)
        if (!parse_double(r->tok[at + d], &a->r[d]))
            return fail_at(r, err, "coordinate '%s' of atom %lld is not a number", r->tok[at + d], a->id);
    for (int d = 0; n == at + 6 && d < 3; d++) {
        long long img;
        if (!parse_ll(r->tok[at + 3 + d], &img) || img < -1000000 || img > 1000000)
            return fail_at(r, err, "image flag '%s' of atom %lld is not an integer", r->tok[at + 3 + d], a->id);
        a->img[d] = (int)img;
    }
    r->nread++;
    return MDF_OK;
}

static mdf_status velocity_row(data_reader *r, mdf_error *err)
{
    if (r->ntok != 4) return fail_at(r, err, "a Velocities line is 'ID VX VY VZ', not %d fields", r->ntok);
    if (r->nvel == r->natoms) return fail_at(r, err, "more velocities than the header's %lld atoms", r->natoms);
    if (!r->vel && !(r->vel = calloc((size_t)r->natoms, sizeof *r->vel)))
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the velocities of %s", r->path);
    data_velocity *v = &r->vel[r->nvel];
    if (!parse_ll(r->tok[0], &v->id)) return fail_at(r, err, "atom id '%s' is not an integer", r->tok[0]);
    for (int d = 0; d < 3; d++)
        if (!parse_double(r->tok[1 + d], &v->v[d]))
            return fail_at(r, err, "velocity '%s' of atom %lld is not a number", r->tok[1 + d], v->id);
    v->line = r->lineno;
    r->nvel++;
    return MDF_OK;
}

typedef mdf_status (*row_fn)(data_reader *r, mdf_error *err);

/* The rows of the current section, up to the next section name (left in
 * r->tok) or the end of the file (r->ntok = 0). row NULL skips them. */
static mdf_status read_rows(data_reader *r, row_fn row, mdf_error *err)
{
    while (next_line(r)) {
        if (r->ntok == 0) continue;
        if (!starts_number(r->tok[0])) return MDF_OK;
        mdf_status st = row ? row(r, err) : MDF_OK;
        if (st != MDF_OK) return st;
    }
    r->ntok = 0;
    return MDF_OK;
}

static mdf_status read_sections(data_reader *r, mdf_error *err)
{
    mdf_status st = MDF_OK;
    while (st == MDF_OK && r->ntok > 0) {
        row_fn row = NULL;
        if (r->ntok == 1 && tok_is(r, 0, "Masses")) row = mass_row;
        else if (r->ntok == 1 && tok_is(r, 0, "Atoms")) {
            row = atom_row;
            st = atoms_style(r, err);
        } else if (r->ntok == 1 && tok_is(r, 0, "Velocities")) row = velocity_row;
        if (st == MDF_OK) st = read_rows(r, row, err);
    }
    return st;
}

/* ---- the frame ------------------------------------------------------------------------------------ */

static int by_id(const void *a, const void *b)
{
    long long x = ((const data_atom *)a)->id, y = ((const data_atom *)b)->id;
    return (x > y) - (x < y);
}

static int nearest_element(double mass)
{
    int best = -1;
    double dbest = 0.01;
    for (int z = 1; z <= 118; z++) {
        double m = mdf_element_mass(z);
        if (m > 0.0 && fabs(m - mass) <= dbest) {
            best = z;
            dbest = fabs(m - mass);
        }
    }
    return best;
}

static mdf_status element_of_type(const data_reader *r, long t, const int32_t *type_z, int ntype_z, int32_t *z,
                                  mdf_error *err)
{
    if (type_z && t <= ntype_z) {
        *z = type_z[t - 1];
        return MDF_OK;
    }
    if (r->symbol[t][0]) {
        *z = mdf_element_number(r->symbol[t]);
        return MDF_OK;
    }
    char why[160];
    if (!isnan(r->mass[t])) {
        int e = nearest_element(r->mass[t]);
        if (e > 0) {
            *z = e;
            return MDF_OK;
        }
        snprintf(why, sizeof why, "its mass %g (line %ld) is not within 0.01 amu of a standard element mass",
                 r->mass[t], r->mass_line[t]);
    } else snprintf(why, sizeof why, "%s", r->has_masses ? "the Masses section does not list it" : "the file has no Masses section");
    return mdf_error_set(err, MDF_ERR_PARSE,
                         "%s: atom type %ld cannot be mapped to an element: %s; name the elements of the types in "
                         "order (mdflow's --lammps-types Cu,Ni) or put each type's element after its mass in the "
                         "Masses section ('1 63.546 # Cu')", r->path, t, why);
}

static mdf_status check_atoms(data_reader *r, mdf_error *err)
{
    if (r->nread != r->natoms)
        return mdf_error_set(err, MDF_ERR_PARSE, "%s: the header says %lld atoms but the Atoms section %s %lld",
                             r->path, r->natoms, r->nread ? "lists" : "is missing: it lists", r->nread);
    qsort(r->atoms, (size_t)r->natoms, sizeof *r->atoms, by_id);
    for (long long i = 1; i < r->natoms; i++)
        if (r->atoms[i].id == r->atoms[i - 1].id)
            return mdf_error_set(err, MDF_ERR_PARSE, "%s: atom id %lld appears twice in the Atoms section", r->path,
                                 r->atoms[i].id);
    return MDF_OK;
}

static mdf_status set_velocities(const data_reader *r, mdf_frame *f, mdf_error *err)
{
    if (r->nvel != r->natoms)
        return mdf_error_set(err, MDF_ERR_PARSE, "%s: the Velocities section lists %lld of the %lld atoms: give every "
                             "atom a velocity, or drop the section", r->path, r->nvel, r->natoms);
    unsigned char *seen = calloc((size_t)r->natoms, 1);
    if (!seen) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the velocities of %s", r->path);
    mdf_status st = MDF_OK;
    for (long long k = 0; st == MDF_OK && k < r->nvel; k++) {
        const data_velocity *v = &r->vel[k];
        data_atom key = {.id = v->id};
        const data_atom *a = bsearch(&key, r->atoms, (size_t)r->natoms, sizeof *r->atoms, by_id);
        if (!a)
            st = mdf_error_set(err, MDF_ERR_PARSE, "%s:%ld: velocity of atom %lld, which the Atoms section does not list",
                               r->path, v->line, v->id);
        else if (seen[a - r->atoms]++) /* a repeat leaves another atom without one */
            st = mdf_error_set(err, MDF_ERR_PARSE, "%s:%ld: the velocity of atom %lld is given twice: give each atom "
                               "one line", r->path, v->line, v->id);
        for (int d = 0; st == MDF_OK && d < 3; d++)
            f->velocities[3 * (a - r->atoms) + d] = v->v[d] / MDF_METAL_VELOCITY_PER_INTERNAL;
    }
    free(seen);
    return st;
}

static mdf_status set_charges(const data_reader *r, mdf_frame *f, mdf_error *err)
{
    f->extra = calloc(1, sizeof *f->extra);
    if (!f->extra) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the charges of %s", r->path);
    f->nextra = 1;
    mdf_extra_column *c = &f->extra[0];
    c->type = 'R';
    c->ncols = 1;
    c->name = strdup("initial_charges");
    c->tokens = calloc((size_t)r->natoms, sizeof *c->tokens);
    for (long long i = 0; c->name && c->tokens && i < r->natoms; i++) {
        char text[32];
        snprintf(text, sizeof text, "%.17g", r->atoms[i].q);
        if (!(c->tokens[i] = strdup(text))) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for charges");
    }
    if (!c->name || !c->tokens) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the charges of %s", r->path);
    return MDF_OK;
}

static void set_cell(const data_reader *r, mdf_frame *f)
{
    const double c[9] = {r->hi[0] - r->lo[0], 0, 0, r->tilt[0], r->hi[1] - r->lo[1], 0,
                         r->tilt[1], r->tilt[2], r->hi[2] - r->lo[2]};
    memcpy(f->cell, c, sizeof c);
    f->has_cell = 1;
    for (int d = 0; d < 3; d++) f->pbc[d] = r->pbc[d];
}

static mdf_status build_frame(const data_reader *r, const int32_t *type_z, int ntype_z, mdf_frame *f, mdf_error *err)
{
    mdf_status st = mdf_frame_alloc(f, r->natoms, r->nvel > 0, 0, r->has_masses, err);
    if (st != MDF_OK) return st;
    set_cell(r, f);
    for (long long i = 0; st == MDF_OK && i < r->natoms; i++) {
        const data_atom *a = &r->atoms[i];
        st = element_of_type(r, a->type, type_z, ntype_z, &f->numbers[i], err);
        if (f->masses) f->masses[i] = isnan(r->mass[a->type]) ? mdf_element_mass(f->numbers[i]) : r->mass[a->type];
        for (int d = 0; d < 3; d++)
            f->positions[3 * i + d] = a->r[d] + a->img[0] * f->cell[d] + a->img[1] * f->cell[3 + d] +
                                      a->img[2] * f->cell[6 + d];
    }
    if (st == MDF_OK && r->nvel) st = set_velocities(r, f, err);
    if (st == MDF_OK && r->style == 2) st = set_charges(r, f, err);
    return st;
}

static void reader_free(data_reader *r)
{
    if (r->fp) fclose(r->fp);
    free(r->line);
    free(r->mass);
    free(r->symbol);
    free(r->mass_line);
    free(r->atoms);
    free(r->vel);
}

mdf_status mdf_lammps_data_read(const char *path, const int32_t *type_z, int ntype_z, mdf_frame_list *out,
                                mdf_error *err)
{
    if (!path || !out) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_lammps_data_read needs a path and a list");
    data_reader r;
    memset(&r, 0, sizeof r);
    r.path = path;
    r.fp = fopen(path, "r");
    if (!r.fp) return mdf_error_set(err, MDF_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    mdf_status st = read_header(&r, err);
    if (st == MDF_OK) st = check_header(&r, err);
    if (st == MDF_OK) st = read_sections(&r, err);
    if (st == MDF_OK) st = check_atoms(&r, err);
    mdf_frame f;
    memset(&f, 0, sizeof f);
    if (st == MDF_OK) st = build_frame(&r, type_z, ntype_z, &f, err);
    if (st == MDF_OK) st = mdf_frame_list_push(out, &f, err);
    mdf_frame_free(&f);
    reader_free(&r);
    return st;
}
