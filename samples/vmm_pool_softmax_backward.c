/* Plain C (C11) sample: a growing device-memory pool built on the virtual-memory
 * API, the way ggml-cann's pool grows, feeding aclnnScaledMaskedSoftmaxBackward.
 *
 *   - reports the SoC, the CANN version and the device memory (aclrtGetMemInfo);
 *   - reserves a 64 MiB address range, then maps 2 MiB physical chunks into it
 *     one after another as the pool grows (tensors straddle chunk boundaries);
 *   - includes the operator through its CANN 8.1-era path (aclnnop/level2/);
 *   - names status codes with a switch over the ACL_ERROR_RT_* macros.
 *
 *   HOME_DIR=$(python -m pyaclnn home)
 *   gcc -std=c11 vmm_pool_softmax_backward.c -I$HOME_DIR/include -L$HOME_DIR/lib64 \
 *       -lascendcl -lnnopbase -lopapi -Wl,-rpath,$HOME_DIR/lib64 -lm
 *
 * Prints PASSED and exits 0 when the result matches a double-precision loop. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/level2/aclnn_scaled_masked_softmax_backward.h"

static const char *status_name(int status) {
    switch (status) {
    case ACL_RT_SUCCESS: return "success";
    case ACL_ERROR_RT_PARAM_INVALID: return "ACL_ERROR_RT_PARAM_INVALID";
    case ACL_ERROR_RT_INVALID_DEVICEID: return "ACL_ERROR_RT_INVALID_DEVICEID";
    case ACL_ERROR_RT_CONTEXT_NULL: return "ACL_ERROR_RT_CONTEXT_NULL";
    case ACL_ERROR_RT_MEMORY_ALLOCATION: return "ACL_ERROR_RT_MEMORY_ALLOCATION (device memory full)";
    case ACL_ERROR_RT_FEATURE_NOT_SUPPORT: return "ACL_ERROR_RT_FEATURE_NOT_SUPPORT";
    case ACL_ERROR_RT_STREAM_SYNC_TIMEOUT: return "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT";
    default: return status >= 100000 && status < 200000 ? "parameter error" : "other error";
    }
}

#define CHECK(expr)                                                                                       \
    do {                                                                                                  \
        int rc_ = (int)(expr);                                                                            \
        if (rc_ != 0) {                                                                                   \
            const char *m_ = aclGetRecentErrMsg();                                                        \
            printf("FAILED: %s -> %d (%s)%s%s\n", #expr, rc_, status_name(rc_), m_ ? ": " : "", m_ ? m_ : ""); \
            exit(1);                                                                                      \
        }                                                                                                 \
    } while (0)

/* ---- a pool that grows by mapping physical chunks into one reserved range ---- */
#define MAX_CHUNKS 32
typedef struct {
    aclrtPhysicalMemProp prop;
    size_t granularity, reserved, mapped, used;
    char *base;
    aclrtDrvMemHandle chunks[MAX_CHUNKS];
    int nchunks;
} vmm_pool;

static void pool_init(vmm_pool *p, size_t reserve) {
    memset(p, 0, sizeof *p);
    p->prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    p->prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    p->prop.memAttr = ACL_HBM_MEM_HUGE;
    p->prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    p->prop.location.id = 0;
    CHECK(aclrtMemGetAllocationGranularity(&p->prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, &p->granularity));
    p->reserved = (reserve + p->granularity - 1) / p->granularity * p->granularity;
    void *base = NULL;
    CHECK(aclrtReserveMemAddress(&base, p->reserved, 0, NULL, 0));
    p->base = base;
}

/* Bump allocation, 512-byte aligned; maps one more chunk each time it runs out. */
static void *pool_alloc(vmm_pool *p, size_t size) {
    size_t start = (p->used + 511) / 512 * 512;
    while (start + size > p->mapped) {
        if (p->nchunks == MAX_CHUNKS || p->mapped + p->granularity > p->reserved) {
            printf("FAILED: pool exhausted\n");
            exit(1);
        }
        aclrtDrvMemHandle h = NULL;
        CHECK(aclrtMallocPhysical(&h, p->granularity, &p->prop, 0));
        CHECK(aclrtMapMem(p->base + p->mapped, p->granularity, 0, h, 0));
        p->chunks[p->nchunks++] = h;
        p->mapped += p->granularity;
    }
    p->used = start + size;
    return p->base + start;
}

static void pool_destroy(vmm_pool *p) {
    for (int i = 0; i < p->nchunks; i++) {
        CHECK(aclrtUnmapMem(p->base + (size_t)i * p->granularity));
        CHECK(aclrtFreePhysical(p->chunks[i]));
    }
    CHECK(aclrtReleaseMemAddress(p->base));
}

/* ---- the operator on pool memory ---- */
enum { B = 1, N = 2, S = 512 };
static const double kScale = 0.125;

static int masked(int64_t i, int64_t j) { return j > i; } /* causal */

