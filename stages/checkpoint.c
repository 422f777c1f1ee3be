/* mdflow — checkpoint files: named byte arrays in one HDF5 file, written
 * atomically (stages/checkpoint.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "checkpoint.h"
#include "../io/h5io.h"
#include "../dataflow/batch_internal.h"

/* ---- byte buffers ------------------------------------------------------------------ */

void mdf_bytes_put(mdf_bytes *b, const void *data, size_t n)
{
    if (b->failed || n == 0) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

void mdf_bytes_put_i64(mdf_bytes *b, int64_t v) { mdf_bytes_put(b, &v, sizeof v); }

void mdf_bytes_put_str(mdf_bytes *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    mdf_bytes_put_i64(b, (int64_t)n);
    mdf_bytes_put(b, s, n);
}

void mdf_bytes_free(mdf_bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void mdf_bytes_get(mdf_bytes_in *in, void *out, size_t n)
{
    if (in->failed || n > in->n - in->at) {
        in->failed = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, in->p + in->at, n);
    in->at += n;
}

int64_t mdf_bytes_get_i64(mdf_bytes_in *in)
{
    int64_t v = 0;
    mdf_bytes_get(in, &v, sizeof v);
    return v;
}

char *mdf_bytes_get_str(mdf_bytes_in *in)
{
    int64_t n = mdf_bytes_get_i64(in);
    if (in->failed || n < 0 || (uint64_t)n > in->n - in->at) {
        in->failed = 1;
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (!s) {
        in->failed = 1;
        return NULL;
    }
    mdf_bytes_get(in, s, (size_t)n);
    s[n] = '\0';
    return s;
}

/* ---- frames --------------------------------------------------------------------------- */

enum { HAS_VEL = 1, HAS_FORCES = 2, HAS_MASSES = 4 };

void mdf_ckpt_pack_frame(mdf_bytes *b, const mdf_frame *f, const mdf_system_view *v)
{
    size_t n = (size_t)f->natoms;
    int64_t has = (f->velocities ? HAS_VEL : 0) | (f->forces ? HAS_FORCES : 0) | (f->masses ? HAS_MASSES : 0);
    mdf_bytes_put_i64(b, f->natoms);
    mdf_bytes_put_i64(b, has);
    mdf_bytes_put(b, f->numbers, sizeof(int32_t) * n);
    mdf_bytes_put(b, f->positions, sizeof(double) * 3 * n);
    if (f->velocities) mdf_bytes_put(b, f->velocities, sizeof(double) * 3 * n);
    if (f->forces) mdf_bytes_put(b, f->forces, sizeof(double) * 3 * n);
    if (f->masses) mdf_bytes_put(b, f->masses, sizeof(double) * n);
    mdf_bytes_put(b, f->cell, sizeof f->cell);
    for (int k = 0; k < 3; k++) mdf_bytes_put_i64(b, f->pbc[k]);
    mdf_bytes_put_i64(b, f->has_cell);
    mdf_bytes_put(b, &f->energy, sizeof f->energy);
    mdf_bytes_put_i64(b, f->has_energy);
    mdf_bytes_put_i64(b, (int64_t)f->ninfo);
    for (size_t k = 0; k < f->ninfo; k++) {
        mdf_bytes_put_str(b, f->info[k].key);
        mdf_bytes_put_str(b, f->info[k].value);
    }
    mdf_bytes_put_i64(b, (int64_t)f->nextra);
    for (size_t k = 0; k < f->nextra; k++) {
        const mdf_extra_column *c = &f->extra[k];
        mdf_bytes_put_str(b, c->name);
        mdf_bytes_put_i64(b, c->type);
        mdf_bytes_put_i64(b, c->ncols);
        for (size_t t = 0; t < n * (size_t)c->ncols; t++) mdf_bytes_put_str(b, c->tokens[t]);
    }
    mdf_bytes_put(b, v, sizeof *v);
}

mdf_status mdf_ckpt_unpack_frame(mdf_bytes_in *in, mdf_frame *f, mdf_system_view *v, mdf_error *err)
{
    memset(f, 0, sizeof *f);
    int64_t natoms = mdf_bytes_get_i64(in), has = mdf_bytes_get_i64(in);
    if (in->failed || natoms < 0 || (uint64_t)natoms > (in->n - in->at) / 32)
        return mdf_error_set(err, MDF_ERR_PARSE, "a stored final frame is damaged (%lld atoms)", (long long)natoms);
    mdf_status st = mdf_frame_alloc(f, natoms, (has & HAS_VEL) != 0, (has & HAS_FORCES) != 0,
                                    (has & HAS_MASSES) != 0, err);
    if (st != MDF_OK) return st;
    size_t n = (size_t)natoms;
    mdf_bytes_get(in, f->numbers, sizeof(int32_t) * n);
    mdf_bytes_get(in, f->positions, sizeof(double) * 3 * n);
    if (f->velocities) mdf_bytes_get(in, f->velocities, sizeof(double) * 3 * n);
    if (f->forces) mdf_bytes_get(in, f->forces, sizeof(double) * 3 * n);
    if (f->masses) mdf_bytes_get(in, f->masses, sizeof(double) * n);
    mdf_bytes_get(in, f->cell, sizeof f->cell);
    for (int k = 0; k < 3; k++) f->pbc[k] = (int)mdf_bytes_get_i64(in);
    f->has_cell = (int)mdf_bytes_get_i64(in);
    mdf_bytes_get(in, &f->energy, sizeof f->energy);
    f->has_energy = (int)mdf_bytes_get_i64(in);
    int64_t ninfo = mdf_bytes_get_i64(in);
    for (int64_t k = 0; st == MDF_OK && !in->failed && k < ninfo; k++) {
        char *key = mdf_bytes_get_str(in), *value = mdf_bytes_get_str(in);
        if (key && value) st = mdf_frame_set_info(f, key, value, err);
        free(key);
        free(value);
    }
    int64_t nextra = in->failed ? 0 : mdf_bytes_get_i64(in);
    if (st == MDF_OK && !in->failed && nextra > 0 && (uint64_t)nextra < in->n) {
        f->extra = calloc((size_t)nextra, sizeof *f->extra);
        if (!f->extra) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a stored final frame");
        for (int64_t k = 0; st == MDF_OK && !in->failed && k < nextra; k++) {
            mdf_extra_column *c = &f->extra[k];
            f->nextra++;
            c->name = mdf_bytes_get_str(in);
            c->type = (char)mdf_bytes_get_i64(in);
            c->ncols = (int)mdf_bytes_get_i64(in);
            if (in->failed || c->ncols < 0 || c->ncols > 1024) {
                in->failed = 1;
                break;
            }
            c->tokens = calloc(n * (size_t)c->ncols + 1, sizeof *c->tokens);
            if (!c->tokens) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a stored final frame");
            for (size_t t = 0; st == MDF_OK && !in->failed && t < n * (size_t)c->ncols; t++)
                c->tokens[t] = mdf_bytes_get_str(in);
        }
    } else if (nextra < 0) in->failed = 1;
    mdf_bytes_get(in, v, sizeof *v);
    if (st == MDF_OK && in->failed) st = mdf_error_set(err, MDF_ERR_PARSE, "a stored final frame is damaged");
    if (st != MDF_OK) mdf_frame_free(f);
    return st;
}

/* ---- hashes ----------------------------------------------------------------------------- */

uint64_t mdf_hash(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t mdf_hash_i64(uint64_t h, int64_t v) { return mdf_hash(h, &v, sizeof v); }
uint64_t mdf_hash_f64(uint64_t h, double v) { return mdf_hash(h, &v, sizeof v); }
uint64_t mdf_hash_str(uint64_t h, const char *s) { return mdf_hash(mdf_hash_i64(h, s ? (int64_t)strlen(s) : -1), s, s ? strlen(s) : 0); }

/* ---- the file ------------------------------------------------------------------------------ */

typedef struct ckpt_array {
    char *name;
    size_t elem, n;
    unsigned char *data;
} ckpt_array;

struct mdf_ckpt {
    char *path;
    size_t count, cap;
    ckpt_array *arrays;
};

/* The sizes a checkpoint's raw arrays depend on. */
static void struct_sizes(int64_t s[8])
{
    s[0] = (int64_t)sizeof(mdf_atom_info);
    s[1] = (int64_t)sizeof(mdf_sys_info);
    s[2] = (int64_t)sizeof(mdf_sys_result);
    s[3] = (int64_t)sizeof(mdf_sys_state);
    s[4] = (int64_t)sizeof(mdf_system_view);
    s[5] = (int64_t)sizeof(double);
    s[6] = (int64_t)sizeof(void *);
    s[7] = 0x01020304; /* byte order */
}

mdf_ckpt *mdf_ckpt_new(const char *path)
{
    mdf_ckpt *c = calloc(1, sizeof *c);
    if (c && !(c->path = strdup(path))) {
        free(c);
        return NULL;
    }
    return c;
}

void mdf_ckpt_free(mdf_ckpt *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->count; i++) {
        free(c->arrays[i].name);
        free(c->arrays[i].data);
    }
    free(c->arrays);
    free(c->path);
    free(c);
}

const char *mdf_ckpt_path(const mdf_ckpt *c) { return c->path; }

static ckpt_array *find(const mdf_ckpt *c, const char *name)
{
    for (size_t i = 0; i < c->count; i++)
        if (!strcmp(c->arrays[i].name, name)) return &c->arrays[i];
    return NULL;
}

int mdf_ckpt_has(const mdf_ckpt *c, const char *name) { return find(c, name) != NULL; }

/* Takes ownership of data (malloc'ed). */
static mdf_status add_owned(mdf_ckpt *c, const char *name, unsigned char *data, size_t elem, size_t n, mdf_error *err)
{
    if (c->count == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        ckpt_array *a = realloc(c->arrays, cap * sizeof *a);
        if (!a) {
            free(data);
            return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for checkpoint '%s'", c->path);
        }
        c->arrays = a;
        c->cap = cap;
    }
    ckpt_array *a = &c->arrays[c->count];
    a->name = strdup(name);
    if (!a->name) {
        free(data);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for checkpoint '%s'", c->path);
    }
    a->elem = elem;
    a->n = n;
    a->data = data;
    c->count++;
    return MDF_OK;
}

mdf_status mdf_ckpt_put(mdf_ckpt *c, const char *name, const void *data, size_t elem, size_t n, mdf_error *err)
{
    size_t bytes = elem * n;
    unsigned char *copy = malloc(bytes ? bytes : 1);
    if (!copy) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to checkpoint %zu bytes of '%s'", bytes, name);
    if (bytes) memcpy(copy, data, bytes);
    ckpt_array *old = find(c, name);
    if (old) { /* replace */
        free(old->data);
        old->data = copy;
        old->elem = elem;
        old->n = n;
        return MDF_OK;
    }
    return add_owned(c, name, copy, elem, n, err);
}

mdf_status mdf_ckpt_put_i64(mdf_ckpt *c, const char *name, const int64_t *v, size_t n, mdf_error *err)
{
    return mdf_ckpt_put(c, name, v, sizeof(int64_t), n, err);
}

const void *mdf_ckpt_get(const mdf_ckpt *c, const char *name, size_t elem, size_t want, size_t *n, mdf_error *err)
{
    const ckpt_array *a = find(c, name);
    if (!a) {
        mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s' has no array '%s' (damaged, or written by another "
                      "version): start the run afresh without resuming", c->path, name);
        return NULL;
    }
    if (a->elem != elem || (want != (size_t)-1 && a->n != want)) {
        char expected[64];
        if (want == (size_t)-1) snprintf(expected, sizeof expected, "elements of %zu bytes", elem);
        else snprintf(expected, sizeof expected, "%zu elements of %zu bytes", want, elem);
        mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s': array '%s' holds %zu elements of %zu bytes, expected %s "
                      "(damaged, or written for another batch or build): start the run afresh without resuming",
                      c->path, name, a->n, a->elem, expected);
        return NULL;
    }
    if (n) *n = a->n;
    return a->data ? (const void *)a->data : (const void *)"";
}

mdf_status mdf_ckpt_get_i64(const mdf_ckpt *c, const char *name, int64_t *v, mdf_error *err)
{
    const int64_t *p = mdf_ckpt_get(c, name, sizeof(int64_t), 1, NULL, err);
    if (!p) return err ? err->code : MDF_ERR_PARSE;
    *v = *p;
    return MDF_OK;
}

/* ---- HDF5 ------------------------------------------------------------------------------- */

/* The innermost message of HDF5's error stack (it carries errno for system
 * errors), then clears the stack. */
static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    char *out = data;
    if (e->desc && (n == 0 || strstr(e->desc, "errno"))) snprintf(out, 256, "%s", e->desc);
    return 0;
}

