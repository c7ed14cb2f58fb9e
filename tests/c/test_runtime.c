/* Tests of the AscendCL runtime through the public API (libascendcl.so):
 * init/finalize, devices, contexts, memory, streams, events, callbacks and
 * the pyaclnn extension API. Plain C; exits 1 on the first failure. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"
#include "pyaclnn/pyaclnn_ext.h"

#include "pa_check.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- host functions used as stream tasks ---- */

static void hf_sleep(void *arg) { sleep_ms((int)(intptr_t)arg); }

typedef struct {
    int sleep;
    volatile int *flag;
    int value;
} set_flag_arg;

static void hf_sleep_then_set(void *p) {
    set_flag_arg *a = p;
    sleep_ms(a->sleep);
    __atomic_store_n(a->flag, a->value, __ATOMIC_SEQ_CST);
}

typedef struct {
    volatile int *flag;
    int seen;
} read_flag_arg;

static void hf_read_flag(void *p) {
    read_flag_arg *a = p;
    a->seen = __atomic_load_n(a->flag, __ATOMIC_SEQ_CST);
}

static void hf_append(void *p) {
    int *log = p; /* log[0] = count, then entries */
    log[1 + log[0]] = log[0];
    log[0]++;
}

static int g_cb_count;
static void cb_count(void *p) {
    (void)p;
    __atomic_add_fetch(&g_cb_count, 1, __ATOMIC_SEQ_CST);
}

/* ------------------------------------------------------------------------- */

static void test_init_finalize(void) {
    /* Very first calls of the process. */
    CHECK_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE);
    CHECK(msg_has("aclFinalize"));
    CHECK_EQ(aclInit("/nonexistent/dir/acl.json"), ACL_ERROR_INVALID_FILE);
    CHECK(msg_has("configPath"));
    CHECK_OK(aclInit(NULL));
    CHECK_EQ(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
    CHECK(msg_has("aclInit"));
    CHECK_OK(aclFinalize());
    CHECK_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
    /* re-init after finalize is allowed; "" means no config; an existing file is fine */
    CHECK_OK(aclInit(""));
    CHECK_OK(aclFinalize());
    char path[] = "/tmp/pa_acl_cfg_XXXXXX";
    FILE *f = fdopen(mkstemp(path), "w");
    CHECK(f != NULL);
    fputs("{}", f);
    fclose(f);
    CHECK_OK(aclInit(path));
    remove(path);

    int32_t ma = 0, mi = 0, pa = -1;
    CHECK_OK(aclrtGetVersion(&ma, &mi, &pa));
    CHECK(ma == 1 && mi == 15 && pa == 0); /* ACL 1.15: CANN 8.3.RC1 */
    CHECK_EQ(aclrtGetVersion(NULL, &mi, &pa), ACL_ERROR_INVALID_PARAM);
}

