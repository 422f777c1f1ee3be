/* mdflow — CSR structure datasets in HDF5 (layout and durability policy:
 * docs/hdf5.md).
 *
 * /structures holds per-atom datasets (rows = atoms), per-system datasets
 * (rows = systems) and atom_ptr (nsys + 1 rows, the CSR pointer). Every
 * dataset is chunked with an unlimited first dimension. An append writes
 * the per-atom rows, then the per-system rows, flushes, then writes
 * atom_ptr and flushes again: atom_ptr is the commit record, and readers
 * take the number of systems from it and from the shortest per-system
 * dataset. Files are written in SWMR mode (libver latest), so that a
 * killed writer leaves a file that HDF5 can open. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5io.h"
#include "h5_internal.h"
#include "mdflow/units.h"

enum { K_ATOM, K_SYS, K_PTR };
enum { T_F64, T_I64, T_I32, T_I8 };

typedef struct dspec {
    const char *name;
    int kind, type, ncomp;
    const char *unit;
    int required; /* for reading foreign files */
} dspec;

/* atom_ptr last: it is written last on append. */
static const dspec specs[] = {
    {"positions", K_ATOM, T_F64, 3, "Angstrom", 1},
    {"velocities", K_ATOM, T_F64, 3, "Angstrom/fs", 0},
    {"forces", K_ATOM, T_F64, 3, "eV/Angstrom", 0},
    {"masses", K_ATOM, T_F64, 1, "amu", 0},
    {"numbers", K_ATOM, T_I32, 1, NULL, 1},
    {"cell", K_SYS, T_F64, 9, "Angstrom", 0},
    {"pbc", K_SYS, T_I8, 3, NULL, 0},
    {"energy", K_SYS, T_F64, 1, "eV", 0},
    {"kinetic_energy", K_SYS, T_F64, 1, "eV", 0},
    {"fmax", K_SYS, T_F64, 1, "eV/Angstrom", 0},
    {"virial", K_SYS, T_F64, 9, "eV", 0},
    {"stress", K_SYS, T_F64, 9, "eV/Angstrom^3", 0},
    {"system_id", K_SYS, T_I64, 1, NULL, 0},
    {"step", K_SYS, T_I64, 1, NULL, 0},
    {"status", K_SYS, T_I32, 1, NULL, 0},
    {"flags", K_SYS, T_I32, 1, NULL, 0},
    {"time", K_SYS, T_F64, 1, "fs", 0},
    {"atom_ptr", K_PTR, T_I64, 1, NULL, 1},
};
#define NSPEC ((int)(sizeof specs / sizeof specs[0]))
enum {
    D_POS, D_VEL, D_FRC, D_MASS, D_NUM, D_CELL, D_PBC, D_E, D_KE, D_FMAX, D_VIR, D_STRESS, D_ID, D_STEP,
    D_STATUS, D_FLAGS, D_TIME, D_PTR
};

#define UNITS_ATTR                                                                                       \
    "positions, cell: Angstrom; velocities: Angstrom/fs; forces, fmax: eV/Angstrom; masses: amu; "     \
    "energy, kinetic_energy, virial: eV; stress: eV/Angstrom^3; time: fs"

struct mdf_h5s_writer {
    char *path;
    hid_t file;
    hid_t d[NSPEC];
    mdf_h5_options opt;
    int64_t nsys, natoms;
    int writable;
};

static hid_t file_type(int t)
{
    switch (t) {
    case T_F64: return H5T_IEEE_F64LE;
    case T_I64: return H5T_STD_I64LE;
    case T_I32: return H5T_STD_I32LE;
    default: return H5T_STD_I8LE;
    }
}

/* memory type: doubles, int64, and int32 for both i32 and i8 */
static hid_t mem_type(int t)
{
    return t == T_F64 ? H5T_NATIVE_DOUBLE : t == T_I64 ? H5T_NATIVE_INT64 : H5T_NATIVE_INT32;
}

static size_t mem_size(int t)
{
    return t == T_F64 ? sizeof(double) : t == T_I64 ? sizeof(int64_t) : sizeof(int32_t);
}

static void tail_dims(const dspec *s, int *rank, hsize_t tail[2])
{
    if (s->ncomp == 9) {
        *rank = 3;
        tail[0] = tail[1] = 3;
    } else if (s->ncomp == 3) {
        *rank = 2;
        tail[0] = 3;
    } else {
        *rank = 1;
    }
}

