/* Device memory as llama.cpp's CANN backend uses it:
 *   1. every aclrtMalloc* block (and aclrtMallocHost block) is at least
 *      512-byte aligned, 2 MiB aligned from 2 MiB up with a huge-page policy;
 *   2. aclrtFree of a block that queued work still uses returns at once and
 *      that work still runs on it (deferred release): tasks queued before the
 *      free pass their address check, later ones are refused (507015), a second
 *      free is a double free, and the memory and its capacity come back once
 *      the earlier tasks finished (at once when there are none), also when the
 *      free runs in a stream callback, when the stream is force-destroyed or
 *      the device reset, and with several threads freeing and launching at
 *      once (run under ASan and TSan by tests/sanitize/run.sh).
 * Plain C; exits 1 on the first failure. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_copy.h"
#include "aclnnop/aclnn_fill_scalar.h"
#include "pyaclnn/pyaclnn_ext.h"

#include "pa_check.h"

#define MIB ((size_t)1 << 20)
#define N 1024 /* floats per test buffer */
#define RETIRED 4 /* pyaclnnCountMemRanges kind of freed blocks awaiting earlier work */

static size_t used_bytes(void) {
    size_t f = 0, t = 0;
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    return t - f;
}

static uint64_t retired(void) { return pyaclnnCountMemRanges(RETIRED, NULL); }

/* ---- a host function that blocks its stream until opened ---- */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open, ran;
} gate;

static void gate_init(gate *g) {
    CHECK_OK(pthread_mutex_init(&g->mu, NULL));
    CHECK_OK(pthread_cond_init(&g->cv, NULL));
    g->open = g->ran = false;
}

