/* Multi-thread, multi-stream stress test (run under ThreadSanitizer by
 * tests/sanitize/run.sh).
 *
 *   stress_streams [ITERATIONS]
 *
 * 4 threads, each with its own compute stream S_i and copy stream C_i, launch
 * aclnnScaledMaskedSoftmax and aclnnScaledMaskedSoftmaxBackward (a new executor
 * each time), aclnnNsaSelectedAttention and aclnnNsaSelectedAttentionGrad (one
 * repeatable executor each per thread) on S_i,
 * record event E_i on S_i, make C_i wait for E_i and copy the outputs there
 * (aclrtMemcpyAsync), and make S_i also wait for the neighbour's event
 * E_{i+1} (recorded concurrently by another thread). Thread i runs the NSA ops
 * with sparse mode (i % 2 ? 2 : 0) on fp32 inputs (i < 2) or bf16 ones (the bf16
 * dot GEMM's path, i >= 2). Every copied result must be bitwise equal to a
 * single-thread run. Exit status 0 iff all are. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/opdev/op_errno.h"
#include "aclnnop/aclnn_nsa_selected_attention.h"
#include "aclnnop/aclnn_nsa_selected_attention_grad.h"
#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"

#define THREADS 4
/* softmax: [B, N, S1, S2] fp32 */
#define SB 2
#define SN 2
#define SS1 4
#define SS2 32
/* NSA (relaxed mode, fp32 or bf16): T1 queries, T2 keys, N1 = G * N2 heads */
#define T1 8
#define T2 16
#define N1 2
#define N2 1
#define HD 8
#define BLK 4
#define CNT 2

#define CHECK(x)                                                                                                \
    do {                                                                                                        \
        long long rc_ = (long long)(x);                                                                         \
        if (rc_ != 0) {                                                                                         \
            fprintf(stderr, "%s:%d: %s failed with %lld: %s\n", __FILE__, __LINE__, #x, rc_, aclGetRecentErrMsg()); \
            exit(1);                                                                                            \
        }                                                                                                       \
    } while (0)

typedef struct {
    void *dev;
    size_t bytes;
    aclTensor *t;
} dtensor;

static uint64_t g_rng = 12345;
static float rnd_float(void) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((g_rng >> 40) % 2001) / 1000.0f - 1.0f;
}

