/* mdflow — HDF5 writers and readers behind the hdf5 and h5md sinks
 * (internal). Layouts: docs/hdf5.md.
 *
 * Every HDF5 call in mdflow goes through mdf_h5_lock()/mdf_h5_unlock():
 * Debian's libhdf5 is not built thread-safe, and sink writes of different
 * files run in different StarPU CPU tasks at the same time. Calls on one
 * writer are never concurrent (the sink orders them). */
#ifndef MDF_H5IO_H
#define MDF_H5IO_H

#include <stdint.h>
#include "mdflow/error.h"
#include "mdflow/frame.h"
#include "mdflow/sink.h"

void mdf_h5_lock(void);
void mdf_h5_unlock(void);

/* ---- CSR structure datasets ------------------------------------------------- */

typedef struct mdf_h5s_writer mdf_h5s_writer;

/* Creates the file (or opens it to append, o->append) with every dataset
 * chunked and unlimited, then switches to SWMR writing. Errors name the
 * file and what to fix (no such folder, no permission, not a structure
 * file, a dataset missing or of the wrong shape). */
mdf_status mdf_h5s_open(const char *path, const mdf_h5_options *o, mdf_h5s_writer **out, mdf_error *err);
/* Appends packed systems [first, first + count) of snap, then flushes: once
 * this returns, a kill leaves them readable. A failed write (disk full)
 * leaves the file as it was after the last successful append. */
mdf_status mdf_h5s_append(mdf_h5s_writer *w, const mdf_snapshot *snap, int64_t first, int64_t count, mdf_error *err);
int64_t mdf_h5s_length(const mdf_h5s_writer *w);   /* systems stored */
/* Shrinks every dataset to the first nsys systems (resume). */
mdf_status mdf_h5s_truncate(mdf_h5s_writer *w, int64_t nsys, mdf_error *err);
/* System i as a frame (info keys mdf_system_id, mdf_step, mdf_status). */
mdf_status mdf_h5s_read_frame(mdf_h5s_writer *w, int64_t i, mdf_frame *out, mdf_error *err);
mdf_status mdf_h5s_close(mdf_h5s_writer *w, mdf_error *err); /* frees w also on error */

/* ---- H5MD 1.0 trajectories ----------------------------------------------------- */

typedef struct mdf_h5md_writer mdf_h5md_writer;

mdf_status mdf_h5md_open(const char *path, const mdf_h5_options *o, mdf_h5md_writer **out, mdf_error *err);
/* Appends one frame per packed system [first, first + count) to that
 * system's particle group (created on first sight), then flushes. */
mdf_status mdf_h5md_append(mdf_h5md_writer *w, const mdf_snapshot *snap, int64_t first, int64_t count,
                           mdf_error *err);
int64_t mdf_h5md_length(const mdf_h5md_writer *w); /* frames stored, all systems */
/* Forgets the frames written after the first nframes (in write order). */
mdf_status mdf_h5md_truncate(mdf_h5md_writer *w, int64_t nframes, mdf_error *err);
/* Frame i in write order as a frame. */
mdf_status mdf_h5md_read_frame(mdf_h5md_writer *w, int64_t i, mdf_frame *out, mdf_error *err);
mdf_status mdf_h5md_close(mdf_h5md_writer *w, mdf_error *err);

#endif
