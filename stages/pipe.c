/* mdflow — pipelines: stages on their own worker groups and MPI ranks,
 * linked by bounded channels (see mdflow/pipe.h and docs/architecture.md,
 * "Pipelines").
 *
 * Every rank builds the same topology: the instances of each stage (one
 * per rank the stage is placed on) and a link from every instance of stage
 * k to every instance of stage k + 1. A link carries a share of the
 * downstream inbox's capacity as credit: the upstream instance spends it
 * when it sends a system and gets it back when the downstream batch admits
 * that system. Links between instances of one process are memory (the
 * inbox queue); across ranks, messages (dataflow/transport.h). The hub
 * below is one rank's half of all that: its instances, their inboxes, the
 * credits of their links, the receiver of finished systems (rank 0), and
 * the stop flag that a failure sets everywhere. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <starpu.h>
#include "mdflow/pipe.h"
#include "mdflow/runtime.h"
#include "inflight.h"
#include "checkpoint.h"
#include "../dataflow/batch_internal.h"
#include "../dataflow/compute.h"
#include "../dataflow/sampler_internal.h"
#include "../dataflow/transport.h"

#define MAX_INSTANCES (MDF_PIPE_MAX_STAGES * MDF_PIPE_MAX_RANKS)
#define WAIT_SLICE_S 0.25 /* waits wake this often to look at the stop flag */

struct mdf_pipeline {
    int n;
    mdf_stage *stages[MDF_PIPE_MAX_STAGES];
    mdf_pipe_stage_config cfg[MDF_PIPE_MAX_STAGES];
    int32_t parts;                   /* sub-stages so far: the next stage's base status */
};

void mdf_pipe_stage_config_init(mdf_pipe_stage_config *c)
{
    memset(c, 0, sizeof *c);
    mdf_sampler_config_init(&c->budget);
    c->refill_interval = 10;
    c->refill_fraction = 0.1;
    c->ncpus = -1;
    c->ncuda = -1;
}

void mdf_pipe_run_config_init(mdf_pipe_run_config *c)
{
    memset(c, 0, sizeof *c);
    c->abort_timeout_s = 10.0;
}

mdf_status mdf_pipeline_create(mdf_pipeline **out, mdf_error *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? MDF_OK : mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a pipeline");
}

void mdf_pipeline_destroy(mdf_pipeline *p)
{
    if (!p) return;
    for (int k = 0; k < p->n; k++) mdf_stage_destroy(p->stages[k]);
    free(p);
}

int mdf_pipeline_nstages(const mdf_pipeline *p) { return p->n; }
int32_t mdf_pipeline_exit_status(const mdf_pipeline *p) { return p->parts; }
mdf_stage *mdf_pipeline_stage(mdf_pipeline *p, int k) { return k >= 0 && k < p->n ? p->stages[k] : NULL; }

static mdf_status check_stage_config(const mdf_pipe_stage_config *c, int k, mdf_error *err)
{
    if (c->budget.max_atoms <= 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "pipeline stage %d needs an atom budget (budget.max_atoms > 0)", k);
    if (c->refill_interval < 1 || !(c->refill_fraction >= 0.0 && c->refill_fraction <= 1.0) || c->nshards < 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "pipeline stage %d: refill_interval must be >= 1, refill_fraction "
                             "in [0, 1] and nshards >= 0", k);
    if (c->inbox_systems < 0 || c->inbox_atoms < 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "pipeline stage %d: the inbox's capacity must be >= 0 (0: the "
                             "default)", k);
    if (c->ncpus < -1 || c->ncuda < -1)
        return mdf_error_set(err, MDF_ERR_INVALID, "pipeline stage %d: ncpus and ncuda must be >= 0 (-1: the "
                             "default)", k);
    if (c->nranks < 0 || c->nranks > MDF_PIPE_MAX_RANKS)
        return mdf_error_set(err, MDF_ERR_INVALID, "pipeline stage %d: at most %d ranks", k, MDF_PIPE_MAX_RANKS);
    for (int i = 0; i < c->nranks; i++) {
        if (c->ranks[i] < 0)
            return mdf_error_set(err, MDF_ERR_INVALID, "pipeline stage %d: rank %d is negative", k, c->ranks[i]);
        for (int j = 0; j < i; j++)
            if (c->ranks[j] == c->ranks[i])
                return mdf_error_set(err, MDF_ERR_INVALID, "pipeline stage %d lists rank %d twice", k, c->ranks[i]);
    }
    if (*c->sched) return mdf_runtime_check_sched(c->sched, "pipeline stage's sched", err);
    return MDF_OK;
}

mdf_status mdf_pipeline_add(mdf_pipeline *p, mdf_stage *s, const mdf_pipe_stage_config *cfg, mdf_error *err)
{
    mdf_status st = MDF_OK;
    if (!p || !s || !cfg) st = mdf_error_set(err, MDF_ERR_INVALID, "mdf_pipeline_add needs a pipeline, a stage and a "
                                             "configuration");
    else if (p->n == MDF_PIPE_MAX_STAGES)
        st = mdf_error_set(err, MDF_ERR_INVALID, "a pipeline holds at most %d stages", MDF_PIPE_MAX_STAGES);
    else st = check_stage_config(cfg, p->n, err);
    if (st != MDF_OK) {
        mdf_stage_destroy(s);
        return st;
    }
    mdf_stage_rebase(s, p->parts);
    p->cfg[p->n] = *cfg;
    if (!*p->cfg[p->n].name) snprintf(p->cfg[p->n].name, MDF_PIPE_NAME_MAX, "stage %d", p->n);
    p->stages[p->n++] = s;
    p->parts = mdf_stage_exit_status(s);
    return MDF_OK;
}

mdf_status mdf_pipe(mdf_pipeline *into, mdf_stage *a, mdf_stage *b, const mdf_sampler_config *budget, mdf_pipeline **out,
                    mdf_error *err)
{
    *out = NULL;
    mdf_pipeline *p = into;
    mdf_status st = MDF_OK;
    if (!budget) st = mdf_error_set(err, MDF_ERR_INVALID, "mdf_pipe needs a budget");
    if (st == MDF_OK && !p) st = mdf_pipeline_create(&p, err);
    if (st != MDF_OK) {
        mdf_stage_destroy(a);
        mdf_stage_destroy(b);
        return st;
    }
    mdf_pipe_stage_config c;
    mdf_pipe_stage_config_init(&c);
    c.budget = *budget;
    if (a) st = mdf_pipeline_add(p, a, &c, err);
    else if (p->n == 0) st = mdf_error_set(err, MDF_ERR_INVALID, "mdf_pipe: nothing to append stage b to");
    if (st == MDF_OK && b) st = mdf_pipeline_add(p, b, &c, err);
    else mdf_stage_destroy(b);
    if (st != MDF_OK) {
        if (!into) mdf_pipeline_destroy(p);
        return st;
    }
    *out = p;
    return MDF_OK;
}

void mdf_pipeline_checkpoint_name(const mdf_pipeline *p, const char *path, int k, int rank, char *out, size_t size)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (dot && (dot == path || (slash && dot < slash + 2))) dot = NULL; /* ".h5" alone, or a dot in a folder name */
    size_t stem = dot ? (size_t)(dot - path) : strlen(path);
    const char *name = k >= 0 && k < p->n ? p->cfg[k].name : "stage";
    snprintf(out, size, "%.*s.%s.r%d%s", (int)stem, path, name, rank, dot ? dot : "");
    for (char *c = out + stem + 1; *c && c < out + size; c++)
        if (*c == ' ' || *c == '/') *c = '_'; /* "stage 1" */
}

