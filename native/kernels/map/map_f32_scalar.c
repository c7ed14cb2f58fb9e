/* The fp32 map kernels, one lane at a time: the oracle of every tier. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "common/pa_half.h"
#include "kernels/map/map_isa.h"

typedef float VF;
typedef int32_t VI;
typedef bool VM;
#define W 1
#define SFX(name) name##_scalar

static inline VI sc_bits(float f) { int32_t i; memcpy(&i, &f, 4); return i; }
static inline float sc_from(int32_t i) { float f; memcpy(&f, &i, 4); return f; }
static inline VI sc_u(uint32_t u) { int32_t i; memcpy(&i, &u, 4); return i; }

#define VLD(p) (*(p))
#define VST(p, v) (*(p) = (v))
#define VSET(x) ((float)(x))
#define VZERO 0.0f
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMUL(a, b) ((a) * (b))
#define VDIV(a, b) ((a) / (b))
#define VFMA(a, b, c) fmaf((a), (b), (c))
#define VSQRT(a) sqrtf(a)
#define VABS(a) sc_from(sc_bits(a) & 0x7fffffff)
#define VNEG(a) sc_from(sc_u((uint32_t)sc_bits(a) ^ 0x80000000u))
#define VCOPYSIGN(m, s) sc_from((sc_bits(m) & 0x7fffffff) | (int32_t)((uint32_t)sc_bits(s) & 0x80000000u))
#define VLT(a, b) ((a) < (b))
#define VLE(a, b) ((a) <= (b))
#define VGT(a, b) ((a) > (b))
#define VGE(a, b) ((a) >= (b))
#define VEQ(a, b) ((a) == (b))
#define VNE(a, b) ((a) != (b))
#define VISNAN(a) ((a) != (a))
#define VSEL(m, a, b) ((m) ? (a) : (b))
#define MAND(a, b) ((a) && (b))
#define MOR(a, b) ((a) || (b))
#define MXOR(a, b) ((a) != (b))
#define MANY(m) (m)
#define VFLOOR(a) floorf(a)
#define VCEIL(a) ceilf(a)
#define VTRUNC(a) truncf(a)
#define VRINT(a) nearbyintf(a)
#define VI_F2I(a) ((int32_t)(a))
#define VI_I2F(i) ((float)(i))
#define VI_SET(x) ((int32_t)(x))
#define VI_ADD(a, b) sc_u((uint32_t)(a) + (uint32_t)(b))
#define VI_SUB(a, b) sc_u((uint32_t)(a) - (uint32_t)(b))
#define VI_AND(a, b) ((a) & (b))
#define VI_OR(a, b) ((a) | (b))
#define VI_XOR(a, b) ((a) ^ (b))
#define VI_SLL(a, n) sc_u((uint32_t)(a) << (n))
#define VI_SRL(a, n) sc_u((uint32_t)(a) >> (n))
#define VI_SRA(a, n) ((a) >> (n))
#define VI_NONZERO(a) ((a) != 0)
#define VBITS(v) sc_bits(v)
#define VFROMBITS(i) sc_from(i)

#define VLDH(p) pa_f16_to_f32(*(p))
#define VSTH(p, v) (*(p) = pa_f32_to_f16(v))
#define VLDB(p) pa_bf16_to_f32(*(p))
#define VSTB(p, v) (*(p) = pa_f32_to_bf16(v))

#include "kernels/map/map_f32.inc"

static void h2f_scalar(float *o, const uint16_t *h, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = pa_f16_to_f32(h[i]);
}
static void f2h_scalar(uint16_t *h, const float *f, int64_t n) {
    for (int64_t i = 0; i < n; i++) h[i] = pa_f32_to_f16(f[i]);
}
static void b2f_scalar(float *o, const uint16_t *h, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = pa_bf16_to_f32(h[i]);
}
static void f2b_scalar(uint16_t *h, const float *f, int64_t n) {
    for (int64_t i = 0; i < n; i++) h[i] = pa_f32_to_bf16(f[i]);
}

const pa_map_isa_ops pa_map_ops_scalar = {k32_scalar, h2f_scalar, f2h_scalar, b2f_scalar, f2b_scalar,
                                            k16_scalar, kbf_scalar};
