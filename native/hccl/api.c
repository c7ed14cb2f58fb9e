/* The HCCL operations (hccl.h, and HcclBarrier of hccl_comm.h): argument
 * checks in CANN's order (a count of 0 succeeds at once; then NULL stream,
 * communicator and buffers: HCCL_E_PTR; ranks, counts: HCCL_E_PARA; data
 * types and reduce ops: HCCL_E_NOT_SUPPORT), then the buffers against the
 * communicator's device memory (HCCL_E_PARA), then a task on the stream. */
#include <stdlib.h>
#include <string.h>

#include "hccl/pa_fold.h"
#include "hccl/pa_hccl.h"

#define MAX_COUNT 0x7FFFFFFFFull /* CANN's SYS_MAX_COUNT */

static const char *const REDUCE_TYPES = "int8, int16, int32, int64, float16, float32, bfloat16, uint64, float64";
static const char *const PROD_TYPES = "int8, int32, int64, uint64, float16, float32, float64";

static HcclResult check_dtype(const char *api, const char *param, HcclDataType dt, bool reduce) {
    const bool known = pa_hccl_dtype_size(dt) != 0;
    if (!known) {
        return pa_hccl_fail(HCCL_E_NOT_SUPPORT,
                            "%s: %s HcclDataType(%d) is not supported, expected int8, int16, int32, int64, float16, "
                            "float32, uint8, uint16, uint32, uint64, float64, hif8, fp8e4m3, fp8e5m2, fp8e8m0 or "
                            "bfloat16",
                            api, param, (int)dt);
    }
    if (reduce && !pa_hccl_dtype_reducible(dt)) {
        return pa_hccl_fail(HCCL_E_NOT_SUPPORT, "%s: %s %s is not supported by reductions, expected one of %s", api,
                            param, pa_hccl_dtype_name(dt), REDUCE_TYPES);
    }
    if (!known || dt == HCCL_DATA_TYPE_INT128) {
        return pa_hccl_fail(HCCL_E_NOT_SUPPORT,
                            "%s: %s %s is not supported, expected int8, int16, int32, int64, float16, float32, uint8, "
                            "uint16, uint32, uint64, float64, hif8, fp8e4m3, fp8e5m2, fp8e8m0 or bfloat16",
                            api, param, pa_hccl_dtype_name(dt));
    }
    return HCCL_SUCCESS;
}

static HcclResult check_op(const char *api, HcclDataType dt, HcclReduceOp op) {
    if ((int)op < HCCL_REDUCE_SUM || (int)op > HCCL_REDUCE_MIN) {
        return pa_hccl_fail(HCCL_E_PARA, "%s: op must be HCCL_REDUCE_SUM, PROD, MAX or MIN (0..3), got %d", api,
                            (int)op);
    }
    if (op == HCCL_REDUCE_PROD && !pa_hccl_prod_supported(dt)) {
        return pa_hccl_fail(HCCL_E_NOT_SUPPORT, "%s: op prod does not support %s, expected one of %s", api,
                            pa_hccl_dtype_name(dt), PROD_TYPES);
    }
    return HCCL_SUCCESS;
}

static HcclResult check_count(const char *api, const char *param, uint64_t count) {
    if (count > MAX_COUNT) {
        return pa_hccl_fail(HCCL_E_PARA, "%s: %s must be at most %llu, got %llu", api, param,
                            (unsigned long long)MAX_COUNT, (unsigned long long)count);
    }
    return HCCL_SUCCESS;
}

static HcclResult check_rank(const char *api, const char *param, uint32_t r, const pa_hcomm *c) {
    if (r >= c->size) {
        return pa_hccl_fail(HCCL_E_PARA, "%s: %s must be below the rank size %u, got %u", api, param, c->size, r);
    }
    return HCCL_SUCCESS;
}

/* A new operation holding a reference to comm (NULL with HCCL_E_MEMORY set). */
static pa_coll *new_op(pa_coll_kind kind, const char *api, pa_hcomm *c, HcclResult *rc) {
    pa_coll *op = calloc(1, sizeof *op);
    if (op == NULL) {
        pa_hcomm_release(c);
        *rc = pa_hccl_fail(HCCL_E_MEMORY, "%s: out of host memory", api);
        return NULL;
    }
    op->kind = kind;
    op->api = api;
    op->comm = c;
    return op;
}

