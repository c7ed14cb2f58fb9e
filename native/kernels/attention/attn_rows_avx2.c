/* The attention row kernels on the avx2 tier (attn_rows.inc). */
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

typedef __m256 VF;
#define W 8
#define SFX(name) name##_avx2
#define ATTN_TIER_NAME "avx2"
#define PA_ATTN_ROWS_NAME pa_attn_rows_avx2
#define VLD(p) _mm256_loadu_ps(p)
#define VST(p, v) _mm256_storeu_ps((p), (v))
#define VSET(x) _mm256_set1_ps((float)(x))
#define VADD(a, b) _mm256_add_ps((a), (b))
#define VSUB(a, b) _mm256_sub_ps((a), (b))
#define VMUL(a, b) _mm256_mul_ps((a), (b))

typedef struct d16 {
    __m256 lo, hi; /* lanes 0..7, 8..15 */
} D16;
static inline D16 D16_ZERO(void) { return (D16){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
static inline D16 D16_LDF(const float *p) { return (D16){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
static inline D16 D16_LDH(const uint16_t *p) {
    return (D16){_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)),
                 _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 8)))};
}
static inline __m256 d16_b8(const uint16_t *p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}
static inline D16 D16_LDB(const uint16_t *p) { return (D16){d16_b8(p), d16_b8(p + 8)}; }
static inline void D16_ST(float *p, D16 a) {
    _mm256_storeu_ps(p, a.lo);
    _mm256_storeu_ps(p + 8, a.hi);
}
static inline D16 D16_SET(float x) { return (D16){_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
static inline D16 D16_FMA(D16 a, D16 b, D16 c) {
    return (D16){_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
/* the fixed tree: (l, l+8), (l, l+4), (l, l+2), (0, 1) */
static inline float D16_RED_HALF(__m256 t8) {
    const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
    return _mm_cvtss_f32(_mm_add_ss(t2, _mm_shuffle_ps(t2, t2, 1)));
}
static inline float D16_RED(D16 a) { return D16_RED_HALF(_mm256_add_ps(a.lo, a.hi)); }
/* the tree's first fold (l, l+8), kept per key; D16_RED8 finishes 8 keys at once with
 * the same pairs: (l, l+4) across halves, (l, l+2), (0, 1), then the keys in order */
#define ATTN_HAVE_RED8 1
#define D16_HALF_T __m256
#define D16_HALF(dst, a) (*(dst) = _mm256_add_ps((a).lo, (a).hi))
static inline void D16_RED8(float *dst, const __m256 *t) {
    __m256 u[4], v[2];
    for (int k = 0; k < 4; k++) { /* keys 2k, 2k+1: [key 2k l+(0|4) | key 2k+1 ...] */
        u[k] = _mm256_add_ps(_mm256_permute2f128_ps(t[2 * k], t[2 * k + 1], 0x20),
                             _mm256_permute2f128_ps(t[2 * k], t[2 * k + 1], 0x31));
    }
    for (int k = 0; k < 2; k++) { /* [k0 l0, k0 l1, k2 .. | k1 .., k3 ..] with l + 2 added */
        v[k] = _mm256_add_ps(_mm256_shuffle_ps(u[2 * k], u[2 * k + 1], 0x44), _mm256_shuffle_ps(u[2 * k], u[2 * k + 1], 0xee));
    }
    /* keys 0, 2, 4, 6 | 1, 3, 5, 7 */
    const __m256 w = _mm256_add_ps(_mm256_shuffle_ps(v[0], v[1], 0x88), _mm256_shuffle_ps(v[0], v[1], 0xdd));
    _mm256_storeu_ps(dst, _mm256_permutevar8x32_ps(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

#define ATTN_ACCV_WIDE 0
#include "kernels/attention/attn_rows.inc"

#endif