static void gate_hold(void *arg) {
    gate *g = arg;
    pthread_mutex_lock(&g->mu);
    g->ran = true;
    pthread_cond_broadcast(&g->cv);
    while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_queue(gate *g, aclrtStream s) {
    gate_init(g);
    CHECK_OK(aclrtLaunchHostFunc(s, gate_hold, g));
}

static void gate_wait_ran(gate *g) {
    pthread_mutex_lock(&g->mu);
    while (!g->ran) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_open(gate *g) {
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void gate_destroy(gate *g) {
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

/* ---- ops on float buffers of N elements ---- */

static aclTensor *tensor_at(void *p) {
    const int64_t dims[1] = {N}, strides[1] = {1};
    aclTensor *t = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, p);
    CHECK(t != NULL);
    return t;
}

/* Queues "every element of p = v" on s; the launch itself must succeed. */
static void fill(void *p, float v, aclrtStream s) {
    aclTensor *t = tensor_at(p);
    aclScalar *sc = aclCreateScalar(&v, ACL_FLOAT);
    CHECK(sc != NULL);
    uint64_t ws = 1;
    aclOpExecutor *ex = NULL;
    CHECK_OK(aclnnInplaceFillScalarGetWorkspaceSize(t, sc, &ws, &ex));
    CHECK_EQ(ws, 0);
    CHECK_OK(aclnnInplaceFillScalar(NULL, 0, ex, s));
    CHECK_OK(aclDestroyScalar(sc));
    CHECK_OK(aclDestroyTensor(t));
}

/* Queues dst = src on s. */
static void copy(void *dst, void *src, aclrtStream s) {
    aclTensor *d = tensor_at(dst), *x = tensor_at(src);
    uint64_t ws = 1;
    aclOpExecutor *ex = NULL;
    CHECK_OK(aclnnInplaceCopyGetWorkspaceSize(d, x, &ws, &ex));
    CHECK_EQ(ws, 0);
    CHECK_OK(aclnnInplaceCopy(NULL, 0, ex, s));
    CHECK_OK(aclDestroyTensor(d));
    CHECK_OK(aclDestroyTensor(x));
}

static void *dev_alloc(void) {
    void *p = NULL;
    CHECK_OK(aclrtMalloc(&p, N * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST));
    return p;
}

static bool all_equal(const void *dev, float v) {
    float h[N];
    CHECK_OK(aclrtMemcpy(h, sizeof h, dev, sizeof h, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < N; i++) {
        if (h[i] != v) return false;
    }
    return true;
}

/* ---- 1. alignment ---- */

static void test_alignment(void) {
    static const size_t sizes[] = {1, 2, 31, 32, 33, 63, 64, 65, 96, 100, 127, 128, 129, 200, 255, 256, 257, 480,
                                   511, 512, 513, 1000, 1023, 1024, 4095, 4096, 4097, 65535, 65536, 100000,
                                   MIB - 32, MIB, 2 * MIB - 64, 2 * MIB - 32, 2 * MIB - 31, 2 * MIB, 2 * MIB + 1,
                                   3 * MIB + 7, 5 * MIB};
    static const aclrtMemMallocPolicy policies[] = {ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY,
                                                    ACL_MEM_MALLOC_NORMAL_ONLY, ACL_MEM_MALLOC_HUGE_FIRST_P2P,
                                                    ACL_MEM_MALLOC_NORMAL_ONLY_P2P};
    enum { NS = sizeof sizes / sizeof sizes[0], ROUNDS = 6, KEEP = 3 * NS };
    const size_t used0 = used_bytes();
    void *keep[KEEP];
    for (int round = 0; round < ROUNDS; round++) {
        const aclrtMemMallocPolicy pol = policies[round % 5];
        const bool huge = pol != ACL_MEM_MALLOC_NORMAL_ONLY && pol != ACL_MEM_MALLOC_NORMAL_ONLY_P2P;
        int k = 0;
        for (size_t i = 0; i < NS; i++) { /* all live at once: no address comes back */
            CHECK_OK(aclrtMalloc(&keep[k], sizes[i], pol));
            CHECK_OK(aclrtMallocAlign32(&keep[k + 1], sizes[i], pol));
            CHECK_OK(aclrtMallocCached(&keep[k + 2], sizes[i], pol));
            for (int j = 0; j < 3; j++) {
                const uintptr_t a = (uintptr_t)keep[k + j];
                CHECK_EQ(a % 512, 0);
                /* the block's bytes, padding included, are usable */
                const size_t bytes = j == 1 ? (sizes[i] + 31) / 32 * 32 : (sizes[i] + 31) / 32 * 32 + 32;
                CHECK_OK(aclrtMemset(keep[k + j], bytes, 0x5A, bytes));
                if (huge && bytes >= 2 * MIB) CHECK_EQ(a % (2 * MIB), 0);
            }
            k += 3;
        }
        for (int j = 0; j < k; j++) CHECK_OK(aclrtFree(keep[j]));
        CHECK_EQ(used_bytes(), used0);
    }
    void *host[NS];
    for (int round = 0; round < ROUNDS; round++) {
        for (size_t i = 0; i < NS; i++) {
            CHECK_OK(aclrtMallocHost(&host[i], sizes[i]));
            CHECK_EQ((uintptr_t)host[i] % 512, 0);
            memset(host[i], 0xA5, sizes[i]);
        }
        for (size_t i = 0; i < NS; i++) CHECK_OK(aclrtFreeHost(host[i]));
    }
    CHECK_EQ(used_bytes(), used0);
}

/* ---- 2. freeing memory queued work uses ---- */

static void test_free_while_queued(aclrtStream s, aclrtStream s2) {
    const size_t used0 = used_bytes();
    void *b = dev_alloc(), *c = dev_alloc();
    const size_t blk = used_bytes() - used0; /* both blocks */
    gate g;
    gate_queue(&g, s);
    fill(b, 3.5f, s);
    copy(c, b, s); /* reads b */
    gate_wait_ran(&g);
    CHECK_OK(aclrtFree(b)); /* at once, while the stream is blocked */
    CHECK_EQ(retired(), 1);
    CHECK_EQ(used_bytes(), used0 + blk); /* counted until released */
    CHECK_ERR(aclrtFree(b), ACL_ERROR_INVALID_PARAM, "double free");
    /* work queued after the free is refused (here on a stream that is not blocked) */
    fill(b, 1.0f, s2);
    CHECK_ERR(aclrtSynchronizeStream(s2), ACL_ERROR_RT_AICORE_EXCEPTION, "not inside one device allocation");
    CHECK(msg_has("freed by aclrtFree"));
    CHECK_EQ(retired(), 1);
    gate_open(&g);
    CHECK_OK(aclrtSynchronizeStream(s)); /* the queued fill and copy ran on b */
    CHECK(all_equal(c, 3.5f));
    CHECK_EQ(retired(), 0); /* released once they finished, before the synchronise returned */
    CHECK_EQ(used_bytes(), used0 + blk / 2);
    gate_destroy(&g);

    /* a launch queued after the free on the same stream, behind the earlier work */
    b = dev_alloc();
    gate_queue(&g, s);
    fill(b, 2.0f, s);
    copy(c, b, s);
    CHECK_OK(aclrtFree(b));
    fill(b, 9.0f, s);
    gate_open(&g);
    CHECK_ERR(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION, "not inside one device allocation");
    CHECK(all_equal(c, 2.0f));
    CHECK_EQ(retired(), 0);
    gate_destroy(&g);

    /* no queued work: released at once */
    b = dev_alloc();
    fill(b, 4.0f, s);
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtFree(b));
    CHECK_EQ(retired(), 0);
    CHECK_EQ(used_bytes(), used0 + blk / 2);
    /* work queued on another stream that does not use the block delays it too
     * (any task queued before the free might), and releases it when done */
    b = dev_alloc();
    gate_queue(&g, s2);
    CHECK_OK(aclrtFree(b));
    CHECK_EQ(retired(), 1);
    gate_open(&g);
    CHECK_OK(aclrtSynchronizeStream(s2));
    CHECK_EQ(retired(), 0);
    CHECK_EQ(used_bytes(), used0 + blk / 2);
    gate_destroy(&g);
    CHECK_OK(aclrtFree(c));
    CHECK_EQ(used_bytes(), used0);
}

/* ---- 3. freeing from a stream callback (must not wait for itself) ---- */

typedef struct {
    void *p;
    aclError rc;
    uint64_t retired_after;
} free_call;

static void free_in_callback(void *arg) {
    free_call *f = arg;
    f->rc = aclrtFree(f->p);
    f->retired_after = retired(); /* this very task is unfinished: deferred */
}

static void test_free_from_callback(aclrtStream s) {
    const size_t used0 = used_bytes();
    void *b = dev_alloc(), *c = dev_alloc();
    free_call f = {b, -1, 0};
    gate g;
    gate_queue(&g, s); /* everything below is queued before the callback runs */
    fill(b, 6.0f, s);
    CHECK_OK(aclrtLaunchCallback(free_in_callback, &f, ACL_CALLBACK_BLOCK, s));
    copy(c, b, s); /* queued before the callback freed b: still reads it */
    gate_open(&g);
    CHECK_OK(aclrtSynchronizeStream(s));
    gate_destroy(&g);
    CHECK_OK(f.rc);
    CHECK_EQ(f.retired_after, 1);
    CHECK(all_equal(c, 6.0f));
    CHECK_EQ(retired(), 0);
    CHECK_OK(aclrtFree(c));
    CHECK_EQ(used_bytes(), used0);
}

/* ---- 4. dropped work, device reset ---- */

static void *open_later(void *arg) {
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    gate_open(arg);
    return NULL;
}

static void test_teardown_releases(void) {
    const size_t used0 = used_bytes();
    /* force-destroying a stream drops its queued tasks: they no longer hold the block */
    aclrtStream s = NULL;
    CHECK_OK(aclrtCreateStream(&s));
    void *b = dev_alloc();
    gate g;
    gate_queue(&g, s);
    fill(b, 1.0f, s);
    CHECK_OK(aclrtFree(b));
    CHECK_EQ(retired(), 1);
    pthread_t opener;
    CHECK_OK(pthread_create(&opener, NULL, open_later, &g)); /* lets the running gate end */
    CHECK_OK(aclrtDestroyStreamForce(s));                    /* drops the fill */
    CHECK_OK(pthread_join(opener, NULL));
    CHECK_EQ(retired(), 0);
    CHECK_EQ(used_bytes(), used0);
    gate_destroy(&g);
    /* a device reset drains the device's streams: everything deferred is released */
    CHECK_OK(aclrtSetDevice(0)); /* a second reference, dropped below */
    CHECK_OK(aclrtCreateStream(&s));
    void *b2 = dev_alloc();
    b = dev_alloc();
    gate_queue(&g, s);
    fill(b, 1.0f, s);
    copy(b2, b, s);
    fill(b2, 2.0f, NULL); /* the default stream too */
    CHECK_OK(aclrtFree(b));
    CHECK_OK(aclrtFree(b2));
    CHECK_EQ(retired(), 2);
    CHECK_OK(pthread_create(&opener, NULL, open_later, &g));
    CHECK_OK(aclrtResetDeviceForce(0)); /* drops every reference: the device's streams drain */
    CHECK_OK(pthread_join(opener, NULL));
    CHECK_EQ(retired(), 0);
    CHECK_OK(aclrtSetDevice(0));
    CHECK_EQ(used_bytes(), used0);
    gate_destroy(&g);
}

/* ---- 5. several threads freeing and launching at once ---- */

enum { THREADS = 3, ITERS = 60 };
static aclrtStream g_streams[THREADS];
static atomic_int g_bad;

static void *worker(void *arg) {
    const int me = (int)(intptr_t)arg;
    CHECK_OK(aclrtSetDevice(0));
    aclrtStream mine = g_streams[me], other = g_streams[(me + 1) % THREADS];
    aclrtEvent filled = NULL;
    CHECK_OK(aclrtCreateEvent(&filled));
    void *c = dev_alloc(), *d = dev_alloc(); /* c written on mine only, d on other only */
    for (int it = 0; it < ITERS; it++) {
        void *b = dev_alloc();
        const float v = (float)(me * 1000 + it);
        fill(b, v, mine);
        copy(c, b, mine);
        if (it % 3 == 0) { /* a second stream reads it too, after the fill */
            CHECK_OK(aclrtRecordEvent(filled, mine));
            CHECK_OK(aclrtStreamWaitEvent(other, filled));
            copy(d, b, other);
        }
        CHECK_OK(aclrtFree(b)); /* all of it may still be queued */
        if (it % 4 == 3) {
            CHECK_OK(aclrtSynchronizeStream(mine));
            if (!all_equal(c, v)) atomic_fetch_add(&g_bad, 1);
        }
    }
    CHECK_OK(aclrtSynchronizeStream(mine));
    CHECK_OK(aclrtFree(c));
    CHECK_OK(aclrtFree(d)); /* other may still copy into it */
    CHECK_OK(aclrtDestroyEvent(filled));
    CHECK_OK(aclrtResetDevice(0));
    return NULL;
}

static void test_concurrent(void) {
    const size_t used0 = used_bytes();
    for (int i = 0; i < THREADS; i++) CHECK_OK(aclrtCreateStream(&g_streams[i]));
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK_OK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i));
    for (int i = 0; i < THREADS; i++) CHECK_OK(pthread_join(th[i], NULL));
    CHECK_EQ(atomic_load(&g_bad), 0);
    for (int i = 0; i < THREADS; i++) {
        CHECK_OK(aclrtSynchronizeStream(g_streams[i]));
        CHECK_OK(aclrtDestroyStream(g_streams[i]));
    }
    CHECK_EQ(retired(), 0);
    CHECK_EQ(used_bytes(), used0);
}

int main(void) {
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    aclrtStream s = NULL, s2 = NULL;
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtCreateStream(&s2));
    test_alignment();
    test_free_while_queued(s, s2);
    test_free_from_callback(s);
    test_concurrent();
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtDestroyStream(s2));
    test_teardown_releases();
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    printf("test_free_queued: %d checks passed\n", atomic_load(&g_checks));
    return 0;
}