/* Checks op's buffers, then defers it (in a group) or queues it. Consumes op. */
static HcclResult launch(pa_coll *op, aclrtStream stream) {
    HcclResult rc = pa_coll_check_at_call(op);
    if (rc != HCCL_SUCCESS) {
        pa_coll_free(op);
        return rc;
    }
    if (pa_group_defer(op, stream)) return HCCL_SUCCESS;
    return pa_coll_submit(op, stream);
}

/* The first checks of every call: stream and comm (acquired into *c). */
static HcclResult begin(const char *api, HcclComm comm, aclrtStream stream, pa_hcomm **c) {
    if (stream == NULL) return pa_hccl_fail(HCCL_E_PTR, "%s: stream must not be NULL", api);
    return pa_hcomm_acquire(comm, api, c);
}

#define NOT_NULL(p, name)                                                                   \
    do {                                                                                    \
        if ((p) == NULL) {                                                                  \
            pa_hcomm_release(c);                                                            \
            return pa_hccl_fail(HCCL_E_PTR, "%s: %s must not be NULL", api, name);          \
        }                                                                                   \
    } while (0)
#define TRY(expr)                                                                           \
    do {                                                                                    \
        HcclResult rc_ = (expr);                                                            \
        if (rc_ != HCCL_SUCCESS) {                                                          \
            pa_hcomm_release(c);                                                            \
            return rc_;                                                                     \
        }                                                                                   \
    } while (0)

static HcclResult reduction(pa_coll_kind kind, const char *api, void *sendBuf, void *recvBuf, uint64_t count,
                            HcclDataType dt, HcclReduceOp rop, uint32_t root, HcclComm comm, aclrtStream stream,
                            const char *count_name) {
    if (count == 0) return HCCL_SUCCESS;
    pa_hcomm *c = NULL;
    HcclResult rc = begin(api, comm, stream, &c);
    if (rc != HCCL_SUCCESS) return rc;
    NOT_NULL(sendBuf, "sendBuf");
    if (kind != PA_REDUCE || c->rank == root) NOT_NULL(recvBuf, "recvBuf");
    if (kind == PA_REDUCE) TRY(check_rank(api, "root", root, c));
    TRY(check_count(api, count_name, count));
    TRY(check_dtype(api, "dataType", dt, true));
    TRY(check_op(api, dt, rop));
    pa_coll *op = new_op(kind, api, c, &rc);
    if (op == NULL) return rc;
    op->send = sendBuf;
    op->recv = recvBuf;
    op->count = count;
    op->dt = dt;
    op->op = rop;
    op->root = root;
    return launch(op, stream);
}

PA_API HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType,
                                HcclReduceOp op, HcclComm comm, aclrtStream stream) {
    return reduction(PA_ALLREDUCE, "HcclAllReduce", sendBuf, recvBuf, count, dataType, op, 0, comm, stream, "count");
}

PA_API HcclResult HcclReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                             uint32_t root, HcclComm comm, aclrtStream stream) {
    return reduction(PA_REDUCE, "HcclReduce", sendBuf, recvBuf, count, dataType, op, root, comm, stream, "count");
}

PA_API HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType,
                                    HcclReduceOp op, HcclComm comm, aclrtStream stream) {
    return reduction(PA_REDUCE_SCATTER, "HcclReduceScatter", sendBuf, recvBuf, recvCount, dataType, op, 0, comm,
                     stream, "recvCount");
}

/* Copies n uint64_t counts from the caller (NULL is HCCL_E_PTR). */
static HcclResult copy_counts(const char *api, const char *name, const void *src, uint64_t *dst, uint32_t n) {
    if (src == NULL) return pa_hccl_fail(HCCL_E_PTR, "%s: %s must not be NULL", api, name);
    memcpy(dst, src, n * sizeof *dst);
    for (uint32_t i = 0; i < n; i++) {
        if (dst[i] > MAX_COUNT) {
            return pa_hccl_fail(HCCL_E_PARA, "%s: %s[%u] must be at most %llu, got %llu", api, name, i,
                                (unsigned long long)MAX_COUNT, (unsigned long long)dst[i]);
        }
    }
    return HCCL_SUCCESS;
}

