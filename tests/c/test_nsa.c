/* aclnnNsaSelectedAttentionGrad from C: the vendor-like flow against a
 * double-precision loop, validation error codes, the run-time index check,
 * every ISA tier against the scalar oracle, thread-count and tile-size
 * determinism, strided (non-contiguous) inputs and outputs, relaxed mode. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_nsa_selected_attention_grad.h"
#include "pyaclnn/pyaclnn_ext.h"

static int g_fail = 0;
static int g_checks = 0;
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        g_checks++;                                                            \
        if (!(cond)) {                                                         \
            g_fail++;                                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
        }                                                                      \
    } while (0)

static aclrtStream g_stream;
static int g_tier_runs = 0; /* (case, tier) pairs compared */

static const char *errmsg(void) {
    const char *m = aclGetRecentErrMsg();
    return m ? m : "";
}

/* ------------------------------------------------------------------ halves */

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static uint16_t to_bf16(float f) {
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t h) { return u2f((uint32_t)h << 16); }

static float from_f16(uint16_t h) {
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v;
    if (e == 0) v = ldexpf((float)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexpf((float)(m | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}
/* round-to-nearest-even through double arithmetic (independent of the library) */
static uint16_t to_f16(float f) {
    const uint16_t sign = (f2u(f) >> 16) & 0x8000u;
    double a = fabs((double)f);
    if (isnan(f)) return 0x7e00;
    if (a >= 65520.0) return (uint16_t)(sign | 0x7c00);
    if (a < ldexp(1.0, -14)) { /* subnormal: units of 2^-24 */
        const double q = nearbyint(a * ldexp(1.0, 24));
        return (uint16_t)(sign | (uint16_t)q);
    }
    int e;
    double fr = frexp(a, &e); /* a = fr * 2^e, fr in [0.5,1) */
    double m = nearbyint(fr * 2048.0); /* 11 significant bits */
    if (m >= 2048.0) { m /= 2.0; e++; }
    if (e - 1 > 15) return (uint16_t)(sign | 0x7c00);
    return (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | ((uint16_t)m & 0x3ff));
}

static size_t esize(aclDataType dt) {
    return dt == ACL_FLOAT || dt == ACL_INT32 ? 4 : (dt == ACL_FLOAT16 || dt == ACL_BF16) ? 2 : 1;
}
static float round_to(aclDataType dt, float f) {
    if (dt == ACL_FLOAT16) return from_f16(to_f16(f));
    if (dt == ACL_BF16) return from_bf16(to_bf16(f));
    return f;
}
static void put_elem(void *base, size_t idx, aclDataType dt, float f) {
    char *p = (char *)base + idx * esize(dt);
    if (dt == ACL_FLOAT) memcpy(p, &f, 4);
    else {
        const uint16_t h = dt == ACL_FLOAT16 ? to_f16(f) : to_bf16(f);
        memcpy(p, &h, 2);
    }
}
static float get_elem(const void *base, size_t idx, aclDataType dt) {
    const char *p = (const char *)base + idx * esize(dt);
    if (dt == ACL_FLOAT) { float f; memcpy(&f, p, 4); return f; }
    uint16_t h;
    memcpy(&h, p, 2);
    return dt == ACL_FLOAT16 ? from_f16(h) : from_bf16(h);
}

/* ------------------------------------------------------------------ problem */

#define MAXB 8
typedef struct prob {
    int64_t T1, T2, N1, N2, D, Dv, B, C;
    int64_t nb;                       /* batches */
    int64_t seqq[MAXB], seqkv[MAXB];  /* cumulative */
    int pass_seq;                     /* pass actualSeq arrays */
    int sparse;
    double scale;
    aclDataType idt, odt;
    float *q, *k, *v, *o, *dout, *mx, *sm; /* mx, sm: [T1*N1] */
    int32_t *topk;
} prob;

static uint64_t g_rng = 88172645463325252ull;
static double urand(void) { /* [0,1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}
static float srand1(void) { return (float)(2.0 * urand() - 1.0); }

static int64_t batch_of(const prob *p, int64_t t) {
    int64_t b = 0;
    while (t >= p->seqq[b]) b++;
    return b;
}
static int64_t qstart(const prob *p, int64_t b) { return b ? p->seqq[b - 1] : 0; }
static int64_t kvstart(const prob *p, int64_t b) { return b ? p->seqkv[b - 1] : 0; }

static void prob_free(prob *p) {
    free(p->q); free(p->k); free(p->v); free(p->o); free(p->dout); free(p->mx); free(p->sm); free(p->topk);
}

static void prob_forward(prob *p);

/* Random self-consistent problem: O and the softmax stats come from a double
 * forward over the (rounded) inputs. dup: repeat selections; future: in sparse
 * mode 2, some rows select only blocks after their diagonal. */
static void prob_init(prob *p, uint64_t seed, int dup) {
    g_rng = seed * 2654435761ull + 12345u;
    const int64_t T1 = p->T1, T2 = p->T2, N1 = p->N1, N2 = p->N2, D = p->D, Dv = p->Dv, B = p->B, C = p->C;
    p->q = malloc(sizeof(float) * T1 * N1 * D);
    p->k = malloc(sizeof(float) * T2 * N2 * D);
    p->v = malloc(sizeof(float) * T2 * N2 * Dv);
    p->o = calloc((size_t)(T1 * N1 * Dv), sizeof(float));
    p->dout = malloc(sizeof(float) * T1 * N1 * Dv);
    p->mx = calloc((size_t)(T1 * N1), sizeof(float));
    p->sm = calloc((size_t)(T1 * N1), sizeof(float));
    p->topk = malloc(sizeof(int32_t) * T1 * N2 * C);
    for (int64_t i = 0; i < T1 * N1 * D; i++) p->q[i] = round_to(p->idt, srand1());
    for (int64_t i = 0; i < T2 * N2 * D; i++) p->k[i] = round_to(p->idt, srand1());
    for (int64_t i = 0; i < T2 * N2 * Dv; i++) p->v[i] = round_to(p->idt, srand1());
    for (int64_t i = 0; i < T1 * N1 * Dv; i++) p->dout[i] = round_to(p->idt, srand1());
    for (int64_t t = 0; t < T1; t++) {
        const int64_t b = batch_of(p, t), s = t - qstart(p, b);
        const int64_t nblk = (p->seqkv[b] - kvstart(p, b)) / B;
        for (int64_t h = 0; h < N2; h++) {
            int32_t *sel = p->topk + (t * N2 + h) * C;
            const int64_t diag = s / B;
            for (int64_t i = 0; i < C; i++) {
                int64_t v;
                if (p->sparse == 2 && urand() < 0.75) v = (int64_t)(urand() * (double)((diag < nblk - 1 ? diag : nblk - 1) + 1));
                else v = (int64_t)(urand() * (double)nblk);
                sel[i] = (int32_t)v;
            }
            if (!dup) { /* distinct where possible: a rotated permutation */
                if (C <= nblk) {
                    const int64_t off = (int64_t)(urand() * (double)nblk);
                    for (int64_t i = 0; i < C; i++) sel[i] = (int32_t)((off + i * 7919) % nblk);
                    /* 7919 is prime; if it divides nblk fall back to consecutive */
                    if (nblk % 7919 == 0) for (int64_t i = 0; i < C; i++) sel[i] = (int32_t)((off + i) % nblk);
                }
            } else if (C >= 2) {
                sel[C - 1] = sel[0];
            }
        }
    }
    prob_forward(p);
}

/* O and the softmax stats from a double forward over the current inputs. */
static void prob_forward(prob *p) {
    const int64_t T1 = p->T1, N1 = p->N1, N2 = p->N2, D = p->D, Dv = p->Dv, B = p->B, C = p->C;
    const int64_t G = N1 / N2;
    memset(p->o, 0, sizeof(float) * T1 * N1 * Dv);
    memset(p->mx, 0, sizeof(float) * T1 * N1);
    memset(p->sm, 0, sizeof(float) * T1 * N1);
    const int64_t L = C * B;
    double *S = malloc(sizeof(double) * L);
    for (int64_t t = 0; t < T1; t++) {
        const int64_t b = batch_of(p, t), s = t - qstart(p, b), kv0 = kvstart(p, b);
        for (int64_t n1 = 0; n1 < N1; n1++) {
            const int64_t n2 = n1 / G;
            const float *qr = p->q + (t * N1 + n1) * D;
            double m = -INFINITY;
            int any = 0;
            for (int64_t j = 0; j < L; j++) {
                const int64_t loc = (int64_t)p->topk[(t * N2 + n2) * C + j / B] * B + j % B;
                if (p->sparse == 2 && loc > s) { S[j] = NAN; continue; }
                const float *kr = p->k + ((kv0 + loc) * N2 + n2) * D;
                double acc = 0;
                for (int64_t d = 0; d < D; d++) acc += (double)qr[d] * kr[d];
                S[j] = p->scale * acc;
                if (S[j] > m) m = S[j];
                any = 1;
            }
            if (!any) continue; /* o = 0, max = 0, sum = 0 */
            double l = 0;
            for (int64_t j = 0; j < L; j++) if (!isnan(S[j])) l += exp(S[j] - m);
            float *orow = p->o + (t * N1 + n1) * Dv;
            for (int64_t e = 0; e < Dv; e++) {
                double acc = 0;
                for (int64_t j = 0; j < L; j++) {
                    if (isnan(S[j])) continue;
                    const int64_t loc = (int64_t)p->topk[(t * N2 + n2) * C + j / B] * B + j % B;
                    acc += exp(S[j] - m) / l * p->v[((kv0 + loc) * N2 + n2) * Dv + e];
                }
                orow[e] = round_to(p->idt, (float)acc);
            }
            p->mx[t * N1 + n1] = (float)m;
            p->sm[t * N1 + n1] = (float)l;
        }
    }
    free(S);
}

/* The backward in double, straight from the definition. */
static void ref_grad(const prob *p, double *dq, double *dk, double *dv) {
    const int64_t T1 = p->T1, T2 = p->T2, N1 = p->N1, N2 = p->N2, D = p->D, Dv = p->Dv, B = p->B, C = p->C;
    const int64_t G = N1 / N2, L = C * B;
    const double sc = (double)(float)p->scale;
    memset(dq, 0, sizeof(double) * T1 * N1 * D);
    memset(dk, 0, sizeof(double) * T2 * N2 * D);
    memset(dv, 0, sizeof(double) * T2 * N2 * Dv);
    for (int64_t t = 0; t < T1; t++) {
        const int64_t b = batch_of(p, t), s = t - qstart(p, b), kv0 = kvstart(p, b);
        for (int64_t n1 = 0; n1 < N1; n1++) {
            const int64_t n2 = n1 / G;
            const float *qr = p->q + (t * N1 + n1) * D;
            const float *gr = p->dout + (t * N1 + n1) * Dv;
            const float *orow = p->o + (t * N1 + n1) * Dv;
            const double m = p->mx[t * N1 + n1], l = p->sm[t * N1 + n1];
            double dsum = 0;
            for (int64_t e = 0; e < Dv; e++) dsum += (double)gr[e] * orow[e];
            for (int64_t j = 0; j < L; j++) {
                const int64_t loc = (int64_t)p->topk[(t * N2 + n2) * C + j / B] * B + j % B;
                if ((p->sparse == 2 && loc > s) || l == 0) continue;
                const int64_t key = kv0 + loc;
                const float *kr = p->k + (key * N2 + n2) * D;
                const float *vr = p->v + (key * N2 + n2) * Dv;
                double acc = 0, dp = 0;
                for (int64_t d = 0; d < D; d++) acc += (double)qr[d] * kr[d];
                for (int64_t e = 0; e < Dv; e++) dp += (double)gr[e] * vr[e];
                const double P = exp(sc * acc - m) / l;
                const double dS = P * (dp - dsum);
                for (int64_t d = 0; d < D; d++) {
                    dq[(t * N1 + n1) * D + d] += sc * dS * kr[d];
                    dk[(key * N2 + n2) * D + d] += sc * dS * qr[d];
                }
                for (int64_t e = 0; e < Dv; e++) dv[(key * N2 + n2) * Dv + e] += P * gr[e];
            }
        }
    }
}

/* ------------------------------------------------------------------ tensors */

/* Storage layouts: 0 contiguous; 1 padded rows, inner stride 2, offset 3;
 * 2 "head-major" ([N][T][D] storage viewed as [T][N][D]). */
typedef struct dten {
    aclTensor *t;
    void *dev;
    size_t bytes;
    int64_t dims[3], strides[3], offset;
    aclDataType dt;
} dten;

static void layout_strides(const int64_t *dims, int mode, int64_t *st, int64_t *off, int64_t *nelem) {
    if (mode == 1) {
        st[2] = 2;
        st[1] = 2 * dims[2] + 1;
        st[0] = dims[1] * st[1] + 7;
        *off = 3;
    } else if (mode == 2) {
        st[2] = 1;
        st[0] = dims[2];
        st[1] = dims[0] * dims[2];
        *off = 0;
    } else {
        st[2] = 1;
        st[1] = dims[2];
        st[0] = dims[1] * dims[2];
        *off = 0;
    }
    *nelem = *off + (dims[0] - 1) * st[0] + (dims[1] - 1) * st[1] + (dims[2] - 1) * st[2] + 1;
}

static size_t eidx(const dten *d, int64_t i0, int64_t i1, int64_t i2) {
    return (size_t)(d->offset + i0 * d->strides[0] + i1 * d->strides[1] + i2 * d->strides[2]);
}

/* Creates a 3-D device tensor holding vals (float; ints when dt is INT32);
 * positions outside the view hold the byte 0x7b. vals NULL: all sentinel. */
static dten make3(int64_t a, int64_t b, int64_t c, aclDataType dt, int mode, const float *vals,
                  const int32_t *ivals) {
    dten d;
    memset(&d, 0, sizeof d);
    d.dims[0] = a;
    d.dims[1] = b;
    d.dims[2] = c;
    d.dt = dt;
    int64_t n;
    layout_strides(d.dims, mode, d.strides, &d.offset, &n);
    d.bytes = (size_t)n * esize(dt);
    char *host = malloc(d.bytes);
    memset(host, 0x7b, d.bytes);
    for (int64_t i = 0; i < a; i++)
        for (int64_t j = 0; j < b; j++)
            for (int64_t k = 0; k < c; k++) {
                const size_t src = (size_t)((i * b + j) * c + k);
                if (ivals) memcpy(host + eidx(&d, i, j, k) * 4, &ivals[src], 4);
                else if (vals) put_elem(host, eidx(&d, i, j, k), dt, vals[src]);
            }
    aclError e = aclrtMalloc(&d.dev, d.bytes, ACL_MEM_MALLOC_HUGE_FIRST);
    if (e != ACL_SUCCESS) { fprintf(stderr, "aclrtMalloc failed\n"); exit(2); }
    aclrtMemcpy(d.dev, d.bytes, host, d.bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    free(host);
    const int64_t sdims[1] = {n};
    d.t = aclCreateTensor(d.dims, 3, dt, d.strides, d.offset, ACL_FORMAT_ND, sdims, 1, d.dev);
    return d;
}

static void dten_free(dten *d) {
    if (d->t) aclDestroyTensor(d->t);
    if (d->dev) aclrtFree(d->dev);
    memset(d, 0, sizeof *d);
}

static float *read3(const dten *d) {
    char *host = malloc(d->bytes);
    aclrtMemcpy(host, d->bytes, d->dev, d->bytes, ACL_MEMCPY_DEVICE_TO_HOST);
    float *out = malloc(sizeof(float) * d->dims[0] * d->dims[1] * d->dims[2]);
    for (int64_t i = 0; i < d->dims[0]; i++)
        for (int64_t j = 0; j < d->dims[1]; j++)
            for (int64_t k = 0; k < d->dims[2]; k++)
                out[(i * d->dims[1] + j) * d->dims[2] + k] = get_elem(host, eidx(d, i, j, k), d->dt);
    free(host);
    return out;
}

/* true when every byte of the storage is still the 0x7b sentinel */
static int untouched(const dten *d) {
    unsigned char *host = malloc(d->bytes);
    aclrtMemcpy(host, d->bytes, d->dev, d->bytes, ACL_MEMCPY_DEVICE_TO_HOST);
    int ok = 1;
    for (size_t i = 0; i < d->bytes; i++) ok &= host[i] == 0x7b;
    free(host);
    return ok;
}

/* ------------------------------------------------------------------ running */

typedef struct result {
    float *dq, *dk, *dv;
    int gws, launch, sync;
    uint64_t ws;
} result;

static void result_free(result *r) { free(r->dq); free(r->dk); free(r->dv); memset(r, 0, sizeof *r); }

/* Runs the op on p with input layout `imode` and output layout `omode`. */
static result run_prob(const prob *p, int imode, int omode) {
    result r;
    memset(&r, 0, sizeof r);
    const int64_t T1 = p->T1, T2 = p->T2, N1 = p->N1, N2 = p->N2;
    float *st8 = malloc(sizeof(float) * T1 * N1 * 8), *ss8 = malloc(sizeof(float) * T1 * N1 * 8);
    for (int64_t i = 0; i < T1 * N1; i++)
        for (int c = 0; c < 8; c++) { st8[i * 8 + c] = p->mx[i]; ss8[i * 8 + c] = p->sm[i]; }
    dten q = make3(T1, N1, p->D, p->idt, imode, p->q, NULL);
    dten k = make3(T2, N2, p->D, p->idt, imode, p->k, NULL);
    dten v = make3(T2, N2, p->Dv, p->idt, imode, p->v, NULL);
    dten o = make3(T1, N1, p->Dv, p->idt, imode, p->o, NULL);
    dten g = make3(T1, N1, p->Dv, p->idt, imode, p->dout, NULL);
    dten mx = make3(T1, N1, 8, ACL_FLOAT, imode, st8, NULL);
    dten sm = make3(T1, N1, 8, ACL_FLOAT, imode, ss8, NULL);
    dten tk = make3(T1, N2, p->C, ACL_INT32, imode, NULL, p->topk);
    dten dq = make3(T1, N1, p->D, p->odt, omode, NULL, NULL);
    dten dk = make3(T2, N2, p->D, p->odt, omode, NULL, NULL);
    dten dv = make3(T2, N2, p->Dv, p->odt, omode, NULL, NULL);
    free(st8);
    free(ss8);
    aclIntArray *aq = p->pass_seq ? aclCreateIntArray(p->seqq, (uint64_t)p->nb) : NULL;
    aclIntArray *akv = p->pass_seq ? aclCreateIntArray(p->seqkv, (uint64_t)p->nb) : NULL;
    char layout[] = "TND";
    aclOpExecutor *ex = NULL;
    r.gws = aclnnNsaSelectedAttentionGradGetWorkspaceSize(q.t, k.t, v.t, o.t, g.t, mx.t, sm.t, tk.t, aq, akv, NULL,
                                                          p->scale, p->B, p->C, N1, layout, p->sparse, dq.t, dk.t,
                                                          dv.t, &r.ws, &ex);
    if (r.gws == 0) {
        void *ws = NULL;
        if (r.ws) aclrtMalloc(&ws, r.ws, ACL_MEM_MALLOC_HUGE_FIRST);
        r.launch = aclnnNsaSelectedAttentionGrad(ws, r.ws, ex, g_stream);
        r.sync = aclrtSynchronizeStream(g_stream);
        if (ws) aclrtFree(ws);
        if (r.launch == 0 && r.sync == 0) {
            r.dq = read3(&dq);
            r.dk = read3(&dk);
            r.dv = read3(&dv);
        } else {
            /* failed run: the outputs must not have been touched */
            CHECK(untouched(&dq) && untouched(&dk) && untouched(&dv), "outputs written by a failed run");
        }
    }
    aclDestroyIntArray(aq);
    aclDestroyIntArray(akv);
    dten *all[] = {&q, &k, &v, &o, &g, &mx, &sm, &tk, &dq, &dk, &dv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dten_free(all[i]);
    return r;
}

static double maxabs_d(const double *a, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
    return m;
}

static double ulp_of(aclDataType dt, double x) {
    const int mant = dt == ACL_FLOAT16 ? 10 : dt == ACL_BF16 ? 7 : 23;
    const int emin = dt == ACL_FLOAT16 ? -14 : -126;
    int e;
    frexp(fabs(x), &e);
    e -= 1;
    if (e < emin) e = emin;
    return ldexp(1.0, e - mant);
}

/* |got - ref| <= 2 ulp(ref) + rel * max|ref| (fp32 outputs: rel * max|ref| only) */
static int cmp_ref(const char *what, const char *name, const float *got, const double *ref, int64_t n,
                   aclDataType odt, double rel) {
    const double tol0 = rel * maxabs_d(ref, n);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        const double tol = tol0 + (odt == ACL_FLOAT ? 0.0 : 2.0 * ulp_of(odt, ref[i]));
        if (!(fabs((double)got[i] - ref[i]) <= tol)) {
            if (first < 0) first = i;
            bad++;
        }
    }
    CHECK(bad == 0, "%s: %s: %lld elements off, first [%lld] got %.9g want %.9g (max|ref| %.3g)", what, name,
          (long long)bad, (long long)first, first >= 0 ? got[first] : 0.0, first >= 0 ? ref[first] : 0.0,
          maxabs_d(ref, n));
    return bad == 0;
}

static int same_bits(const float *a, const float *b, int64_t n) { return memcmp(a, b, sizeof(float) * n) == 0; }

static void sizes(const prob *p, int64_t *nq, int64_t *nk, int64_t *nv) {
    *nq = p->T1 * p->N1 * p->D;
    *nk = p->T2 * p->N2 * p->D;
    *nv = p->T2 * p->N2 * p->Dv;
}

/* Runs p and compares with the double reference; also checks that keys nobody
 * selects get exactly 0. */
static void check_vs_ref(const char *what, const prob *p, int imode, int omode) {
    int64_t nq, nk, nv;
    sizes(p, &nq, &nk, &nv);
    result r = run_prob(p, imode, omode);
    CHECK(r.gws == 0 && r.launch == 0 && r.sync == 0, "%s: status gws=%d launch=%d sync=%d (%s)", what, r.gws,
          r.launch, r.sync, errmsg());
    if (r.dq == NULL) return;
    double *dq = malloc(sizeof(double) * nq), *dk = malloc(sizeof(double) * nk), *dv = malloc(sizeof(double) * nv);
    ref_grad(p, dq, dk, dv);
    const double rel = p->odt == ACL_FLOAT ? 1e-4 : 2e-3;
    cmp_ref(what, "dq", r.dq, dq, nq, p->odt, rel);
    cmp_ref(what, "dk", r.dk, dk, nk, p->odt, rel);
    cmp_ref(what, "dv", r.dv, dv, nv, p->odt, rel);
    /* unselected keys: exactly zero */
    char *sel = calloc((size_t)(p->T2 * p->N2), 1);
    for (int64_t t = 0; t < p->T1; t++) {
        const int64_t kv0 = kvstart(p, batch_of(p, t));
        for (int64_t h = 0; h < p->N2; h++)
            for (int64_t i = 0; i < p->C; i++)
                for (int64_t rr = 0; rr < p->B; rr++)
                    sel[(kv0 + (int64_t)p->topk[(t * p->N2 + h) * p->C + i] * p->B + rr) * p->N2 + h] = 1;
    }
    int64_t nonzero = 0;
    for (int64_t key = 0; key < p->T2 * p->N2; key++) {
        if (sel[key]) continue;
        for (int64_t d = 0; d < p->D; d++) nonzero += f2u(r.dk[key * p->D + d]) != 0;
        for (int64_t d = 0; d < p->Dv; d++) nonzero += f2u(r.dv[key * p->Dv + d]) != 0;
    }
    CHECK(nonzero == 0, "%s: %lld dk/dv elements of unselected keys are not +0", what, (long long)nonzero);
    free(sel);
    free(dq);
    free(dk);
    free(dv);
    result_free(&r);
}

/* Every tier bitwise equal to scalar (the oracle defines the bits; fp32 outputs),
 * each tier deterministic across runs and across 1 / 3 threads; both precision
 * modes (the mode of the rest of this file, high, is restored afterwards). */
static void check_tiers_mode(const char *what, prob *p, int imode, int omode);
static void check_tiers(const char *what, prob *p, int imode, int omode) {
    char w[160];
    setenv("PYACLNN_NSA_PRECISION", "npu", 1);
    snprintf(w, sizeof w, "%s [npu]", what);
    check_tiers_mode(w, p, imode, omode);
    setenv("PYACLNN_NSA_PRECISION", "high", 1);
    snprintf(w, sizeof w, "%s [high]", what);
    check_tiers_mode(w, p, imode, omode);
}

static void check_tiers_mode(const char *what, prob *p, int imode, int omode) {
    int64_t nq, nk, nv;
    sizes(p, &nq, &nk, &nv);
    const aclDataType odt = p->odt;
    p->odt = ACL_FLOAT;
    const char *tiers[] = {"scalar", "avx2", "avx512", "avx512bf16"};
    result base;
    memset(&base, 0, sizeof base);
    int ran = 0;
    pyaclnnSetMaxIsa(NULL);
    int best = 0; /* best tier of this CPU */
    for (int ti = 0; ti < 4; ti++) {
        if (strcmp(pyaclnnGetIsa(), tiers[ti]) == 0) best = ti;
    }
    for (int ti = 0; ti <= best; ti++) {
        if (pyaclnnSetMaxIsa(tiers[ti]) != ACL_SUCCESS) continue;
        const char *active = pyaclnnGetIsa();
        if (strcmp(active, tiers[ti]) != 0) continue; /* CPU lacks the tier */
        ran++;
        pyaclnnSetNumThreads(1);
        result r1 = run_prob(p, imode, omode);
        pyaclnnSetNumThreads(3);
        result r3 = run_prob(p, imode, omode);
        CHECK(r1.dq && r3.dq, "%s/%s: run failed (%s)", what, tiers[ti], errmsg());
        if (r1.dq && r3.dq) {
            CHECK(same_bits(r1.dq, r3.dq, nq) && same_bits(r1.dk, r3.dk, nk) && same_bits(r1.dv, r3.dv, nv),
                  "%s/%s: 1 vs 3 threads differ", what, tiers[ti]);
            if (ti == 0) {
                base = r1;
                memset(&r1, 0, sizeof r1);
            } else if (base.dq) {
                CHECK(same_bits(r1.dq, base.dq, nq) && same_bits(r1.dk, base.dk, nk) &&
                          same_bits(r1.dv, base.dv, nv),
                      "%s/%s: not bitwise equal to scalar", what, tiers[ti]);
            }
        }
        result_free(&r1);
        result_free(&r3);
    }
    pyaclnnSetMaxIsa(NULL);
    pyaclnnSetNumThreads(0);
    g_tier_runs += ran;
    result_free(&base);
    p->odt = odt;
}

/* ------------------------------------------------------------------ cases */

static void prob_setup(prob *p, int64_t N1, int64_t N2, int64_t D, int64_t Dv, int64_t B, int64_t C, int nb,
                       const int64_t *qlens, const int64_t *kvlens, int sparse, aclDataType idt, aclDataType odt) {
    memset(p, 0, sizeof *p);
    p->N1 = N1; p->N2 = N2; p->D = D; p->Dv = Dv; p->B = B; p->C = C; p->nb = nb;
    int64_t a = 0, b = 0;
    for (int i = 0; i < nb; i++) {
        a += qlens[i];
        b += kvlens[i];
        p->seqq[i] = a;
        p->seqkv[i] = b;
    }
    p->T1 = a;
    p->T2 = b;
    p->pass_seq = 1;
    p->sparse = sparse;
    p->scale = 1.0 / sqrt((double)D);
    p->idt = idt;
    p->odt = odt;
}

static void test_vendor_flow(void) {
    /* T1=4, T2=256, N1=2, N2=1, D=Dv=128, B=16, C=4, fp16 */
    const int64_t ql[1] = {4}, kl[1] = {256};
    for (int sparse = 0; sparse <= 2; sparse += 2) {
        prob p;
        prob_setup(&p, 2, 1, 128, 128, 16, 4, 1, ql, kl, sparse, ACL_FLOAT16, ACL_FLOAT16);
        prob_init(&p, 1 + (uint64_t)sparse, 0);
        char w[64];
        snprintf(w, sizeof w, "vendor flow fp16 sparse %d", sparse);
        check_vs_ref(w, &p, 0, 0);
        p.pass_seq = 0; /* absent actualSeq arrays: one batch */
        snprintf(w, sizeof w, "vendor flow fp16 sparse %d, no seq arrays", sparse);
        check_vs_ref(w, &p, 0, 0);
        prob_free(&p);
    }
}

static void test_reference_cases(void) {
    {   /* multi-batch, GQA, bf16 -> fp32, sparse 2, duplicates, D != Dv */
        const int64_t ql[3] = {5, 3, 9}, kl[3] = {64, 96, 160};
        prob p;
        prob_setup(&p, 4, 2, 192, 128, 32, 2, 3, ql, kl, 2, ACL_BF16, ACL_FLOAT);
        prob_init(&p, 7, 1);
        check_vs_ref("3 batches GQA bf16->fp32 sparse2 dup", &p, 0, 0);
        check_vs_ref("3 batches GQA strided in/out", &p, 1, 2);
        p.odt = ACL_BF16;
        check_vs_ref("3 batches GQA bf16->bf16 head-major in, padded out", &p, 2, 1);
        prob_free(&p);
    }
    {   /* sparse 2: rows whose selections are all in the future (max = sum = 0, P = 0) */
        const int64_t ql[1] = {6}, kl[1] = {96};
        prob p;
        prob_setup(&p, 2, 1, 128, 128, 32, 2, 1, ql, kl, 2, ACL_FLOAT16, ACL_FLOAT);
        prob_init(&p, 9, 0);
        p.topk[0] = 1; /* token 0 (s = 0): blocks 1 and 2 are wholly after it */
        p.topk[1] = 2;
        p.topk[2 * 2 + 0] = 2; /* token 2: block 2 only (twice) */
        p.topk[2 * 2 + 1] = 2;
        prob_forward(&p);
        CHECK(p.sm[0] == 0.0f && p.sm[1] == 0.0f, "setup: token 0 should have no visible key");
        check_vs_ref("sparse2 fully masked rows", &p, 0, 0);
        check_tiers("tiers sparse2 fully masked rows", &p, 0, 0);
        prob_free(&p);
    }
    {   /* sparse 0, fp16 -> fp32 and bf16 outputs, G = 3 */
        const int64_t ql[2] = {6, 4}, kl[2] = {128, 64};
        prob p;
        prob_setup(&p, 3, 1, 128, 128, 16, 4, 2, ql, kl, 0, ACL_FLOAT16, ACL_FLOAT);
        prob_init(&p, 11, 1);
        check_vs_ref("2 batches G=3 fp16->fp32 sparse0 dup", &p, 0, 0);
        p.odt = ACL_BF16;
        check_vs_ref("2 batches G=3 fp16->bf16 sparse0", &p, 1, 1);
        prob_free(&p);
    }
}

static void test_tiers(void) {
    {
        const int64_t ql[2] = {7, 6}, kl[2] = {128, 192};
        prob p;
        prob_setup(&p, 4, 2, 192, 128, 32, 3, 2, ql, kl, 2, ACL_BF16, ACL_FLOAT);
        prob_init(&p, 21, 1);
        check_tiers("tiers bf16 GQA sparse2", &p, 0, 0);
        check_tiers("tiers bf16 GQA sparse2 strided", &p, 1, 2);
        prob_free(&p);
    }
    {
        const int64_t ql[1] = {9}, kl[1] = {256};
        prob p;
        prob_setup(&p, 16, 1, 128, 128, 64, 4, 1, ql, kl, 0, ACL_FLOAT16, ACL_FLOAT);
        prob_init(&p, 22, 0);
        check_tiers("tiers fp16 G=16 B=64 sparse0", &p, 0, 0);
        prob_free(&p);
    }
    {
        const int64_t ql[1] = {5}, kl[1] = {256};
        prob p;
        prob_setup(&p, 5, 5, 192, 192, 16, 8, 1, ql, kl, 2, ACL_BF16, ACL_FLOAT);
        prob_init(&p, 23, 1);
        check_tiers("tiers G=1 B=16", &p, 0, 0);
        prob_free(&p);
    }
}

static void test_tiles_one(aclDataType idt, int64_t N1);
static void test_tiles(void) {
    /* the token tile size must not change a single bit: fp16 (high), bf16 and odd G
     * at the npu precision (the dot GEMM's layouts) */
    test_tiles_one(ACL_FLOAT16, 4);
    setenv("PYACLNN_NSA_PRECISION", "npu", 1);
    test_tiles_one(ACL_BF16, 4);
    test_tiles_one(ACL_BF16, 6);
    setenv("PYACLNN_NSA_PRECISION", "high", 1);
}

static void test_tiles_one(aclDataType idt, int64_t N1) {
    const int64_t ql[2] = {10, 7}, kl[2] = {128, 96};
    prob p;
    prob_setup(&p, N1, 2, 128, 128, 32, 3, 2, ql, kl, 2, idt, ACL_FLOAT);
    prob_init(&p, 31, 1);
    int64_t nq, nk, nv;
    sizes(&p, &nq, &nk, &nv);
    result a = run_prob(&p, 0, 0);
    setenv("PYACLNN_NSA_TILE_TOKENS", "3", 1);
    result b = run_prob(&p, 0, 0);
    unsetenv("PYACLNN_NSA_TILE_TOKENS");
    CHECK(a.dq && b.dq, "tiles: run failed");
    if (a.dq && b.dq) {
        CHECK(same_bits(a.dq, b.dq, nq) && same_bits(a.dk, b.dk, nk) && same_bits(a.dv, b.dv, nv),
              "tiles: 3-token tiles differ from one tile");
        CHECK(b.ws < a.ws, "tiles: smaller tiles should need less workspace (%llu vs %llu)",
              (unsigned long long)b.ws, (unsigned long long)a.ws);
    }
    result_free(&a);
    result_free(&b);
    prob_free(&p);
}

static void test_relaxed(void) {
    setenv("PYACLNN_NSA_RELAXED", "1", 1);
    {   /* fp32 inputs, odd sizes, Dv > D, B not a multiple of 16, G = 3 */
        const int64_t ql[2] = {6, 5}, kl[2] = {15, 10};
        prob p;
        prob_setup(&p, 6, 2, 40, 72, 5, 3, 2, ql, kl, 2, ACL_FLOAT, ACL_FLOAT);
        prob_init(&p, 41, 1);
        check_vs_ref("relaxed fp32 D=40 Dv=72 B=5", &p, 1, 0);
        check_tiers("relaxed tiers D=40 Dv=72 B=5", &p, 0, 1);
        prob_free(&p);
    }
    {   /* KV shorter than C*B (duplicates), G = 40 */
        const int64_t ql[1] = {3}, kl[1] = {48};
        prob p;
        prob_setup(&p, 40, 1, 16, 8, 24, 4, 1, ql, kl, 0, ACL_BF16, ACL_FLOAT);
        prob_init(&p, 42, 1);
        check_vs_ref("relaxed G=40 KV < C*B", &p, 0, 0);
        check_tiers("relaxed tiers G=40", &p, 0, 0);
        prob_free(&p);
    }
    {   /* bf16 inputs, odd D and Dv (bf16 pair padding), B = 7 */
        const int64_t ql[2] = {4, 3}, kl[2] = {21, 14};
        prob p;
        prob_setup(&p, 4, 2, 33, 21, 7, 2, 2, ql, kl, 2, ACL_BF16, ACL_FLOAT);
        prob_init(&p, 44, 1);
        check_vs_ref("relaxed bf16 D=33 Dv=21 B=7", &p, 0, 0);
        check_tiers("relaxed tiers bf16 D=33 Dv=21 B=7", &p, 1, 0);
        prob_free(&p);
    }
    unsetenv("PYACLNN_NSA_RELAXED");
    {   /* the same fp32 problem is rejected in strict mode */
        const int64_t ql[1] = {2}, kl[1] = {32};
        prob p;
        prob_setup(&p, 2, 1, 128, 128, 16, 2, 1, ql, kl, 0, ACL_FLOAT, ACL_FLOAT);
        prob_init(&p, 43, 0);
        result r = run_prob(&p, 0, 0);
        CHECK(r.gws == 161002, "strict mode accepted fp32 inputs (%d)", r.gws);
        result_free(&r);
        prob_free(&p);
    }
}

static void test_bad_index(void) {
    const int64_t ql[2] = {3, 3}, kl[2] = {64, 32};
    prob p;
    prob_setup(&p, 2, 1, 128, 128, 16, 2, 2, ql, kl, 0, ACL_FLOAT16, ACL_FLOAT16);
    prob_init(&p, 51, 0);
    /* batch 1 has 2 blocks: 2 is out of range; later a negative one */
    p.topk[4 * p.C + 1] = 2;
    p.topk[5 * p.C + 0] = -1;
    result r = run_prob(&p, 0, 1);
    CHECK(r.gws == 0 && r.launch == 0, "bad index: gws=%d launch=%d", r.gws, r.launch);
    CHECK(r.sync == 361001, "bad index: synchronize returned %d, want 361001", r.sync);
    const char *msg = errmsg();
    printf("  bad index message: %s\n", msg ? msg : "(null)");
    result_free(&r);
    /* the stream works again afterwards */
    p.topk[4 * p.C + 1] = 1;
    p.topk[5 * p.C + 0] = 0;
    check_vs_ref("after a bad-index run", &p, 0, 0);
    prob_free(&p);
}

/* A repeatable executor run twice; before the second run query and dqOut get
 * new addresses (aclSetInputTensorAddr index 0, aclSetOutputTensorAddr index 0)
 * and topkIndices (input 7) new contents at a new address. */
static void test_rebind(void) {
    const int64_t ql[1] = {5}, kl[1] = {128};
    prob p;
    prob_setup(&p, 2, 1, 128, 128, 16, 3, 1, ql, kl, 0, ACL_FLOAT16, ACL_FLOAT);
    prob_init(&p, 71, 1);
    int64_t nq, nk, nv;
    sizes(&p, &nq, &nk, &nv);
    float *st8 = malloc(sizeof(float) * p.T1 * p.N1 * 8), *ss8 = malloc(sizeof(float) * p.T1 * p.N1 * 8);
    for (int64_t i = 0; i < p.T1 * p.N1; i++)
        for (int c = 0; c < 8; c++) { st8[i * 8 + c] = p.mx[i]; ss8[i * 8 + c] = p.sm[i]; }
    dten q = make3(p.T1, p.N1, p.D, p.idt, 0, p.q, NULL), k = make3(p.T2, p.N2, p.D, p.idt, 0, p.k, NULL);
    dten v = make3(p.T2, p.N2, p.Dv, p.idt, 0, p.v, NULL), o = make3(p.T1, p.N1, p.Dv, p.idt, 0, p.o, NULL);
    dten g = make3(p.T1, p.N1, p.Dv, p.idt, 0, p.dout, NULL);
    dten mx = make3(p.T1, p.N1, 8, ACL_FLOAT, 0, st8, NULL), sm = make3(p.T1, p.N1, 8, ACL_FLOAT, 0, ss8, NULL);
    dten tk = make3(p.T1, p.N2, p.C, ACL_INT32, 0, NULL, p.topk);
    dten dq = make3(p.T1, p.N1, p.D, p.odt, 0, NULL, NULL), dk = make3(p.T2, p.N2, p.D, p.odt, 0, NULL, NULL);
    dten dv = make3(p.T2, p.N2, p.Dv, p.odt, 0, NULL, NULL);
    char layout[] = "TND";
    uint64_t wsz = 0;
    aclOpExecutor *ex = NULL;
    int rc = aclnnNsaSelectedAttentionGradGetWorkspaceSize(q.t, k.t, v.t, o.t, g.t, mx.t, sm.t, tk.t, NULL, NULL, NULL,
                                                           p.scale, p.B, p.C, p.N1, layout, 0, dq.t, dk.t, dv.t,
                                                           &wsz, &ex);
    CHECK(rc == 0, "rebind: GetWorkspaceSize %d (%s)", rc, errmsg());
    if (rc == 0) {
        CHECK(aclSetAclOpExecutorRepeatable(ex) == 0, "rebind: repeatable");
        void *ws = NULL;
        aclrtMalloc(&ws, wsz, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK(aclnnNsaSelectedAttentionGrad(ws, wsz, ex, g_stream) == 0 && aclrtSynchronizeStream(g_stream) == 0,
              "rebind: first run (%s)", errmsg());
        /* new query values, new topk, new dq buffer */
        prob p2 = p;
        p2.q = malloc(sizeof(float) * nq);
        for (int64_t i = 0; i < nq; i++) p2.q[i] = round_to(p.idt, -0.5f * p.q[i] + 0.25f);
        p2.topk = malloc(sizeof(int32_t) * p.T1 * p.N2 * p.C);
        for (int64_t i = 0; i < p.T1 * p.N2 * p.C; i++) p2.topk[i] = (int32_t)((p.topk[i] + 3) % (p.T2 / p.B));
        dten q2 = make3(p.T1, p.N1, p.D, p.idt, 0, p2.q, NULL);
        dten tk2 = make3(p.T1, p.N2, p.C, ACL_INT32, 0, NULL, p2.topk);
        dten dq2 = make3(p.T1, p.N1, p.D, p.odt, 0, NULL, NULL);
        CHECK(aclSetInputTensorAddr(ex, 0, q.t, q2.dev) == 0, "rebind: set query (%s)", errmsg());
        CHECK(aclSetInputTensorAddr(ex, 7, tk.t, tk2.dev) == 0, "rebind: set topk (%s)", errmsg());
        CHECK(aclSetOutputTensorAddr(ex, 0, dq.t, dq2.dev) == 0, "rebind: set dq (%s)", errmsg());
        CHECK(aclSetInputTensorAddr(ex, 8, NULL, q2.dev) != 0, "rebind: absent attenMask slot accepted an address");
        CHECK(aclnnNsaSelectedAttentionGrad(ws, wsz, ex, g_stream) == 0 && aclrtSynchronizeStream(g_stream) == 0,
              "rebind: second run (%s)", errmsg());
        double *rq = malloc(sizeof(double) * nq), *rk = malloc(sizeof(double) * nk), *rv = malloc(sizeof(double) * nv);
        ref_grad(&p2, rq, rk, rv);
        float *gq = read3(&dq2), *gk = read3(&dk), *gv = read3(&dv);
        cmp_ref("rebind", "dq", gq, rq, nq, p.odt, 1e-4);
        cmp_ref("rebind", "dk", gk, rk, nk, p.odt, 1e-4);
        cmp_ref("rebind", "dv", gv, rv, nv, p.odt, 1e-4);
        free(gq); free(gk); free(gv); free(rq); free(rk); free(rv);
        aclDestroyAclOpExecutor(ex);
        aclrtFree(ws);
        free(p2.q);
        free(p2.topk);
        dten_free(&q2);
        dten_free(&tk2);
        dten_free(&dq2);
    }
    free(st8);
    free(ss8);
    dten *all[] = {&q, &k, &v, &o, &g, &mx, &sm, &tk, &dq, &dk, &dv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dten_free(all[i]);
    prob_free(&p);
}

/* The workspace formula of native/ops/nsa_selected_attention_grad/README.md. */
static uint64_t r64(uint64_t x) { return (x + 63) / 64 * 64; }
/* The README's formula; `dot`: bf16 inputs at the npu precision (the dot GEMM's layouts). */
static uint64_t ws_formula_dot(const prob *p) {
    const uint64_t Bp = (uint64_t)(p->B + 15) / 16 * 16, Dp = (uint64_t)(p->D + 15) / 16 * 16;
    const uint64_t Dvp = (uint64_t)(p->Dv + 15) / 16 * 16, NB = (uint64_t)(p->T2 / p->B);
    const uint64_t N1 = (uint64_t)p->N1, N2 = (uint64_t)p->N2, C = (uint64_t)p->C, T1 = (uint64_t)p->T1;
    const uint64_t G = N1 / N2, Gp = G + (G & 1), Bh = (uint64_t)(p->B + 1) / 2;
    const uint64_t slot_p = Gp * Bp * 2, slot_ds = (Gp + G) * Bp * 2;
    const uint64_t per_tok = N2 * C * (slot_p + slot_ds + 4) + N1 * 12 + N1 * (Dp + Dvp) * 2 + N2 * Gp * (Dp + Dvp) * 2;
    uint64_t tile = (8ull << 20) / per_tok;
    if (tile < 1) tile = 1;
    if (tile > T1) tile = T1;
    return 64 + r64(tile * N1 * Dp * 2) + r64(tile * N1 * Dvp * 2) + r64(tile * N2 * Dp * Gp * 2) +
           r64(tile * N2 * Dvp * Gp * 2) + 3 * r64(tile * N1 * 4) + r64(T1 * 16) + r64(T1 * N2 * C * 4) +
           r64(N2 * NB * 2 * Bh * Dp * 2) + r64(N2 * NB * Bp * Dp * 2) + r64(N2 * NB * Bp * Dvp * 2) +
           r64(N2 * NB * Bp * Dp * 4) + r64(N2 * NB * Bp * Dvp * 4) + r64(tile * N2 * C * slot_p) +
           r64(tile * N2 * C * slot_ds) + r64((N2 * NB + 1) * 8) + r64(tile * N2 * C * 4);
}

static uint64_t ws_formula(const prob *p) {
    const char *mode = getenv("PYACLNN_NSA_PRECISION");
    if (p->idt == ACL_BF16 && (mode == NULL || strcmp(mode, "high") != 0)) return ws_formula_dot(p);
    const uint64_t Bp = (uint64_t)(p->B + 15) / 16 * 16, Dp = (uint64_t)(p->D + 15) / 16 * 16;
    const uint64_t Dvp = (uint64_t)(p->Dv + 15) / 16 * 16, NB = (uint64_t)(p->T2 / p->B);
    const uint64_t N1 = (uint64_t)p->N1, N2 = (uint64_t)p->N2, C = (uint64_t)p->C, T1 = (uint64_t)p->T1;
    const uint64_t T2 = (uint64_t)p->T2, D = (uint64_t)p->D, Dv = (uint64_t)p->Dv;
    const int bf = p->idt != ACL_FLOAT;          /* 16-bit inputs: 16-bit operand copies */
    const uint64_t es = bf ? 2 : 4;
    const uint64_t hb = bf ? 6 : 4;
    const uint64_t per_tok = N1 * (C * Bp * 8 + (Dp + Dvp) * hb + 12) + N2 * C * 4;
    uint64_t tile = (8ull << 20) / per_tok;
    if (tile < 1) tile = 1;
    if (tile > T1) tile = T1;
    return 64 + r64(tile * N1 * Dp * 4) + r64(tile * N1 * Dvp * 4) + (bf ? r64(tile * N1 * Dp * 2) : 0) +
           (bf ? r64(tile * N1 * Dvp * 2) : 0) + 3 * r64(tile * N1 * 4) + r64(T1 * 16) + r64(T1 * N2 * C * 4) +
           r64(N2 * T2 * Dp * es) + r64(N2 * NB * Bp * D * es) + r64(N2 * NB * Bp * Dv * es) + r64(N2 * T2 * Dp * 4) +
           r64(N2 * T2 * Dvp * 4) + 2 * r64(tile * N1 * C * Bp * 4) + r64((N2 * NB + 1) * 8) +
           r64(tile * N2 * C * 4);
}

static void test_ws_formula(void) {
    const int64_t ql[2] = {5, 4}, kl[2] = {128, 64};
    const aclDataType dts[2] = {ACL_FLOAT16, ACL_BF16};
    for (int i = 0; i < 4; i++) { /* fp16, bf16 (high), then both at the npu precision */
        if (i == 2) setenv("PYACLNN_NSA_PRECISION", "npu", 1);
        prob p;
        prob_setup(&p, i == 3 ? 6 : 4, 2, 192, 128, 32, 2, 2, ql, kl, 0, dts[i % 2], ACL_FLOAT); /* G = 3 last */
        prob_init(&p, 61, 0);
        result r = run_prob(&p, 0, 0);
        CHECK(r.gws == 0 && r.ws == ws_formula(&p), "case %d: workspace %llu, formula %llu", i,
              (unsigned long long)r.ws, (unsigned long long)ws_formula(&p));
        result_free(&r);
        prob_free(&p);
    }
    for (int mode = 0; mode < 2; mode++) { /* large enough for several tiles: 2048 tokens, N1 = 16, C*B = 1024 */
        setenv("PYACLNN_NSA_PRECISION", mode ? "npu" : "high", 1);
        const int64_t q1[1] = {2048}, k1[1] = {2048};
        prob p;
        prob_setup(&p, 16, 1, 192, 128, 64, 16, 1, q1, k1, 2, ACL_BF16, ACL_BF16);
        /* no data needed for the size: validate through GetWorkspaceSize only */
        static char dummy[64];
        const int64_t dims[11][3] = {{2048, 16, 192}, {2048, 1, 192}, {2048, 1, 128}, {2048, 16, 128},
                                     {2048, 16, 128}, {2048, 16, 8},  {2048, 16, 8},  {2048, 1, 16},
                                     {2048, 16, 192}, {2048, 1, 192}, {2048, 1, 128}};
        aclTensor *t[11];
        for (int j = 0; j < 11; j++) {
            const aclDataType dt = j == 5 || j == 6 ? ACL_FLOAT : j == 7 ? ACL_INT32 : ACL_BF16;
            t[j] = aclCreateTensor(dims[j], 3, dt, NULL, 0, ACL_FORMAT_ND, dims[j], 3, dummy);
        }
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        char layout[] = "TND";
        const int rc = aclnnNsaSelectedAttentionGradGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7],
                                                                     NULL, NULL, NULL, 0.07, 64, 16, 16, layout, 2,
                                                                     t[8], t[9], t[10], &ws, &ex);
        CHECK(rc == 0 && ws == ws_formula(&p), "target shape: rc %d workspace %llu, formula %llu", rc,
              (unsigned long long)ws, (unsigned long long)ws_formula(&p));
        if (rc == 0) {
            aclSetAclOpExecutorRepeatable(ex);
            aclDestroyAclOpExecutor(ex);
        }
        for (int j = 0; j < 11; j++) aclDestroyTensor(t[j]);
    }
    setenv("PYACLNN_NSA_PRECISION", "high", 1);
}

/* ------------------------------------------------------------------ validation */

typedef struct vcase {
    const char *name;
    int want;
    const char *needle; /* substring of the message */
} vcase;

enum { NT = 11 };

/* a valid baseline (contiguous tensors, no storage needed for validation) */
typedef struct vset {
    int64_t dims[NT][3];
    aclDataType dt[NT];
    int64_t strides2[NT]; /* inner stride override (0 = default) */
    int zero_s2[NT];      /* inner stride 0 */
    aclFormat fmt[NT];
    int null_t[NT];
    int64_t seqq[4], seqkv[4];
    int nq, nkv; /* -1: NULL */
    int64_t B, C, heads, sparse;
    const char *layout;
    int null_ws, null_ex;
    int mask; /* 0 none, 1 bool 2-D, 2 float, 3 3-D bool, 4 uint8 2-D */
} vset;

static void vset_base(vset *s) {
    memset(s, 0, sizeof *s);
    const int64_t T1 = 4, T2 = 256, N1 = 2, N2 = 1, D = 128, Dv = 128, C = 4;
    const int64_t d[NT][3] = {{T1, N1, D}, {T2, N2, D}, {T2, N2, Dv}, {T1, N1, Dv}, {T1, N1, Dv}, {T1, N1, 8},
                              {T1, N1, 8}, {T1, N2, C},  {T1, N1, D},  {T2, N2, D},  {T2, N2, Dv}};
    memcpy(s->dims, d, sizeof d);
    for (int i = 0; i < NT; i++) { s->dt[i] = ACL_FLOAT16; s->fmt[i] = ACL_FORMAT_ND; }
    s->dt[5] = s->dt[6] = ACL_FLOAT;
    s->dt[7] = ACL_INT32;
    s->seqq[0] = T1;
    s->seqkv[0] = T2;
    s->nq = s->nkv = 1;
    s->B = 16; s->C = C; s->heads = N1; s->sparse = 2;
    s->layout = "TND";
}

static int vrun(const vset *s) {
    static char dummy[64];
    aclTensor *t[NT];
    for (int i = 0; i < NT; i++) {
        int64_t st[3] = {s->dims[i][1] * s->dims[i][2], s->dims[i][2], 1};
        if (s->strides2[i]) st[2] = s->strides2[i];
        if (s->zero_s2[i]) st[2] = 0;
        const int64_t sd[1] = {(int64_t)1 << 40}; /* validation only: storage large enough for every view */
        t[i] = s->null_t[i] ? NULL : aclCreateTensor(s->dims[i], 3, s->dt[i], st, 0, s->fmt[i], sd, 1, dummy);
    }
    aclTensor *mask = NULL;
    if (s->mask) {
        const int64_t md[3] = {2048, 2048, 1};
        const aclDataType mdt = s->mask == 2 ? ACL_FLOAT : s->mask == 4 ? ACL_UINT8 : ACL_BOOL;
        mask = aclCreateTensor(md, s->mask == 3 ? 3 : 2, mdt, NULL, 0, ACL_FORMAT_ND, md, s->mask == 3 ? 3 : 2, dummy);
    }
    aclIntArray *aq = s->nq >= 0 ? aclCreateIntArray(s->seqq, (uint64_t)s->nq) : NULL;
    aclIntArray *akv = s->nkv >= 0 ? aclCreateIntArray(s->seqkv, (uint64_t)s->nkv) : NULL;
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    char layout[16];
    snprintf(layout, sizeof layout, "%s", s->layout ? s->layout : "");
    const int rc = aclnnNsaSelectedAttentionGradGetWorkspaceSize(
        t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], aq, akv, mask, 0.125, s->B, s->C, s->heads,
        s->layout ? layout : NULL, s->sparse, t[8], t[9], t[10], s->null_ws ? NULL : &ws, s->null_ex ? NULL : &ex);
    if (rc == 0 && ex != NULL) { /* never launched: release it explicitly */
        aclSetAclOpExecutorRepeatable(ex);
        aclDestroyAclOpExecutor(ex);
    }
    for (int i = 0; i < NT; i++) if (t[i]) aclDestroyTensor(t[i]);
    if (mask) aclDestroyTensor(mask);
    aclDestroyIntArray(aq);
    aclDestroyIntArray(akv);
    return rc;
}

static void test_validation(void) {
    vset s;
    vset_base(&s);
    CHECK(vrun(&s) == 0, "validation baseline rejected: %s", errmsg());
    s.mask = 1;
    CHECK(vrun(&s) == 0, "BOOL 2-D mask rejected: %s", errmsg());
    s.mask = 4;
    CHECK(vrun(&s) == 0, "UINT8 2-D mask rejected: %s", errmsg());
    vset_base(&s);
    s.zero_s2[0] = s.zero_s2[1] = 1; /* broadcast inputs are fine */
    CHECK(vrun(&s) == 0, "stride-0 inputs rejected: %s", errmsg());
    vset_base(&s);
    s.dims[1][0] = s.dims[2][0] = s.dims[9][0] = s.dims[10][0] = 1024; /* KV == C*B exactly (vendor sample) */
    s.seqkv[0] = 1024;
    s.B = 64;
    s.C = 16;
    s.dims[7][2] = 16;
    CHECK(vrun(&s) == 0, "KV == C*B rejected: %s", errmsg());

    static const char *names[NT] = {"query", "key", "value", "attentionOut", "attentionOutGrad", "softmaxMax",
                                    "softmaxSum", "topkIndices", "dqOut", "dkOut", "dvOut"};
    /* NULL tensors */
    for (int i = 0; i < NT; i++) {
        vset_base(&s);
        s.null_t[i] = 1;
        const int rc = vrun(&s);
        CHECK(rc == 161001 && strstr(errmsg(), names[i]), "NULL %s: rc %d msg '%s'", names[i], rc,
              errmsg());
    }
    vset_base(&s); s.layout = NULL;
    CHECK(vrun(&s) == 161001, "NULL inputLayout");
    vset_base(&s); s.null_ws = 1;
    CHECK(vrun(&s) == 161001, "NULL workspaceSize");
    vset_base(&s); s.null_ex = 1;
    CHECK(vrun(&s) == 161001, "NULL executor");

#define BAD(label, needle_, ...)                                                                    \
    do {                                                                                            \
        vset_base(&s);                                                                              \
        __VA_ARGS__;                                                                                \
        const int rc_ = vrun(&s);                                                                   \
        CHECK(rc_ == 161002 && strstr(errmsg(), needle_) != NULL,                      \
              "%s: rc %d msg '%s' (want 161002 naming '%s')", label, rc_, errmsg(), needle_); \
    } while (0)

    BAD("layout BSND", "inputLayout", s.layout = "BSND");
    BAD("layout tnd", "inputLayout", s.layout = "tnd");
    BAD("query fp32", "query", s.dt[0] = ACL_FLOAT);
    BAD("query int32", "query", s.dt[0] = ACL_INT32);
    BAD("key dtype differs", "key", s.dt[1] = ACL_BF16);
    BAD("value dtype differs", "value", s.dt[2] = ACL_BF16);
    BAD("attentionOut dtype", "attentionOut", s.dt[3] = ACL_BF16);
    BAD("attentionOutGrad dtype", "attentionOutGrad", s.dt[4] = ACL_FLOAT);
    BAD("softmaxMax fp16", "softmaxMax", s.dt[5] = ACL_FLOAT16);
    BAD("softmaxSum fp16", "softmaxSum", s.dt[6] = ACL_BF16);
    BAD("topk int64", "topkIndices", s.dt[7] = ACL_INT64);
    BAD("dq int32", "dqOut", s.dt[8] = ACL_INT32);
    BAD("dk double", "dkOut", s.dt[9] = ACL_DOUBLE);
    BAD("dv int8", "dvOut", s.dt[10] = ACL_INT8);
    BAD("mask float", "attenMask", s.mask = 2);
    BAD("mask 3-D", "attenMask", s.mask = 3);
    BAD("query NC1HWC0", "query", s.fmt[0] = ACL_FORMAT_NC1HWC0);
    BAD("dkOut FRACTAL_NZ", "dkOut", s.fmt[9] = ACL_FORMAT_FRACTAL_NZ);
    BAD("negative stride", "query", s.strides2[0] = -1);
    BAD("negative stride out", "dvOut", s.strides2[10] = -1);
    BAD("dq stride 0", "dqOut", s.zero_s2[8] = 1);
    BAD("dk overlapping rows", "dkOut", s.strides2[9] = 2);
    BAD("key D", "key", s.dims[1][2] = 192; s.dims[9][2] = 192);
    BAD("value T2", "value", s.dims[2][0] = 128);
    BAD("value N2", "value", s.dims[2][1] = 2);
    BAD("attentionOut Dv", "attentionOut", s.dims[3][2] = 192);
    BAD("attentionOutGrad T1", "attentionOutGrad", s.dims[4][0] = 5);
    BAD("softmaxMax last dim", "softmaxMax", s.dims[5][2] = 1);
    BAD("softmaxSum N1", "softmaxSum", s.dims[6][1] = 1);
    BAD("topk last dim", "topkIndices", s.dims[7][2] = 3);
    BAD("topk N2", "topkIndices", s.dims[7][1] = 2);
    BAD("dq shape", "dqOut", s.dims[8][2] = 192);
    BAD("dk shape", "dkOut", s.dims[9][0] = 128);
    BAD("dv shape", "dvOut", s.dims[10][1] = 2);
    BAD("headNum", "headNum", s.heads = 1);
    BAD("N1 % N2", "multiple of N2", s.dims[1][1] = s.dims[2][1] = s.dims[9][1] = s.dims[10][1] = s.dims[7][1] = 3);
    BAD("N1 > 128", "N1 (query heads)",
        s.heads = 256; s.dims[0][1] = s.dims[3][1] = s.dims[4][1] = s.dims[5][1] = s.dims[6][1] = s.dims[8][1] = 256;
        s.dims[1][1] = s.dims[2][1] = s.dims[9][1] = s.dims[10][1] = s.dims[7][1] = 8);
    BAD("G > 32", "G = N1/N2",
        s.heads = 64; s.dims[0][1] = s.dims[3][1] = s.dims[4][1] = s.dims[5][1] = s.dims[6][1] = s.dims[8][1] = 64);
    BAD("D = 64", "D (query/key head dim)",
        s.dims[0][2] = s.dims[1][2] = s.dims[8][2] = s.dims[9][2] = 64;
        s.dims[2][2] = s.dims[3][2] = s.dims[4][2] = s.dims[10][2] = 64);
    BAD("Dv = 96", "Dv (value head dim)", s.dims[2][2] = s.dims[3][2] = s.dims[4][2] = s.dims[10][2] = 96);
    BAD("Dv > D", "must not exceed D", s.dims[2][2] = s.dims[3][2] = s.dims[4][2] = s.dims[10][2] = 192);
    BAD("block 24", "selectedBlockSize", s.B = 24);
    BAD("block 0", "selectedBlockSize", s.B = 0);
    BAD("block 256", "selectedBlockSize", s.B = 256);
    BAD("count 0", "selectedBlockCount", s.C = 0; s.dims[7][2] = 0);
    BAD("count 129", "selectedBlockCount", s.C = 129; s.dims[7][2] = 129);
    BAD("count*block > 8192", "8192",
        s.B = 128; s.C = 65; s.dims[7][2] = 65; s.dims[1][0] = s.dims[2][0] = s.dims[9][0] = s.dims[10][0] = 8320;
        s.seqkv[0] = 8320);
    BAD("sparseMode 1", "sparseMode", s.sparse = 1);
    BAD("sparseMode 3", "sparseMode", s.sparse = 3);
    BAD("only q seq", "actualSeq", s.nkv = -1);
    BAD("only kv seq", "actualSeq", s.nq = -1);
    BAD("seq lengths differ", "actualSeq", s.nq = 2; s.seqq[0] = 2; s.seqq[1] = 4);
    BAD("empty seq", "actualSeqQLen", s.nq = 0; s.nkv = 0);
    BAD("seq last != T1", "actualSeqQLen", s.seqq[0] = 3);
    BAD("seq last != T2", "actualSeqKvLen", s.seqkv[0] = 240);
    BAD("seq decreasing", "actualSeqQLen", s.nq = 2; s.nkv = 2; s.seqq[0] = 3; s.seqq[1] = 2; s.seqkv[0] = 128;
        s.seqkv[1] = 256);
    BAD("seq empty batch", "actualSeqKvLen", s.nq = 2; s.nkv = 2; s.seqq[0] = 2; s.seqq[1] = 4; s.seqkv[0] = 0;
        s.seqkv[1] = 256);
    BAD("kv not multiple of block", "multiple", s.nq = 2; s.nkv = 2; s.seqq[0] = 2; s.seqq[1] = 4;
        s.seqkv[0] = 72; s.seqkv[1] = 256);
    BAD("kv shorter than C*B", "selectedBlockCount", s.nq = 2; s.nkv = 2; s.seqq[0] = 2; s.seqq[1] = 4;
        s.seqkv[0] = 48; s.seqkv[1] = 256);
    BAD("no seq: T2 not multiple", "multiple", s.nq = s.nkv = -1;
        s.dims[1][0] = s.dims[2][0] = s.dims[9][0] = s.dims[10][0] = 250);
#undef BAD
}

/* rank checks need a different tensor rank: done separately */
static void test_rank(void) {
    static char dummy[64];
    const int64_t d4[4] = {4, 1, 2, 128};
    aclTensor *q4 = aclCreateTensor(d4, 4, ACL_FLOAT16, NULL, 0, ACL_FORMAT_ND, d4, 4, dummy);
    vset s;
    vset_base(&s);
    aclTensor *t[NT];
    for (int i = 0; i < NT; i++) t[i] = aclCreateTensor(s.dims[i], 3, s.dt[i], NULL, 0, ACL_FORMAT_ND, s.dims[i], 3, dummy);
    uint64_t ws;
    aclOpExecutor *ex = NULL;
    char layout[] = "TND";
    int rc = aclnnNsaSelectedAttentionGradGetWorkspaceSize(q4, t[1], t[2], t[3], t[4], t[5], t[6], t[7], NULL, NULL,
                                                           NULL, 0.1, 16, 4, 2, layout, 0, t[8], t[9], t[10], &ws, &ex);
    CHECK(rc == 161002 && strstr(errmsg(), "query"), "4-D query: rc %d msg '%s'", rc,
          errmsg());
    rc = aclnnNsaSelectedAttentionGradGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], NULL, NULL,
                                                       NULL, 0.1, 16, 4, 2, layout, 0, t[8], t[9], q4, &ws, &ex);
    CHECK(rc == 161002 && strstr(errmsg(), "dvOut"), "4-D dvOut: rc %d msg '%s'", rc,
          errmsg());
    for (int i = 0; i < NT; i++) aclDestroyTensor(t[i]);
    aclDestroyTensor(q4);
}

int main(void) {
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&g_stream) != ACL_SUCCESS) {
        fprintf(stderr, "runtime init failed: %s\n", errmsg());
        return 2;
    }
    unsetenv("PYACLNN_NSA_RELAXED");
    unsetenv("PYACLNN_NSA_TILE_TOKENS");
    /* the double-precision checks are those of the high precision (P and dS in fp32);
     * check_tiers also runs the default npu precision */
    setenv("PYACLNN_NSA_PRECISION", "high", 1);
    struct { const char *name; void (*fn)(void); } tests[] = {
        {"vendor_flow", test_vendor_flow}, {"reference_cases", test_reference_cases},
        {"validation", test_validation},   {"rank", test_rank},
        {"bad_index", test_bad_index},     {"tiles", test_tiles},
        {"tiers", test_tiers},             {"relaxed", test_relaxed},
        {"ws_formula", test_ws_formula},   {"rebind", test_rebind},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        const int before = g_fail;
        tests[i].fn();
        printf("%-16s %s\n", tests[i].name, g_fail == before ? "ok" : "FAILED");
        fflush(stdout);
    }
    aclrtDestroyStream(g_stream);
    aclrtResetDevice(0);
    aclFinalize();
    printf("test_nsa: %d checks, %d failures (%d case x tier runs; best tier here: %s)\n", g_checks, g_fail,
           g_tier_runs, pyaclnnGetIsa());
    return g_fail ? 1 : 0;
}
