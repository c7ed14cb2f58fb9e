/* Status codes as macros (switch / #ifdef), both softmax-backward include
 * paths in one program, the virtual-memory API (round trip, a growing pool,
 * launches on a chunk while another thread maps its neighbours, every error
 * path), and the device-memory capacity.
 * Plain C; exits 1 on the first failure. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"
#include "aclnnop/level2/aclnn_scaled_masked_softmax_backward.h"

#include "pa_check.h"

#if !defined(ACL_ERROR_RT_MEMORY_ALLOCATION) || !defined(ACL_RT_SUCCESS) || !defined(ACL_ERROR_RT_PARAM_INVALID)
#error "runtime status codes must be macros"
#endif
#if ACL_ERROR_RT_MEMORY_ALLOCATION != 207001 || ACL_ERROR_RT_CDQ_BATCH_ABNORMAL != 507037 || \
    ACL_ERROR_RT_CAPTURE_DEPENDENCY != 107024 || ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED != 507903
#error "runtime status code values differ from CANN's"
#endif

#define MIB ((size_t)1 << 20)

static int classify(aclError rc) {
    switch (rc) {
    case ACL_RT_SUCCESS: return 0;
    case ACL_ERROR_RT_PARAM_INVALID: return 1;
    case ACL_ERROR_RT_MEMORY_ALLOCATION: return 2;
    case ACL_ERROR_RT_INVALID_DEVICEID: return 3;
    default: return -1;
    }
}

static void test_status_macros(void) {
    CHECK_EQ(classify(0), 0);
    CHECK_EQ(classify(107000), 1);
    CHECK_EQ(classify(207001), 2);
    CHECK_EQ(classify(aclrtSetDevice(9)), 3);
    CHECK_EQ(classify(507053), -1);
    CHECK_EQ(ACL_ERROR_GE_REDEPLOYING, 545602);
}

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static aclrtPhysicalMemProp device_prop(void) {
    aclrtPhysicalMemProp p;
    memset(&p, 0, sizeof p);
    p.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    p.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    p.memAttr = ACL_HBM_MEM_HUGE;
    p.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    return p;
}

/* Runs the softmax backward on rows x cols float32 tensors at the given addresses. */
static void run_softmax(void *dy, void *y, void *mask, void *out, int64_t rows, int64_t cols, aclrtStream s) {
    int64_t shape[4] = {1, 1, rows, cols}, strides[4] = {rows * cols, rows * cols, cols, 1};
    aclTensor *t_dy = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, dy);
    aclTensor *t_y = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, y);
    aclTensor *t_m = aclCreateTensor(shape, 4, ACL_BOOL, strides, 0, ACL_FORMAT_ND, shape, 4, mask);
    aclTensor *t_o = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, out);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(t_dy, t_y, t_m, 2.0, false, t_o, &ws, &ex), 0);
    CHECK_EQ(ws, 0);
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, s), 0);
    CHECK_OK(aclrtSynchronizeStream(s));
    aclDestroyTensor(t_dy);
    aclDestroyTensor(t_y);
    aclDestroyTensor(t_m);
    aclDestroyTensor(t_o);
}

/* Reserve, create, map twice, write through one mapping, read through the
 * other, run an op on the mapped range, unmap, release, free. */
