/* NSA selected attention (forward and backward): compute kernels.
 *
 * The two op drivers (ops/nsa_selected_attention, ops/nsa_selected_attention_grad,
 * sharing ops/nsa_common) express every matrix product as a call of one of two
 * "multi-panel" GEMMs, plus a few row operations.
 *
 * The fp32 GEMM (fp16 inputs, fp32 inputs, and bf16 with PYACLNN_NSA_PRECISION=high):
 *
 *   C[m][n] (=|+=) sum_p sum_k A_p(m,k) * B_p(k,n)     m < M, n < N, k < K
 *     A_p(m,k) = panels[p].a[m*a_sm + k*a_sk]   fp32 (row-major: a_sk == 1,
 *                                               column-major: a_sm == 1)
 *     B_p(k,n) = element slot(n) of row k: panels[p].b + k*ldb elements,
 *                stored as btype (fp32, fp16 or bf16; see nsa_b_slot)
 *     C[m][n]  = c[m*ldc + n]
 *
 * Every output element is ONE sequential chain of fused multiply-adds in this
 * order: panels in increasing p, then k in increasing order, starting from 0
 * (or from C when accumulating). The scalar oracle evaluates exactly that chain
 * with fmaf; the SIMD tiers keep the chain per lane (partial sums that go back
 * to C between panel chunks are exact), so every tier gives the same bits. N is
 * a multiple of 16 (the drivers pad rows with zeros); M, K and the panel count
 * are arbitrary (>= 0). With accumulate == 0 and no panels C is set to zero.
 *
 * The bf16 dot GEMM (bf16 inputs at the NPU's precision, every product of both
 * ops): both operands bf16, k taken in pairs, one vdpbf16ps chain per output
 * element (nsa_dot_args below).
 *
 * Row operations (all bitwise equal across tiers: same operations, and sums and
 * maxima over 16 lanes, lane j taking the columns c = j mod 16, reduced in a
 * fixed tree):
 *   pgrad:  for c < nvis:  x = fl(scale*S[c]) - m,  P = l != 0 ? exp(x) / l : 0,
 *                          dS = P * (dP[c] - dsum)    (dS from the fp32 P)
 *           for c >= nvis: P = 0, dS = 0; then P and dS rounded by `rnd`.
 *   pgrad2: pgrad of two rows with bf16 outputs in the dot GEMM's layouts
 *   rowmax: max over c < n of fl(scale*S[c])  (-inf for n == 0, NaN if any is NaN)
 *   expsum: S[c] = exp(fl(scale*S[c]) - m) for c < n, in place; returns their sum
 *   normround: x[c] = rnd(x[c] / l) for c < n
 *   normbf16:  normround to bf16, stored as bf16
 *
 * The precision rule (`rnd`, nsa_round): NSA_ROUND_NONE keeps fp32 values;
 * NSA_ROUND_F16 / NSA_ROUND_BF16 round each value to that format, to nearest with
 * ties away from zero (AscendC's CAST_ROUND), and return it as an fp32 (exact).
 * NaN becomes the default NaN, overflow gives +-inf, subnormals are kept.
 */
#ifndef PA_NSA_KERNELS_H
#define PA_NSA_KERNELS_H

#include <stdint.h>

#include "cpu/pa_cpu.h"

/* Storage type of the B operand. */
typedef enum nsa_btype { NSA_B_F32 = 0, NSA_B_F16 = 1, NSA_B_BF16 = 2 } nsa_btype;

/* Rounding applied to P and dS (and by normround). */
typedef enum nsa_round { NSA_ROUND_NONE = 0, NSA_ROUND_F16 = 1, NSA_ROUND_BF16 = 2 } nsa_round;

/* Slot of column n inside its row of B: identity for fp32 and fp16; for bf16
 * bits 2 and 3 of n are swapped, so that one 32-byte load of 16 values widens
 * into columns 0..7 and 8..15 with two unpacks. The map is its own inverse. */
static inline int64_t nsa_b_slot(int btype, int64_t n) {
    if (btype != NSA_B_BF16) return n;
    return (n & ~(int64_t)12) | ((n & 4) << 1) | ((n & 8) >> 1);
}

/* One term of a multi-panel product: A_p and B_p (layouts per GEMM below). */
typedef struct nsa_panel {
    const void *a;
    const void *b;
} nsa_panel;