void mdf_pipe_report_free(mdf_pipe_report *r)
{
    if (!r) return;
    free(r->stages);
    memset(r, 0, sizeof *r);
}

/* ---- topology: instances and links -------------------------------------------------- */

typedef struct topo {
    int nstages, ninst, nranks;
    int first[MDF_PIPE_MAX_STAGES + 1];      /* instances of stage k: [first[k], first[k+1]) */
    int rank[MAX_INSTANCES];
    int stage[MAX_INSTANCES];
    int link_first[MDF_PIPE_MAX_STAGES + 1]; /* links out of stage k's instances */
    int nlinks;
} topo;

static int instances_of(const topo *t, int k) { return t->first[k + 1] - t->first[k]; }

/* Link from instance u (stage k) to instance d (stage k + 1). */
static int link_index(const topo *t, int u, int d)
{
    int k = t->stage[u];
    return t->link_first[k] + (u - t->first[k]) * instances_of(t, k + 1) + (d - t->first[k + 1]);
}

static int link_from(const topo *t, int l)
{
    int k = 0;
    while (k + 1 < t->nstages && t->link_first[k + 1] <= l) k++;
    return t->first[k] + (l - t->link_first[k]) / instances_of(t, k + 1);
}

static int link_to(const topo *t, int l)
{
    int k = 0;
    while (k + 1 < t->nstages && t->link_first[k + 1] <= l) k++;
    return t->first[k + 1] + (l - t->link_first[k]) % instances_of(t, k + 1);
}

int mdf_pipe_default_ranks(int k, int nstages, int nranks, int *out)
{
    if (nranks <= 1) {
        out[0] = 0;
        return 1;
    }
    if (nranks < nstages) {
        out[0] = k % nranks;
        return 1;
    }
    if (k < nstages - 1) {
        out[0] = k;
        return 1;
    }
    int n = 0;
    for (int r = k; r < nranks && n < MDF_PIPE_MAX_RANKS; r++) out[n++] = r;
    return n;
}

/* Ranks of stage k: its own list, or the default. */
static int stage_ranks(const mdf_pipeline *p, int k, int nranks, int *out)
{
    const mdf_pipe_stage_config *c = &p->cfg[k];
    if (c->nranks > 0) {
        memcpy(out, c->ranks, sizeof(int) * (size_t)c->nranks);
        return c->nranks;
    }
    return mdf_pipe_default_ranks(k, p->n, nranks, out);
}

static mdf_status build_topo(const mdf_pipeline *p, int nranks, topo *t, mdf_error *err)
{
    memset(t, 0, sizeof *t);
    t->nstages = p->n;
    t->nranks = nranks;
    int hosts[MDF_PIPE_MAX_RANKS] = {0};
    for (int k = 0; k < p->n; k++) {
        int r[MDF_PIPE_MAX_RANKS];
        int n = stage_ranks(p, k, nranks, r);
        t->first[k] = t->ninst;
        for (int i = 0; i < n; i++) {
            if (r[i] >= nranks)
                return mdf_error_set(err, MDF_ERR_INVALID, "placement: stage '%s' is placed on rank %d, but the run has "
                                     "%d rank%s: list ranks 0 to %d, or start more ranks (mpirun -np %d)",
                                     p->cfg[k].name, r[i], nranks, nranks == 1 ? "" : "s", nranks - 1, r[i] + 1);
            t->rank[t->ninst] = r[i];
            t->stage[t->ninst] = k;
            t->ninst++;
            hosts[r[i]]++;
        }
    }
    t->first[p->n] = t->ninst;
    /* Rank 0 reads the dataset and writes the outputs: it may host no stage.
     * Any other rank without a stage would only idle. */
    for (int r = 1; r < nranks && r < MDF_PIPE_MAX_RANKS; r++)
        if (!hosts[r])
            return mdf_error_set(err, MDF_ERR_INVALID, "placement: rank %d hosts no stage: list it in a stage's "
                                 "ranks, or start fewer ranks", r);
    if (nranks > MDF_PIPE_MAX_RANKS)
        return mdf_error_set(err, MDF_ERR_INVALID, "a pipeline runs on at most %d ranks, not %d", MDF_PIPE_MAX_RANKS,
                             nranks);
    for (int k = 0; k < p->n; k++) {
        t->link_first[k] = t->nlinks;
        if (k + 1 < p->n) t->nlinks += instances_of(t, k) * instances_of(t, k + 1);
    }
    t->link_first[p->n] = t->nlinks;
    return MDF_OK;
}

/* Capacity of one link into stage k: the inbox shared by the instances of k - 1. */
static void link_capacity(const mdf_pipeline *p, const topo *t, int k, int64_t *sys, int64_t *atoms)
{
    const mdf_pipe_stage_config *c = &p->cfg[k];
    int senders = instances_of(t, k - 1);
    int64_t a = c->inbox_atoms > 0 ? c->inbox_atoms : c->budget.max_atoms;
    *atoms = a / senders;
    *sys = c->inbox_systems > 0 ? c->inbox_systems / senders : INT64_MAX / 4;
}

static int64_t frame_id(const mdf_frame *f, size_t i)
{
    const char *id = mdf_frame_get_info(f, "mdf_system_id");
    return id ? strtoll(id, NULL, 10) : (int64_t)i;
}

mdf_status mdf_pipeline_check(const mdf_pipeline *p, const mdf_model *m, const mdf_frame *frames, size_t n, int nranks,
                          mdf_error *err)
{
    if (!p || p->n == 0) return mdf_error_set(err, MDF_ERR_INVALID, "the pipeline has no stage");
    if (n == 0) return mdf_error_set(err, MDF_ERR_INVALID, "the dataset is empty: give at least one structure");
    topo t;
    mdf_status st = build_topo(p, nranks > 0 ? nranks : 1, &t, err);
    for (int k = 0; st == MDF_OK && k < p->n; k++) {
        const mdf_pipe_stage_config *c = &p->cfg[k];
        int64_t cap_sys = 0, cap_atoms = 0;
        if (k > 0) link_capacity(p, &t, k, &cap_sys, &cap_atoms);
        if (k > 0 && cap_sys < 1)
            return mdf_error_set(err, MDF_ERR_INVALID, "stage '%s': its inbox of %lld systems is shared by the %d "
                                 "ranks of stage '%s': give it at least %d systems", c->name,
                                 (long long)c->inbox_systems, instances_of(&t, k - 1), p->cfg[k - 1].name,
                                 instances_of(&t, k - 1));
        for (size_t i = 0; st == MDF_OK && i < n; i++) {
            const mdf_frame *f = &frames[i];
            if (f->natoms >= c->budget.max_atoms)
                return mdf_error_set(err, MDF_ERR_INVALID, "system %zu (id %lld) has %lld atoms: stage '%s' keeps the "
                                     "atoms in flight below its budget max_atoms = %lld: raise that stage's budget "
                                     "above %lld or leave the system out", i, (long long)frame_id(f, i),
                                     (long long)f->natoms, c->name, (long long)c->budget.max_atoms,
                                     (long long)f->natoms);
            if (k > 0 && f->natoms > cap_atoms)
                return mdf_error_set(err, MDF_ERR_INVALID, "system %zu (id %lld) has %lld atoms: the inbox of stage '%s' "
                                     "holds %lld atoms from each of the %d rank%s of stage '%s' (inbox atoms %lld): "
                                     "raise that inbox's atoms to at least %lld or leave the system out", i,
                                     (long long)frame_id(f, i), (long long)f->natoms, c->name, (long long)cap_atoms,
                                     instances_of(&t, k - 1), instances_of(&t, k - 1) == 1 ? "" : "s",
                                     p->cfg[k - 1].name,
                                     (long long)(c->inbox_atoms > 0 ? c->inbox_atoms : c->budget.max_atoms),
                                     (long long)f->natoms * instances_of(&t, k - 1));
            if (k == 0) st = mdf_batch_check_frame(f, i, err);
            if (st == MDF_OK && m)
                st = mdf_compute_check_frame(m, mdf_stage_skin(p->stages[k]), f, i, frame_id(f, i), err);
        }
    }
    return st;
}

