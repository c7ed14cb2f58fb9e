/* NSA selected attention: the plain-C oracle (see nsa.h). It defines the bits:
 * the SIMD tiers evaluate the same operations in the same order. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "common/pa_half.h"
#include "kernels/nsa/nsa.h"
#include "kernels/nsa/nsa_round.h"

/* ---- the precision rule ---- */

float nsa_round_scalar(float x, int rnd) { return nsa_round_inline(x, rnd); }

/* ---- GEMM: one fmaf chain per output element ---- */

static inline float b_elem(const void *b, int btype, int64_t idx_row, int64_t n) {
    switch (btype) {
    case NSA_B_F16:
        return pa_f16_to_f32(((const uint16_t *)b)[idx_row + n]);
    case NSA_B_BF16:
        return pa_bf16_to_f32(((const uint16_t *)b)[idx_row + nsa_b_slot(NSA_B_BF16, n)]);
    default:
        return ((const float *)b)[idx_row + n];
    }
}

void nsa_gemm_scalar(const nsa_gemm_args *g) {
    const int64_t M = g->m, N = g->n, K = g->k;
    for (int64_t m = 0; m < M; m++) {
        float *crow = g->c + m * g->ldc;
        if (!g->accumulate) {
            for (int64_t n = 0; n < N; n++) crow[n] = 0.0f;
        }
        for (int64_t p = 0; p < g->npanels; p++) {
            const float *a = (const float *)g->panels[p].a + m * g->a_sm;
            const void *b = g->panels[p].b;
            for (int64_t k = 0; k < K; k++) {
                const float av = a[k * g->a_sk];
                for (int64_t n = 0; n < N; n++) crow[n] = fmaf(av, b_elem(b, g->btype, k * g->ldb, n), crow[n]);
            }
        }
    }
}

static inline float bf16_at(const void *p, int64_t i) { return pa_bf16_to_f32(((const uint16_t *)p)[i]); }

void nsa_dot_scalar(const nsa_dot_args *g) {
    const int64_t M = g->m, N = g->n;
    for (int64_t m = 0; m < M; m++) {
        float *crow = g->c + m * g->ldc;
        if (!g->accumulate) {
            for (int64_t n = 0; n < N; n++) crow[n] = 0.0f;
        }
        for (int64_t p = 0; p < g->npanels; p++) {
            const void *a = (const uint16_t *)g->panels[p].a + m * g->lda;
            const void *b = g->panels[p].b;
            for (int64_t j = 0; j < g->kp; j++) {
                const float a0 = bf16_at(a, 2 * j), a1 = bf16_at(a, 2 * j + 1);
                for (int64_t n = 0; n < N; n++) {
                    const int64_t w = 2 * (j * g->ldb + n); /* the pair's first bf16 element */
                    crow[n] = nsa_dot_fma(a1, bf16_at(b, w + 1), crow[n]);
                    crow[n] = nsa_dot_fma(a0, bf16_at(b, w), crow[n]);
                }
            }
        }
    }
}

int nsa_dot_front(const nsa_dot_args *g) {
    const int64_t M = g->m, N = g->n;
    if (M <= 0 || N <= 0) return -1;
    if (g->npanels <= 0 || g->kp <= 0) {
        if (!g->accumulate) {
            for (int64_t m = 0; m < M; m++) memset(g->c + m * g->ldc, 0, (size_t)N * sizeof(float));
        }
        return -1;
    }
    if (N % 16 != 0) { /* not produced by the drivers */
        nsa_dot_scalar(g);
        return -1;
    }
    return 0;
}

int nsa_gemm_front(const nsa_gemm_args *g) {
    const int64_t M = g->m, N = g->n;
    if (M <= 0 || N <= 0) return -1;
    if (g->npanels <= 0 || g->k <= 0) {
        if (!g->accumulate) {
            for (int64_t m = 0; m < M; m++) memset(g->c + m * g->ldc, 0, (size_t)N * sizeof(float));
        }
        return -1;
    }
    const int layout = g->a_sk == 1 ? 0 : g->a_sm == 1 ? 1 : -1;
    if (layout < 0 || N % 16 != 0) { /* not produced by the drivers */
        nsa_gemm_scalar(g);
        return -1;
    }
    return layout;
}

/* ---- exp: the SIMD tiers' algorithm, operation by operation ----
 * 2^n * e^r, n = rint(x*log2(e)), r = x - n*ln2 (two-part ln2, fused),
 * degree-6 polynomial (Horner, fused); 2^n applied as two exact factors so
 * that subnormal results round once. x is clamped to [-104, ln(FLT_MAX)] with
 * the SIMD min/max semantics; above ln(FLT_MAX): +inf; NaN: NaN. */