/* ---- the fp32 GEMM (A fp32, B fp32 / fp16 / bf16) ---- */

typedef struct nsa_gemm_args {
    int64_t m, n, k;        /* n % 16 == 0 */
    const nsa_panel *panels; /* a: fp32 */
    int64_t npanels;
    int64_t a_sm, a_sk;     /* element strides of A */
    int64_t ldb;            /* row stride of B in elements (>= n) */
    int32_t btype;          /* nsa_btype */
    float *c;
    int64_t ldc;            /* row stride of C (>= n) */
    int32_t accumulate;     /* 0: C = sum, 1: C += sum */
    /* optional hint, no effect on results: pf_bytes bytes at pf that the caller
     * reads next (e.g. the next call's B panel); the SIMD tiers prefetch them
     * during their last panel chunk, as they prefetch their own next chunk */
    const void *pf;
    int64_t pf_bytes;
    int32_t no_prefetch;    /* 1: no software prefetch at all (where it costs more than it saves) */
} nsa_gemm_args;

/* ---- the bf16 dot-product GEMM (bf16 inputs at the NPU's precision) ----
 *
 *   C[m][n] (=|+=) sum_p sum_j A_p(m, j) . B_p(j, n)      m < M, n < N, j < KP
 *     A_p(m, j) = bf16 pair (A[m][2j], A[m][2j+1]) at panels[p].a + m*lda + 2j
 *                 (bf16 elements: rows of A with k contiguous, lda even)
 *     B_p(j, n) = bf16 pair (B[2j][n], B[2j+1][n]) at 32-bit word j*ldb + n of
 *                 panels[p].b (rows 2j and 2j+1 of B interleaved)
 *
 * Every output element is one chain, panels in increasing p, pairs in
 * increasing j, from 0 (or from C when accumulating):
 *     c = nsa_dot_fma(A[2j+1], B[2j+1], c);  c = nsa_dot_fma(A[2j], B[2j], c)
 * where nsa_dot_fma (nsa_round.h) is a fused multiply-add rounded to nearest
 * even with denormal inputs read as zero and a result tiny after rounding
 * flushed to zero: exactly the two steps of an AVX512_BF16 vdpbf16ps lane,
 * which the avx512bf16 tier uses; the other tiers evaluate the same chain with
 * FMAs under MXCSR DAZ+FTZ (x86) or in plain C. N % 16 == 0; M, KP and the
 * panel count are arbitrary (>= 0). */
typedef struct nsa_dot_args {
    int64_t m, n, kp;       /* n % 16 == 0; kp pairs per panel */
    const nsa_panel *panels; /* a, b: bf16 */
    int64_t npanels;
    int64_t lda;            /* row stride of A in bf16 elements (even) */
    int64_t ldb;            /* row stride of B in pairs (>= n) */
    float *c;
    int64_t ldc;
    int32_t accumulate;
    const void *pf;         /* prefetch hint and switch, as in nsa_gemm_args */
    int64_t pf_bytes;
    int32_t no_prefetch;
} nsa_dot_args;

/* ---- the bf16 softmax gradient of two rows (the dot path of the grad) ----
 * Rows r = 0, 1 (g and g + 1 of one pair; s[1] == NULL: a padding row of
 * zeros): per column c < n, P and dS as pgrad (below), rounded to bf16; then
 *   ds16[r][c]            = dS of row r            (bf16 rows: dq's A operand)
 *   p2[c], ds2[c]         = (P[0][c], P[1][c]), (dS[0][c], dS[1][c]) as bf16
 *                           pairs (32-bit words: dv's and dk's B operands)
 * n % 16 == 0; columns >= nvis are zeros. */
typedef struct nsa_pgrad2_args {
    const float *s[2], *dp[2];
    int64_t n, nvis;
    float scale, m[2], l[2], dsum[2];
    uint16_t *ds16[2];      /* ds16[1] unused when s[1] == NULL */
    uint32_t *p2, *ds2;
} nsa_pgrad2_args;

typedef void (*nsa_gemm_fn)(const nsa_gemm_args *args);
typedef void (*nsa_dot_fn)(const nsa_dot_args *args);
typedef void (*nsa_pgrad_fn)(float *s_to_p, float *dp_to_ds, int64_t n, int64_t nvis, float scale, float m,
                             float l, float dsum, int rnd);
