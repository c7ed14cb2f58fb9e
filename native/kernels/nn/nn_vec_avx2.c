/* The NN row kernels on 8 lanes (AVX2 + FMA + F16C). */
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

typedef __m256 VF;
typedef __m256i VI;
#define W 8
#define SFX(name) name##_avx2
#define NN_TIER_NAME "avx2"
#define MAP_OPS pa_map_ops_avx2

#define VLD(p) _mm256_loadu_ps(p)
#define VST(p, v) _mm256_storeu_ps((p), (v))
#define VSET(x) _mm256_set1_ps((float)(x))
#define VZERO _mm256_setzero_ps()
#define VADD(a, b) _mm256_add_ps((a), (b))
#define VSUB(a, b) _mm256_sub_ps((a), (b))
#define VMUL(a, b) _mm256_mul_ps((a), (b))
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VGT(a, b) _mm256_cmp_ps((a), (b), _CMP_GT_OQ)
#define VLT(a, b) _mm256_cmp_ps((a), (b), _CMP_LT_OQ)
#define VISNAN(a) _mm256_cmp_ps((a), (a), _CMP_UNORD_Q)
#define VSEL(m, a, b) _mm256_blendv_ps((b), (a), (m))
#define VI_F2I(a) _mm256_cvttps_epi32(a)
#define VI_SET(x) _mm256_set1_epi32((int)(x))
#define VI_ADD(a, b) _mm256_add_epi32((a), (b))
#define VI_SLL(a, n) _mm256_slli_epi32((a), (n))
#define VFROMBITS(i) _mm256_castsi256_ps(i)
#define VLDH(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define VSTH(p, v) _mm_storeu_si128((__m128i *)(p), _mm256_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#define VLDB(p) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))), 16))
#define VSTB(p, v) _mm_storeu_si128((__m128i *)(p), pa_bf16_pack_avx2(v))


#define VSTNT(p, v) _mm256_stream_ps((p), (v))
#define VSTHNT(p, v) _mm_stream_si128((__m128i *)(p), _mm256_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#define VSTBNT(p, v) _mm_stream_si128((__m128i *)(p), pa_bf16_pack_avx2(v))
#define NN_FENCE() _mm_sfence()

#define VBITS(v) _mm256_castps_si256(v)
#define VTABT nn_tab2
#define VTABLOAD(t) nn_tab_load(t)
#define VTAB16(tab, i) nn_tab16((tab), (i))

/* the 16-entry table as two 8-lane halves, picked by bit 3 of the index */
typedef struct nn_tab2 { __m256i lo, hi; } nn_tab2;
static inline nn_tab2 nn_tab_load(const uint32_t *t) {
    nn_tab2 r = {_mm256_loadu_si256((const __m256i *)t), _mm256_loadu_si256((const __m256i *)(t + 8))};
    return r;
}
static inline __m256i nn_tab16(nn_tab2 tab, __m256i i) {
    const __m256 lo = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(tab.lo, i));
    const __m256 hi = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(tab.hi, i));
    return _mm256_castps_si256(_mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(i, 28))));
}

#define NN_PREFETCH(p) _mm_prefetch((p), _MM_HINT_T1)

#include "kernels/nn/nn_vec.inc"
