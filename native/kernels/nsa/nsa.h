/* NSA selected attention (forward and backward): compute kernels.
 *
 * The two op drivers (ops/nsa_selected_attention, ops/nsa_selected_attention_grad,
 * sharing ops/nsa_common) express every matrix product as a call of one
 * "multi-panel" GEMM, plus a few row operations:
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
 * Row operations (all bitwise equal across tiers: same operations, and sums and
 * maxima over 16 lanes, lane j taking the columns c = j mod 16, reduced in a
 * fixed tree):
 *   pgrad:  for c < nvis:  x = fl(scale*S[c]) - m,  P = l != 0 ? exp(x) / l : 0,
 *                          dS = P * (dP[c] - dsum)    (dS from the fp32 P)
 *           for c >= nvis: P = 0, dS = 0; then P and dS rounded by `rnd`.
 *   rowmax: max over c < n of fl(scale*S[c])  (-inf for n == 0, NaN if any is NaN)
 *   expsum: S[c] = exp(fl(scale*S[c]) - m) for c < n, in place; returns their sum
 *   normround: x[c] = rnd(x[c] / l) for c < n
 *
 * The precision rule (`rnd`, nsa_round): NSA_ROUND_NONE keeps fp32 values;
 * NSA_ROUND_F16 / NSA_ROUND_BF16 round each value to that format, to nearest with
 * ties away from zero (AscendC's CAST_ROUND), and return it as an fp32 (exact).
 * NaN stays NaN, overflow gives +-inf, subnormals are kept.
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

typedef struct nsa_panel {
    const float *a;
    const void *b;  /* btype elements */
} nsa_panel;

typedef struct nsa_gemm_args {
    int64_t m, n, k;        /* n % 16 == 0 */
    const nsa_panel *panels;
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
} nsa_gemm_args;

typedef void (*nsa_gemm_fn)(const nsa_gemm_args *args);
typedef void (*nsa_pgrad_fn)(float *s_to_p, float *dp_to_ds, int64_t n, int64_t nvis, float scale, float m,
                             float l, float dsum, int rnd);
typedef float (*nsa_rowmax_fn)(const float *s, int64_t n, float scale);
typedef float (*nsa_expsum_fn)(float *s, int64_t n, float scale, float m);
typedef void (*nsa_normround_fn)(float *x, int64_t n, float l, int rnd);

/* One tier's kernels. Plain data: copied into op plans. */
typedef struct nsa_kernels {
    pa_isa isa;
    nsa_gemm_fn gemm;
    nsa_pgrad_fn pgrad;
    nsa_rowmax_fn rowmax;
    nsa_expsum_fn expsum;
    nsa_normround_fn normround;
} nsa_kernels;

/* Kernels of the best tier not above `isa` that this build has. The AVX-512
 * tier runs the AVX2 kernels (see nsa_config.c). */
nsa_kernels nsa_kernels_select(pa_isa isa);

/* Scalar precision rule (the oracle of the SIMD versions; inline in nsa_round.h). */
float nsa_round_scalar(float x, int rnd);

/* Shared front of the GEMMs: finishes g itself when there is nothing to
 * multiply (zeroes C unless accumulating) or the shape is not one the SIMD
 * micro-kernels cover (then the scalar GEMM), returning -1; otherwise returns
 * the A layout: 0 = row-major (a_sk == 1), 1 = column-major (a_sm == 1). */
int nsa_gemm_front(const nsa_gemm_args *g);

/* Per-tier entry points. */
void nsa_gemm_scalar(const nsa_gemm_args *args);
void nsa_pgrad_scalar(float *s_to_p, float *dp_to_ds, int64_t n, int64_t nvis, float scale, float m, float l,
                      float dsum, int rnd);
float nsa_rowmax_scalar(const float *s, int64_t n, float scale);
float nsa_expsum_scalar(float *s, int64_t n, float scale, float m);
void nsa_normround_scalar(float *x, int64_t n, float l, int rnd);
#if defined(PA_HAVE_X86_KERNELS)
void nsa_gemm_avx2(const nsa_gemm_args *args);
void nsa_pgrad_avx2(float *s_to_p, float *dp_to_ds, int64_t n, int64_t nvis, float scale, float m, float l,
                    float dsum, int rnd);
float nsa_rowmax_avx2(const float *s, int64_t n, float scale);
float nsa_expsum_avx2(float *s, int64_t n, float scale, float m);
void nsa_normround_avx2(float *x, int64_t n, float l, int rnd);
#endif

#endif