typedef void (*nsa_pgrad2_fn)(const nsa_pgrad2_args *args);
typedef float (*nsa_rowmax_fn)(const float *s, int64_t n, float scale);
typedef float (*nsa_expsum_fn)(float *s, int64_t n, float scale, float m);
typedef void (*nsa_normround_fn)(float *x, int64_t n, float l, int rnd);
/* out[c] = bf16(round_bf16(x[c] / l)) for c < n, zeros for n <= c < npad */
typedef void (*nsa_normbf16_fn)(const float *x, uint16_t *out, int64_t n, int64_t npad, float l);

/* One tier's kernels. Plain data: copied into op plans. */
typedef struct nsa_kernels {
    pa_isa isa;
    nsa_gemm_fn gemm;
    nsa_dot_fn dot;
    nsa_pgrad_fn pgrad;
    nsa_pgrad2_fn pgrad2;
    nsa_rowmax_fn rowmax;
    nsa_expsum_fn expsum;
    nsa_normround_fn normround;
    nsa_normbf16_fn normbf16;
} nsa_kernels;

/* Kernels of the best tier not above `isa` that this build has (nsa_config.c). */
nsa_kernels nsa_kernels_select(pa_isa isa);

/* Scalar precision rule (the oracle of the SIMD versions; inline in nsa_round.h). */
float nsa_round_scalar(float x, int rnd);

/* Shared front of the GEMMs: finishes g itself when there is nothing to
 * multiply (zeroes C unless accumulating) or the shape is not one the SIMD
 * micro-kernels cover (then the scalar GEMM), returning -1; otherwise returns
 * the A layout: 0 = row-major (a_sk == 1), 1 = column-major (a_sm == 1). */
int nsa_gemm_front(const nsa_gemm_args *g);

/* Shared front of the bf16 dot GEMMs, as nsa_gemm_front: -1 when finished
 * (nothing to multiply, or a shape only the scalar kernel covers), else 0. */
int nsa_dot_front(const nsa_dot_args *g);

/* Per-tier entry points. */
void nsa_gemm_scalar(const nsa_gemm_args *args);
void nsa_dot_scalar(const nsa_dot_args *args);
void nsa_pgrad_scalar(float *s_to_p, float *dp_to_ds, int64_t n, int64_t nvis, float scale, float m, float l,
                      float dsum, int rnd);
void nsa_pgrad2_scalar(const nsa_pgrad2_args *args);
float nsa_rowmax_scalar(const float *s, int64_t n, float scale);
float nsa_expsum_scalar(float *s, int64_t n, float scale, float m);
void nsa_normround_scalar(float *x, int64_t n, float l, int rnd);
void nsa_normbf16_scalar(const float *x, uint16_t *out, int64_t n, int64_t npad, float l);
#if defined(PA_HAVE_X86_KERNELS)
void nsa_gemm_avx2(const nsa_gemm_args *args);
void nsa_dot_avx2(const nsa_dot_args *args);
void nsa_pgrad_avx2(float *s_to_p, float *dp_to_ds, int64_t n, int64_t nvis, float scale, float m, float l,
                    float dsum, int rnd);
void nsa_pgrad2_avx2(const nsa_pgrad2_args *args);
float nsa_rowmax_avx2(const float *s, int64_t n, float scale);
float nsa_expsum_avx2(float *s, int64_t n, float scale, float m);
void nsa_normround_avx2(float *x, int64_t n, float l, int rnd);
void nsa_normbf16_avx2(const float *x, uint16_t *out, int64_t n, int64_t npad, float l);
void nsa_dot_avx512(const nsa_dot_args *args);
void nsa_dot_avx512bf16(const nsa_dot_args *args);
void nsa_pgrad_avx512(float *s_to_p, float *dp_to_ds, int64_t n, int64_t nvis, float scale, float m, float l,
                      float dsum, int rnd);
void nsa_pgrad2_avx512(const nsa_pgrad2_args *args);
float nsa_rowmax_avx512(const float *s, int64_t n, float scale);
float nsa_expsum_avx512(float *s, int64_t n, float scale, float m);
void nsa_normround_avx512(float *x, int64_t n, float l, int rnd);
void nsa_normbf16_avx512(const float *x, uint16_t *out, int64_t n, int64_t npad, float l);
#endif

#endif
