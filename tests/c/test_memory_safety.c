/* Issue 7: nothing a caller passes may crash the library or touch memory it
 * does not own. Handle registry (double destroy, foreign pointers, lists,
 * races), the view rules at GetWorkspaceSize, the size-1-dim stride rule in
 * the kernels, and the launch-time address checks (NULL, stack, malloc, past
 * the end of a block, freed blocks, workspace, aclrtHostRegister,
 * aclrtMallocHost, re-pointed addresses), for both ops. Meant to run under
 * ASan+UBSan too: a read of freed memory or an overflow fails there.
 * Plain C; exits 1 on the first failure. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnn/opdev/op_errno.h"
#include "aclnnop/aclnn_nsa_selected_attention_grad.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"
#include "common/pa_half.h"    /* fp16 conversions for the NSA inputs */
#include "meta/pa_handles.h"   /* PA_HANDLE_QUARANTINE, handle kinds */
#include "pyaclnn/pyaclnn_ext.h"

#include "pa_check.h"

static aclrtStream g_stream;
static double dabs(double x) { return x < 0 ? -x : x; }

/* ======================================================================
 * Handles
 * ==================================================================== */

static aclTensor *small_tensor(void) {
    const int64_t d[1] = {3};
    aclTensor *t = aclCreateTensor(d, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d, 1, NULL);
    CHECK(t != NULL);
    return t;
}

static void test_double_destroy_every_kind(void) {
    const int64_t d[1] = {3}, iv[2] = {1, 2};
    const float fv[2] = {1, 2};
    const bool bv[2] = {true, false};
    float one = 1.0f;
    int64_t *shape = NULL;
    uint64_t n = 0;
    void *addr = NULL;

    aclTensor *t = small_tensor();
    CHECK_EQ(aclDestroyTensor(t), 0);
    CHECK_ERR(aclDestroyTensor(t), ACLNN_ERR_PARAM_INVALID, "already destroyed");
    CHECK(msg_has("aclDestroyTensor: tensor must be a live aclTensor"));
    /* every API taking the handle refuses it without reading it */
    CHECK_ERR(aclGetViewShape(t, &shape, &n), ACLNN_ERR_PARAM_INVALID, "already destroyed");
    CHECK_ERR(aclGetRawTensorAddr(t, &addr), ACLNN_ERR_PARAM_INVALID, "already destroyed");
    CHECK_ERR(aclSetRawTensorAddr(t, &one), ACLNN_ERR_PARAM_INVALID, "already destroyed");
    CHECK_ERR(aclInitTensor(t, d, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d, 1, NULL), ACLNN_ERR_PARAM_INVALID,
              "aclInitTensor: tensor must be a live aclTensor");

    aclScalar *s = aclCreateScalar(&one, ACL_FLOAT);
    CHECK(s != NULL);
    CHECK_EQ(aclDestroyScalar(s), 0);
    CHECK_ERR(aclDestroyScalar(s), ACLNN_ERR_PARAM_INVALID, "live aclScalar, got");
    CHECK(msg_has("already destroyed"));

    aclIntArray *ia = aclCreateIntArray(iv, 2);
    CHECK_EQ(aclDestroyIntArray(ia), 0);
    CHECK_ERR(aclDestroyIntArray(ia), ACLNN_ERR_PARAM_INVALID, "already destroyed");
    CHECK_ERR(aclGetIntArraySize(ia, &n), ACLNN_ERR_PARAM_INVALID, "already destroyed");

    aclFloatArray *fa = aclCreateFloatArray(fv, 2);
    CHECK_EQ(aclDestroyFloatArray(fa), 0);
    CHECK_ERR(aclDestroyFloatArray(fa), ACLNN_ERR_PARAM_INVALID, "already destroyed");
    CHECK_ERR(aclGetFloatArraySize(fa, &n), ACLNN_ERR_PARAM_INVALID, "already destroyed");

    aclBoolArray *ba = aclCreateBoolArray(bv, 2);
    CHECK_EQ(aclDestroyBoolArray(ba), 0);
    CHECK_ERR(aclDestroyBoolArray(ba), ACLNN_ERR_PARAM_INVALID, "already destroyed");
    CHECK_ERR(aclGetBoolArraySize(ba, &n), ACLNN_ERR_PARAM_INVALID, "already destroyed");

    const aclTensor *tv[1] = {small_tensor()};
    aclTensorList *tl = aclCreateTensorList(tv, 1);
    CHECK(tl != NULL);
    CHECK_EQ(aclDestroyTensorList(tl), 0);
    CHECK_ERR(aclDestroyTensorList(tl), ACLNN_ERR_PARAM_INVALID, "already destroyed");
    CHECK_ERR(aclGetTensorListSize(tl, &n), ACLNN_ERR_PARAM_INVALID, "already destroyed");
    /* the list destroyed its element */
    CHECK_ERR(aclDestroyTensor(tv[0]), ACLNN_ERR_PARAM_INVALID, "already destroyed");

    const aclScalar *sv[1] = {aclCreateScalar(&one, ACL_FLOAT)};
    aclScalarList *sl = aclCreateScalarList(sv, 1);
    CHECK(sl != NULL);
    CHECK_EQ(aclDestroyScalarList(sl), 0);
    CHECK_ERR(aclDestroyScalarList(sl), ACLNN_ERR_PARAM_INVALID, "already destroyed");
    CHECK_ERR(aclGetScalarListSize(sl, &n), ACLNN_ERR_PARAM_INVALID, "already destroyed");
    CHECK_ERR(aclDestroyScalar(sv[0]), ACLNN_ERR_PARAM_INVALID, "already destroyed");
}

