/* The collectives, written once over an engine's exchange / p2p primitives
 * (pa_hccl.h), run as stream tasks on the communicator's device.
 *
 * Every collective starts with a signature exchange: each rank sends every
 * other rank what it called (kind, type, op, root, count) and how many bytes
 * it sends to and expects from each peer, and whether its buffers passed the
 * address check. Every rank then judges the same signatures the same way, so
 * a mismatch (or one rank's bad buffer) fails the collective on all ranks
 * instead of hanging or mixing data.
 *
 * Reductions are chunked: rank q owns block q of the result; the blocks go to
 * their owners (one exchange), each owner folds the n contributions in rank
 * order (rank 0 first, pa_hccl_fold), and the reduced blocks go back (a second
 * exchange) for AllReduce, or to the root for Reduce. Each element is folded
 * by exactly one rank in a fixed order, so the bits do not depend on the
 * engine, the rank count's chunking, timing or thread count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hccl/pa_fold.h"
#include "hccl/pa_hccl.h"
#include "runtime/pa_memory.h"
#include "runtime/pa_stream.h"

/* ---------------------------------------------------------------------------
 * Buffers each operation touches
 * ------------------------------------------------------------------------- */

typedef struct span {
    const char *what;
    const void *ptr;
    uint64_t bytes;
} span;

static uint64_t max_end(const uint64_t *counts, const uint64_t *displs, uint32_t n) {
    uint64_t m = 0;
    for (uint32_t q = 0; q < n; q++) {
        if (counts[q] != 0 && displs[q] + counts[q] > m) m = displs[q] + counts[q];
    }
    return m;
}

/* The buffers `op` reads or writes on this rank (at most 2 + items). */
static uint32_t spans_of(const pa_coll *op, span *out) {
    const pa_hcomm *c = op->comm;
    const uint32_t n = c->size, me = c->rank;
    const uint64_t es = pa_hccl_dtype_size(op->dt);
    const uint64_t *v = op->counts;
    uint32_t k = 0;
#define SPAN(w, p, b) out[k++] = (span){(w), (p), (b)}
    switch (op->kind) {
    case PA_ALLREDUCE:
        SPAN("sendBuf", op->send, op->count * es);
        SPAN("recvBuf", op->recv, op->count * es);
        break;
    case PA_BROADCAST: SPAN("buf", op->send, op->count * es); break;
    case PA_REDUCE_SCATTER:
        SPAN("sendBuf", op->send, op->count * n * es);
        SPAN("recvBuf", op->recv, op->count * es);
        break;
    case PA_REDUCE_SCATTER_V:
        SPAN("sendBuf", op->send, max_end(v, v + n, n) * es);
        SPAN("recvBuf", op->recv, op->count * es);
        break;
    case PA_SCATTER:
        if (me == op->root) SPAN("sendBuf", op->send, op->count * n * es);
        SPAN("recvBuf", op->recv, op->count * es);
        break;
    case PA_ALLGATHER:
        SPAN("sendBuf", op->send, op->count * es);
        SPAN("recvBuf", op->recv, op->count * n * es);
        break;
    case PA_ALLGATHER_V:
        SPAN("sendBuf", op->send, op->count * es);
        SPAN("recvBuf", op->recv, max_end(v + 2 * n, v + 3 * n, n) * es);
        break;
    case PA_REDUCE:
        SPAN("sendBuf", op->send, op->count * es);
        if (me == op->root) SPAN("recvBuf", op->recv, op->count * es);
        break;
    case PA_ALLTOALL:
        SPAN("sendBuf", op->send, op->count * n * es);
        SPAN("recvBuf", op->recv, op->count2 * n * es);
        break;
    case PA_ALLTOALL_V:
        SPAN("sendBuf", op->send, max_end(v, v + n, n) * es);
        SPAN("recvBuf", op->recv, max_end(v + 2 * n, v + 3 * n, n) * es);
        break;
    case PA_ALLTOALL_VC: {
        uint64_t s = 0, r = 0;
        for (uint32_t q = 0; q < n; q++) {
            s += v[(size_t)me * n + q];
            r += v[(size_t)q * n + me];
        }
        SPAN("sendBuf", op->send, s * es);
        SPAN("recvBuf", op->recv, r * es);
        break;
    }
    case PA_SEND: SPAN("sendBuf", op->send, op->count * es); break;
    case PA_RECV: SPAN("recvBuf", op->recv, op->count * es); break;
    case PA_BATCH:
        for (uint32_t i = 0; i < op->nitems; i++) {
            const HcclSendRecvItem *it = &op->items[i];
            SPAN("sendRecvInfo[i].buf", it->buf, it->count * pa_hccl_dtype_size(it->dataType));
        }
        break;
    case PA_BARRIER: break;
    }
#undef SPAN
    return k;
}