static uint64_t sum(const uint64_t *v, uint32_t n) {
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; i++) s += v[i];
    return s;
}

PA_API HcclResult HcclReduceScatterV(void *sendBuf, const void *sendCounts, const void *sendDispls, void *recvBuf,
                                     uint64_t recvCount, HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                                     aclrtStream stream) {
    const char *api = "HcclReduceScatterV";
    pa_hcomm *c = NULL;
    HcclResult rc = begin(api, comm, stream, &c);
    if (rc != HCCL_SUCCESS) return rc;
    TRY(check_count(api, "recvCount", recvCount));
    TRY(check_dtype(api, "dataType", dataType, true));
    TRY(check_op(api, dataType, op));
    pa_coll *o = new_op(PA_REDUCE_SCATTER_V, api, c, &rc);
    if (o == NULL) return rc;
    const uint32_t n = c->size;
    o->counts = calloc(4 * (size_t)n, sizeof *o->counts);
    rc = o->counts == NULL ? pa_hccl_fail(HCCL_E_MEMORY, "%s: out of host memory", api) : HCCL_SUCCESS;
    if (rc == HCCL_SUCCESS) rc = copy_counts(api, "sendCounts", sendCounts, o->counts, n);
    if (rc == HCCL_SUCCESS) rc = copy_counts(api, "sendDispls", sendDispls, o->counts + n, n);
    if (rc == HCCL_SUCCESS && o->counts[c->rank] != recvCount) {
        rc = pa_hccl_fail(HCCL_E_PARA, "%s: sendCounts[%u] (this rank's block) must equal recvCount %llu, got %llu",
                          api, c->rank, (unsigned long long)recvCount, (unsigned long long)o->counts[c->rank]);
    }
    if (rc == HCCL_SUCCESS && sum(o->counts, n) == 0) { /* nothing to do */
        pa_coll_free(o);
        return HCCL_SUCCESS;
    }
    if (rc == HCCL_SUCCESS && sendBuf == NULL) rc = pa_hccl_fail(HCCL_E_PTR, "%s: sendBuf must not be NULL", api);
    if (rc == HCCL_SUCCESS && recvCount > 0 && recvBuf == NULL) {
        rc = pa_hccl_fail(HCCL_E_PTR, "%s: recvBuf must not be NULL", api);
    }
    if (rc != HCCL_SUCCESS) {
        pa_coll_free(o);
        return rc;
    }
    o->send = sendBuf;
    o->recv = recvBuf;
    o->count = recvCount;
    o->dt = dataType;
    o->op = op;
    return launch(o, stream);
}

PA_API HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                                aclrtStream stream) {
    const char *api = "HcclBroadcast";
    if (count == 0) return HCCL_SUCCESS;
    pa_hcomm *c = NULL;
    HcclResult rc = begin(api, comm, stream, &c);
    if (rc != HCCL_SUCCESS) return rc;
    NOT_NULL(buf, "buf");
    TRY(check_rank(api, "root", root, c));
    TRY(check_count(api, "count", count));
    TRY(check_dtype(api, "dataType", dataType, false));
    pa_coll *op = new_op(PA_BROADCAST, api, c, &rc);
    if (op == NULL) return rc;
    op->send = buf;
    op->count = count;
    op->dt = dataType;
    op->root = root;
    return launch(op, stream);
}

PA_API HcclResult HcclScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType,
                              uint32_t root, HcclComm comm, aclrtStream stream) {
    const char *api = "HcclScatter";
    if (recvCount == 0) return HCCL_SUCCESS;
    pa_hcomm *c = NULL;
    HcclResult rc = begin(api, comm, stream, &c);
    if (rc != HCCL_SUCCESS) return rc;
    TRY(check_rank(api, "root", root, c));
    if (c->rank == root) NOT_NULL(sendBuf, "sendBuf");
    NOT_NULL(recvBuf, "recvBuf");
    TRY(check_count(api, "recvCount", recvCount));
    TRY(check_dtype(api, "dataType", dataType, false));
    pa_coll *op = new_op(PA_SCATTER, api, c, &rc);
    if (op == NULL) return rc;
    op->send = sendBuf;
    op->recv = recvBuf;
    op->count = recvCount;
    op->dt = dataType;
    op->root = root;
    return launch(op, stream);
}