/* ---- one rank's hub ----------------------------------------------------------------- */

enum { M_DATA = 1, M_CREDIT, M_EOS, M_FINAL, M_REPORT, M_ABORT, M_READY };

typedef struct pipe_msg {
    mdf_frame f;
    int64_t source;
    int32_t carry;
    int link;
} pipe_msg;

/* What arrived for a local instance and is not yet in its batch. */
typedef struct inbox {
    pipe_msg *q;
    size_t head, n, cap;
    int64_t queued_atoms;
    int open;                    /* links into it not yet closed (EOS) */
    int64_t occ_sys, occ_atoms;  /* arrived, not yet admitted (queue + sampler) */
    int64_t hwm_sys, hwm_atoms;
    uint64_t epoch;              /* bumps on every arrival and close */
} inbox;

typedef struct link_state {
    int64_t cap_sys, cap_atoms;
    int64_t credit_sys, credit_atoms; /* the sender's view */
} link_state;

struct hub;

typedef struct local_inst {
    struct hub *h;
    int inst, stage;
    mdf_stage_ports ports;
    mdf_sampler *sampler;
    unsigned ctx;
    int has_ctx;
    int workers[STARPU_NMAXWORKERS];
    int nworkers;
    pthread_t thread;
    int started;
    mdf_status st;
    mdf_error err;
    int rr;                      /* round robin over its links */
    uint64_t credit_epoch;       /* bumps when credit comes back to its links */
    mdf_pipe_stage_report rep;
} local_inst;

typedef struct hub {
    mdf_pipeline *p;
    mdf_model *m;
    const mdf_pipe_run_config *cfg;
    int rank;
    topo t;
    link_state *links;
    inbox *in;                   /* by instance (only local ones are used) */
    local_inst *loc;
    int nloc;
    int local_of[MAX_INSTANCES]; /* instance -> index in loc, or -1 */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    atomic_int stopped;          /* read without the lock every step; written under it */
    mdf_error stop_err;
    pthread_mutex_t out_lock;    /* the receiver (rank 0) */
    int64_t finished, budget_exits;
    mdf_status out_st;
    mdf_error out_err;
    mdf_transport *tp;
    mdf_pipe_stage_report *reports; /* by instance (rank 0) */
    int ready, ready_failed;
    mdf_error ready_err;
    int32_t exit_status;
} hub;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void wait_slice(hub *h)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)(WAIT_SLICE_S * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&h->cond, &h->lock, &ts);
}

/* The first failure stops every stage of every rank. */
static void hub_stop(hub *h, const mdf_error *why, int broadcast)
{
    pthread_mutex_lock(&h->lock);
    int first = !h->stopped;
    if (first) {
        h->stop_err = *why;
        h->stopped = 1;
        pthread_cond_broadcast(&h->cond);
    }
    pthread_mutex_unlock(&h->lock);
    if (!first || !broadcast || !h->tp) return;
    mdf_msg_hdr m;
    memset(&m, 0, sizeof m);
    m.kind = M_ABORT;
    m.a = why->code;
    for (int r = 0; r < h->t.nranks; r++)
        if (r != h->rank) mdf_transport_send(h->tp, r, &m, why->message, strlen(why->message) + 1, NULL);
}

static void inst_fail(local_inst *li, const mdf_error *e)
{
    mdf_error why;
    mdf_error_clear(&why);
    mdf_error_set(&why, e->code, "stage '%s' on rank %d failed: %s", li->h->p->cfg[li->stage].name, li->h->rank,
                  e->message);
    hub_stop(li->h, &why, 1);
}

/* ---- the receiver of finished systems (rank 0) --------------------------------------- */

static mdf_status receive_final(hub *h, const mdf_frame *f, const mdf_system_view *v)
{
    pthread_mutex_lock(&h->out_lock);
    if (v->status == h->exit_status) {
        h->finished++;
        h->budget_exits += (v->flags & MDF_SYS_BUDGET_EXIT) != 0;
    }
    int stop = h->cfg->on_exit ? h->cfg->on_exit(h->cfg->user, f, v) : 0;
    if (stop && h->out_st == MDF_OK) {
        h->out_st = MDF_ERR_IO;
        mdf_error_set(&h->out_err, MDF_ERR_IO, "the receiver of finished systems stopped the run at system id %lld",
                      (long long)v->id);
    }
    pthread_mutex_unlock(&h->out_lock);
    if (stop) hub_stop(h, &h->out_err, 1);
    return stop ? MDF_ERR_IO : MDF_OK;
}

static mdf_status to_receiver(hub *h, const mdf_frame *f, const mdf_system_view *v, mdf_error *err)
{
    if (h->rank == 0) {
        mdf_status st = receive_final(h, f, v);
        if (st != MDF_OK && err) *err = h->out_err;
        return st;
    }
    mdf_bytes b = {0};
    mdf_ckpt_pack_frame(&b, f, v);
    if (b.failed) {
        mdf_bytes_free(&b);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to send system %lld to rank 0", (long long)v->id);
    }
    mdf_msg_hdr m;
    memset(&m, 0, sizeof m);
    m.kind = M_FINAL;
    mdf_status st = mdf_transport_send(h->tp, 0, &m, b.p, b.n, err);
    mdf_bytes_free(&b);
    return st;
}

/* Systems a stage lets go before its exit status (its max_steps, a failure). */
static int unfinished_exit(void *user, const mdf_frame *f, const mdf_system_view *v)
{
    local_inst *li = user;
    li->rep.systems_unfinished++;
    mdf_error e;
    mdf_error_clear(&e);
    return to_receiver(li->h, f, v, &e) != MDF_OK;
}

/* ---- a local instance's ports ----------------------------------------------------------- */

static int is_last(const local_inst *li) { return li->stage == li->h->t.nstages - 1; }

