/* Targeted failure tests, run under libfaultinject.so, which this program arms
 * itself (fi_arm) right before the call under test:
 *   - thread-local data: a thread's first error message while malloc fails
 *   - mutex / condition variable creation fails: aclrtCreateStream and
 *     aclrtCreateEvent return 207005 and leave nothing behind (issue 16, row 2)
 *   - the stream's worker thread cannot start: aclrtCreateStream fails (207005)
 *   - aclrtRecordEvent fails: the event stays as it was (row 3); a record
 *     dropped by aclrtDestroyStreamForce releases waiters without a time
 *   - the mmap of aclrtUnmapMem / aclrtMapMem fails, and the registry cannot
 *     grow (for an unmap's split or a new map): an error, the mappings as
 *     they were, capacity not credited (row 4)
 *   - an op's launch runs out of host memory, whichever allocation: 561103
 *   - a cgroup limit that cannot be read now is read again later
 * Exit status 0 iff every check passes. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnn/opdev/op_errno.h"
#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "pyaclnn/pyaclnn_ext.h"

#include "../c/pa_check.h"

static void (*fi_arm)(const char *, long, int);
static void (*fi_disarm)(void);
static long (*fi_injected)(void);
static long (*fi_calls)(const char *);

#define GRAN ((size_t)2 << 20)

/* Arms `func` to fail its `n`th call from now (only that one), runs `call`,
 * and checks the failure was injected and reported with `status` by `api`. */
#define FAIL_NTH(func, n, status, api, call)                                                                     \
    do {                                                                                                         \
        fi_arm(func, n, 0);                                                                                      \
        long rc_ = (long)(call);                                                                                 \
        long inj_ = fi_injected();                                                                               \
        fi_disarm();                                                                                             \
        CHECK_EQ(inj_, 1);                                                                                       \
        CHECK_EQ(rc_, status);                                                                                   \
        CHECK(msg_has(api));                                                                                     \
    } while (0)

static int thread_count(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}
static void hf_sleep(void *arg) { sleep_ms((int)(intptr_t)arg); }

/* ---- a cgroup limit that cannot be read now is read again later ---- */
static void test_limits_reread(void) {
    /* first use of the capacity and the thread count in this process */
    fi_arm("fopen", 1, 1); /* every fopen fails (EMFILE): a passing failure */
    size_t free_b = 0, total = 0;
    CHECK_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total), ACL_SUCCESS);
    CHECK(pyaclnnGetNumThreads() >= 1);
    CHECK(fi_injected() >= 2);
    fi_arm("fopen", 0, 0); /* count, fail nothing */
    size_t total2 = 0;
    CHECK_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total2), ACL_SUCCESS);
    const long mem_reads = fi_calls("fopen");
    CHECK(mem_reads >= 1); /* read again: the failure was not taken for "no limit" */
    CHECK(pyaclnnGetNumThreads() >= 1);
    CHECK(fi_calls("fopen") > mem_reads);
    const long reads = fi_calls("fopen");
    CHECK_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total2), ACL_SUCCESS);
    CHECK(pyaclnnGetNumThreads() >= 1);
    CHECK_EQ(fi_calls("fopen"), reads); /* read successfully once: cached from now on */
    fi_disarm();
    CHECK(total2 > 0 && total2 <= total);
}

/* ---- a thread's first error message while host memory is out ---- */
static void *first_message(void *arg) {
    (void)arg;
    fi_arm("malloc", 1, 1);
    CHECK_EQ(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM); /* the message buffer cannot be malloc'ed */
    fi_disarm();
    CHECK(msg_has("aclrtCreateStream: stream must not be NULL"));
    return NULL;
}

static void test_first_message_without_memory(void) {
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, first_message, NULL), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
}

