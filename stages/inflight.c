/* mdflow — inflight batching: batch creation from a sampler, refills. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include "inflight.h"
#include "checkpoint.h"
#include "../dataflow/compute.h"
#include "../dataflow/sampler_internal.h"
#include "mdflow/runtime.h"

#define MDF_DEFAULT_REFILL 10
/* A refill drains the task window and rebuilds the model's pipeline: on
 * random-packed LJ clusters (bench/pipeline.sh, PIPE_DATASET=random-lj)
 * refilling for every finished system cost 15% of the run. */
#define MDF_DEFAULT_REFILL_FRACTION 0.1

struct mdf_inflight {
    mdf_inflight_config cfg;
    int64_t *shard_pairs;        /* pairs in flight per shard */
    int64_t pair_cap;            /* per shard (0: no pair budget) */
    int64_t exited, budget_exits;
    int32_t exit_status;
    int32_t status;              /* where new systems start */
    int keep_exits;              /* checkpoints: keep the final frames handed out */
    mdf_bytes exits;             /* ... packed (mdf_ckpt_pack_frame), in hand-out order */
    int64_t nexits;
    mdf_bytes exit_sources;      /* ... their dataset indices (a pipeline stage hands them on again) */
    const mdf_stage_ports *ports; /* a pipeline stage's, or NULL */
    unsigned char *handed;       /* by slot, within a refill: handed out, to be removed */
    size_t handed_cap;
    int64_t held;                /* finished systems kept at the last refill (no room downstream) */
    int64_t held_min_atoms;      /* the smallest of them */
};

void mdf_inflight_config_init(mdf_inflight_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->refill_interval = MDF_DEFAULT_REFILL;
    cfg->refill_fraction = MDF_DEFAULT_REFILL_FRACTION;
}

static long long frame_id(const mdf_frame *f, size_t i)
{
    const char *id = mdf_frame_get_info(f, "mdf_system_id");
    return id ? strtoll(id, NULL, 10) : (long long)i;
}

mdf_status mdf_sampler_check_dataset(const mdf_sampler *s, const mdf_model *m, double skin, mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (size_t i = 0; st == MDF_OK && i < mdf_sampler_size(s); i++) {
        const mdf_frame *f = mdf_sampler_frame(s, i);
        st = mdf_batch_check_frame(f, i, err);
        if (st == MDF_OK) st = mdf_compute_check_frame(m, skin, f, i, frame_id(f, i), err);
    }
    return st;
}

/* Systems the batch can ever hold: the budget, or as many of the smallest
 * system as the atom budget allows. */
static int64_t system_capacity(const mdf_sampler *s, const mdf_sampler_config *c)
{
    int64_t smallest = INT64_MAX;
    for (size_t i = 0; i < mdf_sampler_size(s); i++)
        if (mdf_sampler_atoms(s, i) < smallest) smallest = mdf_sampler_atoms(s, i);
    if (smallest < 1) smallest = 1;
    int64_t by_atoms = (c->max_atoms - 1) / smallest;
    if (by_atoms < 1) by_atoms = 1;
    /* Never more slots than the dataset has systems. */
    if (by_atoms > (int64_t)mdf_sampler_size(s)) by_atoms = (int64_t)mdf_sampler_size(s);
    return c->max_systems > 0 && c->max_systems < by_atoms ? c->max_systems : by_atoms;
}

/* The atom budget the batch is built for: the workflow's, but never more
 * than the whole dataset (+1: the sampler keeps strictly below it). Shard
 * capacities follow from it, so a budget of 67 million atoms over a
 * dataset of 200 allocated gigabytes of empty shards. */
static int64_t atom_budget(const mdf_sampler *s, const mdf_sampler_config *c)
{
    int64_t total = 0;
    for (size_t i = 0; i < mdf_sampler_size(s); i++) total += mdf_sampler_atoms(s, i);
    return c->max_atoms < total + 1 ? c->max_atoms : total + 1;
}

static int64_t largest_system(const mdf_sampler *s)
{
    int64_t largest = 1;
    for (size_t i = 0; i < mdf_sampler_size(s); i++)
        if (mdf_sampler_atoms(s, i) > largest) largest = mdf_sampler_atoms(s, i);
    return largest;
}

/* Shards of equal capacity, each able to hold the largest system (a shard
 * too small for a waiting system would make it wait for ever). By default
 * one per worker (at most atoms/2048): an inflight batch is small, and more
 * shards only add tasks; measured on 2 CPUs (bench/pipeline.sh), 2 shards
 * ran the relax + md pipeline 10% faster than 4 or 8. */
static int choose_shards(const mdf_sampler *s, const mdf_sampler_config *sc, int64_t sys_cap, int requested)
{
    int workers = mdf_runtime_plan_workers();
    int64_t budget = atom_budget(s, sc);
    int64_t n = requested > 0 ? requested : mdf_batch_default_shards((size_t)sys_cap, budget);
    if (requested <= 0 && n > workers) n = workers > 0 ? workers : 1;
    int64_t by_size = (budget - 1) / largest_system(s);
    if (n > by_size) n = by_size;
    if (n > sys_cap) n = sys_cap;
    if (n > (int64_t)mdf_sampler_size(s)) n = (int64_t)mdf_sampler_size(s);
    return n < 1 ? 1 : (int)n;
}

/* Every system of a fresh batch has its step 0 due, as a refill's do. */
static mdf_status mark_entered(mdf_batch *b, mdf_error *err)
{
    mdf_status st = mdf_batch_acquire_all(b, err);
    if (st != MDF_OK) return st;
    for (size_t i = 0; i < b->nsys; i++) b->sys[b->sys_slot[i]].flags |= MDF_SYS_ENTERED;
    mdf_batch_release_all(b);
    return MDF_OK;
}