static aclTensor *make_tensor(void *dev, const int64_t *shape, aclDataType dtype) {
    int64_t strides[4] = {shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1};
    return aclCreateTensor(shape, 4, dtype, strides, 0, ACL_FORMAT_ND, shape, 4, dev);
}

int main(void) {
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = NULL;
    CHECK(aclrtCreateStream(&stream));

    aclCANNPackageVersion ver;
    CHECK(aclsysGetCANNVersion(ACL_PKG_NAME_CANN, &ver));
    size_t free_b = 0, total_b = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total_b));
    printf("SoC %s, CANN %s, device memory %.1f GiB (%.1f GiB free)\n", aclrtGetSocName(), ver.version,
           total_b / 1073741824.0, free_b / 1073741824.0);
    /* A status code by name, through the switch above. */
    printf("aclrtSetDevice(7) -> %s\n", status_name(aclrtSetDevice(7)));

    vmm_pool pool;
    pool_init(&pool, (size_t)64 << 20);
    const size_t numel = (size_t)B * N * S * S;
    const size_t fbytes = numel * sizeof(float);
    (void)pool_alloc(&pool, (size_t)1 << 20); /* something already in the pool: dy straddles chunks */
    float *dy_d = pool_alloc(&pool, fbytes);
    float *y_d = pool_alloc(&pool, fbytes);
    uint8_t *mask_d = pool_alloc(&pool, (size_t)S * S);
    float *out_d = pool_alloc(&pool, fbytes);
    printf("pool: %d chunks of %zu KiB mapped into a %zu MiB reservation\n", pool.nchunks, pool.granularity >> 10,
           pool.reserved >> 20);

    float *dy = malloc(fbytes), *y = malloc(fbytes), *out = malloc(fbytes);
    uint8_t *mask = malloc((size_t)S * S);
    if (dy == NULL || y == NULL || out == NULL || mask == NULL) return 1;
    uint64_t state = 42;
    for (size_t r = 0; r < (size_t)B * N * S; r++) {
        const int64_t i = (int64_t)(r % S);
        double sum = 0.0;
        for (int64_t j = 0; j < S; j++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(state >> 11) / 9007199254740992.0;
            dy[r * S + j] = (float)(2.0 * u - 1.0);
            double e = masked(i, j) ? 0.0 : exp(kScale * 4.0 * u);
            y[r * S + j] = (float)e;
            sum += e;
        }
        for (int64_t j = 0; j < S; j++) y[r * S + j] = (float)(y[r * S + j] / sum);
    }
    for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < S; j++) mask[i * S + j] = (uint8_t)masked(i, j);
    CHECK(aclrtMemcpy(dy_d, fbytes, dy, fbytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(y_d, fbytes, y, fbytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(mask_d, (size_t)S * S, mask, (size_t)S * S, ACL_MEMCPY_HOST_TO_DEVICE));

    const int64_t shape[4] = {B, N, S, S}, mask_shape[4] = {1, 1, S, S};
    aclTensor *t_dy = make_tensor(dy_d, shape, ACL_FLOAT), *t_y = make_tensor(y_d, shape, ACL_FLOAT);
    aclTensor *t_mask = make_tensor(mask_d, mask_shape, ACL_BOOL), *t_out = make_tensor(out_d, shape, ACL_FLOAT);
    uint64_t ws_size = 0;
    aclOpExecutor *executor = NULL;
    CHECK(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(t_dy, t_y, t_mask, kScale, false, t_out, &ws_size,
                                                           &executor));
    void *ws = ws_size > 0 ? pool_alloc(&pool, (size_t)ws_size) : NULL;
    CHECK(aclnnScaledMaskedSoftmaxBackward(ws, ws_size, executor, stream));
    CHECK(aclrtSynchronizeStream(stream));
    CHECK(aclrtMemcpy(out, fbytes, out_d, fbytes, ACL_MEMCPY_DEVICE_TO_HOST));

    double max_err = 0.0;
    for (size_t r = 0; r < (size_t)B * N * S; r++) {
        double dot = 0.0;
        for (int64_t j = 0; j < S; j++) dot += (double)dy[r * S + j] * y[r * S + j];
        for (int64_t j = 0; j < S; j++) {
            const double g = dy[r * S + j], p = y[r * S + j];
            double want = masked((int64_t)(r % S), j) ? 0.0 : kScale * (g * p - dot * p);
            double err = fabs(out[r * S + j] - want);
            if (err > max_err) max_err = err;
        }
    }
    printf("aclnnScaledMaskedSoftmaxBackward on pool memory: [%d,%d,%d,%d] float32, max abs error %.3g\n", B, N, S,
           S, max_err);

    aclDestroyTensor(t_dy);
    aclDestroyTensor(t_y);
    aclDestroyTensor(t_mask);
    aclDestroyTensor(t_out);
    pool_destroy(&pool);
    free(dy);
    free(y);
    free(out);
    free(mask);
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    if (!(max_err <= 1e-6)) {
        printf("FAILED: result does not match the reference\n");
        return 1;
    }
    printf("PASSED\n");
    return 0;
}