/* ---- row 2: mutex / condition variable creation ---- */
static void test_sync_init(void) {
    const int threads = thread_count();
    aclrtStream s = NULL;
    aclrtEvent e = NULL;
    FAIL_NTH("pthread_mutex_init", 1, ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "aclrtCreateStream: cannot create a mutex",
             aclrtCreateStream(&s));
    FAIL_NTH("pthread_cond_init", 1, ACL_ERROR_RT_RESOURCE_ALLOC_FAIL,
             "aclrtCreateStream: cannot create a condition variable", aclrtCreateStream(&s));
    FAIL_NTH("pthread_cond_init", 2, ACL_ERROR_RT_RESOURCE_ALLOC_FAIL,
             "aclrtCreateStreamWithConfig: cannot create a condition variable", aclrtCreateStreamWithConfig(&s, 0, 0));
    FAIL_NTH("pthread_create", 1, ACL_ERROR_RT_RESOURCE_ALLOC_FAIL,
             "aclrtCreateStream: cannot start the stream's worker thread", aclrtCreateStream(&s));
    FAIL_NTH("pthread_mutex_init", 1, ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "aclrtCreateEvent: cannot create a mutex",
             aclrtCreateEvent(&e));
    FAIL_NTH("pthread_cond_init", 1, ACL_ERROR_RT_RESOURCE_ALLOC_FAIL,
             "aclrtCreateEventWithFlag: cannot create a condition variable", aclrtCreateEventWithFlag(&e, 0));
    CHECK(s == NULL && e == NULL);
    CHECK_EQ(thread_count(), threads); /* no worker was left running */
    /* the default stream is created on first use, with the same checks */
    FAIL_NTH("pthread_create", 1, ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "aclrtSynchronizeStream",
             aclrtSynchronizeStream(NULL));
    FAIL_NTH("pthread_cond_init", 1, ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "aclrtSynchronizeStream",
             aclrtSynchronizeStream(NULL));
    CHECK_EQ(thread_count(), threads);
    CHECK_EQ(aclrtSynchronizeStream(NULL), ACL_SUCCESS);
    /* retried: a working stream whose timed waits use the right clock */
    CHECK_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    CHECK_EQ(aclrtCreateEvent(&e), ACL_SUCCESS);
    for (int i = 0; i < 10; i++) {
        CHECK_EQ(aclrtLaunchHostFunc(s, hf_sleep, (void *)(intptr_t)2), ACL_SUCCESS);
        CHECK_EQ(aclrtRecordEvent(e, s), ACL_SUCCESS);
        CHECK_EQ(aclrtSynchronizeStreamWithTimeout(s, 5000), ACL_SUCCESS);
        CHECK_EQ(aclrtSynchronizeEventWithTimeout(e, 5000), ACL_SUCCESS);
    }
    CHECK_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
    CHECK_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* ---- row 3: a failed record leaves the event as it was ---- */
static void check_never_recorded(aclrtEvent e, aclrtEvent done) {
    aclrtEventRecordedStatus st;
    CHECK_EQ(aclrtQueryEventStatus(e, &st), ACL_SUCCESS);
    CHECK_EQ(st, ACL_EVENT_RECORDED_STATUS_NOT_READY);
    float ms = 0;
    CHECK_EQ(aclrtEventElapsedTime(&ms, done, e), ACL_ERROR_RT_EVENT_NOT_COMPLETE);
    CHECK_EQ(aclrtEventElapsedTime(&ms, e, done), ACL_ERROR_RT_EVENT_NOT_COMPLETE);
    CHECK_EQ(aclrtSynchronizeEventWithTimeout(e, 1000), ACL_SUCCESS); /* nothing to wait for */
}

static void test_record(void) {
    aclrtStream s, s2;
    aclrtEvent a, b;
    CHECK_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    CHECK_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
    CHECK_EQ(aclrtCreateEvent(&a), ACL_SUCCESS);
    CHECK_EQ(aclrtCreateEvent(&b), ACL_SUCCESS);
    CHECK_EQ(aclrtRecordEvent(a, s), ACL_SUCCESS);
    CHECK_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    /* the record task, then the stream's queue entry */
    for (long k = 1; k <= 2; k++) {
        FAIL_NTH("malloc", k, ACL_ERROR_BAD_ALLOC, "aclrtRecordEvent: out of host memory", aclrtRecordEvent(b, s));
        check_never_recorded(b, a);
        CHECK_EQ(aclrtStreamWaitEvent(s2, b), ACL_SUCCESS); /* nothing to wait for: no hang */
        CHECK_EQ(aclrtSynchronizeStream(s2), ACL_SUCCESS);
    }
    /* retried */
    CHECK_EQ(aclrtRecordEvent(b, s), ACL_SUCCESS);
    CHECK_EQ(aclrtSynchronizeEvent(b), ACL_SUCCESS);
    float t1 = -1, t2 = -1;
    CHECK_EQ(aclrtEventElapsedTime(&t1, a, b), ACL_SUCCESS);
    CHECK(t1 >= 0);
    /* a failed re-record of a recorded event leaves its record and time */
    for (long k = 1; k <= 2; k++) {
        FAIL_NTH("malloc", k, ACL_ERROR_BAD_ALLOC, "aclrtRecordEvent", aclrtRecordEvent(b, s));
        aclrtEventRecordedStatus st;
        CHECK_EQ(aclrtQueryEventStatus(b, &st), ACL_SUCCESS);
        CHECK_EQ(st, ACL_EVENT_RECORDED_STATUS_COMPLETE);
        CHECK_EQ(aclrtEventElapsedTime(&t2, a, b), ACL_SUCCESS);
        CHECK(t2 == t1);
    }
    /* a queued record dropped by a forced destroy: waiters go, no time is made up */
    aclrtStream s3;
    aclrtEvent c;
    CHECK_EQ(aclrtCreateStream(&s3), ACL_SUCCESS);
    CHECK_EQ(aclrtCreateEvent(&c), ACL_SUCCESS);
    CHECK_EQ(aclrtLaunchHostFunc(s3, hf_sleep, (void *)(intptr_t)300), ACL_SUCCESS);
    CHECK_EQ(aclrtRecordEvent(c, s3), ACL_SUCCESS);
    CHECK_EQ(aclrtStreamWaitEvent(s2, c), ACL_SUCCESS);
    sleep_ms(20); /* the host function is running; the record is queued behind it */
    CHECK_EQ(aclrtDestroyStreamForce(s3), ACL_SUCCESS);
    CHECK_EQ(aclrtSynchronizeEvent(c), ACL_SUCCESS);
    CHECK_EQ(aclrtSynchronizeStream(s2), ACL_SUCCESS);
    check_never_recorded(c, a);
    CHECK_EQ(aclrtDestroyEvent(c), ACL_SUCCESS);
    CHECK_EQ(aclrtDestroyEvent(a), ACL_SUCCESS);
    CHECK_EQ(aclrtDestroyEvent(b), ACL_SUCCESS);
    CHECK_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    CHECK_EQ(aclrtDestroyStream(s2), ACL_SUCCESS);
}

/* ---- row 4: virtual memory ---- */
static size_t free_capacity(void) {
    size_t f = 0, t = 0;
    CHECK_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t), ACL_SUCCESS);
    return f;
}