/* The first batch, filled shard by shard as refills fill them. */
static mdf_status first_batch(mdf_inflight *in, const mdf_sampler_config *sc, int64_t sys_cap, int nshards,
                              mdf_batch **out, mdf_error *err)
{
    mdf_sampler *s = in->cfg.sampler;
    int nsh = choose_shards(s, sc, sys_cap, nshards);
    int64_t atom_cap = (atom_budget(s, sc) - 1) / nsh, shard_sys = sys_cap / nsh;
    int64_t pair_cap = sc->max_pairs > 0 ? (sc->max_pairs - 1) / nsh : -1;
    size_t *idx = malloc(sizeof *idx * (size_t)(shard_sys * nsh));
    mdf_frame *frames = malloc(sizeof *frames * (size_t)(shard_sys * nsh));
    size_t *first = calloc((size_t)nsh + 1, sizeof *first);
    mdf_status st =
        idx && frames && first ? MDF_OK : mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the first batch");
    size_t n = 0;
    int used = 0;
    for (int k = 0; st == MDF_OK && k < nsh; k++) {
        /* capacity + 1: the sampler keeps strictly below, the shard may fill up */
        size_t got = mdf_sampler_take(s, atom_cap + 1, pair_cap >= 0 ? pair_cap + 1 : -1, shard_sys, idx + n,
                                      (size_t)shard_sys);
        if (got == 0) break; /* the dataset ran out: fewer shards */
        first[k] = n;
        n += got;
        first[k + 1] = n;
        used = k + 1;
    }
    if (st == MDF_OK && used == 0) st = mdf_error_set(err, MDF_ERR_INVALID, "the sampler gave no system for the first batch");
    for (size_t j = 0; st == MDF_OK && j < n; j++)
        frames[j] = *mdf_sampler_frame(s, idx[j]); /* shallow: the batch only reads */
    if (st == MDF_OK) {
        mdf_batch_config bc;
        mdf_batch_config_init(&bc);
        bc.nshards = used;
        bc.initial_status = in->status;
        bc.sources = idx;
        bc.shard_first = first;
        bc.shard_atom_cap = atom_cap;
        bc.shard_sys_cap = shard_sys;
        st = mdf_batch_create(frames, n, &bc, out, err);
        if (st == MDF_OK) st = mark_entered(*out, err);
    }
    in->pair_cap = pair_cap > 0 ? pair_cap : 0;
    free(idx);
    free(frames);
    free(first);
    return st;
}

/* A stream's first batch: the shards of a plain first batch, empty; the
 * first refill fills them as systems arrive (nothing may have arrived yet). */
static mdf_status empty_batch(mdf_inflight *in, const mdf_sampler_config *sc, int64_t sys_cap, int nshards,
                              mdf_batch **out, mdf_error *err)
{
    mdf_sampler *s = in->cfg.sampler;
    int nsh = choose_shards(s, sc, sys_cap, nshards);
    int64_t atom_cap = (atom_budget(s, sc) - 1) / nsh, shard_sys = sys_cap / nsh;
    int64_t pair_cap = sc->max_pairs > 0 ? (sc->max_pairs - 1) / nsh : -1;
    if (atom_cap > INT32_MAX || shard_sys > INT32_MAX || shard_sys < 1)
        return mdf_error_set(err, MDF_ERR_INVALID, "a shard of %lld atoms and %lld systems is out of range",
                             (long long)atom_cap, (long long)shard_sys);
    int32_t *caps = malloc(sizeof *caps * 2 * (size_t)nsh);
    if (!caps) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the first batch");
    for (int k = 0; k < nsh; k++) {
        caps[k] = (int32_t)atom_cap;
        caps[nsh + k] = (int32_t)shard_sys;
    }
    mdf_status st = mdf_batch_alloc_layout(nsh, caps, caps + nsh, out, err);
    free(caps);
    if (st != MDF_OK) return st;
    mdf_batch_register_loaded(*out);
    in->pair_cap = pair_cap > 0 ? pair_cap : 0;
    return MDF_OK;
}

/* By sampler index, not id: ids come from the frames and may be anything. */
static void count_shard_pairs(mdf_inflight *in, const mdf_batch *b)
{
    for (int k = 0; k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        in->shard_pairs[k] = 0;
        for (int32_t s = 0; s < sh->nsys; s++)
            in->shard_pairs[k] += mdf_sampler_pairs(in->cfg.sampler, (size_t)b->sys[sh->sys_off + s].source);
    }
}

static mdf_status load_state(mdf_inflight *in, const mdf_ckpt *ck, mdf_batch **out, mdf_error *err);

mdf_status mdf_inflight_create(const mdf_inflight_config *cfg, const mdf_model *m, double skin, int32_t status,
                               int32_t exit, const mdf_ckpt *resume, const mdf_stage_ports *ports, mdf_batch **batch,
                               mdf_inflight **out, mdf_error *err)
{
    *out = NULL;
    *batch = NULL;
    if (!cfg || !cfg->sampler) return mdf_error_set(err, MDF_ERR_INVALID, "inflight batching needs a sampler");
    if (!(cfg->refill_fraction >= 0.0 && cfg->refill_fraction <= 1.0))
        return mdf_error_set(err, MDF_ERR_INVALID, "refill_fraction %g must be between 0 and 1",
                             cfg->refill_fraction);
    if (ports && !mdf_sampler_is_stream(cfg->sampler))
        return mdf_error_set(err, MDF_ERR_INVALID, "a pipeline stage needs a stream sampler");
    if (cfg->refill_interval < 1)
        return mdf_error_set(err, MDF_ERR_INVALID, "refill_interval %lld must be >= 1 step",
                             (long long)cfg->refill_interval);
    if (cfg->nshards < 0) return mdf_error_set(err, MDF_ERR_INVALID, "the shard count must be >= 0 (0: automatic)");
    if (cfg->checkpoint_every < 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "checkpoint_every %lld must be >= 0 steps (0: only at exit)",
                             (long long)cfg->checkpoint_every);
    if ((cfg->checkpoint_every > 0 || cfg->resume) && (!cfg->checkpoint_path || !*cfg->checkpoint_path))
        return mdf_error_set(err, MDF_ERR_INVALID, "%s needs a checkpoint file: set checkpoint_path",
                             cfg->resume ? "resuming" : "checkpoint_every");
    mdf_sampler_config budgets = mdf_sampler_get_config(cfg->sampler);
    if (budgets.max_atoms > ((int64_t)1 << 26))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "max_atoms %lld exceeds what one batch holds (%lld atoms): lower the atom budget",
                             (long long)budgets.max_atoms, (long long)1 << 26);
    if (mdf_sampler_size(cfg->sampler) > (size_t)INT32_MAX)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "the dataset has %zu systems: inflight batching takes at most %d per run (split it)",
                             mdf_sampler_size(cfg->sampler), INT32_MAX);
    mdf_status st = mdf_sampler_check_dataset(cfg->sampler, m, skin, err);
    if (st != MDF_OK) return st;
    mdf_inflight *in = calloc(1, sizeof *in);
    if (!in) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for inflight batching");
    in->cfg = *cfg;
    in->status = status;
    in->exit_status = exit;
    in->keep_exits = cfg->checkpoint_path != NULL;
    in->ports = ports;
    mdf_sampler_config sc = mdf_sampler_get_config(cfg->sampler);
    if (resume) {
        st = load_state(in, resume, batch, err);
    } else {
        int64_t sys_cap = system_capacity(cfg->sampler, &sc);
        st = ports ? empty_batch(in, &sc, sys_cap, cfg->nshards, batch, err)
                   : first_batch(in, &sc, sys_cap, cfg->nshards, batch, err);
        if (st == MDF_OK) {
            in->shard_pairs = calloc((size_t)(*batch)->nshards, sizeof *in->shard_pairs);
            if (!in->shard_pairs) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for inflight batching");
        }
        if (st == MDF_OK) count_shard_pairs(in, *batch);
    }
    if (st == MDF_OK) {
        in->handed_cap = (*batch)->sys_cap;
        in->handed = calloc(in->handed_cap ? in->handed_cap : 1, 1);
        if (!in->handed) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for inflight batching");
    }
    /* A stream's batch fills as systems arrive: the first refill waits for them. */
    if (st == MDF_OK && ports && !resume) {
        size_t added = 0, removed = 0;
        st = mdf_inflight_refill(in, *batch, status, exit - 1, &added, &removed, err);
    }
    if (st != MDF_OK) {
        mdf_batch_destroy(*batch);
        *batch = NULL;
        mdf_inflight_destroy(in);
        return st;
    }
    *out = in;
    return MDF_OK;
}

