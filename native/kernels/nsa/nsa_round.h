/* The NSA precision rule, scalar and inline (nsa.h): x rounded to fp16 or bf16
 * precision, to nearest with ties away from zero (AscendC CAST_ROUND), as an
 * exact fp32; NaN gives the default NaN, overflow +-inf, subnormals are kept. */
#ifndef PA_NSA_ROUND_H
#define PA_NSA_ROUND_H

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

#endif
