/* mdflow — the size-aware sampler of inflight batching. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sampler_internal.h"
#include "../codelets/nlist/nlist_kernel.h"

struct mdf_sampler {
    const mdf_frame *frames;
    size_t n;
    mdf_sampler_config cfg;
    int64_t *atoms, *pairs;
    unsigned char *taken;
    size_t oldest;       /* no waiting system before this index */
    size_t remaining;
    /* Stream mode (pipelines, sampler_internal.h): a system waits only once
     * it has arrived; waiting systems are kept in arrival order. */
    int stream, closed;
    unsigned char *arrived;
    mdf_frame *owned;    /* arrived frames with a state of their own (NULL positions: the dataset's) */
    int32_t *origin;     /* the link each system arrived through */
    int32_t *carry;      /* flags it keeps from the stage before (MDF_SYS_BUDGET_EXIT) */
    size_t *fifo;        /* arrived, not yet taken, in arrival order: fifo[head..len) */
    size_t head, len;
    size_t available;
    int64_t available_atoms;
};

void mdf_sampler_config_init(mdf_sampler_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
}

/* Pairs of atoms closer than rc, each pair once, through the nearest periodic
 * image (unique while rc is at most half of every periodic width, which the
 * model's own check asks anyway). O(N²): done once per system. */
static int64_t count_pairs(const mdf_frame *f, double rc)
{
    double inv[9] = {0};
    int periodic = f->has_cell && (f->pbc[0] || f->pbc[1] || f->pbc[2]);
    if (periodic && !mdf_inv3(f->cell, inv)) periodic = 0; /* batches refuse such cells */
    int64_t n = 0;
    double rc2 = rc * rc;
    for (int64_t i = 0; i < f->natoms; i++)
        for (int64_t j = i + 1; j < f->natoms; j++) {
            double d[3];
            for (int k = 0; k < 3; k++) d[k] = f->positions[3 * j + k] - f->positions[3 * i + k];
            if (periodic) {
                double s[3];
                mdf_vec_mat(d, inv, s);
                for (int k = 0; k < 3; k++)
                    if (f->pbc[k]) s[k] -= nearbyint(s[k]);
                mdf_vec_mat(s, f->cell, d);
            }
            n += d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < rc2;
        }
    return n;
}

static mdf_status check_config(const mdf_sampler_config *c, mdf_error *err)
{
    if (c->max_atoms <= 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "the sampler needs an atom budget: max_atoms must be > 0");
    if (c->max_pairs < 0 || c->max_systems < 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "max_pairs and max_systems must be >= 0 (0: no limit)");
    if (c->max_pairs > 0 && !(c->pair_cutoff > 0.0))
        return mdf_error_set(err, MDF_ERR_INVALID, "a pair budget (max_pairs %lld) needs pair_cutoff > 0 Å",
                             (long long)c->max_pairs);
    return MDF_OK;
}

static long long frame_id(const mdf_frame *f, size_t i)
{
    const char *id = mdf_frame_get_info(f, "mdf_system_id");
    return id ? strtoll(id, NULL, 10) : (long long)i;
}

/* A system that could never be in flight is refused now, not after hours. */
static mdf_status check_fits(const mdf_sampler *s, size_t i, mdf_error *err)
{
    const mdf_sampler_config *c = &s->cfg;
    if (s->atoms[i] >= c->max_atoms)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "system %zu (id %lld) has %lld atoms: the atoms in flight must stay below the budget "
                             "max_atoms = %lld: raise max_atoms above %lld or leave the system out",
                             i, frame_id(&s->frames[i], i), (long long)s->atoms[i], (long long)c->max_atoms,
                             (long long)s->atoms[i]);
    if (c->max_pairs > 0 && s->pairs[i] >= c->max_pairs)
        return mdf_error_set(err, MDF_ERR_INVALID,
                             "system %zu (id %lld) has %lld neighbour pairs within %g Å: the pairs in flight must "
                             "stay below the budget max_pairs = %lld: raise max_pairs above %lld or leave the system out",
                             i, frame_id(&s->frames[i], i), (long long)s->pairs[i], c->pair_cutoff,
                             (long long)c->max_pairs, (long long)s->pairs[i]);
    return MDF_OK;
}

