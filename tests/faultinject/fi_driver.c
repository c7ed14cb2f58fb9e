/* Fault-injection driver: a small program over the runtime (init, device,
 * streams incl. the default one, events, device / pinned / registered /
 * virtual memory, callbacks) and all four ops (both forwards, then both
 * backwards on the forwards' results), written to run under
 * libfaultinject.so (faultinject.c).
 *
 * Every step that fails must fail with the status its API gives when that
 * resource runs out (expected_status: host memory for the runtime's records
 * 200000, memory the call asked for 207001, threads / locks 207005, an op's
 * executor 561101 or its launch and kernel scratch 561103, a NULL handle),
 * with an aclGetRecentErrMsg() naming the call; the step then undoes what it
 * made and is retried once.
 *
 *   exit 0  every step succeeded; prints "RESULT <hash of every output>"
 *   exit 3  a retry failed too and the driver gave up after releasing
 *           everything (allowed only with FI_MODE=from); prints "GAVE-UP ..."
 *   exit 1  a check failed: an unexpected status or message, a retry that
 *           failed after a single injected failure, something left behind
 * With FI_MODE=once at most one step may fail. The hash must equal the one
 * of a run without faults: the caller compares. */
#define _GNU_SOURCE
#include <dlfcn.h>
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
#include "pyaclnn/pyaclnn_ext.h"

/* softmax [SB, SN, SS1, SS2] fp32; NSA (relaxed mode, fp32) T1 queries, T2 keys */
enum { SB = 1, SN = 2, SS1 = 4, SS2 = 32, T1 = 8, T2 = 16, N1 = 2, N2 = 1, HD = 8, BLK = 4, CNT = 2 };
#define SNUM (SB * SN * SS1 * SS2)
#define GRAN ((size_t)2 << 20) /* VMM granularity */

static bool g_from; /* FI_MODE=from: a retry may fail too */
static int g_failures;

/* ---- failures ---- */

typedef struct {
    const char *api; /* the call that failed (its name must be in the message) */
    long status;     /* -1: a NULL handle */
} failure;

static _Noreturn void die(const char *fmt, const char *a, long b) {
    fprintf(stderr, "fi_driver: FAILED: ");
    fprintf(stderr, fmt, a, b);
    const char *m = aclGetRecentErrMsg();
    fprintf(stderr, "\n  aclGetRecentErrMsg: %s\n", m ? m : "(null)");
    exit(1);
}

/* Statuses a call may give when a resource of the system runs out: host
 * memory for the runtime's records 200000, memory the call was asked for
 * 207001, a thread / lock 207005 (a stream, or the default stream made on
 * first use), an op's executor 561101, its launch or task 561103. */
