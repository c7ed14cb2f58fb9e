/* The fp32 map kernels on 8 lanes (AVX2 + FMA + F16C). */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "common/pa_half.h"
#include "kernels/map/map_isa.h"
#include "kernels/common/bf16_vec.h"

typedef __m256 VF;
typedef __m256i VI;
typedef __m256 VM;
#define W 8
#define SFX(name) name##_avx2

#define VLD(p) _mm256_loadu_ps(p)
#define VST(p, v) _mm256_storeu_ps((p), (v))
#define VSET(x) _mm256_set1_ps((float)(x))
#define VZERO _mm256_setzero_ps()
#define VADD(a, b) _mm256_add_ps((a), (b))
#define VSUB(a, b) _mm256_sub_ps((a), (b))
#define VMUL(a, b) _mm256_mul_ps((a), (b))
#define VDIV(a, b) _mm256_div_ps((a), (b))
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VSQRT(a) _mm256_sqrt_ps(a)
#define VABS(a) _mm256_and_ps((a), _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)))
#define VNEG(a) _mm256_xor_ps((a), _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000)))
#define VCOPYSIGN(m, s)                                                                                \
    _mm256_or_ps(VABS(m), _mm256_and_ps((s), _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000))))
#define VLT(a, b) _mm256_cmp_ps((a), (b), _CMP_LT_OQ)
#define VLE(a, b) _mm256_cmp_ps((a), (b), _CMP_LE_OQ)
#define VGT(a, b) _mm256_cmp_ps((a), (b), _CMP_GT_OQ)
#define VGE(a, b) _mm256_cmp_ps((a), (b), _CMP_GE_OQ)
#define VEQ(a, b) _mm256_cmp_ps((a), (b), _CMP_EQ_OQ)
#define VNE(a, b) _mm256_cmp_ps((a), (b), _CMP_NEQ_UQ)
#define VISNAN(a) _mm256_cmp_ps((a), (a), _CMP_UNORD_Q)
#define VSEL(m, a, b) _mm256_blendv_ps((b), (a), (m))
#define MAND(a, b) _mm256_and_ps((a), (b))
#define MOR(a, b) _mm256_or_ps((a), (b))
#define MXOR(a, b) _mm256_xor_ps((a), (b))
#define MANY(m) (_mm256_movemask_ps(m) != 0)
#define VFLOOR(a) _mm256_round_ps((a), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define VCEIL(a) _mm256_round_ps((a), _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC)
#define VTRUNC(a) _mm256_round_ps((a), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)
#define VRINT(a) _mm256_round_ps((a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VI_F2I(a) _mm256_cvttps_epi32(a)
#define VI_I2F(i) _mm256_cvtepi32_ps(i)
#define VI_SET(x) _mm256_set1_epi32((int)(x))
#define VI_ADD(a, b) _mm256_add_epi32((a), (b))
#define VI_SUB(a, b) _mm256_sub_epi32((a), (b))
#define VI_AND(a, b) _mm256_and_si256((a), (b))
#define VI_OR(a, b) _mm256_or_si256((a), (b))
#define VI_XOR(a, b) _mm256_xor_si256((a), (b))
#define VI_SLL(a, n) _mm256_slli_epi32((a), (n))
#define VI_SRL(a, n) _mm256_srli_epi32((a), (n))
#define VI_SRA(a, n) _mm256_srai_epi32((a), (n))
#define VI_NONZERO(a) _mm256_castsi256_ps(_mm256_xor_si256(_mm256_cmpeq_epi32((a), _mm256_setzero_si256()), _mm256_set1_epi32(-1)))
#define VBITS(v) _mm256_castps_si256(v)
#define VFROMBITS(i) _mm256_castsi256_ps(i)

#define VLDH(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define VSTH(p, v) _mm_storeu_si128((__m128i *)(p), _mm256_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#define VLDB(p) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))), 16))
#define VSTB(p, v) _mm_storeu_si128((__m128i *)(p), pa_bf16_pack_avx2(v))
/* 16 bf16: elements 0-3, 8-11 in lo and 4-7, 12-15 in hi; VSTB2 packs them back in place */
#define VLDB2(p, lo, hi)                                                                               \
    do {                                                                                               \
        const __m256i x_ = _mm256_loadu_si256((const __m256i *)(p));                                   \
        (lo) = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), x_));                 \
        (hi) = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), x_));                 \
    } while (0)
#define VSTB2(p, lo, hi) _mm256_storeu_si256((__m256i *)(p), pa_bf16_pack2_avx2((lo), (hi)))


#include "kernels/map/map_f32.inc"

static void h2f_avx2(float *o, const uint16_t *h, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
    for (; i < n; i++) o[i] = pa_f16_to_f32(h[i]);
}
static void f2h_avx2(uint16_t *h, const float *f, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm_storeu_si128((__m128i *)(h + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(f + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    for (; i < n; i++) h[i] = pa_f32_to_f16(f[i]);
}
static void b2f_avx2(float *o, const uint16_t *h, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(h + i)));
        _mm256_storeu_ps(o + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
    for (; i < n; i++) o[i] = pa_bf16_to_f32(h[i]);
}
/* nearest even in integers; NaN -> quiet NaN, as pa_f32_to_bf16 */
static void f2b_avx2(uint16_t *h, const float *f, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(h + i), pa_bf16_pack_avx2(_mm256_loadu_ps(f + i)));
    for (; i < n; i++) h[i] = pa_f32_to_bf16(f[i]);
}

const pa_map_isa_ops pa_map_ops_avx2 = {k32_avx2, h2f_avx2, f2h_avx2, b2f_avx2, f2b_avx2, k16_avx2, kbf_avx2};
