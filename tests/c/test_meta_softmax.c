/* Tests of the aclnn meta API (tensors, scalars, arrays, lists, executors) and of
 * aclnnScaledMaskedSoftmaxBackward through the public API (libascendcl.so):
 * every validation error, executor lifetime rules, numerics against a double
 * loop, bitwise agreement of the ISA tiers and thread counts, fp16/bf16 rounding.
 * Plain C; exits 1 on the first failure. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_nsa_selected_attention_grad.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"
#include "common/pa_half.h"  /* reference fp16/bf16 conversions */
#include "meta/pa_tensor.h"  /* handle layouts, to check what creation stored */
#include "pyaclnn/pyaclnn_ext.h"

#include "pa_check.h"

/* rc equals `code` and the recent message mentions `needle` */

static aclrtStream g_stream;

/* |x| without libm (run_c_tests.sh links no -lm) */
static double dabs(double x) { return x < 0 ? -x : x; }

/* ---- random numbers ---- */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double urand(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

/* ---- host <-> element helpers ---- */
static size_t esize(aclDataType dt) { return dt == ACL_FLOAT ? 4 : dt == ACL_BOOL ? 1 : 2; }

static float get_elem(const void *base, int64_t idx, aclDataType dt) {
    const char *p = (const char *)base + (size_t)idx * esize(dt);
    if (dt == ACL_FLOAT) { float f; memcpy(&f, p, 4); return f; }
    uint16_t h;
    memcpy(&h, p, 2);
    return dt == ACL_FLOAT16 ? pa_f16_to_f32(h) : pa_bf16_to_f32(h);
}

static void put_elem(void *base, int64_t idx, aclDataType dt, float f) {
    char *p = (char *)base + (size_t)idx * esize(dt);
    if (dt == ACL_FLOAT) { memcpy(p, &f, 4); return; }
    uint16_t h = dt == ACL_FLOAT16 ? pa_f32_to_f16(f) : pa_f32_to_bf16(f);
    memcpy(p, &h, 2);
}

/* ---- device tensors ---- */
typedef struct dtensor {
    aclTensor *t;
    void *dev;
    void *host;     /* host copy of the whole storage */
    int64_t nstore; /* storage elements */
    aclDataType dt;
    int64_t dims[4], strides[4], offset;
} dtensor;

/* strides NULL = contiguous. Storage is sized to hold the view (plus slack). */
static dtensor dt_make(const int64_t dims[4], aclDataType dt, const int64_t *strides, int64_t offset) {
    dtensor d;
    memset(&d, 0, sizeof d);
    d.dt = dt;
    d.offset = offset;
    int64_t s = 1;
    for (int i = 3; i >= 0; i--) {
        d.dims[i] = dims[i];
        d.strides[i] = strides ? strides[i] : s;
        s *= dims[i];
    }
    int64_t last = offset;
    for (int i = 0; i < 4; i++) last += (dims[i] - 1) * d.strides[i];
    d.nstore = last + 1 + 7;
    const size_t bytes = (size_t)d.nstore * esize(dt);
    d.host = calloc(1, bytes);
    CHECK(d.host != NULL);
    CHECK_EQ(aclrtMalloc(&d.dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    d.t = aclCreateTensor(d.dims, 4, dt, d.strides, offset, ACL_FORMAT_ND, &d.nstore, 1, d.dev);
    CHECK(d.t != NULL);
    return d;
}

static int64_t dt_index(const dtensor *d, int64_t b, int64_t n, int64_t s1, int64_t s2) {
    return d->offset + b * d->strides[0] + n * d->strides[1] + s1 * d->strides[2] + s2 * d->strides[3];
}

static void dt_upload(dtensor *d) {
    const size_t bytes = (size_t)d->nstore * esize(d->dt);
    CHECK_EQ(aclrtMemcpy(d->dev, bytes, d->host, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
}

static void dt_download(dtensor *d) {
    const size_t bytes = (size_t)d->nstore * esize(d->dt);
    CHECK_EQ(aclrtMemcpy(d->host, bytes, d->dev, bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
}

static void dt_free(dtensor *d) {
    CHECK_EQ(aclDestroyTensor(d->t), 0);
    CHECK_EQ(aclrtFree(d->dev), ACL_SUCCESS);
    free(d->host);
    memset(d, 0, sizeof *d);
}

/* Fills the storage: floats uniform in [lo, hi) (rounded to dt), bools with P(true) = pm. */
static void dt_fill(dtensor *d, double lo, double hi) {
    for (int64_t i = 0; i < d->nstore; i++) {
        if (d->dt == ACL_BOOL) ((uint8_t *)d->host)[i] = 0;
        else put_elem(d->host, i, d->dt, (float)(lo + (hi - lo) * urand()));
    }
}

static void dt_fill_mask(dtensor *d, double pm) {
    for (int64_t i = 0; i < d->nstore; i++) ((uint8_t *)d->host)[i] = urand() < pm ? 1 : 0;
}

/* ---- the op ---- */

/* GetWorkspaceSize + launch + synchronize. */
static int run_op(const dtensor *g, const dtensor *y, const dtensor *m, double scale, const dtensor *out) {
    uint64_t ws = 123;
    aclOpExecutor *ex = NULL;
    int rc = aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g->t, y->t, m->t, scale, false, out->t, &ws, &ex);
    if (rc != 0) return rc;
    CHECK_EQ(ws, 0);
    CHECK(ex != NULL);
    rc = aclnnScaledMaskedSoftmaxBackward(NULL, ws, ex, g_stream);
    if (rc != 0) return rc;
    return aclrtSynchronizeStream(g_stream);
}

/* Double-precision reference of one problem; returns out values (row-major [B,N,S1,S2])
 * and, per element, an error bound for an fp32 computation. */
static void reference(const dtensor *g, const dtensor *y, const dtensor *m, double scale, double *ref,
                      double *bound) {
    const int64_t B = g->dims[0], N = g->dims[1], S1 = g->dims[2], S2 = g->dims[3];
    const double sc = (double)(float)scale;
    int64_t k = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t s1 = 0; s1 < S1; s1++) {
                double s = 0, sabs = 0;
                for (int64_t j = 0; j < S2; j++) {
                    const double gv = get_elem(g->host, dt_index(g, b, n, s1, j), g->dt);
                    const double yv = get_elem(y->host, dt_index(y, b, n, s1, j), y->dt);
                    s += gv * yv;
                    sabs += dabs(gv * yv);
                }
                for (int64_t j = 0; j < S2; j++, k++) {
                    const double gv = get_elem(g->host, dt_index(g, b, n, s1, j), g->dt);
                    const double yv = get_elem(y->host, dt_index(y, b, n, s1, j), y->dt);
                    const int64_t mb = m->dims[0] == 1 ? 0 : b, mn = m->dims[1] == 1 ? 0 : n;
                    const uint8_t mv = ((const uint8_t *)m->host)[dt_index(m, mb, mn, s1, j)];
                    ref[k] = mv ? 0.0 : sc * (gv * yv - s * yv);
                    /* fp32: rounding of p, of the sum (<= S2 terms), of s*y, of the difference, of *sc */
                    bound[k] = mv ? 0.0
                                  : dabs(sc) * 2e-7 * (4.0 * dabs(gv * yv) + (double)(S2 + 4) * sabs * dabs(yv) +
                                                       4.0 * dabs(s * yv)) + 1e-30;
                }
            }
}

/* ulp distance between two values of a 16-bit float type (bit patterns). */
static int ulp16(uint16_t a, uint16_t b) {
    int ia = (a & 0x8000) ? -(int)(a & 0x7fff) : (int)(a & 0x7fff);
    int ib = (b & 0x8000) ? -(int)(b & 0x7fff) : (int)(b & 0x7fff);
    return abs(ia - ib);
}

/* Checks out (contiguous) against the reference: fp32 within the error bound,
 * fp16/bf16 within 1 ulp of the correctly rounded value (or within the fp32 bound
 * where cancellation makes the fp32 intermediate itself inexact). */
static void check_against_reference(const dtensor *g, const dtensor *y, const dtensor *m, double scale,
                                    dtensor *out) {
    const int64_t total = g->dims[0] * g->dims[1] * g->dims[2] * g->dims[3];
    double *ref = malloc(sizeof(double) * (size_t)total), *bound = malloc(sizeof(double) * (size_t)total);
    CHECK(ref != NULL && bound != NULL);
    reference(g, y, m, scale, ref, bound);
    dt_download(out);
    int64_t bad = 0;
    for (int64_t i = 0; i < total; i++) {
        const float got = get_elem(out->host, out->offset + i, out->dt);
        bool ok;
        if (ref[i] == 0.0 && bound[i] == 0.0) { /* masked: exactly +0 */
            uint32_t bits = 0;
            if (out->dt == ACL_FLOAT) memcpy(&bits, (char *)out->host + (size_t)(out->offset + i) * 4, 4);
            else { uint16_t h; memcpy(&h, (char *)out->host + (size_t)(out->offset + i) * 2, 2); bits = h; }
            ok = bits == 0;
        } else if (isnan(ref[i]) || isinf(ref[i])) { /* a poisoned row: same non-finite value */
            ok = isnan(ref[i]) ? isnan(got) : (double)got == ref[i];
        } else if (out->dt == ACL_FLOAT) {
            ok = dabs((double)got - ref[i]) <= bound[i];
        } else {
            uint16_t h;
            memcpy(&h, (char *)out->host + (size_t)(out->offset + i) * 2, 2);
            const uint16_t want = out->dt == ACL_FLOAT16 ? pa_f32_to_f16((float)ref[i]) : pa_f32_to_bf16((float)ref[i]);
            ok = ulp16(h, want) <= 1 || dabs((double)got - ref[i]) <= bound[i];
        }
        if (!ok && bad++ == 0) {
            fprintf(stderr, "  first mismatch at %lld (dtype %d): got %.9g want %.9g (bound %.3g)\n", (long long)i,
                    (int)out->dt, got, ref[i], bound[i]);
        }
    }
    CHECK_EQ(bad, 0);
    free(ref);
    free(bound);
}

/* ---------------------------------------------------------------------------------- */

static void test_tensor(void) {
    const int64_t dims[3] = {2, 3, 4};
    char buf[16];
    aclTensor *t = aclCreateTensor(dims, 3, ACL_FLOAT, NULL, 5, ACL_FORMAT_ND, dims, 3, buf);
    CHECK(t != NULL);
    int64_t *v = NULL;
    uint64_t n = 0;
    CHECK_EQ(aclGetViewShape(t, &v, &n), 0);
    CHECK(n == 3 && v[0] == 2 && v[1] == 3 && v[2] == 4);
    free(v);
    CHECK_EQ(aclGetViewStrides(t, &v, &n), 0);
    CHECK(n == 3 && v[0] == 12 && v[1] == 4 && v[2] == 1);
    free(v);
    CHECK_EQ(aclGetStorageShape(t, &v, &n), 0);
    CHECK(n == 3 && v[0] == 2 && v[2] == 4);
    free(v);
    int64_t off = -1;
    CHECK_EQ(aclGetViewOffset(t, &off), 0);
    CHECK_EQ(off, 5);
    aclFormat f;
    CHECK_EQ(aclGetFormat(t, &f), 0);
    CHECK_EQ(f, ACL_FORMAT_ND);
    aclDataType d;
    CHECK_EQ(aclGetDataType(t, &d), 0);
    CHECK_EQ(d, ACL_FLOAT);
    void *addr = NULL;
    CHECK_EQ(aclGetRawTensorAddr(t, &addr), 0);
    CHECK(addr == buf);
    CHECK_EQ(aclSetRawTensorAddr(t, buf + 4), 0);
    CHECK_EQ(aclGetRawTensorAddr(t, &addr), 0);
    CHECK(addr == buf + 4);

    /* explicit strides are kept as given (elements) */
    const int64_t st[3] = {1, 2, 6};
    aclTensor *t2 = aclCreateTensor(dims, 3, ACL_FLOAT16, st, 0, ACL_FORMAT_NCL, NULL, 0, NULL);
    CHECK(t2 != NULL);
    CHECK_EQ(aclGetViewStrides(t2, &v, &n), 0);
    CHECK(n == 3 && v[0] == 1 && v[1] == 2 && v[2] == 6);
    free(v);
    CHECK_EQ(aclGetStorageShape(t2, &v, &n), 0);
    CHECK_EQ(n, 0);
    free(v);
    CHECK_EQ(aclDestroyTensor(t2), 0);

    /* private formats are accepted at creation */
    aclTensor *t3 = aclCreateTensor(dims, 3, ACL_FLOAT16, NULL, 0, ACL_FORMAT_FRACTAL_NZ, dims, 3, NULL);
    CHECK(t3 != NULL);
    CHECK_EQ(aclGetFormat(t3, &f), 0);
    CHECK_EQ(f, ACL_FORMAT_FRACTAL_NZ);
    CHECK_EQ(aclDestroyTensor(t3), 0);

    /* 0-d tensor */
    aclTensor *t0 = aclCreateTensor(NULL, 0, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, NULL, 0, NULL);
    CHECK(t0 != NULL);
    CHECK_EQ(aclGetViewShape(t0, &v, &n), 0);
    CHECK_EQ(n, 0);
    free(v);
    CHECK_EQ(aclDestroyTensor(t0), 0);

    /* creation errors -> NULL with a message */
    CHECK(aclCreateTensor(NULL, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 3, NULL) == NULL);
    CHECK(msg_has("viewDims"));
    CHECK(aclCreateTensor(dims, 3, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, NULL, 1, NULL) == NULL);
    CHECK(msg_has("storageDims"));
    const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK(aclCreateTensor(nine, 9, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, NULL, 0, NULL) == NULL);
    const int64_t neg[2] = {2, -1};
    CHECK(aclCreateTensor(neg, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, NULL, 0, NULL) == NULL);
    CHECK(msg_has("viewDims[1]"));

    /* getters: NULL arguments */
    CHECK_ERR(aclGetViewShape(NULL, &v, &n), ACLNN_ERR_PARAM_NULLPTR, "aclGetViewShape");
    CHECK_ERR(aclGetViewShape(t, NULL, &n), ACLNN_ERR_PARAM_NULLPTR, "viewDims");
    CHECK_ERR(aclGetViewStrides(t, &v, NULL), ACLNN_ERR_PARAM_NULLPTR, "stridesNum");
    CHECK_ERR(aclGetStorageShape(NULL, &v, &n), ACLNN_ERR_PARAM_NULLPTR, "aclGetStorageShape");
    CHECK_ERR(aclGetViewOffset(t, NULL), ACLNN_ERR_PARAM_NULLPTR, "offset");
    CHECK_ERR(aclGetFormat(NULL, &f), ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat");
    CHECK_ERR(aclGetDataType(t, NULL), ACLNN_ERR_PARAM_NULLPTR, "dataType");
    CHECK_ERR(aclGetRawTensorAddr(t, NULL), ACLNN_ERR_PARAM_NULLPTR, "addr");
    CHECK_ERR(aclSetRawTensorAddr(NULL, buf), ACLNN_ERR_PARAM_NULLPTR, "aclSetRawTensorAddr");

    /* aclInitTensor re-initialises in place */
    const int64_t d2[2] = {6, 4};
    CHECK_EQ(aclInitTensor(t, d2, 2, ACL_BF16, NULL, 1, ACL_FORMAT_ND, d2, 2, buf), 0);
    CHECK_EQ(aclGetViewShape(t, &v, &n), 0);
    CHECK(n == 2 && v[0] == 6 && v[1] == 4);
    free(v);
    CHECK_EQ(aclGetDataType(t, &d), 0);
    CHECK_EQ(d, ACL_BF16);
    CHECK_ERR(aclInitTensor(NULL, d2, 2, ACL_BF16, NULL, 0, ACL_FORMAT_ND, d2, 2, buf), ACLNN_ERR_PARAM_NULLPTR,
              "tensor");
    CHECK_ERR(aclInitTensor(t, NULL, 2, ACL_BF16, NULL, 0, ACL_FORMAT_ND, d2, 2, buf), ACLNN_ERR_PARAM_NULLPTR,
              "viewDims");

    CHECK_EQ(aclDestroyTensor(t), 0);
    CHECK_EQ(aclDestroyTensor(NULL), 0);
}

static void test_arrays(void) {
    float fv = 1.5f;
    aclScalar *s = aclCreateScalar(&fv, ACL_FLOAT);
    CHECK(s != NULL);
    fv = 9.0f; /* copied at creation */
    CHECK(s->dtype == ACL_FLOAT && s->v.f == 1.5);
    CHECK_EQ(aclDestroyScalar(s), 0);
    int32_t iv = -7;
    s = aclCreateScalar(&iv, ACL_INT32);
    CHECK(s != NULL && s->v.i == -7);
    CHECK_EQ(aclDestroyScalar(s), 0);
    uint16_t hv = 0x3c00; /* 1.0 in fp16 */
    s = aclCreateScalar(&hv, ACL_FLOAT16);
    CHECK(s != NULL && s->v.f == 1.0);
    CHECK_EQ(aclDestroyScalar(s), 0);
    uint8_t bv = 1;
    s = aclCreateScalar(&bv, ACL_BOOL);
    CHECK(s != NULL && s->v.b);
    CHECK_EQ(aclDestroyScalar(s), 0);
    CHECK(aclCreateScalar(NULL, ACL_FLOAT) == NULL);
    CHECK_EQ(aclDestroyScalar(NULL), 0);

    const int64_t ints[3] = {4, 5, 6};
    aclIntArray *ia = aclCreateIntArray(ints, 3);
    CHECK(ia != NULL && ia->values != ints && ia->values[2] == 6);
    uint64_t n = 0;
    CHECK_EQ(aclGetIntArraySize(ia, &n), 0);
    CHECK_EQ(n, 3);
    CHECK_ERR(aclGetIntArraySize(NULL, &n), ACLNN_ERR_PARAM_NULLPTR, "array");
    CHECK_ERR(aclGetIntArraySize(ia, NULL), ACLNN_ERR_PARAM_NULLPTR, "size");
    CHECK_EQ(aclDestroyIntArray(ia), 0);
    CHECK(aclCreateIntArray(NULL, 2) == NULL);
    aclIntArray *empty = aclCreateIntArray(NULL, 0);
    CHECK(empty != NULL);
    CHECK_EQ(aclGetIntArraySize(empty, &n), 0);
    CHECK_EQ(n, 0);
    CHECK_EQ(aclDestroyIntArray(empty), 0);

    const float floats[2] = {0.5f, -2.0f};
    aclFloatArray *fa = aclCreateFloatArray(floats, 2);
    CHECK(fa != NULL && fa->values[1] == -2.0f);
    CHECK_EQ(aclGetFloatArraySize(fa, &n), 0);
    CHECK_EQ(n, 2);
    CHECK_EQ(aclDestroyFloatArray(fa), 0);

    const bool bools[4] = {true, false, true, true};
    aclBoolArray *ba = aclCreateBoolArray(bools, 4);
    CHECK(ba != NULL && ba->values[0] && !ba->values[1]);
    CHECK_EQ(aclGetBoolArraySize(ba, &n), 0);
    CHECK_EQ(n, 4);
    CHECK_EQ(aclDestroyBoolArray(ba), 0);

    /* lists own (and destroy) their elements; ASan would report a leak otherwise */
    const int64_t dims[1] = {3};
    const aclTensor *ts[2] = {aclCreateTensor(dims, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, dims, 1, NULL),
                              aclCreateTensor(dims, 1, ACL_INT32, NULL, 0, ACL_FORMAT_ND, dims, 1, NULL)};
    aclTensorList *tl = aclCreateTensorList(ts, 2);
    CHECK(tl != NULL);
    CHECK_EQ(aclGetTensorListSize(tl, &n), 0);
    CHECK_EQ(n, 2);
    CHECK_EQ(aclDestroyTensorList(tl), 0);
    CHECK(aclCreateTensorList(NULL, 1) == NULL);

    int64_t i64 = 3;
    const aclScalar *ss[1] = {aclCreateScalar(&i64, ACL_INT64)};
    aclScalarList *sl = aclCreateScalarList(ss, 1);
    CHECK(sl != NULL);
    CHECK_EQ(aclGetScalarListSize(sl, &n), 0);
    CHECK_EQ(n, 1);
    CHECK_ERR(aclGetScalarListSize(NULL, &n), ACLNN_ERR_PARAM_NULLPTR, "scalarList");
    CHECK_EQ(aclDestroyScalarList(sl), 0);

    CHECK_EQ(aclDestroyIntArray(NULL), 0);
    CHECK_EQ(aclDestroyFloatArray(NULL), 0);
    CHECK_EQ(aclDestroyBoolArray(NULL), 0);
    CHECK_EQ(aclDestroyTensorList(NULL), 0);
    CHECK_EQ(aclDestroyScalarList(NULL), 0);

    CHECK_EQ(aclnnInit(NULL), 0);
    CHECK_EQ(aclnnInit(NULL), 0); /* twice is fine */
}

/* ---- validation: one baseline, one change per case ---- */

typedef struct vcase {
    int64_t g[4], y[4], m[4], o[4];
    aclDataType gdt, ydt, mdt, odt;
    aclFormat gf, yf, mf, of;
    int ndim_g, ndim_y, ndim_m, ndim_o;
    int64_t ostride[4];   /* 0 = contiguous */
    int64_t gstride3;     /* 0 = contiguous */
    int64_t goffset;
    bool fix;
    int null_arg;         /* 1..6: gradOutput, y, mask, out, workspaceSize, executor */
} vcase;

static vcase vbase(void) {
    vcase c;
    memset(&c, 0, sizeof c);
    const int64_t d[4] = {2, 3, 4, 8};
    memcpy(c.g, d, sizeof d);
    memcpy(c.y, d, sizeof d);
    memcpy(c.m, d, sizeof d);
    memcpy(c.o, d, sizeof d);
    c.m[1] = 1;
    c.gdt = c.ydt = c.odt = ACL_FLOAT16;
    c.mdt = ACL_BOOL;
    c.gf = c.yf = c.mf = c.of = ACL_FORMAT_ND;
    c.ndim_g = c.ndim_y = c.ndim_m = c.ndim_o = 4;
    return c;
}

static int vrun(const vcase *c) {
    int64_t gst[4] = {c->g[1] * c->g[2] * c->g[3], c->g[2] * c->g[3], c->g[3], 1};
    if (c->gstride3) gst[3] = c->gstride3;
    const int64_t sd[1] = {(int64_t)1 << 40}; /* validation only: storage large enough for every view */
    aclTensor *g = aclCreateTensor(c->g, (uint64_t)c->ndim_g, c->gdt, c->ndim_g == 4 ? gst : NULL, c->goffset,
                                   c->gf, sd, 1, NULL);
    aclTensor *y = aclCreateTensor(c->y, (uint64_t)c->ndim_y, c->ydt, NULL, 0, c->yf, sd, 1, NULL);
    aclTensor *m = aclCreateTensor(c->m, (uint64_t)c->ndim_m, c->mdt, NULL, 0, c->mf, sd, 1, NULL);
    aclTensor *o = aclCreateTensor(c->o, (uint64_t)c->ndim_o, c->odt, c->ostride[3] ? c->ostride : NULL, 0, c->of,
                                   sd, 1, NULL);
    CHECK(g && y && m && o);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const int rc = aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(
        c->null_arg == 1 ? NULL : g, c->null_arg == 2 ? NULL : y, c->null_arg == 3 ? NULL : m, 1.0, c->fix,
        c->null_arg == 4 ? NULL : o, c->null_arg == 5 ? NULL : &ws, c->null_arg == 6 ? NULL : &ex);
    if (rc == 0) {
        CHECK(ex != NULL);
        CHECK_EQ(aclDestroyAclOpExecutor(ex), 0); /* never launched: destroy frees it */
    }
    aclDestroyTensor(g);
    aclDestroyTensor(y);
    aclDestroyTensor(m);
    aclDestroyTensor(o);
    return rc;
}

static void test_validation(void) {
    vcase c = vbase();
    CHECK_EQ(vrun(&c), 0);
    /* every mask broadcast form is accepted */
    const int64_t mforms[4][2] = {{2, 3}, {1, 3}, {2, 1}, {1, 1}};
    for (int i = 0; i < 4; i++) {
        c = vbase();
        c.m[0] = mforms[i][0];
        c.m[1] = mforms[i][1];
        CHECK_EQ(vrun(&c), 0);
    }
    c = vbase(); c.gdt = c.ydt = c.odt = ACL_FLOAT;
    CHECK_EQ(vrun(&c), 0);
    c = vbase(); c.gdt = c.ydt = c.odt = ACL_BF16;
    CHECK_EQ(vrun(&c), 0);
    c = vbase(); c.gf = ACL_FORMAT_NCHW; c.of = ACL_FORMAT_NCHW;
    CHECK_EQ(vrun(&c), 0);
    c = vbase(); c.g[3] = c.y[3] = c.m[3] = c.o[3] = 4096;
    CHECK_EQ(vrun(&c), 0);
    c = vbase(); c.gstride3 = 3; c.goffset = 2; /* non-contiguous input with an offset */
    CHECK_EQ(vrun(&c), 0);
    c = vbase(); c.gstride3 = 0; c.g[3] = 1; c.y[3] = c.m[3] = c.o[3] = 1;
    CHECK_EQ(vrun(&c), 0);

    /* 161001: NULL arguments */
    const char *names[7] = {"", "gradOutput", "y", "mask", "out", "workspaceSize", "executor"};
    for (int i = 1; i <= 6; i++) {
        c = vbase();
        c.null_arg = i;
        CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_NULLPTR, names[i]);
    }
    /* 161002: dtypes */
    c = vbase(); c.gdt = c.ydt = c.odt = ACL_INT32;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "gradOutput dtype");
    c = vbase(); c.gdt = c.ydt = c.odt = ACL_DOUBLE;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "DOUBLE");
    c = vbase(); c.ydt = ACL_FLOAT;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "y dtype");
    c = vbase(); c.odt = ACL_BF16;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "out dtype");
    c = vbase(); c.mdt = ACL_UINT8;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "mask dtype must be BOOL, got UINT8");
    /* formats */
    c = vbase(); c.gf = ACL_FORMAT_NC1HWC0;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "gradOutput format NC1HWC0 is not supported; expected ND");
    c = vbase(); c.yf = ACL_FORMAT_FRACTAL_NZ;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "y format FRACTAL_NZ");
    c = vbase(); c.mf = ACL_FORMAT_UNDEFINED;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "mask format");
    c = vbase(); c.of = ACL_FRACTAL_Z_3D;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "out format");
    /* ranks and shapes */
    c = vbase(); c.ndim_g = 3;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "gradOutput must be 4-D");
    c = vbase(); c.ndim_m = 3;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "mask must be 4-D");
    c = vbase(); c.y[2] = 5;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "y shape must equal gradOutput shape [2,3,4,8], got [2,3,5,8]");
    c = vbase(); c.o[0] = 1;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "out shape");
    c = vbase(); c.m[1] = 2;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "mask shape");
    c = vbase(); c.m[3] = 1;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "mask shape");
    c = vbase(); c.m[2] = 1;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "mask shape");
    /* sizes */
    c = vbase(); c.g[3] = c.y[3] = c.m[3] = c.o[3] = 4097;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "S2 must be in (0, 4096], got 4097");
    c = vbase(); c.g[3] = c.y[3] = c.m[3] = c.o[3] = 0;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "S2");
    c = vbase(); c.g[0] = c.y[0] = c.o[0] = 0; c.m[0] = 1;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "must all be > 0");
    /* strides */
    c = vbase(); c.gstride3 = -1;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "gradOutput strides must be non-negative");
    c = vbase(); c.goffset = -3;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "offset");
    c = vbase(); c.ostride[0] = 96; c.ostride[1] = 32; c.ostride[2] = 8; c.ostride[3] = 2;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "out must be contiguous");
    c = vbase(); c.ostride[0] = 96; c.ostride[1] = 8; c.ostride[2] = 24; c.ostride[3] = 1;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "out must be contiguous");
    /* attribute */
    c = vbase(); c.fix = true;
    CHECK_ERR(vrun(&c), ACLNN_ERR_PARAM_INVALID, "fixTriuMask=true is not supported; only false");
}

