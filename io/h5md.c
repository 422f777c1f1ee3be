/* mdflow — H5MD 1.0 trajectories (layout, units and durability policy:
 * docs/hdf5.md).
 *
 * One particle group per system ("particles/system_<id>") with position,
 * velocity and force (time-dependent elements sharing one step and one time
 * dataset through hard links), box (edges time-dependent when the system
 * has a cell), species and mass; observables potential_energy and
 * kinetic_energy (under /observables in a file of one system, under
 * /mdflow/observables/system_<id> in a shared file, where MDAnalysis would
 * trip on them). particles/trajectory links to a file's first system, the
 * group MDAnalysis reads. /mdflow/write_order records every frame in write order
 * (global frame index, system id, status): what mdf_h5md_length, _truncate
 * and _read_frame use. A path holding "{id}" writes one file per system.
 *
 * Files are written in SWMR mode. HDF5 1.10 cannot create groups under SWMR
 * writing, so a new system in a shared file closes the file, reopens it for
 * plain writing, creates the system's groups, and switches to SWMR writing
 * again. Every append ends with a flush. */
#define _GNU_SOURCE
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5io.h"
#include "h5_internal.h"
#include "mdflow/units.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define MAX_OPEN_FILES 16

/* /mdflow's "version": 2 since shared files keep their observables under
 * /mdflow/observables (1: under /observables/system_<id>) */
#define MDF_H5MD_LAYOUT 2

/* value datasets of a system, in write order (position last) */
enum { V_STEP, V_TIME, V_PE, V_KE, V_EDGES, V_VEL, V_FRC, V_POS, NV };

typedef struct h5file {
    char *path;
    hid_t fid;        /* -1: closed */
    hid_t order;      /* /mdflow/write_order */
    int64_t nrows;    /* rows of write_order */
    int64_t last_use;
    int64_t need;     /* bytes an append will write here (its reservation) */
} h5file;

typedef struct h5sys {
    int64_t id;
    int64_t natoms;
    int has_cell;
    int pbc[3];
    int64_t nframes;
    h5file *file;
    hid_t d[NV];      /* -1: not open */
    hid_t species, mass;
} h5sys;

struct mdf_h5md_writer {
    char *path;
    int split;
    mdf_h5_options opt;
    h5file *single;
    h5sys *sys;        /* sorted by id */
    size_t nsys, capsys;
    int64_t *order_id, *order_k; /* frame i: system id, frame index in that system */
    int64_t norder, caporder;
    int64_t clock;
};

static const char *const value_paths[NV] = {"position/step",       "position/time",       NULL, NULL,
                                            "box/edges/value",     "velocity/value",      "force/value",
                                            "position/value"};

/* ---- small helpers ------------------------------------------------------------------- */

static char *subst_id(const char *pattern, int64_t id)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)id);
    size_t n = 0;
    for (const char *p = pattern; *p;) {
        if (strncmp(p, "{id}", 4) == 0) {
            n += strlen(num);
            p += 4;
        } else {
            n++;
            p++;
        }
    }
    char *out = malloc(n + 1), *q = out;
    if (!out) return NULL;
    for (const char *p = pattern; *p;) {
        if (strncmp(p, "{id}", 4) == 0) {
            q += sprintf(q, "%s", num);
            p += 4;
        } else {
            *q++ = *p++;
        }
    }
    *q = '\0';
    return out;
}

/* Does name match pattern, with every {id} the same integer? */
static int match_id(const char *pattern, const char *name, int64_t *id)
{
    int have = 0;
    *id = 0;
    while (*pattern) {
        if (strncmp(pattern, "{id}", 4) == 0) {
            char *end;
            long long v = strtoll(name, &end, 10);
            if (end == name) return 0;
            if (have && v != *id) return 0;
            *id = v;
            have = 1;
            name = end;
            pattern += 4;
        } else if (*pattern++ != *name++) {
            return 0;
        }
    }
    return *name == '\0' && have;
}

/* Observables: flat under /observables in a file of one system. A file of
 * many systems keeps them under /mdflow/observables/system_<id>: MDAnalysis
 * reads observables/<name>/value for every name in /observables, so a
 * subgroup per system there made it fail on every shared file. */
static void obs_path(const mdf_h5md_writer *w, int64_t id, const char *what, char *buf, size_t n)
{
    if (w->split) snprintf(buf, n, "observables/%s", what);
    else snprintf(buf, n, "mdflow/observables/system_%lld/%s", (long long)id, what);
}

static void value_path(const mdf_h5md_writer *w, const h5sys *s, int v, char *buf, size_t n)
{
    if (v == V_PE || v == V_KE) {
        char o[256];
        obs_path(w, s->id, v == V_PE ? "potential_energy" : "kinetic_energy", o, sizeof o);
        snprintf(buf, n, "%s/value", o);
    } else {
        snprintf(buf, n, "particles/system_%lld/%s", (long long)s->id, value_paths[v]);
    }
}

