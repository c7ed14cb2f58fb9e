/* The attention row kernels on the avx512 tier (attn_rows.inc). */
#include <math.h>
#include <stdint.h>

#include "kernels/attention/attn.h"

#if defined(PA_HAVE_X86_KERNELS)
#include <immintrin.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__STRICT_ANSI__)
#pragma GCC optimize("fp-contract=off")
#endif

typedef __m512 VF;
#define W 16
#define SFX(name) name##_avx512
#define ATTN_TIER_NAME "avx512"
#define PA_ATTN_ROWS_NAME pa_attn_rows_avx512
#define VLD(p) _mm512_loadu_ps(p)
#define VST(p, v) _mm512_storeu_ps((p), (v))
#define VSET(x) _mm512_set1_ps((float)(x))
#define VADD(a, b) _mm512_add_ps((a), (b))
#define VSUB(a, b) _mm512_sub_ps((a), (b))
#define VMUL(a, b) _mm512_mul_ps((a), (b))

typedef __m512 D16;
#define D16_ZERO() _mm512_setzero_ps()
#define D16_LDF(p) _mm512_loadu_ps(p)
#define D16_LDH(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define D16_LDB(p) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p))), 16))
#define D16_ST(p, v) _mm512_storeu_ps((p), (v))
#define D16_SET(x) _mm512_set1_ps(x)
#define D16_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
/* the fixed tree: (l, l+8), (l, l+4), (l, l+2), (0, 1) */
static inline float D16_RED(__m512 a) {
    const __m256 t8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
    return _mm_cvtss_f32(_mm_add_ss(t2, _mm_shuffle_ps(t2, t2, 1)));
}

#include "kernels/attention/attn_rows.inc"

#endif