/* ---- numerics ---- */

static void test_vendor_example(void) {
    /* the vendor document's example: 16 values 1..16, mask 1,1,0,0,... */
    const int64_t d[4] = {2, 2, 2, 2};
    dtensor g = dt_make(d, ACL_FLOAT, NULL, 0), y = dt_make(d, ACL_FLOAT, NULL, 0);
    dtensor m = dt_make(d, ACL_BOOL, NULL, 0), o = dt_make(d, ACL_FLOAT, NULL, 0);
    const uint8_t mv[16] = {1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0};
    for (int i = 0; i < 16; i++) {
        put_elem(g.host, i, ACL_FLOAT, (float)(i + 1));
        put_elem(y.host, i, ACL_FLOAT, (float)(i + 1));
    }
    memcpy(m.host, mv, 16);
    dt_upload(&g); dt_upload(&y); dt_upload(&m);
    CHECK_EQ(run_op(&g, &y, &m, 1.0, &o), 0);
    dt_download(&o);
    /* row [3,4] (mask 0,0): p = 9,16, s = 25: out = 9-75 = -66, 16-100 = -84 */
    CHECK(get_elem(o.host, 0, ACL_FLOAT) == 0.0f && get_elem(o.host, 1, ACL_FLOAT) == 0.0f);
    CHECK(get_elem(o.host, 2, ACL_FLOAT) == -66.0f && get_elem(o.host, 3, ACL_FLOAT) == -84.0f);
    check_against_reference(&g, &y, &m, 1.0, &o);
    dt_free(&g); dt_free(&y); dt_free(&m); dt_free(&o);
}

