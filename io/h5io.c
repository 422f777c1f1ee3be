/* mdflow — the HDF5 lock, options, and helpers the HDF5 writers share.
 *
 * Debian's libhdf5 (1.10, serial) is not thread-safe: every HDF5 call of
 * mdflow runs under one process-wide mutex (recursive, so that helpers may
 * lock again). HDF5's own printing of its error stack is switched off the
 * first time each thread takes the lock; failures become mdf_error messages that name
 * the file, the dataset and what to do, with the lowest-level HDF5 message
 * (which carries errno for system errors) appended. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5io.h"
#include "h5_internal.h"

static pthread_mutex_t h5_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int h5_started;
/* Debian's libhdf5 is built thread-safe: the error-printing switch is per
 * thread, so each thread (StarPU workers run the sinks' writes) turns it off
 * on its first lock; before, a worker's failed write printed HDF5's whole
 * stack on stderr. */
static __thread int h5_quiet;

void mdf_h5_lock(void)
{
    pthread_mutex_lock(&h5_mutex);
    if (!h5_started) {
        /* No HDF5 cleanup at exit: every file mdflow opens is closed by
         * mdflow, and one whose close failed (a full disk) stays in HDF5's
         * list, where the cleanup's second try crashed (status 139 after
         * the right message). Must precede the library's start. */
        H5dont_atexit();
        H5open();
        h5_started = 1;
    }
    if (!h5_quiet) {
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        h5_quiet = 1;
    }
}

void mdf_h5_unlock(void)
{
    pthread_mutex_unlock(&h5_mutex);
}

void mdf_h5_options_init(mdf_h5_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->compression = 0;
    o->chunk_systems = 256;
    o->chunk_atoms = 16384;
    o->append = 0;
    o->max_systems = 0;
}

/* ---- errors ----------------------------------------------------------------- */

typedef struct walk_state {
    char first[512];   /* the innermost message */
    char sys[512];     /* a message carrying errno, if any */
} walk_state;

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    walk_state *w = data;
    if (!e->desc) return 0;
    if (n == 0) snprintf(w->first, sizeof w->first, "%s", e->desc);
    if (!w->sys[0] && strstr(e->desc, "errno")) {
        const char *m = strstr(e->desc, "error message = '");
        if (m) {
            m += 17;
            size_t l = strcspn(m, "'");
            snprintf(w->sys, sizeof w->sys, "%.*s", (int)(l < 500 ? l : 500), m);
        } else {
            snprintf(w->sys, sizeof w->sys, "%s", e->desc);
        }
    }
    return 0;
}

mdf_status mdf_h5_fail(mdf_error *err, mdf_status code, const char *fmt, ...)
{
    walk_state w;
    memset(&w, 0, sizeof w);
    if (getenv("MDF_H5_DEBUG")) H5Eprint2(H5E_DEFAULT, stderr); /* the whole HDF5 stack, for debugging */
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &w);
    H5Eclear2(H5E_DEFAULT);
    char msg[MDF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *detail = w.sys[0] ? w.sys : w.first;
    /* strip trailing quote/space left from "error message = '...'" */
    char d[512];
    snprintf(d, sizeof d, "%s", detail);
    size_t l = strlen(d);
    while (l && (d[l - 1] == '\'' || d[l - 1] == ' ' || d[l - 1] == '\n')) d[--l] = '\0';
    if (d[0] == '\'') memmove(d, d + 1, l);
    if (d[0]) return mdf_error_set(err, code, "%s (HDF5: %s)", msg, d);
    return mdf_error_set(err, code, "%s", msg);
}

const char *mdf_h5_path_problem(const char *path, int for_create, char *buf, size_t n)
{
    char *copy = strdup(path);
    if (!copy) return NULL;
    const char *dir = dirname(copy);
    struct stat st;
    const char *r = NULL;
    if (stat(dir, &st) != 0) {
        snprintf(buf, n, "the folder '%s' does not exist: create it first", dir);
        r = buf;
    } else if (!S_ISDIR(st.st_mode)) {
        snprintf(buf, n, "'%s' is not a folder", dir);
        r = buf;
    } else if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            snprintf(buf, n, "it is a folder: give a file name");
            r = buf;
        } else if (access(path, for_create ? W_OK : R_OK) != 0) {
            snprintf(buf, n, "no permission to %s it (%s)", for_create ? "write" : "read", strerror(errno));
            r = buf;
        } else if (for_create && access(dir, W_OK) != 0) {
            snprintf(buf, n, "no permission to write in the folder '%s'", dir);
            r = buf;
        }
    } else if (for_create) {
        if (access(dir, W_OK | X_OK) != 0) {
            snprintf(buf, n, "no permission to create files in the folder '%s'", dir);
            r = buf;
        }
    } else {
        snprintf(buf, n, "the file does not exist");
        r = buf;
    }
    free(copy);
    return r;
}