void mdf_inflight_destroy(mdf_inflight *in)
{
    if (!in) return;
    free(in->shard_pairs);
    free(in->handed);
    mdf_bytes_free(&in->exits);
    mdf_bytes_free(&in->exit_sources);
    free(in);
}

int mdf_inflight_exhausted(const mdf_inflight *in) { return mdf_sampler_exhausted(in->cfg.sampler); }
int64_t mdf_inflight_held(const mdf_inflight *in) { return in->held; }

int64_t mdf_inflight_pending_atoms(const mdf_inflight *in)
{
    int64_t n = mdf_sampler_available_atoms(in->cfg.sampler);
    if (in->ports && in->ports->pending_atoms) n += in->ports->pending_atoms(in->ports->user);
    return n;
}

int mdf_inflight_downstream_idle(const mdf_inflight *in)
{
    return in->ports && in->ports->downstream_idle && in->ports->downstream_idle(in->ports->user);
}

int mdf_inflight_inbox_pressing(const mdf_inflight *in)
{
    return in->ports && in->ports->inbox_pressing && in->ports->inbox_pressing(in->ports->user);
}

int mdf_inflight_stopped(const mdf_inflight *in, mdf_error *err)
{
    return in->ports && in->ports->stopped && in->ports->stopped(in->ports->user, err);
}

int mdf_inflight_room_for_held(const mdf_inflight *in)
{
    return in->held > 0 && in->ports && in->ports->room(in->ports->user, in->held_min_atoms);
}
int64_t mdf_inflight_interval(const mdf_inflight *in) { return in->cfg.refill_interval; }
double mdf_inflight_fraction(const mdf_inflight *in) { return in->cfg.refill_fraction; }

int64_t mdf_inflight_exited(const mdf_inflight *in, int64_t *budget_exits)
{
    if (budget_exits) *budget_exits = in->budget_exits;
    return in->exited;
}

/* Hands system i (batch order, batch on the host) out: to the next stage
 * through the ports when it reached the exit status in a pipeline (`send`),
 * else to on_exit; with `record`, a checkpoint keeps its final frame (a
 * resumed run hands it out again). */
static mdf_status hand_out(mdf_inflight *in, mdf_batch *b, size_t i, int record, mdf_error *err)
{
    mdf_system_view v;
    mdf_status st = mdf_batch_get_system(b, i, &v, err);
    if (st != MDF_OK) return st;
    int onward = in->ports && v.status == in->exit_status;
    if (v.status == in->exit_status) {
        in->exited++;
        in->budget_exits += (v.flags & MDF_SYS_BUDGET_EXIT) != 0;
    }
    record = record && in->keep_exits;
    if (!onward && !in->cfg.on_exit && !record) return MDF_OK;
    mdf_frame f;
    st = mdf_batch_get_frame(b, i, &f, err);
    if (st != MDF_OK) return st;
    if (record) {
        mdf_ckpt_pack_frame(&in->exits, &f, &v);
        mdf_bytes_put_i64(&in->exit_sources, b->sys[b->sys_slot[i]].source);
        in->nexits++;
        if (in->exits.failed || in->exit_sources.failed) {
            mdf_frame_free(&f);
            return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to keep the final frame of system %lld for "
                                 "checkpoints", (long long)v.id);
        }
    }
    if (onward) {
        int64_t source = b->sys[b->sys_slot[i]].source;
        st = in->ports->send(in->ports->user, &f, &v, source, err);
        mdf_frame_free(&f);
        return st;
    }
    int stop = in->cfg.on_exit ? in->cfg.on_exit(in->cfg.user, &f, &v) : 0;
    mdf_frame_free(&f);
    if (stop)
        return mdf_error_set(err, MDF_ERR_IO, "the receiver of finished systems stopped the run at system id %lld",
                             (long long)v.id);
    return MDF_OK;
}