PA_API HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType,
                                HcclComm comm, aclrtStream stream) {
    const char *api = "HcclAllGather";
    if (sendCount == 0) return HCCL_SUCCESS;
    pa_hcomm *c = NULL;
    HcclResult rc = begin(api, comm, stream, &c);
    if (rc != HCCL_SUCCESS) return rc;
    NOT_NULL(sendBuf, "sendBuf");
    NOT_NULL(recvBuf, "recvBuf");
    TRY(check_count(api, "sendCount", sendCount));
    TRY(check_dtype(api, "dataType", dataType, false));
    pa_coll *op = new_op(PA_ALLGATHER, api, c, &rc);
    if (op == NULL) return rc;
    op->send = sendBuf;
    op->recv = recvBuf;
    op->count = sendCount;
    op->dt = dataType;
    return launch(op, stream);
}

PA_API HcclResult HcclAllGatherV(void *sendBuf, uint64_t sendCount, void *recvBuf, const void *recvCounts,
                                 const void *recvDispls, HcclDataType dataType, HcclComm comm, aclrtStream stream) {
    const char *api = "HcclAllGatherV";
    pa_hcomm *c = NULL;
    HcclResult rc = begin(api, comm, stream, &c);
    if (rc != HCCL_SUCCESS) return rc;
    TRY(check_count(api, "sendCount", sendCount));
    TRY(check_dtype(api, "dataType", dataType, false));
    pa_coll *o = new_op(PA_ALLGATHER_V, api, c, &rc);
    if (o == NULL) return rc;
    const uint32_t n = c->size;
    o->counts = calloc(4 * (size_t)n, sizeof *o->counts);
    rc = o->counts == NULL ? pa_hccl_fail(HCCL_E_MEMORY, "%s: out of host memory", api) : HCCL_SUCCESS;
    if (rc == HCCL_SUCCESS) rc = copy_counts(api, "recvCounts", recvCounts, o->counts + 2 * n, n);
    if (rc == HCCL_SUCCESS) rc = copy_counts(api, "recvDispls", recvDispls, o->counts + 3 * n, n);
    if (rc == HCCL_SUCCESS && o->counts[2 * n + c->rank] != sendCount) {
        rc = pa_hccl_fail(HCCL_E_PARA, "%s: recvCounts[%u] (this rank's block) must equal sendCount %llu, got %llu",
                          api, c->rank, (unsigned long long)sendCount, (unsigned long long)o->counts[2 * n + c->rank]);
    }
    if (rc == HCCL_SUCCESS && sum(o->counts + 2 * n, n) == 0) {
        pa_coll_free(o);
        return HCCL_SUCCESS;
    }
    if (rc == HCCL_SUCCESS && sendCount > 0 && sendBuf == NULL) {
        rc = pa_hccl_fail(HCCL_E_PTR, "%s: sendBuf must not be NULL", api);
    }
    if (rc == HCCL_SUCCESS && recvBuf == NULL) rc = pa_hccl_fail(HCCL_E_PTR, "%s: recvBuf must not be NULL", api);
    if (rc != HCCL_SUCCESS) {
        pa_coll_free(o);
        return rc;
    }
    o->send = sendBuf;
    o->recv = recvBuf;
    o->count = sendCount;
    o->dt = dataType;
    return launch(o, stream);
}

static HcclResult check_types_equal(const char *api, HcclDataType s, HcclDataType r) {
    if (s != r) {
        return pa_hccl_fail(HCCL_E_PARA, "%s: sendType %s and recvType %s must be the same", api,
                            pa_hccl_dtype_name(s), pa_hccl_dtype_name(r));
    }
    return HCCL_SUCCESS;
}

/* Send and receive buffers of an all-to-all may not overlap: every rank
 * writes blocks the others still read. */
