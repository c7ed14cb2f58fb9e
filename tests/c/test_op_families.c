/* The op families through the C API, on several threads and streams at once:
 * map (binary, unary, compare, cast, in place), reduce, scan (sort), shape
 * (permute, repeat) and index ops, each result checked against a plain-C
 * reference, every launch large enough to use the kernel thread pool. Under
 * TSan (tests/sanitize/run.sh) this covers the kernels' threading; each
 * thread's results must also equal the single-thread run bit for bit. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_argsort.h"
#include "aclnnop/aclnn_cast.h"
#include "aclnnop/aclnn_exp.h"
#include "aclnnop/aclnn_gt_tensor.h"
#include "aclnnop/aclnn_mul.h"
#include "aclnnop/aclnn_permute.h"
#include "aclnnop/aclnn_reduce_sum.h"
#include "aclnnop/aclnn_repeat.h"
#include "pa_check.h"
#include "pyaclnn/pyaclnn_ext.h"

#define R 96
#define C 1100 /* R * C > the map engine's chunk: several chunks per launch */

typedef struct {
    void *dev;
    aclTensor *t;
} buf;

static buf make(int64_t rows, int64_t cols, aclDataType dt, size_t es) {
    buf b;
    int64_t dims[2] = {rows, cols}, strides[2] = {cols, 1}, storage = rows * cols;
    CHECK_OK(aclrtMalloc(&b.dev, (size_t)(rows * cols) * es + 64, ACL_MEM_MALLOC_NORMAL_ONLY));
    b.t = aclCreateTensor(dims, 2, dt, strides, 0, ACL_FORMAT_ND, &storage, 1, b.dev);
    CHECK(b.t != NULL);
    return b;
}

static void drop(buf *b) {
    aclDestroyTensor(b->t);
    aclrtFree(b->dev);
}

static void run(aclnnStatus (*launch)(void *, uint64_t, aclOpExecutor *, aclrtStream), uint64_t ws,
                aclOpExecutor *ex, aclrtStream s) {
    void *w = NULL;
    if (ws) CHECK_OK(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK_OK(launch(w, ws, ex, s));
    CHECK_OK(aclrtSynchronizeStream(s));
    if (w) aclrtFree(w);
}

typedef struct {
    int id;
    uint32_t result_hash;
} job;

static uint32_t fnv(const void *p, size_t n, uint32_t h) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
    return h;
}