/* New systems for shard k, as long as the sampler has some that fit. */
static mdf_status fill_shard(mdf_inflight *in, mdf_batch *b, int k, size_t *added, mdf_error *err)
{
    mdf_sampler *s = in->cfg.sampler;
    int64_t free_atoms, free_sys;
    mdf_batch_shard_room(b, k, &free_atoms, &free_sys);
    /* The shard's capacity is its share of the budget (one below it):
     * capacity + 1 lets the sampler's "stay below" rule fill it up. */
    int64_t free_pairs = in->pair_cap > 0 ? in->pair_cap - in->shard_pairs[k] : -1;
    size_t want = (size_t)(free_sys > 0 ? free_sys : 0);
    if (want == 0) return MDF_OK;
    size_t *idx = malloc(sizeof *idx * want);
    if (!idx) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a refill");
    size_t n = mdf_sampler_take(s, free_atoms + 1, free_pairs >= 0 ? free_pairs + 1 : -1, free_sys, idx, want);
    mdf_status st = MDF_OK;
    for (size_t j = 0; st == MDF_OK && j < n; j++) {
        const mdf_frame *f = mdf_sampler_frame(s, idx[j]);
        int32_t flags = MDF_SYS_ENTERED | (mdf_sampler_carry_flags(s, idx[j]) & MDF_SYS_BUDGET_EXIT);
        st = mdf_batch_append(b, k, f, idx[j], in->status, flags, err);
        in->shard_pairs[k] += mdf_sampler_pairs(s, idx[j]);
        if (in->ports) {
            in->ports->admitted(in->ports->user, s, idx[j]);
            mdf_sampler_release(s, idx[j]); /* the batch holds its copy */
        }
    }
    *added += n;
    free(idx);
    return st;
}

typedef struct handed_set {
    const mdf_batch *b;
    const unsigned char *handed;
} handed_set;

static int was_handed(const mdf_sys_info *si, void *user)
{
    const handed_set *h = (const handed_set *)user;
    return h->handed[si - h->b->sys];
}

/* One pass of a refill, the batch acquired: out with the finished systems
 * (those with no room downstream stay), in with new ones unless some stay.
 * *moving: the stage's systems in the batch afterwards. */
static mdf_status refill_pass(mdf_inflight *in, mdf_batch *b, int32_t lo, int32_t hi, size_t *added, size_t *removed,
                              int64_t *moving, mdf_error *err)
{
    mdf_status st = MDF_OK;
    memset(in->handed, 0, in->handed_cap);
    in->held = 0;
    in->held_min_atoms = INT64_MAX;
    for (size_t i = 0; st == MDF_OK && i < b->nsys; i++) {
        int64_t slot = b->sys_slot[i];
        const mdf_sys_info *si = &b->sys[slot];
        if (si->status >= lo && si->status <= hi) continue;
        if (in->ports && si->status == in->exit_status && !in->ports->room(in->ports->user, si->natoms)) {
            in->held++; /* back-pressure: it stays, and nobody comes in */
            if (si->natoms < in->held_min_atoms) in->held_min_atoms = si->natoms;
            continue;
        }
        st = hand_out(in, b, i, 1, err);
        in->handed[slot] = 1;
        (*removed)++;
    }
    handed_set h = {.b = b, .handed = in->handed};
    mdf_batch_remove_done(b, was_handed, &h);
    count_shard_pairs(in, b);
    if (st == MDF_OK && in->ports) st = in->ports->pull(in->ports->user, in->cfg.sampler, err);
    for (int k = 0; st == MDF_OK && in->held == 0 && k < b->nshards; k++) st = fill_shard(in, b, k, added, err);
    if (in->ports && in->ports->held) in->ports->held(in->ports->user, in->held);
    *moving = 0;
    for (size_t i = 0; i < b->nsys; i++) {
        int32_t status = b->sys[b->sys_slot[i]].status;
        *moving += status >= lo && status <= hi;
    }
    return st;
}

mdf_status mdf_inflight_refill(mdf_inflight *in, mdf_batch *b, int32_t lo, int32_t hi, size_t *added, size_t *removed,
                               mdf_error *err)
{
    *added = *removed = 0;
    for (;;) {
        mdf_status st = mdf_batch_acquire_all(b, err);
        if (st != MDF_OK) return st;
        int64_t moving = 0;
        st = refill_pass(in, b, lo, hi, added, removed, &moving, err);
        mdf_batch_release_all(b);
        if (st != MDF_OK || !in->ports || moving > 0) return st;
        /* Nothing to move: wait for room downstream, or for systems to come. */
        if (in->held > 0) st = in->ports->wait(in->ports->user, 0, 1, err);
        else if (!mdf_sampler_exhausted(in->cfg.sampler)) st = in->ports->wait(in->ports->user, 1, 0, err);
        else return MDF_OK;
        if (st != MDF_OK) return st;
    }
}

mdf_status mdf_inflight_finish(mdf_inflight *in, mdf_batch *b, mdf_error *err)
{
    mdf_status st = MDF_OK; /* the caller synchronised the batch */
    for (size_t i = 0; st == MDF_OK && i < b->nsys; i++) st = hand_out(in, b, i, 0, err);
    in->held = 0;
    return st;
}

/* ---- checkpoints ------------------------------------------------------------------ */

/* The dataset: sizes, elements, masses, positions, velocities, cells, ids. */
static uint64_t dataset_hash(const mdf_sampler *s, int64_t *natoms)
{
    uint64_t h = MDF_HASH_INIT;
    *natoms = 0;
    for (size_t i = 0; i < mdf_sampler_size(s); i++) {
        const mdf_frame *f = mdf_sampler_dataset_frame(s, i); /* not a stream's arrived state */
        size_t n = (size_t)f->natoms;
        *natoms += f->natoms;
        h = mdf_hash_i64(h, f->natoms);
        h = mdf_hash(h, f->numbers, sizeof(int32_t) * n);
        h = mdf_hash(h, f->positions, sizeof(double) * 3 * n);
        if (f->velocities) h = mdf_hash(h, f->velocities, sizeof(double) * 3 * n);
        if (f->masses) h = mdf_hash(h, f->masses, sizeof(double) * n);
        h = mdf_hash(h, f->cell, sizeof f->cell);
        for (int k = 0; k < 3; k++) h = mdf_hash_i64(h, f->pbc[k]);
        h = mdf_hash_i64(h, frame_id(f, i));
    }
    return h;
}

/* The sampler's budgets and the cadences that decide when systems move. */
static uint64_t config_hash(const mdf_inflight *in)
{
    mdf_sampler_config sc = mdf_sampler_get_config(in->cfg.sampler);
    uint64_t h = MDF_HASH_INIT;
    h = mdf_hash_i64(h, sc.max_atoms);
    h = mdf_hash_i64(h, sc.max_pairs);
    h = mdf_hash_i64(h, sc.max_systems);
    h = mdf_hash_f64(h, sc.pair_cutoff);
    h = mdf_hash_i64(h, in->cfg.refill_interval);
    h = mdf_hash_i64(h, in->cfg.checkpoint_every);
    return h;
}