static void test_foreign_and_wrong_kind(void) {
    const int64_t d[1] = {3};
    int64_t on_stack[64] = {0};
    void *heap = calloc(1, 512);
    CHECK(heap != NULL);
    uint64_t n = 0;
    CHECK_ERR(aclDestroyTensor((const aclTensor *)(void *)on_stack), ACLNN_ERR_PARAM_INVALID,
              "which pyaclnn did not create");
    CHECK_ERR(aclDestroyTensor((const aclTensor *)heap), ACLNN_ERR_PARAM_INVALID, "did not create");
    CHECK_ERR(aclDestroyIntArray((const aclIntArray *)heap), ACLNN_ERR_PARAM_INVALID, "did not create");
    CHECK_ERR(aclGetTensorListSize((const aclTensorList *)heap, &n), ACLNN_ERR_PARAM_INVALID, "did not create");
    /* aclTensor is opaque: aclInitTensor takes only tensors made by aclCreateTensor */
    CHECK_ERR(aclInitTensor((aclTensor *)heap, d, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d, 1, NULL),
              ACLNN_ERR_PARAM_INVALID, "did not create");
    for (size_t i = 0; i < 512; i++) CHECK(((unsigned char *)heap)[i] == 0); /* nothing written */
    free(heap);

    /* a live handle of another kind is named, and survives */
    float one = 1.0f;
    aclScalar *s = aclCreateScalar(&one, ACL_FLOAT);
    CHECK_ERR(aclDestroyTensor((const aclTensor *)(void *)s), ACLNN_ERR_PARAM_INVALID, "which is a live aclScalar");
    CHECK_ERR(aclDestroyIntArray((const aclIntArray *)(void *)s), ACLNN_ERR_PARAM_INVALID, "live aclScalar");
    CHECK_EQ(aclDestroyScalar(s), 0);

    /* NULL keeps its meaning: destroy accepts it, getters say NULLPTR */
    CHECK_EQ(aclDestroyTensor(NULL), 0);
    CHECK_ERR(aclGetIntArraySize(NULL, &n), ACLNN_ERR_PARAM_NULLPTR, "array is NULL");
}

static void test_lists(void) {
    uint64_t before = pyaclnnCountHandles(PA_HANDLE_TENSOR);
    /* a dead element is refused at creation */
    aclTensor *dead = small_tensor();
    CHECK_EQ(aclDestroyTensor(dead), 0);
    const aclTensor *bad[2] = {small_tensor(), dead};
    CHECK(aclCreateTensorList(bad, 2) == NULL);
    CHECK(msg_has("aclCreateTensorList: value[1] must be a live aclTensor"));
    CHECK_EQ(aclDestroyTensor(bad[0]), 0);
    float one = 1.0f;
    const aclScalar *wrong[1] = {(const aclScalar *)(const void *)small_tensor()};
    CHECK(aclCreateScalarList(wrong, 1) == NULL);
    CHECK(msg_has("which is a live aclTensor"));
    CHECK_EQ(aclDestroyTensor((const aclTensor *)(const void *)wrong[0]), 0);

    /* an element listed twice is destroyed once; NULL elements are skipped */
    aclTensor *a = small_tensor();
    const aclTensor *twice[3] = {a, NULL, a};
    aclTensorList *l = aclCreateTensorList(twice, 3);
    CHECK(l != NULL);
    CHECK_EQ(aclDestroyTensorList(l), 0);
    CHECK_EQ(pyaclnnCountHandles(PA_HANDLE_TENSOR), before);

    /* an element destroyed on its own: the list still goes, the others too, and the call says which */
    aclTensor *x = small_tensor(), *y = small_tensor(), *z = small_tensor();
    const aclTensor *xyz[3] = {x, y, z};
    l = aclCreateTensorList(xyz, 3);
    CHECK_EQ(aclDestroyTensor(y), 0);
    CHECK_ERR(aclDestroyTensorList(l), ACLNN_ERR_PARAM_INVALID, "tensorList element 1 must be a live aclTensor");
    CHECK(msg_has("already destroyed"));
    CHECK_EQ(pyaclnnCountHandles(PA_HANDLE_TENSOR), before);
    CHECK_ERR(aclGetTensorListSize(l, NULL), ACLNN_ERR_PARAM_INVALID, "already destroyed");

    /* one scalar in two lists: the second list reports it */
    aclScalar *s = aclCreateScalar(&one, ACL_FLOAT);
    const aclScalar *ss[1] = {s};
    aclScalarList *l1 = aclCreateScalarList(ss, 1), *l2 = aclCreateScalarList(ss, 1);
    CHECK_EQ(aclDestroyScalarList(l1), 0);
    CHECK_ERR(aclDestroyScalarList(l2), ACLNN_ERR_PARAM_INVALID, "scalarList element 0");
    CHECK_EQ(pyaclnnCountHandles(PA_HANDLE_SCALAR_LIST), 0);
}

/* A destroyed tensor whose memory has really been freed (pushed out of the
 * quarantine): destroying it again must not read it (ASan checks that). */
static void test_quarantine_overflow(void) {
    enum { N = PA_HANDLE_QUARANTINE + 16 };
    aclTensor *stale = small_tensor();
    CHECK_EQ(aclDestroyTensor(stale), 0);
    aclTensor **many = malloc(N * sizeof *many);
    CHECK(many != NULL);
    for (int i = 0; i < N; i++) many[i] = small_tensor(); /* stale's address is still parked: no reuse */
    for (int i = 0; i < N; i++) CHECK_EQ(aclDestroyTensor(many[i]), 0);
    free(many);
    /* stale's block is freed now; nothing was allocated since */
    CHECK_ERR(aclDestroyTensor(stale), ACLNN_ERR_PARAM_INVALID, "did not create (or destroyed long ago)");
}

/* Threads race to destroy the same tensors: each is destroyed exactly once. */
#define RACE_N 2000
static aclTensor *g_race[RACE_N];
static atomic_int g_race_wins[RACE_N];
static aclTensor *g_race_probe;

static void *race_worker(void *arg) {
    const int start = (int)(intptr_t)arg;
    for (int k = 0; k < RACE_N; k++) {
        const int i = (k + start * 97) % RACE_N;
        if (aclDestroyTensor(g_race[i]) == 0) atomic_fetch_add(&g_race_wins[i], 1);
        int64_t off = -1; /* lookups of a live handle meanwhile (no creation: a freed address could come back) */
        CHECK_EQ(aclGetViewOffset(g_race_probe, &off), 0);
        CHECK_EQ(off, 0);
    }
    return NULL;
}