/* One random problem with the given layouts, checked against the double loop. */
static void numeric_case(aclDataType dt, const int64_t d[4], const int64_t md[4], int layout, double scale) {
    int64_t gst[4], yst[4], mst[4];
    int64_t goff = 0, yoff = 0, moff = 0, ooff = 0;
    const int64_t N = d[1], S1 = d[2], S2 = d[3];
    const int64_t *gs = NULL, *ys = NULL, *ms = NULL;
    if (layout == 1) {
        /* g stored as [B,S1,N,S2]; y with last stride 2 and an offset; mask transposed in
         * its last two dims with a junk stride on broadcast dims; out with an offset */
        gst[0] = S1 * N * S2; gst[1] = S2; gst[2] = N * S2; gst[3] = 1;
        yst[0] = N * S1 * S2 * 2; yst[1] = S1 * S2 * 2; yst[2] = S2 * 2; yst[3] = 2;
        mst[0] = md[0] == 1 ? 12345 : md[1] * S1 * S2; mst[1] = md[1] == 1 ? 777 : S1 * S2;
        mst[2] = 1; mst[3] = S1;
        goff = 1; yoff = 3; moff = 2; ooff = 5;
        gs = gst; ys = yst; ms = mst;
    } else if (layout == 2) {
        /* broadcast inputs via stride 0 */
        gst[0] = N * S1 * S2; gst[1] = 0; gst[2] = S2; gst[3] = 1;
        yst[0] = 0; yst[1] = S1 * S2; yst[2] = S2; yst[3] = 1;
        gs = gst; ys = yst;
    }
    dtensor g = dt_make(d, dt, gs, goff), y = dt_make(d, dt, ys, yoff);
    dtensor m = dt_make(md, ACL_BOOL, ms, moff), o = dt_make(d, dt, NULL, ooff);
    dt_fill(&g, -1.0, 1.0);
    dt_fill(&y, 0.0, 1.0);
    dt_fill_mask(&m, 0.3);
    dt_upload(&g); dt_upload(&y); dt_upload(&m);
    CHECK_EQ(run_op(&g, &y, &m, scale, &o), 0);
    check_against_reference(&g, &y, &m, scale, &o);
    dt_free(&g); dt_free(&y); dt_free(&m); dt_free(&o);
}