/* 0, or 507015 with the message of the first buffer the device may not use. */
static int check_buffers(const pa_coll *op, const char *api) {
    span stack[2];
    span *sp = op->kind == PA_BATCH ? malloc((op->nitems ? op->nitems : 1) * sizeof *sp) : stack;
    if (sp == NULL) return pa_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: out of host memory", api);
    const uint32_t k = spans_of(op, sp);
    int rc = 0;
    for (uint32_t i = 0; i < k && rc == 0; i++) {
        if (sp[i].bytes == 0) continue;
        rc = pa_mem_check_access(api, sp[i].what, sp[i].ptr, sp[i].bytes, op->comm->device);
    }
    if (sp != stack) free(sp);
    return rc;
}

HcclResult pa_coll_check_at_call(const pa_coll *op) {
    if (check_buffers(op, op->api) == 0) return HCCL_SUCCESS;
    return pa_hccl_fail(HCCL_E_PARA, "%s", pa_get_errmsg());
}

/* ---------------------------------------------------------------------------
 * Signatures
 * ------------------------------------------------------------------------- */

enum { SIG_KIND, SIG_DT, SIG_OP, SIG_ROOT, SIG_COUNT, SIG_FLAGS, SIG_HEAD };
#define SIG_BAD_BUFFER 1u

/* Bytes this rank sends to q (to[q]) and receives from q (from[q]). */
static void plan_bytes(const pa_coll *op, uint64_t *to, uint64_t *from) {
    const pa_hcomm *c = op->comm;
    const uint32_t n = c->size, me = c->rank;
    const uint64_t es = pa_hccl_dtype_size(op->dt);
    const uint64_t *v = op->counts;
    const uint64_t m = op->count;
    for (uint32_t q = 0; q < n; q++) {
        uint64_t t = 0, f = 0;
        if (q != me) {
            switch (op->kind) {
            case PA_ALLREDUCE: case PA_REDUCE: {
                /* block q to its owner; the owners' blocks come back (AllReduce) */
                const uint64_t base = m / n, rem = m % n;
                const uint64_t lq = base + (q < rem), lm = base + (me < rem);
                t = lq * es;
                f = lm * es;
                break;
            }
            case PA_REDUCE_SCATTER: t = f = m * es; break;
            case PA_REDUCE_SCATTER_V: t = v[q] * es; f = m * es; break;
            case PA_BROADCAST:
                t = me == op->root ? m * es : 0;
                f = q == op->root ? m * es : 0;
                break;
            case PA_SCATTER:
                t = me == op->root ? m * es : 0;
                f = q == op->root ? m * es : 0;
                break;
            case PA_ALLGATHER: t = f = m * es; break;
            case PA_ALLGATHER_V: t = m * es; f = v[2 * n + q] * es; break;
            case PA_ALLTOALL: t = m * es; f = op->count2 * es; break;
            case PA_ALLTOALL_V: t = v[q] * es; f = v[2 * n + q] * es; break;
            case PA_ALLTOALL_VC: t = v[(size_t)me * n + q] * es; f = v[(size_t)q * n + me] * es; break;
            default: break;
            }
        }
        to[q] = t;
        from[q] = f;
    }
}