mdf_status mdf_sampler_create(const mdf_frame *frames, size_t n, const mdf_sampler_config *cfg, mdf_sampler **out,
                              mdf_error *err)
{
    *out = NULL;
    mdf_status st = check_config(cfg, err);
    if (st != MDF_OK) return st;
    if (n == 0) return mdf_error_set(err, MDF_ERR_INVALID, "the sampler's dataset is empty: give at least one structure");
    mdf_sampler *s = calloc(1, sizeof *s);
    if (!s) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a sampler");
    s->frames = frames;
    s->n = s->remaining = n;
    s->cfg = *cfg;
    s->atoms = calloc(n, sizeof *s->atoms);
    s->pairs = calloc(n, sizeof *s->pairs);
    s->taken = calloc(n, 1);
    if (!s->atoms || !s->pairs || !s->taken) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a sampler of %zu systems", n);
    for (size_t i = 0; st == MDF_OK && i < n; i++) {
        s->atoms[i] = frames[i].natoms;
        s->pairs[i] = cfg->pair_cutoff > 0.0 ? count_pairs(&frames[i], cfg->pair_cutoff) : 0;
        st = check_fits(s, i, err);
    }
    if (st != MDF_OK) {
        mdf_sampler_destroy(s);
        return st;
    }
    *out = s;
    return MDF_OK;
}

void mdf_sampler_destroy(mdf_sampler *s)
{
    if (!s) return;
    if (s->owned)
        for (size_t i = 0; i < s->n; i++) mdf_frame_free(&s->owned[i]);
    free(s->owned);
    free(s->arrived);
    free(s->origin);
    free(s->carry);
    free(s->fifo);
    free(s->atoms);
    free(s->pairs);
    free(s->taken);
    free(s);
}

size_t mdf_sampler_size(const mdf_sampler *s) { return s->n; }
mdf_sampler_config mdf_sampler_get_config(const mdf_sampler *s) { return s->cfg; }
size_t mdf_sampler_remaining(const mdf_sampler *s) { return s->stream ? s->available : s->remaining; }
int64_t mdf_sampler_atoms(const mdf_sampler *s, size_t i) { return i < s->n ? s->atoms[i] : 0; }
int64_t mdf_sampler_pairs(const mdf_sampler *s, size_t i) { return i < s->n ? s->pairs[i] : 0; }
const mdf_frame *mdf_sampler_frame(const mdf_sampler *s, size_t i)
{
    if (i >= s->n) return NULL;
    return s->owned && s->owned[i].positions ? &s->owned[i] : &s->frames[i];
}

typedef struct room {
    int64_t atoms, pairs, systems; /* negative: unlimited */
} room;

/* Atoms and pairs must stay below the budget; systems may reach it. */
static int fits(const mdf_sampler *s, size_t i, const room *r)
{
    if (r->atoms >= 0 && s->atoms[i] >= r->atoms) return 0;
    if (r->pairs >= 0 && s->cfg.max_pairs > 0 && s->pairs[i] >= r->pairs) return 0;
    if (r->systems >= 0 && r->systems < 1) return 0;
    return 1;
}

static void take_one(mdf_sampler *s, size_t i, room *r)
{
    s->taken[i] = 1;
    s->remaining--;
    if (r->atoms >= 0) r->atoms -= s->atoms[i];
    if (r->pairs >= 0) r->pairs -= s->pairs[i];
    if (r->systems >= 0) r->systems -= 1;
    while (s->oldest < s->n && s->taken[s->oldest]) s->oldest++;
}

/* The largest waiting system that fits (the earliest among equals), or n. */
static size_t largest_fitting(const mdf_sampler *s, const room *r)
{
    size_t best = s->n;
    for (size_t i = s->oldest; i < s->n; i++)
        if (!s->taken[i] && fits(s, i, r) && (best == s->n || s->atoms[i] > s->atoms[best])) best = i;
    return best;
}

static size_t take_stream(mdf_sampler *s, room *r, size_t *out, size_t max_out);

size_t mdf_sampler_take(mdf_sampler *s, int64_t free_atoms, int64_t free_pairs, int64_t free_systems, size_t *out,
                        size_t max_out)
{
    room r = {.atoms = free_atoms, .pairs = free_pairs, .systems = free_systems};
    if (s->stream) return take_stream(s, &r, out, max_out);
    size_t n = 0;
    /* The oldest first, so that no system waits for ever behind smaller ones:
     * if it does not fit yet, nothing is taken until enough room is free. */
    if (n >= max_out || s->oldest >= s->n || !fits(s, s->oldest, &r)) return 0;
    out[n++] = s->oldest;
    take_one(s, s->oldest, &r);
    while (n < max_out) {
        size_t i = largest_fitting(s, &r);
        if (i == s->n) break;
        out[n++] = i;
        take_one(s, i, &r);
    }
    return n;
}

