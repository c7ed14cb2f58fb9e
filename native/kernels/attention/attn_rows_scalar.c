/* The attention row kernels on the scalar tier (attn_rows.inc). */

#include <math.h>
#include <stdint.h>

#include "common/pa_half.h"
#include "kernels/attention/attn.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__STRICT_ANSI__)
#pragma GCC optimize("fp-contract=off")
#endif

typedef float VF;
#define W 1
#define SFX(name) name##_scalar
#define ATTN_TIER_NAME "scalar"
#define PA_ATTN_ROWS_NAME pa_attn_rows_scalar
#define VLD(p) (*(p))
#define VST(p, v) (*(p) = (v))
#define VSET(x) ((float)(x))
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMUL(a, b) ((a) * (b))

/* 16 lanes as an array; the fixed tree of attn.h */
typedef struct d16 {
    float v[16];
} D16;
static inline D16 D16_ZERO(void) {
    D16 r;
    for (int l = 0; l < 16; l++) r.v[l] = 0.0f;
    return r;
}
static inline D16 D16_LDF(const float *p) {
    D16 r;
    for (int l = 0; l < 16; l++) r.v[l] = p[l];
    return r;
}
static inline D16 D16_LDH(const uint16_t *p) {
    D16 r;
    for (int l = 0; l < 16; l++) r.v[l] = pa_f16_to_f32(p[l]);
    return r;
}
static inline D16 D16_LDB(const uint16_t *p) {
    D16 r;
    for (int l = 0; l < 16; l++) r.v[l] = pa_bf16_to_f32(p[l]);
    return r;
}
static inline void D16_ST(float *p, D16 a) {
    for (int l = 0; l < 16; l++) p[l] = a.v[l];
}
static inline D16 D16_SET(float x) {
    D16 r;
    for (int l = 0; l < 16; l++) r.v[l] = x;
    return r;
}
static inline D16 D16_FMA(D16 a, D16 b, D16 c) {
    D16 r;
    for (int l = 0; l < 16; l++) r.v[l] = fmaf(a.v[l], b.v[l], c.v[l]);
    return r;
}
static inline float D16_RED(D16 a) {
    float t8[8], t4[4], t2[2];
    for (int l = 0; l < 8; l++) t8[l] = a.v[l] + a.v[l + 8];
    for (int l = 0; l < 4; l++) t4[l] = t8[l] + t8[l + 4];
    for (int l = 0; l < 2; l++) t2[l] = t4[l] + t4[l + 2];
    return t2[0] + t2[1];
}

#include "kernels/attention/attn_rows.inc"