static void pack_meta(mdf_bytes *out, const mdf_batch *b)
{
    for (size_t slot = 0; slot < b->sys_cap; slot++) {
        const mdf_sys_meta *m = &b->meta[slot];
        mdf_bytes_put_i64(out, (int64_t)m->ninfo);
        for (size_t k = 0; k < m->ninfo; k++) {
            mdf_bytes_put_str(out, m->info[k].key);
            mdf_bytes_put_str(out, m->info[k].value);
        }
    }
}

static mdf_status put_batch(mdf_ckpt *ck, const mdf_batch *b, mdf_error *err)
{
    int64_t *layout = malloc(sizeof *layout * 4 * (size_t)b->nshards);
    if (!layout) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a checkpoint");
    for (int k = 0; k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        layout[4 * k] = sh->atom_cap;
        layout[4 * k + 1] = sh->sys_cap;
        layout[4 * k + 2] = sh->natoms;
        layout[4 * k + 3] = sh->nsys;
    }
    size_t na = (size_t)b->atom_cap, ns = b->sys_cap;
    mdf_status st = mdf_ckpt_put_i64(ck, "batch.layout", layout, 4 * (size_t)b->nshards, err);
    free(layout);
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "batch.pos", b->pos, sizeof(double), 3 * na, err);
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "batch.vel", b->vel, sizeof(double), 3 * na, err);
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "batch.force", b->force, sizeof(double), 3 * na, err);
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "batch.atoms", b->atoms, sizeof(mdf_atom_info), na, err);
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "batch.sys", b->sys, sizeof(mdf_sys_info), ns, err);
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "batch.res", b->res, sizeof(mdf_sys_result), ns, err);
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "batch.state", b->state, sizeof(mdf_sys_state), ns, err);
    if (st == MDF_OK) st = mdf_ckpt_put_i64(ck, "batch.sys_slot", b->sys_slot, b->nsys, err);
    mdf_bytes meta = {0};
    pack_meta(&meta, b);
    if (st == MDF_OK && meta.failed) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a checkpoint");
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "batch.meta", meta.p, 1, meta.n, err);
    mdf_bytes_free(&meta);
    return st;
}

/* A pipeline stage's stream: which systems arrived (and what they carry),
 * and those waiting for the batch, in order, with their states. */
static mdf_status save_stream(const mdf_sampler *s, mdf_ckpt *ck, mdf_error *err)
{
    size_t n = mdf_sampler_size(s);
    unsigned char *arrived = malloc(n ? n : 1);
    int32_t *carry = malloc(sizeof *carry * (n ? n : 1));
    size_t *waiting = malloc(sizeof *waiting * (n ? n : 1));
    mdf_bytes frames = {0};
    mdf_status st = arrived && carry && waiting ? MDF_OK : mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a checkpoint");
    size_t nw = 0;
    if (st == MDF_OK) {
        mdf_sampler_get_arrived(s, arrived, carry);
        nw = mdf_sampler_waiting(s, waiting);
        for (size_t q = 0; q < nw; q++) {
            int own = mdf_sampler_has_state(s, waiting[q]);
            mdf_bytes_put_i64(&frames, (int64_t)waiting[q]);
            mdf_bytes_put_i64(&frames, own);
            if (own) {
                mdf_system_view v;
                memset(&v, 0, sizeof v);
                mdf_ckpt_pack_frame(&frames, mdf_sampler_frame(s, waiting[q]), &v);
            }
        }
        if (frames.failed) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a checkpoint");
    }
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "stream.arrived", arrived, 1, n, err);
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "stream.carry", carry, sizeof *carry, n, err);
    int64_t count = (int64_t)nw;
    if (st == MDF_OK) st = mdf_ckpt_put_i64(ck, "stream.nwaiting", &count, 1, err);
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "stream.waiting", frames.p, 1, frames.n, err);
    mdf_bytes_free(&frames);
    free(arrived);
    free(carry);
    free(waiting);
    return st;
}

static mdf_status load_stream(mdf_sampler *s, const mdf_ckpt *ck, mdf_error *err)
{
    size_t n = mdf_sampler_size(s), nb = 0;
    const unsigned char *arrived = mdf_ckpt_get(ck, "stream.arrived", 1, n, NULL, err);
    const int32_t *carry = arrived ? mdf_ckpt_get(ck, "stream.carry", sizeof(int32_t), n, NULL, err) : NULL;
    int64_t count = 0;
    if (!arrived || !carry || mdf_ckpt_get_i64(ck, "stream.nwaiting", &count, err) != MDF_OK)
        return err && err->code ? err->code : MDF_ERR_PARSE;
    const unsigned char *p = mdf_ckpt_get(ck, "stream.waiting", 1, (size_t)-1, &nb, err);
    if (!p) return err ? err->code : MDF_ERR_PARSE;
    if (count < 0 || (uint64_t)count > n)
        return mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s' is inconsistent (%lld systems waiting): start the "
                             "run afresh without resuming", mdf_ckpt_path(ck), (long long)count);
    size_t nw = (size_t)count;
    size_t *waiting = malloc(sizeof *waiting * (nw ? nw : 1));
    mdf_frame *frames = calloc(nw ? nw : 1, sizeof *frames);
    mdf_status st = waiting && frames ? MDF_OK : mdf_error_set(err, MDF_ERR_NOMEM, "no memory to load a checkpoint");
    mdf_bytes_in in = {.p = p, .n = nb};
    for (size_t q = 0; st == MDF_OK && q < nw; q++) {
        waiting[q] = (size_t)mdf_bytes_get_i64(&in);
        int64_t own = mdf_bytes_get_i64(&in);
        if (in.failed) st = mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s': the waiting systems are damaged",
                                          mdf_ckpt_path(ck));
        mdf_system_view v;
        if (st == MDF_OK && own) st = mdf_ckpt_unpack_frame(&in, &frames[q], &v, err);
    }
    if (st == MDF_OK && in.at != in.n)
        st = mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s': the waiting systems are damaged", mdf_ckpt_path(ck));
    if (st == MDF_OK) st = mdf_sampler_restore_stream(s, arrived, carry, waiting, frames, nw, err);
    for (size_t q = 0; frames && q < nw; q++) mdf_frame_free(&frames[q]);
    free(frames);
    free(waiting);
    return st;
}

mdf_status mdf_inflight_pull(mdf_inflight *in, mdf_error *err)
{
    return in->ports ? in->ports->pull(in->ports->user, in->cfg.sampler, err) : MDF_OK;
}