static void test_numerics(void) {
    const aclDataType dts[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    const int64_t shapes[][4] = {{2, 3, 5, 20}, {1, 2, 3, 1}, {2, 2, 3, 64}, {1, 3, 4, 131}, {2, 1, 2, 4096},
                                 {3, 2, 70, 33}};
    for (int t = 0; t < 3; t++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            for (int layout = 0; layout < 3; layout++) {
                int64_t md[4] = {shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]};
                if ((s + (size_t)layout) % 4 == 1) md[0] = 1;
                if ((s + (size_t)layout) % 3 == 0) md[1] = 1;
                numeric_case(dts[t], shapes[s], md, layout, layout == 2 ? -2.5 : 0.7);
            }
        }
    }
}

/* NaN / Inf: masked positions stay exactly 0, unmasked outputs of a poisoned row are NaN. */
static void test_nonfinite(void) {
    const int64_t d[4] = {1, 1, 2, 4};
    dtensor g = dt_make(d, ACL_FLOAT, NULL, 0), y = dt_make(d, ACL_FLOAT, NULL, 0);
    dtensor m = dt_make(d, ACL_BOOL, NULL, 0), o = dt_make(d, ACL_FLOAT, NULL, 0);
    const float gv[8] = {INFINITY, 1, 2, 3, 1, 2, 3, 4};
    const float yv[8] = {0, 0.5f, 0.25f, 0.25f, 0.1f, 0.2f, 0.3f, 0.4f};
    const uint8_t mv[8] = {1, 0, 1, 0, 1, 1, 1, 1}; /* row 1 fully masked */
    memcpy(g.host, gv, sizeof gv);
    memcpy(y.host, yv, sizeof yv);
    memcpy(m.host, mv, sizeof mv);
    dt_upload(&g); dt_upload(&y); dt_upload(&m);
    CHECK_EQ(run_op(&g, &y, &m, 1.0, &o), 0);
    dt_download(&o);
    const float *out = o.host;
    uint32_t bits;
    memcpy(&bits, &out[0], 4);
    CHECK_EQ(bits, 0);
    CHECK(isnan(out[1]) && isnan(out[3]));
    memcpy(&bits, &out[2], 4);
    CHECK_EQ(bits, 0);
    for (int i = 4; i < 8; i++) {
        memcpy(&bits, &out[i], 4);
        CHECK_EQ(bits, 0);
    }
    dt_free(&g); dt_free(&y); dt_free(&m); dt_free(&o);
}