static void test_vmm_round_trip(aclrtStream s) {
    aclrtPhysicalMemProp prop = device_prop();
    size_t g = 0;
    CHECK_OK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g));
    CHECK_EQ(g, 2 * MIB);
    size_t free0 = 0, total = 0;
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free0, &total));

    void *a = NULL, *b = NULL;
    CHECK_OK(aclrtReserveMemAddress(&a, 4 * g, 0, NULL, 0));
    CHECK_OK(aclrtReserveMemAddress(&b, g, 0, NULL, 1));
    CHECK(a != NULL && b != NULL && (uintptr_t)a % g == 0 && (uintptr_t)b % g == 0);
    aclrtDrvMemHandle h = NULL;
    CHECK_OK(aclrtMallocPhysical(&h, g + 1, &prop, 0)); /* rounded up to 2 granules */
    size_t free1 = 0;
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total));
    CHECK_EQ(free0 - free1, 2 * g);

    CHECK_OK(aclrtMapMem(a, 2 * g, 0, h, 0));
    CHECK_OK(aclrtMapMem(b, g, g, h, 0)); /* the second granule again, elsewhere */
    const size_t n = g / sizeof(float);
    float *fa = a, *fb = b;
    for (size_t i = 0; i < n; i++) fa[n + i] = (float)i;         /* write through a */
    CHECK(fb[0] == 0.0f && fb[n - 1] == (float)(n - 1));         /* read through b */
    fb[7] = -3.5f;
    CHECK(fa[n + 7] == -3.5f);
    CHECK_EQ(aclrtMemset(fa, g, 0, g), 0); /* runtime copies work on mapped memory */

    /* the op reads b (dy, y) and writes a: the ranges are device memory */
    const int64_t rows = 8, cols = 64;
    float *dy = fb, *y = fb + rows * cols, *out = fa;
    uint8_t *mask = (uint8_t *)(fb + 2 * rows * cols);
    for (int64_t i = 0; i < rows * cols; i++) {
        dy[i] = (float)(i % 7) - 3.0f;
        y[i] = 1.0f / (float)cols;
        mask[i] = (uint8_t)(i % cols == cols - 1);
    }
    run_softmax(dy, y, mask, out, rows, cols, s);
    for (int64_t r = 0; r < rows; r++) {
        double dot = 0.0;
        for (int64_t j = 0; j < cols; j++) dot += (double)dy[r * cols + j] * y[r * cols + j];
        for (int64_t j = 0; j < cols; j++) {
            const double dv = dy[r * cols + j], yv = y[r * cols + j];
            double want = j == cols - 1 ? 0.0 : 2.0 * (dv * yv - dot * yv);
            double got = out[r * cols + j];
            CHECK(got - want < 1e-6 && want - got < 1e-6);
        }
    }

    /* errors */
    aclrtDrvMemHandle bogus = (aclrtDrvMemHandle)&prop;
    CHECK_ERR(aclrtMapMem(a, g, 0, h, 0), ACL_ERROR_INVALID_PARAM, "overlaps the mapping");
    CHECK_ERR(aclrtMapMem((char *)a + 2 * g, g, 0, bogus, 0), ACL_ERROR_INVALID_PARAM,
              "not a live aclrtMallocPhysical");
    CHECK_ERR(aclrtMapMem((char *)a + 2 * g, g, 2 * g, h, 0), ACL_ERROR_INVALID_PARAM, "exceed the physical");
    CHECK_ERR(aclrtMapMem((char *)a + 3 * g, 2 * g, 0, h, 0), ACL_ERROR_INVALID_PARAM, "not inside one range");
    CHECK_ERR(aclrtMapMem((char *)a + 4096, g, 0, h, 0), ACL_ERROR_INVALID_PARAM, "multiples of the granularity");
    CHECK_ERR(aclrtMapMem(NULL, g, 0, h, 0), ACL_ERROR_INVALID_PARAM, "virPtr must not be NULL");
    CHECK_ERR(aclrtMapMem((char *)a + 2 * g, g, 0, h, 1), ACL_ERROR_INVALID_PARAM, "flags must be 0");
    void *reg = NULL; /* reserved addresses given to aclrtHostRegister are not mapped over */
    CHECK_OK(aclrtHostRegister((char *)a + 3 * g, 4096, ACL_HOST_REGISTER_MAPPED, &reg));
    CHECK_ERR(aclrtMapMem((char *)a + 2 * g, 2 * g, 0, h, 0), ACL_ERROR_INVALID_PARAM,
              "overlaps the aclrtHostRegister range");
    CHECK_OK(aclrtHostUnregister(reg));
    CHECK_ERR(aclrtUnmapMem((char *)a + g), ACL_ERROR_INVALID_PARAM, "not the start of a range mapped");
    CHECK_ERR(aclrtReleaseMemAddress(a), ACL_ERROR_INVALID_PARAM, "still has 1 mapped range");
    CHECK_ERR(aclrtReleaseMemAddress((char *)a + g), ACL_ERROR_INVALID_PARAM, "not the start of a range");
    CHECK_ERR(aclrtFree(a), ACL_ERROR_INVALID_PARAM, "not a live device allocation");

    /* FreePhysical while mapped: the memory lives until the last unmap */
    CHECK_OK(aclrtFreePhysical(h));
    CHECK_ERR(aclrtFreePhysical(h), ACL_ERROR_INVALID_PARAM, "double free");
    CHECK(fa[n] == fb[0] && fb[0] == -3.0f);
    CHECK_OK(aclrtUnmapMem(a));
    CHECK(fb[3] == dy[3]);
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total));
    CHECK_EQ(free0 - free1, 2 * g);
    CHECK_OK(aclrtUnmapMem(b));
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total));
    CHECK_EQ(free1, free0);
    CHECK_ERR(aclrtUnmapMem(b), ACL_ERROR_INVALID_PARAM, "not the start of a range mapped");
    CHECK_OK(aclrtReleaseMemAddress(a));
    CHECK_OK(aclrtReleaseMemAddress(b));
    CHECK_ERR(aclrtReleaseMemAddress(a), ACL_ERROR_INVALID_PARAM, "not the start of a range");

    /* argument errors */
    void *v = NULL;
    CHECK_ERR(aclrtReserveMemAddress(NULL, g, 0, NULL, 0), ACL_ERROR_INVALID_PARAM, "virPtr must not be NULL");
    CHECK_ERR(aclrtReserveMemAddress(&v, 0, 0, NULL, 0), ACL_ERROR_INVALID_PARAM, "size must be > 0");
    CHECK_ERR(aclrtReserveMemAddress(&v, g, 3, NULL, 0), ACL_ERROR_INVALID_PARAM, "power of two");
    CHECK_ERR(aclrtReserveMemAddress(&v, g, 0, (void *)(uintptr_t)(16ull << 40), 0), ACL_ERROR_INVALID_PARAM,
              "expectPtr must be NULL");
    CHECK_ERR(aclrtReserveMemAddress(&v, g, 0, NULL, 2), ACL_ERROR_INVALID_PARAM, "flags must be 0 or 1");
    CHECK_ERR(aclrtMallocPhysical(NULL, g, &prop, 0), ACL_ERROR_INVALID_PARAM, "must not be NULL");
    CHECK_ERR(aclrtMallocPhysical(&h, 0, &prop, 0), ACL_ERROR_INVALID_PARAM, "size must be > 0");
    CHECK_ERR(aclrtMallocPhysical(&h, g, &prop, 1), ACL_ERROR_INVALID_PARAM, "flags must be 0");
    aclrtPhysicalMemProp bad = prop;
    bad.location.type = ACL_MEM_LOCATION_TYPE_HOST;
    CHECK_ERR(aclrtMallocPhysical(&h, g, &bad, 0), ACL_ERROR_INVALID_PARAM, "location.type");
    bad = prop;
    bad.location.id = 1;
    CHECK_ERR(aclrtMallocPhysical(&h, g, &bad, 0), ACL_ERROR_RT_INVALID_DEVICEID, "exactly one device");
    bad = prop;
    bad.memAttr = ACL_DDR_MEM_NORMAL;
    CHECK_ERR(aclrtMallocPhysical(&h, g, &bad, 0), ACL_ERROR_INVALID_PARAM, "memAttr");
    bad = prop;
    bad.handleType = (aclrtMemHandleType)1;
    CHECK_ERR(aclrtMallocPhysical(&h, g, &bad, 0), ACL_ERROR_INVALID_PARAM, "handleType");
    bad = prop;
    bad.allocationType = (aclrtMemAllocationType)1;
    CHECK_ERR(aclrtMallocPhysical(&h, g, &bad, 0), ACL_ERROR_INVALID_PARAM, "allocationType");
    CHECK_ERR(aclrtFreePhysical(NULL), ACL_ERROR_INVALID_PARAM, "not a live aclrtMallocPhysical");
    CHECK_ERR(aclrtMemGetAllocationGranularity(NULL, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g),
              ACL_ERROR_INVALID_PARAM, "must not be NULL");
    CHECK_ERR(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF, &g),
              ACL_ERROR_INVALID_PARAM, "option must be");
    prop.memAttr = ACL_HBM_MEM_HUGE1G;
    CHECK_OK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, &g));
    CHECK_EQ(g, (size_t)1 << 30);
}

