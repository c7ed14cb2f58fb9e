/* The NSA precision rule, scalar and inline (nsa.h): x rounded to fp16 or bf16
 * precision, to nearest with ties away from zero (AscendC CAST_ROUND), as an
 * exact fp32; NaN gives the default NaN, overflow +-inf, subnormals are kept. */
#ifndef PA_NSA_ROUND_H
#define PA_NSA_ROUND_H

#include <float.h>
#include <math.h>

#include "common/pa_half.h"
#include "kernels/nsa/nsa.h"

static inline float nsa_round_inline(float x, int rnd) {
    if (rnd == NSA_ROUND_NONE) return x;
    const uint32_t u = pa_f32_bits(x);
    const uint32_t a = u & 0x7fffffffu, s = u & 0x80000000u;
    if (a > 0x7f800000u) return pa_bits_f32(0x7fc00000u); /* the default NaN */
    if (rnd == NSA_ROUND_BF16) return pa_bits_f32((u + 0x8000u) & 0xffff0000u);
    if (a >= 0x38800000u) { /* >= 2^-14: an fp16 normal, or overflow */
        uint32_t r = (a + 0x1000u) & ~(uint32_t)0x1fffu;
        if (r > 0x477fe000u) r = 0x7f800000u; /* beyond 65504: inf */
        return pa_bits_f32(s | r);
    }
    /* fp16 subnormal range: multiples of 2^-24 */
    const float y = pa_bits_f32(a) * 16777216.0f; /* exact, < 1024 */
    const float t = truncf(y);
    const float r = t + (y - t >= 0.5f ? 1.0f : 0.0f);
    return pa_bits_f32(s | pa_f32_bits(r * 5.9604644775390625e-8f));
}

/* bf16 bits of x, a value nsa_round_inline(., NSA_ROUND_BF16) returned (exact) */
static inline uint16_t nsa_bf16_bits(float x) { return (uint16_t)(pa_f32_bits(x) >> 16); }

/* x, or a zero of its sign when x is an fp32 denormal (DAZ) */
static inline float nsa_daz(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

/* One step of the bf16 dot GEMM (nsa.h), as a vdpbf16ps lane computes it: a*b + c
 * with the product exact (a, b are bf16 values) and one rounding to nearest
 * even; denormal a, b and c read as zero; a result that is tiny (below FLT_MIN
 * after rounding with an unbounded exponent, as x86 detects underflow) becomes
 * a zero of its sign. */
static inline float nsa_dot_fma(float a, float b, float c) {
    a = nsa_daz(a);
    b = nsa_daz(b);
    c = nsa_daz(c);
    const float r = fmaf(a, b, c); /* gradual underflow: r is x rounded to the denormal grid */
    const float ar = fabsf(r);
    if (ar < FLT_MIN) return copysignf(0.0f, r);
    if (ar == FLT_MIN) {
        /* x within 2^-150 of +-FLT_MIN: tiny iff |x| < FLT_MIN - 2^-151 (the midpoint
         * below FLT_MIN rounds up to it, ties to even). x = s + e exactly (TwoSum
         * in double; a*b is exact in double). */
        const double p = (double)a * (double)b, cd = (double)c;
        const double sum = p + cd, bb = sum - p, e = (p - (sum - bb)) + (cd - bb);
        const double as = fabs(sum), ae = sum < 0.0 ? -e : e, mid = (double)FLT_MIN - 0x1p-151;
        if (as < mid || (as == mid && ae < 0.0)) return copysignf(0.0f, r);
    }
    return r;
}

#endif