static void close_all(mdf_h5s_writer *w)
{
    for (int k = 0; k < NSPEC; k++)
        if (w->d[k] >= 0) {
            H5Dclose(w->d[k]);
            w->d[k] = -1;
        }
    if (w->file >= 0) {
        H5Fclose(w->file);
        w->file = -1;
    }
}

static void free_writer(mdf_h5s_writer *w)
{
    if (!w) return;
    close_all(w);
    free(w->path);
    free(w);
}

static mdf_h5s_writer *new_writer(const char *path, const mdf_h5_options *o)
{
    mdf_h5s_writer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->path = strdup(path);
    if (!w->path) {
        free(w);
        return NULL;
    }
    w->file = -1;
    for (int k = 0; k < NSPEC; k++) w->d[k] = -1;
    if (o) w->opt = *o;
    else mdf_h5_options_init(&w->opt);
    if (w->opt.chunk_systems <= 0) w->opt.chunk_systems = 256;
    if (w->opt.chunk_atoms <= 0) w->opt.chunk_atoms = 16384;
    return w;
}

/* ---- creating and opening -------------------------------------------------------- */

static mdf_status create_file(mdf_h5s_writer *w, mdf_error *err)
{
    char why[512];
    const char *p = mdf_h5_path_problem(w->path, 1, why, sizeof why);
    if (p)
        return mdf_error_set(err, MDF_ERR_IO, "cannot create the HDF5 structure file '%s': %s", w->path, p);
    hid_t fapl = mdf_h5_fapl(), fcpl = mdf_h5_fcpl();
    w->file = H5Fcreate(w->path, H5F_ACC_TRUNC, fcpl, fapl);
    H5Pclose(fapl);
    H5Pclose(fcpl);
    if (w->file < 0)
        return mdf_h5_fail(err, MDF_ERR_IO,
                           "cannot create the HDF5 structure file '%s' (is it open in another program? "
                           "is the disk full?)",
                           w->path);
    /* room for the group and its datasets before creating them (see mdf_h5_reserve) */
    int rr = mdf_h5_reserve(w->file, w->path, (int64_t)1 << 18);
    if (rr)
        return mdf_error_set(err, MDF_ERR_IO, "cannot create the HDF5 structure file '%s': %s: free disk space or "
                             "write it to another path", w->path, strerror(rr));
    hid_t g = H5Gcreate2(w->file, "structures", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int one = 1;
    if (g < 0 || mdf_h5_attr_string(g, "format", "mdflow-structures") < 0 ||
        mdf_h5_attr_int(g, "version", &one, 1) < 0 || mdf_h5_attr_string(g, "units", UNITS_ATTR) < 0) {
        if (g >= 0) H5Gclose(g);
        return mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot create the group /structures", w->path);
    }
    for (int k = 0; k < NSPEC; k++) {
        const dspec *s = &specs[k];
        int rank;
        hsize_t tail[2];
        tail_dims(s, &rank, tail);
        hsize_t chunk = (hsize_t)(s->kind == K_ATOM ? w->opt.chunk_atoms : w->opt.chunk_systems);
        w->d[k] = mdf_h5_create_ext(g, s->name, file_type(s->type), rank, tail, 0, chunk, w->opt.compression);
        if (w->d[k] < 0 || (s->unit && mdf_h5_attr_string(w->d[k], "unit", s->unit) < 0)) {
            H5Gclose(g);
            return mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot create the dataset /structures/%s",
                               w->path, s->name);
        }
    }
    H5Gclose(g);
    int64_t zero = 0;
    if (mdf_h5_write_rows(w->d[D_PTR], H5T_NATIVE_INT64, 0, 1, &zero) < 0)
        return mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot write /structures/atom_ptr", w->path);
    if (H5Fstart_swmr_write(w->file) < 0)
        return mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot switch to SWMR writing", w->path);
    w->nsys = w->natoms = 0;
    return MDF_OK;
}

