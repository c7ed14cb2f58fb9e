/* HCCL on the emulated devices: the internals shared by native/hccl/.
 *
 *   api.c     the collective entry points: argument checks, then a stream task
 *   coll.c    the collectives, written once over two primitives of an engine
 *   comm.c    communicators: root info, rendezvous, creation, queries, groups
 *   fold.c    element-wise reductions (pa_fold.h)
 *   local.c   the in-process engine (threads as ranks, shared memory)
 *   gloo.c    the cross-process engine: loads the gloo bridge (gloo/)
 *   store.c   the TCP rendezvous store that root info points to
 *
 * An engine moves bytes only; every reduction is folded locally in rank
 * order by coll.c, so both engines give the same bits. */
#ifndef PA_HCCL_H
#define PA_HCCL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/pa_common.h"
#include "hccl/hccl.h"

#define PA_HCCL_MAX_RANKS 1024
#define PA_HCCL_MSG_CAP 512

/* ---- engines ---- */

/* One transfer to or from one peer (bytes 0: none). */
typedef struct pa_xfer {
    void *ptr;
    uint64_t bytes;
} pa_xfer;

/* One point-to-point transfer of a batch; seq numbers the transfers between
 * this rank and the peer in each direction (the same on both sides). */
typedef struct pa_p2p {
    bool send;
    uint32_t peer;
    void *ptr;
    uint64_t bytes;
    uint64_t seq;
} pa_p2p;

typedef struct pa_engine_ops {
    const char *name; /* "in-process" or "gloo" */
    /* Collective: every rank of the communicator calls it, in the same order
     * (`tag` numbers the exchange, the same on every rank). sends[q] goes to
     * rank q, recvs[q] comes from rank q (size entries each, the own entry
     * unused); returns once this rank's transfers are done and its send
     * buffers may be reused. HCCL_SUCCESS, or HCCL_E_TIMEOUT / HCCL_E_REMOTE /
     * HCCL_E_TCP_TRANSFER with `msg` set. */
    HcclResult (*exchange)(void *eng, uint32_t rank, uint64_t tag, const pa_xfer *sends, const pa_xfer *recvs,
                           int64_t timeout_ms, char *msg, size_t cap);
    /* Point to point: only the ranks named in `items` take part. */
    HcclResult (*p2p)(void *eng, uint32_t rank, const pa_p2p *items, uint32_t n, int64_t timeout_ms, char *msg,
                      size_t cap);
    /* The rank's communicator is gone (its last reference). */
    void (*leave)(void *eng, uint32_t rank);
} pa_engine_ops;

extern const pa_engine_ops pa_engine_local;
extern const pa_engine_ops pa_engine_gloo;

/* In-process engine: the group of a session (created by its first member). */
void *pa_local_join(const uint8_t session[16], uint32_t size, uint32_t rank);

/* Cross-process engine: connects `rank` of `size` through the store
 * connection `st` (store.c). NULL with msg set (HCCL_E_NOT_SUPPORT when this
 * build has no gloo) on failure. */
typedef struct pa_store_client pa_store_client;
void *pa_gloo_join(pa_store_client *st, uint32_t size, uint32_t rank, int64_t timeout_ms, HcclResult *rc, char *msg,
                   size_t cap);
/* True when the gloo bridge can be loaded. */
bool pa_gloo_available(char *why, size_t cap);

/* ---- communicators ---- */

typedef struct pa_hcomm {
    uint32_t magic;
    uint32_t rank, size;
    int device;
    char name[COMM_NAME_MAX_LENGTH];
    const pa_engine_ops *ops;
    void *eng;
    int64_t exec_timeout_ms; /* HCCL_EXEC_TIMEOUT or the config's; <= 0: none */

    pthread_mutex_t mu;     /* guards the fields below */
    uint64_t coll_seq;      /* collectives run so far */
    uint64_t *send_seq;     /* per peer: sends run so far */
    uint64_t *recv_seq;     /* per peer: receives run so far */
    HcclResult async_err;   /* first failure of queued work */
    char async_msg[PA_HCCL_MSG_CAP];
    int refs;               /* the handle + tasks in flight */
    struct pa_hcomm *next;  /* registry link */
} pa_hcomm;

/* Looks up a live communicator and takes a reference (HCCL_E_PTR for NULL,
 * HCCL_E_PARA for an unknown handle, with a message naming `api`). */
HcclResult pa_hcomm_acquire(HcclComm comm, const char *api, pa_hcomm **out);
void pa_hcomm_release(pa_hcomm *c);
/* Records the first asynchronous failure (HcclGetCommAsyncError). */
void pa_hcomm_note_async(pa_hcomm *c, HcclResult rc, const char *msg);

/* A failure with a message for aclGetRecentErrMsg. */
HcclResult pa_hccl_fail(HcclResult rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* HCCL_CONNECT_TIMEOUT / HCCL_EXEC_TIMEOUT in ms (CANN's defaults: 120 s and 1836 s). */
int64_t pa_hccl_connect_timeout_ms(void);
int64_t pa_hccl_exec_timeout_ms(void);

/* ---- the collectives (coll.c), run on the stream worker ---- */

typedef enum pa_coll_kind {
    PA_ALLREDUCE = 1,
    PA_BROADCAST,
    PA_REDUCE_SCATTER,
    PA_REDUCE_SCATTER_V,
    PA_SCATTER,
    PA_ALLGATHER,
    PA_ALLGATHER_V,
    PA_REDUCE,
    PA_ALLTOALL,
    PA_ALLTOALL_V,
    PA_ALLTOALL_VC,
    PA_BARRIER,
    PA_SEND,
    PA_RECV,
    PA_BATCH
} pa_coll_kind;

typedef struct pa_coll {
    pa_coll_kind kind;
    const char *api;
    pa_hcomm *comm; /* holds a reference */
    HcclDataType dt;
    HcclReduceOp op;
    uint32_t root; /* also the peer of a send / receive */
    void *send, *recv;
    uint64_t count;    /* elements: per rank or per block, as the API defines */
    uint64_t count2;   /* HcclAlltoAll: recvCount */
    uint64_t *counts;  /* V variants: 4 arrays of size entries (send counts, send displs, recv counts, recv
                          displs) or the size x size matrix (VC); owned */
    HcclSendRecvItem *items; /* batch (and grouped sends / receives); owned */
    uint32_t nitems;
} pa_coll;

/* The buffer checks at call time: HCCL_E_PARA with the access check's message. */
HcclResult pa_coll_check_at_call(const pa_coll *op);
/* Rank and stream checks shared by every entry point, then queues `op`
 * (which it owns from here on) on `stream`. */
HcclResult pa_coll_submit(pa_coll *op, aclrtStream stream);
void pa_coll_free(pa_coll *op);
/* The task body. */
int pa_coll_run(void *op);

/* ---- groups (comm.c): HcclGroupStart / End on this thread ---- */
/* True when the calling thread is inside a group: `op` is kept for HcclGroupEnd. */
bool pa_group_defer(pa_coll *op, aclrtStream stream);

#endif