static void *work(void *arg) {
    job *j = arg;
    CHECK_OK(aclrtSetDevice(0));
    aclrtStream s;
    CHECK_OK(aclrtCreateStream(&s));
    const int64_t n = (int64_t)R * C;
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4), *o = malloc((size_t)n * 4);
    CHECK(a && b && o);
    for (int64_t i = 0; i < n; i++) {
        a[i] = (float)((i * 37 + j->id) % 101) / 17.0f - 3.0f;
        b[i] = (float)((i * 11) % 23) / 7.0f - 1.5f;
    }
    buf ta = make(R, C, ACL_FLOAT, 4), tb = make(R, C, ACL_FLOAT, 4), to = make(R, C, ACL_FLOAT, 4);
    CHECK_OK(aclrtMemcpy(ta.dev, (size_t)n * 4, a, (size_t)n * 4, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtMemcpy(tb.dev, (size_t)n * 4, b, (size_t)n * 4, ACL_MEMCPY_HOST_TO_DEVICE));
    uint64_t ws;
    aclOpExecutor *ex;
    uint32_t h = 2166136261u;

    /* map: out = a + 2b, then out *= a (in place), exp(out) */
    float two = 2.0f;
    aclScalar *alpha = aclCreateScalar(&two, ACL_FLOAT);
    CHECK_OK(aclnnAddGetWorkspaceSize(ta.t, tb.t, alpha, to.t, &ws, &ex));
    run(aclnnAdd, ws, ex, s);
    CHECK_OK(aclrtMemcpy(o, (size_t)n * 4, to.dev, (size_t)n * 4, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int64_t i = 0; i < n; i++) CHECK(o[i] == fmaf(b[i], 2.0f, a[i]));
    CHECK_OK(aclnnInplaceMulGetWorkspaceSize(to.t, ta.t, &ws, &ex));
    run(aclnnInplaceMul, ws, ex, s);
    CHECK_OK(aclnnInplaceExpGetWorkspaceSize(to.t, &ws, &ex));
    run(aclnnInplaceExp, ws, ex, s);
    CHECK_OK(aclrtMemcpy(o, (size_t)n * 4, to.dev, (size_t)n * 4, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int64_t i = 0; i < n; i++) {
        const double want = exp((double)(fmaf(b[i], 2.0f, a[i]) * a[i]));
        CHECK(fabs(o[i] - want) <= 4e-7 * fabs(want) + 1e-37);
    }
    h = fnv(o, (size_t)n * 4, h);

    /* compare into bool, cast to fp16 */
    buf tc = make(R, C, ACL_BOOL, 1), th = make(R, C, ACL_FLOAT16, 2);
    CHECK_OK(aclnnGtTensorGetWorkspaceSize(ta.t, tb.t, tc.t, &ws, &ex));
    run(aclnnGtTensor, ws, ex, s);
    uint8_t *cb = malloc((size_t)n);
    CHECK(cb);
    CHECK_OK(aclrtMemcpy(cb, (size_t)n, tc.dev, (size_t)n, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int64_t i = 0; i < n; i++) CHECK(cb[i] == (a[i] > b[i]));
    CHECK_OK(aclnnCastGetWorkspaceSize(ta.t, ACL_FLOAT16, th.t, &ws, &ex));
    run(aclnnCast, ws, ex, s);

    /* reduce: sum over dim 1 and over dim 0 */
    buf rs = make(1, R, ACL_FLOAT, 4), cs = make(1, C, ACL_FLOAT, 4);
    int64_t d1 = 1, d0 = 0;
    aclIntArray *dim1 = aclCreateIntArray(&d1, 1), *dim0 = aclCreateIntArray(&d0, 1);
    aclTensor *rs1 = aclCreateTensor((int64_t[]){R}, 1, ACL_FLOAT, (int64_t[]){1}, 0, ACL_FORMAT_ND,
                                     (int64_t[]){R}, 1, rs.dev);
    aclTensor *cs1 = aclCreateTensor((int64_t[]){C}, 1, ACL_FLOAT, (int64_t[]){1}, 0, ACL_FORMAT_ND,
                                     (int64_t[]){C}, 1, cs.dev);
    CHECK_OK(aclnnReduceSumGetWorkspaceSize(ta.t, dim1, false, ACL_FLOAT, rs1, &ws, &ex));
    run(aclnnReduceSum, ws, ex, s);
    CHECK_OK(aclnnReduceSumGetWorkspaceSize(ta.t, dim0, false, ACL_FLOAT, cs1, &ws, &ex));
    run(aclnnReduceSum, ws, ex, s);
    float rsum[R], csum[C];
    CHECK_OK(aclrtMemcpy(rsum, sizeof rsum, rs.dev, sizeof rsum, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK_OK(aclrtMemcpy(csum, sizeof csum, cs.dev, sizeof csum, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int r = 0; r < R; r++) {
        double want = 0;
        for (int c = 0; c < C; c++) want += a[r * C + c];
        CHECK(fabs(rsum[r] - want) <= 1e-6 * fabs(want) + 1e-5);
    }
    for (int c = 0; c < C; c++) {
        double want = 0;
        for (int r = 0; r < R; r++) want += a[r * C + c];
        CHECK(fabs(csum[c] - want) <= 1e-6 * fabs(want) + 1e-5);
    }
    h = fnv(rsum, sizeof rsum, h);
    h = fnv(csum, sizeof csum, h);

    /* scan: argsort every row */
    buf ti = make(R, C, ACL_INT64, 8);
    CHECK_OK(aclnnArgsortGetWorkspaceSize(ta.t, 1, false, ti.t, &ws, &ex));
    run(aclnnArgsort, ws, ex, s);
    int64_t *idx = malloc((size_t)n * 8);
    CHECK(idx);
    CHECK_OK(aclrtMemcpy(idx, (size_t)n * 8, ti.dev, (size_t)n * 8, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int r = 0; r < R; r++) {
        for (int c = 1; c < C; c++) {
            const float x = a[r * C + idx[r * C + c - 1]], y = a[r * C + idx[r * C + c]];
            CHECK(x < y || (x == y && idx[r * C + c - 1] < idx[r * C + c])); /* ascending, stable */
        }
    }
    h = fnv(idx, (size_t)n * 8, h);

    /* shape: permute, repeat */
    buf tp = make(C, R, ACL_FLOAT, 4);
    int64_t perm[2] = {1, 0}, rep[2] = {2, 1};
    aclIntArray *pa = aclCreateIntArray(perm, 2), *ra = aclCreateIntArray(rep, 2);
    CHECK_OK(aclnnPermuteGetWorkspaceSize(ta.t, pa, tp.t, &ws, &ex));
    run(aclnnPermute, ws, ex, s);
    CHECK_OK(aclrtMemcpy(o, (size_t)n * 4, tp.dev, (size_t)n * 4, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int r = 0; r < R; r++) {
        for (int c = 0; c < C; c++) CHECK(o[c * R + r] == a[r * C + c]);
    }
    buf trep = make(2 * R, C, ACL_FLOAT, 4);
    CHECK_OK(aclnnRepeatGetWorkspaceSize(ta.t, ra, trep.t, &ws, &ex));
    run(aclnnRepeat, ws, ex, s);
    float *o2 = malloc((size_t)n * 8);
    CHECK(o2);
    CHECK_OK(aclrtMemcpy(o2, (size_t)n * 8, trep.dev, (size_t)n * 8, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int64_t i = 0; i < 2 * n; i++) CHECK(o2[i] == a[i % n]);

    j->result_hash = h;
    aclDestroyScalar(alpha);
    aclDestroyIntArray(dim0);
    aclDestroyIntArray(dim1);
    aclDestroyIntArray(pa);
    aclDestroyIntArray(ra);
    aclDestroyTensor(rs1);
    aclDestroyTensor(cs1);
    buf *all[] = {&ta, &tb, &to, &tc, &th, &rs, &cs, &ti, &tp, &trep};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) drop(all[k]);
    free(a), free(b), free(o), free(o2), free(cb), free(idx);
    CHECK_OK(aclrtDestroyStream(s));
    return NULL;
}

int main(void) {
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    /* the single-thread results (kernel pool of one), then four threads on a pool of three */
    job ref[4];
    CHECK_OK(pyaclnnSetNumThreads(1));
    for (int i = 0; i < 4; i++) {
        ref[i].id = i;
        work(&ref[i]);
    }
    CHECK_OK(pyaclnnSetNumThreads(3));
    pthread_t th[4];
    job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i].id = i;
        CHECK(pthread_create(&th[i], NULL, work, &jobs[i]) == 0);
    }
    for (int i = 0; i < 4; i++) CHECK(pthread_join(th[i], NULL) == 0);
    for (int i = 0; i < 4; i++) CHECK(jobs[i].result_hash == ref[i].result_hash);
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    printf("test_op_families: %d checks passed\n", (int)g_checks);
    return 0;
}