static void make(dtensor *d, const int64_t *dims, int ndim, aclDataType dt, size_t esize, const void *host) {
    int64_t strides[8], numel = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = numel;
        numel *= dims[i];
    }
    d->bytes = (size_t)numel * esize;
    CHECK(aclrtMalloc(&d->dev, d->bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    if (host != NULL) CHECK(aclrtMemcpy(d->dev, d->bytes, host, d->bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    else CHECK(aclrtMemset(d->dev, d->bytes, 0, d->bytes));
    d->t = aclCreateTensor(dims, (uint64_t)ndim, dt, strides, 0, ACL_FORMAT_ND, &numel, 1, d->dev);
    if (d->t == NULL) CHECK(1);
}

static void drop(dtensor *d) {
    CHECK(aclDestroyTensor(d->t));
    CHECK(aclrtFree(d->dev));
}

/* shared, read-only inputs; [1]: the NSA inputs as bf16 */
static dtensor g_grad, g_y, g_mask, g_q[2], g_k[2], g_v[2], g_o[2], g_do[2], g_max, g_sum, g_topk;

/* bf16 of x, to nearest even (finite inputs) */
static uint16_t to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* the fp32 array and its bf16 copy as g[0], g[1] */
static void make_pair(dtensor g[2], const int64_t *dims, const float *host, int n) {
    uint16_t *h16 = malloc((size_t)n * 2);
    if (h16 == NULL) CHECK(1);
    for (int i = 0; i < n; i++) h16[i] = to_bf16(host[i]);
    make(&g[0], dims, 3, ACL_FLOAT, 4, host);
    make(&g[1], dims, 3, ACL_BF16, 2, h16);
    free(h16);
}

enum { OUT_SMSB, OUT_DQ, OUT_DK, OUT_DV, OUT_SMSF, OUT_AO, OUT_SMAX, OUT_SSUM, NOUT };

typedef struct {
    int id, iters;
    dtensor out[NOUT];
    void *copy[NOUT];
    void *workspace;
    uint64_t workspace_size;
    aclrtStream s, c;
    unsigned char *host[NOUT];
    unsigned char **ref; /* the single-thread results to match, or NULL */
    int mismatches;
} worker;

static aclrtEvent g_events[THREADS];
static aclIntArray *g_seq_q, *g_seq_kv; /* one batch: [T1], [T2] */
static int g_nthreads = THREADS;

static void *run(void *arg) {
    worker *w = arg;
    CHECK(aclrtSetDevice(0));
    aclOpExecutor *nsa = NULL;
    uint64_t ws = 0;
    const int bf = w->id / 2 % 2; /* NSA inputs: fp32 or bf16 */
    CHECK(aclnnNsaSelectedAttentionGradGetWorkspaceSize(
        g_q[bf].t, g_k[bf].t, g_v[bf].t, g_o[bf].t, g_do[bf].t, g_max.t, g_sum.t, g_topk.t, NULL, NULL, NULL, 0.35,
        BLK, CNT, N1, (char *)"TND", w->id % 2 ? 2 : 0, w->out[OUT_DQ].t, w->out[OUT_DK].t, w->out[OUT_DV].t, &ws,
        &nsa));
    CHECK(aclSetAclOpExecutorRepeatable(nsa));
    aclOpExecutor *fwd = NULL;
    uint64_t wsf = 0;
    CHECK(aclnnNsaSelectedAttentionGetWorkspaceSize(g_q[bf].t, g_k[bf].t, g_v[bf].t, g_topk.t, NULL, g_seq_q, g_seq_kv, 0.35, N1,
                                                    (char *)"TND", w->id % 2 ? 2 : 0, BLK, CNT, w->out[OUT_SMAX].t,
                                                    w->out[OUT_SSUM].t, w->out[OUT_AO].t, &wsf, &fwd));
    CHECK(aclSetAclOpExecutorRepeatable(fwd));
    if (wsf > ws) ws = wsf; /* one workspace: the stream runs the two in order */
    if (ws > w->workspace_size) {
        fprintf(stderr, "workspace %llu > %llu\n", (unsigned long long)ws, (unsigned long long)w->workspace_size);
        exit(1);
    }
    for (int it = 0; it < w->iters; it++) {
        uint64_t ws0 = 0;
        aclOpExecutor *ex = NULL;
        CHECK(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g_grad.t, g_y.t, g_mask.t, 0.5, false,
                                                               w->out[OUT_SMSB].t, &ws0, &ex));
        CHECK(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, w->s));
        CHECK(aclnnScaledMaskedSoftmaxGetWorkspaceSize(g_grad.t, g_mask.t, 0.75, false, w->out[OUT_SMSF].t, &ws0, &ex));
        CHECK(aclnnScaledMaskedSoftmax(NULL, 0, ex, w->s));
        CHECK(aclnnNsaSelectedAttention(w->workspace, ws, fwd, w->s));
        CHECK(aclnnNsaSelectedAttentionGrad(w->workspace, ws, nsa, w->s));
        CHECK(aclrtRecordEvent(g_events[w->id], w->s));
        CHECK(aclrtStreamWaitEvent(w->c, g_events[w->id]));
        for (int k = 0; k < NOUT; k++) {
            CHECK(aclrtMemcpyAsync(w->copy[k], w->out[k].bytes, w->out[k].dev, w->out[k].bytes,
                                   ACL_MEMCPY_DEVICE_TO_DEVICE, w->c));
        }
        /* order against a neighbour's stream too (its event is re-recorded concurrently) */
        if (g_nthreads > 1) CHECK(aclrtStreamWaitEvent(w->s, g_events[(w->id + 1) % g_nthreads]));
        CHECK(aclrtSynchronizeStream(w->c));
        for (int k = 0; k < NOUT; k++) {
            CHECK(aclrtMemcpy(w->host[k], w->out[k].bytes, w->copy[k], w->out[k].bytes, ACL_MEMCPY_DEVICE_TO_HOST));
            if (w->ref != NULL && memcmp(w->host[k], w->ref[k], w->out[k].bytes) != 0) {
                if (w->mismatches++ < 5) fprintf(stderr, "thread %d iteration %d: output %d differs\n", w->id, it, k);
            }
        }
        /* the next iteration overwrites the outputs: the copies above were synchronised */
    }
    CHECK(aclrtSynchronizeStream(w->s));
    CHECK(aclDestroyAclOpExecutor(nsa));
    CHECK(aclDestroyAclOpExecutor(fwd));
    return NULL;
}

static void worker_init(worker *w, int id, int iters) {
    memset(w, 0, sizeof *w);
    w->id = id;
    w->iters = iters;
    const int64_t sdims[4] = {SB, SN, SS1, SS2}, q[3] = {T1, N1, HD}, k[3] = {T2, N2, HD}, st[3] = {T1, N1, 8};
    make(&w->out[OUT_SMSB], sdims, 4, ACL_FLOAT, 4, NULL);
    make(&w->out[OUT_SMSF], sdims, 4, ACL_FLOAT, 4, NULL);
    if (id / 2 % 2) make(&w->out[OUT_AO], q, 3, ACL_BF16, 2, NULL); /* the bf16 inputs' output */
    else make(&w->out[OUT_AO], q, 3, ACL_FLOAT, 4, NULL);
    make(&w->out[OUT_SMAX], st, 3, ACL_FLOAT, 4, NULL);
    make(&w->out[OUT_SSUM], st, 3, ACL_FLOAT, 4, NULL);
    make(&w->out[OUT_DQ], q, 3, ACL_FLOAT, 4, NULL);
    make(&w->out[OUT_DK], k, 3, ACL_FLOAT, 4, NULL);
    make(&w->out[OUT_DV], k, 3, ACL_FLOAT, 4, NULL);
    for (int i = 0; i < NOUT; i++) {
        CHECK(aclrtMalloc(&w->copy[i], w->out[i].bytes, ACL_MEM_MALLOC_HUGE_FIRST));
        w->host[i] = malloc(w->out[i].bytes);
        if (w->host[i] == NULL) CHECK(1);
    }
    w->workspace_size = 4u << 20;
    CHECK(aclrtMalloc(&w->workspace, w->workspace_size, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtCreateStream(&w->s));
    CHECK(aclrtCreateStream(&w->c));
}

static void worker_free(worker *w) {
    CHECK(aclrtDestroyStream(w->s));
    CHECK(aclrtDestroyStream(w->c));
    for (int i = 0; i < NOUT; i++) {
        drop(&w->out[i]);
        CHECK(aclrtFree(w->copy[i]));
        free(w->host[i]);
    }
    CHECK(aclrtFree(w->workspace));
}

int main(int argc, char **argv) {
    const int iters = argc > 1 ? atoi(argv[1]) : 20;
    setenv("PYACLNN_NSA_RELAXED", "1", 1); /* fp32, small head dim: before any thread starts */
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));

    /* inputs */
    static float grad[SB * SN * SS1 * SS2], y[SB * SN * SS1 * SS2];
    static unsigned char mask[SN * SS1 * SS2];
    for (size_t i = 0; i < sizeof grad / sizeof grad[0]; i++) {
        grad[i] = rnd_float();
        y[i] = 0.5f + 0.5f * rnd_float();
    }
    for (size_t i = 0; i < sizeof mask; i++) mask[i] = rnd_float() > 0.6f;
    const int64_t sdims[4] = {SB, SN, SS1, SS2}, mdims[4] = {1, SN, SS1, SS2};
    make(&g_grad, sdims, 4, ACL_FLOAT, 4, grad);
    make(&g_y, sdims, 4, ACL_FLOAT, 4, y);
    make(&g_mask, mdims, 4, ACL_BOOL, 1, mask);

    static float q[T1 * N1 * HD], k[T2 * N2 * HD], v[T2 * N2 * HD], o[T1 * N1 * HD], dout[T1 * N1 * HD];
    static float smax[T1 * N1 * 8], ssum[T1 * N1 * 8];
    static int32_t topk[T1 * N2 * CNT];
    for (int i = 0; i < T1 * N1 * HD; i++) {
        q[i] = rnd_float();
        o[i] = rnd_float();
        dout[i] = rnd_float();
    }
    for (int i = 0; i < T2 * N2 * HD; i++) {
        k[i] = rnd_float();
        v[i] = rnd_float();
    }
    for (int i = 0; i < T1 * N1 * 8; i++) {
        smax[i] = 0.5f;
        ssum[i] = 2.0f + rnd_float();
    }
    for (int i = 0; i < T1 * N2 * CNT; i++) topk[i] = (int32_t)((i * 7 + 3) % (T2 / BLK));
    const int64_t qd[3] = {T1, N1, HD}, kd[3] = {T2, N2, HD}, st[3] = {T1, N1, 8}, td[3] = {T1, N2, CNT};
    make_pair(g_q, qd, q, T1 * N1 * HD);
    make_pair(g_k, kd, k, T2 * N2 * HD);
    make_pair(g_v, kd, v, T2 * N2 * HD);
    make_pair(g_o, qd, o, T1 * N1 * HD);
    make_pair(g_do, qd, dout, T1 * N1 * HD);
    make(&g_max, st, 3, ACL_FLOAT, 4, smax);
    make(&g_sum, st, 3, ACL_FLOAT, 4, ssum);
    make(&g_topk, td, 3, ACL_INT32, 4, topk);
    for (int i = 0; i < THREADS; i++) CHECK(aclrtCreateEvent(&g_events[i]));
    const int64_t seq_q[1] = {T1}, seq_kv[1] = {T2};
    g_seq_q = aclCreateIntArray(seq_q, 1);
    g_seq_kv = aclCreateIntArray(seq_kv, 1);
    if (g_seq_q == NULL || g_seq_kv == NULL) CHECK(1);

    /* reference: one thread, one iteration per sparse mode and input dtype (thread ids 0 to 3) */
    static worker ws[THREADS];
    unsigned char *ref[4][NOUT];
    for (int m = 0; m < 4; m++) {
        worker_init(&ws[m], m, 1);
        g_nthreads = 1;
        run(&ws[m]);
        for (int i = 0; i < NOUT; i++) {
            ref[m][i] = malloc(ws[m].out[i].bytes);
            if (ref[m][i] == NULL) CHECK(1);
            memcpy(ref[m][i], ws[m].host[i], ws[m].out[i].bytes);
        }
        worker_free(&ws[m]);
    }
    /* 4 threads; thread i is checked against the reference of its sparse mode and dtype */
    g_nthreads = THREADS;
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        worker_init(&ws[i], i, iters);
        ws[i].ref = ref[i % 4];
    }
    for (int i = 0; i < THREADS; i++) {
        if (pthread_create(&th[i], NULL, run, &ws[i]) != 0) CHECK(1);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    int bad = 0;
    for (int i = 0; i < THREADS; i++) {
        bad += ws[i].mismatches;
        worker_free(&ws[i]);
    }
    for (int m = 0; m < 4; m++) {
        for (int i = 0; i < NOUT; i++) free(ref[m][i]);
    }
    for (int i = 0; i < THREADS; i++) CHECK(aclrtDestroyEvent(g_events[i]));
    CHECK(aclDestroyIntArray(g_seq_q));
    CHECK(aclDestroyIntArray(g_seq_kv));
    dtensor *ins[] = {&g_grad, &g_y, &g_mask, &g_max, &g_sum, &g_topk};
    for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++) drop(ins[i]);
    for (int b = 0; b < 2; b++) {
        dtensor *pair[] = {&g_q[b], &g_k[b], &g_v[b], &g_o[b], &g_do[b]};
        for (size_t i = 0; i < sizeof pair / sizeof pair[0]; i++) drop(pair[i]);
    }
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    if (bad) {
        printf("stress_streams: FAILED (%d outputs differ from the single-thread run)\n", bad);
        return 1;
    }
    printf("stress_streams: %d threads x %d iterations, results bitwise equal to the single-thread run\n", THREADS,
           iters);
    return 0;
}