static HcclResult check_disjoint(const char *api, const void *a, uint64_t alen, const void *b, uint64_t blen) {
    const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    if (alen && blen && x < y + blen && y < x + alen) {
        return pa_hccl_fail(HCCL_E_PARA, "%s: sendBuf [%p, +%llu) and recvBuf [%p, +%llu) overlap (in place is not "
                                         "supported)", api, a, (unsigned long long)alen, b, (unsigned long long)blen);
    }
    return HCCL_SUCCESS;
}

PA_API HcclResult HcclAlltoAll(const void *sendBuf, uint64_t sendCount, HcclDataType sendType, const void *recvBuf,
                               uint64_t recvCount, HcclDataType recvType, HcclComm comm, aclrtStream stream) {
    const char *api = "HcclAlltoAll";
    if (sendCount == 0 && recvCount == 0) return HCCL_SUCCESS;
    pa_hcomm *c = NULL;
    HcclResult rc = begin(api, comm, stream, &c);
    if (rc != HCCL_SUCCESS) return rc;
    NOT_NULL(sendBuf, "sendBuf");
    NOT_NULL(recvBuf, "recvBuf");
    TRY(check_count(api, "sendCount", sendCount));
    TRY(check_count(api, "recvCount", recvCount));
    TRY(check_dtype(api, "sendType", sendType, false));
    TRY(check_dtype(api, "recvType", recvType, false));
    TRY(check_types_equal(api, sendType, recvType));
    if (sendCount != recvCount) {
        pa_hcomm_release(c);
        return pa_hccl_fail(HCCL_E_PARA, "%s: sendCount %llu and recvCount %llu must be equal", api,
                            (unsigned long long)sendCount, (unsigned long long)recvCount);
    }
    const uint64_t bytes = sendCount * c->size * pa_hccl_dtype_size(sendType);
    TRY(check_disjoint(api, sendBuf, bytes, recvBuf, bytes));
    pa_coll *op = new_op(PA_ALLTOALL, api, c, &rc);
    if (op == NULL) return rc;
    op->send = (void *)(uintptr_t)sendBuf;
    op->recv = (void *)(uintptr_t)recvBuf;
    op->count = sendCount;
    op->count2 = recvCount;
    op->dt = sendType;
    return launch(op, stream);
}

PA_API HcclResult HcclAlltoAllV(const void *sendBuf, const void *sendCounts, const void *sdispls,
                                HcclDataType sendType, const void *recvBuf, const void *recvCounts,
                                const void *rdispls, HcclDataType recvType, HcclComm comm, aclrtStream stream) {
    const char *api = "HcclAlltoAllV";
    pa_hcomm *c = NULL;
    HcclResult rc = begin(api, comm, stream, &c);
    if (rc != HCCL_SUCCESS) return rc;
    TRY(check_dtype(api, "sendType", sendType, false));
    TRY(check_dtype(api, "recvType", recvType, false));
    TRY(check_types_equal(api, sendType, recvType));
    pa_coll *o = new_op(PA_ALLTOALL_V, api, c, &rc);
    if (o == NULL) return rc;
    const uint32_t n = c->size, me = c->rank;
    o->counts = calloc(4 * (size_t)n, sizeof *o->counts);
    rc = o->counts == NULL ? pa_hccl_fail(HCCL_E_MEMORY, "%s: out of host memory", api) : HCCL_SUCCESS;
    if (rc == HCCL_SUCCESS) rc = copy_counts(api, "sendCounts", sendCounts, o->counts, n);
    if (rc == HCCL_SUCCESS) rc = copy_counts(api, "sdispls", sdispls, o->counts + n, n);
    if (rc == HCCL_SUCCESS) rc = copy_counts(api, "recvCounts", recvCounts, o->counts + 2 * n, n);
    if (rc == HCCL_SUCCESS) rc = copy_counts(api, "rdispls", rdispls, o->counts + 3 * n, n);
    uint64_t *v = o->counts;
    if (rc == HCCL_SUCCESS && v[me] != v[2 * n + me]) {
        rc = pa_hccl_fail(HCCL_E_PARA, "%s: sendCounts[%u] (%llu) and recvCounts[%u] (%llu), this rank's block to "
                                       "itself, must be equal", api, me, (unsigned long long)v[me], me,
                          (unsigned long long)v[2 * n + me]);
    }
    const uint64_t es = pa_hccl_dtype_size(sendType);
    const uint64_t sbytes = rc == HCCL_SUCCESS ? sum(v, n) : 0, rbytes = rc == HCCL_SUCCESS ? sum(v + 2 * n, n) : 0;
    if (rc == HCCL_SUCCESS && sbytes == 0 && rbytes == 0) {
        pa_coll_free(o);
        return HCCL_SUCCESS;
    }
    if (rc == HCCL_SUCCESS && sbytes && sendBuf == NULL) rc = pa_hccl_fail(HCCL_E_PTR, "%s: sendBuf must not be NULL", api);
    if (rc == HCCL_SUCCESS && rbytes && recvBuf == NULL) rc = pa_hccl_fail(HCCL_E_PTR, "%s: recvBuf must not be NULL", api);
    if (rc == HCCL_SUCCESS) {
        /* the spans the displacements cover */
        uint64_t se = 0, re = 0;
        for (uint32_t q = 0; q < n; q++) {
            if (v[q] && v[n + q] + v[q] > se) se = v[n + q] + v[q];
            if (v[2 * n + q] && v[3 * n + q] + v[2 * n + q] > re) re = v[3 * n + q] + v[2 * n + q];
        }
        rc = check_disjoint(api, sendBuf, se * es, recvBuf, re * es);
    }
    if (rc != HCCL_SUCCESS) {
        pa_coll_free(o);
        return rc;
    }
    o->send = (void *)(uintptr_t)sendBuf;
    o->recv = (void *)(uintptr_t)recvBuf;
    o->dt = sendType;
    return launch(o, stream);
}