mdf_status mdf_inflight_save(const mdf_inflight *in, const mdf_batch *b, mdf_ckpt *ck, mdf_error *err)
{
    const mdf_sampler *s = in->cfg.sampler;
    size_t n = mdf_sampler_size(s);
    int64_t natoms = 0;
    uint64_t dh = dataset_hash(s, &natoms);
    int64_t dataset[3] = {(int64_t)n, natoms, (int64_t)dh};
    int64_t config = (int64_t)config_hash(in);
    int64_t counters[4] = {in->exited, in->budget_exits, in->pair_cap, in->nexits};
    mdf_status st = mdf_ckpt_put_i64(ck, "dataset.fingerprint", dataset, 3, err);
    if (st == MDF_OK) st = mdf_ckpt_put_i64(ck, "inflight.config", &config, 1, err);
    if (st == MDF_OK) st = mdf_ckpt_put_i64(ck, "inflight.counters", counters, 4, err);
    if (st == MDF_OK) st = mdf_ckpt_put_i64(ck, "inflight.shard_pairs", in->shard_pairs, (size_t)b->nshards, err);
    if (st == MDF_OK) st = mdf_ckpt_put(ck, "inflight.exits", in->exits.p, 1, in->exits.n, err);
    if (st == MDF_OK && mdf_sampler_is_stream(s))
        st = mdf_ckpt_put(ck, "inflight.exit_sources", in->exit_sources.p, 1, in->exit_sources.n, err);
    if (st == MDF_OK && mdf_sampler_is_stream(s)) st = save_stream(s, ck, err);
    if (st == MDF_OK && in->ports) st = mdf_ckpt_put_i64(ck, "pipe.layout", in->ports->layout, 8, err);
    if (st == MDF_OK && in->ports)
        st = mdf_ckpt_put(ck, "pipe.layout_text", in->ports->layout_text, 1, strlen(in->ports->layout_text) + 1, err);
    unsigned char *taken = malloc(n ? n : 1);
    if (st == MDF_OK && !taken) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a checkpoint");
    if (st == MDF_OK) {
        mdf_sampler_get_taken(s, taken);
        st = mdf_ckpt_put(ck, "sampler.taken", taken, 1, n, err);
    }
    free(taken);
    if (st == MDF_OK) st = put_batch(ck, b, err);
    return st;
}

/* The checkpoint belongs to this dataset and these budgets, or an error says what differs. */
static mdf_status check_fingerprints(const mdf_inflight *in, const mdf_ckpt *ck, mdf_error *err)
{
    const char *path = mdf_ckpt_path(ck);
    const int64_t *d = mdf_ckpt_get(ck, "dataset.fingerprint", sizeof(int64_t), 3, NULL, err);
    if (!d) return err ? err->code : MDF_ERR_PARSE;
    int64_t natoms = 0;
    uint64_t h = dataset_hash(in->cfg.sampler, &natoms);
    size_t n = mdf_sampler_size(in->cfg.sampler);
    if (d[0] != (int64_t)n || d[1] != natoms)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "checkpoint '%s' belongs to another dataset: it was written for %lld systems of %lld "
                             "atoms in all, this run's input has %zu systems of %lld atoms: resume with the input it "
                             "was written for, or start afresh without resuming", path, (long long)d[0],
                             (long long)d[1], n, (long long)natoms);
    if ((uint64_t)d[2] != h)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "checkpoint '%s' belongs to another dataset: the input has the same %zu systems and "
                             "%lld atoms, but other elements, positions, velocities, cells or ids: resume with the "
                             "input it was written for, or start afresh without resuming", path, n, (long long)natoms);
    int64_t config = 0;
    mdf_status st = mdf_ckpt_get_i64(ck, "inflight.config", &config, err);
    if (st != MDF_OK) return st;
    if ((uint64_t)config != config_hash(in))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "checkpoint '%s' was written with other sampler budgets (max_atoms, max_pairs, "
                             "max_systems), refill interval or checkpoint interval: resume with the settings it was "
                             "written with, or start afresh without resuming", path);
    return MDF_OK;
}

static mdf_status damaged_path(const char *path, const char *what, mdf_error *err)
{
    return mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s' is inconsistent (%s): start the run afresh without "
                         "resuming", path, what);
}

static mdf_status damaged(const mdf_ckpt *ck, const char *what, mdf_error *err)
{
    return mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s' is inconsistent (%s): start the run afresh without "
                         "resuming", mdf_ckpt_path(ck), what);
}

/* Whether a system's stored atoms carry each input index 0..n-1 once:
 * outputs map the atoms back by them. */
static int input_indices_valid(const mdf_atom_info *atoms, int32_t n)
{
    unsigned char *seen = calloc((size_t)n, 1);
    int ok = 1;
    if (!seen) return 1; /* cannot check: outputs would show a bad file */
    for (int32_t a = 0; ok && a < n; a++) {
        int32_t u = atoms[a].index;
        ok = u >= 0 && u < n && !seen[u];
        if (ok) seen[u] = 1;
    }
    free(seen);
    return ok;
}

static mdf_status unpack_meta(const mdf_ckpt *ck, mdf_batch *b, mdf_error *err)
{
    size_t n = 0;
    const unsigned char *p = mdf_ckpt_get(ck, "batch.meta", 1, (size_t)-1, &n, err);
    if (!p) return err ? err->code : MDF_ERR_PARSE;
    mdf_bytes_in in = {.p = p, .n = n};
    for (size_t slot = 0; slot < b->sys_cap && !in.failed; slot++) {
        int64_t ninfo = mdf_bytes_get_i64(&in);
        if (ninfo < 0 || (uint64_t)ninfo > n) break;
        mdf_sys_meta *m = &b->meta[slot];
        m->info = calloc(ninfo ? (size_t)ninfo : 1, sizeof *m->info);
        if (!m->info) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to load a checkpoint");
        for (int64_t k = 0; k < ninfo && !in.failed; k++) {
            m->info[k].key = mdf_bytes_get_str(&in);
            m->info[k].value = mdf_bytes_get_str(&in);
            if (m->info[k].key && m->info[k].value) m->ninfo++;
            else {
                free(m->info[k].key);
                free(m->info[k].value);
            }
        }
    }
    if (in.failed || in.at != n) return damaged(ck, "the systems' info keys", err);
    return MDF_OK;
}

