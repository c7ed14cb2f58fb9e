/* NSA selected-attention backward: compute kernels.
 *
 * The op driver (ops/nsa_selected_attention_grad) packs every input into fp32
 * workspace arrays and expresses the five matrix products of the backward as
 * calls of one "multi-panel" GEMM, plus one elementwise softmax-gradient row op:
 *
 *   C[m][n] (=|+=) sum_p sum_k A_p(m,k) * B_p(k,n)     m < M, n < N, k < K
 *     A_p(m,k) = panels[p].a[m*a_sm + k*a_sk]   (row-major: a_sk == 1,
 *                                               column-major: a_sm == 1)
 *     B_p(k,n) = panels[p].b[k*ldb + n]
 *     C[m][n]  = c[m*ldc + n]
 *
 * with the sum taken in this order for every output element: panels in
 * increasing p, then k in increasing order, accumulated in fp32 (the SIMD tiers
 * use FMA, the scalar oracle a separate multiply and add). N is a multiple of
 * 16 (the driver pads rows), M, K and the panel count are arbitrary (>= 0).
 * With accumulate == 0 and no panels C is set to zero.
 *
 * The row op turns one row of scores and one row of dP into P and dS in place:
 *   for c < nvis:  P = l != 0 ? exp(scale*S[c] - m) / l : 0
 *                  dS = P * (dP[c] - dsum)
 *   for c >= nvis: P = 0, dS = 0
 *
 * Forward row ops (aclnnNsaSelectedAttention), on one row of raw scores S:
 *   rowmax: max over c < n of fl(scale*S[c])  (-inf for n == 0, NaN if any is NaN)
 *   expsum: S[c] = exp(fl(scale*S[c]) - m) for c < n, in place; returns their
 *           fp32 sum (order fixed per tier). The exp is the one pgrad uses, on the
 *           same fl(scale*S) - m, so forward and backward see the same P.
 *
 * Optional bf16 GEMM (AVX512_BF16 only; NULL elsewhere), for products whose
 * operands are exact bf16 input values (S = Q K^T and dP = dO V^T):
 *   C[m][n] = sum_j A[m][j] * B[j][n]     m < M, n < N, j < K (K even)
 *     A[m][j] = a[m*lda + j]                           (bf16, row-major)
 *     B[j][n] = b[((j/2)*N + n)*2 + j%2]               (bf16 pairs interleaved)
 * accumulated in fp32 by pairs (vdpbf16ps: products are exact, denormals are
 * flushed); N is a multiple of 16.
 *
 * Every tier must agree with the scalar oracle to ~1e-5 relative and be
 * bitwise deterministic (no dependence on timing, alignment or thread count).
 */
#ifndef PA_NSA_GRAD_H
#define PA_NSA_GRAD_H

#include <stdint.h>

#include "cpu/pa_cpu.h"

typedef struct nsa_panel {
    const float *a;
    const float *b;
} nsa_panel;

typedef struct nsa_gemm_args {
    int64_t m, n, k;        /* n % 16 == 0 */
    const nsa_panel *panels;
    int64_t npanels;
    int64_t a_sm, a_sk;     /* element strides of A */
    int64_t ldb;            /* row stride of B (>= n) */
    float *c;
    int64_t ldc;            /* row stride of C (>= n) */
    int accumulate;         /* 0: C = sum, 1: C += sum */
} nsa_gemm_args;

typedef void (*nsa_gemm_fn)(const nsa_gemm_args *args);
typedef void (*nsa_pgrad_fn)(float *s_to_p, float *dp_to_ds, int64_t n, int64_t nvis, float scale,
                             float m, float l, float dsum);

typedef float (*nsa_rowmax_fn)(const float *s, int64_t n, float scale);
typedef float (*nsa_expsum_fn)(float *s, int64_t n, float scale, float m);

/* C = A B on bf16 pairs (AVX512_BF16). */
typedef void (*nsa_gemm_bf16_fn)(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t lda,
                                 const uint16_t *b, float *c, int64_t ldc);

/* One tier's kernels. Plain data: copied into op plans. */
typedef struct nsa_grad_kernels {
    pa_isa isa;
    nsa_gemm_fn gemm;
    nsa_pgrad_fn pgrad;
    nsa_rowmax_fn rowmax;
    nsa_expsum_fn expsum;
    nsa_gemm_bf16_fn gemm_bf16; /* NULL unless AVX512_BF16 */
} nsa_grad_kernels;

/* Kernels of the best tier not above `isa` that this build has. */
nsa_grad_kernels nsa_grad_select(pa_isa isa);

/* Shared front of the SIMD GEMMs: finishes g itself when no micro-kernel applies
 * (empty sums: zero C unless accumulating; an A layout or N the micro-kernels do
 * not cover: the scalar GEMM) and returns -1; otherwise returns the A layout,
 * 0 = row-major (a_sk == 1) or 1 = column-major (a_sm == 1). */
int nsa_gemm_front(const nsa_gemm_args *g);

/* Per-tier entry points. */
void nsa_gemm_scalar(const nsa_gemm_args *args);
void nsa_pgrad_scalar(float *s_to_p, float *dp_to_ds, int64_t n, int64_t nvis, float scale, float m,
                      float l, float dsum);
float nsa_rowmax_scalar(const float *s, int64_t n, float scale);
float nsa_expsum_scalar(float *s, int64_t n, float scale, float m);
#if defined(PA_HAVE_X86_KERNELS)
void nsa_gemm_avx2(const nsa_gemm_args *args);
void nsa_pgrad_avx2(float *s_to_p, float *dp_to_ds, int64_t n, int64_t nvis, float scale, float m,
                    float l, float dsum);
float nsa_rowmax_avx2(const float *s, int64_t n, float scale);
float nsa_expsum_avx2(float *s, int64_t n, float scale, float m);
void nsa_gemm_avx512(const nsa_gemm_args *args);
float nsa_rowmax_avx512(const float *s, int64_t n, float scale);
float nsa_expsum_avx512(float *s, int64_t n, float scale, float m);
void nsa_pgrad_avx512(float *s_to_p, float *dp_to_ds, int64_t n, int64_t nvis, float scale, float m,
                      float l, float dsum);
void nsa_gemm_bf16_avx512(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t lda, const uint16_t *b,
                          float *c, int64_t ldc);
#endif

#endif
