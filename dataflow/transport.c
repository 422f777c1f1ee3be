/* mdflow — messages between MPI ranks over StarPU-MPI (see transport.h). */
#define _POSIX_C_SOURCE 200809L
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "transport.h"
#include "mdflow/runtime.h"

#ifndef MDF_HAVE_MPI

int mdf_transport_available(void) { return 0; }

mdf_status mdf_transport_create(mdf_transport_recv_fn fn, void *user, mdf_transport **out, mdf_error *err)
{
    (void)fn;
    (void)user;
    *out = NULL;
    return mdf_error_set(err, MDF_ERR_INVALID, "mdflow was built without StarPU-MPI: install libopenmpi-dev and "
                         "reconfigure (scripts/build.sh), or run the pipeline in one process");
}
int mdf_transport_rank(const mdf_transport *t) { (void)t; return 0; }
int mdf_transport_size(const mdf_transport *t) { (void)t; return 1; }
mdf_status mdf_transport_send(mdf_transport *t, int to, const mdf_msg_hdr *h, const void *payload, size_t len,
                              mdf_error *err)
{
    (void)t, (void)to, (void)h, (void)payload, (void)len;
    return mdf_error_set(err, MDF_ERR_INVALID, "mdflow was built without StarPU-MPI");
}
mdf_status mdf_transport_close(mdf_transport *t, double timeout_s, mdf_error *err)
{
    (void)t, (void)timeout_s, (void)err;
    return MDF_OK;
}
void mdf_transport_destroy(mdf_transport *t) { (void)t; }

#else

#include <starpu_mpi.h>

/* Tags: one for every header, one per payload (from its sequence number).
 * 'MDF' in the high bytes keeps them apart from any other user of the
 * communicator. */
#define TAG_HEADER ((starpu_mpi_tag_t)0x4d44460000000000LL)
#define TAG_PAYLOAD(seq) (TAG_HEADER + 1 + (starpu_mpi_tag_t)(seq))
#define KIND_BYE (-1)

typedef enum { DONE_HEADER, DONE_PAYLOAD, DONE_SENT } done_kind;

/* A completion StarPU-MPI's thread queues for ours (its callbacks do no more). */
typedef struct completion {
    done_kind kind;
    int peer;
    void *ptr;
    struct mdf_transport *t;
    struct completion *next;
} completion;

/* A message that arrived (header), maybe still waiting for its payload. */
typedef struct arrival {
    mdf_msg_hdr h;
    unsigned char *payload;
    starpu_data_handle_t handle;
    int ready;
    completion done;
    struct arrival *next;
} arrival;

typedef struct peer {
    mdf_msg_hdr hdr;               /* the posted header receive's buffer */
    starpu_data_handle_t hdr_handle;
    completion hdr_done;
    int hdr_posted;
    int bye;                       /* its BYE was delivered */
    int64_t send_seq;              /* next sequence number to it */
    int64_t next_seq;              /* next sequence number expected from it */
    arrival *arrivals;             /* not yet delivered, any order */
} peer;

typedef struct send_rec {
    mdf_msg_hdr h;
    unsigned char *payload;
    starpu_data_handle_t hh, ph;
    int left;                      /* sends not yet completed */
    completion done[2];
} send_rec;

struct mdf_transport {
    int rank, size;
    mdf_transport_recv_fn fn;
    void *user;
    pthread_t thread;
    int started;
    pthread_mutex_t lock;          /* the completion queue and the counters below */
    pthread_cond_t cond;
    completion *head, *tail;
    int stop;
    int64_t sends_pending;
    int byes;
    int failed;                    /* a receive could not be posted: close reports it */
    mdf_error fail;
    pthread_mutex_t send_lock;     /* sequence numbers and the order of sends to one peer */
    peer *peers;
};

int mdf_transport_available(void) { return 1; }