static void test_destroy_race(void) {
    uint64_t before = pyaclnnCountHandles(PA_HANDLE_TENSOR);
    g_race_probe = small_tensor();
    for (int i = 0; i < RACE_N; i++) {
        g_race[i] = small_tensor();
        atomic_init(&g_race_wins[i], 0);
    }
    pthread_t th[4];
    for (int k = 0; k < 4; k++) CHECK_EQ(pthread_create(&th[k], NULL, race_worker, (void *)(intptr_t)k), 0);
    for (int k = 0; k < 4; k++) CHECK_EQ(pthread_join(th[k], NULL), 0);
    for (int i = 0; i < RACE_N; i++) CHECK_EQ(atomic_load(&g_race_wins[i]), 1);
    CHECK_EQ(aclDestroyTensor(g_race_probe), 0);
    CHECK_EQ(pyaclnnCountHandles(PA_HANDLE_TENSOR), before);
}

/* ======================================================================
 * Softmax backward problems
 * ==================================================================== */

static aclTensor *mk4(const int64_t dims[4], const int64_t *strides, int64_t offset, const int64_t *storage,
                      int nstorage, aclDataType dt, void *data) {
    aclTensor *t = aclCreateTensor(dims, 4, dt, strides, offset, ACL_FORMAT_ND, storage, (uint64_t)nstorage, data);
    CHECK(t != NULL);
    return t;
}

static int smsb_ws(aclTensor *g, aclTensor *y, aclTensor *m, aclTensor *o, double scale, aclOpExecutor **ex) {
    uint64_t ws = 0;
    *ex = NULL;
    return aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g, y, m, scale, false, o, &ws, ex);
}

/* Launch + synchronise; returns the first non-zero status. */
static int smsb_launch(aclOpExecutor *ex) {
    int rc = aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, g_stream);
    if (rc != 0) return rc;
    return aclrtSynchronizeStream(g_stream);
}

static void test_smsb_view_rules(void) {
    static char buf[4096];
    const int64_t d4[4] = {1, 1, 4, 64}, st256[1] = {256};
    aclTensor *g = mk4(d4, NULL, 0, st256, 1, ACL_FLOAT, buf), *y = mk4(d4, NULL, 0, st256, 1, ACL_FLOAT, buf);
    aclTensor *m = mk4(d4, NULL, 0, st256, 1, ACL_BOOL, buf), *o = mk4(d4, NULL, 0, st256, 1, ACL_FLOAT, buf);
    aclOpExecutor *ex;
    /* row 3: out storage {128} elements, view [1,1,4,64] */
    const int64_t st128[1] = {128};
    aclTensor *small = mk4(d4, NULL, 0, st128, 1, ACL_FLOAT, buf);
    CHECK_ERR(smsb_ws(g, y, m, small, 1.0, &ex), ACLNN_ERR_PARAM_INVALID, "out view (shape [1,1,4,64]");
    CHECK(msg_has("reaches element 255, past its storage of 128 elements"));
    CHECK_ERR(smsb_ws(small, y, m, o, 1.0, &ex), ACLNN_ERR_PARAM_INVALID, "gradOutput view");
    aclDestroyTensor(small);

    /* row 4: gradOutput offset INT64_MAX, shape [1,1,1,1] */
    const int64_t d1[4] = {1, 1, 1, 1}, s1[1] = {1};
    aclTensor *g1 = mk4(d1, NULL, INT64_MAX, s1, 1, ACL_FLOAT, buf), *y1 = mk4(d1, NULL, 0, s1, 1, ACL_FLOAT, buf);
    aclTensor *m1 = mk4(d1, NULL, 0, s1, 1, ACL_BOOL, buf), *o1 = mk4(d1, NULL, 0, s1, 1, ACL_FLOAT, buf);
    CHECK_ERR(smsb_ws(g1, y1, m1, o1, 1.0, &ex), ACLNN_ERR_PARAM_INVALID, "gradOutput view");
    CHECK(msg_has("offset 9223372036854775807) reaches element 9223372036854775807, beyond 2^60 bytes"));
    aclDestroyTensor(g1);

    /* offset + span overflowing int64 */
    const int64_t d2[4] = {1, 1, 2, 64}, big[4] = {128, 128, INT64_MAX / 2, 1};
    aclTensor *gb = mk4(d2, big, INT64_MAX / 2, st256, 1, ACL_FLOAT, buf);
    aclTensor *y2 = mk4(d2, NULL, 0, st256, 1, ACL_FLOAT, buf), *m2 = mk4(d2, NULL, 0, st256, 1, ACL_BOOL, buf);
    aclTensor *o2 = mk4(d2, NULL, 0, st256, 1, ACL_FLOAT, buf);
    CHECK_ERR(smsb_ws(gb, y2, m2, o2, 1.0, &ex), ACLNN_ERR_PARAM_INVALID, "int64 overflow");
    aclDestroyTensor(gb);

    /* storage beyond 2^60 bytes, or beyond int64 */
    const int64_t huge[1] = {(int64_t)1 << 59}, huger[2] = {INT64_MAX, 2};
    aclTensor *gh = mk4(d4, NULL, 0, huge, 1, ACL_FLOAT, buf);
    CHECK_ERR(smsb_ws(gh, y, m, o, 1.0, &ex), ACLNN_ERR_PARAM_INVALID,
              "must be at most 2^60 bytes, got 2305843009213693952");
    aclDestroyTensor(gh);
    gh = mk4(d4, NULL, 0, huger, 2, ACL_FLOAT, buf);
    CHECK_ERR(smsb_ws(gh, y, m, o, 1.0, &ex), ACLNN_ERR_PARAM_INVALID, "got more than 2^63 bytes");
    aclDestroyTensor(gh);

    /* a negative stride: refused on a dim of size > 1, free on a size-1 dim */
    const int64_t neg[4] = {256, 256, -64, 1}, neg1[4] = {-5, INT64_MIN, 64, 1};
    aclTensor *gn = mk4(d4, neg, 192, st256, 1, ACL_FLOAT, buf);
    CHECK_ERR(smsb_ws(gn, y, m, o, 1.0, &ex), ACLNN_ERR_PARAM_INVALID, "gradOutput strides must be non-negative");
    aclDestroyTensor(gn);
    gn = mk4(d4, neg1, 0, st256, 1, ACL_FLOAT, buf);
    CHECK_EQ(smsb_ws(gn, y, m, o, 1.0, &ex), 0);
    CHECK_EQ(aclDestroyAclOpExecutor(ex), 0);
    aclDestroyTensor(gn);

    /* a destroyed input */
    aclDestroyTensor(y1);
    CHECK_ERR(smsb_ws(g, y1, m, o, 1.0, &ex), ACLNN_ERR_PARAM_INVALID, "y must be a live aclTensor");
    aclDestroyTensor(m1);
    aclDestroyTensor(o1);
    aclDestroyTensor(y2);
    aclDestroyTensor(m2);
    aclDestroyTensor(o2);
    aclDestroyTensor(g);
    aclDestroyTensor(y);
    aclDestroyTensor(m);
    aclDestroyTensor(o);
}