static uint64_t mapped_bytes(void) {
    uint64_t bytes = 0;
    pyaclnnCountMemRanges(3, &bytes);
    return bytes;
}

/* A softmax over x = y = [1,1,4,n] fp32 at p: accepted iff p.. lies in device memory. */
static aclError launch_on(void *p, int64_t n) {
    const int64_t dims[4] = {1, 1, 4, n}, st[4] = {4 * n, 4 * n, n, 1}, md[4] = {1, 1, 4, n},
                  mst[4] = {4 * n, 4 * n, n, 1};
    static unsigned char mask[4 * 1024];
    void *devmask = NULL;
    CHECK_EQ(aclrtMalloc(&devmask, sizeof mask, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK_EQ(aclrtMemcpy(devmask, sizeof mask, mask, sizeof mask, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    aclTensor *x = aclCreateTensor(dims, 4, ACL_FLOAT, st, 0, ACL_FORMAT_ND, dims, 4, p);
    aclTensor *m = aclCreateTensor(md, 4, ACL_BOOL, mst, 0, ACL_FORMAT_ND, md, 4, devmask);
    CHECK(x != NULL && m != NULL);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    CHECK_EQ(aclnnScaledMaskedSoftmaxGetWorkspaceSize(x, m, 1.0, false, x, &ws, &ex), ACL_SUCCESS);
    CHECK_EQ(aclnnScaledMaskedSoftmax(NULL, 0, ex, NULL), ACL_SUCCESS);
    aclError rc = aclrtSynchronizeStream(NULL);
    CHECK_EQ(aclDestroyTensor(x), ACL_SUCCESS);
    CHECK_EQ(aclDestroyTensor(m), ACL_SUCCESS);
    CHECK_EQ(aclrtFree(devmask), ACL_SUCCESS);
    return rc;
}

static void test_vmm(void) {
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof prop);
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    void *va = NULL;
    aclrtDrvMemHandle h = NULL;
    const size_t free0 = free_capacity();
    CHECK_EQ(aclrtReserveMemAddress(&va, 3 * GRAN, 0, NULL, 0), ACL_SUCCESS);
    CHECK_EQ(aclrtMallocPhysical(&h, 3 * GRAN, &prop, 0), ACL_SUCCESS);
    char *c0 = va, *c1 = c0 + GRAN, *c2 = c1 + GRAN;
    /* a failed map maps nothing */
    FAIL_NTH("mmap", 1, ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMapMem", aclrtMapMem(c0, GRAN, 0, h, 0));
    CHECK_EQ(mapped_bytes(), 0);
    CHECK_EQ(aclrtMapMem(c0, GRAN, 0, h, 0), ACL_SUCCESS);
    CHECK_EQ(aclrtMapMem(c1, GRAN, GRAN, h, 0), ACL_SUCCESS);
    CHECK_EQ(aclrtMapMem(c2, GRAN, 2 * GRAN, h, 0), ACL_SUCCESS);
    CHECK_EQ(mapped_bytes(), 3 * GRAN);
    memset(c1, 0x5a, GRAN);
    /* the unmap's mmap fails (e.g. at the process's mapping limit) */
    FAIL_NTH("mmap", 1, ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtUnmapMem: cannot unmap", aclrtUnmapMem(c1));
    CHECK_EQ(mapped_bytes(), 3 * GRAN); /* still tracked, as one range */
    CHECK_EQ(pyaclnnCountMemRanges(3, NULL), 1);
    CHECK(c1[0] == 0x5a && c1[GRAN - 1] == 0x5a); /* still mapped, data intact */
    c1[7] = 1;
    CHECK_EQ(launch_on(c1 - 64, 1024), ACL_SUCCESS); /* still device memory, across the chunks */
    CHECK_EQ(aclrtReleaseMemAddress(va), ACL_ERROR_INVALID_PARAM);
    CHECK(msg_has("still has 3 mapped range(s)"));
    /* the range table cannot grow to split the run: nothing changes either */
    size_t n = pyaclnnCountMemRanges(0, NULL) + pyaclnnCountMemRanges(2, NULL) + pyaclnnCountMemRanges(3, NULL);
    void *blocks[600];
    int nb = 0;
    while (n % 256 != 0 && nb < 600) { /* the table holds 256, 512, ...: fill it up */
        CHECK_EQ(aclrtMalloc(&blocks[nb++], 32, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        n++;
    }
    FAIL_NTH("realloc", 1, ACL_ERROR_BAD_ALLOC, "aclrtUnmapMem: out of host memory", aclrtUnmapMem(c1));
    CHECK_EQ(mapped_bytes(), 3 * GRAN);
    CHECK_EQ(pyaclnnCountMemRanges(3, NULL), 1);
    /* nor to list a new mapping (the table is still full): it is undone, nothing mapped or tracked */
    void *va2 = NULL;
    CHECK_EQ(aclrtReserveMemAddress(&va2, GRAN, 0, NULL, 0), ACL_SUCCESS);
    FAIL_NTH("realloc", 1, ACL_ERROR_BAD_ALLOC, "aclrtMapMem: out of host memory", aclrtMapMem(va2, GRAN, 0, h, 0));
    CHECK_EQ(mapped_bytes(), 3 * GRAN);
    CHECK_EQ(pyaclnnCountMemRanges(3, NULL), 1);
    CHECK_EQ(aclrtReleaseMemAddress(va2), ACL_SUCCESS); /* holds no mapping */
    CHECK_EQ(launch_on(c1 - 64, 1024), ACL_SUCCESS);
    CHECK(c1[GRAN - 1] == 0x5a);
    /* freeing the handle while mapped credits nothing until the last unmap */
    CHECK_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
    CHECK_EQ(free_capacity(), free0 - 3 * GRAN - 64 * (size_t)nb); /* each 32-byte block is charged 64 */
    /* retried */
    CHECK_EQ(aclrtUnmapMem(c1), ACL_SUCCESS);
    CHECK_EQ(pyaclnnCountMemRanges(3, NULL), 2);
    CHECK_EQ(launch_on(c1 - 64, 1024), ACL_ERROR_RT_AICORE_EXCEPTION); /* no longer device memory */
    CHECK_EQ(aclrtUnmapMem(c0), ACL_SUCCESS);
    CHECK_EQ(aclrtUnmapMem(c2), ACL_SUCCESS);
    for (int i = 0; i < nb; i++) CHECK_EQ(aclrtFree(blocks[i]), ACL_SUCCESS);
    CHECK_EQ(free_capacity(), free0);
    CHECK_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
}

/* ---- an op's launch out of host memory: 561103 whichever allocation failed ---- */
static void test_launch(void) {
    void *p = NULL;
    CHECK_EQ(aclrtMalloc(&p, 4 * 64 * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK_EQ(aclrtMemset(p, 4 * 64 * 4, 0, 4 * 64 * 4), ACL_SUCCESS);
    const int64_t dims[4] = {1, 1, 4, 64};
    aclTensor *x = aclCreateTensor(dims, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 4, p);
    aclTensor *m = aclCreateTensor(dims, 4, ACL_BOOL, NULL, 0, ACL_FORMAT_ND, dims, 4, p);
    aclTensor *y = aclCreateTensor(dims, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 4, p);
    CHECK(x != NULL && m != NULL && y != NULL);
    aclrtStream s;
    CHECK_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    for (long k = 1; k <= 2; k++) { /* the launch task, then the stream's queue entry */
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        CHECK_EQ(aclnnScaledMaskedSoftmaxGetWorkspaceSize(x, m, 1.0, false, y, &ws, &ex), ACL_SUCCESS);
        FAIL_NTH("malloc", k, ACLNN_ERR_INNER_NULLPTR, "aclnnScaledMaskedSoftmax: ", aclnnScaledMaskedSoftmax(NULL, 0, ex, s));
        CHECK(msg_has("out of host memory"));
        /* the executor was spent by the launch, either way */
        CHECK_EQ(aclnnScaledMaskedSoftmax(NULL, 0, ex, s), ACLNN_ERR_PARAM_INVALID);
        CHECK(msg_has("already used"));
    }
    for (long k = 1; k <= 2; k++) { /* the executor, its registry */
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        fi_arm(k == 1 ? "malloc" : "calloc", 1, 0);
        aclnnStatus rc = aclnnScaledMaskedSoftmaxGetWorkspaceSize(x, m, 1.0, false, y, &ws, &ex);
        long inj = fi_injected();
        fi_disarm();
        if (inj == 1) { /* the registry is allocated only once per process */
            CHECK_EQ(rc, ACLNN_ERR_INNER_CREATE_EXECUTOR);
            CHECK(msg_has("aclnnScaledMaskedSoftmaxGetWorkspaceSize: out of host memory"));
        } else {
            CHECK_EQ(rc, ACLNN_SUCCESS);
            CHECK_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
        }
    }
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    CHECK_EQ(aclnnScaledMaskedSoftmaxGetWorkspaceSize(x, m, 1.0, false, y, &ws, &ex), ACL_SUCCESS);
    CHECK_EQ(aclnnScaledMaskedSoftmax(NULL, 0, ex, s), ACL_SUCCESS);
    CHECK_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    CHECK_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    CHECK_EQ(aclDestroyTensor(x), ACL_SUCCESS);
    CHECK_EQ(aclDestroyTensor(m), ACL_SUCCESS);
    CHECK_EQ(aclDestroyTensor(y), ACL_SUCCESS);
    CHECK_EQ(aclrtFree(p), ACL_SUCCESS);
}

typedef struct {
    const char *name;
    void (*fn)(void);
} test;

/* fi_rows [NAME...]: the named tests only (default: all, in this order). */
int main(int argc, char **argv) {
    *(void **)&fi_arm = dlsym(RTLD_DEFAULT, "fi_arm");
    *(void **)&fi_disarm = dlsym(RTLD_DEFAULT, "fi_disarm");
    *(void **)&fi_injected = dlsym(RTLD_DEFAULT, "fi_injected");
    *(void **)&fi_calls = dlsym(RTLD_DEFAULT, "fi_calls");
    if (fi_arm == NULL || fi_disarm == NULL || fi_injected == NULL || fi_calls == NULL) {
        fprintf(stderr, "fi_rows: run with LD_PRELOAD=libfaultinject.so\n");
        return 2;
    }
    fi_disarm();
    CHECK_EQ(aclInit(NULL), ACL_SUCCESS);
    CHECK_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    const test tests[] = {
        {"limits", test_limits_reread}, /* first: the first use of the limits in this process */
        {"message", test_first_message_without_memory},
        {"sync-init", test_sync_init},
        {"record", test_record},
        {"vmm", test_vmm},
        {"launch", test_launch},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        bool run = argc < 2;
        for (int a = 1; a < argc; a++) run = run || strcmp(argv[a], tests[i].name) == 0;
        if (!run) continue;
        if (i == 2) CHECK_EQ(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM); /* this thread's message buffer */
        tests[i].fn();
        printf("%-10s ok\n", tests[i].name);
    }
    CHECK_EQ(aclrtResetDevice(0), ACL_SUCCESS);
    CHECK_EQ(aclFinalize(), ACL_SUCCESS);
    printf("fi_rows: %d checks passed\n", (int)g_checks);
    return 0;
}