/* Every ISA tier and every thread count gives the same bits. */
static void test_tiers_and_threads(void) {
    const char *tiers[4] = {"scalar", "avx2", "avx512", "avx512bf16"};
    const aclDataType dts[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    const int64_t d[4] = {2, 4, 37, 203};
    const int64_t md[4] = {2, 1, 37, 203};
    for (int t = 0; t < 3; t++) {
        for (int layout = 0; layout < 2; layout++) {
            int64_t yst[4] = {4 * 37 * 203 * 3, 37 * 203 * 3, 203 * 3, 3};
            dtensor g = dt_make(d, dts[t], NULL, 0), y = dt_make(d, dts[t], layout ? yst : NULL, 1);
            dtensor m = dt_make(md, ACL_BOOL, NULL, 0), o = dt_make(d, dts[t], NULL, 0);
            dt_fill(&g, -3.0, 3.0);
            dt_fill(&y, -1.0, 1.0);
            /* a few non-finite values */
            put_elem(g.host, 17, dts[t], NAN);
            put_elem(y.host, 5000, dts[t], INFINITY);
            dt_fill_mask(&m, 0.25);
            dt_upload(&g); dt_upload(&y); dt_upload(&m);
            const size_t bytes = (size_t)o.nstore * esize(dts[t]);
            void *first = malloc(bytes);
            CHECK(first != NULL);
            for (int k = 0; k < 4; k++) {
                CHECK_EQ(pyaclnnSetMaxIsa(tiers[k]), ACL_SUCCESS);
                for (int nt = 1; nt <= 3; nt++) {
                    CHECK_EQ(pyaclnnSetNumThreads(nt), ACL_SUCCESS);
                    CHECK_EQ(aclrtMemset(o.dev, bytes, 0x5a, bytes), ACL_SUCCESS);
                    CHECK_EQ(run_op(&g, &y, &m, 0.37, &o), 0);
                    dt_download(&o);
                    if (k == 0 && nt == 1) {
                        memcpy(first, o.host, bytes);
                        check_against_reference(&g, &y, &m, 0.37, &o); /* finite rows */
                    } else {
                        if (memcmp(first, o.host, bytes) != 0) {
                            fprintf(stderr, "tier %s threads %d differs from scalar/1 (dtype %d)\n", tiers[k], nt,
                                    (int)dts[t]);
                        }
                        CHECK(memcmp(first, o.host, bytes) == 0);
                    }
                }
            }
            free(first);
            dt_free(&g); dt_free(&y); dt_free(&m); dt_free(&o);
        }
    }
    CHECK_EQ(pyaclnnSetMaxIsa(NULL), ACL_SUCCESS);
    CHECK_EQ(pyaclnnSetNumThreads(0), ACL_SUCCESS);
}

/* Outputs of 8 MB and more are written with non-temporal stores (with a head peel
 * when out is not 64-byte aligned): same bits as the scalar tier. */
static void test_large_streaming(void) {
    const char *tiers[4] = {"scalar", "avx2", "avx512", "avx512bf16"};
    const aclDataType dts[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    for (int t = 0; t < 3; t++) {
        const int64_t d[4] = {1, dts[t] == ACL_FLOAT ? 2 : 4, 1024, 1030};
        const int64_t md[4] = {1, 1, 1024, 1030};
        dtensor g = dt_make(d, dts[t], NULL, 0), y = dt_make(d, dts[t], NULL, 0);
        dtensor m = dt_make(md, ACL_BOOL, NULL, 0), o = dt_make(d, dts[t], NULL, 3);
        dt_fill(&g, -1.0, 1.0);
        dt_fill(&y, 0.0, 0.01);
        dt_fill_mask(&m, 0.1);
        dt_upload(&g); dt_upload(&y); dt_upload(&m);
        const size_t bytes = (size_t)o.nstore * esize(dts[t]);
        void *first = malloc(bytes);
        CHECK(first != NULL);
        for (int k = 0; k < 4; k++) {
            CHECK_EQ(pyaclnnSetMaxIsa(tiers[k]), ACL_SUCCESS);
            CHECK_EQ(aclrtMemset(o.dev, bytes, 0, bytes), ACL_SUCCESS);
            CHECK_EQ(run_op(&g, &y, &m, 1.25, &o), 0);
            dt_download(&o);
            if (k == 0) {
                memcpy(first, o.host, bytes);
                check_against_reference(&g, &y, &m, 1.25, &o);
            } else {
                CHECK(memcmp(first, o.host, bytes) == 0);
            }
        }
        free(first);
        dt_free(&g); dt_free(&y); dt_free(&m); dt_free(&o);
    }
    CHECK_EQ(pyaclnnSetMaxIsa(NULL), ACL_SUCCESS);
}

/* ---- executors ---- */

static void test_executors(void) {
    const int64_t d[4] = {1, 2, 3, 16};
    dtensor g = dt_make(d, ACL_FLOAT, NULL, 0), y = dt_make(d, ACL_FLOAT, NULL, 0);
    dtensor m = dt_make(d, ACL_BOOL, NULL, 0), o = dt_make(d, ACL_FLOAT, NULL, 0);
    dtensor g2 = dt_make(d, ACL_FLOAT, NULL, 0), o2 = dt_make(d, ACL_FLOAT, NULL, 0);
    dt_fill(&g, -1, 1); dt_fill(&y, 0, 1); dt_fill_mask(&m, 0.2); dt_fill(&g2, -1, 1);
    dt_upload(&g); dt_upload(&y); dt_upload(&m); dt_upload(&g2);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;

    /* single use: a second launch is a clear error */
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g.t, y.t, m.t, 1.0, false, o.t, &ws, &ex), 0);
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, g_stream), 0);
    CHECK_EQ(aclrtSynchronizeStream(g_stream), ACL_SUCCESS);
    CHECK_ERR(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, g_stream), ACLNN_ERR_PARAM_INVALID,
              "executor was already used by a launch; call aclSetAclOpExecutorRepeatable");
    CHECK_ERR(aclSetInputTensorAddr(ex, 0, NULL, g.dev), ACLNN_ERR_PARAM_INVALID, "already used");
    CHECK_ERR(aclSetAclOpExecutorRepeatable(ex), ACLNN_ERR_PARAM_INVALID, "already used");
    CHECK_ERR(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID, "already released");

    /* NULL / unknown executors */
    CHECK_ERR(aclnnScaledMaskedSoftmaxBackward(NULL, 0, NULL, g_stream), ACLNN_ERR_PARAM_NULLPTR, "executor");
    int not_an_executor = 0;
    CHECK_ERR(aclnnScaledMaskedSoftmaxBackward(NULL, 0, (aclOpExecutor *)&not_an_executor, g_stream),
              ACLNN_ERR_PARAM_INVALID, "not a live executor");
    CHECK_EQ(aclDestroyAclOpExecutor(NULL), 0);
    CHECK_ERR(aclSetInputTensorAddr(NULL, 0, NULL, g.dev), ACLNN_ERR_INNER_NULLPTR, "executor");
    CHECK_ERR(aclSetAclOpExecutorRepeatable(NULL), ACLNN_ERR_PARAM_NULLPTR, "executor");

    /* repeatable: launch twice, swap an input address in between */
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g.t, y.t, m.t, 1.0, false, o.t, &ws, &ex), 0);
    CHECK_EQ(aclSetAclOpExecutorRepeatable(ex), 0);
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, g_stream), 0);
    CHECK_EQ(aclrtSynchronizeStream(g_stream), ACL_SUCCESS);
    check_against_reference(&g, &y, &m, 1.0, &o);
    CHECK_EQ(aclSetInputTensorAddr(ex, 0, g.t, g2.dev), 0);
    void *addr = NULL;
    CHECK_EQ(aclGetRawTensorAddr(g.t, &addr), 0);
    CHECK(addr == g2.dev); /* the tensor follows the executor */
    CHECK_EQ(aclSetOutputTensorAddr(ex, 0, NULL, o2.dev), 0);
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, g_stream), 0);
    CHECK_EQ(aclrtSynchronizeStream(g_stream), ACL_SUCCESS);
    check_against_reference(&g2, &y, &m, 1.0, &o2);
    /* aclSetTensorAddr counts inputs then outputs: index 3 is out */
    CHECK_EQ(aclSetTensorAddr(ex, 3, o.t, o.dev), 0);
    CHECK_EQ(AclSetTensorAddr(ex, 0, NULL, g.dev), 0);
    CHECK_EQ(AclSetInputTensorAddr(ex, 2, NULL, m.dev), 0);
    CHECK_EQ(AclSetOutputTensorAddr(ex, 0, NULL, o.dev), 0);
    CHECK_ERR(aclSetInputTensorAddr(ex, 3, NULL, g.dev), ACLNN_ERR_PARAM_INVALID, "3 inputs");
    CHECK_ERR(aclSetOutputTensorAddr(ex, 1, NULL, g.dev), ACLNN_ERR_PARAM_INVALID, "1 outputs");
    CHECK_ERR(aclSetTensorAddr(ex, 4, NULL, g.dev), ACLNN_ERR_PARAM_INVALID, "4 tensors");
    CHECK_ERR(aclSetDynamicInputTensorAddr(ex, 0, 0, NULL, g.dev), ACLNN_ERR_PARAM_INVALID, "dynamic");
    CHECK_ERR(aclSetDynamicOutputTensorAddr(ex, 0, 0, NULL, g.dev), ACLNN_ERR_PARAM_INVALID, "dynamic");
    CHECK_ERR(aclSetDynamicTensorAddr(ex, 0, 0, NULL, g.dev), ACLNN_ERR_PARAM_INVALID, "dynamic");
    CHECK_ERR(AclSetDynamicTensorAddr(NULL, 0, 0, NULL, g.dev), ACLNN_ERR_INNER_NULLPTR, "executor");
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, g_stream), 0);
    CHECK_EQ(aclrtSynchronizeStream(g_stream), ACL_SUCCESS);
    check_against_reference(&g, &y, &m, 1.0, &o);
    CHECK_EQ(aclDestroyAclOpExecutor(ex), 0);
    CHECK_ERR(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, g_stream), ACLNN_ERR_PARAM_INVALID,
              "not a live executor");

    /* addresses given after planning: tensors made with NULL data */
    aclTensor *gn = aclCreateTensor(d, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d, 4, NULL);
    aclTensor *yn = aclCreateTensor(d, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d, 4, NULL);
    aclTensor *mn = aclCreateTensor(d, 4, ACL_BOOL, NULL, 0, ACL_FORMAT_ND, d, 4, NULL);
    aclTensor *on = aclCreateTensor(d, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d, 4, NULL);
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(gn, yn, mn, 1.0, false, on, &ws, &ex), 0);
    CHECK_EQ(aclSetInputTensorAddr(ex, 0, gn, g.dev), 0);
    CHECK_EQ(aclSetInputTensorAddr(ex, 1, yn, y.dev), 0);
    CHECK_EQ(aclSetInputTensorAddr(ex, 2, mn, m.dev), 0);
    CHECK_EQ(aclSetOutputTensorAddr(ex, 0, on, o2.dev), 0);
    CHECK_EQ(aclrtMemset(o2.dev, 16 * 6 * 4, 0, 16 * 6 * 4), ACL_SUCCESS);
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, g_stream), 0);
    CHECK_EQ(aclrtSynchronizeStream(g_stream), ACL_SUCCESS);
    check_against_reference(&g, &y, &m, 1.0, &o2);

    /* a launch whose input has no address fails on the stream, not with a crash */
    aclrtStream s2 = NULL;
    CHECK_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
    CHECK_EQ(aclSetRawTensorAddr(gn, NULL), 0);
    CHECK_EQ(aclSetRawTensorAddr(yn, y.dev), 0);
    CHECK_EQ(aclSetRawTensorAddr(mn, m.dev), 0);
    CHECK_EQ(aclSetRawTensorAddr(on, o.dev), 0);
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(gn, yn, mn, 1.0, false, on, &ws, &ex), 0);
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, s2), 0);
    CHECK_ERR(aclrtSynchronizeStream(s2), ACLNN_ERR_RUNTIME_ERROR, "gradOutput has no device address");
    CHECK_EQ(aclrtDestroyStream(s2), ACL_SUCCESS);
    aclDestroyTensor(gn); aclDestroyTensor(yn); aclDestroyTensor(mn); aclDestroyTensor(on);

    /* many spent executors: the quarantine recycles memory and stays correct */
    for (int i = 0; i < 1500; i++) {
        CHECK_EQ(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g.t, y.t, m.t, 1.0, false, o.t, &ws, &ex), 0);
        CHECK_EQ(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, g_stream), 0);
    }
    CHECK_EQ(aclrtSynchronizeStream(g_stream), ACL_SUCCESS);
    CHECK_ERR(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, g_stream), ACLNN_ERR_PARAM_INVALID, "already used");

    dt_free(&g); dt_free(&y); dt_free(&m); dt_free(&o); dt_free(&g2); dt_free(&o2);
}