/* Row 5: size-1 dims with any stride (INT64_MAX, INT64_MIN) give the results
 * of the plain layout, bitwise, on every tier, for short and long rows. */
static void test_smsb_size1_strides(void) {
    const char *tiers[4] = {"scalar", "avx2", "avx512", "avx512bf16"};
    const int64_t S2s[2] = {4, 100};
    for (int si = 0; si < 2; si++) {
        const int64_t S2 = S2s[si], n = 6 * S2;
        const int64_t dims[4] = {2, 3, 1, S2}, mdims[4] = {1, 1, 1, S2};
        const int64_t plain[4] = {3 * S2, S2, S2, 1}, odd[4] = {3 * S2, S2, INT64_MAX, 1};
        const int64_t modd[4] = {INT64_MAX, INT64_MIN, INT64_MAX, 1};
        const int64_t st[1] = {n}, mst[1] = {S2};
        float *hg = malloc((size_t)n * 4), *hy = malloc((size_t)n * 4), *ref = malloc((size_t)n * 4);
        float *got = malloc((size_t)n * 4);
        unsigned char hm[100];
        CHECK(hg && hy && ref && got);
        for (int64_t i = 0; i < n; i++) {
            hg[i] = (float)((i * 37 % 17) - 8) / 8.0f;
            hy[i] = (float)(i * 13 % 11 + 1) / 64.0f;
        }
        for (int64_t i = 0; i < S2; i++) hm[i] = i % 3 == 0;
        void *dg, *dy, *dm, *doo;
        CHECK_EQ(aclrtMalloc(&dg, (size_t)n * 4, ACL_MEM_MALLOC_HUGE_FIRST), 0);
        CHECK_EQ(aclrtMalloc(&dy, (size_t)n * 4, ACL_MEM_MALLOC_HUGE_FIRST), 0);
        CHECK_EQ(aclrtMalloc(&dm, (size_t)S2, ACL_MEM_MALLOC_HUGE_FIRST), 0);
        CHECK_EQ(aclrtMalloc(&doo, (size_t)n * 4, ACL_MEM_MALLOC_HUGE_FIRST), 0);
        CHECK_EQ(aclrtMemcpy(dg, (size_t)n * 4, hg, (size_t)n * 4, ACL_MEMCPY_HOST_TO_DEVICE), 0);
        CHECK_EQ(aclrtMemcpy(dy, (size_t)n * 4, hy, (size_t)n * 4, ACL_MEMCPY_HOST_TO_DEVICE), 0);
        CHECK_EQ(aclrtMemcpy(dm, (size_t)S2, hm, (size_t)S2, ACL_MEMCPY_HOST_TO_DEVICE), 0);
        /* the reference: independent double loop */
        for (int64_t r = 0; r < 6; r++) {
            double s = 0;
            for (int64_t j = 0; j < S2; j++) s += (double)hg[r * S2 + j] * hy[r * S2 + j];
            for (int64_t j = 0; j < S2; j++) {
                const double v = ((double)hg[r * S2 + j] * hy[r * S2 + j] - s * hy[r * S2 + j]) * 0.5;
                ref[r * S2 + j] = hm[j] ? 0.0f : (float)v;
            }
        }
        for (int ti = 0; ti < 4; ti++) {
            if (pyaclnnSetMaxIsa(tiers[ti]) != 0) continue; /* not on this CPU */
            float first[600];
            for (int layout = 0; layout < 2; layout++) {
                aclTensor *g = mk4(dims, layout ? odd : plain, 0, st, 1, ACL_FLOAT, dg);
                aclTensor *y = mk4(dims, layout ? odd : plain, 0, st, 1, ACL_FLOAT, dy);
                aclTensor *m = mk4(mdims, layout ? modd : NULL, 0, mst, 1, ACL_BOOL, dm);
                aclTensor *o = mk4(dims, layout ? odd : plain, 0, st, 1, ACL_FLOAT, doo);
                aclOpExecutor *ex;
                CHECK_EQ(smsb_ws(g, y, m, o, 0.5, &ex), 0);
                CHECK_EQ(smsb_launch(ex), 0);
                CHECK_EQ(aclrtMemcpy(got, (size_t)n * 4, doo, (size_t)n * 4, ACL_MEMCPY_DEVICE_TO_HOST), 0);
                for (int64_t i = 0; i < n; i++) CHECK(dabs(got[i] - ref[i]) <= 1e-5 + 1e-5 * dabs(ref[i]));
                if (layout == 0) memcpy(first, got, (size_t)n * 4);
                else CHECK(memcmp(first, got, (size_t)n * 4) == 0);
                aclDestroyTensor(g);
                aclDestroyTensor(y);
                aclDestroyTensor(m);
                aclDestroyTensor(o);
            }
        }
        CHECK_EQ(pyaclnnSetMaxIsa(NULL), 0);
        aclrtFree(dg);
        aclrtFree(dy);
        aclrtFree(dm);
        aclrtFree(doo);
        free(hg);
        free(hy);
        free(ref);
        free(got);
    }
}

/* ---- launch-time address checks (softmax) ---- */

typedef struct smsb_bufs {
    void *g, *y, *m, *o; /* 16 floats / 16 bools each */
} smsb_bufs;