static const char *kind_api(uint64_t kind) {
    switch (kind) {
    case PA_ALLREDUCE: return "HcclAllReduce";
    case PA_BROADCAST: return "HcclBroadcast";
    case PA_REDUCE_SCATTER: return "HcclReduceScatter";
    case PA_REDUCE_SCATTER_V: return "HcclReduceScatterV";
    case PA_SCATTER: return "HcclScatter";
    case PA_ALLGATHER: return "HcclAllGather";
    case PA_ALLGATHER_V: return "HcclAllGatherV";
    case PA_REDUCE: return "HcclReduce";
    case PA_ALLTOALL: return "HcclAlltoAll";
    case PA_ALLTOALL_V: return "HcclAlltoAllV";
    case PA_ALLTOALL_VC: return "HcclAlltoAllVC";
    case PA_BARRIER: return "HcclBarrier";
    default: return "a collective";
    }
}

static int describe(char *buf, size_t cap, const uint64_t *s) {
    const char *dt = pa_hccl_dtype_name((HcclDataType)s[SIG_DT]);
    return snprintf(buf, cap, "%s(count %llu, %s, %s, root %llu)", kind_api(s[SIG_KIND]),
                    (unsigned long long)s[SIG_COUNT], dt != NULL ? dt : "?",
                    pa_hccl_op_name((HcclReduceOp)s[SIG_OP]), (unsigned long long)s[SIG_ROOT]);
}

/* Judges the n signatures (sigs[r * words]); every rank reaches the same verdict.
 * HCCL_SUCCESS, HCCL_E_PARA (mismatch) or HCCL_E_REMOTE (a rank's buffer failed). */