static bool expected_status(const char *api, long st) {
    static const char *const asks_memory[] = {"aclrtMalloc", "aclrtMallocHost", "aclrtReserveMemAddress",
                                              "aclrtMallocPhysical", "aclrtMapMem", "aclrtUnmapMem"};
    static const char *const makes_threads[] = {"aclrtCreateStream", "aclrtCreateStreamWithConfig",
                                                "aclrtCreateEvent", "aclrtCreateEventWithFlag",
                                                "aclrtSynchronizeStream", "aclrtMemsetAsync"};
    if (strstr(api, "GetWorkspaceSize") != NULL) return st == ACLNN_ERR_INNER_CREATE_EXECUTOR;
    if (strncmp(api, "aclnn", 5) == 0) return st == ACLNN_ERR_INNER_NULLPTR; /* a launch, or its task */
    if (strncmp(api, "aclCreate", 9) == 0) return st == -1;
    if (st == ACL_ERROR_BAD_ALLOC) return true;
    for (size_t i = 0; i < sizeof asks_memory / sizeof asks_memory[0]; i++) {
        if (strcmp(api, asks_memory[i]) == 0) return st == ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    for (size_t i = 0; i < sizeof makes_threads / sizeof makes_threads[0]; i++) {
        if (strcmp(api, makes_threads[i]) == 0) return st == ACL_ERROR_RT_RESOURCE_ALLOC_FAIL;
    }
    return false;
}

/* Records a failure of `api` with status st: checks it, and returns true. */
static bool failed(failure *f, const char *api, long st) {
    f->api = api;
    f->status = st;
    if (!expected_status(api, st)) die("%s returned unexpected status %ld", api, st);
    const char *m = aclGetRecentErrMsg();
    if (m == NULL || strstr(m, api) == NULL) die("the message of %s (status %ld) does not name it", api, st);
    return true;
}

#define TRY(f, call)                                                                                           \
    do {                                                                                                       \
        long st_ = (long)(call);                                                                               \
        if (st_ != 0) return failed(f, call_name(#call), st_);                                                 \
    } while (0)

/* "aclrtMalloc(&p, ...)" -> "aclrtMalloc" (static storage: interned per call site is enough). */
static const char *call_name(const char *expr) {
    static char names[64][64];
    static int n;
    size_t len = strcspn(expr, "(");
    for (int i = 0; i < n; i++) {
        if (strlen(names[i]) == len && strncmp(names[i], expr, len) == 0) return names[i];
    }
    if (n == 64 || len >= 64) return "?";
    memcpy(names[n], expr, len);
    names[n][len] = '\0';
    return names[n++];
}

/* ---- cleanup: every release must succeed, with or without memory ---- */

#define MUST(call)                                                                                             \
    do {                                                                                                       \
        long st_ = (long)(call);                                                                               \
        if (st_ != 0) die("release %s failed with %ld", #call, st_);                                           \
    } while (0)

/* ---- device tensors ---- */

typedef struct {
    void *dev;
    size_t bytes;
    aclTensor *t;
} dtensor;

static bool dt_make(failure *f, dtensor *d, const int64_t *dims, int ndim, aclDataType dt, const void *host) {
    int64_t strides[8], numel = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = numel;
        numel *= dims[i];
    }
    d->bytes = (size_t)numel * (dt == ACL_BOOL ? 1 : dt == ACL_INT32 || dt == ACL_FLOAT ? 4 : 2);
    d->t = NULL;
    TRY(f, aclrtMalloc(&d->dev, d->bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    if (host != NULL) MUST(aclrtMemcpy(d->dev, d->bytes, host, d->bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    else MUST(aclrtMemset(d->dev, d->bytes, 0, d->bytes));
    d->t = aclCreateTensor(dims, (uint64_t)ndim, dt, strides, 0, ACL_FORMAT_ND, &numel, 1, d->dev);
    if (d->t == NULL) {
        MUST(aclrtFree(d->dev));
        d->dev = NULL;
        return failed(f, "aclCreateTensor", -1);
    }
    return false;
}

static void dt_drop(dtensor *d) {
    if (d->t != NULL) MUST(aclDestroyTensor(d->t));
    if (d->dev != NULL) MUST(aclrtFree(d->dev));
    memset(d, 0, sizeof *d);
}

/* ---- state ---- */

enum { X, MASK, Y, GRAD, DX, Q, K, V, TOPK, SMAX, SSUM, AO, DO, DQ, DK, DV, NT };
static dtensor g_t[NT];
static aclrtStream g_s, g_s2;
static aclrtEvent g_e0, g_e1;
static aclIntArray *g_seq_q, *g_seq_kv;
static void *g_ws;
static uint64_t g_ws_size;
static int g_callbacks;
static uint64_t g_hash = 1469598103934665603ull;

static void hash_bytes(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) g_hash = (g_hash ^ b[i]) * 1099511628211ull;
}

static void release_all(void) {
    for (int i = 0; i < NT; i++) dt_drop(&g_t[i]);
    if (g_ws != NULL) MUST(aclrtFree(g_ws));
    if (g_seq_q != NULL) MUST(aclDestroyIntArray(g_seq_q));
    if (g_seq_kv != NULL) MUST(aclDestroyIntArray(g_seq_kv));
    if (g_e0 != NULL) MUST(aclrtDestroyEvent(g_e0));
    if (g_e1 != NULL) MUST(aclrtDestroyEvent(g_e1));
    if (g_s2 != NULL) MUST(aclrtDestroyStream(g_s2));
    if (g_s != NULL) MUST(aclrtDestroyStream(g_s));
    g_ws = NULL, g_seq_q = g_seq_kv = NULL, g_e0 = g_e1 = NULL, g_s = g_s2 = NULL;
}

/* A mapping aclrtUnmapMem could not remove (its mmap kept failing): it stays
 * mapped and tracked, so the reservation and the physical memory stay too. */
static void *g_stuck_va;
static aclrtDrvMemHandle g_stuck_phys;

/* Nothing may be left behind: handles, memory ranges, device capacity. */
static void check_nothing_left(void) {
    MUST(aclrtSetDevice(0));
    size_t free_b = 0, total = 0;
    MUST(aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total));
    const size_t stuck = g_stuck_va != NULL ? 2 * GRAN : 0;
    if (free_b + stuck != total) die("%s%ld bytes of device capacity not credited back", "", (long)(total - free_b));
    for (int k = 0; k < 4; k++) {
        uint64_t n = pyaclnnCountMemRanges(k, NULL);
        if (n != (k == 3 && g_stuck_va != NULL ? 1u : 0u)) die("%s%ld memory ranges left", "", (long)n);
    }
    if (pyaclnnCountHandles(0) != 0) die("%s%ld aclnn handles left", "", (long)pyaclnnCountHandles(0));
    MUST(aclrtResetDevice(0));
}

static void finish(void) {
    release_all();
    MUST(aclrtResetDevice(0));
    check_nothing_left();
    MUST(aclFinalize());
}

static _Noreturn void give_up(const char *api, long st) {
    if (!g_from) die("%s: the retry failed (%ld)", api, st);
    finish();
    printf("GAVE-UP %s %ld\n", api, st);
    exit(3);
}

/* ---- steps: each makes its part or, on failure, undoes it and returns true ---- */

static bool step_init(failure *f) {
    TRY(f, aclrtSetDevice(0));
    return false;
}

static bool step_streams(failure *f) {
    aclrtStream s = NULL, s2 = NULL;
    aclrtEvent e0 = NULL, e1 = NULL;
    long st;
    if ((st = aclrtCreateStream(&s)) != 0) return failed(f, "aclrtCreateStream", st);
    if ((st = aclrtCreateStreamWithConfig(&s2, 0, 0)) != 0) {
        MUST(aclrtDestroyStream(s));
        return failed(f, "aclrtCreateStreamWithConfig", st);
    }
    if ((st = aclrtCreateEvent(&e0)) != 0 || (st = aclrtCreateEventWithFlag(&e1, 0)) != 0) {
        const char *api = e0 == NULL ? "aclrtCreateEvent" : "aclrtCreateEventWithFlag";
        if (e0 != NULL) MUST(aclrtDestroyEvent(e0));
        MUST(aclrtDestroyStream(s2));
        MUST(aclrtDestroyStream(s));
        return failed(f, api, st);
    }
    g_s = s, g_s2 = s2, g_e0 = e0, g_e1 = e1;
    return false;
}

static bool step_record_start(failure *f) {
    TRY(f, aclrtRecordEvent(g_e0, g_s));
    return false;
}

static bool make_all(failure *f, const int *which, int n, const int64_t *const *dims, const int *ndims,
                     const aclDataType *dts, const void *const *host) {
    for (int i = 0; i < n; i++) {
        if (dt_make(f, &g_t[which[i]], dims[i], ndims[i], dts[i], host[i])) {
            for (int j = 0; j < i; j++) dt_drop(&g_t[which[j]]);
            return true;
        }
    }
    return false;
}

static bool step_tensors(failure *f) {
    static float x[SNUM], grad[SNUM], q[T1 * N1 * HD], k[T2 * N2 * HD], v[T2 * N2 * HD], dout[T1 * N1 * HD];
    static unsigned char mask[SS1 * SS2];
    static int32_t topk[T1 * N2 * CNT];
    uint64_t r = 12345;
#define RND() (r = r * 6364136223846793005ull + 1442695040888963407ull, (float)((r >> 40) % 2001) / 1000.0f - 1.0f)
    for (int i = 0; i < SNUM; i++) x[i] = 3 * RND(), grad[i] = RND();
    for (int i = 0; i < SS1 * SS2; i++) mask[i] = (i % SS2) > (i / SS2) * 8 + 5;
    for (int i = 0; i < T1 * N1 * HD; i++) q[i] = RND(), dout[i] = RND();
    for (int i = 0; i < T2 * N2 * HD; i++) k[i] = RND(), v[i] = RND();
    for (int i = 0; i < T1 * N2 * CNT; i++) topk[i] = (i % CNT + i / CNT) % (T2 / BLK);
#undef RND
    static const int64_t s4[4] = {SB, SN, SS1, SS2}, m4[4] = {1, 1, SS1, SS2}, q3[3] = {T1, N1, HD},
                         k3[3] = {T2, N2, HD}, t3[3] = {T1, N2, CNT}, st3[3] = {T1, N1, 8};
    const int which[] = {X, MASK, Y, GRAD, DX, Q, K, V, TOPK, SMAX, SSUM, AO, DO, DQ, DK, DV};
    const int64_t *const dims[] = {s4, m4, s4, s4, s4, q3, k3, k3, t3, st3, st3, q3, q3, q3, k3, k3};
    const int nd[] = {4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3};
    const aclDataType F = ACL_FLOAT;
    const aclDataType dts[] = {F, ACL_BOOL, F, F, F, F, F, F, ACL_INT32, F, F, F, F, F, F, F};
    const void *const host[] = {x, mask, NULL, grad, NULL, q, k, v, topk, NULL, NULL, NULL, dout, NULL, NULL, NULL};
    if (make_all(f, which, NT, dims, nd, dts, host)) return true;
    const int64_t sq[1] = {T1}, skv[1] = {T2};
    g_seq_q = aclCreateIntArray(sq, 1);
    g_seq_kv = g_seq_q == NULL ? NULL : aclCreateIntArray(skv, 1);
    if (g_seq_kv == NULL) {
        if (g_seq_q != NULL) MUST(aclDestroyIntArray(g_seq_q));
        g_seq_q = NULL;
        for (int i = 0; i < NT; i++) dt_drop(&g_t[i]);
        return failed(f, "aclCreateIntArray", -1);
    }
    g_ws_size = 4u << 20;
    long st = aclrtMalloc(&g_ws, g_ws_size, ACL_MEM_MALLOC_HUGE_FIRST);
    if (st != 0) {
        g_ws = NULL;
        MUST(aclDestroyIntArray(g_seq_q));
        MUST(aclDestroyIntArray(g_seq_kv));
        g_seq_q = g_seq_kv = NULL;
        for (int i = 0; i < NT; i++) dt_drop(&g_t[i]);
        return failed(f, "aclrtMalloc", st);
    }
    return false;
}

/* GetWorkspaceSize, launch, synchronise; a task failure is reported under the op's name. */
static bool launch(failure *f, const char *gws, long st, const char *op, uint64_t need, aclOpExecutor *ex,
                   aclnnStatus (*run)(void *, uint64_t, aclOpExecutor *, aclrtStream)) {
    if (st != 0) return failed(f, gws, st);
    if (need > g_ws_size) die("%s needs a workspace of %ld bytes", op, (long)need);
    if ((st = run(g_ws, g_ws_size, ex, g_s)) != 0) return failed(f, op, st);
    if ((st = aclrtSynchronizeStream(g_s)) != 0) return failed(f, op, st);
    return false;
}

static bool step_softmax_forward(failure *f) {
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    long st = aclnnScaledMaskedSoftmaxGetWorkspaceSize(g_t[X].t, g_t[MASK].t, 0.75, false, g_t[Y].t, &ws, &ex);
    return launch(f, "aclnnScaledMaskedSoftmaxGetWorkspaceSize", st, "aclnnScaledMaskedSoftmax", ws, ex,
                  aclnnScaledMaskedSoftmax);
}

static bool step_softmax_backward(failure *f) {
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    long st = aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g_t[GRAD].t, g_t[Y].t, g_t[MASK].t, 0.75, false,
                                                               g_t[DX].t, &ws, &ex);
    return launch(f, "aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize", st, "aclnnScaledMaskedSoftmaxBackward", ws,
                  ex, aclnnScaledMaskedSoftmaxBackward);
}

static bool step_nsa_forward(failure *f) {
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    long st = aclnnNsaSelectedAttentionGetWorkspaceSize(g_t[Q].t, g_t[K].t, g_t[V].t, g_t[TOPK].t, NULL, g_seq_q,
                                                        g_seq_kv, 0.35, N1, (char *)"TND", 0, BLK, CNT, g_t[SMAX].t,
                                                        g_t[SSUM].t, g_t[AO].t, &ws, &ex);
    return launch(f, "aclnnNsaSelectedAttentionGetWorkspaceSize", st, "aclnnNsaSelectedAttention", ws, ex,
                  aclnnNsaSelectedAttention);
}

static bool step_nsa_backward(failure *f) {
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    long st = aclnnNsaSelectedAttentionGradGetWorkspaceSize(
        g_t[Q].t, g_t[K].t, g_t[V].t, g_t[AO].t, g_t[DO].t, g_t[SMAX].t, g_t[SSUM].t, g_t[TOPK].t, g_seq_q, g_seq_kv,
        NULL, 0.35, BLK, CNT, N1, (char *)"TND", 0, g_t[DQ].t, g_t[DK].t, g_t[DV].t, &ws, &ex);
    return launch(f, "aclnnNsaSelectedAttentionGradGetWorkspaceSize", st, "aclnnNsaSelectedAttentionGrad", ws, ex,
                  aclnnNsaSelectedAttentionGrad);
}

static void count_callback(void *arg) { ++*(int *)arg; }

/* Copies on the stream, a callback, and the default stream. */
static bool step_async(failure *f) {
    g_callbacks = 0;
    TRY(f, aclrtMemsetAsync(g_t[DO].dev, g_t[DO].bytes, 0, 4, g_s));
    TRY(f, aclrtMemcpyAsync(g_t[DO].dev, g_t[DO].bytes, g_t[DQ].dev, g_t[DQ].bytes, ACL_MEMCPY_DEVICE_TO_DEVICE,
                            g_s));
    TRY(f, aclrtLaunchCallback(count_callback, &g_callbacks, ACL_CALLBACK_BLOCK, g_s));
    TRY(f, aclrtSynchronizeStream(g_s));
    TRY(f, aclrtMemsetAsync(g_t[MASK].dev, g_t[MASK].bytes, 1, 1, NULL)); /* creates the default stream */
    TRY(f, aclrtSynchronizeStream(NULL));
    TRY(f, aclrtSynchronizeDevice());
    if (g_callbacks != 1) die("%scallback ran %ld times", "", g_callbacks);
    return false;
}

/* Records the end event, makes the second stream wait for it, times the run. */
static bool step_events(failure *f) {
    TRY(f, aclrtRecordEvent(g_e1, g_s));
    TRY(f, aclrtStreamWaitEvent(g_s2, g_e1));
    TRY(f, aclrtMemcpyAsync(g_t[DK].dev, g_t[DK].bytes, g_t[DV].dev, g_t[DV].bytes, ACL_MEMCPY_DEVICE_TO_DEVICE,
                            g_s2));
    TRY(f, aclrtSynchronizeStream(g_s2));
    TRY(f, aclrtSynchronizeEvent(g_e1));
    float ms = -1;
    aclrtEventRecordedStatus status;
    MUST(aclrtQueryEventStatus(g_e1, &status));
    if (status != ACL_EVENT_RECORDED_STATUS_COMPLETE) die("%sevent status %ld after synchronising", "", status);
    MUST(aclrtEventElapsedTime(&ms, g_e0, g_e1));
    if (!(ms >= 0)) die("%selapsed time %ld ms", "", (long)ms);
    return false;
}

/* Pinned host memory registered for the device. */
static bool step_host_memory(failure *f) {
    void *h = NULL, *dev = NULL;
    TRY(f, aclrtMallocHost(&h, 256));
    long st = aclrtHostRegister(h, 256, ACL_HOST_REGISTER_MAPPED, &dev);
    if (st != 0) {
        MUST(aclrtFreeHost(h));
        return failed(f, "aclrtHostRegister", st);
    }
    memset(h, 7, 256);
    MUST(aclrtMemcpy(g_t[DX].dev, 16, dev, 16, ACL_MEMCPY_DEVICE_TO_DEVICE)); /* DX's first 4 floats */
    MUST(aclrtHostUnregister(h));
    MUST(aclrtFreeHost(h));
    return false;
}

/* aclrtUnmapMem, retried once; a failed one must leave the mapping usable. */
static bool unmap(failure *f, void *va, aclrtDrvMemHandle h, void *base) {
    long st = aclrtUnmapMem(va);
    if (st == 0) return false;
    failed(f, "aclrtUnmapMem", st);
    if (++g_failures > 1 && !g_from) die("%s: a second failure (%ld) after one injected fault", "aclrtUnmapMem", st);
    printf("step vmm: aclrtUnmapMem failed with %ld (%s)\n", st, aclGetRecentErrMsg());
    MUST(aclrtMemcpy(va, 8, g_t[Y].dev, 8, ACL_MEMCPY_DEVICE_TO_DEVICE)); /* still mapped read-write */
    if (aclrtReleaseMemAddress(base) != ACL_ERROR_INVALID_PARAM) die("%s%ld: a mapped range was released", "", 0);
    if ((st = aclrtUnmapMem(va)) == 0) return false;
    g_stuck_va = base;
    g_stuck_phys = h;
    give_up("aclrtUnmapMem", st);
}

/* Virtual memory: two adjacent chunks of one reservation, written and read back. */
static bool step_vmm(failure *f) {
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof prop);
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    void *va = NULL;
    aclrtDrvMemHandle h = NULL;
    long st = aclrtReserveMemAddress(&va, 2 * GRAN, 0, NULL, 0);
    if (st != 0) return failed(f, "aclrtReserveMemAddress", st);
    if ((st = aclrtMallocPhysical(&h, 2 * GRAN, &prop, 0)) != 0) {
        MUST(aclrtReleaseMemAddress(va));
        return failed(f, "aclrtMallocPhysical", st);
    }
    char *hi = (char *)va + GRAN;
    if ((st = aclrtMapMem(va, GRAN, 0, h, 0)) == 0 && (st = aclrtMapMem(hi, GRAN, GRAN, h, 0)) != 0) {
        unmap(f, va, h, va);
    }
    if (st != 0) {
        MUST(aclrtFreePhysical(h));
        MUST(aclrtReleaseMemAddress(va));
        return failed(f, "aclrtMapMem", st);
    }
    /* 16 bytes across the seam of the two chunks */
    MUST(aclrtMemcpy(hi - 8, 16, g_t[Y].dev, 16, ACL_MEMCPY_DEVICE_TO_DEVICE));
    MUST(aclrtMemcpy((char *)g_t[DX].dev + 16, 16, hi - 8, 16, ACL_MEMCPY_DEVICE_TO_DEVICE));
    unmap(f, hi, h, va);
    unmap(f, va, h, va);
    MUST(aclrtFreePhysical(h));
    MUST(aclrtReleaseMemAddress(va));
    return false;
}

static bool step_results(failure *f) {
    (void)f;
    const int outs[] = {Y, DX, SMAX, SSUM, AO, DQ, DK, DV, DO, MASK};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        dtensor *d = &g_t[outs[i]];
        unsigned char *h = malloc(d->bytes);
        if (h == NULL) die("%sout of memory in the driver%ld", "", 0);
        MUST(aclrtMemcpy(h, d->bytes, d->dev, d->bytes, ACL_MEMCPY_DEVICE_TO_HOST));
        hash_bytes(h, d->bytes);
        free(h);
    }
    return false;
}

typedef struct {
    const char *name;
    bool (*fn)(failure *);
} step;

int main(void) {
    const char *mode = getenv("FI_MODE");
    g_from = mode != NULL && strcmp(mode, "from") == 0;
    setenv("PYACLNN_NSA_RELAXED", "1", 1); /* fp32 and a small head dim */
    MUST(aclInit(NULL));
    const step steps[] = {
        {"init", step_init},
        {"streams", step_streams},
        {"record", step_record_start},
        {"tensors", step_tensors},
        {"softmax forward", step_softmax_forward},
        {"softmax backward", step_softmax_backward},
        {"nsa forward", step_nsa_forward},
        {"nsa backward", step_nsa_backward},
        {"async", step_async},
        {"host memory", step_host_memory},
        {"vmm", step_vmm},
        {"events", step_events},
        {"results", step_results},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        for (int attempt = 0;; attempt++) {
            failure fl = {NULL, 0};
            if (!steps[i].fn(&fl)) break;
            g_failures++;
            printf("step %s: %s failed with %ld (%s)\n", steps[i].name, fl.api, fl.status, aclGetRecentErrMsg());
            if (!g_from && g_failures > 1) die("%s: a second failure (%ld) after one injected fault", fl.api, fl.status);
            if (attempt == 0) continue; /* retry once */
            give_up(fl.api, fl.status);
        }
    }
    finish();
    printf("RESULT %016llx\n", (unsigned long long)g_hash);
    return 0;
}