#define SENTINEL 0x5a

/* Runs [1,1,2,8] fp32 with the given addresses; out must be a 64-byte buffer
 * readable from the host. Returns the status and checks that a failed task
 * left out untouched. */
static int smsb_at(const smsb_bufs *b, void *out_host_view) {
    const int64_t d[4] = {1, 1, 2, 8}, st[1] = {16};
    aclTensor *g = mk4(d, NULL, 0, st, 1, ACL_FLOAT, b->g), *y = mk4(d, NULL, 0, st, 1, ACL_FLOAT, b->y);
    aclTensor *m = mk4(d, NULL, 0, st, 1, ACL_BOOL, b->m), *o = mk4(d, NULL, 0, st, 1, ACL_FLOAT, b->o);
    aclOpExecutor *ex;
    CHECK_EQ(smsb_ws(g, y, m, o, 1.0, &ex), 0);
    if (out_host_view != NULL) memset(out_host_view, SENTINEL, 64);
    const int rc = smsb_launch(ex);
    if (rc != 0 && out_host_view != NULL) {
        for (int i = 0; i < 64; i++) CHECK_EQ(((unsigned char *)out_host_view)[i], SENTINEL);
    }
    aclDestroyTensor(g);
    aclDestroyTensor(y);
    aclDestroyTensor(m);
    aclDestroyTensor(o);
    return rc;
}