/* The layout's capacities (atoms caps[0..n), systems caps[n..2n)) are those
 * of the batch arrays stored with it: checked before the batch is allocated
 * from them, as a damaged layout could ask for any size. */
static mdf_status layout_matches_arrays(const mdf_ckpt *ck, const int32_t *caps, int nshards, mdf_error *err)
{
    int64_t atoms = 0, systems = 0;
    for (int k = 0; k < nshards; k++) {
        atoms += caps[k];
        systems += caps[nshards + k];
    }
    size_t npos = 0, nsys = 0;
    if (!mdf_ckpt_get(ck, "batch.pos", sizeof(double), (size_t)-1, &npos, err) ||
        !mdf_ckpt_get(ck, "batch.sys", sizeof(mdf_sys_info), (size_t)-1, &nsys, err))
        return err ? err->code : MDF_ERR_PARSE;
    if ((uint64_t)npos != 3 * (uint64_t)atoms || (uint64_t)nsys != (uint64_t)systems)
        return damaged(ck, "the shard layout does not match the stored batch", err);
    return MDF_OK;
}

static mdf_status get_batch(const mdf_ckpt *ck, mdf_batch **out, mdf_error *err)
{
    size_t n = 0;
    const int64_t *layout = mdf_ckpt_get(ck, "batch.layout", sizeof(int64_t), (size_t)-1, &n, err);
    if (!layout) return err ? err->code : MDF_ERR_PARSE;
    int nshards = (int)(n / 4);
    if (n % 4 || nshards < 1 || nshards > (1 << 20)) return damaged(ck, "the shard layout", err);
    int32_t *caps = malloc(sizeof *caps * 2 * (size_t)nshards);
    if (!caps) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to load a checkpoint");
    mdf_status st = MDF_OK;
    for (int k = 0; k < nshards; k++) {
        const int64_t *l = layout + 4 * k;
        if (l[0] < 1 || l[1] < 1 || l[0] > INT32_MAX || l[1] > INT32_MAX || l[2] < 0 || l[2] > l[0] || l[3] < 0 ||
            l[3] > l[1])
            st = damaged(ck, "the shard layout", err);
        caps[k] = (int32_t)l[0];
        caps[nshards + k] = (int32_t)l[1];
    }
    if (st == MDF_OK) st = layout_matches_arrays(ck, caps, nshards, err);
    mdf_batch *b = NULL;
    if (st == MDF_OK) st = mdf_batch_alloc_layout(nshards, caps, caps + nshards, &b, err);
    free(caps);
    if (st != MDF_OK) return st;
    size_t na = (size_t)b->atom_cap, ns = b->sys_cap;
    struct {
        const char *name;
        void *dst;
        size_t elem, count;
    } arrays[] = {{"batch.pos", b->pos, sizeof(double), 3 * na},
                  {"batch.vel", b->vel, sizeof(double), 3 * na},
                  {"batch.force", b->force, sizeof(double), 3 * na},
                  {"batch.atoms", b->atoms, sizeof(mdf_atom_info), na},
                  {"batch.sys", b->sys, sizeof(mdf_sys_info), ns},
                  {"batch.res", b->res, sizeof(mdf_sys_result), ns},
                  {"batch.state", b->state, sizeof(mdf_sys_state), ns}};
    for (size_t a = 0; st == MDF_OK && a < sizeof arrays / sizeof arrays[0]; a++) {
        const void *p = mdf_ckpt_get(ck, arrays[a].name, arrays[a].elem, arrays[a].count, NULL, err);
        if (!p) st = err ? err->code : MDF_ERR_PARSE;
        else memcpy(arrays[a].dst, p, arrays[a].elem * arrays[a].count);
    }
    for (int k = 0; k < b->nshards; k++) {
        b->shards[k].natoms = (int32_t)layout[4 * k + 2];
        b->shards[k].nsys = (int32_t)layout[4 * k + 3];
    }
    if (st == MDF_OK) st = unpack_meta(ck, b, err);
    if (st == MDF_OK) {
        mdf_batch_register_loaded(b);
        /* The systems in shard order are the batch's order: the saved one must agree. */
        const int64_t *slot = mdf_ckpt_get(ck, "batch.sys_slot", sizeof(int64_t), b->nsys, NULL, err);
        if (!slot) st = err ? err->code : MDF_ERR_PARSE;
        else if (memcmp(slot, b->sys_slot, sizeof(int64_t) * b->nsys) != 0)
            st = damaged(ck, "the order of the systems", err);
    }
    /* Every system's atoms lie within its shard's fill. */
    /* Each system's frozen count comes from its atoms' flags, not from the
     * file (no task has run on the new handles yet: main memory is the only
     * copy). */
    for (int k = 0; st == MDF_OK && k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        for (int32_t i = 0; st == MDF_OK && i < sh->nsys; i++) {
            mdf_sys_info *si = &b->sys[sh->sys_off + i];
            if (si->natoms < 1 || si->atom_start < 0 || si->atom_start + si->natoms > sh->natoms) {
                st = damaged(ck, "a system's atom range", err);
                break;
            }
            si->nfrozen = 0;
            for (int32_t a = 0; a < si->natoms; a++)
                si->nfrozen += (b->atoms[sh->atom_off + si->atom_start + a].flags & MDF_ATOM_FROZEN) != 0;
            if (!input_indices_valid(&b->atoms[sh->atom_off + si->atom_start], si->natoms)) {
                st = damaged(ck, "a system's atom indices", err);
                break;
            }
        }
    }
    if (st != MDF_OK) {
        mdf_batch_destroy(b);
        return st;
    }
    *out = b;
    return MDF_OK;
}

/* A checkpoint stores no per-atom extra columns (the input's charges,
 * tags...): each system in flight takes them again from its dataset frame,
 * which the fingerprint says is the one it was written with. */
static mdf_status restore_columns(const mdf_inflight *in, const mdf_ckpt *ck, mdf_batch *b, mdf_error *err)
{
    size_t n = mdf_sampler_size(in->cfg.sampler);
    mdf_status st = MDF_OK;
    for (size_t i = 0; st == MDF_OK && i < b->nsys; i++) {
        int64_t slot = b->sys_slot[i];
        int32_t source = b->sys[slot].source;
        const mdf_frame *f = source >= 0 && (size_t)source < n ? mdf_sampler_dataset_frame(in->cfg.sampler, (size_t)source)
                                                               : NULL;
        if (!f || f->natoms != b->sys[slot].natoms) return damaged(ck, "a system's index in the dataset", err);
        st = mdf_batch_set_slot_columns(b, slot, f, err);
    }
    return st;
}