static void queue_completion(completion *c)
{
    mdf_transport *t = c->t;
    pthread_mutex_lock(&t->lock);
    c->next = NULL;
    if (t->tail) t->tail->next = c;
    else t->head = c;
    t->tail = c;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

/* StarPU-MPI's thread runs these: queue, nothing else. */
static void on_complete(void *arg) { queue_completion((completion *)arg); }

static void fail_locked(mdf_transport *t, const char *what, int peer_rank, int ret)
{
    if (!t->failed)
        mdf_error_set(&t->fail, MDF_ERR_IO, "rank %d: StarPU-MPI could not %s rank %d (error %d)", t->rank, what,
                      peer_rank, ret);
    t->failed = 1;
    pthread_cond_broadcast(&t->cond);
}

static void post_header(mdf_transport *t, int p)
{
    peer *pe = &t->peers[p];
    pe->hdr_done = (completion){.kind = DONE_HEADER, .peer = p, .t = t};
    int ret = starpu_mpi_irecv_detached(pe->hdr_handle, p, TAG_HEADER, MPI_COMM_WORLD, on_complete, &pe->hdr_done);
    pthread_mutex_lock(&t->lock);
    if (ret != 0) fail_locked(t, "receive from", p, ret);
    else pe->hdr_posted = 1;
    pthread_mutex_unlock(&t->lock);
}

/* Delivers peer p's messages in its order, as far as they are complete. */
static void deliver(mdf_transport *t, int p)
{
    peer *pe = &t->peers[p];
    for (;;) {
        arrival **link = &pe->arrivals, *a = NULL;
        while (*link && (*link)->h.seq != pe->next_seq) link = &(*link)->next;
        a = *link;
        if (!a || !a->ready) return;
        *link = a->next;
        pe->next_seq++;
        if (a->h.kind == KIND_BYE) {
            pthread_mutex_lock(&t->lock);
            pe->bye = 1;
            t->byes++;
            pthread_cond_broadcast(&t->cond);
            pthread_mutex_unlock(&t->lock);
        } else {
            t->fn(t->user, p, &a->h, a->payload);
        }
        free(a->payload);
        free(a);
    }
}

static void header_arrived(mdf_transport *t, int p)
{
    peer *pe = &t->peers[p];
    /* Acquire: the data is in our buffer, whatever path StarPU-MPI took. */
    mdf_data_acquire(pe->hdr_handle, STARPU_R);
    mdf_msg_hdr h = pe->hdr;
    starpu_data_release(pe->hdr_handle);
    pthread_mutex_lock(&t->lock);
    pe->hdr_posted = 0;
    pthread_mutex_unlock(&t->lock);
    arrival *a = calloc(1, sizeof *a);
    unsigned char *buf = h.len > 0 ? malloc((size_t)h.len) : NULL;
    if (!a || (h.len > 0 && !buf) || h.len < 0) {
        free(a);
        free(buf);
        pthread_mutex_lock(&t->lock);
        fail_locked(t, "take a message (no memory) from", p, (int)h.len);
        pthread_mutex_unlock(&t->lock);
        return;
    }
    a->h = h;
    a->payload = buf;
    a->next = pe->arrivals;
    pe->arrivals = a;
    if (h.len > 0) {
        starpu_vector_data_register(&a->handle, STARPU_MAIN_RAM, (uintptr_t)buf, (uint32_t)h.len, 1);
        a->done = (completion){.kind = DONE_PAYLOAD, .peer = p, .ptr = a, .t = t};
        int ret = starpu_mpi_irecv_detached(a->handle, p, TAG_PAYLOAD(h.seq), MPI_COMM_WORLD, on_complete, &a->done);
        if (ret != 0) {
            pthread_mutex_lock(&t->lock);
            fail_locked(t, "receive a payload from", p, ret);
            pthread_mutex_unlock(&t->lock);
        }
    } else {
        a->ready = 1;
    }
    /* Every peer's last header is its BYE: no receive is left posted after it. */
    if (h.kind != KIND_BYE) post_header(t, p);
    deliver(t, p);
}

static void payload_arrived(mdf_transport *t, arrival *a, int p)
{
    starpu_data_unregister(a->handle); /* the bytes are in a->payload */
    a->ready = 1;
    deliver(t, p);
}

static void send_completed(mdf_transport *t, send_rec *r)
{
    if (--r->left > 0) return;
    starpu_data_unregister(r->hh);
    if (r->payload) starpu_data_unregister(r->ph);
    free(r->payload);
    free(r);
    pthread_mutex_lock(&t->lock);
    t->sends_pending--;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void *transport_thread(void *arg)
{
    mdf_transport *t = arg;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->head && !t->stop) pthread_cond_wait(&t->cond, &t->lock);
        if (!t->head && t->stop) break;
        completion *c = t->head;
        t->head = c->next;
        if (!t->head) t->tail = NULL;
        pthread_mutex_unlock(&t->lock);
        switch (c->kind) {
        case DONE_HEADER: header_arrived(t, c->peer); break;
        case DONE_PAYLOAD: payload_arrived(t, (arrival *)c->ptr, c->peer); break;
        case DONE_SENT: send_completed(t, (send_rec *)c->ptr); break;
        }
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

mdf_status mdf_transport_create(mdf_transport_recv_fn fn, void *user, mdf_transport **out, mdf_error *err)
{
    *out = NULL;
    mdf_transport *t = calloc(1, sizeof *t);
    if (!t) return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the MPI transport");
    starpu_mpi_comm_rank(MPI_COMM_WORLD, &t->rank);
    starpu_mpi_comm_size(MPI_COMM_WORLD, &t->size);
    t->fn = fn;
    t->user = user;
    pthread_mutex_init(&t->lock, NULL);
    pthread_mutex_init(&t->send_lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    mdf_error_clear(&t->fail);
    t->peers = calloc((size_t)t->size, sizeof *t->peers);
    if (!t->peers) {
        mdf_transport_destroy(t);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for the MPI transport");
    }
    if (pthread_create(&t->thread, NULL, transport_thread, t) != 0) {
        mdf_transport_destroy(t);
        return mdf_error_set(err, MDF_ERR_IO, "could not start the MPI transport's thread");
    }
    t->started = 1;
    for (int p = 0; p < t->size; p++) {
        if (p == t->rank) continue;
        starpu_variable_data_register(&t->peers[p].hdr_handle, STARPU_MAIN_RAM, (uintptr_t)&t->peers[p].hdr,
                                      sizeof(mdf_msg_hdr));
        post_header(t, p);
    }
    *out = t;
    return MDF_OK;
}

int mdf_transport_rank(const mdf_transport *t) { return t->rank; }
int mdf_transport_size(const mdf_transport *t) { return t->size; }

mdf_status mdf_transport_send(mdf_transport *t, int to, const mdf_msg_hdr *h, const void *payload, size_t len,
                              mdf_error *err)
{
    if (to < 0 || to >= t->size || to == t->rank)
        return mdf_error_set(err, MDF_ERR_INVALID, "rank %d cannot send to rank %d", t->rank, to);
    if (len > UINT32_MAX)
        return mdf_error_set(err, MDF_ERR_INVALID, "a message of %zu bytes is too large for one send", len);
    send_rec *r = calloc(1, sizeof *r);
    unsigned char *copy = len ? malloc(len) : NULL;
    if (!r || (len && !copy)) {
        free(r);
        free(copy);
        return mdf_error_set(err, MDF_ERR_NOMEM, "no memory for a message to rank %d", to);
    }
    r->h = *h;
    r->h.len = (int64_t)len;
    if (len) memcpy(copy, payload, len);
    r->payload = copy;
    r->left = len ? 2 : 1;
    r->done[0] = (completion){.kind = DONE_SENT, .peer = to, .ptr = r, .t = t};
    r->done[1] = r->done[0];
    starpu_variable_data_register(&r->hh, STARPU_MAIN_RAM, (uintptr_t)&r->h, sizeof r->h);
    if (len) starpu_vector_data_register(&r->ph, STARPU_MAIN_RAM, (uintptr_t)copy, (uint32_t)len, 1);
    pthread_mutex_lock(&t->lock);
    t->sends_pending++;
    pthread_mutex_unlock(&t->lock);
    /* One sender at a time per transport: sequence numbers follow the order of the sends. */
    pthread_mutex_lock(&t->send_lock);
    r->h.seq = t->peers[to].send_seq++;
    int ret = starpu_mpi_isend_detached(r->hh, to, TAG_HEADER, MPI_COMM_WORLD, on_complete, &r->done[0]);
    if (ret == 0 && len)
        ret = starpu_mpi_isend_detached(r->ph, to, TAG_PAYLOAD(r->h.seq), MPI_COMM_WORLD, on_complete, &r->done[1]);
    pthread_mutex_unlock(&t->send_lock);
    if (ret != 0) return mdf_error_set(err, MDF_ERR_IO, "rank %d: StarPU-MPI could not send to rank %d (error %d)",
                                       t->rank, to, ret);
    return MDF_OK;
}

static void deadline_in(struct timespec *ts, double seconds)
{
    clock_gettime(CLOCK_REALTIME, ts);
    double s = (double)ts->tv_sec + 1e-9 * (double)ts->tv_nsec + seconds;
    ts->tv_sec = (time_t)s;
    ts->tv_nsec = (long)((s - (double)ts->tv_sec) * 1e9);
}

mdf_status mdf_transport_close(mdf_transport *t, double timeout_s, mdf_error *err)
{
    mdf_msg_hdr bye;
    memset(&bye, 0, sizeof bye);
    bye.kind = KIND_BYE;
    mdf_status st = MDF_OK;
    for (int p = 0; st == MDF_OK && p < t->size; p++)
        if (p != t->rank) st = mdf_transport_send(t, p, &bye, NULL, 0, err);
    if (st != MDF_OK) return st;
    struct timespec deadline;
    if (timeout_s >= 0) deadline_in(&deadline, timeout_s);
    pthread_mutex_lock(&t->lock);
    while (!t->failed && (t->byes < t->size - 1 || t->sends_pending > 0)) {
        if (timeout_s < 0) pthread_cond_wait(&t->cond, &t->lock);
        else if (pthread_cond_timedwait(&t->cond, &t->lock, &deadline) == ETIMEDOUT) break;
    }
    if (t->failed) st = mdf_error_set(err, t->fail.code, "%s", t->fail.message);
    else if (t->byes < t->size - 1 || t->sends_pending > 0) {
        char missing[512] = "";
        size_t used = 0;
        for (int p = 0; p < t->size && used + 16 < sizeof missing; p++)
            if (p != t->rank && !t->peers[p].bye)
                used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%d", used ? ", " : "", p);
        st = mdf_error_set(err, MDF_ERR_IO, "rank %d: ranks %s did not finish within %g s of this one (%lld "
                           "messages to them not delivered)", t->rank, *missing ? missing : "(none)", timeout_s,
                           (long long)t->sends_pending);
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

void mdf_transport_destroy(mdf_transport *t)
{
    if (!t) return;
    int clean = 0;
    if (t->started) {
        pthread_mutex_lock(&t->lock);
        clean = !t->failed && t->byes == t->size - 1 && t->sends_pending == 0;
        t->stop = 1;
        pthread_cond_broadcast(&t->cond);
        pthread_mutex_unlock(&t->lock);
        pthread_join(t->thread, NULL);
    }
    /* Handles a posted receive still uses are left alone (a failed close):
     * unregistering them would wait for ever. */
    for (int p = 0; t->peers && p < t->size; p++) {
        peer *pe = &t->peers[p];
        if (p != t->rank && pe->hdr_handle && (clean || !pe->hdr_posted)) starpu_data_unregister(pe->hdr_handle);
        while (pe->arrivals) {
            arrival *a = pe->arrivals;
            pe->arrivals = a->next;
            if (a->ready || clean) {
                free(a->payload);
                free(a);
            }
        }
    }
    free(t->peers);
    pthread_mutex_destroy(&t->lock);
    pthread_mutex_destroy(&t->send_lock);
    pthread_cond_destroy(&t->cond);
    free(t);
}

#endif