/* Opens the datasets of an open file and checks their shapes. */
static mdf_status open_datasets(mdf_h5s_writer *w, int need_all, mdf_error *err)
{
    if (H5Lexists(w->file, "structures", H5P_DEFAULT) <= 0)
        return mdf_error_set(err, MDF_ERR_PARSE,
                             "HDF5 file '%s' has no group /structures: it is not an mdflow structure file "
                             "(give another path, or write a new file without append)",
                             w->path);
    hid_t g = H5Gopen2(w->file, "structures", H5P_DEFAULT);
    if (g < 0) return mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot open /structures", w->path);
    char fmt[64];
    if (need_all && (mdf_h5_attr_get_string(g, "format", fmt, sizeof fmt) < 0 ||
                     strcmp(fmt, "mdflow-structures") != 0)) {
        H5Gclose(g);
        return mdf_error_set(err, MDF_ERR_PARSE,
                             "HDF5 file '%s': /structures has no attribute format = \"mdflow-structures\": "
                             "not an mdflow structure file (give another path, or write a new file without "
                             "append)",
                             w->path);
    }
    for (int k = 0; k < NSPEC; k++) {
        const dspec *s = &specs[k];
        if (H5Lexists(g, s->name, H5P_DEFAULT) <= 0) {
            if (need_all || s->required) {
                H5Gclose(g);
                return mdf_error_set(err, MDF_ERR_PARSE,
                                     "HDF5 file '%s': the dataset /structures/%s is missing%s", w->path, s->name,
                                     need_all ? " (the file is not a complete mdflow structure file; write "
                                                "a new one without append)"
                                              : "");
            }
            continue;
        }
        w->d[k] = H5Dopen2(g, s->name, H5P_DEFAULT);
        if (w->d[k] < 0) {
            H5Gclose(g);
            return mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot open the dataset /structures/%s",
                               w->path, s->name);
        }
        int rank;
        hsize_t tail[2], dims[4];
        tail_dims(s, &rank, tail);
        hid_t sp = H5Dget_space(w->d[k]);
        int r = H5Sget_simple_extent_ndims(sp);
        int ok = r == rank && r <= 4 && H5Sget_simple_extent_dims(sp, dims, NULL) >= 0;
        for (int i = 1; ok && i < rank; i++) ok = dims[i] == tail[i - 1];
        H5Sclose(sp);
        hid_t ft = H5Dget_type(w->d[k]);
        H5T_class_t cl = H5Tget_class(ft);
        H5Tclose(ft);
        if (ok) ok = s->type == T_F64 ? (cl == H5T_FLOAT || cl == H5T_INTEGER) : cl == H5T_INTEGER;
        if (!ok) {
            H5Gclose(g);
            return mdf_error_set(err, MDF_ERR_PARSE,
                                 "HDF5 file '%s': the dataset /structures/%s has the wrong shape or type "
                                 "(expected %s%s, %s)",
                                 w->path, s->name, s->kind == K_ATOM ? "atoms" : "systems",
                                 s->ncomp == 9 ? " x 3 x 3" : s->ncomp == 3 ? " x 3" : "",
                                 s->type == T_F64 ? "floating point" : "integers");
        }
    }
    H5Gclose(g);
    return MDF_OK;
}

/* Complete systems: from atom_ptr and the shortest per-system dataset; and
 * the atoms they own (checked against the per-atom datasets). */
/* What a file of `bytes` bytes can describe: deflate compresses at most
 * 1032:1, so no genuine file holds more than about 1,100 times its size.
 * Extents past that are declared, not stored (a damaged or hostile file):
 * memory must follow the bytes present, never a declared extent. */
static mdf_status check_claim(const mdf_h5s_writer *w, const char *what, int64_t count, int64_t row_bytes,
                              mdf_error *err)
{
    struct stat sb;
    double file = stat(w->path, &sb) == 0 ? (double)sb.st_size : 0.0;
    double can_hold = 1100.0 * file + 1048576.0;
    if ((double)count * (double)row_bytes <= can_hold) return MDF_OK;
    return mdf_error_set(err, MDF_ERR_PARSE,
                         "HDF5 file '%s': it declares %lld %s, more than its %.0f bytes can hold even compressed "
                         "(damaged, or not a file mdflow wrote)",
                         w->path, (long long)count, what, file);
}

