/* mdflow — inflight batching (internal): the batch a sampler feeds, and the
 * refill that hands finished systems out and brings new ones in, in place. */
#ifndef MDF_INFLIGHT_H
#define MDF_INFLIGHT_H

#include "../dataflow/batch_internal.h"
#include "mdflow/stage.h"
#include "checkpoint.h"

typedef struct mdf_inflight mdf_inflight;

/* Checks every system of the dataset against the batch rules and the model
 * (so that no error waits hours for its system), takes the first systems
 * and builds a batch whose capacities are the sampler's budgets. Every
 * system starts with `status` and the ENTERED flag (its step 0 is due).
 * With `resume`, the batch, the sampler's position and the counters come
 * from that checkpoint instead, after checking that it belongs to this
 * dataset and these budgets (the error says what differs). */
mdf_status mdf_inflight_create(const mdf_inflight_config *cfg, const mdf_model *m, double skin, int32_t status,
                               int32_t exit, const mdf_ckpt *resume, mdf_batch **batch, mdf_inflight **out,
                               mdf_error *err);
void mdf_inflight_destroy(mdf_inflight *in);

int mdf_inflight_exhausted(const mdf_inflight *in);
int64_t mdf_inflight_interval(const mdf_inflight *in);
double mdf_inflight_fraction(const mdf_inflight *in);

/* With no task pending on the batch: hands every system whose status is
 * outside [lo, hi] (finished: `exit`, or quarantined) to on_exit, removes
 * them, and appends systems from the sampler (status lo, flag ENTERED)
 * where a shard has room. Returns how many came in through *added. */
/* (*removed: how many left.) */
mdf_status mdf_inflight_refill(mdf_inflight *in, mdf_batch *b, int32_t lo, int32_t hi, size_t *added, size_t *removed,
                               mdf_error *err);
/* At the end: hands every system still in the batch to on_exit. */
mdf_status mdf_inflight_finish(mdf_inflight *in, mdf_batch *b, mdf_error *err);

/* Systems of the dataset and those the sampler has not handed in yet: for
 * progress reports. */
void mdf_inflight_counts(const mdf_inflight *in, int64_t *total, int64_t *waiting);

/* Systems handed out at the exit status, and those flagged as budget exits. */
int64_t mdf_inflight_exited(const mdf_inflight *in, int64_t *budget_exits);

/* Checkpoints. With no task pending and the batch on the host: adds the
 * batch's arrays, the sampler's position, the counters, the final frames
 * handed out so far and the fingerprints of the dataset and the budgets. */
mdf_status mdf_inflight_save(const mdf_inflight *in, const mdf_batch *b, mdf_ckpt *ck, mdf_error *err);
/* After a resume: hands the final frames stored in the checkpoint (systems
 * handed out before it was written) to on_exit again, in their order. */
mdf_status mdf_inflight_replay(mdf_inflight *in, const char *path, mdf_error *err);

#endif