int mdf_h5_reserve(hid_t file, const char *path, int64_t bytes)
{
    hsize_t size = 0;
    if (H5Fget_filesize(file, &size) < 0) return EIO; /* max(end of file, end of allocation) */
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    int r = posix_fallocate(fd, 0, (off_t)(size + (hsize_t)(bytes > 0 ? bytes : 0)));
    if (r == EINVAL || r == EOPNOTSUPP) r = 0; /* a file system without fallocate: nothing reserved */
    close(fd);
    return r;
}

void mdf_h5_append_failed(mdf_status st, mdf_error *err, long long kept, const char *unit)
{
    /* a message that already says what to do (no room reserved) stays as it is */
    if (st != MDF_ERR_IO || !err || strstr(err->message, "free disk space")) return;
    char inner[MDF_ERROR_MESSAGE_MAX];
    snprintf(inner, sizeof inner, "%s", err->message);
    mdf_error_set(err, st,
                  "%s; the file keeps the %lld %s appended before: free disk space (or raise the quota or file "
                  "size limit), then run again or resume from a checkpoint",
                  inner, kept, unit);
}

/* Paged file space: HDF5 then never lets a small metadata block (an object
 * header, say) straddle a 4 KiB page boundary. A writer killed during a
 * write() is cut at a page boundary (Linux checks for fatal signals
 * between pages), and a straddling object header was left half old and
 * half new: its checksum failed and its dataset could no longer be opened
 * (test_h5's kill -9 test found it, always on the header lying across
 * byte 8192). */
hid_t mdf_h5_fcpl(void)
{
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (fcpl < 0) return fcpl;
    if (H5Pset_file_space_strategy(fcpl, H5F_FSPACE_STRATEGY_PAGE, 0, 1) < 0 ||
        H5Pset_file_space_page_size(fcpl, 4096) < 0) {
        H5Pclose(fcpl);
        return -1;
    }
    return fcpl;
}

hid_t mdf_h5_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) return fapl;
    if (H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) < 0) {
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}

hid_t mdf_h5_open_swmr_write(const char *path)
{
    hid_t fapl = mdf_h5_fapl();
    if (fapl < 0) return -1;
    hid_t f = H5Fopen(path, H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE, fapl);
    if (f < 0) {
        /* A writer killed while the file was open leaves the superblock's
         * status flags set ("file is already open for write"). HDF5 1.10
         * has no public call to clear them; h5clear -s sets the file access
         * property "clear_status_flags", registered in every file access
         * list, which makes H5Fopen clear them: do the same. Only do it when
         * the file really is an HDF5 file that we could open for reading. */
        hbool_t clear = 1;
        htri_t has = H5Pexist(fapl, "clear_status_flags");
        if (has > 0 && H5Pset(fapl, "clear_status_flags", &clear) >= 0) {
            H5Eclear2(H5E_DEFAULT);
            hid_t f2 = H5Fopen(path, H5F_ACC_RDWR, fapl);
            if (f2 >= 0) {
                /* keep what the killed writer allocated past the recorded
                 * end (see below) before closing: a close cuts the file
                 * to that end */
                H5Fincrement_filesize(f2, 0);
                /* reopen without the property, for SWMR writing */
                H5Fclose(f2);
                hid_t fapl2 = mdf_h5_fapl();
                if (fapl2 >= 0) {
                    f = H5Fopen(path, H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE, fapl2);
                    H5Pclose(fapl2);
                }
            }
        }
    }
    H5Pclose(fapl);
    /* A killed writer may have allocated space (chunks, index blocks that
     * the file's metadata already points to) beyond the end-of-allocation
     * address the superblock last recorded. Move that address to the end
     * of the file (as h5clear --increment does) so that new allocations
     * never overlap what the killed writer left; it costs the unused tail
     * that mdf_h5_reserve allocated. */
    if (f >= 0 && H5Fincrement_filesize(f, 0) < 0) {
        H5Fclose(f);
        f = -1;
    }
    return f;
}

hid_t mdf_h5_open_read(const char *path)
{
    hid_t fapl = mdf_h5_fapl();
    if (fapl < 0) return -1;
    /* SWMR readers retry a metadata read whose checksum fails (a block the
     * writer is rewriting) 100 times with growing sleeps by default: a few
     * are enough for a live writer and keep a damaged file from hanging us */
    H5Pset_metadata_read_attempts(fapl, 8);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl);
    if (f < 0) f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    H5Pclose(fapl);
    return f;
}