static mdf_status h5_fail(mdf_error *err, mdf_status code, const char *path, const char *what)
{
    char detail[256] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, detail);
    H5Eclear2(H5E_DEFAULT);
    if (*detail)
        return mdf_error_set(err, code, "checkpoint '%s': %s (HDF5: %s)", path, what, detail);
    return mdf_error_set(err, code, "checkpoint '%s': %s", path, what);
}

static int write_array(hid_t file, const ckpt_array *a)
{
    hsize_t dims[1] = {(hsize_t)(a->elem * a->n)};
    hid_t space = H5Screate_simple(1, dims, NULL);
    if (space < 0) return -1;
    hid_t ds = H5Dcreate2(file, a->name, H5T_NATIVE_UCHAR, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int ok = ds >= 0;
    if (ok && dims[0] > 0) ok = H5Dwrite(ds, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, a->data) >= 0;
    if (ok) {
        hid_t as = H5Screate(H5S_SCALAR);
        hid_t at = as >= 0 ? H5Acreate2(ds, "elem_size", H5T_NATIVE_INT64, as, H5P_DEFAULT, H5P_DEFAULT) : -1;
        int64_t elem = (int64_t)a->elem;
        ok = at >= 0 && H5Awrite(at, H5T_NATIVE_INT64, &elem) >= 0;
        if (at >= 0) H5Aclose(at);
        if (as >= 0) H5Sclose(as);
    }
    if (ds >= 0) H5Dclose(ds);
    H5Sclose(space);
    return ok ? 0 : -1;
}

static int write_root_attr(hid_t file, const char *name, const int64_t *v, hsize_t n)
{
    hid_t as = H5Screate_simple(1, &n, NULL);
    hid_t at = as >= 0 ? H5Acreate2(file, name, H5T_NATIVE_INT64, as, H5P_DEFAULT, H5P_DEFAULT) : -1;
    int ok = at >= 0 && H5Awrite(at, H5T_NATIVE_INT64, v) >= 0;
    if (at >= 0) H5Aclose(at);
    if (as >= 0) H5Sclose(as);
    return ok ? 0 : -1;
}

static int fsync_path(const char *path, int dir)
{
    int fd = open(path, dir ? O_RDONLY | O_DIRECTORY : O_RDONLY);
    if (fd < 0) return -1;
    int r = fsync(fd);
    close(fd);
    return r;
}

/* ---- checksum ---------------------------------------------------------------------------- */

/* CRC32C (Castagnoli), slicing by 8: a standard check that catches every
 * burst of up to 32 flipped bits, at about 2 GB/s, so checksumming a large
 * checkpoint costs little next to writing it. */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

uint32_t mdf_crc32c(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&crc_once, crc_init);
    const unsigned char *p = data;
    uint32_t c = ~crc;
    for (; n && ((uintptr_t)p & 7); n--) c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= c; /* little-endian word order; the checkpoint's byte order is checked on load */
        c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
            crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
            crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
    }
    for (; n; n--) c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
    return ~c;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const ckpt_array *const *)a)->name, (*(const ckpt_array *const *)b)->name);
}

