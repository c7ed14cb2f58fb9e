/* The fp32 map kernels on 16 lanes (AVX-512 F/BW/VL/DQ). */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "common/pa_half.h"
#include "kernels/map/map_isa.h"
#include "kernels/common/bf16_vec.h"

typedef __m512 VF;
typedef __m512i VI;
typedef __mmask16 VM;
#define W 16
#define SFX(name) name##_avx512

#define VLD(p) _mm512_loadu_ps(p)
#define VST(p, v) _mm512_storeu_ps((p), (v))
#define VSET(x) _mm512_set1_ps((float)(x))
#define VZERO _mm512_setzero_ps()
#define VADD(a, b) _mm512_add_ps((a), (b))
#define VSUB(a, b) _mm512_sub_ps((a), (b))
#define VMUL(a, b) _mm512_mul_ps((a), (b))
#define VDIV(a, b) _mm512_div_ps((a), (b))
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define VSQRT(a) _mm512_sqrt_ps(a)
#define VABS(a) _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)))
#define VNEG(a) _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32((int)0x80000000)))
#define VCOPYSIGN(m, s)                                                                                \
    _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(VABS(m)),                                   \
                                        _mm512_and_si512(_mm512_castps_si512(s), _mm512_set1_epi32((int)0x80000000))))
#define VLT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_LT_OQ)
#define VLE(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_LE_OQ)
#define VGT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GT_OQ)
#define VGE(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GE_OQ)
#define VEQ(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_EQ_OQ)
#define VNE(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_NEQ_UQ)
#define VISNAN(a) _mm512_cmp_ps_mask((a), (a), _CMP_UNORD_Q)
#define VSEL(m, a, b) _mm512_mask_blend_ps((m), (b), (a))
#define MAND(a, b) ((__mmask16)((a) & (b)))
#define MOR(a, b) ((__mmask16)((a) | (b)))
#define MXOR(a, b) ((__mmask16)((a) ^ (b)))
#define MANY(m) ((m) != 0)
#define VFLOOR(a) _mm512_roundscale_ps((a), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define VCEIL(a) _mm512_roundscale_ps((a), _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC)
#define VTRUNC(a) _mm512_roundscale_ps((a), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)
#define VRINT(a) _mm512_roundscale_ps((a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VI_F2I(a) _mm512_cvttps_epi32(a)
#define VI_I2F(i) _mm512_cvtepi32_ps(i)
#define VI_SET(x) _mm512_set1_epi32((int)(x))
#define VI_ADD(a, b) _mm512_add_epi32((a), (b))
#define VI_SUB(a, b) _mm512_sub_epi32((a), (b))
#define VI_AND(a, b) _mm512_and_si512((a), (b))
#define VI_OR(a, b) _mm512_or_si512((a), (b))
#define VI_XOR(a, b) _mm512_xor_si512((a), (b))
#define VI_SLL(a, n) _mm512_slli_epi32((a), (n))
#define VI_SRL(a, n) _mm512_srli_epi32((a), (n))
#define VI_SRA(a, n) _mm512_srai_epi32((a), (n))
#define VI_NONZERO(a) _mm512_test_epi32_mask((a), (a))
#define VBITS(v) _mm512_castps_si512(v)
#define VFROMBITS(i) _mm512_castsi512_ps(i)

#define VLDH(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define VSTH(p, v) _mm256_storeu_si256((__m256i *)(p), _mm512_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#define VLDB(p) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p))), 16))
#define VSTB(p, v) _mm256_storeu_si256((__m256i *)(p), pa_bf16_pack_avx512(v))


#include "kernels/map/map_f32.inc"

static void h2f_avx512(float *o, const uint16_t *h, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(o + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + i))));
    for (; i < n; i++) o[i] = pa_f16_to_f32(h[i]);
}
static void f2h_avx512(uint16_t *h, const float *f, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_si256((__m256i *)(h + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(f + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    for (; i < n; i++) h[i] = pa_f32_to_f16(f[i]);
}
static void b2f_avx512(float *o, const uint16_t *h, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(h + i)));
        _mm512_storeu_ps(o + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
    }
    for (; i < n; i++) o[i] = pa_bf16_to_f32(h[i]);
}
static void f2b_avx512(uint16_t *h, const float *f, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm256_storeu_si256((__m256i *)(h + i), pa_bf16_pack_avx512(_mm512_loadu_ps(f + i)));
    for (; i < n; i++) h[i] = pa_f32_to_bf16(f[i]);
}

const pa_map_isa_ops pa_map_ops_avx512 = {k32_avx512, h2f_avx512, f2h_avx512, b2f_avx512, f2b_avx512,
                                            k16_avx512, kbf_avx512};
