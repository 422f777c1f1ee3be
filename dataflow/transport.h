/* mdflow — messages between MPI ranks over StarPU-MPI (internal; used by
 * the pipelines of stages/pipe.c).
 *
 * A message is a fixed header (mdf_msg_hdr) and an optional payload of any
 * size. Both travel through StarPU-MPI as registered data: the header as a
 * variable handle, the payload as a vector of bytes, each with
 * starpu_mpi_isend_detached / starpu_mpi_irecv_detached. Every rank keeps
 * one header receive posted per peer; a header announces its payload's
 * size and sequence number, and the receiver posts the payload's receive
 * under a tag made from that number. Messages from one peer are delivered
 * in the order they were sent, payload included.
 *
 * Why packed frames and not registered batch handles: a pipeline stage
 * hands over single systems of any size, as they finish, to whichever rank
 * of the next stage has room, and that rank places them in its own batch
 * (another shard, another slot); registering a handle per system on both
 * sides would cost more than the copy, and the receiver does not know the
 * sizes in advance.
 *
 * A thread of the transport (not StarPU's MPI thread, whose callbacks only
 * queue completions) unpacks what arrives and calls the receive function,
 * in order, one message at a time; it also unregisters and frees what was
 * sent once StarPU-MPI is done with it. Sends are non-blocking and may come
 * from any thread.
 *
 * Closing: each rank, once it will send nothing more, sends every peer a
 * last message (BYE) and keeps receiving until every peer's BYE has come and
 * every send has completed; every receive posted is then matched, and
 * StarPU-MPI can shut down cleanly. */
#ifndef MDF_TRANSPORT_H
#define MDF_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include "mdflow/error.h"

typedef struct mdf_msg_hdr {
    int32_t kind;        /* the user's (>= 0); negative kinds are the transport's */
    int32_t a, b, c;
    int64_t x, y, z;
    int64_t len;         /* payload bytes (set by mdf_transport_send) */
    int64_t seq;         /* per (sender, receiver), from 0 (set by mdf_transport_send) */
} mdf_msg_hdr;

typedef struct mdf_transport mdf_transport;

/* Called on the transport's thread for each message, in each sender's
 * order; payload is valid during the call (NULL when len is 0). */
typedef void (*mdf_transport_recv_fn)(void *user, int from, const mdf_msg_hdr *h, const unsigned char *payload);

/* 1 when mdflow was built with StarPU-MPI. */
int mdf_transport_available(void);
/* Over MPI_COMM_WORLD; StarPU-MPI must be started (mdf_runtime_config.mpi). */
mdf_status mdf_transport_create(mdf_transport_recv_fn fn, void *user, mdf_transport **out, mdf_error *err);
int mdf_transport_rank(const mdf_transport *t);
int mdf_transport_size(const mdf_transport *t);
/* Sends h (kind, a-c, x-z) and a copy of payload[0..len) to rank `to`. */
mdf_status mdf_transport_send(mdf_transport *t, int to, const mdf_msg_hdr *h, const void *payload, size_t len,
                              mdf_error *err);
/* Sends BYE to every peer, then receives until every peer's BYE has come
 * and every send completed (timeout_s < 0: no limit). An error names the
 * ranks still missing. */
mdf_status mdf_transport_close(mdf_transport *t, double timeout_s, mdf_error *err);
/* Stops the thread (after close, or after a failed close) and frees. */
void mdf_transport_destroy(mdf_transport *t);

#endif