static void inbox_push(hub *h, int to, pipe_msg *msg, int64_t natoms)
{
    inbox *in = &h->in[to];
    if (in->n == in->cap) { /* the credits bound the queue: growth stops there */
        size_t cap = in->cap ? 2 * in->cap : 16;
        pipe_msg *q = malloc(cap * sizeof *q);
        if (!q) {
            mdf_error e;
            mdf_error_clear(&e);
            mdf_error_set(&e, MDF_ERR_NOMEM, "rank %d: no memory for an inbox of %zu systems", h->rank, cap);
            mdf_frame_free(&msg->f);
            pthread_mutex_unlock(&h->lock);
            hub_stop(h, &e, 1);
            pthread_mutex_lock(&h->lock);
            return;
        }
        for (size_t i = 0; i < in->n; i++) q[i] = in->q[(in->head + i) % in->cap];
        free(in->q);
        in->q = q;
        in->head = 0;
        in->cap = cap;
    }
    in->q[(in->head + in->n) % in->cap] = *msg;
    in->n++;
    in->queued_atoms += natoms;
    in->occ_sys++;
    in->occ_atoms += natoms;
    if (in->occ_sys > in->hwm_sys) in->hwm_sys = in->occ_sys;
    if (in->occ_atoms > in->hwm_atoms) in->hwm_atoms = in->occ_atoms;
    in->epoch++;
    pthread_cond_broadcast(&h->cond);
}

static void release_room(local_inst *li, int l, int64_t natoms);

static mdf_status port_pull(void *user, mdf_sampler *s, mdf_error *err)
{
    local_inst *li = user;
    hub *h = li->h;
    inbox *in = &h->in[li->inst];
    pthread_mutex_lock(&h->lock);
    size_t n = in->n;
    pipe_msg *got = n ? malloc(n * sizeof *got) : NULL;
    if (n && !got) {
        pthread_mutex_unlock(&h->lock);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to take %zu systems in", n);
    }
    for (size_t i = 0; i < n; i++) got[i] = in->q[(in->head + i) % in->cap];
    in->head = in->cap ? (in->head + n) % in->cap : 0;
    in->n = 0;
    in->queued_atoms = 0;
    int closed = in->open == 0;
    pthread_mutex_unlock(&h->lock);
    mdf_status st = MDF_OK;
    for (size_t i = 0; i < n; i++) {
        /* A system this stage has already (the stage before handed it on
         * again after a resume): its room goes back at once. */
        if (st == MDF_OK && mdf_sampler_arrived(s, (size_t)got[i].source)) release_room(li, got[i].link, got[i].f.natoms);
        else if (st == MDF_OK)
            st = mdf_sampler_arrive(s, (size_t)got[i].source, &got[i].f, got[i].link, got[i].carry, err);
        mdf_frame_free(&got[i].f);
    }
    free(got);
    if (st == MDF_OK && closed) mdf_sampler_close(s);
    return st;
}

/* Inbox room of a system that came through link l is free again: the
 * credit goes back to the sender (a message when it is on another rank). */
static void release_room(local_inst *li, int l, int64_t natoms)
{
    hub *h = li->h;
    int from = link_from(&h->t, l);
    pthread_mutex_lock(&h->lock);
    inbox *in = &h->in[li->inst];
    in->occ_sys--;
    in->occ_atoms -= natoms;
    if (h->t.rank[from] == h->rank) {
        h->links[l].credit_sys++;
        h->links[l].credit_atoms += natoms;
        int lf = h->local_of[from];
        if (lf >= 0) h->loc[lf].credit_epoch++;
        pthread_cond_broadcast(&h->cond);
    }
    pthread_mutex_unlock(&h->lock);
    if (h->t.rank[from] != h->rank) {
        mdf_msg_hdr m;
        memset(&m, 0, sizeof m);
        m.kind = M_CREDIT;
        m.b = l;
        m.x = 1;
        m.y = natoms;
        mdf_error e;
        mdf_error_clear(&e);
        if (mdf_transport_send(h->tp, h->t.rank[from], &m, NULL, 0, &e) != MDF_OK) hub_stop(h, &e, 1);
    }
}

/* The batch took dataset system `index`: its room in the inbox is free
 * again (systems of the first stage, or restored from a checkpoint, came
 * through no link). */
static void port_admitted(void *user, const mdf_sampler *s, size_t index)
{
    local_inst *li = user;
    li->rep.systems_in++;
    int l = mdf_sampler_origin(s, index);
    if (l >= 0) release_room(li, l, mdf_sampler_atoms(s, index));
}

/* A link out of li with room for natoms atoms, from the round-robin
 * position on (lock held); -1 when none. */
static int link_with_room(local_inst *li, int64_t natoms)
{
    hub *h = li->h;
    int k = li->stage, nd = instances_of(&h->t, k + 1);
    for (int j = 0; j < nd; j++) {
        int d = h->t.first[k + 1] + (li->rr + j) % nd;
        int l = link_index(&h->t, li->inst, d);
        if (h->links[l].credit_sys >= 1 && h->links[l].credit_atoms >= natoms) return l;
    }
    return -1;
}

static int port_room(void *user, int64_t natoms)
{
    local_inst *li = user;
    if (is_last(li)) return 1;
    pthread_mutex_lock(&li->h->lock);
    int l = link_with_room(li, natoms);
    pthread_mutex_unlock(&li->h->lock);
    return l >= 0;
}

static mdf_status deliver(local_inst *li, int l, const mdf_frame *f, const mdf_system_view *v, int64_t index,
                          mdf_error *err)
{
    hub *h = li->h;
    int to = link_to(&h->t, l);
    int32_t carry = v->flags & MDF_SYS_BUDGET_EXIT;
    if (h->t.rank[to] == h->rank) {
        pipe_msg msg = {.source = index, .carry = carry, .link = l};
        mdf_status st = mdf_frame_copy(&msg.f, f, err);
        if (st != MDF_OK) return st;
        pthread_mutex_lock(&h->lock);
        inbox_push(h, to, &msg, f->natoms);
        pthread_mutex_unlock(&h->lock);
        return MDF_OK;
    }
    mdf_bytes b = {0};
    mdf_ckpt_pack_frame(&b, f, v);
    if (b.failed) {
        mdf_bytes_free(&b);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to send system %lld on", (long long)v->id);
    }
    mdf_msg_hdr m;
    memset(&m, 0, sizeof m);
    m.kind = M_DATA;
    m.a = to;
    m.b = l;
    m.x = index;
    m.y = carry;
    mdf_status st = mdf_transport_send(h->tp, h->t.rank[to], &m, b.p, b.n, err);
    mdf_bytes_free(&b);
    return st;
}

static mdf_status port_send(void *user, const mdf_frame *f, const mdf_system_view *v, int64_t index, mdf_error *err)
{
    local_inst *li = user;
    hub *h = li->h;
    if (is_last(li)) {
        li->rep.systems_out++;
        return to_receiver(h, f, v, err);
    }
    pthread_mutex_lock(&h->lock);
    int l = -1;
    double t0 = 0.0;
    while (!h->stopped && (l = link_with_room(li, f->natoms)) < 0) {
        if (t0 == 0.0) t0 = now_s();
        wait_slice(h);
    }
    if (t0 > 0.0) li->rep.blocked_s += now_s() - t0;
    if (l >= 0) {
        h->links[l].credit_sys--;
        h->links[l].credit_atoms -= f->natoms;
        li->rr = (li->rr + 1) % instances_of(&h->t, li->stage + 1);
    }
    pthread_mutex_unlock(&h->lock);
    /* Stopped: the system goes to the receiver as it is, not lost. */
    if (l < 0) return to_receiver(h, f, v, err);
    li->rep.systems_out++;
    return deliver(li, l, f, v, index, err);
}