/* Workspace checks and op mismatch, using an executor of the NSA op (which needs a
 * workspace). It is never launched. */
static void test_workspace_and_mismatch(void) {
    static char dummy[64];
    const int64_t T1 = 4, T2 = 256, N1 = 2, N2 = 1, D = 128, C = 4;
    const int64_t dims[11][3] = {{T1, N1, D}, {T2, N2, D}, {T2, N2, D}, {T1, N1, D}, {T1, N1, D}, {T1, N1, 8},
                                 {T1, N1, 8}, {T1, N2, C}, {T1, N1, D}, {T2, N2, D}, {T2, N2, D}};
    aclTensor *t[11];
    for (int i = 0; i < 11; i++) {
        const aclDataType dt = i == 5 || i == 6 ? ACL_FLOAT : i == 7 ? ACL_INT32 : ACL_FLOAT16;
        t[i] = aclCreateTensor(dims[i], 3, dt, NULL, 0, ACL_FORMAT_ND, dims[i], 3, dummy);
        CHECK(t[i] != NULL);
    }
    const int64_t sq[1] = {T1}, skv[1] = {T2};
    aclIntArray *aq = aclCreateIntArray(sq, 1), *akv = aclCreateIntArray(skv, 1);
    char layout[] = "TND";
    uint64_t ws = 0;
    aclOpExecutor *nsa = NULL;
    const int rc = aclnnNsaSelectedAttentionGradGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], aq,
                                                                 akv, NULL, 0.125, 16, C, N1, layout, 2, t[8], t[9],
                                                                 t[10], &ws, &nsa);
    if (rc != 0) {
        fprintf(stderr, "note: NSA executor not available (%d: %s); workspace checks skipped\n", rc,
                aclGetRecentErrMsg());
    } else {
        CHECK(ws > 0);
        CHECK_ERR(aclnnNsaSelectedAttentionGrad(dummy, ws - 1, nsa, g_stream), ACLNN_ERR_PARAM_INVALID,
                  "workspaceSize must be at least");
        CHECK_ERR(aclnnNsaSelectedAttentionGrad(NULL, ws, nsa, g_stream), ACLNN_ERR_PARAM_NULLPTR, "workspace is NULL");
        CHECK_ERR(aclnnScaledMaskedSoftmaxBackward(dummy, ws, nsa, g_stream), ACLNN_ERR_PARAM_INVALID,
                  "aclnnNsaSelectedAttentionGradGetWorkspaceSize");
        CHECK_EQ(aclDestroyAclOpExecutor(nsa), 0); /* the failed launches did not spend it */
    }
    /* a softmax executor handed to the NSA launch */
    const int64_t d[4] = {1, 1, 2, 8};
    aclTensor *g = aclCreateTensor(d, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, d, 4, dummy);
    aclTensor *m = aclCreateTensor(d, 4, ACL_BOOL, NULL, 0, ACL_FORMAT_ND, d, 4, dummy);
    aclOpExecutor *ex = NULL;
    CHECK_EQ(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g, g, m, 1.0, false, g, &ws, &ex), 0);
    CHECK_ERR(aclnnNsaSelectedAttentionGrad(NULL, 0, ex, g_stream), ACLNN_ERR_PARAM_INVALID,
              "aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize");
    CHECK_EQ(aclDestroyAclOpExecutor(ex), 0);
    aclDestroyTensor(g);
    aclDestroyTensor(m);
    for (int i = 0; i < 11; i++) aclDestroyTensor(t[i]);
    aclDestroyIntArray(aq);
    aclDestroyIntArray(akv);
}

int main(void) {
    test_tensor();
    test_arrays();
    test_validation();

    CHECK_EQ(aclInit(NULL), ACL_SUCCESS);
    CHECK_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    CHECK_EQ(aclrtCreateStream(&g_stream), ACL_SUCCESS);

    test_vendor_example();
    test_numerics();
    test_nonfinite();
    test_tiers_and_threads();
    test_large_streaming();
    test_executors();
    test_workspace_and_mismatch();

    CHECK_EQ(aclrtDestroyStream(g_stream), ACL_SUCCESS);
    CHECK_EQ(aclrtResetDevice(0), ACL_SUCCESS);
    CHECK_EQ(aclnnFinalize(), 0);
    CHECK_EQ(aclFinalize(), ACL_SUCCESS);
    printf("test_meta_softmax: %d checks passed\n", g_checks);
    return 0;
}