static void test_device(void) {
    void *p = NULL;
    int32_t dev = -1;
    aclrtStream s = NULL;
    aclrtEvent ev = NULL;
    aclrtContext ctx = NULL;
    /* nothing works before aclrtSetDevice */
    CHECK_EQ(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK(msg_has("aclrtSetDevice"));
    CHECK_EQ(aclrtCreateStream(&s), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_EQ(aclrtCreateEvent(&ev), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_EQ(aclrtLaunchHostFunc(NULL, hf_sleep, (void *)(intptr_t)0), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_EQ(aclrtGetCurrentContext(&ctx), ACL_ERROR_RT_CONTEXT_NULL);

    CHECK_EQ(aclrtSetDevice(1), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK(msg_has("deviceId 1"));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtGetDevice(&dev));
    CHECK_EQ(dev, 0);
    uint32_t count = 0;
    CHECK_OK(aclrtGetDeviceCount(&count));
    CHECK_EQ(count, 1);
    aclrtRunMode mode = ACL_DEVICE;
    CHECK_OK(aclrtGetRunMode(&mode));
    CHECK_EQ(mode, ACL_HOST);
    CHECK(aclrtGetSocName() != NULL && aclrtGetSocName()[0] != '\0');

    int64_t v = 0;
    CHECK_OK(aclGetDeviceCapability(0, ACL_DEVICE_INFO_AI_CORE_NUM, &v));
    CHECK(v >= 1);
    CHECK_EQ(v, pyaclnnGetNumThreads());
    CHECK_OK(aclGetDeviceCapability(0, ACL_DEVICE_INFO_VECTOR_CORE_NUM, &v));
    CHECK(v >= 1);
    CHECK_OK(aclGetDeviceCapability(0, ACL_DEVICE_INFO_L2_SIZE, &v));
    CHECK(v >= 0);
    CHECK_EQ(aclGetDeviceCapability(3, ACL_DEVICE_INFO_AI_CORE_NUM, &v), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_EQ(aclGetDeviceCapability(0, (aclDeviceInfo)7, &v), ACL_ERROR_INVALID_PARAM);

    size_t fr = 0, tot = 0;
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &fr, &tot));
    CHECK(tot > 0 && fr <= tot);
    CHECK_EQ(aclrtGetMemInfo((aclrtMemAttr)99, &fr, &tot), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtSynchronizeDevice());
    CHECK_OK(aclrtSynchronizeDeviceWithTimeout(100));

    /* contexts */
    CHECK_OK(aclrtGetCurrentContext(&ctx));
    CHECK(ctx != NULL);
    aclrtContext c2 = NULL;
    CHECK_OK(aclrtCreateContext(&c2, 0));
    aclrtContext cur = NULL;
    CHECK_OK(aclrtGetCurrentContext(&cur));
    CHECK(cur == c2);
    CHECK_EQ(aclrtSetCurrentContext(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1));
    CHECK_OK(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v));
    CHECK_EQ(v, 1);
    CHECK_OK(aclrtSetCurrentContext(ctx));
    CHECK_OK(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v));
    CHECK_EQ(v, 0); /* default context: never set */
    CHECK_OK(aclrtDestroyContext(c2));
    CHECK_EQ(aclrtDestroyContext(c2), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclrtSetCurrentContext(c2), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtGetDevice(&dev)); /* the device is still set (aclrtSetDevice reference) */

    CHECK_OK(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v));
    CHECK_EQ(v, 0);
    CHECK_OK(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1));
    CHECK_OK(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v));
    CHECK_EQ(v, 1);
    CHECK_EQ(aclrtSetSysParamOpt((aclSysParamOpt)9, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 7), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0));

    /* last error */
    (void)aclrtGetLastError(ACL_RT_THREAD_LEVEL);
    CHECK_EQ(aclrtSetDevice(5), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_EQ(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_EQ(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_EQ(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_SUCCESS);
}

static void test_memory(void) {
    void *p = NULL;
    CHECK_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK(msg_has("aclrtMalloc") && msg_has("size"));
    CHECK_EQ(aclrtMalloc(NULL, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtMalloc(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(p != NULL && ((uintptr_t)p % 64) == 0);
    memset(p, 0xab, 100 + 28 + 32); /* round_up(100,32)+32 = 160 bytes are usable */
    CHECK_OK(aclrtFree(p));
    CHECK_EQ(aclrtFree(p), ACL_ERROR_INVALID_PARAM);
    CHECK(msg_has("double free"));
    int local = 0;
    CHECK_EQ(aclrtFree(&local), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtMallocAlign32(&p, 33, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK_OK(aclrtFree(p));
    CHECK_OK(aclrtMallocCached(&p, 1, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtFree(p));

    /* thousands of live allocations, freed in a different order */
    enum { N = 5000 };
    void **ptrs = malloc(N * sizeof *ptrs);
    CHECK(ptrs != NULL);
    for (int i = 0; i < N; i++) CHECK_OK(aclrtMalloc(&ptrs[i], (size_t)(i % 97 + 1) * 8, ACL_MEM_MALLOC_HUGE_FIRST));
    for (int i = 0; i < N; i += 2) CHECK_OK(aclrtFree(ptrs[i]));
    for (int i = 1; i < N; i += 2) CHECK_OK(aclrtFree(ptrs[i]));
    for (int i = 0; i < N; i += 500) CHECK_EQ(aclrtFree(ptrs[i]), ACL_ERROR_INVALID_PARAM);
    free(ptrs);

    /* host memory: a separate table */
    void *h = NULL;
    CHECK_EQ(aclrtMallocHost(&h, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtMallocHost(&h, 256));
    CHECK_EQ(aclrtFree(h), ACL_ERROR_INVALID_PARAM); /* not a device allocation */
    CHECK_OK(aclrtFreeHost(h));
    CHECK_EQ(aclrtFreeHost(h), ACL_ERROR_INVALID_PARAM);

    /* memcpy / memset checks */
    char src[4096], dst[4096];
    for (int i = 0; i < 4096; i++) src[i] = (char)i;
    CHECK_EQ(aclrtMemcpy(dst, 1024, src, 4096, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);
    CHECK(msg_has("count (4096) exceeds destMax (1024)"));
    CHECK_EQ(aclrtMemcpy(NULL, 16, src, 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclrtMemcpy(dst, 16, NULL, 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclrtMemcpy(dst, 16, src, 16, (aclrtMemcpyKind)8), ACL_ERROR_INVALID_PARAM);
    CHECK(msg_has("kind"));
    CHECK_OK(aclrtMemcpy(NULL, 0, NULL, 0, ACL_MEMCPY_DEVICE_TO_HOST));
    void *d = NULL;
    CHECK_OK(aclrtMalloc(&d, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemcpy(d, 4096, src, 4096, ACL_MEMCPY_HOST_TO_DEVICE));
    memset(dst, 0, sizeof dst);
    CHECK_OK(aclrtMemcpy(dst, sizeof dst, d, 4096, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(memcmp(src, dst, 4096) == 0);
    CHECK_EQ(aclrtMemset(d, 10, 1, 11), ACL_ERROR_INVALID_PARAM);
    CHECK(msg_has("maxCount"));
    CHECK_OK(aclrtMemset(d, 4096, 0x7f, 4096));
    CHECK_OK(aclrtMemcpy(dst, sizeof dst, d, 4096, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < 4096; i++) CHECK_EQ(dst[i], 0x7f);

    /* 2d copy: 3 rows of 4 bytes from pitch 8 to pitch 5 */
    char s2[24], d2[15];
    for (int i = 0; i < 24; i++) s2[i] = (char)i;
    memset(d2, 0, sizeof d2);
    CHECK_OK(aclrtMemcpy2d(d2, 5, s2, 8, 4, 3, ACL_MEMCPY_HOST_TO_HOST));
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++) CHECK_EQ(d2[r * 5 + c], s2[r * 8 + c]);
    CHECK_EQ(aclrtMemcpy2d(d2, 3, s2, 8, 4, 3, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);

    /* async copy + synchronise */
    aclrtStream s;
    CHECK_OK(aclrtCreateStream(&s));
    void *d3 = NULL;
    CHECK_OK(aclrtMalloc(&d3, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_EQ(aclrtMemcpyAsync(d3, 100, src, 4096, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtMemsetAsync(d3, 4096, 0, 4096, s));
    CHECK_OK(aclrtMemcpyAsync(d3, 4096, src, 2048, ACL_MEMCPY_HOST_TO_DEVICE, s));
    CHECK_OK(aclrtMemcpyAsync(dst, 4096, d3, 4096, ACL_MEMCPY_DEVICE_TO_HOST, s));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK(memcmp(dst, src, 2048) == 0);
    for (int i = 2048; i < 4096; i++) CHECK_EQ(dst[i], 0);
    /* the default (NULL) stream works too */
    CHECK_OK(aclrtMemsetAsync(d3, 4096, 5, 4096, NULL));
    CHECK_OK(aclrtMemcpyAsync(dst, 4096, d3, 4096, ACL_MEMCPY_DEVICE_TO_HOST, NULL));
    CHECK_OK(aclrtSynchronizeStream(NULL));
    for (int i = 0; i < 4096; i++) CHECK_EQ(dst[i], 5);
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtFree(d));
    CHECK_OK(aclrtFree(d3));
}

static void test_streams(void) {
    aclrtStream s, s2;
    CHECK_EQ(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtCreateStreamWithConfig(&s2, 0, ACL_STREAM_FAST_LAUNCH));

    /* a launch returns at once and the stream reports NOT_READY meanwhile */
    aclrtStreamStatus st = ACL_STREAM_STATUS_COMPLETE;
    double t0 = now_ms();
    /* 300 ms of work leaves a wide margin on a loaded machine for the checks below */
    CHECK_OK(aclrtLaunchHostFunc(s, hf_sleep, (void *)(intptr_t)300));
    double t1 = now_ms();
    CHECK(t1 - t0 < 100.0);
    CHECK_OK(aclrtStreamQuery(s, &st));
    CHECK_EQ(st, ACL_STREAM_STATUS_NOT_READY);
    /* synchronise with a 1 ms timeout on the busy stream */
    CHECK_EQ(aclrtSynchronizeStreamWithTimeout(s, 1), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    CHECK_EQ(aclrtSynchronizeStreamWithTimeout(s, 0), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    CHECK_EQ(aclrtSynchronizeDeviceWithTimeout(1), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    CHECK_EQ(aclrtSynchronizeStreamWithTimeout(s, -5), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtSynchronizeStreamWithTimeout(s, -1));
    CHECK(now_ms() - t0 >= 295.0);
    CHECK_OK(aclrtStreamQuery(s, &st));
    CHECK_EQ(st, ACL_STREAM_STATUS_COMPLETE);

    /* FIFO order */
    int log[1 + 64] = {0};
    for (int i = 0; i < 64; i++) CHECK_OK(aclrtLaunchHostFunc(s, hf_append, log));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_EQ(log[0], 64);
    for (int i = 0; i < 64; i++) CHECK_EQ(log[1 + i], i);

    /* callbacks (subscription is a no-op: they run on the stream worker) */
    CHECK_OK(aclrtSubscribeReport(12345, s));
    g_cb_count = 0;
    for (int i = 0; i < 10; i++) CHECK_OK(aclrtLaunchCallback(cb_count, NULL, ACL_CALLBACK_BLOCK, s));
    CHECK_EQ(aclrtLaunchCallback(cb_count, NULL, (aclrtCallbackBlockType)3, s), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclrtLaunchCallback(NULL, NULL, ACL_CALLBACK_BLOCK, s), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtProcessReport(1));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_EQ(g_cb_count, 10);
    CHECK_OK(aclrtUnSubscribeReport(12345, s));

    /* destroy waits for queued work */
    volatile int flag = 0;
    set_flag_arg sa = {30, &flag, 7};
    CHECK_OK(aclrtLaunchHostFunc(s2, hf_sleep_then_set, &sa));
    CHECK_OK(aclrtDestroyStream(s2));
    CHECK_EQ(flag, 7);
    /* stale handles are reported, not dereferenced */
    CHECK_EQ(aclrtDestroyStream(s2), ACL_ERROR_INVALID_PARAM);
    CHECK(msg_has("not a live stream"));
    CHECK_EQ(aclrtSynchronizeStream(s2), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclrtLaunchHostFunc(s2, hf_sleep, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclrtDestroyStream(NULL), ACL_ERROR_INVALID_PARAM);

    /* force destroy drops queued work */
    aclrtStream s3;
    CHECK_OK(aclrtCreateStream(&s3));
    flag = 0;
    CHECK_OK(aclrtLaunchHostFunc(s3, hf_sleep, (void *)(intptr_t)20));
    set_flag_arg sb = {0, &flag, 9};
    for (int i = 0; i < 5; i++) CHECK_OK(aclrtLaunchHostFunc(s3, hf_sleep_then_set, &sb));
    CHECK_OK(aclrtDestroyStreamForce(s3));
    CHECK(flag == 0 || flag == 9); /* whatever ran, ran completely; no hang */

    /* many streams at once */
    enum { NS = 16 };
    aclrtStream ss[NS];
    int logs[NS][1 + 8];
    memset(logs, 0, sizeof logs);
    for (int i = 0; i < NS; i++) CHECK_OK(aclrtCreateStream(&ss[i]));
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < NS; i++) CHECK_OK(aclrtLaunchHostFunc(ss[i], hf_append, logs[i]));
    CHECK_OK(aclrtSynchronizeDevice());
    for (int i = 0; i < NS; i++) {
        CHECK_EQ(logs[i][0], 8);
        CHECK_OK(aclrtDestroyStream(ss[i]));
    }
    CHECK_OK(aclrtDestroyStream(s));
}

/* aclrtQueryEvent is deprecated (as in CANN), but its behaviour is still tested. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void test_events(void) {
    aclrtStream a, b;
    CHECK_OK(aclrtCreateStream(&a));
    CHECK_OK(aclrtCreateStream(&b));
    aclrtEvent e0, e1, e2;
    CHECK_OK(aclrtCreateEvent(&e0));
    CHECK_OK(aclrtCreateEventWithFlag(&e1, ACL_EVENT_TIME_LINE));
    CHECK_OK(aclrtCreateEventExWithFlag(&e2, ACL_EVENT_SYNC));

    /* a never-recorded event: nothing to wait for, no completed record */
    aclrtEventRecordedStatus rs = ACL_EVENT_RECORDED_STATUS_COMPLETE;
    aclrtEventStatus es = ACL_EVENT_STATUS_NOT_READY;
    CHECK_OK(aclrtQueryEventStatus(e0, &rs));
    CHECK_EQ(rs, ACL_EVENT_RECORDED_STATUS_NOT_READY);
    CHECK_OK(aclrtQueryEvent(e0, &es));
    CHECK_EQ(es, ACL_EVENT_STATUS_COMPLETE);
    CHECK_OK(aclrtSynchronizeEvent(e0));
    float ms = -1.0f;
    CHECK_EQ(aclrtEventElapsedTime(&ms, e0, e1), ACL_ERROR_RT_EVENT_NOT_COMPLETE);

    /* elapsed time around a 20 ms host function */
    CHECK_OK(aclrtRecordEvent(e0, a));
    CHECK_OK(aclrtLaunchHostFunc(a, hf_sleep, (void *)(intptr_t)20));
    CHECK_OK(aclrtRecordEvent(e1, a));
    CHECK_OK(aclrtQueryEventStatus(e1, &rs));
    CHECK_EQ(rs, ACL_EVENT_RECORDED_STATUS_NOT_READY);
    CHECK_OK(aclrtQueryEvent(e1, &es));
    CHECK_EQ(es, ACL_EVENT_STATUS_NOT_READY);
    CHECK_EQ(aclrtSynchronizeEventWithTimeout(e1, 1), ACL_ERROR_RT_EVENT_SYNC_TIMEOUT);
    CHECK_OK(aclrtSynchronizeEvent(e1));
    CHECK_OK(aclrtQueryEventStatus(e1, &rs));
    CHECK_EQ(rs, ACL_EVENT_RECORDED_STATUS_COMPLETE);
    CHECK_OK(aclrtQueryEvent(e1, &es));
    CHECK_EQ(es, ACL_EVENT_STATUS_COMPLETE);
    CHECK_OK(aclrtEventElapsedTime(&ms, e0, e1));
    CHECK(ms >= 15.0f && ms < 5000.0f);
    CHECK_EQ(aclrtEventElapsedTime(NULL, e0, e1), ACL_ERROR_INVALID_PARAM);

    /* re-recording resets to not-ready until the new record runs */
    CHECK_OK(aclrtLaunchHostFunc(a, hf_sleep, (void *)(intptr_t)20));
    CHECK_OK(aclrtRecordEvent(e1, a));
    CHECK_OK(aclrtQueryEventStatus(e1, &rs));
    CHECK_EQ(rs, ACL_EVENT_RECORDED_STATUS_NOT_READY);
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK_OK(aclrtQueryEventStatus(e1, &rs));
    CHECK_EQ(rs, ACL_EVENT_RECORDED_STATUS_COMPLETE);
    CHECK_OK(aclrtResetEvent(e1, a));
    CHECK_OK(aclrtQueryEventStatus(e1, &rs));
    CHECK_EQ(rs, ACL_EVENT_RECORDED_STATUS_NOT_READY);

    /* cross-stream ordering: B waits on an event recorded on A after a 30 ms task */
    volatile int flag = 0;
    set_flag_arg sa = {30, &flag, 42};
    read_flag_arg rb = {&flag, -1};
    CHECK_OK(aclrtLaunchHostFunc(a, hf_sleep_then_set, &sa));
    CHECK_OK(aclrtRecordEvent(e2, a));
    CHECK_OK(aclrtStreamWaitEvent(b, e2));
    CHECK_OK(aclrtLaunchHostFunc(b, hf_read_flag, &rb));
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK_EQ(rb.seen, 42);
    CHECK_OK(aclrtSynchronizeStream(a));
    /* waiting on a never-recorded event does not block */
    aclrtEvent e3;
    CHECK_OK(aclrtCreateEvent(&e3));
    CHECK_OK(aclrtStreamWaitEvent(b, e3));
    CHECK_OK(aclrtSynchronizeStreamWithTimeout(b, 1000));
    /* a wait on the default stream */
    flag = 0;
    rb.seen = -1;
    CHECK_OK(aclrtLaunchHostFunc(a, hf_sleep_then_set, &sa));
    CHECK_OK(aclrtRecordEvent(e3, a));
    CHECK_OK(aclrtStreamWaitEvent(NULL, e3));
    CHECK_OK(aclrtLaunchHostFunc(NULL, hf_read_flag, &rb));
    CHECK_OK(aclrtSynchronizeStream(NULL));
    CHECK_EQ(rb.seen, 42);

    /* no event: work on a created stream runs after the default stream's work queued
     * before it (ggml-cann's TransMatmulWeight on NULL, then its own stream) */
    flag = 0;
    rb.seen = -1;
    CHECK_OK(aclrtLaunchHostFunc(NULL, hf_sleep_then_set, &sa));
    CHECK_OK(aclrtLaunchHostFunc(b, hf_read_flag, &rb));
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK_EQ(rb.seen, 42);
    CHECK_OK(aclrtSynchronizeStream(NULL));
    /* and not the other way round: the default stream does not wait for b */
    flag = 0;
    rb.seen = -1;
    set_flag_arg late = {200, &flag, 7};
    CHECK_OK(aclrtLaunchHostFunc(b, hf_sleep_then_set, &late));
    CHECK_OK(aclrtLaunchHostFunc(NULL, hf_read_flag, &rb));
    CHECK_OK(aclrtSynchronizeStream(NULL));
    CHECK_EQ(rb.seen, 0);
    CHECK_OK(aclrtSynchronizeStream(b));

    /* destroy; stale handles */
    CHECK_OK(aclrtDestroyEvent(e3));
    CHECK_EQ(aclrtDestroyEvent(e3), ACL_ERROR_INVALID_PARAM);
    CHECK(msg_has("not a live event"));
    CHECK_EQ(aclrtRecordEvent(e3, a), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclrtQueryEventStatus(e3, &rs), ACL_ERROR_INVALID_PARAM);
    /* destroying an event with a pending record is safe */
    CHECK_OK(aclrtLaunchHostFunc(a, hf_sleep, (void *)(intptr_t)10));
    CHECK_OK(aclrtRecordEvent(e0, a));
    CHECK_OK(aclrtDestroyEvent(e0));
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK_OK(aclrtDestroyEvent(e1));
    CHECK_OK(aclrtDestroyEvent(e2));
    CHECK_OK(aclrtDestroyStream(a));
    CHECK_OK(aclrtDestroyStream(b));
}
#pragma GCC diagnostic pop

static void test_reset_teardown(void) {
    /* reset drains and destroys streams; their handles become stale */
    aclrtStream s;
    CHECK_OK(aclrtCreateStream(&s));
    volatile int flag = 0;
    set_flag_arg sa = {20, &flag, 3};
    CHECK_OK(aclrtLaunchHostFunc(s, hf_sleep_then_set, &sa));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_EQ(flag, 3);
    CHECK_EQ(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM);
    void *p = NULL;
    CHECK_EQ(aclrtMalloc(&p, 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_EQ(aclrtSynchronizeStream(NULL), ACL_ERROR_RT_CONTEXT_NULL);
    /* set again: everything works again */
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtSetDevice(0)); /* reference counted */
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclrtMalloc(&p, 8, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtFree(p));
    CHECK_OK(aclrtResetDeviceForce(0));
    CHECK_EQ(aclrtMalloc(&p, 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_OK(aclrtSetDevice(0));
}

static void test_ext(void) {
    const char *info = pyaclnnGetRuntimeInfo();
    CHECK(info != NULL && info[0] == '{' && strstr(info, "\"isa\"") && strstr(info, "\"num_threads\""));
    const char *isa = pyaclnnGetIsa();
    CHECK(isa != NULL);
    CHECK_EQ(pyaclnnSetMaxIsa("bogus"), ACL_ERROR_INVALID_PARAM);
    CHECK(msg_has("pyaclnnSetMaxIsa"));
    CHECK_OK(pyaclnnSetMaxIsa("scalar"));
    CHECK(strcmp(pyaclnnGetIsa(), "scalar") == 0);
    CHECK(strstr(pyaclnnGetRuntimeInfo(), "\"isa\":\"scalar\"") != NULL);
    CHECK_OK(pyaclnnSetMaxIsa(NULL));
    CHECK_EQ(pyaclnnSetNumThreads(-1), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(pyaclnnSetNumThreads(3));
    CHECK_EQ(pyaclnnGetNumThreads(), 3);
    CHECK(strstr(pyaclnnGetRuntimeInfo(), "\"num_threads\":3") != NULL);
    CHECK_OK(pyaclnnSetNumThreads(0));
    CHECK(pyaclnnGetNumThreads() >= 1);
}

static void test_misc(void) {
    CHECK_EQ(aclDataTypeSize(ACL_FLOAT), 4);
    CHECK_EQ(aclDataTypeSize(ACL_FLOAT16), 2);
    CHECK_EQ(aclDataTypeSize(ACL_BF16), 2);
    CHECK_EQ(aclDataTypeSize(ACL_INT64), 8);
    CHECK(aclFloat16ToFloat(0x3c00) == 1.0f);
    CHECK_EQ(aclFloatToFloat16(1.0f), 0x3c00);
    CHECK_EQ(aclFloatToFloat16(-2.0f), 0xc000);
    aclAppLog(ACL_DEBUG, __func__, __FILE__, __LINE__, "not shown at the default level (%d)", 1);
}

int main(void) {
    test_init_finalize();
    test_device();
    test_memory();
    test_streams();
    test_events();
    test_reset_teardown();
    test_ext();
    test_misc();
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    printf("test_runtime: %d checks passed\n", g_checks);
    return 0;
}