PA_API HcclResult HcclAlltoAllVC(const void *sendBuf, const void *sendCountMatrix, HcclDataType sendType,
                                 const void *recvBuf, HcclDataType recvType, HcclComm comm, aclrtStream stream) {
    const char *api = "HcclAlltoAllVC";
    pa_hcomm *c = NULL;
    HcclResult rc = begin(api, comm, stream, &c);
    if (rc != HCCL_SUCCESS) return rc;
    TRY(check_dtype(api, "sendType", sendType, false));
    TRY(check_dtype(api, "recvType", recvType, false));
    TRY(check_types_equal(api, sendType, recvType));
    pa_coll *o = new_op(PA_ALLTOALL_VC, api, c, &rc);
    if (o == NULL) return rc;
    const uint32_t n = c->size, me = c->rank;
    o->counts = calloc((size_t)n * n, sizeof *o->counts);
    rc = o->counts == NULL ? pa_hccl_fail(HCCL_E_MEMORY, "%s: out of host memory", api) : HCCL_SUCCESS;
    if (rc == HCCL_SUCCESS) rc = copy_counts(api, "sendCountMatrix", sendCountMatrix, o->counts, n * n);
    uint64_t s = 0, r = 0;
    for (uint32_t q = 0; rc == HCCL_SUCCESS && q < n; q++) {
        s += o->counts[(size_t)me * n + q];
        r += o->counts[(size_t)q * n + me];
    }
    if (rc == HCCL_SUCCESS && s == 0 && r == 0) {
        pa_coll_free(o);
        return HCCL_SUCCESS;
    }
    if (rc == HCCL_SUCCESS && s && sendBuf == NULL) rc = pa_hccl_fail(HCCL_E_PTR, "%s: sendBuf must not be NULL", api);
    if (rc == HCCL_SUCCESS && r && recvBuf == NULL) rc = pa_hccl_fail(HCCL_E_PTR, "%s: recvBuf must not be NULL", api);
    const uint64_t es = pa_hccl_dtype_size(sendType);
    if (rc == HCCL_SUCCESS) rc = check_disjoint(api, sendBuf, s * es, recvBuf, r * es);
    if (rc != HCCL_SUCCESS) {
        pa_coll_free(o);
        return rc;
    }
    o->send = (void *)(uintptr_t)sendBuf;
    o->recv = (void *)(uintptr_t)recvBuf;
    o->dt = sendType;
    return launch(o, stream);
}

