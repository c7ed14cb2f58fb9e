/* The NN row kernels on 16 lanes (AVX-512 F/BW/VL/DQ), twice: pa_nn_vec_avx512 and, with
 * AVX512_BF16's vcvtneps2bf16 for the bf16 stores, pa_nn_vec_avx512bf16 (the instruction
 * treats denormal inputs as zero: vectors holding one take the integer path, so the bits
 * stay pa_f32_to_bf16's). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/pa_half.h"
#include "kernels/map/map_isa.h"
#include "kernels/nn/nn_vec.h"
#include "kernels/common/bf16_vec.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__STRICT_ANSI__)
#pragma GCC optimize("fp-contract=off")
#endif

typedef __m512 VF;
typedef __m512i VI;
#define W 16
#define SFX(name) name##_avx512
#define NN_TIER_NAME "avx512"
#define MAP_OPS pa_map_ops_avx512

#define VLD(p) _mm512_loadu_ps(p)
#define VST(p, v) _mm512_storeu_ps((p), (v))
#define VSET(x) _mm512_set1_ps((float)(x))
#define VZERO _mm512_setzero_ps()
#define VADD(a, b) _mm512_add_ps((a), (b))
#define VSUB(a, b) _mm512_sub_ps((a), (b))
#define VMUL(a, b) _mm512_mul_ps((a), (b))
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define VGT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GT_OQ)
#define VLT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_LT_OQ)
#define VISNAN(a) _mm512_cmp_ps_mask((a), (a), _CMP_UNORD_Q)
#define VSEL(m, a, b) _mm512_mask_blend_ps((m), (b), (a))
#define VI_F2I(a) _mm512_cvttps_epi32(a)
#define VI_SET(x) _mm512_set1_epi32((int)(x))
#define VI_ADD(a, b) _mm512_add_epi32((a), (b))
#define VI_SLL(a, n) _mm512_slli_epi32((a), (n))
#define VFROMBITS(i) _mm512_castsi512_ps(i)
#define VLDH(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define VSTH(p, v) _mm256_storeu_si256((__m256i *)(p), _mm512_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#define VLDB(p) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p))), 16))
#define VSTB(p, v) _mm256_storeu_si256((__m256i *)(p), pa_bf16_pack_avx512(v))


#define VSTNT(p, v) _mm512_stream_ps((p), (v))
#define VSTHNT(p, v) _mm256_stream_si256((__m256i *)(p), _mm512_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#define VSTBNT(p, v) _mm256_stream_si256((__m256i *)(p), pa_bf16_pack_avx512(v))
#define NN_FENCE() _mm_sfence()

#define VBITS(v) _mm512_castps_si512(v)
#define VTABT __m512i
#define VTABLOAD(t) _mm512_loadu_si512(t)
#define VTAB16(tab, i) _mm512_permutexvar_epi32((i), (tab))

#define NN_PREFETCH(p) _mm_prefetch((p), _MM_HINT_T1)

#include "kernels/nn/nn_vec.inc"

/* ---- the same with the hardware bf16 narrowing ---- */
#undef SFX
#undef NN_TIER_NAME
#undef VSTB
#undef VSTBNT
#define SFX(name) name##_avx512bf16
#define NN_TIER_NAME "avx512bf16"
#define VSTB(p, v) _mm256_storeu_si256((__m256i *)(p), nn_bf16_pack_hw(v))
#define VSTBNT(p, v) _mm256_stream_si256((__m256i *)(p), nn_bf16_pack_hw(v))

static inline __m256i nn_bf16_pack_hw(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __mmask16 exp0 = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000));
    if (_mm512_mask_test_epi32_mask(exp0, u, _mm512_set1_epi32(0x007fffff)) != 0) return pa_bf16_pack_avx512(v);
    return (__m256i)_mm512_cvtneps_pbh(v);
}

#include "kernels/nn/nn_vec.inc"