/* A growing pool (like ggml-cann's): query the granularity, reserve a large
 * range, map chunks one after another, use memory that spans chunks, tear down. */
static void test_vmm_growing_pool(aclrtStream s) {
    aclrtPhysicalMemProp prop = device_prop();
    size_t g = 0;
    CHECK_OK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, &g));
    const size_t reserve = (size_t)32 << 30; /* 32 GiB of address space: costs no memory */
    void *base = NULL;
    CHECK_OK(aclrtReserveMemAddress(&base, reserve, 0, NULL, 0));
    enum { CHUNKS = 4 };
    aclrtDrvMemHandle h[CHUNKS];
    for (int i = 0; i < CHUNKS; i++) {
        CHECK_OK(aclrtMallocPhysical(&h[i], g, &prop, 0));
        CHECK_OK(aclrtMapMem((char *)base + (size_t)i * g, g, 0, h[i], 0));
    }
    /* tensors of 128 x 4096 floats (2 MiB) starting 1 MiB in: each spans two chunks */
    const int64_t rows = 128, cols = 4096;
    const size_t bytes = (size_t)rows * cols * sizeof(float);
    float *dy = (float *)((char *)base + MIB), *y = (float *)((char *)dy + bytes);
    uint8_t *mask = (uint8_t *)y + bytes;
    CHECK((char *)mask + (size_t)rows * cols <= (char *)base + CHUNKS * g);
    float *out = (float *)malloc(bytes);
    CHECK(out != NULL);
    for (int64_t i = 0; i < rows * cols; i++) {
        dy[i] = (float)(i % 5);
        y[i] = 1.0f / (float)cols;
        mask[i] = 0;
    }
    /* out in host memory is rejected; in the pool it is accepted */
    int64_t shape[4] = {1, 1, rows, cols}, strides[4] = {rows * cols, rows * cols, cols, 1};
    aclTensor *t_dy = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, dy);
    aclTensor *t_y = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, y);
    aclTensor *t_m = aclCreateTensor(shape, 4, ACL_BOOL, strides, 0, ACL_FORMAT_ND, shape, 4, mask);
    aclTensor *t_o = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, out);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(t_dy, t_y, t_m, 1.0, false, t_o, &ws, &ex), 0);
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, s), 0);
    CHECK_ERR(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION, "not inside one device allocation");
    aclDestroyTensor(t_o);
    free(out);
    /* grow the pool by one more chunk for the output */
    aclrtDrvMemHandle h5 = NULL;
    CHECK_OK(aclrtMallocPhysical(&h5, 2 * g, &prop, 0));
    CHECK_OK(aclrtMapMem((char *)base + CHUNKS * g, 2 * g, 0, h5, 0));
    out = (float *)((char *)base + CHUNKS * g + MIB / 2); /* spans chunk 5's two granules */
    CHECK((char *)out > (char *)mask + (size_t)rows * cols);
    run_softmax(dy, y, mask, out, rows, cols, s);
    double dot = 0.0;
    for (int64_t j = 0; j < cols; j++) dot += (double)dy[j] * y[j];
    for (int64_t j = 0; j < cols; j += 97) {
        double want = 2.0 * ((double)dy[j] * y[j] - dot * y[j]); /* run_softmax uses scale 2 */
        CHECK(out[j] - want < 1e-7 && want - out[j] < 1e-7);
    }
    aclDestroyTensor(t_dy);
    aclDestroyTensor(t_y);
    aclDestroyTensor(t_m);
    /* unmapping a middle chunk splits the run: a tensor across the hole is rejected */
    CHECK_OK(aclrtUnmapMem((char *)base + g));
    char *c = base;
    run_softmax(c + 2 * g, c + 2 * g, c + 3 * g, c + CHUNKS * g, 1, 1024, s);
    int64_t sh1[4] = {1, 1, 1, 1024}, st1[4] = {1024, 1024, 1024, 1};
    aclTensor *t_hole = aclCreateTensor(sh1, 4, ACL_FLOAT, st1, 0, ACL_FORMAT_ND, sh1, 4, (char *)base + g - 64);
    aclTensor *t_ok = aclCreateTensor(sh1, 4, ACL_FLOAT, st1, 0, ACL_FORMAT_ND, sh1, 4, (char *)base + 2 * g);
    aclTensor *t_mk = aclCreateTensor(sh1, 4, ACL_BOOL, st1, 0, ACL_FORMAT_ND, sh1, 4, (char *)base + 3 * g);
    aclTensor *t_out = aclCreateTensor(sh1, 4, ACL_FLOAT, st1, 0, ACL_FORMAT_ND, sh1, 4, (char *)base + CHUNKS * g);
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(t_hole, t_ok, t_mk, 1.0, false, t_out, &ws, &ex), 0);
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, s), 0);
    CHECK_ERR(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION, "not inside one device allocation");
    aclDestroyTensor(t_hole);
    aclDestroyTensor(t_ok);
    aclDestroyTensor(t_mk);
    aclDestroyTensor(t_out);
    /* tear down */
    for (int i = 0; i < CHUNKS; i++) {
        if (i != 1) CHECK_OK(aclrtUnmapMem((char *)base + (size_t)i * g));
        CHECK_OK(aclrtFreePhysical(h[i]));
    }
    CHECK_OK(aclrtUnmapMem((char *)base + CHUNKS * g));
    CHECK_OK(aclrtFreePhysical(h5));
    CHECK_OK(aclrtReleaseMemAddress(base));
}

