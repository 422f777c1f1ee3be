/* mdflow — checkpoint files (internal): named byte arrays in one HDF5 file.
 *
 * A checkpoint is not an interchange format: every array of the run's state
 * (batch arrays of POD structs, integrator workspaces, sampler and inflight
 * counters, hooks' positions, final frames already handed out) is stored
 * raw, as a 1-D dataset of bytes with an `elem_size` attribute, in the root
 * group of the file. The root carries `mdflow_checkpoint` (the layout
 * version) and `sizes` checks the sizes of the structs on load, so that a
 * file written by another build or version is refused with a clear error
 * instead of being misread.
 *
 * The root's `checksum` is a CRC32C of every array (name, element size,
 * count, bytes) in name order, checked on load: a damaged file is refused
 * instead of resuming into another trajectory.
 *
 * Writes are atomic: the file is built in memory (HDF5's core driver), then
 * written with write() as PATH.tmp, fsync'ed and renamed over PATH (and the
 * folder fsync'ed), so a kill during a checkpoint leaves the previous one
 * intact and PATH either does not exist or is complete. A full disk is an
 * errno of ours with the file named; HDF5 never holds a half-written file
 * open. Every HDF5 call runs under mdf_h5_lock() (io/h5io.h). */
#ifndef MDF_CHECKPOINT_H
#define MDF_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include "mdflow/error.h"
#include "mdflow/frame.h"
#include "mdflow/batch.h"

/* 2: mdf_sys_info.source (the sampler index of each system in flight)
 * 3: mdf_sys_info.nfrozen (counted again from the atoms' flags on load)
 * 4: the `checksum` attribute (older checkpoints are refused: no checksum)
 * 5: mdf_atom_info.index (each stored atom's input index: large systems
 *    are stored in a spatial order) */
#define MDF_CKPT_LAYOUT 5

/* ---- growable byte buffers --------------------------------------------------- */

typedef struct mdf_bytes {
    unsigned char *p;
    size_t n, cap;
    int failed;         /* an allocation failed: the buffer is incomplete */
} mdf_bytes;

void mdf_bytes_put(mdf_bytes *b, const void *data, size_t n);
void mdf_bytes_put_i64(mdf_bytes *b, int64_t v);
void mdf_bytes_put_str(mdf_bytes *b, const char *s);
void mdf_bytes_free(mdf_bytes *b);

/* A reader over a byte array; failed is set when it runs past the end. */
typedef struct mdf_bytes_in {
    const unsigned char *p;
    size_t n, at;
    int failed;
} mdf_bytes_in;

void mdf_bytes_get(mdf_bytes_in *in, void *out, size_t n);
int64_t mdf_bytes_get_i64(mdf_bytes_in *in);
/* A string of the input, newly allocated (NULL once failed). */
char *mdf_bytes_get_str(mdf_bytes_in *in);

/* A frame (every field, extra columns included) and its view, packed. */
void mdf_ckpt_pack_frame(mdf_bytes *b, const mdf_frame *f, const mdf_system_view *v);
mdf_status mdf_ckpt_unpack_frame(mdf_bytes_in *in, mdf_frame *f, mdf_system_view *v, mdf_error *err);

/* CRC32C (Castagnoli) of n bytes, continuing crc (0 to start). */
uint32_t mdf_crc32c(uint32_t crc, const void *data, size_t n);

/* FNV-1a, 64 bits. */
uint64_t mdf_hash(uint64_t h, const void *data, size_t n);
#define MDF_HASH_INIT 14695981039346656037ull
uint64_t mdf_hash_i64(uint64_t h, int64_t v);
uint64_t mdf_hash_f64(uint64_t h, double v);
uint64_t mdf_hash_str(uint64_t h, const char *s);

/* ---- the file ------------------------------------------------------------------ */

typedef struct mdf_ckpt mdf_ckpt;

/* An empty checkpoint to fill and write to path. */
mdf_ckpt *mdf_ckpt_new(const char *path);
void mdf_ckpt_free(mdf_ckpt *c);
const char *mdf_ckpt_path(const mdf_ckpt *c);

/* Adds (copies) n elements of elem bytes under name ('.' separates parts of
 * a name; no '/'). */
mdf_status mdf_ckpt_put(mdf_ckpt *c, const char *name, const void *data, size_t elem, size_t n, mdf_error *err);
mdf_status mdf_ckpt_put_i64(mdf_ckpt *c, const char *name, const int64_t *v, size_t n, mdf_error *err);

/* Writes the file atomically (PATH.tmp, fsync, rename). */
mdf_status mdf_ckpt_write(const mdf_ckpt *c, mdf_error *err);

/* Reads a whole checkpoint into memory; errors name the file (missing, not
 * HDF5, not a checkpoint, another layout or build). */
mdf_status mdf_ckpt_read(const char *path, mdf_ckpt **out, mdf_error *err);

/* The array `name` of elements of elem bytes, and its element count; NULL
 * with an error naming the file and the array when it is missing or has
 * another element size. With want != (size_t)-1 the count must be want. */
const void *mdf_ckpt_get(const mdf_ckpt *c, const char *name, size_t elem, size_t want, size_t *n, mdf_error *err);
/* 1 when the checkpoint has an array of that name. */
int mdf_ckpt_has(const mdf_ckpt *c, const char *name);
/* One int64 value (array of one element). */
mdf_status mdf_ckpt_get_i64(const mdf_ckpt *c, const char *name, int64_t *v, mdf_error *err);

#endif