static float exp_ref(float x0) {
    if (x0 != x0) return x0;
    const float hi = 88.72283935546875f;
    float x = hi < x0 ? hi : x0;
    x = -104.0f > x ? -104.0f : x;
    const float n = nearbyintf(x * 1.44269504088896341f);
    float r = fmaf(-n, 0.693359375f, x);
    r = fmaf(-n, -2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    const float r2 = r * r;
    p = fmaf(p, r2, r + 1.0f);
    const int32_t ni = (int32_t)n; /* in [-150, 128] */
    const int32_t n1 = (ni - (ni & 1)) / 2, n2 = ni - n1;
    const float f1 = pa_bits_f32((uint32_t)(n1 + 127) << 23), f2 = pa_bits_f32((uint32_t)(n2 + 127) << 23);
    if (x0 > hi) return INFINITY;
    return p * f1 * f2;
}

/* ---- row operations ---- */

void nsa_pgrad_scalar(float *sp, float *dpds, int64_t n, int64_t nvis, float scale, float m, float l, float dsum,
                      int rnd) {
    if (nvis > n) nvis = n;
    if (nvis < 0) nvis = 0;
    if (l == 0.0f) nvis = 0;
    for (int64_t c = 0; c < nvis; c++) {
        const float x = scale * sp[c] - m;
        const float p = exp_ref(x) / l;
        const float ds = p * (dpds[c] - dsum);
        sp[c] = nsa_round_inline(p, rnd);
        dpds[c] = nsa_round_inline(ds, rnd);
    }
    for (int64_t c = nvis; c < n; c++) {
        sp[c] = 0.0f;
        dpds[c] = 0.0f;
    }
}

void nsa_pgrad2_scalar(const nsa_pgrad2_args *g) {
    const int64_t n = g->n;
    for (int64_t c = 0; c < n; c++) {
        float pv[2] = {0.0f, 0.0f}, dv[2] = {0.0f, 0.0f};
        for (int r = 0; r < 2; r++) {
            if (g->s[r] == NULL || c >= g->nvis || g->l[r] == 0.0f) continue;
            const float x = g->scale * g->s[r][c] - g->m[r];
            const float p = exp_ref(x) / g->l[r];
            pv[r] = nsa_round_inline(p, NSA_ROUND_BF16);
            dv[r] = nsa_round_inline(p * (g->dp[r][c] - g->dsum[r]), NSA_ROUND_BF16);
        }
        g->ds16[0][c] = nsa_bf16_bits(dv[0]);
        if (g->s[1] != NULL) g->ds16[1][c] = nsa_bf16_bits(dv[1]);
        g->p2[c] = (uint32_t)nsa_bf16_bits(pv[0]) | (uint32_t)nsa_bf16_bits(pv[1]) << 16;
        g->ds2[c] = (uint32_t)nsa_bf16_bits(dv[0]) | (uint32_t)nsa_bf16_bits(dv[1]) << 16;
    }
}

float nsa_rowmax_scalar(const float *s, int64_t n, float scale) {
    float acc[16];
    for (int j = 0; j < 16; j++) acc[j] = -INFINITY;
    bool nan = false;
    for (int64_t c = 0; c < n; c++) {
        const float x = scale * s[c];
        nan |= x != x;
        float *a = &acc[c % 16];
        *a = x > *a ? x : *a;
    }
    if (nan) return NAN;
    float m = acc[0];
    for (int j = 1; j < 16; j++) m = acc[j] > m ? acc[j] : m;
    return m;
}

float nsa_expsum_scalar(float *s, int64_t n, float scale, float m) {
    float acc[16] = {0};
    for (int64_t c = 0; c < n; c++) {
        const float e = exp_ref(scale * s[c] - m);
        s[c] = e;
        acc[c % 16] += e;
    }
    float t[8];
    for (int j = 0; j < 8; j++) t[j] = acc[j] + acc[j + 8];
    for (int j = 0; j < 4; j++) t[j] = t[j] + t[j + 4];
    for (int j = 0; j < 2; j++) t[j] = t[j] + t[j + 2];
    return t[0] + t[1];
}

void nsa_normround_scalar(float *x, int64_t n, float l, int rnd) {
    for (int64_t c = 0; c < n; c++) x[c] = nsa_round_inline(x[c] / l, rnd);
}

void nsa_normbf16_scalar(const float *x, uint16_t *out, int64_t n, int64_t npad, float l) {
    for (int64_t c = 0; c < npad; c++) out[c] = c < n ? nsa_bf16_bits(nsa_round_inline(x[c] / l, NSA_ROUND_BF16)) : 0;
}
