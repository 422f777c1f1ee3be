/* mdflow — sinks inside a run (internal): what the snapshot hooks use.
 *
 * A staging buffer holds the systems one pack task took from one shard, in
 * the packed layout (codelets/sink/sink_kernel.h), with a small counter
 * handle beside it. mdf_sink_submit appends it to the sink: one task per
 * sink of a chain (a device sink's append runs where its storage lives; a
 * host or HDF5 sink's is a CPU task ordered by the sink's token), then a
 * check that every system found a place. Failures inside these tasks go to
 * the callback given to mdf_sink_prepare (the run's control block). */
#ifndef MDF_SINK_INTERNAL_H
#define MDF_SINK_INTERNAL_H

#include <starpu.h>
#include "mdflow/sink.h"

typedef struct mdf_sink_staging {
    starpu_data_handle_t buf, cnt;
    void *buf_mem;
    int64_t *cnt_mem;
    int64_t sys_cap, atom_cap;
} mdf_sink_staging;

mdf_status mdf_sink_staging_create(mdf_sink_staging *st, int64_t sys_cap, int64_t atom_cap, mdf_error *err);
/* Unregisters (waiting for the tasks that use it) and frees. */
void mdf_sink_staging_destroy(mdf_sink_staging *st);

typedef void (*mdf_sink_fail_fn)(void *user, mdf_status code, const char *message);

/* Readies the sink (and every sink of a chain) for task submissions; fail
 * receives the first error of a write task. StarPU must be running. */
mdf_status mdf_sink_prepare(mdf_sink *s, mdf_sink_fail_fn fail, void *user, mdf_error *err);
/* Submits the append tasks and the fullness check for a staging buffer
 * that a pack task fills. Returns 0 or StarPU's error code. */
int mdf_sink_submit(mdf_sink *s, const mdf_sink_staging *st);
/* Waits for every write submitted to the sink. */
void mdf_sink_wait(mdf_sink *s);

/* Sinks of a chain (1 for a single sink), their lengths and truncation:
 * what a checkpoint records and a resume restores. */
int mdf_sink_nmembers(const mdf_sink *s);
int64_t mdf_sink_member_length(mdf_sink *s, int j);
mdf_status mdf_sink_member_truncate(mdf_sink *s, int j, int64_t length, mdf_error *err);

#endif