/* The checksum of a checkpoint's arrays in name order (the order they are
 * stored or listed in does not matter): each array's name, element size,
 * element count and bytes. */
static mdf_status arrays_checksum(const mdf_ckpt *c, uint32_t *out, mdf_error *err)
{
    const ckpt_array **sorted = malloc((c->count + 1) * sizeof *sorted);
    if (!sorted) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to checksum checkpoint '%s'", c->path);
    for (size_t i = 0; i < c->count; i++) sorted[i] = &c->arrays[i];
    qsort(sorted, c->count, sizeof *sorted, by_name);
    uint32_t crc = 0;
    for (size_t i = 0; i < c->count; i++) {
        const ckpt_array *a = sorted[i];
        int64_t sizes[2] = {(int64_t)a->elem, (int64_t)a->n};
        crc = mdf_crc32c(crc, a->name, strlen(a->name) + 1);
        crc = mdf_crc32c(crc, sizes, sizeof sizes);
        crc = mdf_crc32c(crc, a->data, a->elem * a->n);
    }
    free(sorted);
    *out = crc;
    return MDF_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* The checkpoint as an HDF5 file image in memory (HDF5's core driver, no
 * backing store). HDF5 then never writes to the disk itself: before, a
 * full disk made H5Fclose fail on a file it kept open, and HDF5's own
 * cleanup at exit crashed on it (status 139 after the right message). */
static mdf_status build_image(const mdf_ckpt *c, uint32_t crc, void **image, size_t *size, mdf_error *err)
{
    size_t payload = 0;
    for (size_t i = 0; i < c->count; i++) payload += c->arrays[i].elem * c->arrays[i].n;
    *image = NULL;
    mdf_status st = MDF_OK;
    mdf_h5_lock();
    H5E_auto2_t old_fn;
    void *old_data;
    H5Eget_auto2(H5E_DEFAULT, &old_fn, &old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    /* one allocation for the payload and its metadata, grown by 1 MiB if short */
    if (fapl >= 0 && H5Pset_fapl_core(fapl, payload + ((size_t)1 << 20), 0) < 0) {
        H5Pclose(fapl);
        fapl = -1;
    }
    hid_t file = fapl >= 0 ? H5Fcreate(c->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : -1;
    if (file < 0) {
        st = h5_fail(err, MDF_ERR_NOMEM, c->path, "cannot build it in memory (no memory?)");
    } else {
        int64_t version = MDF_CKPT_LAYOUT, sizes[8], sum = (int64_t)crc;
        struct_sizes(sizes);
        int ok = write_root_attr(file, "mdflow_checkpoint", &version, 1) == 0 &&
                 write_root_attr(file, "sizes", sizes, 8) == 0 && write_root_attr(file, "checksum", &sum, 1) == 0;
        for (size_t i = 0; ok && i < c->count; i++) ok = write_array(file, &c->arrays[i]) == 0;
        ssize_t n = ok && H5Fflush(file, H5F_SCOPE_GLOBAL) >= 0 ? H5Fget_file_image(file, NULL, 0) : -1;
        ok = n > 0 && (*image = malloc((size_t)n)) != NULL && H5Fget_file_image(file, *image, (size_t)n) == n;
        if (ok) *size = (size_t)n;
        else st = h5_fail(err, MDF_ERR_NOMEM, c->path, "cannot build it in memory (no memory?)");
        H5Fclose(file); /* in memory: nothing to flush to a disk */
    }
    if (fapl >= 0) H5Pclose(fapl);
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, old_fn, old_data);
    mdf_h5_unlock();
    if (st != MDF_OK) {
        free(*image);
        *image = NULL;
    }
    return st;
}

/* Writes the image to tmp and syncs it; errno of the first failure, or 0. */
static int write_image(const char *tmp, const void *image, size_t size)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return errno;
    const char *p = image;
    int e = 0;
    while (size > 0 && !e) {
        ssize_t w = write(fd, p, size);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) e = w < 0 ? errno : ENOSPC;
        else {
            p += w;
            size -= (size_t)w;
        }
    }
    if (!e && fsync(fd) != 0) e = errno;
    if (close(fd) != 0 && !e) e = errno;
    return e;
}

