/* mdflow — the row collector. */
#include <stdlib.h>
#include <string.h>
#include "rows.h"
#include "../codelets/host/host_view_codelet.h"

typedef struct rows_slot {
    int64_t step;
    int remaining;             /* shards yet to report */
    mdf_hook_row *rows;        /* by batch index */
    unsigned char *present;
} rows_slot;

struct mdf_rows {
    pthread_mutex_t lock;
    pthread_cond_t emitted;    /* a slot was emitted and is free again */
    size_t nsys;
    int nshards, keep, ring;
    int64_t every;
    mdf_rows_emit emit;
    void *user;
    rows_slot *slots;
    mdf_hook_row *out;         /* gathered rows of one step */
};

static rows_slot *slot_of(mdf_rows *c, int64_t step) { return &c->slots[(step / c->every) % c->ring]; }

static void rows_view(void *user, const mdf_host_view_args *a, const mdf_sys_info *sys, const mdf_sys_result *res)
{
    mdf_rows *c = (mdf_rows *)user;
    pthread_mutex_lock(&c->lock);
    rows_slot *slot = slot_of(c, a->step);
    for (int32_t s = 0; s < a->nsys; s++) {
        size_t n = mdf_hook_rows(sys + s, res + s, 1, a->status, a->target, c->keep, &a->dof,
                                 &slot->rows[a->first_row + s]);
        slot->present[a->first_row + s] = (unsigned char)n;
    }
    if (--slot->remaining == 0) {
        size_t n = 0;
        for (size_t i = 0; i < c->nsys; i++)
            if (slot->present[i]) c->out[n++] = slot->rows[i];
        c->emit(c->user, slot->step, c->out, n);
        pthread_cond_broadcast(&c->emitted);
    }
    pthread_mutex_unlock(&c->lock);
}

mdf_status mdf_rows_create(const mdf_batch *b, int keep, int64_t every, int window, mdf_rows_emit emit,
                           void *user, mdf_rows **out, mdf_error *err)
{
    *out = NULL;
    mdf_rows *c = calloc(1, sizeof *c);
    if (!c) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a row collector");
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->emitted, NULL);
    c->nsys = b->sys_cap; /* rows are slots */
    c->nshards = b->nshards;
    c->keep = keep;
    c->every = every < 1 ? 1 : every;
    /* Due steps in flight, plus slack. The window counts tasks over all
     * shards, so one shard may lag up to window x nshards steps: room for
     * that (within 64 slots) keeps the host from waiting in submit. */
    int64_t w = window > 0 ? window : 1;
    int64_t ring = w * (c->nshards > 0 ? c->nshards : 1) / c->every + 3;
    int64_t floor_ring = w / c->every + 3;
    if (ring > 64) ring = 64;
    if (ring < floor_ring) ring = floor_ring;
    c->ring = (int)ring;
    c->emit = emit;
    c->user = user;
    c->slots = calloc((size_t)c->ring, sizeof *c->slots);
    c->out = calloc(c->nsys ? c->nsys : 1, sizeof *c->out);
    int ok = c->slots && c->out;
    for (int k = 0; ok && k < c->ring; k++) {
        c->slots[k].rows = calloc(c->nsys ? c->nsys : 1, sizeof(mdf_hook_row));
        c->slots[k].present = calloc(c->nsys ? c->nsys : 1, 1);
        ok = c->slots[k].rows && c->slots[k].present;
    }
    if (!ok) {
        mdf_rows_destroy(c);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the rows of %zu systems", b->sys_cap);
    }
    *out = c;
    return MDF_OK;
}

int mdf_rows_submit(mdf_rows *c, const mdf_hook_ctx *ctx)
{
    const mdf_shard *sh = ctx->sh;
    if (sh->index == 0) { /* the first shard of a step opens its slot */
        pthread_mutex_lock(&c->lock);
        rows_slot *slot = slot_of(c, ctx->step);
        /* Shards drift apart by up to window x nshards steps, more than the
         * ring holds: wait until the slot's previous step is emitted. Its
         * tasks were all submitted before this step's, so the wait ends. */
        while (slot->remaining > 0) pthread_cond_wait(&c->emitted, &c->lock);
        slot->step = ctx->step;
        slot->remaining = c->nshards;
        /* Rows are slots; spare ones (and those a refill emptied) hold nobody. */
        memset(slot->present, 0, c->nsys);
        pthread_mutex_unlock(&c->lock);
    }
    mdf_host_view_args a = {.work = sh->nsys, .step = ctx->step, .first_row = ctx->first_row, .nsys = sh->nsys,
                            .status = ctx->status, .target = ctx->target, .shard = sh->index,
                            .point = (int32_t)ctx->point, .dof = ctx->dof,
                            .fn = rows_view, .user = c};
    return mdf_insert_host_view(sh->sys, sh->res, ctx->token, &a);
}

void mdf_rows_destroy(mdf_rows *c)
{
    if (!c) return;
    for (int k = 0; c->slots && k < c->ring; k++) {
        free(c->slots[k].rows);
        free(c->slots[k].present);
    }
    free(c->slots);
    free(c->out);
    pthread_cond_destroy(&c->emitted);
    pthread_mutex_destroy(&c->lock);
    free(c);
}