/* ---- attributes ------------------------------------------------------------- */

static int write_attr(hid_t obj, const char *name, hid_t type, hid_t space, const void *buf)
{
    if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
    hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) return -1;
    int r = H5Awrite(a, type, buf) < 0 ? -1 : 0;
    H5Aclose(a);
    return r;
}

int mdf_h5_attr_string(hid_t obj, const char *name, const char *value)
{
    /* Variable-length UTF-8: h5py reads it as str (a fixed-length string
     * comes back as bytes, and MDAnalysis then rejects b'fs' as a unit). */
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    hid_t s = H5Screate(H5S_SCALAR);
    int r = write_attr(obj, name, t, s, &value);
    H5Sclose(s);
    H5Tclose(t);
    return r;
}

int mdf_h5_attr_strings(hid_t obj, const char *name, const char *const *values, int n)
{
    if (n <= 0) return -1;
    size_t w = 1;
    for (int i = 0; i < n; i++)
        if (strlen(values[i]) + 1 > w) w = strlen(values[i]) + 1;
    char *buf = calloc((size_t)n, w);
    if (!buf) return -1;
    for (int i = 0; i < n; i++) memcpy(buf + (size_t)i * w, values[i], strlen(values[i]));
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, w);
    H5Tset_strpad(t, H5T_STR_NULLPAD);
    hsize_t d = (hsize_t)n;
    hid_t s = H5Screate_simple(1, &d, NULL);
    int r = write_attr(obj, name, t, s, buf);
    H5Sclose(s);
    H5Tclose(t);
    free(buf);
    return r;
}

int mdf_h5_attr_int(hid_t obj, const char *name, const int *values, int n)
{
    hsize_t d = (hsize_t)n;
    hid_t s = n == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &d, NULL);
    int r = write_attr(obj, name, H5T_NATIVE_INT, s, values);
    H5Sclose(s);
    return r;
}

int mdf_h5_attr_get_string(hid_t obj, const char *name, char *buf, size_t n)
{
    if (n == 0) return -1;
    buf[0] = '\0';
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t ft = H5Aget_type(a);
    int r = -1;
    if (H5Tget_class(ft) == H5T_STRING && H5Tis_variable_str(ft) <= 0) {
        size_t sz = H5Tget_size(ft);
        char *tmp = calloc(sz + 1, 1);
        hid_t mt = H5Tget_native_type(ft, H5T_DIR_DEFAULT);
        if (tmp && H5Aread(a, mt, tmp) >= 0) {
            snprintf(buf, n, "%s", tmp);
            r = 0;
        }
        H5Tclose(mt);
        free(tmp);
    } else if (H5Tget_class(ft) == H5T_STRING) {
        char *s = NULL;
        hid_t mt = H5Tget_native_type(ft, H5T_DIR_DEFAULT);
        if (H5Aread(a, mt, &s) >= 0 && s) {
            snprintf(buf, n, "%s", s);
            H5free_memory(s);
            r = 0;
        }
        H5Tclose(mt);
    }
    H5Tclose(ft);
    H5Aclose(a);
    return r;
}

int mdf_h5_attr_get_strings(hid_t obj, const char *name, char (*values)[32], int n)
{
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t ft = H5Aget_type(a), sp = H5Aget_space(a);
    int r = -1;
    hssize_t cnt = H5Sget_simple_extent_npoints(sp);
    if (H5Tget_class(ft) == H5T_STRING && H5Tis_variable_str(ft) <= 0 && cnt == n) {
        size_t sz = H5Tget_size(ft);
        char *tmp = calloc((size_t)n * sz + 1, 1);
        hid_t mt = H5Tget_native_type(ft, H5T_DIR_DEFAULT);
        if (tmp && H5Aread(a, mt, tmp) >= 0) {
            for (int i = 0; i < n; i++) {
                size_t k = sz < 31 ? sz : 31;
                memcpy(values[i], tmp + (size_t)i * sz, k);
                values[i][k] = '\0';
            }
            r = 0;
        }
        H5Tclose(mt);
        free(tmp);
    }
    H5Sclose(sp);
    H5Tclose(ft);
    H5Aclose(a);
    return r;
}

/* ---- extendible datasets --------------------------------------------------------- */