static mdf_status find_length(mdf_h5s_writer *w, mdf_error *err)
{
    int64_t nptr = mdf_h5_rows(w->d[D_PTR]);
    if (nptr < 1) {
        /* a file killed before atom_ptr's first row reached the disk */
        w->nsys = w->natoms = 0;
        return MDF_OK;
    }
    mdf_status st = check_claim(w, "systems (rows of atom_ptr)", nptr, (int64_t)sizeof(int64_t), err);
    if (st != MDF_OK) return st;
    int64_t n = nptr - 1;
    for (int k = 0; k < NSPEC; k++)
        if (w->d[k] >= 0 && specs[k].kind == K_SYS) {
            int64_t r = mdf_h5_rows(w->d[k]);
            if (r < n) n = r;
        }
    int64_t amin = INT64_MAX;
    for (int k = 0; k < NSPEC; k++)
        if (w->d[k] >= 0 && specs[k].kind == K_ATOM) {
            int64_t r = mdf_h5_rows(w->d[k]);
            if (r < amin) amin = r;
        }
    int64_t *ptr = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!ptr) return mdf_error_set(err, MDF_ERR_NOMEM, "HDF5 file '%s': out of memory reading atom_ptr", w->path);
    if (mdf_h5_read_rows(w->d[D_PTR], H5T_NATIVE_INT64, 0, n + 1, ptr) < 0) {
        free(ptr);
        return mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot read /structures/atom_ptr", w->path);
    }
    if (ptr[0] != 0) {
        long long p0 = (long long)ptr[0];
        free(ptr);
        return mdf_error_set(err, MDF_ERR_PARSE, "HDF5 file '%s': /structures/atom_ptr[0] is %lld, not 0", w->path,
                             p0);
    }
    /* a decrease marks rows a killed append extended but never wrote (fill
     * value 0): the complete systems end there */
    for (int64_t i = 0; i < n; i++)
        if (ptr[i + 1] < ptr[i]) {
            n = i;
            break;
        }
    while (n > 0 && ptr[n] > amin) n--;
    w->nsys = n;
    w->natoms = ptr[n];
    free(ptr);
    /* positions, velocities, forces, mass and number of every atom */
    return check_claim(w, "atoms", w->natoms, 9 * (int64_t)sizeof(double) + 12, err);
}

/* Sets every dataset to the current (nsys, natoms). */
static int set_all_rows(mdf_h5s_writer *w, int64_t nsys, int64_t natoms)
{
    int r = 0;
    for (int k = 0; k < NSPEC; k++) {
        if (w->d[k] < 0) continue;
        int64_t n = specs[k].kind == K_ATOM ? natoms : specs[k].kind == K_SYS ? nsys : nsys + 1;
        if (mdf_h5_set_rows(w->d[k], n) < 0) r = -1;
    }
    return r;
}

static mdf_status open_existing(mdf_h5s_writer *w, mdf_error *err)
{
    htri_t is = H5Fis_hdf5(w->path);
    if (is <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return mdf_error_set(err, MDF_ERR_PARSE,
                             "cannot append to '%s': it is not an HDF5 file (give another path, or write a new "
                             "file without append)",
                             w->path);
    }
    w->file = mdf_h5_open_swmr_write(w->path);
    if (w->file < 0)
        return mdf_h5_fail(err, MDF_ERR_IO,
                           "cannot open the HDF5 structure file '%s' to append (is another program writing "
                           "it?)",
                           w->path);
    mdf_status st = open_datasets(w, 1, err);
    if (st == MDF_OK) st = find_length(w, err);
    if (st != MDF_OK) return st;
    /* Rows a killed append left beyond the complete systems stay in place
     * (readers size by atom_ptr) and the next append overwrites them:
     * shrinking datasets right after a crash under SWMR writing is what
     * the kill test found to damage chunk indexes. */
    return MDF_OK;
}

mdf_status mdf_h5s_open(const char *path, const mdf_h5_options *o, mdf_h5s_writer **out, mdf_error *err)
{
    if (!path || !out) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_h5s_open: path and out are required");
    *out = NULL;
    mdf_h5s_writer *w = new_writer(path, o);
    if (!w) return mdf_error_set(err, MDF_ERR_NOMEM, "out of memory opening '%s'", path);
    w->writable = 1;
    mdf_h5_lock();
    struct stat st;
    int existing = w->opt.append && stat(path, &st) == 0;
    mdf_status s = existing ? open_existing(w, err) : create_file(w, err);
    if (s != MDF_OK) {
        int made = !existing && w->file >= 0; /* created here, it holds nothing: no unreadable stub left behind */
        free_writer(w);
        if (made) unlink(path);
    }
    mdf_h5_unlock();
    if (s == MDF_OK) *out = w;
    return s;
}

