/* mdflow — helpers shared by io/h5io.c, io/h5_structures.c and io/h5md.c
 * (private to the HDF5 layer; callers hold mdf_h5_lock()). */
#ifndef MDF_H5_INTERNAL_H
#define MDF_H5_INTERNAL_H

#include <hdf5.h>
#include <stdint.h>
#include "mdflow/error.h"
#include "mdflow/sink.h"

/* Records code and the message, followed by what HDF5's error stack says
 * went wrong at the lowest level (e.g. "errno = 28, No space left on
 * device"), in err. Call it right after the failing HDF5 call (the next
 * HDF5 call clears the stack). Returns code. */
mdf_status mdf_h5_fail(mdf_error *err, mdf_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Why creating or opening `path` failed, from the file system's point of
 * view (missing folder, no permission, not a regular file), or NULL when
 * the file system sees no reason. */
const char *mdf_h5_path_problem(const char *path, int for_create, char *buf, size_t n);

/* After a failed append (st): an I/O error's message gains what the file
 * keeps ("the file keeps the <kept> <unit> appended before") and what to do. */
void mdf_h5_append_failed(mdf_status st, mdf_error *err, long long kept, const char *unit);

/* File access list with libver bounds (LATEST, LATEST), as SWMR needs. */
hid_t mdf_h5_fapl(void);
/* File creation properties of the files we append to (see h5io.c). */
hid_t mdf_h5_fcpl(void);

/* Opens an existing file for SWMR writing; a file left flagged "open for
 * write" by a killed writer is opened with its status flags cleared (as
 * h5clear -s does). Returns the file id or a negative value. */
hid_t mdf_h5_open_swmr_write(const char *path);

/* Opens a file for reading: SWMR read first (a live or killed writer's
 * file), plain read-only otherwise. */
hid_t mdf_h5_open_read(const char *path);

/* Attribute helpers (scalar or small arrays on any object). */
int mdf_h5_attr_string(hid_t obj, const char *name, const char *value);
int mdf_h5_attr_strings(hid_t obj, const char *name, const char *const *values, int n);
int mdf_h5_attr_int(hid_t obj, const char *name, const int *values, int n);
/* Reads a string attribute into buf (NUL-terminated); -1 if absent/other type. */
int mdf_h5_attr_get_string(hid_t obj, const char *name, char *buf, size_t n);
int mdf_h5_attr_get_strings(hid_t obj, const char *name, char (*values)[32], int n);

/* Creates a chunked dataset with unlimited first dimension: rank dims,
 * current first dimension n0, chunk rows chunk0 (clamped to >= 1), deflate
 * level compression (0: none). */
hid_t mdf_h5_create_ext(hid_t loc, const char *name, hid_t type, int rank, const hsize_t *tail_dims,
                        hsize_t n0, hsize_t chunk0, int compression);
/* Rows (first dimension) of a dataset, or -1. */
int64_t mdf_h5_rows(hid_t dset);
/* Extends dset to n0 rows and writes buf (rows [row0, row0 + nrows)) in
 * memory type mtype. Returns 0, or -1 with the HDF5 stack intact. */
int mdf_h5_write_rows(hid_t dset, hid_t mtype, int64_t row0, int64_t nrows, const void *buf);
/* Reads rows [row0, row0 + nrows) into buf. */
int mdf_h5_read_rows(hid_t dset, hid_t mtype, int64_t row0, int64_t nrows, void *buf);
/* Sets the first dimension to n0 rows. */
int mdf_h5_set_rows(hid_t dset, int64_t n0);

/* The checks both writers' appends start with (count > 0): systems
 * [first, first + count) are in snap, which has its CSR arrays, and the
 * `held` entries of the file plus count stay within max (0: no limit).
 * `kind` names the file ("HDF5", "H5MD"), `unit` what it counts
 * ("systems", "frames"). */
mdf_status mdf_h5_check_append(const char *kind, const char *path, const char *unit, const mdf_snapshot *snap,
                               int64_t first, int64_t count, int64_t held, int64_t max, mdf_error *err);

/* Makes sure the file at `path` (open as `file`) has `bytes` of disk space
 * allocated beyond what HDF5 uses, so that the writes and the flush that
 * follow cannot fail for want of space (HDF5 writes the new end-of-file
 * address into the superblock before the data: a write that fails for disk
 * full, quota or file size limit leaves a file that HDF5 refuses to open,
 * "truncated file"). Returns 0, or an errno value (ENOSPC, EDQUOT, EFBIG)
 * with nothing written. */
int mdf_h5_reserve(hid_t file, const char *path, int64_t bytes);

/* 1 eV/Å in kJ mol⁻¹ Å⁻¹ (CODATA 2014: e · N_A / 1000), the force unit of
 * H5MD files (the unit MDAnalysis understands). */
#define MDF_EV_IN_KJ_PER_MOL (1.6021766208e-19 * 6.022140857e23 / 1000.0)

#endif