static h5sys *find_sys(mdf_h5md_writer *w, int64_t id)
{
    size_t lo = 0, hi = w->nsys;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w->sys[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < w->nsys && w->sys[lo].id == id ? &w->sys[lo] : NULL;
}

static h5sys *insert_sys(mdf_h5md_writer *w, int64_t id)
{
    if (w->nsys == w->capsys) {
        size_t c = w->capsys ? 2 * w->capsys : 16;
        h5sys *n = realloc(w->sys, c * sizeof *n);
        if (!n) return NULL;
        w->sys = n;
        w->capsys = c;
    }
    size_t lo = 0;
    while (lo < w->nsys && w->sys[lo].id < id) lo++;
    memmove(&w->sys[lo + 1], &w->sys[lo], (w->nsys - lo) * sizeof *w->sys);
    w->nsys++;
    h5sys *s = &w->sys[lo];
    memset(s, 0, sizeof *s);
    s->id = id;
    for (int v = 0; v < NV; v++) s->d[v] = -1;
    s->species = s->mass = -1;
    return s;
}

static int push_order(mdf_h5md_writer *w, int64_t id, int64_t k)
{
    if (w->norder == w->caporder) {
        int64_t c = w->caporder ? 2 * w->caporder : 64;
        int64_t *a = realloc(w->order_id, (size_t)c * sizeof *a);
        if (!a) return -1;
        w->order_id = a;
        int64_t *b = realloc(w->order_k, (size_t)c * sizeof *b);
        if (!b) return -1;
        w->order_k = b;
        w->caporder = c;
    }
    w->order_id[w->norder] = id;
    w->order_k[w->norder] = k;
    w->norder++;
    return 0;
}

static void sys_close(h5sys *s)
{
    for (int v = 0; v < NV; v++)
        if (s->d[v] >= 0) {
            H5Dclose(s->d[v]);
            s->d[v] = -1;
        }
    if (s->species >= 0) H5Dclose(s->species);
    if (s->mass >= 0) H5Dclose(s->mass);
    s->species = s->mass = -1;
}

static void file_close(mdf_h5md_writer *w, h5file *f)
{
    if (!f || f->fid < 0) return;
    for (size_t i = 0; i < w->nsys; i++)
        if (w->sys[i].file == f) sys_close(&w->sys[i]);
    if (f->order >= 0) H5Dclose(f->order);
    f->order = -1;
    H5Fflush(f->fid, H5F_SCOPE_LOCAL);
    H5Fclose(f->fid);
    f->fid = -1;
}

static h5file *new_file(const char *path)
{
    h5file *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->path = strdup(path);
    if (!f->path) {
        free(f);
        return NULL;
    }
    f->fid = f->order = -1;
    return f;
}

/* In split mode, at most MAX_OPEN_FILES files stay open: closes the one
 * used least recently. */
static void limit_open_files(mdf_h5md_writer *w)
{
    if (!w->split) return;
    int open = 0;
    h5file *lru = NULL;
    for (size_t i = 0; i < w->nsys; i++) {
        h5file *f = w->sys[i].file;
        if (f && f->fid >= 0) {
            open++;
            if (!lru || f->last_use < lru->last_use) lru = f;
        }
    }
    if (open >= MAX_OPEN_FILES && lru) file_close(w, lru);
}

/* The /mdflow group's "version" attribute (0: none). */
static int layout_version(hid_t fid)
{
    int v = 0;
    hid_t a = H5Aopen_by_name(fid, "mdflow", "version", H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Aread(a, H5T_NATIVE_INT, &v) < 0) v = 0;
    if (a >= 0) H5Aclose(a);
    H5Eclear2(H5E_DEFAULT);
    return v;
}

/* Per-system files ({id}) kept layout 1 unchanged: only shared files moved
 * their observables, so only those refuse an older layout. */
static mdf_status open_order(const mdf_h5md_writer *w, h5file *f, mdf_error *err)
{
    if (H5Lexists(f->fid, "mdflow", H5P_DEFAULT) <= 0 ||
        H5Lexists(f->fid, "mdflow/write_order", H5P_DEFAULT) <= 0 || H5Lexists(f->fid, "h5md", H5P_DEFAULT) <= 0)
        return mdf_error_set(err, MDF_ERR_PARSE,
                             "HDF5 file '%s' has no /h5md group or no /mdflow/write_order dataset: it is not an "
                             "H5MD file written by mdflow (give another path, or write a new file without append)",
                             f->path);
    int version = layout_version(f->fid);
    if (version != MDF_H5MD_LAYOUT && !(w->split && version == 1))
        return mdf_error_set(err, MDF_ERR_PARSE,
                             "H5MD file '%s' has mdflow's layout version %d, this mdflow writes version %d (shared "
                             "files moved their observables to /mdflow/observables): write a new file without "
                             "append", f->path, version, MDF_H5MD_LAYOUT);
    f->order = H5Dopen2(f->fid, "mdflow/write_order", H5P_DEFAULT);
    if (f->order < 0) return mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot open /mdflow/write_order", f->path);
    return MDF_OK;
}

/* Reopens a closed file for SWMR writing. */
static mdf_status file_reopen(mdf_h5md_writer *w, h5file *f, mdf_error *err)
{
    if (f->fid >= 0) {
        f->last_use = ++w->clock;
        return MDF_OK;
    }
    limit_open_files(w);
    f->fid = mdf_h5_open_swmr_write(f->path);
    if (f->fid < 0) return mdf_h5_fail(err, MDF_ERR_IO, "cannot reopen the H5MD file '%s' for writing", f->path);
    f->last_use = ++w->clock;
    mdf_status st = open_order(w, f, err);
    if (st != MDF_OK) {
        H5Fclose(f->fid);
        f->fid = -1;
    }
    return st;
}

static hid_t create_group(hid_t loc, const char *name)
{
    if (H5Lexists(loc, name, H5P_DEFAULT) > 0) return H5Gopen2(loc, name, H5P_DEFAULT);
    return H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
}

/* /h5md (version, author, creator), /particles, /observables,
 * /mdflow/write_order in a new file. */
static int create_skeleton(const mdf_h5md_writer *w, hid_t fid)
{
    int ok = 1;
    hid_t g = H5Gcreate2(fid, "h5md", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int h5md_version[2] = {1, 0};
    ok = ok && g >= 0 && mdf_h5_attr_int(g, "version", h5md_version, 2) >= 0;
    hid_t a = g >= 0 ? H5Gcreate2(g, "author", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    const char *user = getenv("USER");
    ok = ok && a >= 0 && mdf_h5_attr_string(a, "name", user && *user ? user : "unknown") >= 0;
    if (a >= 0) H5Gclose(a);
    hid_t c = g >= 0 ? H5Gcreate2(g, "creator", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    ok = ok && c >= 0 && mdf_h5_attr_string(c, "name", "mdflow") >= 0 &&
         mdf_h5_attr_string(c, "version", PACKAGE_VERSION) >= 0;
    if (c >= 0) H5Gclose(c);
    if (g >= 0) H5Gclose(g);
    /* particles lists its groups in creation order: MDAnalysis reads the
     * first one it lists, which is then the first system written, the one
     * particles/trajectory links to */
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    ok = ok && gcpl >= 0 && H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) >= 0;
    hid_t p = ok ? H5Gcreate2(fid, "particles", H5P_DEFAULT, gcpl, H5P_DEFAULT) : -1;
    if (gcpl >= 0) H5Pclose(gcpl);
    hid_t m = H5Gcreate2(fid, "mdflow", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t o = w->split ? H5Gcreate2(fid, "observables", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                       : (m >= 0 ? H5Gcreate2(m, "observables", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1);
    ok = ok && p >= 0 && o >= 0 && m >= 0;
    int version = MDF_H5MD_LAYOUT;
    ok = ok && mdf_h5_attr_string(m, "format", "mdflow-h5md") >= 0 &&
         mdf_h5_attr_int(m, "version", &version, 1) >= 0;
    hsize_t tail[1] = {3};
    hid_t d = ok ? mdf_h5_create_ext(m, "write_order", H5T_STD_I64LE, 2, tail, 0, (hsize_t)w->opt.chunk_systems,
                                     0)
                 : -1;
    ok = ok && d >= 0 &&
         mdf_h5_attr_string(d, "columns", "global frame index (write order), system id, status") >= 0;
    if (d >= 0) H5Dclose(d);
    if (p >= 0) H5Gclose(p);
    if (o >= 0) H5Gclose(o);
    if (m >= 0) H5Gclose(m);
    return ok ? 0 : -1;
}

/* A time-dependent element: group `name` in loc with value (rank, tail)
 * and step/time hard links to the system's shared datasets. */
static int create_element(hid_t loc, const char *name, const char *step_path, const char *time_path, hid_t fid,
                          int rank, const hsize_t *tail, hsize_t chunk, int compression, const char *unit)
{
    hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return -1;
    int ok = 1;
    if (step_path) {
        ok = H5Lcreate_hard(fid, step_path, g, "step", H5P_DEFAULT, H5P_DEFAULT) >= 0 &&
             H5Lcreate_hard(fid, time_path, g, "time", H5P_DEFAULT, H5P_DEFAULT) >= 0;
    } else {
        hid_t s = mdf_h5_create_ext(g, "step", H5T_STD_I64LE, 1, NULL, 0, 256, 0);
        hid_t t = mdf_h5_create_ext(g, "time", H5T_IEEE_F64LE, 1, NULL, 0, 256, 0);
        ok = s >= 0 && t >= 0 && mdf_h5_attr_string(t, "unit", "fs") >= 0;
        if (s >= 0) H5Dclose(s);
        if (t >= 0) H5Dclose(t);
    }
    hid_t v = ok ? mdf_h5_create_ext(g, "value", H5T_IEEE_F64LE, rank, tail, 0, chunk, compression) : -1;
    ok = ok && v >= 0 && (!unit || mdf_h5_attr_string(v, "unit", unit) >= 0);
    if (v >= 0) H5Dclose(v);
    H5Gclose(g);
    return ok ? 0 : -1;
}

static int cell_nonzero(const double *c)
{
    for (int i = 0; i < 9; i++)
        if (c[i] != 0.0) return 1;
    return 0;
}

/* Groups and datasets of system s (packed system j of snap) in file fid. */
static mdf_status create_system(mdf_h5md_writer *w, hid_t fid, h5sys *s, const mdf_snapshot *snap, int64_t j,
                                mdf_error *err)
{
    char gp[128], sp[160], tp[160];
    snprintf(gp, sizeof gp, "particles/system_%lld", (long long)s->id);
    int64_t a0 = snap->atom_ptr[j], n = s->natoms;
    hsize_t N = (hsize_t)n;
    hsize_t chunk = (hsize_t)(w->opt.chunk_atoms / (n > 0 ? n : 1));
    if (chunk < 1) chunk = 1;
    if (chunk > (hsize_t)w->opt.chunk_systems) chunk = (hsize_t)w->opt.chunk_systems;
    hid_t g = H5Gcreate2(fid, gp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int ok = g >= 0;
    hsize_t t3[2] = {N, 3}, t33[2] = {3, 3};
    snprintf(sp, sizeof sp, "%s/position/step", gp);
    snprintf(tp, sizeof tp, "%s/position/time", gp);
    ok = ok && create_element(g, "position", NULL, NULL, fid, 3, t3, chunk, w->opt.compression, "Angstrom") == 0;
    ok = ok && create_element(g, "velocity", sp, tp, fid, 3, t3, chunk, w->opt.compression, "Angstrom ps-1") == 0;
    ok = ok && create_element(g, "force", sp, tp, fid, 3, t3, chunk, w->opt.compression, "kJ mol-1 Angstrom-1") == 0;
    hid_t box = ok ? H5Gcreate2(g, "box", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    int three = 3;
    const char *bnd[3];
    for (int i = 0; i < 3; i++) bnd[i] = s->pbc[i] ? "periodic" : "none";
    ok = ok && box >= 0 && mdf_h5_attr_int(box, "dimension", &three, 1) >= 0 &&
         mdf_h5_attr_strings(box, "boundary", bnd, 3) >= 0;
    if (ok && s->has_cell)
        ok = create_element(box, "edges", sp, tp, fid, 3, t33, 256, 0, "Angstrom") == 0;
    if (box >= 0) H5Gclose(box);
    /* species and masses: fixed in time */
    if (ok) {
        hsize_t dn = N;
        hid_t space = H5Screate_simple(1, &dn, NULL);
        hid_t ds = H5Dcreate2(g, "species", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        hid_t dm = H5Dcreate2(g, "mass", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        double *m = malloc(sizeof(double) * (size_t)(n ? n : 1));
        ok = ds >= 0 && dm >= 0 && m;
        if (ok)
            for (int64_t i = 0; i < n; i++)
                m[i] = snap->masses ? snap->masses[a0 + i] : mdf_element_mass(snap->numbers[a0 + i]);
        ok = ok && (n == 0 || (H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, snap->numbers + a0) >= 0 &&
                               H5Dwrite(dm, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, m) >= 0));
        ok = ok && mdf_h5_attr_string(dm, "unit", "u") >= 0;
        free(m);
        if (ds >= 0) H5Dclose(ds);
        if (dm >= 0) H5Dclose(dm);
        H5Sclose(space);
    }
    if (g >= 0) H5Gclose(g);
    /* observables */
    char op[256];
    obs_path(w, s->id, "", op, sizeof op);
    op[strlen(op) - 1] = '\0'; /* the observables group of this system */
    hid_t og = ok ? create_group(fid, op) : -1;
    ok = ok && og >= 0;
    ok = ok && create_element(og, "potential_energy", sp, tp, fid, 1, NULL, 256, 0, "eV") == 0;
    ok = ok && create_element(og, "kinetic_energy", sp, tp, fid, 1, NULL, 256, 0, "eV") == 0;
    if (og >= 0) H5Gclose(og);
    /* readers that take particles/trajectory (MDAnalysis.Universe(path)
     * without a topology counts the atoms there) find the file's first
     * system there: its only one, or the first written to a shared file */
    if (ok && H5Lexists(fid, "particles/trajectory", H5P_DEFAULT) <= 0)
        ok = H5Lcreate_hard(fid, gp, fid, "particles/trajectory", H5P_DEFAULT, H5P_DEFAULT) >= 0;
    if (!ok)
        return mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot create the groups of system %lld (%s)",
                           s->file ? s->file->path : w->path, (long long)s->id, gp);
    return MDF_OK;
}

static mdf_status sys_open(mdf_h5md_writer *w, h5sys *s, mdf_error *err)
{
    mdf_status st = file_reopen(w, s->file, err);
    if (st != MDF_OK) return st;
    char p[320];
    for (int v = 0; v < NV; v++) {
        if (s->d[v] >= 0) continue;
        if (v == V_EDGES && !s->has_cell) continue;
        value_path(w, s, v, p, sizeof p);
        s->d[v] = H5Dopen2(s->file->fid, p, H5P_DEFAULT);
        if (s->d[v] < 0)
            return mdf_h5_fail(err, MDF_ERR_PARSE, "H5MD file '%s': cannot open the dataset /%s (file damaged? write "
                               "a new file without append)", s->file->path, p);
    }
    return MDF_OK;
}

/* ---- opening ------------------------------------------------------------------------- */

static mdf_status create_file(mdf_h5md_writer *w, h5file *f, int swmr, mdf_error *err)
{
    char why[512];
    const char *p = mdf_h5_path_problem(f->path, 1, why, sizeof why);
    if (p) return mdf_error_set(err, MDF_ERR_IO, "cannot create the H5MD file '%s': %s", f->path, p);
    hid_t fapl = mdf_h5_fapl(), fcpl = mdf_h5_fcpl();
    f->fid = H5Fcreate(f->path, H5F_ACC_TRUNC, fcpl, fapl);
    H5Pclose(fapl);
    H5Pclose(fcpl);
    if (f->fid < 0)
        return mdf_h5_fail(err, MDF_ERR_IO,
                           "cannot create the H5MD file '%s' (is it open in another program? is the disk full?)",
                           f->path);
    f->last_use = ++w->clock;
    /* room for the skeleton before creating it (see mdf_h5_reserve) */
    int rr = mdf_h5_reserve(f->fid, f->path, (int64_t)1 << 18);
    if (rr)
        return mdf_error_set(err, MDF_ERR_IO, "cannot create the H5MD file '%s': %s: free disk space or write it "
                             "to another path", f->path, strerror(rr));
    if (create_skeleton(w, f->fid) < 0)
        return mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot create the /h5md, /particles, /observables and "
                           "/mdflow groups", f->path);
    f->order = H5Dopen2(f->fid, "mdflow/write_order", H5P_DEFAULT);
    f->nrows = 0;
    if (f->order < 0) return mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot open /mdflow/write_order", f->path);
    if (swmr && H5Fstart_swmr_write(f->fid) < 0)
        return mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot switch to SWMR writing", f->path);
    return MDF_OK;
}

typedef struct order_row {
    int64_t g, id, status;
} order_row;

static int cmp_row(const void *a, const void *b)
{
    const order_row *x = a, *y = b;
    return x->g < y->g ? -1 : x->g > y->g;
}

/* Systems of an open file (groups particles/system_<id>). */
static herr_t list_cb(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)g;
    (void)info;
    mdf_h5md_writer *w = ((void **)data)[0];
    h5file *f = ((void **)data)[1];
    long long id;
    char rest;
    if (sscanf(name, "system_%lld%c", &id, &rest) != 1) return 0;
    if (find_sys(w, id)) return 0;
    h5sys *s = insert_sys(w, id);
    if (!s) return -1;
    s->file = f;
    return 0;
}

/* Reads what an existing file holds: its systems and write order rows. */
static mdf_status scan_file(mdf_h5md_writer *w, h5file *f, order_row **rows, int64_t *nrows, int64_t *cap,
                            mdf_error *err)
{
    mdf_status st = open_order(w, f, err);
    if (st != MDF_OK) return st;
    void *data[2] = {w, f};
    hid_t pg = H5Gopen2(f->fid, "particles", H5P_DEFAULT);
    if (pg < 0 || H5Literate(pg, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, list_cb, data) < 0) {
        if (pg >= 0) H5Gclose(pg);
        return mdf_h5_fail(err, MDF_ERR_PARSE, "H5MD file '%s': cannot list /particles", f->path);
    }
    H5Gclose(pg);
    /* shapes and boundaries of this file's systems */
    for (size_t i = 0; i < w->nsys; i++) {
        h5sys *s = &w->sys[i];
        if (s->file != f) continue;
        char p[200];
        snprintf(p, sizeof p, "particles/system_%lld/species", (long long)s->id);
        hid_t d = H5Dopen2(f->fid, p, H5P_DEFAULT);
        if (d < 0) return mdf_h5_fail(err, MDF_ERR_PARSE, "H5MD file '%s': cannot open /%s", f->path, p);
        s->natoms = mdf_h5_rows(d);
        H5Dclose(d);
        snprintf(p, sizeof p, "particles/system_%lld/box/edges", (long long)s->id);
        s->has_cell = H5Lexists(f->fid, p, H5P_DEFAULT) > 0;
        snprintf(p, sizeof p, "particles/system_%lld/box", (long long)s->id);
        hid_t b = H5Gopen2(f->fid, p, H5P_DEFAULT);
        char bnd[3][32];
        if (b >= 0 && mdf_h5_attr_get_strings(b, "boundary", bnd, 3) == 0)
            for (int k = 0; k < 3; k++) s->pbc[k] = strcmp(bnd[k], "periodic") == 0;
        if (b >= 0) H5Gclose(b);
    }
    int64_t n = mdf_h5_rows(f->order);
    if (n < 0) return mdf_h5_fail(err, MDF_ERR_PARSE, "H5MD file '%s': cannot read /mdflow/write_order", f->path);
    if (*nrows + n > *cap) {
        int64_t c = (*nrows + n) * 2 + 16;
        order_row *r = realloc(*rows, (size_t)c * sizeof *r);
        if (!r) return mdf_error_set(err, MDF_ERR_NOMEM, "out of memory reading '%s'", f->path);
        *rows = r;
        *cap = c;
    }
    if (n > 0 && mdf_h5_read_rows(f->order, H5T_NATIVE_INT64, 0, n, *rows + *nrows) < 0)
        return mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot read /mdflow/write_order", f->path);
    *nrows += n;
    return MDF_OK;
}

/* Sets every dataset of s to s->nframes rows. */
static int sys_set_rows(mdf_h5md_writer *w, h5sys *s)
{
    if (s->file->fid < 0) return 0;
    int r = 0;
    for (int v = 0; v < NV; v++) {
        if (v == V_EDGES && !s->has_cell) continue;
        if (s->d[v] < 0) {
            char p[320];
            value_path(w, s, v, p, sizeof p);
            s->d[v] = H5Dopen2(s->file->fid, p, H5P_DEFAULT);
            if (s->d[v] < 0) {
                r = -1;
                continue;
            }
        }
        if (mdf_h5_rows(s->d[v]) != s->nframes && mdf_h5_set_rows(s->d[v], s->nframes) < 0) r = -1;
    }
    return r;
}

/* The glob(3) pattern of a {id} path: {id} becomes '*', and glob's own
 * special characters are escaped so that they match only themselves. */
static char *glob_pattern(const char *path)
{
    char *out = malloc(2 * strlen(path) + 1), *q = out;
    if (!out) return NULL;
    for (const char *p = path; *p;) {
        if (strncmp(p, "{id}", 4) == 0) {
            *q++ = '*';
            p += 4;
            continue;
        }
        if (strchr("*?[\\", *p)) *q++ = '\\';
        *q++ = *p++;
    }
    *q = '\0';
    return out;
}

/* The files a {id} pattern already has (*files: nfiles entries, NULL where
 * no memory was left; the caller frees the array). None is no error: an
 * append (a resumed run) may come before any system was written. */
static mdf_status existing_split_files(mdf_h5md_writer *w, h5file ***files, size_t *nfiles, mdf_error *err)
{
    char *gpat = glob_pattern(w->path);
    if (!gpat) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to list the H5MD files '%s'", w->path);
    glob_t gl;
    memset(&gl, 0, sizeof gl);
    int gr = glob(gpat, 0, NULL, &gl);
    free(gpat);
    mdf_status st = MDF_OK;
    if (gr == GLOB_NOSPACE)
        st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory to list the H5MD files '%s'", w->path);
    else if (gr != 0 && gr != GLOB_NOMATCH)
        st = mdf_error_set(err, MDF_ERR_IO, "cannot list the H5MD files '%s' to append to them: their folder cannot "
                           "be read (check that it exists and is readable)", w->path);
    size_t n = gr == 0 ? gl.gl_pathc : 0;
    if (st == MDF_OK && !(*files = calloc(n + 1, sizeof **files)))
        st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory to list the H5MD files '%s'", w->path);
    for (size_t i = 0; st == MDF_OK && i < n; i++) {
        int64_t id;
        if (match_id(w->path, gl.gl_pathv[i], &id)) (*files)[(*nfiles)++] = new_file(gl.gl_pathv[i]);
    }
    globfree(&gl);
    return st;
}

static mdf_status open_existing(mdf_h5md_writer *w, mdf_error *err)
{
    order_row *rows = NULL;
    int64_t nrows = 0, cap = 0;
    mdf_status st = MDF_OK;
    h5file **files = NULL;
    size_t nfiles = 0;
    if (w->split) {
        st = existing_split_files(w, &files, &nfiles, err);
        if (st != MDF_OK) return st;
    } else {
        files = calloc(1, sizeof *files);
        if (files) files[nfiles++] = w->single;
    }
    if (!files) return mdf_error_set(err, MDF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < nfiles && st == MDF_OK; i++) {
        h5file *f = files[i];
        if (!f) {
            st = mdf_error_set(err, MDF_ERR_NOMEM, "out of memory");
            break;
        }
        if (H5Fis_hdf5(f->path) <= 0) {
            H5Eclear2(H5E_DEFAULT);
            st = mdf_error_set(err, MDF_ERR_PARSE,
                               "cannot append to '%s': it is not an HDF5 file (give another path, or write a new "
                               "file without append)",
                               f->path);
            break;
        }
        f->fid = mdf_h5_open_swmr_write(f->path);
        if (f->fid < 0) {
            st = mdf_h5_fail(err, MDF_ERR_IO, "cannot open the H5MD file '%s' to append (is another program "
                             "writing it?)", f->path);
            break;
        }
        f->last_use = ++w->clock;
        st = scan_file(w, f, &rows, &nrows, &cap, err);
    }
    if (st == MDF_OK) {
        /* the complete prefix of the write order */
        if (nrows > 0) qsort(rows, (size_t)nrows, sizeof *rows, cmp_row); /* rows is NULL without files */
        int64_t n = 0;
        while (n < nrows && rows[n].g == n && find_sys(w, rows[n].id)) n++;
        for (int64_t i = 0; i < n && st == MDF_OK; i++) {
            h5sys *s = find_sys(w, rows[i].id);
            if (push_order(w, s->id, s->nframes) < 0) st = mdf_error_set(err, MDF_ERR_NOMEM, "out of memory");
            s->nframes++;
        }
        /* drop what a killed append left beyond it */
        for (size_t i = 0; i < w->nsys && st == MDF_OK; i++)
            if (sys_set_rows(w, &w->sys[i]) < 0)
                st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot drop the frames of an incomplete "
                                 "append of system %lld", w->sys[i].file->path, (long long)w->sys[i].id);
        for (size_t i = 0; i < nfiles && st == MDF_OK; i++) {
            h5file *f = files[i];
            f->nrows = 0;
            for (int64_t k = 0; k < n; k++) {
                h5sys *s = find_sys(w, rows[k].id);
                if (s->file == f) f->nrows++;
            }
            if (mdf_h5_set_rows(f->order, f->nrows) < 0 || H5Fflush(f->fid, H5F_SCOPE_LOCAL) < 0)
                st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot drop an incomplete append", f->path);
        }
    }
    if (w->split) {
        /* files are owned by their systems; a file without systems is closed */
        for (size_t i = 0; i < nfiles; i++) {
            int used = 0;
            for (size_t k = 0; files[i] && k < w->nsys; k++) used |= w->sys[k].file == files[i];
            if (files[i] && !used) {
                file_close(w, files[i]);
                free(files[i]->path);
                free(files[i]);
            }
        }
        for (size_t i = 0; i < w->nsys; i++) limit_open_files(w);
    }
    free(files);
    free(rows);
    return st;
}

static void free_writer(mdf_h5md_writer *w)
{
    if (!w) return;
    if (w->split) {
        for (size_t i = 0; i < w->nsys; i++) {
            h5file *f = w->sys[i].file;
            if (!f) continue;
            file_close(w, f);
            for (size_t k = i + 1; k < w->nsys; k++)
                if (w->sys[k].file == f) w->sys[k].file = NULL;
            free(f->path);
            free(f);
            w->sys[i].file = NULL;
        }
    } else if (w->single) {
        file_close(w, w->single);
        free(w->single->path);
        free(w->single);
    }
    free(w->sys);
    free(w->order_id);
    free(w->order_k);
    free(w->path);
    free(w);
}

mdf_status mdf_h5md_open(const char *path, const mdf_h5_options *o, mdf_h5md_writer **out, mdf_error *err)
{
    if (!path || !out) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_h5md_open: path and out are required");
    *out = NULL;
    mdf_h5md_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return mdf_error_set(err, MDF_ERR_NOMEM, "out of memory opening '%s'", path);
    }
    if (o) w->opt = *o;
    else mdf_h5_options_init(&w->opt);
    if (w->opt.chunk_systems <= 0) w->opt.chunk_systems = 256;
    if (w->opt.chunk_atoms <= 0) w->opt.chunk_atoms = 16384;
    w->split = strstr(path, "{id}") != NULL;
    mdf_status st = MDF_OK;
    mdf_h5_lock();
    if (w->split) {
        /* files are created when their system first appears; check the folder now */
        char *probe = subst_id(path, 0), why[512];
        const char *p = probe ? mdf_h5_path_problem(probe, 1, why, sizeof why) : NULL;
        if (p && strstr(p, "folder")) st = mdf_error_set(err, MDF_ERR_IO, "cannot write the H5MD files '%s': %s", path, p);
        free(probe);
        if (st == MDF_OK && w->opt.append) st = open_existing(w, err);
    } else {
        w->single = new_file(path);
        struct stat sb;
        if (!w->single) st = mdf_error_set(err, MDF_ERR_NOMEM, "out of memory");
        else if (w->opt.append && stat(path, &sb) == 0) st = open_existing(w, err);
        else if ((st = create_file(w, w->single, 1, err)) != MDF_OK && w->single->fid >= 0) {
            file_close(w, w->single);
            unlink(path); /* created here, it holds nothing: no unreadable stub left behind */
        }
    }
    if (st != MDF_OK) free_writer(w);
    else *out = w;
    mdf_h5_unlock();
    return st;
}

int64_t mdf_h5md_length(const mdf_h5md_writer *w)
{
    return w ? w->norder : 0;
}

/* ---- appending ---------------------------------------------------------------------- */

/* Disk space for the groups and datasets of n new systems (snapshot rows
 * rows[0..n)) before any is created, as appends reserve theirs (see
 * mdf_h5_reserve): a full disk in the middle of creating them left HDF5
 * unable to flush or close the file. A system's groups take about 15 KiB. */
static mdf_status reserve_systems(h5file *f, const mdf_snapshot *snap, const int64_t *rows, int64_t n,
                                  mdf_error *err)
{
    int64_t need = (int64_t)1 << 18;
    for (int64_t i = 0; i < n; i++) need += (64 << 10) + 12 * (snap->atom_ptr[rows[i] + 1] - snap->atom_ptr[rows[i]]);
    int rr = mdf_h5_reserve(f->fid, f->path, need);
    if (!rr) return MDF_OK;
    return mdf_error_set(err, MDF_ERR_IO, "H5MD file '%s': no room to add %lld new systems (%s); nothing was written: "
                         "free disk space (or raise the quota or file size limit), then run again or resume from "
                         "a checkpoint", f->path, (long long)n, strerror(rr));
}

/* Makes the systems of snap [first, first + count) known, creating their
 * groups (and, in split mode, files). */
static mdf_status ensure_systems(mdf_h5md_writer *w, const mdf_snapshot *snap, int64_t first, int64_t count,
                                 mdf_error *err)
{
    int64_t *fresh = NULL;
    int64_t nfresh = 0;
    mdf_status st = MDF_OK;
    for (int64_t j = first; j < first + count && st == MDF_OK; j++) {
        int64_t id = snap->id ? snap->id[j] : j;
        int64_t n = snap->atom_ptr[j + 1] - snap->atom_ptr[j];
        h5sys *s = find_sys(w, id);
        if (s) {
            if (s->natoms != n)
                st = mdf_error_set(err, MDF_ERR_INVALID,
                                   "H5MD file '%s': system %lld has %lld atoms but its particle group holds %lld "
                                   "(H5MD stores a fixed number of atoms per group)",
                                   s->file ? s->file->path : w->path, (long long)id, (long long)n,
                                   (long long)s->natoms);
            continue;
        }
        if (n <= 0) {
            st = mdf_error_set(err, MDF_ERR_INVALID, "H5MD file '%s': system %lld has no atoms", w->path,
                               (long long)id);
            break;
        }
        int64_t *nf = realloc(fresh, sizeof *nf * (size_t)(nfresh + 1));
        if (!nf) {
            st = mdf_error_set(err, MDF_ERR_NOMEM, "out of memory");
            break;
        }
        fresh = nf;
        fresh[nfresh++] = j;
        s = insert_sys(w, id);
        if (!s) {
            st = mdf_error_set(err, MDF_ERR_NOMEM, "out of memory");
            break;
        }
        s->natoms = n;
        s->has_cell = snap->cell ? cell_nonzero(snap->cell + 9 * j) : 0;
        for (int k = 0; k < 3; k++) s->pbc[k] = snap->pbc ? snap->pbc[3 * j + k] != 0 : 0;
        s->file = w->single;
    }
    if (st != MDF_OK || nfresh == 0) {
        free(fresh);
        return st;
    }
    if (w->split) {
        for (int64_t i = 0; i < nfresh && st == MDF_OK; i++) {
            int64_t j = fresh[i], id = snap->id ? snap->id[j] : j;
            h5sys *s = find_sys(w, id);
            char *p = subst_id(w->path, id);
            s->file = p ? new_file(p) : NULL;
            free(p);
            if (!s->file) {
                st = mdf_error_set(err, MDF_ERR_NOMEM, "out of memory");
                break;
            }
            limit_open_files(w);
            st = create_file(w, s->file, 0, err);
            if (st == MDF_OK) st = reserve_systems(s->file, snap, &fresh[i], 1, err);
            if (st == MDF_OK) st = create_system(w, s->file->fid, s, snap, j, err);
            if (st == MDF_OK && H5Fstart_swmr_write(s->file->fid) < 0)
                st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot switch to SWMR writing", s->file->path);
        }
    } else {
        /* groups cannot be created under SWMR writing (HDF5 1.10): close,
         * reopen for plain writing, create, flush, back to SWMR */
        h5file *f = w->single;
        file_close(w, f);
        hid_t fapl = mdf_h5_fapl();
        f->fid = H5Fopen(f->path, H5F_ACC_RDWR, fapl);
        H5Pclose(fapl);
        if (f->fid < 0) st = mdf_h5_fail(err, MDF_ERR_IO, "cannot reopen the H5MD file '%s' to add systems", f->path);
        if (st == MDF_OK) st = reserve_systems(f, snap, fresh, nfresh, err);
        for (int64_t i = 0; i < nfresh && st == MDF_OK; i++) {
            int64_t j = fresh[i], id = snap->id ? snap->id[j] : j;
            st = create_system(w, f->fid, find_sys(w, id), snap, j, err);
        }
        if (st == MDF_OK && H5Fflush(f->fid, H5F_SCOPE_LOCAL) < 0)
            st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot flush new systems", f->path);
        if (st == MDF_OK && H5Fstart_swmr_write(f->fid) < 0)
            st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot switch back to SWMR writing", f->path);
        if (st == MDF_OK) st = open_order(w, f, err);
        if (st != MDF_OK && f->fid >= 0) {
            /* leave the file closed; it reopens on the next call */
            file_close(w, f);
        }
    }
    if (st != MDF_OK) {
        /* forget the systems whose groups do not exist */
        for (int64_t i = 0; i < nfresh; i++) {
            int64_t j = fresh[i], id = snap->id ? snap->id[j] : j;
            h5sys *s = find_sys(w, id);
            if (!s) continue;
            if (w->split && s->file) {
                int made = s->file->fid >= 0; /* created by this call: it holds no frame */
                file_close(w, s->file);
                if (made) unlink(s->file->path);
                free(s->file->path);
                free(s->file);
            }
            size_t at = (size_t)(s - w->sys);
            memmove(s, s + 1, (w->nsys - at - 1) * sizeof *s);
            w->nsys--;
        }
    }
    free(fresh);
    return st;
}

mdf_status mdf_h5md_append(mdf_h5md_writer *w, const mdf_snapshot *snap, int64_t first, int64_t count,
                           mdf_error *err)
{
    if (!w || !snap) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_h5md_append: writer and snapshot are required");
    if (count <= 0) return MDF_OK;
    mdf_status chk =
        mdf_h5_check_append("H5MD", w->path, "frames", snap, first, count, w->norder, w->opt.max_systems, err);
    if (chk != MDF_OK) return chk;
    mdf_h5_lock();
    mdf_status st = ensure_systems(w, snap, first, count, err);
    int64_t norder0 = w->norder;
    /* disk space first, in every file this call writes (see mdf_h5_reserve):
     * per file, the sum over its systems of their frames and a fresh chunk of
     * each of their datasets (one reservation per system fell short when a
     * shared file got several systems' first chunks in one append) */
    for (int64_t j = first; j < first + count && st == MDF_OK; j++) {
        h5sys *s = find_sys(w, snap->id ? snap->id[j] : j);
        s->file->need = 1 << 18; /* metadata */
    }
    for (int64_t j = first; j < first + count && st == MDF_OK; j++) {
        h5sys *s = find_sys(w, snap->id ? snap->id[j] : j);
        int64_t frames_per_chunk = w->opt.chunk_atoms / s->natoms;
        if (frames_per_chunk < 1) frames_per_chunk = 1;
        if (frames_per_chunk > w->opt.chunk_systems) frames_per_chunk = w->opt.chunk_systems;
        s->file->need += s->natoms * 72 + 200 + frames_per_chunk * (s->natoms * 72 + 72) + 6 * 256 * 8;
    }
    for (int64_t j = first; j < first + count && st == MDF_OK; j++) {
        h5sys *s = find_sys(w, snap->id ? snap->id[j] : j);
        if (s->file->need == 0) continue; /* reserved already */
        st = file_reopen(w, s->file, err);
        if (st != MDF_OK) break;
        int rr = mdf_h5_reserve(s->file->fid, s->file->path, s->file->need);
        s->file->need = 0;
        if (rr)
            st = mdf_error_set(err, MDF_ERR_IO,
                               "H5MD file '%s': no room for frames %lld to %lld (%s); nothing was written, the file "
                               "keeps the %lld frames appended before: free disk space (or raise the quota or file "
                               "size limit), then run again or resume from a checkpoint",
                               s->file->path, (long long)norder0, (long long)(norder0 + count - 1), strerror(rr),
                               (long long)norder0);
    }
    /* frames of this call per system (a system may appear more than once) */
    int64_t *kk = calloc((size_t)count, sizeof *kk);
    double *buf = NULL;
    if (st == MDF_OK && !kk) st = mdf_error_set(err, MDF_ERR_NOMEM, "out of memory");
    for (int64_t j = first; j < first + count && st == MDF_OK; j++) {
        int64_t id = snap->id ? snap->id[j] : j;
        h5sys *s = find_sys(w, id);
        int64_t k = s->nframes;
        for (int64_t i = first; i < j; i++)
            if ((snap->id ? snap->id[i] : i) == id) k++;
        kk[j - first] = k;
        st = sys_open(w, s, err);
        if (st != MDF_OK) break;
        int64_t a0 = snap->atom_ptr[j], n = s->natoms;
        double *nb = realloc(buf, sizeof(double) * (size_t)(3 * n > 9 ? 3 * n : 9));
        if (!nb) {
            st = mdf_error_set(err, MDF_ERR_NOMEM, "out of memory");
            break;
        }
        buf = nb;
        const char *what = NULL;
        int64_t step = snap->step ? snap->step[j] : 0;
        double t = snap->time_fs ? snap->time_fs[j] : 0.0;
        double pe = snap->energy ? snap->energy[j] : NAN, ke = snap->kinetic ? snap->kinetic[j] : NAN;
        if (mdf_h5_write_rows(s->d[V_STEP], H5T_NATIVE_INT64, k, 1, &step) < 0) what = "position/step";
        else if (mdf_h5_write_rows(s->d[V_TIME], H5T_NATIVE_DOUBLE, k, 1, &t) < 0) what = "position/time";
        else if (mdf_h5_write_rows(s->d[V_PE], H5T_NATIVE_DOUBLE, k, 1, &pe) < 0) what = "potential_energy";
        else if (mdf_h5_write_rows(s->d[V_KE], H5T_NATIVE_DOUBLE, k, 1, &ke) < 0) what = "kinetic_energy";
        else if (s->has_cell && mdf_h5_write_rows(s->d[V_EDGES], H5T_NATIVE_DOUBLE, k, 1,
                                                  snap->cell ? snap->cell + 9 * j : memset(buf, 0, 9 * sizeof(double))) < 0)
            what = "box/edges";
        if (!what) {
            for (int64_t i = 0; i < 3 * n; i++) buf[i] = snap->velocities ? snap->velocities[3 * a0 + i] * (MDF_FS_INTERNAL * 1000.0) : 0.0;
            if (mdf_h5_write_rows(s->d[V_VEL], H5T_NATIVE_DOUBLE, k, 1, buf) < 0) what = "velocity";
        }
        if (!what) {
            for (int64_t i = 0; i < 3 * n; i++) buf[i] = snap->forces ? snap->forces[3 * a0 + i] * MDF_EV_IN_KJ_PER_MOL : 0.0;
            if (mdf_h5_write_rows(s->d[V_FRC], H5T_NATIVE_DOUBLE, k, 1, buf) < 0) what = "force";
        }
        if (!what && mdf_h5_write_rows(s->d[V_POS], H5T_NATIVE_DOUBLE, k, 1, snap->positions + 3 * a0) < 0)
            what = "position";
        if (what)
            st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot write %s of system %lld (frame %lld)",
                             s->file->path, what, (long long)id, (long long)k);
    }
    /* flush the data, then commit the frames in write_order, flush again */
    for (int pass = 0; pass < 2 && st == MDF_OK; pass++) {
        for (int64_t j = first; j < first + count && st == MDF_OK; j++) {
            int64_t id = snap->id ? snap->id[j] : j;
            h5sys *s = find_sys(w, id);
            h5file *f = s->file;
            if (pass == 1) {
                int64_t row[3] = {norder0 + (j - first), id, snap->status ? snap->status[j] : 0};
                if (mdf_h5_write_rows(f->order, H5T_NATIVE_INT64, f->nrows, 1, row) < 0) {
                    st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot write /mdflow/write_order", f->path);
                    break;
                }
                f->nrows++;
            }
            int last = 1; /* flush each file once, after its last system of the call */
            for (int64_t i = j + 1; i < first + count && last; i++)
                if (find_sys(w, snap->id ? snap->id[i] : i)->file == f) last = 0;
            if (last && H5Fflush(f->fid, H5F_SCOPE_LOCAL) < 0)
                st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot flush frames %lld to %lld", f->path,
                                 (long long)norder0, (long long)(norder0 + count - 1));
        }
    }
    if (st == MDF_OK) {
        for (int64_t j = first; j < first + count; j++) {
            int64_t id = snap->id ? snap->id[j] : j;
            h5sys *s = find_sys(w, id);
            if (push_order(w, id, kk[j - first]) < 0) {
                st = mdf_error_set(err, MDF_ERR_NOMEM, "out of memory");
                break;
            }
            s->nframes = kk[j - first] + 1;
        }
    } else if (kk) {
        /* back to the last complete append */
        for (int64_t j = first; j < first + count; j++) {
            h5sys *s = find_sys(w, snap->id ? snap->id[j] : j);
            if (!s || !s->file || s->file->fid < 0) continue;
            sys_set_rows(w, s);
            h5file *f = s->file;
            int64_t rows = 0;
            for (int64_t i = 0; i < norder0; i++) {
                h5sys *o = find_sys(w, w->order_id[i]);
                if (o && o->file == f) rows++;
            }
            f->nrows = rows;
            if (f->order >= 0) mdf_h5_set_rows(f->order, rows);
            H5Fflush(f->fid, H5F_SCOPE_LOCAL);
        }
        H5Eclear2(H5E_DEFAULT);
        mdf_h5_append_failed(st, err, (long long)norder0, "frames");
    }
    free(kk);
    free(buf);
    mdf_h5_unlock();
    return st;
}

mdf_status mdf_h5md_truncate(mdf_h5md_writer *w, int64_t nframes, mdf_error *err)
{
    if (!w) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_h5md_truncate: no writer");
    if (nframes < 0 || nframes > w->norder)
        return mdf_error_set(err, MDF_ERR_INVALID, "H5MD file '%s' holds %lld frames: cannot truncate it to %lld",
                             w->path, (long long)w->norder, (long long)nframes);
    if (nframes == w->norder) return MDF_OK;
    mdf_status st = MDF_OK;
    mdf_h5_lock();
    for (int64_t i = nframes; i < w->norder; i++) {
        h5sys *s = find_sys(w, w->order_id[i]);
        if (s->nframes > w->order_k[i]) s->nframes = w->order_k[i];
    }
    w->norder = nframes;
    for (size_t i = 0; i < w->nsys && st == MDF_OK; i++) {
        h5sys *s = &w->sys[i];
        st = sys_open(w, s, err);
        if (st == MDF_OK && sys_set_rows(w, s) < 0)
            st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot truncate system %lld to %lld frames",
                             s->file->path, (long long)s->id, (long long)s->nframes);
        if (st != MDF_OK) break;
        h5file *f = s->file;
        int64_t rows = 0;
        for (int64_t k = 0; k < nframes; k++)
            if (find_sys(w, w->order_id[k])->file == f) rows++;
        f->nrows = rows;
        if (mdf_h5_set_rows(f->order, rows) < 0 || H5Fflush(f->fid, H5F_SCOPE_LOCAL) < 0)
            st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot truncate /mdflow/write_order", f->path);
    }
    mdf_h5_unlock();
    return st;
}

/* ---- reading --------------------------------------------------------------------------- */

mdf_status mdf_h5md_read_frame(mdf_h5md_writer *w, int64_t i, mdf_frame *out, mdf_error *err)
{
    if (!w || !out) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_h5md_read_frame: writer and frame are required");
    if (i < 0 || i >= w->norder)
        return mdf_error_set(err, MDF_ERR_INVALID, "H5MD file '%s' holds %lld frames: there is no frame %lld", w->path,
                             (long long)w->norder, (long long)i);
    memset(out, 0, sizeof *out);
    mdf_h5_lock();
    h5sys *s = find_sys(w, w->order_id[i]);
    int64_t k = w->order_k[i];
    mdf_status st = sys_open(w, s, err);
    if (st == MDF_OK) st = mdf_frame_alloc(out, s->natoms, 1, 1, 1, err);
    const char *what = NULL;
    int64_t step = 0, row[3] = {0, 0, 0};
    if (st == MDF_OK) {
        char p[200];
        snprintf(p, sizeof p, "particles/system_%lld/species", (long long)s->id);
        hid_t ds = H5Dopen2(s->file->fid, p, H5P_DEFAULT);
        snprintf(p, sizeof p, "particles/system_%lld/mass", (long long)s->id);
        hid_t dm = H5Dopen2(s->file->fid, p, H5P_DEFAULT);
        int64_t orow = 0; /* row of write_order: frame i counted in its file */
        for (int64_t q = 0; q < i; q++)
            if (find_sys(w, w->order_id[q])->file == s->file) orow++;
        if (ds < 0 || H5Dread(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->numbers) < 0) what = "species";
        else if (dm < 0 || H5Dread(dm, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->masses) < 0) what = "mass";
        else if (mdf_h5_read_rows(s->d[V_POS], H5T_NATIVE_DOUBLE, k, 1, out->positions) < 0) what = "position";
        else if (mdf_h5_read_rows(s->d[V_VEL], H5T_NATIVE_DOUBLE, k, 1, out->velocities) < 0) what = "velocity";
        else if (mdf_h5_read_rows(s->d[V_FRC], H5T_NATIVE_DOUBLE, k, 1, out->forces) < 0) what = "force";
        else if (mdf_h5_read_rows(s->d[V_PE], H5T_NATIVE_DOUBLE, k, 1, &out->energy) < 0) what = "potential_energy";
        else if (mdf_h5_read_rows(s->d[V_STEP], H5T_NATIVE_INT64, k, 1, &step) < 0) what = "position/step";
        else if (s->has_cell && mdf_h5_read_rows(s->d[V_EDGES], H5T_NATIVE_DOUBLE, k, 1, out->cell) < 0) what = "box/edges";
        else if (mdf_h5_read_rows(s->file->order, H5T_NATIVE_INT64, orow, 1, row) < 0) what = "/mdflow/write_order";
        if (ds >= 0) H5Dclose(ds);
        if (dm >= 0) H5Dclose(dm);
        if (what)
            st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot read %s of system %lld (frame %lld)",
                             s->file->path, what, (long long)s->id, (long long)k);
    }
    if (st == MDF_OK) {
        for (int64_t a = 0; a < 3 * s->natoms; a++) {
            out->velocities[a] /= MDF_FS_INTERNAL * 1000.0;
            out->forces[a] /= MDF_EV_IN_KJ_PER_MOL;
        }
        out->has_cell = s->has_cell;
        for (int q = 0; q < 3; q++) out->pbc[q] = s->pbc[q];
        out->has_energy = isfinite(out->energy);
        if (!out->has_energy) out->energy = 0;
        char v[32];
        snprintf(v, sizeof v, "%lld", (long long)s->id);
        st = mdf_frame_set_info(out, "mdf_system_id", v, err);
        snprintf(v, sizeof v, "%lld", (long long)step);
        if (st == MDF_OK) st = mdf_frame_set_info(out, "mdf_step", v, err);
        snprintf(v, sizeof v, "%lld", (long long)row[2]);
        if (st == MDF_OK) st = mdf_frame_set_info(out, "mdf_status", v, err);
    }
    if (st != MDF_OK) mdf_frame_free(out);
    H5Eclear2(H5E_DEFAULT);
    mdf_h5_unlock();
    return st;
}

mdf_status mdf_h5md_close(mdf_h5md_writer *w, mdf_error *err)
{
    if (!w) return MDF_OK;
    mdf_status st = MDF_OK;
    mdf_h5_lock();
    /* flush every open file and report the first failure */
    for (size_t i = 0; i < w->nsys; i++) {
        h5file *f = w->sys[i].file;
        if (f && f->fid >= 0 && H5Fflush(f->fid, H5F_SCOPE_LOCAL) < 0 && st == MDF_OK)
            st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot flush on close (disk full?)", f->path);
    }
    if (w->single && w->single->fid >= 0 && H5Fflush(w->single->fid, H5F_SCOPE_LOCAL) < 0 && st == MDF_OK)
        st = mdf_h5_fail(err, MDF_ERR_IO, "H5MD file '%s': cannot flush on close (disk full?)", w->single->path);
    free_writer(w);
    H5Eclear2(H5E_DEFAULT);
    mdf_h5_unlock();
    return st;
}