static HcclResult point_to_point(pa_coll_kind kind, const char *api, void *buf, uint64_t count, HcclDataType dt,
                                 uint32_t peer, HcclComm comm, aclrtStream stream) {
    if (count == 0) return HCCL_SUCCESS;
    pa_hcomm *c = NULL;
    HcclResult rc = begin(api, comm, stream, &c);
    if (rc != HCCL_SUCCESS) return rc;
    NOT_NULL(buf, kind == PA_SEND ? "sendBuf" : "recvBuf");
    const char *pname = kind == PA_SEND ? "destRank" : "srcRank";
    TRY(check_rank(api, pname, peer, c));
    if (peer == c->rank) {
        pa_hcomm_release(c);
        return pa_hccl_fail(HCCL_E_PARA, "%s: %s must be another rank than this one (%u)", api, pname, peer);
    }
    TRY(check_count(api, "count", count));
    TRY(check_dtype(api, "dataType", dt, false));
    pa_coll *op = new_op(kind, api, c, &rc);
    if (op == NULL) return rc;
    if (kind == PA_SEND) op->send = buf;
    else op->recv = buf;
    op->count = count;
    op->dt = dt;
    op->root = peer;
    return launch(op, stream);
}

PA_API HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                           aclrtStream stream) {
    return point_to_point(PA_SEND, "HcclSend", sendBuf, count, dataType, destRank, comm, stream);
}

PA_API HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                           aclrtStream stream) {
    return point_to_point(PA_RECV, "HcclRecv", recvBuf, count, dataType, srcRank, comm, stream);
}

PA_API HcclResult HcclBatchSendRecv(HcclSendRecvItem *sendRecvInfo, uint32_t itemNum, HcclComm comm,
                                    aclrtStream stream) {
    const char *api = "HcclBatchSendRecv";
    pa_hcomm *c = NULL;
    HcclResult rc = begin(api, comm, stream, &c);
    if (rc != HCCL_SUCCESS) return rc;
    if (itemNum == 0) {
        pa_hcomm_release(c);
        return HCCL_SUCCESS;
    }
    NOT_NULL(sendRecvInfo, "sendRecvInfo");
    for (uint32_t i = 0; i < itemNum; i++) {
        const HcclSendRecvItem *it = &sendRecvInfo[i];
        if (it->sendRecvType != HCCL_SEND && it->sendRecvType != HCCL_RECV) {
            pa_hcomm_release(c);
            return pa_hccl_fail(HCCL_E_PARA, "%s: sendRecvInfo[%u].sendRecvType must be HCCL_SEND (0) or HCCL_RECV "
                                             "(1), got %d", api, i, (int)it->sendRecvType);
        }
        if (it->remoteRank >= c->size || it->remoteRank == c->rank) {
            const uint32_t size = c->size, me = c->rank;
            pa_hcomm_release(c);
            return pa_hccl_fail(HCCL_E_PARA, "%s: sendRecvInfo[%u].remoteRank must be another rank below %u than "
                                             "this one (%u), got %u", api, i, size, me, it->remoteRank);
        }
        if (it->count > 0 && it->buf == NULL) {
            pa_hcomm_release(c);
            return pa_hccl_fail(HCCL_E_PTR, "%s: sendRecvInfo[%u].buf must not be NULL", api, i);
        }
        TRY(check_count(api, "sendRecvInfo[i].count", it->count));
        TRY(check_dtype(api, "sendRecvInfo[i].dataType", it->dataType, false));
    }
    pa_coll *op = new_op(PA_BATCH, api, c, &rc);
    if (op == NULL) return rc;
    op->items = malloc(itemNum * sizeof *op->items);
    if (op->items == NULL) {
        pa_coll_free(op);
        return pa_hccl_fail(HCCL_E_MEMORY, "%s: out of host memory", api);
    }
    memcpy(op->items, sendRecvInfo, itemNum * sizeof *op->items);
    op->nitems = itemNum;
    return launch(op, stream);
}

PA_API HcclResult HcclBarrier(HcclComm comm, aclrtStream stream) {
    const char *api = "HcclBarrier";
    pa_hcomm *c = NULL;
    HcclResult rc = begin(api, comm, stream, &c);
    if (rc != HCCL_SUCCESS) return rc;
    pa_coll *op = new_op(PA_BARRIER, api, c, &rc);
    if (op == NULL) return rc;
    return launch(op, stream);
}