hid_t mdf_h5_create_ext(hid_t loc, const char *name, hid_t type, int rank, const hsize_t *tail_dims,
                        hsize_t n0, hsize_t chunk0, int compression)
{
    hsize_t dims[4], maxd[4], chunk[4];
    dims[0] = n0;
    maxd[0] = H5S_UNLIMITED;
    chunk[0] = chunk0 ? chunk0 : 1;
    for (int i = 1; i < rank; i++) {
        dims[i] = maxd[i] = chunk[i] = tail_dims[i - 1];
    }
    hid_t space = H5Screate_simple(rank, dims, maxd);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t d = -1;
    if (space >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, rank, chunk) >= 0 &&
        (compression <= 0 || H5Pset_deflate(dcpl, (unsigned)(compression > 9 ? 9 : compression)) >= 0))
        d = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    return d;
}

int64_t mdf_h5_rows(hid_t dset)
{
    hid_t s = H5Dget_space(dset);
    if (s < 0) return -1;
    hsize_t dims[4];
    int r = H5Sget_simple_extent_ndims(s);
    int64_t n = -1;
    if (r >= 1 && r <= 4 && H5Sget_simple_extent_dims(s, dims, NULL) >= 0) n = (int64_t)dims[0];
    H5Sclose(s);
    return n;
}

static int select_rows(hid_t dset, int64_t row0, int64_t nrows, hid_t *fspace, hid_t *mspace)
{
    *fspace = H5Dget_space(dset);
    if (*fspace < 0) return -1;
    hsize_t dims[4], start[4] = {0, 0, 0, 0}, count[4];
    int rank = H5Sget_simple_extent_ndims(*fspace);
    if (rank < 1 || rank > 4) return -1;
    H5Sget_simple_extent_dims(*fspace, dims, NULL);
    start[0] = (hsize_t)row0;
    count[0] = (hsize_t)nrows;
    for (int i = 1; i < rank; i++) count[i] = dims[i];
    if (H5Sselect_hyperslab(*fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0) return -1;
    *mspace = H5Screate_simple(rank, count, NULL);
    return *mspace < 0 ? -1 : 0;
}

int mdf_h5_set_rows(hid_t dset, int64_t n0)
{
    hid_t s = H5Dget_space(dset);
    if (s < 0) return -1;
    hsize_t dims[4];
    int rank = H5Sget_simple_extent_ndims(s);
    H5Sget_simple_extent_dims(s, dims, NULL);
    H5Sclose(s);
    if (rank < 1) return -1;
    if (dims[0] == (hsize_t)n0) return 0;
    dims[0] = (hsize_t)n0;
    return H5Dset_extent(dset, dims) < 0 ? -1 : 0;
}

int mdf_h5_write_rows(hid_t dset, hid_t mtype, int64_t row0, int64_t nrows, const void *buf)
{
    if (nrows <= 0) return 0;
    int64_t have = mdf_h5_rows(dset);
    if (have < 0) return -1;
    if (have < row0 + nrows && mdf_h5_set_rows(dset, row0 + nrows) < 0) return -1;
    hid_t fs = -1, ms = -1;
    int r = -1;
    if (select_rows(dset, row0, nrows, &fs, &ms) == 0) r = H5Dwrite(dset, mtype, ms, fs, H5P_DEFAULT, buf) < 0 ? -1 : 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return r;
}

int mdf_h5_read_rows(hid_t dset, hid_t mtype, int64_t row0, int64_t nrows, void *buf)
{
    if (nrows <= 0) return 0;
    hid_t fs = -1, ms = -1;
    int r = -1;
    if (select_rows(dset, row0, nrows, &fs, &ms) == 0) r = H5Dread(dset, mtype, ms, fs, H5P_DEFAULT, buf) < 0 ? -1 : 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return r;
}

mdf_status mdf_h5_check_append(const char *kind, const char *path, const char *unit, const mdf_snapshot *snap,
                               int64_t first, int64_t count, int64_t held, int64_t max, mdf_error *err)
{
    if (first < 0 || first + count > snap->nsys || !snap->atom_ptr || !snap->positions || !snap->numbers)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "%s file '%s': systems [%lld, %lld) are not in the snapshot of %lld systems "
                             "(or it has no atom_ptr, positions or numbers)",
                             kind, path, (long long)first, (long long)(first + count), (long long)snap->nsys);
    if (max > 0 && held + count > max)
        return mdf_error_set(err, MDF_ERR_IO,
                             "%s file '%s' is full: it holds %lld of at most %lld %s, %lld more do not fit", kind,
                             path, (long long)held, (long long)max, unit, (long long)(held + count - max));
    return MDF_OK;
}