/* The capacity (this test runs with PYACLNN_DEVICE_MEMORY=256M, see main). */
/* A pool that grows on one thread while kernels run on its earlier chunks on
 * another (ggml-cann): launches on a chunk that stays mapped all succeed while
 * its neighbours are mapped and unmapped (the registry merges and splits their
 * ranges meanwhile). tests/c/test_vmm_race.c checks every intermediate state. */
typedef struct {
    char *chunk; /* the stable chunk: every tensor lies inside it */
    int launches;
    atomic_bool started, done;
    atomic_int failed; /* launches that did not succeed */
    aclError first_failure;
} launcher_ctx;

static void *launcher(void *arg) {
    launcher_ctx *c = arg;
    CHECK_OK(aclrtSetDevice(0));
    aclrtStream s = NULL;
    CHECK_OK(aclrtCreateStream(&s));
    int64_t shape[4] = {1, 1, 4, 64}, strides[4] = {256, 256, 64, 1};
    char *p = c->chunk + 4096;
    memset(p, 0, 4 * 256 * 4);
    aclTensor *t_dy = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, p);
    aclTensor *t_y = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, p + 1024);
    aclTensor *t_m = aclCreateTensor(shape, 4, ACL_BOOL, strides, 0, ACL_FORMAT_ND, shape, 4, p + 2048);
    aclTensor *t_o = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, p + 3072);
    atomic_store(&c->started, true);
    for (int i = 0; i < c->launches; i++) {
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        CHECK_EQ(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(t_dy, t_y, t_m, 1.0, false, t_o, &ws, &ex), 0);
        CHECK_EQ(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, s), 0);
        aclError rc = aclrtSynchronizeStream(s);
        if (rc != ACL_SUCCESS && atomic_fetch_add(&c->failed, 1) == 0) c->first_failure = rc;
    }
    atomic_store(&c->done, true);
    aclDestroyTensor(t_dy);
    aclDestroyTensor(t_y);
    aclDestroyTensor(t_m);
    aclDestroyTensor(t_o);
    CHECK_OK(aclrtDestroyStream(s));
    return NULL;
}

