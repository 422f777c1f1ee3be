/* mdflow — inflight batching (internal): the batch a sampler feeds, and the
 * refill that hands finished systems out and brings new ones in, in place. */
#ifndef MDF_INFLIGHT_H
#define MDF_INFLIGHT_H

#include "../dataflow/batch_internal.h"
#include "mdflow/stage.h"
#include "checkpoint.h"

typedef struct mdf_inflight mdf_inflight;

/* A pipeline stage's ports (stages/pipe.c): where its systems come from and
 * where those that reach its exit status go. With ports, the sampler is a
 * stream (dataflow/sampler_internal.h) and a refill:
 *   - sends each finished system on if `room` says the next stage can take
 *     it; otherwise the system stays in the batch (it does not move: its
 *     status is outside the stage) and the refill admits no new system:
 *     back-pressure;
 *   - moves what arrived into the sampler (`pull`) and tells `admitted`
 *     which systems the batch took (their inbox room is free again);
 *   - when the batch then has nothing to move, waits (`wait`) for room
 *     downstream (systems held) or for input (none held, stream open), and
 *     tries again; so a stage idles in a wait, never in empty steps.
 * Systems that leave without reaching the exit status (a run's end, a
 * failure) go to on_exit as in any run. */
typedef struct mdf_stage_ports {
    void *user;
    mdf_status (*pull)(void *user, mdf_sampler *s, mdf_error *err);
    void (*admitted)(void *user, const mdf_sampler *s, size_t index);
    int (*room)(void *user, int64_t natoms);
    /* Sends a finished system on; blocks for room if there is none (the end of a run). */
    mdf_status (*send)(void *user, const mdf_frame *f, const mdf_system_view *v, int64_t index, mdf_error *err);
    mdf_status (*wait)(void *user, int want_input, int want_room, mdf_error *err);
    /* Non-zero once the pipeline stops (another stage failed; err says why): read every step. */
    int (*stopped)(void *user, mdf_error *err);
    /* Atoms that arrived and wait in the inbox, not yet pulled (refill decisions). */
    int64_t (*pending_atoms)(void *user);
    /* 1 when the inbox holds half its capacity or more (refill soon). */
    int (*inbox_pressing)(void *user);
    /* 1 when the next stage has nothing waiting for it (its inbox is empty):
     * finished systems are worth handing on at once. */
    int (*downstream_idle)(void *user);
    /* After each refill pass: finished systems kept in the batch for lack of room. */
    void (*held)(void *user, int64_t n);
    /* The pipeline's shape as this stage sees it (stage, rank, instances...):
     * kept in its checkpoints, which another shape refuses; `layout_text`
     * says it in words for that message. */
    int64_t layout[8];
    char layout_text[160];
} mdf_stage_ports;

/* Renumbers a stage's parts base, base + 1, ... (a pipeline stage after others). */
void mdf_stage_rebase(mdf_stage *s, int32_t base);
/* The neighbour-list skin of its runs (its first part's), and its first status. */
double mdf_stage_skin(const mdf_stage *s);
int32_t mdf_stage_base_status(const mdf_stage *s);

/* mdf_stage_run_inflight with a pipeline stage's ports (NULL: a plain run). */
mdf_status mdf_stage_run_ported(mdf_stage *s, mdf_model *m, const mdf_inflight_config *cfg,
                                const mdf_stage_ports *ports, mdf_stage_report *report, mdf_error *err);

/* Checks every system of the dataset against the batch rules and the model
 * (so that no error waits hours for its system), takes the first systems
 * and builds a batch whose capacities are the sampler's budgets. Every
 * system starts with `status` and the ENTERED flag (its step 0 is due).
 * With `resume`, the batch, the sampler's position and the counters come
 * from that checkpoint instead, after checking that it belongs to this
 * dataset and these budgets (the error says what differs). */
mdf_status mdf_inflight_create(const mdf_inflight_config *cfg, const mdf_model *m, double skin, int32_t status,
                               int32_t exit, const mdf_ckpt *resume, const mdf_stage_ports *ports, mdf_batch **batch,
                               mdf_inflight **out, mdf_error *err);
void mdf_inflight_destroy(mdf_inflight *in);

int mdf_inflight_exhausted(const mdf_inflight *in);
/* Finished systems kept in the batch at the last refill (no room downstream). */
int64_t mdf_inflight_held(const mdf_inflight *in);
/* Atoms waiting to come in (the stream's, and its inbox's): refill decisions. */
int64_t mdf_inflight_pending_atoms(const mdf_inflight *in);
/* 1 when held systems could now be sent on. */
int mdf_inflight_room_for_held(const mdf_inflight *in);
/* 1 when the next stage's inbox is empty (NULL ports: 0). */
int mdf_inflight_downstream_idle(const mdf_inflight *in);
/* 1 when the stage's inbox is half full or more. */
int mdf_inflight_inbox_pressing(const mdf_inflight *in);
/* Non-zero once the pipeline stopped (err says why); 0 without ports. */
int mdf_inflight_stopped(const mdf_inflight *in, mdf_error *err);
int64_t mdf_inflight_interval(const mdf_inflight *in);
double mdf_inflight_fraction(const mdf_inflight *in);

/* With no task pending on the batch: hands every system whose status is
 * outside [lo, hi] (finished: `exit`, or quarantined) to on_exit (or, with
 * ports, sends finished ones on), removes them, and appends systems from
 * the sampler (status lo, flag ENTERED) where a shard has room. Returns how
 * many came in through *added. With ports it waits, as described above,
 * until the batch has something to move or the stream is over. */
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
/* A pipeline stage: moves what waits in its inbox into its sampler, so that
 * a checkpoint holds it (no-op without ports). */
mdf_status mdf_inflight_pull(mdf_inflight *in, mdf_error *err);
/* After a resume: hands the final frames stored in the checkpoint (systems
 * handed out before it was written) to on_exit again, in their order (a
 * pipeline stage sends those that finished it to the next stage again). */
mdf_status mdf_inflight_replay(mdf_inflight *in, const char *path, mdf_error *err);

#endif
