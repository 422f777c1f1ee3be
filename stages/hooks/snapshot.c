/* mdflow — snapshot hooks: the stage's systems every N steps, or the systems
 * that just converged, written to a sink (include/mdflow/sink.h).
 *
 * Per shard and due step, a pack task (CPU or CUDA, next to the data) copies
 * the selected systems into a staging buffer; the sink's append tasks then
 * store them (an HDF5 write is a CPU task that reads only the staging
 * buffer, so the shard's next steps go on meanwhile). Each shard has a ring
 * of staging buffers: a buffer is reused only once its previous contents are
 * stored (StarPU orders the pack's write after the appends' reads), which is
 * the back-pressure that keeps a slow disk from piling up memory. */
#include <stdlib.h>
#include <string.h>
#include "../hook_internal.h"
#include "../../io/sink_internal.h"
#include "../../codelets/sink/sink_codelet.h"

#define MDF_SNAPSHOT_RING 3

typedef struct snapshot_impl {
    mdf_sink *sink;           /* borrowed: it outlives the runs */
    int32_t mode;             /* MDF_PACK_STATUS or MDF_PACK_CONVERGED */
    double dt_fs;
    mdf_run_control *ctl;
    int nshards;
    mdf_sink_staging *ring;   /* nshards × MDF_SNAPSHOT_RING */
    int64_t *next;            /* per shard: writes so far */
} snapshot_impl;

static void release_ring(snapshot_impl *impl)
{
    for (int k = 0; impl->ring && k < impl->nshards * MDF_SNAPSHOT_RING; k++)
        mdf_sink_staging_destroy(&impl->ring[k]);
    free(impl->ring);
    free(impl->next);
    impl->ring = NULL;
    impl->next = NULL;
    impl->nshards = 0;
}

static void fail_run(void *user, mdf_status code, const char *message)
{
    mdf_run_fail((mdf_run_control *)user, code, "%s", message);
}

static mdf_status snapshot_begin(mdf_hook *h, const mdf_hook_begin *b, mdf_error *err)
{
    snapshot_impl *impl = (snapshot_impl *)h->impl;
    release_ring(impl);
    impl->ctl = b->ctl;
    impl->dt_fs = b->dt_fs;
    mdf_status st = mdf_sink_prepare(impl->sink, fail_run, b->ctl, err);
    if (st != MDF_OK) return st;
    int n = b->b->nshards;
    impl->ring = calloc((size_t)n * MDF_SNAPSHOT_RING, sizeof *impl->ring);
    impl->next = calloc((size_t)n, sizeof *impl->next);
    if (!impl->ring || !impl->next) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the snapshot hook");
    impl->nshards = n;
    for (int k = 0; st == MDF_OK && k < n; k++) {
        const mdf_shard *sh = &b->b->shards[k];
        for (int r = 0; st == MDF_OK && r < MDF_SNAPSHOT_RING; r++)
            st = mdf_sink_staging_create(&impl->ring[k * MDF_SNAPSHOT_RING + r], sh->sys_cap, sh->atom_cap, err);
    }
    return st;
}

static int snapshot_submit(mdf_hook *h, const mdf_hook_ctx *c)
{
    snapshot_impl *impl = (snapshot_impl *)h->impl;
    const mdf_shard *sh = c->sh;
    int k = sh->index;
    mdf_sink_staging *buf = &impl->ring[k * MDF_SNAPSHOT_RING + impl->next[k]++ % MDF_SNAPSHOT_RING];
    mdf_pack_args a = {.work = sh->natoms, .step = c->step, .sys_cap = buf->sys_cap, .atom_cap = buf->atom_cap,
                       .dt_fs = impl->dt_fs, .nsys = sh->nsys, .mode = impl->mode, .status = c->status,
                       .target = c->target};
    int ret = mdf_insert_pack(sh->pos, sh->vel, sh->force, sh->atoms, sh->sys, sh->res, buf->buf, buf->cnt, &a);
    return ret == 0 ? mdf_sink_submit(impl->sink, buf) : ret;
}