mdf_status mdf_ckpt_write(const mdf_ckpt *c, mdf_error *err)
{
    size_t len = strlen(c->path);
    char *tmp = malloc(len + 5);
    if (!tmp) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to write checkpoint '%s'", c->path);
    memcpy(tmp, c->path, len);
    memcpy(tmp + len, ".tmp", 5);
    uint32_t crc = 0;
    void *image = NULL;
    size_t size = 0;
    mdf_status st = arrays_checksum(c, &crc, err);
    if (st == MDF_OK) st = build_image(c, crc, &image, &size, err);
    int e = st == MDF_OK ? write_image(tmp, image, size) : 0;
    free(image);
    if (e) {
        struct stat sb;
        int kept = stat(c->path, &sb) == 0;
        st = mdf_error_set(err, MDF_ERR_IO, "cannot write checkpoint '%s' (writing '%s': %s): %s; free disk space "
                           "or give the checkpoint a folder that is writable and has room, then %s", c->path, tmp,
                           strerror(e), kept ? "the previous checkpoint is kept" : "no checkpoint was written",
                           kept ? "resume from it" : "run again");
    }
    if (st == MDF_OK && rename(tmp, c->path) != 0)
        st = mdf_error_set(err, MDF_ERR_IO, "checkpoint '%s': cannot move '%s' over it: %s", c->path, tmp,
                           strerror(errno));
    if (st == MDF_OK) {
        /* The rename itself reaches the disk with the folder. */
        char *dir = strdup(c->path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (dir) {
            if (slash == dir) slash[1] = '\0';
            else if (slash) *slash = '\0';
            fsync_path(slash ? dir : ".", 1);
        }
        free(dir);
    } else unlink(tmp);
    free(tmp);
    return st;
}

typedef struct read_state {
    mdf_ckpt *c;
    mdf_error *err;
    mdf_status st;
    int64_t left; /* file bytes not yet claimed by an array */
} read_state;

/* Arrays are written whole, uncompressed: together they fit in the file. An
 * extent is only a header (a terabyte never written costs a few bytes), so a
 * damaged or hostile file is caught here, before malloc is asked for it. */
static int fits_in_file(read_state *r, const char *name, hssize_t bytes)
{
    if (bytes <= r->left) {
        r->left -= bytes;
        return 1;
    }
    r->st = mdf_error_set(r->err, MDF_ERR_PARSE,
                          "checkpoint '%s': array '%s' claims %lld bytes, more than the file holds (%lld left): "
                          "the file is damaged or not an mdflow checkpoint; start afresh without resuming",
                          r->c->path, name, (long long)bytes, (long long)r->left);
    return 0;
}

static herr_t read_one(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    read_state *r = data;
    hid_t ds = H5Dopen2(group, name, H5P_DEFAULT);
    if (ds < 0) {
        r->st = h5_fail(r->err, MDF_ERR_PARSE, r->c->path, "an entry is not a dataset (not an mdflow checkpoint?)");
        return -1;
    }
    hid_t space = H5Dget_space(ds);
    hssize_t bytes = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    int64_t elem = 0;
    hid_t at = H5Aexists(ds, "elem_size") > 0 ? H5Aopen(ds, "elem_size", H5P_DEFAULT) : -1;
    int ok = bytes >= 0 && at >= 0 && H5Aread(at, H5T_NATIVE_INT64, &elem) >= 0 && elem > 0 &&
             bytes % elem == 0;
    /* Arrays are written whole, as contiguous bytes: one that declares more
     * than the file stores is damaged, and memory follows what is stored,
     * never a declared extent. */
    int short_array = ok && H5Dget_storage_size(ds) < (hsize_t)bytes;
    int fits = !ok || short_array || fits_in_file(r, name, bytes);
    ok = ok && !short_array && fits;
    unsigned char *data_buf = ok ? malloc(bytes ? (size_t)bytes : 1) : NULL;
    if (short_array) {
        r->st = mdf_error_set(r->err, MDF_ERR_PARSE, "checkpoint '%s': array '%s' declares %lld bytes but the file "
                              "stores %llu (damaged): start afresh without resuming", r->c->path, name,
                              (long long)bytes, (unsigned long long)H5Dget_storage_size(ds));
    } else if (!fits) {
        /* fits_in_file said why */
    } else if (ok && !data_buf) {
        r->st = mdf_error_set(r->err, MDF_ERR_NOMEM, "no memory to read checkpoint '%s'", r->c->path);
        ok = 0;
    } else if (ok && bytes > 0 && H5Dread(ds, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, data_buf) < 0) {
        r->st = h5_fail(r->err, MDF_ERR_PARSE, r->c->path, "an array cannot be read (damaged file)");
        ok = 0;
    } else if (!ok) {
        r->st = mdf_error_set(r->err, MDF_ERR_PARSE, "checkpoint '%s': array '%s' has no valid elem_size (damaged, "
                              "or not an mdflow checkpoint)", r->c->path, name);
    }
    if (at >= 0) H5Aclose(at);
    if (space >= 0) H5Sclose(space);
    H5Dclose(ds);
    if (!ok) {
        free(data_buf);
        return -1;
    }
    r->st = add_owned(r->c, name, data_buf, (size_t)elem, (size_t)bytes / (size_t)elem, r->err);
    return r->st == MDF_OK ? 0 : -1;
}

static int read_root_attr(hid_t file, const char *name, int64_t *v, hssize_t n)
{
    if (H5Aexists(file, name) <= 0) return -1;
    hid_t at = H5Aopen(file, name, H5P_DEFAULT);
    hid_t space = at >= 0 ? H5Aget_space(at) : -1;
    int ok = space >= 0 && H5Sget_simple_extent_npoints(space) == n && H5Aread(at, H5T_NATIVE_INT64, v) >= 0;
    if (space >= 0) H5Sclose(space);
    if (at >= 0) H5Aclose(at);
    return ok ? 0 : -1;
}

/* Every byte read is the one written: a checkpoint damaged on disk would
 * otherwise resume into another trajectory without a word (4 of 20 single
 * flipped bytes did, exit 0). */
static mdf_status verify_checksum(const mdf_ckpt *c, int64_t stored, mdf_error *err)
{
    uint32_t crc = 0;
    mdf_status st = arrays_checksum(c, &crc, err);
    if (st == MDF_OK && (int64_t)crc != stored)
        st = mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s' is damaged: its contents do not match the checksum "
                           "written with them (CRC32C %08x, stored %08llx), so bytes changed after it was written: "
                           "resume from an intact copy, or start afresh without resuming", c->path, (unsigned)crc,
                           (unsigned long long)stored);
    return st;
}

