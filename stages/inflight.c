/* mdflow — inflight batching: batch creation from a sampler, refills. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include "inflight.h"
#include "../dataflow/compute.h"

#define MDF_DEFAULT_REFILL 10

struct mdf_inflight {
    mdf_inflight_config cfg;
    int64_t *shard_pairs;        /* pairs in flight per shard */
    int64_t pair_cap;            /* per shard (0: no pair budget) */
    int64_t exited, budget_exits;
    int32_t exit_status;
    int32_t status;              /* where new systems start */
};

void mdf_inflight_config_init(mdf_inflight_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->refill_interval = MDF_DEFAULT_REFILL;
}

static long long frame_id(const mdf_frame *f, size_t i)
{
    const char *id = mdf_frame_get_info(f, "mdf_system_id");
    return id ? strtoll(id, NULL, 10) : (long long)i;
}

static mdf_status check_dataset(const mdf_sampler *s, const mdf_model *m, double skin, mdf_error *err)
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

static int64_t largest_system(const mdf_sampler *s)
{
    int64_t largest = 1;
    for (size_t i = 0; i < mdf_sampler_size(s); i++)
        if (mdf_sampler_atoms(s, i) > largest) largest = mdf_sampler_atoms(s, i);
    return largest;
}

/* Shards of equal capacity, each able to hold the largest system (a shard
 * too small for a waiting system would make it wait for ever). */
static int choose_shards(const mdf_sampler *s, const mdf_sampler_config *sc, int64_t sys_cap, int requested)
{
    int64_t n = requested > 0 ? requested : mdf_batch_default_shards((size_t)sys_cap, sc->max_atoms);
    int64_t by_size = (sc->max_atoms - 1) / largest_system(s);
    if (n > by_size) n = by_size;
    if (n > sys_cap) n = sys_cap;
    if (n > (int64_t)mdf_sampler_size(s)) n = (int64_t)mdf_sampler_size(s);
    return n < 1 ? 1 : (int)n;
}

/* The first batch, filled shard by shard as refills fill them. */
static mdf_status first_batch(mdf_inflight *in, const mdf_sampler_config *sc, int64_t sys_cap, int nshards,
                              mdf_batch **out, mdf_error *err)
{
    mdf_sampler *s = in->cfg.sampler;
    int nsh = choose_shards(s, sc, sys_cap, nshards);
    int64_t atom_cap = (sc->max_atoms - 1) / nsh, shard_sys = sys_cap / nsh;
    int64_t pair_cap = sc->max_pairs > 0 ? (sc->max_pairs - 1) / nsh : -1;
    size_t *idx = malloc(sizeof *idx * (size_t)(shard_sys * nsh));
    mdf_frame *frames = malloc(sizeof *frames * (size_t)(shard_sys * nsh));
    int64_t *ids = malloc(sizeof *ids * (size_t)(shard_sys * nsh));
    size_t *first = calloc((size_t)nsh + 1, sizeof *first);
    mdf_status st = idx && frames && ids && first ? MDF_OK
                                                  : mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the first batch");
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
    for (size_t j = 0; st == MDF_OK && j < n; j++) {
        frames[j] = *mdf_sampler_frame(s, idx[j]); /* shallow: the batch only reads */
        ids[j] = frame_id(&frames[j], idx[j]);
    }
    if (st == MDF_OK) {
        mdf_batch_config bc;
        mdf_batch_config_init(&bc);
        bc.nshards = used;
        bc.initial_status = in->status;
        bc.ids = ids;
        bc.shard_first = first;
        bc.shard_atom_cap = atom_cap;
        bc.shard_sys_cap = shard_sys;
        st = mdf_batch_create(frames, n, &bc, out, err);
    }
    in->pair_cap = pair_cap > 0 ? pair_cap : 0;
    free(idx);
    free(frames);
    free(ids);
    free(first);
    return st;
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

static void count_shard_pairs(mdf_inflight *in, const mdf_batch *b)
{
    for (int k = 0; k < b->nshards; k++) {
        const mdf_shard *sh = &b->shards[k];
        in->shard_pairs[k] = 0;
        for (int32_t s = 0; s < sh->nsys; s++)
            in->shard_pairs[k] += mdf_sampler_pairs(in->cfg.sampler, (size_t)b->sys[sh->sys_off + s].id);
    }
}

mdf_status mdf_inflight_create(const mdf_inflight_config *cfg, const mdf_model *m, double skin, int32_t status,
                               int32_t exit, mdf_batch **batch, mdf_inflight **out, mdf_error *err)
{
    *out = NULL;
    *batch = NULL;
    if (!cfg || !cfg->sampler) return mdf_error_set(err, MDF_ERR_INVALID, "inflight batching needs a sampler");
    if (cfg->refill_interval < 1)
        return mdf_error_set(err, MDF_ERR_INVALID, "refill_interval %lld must be >= 1 step",
                             (long long)cfg->refill_interval);
    if (cfg->nshards < 0) return mdf_error_set(err, MDF_ERR_INVALID, "the shard count must be >= 0 (0: automatic)");
    mdf_sampler_config budgets = mdf_sampler_get_config(cfg->sampler);
    if (budgets.max_atoms > ((int64_t)1 << 26))
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "max_atoms %lld exceeds what one batch holds (%lld atoms): lower the atom budget",
                             (long long)budgets.max_atoms, (long long)1 << 26);
    mdf_status st = check_dataset(cfg->sampler, m, skin, err);
    if (st != MDF_OK) return st;
    mdf_inflight *in = calloc(1, sizeof *in);
    if (!in) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for inflight batching");
    in->cfg = *cfg;
    in->status = status;
    in->exit_status = exit;
    mdf_sampler_config sc = mdf_sampler_get_config(cfg->sampler);
    int64_t sys_cap = system_capacity(cfg->sampler, &sc);
    st = first_batch(in, &sc, sys_cap, cfg->nshards, batch, err);
    if (st == MDF_OK) st = mark_entered(*batch, err);
    if (st == MDF_OK) {
        in->shard_pairs = calloc((size_t)(*batch)->nshards, sizeof *in->shard_pairs);
        if (!in->shard_pairs) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for inflight batching");
    }
    if (st != MDF_OK) {
        mdf_batch_destroy(*batch);
        *batch = NULL;
        mdf_inflight_destroy(in);
        return st;
    }
    count_shard_pairs(in, *batch);
    *out = in;
    return MDF_OK;
}