/* A pipeline stage's checkpoint belongs to the same stage of the same
 * pipeline shape (ranks, instances), or the systems it handed on and kept
 * would not add up. */
static mdf_status check_layout(const mdf_inflight *in, const mdf_ckpt *ck, mdf_error *err)
{
    size_t n = 0;
    const int64_t *layout = mdf_ckpt_get(ck, "pipe.layout", sizeof(int64_t), (size_t)-1, &n, NULL);
    const char *text = mdf_ckpt_get(ck, "pipe.layout_text", 1, (size_t)-1, NULL, NULL);
    if (!in->ports && !layout) return MDF_OK;
    if (!in->ports || !layout || n != 8 || memcmp(layout, in->ports->layout, sizeof in->ports->layout) != 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "checkpoint '%s' was written by %s, this run is %s: resume with "
                             "the composition, placement and ranks it was written with, or start afresh without "
                             "resuming", mdf_ckpt_path(ck), layout ? (text ? text : "another pipeline") : "a run "
                             "that is not a pipeline stage", in->ports ? in->ports->layout_text : "not a pipeline");
    return MDF_OK;
}

static mdf_status load_state(mdf_inflight *in, const mdf_ckpt *ck, mdf_batch **out, mdf_error *err)
{
    mdf_status st = check_fingerprints(in, ck, err);
    if (st == MDF_OK) st = check_layout(in, ck, err);
    if (st != MDF_OK) return st;
    const int64_t *c = mdf_ckpt_get(ck, "inflight.counters", sizeof(int64_t), 4, NULL, err);
    if (!c) return err ? err->code : MDF_ERR_PARSE;
    in->exited = c[0];
    in->budget_exits = c[1];
    in->pair_cap = c[2];
    in->nexits = c[3];
    size_t n = mdf_sampler_size(in->cfg.sampler), nb = 0;
    const unsigned char *taken = mdf_ckpt_get(ck, "sampler.taken", 1, n, NULL, err);
    if (!taken) return err ? err->code : MDF_ERR_PARSE;
    st = mdf_sampler_set_taken(in->cfg.sampler, taken, n, err);
    const unsigned char *exits = st == MDF_OK ? mdf_ckpt_get(ck, "inflight.exits", 1, (size_t)-1, &nb, err) : NULL;
    if (st == MDF_OK && !exits) st = err ? err->code : MDF_ERR_PARSE;
    if (st == MDF_OK) {
        mdf_bytes_put(&in->exits, exits, nb);
        if (in->exits.failed) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory to load a checkpoint");
    }
    if (st == MDF_OK && mdf_sampler_is_stream(in->cfg.sampler)) {
        size_t ns = 0;
        const unsigned char *src = mdf_ckpt_get(ck, "inflight.exit_sources", 1, (size_t)-1, &ns, err);
        if (!src) st = err ? err->code : MDF_ERR_PARSE;
        else if (ns != 8 * (size_t)in->nexits) st = damaged(ck, "the final frames' dataset indices", err);
        else mdf_bytes_put(&in->exit_sources, src, ns);
        if (st == MDF_OK) st = load_stream(in->cfg.sampler, ck, err);
    }
    if (st == MDF_OK) st = get_batch(ck, out, err);
    if (st == MDF_OK) st = restore_columns(in, ck, *out, err);
    if (st != MDF_OK) return st;
    in->shard_pairs = calloc((size_t)(*out)->nshards, sizeof *in->shard_pairs);
    const int64_t *pairs = mdf_ckpt_get(ck, "inflight.shard_pairs", sizeof(int64_t), (size_t)(*out)->nshards, NULL, err);
    if (!in->shard_pairs) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for inflight batching");
    if (!pairs) return err ? err->code : MDF_ERR_PARSE;
    memcpy(in->shard_pairs, pairs, sizeof(int64_t) * (size_t)(*out)->nshards);
    return MDF_OK;
}

mdf_status mdf_inflight_replay(mdf_inflight *in, const char *path, mdf_error *err)
{
    mdf_bytes_in bi = {.p = in->exits.p, .n = in->exits.n};
    mdf_bytes_in sources = {.p = in->exit_sources.p, .n = in->exit_sources.n};
    mdf_status st = MDF_OK;
    for (int64_t k = 0; st == MDF_OK && k < in->nexits; k++) {
        mdf_frame f;
        mdf_system_view v;
        st = mdf_ckpt_unpack_frame(&bi, &f, &v, err);
        if (st != MDF_OK) {
            char msg[MDF_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "%s", err ? err->message : "");
            return mdf_error_set(err, st, "checkpoint '%s': %s: start the run afresh without resuming", path, msg);
        }
        /* A pipeline stage hands its finished systems on again: the next
         * stage keeps those it had already. */
        if (in->ports && v.status == in->exit_status) {
            int64_t source = mdf_bytes_get_i64(&sources);
            st = sources.failed ? damaged_path(path, "the final frames' dataset indices", err)
                                : in->ports->send(in->ports->user, &f, &v, source, err);
            mdf_frame_free(&f);
            continue;
        }
        if (in->ports) mdf_bytes_get_i64(&sources);
        int stop = in->cfg.on_exit ? in->cfg.on_exit(in->cfg.user, &f, &v) : 0;
        mdf_frame_free(&f);
        if (stop)
            return mdf_error_set(err, MDF_ERR_IO, "the receiver of finished systems stopped the run at system id %lld "
                                 "(replayed from checkpoint '%s')", (long long)v.id, path);
    }
    if (bi.at != bi.n)
        return mdf_error_set(err, MDF_ERR_PARSE, "checkpoint '%s' is inconsistent (the final frames handed out): start "
                             "the run afresh without resuming", path);
    return MDF_OK;
}

void mdf_inflight_counts(const mdf_inflight *in, int64_t *total, int64_t *waiting)
{
    /* A pipeline stage's systems are those that have arrived so far. */
    const mdf_sampler *s = in->cfg.sampler;
    *total = mdf_sampler_is_stream(s) ? (int64_t)mdf_sampler_narrived(s) : (int64_t)mdf_sampler_size(s);
    *waiting = (int64_t)mdf_sampler_remaining(s);
}