mdf_status mdf_ckpt_read(const char *path, mdf_ckpt **out, mdf_error *err)
{
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return mdf_error_set(err, MDF_ERR_IO, "cannot read checkpoint '%s': %s", path, strerror(errno));
    mdf_ckpt *c = mdf_ckpt_new(path);
    if (!c) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to read checkpoint '%s'", path);
    mdf_status st = MDF_OK;
    int64_t sum = -1;
    mdf_h5_lock();
    H5E_auto2_t old_fn;
    void *old_data;
    H5Eget_auto2(H5E_DEFAULT, &old_fn, &old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        H5Eclear2(H5E_DEFAULT);
        st = mdf_error_set(err, MDF_ERR_PARSE, "cannot read checkpoint '%s': not an HDF5 file, or damaged (checkpoints "
                           "are replaced atomically, so this is not a checkpoint mdflow wrote): start afresh without "
                           "resuming", path);
    } else {
        int64_t version = 0, sizes[8], want[8];
        struct_sizes(want);
        if (read_root_attr(file, "mdflow_checkpoint", &version, 1) != 0)
            st = mdf_error_set(err, MDF_ERR_PARSE, "'%s' is an HDF5 file but not an mdflow checkpoint (no "
                               "mdflow_checkpoint attribute): give the checkpoint file the run wrote", path);
        else if (version != MDF_CKPT_LAYOUT)
            st = mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s' has layout version %lld, this mdflow reads "
                               "version %d (3 added frozen-atom counts, 4 a checksum, 5 atoms' input indices): resume with the mdflow that wrote it, or start "
                               "afresh", path, (long long)version, MDF_CKPT_LAYOUT);
        else if (read_root_attr(file, "checksum", &sum, 1) != 0)
            st = mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s' is damaged: its checksum attribute is missing: "
                               "resume from an intact copy, or start afresh without resuming", path);
        else if (read_root_attr(file, "sizes", sizes, 8) != 0 || memcmp(sizes, want, sizeof want) != 0)
            st = mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s' was written by a build with other structure "
                               "sizes or byte order: resume with the build that wrote it, or start afresh", path);
        if (st == MDF_OK) {
            read_state r = {.c = c, .err = err, .st = MDF_OK, .left = (int64_t)sb.st_size};
            hsize_t idx = 0;
            if (H5Literate(file, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, read_one, &r) < 0)
                st = r.st != MDF_OK ? r.st : h5_fail(err, MDF_ERR_PARSE, path, "its arrays cannot be listed");
        }
        H5Fclose(file);
    }
    H5Eset_auto2(H5E_DEFAULT, old_fn, old_data);
    mdf_h5_unlock();
    if (st == MDF_OK) st = verify_checksum(c, sum, err);
    if (st != MDF_OK) {
        mdf_ckpt_free(c);
        return st;
    }
    *out = c;
    return MDF_OK;
}