static void test_vmm_launch_while_mapping(void) {
    aclrtPhysicalMemProp prop = device_prop();
    size_t g = 0;
    CHECK_OK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g));
    char *base = NULL;
    CHECK_OK(aclrtReserveMemAddress((void **)&base, 3 * g, 0, NULL, 0));
    aclrtDrvMemHandle h[3];
    for (int i = 0; i < 3; i++) CHECK_OK(aclrtMallocPhysical(&h[i], g, &prop, 0));
    CHECK_OK(aclrtMapMem(base + g, g, 0, h[1], 0));
    launcher_ctx c = {.chunk = base + g, .launches = 2000};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, launcher, &c), 0);
    while (!atomic_load(&c.started)) sched_yield();
    long cycles = 0;
    for (; !atomic_load(&c.done); cycles++) { /* below, above, both, one by one */
        CHECK_OK(aclrtMapMem(base, g, 0, h[0], 0));
        CHECK_OK(aclrtMapMem(base + 2 * g, g, 0, h[2], 0));
        CHECK_OK(aclrtUnmapMem(base));
        CHECK_OK(aclrtUnmapMem(base + 2 * g));
    }
    CHECK_EQ(pthread_join(th, NULL), 0);
    if (atomic_load(&c.failed) != 0) {
        fprintf(stderr, "%d of %d launches on the stable chunk failed (first: %d) during %ld map/unmap cycles\n",
                atomic_load(&c.failed), c.launches, (int)c.first_failure, cycles);
    }
    CHECK_EQ(atomic_load(&c.failed), 0);
    CHECK(cycles > 0);
    CHECK_OK(aclrtUnmapMem(base + g));
    for (int i = 0; i < 3; i++) CHECK_OK(aclrtFreePhysical(h[i]));
    CHECK_OK(aclrtReleaseMemAddress(base));
}

