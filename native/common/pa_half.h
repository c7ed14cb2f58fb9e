/* Scalar fp16 / bf16 <-> fp32 conversions, round-to-nearest-even.
 * These are the reference conversions; SIMD kernels must match them bit for bit. */
#ifndef PA_HALF_H
#define PA_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t pa_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float pa_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float pa_bf16_to_f32(uint16_t h) { return pa_bits_f32((uint32_t)h << 16); }

static inline uint16_t pa_f32_to_bf16(float f) {
    uint32_t u = pa_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float pa_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return pa_bits_f32(sign | 0x7f800000u | (man << 13)); /* inf / nan */
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in fp32 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return pa_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t pa_f32_to_f16(float f) {
    uint32_t u = pa_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* quiet NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  /* rounds to inf (>= 65520) */
    if (a < 0x38800000u) {
        /* result is subnormal or zero: value / 2^-24, rounded to nearest even */
        float v = pa_bits_f32(a) * 16777216.0f;  /* exact: scales by 2^24 */
        /* v < 1024; rounding to integer with RNE via the 2^23 trick */
        float r = (v + 8388608.0f) - 8388608.0f;
        return (uint16_t)(sign | (uint16_t)r);
    }
    uint32_t m = a + 0xfffu + ((a >> 13) & 1u) - (112u << 23);
    return (uint16_t)(sign | (m >> 13));
}

#endif
