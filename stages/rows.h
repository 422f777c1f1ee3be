/* mdflow — the row collector (internal): host-side hooks that write one
 * record per system and step (the thermo log, the CSV log) submit one
 * host-view task per shard; the collector gathers the shards' rows of a step
 * and hands them over in batch order, steps in order, without the host
 * waiting. Each shard reports its steps in order (the sequence token), and
 * a step completes only with its last shard, so steps complete in order. */
#ifndef MDF_ROWS_H
#define MDF_ROWS_H

#include "hook_internal.h"

/* Receives the rows of one step (batch order); runs on a worker, under the
 * collector's lock, one step at a time, in step order. */
typedef void (*mdf_rows_emit)(void *user, int64_t step, const mdf_hook_row *rows, size_t n);

typedef struct mdf_rows mdf_rows;

/* keep: as mdf_hook_rows (0 every system, 1 the stage's and the just
 * converged, 2 just converged). every: the hook's frequency; window: steps
 * in flight (both size the ring of steps being collected). */
mdf_status mdf_rows_create(const mdf_batch *b, int keep, int64_t every, int window, mdf_rows_emit emit,
                           void *user, mdf_rows **out, mdf_error *err);
/* Submits the host-view task of one shard for ctx->step. */
int mdf_rows_submit(mdf_rows *c, const mdf_hook_ctx *ctx);
/* After every task completed. */
void mdf_rows_destroy(mdf_rows *c);

#endif
