/* NSA selected-attention backward: the plain-C oracle (see nsa_grad.h). */
#include "kernels/nsa_grad/nsa_grad.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

void nsa_gemm_scalar(const nsa_gemm_args *g) {
    const int64_t M = g->m, N = g->n, K = g->k;
    for (int64_t m = 0; m < M; m++) {
        float *crow = g->c + m * g->ldc;
        if (!g->accumulate) {
            for (int64_t n = 0; n < N; n++) crow[n] = 0.0f;
        }
        for (int64_t p = 0; p < g->npanels; p++) {
            const float *a = g->panels[p].a + m * g->a_sm;
            const float *b = g->panels[p].b;
            for (int64_t k = 0; k < K; k++) {
                const float av = a[k * g->a_sk];
                const float *brow = b + k * g->ldb;
                for (int64_t n = 0; n < N; n++) crow[n] += av * brow[n];
            }
        }
    }
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
    if (layout < 0 || N % 16 != 0) { /* not produced by the driver */
        nsa_gemm_scalar(g);
        return -1;
    }
    return layout;
}

void nsa_pgrad_scalar(float *sp, float *dpds, int64_t n, int64_t nvis, float scale, float m, float l,
                      float dsum) {
    if (nvis > n) nvis = n;
    if (nvis < 0) nvis = 0;
    if (l == 0.0f) nvis = 0;
    for (int64_t c = 0; c < nvis; c++) {
        const float x = scale * sp[c] - m;
        const float p = expf(x) / l;
        sp[c] = p;
        dpds[c] = p * (dpds[c] - dsum);
    }
    for (int64_t c = nvis; c < n; c++) {
        sp[c] = 0.0f;
        dpds[c] = 0.0f;
    }
}

float nsa_rowmax_scalar(const float *s, int64_t n, float scale) {
    float m = -INFINITY;
    bool nan = false;
    for (int64_t c = 0; c < n; c++) {
        const float x = scale * s[c];
        if (x > m) m = x;
        nan |= x != x;
    }
    return nan ? NAN : m;
}

float nsa_expsum_scalar(float *s, int64_t n, float scale, float m) {
    float sum = 0.0f;
    for (int64_t c = 0; c < n; c++) {
        const float e = expf(scale * s[c] - m);
        s[c] = e;
        sum += e;
    }
    return sum;
}