void mdf_inflight_destroy(mdf_inflight *in)
{
    if (!in) return;
    free(in->shard_pairs);
    free(in);
}

int mdf_inflight_exhausted(const mdf_inflight *in) { return mdf_sampler_remaining(in->cfg.sampler) == 0; }
int64_t mdf_inflight_interval(const mdf_inflight *in) { return in->cfg.refill_interval; }

int64_t mdf_inflight_exited(const mdf_inflight *in, int64_t *budget_exits)
{
    if (budget_exits) *budget_exits = in->budget_exits;
    return in->exited;
}

typedef struct range {
    int32_t lo, hi;
} range;

static int outside(int32_t status, void *user)
{
    const range *r = (const range *)user;
    return status < r->lo || status > r->hi;
}

/* Hands system i (batch order, batch on the host) to on_exit. */
static mdf_status hand_out(mdf_inflight *in, mdf_batch *b, size_t i, mdf_error *err)
{
    mdf_system_view v;
    mdf_status st = mdf_batch_get_system(b, i, &v, err);
    if (st != MDF_OK) return st;
    if (v.status == in->exit_status) {
        in->exited++;
        in->budget_exits += (v.flags & MDF_SYS_BUDGET_EXIT) != 0;
    }
    if (!in->cfg.on_exit) return MDF_OK;
    mdf_frame f;
    st = mdf_batch_get_frame(b, i, &f, err);
    if (st != MDF_OK) return st;
    int stop = in->cfg.on_exit(in->cfg.user, &f, &v);
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
        st = mdf_batch_append(b, k, f, idx[j], frame_id(f, idx[j]), in->status, MDF_SYS_ENTERED, err);
        in->shard_pairs[k] += mdf_sampler_pairs(s, idx[j]);
    }
    *added += n;
    free(idx);
    return st;
}

mdf_status mdf_inflight_refill(mdf_inflight *in, mdf_batch *b, int32_t lo, int32_t hi, size_t *added, mdf_error *err)
{
    *added = 0;
    mdf_status st = mdf_batch_acquire_all(b, err);
    if (st != MDF_OK) return st;
    range r = {.lo = lo, .hi = hi};
    for (size_t i = 0; st == MDF_OK && i < b->nsys; i++)
        if (outside(b->sys[b->sys_slot[i]].status, &r)) st = hand_out(in, b, i, err);
    if (st == MDF_OK) {
        mdf_batch_remove_done(b, outside, &r);
        count_shard_pairs(in, b);
        for (int k = 0; st == MDF_OK && k < b->nshards; k++) st = fill_shard(in, b, k, added, err);
    }
    mdf_batch_release_all(b);
    return st;
}

mdf_status mdf_inflight_finish(mdf_inflight *in, mdf_batch *b, mdf_error *err)
{
    mdf_status st = MDF_OK; /* the caller synchronised the batch */
    for (size_t i = 0; st == MDF_OK && i < b->nsys; i++) st = hand_out(in, b, i, err);
    return st;
}