static HcclResult judge(const uint64_t *sigs, uint32_t n, size_t words, uint32_t me, char *msg, size_t cap) {
    const uint64_t *s0 = sigs;
    for (uint32_t r = 0; r < n; r++) {
        const uint64_t *s = sigs + r * words;
        if (s[SIG_FLAGS] & SIG_BAD_BUFFER) {
            if (r == me) return HCCL_E_PARA; /* the message is this rank's own */
            snprintf(msg, cap, "rank %u of this collective failed its buffer check (see that rank's error); no data moved",
                     r);
            return HCCL_E_REMOTE;
        }
    }
    for (uint32_t r = 1; r < n; r++) {
        const uint64_t *s = sigs + r * words;
        bool same = s[SIG_KIND] == s0[SIG_KIND];
        const uint64_t k = s0[SIG_KIND];
        if (same && k != PA_BARRIER) same = s[SIG_DT] == s0[SIG_DT];
        if (same && (k == PA_ALLREDUCE || k == PA_REDUCE || k == PA_REDUCE_SCATTER || k == PA_REDUCE_SCATTER_V)) {
            same = s[SIG_OP] == s0[SIG_OP];
        }
        if (same && (k == PA_BROADCAST || k == PA_SCATTER || k == PA_REDUCE)) same = s[SIG_ROOT] == s0[SIG_ROOT];
        if (same && (k == PA_ALLREDUCE || k == PA_REDUCE || k == PA_BROADCAST)) same = s[SIG_COUNT] == s0[SIG_COUNT];
        if (!same) {
            char a[160], b[160];
            describe(a, sizeof a, s0);
            describe(b, sizeof b, s);
            snprintf(msg, cap, "the ranks called mismatched collectives: rank 0 %s, rank %u %s; no data moved", a, r, b);
            return HCCL_E_PARA;
        }
    }
    for (uint32_t r = 0; r < n; r++) {
        for (uint32_t q = 0; q < n; q++) {
            if (q == r) continue;
            const uint64_t sent = sigs[r * words + SIG_HEAD + q];
            const uint64_t want = sigs[q * words + SIG_HEAD + n + r];
            if (sent != want) {
                snprintf(msg, cap,
                         "the ranks' counts do not match: rank %u sends %llu bytes to rank %u, which expects %llu; no "
                         "data moved",
                         r, (unsigned long long)sent, q, (unsigned long long)want);
                return HCCL_E_PARA;
            }
        }
    }
    return HCCL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Running
 * ------------------------------------------------------------------------- */

typedef struct run_ctx {
    pa_hcomm *c;
    uint64_t tag; /* this collective's base tag */
    pa_xfer *sends, *recvs;
    char msg[PA_HCCL_MSG_CAP];
} run_ctx;

static void clear(run_ctx *x) {
    memset(x->sends, 0, x->c->size * sizeof *x->sends);
    memset(x->recvs, 0, x->c->size * sizeof *x->recvs);
}

static HcclResult xchg(run_ctx *x, unsigned phase) {
    return x->c->ops->exchange(x->c->eng, x->c->rank, x->tag + phase, x->sends, x->recvs, x->c->exec_timeout_ms,
                               x->msg, sizeof x->msg);
}

static char *at(void *p, uint64_t elems, uint64_t es) { return (char *)p + elems * es; }

/* Phase 1 of a reduction: block q of `send` (offset off[q], len[q] elements)
 * goes to rank q; this rank folds its block, in rank order, into `acc`. */
static HcclResult reduce_blocks(run_ctx *x, const pa_coll *op, const uint64_t *off, const uint64_t *len,
                                void *acc) {
    pa_hcomm *c = x->c;
    const uint32_t n = c->size, me = c->rank;
    const uint64_t es = pa_hccl_dtype_size(op->dt), mine = len[me] * es;
    char *slots = mine ? pa_alloc_aligned(mine * n) : NULL;
    if (mine && slots == NULL) {
        snprintf(x->msg, sizeof x->msg, "out of host memory for %llu bytes of scratch", (unsigned long long)(mine * n));
        return HCCL_E_MEMORY;
    }
    clear(x);
    for (uint32_t q = 0; q < n; q++) {
        if (q == me) continue;
        x->sends[q] = (pa_xfer){at(op->send, off[q], es), len[q] * es};
        x->recvs[q] = (pa_xfer){slots + (size_t)q * mine, mine};
    }
    HcclResult rc = xchg(x, 1);
    if (rc == HCCL_SUCCESS && mine) {
        memcpy(slots + (size_t)me * mine, at(op->send, off[me], es), mine);
        memcpy(acc, slots, mine);
        for (uint32_t r = 1; r < n; r++) pa_hccl_fold(op->dt, op->op, acc, slots + (size_t)r * mine, len[me]);
    }
    pa_free_aligned(slots);
    return rc;
}

static HcclResult run_reduction(run_ctx *x, pa_coll *op) {
    pa_hcomm *c = x->c;
    const uint32_t n = c->size, me = c->rank;
    const uint64_t es = pa_hccl_dtype_size(op->dt);
    uint64_t *off = malloc(2 * n * sizeof *off);
    if (off == NULL) {
        snprintf(x->msg, sizeof x->msg, "out of host memory");
        return HCCL_E_MEMORY;
    }
    uint64_t *len = off + n;
    const uint64_t m = op->count;
    for (uint32_t q = 0; q < n; q++) {
        switch (op->kind) {
        case PA_REDUCE_SCATTER: off[q] = q * m; len[q] = m; break;
        case PA_REDUCE_SCATTER_V:
            off[q] = op->counts[n + q];
            len[q] = q == me ? m : op->counts[q];
            break;
        default: { /* AllReduce, Reduce: balanced blocks of count */
            const uint64_t base = m / n, rem = m % n;
            off[q] = q * base + (q < rem ? q : rem);
            len[q] = base + (q < rem);
        }
        }
    }
    HcclResult rc = HCCL_SUCCESS;
    if (op->kind == PA_REDUCE_SCATTER || op->kind == PA_REDUCE_SCATTER_V) {
        rc = reduce_blocks(x, op, off, len, op->recv);
    } else if (op->kind == PA_ALLREDUCE) {
        /* the owned block lands in place in recvBuf, then every block goes to every rank */
        char *acc = len[me] ? pa_alloc_aligned(len[me] * es) : NULL;
        if (len[me] && acc == NULL) {
            snprintf(x->msg, sizeof x->msg, "out of host memory");
            rc = HCCL_E_MEMORY;
        }
        if (rc == HCCL_SUCCESS) rc = reduce_blocks(x, op, off, len, acc);
        if (rc == HCCL_SUCCESS) {
            if (len[me]) memcpy(at(op->recv, off[me], es), acc, len[me] * es);
            clear(x);
            for (uint32_t q = 0; q < n; q++) {
                if (q == me) continue;
                x->sends[q] = (pa_xfer){at(op->recv, off[me], es), len[me] * es};
                x->recvs[q] = (pa_xfer){at(op->recv, off[q], es), len[q] * es};
            }
            rc = xchg(x, 2);
        }
        pa_free_aligned(acc);
    } else { /* PA_REDUCE: the blocks go to the root */
        char *acc = len[me] ? pa_alloc_aligned(len[me] * es) : NULL;
        if (len[me] && acc == NULL) {
            snprintf(x->msg, sizeof x->msg, "out of host memory");
            rc = HCCL_E_MEMORY;
        }
        if (rc == HCCL_SUCCESS) rc = reduce_blocks(x, op, off, len, acc);
        if (rc == HCCL_SUCCESS) {
            clear(x);
            if (me == op->root) {
                for (uint32_t q = 0; q < n; q++) {
                    if (q != me) x->recvs[q] = (pa_xfer){at(op->recv, off[q], es), len[q] * es};
                }
            } else {
                x->sends[op->root] = (pa_xfer){acc, len[me] * es};
            }
            rc = xchg(x, 2);
            if (rc == HCCL_SUCCESS && me == op->root && len[me]) memcpy(at(op->recv, off[me], es), acc, len[me] * es);
        }
        pa_free_aligned(acc);
    }
    free(off);
    return rc;
}

/* Data movement: one exchange, plus this rank's own block copied locally. */
static HcclResult run_movement(run_ctx *x, pa_coll *op) {
    pa_hcomm *c = x->c;
    const uint32_t n = c->size, me = c->rank;
    const uint64_t es = pa_hccl_dtype_size(op->dt), m = op->count;
    const uint64_t *v = op->counts;
    void *own_dst = NULL;
    const void *own_src = NULL;
    uint64_t own = 0;
    clear(x);
    for (uint32_t q = 0; q < n; q++) {
        if (q == me) continue;
        switch (op->kind) {
        case PA_BROADCAST:
            if (me == op->root) x->sends[q] = (pa_xfer){op->send, m * es};
            else if (q == op->root) x->recvs[q] = (pa_xfer){op->send, m * es};
            break;
        case PA_SCATTER:
            if (me == op->root) x->sends[q] = (pa_xfer){at(op->send, q * m, es), m * es};
            else if (q == op->root) x->recvs[q] = (pa_xfer){op->recv, m * es};
            break;
        case PA_ALLGATHER:
            x->sends[q] = (pa_xfer){op->send, m * es};
            x->recvs[q] = (pa_xfer){at(op->recv, q * m, es), m * es};
            break;
        case PA_ALLGATHER_V:
            x->sends[q] = (pa_xfer){op->send, m * es};
            x->recvs[q] = (pa_xfer){at(op->recv, v[3 * n + q], es), v[2 * n + q] * es};
            break;
        case PA_ALLTOALL:
            x->sends[q] = (pa_xfer){at(op->send, q * m, es), m * es};
            x->recvs[q] = (pa_xfer){at(op->recv, q * op->count2, es), op->count2 * es};
            break;
        case PA_ALLTOALL_V:
            x->sends[q] = (pa_xfer){at(op->send, v[n + q], es), v[q] * es};
            x->recvs[q] = (pa_xfer){at(op->recv, v[3 * n + q], es), v[2 * n + q] * es};
            break;
        case PA_ALLTOALL_VC: {
            uint64_t so = 0, ro = 0;
            for (uint32_t j = 0; j < q; j++) {
                so += v[(size_t)me * n + j];
                ro += v[(size_t)j * n + me];
            }
            x->sends[q] = (pa_xfer){at(op->send, so, es), v[(size_t)me * n + q] * es};
            x->recvs[q] = (pa_xfer){at(op->recv, ro, es), v[(size_t)q * n + me] * es};
            break;
        }
        default: break;
        }
    }
    switch (op->kind) {
    case PA_SCATTER:
        if (me == op->root) own_dst = op->recv, own_src = at(op->send, me * m, es), own = m * es;
        break;
    case PA_ALLGATHER: own_dst = at(op->recv, me * m, es), own_src = op->send, own = m * es; break;
    case PA_ALLGATHER_V: own_dst = at(op->recv, v[3 * n + me], es), own_src = op->send, own = m * es; break;
    case PA_ALLTOALL: own_dst = at(op->recv, me * op->count2, es), own_src = at(op->send, me * m, es), own = m * es; break;
    case PA_ALLTOALL_V: own_dst = at(op->recv, v[3 * n + me], es), own_src = at(op->send, v[n + me], es), own = v[me] * es; break;
    case PA_ALLTOALL_VC: {
        uint64_t so = 0, ro = 0;
        for (uint32_t j = 0; j < me; j++) {
            so += v[(size_t)me * n + j];
            ro += v[(size_t)j * n + me];
        }
        own_dst = at(op->recv, ro, es), own_src = at(op->send, so, es), own = v[(size_t)me * n + me] * es;
        break;
    }
    default: break;
    }
    HcclResult rc = xchg(x, 1);
    if (rc == HCCL_SUCCESS && own) memmove(own_dst, own_src, own);
    return rc;
}

/* The aclError a failed task reports at aclrtSynchronizeStream. */
static int acl_code_of(HcclResult rc) {
    switch (rc) {
    case HCCL_E_TIMEOUT: return ACL_ERROR_RT_FFTS_PLUS_TIMEOUT; /* the NPU's HCCL task timeout */
    case HCCL_E_REMOTE: return ACL_ERROR_RT_SUSPECT_REMOTE_ERROR;
    case HCCL_E_TCP_TRANSFER: return ACL_ERROR_RT_SOCKET_CLOSE;
    case HCCL_E_PARA: return ACL_ERROR_RT_PARAM_INVALID;
    case HCCL_E_MEMORY: return ACL_ERROR_RT_MEMORY_ALLOCATION;
    default: return ACL_ERROR_RT_INTERNAL_ERROR;
    }
}

static int fail_task(pa_coll *op, HcclResult rc, int code, const char *why) {
    pa_hcomm *c = op->comm;
    char m[1024];
    snprintf(m, sizeof m, "%s (rank %u of %u, device %d, %s engine): %s", op->api, c->rank, c->size, c->device,
             c->ops->name, why);
    pa_hcomm_note_async(c, rc, m);
    return pa_fail(code, "%s", m);
}

static int run_p2p(pa_coll *op) {
    pa_hcomm *c = op->comm;
    pa_p2p one;
    pa_p2p *items = &one;
    uint32_t n = 1;
    if (op->kind == PA_BATCH) {
        n = op->nitems;
        items = malloc((n ? n : 1) * sizeof *items);
        if (items == NULL) return fail_task(op, HCCL_E_MEMORY, ACL_ERROR_RT_MEMORY_ALLOCATION, "out of host memory");
    }
    pthread_mutex_lock(&c->mu);
    if (op->kind == PA_BATCH) {
        for (uint32_t i = 0; i < n; i++) {
            const HcclSendRecvItem *it = &op->items[i];
            const bool send = it->sendRecvType == HCCL_SEND;
            items[i] = (pa_p2p){send, it->remoteRank, it->buf, it->count * pa_hccl_dtype_size(it->dataType),
                                send ? c->send_seq[it->remoteRank]++ : c->recv_seq[it->remoteRank]++};
        }
    } else {
        const bool send = op->kind == PA_SEND;
        one = (pa_p2p){send, op->root, send ? op->send : op->recv, op->count * pa_hccl_dtype_size(op->dt),
                       send ? c->send_seq[op->root]++ : c->recv_seq[op->root]++};
    }
    pthread_mutex_unlock(&c->mu);
    char msg[PA_HCCL_MSG_CAP] = "";
    HcclResult rc = c->ops->p2p(c->eng, c->rank, items, n, c->exec_timeout_ms, msg, sizeof msg);
    if (items != &one) free(items);
    if (rc != HCCL_SUCCESS) return fail_task(op, rc, acl_code_of(rc), msg);
    return 0;
}

int pa_coll_run(void *arg) {
    pa_coll *op = arg;
    pa_hcomm *c = op->comm;
    const int bad = check_buffers(op, op->api);
    char own[1024] = "";
    if (bad != 0) snprintf(own, sizeof own, "%s", pa_get_errmsg());
    if (op->kind == PA_SEND || op->kind == PA_RECV || op->kind == PA_BATCH) {
        if (bad != 0) {
            pa_hcomm_note_async(c, HCCL_E_PARA, own);
            return pa_fail(bad, "%s", own);
        }
        return run_p2p(op);
    }
    const uint32_t n = c->size, me = c->rank;
    const size_t words = SIG_HEAD + 2 * (size_t)n;
    run_ctx x;
    memset(&x, 0, sizeof x);
    x.c = c;
    uint64_t *sigs = calloc(words * (n + 1), sizeof *sigs);
    x.sends = calloc(n, sizeof *x.sends);
    x.recvs = calloc(n, sizeof *x.recvs);
    if (sigs == NULL || x.sends == NULL || x.recvs == NULL) {
        free(sigs), free(x.sends), free(x.recvs);
        return fail_task(op, HCCL_E_MEMORY, ACL_ERROR_RT_MEMORY_ALLOCATION, "out of host memory");
    }
    pthread_mutex_lock(&c->mu);
    x.tag = (c->coll_seq++) << 3;
    pthread_mutex_unlock(&c->mu);
    /* signatures: mine at sigs[me * words], received into the others' rows */
    uint64_t *mine = sigs + (size_t)me * words;
    mine[SIG_KIND] = op->kind;
    mine[SIG_DT] = op->kind == PA_BARRIER ? 0 : (uint64_t)op->dt;
    mine[SIG_OP] = op->op;
    mine[SIG_ROOT] = op->root;
    mine[SIG_COUNT] = op->count;
    mine[SIG_FLAGS] = bad != 0 ? SIG_BAD_BUFFER : 0;
    plan_bytes(op, mine + SIG_HEAD, mine + SIG_HEAD + n);
    for (uint32_t q = 0; q < n; q++) {
        if (q == me) continue;
        x.sends[q] = (pa_xfer){mine, words * sizeof *mine};
        x.recvs[q] = (pa_xfer){sigs + (size_t)q * words, words * sizeof *mine};
    }
    HcclResult rc = xchg(&x, 0);
    if (rc == HCCL_SUCCESS) rc = judge(sigs, n, words, me, x.msg, sizeof x.msg);
    if (rc == HCCL_SUCCESS && op->kind != PA_BARRIER) {
        switch (op->kind) {
        case PA_ALLREDUCE: case PA_REDUCE: case PA_REDUCE_SCATTER: case PA_REDUCE_SCATTER_V:
            rc = run_reduction(&x, op);
            break;
        default: rc = run_movement(&x, op); break;
        }
    }
    free(sigs);
    free(x.sends);
    free(x.recvs);
    if (rc == HCCL_SUCCESS) return 0;
    if (bad != 0 && rc == HCCL_E_PARA && x.msg[0] == '\0') {
        pa_hcomm_note_async(c, HCCL_E_PARA, own);
        return pa_fail(bad, "%s", own);
    }
    return fail_task(op, rc, acl_code_of(rc), x.msg);
}

void pa_coll_free(pa_coll *op) {
    if (op == NULL) return;
    if (op->comm != NULL) pa_hcomm_release(op->comm);
    free(op->counts);
    free(op->items);
    free(op);
}

static void coll_free_task(void *arg) { pa_coll_free(arg); }

HcclResult pa_coll_submit(pa_coll *op, aclrtStream stream) {
    pa_stream *s = NULL;
    aclError arc = pa_stream_acquire(stream, op->api, &s);
    if (arc != ACL_SUCCESS) {
        HcclResult rc = pa_hccl_fail(HCCL_E_PARA, "%s", pa_get_errmsg());
        pa_coll_free(op);
        return rc;
    }
    if (pa_stream_device(s) != op->comm->device) {
        HcclResult rc = pa_hccl_fail(HCCL_E_PARA,
                                     "%s: stream %p belongs to device %d, but the communicator's rank %u runs on device "
                                     "%d",
                                     op->api, stream, pa_stream_device(s), op->comm->rank, op->comm->device);
        pa_stream_release(s);
        pa_coll_free(op);
        return rc;
    }
    arc = pa_stream_enqueue(s, pa_coll_run, coll_free_task, op, op->api);
    pa_stream_release(s);
    if (arc != ACL_SUCCESS) return pa_hccl_fail(HCCL_E_RUNTIME, "%s", pa_get_errmsg());
    return HCCL_SUCCESS;
}