int64_t mdf_h5s_length(const mdf_h5s_writer *w)
{
    return w ? w->nsys : 0;
}

/* ---- appending ---------------------------------------------------------------------- */

/* Rows of dataset k for packed systems [first, first + count) of snap, in
 * memory type; *owned says whether the buffer must be freed. */
static const void *gather(const dspec *s, int k, const mdf_snapshot *snap, int64_t first, int64_t count, int64_t a0,
                          int64_t na, int64_t base_atoms, int *owned)
{
    int64_t rows = s->kind == K_ATOM ? na : count;
    int64_t r0 = s->kind == K_ATOM ? a0 : first;
    size_t n = (size_t)rows * (size_t)s->ncomp;
    const void *src = NULL;
    *owned = 0;
    switch (k) {
    case D_POS: src = snap->positions; break;
    case D_FRC: src = snap->forces; break;
    case D_MASS: src = snap->masses; break;
    case D_NUM: src = snap->numbers; break;
    case D_CELL: src = snap->cell; break;
    case D_PBC: src = snap->pbc; break;
    case D_E: src = snap->energy; break;
    case D_KE: src = snap->kinetic; break;
    case D_VIR: src = snap->virial; break;
    case D_ID: src = snap->id; break;
    case D_STEP: src = snap->step; break;
    case D_STATUS: src = snap->status; break;
    case D_FLAGS: src = snap->flags; break;
    case D_TIME: src = snap->time_fs; break;
    default: break;
    }
    if (src && k != D_VEL && k != D_STRESS && k != D_PTR)
        return (const char *)src + (size_t)r0 * (size_t)s->ncomp * mem_size(s->type);
    void *buf = calloc(n ? n : 1, mem_size(s->type));
    if (!buf) return NULL;
    *owned = 1;
    if (k == D_VEL && snap->velocities) {
        double *v = buf;
        for (size_t i = 0; i < n; i++) v[i] = snap->velocities[(size_t)a0 * 3 + i] * MDF_FS_INTERNAL;
    } else if (k == D_STRESS && snap->virial && snap->cell) {
        double *out = buf;
        for (int64_t j = 0; j < count; j++) {
            const double *c = snap->cell + (size_t)(first + j) * 9;
            const double *vir = snap->virial + (size_t)(first + j) * 9;
            double vol = fabs(c[0] * (c[4] * c[8] - c[5] * c[7]) - c[1] * (c[3] * c[8] - c[5] * c[6]) +
                              c[2] * (c[3] * c[7] - c[4] * c[6]));
            for (int i = 0; i < 9; i++) out[j * 9 + i] = vol > 0 ? -vir[i] / vol : 0.0;
        }
    } else if (k == D_PTR) {
        int64_t *p = buf;
        for (int64_t j = 0; j < count; j++) p[j] = base_atoms + (snap->atom_ptr[first + j + 1] - a0);
    } else if (k == D_FMAX) {
        double *f = buf;
        for (int64_t j = 0; j < count; j++) f[j] = snap->fmax ? snap->fmax[first + j] : NAN;
    } else if (k == D_MASS) {
        double *m = buf; /* no masses given: the standard ones */
        for (int64_t j = 0; j < na; j++) m[j] = snap->numbers ? mdf_element_mass(snap->numbers[a0 + j]) : 0.0;
    }
    return buf;
}