static mdf_status port_wait(void *user, int want_input, int want_room, mdf_error *err)
{
    local_inst *li = user;
    hub *h = li->h;
    inbox *in = &h->in[li->inst];
    double t0 = now_s();
    pthread_mutex_lock(&h->lock);
    uint64_t in0 = in->epoch, cr0 = li->credit_epoch;
    for (;;) {
        if (h->stopped) break;
        if (want_input && (in->n > 0 || in->open == 0 || in->epoch != in0)) break;
        if (want_room && li->credit_epoch != cr0) break;
        wait_slice(h);
    }
    int stopped = h->stopped;
    mdf_error why = h->stop_err;
    pthread_mutex_unlock(&h->lock);
    double dt = now_s() - t0;
    if (want_room) li->rep.blocked_s += dt;
    else li->rep.starved_s += dt;
    if (stopped) {
        if (err) *err = why;
        return why.code ? why.code : MDF_ERR_INVALID;
    }
    return MDF_OK;
}

static int port_stopped(void *user, mdf_error *err)
{
    local_inst *li = user;
    if (!li->h->stopped) return 0;
    pthread_mutex_lock(&li->h->lock);
    if (err) *err = li->h->stop_err;
    pthread_mutex_unlock(&li->h->lock);
    return 1;
}

static int64_t port_pending(void *user)
{
    local_inst *li = user;
    pthread_mutex_lock(&li->h->lock);
    int64_t n = li->h->in[li->inst].queued_atoms;
    pthread_mutex_unlock(&li->h->lock);
    return n;
}

static int port_pressing(void *user)
{
    local_inst *li = user;
    hub *h = li->h;
    if (li->stage == 0) return 0;
    pthread_mutex_lock(&h->lock);
    const inbox *in = &h->in[li->inst];
    int pressing = (li->rep.inbox_cap_systems > 0 && 2 * in->occ_sys >= li->rep.inbox_cap_systems) ||
                   2 * in->occ_atoms >= li->rep.inbox_cap_atoms;
    pthread_mutex_unlock(&h->lock);
    return pressing;
}

/* Every link out of the instance has all its credit: the next stage's
 * inboxes hold nothing from it. */
static int port_downstream_idle(void *user)
{
    local_inst *li = user;
    hub *h = li->h;
    if (is_last(li)) return 0;
    int k = li->stage, idle = 1;
    pthread_mutex_lock(&h->lock);
    for (int d = h->t.first[k + 1]; idle && d < h->t.first[k + 2]; d++) {
        const link_state *ls = &h->links[link_index(&h->t, li->inst, d)];
        idle = ls->credit_sys == ls->cap_sys && ls->credit_atoms == ls->cap_atoms;
    }
    pthread_mutex_unlock(&h->lock);
    return idle;
}

static void port_held(void *user, int64_t n)
{
    local_inst *li = user;
    if (n > li->rep.held_max) li->rep.held_max = n;
}

/* ---- messages from other ranks (the transport's thread) ------------------------------ */

static void on_message(void *user, int from, const mdf_msg_hdr *m, const unsigned char *payload)
{
    hub *h = user;
    mdf_error e;
    mdf_error_clear(&e);
    switch (m->kind) {
    case M_DATA:
    case M_FINAL: {
        mdf_frame f;
        mdf_system_view v;
        mdf_bytes_in bi = {.p = payload, .n = (size_t)m->len};
        if (!payload || mdf_ckpt_unpack_frame(&bi, &f, &v, &e) != MDF_OK) {
            mdf_error why;
            mdf_error_clear(&why);
            mdf_error_set(&why, MDF_ERR_IO, "rank %d: a system from rank %d could not be read: %s", h->rank, from,
                          e.message);
            hub_stop(h, &why, 1);
            return;
        }
        if (m->kind == M_FINAL) {
            receive_final(h, &f, &v);
            mdf_frame_free(&f);
            return;
        }
        if (m->a < 0 || m->a >= h->t.ninst || h->t.rank[m->a] != h->rank || m->b < 0 || m->b >= h->t.nlinks) {
            mdf_frame_free(&f);
            return;
        }
        pipe_msg msg = {.f = f, .source = m->x, .carry = (int32_t)m->y, .link = m->b};
        pthread_mutex_lock(&h->lock);
        inbox_push(h, m->a, &msg, f.natoms);
        pthread_mutex_unlock(&h->lock);
        return;
    }
    case M_CREDIT:
        if (m->b < 0 || m->b >= h->t.nlinks) return;
        pthread_mutex_lock(&h->lock);
        h->links[m->b].credit_sys += m->x;
        h->links[m->b].credit_atoms += m->y;
        {
            int lf = h->local_of[link_from(&h->t, m->b)];
            if (lf >= 0) h->loc[lf].credit_epoch++;
        }
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->lock);
        return;
    case M_EOS:
        if (m->b < 0 || m->b >= h->t.nlinks) return;
        pthread_mutex_lock(&h->lock);
        h->in[link_to(&h->t, m->b)].open--;
        h->in[link_to(&h->t, m->b)].epoch++;
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->lock);
        return;
    case M_REPORT:
        if (h->reports && m->a >= 0 && m->a < h->t.ninst && payload && (size_t)m->len == sizeof(mdf_pipe_stage_report))
            memcpy(&h->reports[m->a], payload, sizeof(mdf_pipe_stage_report));
        return;
    case M_ABORT:
        mdf_error_set(&e, m->a > 0 ? (mdf_status)m->a : MDF_ERR_INVALID, "%.*s",
                      (int)(m->len > 0 ? m->len : 0), payload ? (const char *)payload : "another rank failed");
        hub_stop(h, &e, 0);
        return;
    case M_READY:
        pthread_mutex_lock(&h->lock);
        h->ready++;
        if (m->a != 0 && !h->ready_failed) {
            h->ready_failed = 1;
            mdf_error_set(&h->ready_err, (mdf_status)m->a, "%.*s", (int)(m->len > 0 ? m->len : 0),
                          payload ? (const char *)payload : "");
        }
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->lock);
        return;
    default:
        return;
    }
}

/* ---- set-up: samplers, worker groups --------------------------------------------------- */

/* Systems of the dataset for instance j of the first stage's m: each to the
 * instance with the fewest atoms so far, in input order (the same on every
 * rank). */
static void first_stage_share(const mdf_frame *frames, size_t n, int m, int j, mdf_sampler *s)
{
    int64_t load[MDF_PIPE_MAX_RANKS] = {0};
    for (size_t i = 0; i < n; i++) {
        int best = 0;
        for (int q = 1; q < m; q++)
            if (load[q] < load[best]) best = q;
        load[best] += frames[i].natoms;
        if (best == j) mdf_sampler_arrive(s, i, NULL, -1, 0, NULL);
    }
    mdf_sampler_close(s);
}