static mdf_status snapshot_end(mdf_hook *h, mdf_error *err)
{
    (void)err;
    snapshot_impl *impl = (snapshot_impl *)h->impl;
    release_ring(impl); /* unregistering waits for the last writes */
    return MDF_OK;
}

/* Checkpoints: the length of every sink of the chain. */
static long snapshot_save(mdf_hook *h, void *buf, size_t cap)
{
    snapshot_impl *impl = (snapshot_impl *)h->impl;
    int n = mdf_sink_nmembers(impl->sink);
    size_t need = sizeof(int64_t) * (size_t)(n + 1);
    if (cap < need) return -1;
    int64_t *v = (int64_t *)buf;
    v[0] = n;
    for (int j = 0; j < n; j++) v[j + 1] = mdf_sink_member_length(impl->sink, j);
    return (long)need;
}

static mdf_status snapshot_restore(mdf_hook *h, const void *buf, size_t n, mdf_error *err)
{
    snapshot_impl *impl = (snapshot_impl *)h->impl;
    int64_t v[9];
    int members = mdf_sink_nmembers(impl->sink);
    if (n != sizeof(int64_t) * (size_t)(members + 1) || n > sizeof v)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "the checkpoint's record of hook '%s' does not match its sink (%d sinks): was the "
                             "workflow's output changed?", h->name, members);
    memcpy(v, buf, n);
    mdf_status st = MDF_OK;
    for (int j = 0; st == MDF_OK && j < members; j++) {
        int64_t have = mdf_sink_member_length(impl->sink, j);
        if (have < v[j + 1])
            return mdf_error_set(err, MDF_ERR_IO,
                                 "hook '%s': its sink holds %lld systems but held %lld at the checkpoint: the "
                                 "output was changed or lost since", h->name, (long long)have, (long long)v[j + 1]);
        st = mdf_sink_member_truncate(impl->sink, j, v[j + 1], err);
    }
    return st;
}

static void snapshot_free(void *p)
{
    snapshot_impl *impl = (snapshot_impl *)p;
    if (impl) release_ring(impl);
    free(impl);
}

#define SNAPSHOT_OPS(kind_, needs_)                                                                           \
    {.kind = kind_, .needs = needs_, .begin = snapshot_begin, .submit = snapshot_submit, .end = snapshot_end,   \
     .destroy_impl = snapshot_free, .save = snapshot_save, .restore = snapshot_restore}

static const mdf_hook_ops snapshot_ops = SNAPSHOT_OPS("snapshot", MDF_HOOK_NEEDS_FMAX | MDF_HOOK_NEEDS_VIRIAL);
/* Converged snapshots fire at every step where systems may converge: they
 * take the convergence task's fmax, and not the virial (which would cost
 * every step). */
static const mdf_hook_ops converged_ops = SNAPSHOT_OPS("converged_snapshot", 0);

static mdf_status create(mdf_sink *sink, int32_t mode, mdf_hook_point point, int64_t every, const mdf_hook_ops *ops,
                         mdf_hook **out, mdf_error *err)
{
    *out = NULL;
    if (!sink) return mdf_error_set(err, MDF_ERR_INVALID, "a snapshot hook needs a sink");
    snapshot_impl *impl = calloc(1, sizeof *impl);
    if (!impl) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a snapshot hook");
    impl->sink = sink;
    impl->mode = mode;
    return mdf_hook_new(ops, ops->kind, point, every, impl, out, err);
}

mdf_status mdf_hook_create_snapshot(mdf_sink *sink, int64_t every, mdf_hook **out, mdf_error *err)
{
    if (every < 1)
        return mdf_error_set(err, MDF_ERR_INVALID, "a snapshot every %lld steps: use every >= 1", (long long)every);
    return create(sink, MDF_PACK_STATUS, MDF_AFTER_STEP, every, &snapshot_ops, out, err);
}

mdf_status mdf_hook_create_converged_snapshot(mdf_sink *sink, mdf_hook **out, mdf_error *err)
{
    return create(sink, MDF_PACK_CONVERGED, MDF_ON_CONVERGE, 1, &converged_ops, out, err);
}
