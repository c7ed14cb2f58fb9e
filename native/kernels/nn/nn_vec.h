/* The NN family's row kernels (native/kernels/nn/): fixed-order fp32
 * reductions over a row, the softmax exponential and the fp16 / bf16
 * conversions, per ISA tier (scalar, AVX2, AVX-512) with the same bits on
 * every tier (the scalar tier is the oracle).
 *
 * Reductions over n floats (any n >= 0) use 64 lanes: element i goes to lane
 * i % 64 in increasing i (each lane starts at +0, or -inf for max); the last
 * partial block of 64 is padded with the neutral element (+0 adds nothing to
 * a lane that starts at +0 and only ever holds sums of the row's values);
 * then the lanes fold in the fixed tree
 *   t16[l] = (a[l] + a[16+l]) + (a[32+l] + a[48+l])   l < 16
 *   t8[l] = t16[l] + t16[l+8]; t4[l] = t8[l] + t8[l+4]; t2[l] = t4[l] + t4[l+2]
 *   s = t2[0] + t2[1]
 * (max folds the same way with max(a, b) = a > b ? a : b, so a NaN never wins
 * and the result's bits do not depend on the tier).
 *
 * Every multiply and add is rounded on its own (no contraction); FMAs only
 * where written. */
#ifndef PA_NN_VEC_H
#define PA_NN_VEC_H

#include <stdint.h>

#include "cpu/pa_cpu.h"

/* exp(x) for x <= 0 (the softmax argument x - max), the scaled masked
 * softmax's algorithm: x = (nf / 16) ln2 + r with nf the integer nearest
 * x * 16 / ln2 (the 1.5 * 2^23 trick: t = fma(x, K, MAGIC), nf = t - MAGIC),
 * r1 = fma(-nf, L_HI, x), r = fma(-nf, L_LO, r1), e^r - 1 =
 * fma(fma(C3, r1, C2), r1 * r1, r); 2^(nf/16) from bits(t): a 16-entry
 * table of 2^(j/16) (j = nf mod 16) plus (bits(t) << 19) in the exponent;
 * e = fma(h, q, h). x < PA_NN_EXP_CUT gives +0 (no denormal is formed), a
 * NaN x itself. About 1 ulp on [-87, 0]. */
#define PA_NN_EXP_K 0x1.715476p+4f   /* 16 / ln2 */
#define PA_NN_EXP_MAGIC 12582912.0f  /* 1.5 * 2^23 */
#define PA_NN_EXP_L_HI 0x1.62e430p-5f /* ln2 / 16 = L_HI + L_LO */
#define PA_NN_EXP_L_LO (-0x1.05c610p-33f)
#define PA_NN_EXP_C2 0x1.00021ep-1f
#define PA_NN_EXP_C3 0x1.55559ep-3f
#define PA_NN_EXP_CUT (-87.0f)

typedef struct pa_nn_vec {
    const char *name;
    float (*sum)(const float *x, int64_t n);                    /* sum x[i] */
    float (*sumsq)(const float *x, int64_t n);                  /* sum x[i]*x[i] */
    float (*sumsqdev)(const float *x, int64_t n, float m);      /* sum (x[i]-m)*(x[i]-m) */
    float (*dot)(const float *a, const float *b, int64_t n);    /* sum a[i]*b[i] */
    float (*max)(const float *x, int64_t n);                    /* -inf for n == 0 */
    /* x[i] = exp(x[i] - m) (the exp above), returns their sum */
    float (*expsub_sum)(float *x, int64_t n, float m);
    /* dst[i] = exp(src[i] - m), returns their sum (dst may be src); pf (or NULL): a row of n elements
     * of pf_es bytes to prefetch into L2 meanwhile, a block per block of 64 (the next row) */
    float (*expsub_sum_to)(float *dst, const float *src, int64_t n, float m, const void *pf, int pf_es);
    /* row formulas (y may be x): y = x * s; y = (x * rstd) * g; y = ((x - mean) * rstd) * w + b;
     * y = (x - a) - b. nt: non-temporal stores where y is aligned (outputs too large to stay cached;
     * call fence() before the results are used). pf (or NULL): a row of n elements of pf_es bytes
     * to prefetch into L2 meanwhile (the next row) */
    void (*scale)(float *y, const float *x, float s, int64_t n, int nt, const void *pf, int pf_es);
    void (*rms_apply)(float *y, const float *x, float rstd, const float *g, int64_t n, int nt, const void *pf,
                      int pf_es);
    void (*ln_apply)(float *y, const float *x, float mean, float rstd, const float *w, const float *b, int64_t n,
                     int nt, const void *pf, int pf_es);
    void (*sub2)(float *y, const float *x, float a, float b, int64_t n, int nt, const void *pf, int pf_es);
    void (*fence)(void);
    /* hints the `bytes` at p into L2 (the next row, while this one computes); no effect on results */
    void (*prefetch)(const void *p, int64_t bytes);
    /* fused 16-bit rows (bf: 1 = BF16, 0 = FLOAT16): dst = widen(src) and its max / sum / sum of
     * squares (the 64-lane order above); dst16 = narrow(src * s), narrow((x * rstd) * g),
     * narrow(((x - mean) * rstd) * w + b) (nearest even, as common/pa_half.h) */
    float (*ld16_max)(float *dst, const uint16_t *src, int64_t n, int bf);
    float (*ld16_sum)(float *dst, const uint16_t *src, int64_t n, int bf);
    float (*ld16_sumsq)(float *dst, const uint16_t *src, int64_t n, int bf);
    void (*st16_scale)(uint16_t *dst, const float *src, float s, int64_t n, int bf, int nt, const void *pf,
                       int pf_es);
    void (*st16_rms)(uint16_t *dst, const float *x, float rstd, const float *g, int64_t n, int bf, int nt,
                     const void *pf, int pf_es);
    void (*st16_ln)(uint16_t *dst, const float *x, float mean, float rstd, const float *w, const float *b, int64_t n,
                    int bf, int nt, const void *pf, int pf_es);
    /* o[i] = exp(x[i]) over the whole range (the map engine's exp, <= 1 ulp); o may be x */
    void (*exp)(float *o, const float *x, int64_t n);
    /* contiguous conversions, nearest even (as common/pa_half.h) */
    void (*h2f)(float *o, const uint16_t *h, int64_t n);
    void (*f2h)(uint16_t *h, const float *f, int64_t n);
    void (*b2f)(float *o, const uint16_t *h, int64_t n);
    void (*f2b)(uint16_t *h, const float *f, int64_t n);
} pa_nn_vec;

/* The kernels of the best tier not above `isa` that the build has. */
const pa_nn_vec *pa_nn_vec_for(pa_isa isa);
/* ... of the active tier (pa_cpu_isa()). */
const pa_nn_vec *pa_nn_vec_active(void);

extern const pa_nn_vec pa_nn_vec_scalar;
#if defined(PA_HAVE_X86_KERNELS)
extern const pa_nn_vec pa_nn_vec_avx2;
extern const pa_nn_vec pa_nn_vec_avx512;
extern const pa_nn_vec pa_nn_vec_avx512bf16; /* needs AVX512_BF16 (pa_cpu_has_avx512bf16) */
#endif

#endif