static mdf_status create_sampler(hub *h, local_inst *li, mdf_error *err)
{
    const mdf_pipe_stage_config *c = &h->p->cfg[li->stage];
    mdf_sampler_config sc = c->budget;
    if (sc.max_pairs > 0 && !(sc.pair_cutoff > 0.0)) sc.pair_cutoff = mdf_model_cutoff(h->m);
    mdf_status st = mdf_sampler_create(h->cfg->frames, h->cfg->nframes, &sc, &li->sampler, err);
    if (st == MDF_OK) st = mdf_sampler_make_stream(li->sampler, err);
    if (st == MDF_OK && li->stage == 0)
        first_stage_share(h->cfg->frames, h->cfg->nframes, instances_of(&h->t, 0), li->inst - h->t.first[0],
                          li->sampler);
    if (st != MDF_OK) mdf_error_prefix(err, st, "stage '%s'", c->name);
    return st;
}

static int worker_ids(enum starpu_worker_archtype type, int *ids)
{
    int n = starpu_worker_get_count_by_type(type);
    if (n <= 0) return 0;
    return (int)starpu_worker_get_ids_by_type(type, ids, (unsigned)n);
}

/* Worker groups of the local instances: explicit CPU counts first, in
 * order, each its own; the stages without one share every CPU left (all of
 * them when none is left): overlapping contexts, so StarPU balances the
 * stages' work over those CPUs as it does a fused stage's (an even split
 * made the built-in workflow, 90% MD, run 1.7x slower than fused on 2 CPUs:
 * the MD stage had one). ncpus 0 borrows one CPU for CPU-only tasks; CUDA
 * workers by count, by default all to the last local stage. A single local
 * stage with no placement of its own keeps the process's workers (no
 * context). */
static mdf_status assign_workers(hub *h, mdf_error *err)
{
    int cpus[STARPU_NMAXWORKERS], gpus[STARPU_NMAXWORKERS];
    int ncpu = worker_ids(STARPU_CPU_WORKER, cpus), ngpu = worker_ids(STARPU_CUDA_WORKER, gpus);
    int explicit = 0;
    for (int i = 0; i < h->nloc; i++) {
        const mdf_pipe_stage_config *c = &h->p->cfg[h->loc[i].stage];
        explicit |= c->ncpus >= 0 || c->ncuda >= 0 || *c->sched;
    }
    if (h->nloc == 1 && !explicit) {
        local_inst *li = &h->loc[0];
        li->nworkers = (int)starpu_worker_get_count();
        for (int w = 0; w < li->nworkers; w++) li->workers[w] = w;
        return MDF_OK;
    }
    int used = 0;
    for (int i = 0; i < h->nloc; i++) {
        const mdf_pipe_stage_config *c = &h->p->cfg[h->loc[i].stage];
        if (c->ncpus > 0) used += c->ncpus;
    }
    if (used > ncpu)
        return mdf_error_set(err, MDF_ERR_INVALID, "placement: the stages of rank %d ask for %d CPU workers, StarPU "
                             "has %d: lower their cpus, or give StarPU more (STARPU_NCPU, scheduler ncpus)", h->rank,
                             used, ncpu);
    if (ncpu == 0)
        return mdf_error_set(err, MDF_ERR_INVALID, "placement: rank %d has no CPU worker; every stage needs one for "
                             "its CPU-only tasks (census, log rows)", h->rank);
    int rest = ncpu - used, next = 0, gnext = 0;
    for (int i = 0; i < h->nloc; i++) {
        local_inst *li = &h->loc[i];
        const mdf_pipe_stage_config *c = &h->p->cfg[li->stage];
        int n = 0;
        if (c->ncpus > 0) { /* explicit counts take the first CPUs, in order */
            for (int q = 0; q < c->ncpus; q++) li->workers[n++] = cpus[next++];
        } else if (c->ncpus < 0) { /* the CPUs no stage took for its own, shared (or all of them) */
            int from = rest > 0 ? used : 0, count = rest > 0 ? rest : ncpu;
            for (int q = 0; q < count; q++) li->workers[n++] = cpus[from + q];
        } else {
            li->workers[n++] = cpus[0]; /* ncpus 0: a CPU shared with the first stage */
        }
        int want = c->ncuda >= 0 ? c->ncuda : (i == h->nloc - 1 ? ngpu - gnext : 0);
        if (gnext + want > ngpu)
            return mdf_error_set(err, MDF_ERR_INVALID, "placement: stage '%s' asks for %d CUDA workers, rank %d has "
                                 "%d left: lower its cuda", c->name, want, h->rank, ngpu - gnext);
        for (int q = 0; q < want; q++) li->workers[n++] = gpus[gnext++];
        li->nworkers = n;
        char name[MDF_PIPE_NAME_MAX + 16];
        snprintf(name, sizeof name, "mdf_%s", c->name);
        const char *policy = *c->sched ? c->sched : mdf_runtime_sched_name();
        li->ctx = starpu_sched_ctx_create(li->workers, n, name, STARPU_SCHED_CTX_POLICY_NAME, policy, 0);
        li->has_ctx = 1;
    }
    return MDF_OK;
}

/* ---- one instance's run ------------------------------------------------------------------ */

static void frame_view(const mdf_frame *f, int64_t index, int32_t carry, mdf_system_view *v)
{
    memset(v, 0, sizeof *v);
    const char *s;
    v->id = (s = mdf_frame_get_info(f, "mdf_system_id")) ? strtoll(s, NULL, 10) : index;
    v->step = (s = mdf_frame_get_info(f, "mdf_step")) ? strtoll(s, NULL, 10) : 0;
    v->status = (s = mdf_frame_get_info(f, "mdf_status")) ? (int32_t)strtol(s, NULL, 10) : 0;
    v->natoms = f->natoms;
    v->potential_energy = f->has_energy ? f->energy : 0.0;
    v->fmax = NAN;
    v->flags = carry;
    memcpy(v->cell, f->cell, sizeof v->cell);
    for (int k = 0; k < 3; k++) v->pbc[k] = f->pbc[k];
}

/* After a run that ended with systems still coming (max_steps, or a
 * failure): what arrives goes to the receiver as it came, so that nothing
 * handed on is lost and the stage before is never blocked. Waits for the
 * end of the stream unless the pipeline stopped. */
static mdf_status drain(local_inst *li, mdf_error *err)
{
    hub *h = li->h;
    mdf_sampler *s = li->sampler;
    size_t n = mdf_sampler_size(s);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory to drain stage '%s'", h->p->cfg[li->stage].name);
    mdf_status st = MDF_OK;
    for (;;) {
        st = port_pull(li, s, err);
        size_t got = st == MDF_OK ? mdf_sampler_take(s, -1, -1, -1, idx, n) : 0;
        for (size_t j = 0; st == MDF_OK && j < got; j++) {
            /* The first stage's systems never started: the caller knows them. */
            if (li->stage > 0) {
                const mdf_frame *f = mdf_sampler_frame(s, idx[j]);
                mdf_system_view v;
                frame_view(f, (int64_t)idx[j], mdf_sampler_carry_flags(s, idx[j]), &v);
                li->rep.systems_unfinished++;
                st = to_receiver(h, f, &v, err);
            }
            port_admitted(li, s, idx[j]);
            li->rep.systems_in--; /* handed through, never in the batch */
            mdf_sampler_release(s, idx[j]);
        }
        if (st != MDF_OK || mdf_sampler_exhausted(s) || h->stopped) break;
        st = port_wait(li, 1, 0, err);
        if (st != MDF_OK) break;
    }
    free(idx);
    return st;
}