/* ---- checkpoints ------------------------------------------------------------------ */

void mdf_sampler_get_taken(const mdf_sampler *s, unsigned char *taken) { memcpy(taken, s->taken, s->n); }

mdf_status mdf_sampler_set_taken(mdf_sampler *s, const unsigned char *taken, size_t n, mdf_error *err)
{
    if (n != s->n)
        return mdf_error_set(err, MDF_ERR_INVALID, "the sampler's position covers %zu systems, its dataset has %zu", n,
                             s->n);
    s->remaining = s->n;
    for (size_t i = 0; i < n; i++) {
        s->taken[i] = taken[i] != 0;
        s->remaining -= s->taken[i];
    }
    /* take() keeps no other state: the oldest waiting system follows. */
    s->oldest = 0;
    while (s->oldest < s->n && s->taken[s->oldest]) s->oldest++;
    return MDF_OK;
}

/* ---- stream mode (pipelines) ---------------------------------------------------------- */

mdf_status mdf_sampler_make_stream(mdf_sampler *s, mdf_error *err)
{
    s->arrived = calloc(s->n, 1);
    s->owned = calloc(s->n, sizeof *s->owned);
    s->origin = calloc(s->n, sizeof *s->origin);
    s->carry = calloc(s->n, sizeof *s->carry);
    s->fifo = calloc(s->n, sizeof *s->fifo);
    if (!s->arrived || !s->owned || !s->origin || !s->carry || !s->fifo)
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a stream of %zu systems", s->n);
    s->stream = 1;
    s->closed = 0;
    s->head = s->len = s->available = 0;
    s->available_atoms = 0;
    return MDF_OK;
}

int mdf_sampler_is_stream(const mdf_sampler *s) { return s->stream; }

const mdf_frame *mdf_sampler_dataset_frame(const mdf_sampler *s, size_t i) { return i < s->n ? &s->frames[i] : NULL; }

int mdf_sampler_exhausted(const mdf_sampler *s)
{
    return s->stream ? s->closed && s->available == 0 : s->remaining == 0;
}

int mdf_sampler_arrived(const mdf_sampler *s, size_t i) { return s->stream && i < s->n && s->arrived[i]; }

size_t mdf_sampler_narrived(const mdf_sampler *s)
{
    size_t n = 0;
    for (size_t i = 0; s->stream && i < s->n; i++) n += s->arrived[i];
    return s->stream ? n : s->n;
}

mdf_status mdf_sampler_arrive(mdf_sampler *s, size_t i, mdf_frame *f, int32_t origin, int32_t carry,
                              mdf_error *err)
{
    if (!s->stream) return mdf_error_set(err, MDF_ERR_INVALID, "the sampler is not a stream");
    if (i >= s->n)
        return mdf_error_set(err, MDF_ERR_INVALID, "a system arrived with dataset index %zu, the dataset has %zu", i,
                             s->n);
    if (s->arrived[i])
        return mdf_error_set(err, MDF_ERR_INVALID, "system %zu (id %lld) arrived twice", i,
                             frame_id(&s->frames[i], i));
    if (f && f->natoms != s->frames[i].natoms)
        return mdf_error_set(err, MDF_ERR_INVALID, "system %zu (id %lld) arrived with %lld atoms, the dataset has %lld",
                             i, frame_id(&s->frames[i], i), (long long)f->natoms, (long long)s->frames[i].natoms);
    if (f) {
        s->owned[i] = *f; /* moved */
        memset(f, 0, sizeof *f);
        /* Pairs at the state it arrives with (a relaxed structure has others). */
        if (s->cfg.pair_cutoff > 0.0) s->pairs[i] = count_pairs(&s->owned[i], s->cfg.pair_cutoff);
    }
    s->arrived[i] = 1;
    s->origin[i] = origin;
    s->carry[i] = carry;
    s->fifo[s->len++] = i;
    s->available++;
    s->available_atoms += s->atoms[i];
    return MDF_OK;
}

void mdf_sampler_close(mdf_sampler *s) { s->closed = 1; }
int mdf_sampler_closed(const mdf_sampler *s) { return s->closed; }
int64_t mdf_sampler_available_atoms(const mdf_sampler *s) { return s->stream ? s->available_atoms : 0; }
int32_t mdf_sampler_origin(const mdf_sampler *s, size_t i) { return s->origin && i < s->n ? s->origin[i] : -1; }
int32_t mdf_sampler_carry_flags(const mdf_sampler *s, size_t i) { return s->carry && i < s->n ? s->carry[i] : 0; }

