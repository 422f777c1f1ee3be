/* mdflow fuzz targets — HDF5 files built from fuzz input.
 *
 * Mutating the bytes of an HDF5 file mostly finds bugs in libhdf5's own
 * parser (Debian's 1.10: a heap overflow in H5Aexists, leaks in H5Gopen2 on
 * damaged object headers), which mdflow can neither fix nor avoid. The HDF5
 * targets therefore read the input as a description of a file: which
 * datasets and attributes exist, their types, shapes (including huge
 * declared extents with nothing stored) and values. The target writes that
 * file with libhdf5 and gives it to mdflow's reader, whose checks are what
 * is under test. A zero byte always means "as mdflow writes it", so an input
 * of zeros describes a valid file and mutations are departures from it. */
#ifndef MDF_FUZZ_H5GEN_H
#define MDF_FUZZ_H5GEN_H

#include <hdf5.h>
#include <math.h>
#include "fuzz.h"

typedef struct fz_bytes {
    const uint8_t *p;
    size_t n, at;
} fz_bytes;

/* The next byte, 0 once the input is used up (so short inputs are valid files). */
static inline unsigned fz_u8(fz_bytes *b) { return b->at < b->n ? b->p[b->at++] : 0u; }

/* A double: the valid value v, or one of the values that break readers. */
static inline double fz_double(fz_bytes *b, double v)
{
    static const double odd[] = {NAN, INFINITY, -INFINITY, 1e308, -1e308, 0.0, -0.0, 1e-320, -1.0, 4.5e15};
    unsigned c = fz_u8(b);
    if (c == 0) return v;
    if (c <= sizeof odd / sizeof odd[0]) return odd[c - 1];
    return v + (double)(int)(c - 128) * 0.37;
}

/* An integer: v, or a departure (negative, huge, off by a few). */
static inline int64_t fz_int(fz_bytes *b, int64_t v)
{
    static const int64_t odd[] = {-1, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, 0, 1, (int64_t)1 << 40};
    unsigned c = fz_u8(b);
    if (c == 0) return v;
    if (c <= sizeof odd / sizeof odd[0]) return odd[c - 1];
    return v + (int64_t)(c % 7) - 3;
}

/* Rows of a dataset: the valid count, or a departure; *huge is set for a
 * declared extent far beyond what is stored (chunked, never written). */
static inline hsize_t fz_rows(fz_bytes *b, hsize_t valid, int *huge)
{
    unsigned c = fz_u8(b);
    *huge = 0;
    if (c == 0 || c > 16) return valid;
    if (c <= 4) return valid + c;
    if (c <= 8) return valid > c - 4 ? valid - (c - 4) : 0;
    *huge = 1;
    return (hsize_t)1 << (20 + 3 * (c - 9)); /* 2^20 .. 2^41 rows */
}

/* The HDF5 type of code k (0: the valid one, `valid`). */
static inline hid_t fz_type(unsigned k, hid_t valid)
{
    static const hid_t *others[] = {&H5T_NATIVE_DOUBLE_g, &H5T_NATIVE_FLOAT_g, &H5T_NATIVE_INT64_g,
                                    &H5T_NATIVE_INT32_g, &H5T_NATIVE_INT8_g, &H5T_NATIVE_UCHAR_g};
    if (k == 0) return valid;
    return *others[k % (sizeof others / sizeof others[0])];
}

/* Writes dataset `name` under loc: rows x width (x width2) elements of
 * type `type` (width 0: rank 1; width2 0: rank 2), values taken from vals
 * as doubles (repeated past nvals; HDF5 converts), or with a huge declared
 * extent and nothing written. Returns 0 or -1. */
static inline int fz_write_dataset(hid_t loc, const char *name, hid_t type, hsize_t rows, hsize_t width,
                                   hsize_t width2, int huge, const double *vals, size_t nvals)
{
    hsize_t dims[3] = {rows, width, width2}, maxd[3] = {H5S_UNLIMITED, width, width2};
    hsize_t chunk[3] = {64, width ? width : 1, width2 ? width2 : 1};
    int rank = width == 0 ? 1 : width2 == 0 ? 2 : 3;
    hid_t space = H5Screate_simple(rank, dims, huge ? maxd : NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (huge) H5Pset_chunk(dcpl, rank, chunk);
    hid_t ds = space >= 0 ? H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
    int ok = ds >= 0;
    size_t n = (size_t)rows * (size_t)(width ? width : 1) * (size_t)(width2 ? width2 : 1);
    if (ok && !huge && n > 0) {
        double *buf = malloc(n * sizeof *buf);
        ok = buf != NULL;
        for (size_t i = 0; ok && i < n; i++) buf[i] = nvals ? vals[i % nvals] : 0.0;
        /* Out-of-range conversions are HDF5's business: keep what it writes. */
        if (ok) H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        free(buf);
    }
    if (ds >= 0) H5Dclose(ds);
    H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    return ok ? 0 : -1;
}

/* A scalar or vector int64 attribute, or a string attribute. */
static inline void fz_attr_int(hid_t loc, const char *name, const int64_t *v, hsize_t n)
{
    hid_t as = H5Screate_simple(1, &n, NULL);
    hid_t at = as >= 0 ? H5Acreate2(loc, name, H5T_NATIVE_INT64, as, H5P_DEFAULT, H5P_DEFAULT) : -1;
    if (at >= 0) {
        H5Awrite(at, H5T_NATIVE_INT64, v);
        H5Aclose(at);
    }
    if (as >= 0) H5Sclose(as);
}

static inline void fz_attr_str(hid_t loc, const char *name, const char *s)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(s) + 1);
    hid_t as = H5Screate(H5S_SCALAR);
    hid_t at = H5Acreate2(loc, name, t, as, H5P_DEFAULT, H5P_DEFAULT);
    if (at >= 0) {
        H5Awrite(at, t, s);
        H5Aclose(at);
    }
    H5Sclose(as);
    H5Tclose(t);
}

#endif