/* End of stream on every link out of the instance. */
static void close_links(local_inst *li)
{
    hub *h = li->h;
    if (is_last(li)) return;
    int k = li->stage;
    for (int d = h->t.first[k + 1]; d < h->t.first[k + 2]; d++) {
        int l = link_index(&h->t, li->inst, d);
        if (h->t.rank[d] == h->rank) {
            pthread_mutex_lock(&h->lock);
            h->in[d].open--;
            h->in[d].epoch++;
            pthread_cond_broadcast(&h->cond);
            pthread_mutex_unlock(&h->lock);
        } else {
            mdf_msg_hdr m;
            memset(&m, 0, sizeof m);
            m.kind = M_EOS;
            m.b = l;
            mdf_error e;
            mdf_error_clear(&e);
            if (mdf_transport_send(h->tp, h->t.rank[d], &m, NULL, 0, &e) != MDF_OK) hub_stop(h, &e, 1);
        }
    }
}

static void *run_instance(void *arg)
{
    local_inst *li = arg;
    hub *h = li->h;
    const mdf_pipe_stage_config *c = &h->p->cfg[li->stage];
    if (li->has_ctx) starpu_sched_ctx_set_context(&li->ctx);
    mdf_inflight_config ic;
    mdf_inflight_config_init(&ic);
    ic.sampler = li->sampler;
    ic.refill_interval = c->refill_interval;
    ic.refill_fraction = c->refill_fraction;
    ic.nshards = c->nshards;
    ic.on_exit = unfinished_exit;
    ic.user = li;
    char ckpt[4096];
    if (h->cfg->checkpoint_path && *h->cfg->checkpoint_path) {
        mdf_pipeline_checkpoint_name(h->p, h->cfg->checkpoint_path, li->stage, h->rank, ckpt, sizeof ckpt);
        ic.checkpoint_path = ckpt;
        ic.checkpoint_every = h->cfg->checkpoint_every;
        ic.resume = h->cfg->resume;
    }
    mdf_stage_report rep;
    memset(&rep, 0, sizeof rep);
    mdf_error_clear(&li->err);
    li->st = mdf_stage_run_ported(h->p->stages[li->stage], h->m, &ic, &li->ports, &rep, &li->err);
    if (li->st != MDF_OK && !h->stopped) inst_fail(li, &li->err);
    /* What still arrives goes through to the receiver; after a failure, what is there now. */
    mdf_error derr;
    mdf_error_clear(&derr);
    if (li->stage > 0 && drain(li, &derr) != MDF_OK && li->st == MDF_OK && !h->stopped) {
        li->st = derr.code;
        li->err = derr;
        inst_fail(li, &derr);
    }
    close_links(li);
    li->rep.steps = rep.steps;
    li->rep.wall_s = rep.wall_seconds;
    li->rep.atom_steps_per_second = rep.atom_steps_per_second;
    li->rep.refills = rep.refills;
    li->rep.model_evaluations = rep.model_evaluations;
    li->rep.list_rebuilds = rep.list_rebuilds;
    if (li->has_ctx) starpu_sched_ctx_set_context(NULL);
    return NULL;
}

/* Busy, idle and sleeping shares of each local instance's workers, from
 * StarPU's per-worker profiling since the run began. */
static void worker_shares(hub *h)
{
    mdf_worker_stats ws[STARPU_NMAXWORKERS];
    int n = mdf_runtime_worker_stats(ws, STARPU_NMAXWORKERS);
    for (int i = 0; i < h->nloc; i++) {
        local_inst *li = &h->loc[i];
        double exec = 0.0, total = 0.0, sleep = 0.0;
        for (int q = 0; q < li->nworkers; q++) {
            int w = li->workers[q];
            if (w < 0 || w >= n) continue;
            exec += ws[w].executing_s;
            total += ws[w].total_s;
            sleep += ws[w].sleeping_s;
        }
        li->rep.nworkers = li->nworkers;
        if (total > 0.0) {
            li->rep.busy_share = exec / total;
            li->rep.sleeping_share = sleep / total;
            li->rep.idle_share = 1.0 - li->rep.busy_share - li->rep.sleeping_share;
            if (li->rep.idle_share < 0.0) li->rep.idle_share = 0.0;
        }
    }
}

/* Every rank is set up (or says why not) before any stage starts. */
static mdf_status ready_barrier(hub *h, mdf_status mine, const mdf_error *why, mdf_error *err)
{
    mdf_msg_hdr m;
    memset(&m, 0, sizeof m);
    m.kind = M_READY;
    m.a = mine;
    const char *text = mine != MDF_OK ? why->message : "";
    for (int r = 0; r < h->t.nranks; r++)
        if (r != h->rank) mdf_transport_send(h->tp, r, &m, text, strlen(text) + 1, NULL);
    pthread_mutex_lock(&h->lock);
    while (h->ready < h->t.nranks - 1) pthread_cond_wait(&h->cond, &h->lock);
    int failed = h->ready_failed;
    mdf_error other = h->ready_err;
    pthread_mutex_unlock(&h->lock);
    if (mine != MDF_OK) {
        if (err) *err = *why;
        return mine;
    }
    if (failed) {
        if (err) *err = other;
        return other.code ? other.code : MDF_ERR_INVALID;
    }
    return MDF_OK;
}

static mdf_status setup_local(hub *h, mdf_error *err)
{
    mdf_status st = MDF_OK;
    for (int i = 0; i < h->t.ninst; i++) h->local_of[i] = -1;
    for (int i = 0; i < h->t.ninst; i++)
        if (h->t.rank[i] == h->rank) h->nloc++;
    h->loc = calloc((size_t)(h->nloc ? h->nloc : 1), sizeof *h->loc);
    h->links = calloc((size_t)(h->t.nlinks ? h->t.nlinks : 1), sizeof *h->links);
    h->in = calloc((size_t)h->t.ninst, sizeof *h->in);
    if (!h->loc || !h->links || !h->in) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a pipeline");
    for (int l = 0; l < h->t.nlinks; l++) {
        int k = h->t.stage[link_to(&h->t, l)];
        link_capacity(h->p, &h->t, k, &h->links[l].cap_sys, &h->links[l].cap_atoms);
        h->links[l].credit_sys = h->links[l].cap_sys;
        h->links[l].credit_atoms = h->links[l].cap_atoms;
    }
    for (int i = 0; i < h->t.ninst; i++) h->in[i].open = h->t.stage[i] > 0 ? instances_of(&h->t, h->t.stage[i] - 1) : 0;
    int n = 0;
    for (int i = 0; i < h->t.ninst; i++) {
        if (h->t.rank[i] != h->rank) continue;
        local_inst *li = &h->loc[n];
        h->local_of[i] = n++;
        li->h = h;
        li->inst = i;
        li->stage = h->t.stage[i];
        const mdf_pipe_stage_config *c = &h->p->cfg[li->stage];
        snprintf(li->rep.name, sizeof li->rep.name, "%s", c->name);
        li->rep.stage = li->stage;
        li->rep.rank = h->rank;
        if (li->stage > 0) {
            int senders = instances_of(&h->t, li->stage - 1);
            int64_t cs = 0, ca = 0;
            link_capacity(h->p, &h->t, li->stage, &cs, &ca);
            li->rep.inbox_cap_systems = c->inbox_systems > 0 ? cs * senders : 0;
            li->rep.inbox_cap_atoms = ca * senders;
        }
        int j = i - h->t.first[li->stage];
        li->ports = (mdf_stage_ports){.user = li, .pull = port_pull, .admitted = port_admitted, .room = port_room,
                                      .send = port_send, .wait = port_wait, .stopped = port_stopped,
                                      .pending_atoms = port_pending, .inbox_pressing = port_pressing,
                                      .held = port_held, .downstream_idle = port_downstream_idle,
                                      .layout = {li->stage, h->p->n, h->rank, h->t.nranks, j,
                                                 instances_of(&h->t, li->stage),
                                                 li->stage > 0 ? instances_of(&h->t, li->stage - 1) : 0,
                                                 li->stage + 1 < h->p->n ? instances_of(&h->t, li->stage + 1) : 0}};
        snprintf(li->ports.layout_text, sizeof li->ports.layout_text, "stage %d of %d ('%s') on rank %d of %d, "
                 "instance %d of %d", li->stage + 1, h->p->n, c->name, h->rank, h->t.nranks, j + 1,
                 instances_of(&h->t, li->stage));
        if (st == MDF_OK) st = create_sampler(h, li, err);
    }
    if (st == MDF_OK) st = assign_workers(h, err);
    return st;
}