void mdf_sampler_release(mdf_sampler *s, size_t i)
{
    if (s->owned && i < s->n) mdf_frame_free(&s->owned[i]);
}

static void take_queued(mdf_sampler *s, size_t q, room *r)
{
    size_t i = s->fifo[q];
    s->taken[i] = 1;
    s->available--;
    s->available_atoms -= s->atoms[i];
    if (r->atoms >= 0) r->atoms -= s->atoms[i];
    if (r->pairs >= 0) r->pairs -= s->pairs[i];
    if (r->systems >= 0) r->systems -= 1;
}

/* As mdf_sampler_take, over the arrived systems in arrival order: the first
 * to arrive first (if it does not fit, nothing is taken), then the largest
 * that fits. */
static size_t take_stream(mdf_sampler *s, room *r, size_t *out, size_t max_out)
{
    while (s->head < s->len && s->taken[s->fifo[s->head]]) s->head++;
    size_t n = 0;
    if (max_out == 0 || s->head == s->len || !fits(s, s->fifo[s->head], r)) return 0;
    out[n++] = s->fifo[s->head];
    take_queued(s, s->head, r);
    while (n < max_out) {
        size_t best = s->len;
        for (size_t q = s->head; q < s->len; q++) {
            size_t i = s->fifo[q];
            if (!s->taken[i] && fits(s, i, r) && (best == s->len || s->atoms[i] > s->atoms[s->fifo[best]])) best = q;
        }
        if (best == s->len) break;
        out[n++] = s->fifo[best];
        take_queued(s, best, r);
    }
    /* Compact the queue now and then, so scans stay over waiting systems. */
    if (s->head > 64 && s->head * 2 > s->len) {
        size_t m = 0;
        for (size_t q = s->head; q < s->len; q++)
            if (!s->taken[s->fifo[q]]) s->fifo[m++] = s->fifo[q];
        s->head = 0;
        s->len = m;
    }
    return n;
}

size_t mdf_sampler_waiting(const mdf_sampler *s, size_t *out)
{
    size_t n = 0;
    for (size_t q = s->head; s->stream && q < s->len; q++)
        if (!s->taken[s->fifo[q]]) out[n++] = s->fifo[q];
    return n;
}

void mdf_sampler_get_arrived(const mdf_sampler *s, unsigned char *arrived, int32_t *carry)
{
    for (size_t i = 0; i < s->n; i++) {
        arrived[i] = s->stream ? s->arrived[i] : 1;
        carry[i] = s->stream ? s->carry[i] : 0;
    }
}

int mdf_sampler_has_state(const mdf_sampler *s, size_t i) { return s->owned && i < s->n && s->owned[i].positions; }

mdf_status mdf_sampler_restore_stream(mdf_sampler *s, const unsigned char *arrived, const int32_t *carry,
                                      const size_t *waiting, mdf_frame *frames, size_t nwaiting, mdf_error *err)
{
    if (!s->stream) return mdf_error_set(err, MDF_ERR_INVALID, "the sampler is not a stream");
    for (size_t i = 0; i < s->n; i++) mdf_frame_free(&s->owned[i]);
    s->head = s->len = s->available = 0;
    s->available_atoms = 0;
    s->closed = 0; /* the stages before say it again */
    for (size_t i = 0; i < s->n; i++) {
        s->arrived[i] = arrived[i] != 0;
        s->carry[i] = carry[i];
        s->origin[i] = -1; /* restored: no room is owed back to any link */
    }
    for (size_t q = 0; q < nwaiting; q++) {
        size_t i = waiting[q];
        if (i >= s->n || !s->arrived[i] || s->taken[i])
            return mdf_error_set(err, MDF_ERR_PARSE, "a waiting system (dataset index %zu) is not waiting", i);
        if (frames && frames[q].positions) {
            if (frames[q].natoms != s->frames[i].natoms)
                return mdf_error_set(err, MDF_ERR_PARSE, "waiting system %zu has %lld atoms, the dataset %lld", i,
                                     (long long)frames[q].natoms, (long long)s->frames[i].natoms);
            s->owned[i] = frames[q];
            memset(&frames[q], 0, sizeof frames[q]);
            if (s->cfg.pair_cutoff > 0.0) s->pairs[i] = count_pairs(&s->owned[i], s->cfg.pair_cutoff);
        }
        s->fifo[s->len++] = i;
        s->available++;
        s->available_atoms += s->atoms[i];
    }
    return MDF_OK;
}