mdf_status mdf_h5s_append(mdf_h5s_writer *w, const mdf_snapshot *snap, int64_t first, int64_t count, mdf_error *err)
{
    if (!w || !snap) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_h5s_append: writer and snapshot are required");
    if (!w->writable || w->file < 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "HDF5 file '%s' is not open for writing", w->path);
    if (count <= 0) return MDF_OK;
    mdf_status chk =
        mdf_h5_check_append("HDF5", w->path, "systems", snap, first, count, w->nsys, w->opt.max_systems, err);
    if (chk != MDF_OK) return chk;
    int64_t a0 = snap->atom_ptr[first], na = snap->atom_ptr[first + count] - a0;
    mdf_status st = MDF_OK;
    mdf_h5_lock();
    int64_t nsys0 = w->nsys, natoms0 = w->natoms;
    /* disk space first: the data, a fresh chunk of every dataset, metadata */
    int64_t need = na * (3 * 24 + 12) + count * (3 * 72 + 3 * 8 + 5 * 8 + 2 * 4 + 3) +
                   w->opt.chunk_atoms * (3 * 24 + 12) + w->opt.chunk_systems * (3 * 72 + 3 * 8 + 5 * 8 + 2 * 4 + 3) +
                   (1 << 18);
    int rr = mdf_h5_reserve(w->file, w->path, need);
    if (rr) {
        mdf_h5_unlock();
        return mdf_error_set(err, MDF_ERR_IO,
                             "HDF5 file '%s': no room for systems %lld to %lld (%s); nothing was written, the file "
                             "keeps the %lld systems appended before: free disk space (or raise the quota or file "
                             "size limit), then run again or resume from a checkpoint",
                             w->path, (long long)nsys0, (long long)(nsys0 + count - 1), strerror(rr),
                             (long long)nsys0);
    }
    /* per-atom rows, per-system rows, flush; then atom_ptr (the commit), flush */
    static const int phase_end[2] = {D_PTR, NSPEC};
    int k = 0;
    for (int phase = 0; phase < 2 && st == MDF_OK; phase++) {
        for (; k < phase_end[phase]; k++) {
            const dspec *s = &specs[k];
            int owned;
            const void *buf = gather(s, k, snap, first, count, a0, na, natoms0, &owned);
            if (!buf) {
                st = mdf_error_set(err, MDF_ERR_NOMEM, "HDF5 file '%s': out of memory writing %s", w->path, s->name);
                break;
            }
            int64_t row0 = s->kind == K_ATOM ? natoms0 : s->kind == K_SYS ? nsys0 : nsys0 + 1;
            int64_t rows = s->kind == K_ATOM ? na : count;
            int r = mdf_h5_write_rows(w->d[k], mem_type(s->type), row0, rows, buf);
            if (owned) free((void *)buf);
            if (r < 0) {
                st = mdf_h5_fail(err, MDF_ERR_IO,
                                 "HDF5 file '%s': cannot write the dataset /structures/%s (systems %lld to %lld)",
                                 w->path, s->name, (long long)nsys0, (long long)(nsys0 + count - 1));
                break;
            }
        }
        if (st == MDF_OK && H5Fflush(w->file, H5F_SCOPE_LOCAL) < 0)
            st = mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot flush systems %lld to %lld", w->path,
                             (long long)nsys0, (long long)(nsys0 + count - 1));
    }
    if (st == MDF_OK) {
        w->nsys = nsys0 + count;
        w->natoms = natoms0 + na;
    } else {
        /* back to the last complete append: shrink what was extended and
         * try to flush that (it may fail too when the disk is full: readers
         * still size by atom_ptr, which was not extended) */
        set_all_rows(w, nsys0, natoms0);
        H5Fflush(w->file, H5F_SCOPE_LOCAL);
        H5Eclear2(H5E_DEFAULT);
        mdf_h5_append_failed(st, err, (long long)nsys0, "systems");
    }
    mdf_h5_unlock();
    return st;
}

mdf_status mdf_h5s_truncate(mdf_h5s_writer *w, int64_t nsys, mdf_error *err)
{
    if (!w) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_h5s_truncate: no writer");
    if (nsys < 0 || nsys > w->nsys)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "HDF5 file '%s' holds %lld systems: cannot truncate it to %lld", w->path,
                             (long long)w->nsys, (long long)nsys);
    if (nsys == w->nsys) return MDF_OK;
    mdf_status st = MDF_OK;
    mdf_h5_lock();
    int64_t natoms;
    if (mdf_h5_read_rows(w->d[D_PTR], H5T_NATIVE_INT64, nsys, 1, &natoms) < 0)
        st = mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot read /structures/atom_ptr", w->path);
    else if (set_all_rows(w, nsys, natoms) < 0 || H5Fflush(w->file, H5F_SCOPE_LOCAL) < 0)
        st = mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot truncate the datasets to %lld systems", w->path,
                         (long long)nsys);
    else {
        w->nsys = nsys;
        w->natoms = natoms;
    }
    mdf_h5_unlock();
    return st;
}

/* ---- reading ------------------------------------------------------------------------ */

static int is_zero9(const double *c)
{
    for (int i = 0; i < 9; i++)
        if (c[i] != 0.0) return 0;
    return 1;
}