static void teardown_local(hub *h)
{
    for (int i = 0; h->loc && i < h->nloc; i++) {
        local_inst *li = &h->loc[i];
        if (li->has_ctx) starpu_sched_ctx_delete(li->ctx);
        mdf_sampler_destroy(li->sampler);
    }
    for (int i = 0; h->in && i < h->t.ninst; i++) {
        inbox *in = &h->in[i];
        for (size_t q = 0; q < in->n; q++) mdf_frame_free(&in->q[(in->head + q) % in->cap].f);
        free(in->q);
    }
    free(h->in);
    free(h->links);
    free(h->loc);
}

/* Every instance's report on rank 0: its own, and those the other ranks sent. */
static void send_reports(hub *h)
{
    for (int i = 0; i < h->nloc; i++) {
        local_inst *li = &h->loc[i];
        li->rep.inbox_hwm_systems = h->in[li->inst].hwm_sys;
        li->rep.inbox_hwm_atoms = h->in[li->inst].hwm_atoms;
        if (h->rank == 0) {
            if (h->reports) h->reports[li->inst] = li->rep;
            continue;
        }
        mdf_msg_hdr m;
        memset(&m, 0, sizeof m);
        m.kind = M_REPORT;
        m.a = li->inst;
        mdf_transport_send(h->tp, 0, &m, &li->rep, sizeof li->rep, NULL);
    }
}

mdf_status mdf_pipeline_run(mdf_pipeline *p, mdf_model *m, const mdf_pipe_run_config *cfg, mdf_pipe_report *report,
                        mdf_error *err)
{
    if (report) memset(report, 0, sizeof *report);
    if (!p || !m || !cfg || !cfg->frames)
        return mdf_error_set(err, MDF_ERR_INVALID, "mdf_pipeline_run needs a pipeline, a model and a dataset");
    if (cfg->resume && (!cfg->checkpoint_path || !*cfg->checkpoint_path))
        return mdf_error_set(err, MDF_ERR_INVALID, "resuming needs a checkpoint file: set checkpoint_path");
    hub *h = calloc(1, sizeof *h);
    if (!h) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a pipeline");
    h->p = p;
    h->m = m;
    h->cfg = cfg;
    h->exit_status = p->parts;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    pthread_mutex_init(&h->out_lock, NULL);
    mdf_error_clear(&h->stop_err);
    mdf_error_clear(&h->out_err);
    mdf_error_clear(&h->ready_err);
    int nranks = cfg->mpi ? mdf_runtime_mpi_size() : 1;
    h->rank = cfg->mpi ? mdf_runtime_mpi_rank() : 0;
    mdf_status st = mdf_pipeline_check(p, m, cfg->frames, cfg->nframes, nranks, err);
    if (st == MDF_OK) st = build_topo(p, nranks, &h->t, err);
    if (st == MDF_OK && cfg->mpi && nranks > 1) st = mdf_transport_create(on_message, h, &h->tp, err);
    if (st == MDF_OK && h->rank == 0) {
        h->reports = calloc((size_t)h->t.ninst, sizeof *h->reports);
        if (!h->reports) st = mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a pipeline's report");
    }
    /* Set-up problems on any rank stop every rank before any work. */
    mdf_error setup_err;
    mdf_error_clear(&setup_err);
    mdf_status setup = st == MDF_OK ? setup_local(h, &setup_err) : MDF_OK;
    if (st == MDF_OK && h->tp) st = ready_barrier(h, setup, &setup_err, err);
    else if (st == MDF_OK && setup != MDF_OK) {
        st = setup;
        if (err) *err = setup_err;
    }
    double t0 = now_s();
    if (st == MDF_OK) {
        mdf_runtime_reset_stats();
        for (int i = 0; i < h->nloc; i++)
            h->loc[i].started = pthread_create(&h->loc[i].thread, NULL, run_instance, &h->loc[i]) == 0;
        for (int i = 0; i < h->nloc; i++) {
            if (h->loc[i].started) pthread_join(h->loc[i].thread, NULL);
            else {
                mdf_error e;
                mdf_error_clear(&e);
                mdf_error_set(&e, MDF_ERR_IO, "could not start a thread for stage '%s'", p->cfg[h->loc[i].stage].name);
                inst_fail(&h->loc[i], &e);
            }
        }
        worker_shares(h);
        send_reports(h);
    }
    if (h->tp) {
        mdf_error cerr;
        mdf_error_clear(&cerr);
        mdf_status cs = mdf_transport_close(h->tp, h->stopped || st != MDF_OK ? cfg->abort_timeout_s : -1.0, &cerr);
        if (cs != MDF_OK && st == MDF_OK && !h->stopped) {
            st = cs;
            if (err) *err = cerr;
        }
        if (cs == MDF_OK) {
            mdf_transport_destroy(h->tp);
            h->tp = NULL;
        } /* else left: its posted receives can never be freed (the caller aborts the job) */
    }
    /* After the close: rank 0 has then received every system and report. */
    double wall = now_s() - t0;
    if (st == MDF_OK && h->stopped) {
        st = h->stop_err.code ? h->stop_err.code : MDF_ERR_INVALID;
        if (err) *err = h->stop_err;
    }
    if (st == MDF_OK && h->out_st != MDF_OK) {
        st = h->out_st;
        if (err) *err = h->out_err;
    }
    if (report) {
        report->wall_s = wall;
        report->nranks = nranks;
        report->finished = h->finished;
        report->budget_exits = h->budget_exits;
        if (h->reports) {
            report->n = h->t.ninst;
            report->stages = h->reports;
            h->reports = NULL;
            for (int i = 0; i < report->n; i++) {
                report->model_evaluations += report->stages[i].model_evaluations;
                report->list_rebuilds += report->stages[i].list_rebuilds;
            }
        }
    }
    free(h->reports);
    teardown_local(h);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->out_lock);
    free(h);
    return st;
}