static void test_capacity(void) {
    size_t free0 = 0, total = 0, f = 0, t = 0;
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free0, &total));
    CHECK_EQ(total, 256 * MIB);
    CHECK_OK(aclrtGetMemInfo(ACL_DDR_MEM, &f, &t));
    CHECK_EQ(t, total);
    const long rss0 = rss_kib();
    enum { MAXN = 64 };
    void *p[MAXN];
    int n = 0;
    aclError rc = ACL_SUCCESS;
    const size_t chunk = 16 * MIB;
    while (n < MAXN && (rc = aclrtMalloc(&p[n], chunk, ACL_MEM_MALLOC_HUGE_FIRST)) == ACL_SUCCESS) n++;
    CHECK_EQ(rc, ACL_ERROR_RT_MEMORY_ALLOCATION);
    CHECK(msg_has("device memory exhausted"));
    CHECK_EQ(n, (int)(free0 / (chunk + 32)));
    CHECK(rss_kib() - rss0 < 8 * 1024); /* nothing was committed */
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    CHECK_EQ(free0 - f, (size_t)n * (chunk + 32));
    /* physical allocations draw on the same capacity */
    aclrtPhysicalMemProp prop = device_prop();
    aclrtDrvMemHandle h = NULL;
    CHECK_ERR(aclrtMallocPhysical(&h, chunk, &prop, 0), ACL_ERROR_RT_MEMORY_ALLOCATION, "device memory exhausted");
    for (int i = 0; i < n; i++) CHECK_OK(aclrtFree(p[i]));
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    CHECK_EQ(f, free0);
    CHECK_OK(aclrtMallocPhysical(&h, chunk, &prop, 0));
    void *q = NULL;
    CHECK_ERR(aclrtMalloc(&q, total - chunk + 1, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION,
              "device memory exhausted");
    CHECK_OK(aclrtFreePhysical(h));
    CHECK_OK(aclrtMallocAlign32(&q, total, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK_OK(aclrtFree(q));
}

int main(int argc, char **argv) {
    if (getenv("PYACLNN_DEVICE_MEMORY") == NULL) { /* re-run with a small, fixed capacity */
        setenv("PYACLNN_DEVICE_MEMORY", "256M", 1);
        execv("/proc/self/exe", argv);
        perror("execv");
        return 1;
    }
    (void)argc;
    test_status_macros();
    CHECK_OK(aclInit(NULL));
    aclrtDrvMemHandle h = NULL;
    aclrtPhysicalMemProp prop = device_prop();
    CHECK_ERR(aclrtMallocPhysical(&h, 2 * MIB, &prop, 0), ACL_ERROR_RT_CONTEXT_NULL, "aclrtMallocPhysical");
    CHECK_OK(aclrtSetDevice(0));
    aclrtStream s = NULL;
    CHECK_OK(aclrtCreateStream(&s));
    test_vmm_round_trip(s);
    test_vmm_growing_pool(s);
    test_vmm_launch_while_mapping();
    test_capacity();
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    printf("test_device_memory: %d checks passed\n", g_checks);
    return 0;
}