/* Reads systems [s0, s0 + ns) into frames[0..ns) (zeroed first). */
static mdf_status read_systems(mdf_h5s_writer *w, int64_t s0, int64_t ns, mdf_frame *frames, mdf_error *err)
{
    memset(frames, 0, sizeof(mdf_frame) * (size_t)ns);
    mdf_status st = MDF_OK;
    int64_t *ptr = malloc(sizeof(int64_t) * (size_t)(ns + 1));
    void *sysbuf[NSPEC] = {0}, *atombuf[NSPEC] = {0};
    if (!ptr) return mdf_error_set(err, MDF_ERR_NOMEM, "out of memory reading '%s'", w->path);
    if (mdf_h5_read_rows(w->d[D_PTR], H5T_NATIVE_INT64, s0, ns + 1, ptr) < 0) {
        free(ptr);
        return mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot read /structures/atom_ptr", w->path);
    }
    int64_t a0 = ptr[0], na = ptr[ns] - ptr[0];
    for (int k = 0; k < NSPEC && st == MDF_OK; k++) {
        const dspec *s = &specs[k];
        if (w->d[k] < 0 || s->kind == K_PTR) continue;
        int64_t rows = s->kind == K_ATOM ? na : ns, r0 = s->kind == K_ATOM ? a0 : s0;
        void *buf = calloc((size_t)(rows ? rows : 1) * (size_t)s->ncomp, mem_size(s->type));
        if (!buf) {
            st = mdf_error_set(err, MDF_ERR_NOMEM, "out of memory reading '%s'", w->path);
            break;
        }
        (s->kind == K_ATOM ? atombuf : sysbuf)[k] = buf;
        if (mdf_h5_read_rows(w->d[k], mem_type(s->type), r0, rows, buf) < 0)
            st = mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot read the dataset /structures/%s (systems %lld "
                             "to %lld)", w->path, s->name, (long long)s0, (long long)(s0 + ns - 1));
    }
    for (int64_t j = 0; j < ns && st == MDF_OK; j++) {
        mdf_frame *f = &frames[j];
        int64_t off = ptr[j] - a0, n = ptr[j + 1] - ptr[j];
        st = mdf_frame_alloc(f, n, atombuf[D_VEL] != NULL, atombuf[D_FRC] != NULL, atombuf[D_MASS] != NULL, err);
        if (st != MDF_OK) break;
        memcpy(f->positions, (double *)atombuf[D_POS] + off * 3, sizeof(double) * 3 * (size_t)n);
        memcpy(f->numbers, (int32_t *)atombuf[D_NUM] + off, sizeof(int32_t) * (size_t)n);
        if (f->velocities)
            for (int64_t i = 0; i < 3 * n; i++) f->velocities[i] = ((double *)atombuf[D_VEL])[off * 3 + i] / MDF_FS_INTERNAL;
        if (f->forces) memcpy(f->forces, (double *)atombuf[D_FRC] + off * 3, sizeof(double) * 3 * (size_t)n);
        if (f->masses) memcpy(f->masses, (double *)atombuf[D_MASS] + off, sizeof(double) * (size_t)n);
        if (sysbuf[D_CELL]) {
            memcpy(f->cell, (double *)sysbuf[D_CELL] + j * 9, sizeof f->cell);
            f->has_cell = !is_zero9(f->cell);
        }
        if (sysbuf[D_PBC])
            for (int i = 0; i < 3; i++) f->pbc[i] = ((int32_t *)sysbuf[D_PBC])[j * 3 + i] != 0;
        if (sysbuf[D_E]) {
            f->energy = ((double *)sysbuf[D_E])[j];
            f->has_energy = isfinite(f->energy);
            if (!f->has_energy) f->energy = 0;
        }
        char v[32];
        snprintf(v, sizeof v, "%lld", sysbuf[D_ID] ? (long long)((int64_t *)sysbuf[D_ID])[j] : (long long)(s0 + j));
        st = mdf_frame_set_info(f, "mdf_system_id", v, err);
        if (st == MDF_OK && sysbuf[D_STEP]) {
            snprintf(v, sizeof v, "%lld", (long long)((int64_t *)sysbuf[D_STEP])[j]);
            st = mdf_frame_set_info(f, "mdf_step", v, err);
        }
        if (st == MDF_OK && sysbuf[D_STATUS]) {
            snprintf(v, sizeof v, "%d", (int)((int32_t *)sysbuf[D_STATUS])[j]);
            st = mdf_frame_set_info(f, "mdf_status", v, err);
        }
    }
    if (st != MDF_OK)
        for (int64_t j = 0; j < ns; j++) mdf_frame_free(&frames[j]);
    for (int k = 0; k < NSPEC; k++) {
        free(sysbuf[k]);
        free(atombuf[k]);
    }
    free(ptr);
    return st;
}