static void test_smsb_addresses(void) {
    smsb_bufs ok;
    CHECK_EQ(aclrtMalloc(&ok.g, 64, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    CHECK_EQ(aclrtMalloc(&ok.y, 64, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    CHECK_EQ(aclrtMalloc(&ok.m, 16, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    CHECK_EQ(aclrtMalloc(&ok.o, 64, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    CHECK_EQ(aclrtMemset(ok.g, 64, 0, 64), 0);
    CHECK_EQ(aclrtMemset(ok.y, 64, 0, 64), 0);
    CHECK_EQ(aclrtMemset(ok.m, 16, 0, 16), 0);
    CHECK_EQ(smsb_at(&ok, NULL), 0);

    smsb_bufs b = ok;
    /* NULL data (row 1, softmax) -> 361001 at synchronize, out untouched */
    b.g = NULL;
    CHECK_ERR(smsb_at(&b, ok.o), ACLNN_ERR_RUNTIME_ERROR, "gradOutput has no device address");
    b = ok;
    b.o = NULL;
    CHECK_ERR(smsb_at(&b, NULL), ACLNN_ERR_RUNTIME_ERROR, "aclnnScaledMaskedSoftmaxBackward: out has no device");
    /* a stack pointer, a malloc pointer */
    float on_stack[16] = {0};
    b = ok;
    b.y = on_stack;
    CHECK_ERR(smsb_at(&b, ok.o), ACL_ERROR_RT_AICORE_EXCEPTION, "y storage [");
    CHECK(msg_has("the DDR address is out of range"));
    float *heap = calloc(16, sizeof(float));
    b = ok;
    b.m = heap;
    CHECK_ERR(smsb_at(&b, ok.o), ACL_ERROR_RT_AICORE_EXCEPTION, "mask storage [");
    b = ok;
    b.o = heap; /* the output itself outside device memory: nothing written */
    memset(heap, SENTINEL, 64);
    CHECK_ERR(smsb_at(&b, NULL), ACL_ERROR_RT_AICORE_EXCEPTION, "out storage [");
    for (int i = 0; i < 64; i++) CHECK_EQ(((unsigned char *)heap)[i], SENTINEL);
    /* storage running past the end of its block (aclrtMallocAlign32: exactly 32 bytes;
     * aclrtMalloc would add CANN's 32 bytes of padding) */
    void *short_blk;
    CHECK_EQ(aclrtMallocAlign32(&short_blk, 32, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    b = ok;
    b.g = short_blk;
    CHECK_ERR(smsb_at(&b, ok.o), ACL_ERROR_RT_AICORE_EXCEPTION, "runs past the end of the aclrtMalloc block");
    /* an interior pointer with enough room is fine */
    void *big_blk;
    CHECK_EQ(aclrtMallocAlign32(&big_blk, 256, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    CHECK_EQ(aclrtMemset(big_blk, 256, 0, 256), 0);
    b = ok;
    b.g = (char *)big_blk + 128;
    CHECK_EQ(smsb_at(&b, NULL), 0);
    b.g = (char *)big_blk + 200; /* 64 bytes from +200 run past +256 */
    CHECK_ERR(smsb_at(&b, ok.o), ACL_ERROR_RT_AICORE_EXCEPTION, "runs past the end");
    /* a freed block */
    CHECK_EQ(aclrtFree(short_blk), 0);
    b = ok;
    b.g = short_blk;
    CHECK_EQ(smsb_at(&b, ok.o), ACL_ERROR_RT_AICORE_EXCEPTION);

    /* host memory registered with aclrtHostRegister: accepted, same bits */
    float *hostg = aligned_alloc(4096, 4096), *hosto = aligned_alloc(4096, 4096);
    CHECK(hostg != NULL && hosto != NULL);
    void *devg = NULL, *devo = NULL;
    const float gv[16] = {1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, -5, -6, -7, -8};
    const float yv[16] = {.1f, .2f, .3f, .4f, .1f, .2f, .3f, .4f, .4f, .3f, .2f, .1f, .1f, .1f, .1f, .1f};
    memcpy(hostg, gv, sizeof gv);
    CHECK_EQ(aclrtMemcpy(ok.g, 64, gv, 64, ACL_MEMCPY_HOST_TO_DEVICE), 0);
    CHECK_EQ(aclrtMemcpy(ok.y, 64, yv, 64, ACL_MEMCPY_HOST_TO_DEVICE), 0);
    CHECK_EQ(smsb_at(&ok, NULL), 0);
    float want[16];
    CHECK_EQ(aclrtMemcpy(want, 64, ok.o, 64, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    b = ok;
    b.g = hostg;
    b.o = hosto;
    CHECK_EQ(smsb_at(&b, hosto), ACL_ERROR_RT_AICORE_EXCEPTION); /* not registered yet */
    CHECK_EQ(aclrtHostRegister(hostg, 4096, ACL_HOST_REGISTER_MAPPED, &devg), 0);
    CHECK_EQ(aclrtHostRegister(hosto, 4096, ACL_HOST_REGISTER_MAPPED, &devo), 0);
    b.g = devg;
    b.o = devo;
    CHECK_EQ(smsb_at(&b, NULL), 0);
    CHECK(memcmp(hosto, want, 64) == 0);
    /* a second registration overlapping the first, and unregistering twice */
    CHECK_ERR(aclrtHostRegister(hostg + 16, 64, ACL_HOST_REGISTER_MAPPED, &devg), ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
              "overlaps the aclrtHostRegister range");
    CHECK_EQ(aclrtHostUnregister(hostg), 0);
    CHECK_ERR(aclrtHostUnregister(hostg), ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, "is not the start of a range");
    CHECK_ERR(smsb_at(&b, hosto), ACL_ERROR_RT_AICORE_EXCEPTION, "gradOutput storage");
    CHECK_EQ(aclrtHostUnregister(hosto), 0);

    /* aclrtMallocHost memory: refused until registered (CANN requires aclrtHostRegister) */
    void *pinned = NULL, *pinned_dev = NULL;
    CHECK_EQ(aclrtMallocHost(&pinned, 64), 0);
    memcpy(pinned, gv, 64);
    b = ok;
    b.g = pinned;
    CHECK_ERR(smsb_at(&b, ok.o), ACL_ERROR_RT_AICORE_EXCEPTION, "aclrtMallocHost block");
    CHECK(msg_has("only after aclrtHostRegister"));
    CHECK_EQ(aclrtHostRegister(pinned, 64, ACL_HOST_REGISTER_MAPPED, &pinned_dev), 0);
    b.g = pinned_dev;
    CHECK_EQ(smsb_at(&b, NULL), 0);
    /* freeing it while registered would leave kernels a path into freed memory */
    CHECK_ERR(aclrtFreeHost(pinned), ACL_ERROR_INVALID_PARAM, "still registered for device access");
    CHECK_EQ(aclrtHostUnregister(pinned), 0);
    void *part = NULL;
    CHECK_EQ(aclrtHostRegister((char *)pinned + 16, 16, ACL_HOST_REGISTER_MAPPED, &part), 0);
    CHECK_ERR(aclrtFreeHost(pinned), ACL_ERROR_INVALID_PARAM, "call aclrtHostUnregister first");
    CHECK_EQ(aclrtHostUnregister((char *)pinned + 16), 0);
    CHECK_EQ(aclrtFreeHost(pinned), 0);

    /* addresses re-pointed on a repeatable executor */
    const int64_t d[4] = {1, 1, 2, 8}, st[1] = {16};
    aclTensor *g = mk4(d, NULL, 0, st, 1, ACL_FLOAT, ok.g), *y = mk4(d, NULL, 0, st, 1, ACL_FLOAT, ok.y);
    aclTensor *m = mk4(d, NULL, 0, st, 1, ACL_BOOL, ok.m), *o = mk4(d, NULL, 0, st, 1, ACL_FLOAT, ok.o);
    aclOpExecutor *ex;
    CHECK_EQ(smsb_ws(g, y, m, o, 1.0, &ex), 0);
    CHECK_EQ(aclSetAclOpExecutorRepeatable(ex), 0);
    CHECK_EQ(aclSetInputTensorAddr(ex, 1, y, on_stack), 0);
    CHECK_ERR(smsb_launch(ex), ACL_ERROR_RT_AICORE_EXCEPTION, "y storage");
    CHECK_EQ(aclSetInputTensorAddr(ex, 1, y, ok.y), 0);
    CHECK_EQ(aclSetOutputTensorAddr(ex, 0, o, NULL), 0);
    CHECK_ERR(smsb_launch(ex), ACLNN_ERR_RUNTIME_ERROR, "out has no device address");
    CHECK_EQ(aclSetOutputTensorAddr(ex, 0, NULL, heap), 0);
    CHECK_ERR(smsb_launch(ex), ACL_ERROR_RT_AICORE_EXCEPTION, "out storage");
    CHECK_EQ(aclSetOutputTensorAddr(ex, 0, o, ok.o), 0);
    CHECK_EQ(smsb_launch(ex), 0);
    /* a destroyed tensor handed to aclSetInputTensorAddr */
    aclTensor *gone = small_tensor();
    CHECK_EQ(aclDestroyTensor(gone), 0);
    CHECK_ERR(aclSetInputTensorAddr(ex, 0, gone, ok.g), ACLNN_ERR_PARAM_INVALID, "already destroyed");
    CHECK_EQ(aclDestroyAclOpExecutor(ex), 0);
    aclDestroyTensor(g);
    aclDestroyTensor(y);
    aclDestroyTensor(m);
    aclDestroyTensor(o);

    free(heap);
    free(hostg);
    free(hosto);
    aclrtFree(big_blk);
    aclrtFree(ok.g);
    aclrtFree(ok.y);
    aclrtFree(ok.m);
    aclrtFree(ok.o);
}

/* ======================================================================
 * NSA grad problems: T1 4, T2 64, N1 2, N2 1, D = Dv = 128, block 16, count 4
 * ==================================================================== */

enum { NT1 = 4, NT2 = 64, NN1 = 2, NN2 = 1, ND = 128, NC = 4, NBLK = 16 };

typedef struct nsa_prob {
    aclTensor *t[11];
    void *dev[11];
    size_t bytes[11];
    aclIntArray *aq, *akv;
} nsa_prob;

static const char *const k_nsa_names[11] = {"query", "key", "value", "attentionOut", "attentionOutGrad",
                                            "softmaxMax", "softmaxSum", "topkIndices", "dqOut", "dkOut", "dvOut"};

static void nsa_dims(int i, int64_t d[3]) {
    static const int64_t dims[11][3] = {{NT1, NN1, ND}, {NT2, NN2, ND}, {NT2, NN2, ND}, {NT1, NN1, ND},
                                        {NT1, NN1, ND}, {NT1, NN1, 8},  {NT1, NN1, 8},  {NT1, NN2, NC},
                                        {NT1, NN1, ND}, {NT2, NN2, ND}, {NT2, NN2, ND}};
    memcpy(d, dims[i], sizeof dims[i]);
}

static aclDataType nsa_dtype(int i) { return i == 5 || i == 6 ? ACL_FLOAT : i == 7 ? ACL_INT32 : ACL_FLOAT16; }

static aclTensor *nsa_tensor(int i, const int64_t *strides, int64_t offset, int64_t storage, void *data) {
    int64_t d[3];
    nsa_dims(i, d);
    const int64_t st[1] = {storage};
    aclTensor *t = aclCreateTensor(d, 3, nsa_dtype(i), strides, offset, ACL_FORMAT_ND, st, 1, data);
    CHECK(t != NULL);
    return t;
}

static void nsa_make(nsa_prob *p) {
    for (int i = 0; i < 11; i++) {
        int64_t d[3];
        nsa_dims(i, d);
        const int64_t n = d[0] * d[1] * d[2];
        const size_t es = nsa_dtype(i) == ACL_FLOAT16 ? 2 : 4;
        p->bytes[i] = (size_t)n * es;
        CHECK_EQ(aclrtMalloc(&p->dev[i], p->bytes[i], ACL_MEM_MALLOC_HUGE_FIRST), 0);
        unsigned char *h = malloc(p->bytes[i]);
        CHECK(h != NULL);
        for (int64_t e = 0; e < n; e++) {
            if (i == 5 || i == 6) { /* max 0, sum 1 */
                const float f = i == 6 ? 1.0f : 0.0f;
                memcpy(h + e * 4, &f, 4);
            } else if (i == 7) {
                const int32_t v = (int32_t)(e % NC);
                memcpy(h + e * 4, &v, 4);
            } else {
                const uint16_t v = pa_f32_to_f16((float)((e * 7 + i) % 13 - 6) / 64.0f);
                memcpy(h + e * 2, &v, 2);
            }
        }
        CHECK_EQ(aclrtMemcpy(p->dev[i], p->bytes[i], h, p->bytes[i], ACL_MEMCPY_HOST_TO_DEVICE), 0);
        free(h);
        p->t[i] = nsa_tensor(i, NULL, 0, n, p->dev[i]);
    }
    const int64_t sq[1] = {NT1}, skv[1] = {NT2};
    p->aq = aclCreateIntArray(sq, 1);
    p->akv = aclCreateIntArray(skv, 1);
}

static void nsa_free(nsa_prob *p) {
    for (int i = 0; i < 11; i++) {
        aclDestroyTensor(p->t[i]);
        aclrtFree(p->dev[i]);
    }
    aclDestroyIntArray(p->aq);
    aclDestroyIntArray(p->akv);
}

static int nsa_ws(const nsa_prob *p, const aclTensor *mask, double scale, uint64_t *ws, aclOpExecutor **ex) {
    char layout[] = "TND";
    aclTensor *const *t = p->t;
    *ex = NULL;
    return aclnnNsaSelectedAttentionGradGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], p->aq,
                                                         p->akv, mask, scale, NBLK, NC, NN1, layout, 0, t[8], t[9],
                                                         t[10], ws, ex);
}

/* GetWorkspaceSize + launch + synchronise with a fresh workspace of its size. */
static int nsa_run(const nsa_prob *p, const aclTensor *mask) {
    uint64_t ws;
    aclOpExecutor *ex;
    int rc = nsa_ws(p, mask, 0.125, &ws, &ex);
    if (rc != 0) return rc;
    void *w = NULL;
    CHECK_EQ(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    rc = aclnnNsaSelectedAttentionGrad(w, ws, ex, g_stream);
    if (rc == 0) rc = aclrtSynchronizeStream(g_stream);
    aclrtFree(w);
    return rc;
}

static void test_nsa_views(void) {
    nsa_prob p;
    nsa_make(&p);
    uint64_t ws;
    aclOpExecutor *ex;
    CHECK_EQ(nsa_ws(&p, NULL, 0.125, &ws, &ex), 0);
    CHECK_EQ(aclDestroyAclOpExecutor(ex), 0);

    /* row 2: query strides {INT64_MAX/2, 128, 1} */
    aclTensor *keep = p.t[0];
    const int64_t over[3] = {INT64_MAX / 2, 128, 1};
    p.t[0] = nsa_tensor(0, over, 0, NT1 * NN1 * ND, p.dev[0]);
    CHECK_ERR(nsa_ws(&p, NULL, 0.125, &ws, &ex), ACLNN_ERR_PARAM_INVALID,
              "aclnnNsaSelectedAttentionGradGetWorkspaceSize: query view (shape [4,2,128]");
    CHECK(msg_has("int64 overflow"));
    aclDestroyTensor(p.t[0]);
    p.t[0] = keep;

    /* row 3 (NSA): every tensor, its storage one element short */
    for (int i = 0; i < 11; i++) {
        int64_t d[3];
        nsa_dims(i, d);
        keep = p.t[i];
        p.t[i] = nsa_tensor(i, NULL, 0, d[0] * d[1] * d[2] - 1, p.dev[i]);
        char needle[64];
        snprintf(needle, sizeof needle, ": %s view (shape", k_nsa_names[i]);
        CHECK_ERR(nsa_ws(&p, NULL, 0.125, &ws, &ex), ACLNN_ERR_PARAM_INVALID, needle);
        snprintf(needle, sizeof needle, "past its storage of %lld elements", (long long)(d[0] * d[1] * d[2] - 1));
        CHECK(msg_has(needle));
        aclDestroyTensor(p.t[i]);
        p.t[i] = keep;
    }

    /* key with a huge stride on its size-1 head dim: same bits as the plain layout */
    CHECK_EQ(nsa_run(&p, NULL), 0);
    uint16_t want[NT2 * ND], got[NT2 * ND];
    CHECK_EQ(aclrtMemcpy(want, sizeof want, p.dev[9], sizeof want, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    keep = p.t[1];
    const int64_t odd[3] = {ND, INT64_MAX, 1};
    p.t[1] = nsa_tensor(1, odd, 0, NT2 * ND, p.dev[1]);
    CHECK_EQ(aclrtMemset(p.dev[9], sizeof want, 0, sizeof want), 0);
    CHECK_EQ(nsa_run(&p, NULL), 0);
    CHECK_EQ(aclrtMemcpy(got, sizeof got, p.dev[9], sizeof got, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    CHECK(memcmp(want, got, sizeof want) == 0);
    aclDestroyTensor(p.t[1]);
    p.t[1] = keep;

    /* an empty optional mask: no address needed; its offset may not pass its storage */
    const int64_t md[2] = {0, 0}, ms[1] = {0};
    aclTensor *mask = aclCreateTensor(md, 2, ACL_BOOL, NULL, 0, ACL_FORMAT_ND, ms, 1, NULL);
    CHECK_EQ(nsa_run(&p, mask), 0);
    aclDestroyTensor(mask);
    mask = aclCreateTensor(md, 2, ACL_BOOL, NULL, 5, ACL_FORMAT_ND, ms, 1, NULL);
    CHECK_ERR(nsa_ws(&p, mask, 0.125, &ws, &ex), ACLNN_ERR_PARAM_INVALID,
              "attenMaskOptional view (shape [0,0], strides [1,1], offset 5) is empty, but its offset lies past");
    aclDestroyTensor(mask);

    /* destroyed actual-length arrays */
    aclIntArray *aq = p.aq;
    const int64_t sq[1] = {NT1};
    p.aq = aclCreateIntArray(sq, 1);
    CHECK_EQ(aclDestroyIntArray(p.aq), 0);
    CHECK_ERR(nsa_ws(&p, NULL, 0.125, &ws, &ex), ACLNN_ERR_PARAM_INVALID,
              "actualSeqQLenOptional must be a live aclIntArray");
    p.aq = (aclIntArray *)(void *)p.t[0]; /* a tensor passed as an int array */
    CHECK_ERR(nsa_ws(&p, NULL, 0.125, &ws, &ex), ACLNN_ERR_PARAM_INVALID, "which is a live aclTensor");
    p.aq = aq;
    nsa_free(&p);
}

static void test_nsa_addresses(void) {
    nsa_prob p;
    nsa_make(&p);
    /* row 1: a NULL data pointer in any of the 11 tensors -> 361001 naming it, outputs untouched */
    unsigned char *snap[3];
    for (int o = 0; o < 3; o++) {
        snap[o] = malloc(p.bytes[8 + o]);
        CHECK(snap[o] != NULL);
        CHECK_EQ(aclrtMemset(p.dev[8 + o], p.bytes[8 + o], SENTINEL, p.bytes[8 + o]), 0);
    }
    for (int i = 0; i < 11; i++) {
        aclTensor *keep = p.t[i];
        int64_t d[3];
        nsa_dims(i, d);
        p.t[i] = nsa_tensor(i, NULL, 0, d[0] * d[1] * d[2], NULL);
        char needle[96];
        snprintf(needle, sizeof needle, "aclnnNsaSelectedAttentionGrad: %s has no device address", k_nsa_names[i]);
        CHECK_ERR(nsa_run(&p, NULL), ACLNN_ERR_RUNTIME_ERROR, needle);
        for (int o = 0; o < 3; o++) {
            CHECK_EQ(aclrtMemcpy(snap[o], p.bytes[8 + o], p.dev[8 + o], p.bytes[8 + o], ACL_MEMCPY_DEVICE_TO_HOST),
                     0);
            for (size_t e = 0; e < p.bytes[8 + o]; e++) CHECK_EQ(snap[o][e], SENTINEL);
        }
        aclDestroyTensor(p.t[i]);
        p.t[i] = keep;
    }
    for (int o = 0; o < 3; o++) free(snap[o]);

    /* workspace: too small a size (161002 at the launch call); a block smaller than the size given (the task fails) */
    uint64_t ws;
    aclOpExecutor *ex;
    CHECK_EQ(nsa_ws(&p, NULL, 0.125, &ws, &ex), 0);
    void *half = NULL;
    CHECK_EQ(aclrtMalloc(&half, ws / 2, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    CHECK_ERR(aclnnNsaSelectedAttentionGrad(half, ws / 2, ex, g_stream), ACLNN_ERR_PARAM_INVALID,
              "workspaceSize must be at least");
    CHECK_EQ(aclnnNsaSelectedAttentionGrad(half, ws, ex, g_stream), 0);
    CHECK_ERR(aclrtSynchronizeStream(g_stream), ACL_ERROR_RT_AICORE_EXCEPTION, "workspace [");
    CHECK(msg_has("runs past the end of the aclrtMalloc block"));
    aclrtFree(half);
    /* a stack workspace */
    CHECK_EQ(nsa_ws(&p, NULL, 0.125, &ws, &ex), 0);
    static char fake_ws[64];
    CHECK_EQ(aclnnNsaSelectedAttentionGrad(fake_ws, ws, ex, g_stream), 0);
    CHECK_ERR(aclrtSynchronizeStream(g_stream), ACL_ERROR_RT_AICORE_EXCEPTION, "workspace [");
    /* everything right again */
    CHECK_EQ(nsa_run(&p, NULL), 0);
    nsa_free(&p);
}

int main(void) {
    CHECK_EQ(aclInit(NULL), 0);
    CHECK_EQ(aclrtSetDevice(0), 0);
    CHECK_EQ(aclrtCreateStream(&g_stream), 0);

    test_double_destroy_every_kind();
    test_foreign_and_wrong_kind();
    test_lists();
    test_quarantine_overflow();
    test_destroy_race();
    test_smsb_view_rules();
    test_smsb_size1_strides();
    test_smsb_addresses();
    test_nsa_views();
    test_nsa_addresses();

    CHECK_EQ(aclrtDestroyStream(g_stream), 0);
    CHECK_EQ(aclrtResetDevice(0), 0);
    CHECK_EQ(aclFinalize(), 0);
    printf("test_memory_safety: %d checks passed\n", g_checks);
    return 0;
}