mdf_status mdf_h5s_read_frame(mdf_h5s_writer *w, int64_t i, mdf_frame *out, mdf_error *err)
{
    if (!w || !out) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_h5s_read_frame: writer and frame are required");
    if (i < 0 || i >= w->nsys)
        return mdf_error_set(err, MDF_ERR_INVALID, "HDF5 file '%s' holds %lld systems: there is no system %lld",
                             w->path, (long long)w->nsys, (long long)i);
    mdf_h5_lock();
    mdf_status st = read_systems(w, i, 1, out, err);
    mdf_h5_unlock();
    return st;
}

mdf_status mdf_h5s_close(mdf_h5s_writer *w, mdf_error *err)
{
    if (!w) return MDF_OK;
    mdf_status st = MDF_OK;
    mdf_h5_lock();
    for (int k = 0; k < NSPEC; k++)
        if (w->d[k] >= 0) {
            H5Dclose(w->d[k]);
            w->d[k] = -1;
        }
    if (w->file >= 0) {
        if (w->writable && H5Fflush(w->file, H5F_SCOPE_LOCAL) < 0)
            st = mdf_h5_fail(err, MDF_ERR_IO,
                             "HDF5 file '%s': cannot flush on close (disk full?); it keeps the %lld systems "
                             "appended before",
                             w->path, (long long)w->nsys);
        if (H5Fclose(w->file) < 0 && st == MDF_OK)
            st = mdf_h5_fail(err, MDF_ERR_IO, "HDF5 file '%s': cannot close it (disk full?)", w->path);
        w->file = -1;
    }
    H5Eclear2(H5E_DEFAULT);
    mdf_h5_unlock();
    free_writer(w);
    return st;
}

mdf_status mdf_read_hdf5_structures(const char *path, mdf_frame_list *out, mdf_error *err)
{
    if (!path || !out) return mdf_error_set(err, MDF_ERR_INVALID, "mdf_read_hdf5_structures: path and list required");
    mdf_h5s_writer *w = new_writer(path, NULL);
    if (!w) return mdf_error_set(err, MDF_ERR_NOMEM, "out of memory opening '%s'", path);
    mdf_status st = MDF_OK;
    mdf_h5_lock();
    char why[512];
    const char *p = mdf_h5_path_problem(path, 0, why, sizeof why);
    if (p) {
        st = mdf_error_set(err, MDF_ERR_IO, "cannot read the HDF5 structure file '%s': %s", path, p);
    } else if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        st = mdf_error_set(err, MDF_ERR_PARSE, "cannot read '%s' as HDF5 structures: it is not an HDF5 file", path);
    } else if ((w->file = mdf_h5_open_read(path)) < 0) {
        st = mdf_h5_fail(err, MDF_ERR_IO, "cannot open the HDF5 structure file '%s'", path);
    }
    if (st == MDF_OK) st = open_datasets(w, 0, err);
    if (st == MDF_OK) st = find_length(w, err);
    const int64_t block = 1024;
    mdf_frame *frames = NULL;
    if (st == MDF_OK && w->nsys > 0) {
        frames = calloc((size_t)(w->nsys < block ? w->nsys : block), sizeof *frames);
        if (!frames) st = mdf_error_set(err, MDF_ERR_NOMEM, "out of memory reading '%s'", path);
    }
    for (int64_t s0 = 0; st == MDF_OK && s0 < w->nsys; s0 += block) {
        int64_t ns = w->nsys - s0 < block ? w->nsys - s0 : block;
        st = read_systems(w, s0, ns, frames, err);
        for (int64_t j = 0; j < ns && st == MDF_OK; j++) st = mdf_frame_list_push(out, &frames[j], err);
        if (st != MDF_OK)
            for (int64_t j = 0; j < ns; j++) mdf_frame_free(&frames[j]);
    }
    free(frames);
    close_all(w);
    H5Eclear2(H5E_DEFAULT);
    mdf_h5_unlock();
    free_writer(w);
    return st;
}
