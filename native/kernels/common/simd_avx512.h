/* AVX-512 element I/O shared by the kernels' *_avx512.c files (include it
 * only from those: it needs their ISA flags). 16 elements <-> fp32 lanes;
 * masked variants zero the other lanes; f16 rounds to nearest even. */
#ifndef PA_KERNELS_SIMD_AVX512_H
#define PA_KERNELS_SIMD_AVX512_H

#include <immintrin.h>
#include <stdint.h>

static inline __mmask16 tail_mask(int64_t cnt) {
    return cnt >= 16 ? (__mmask16)0xffff : cnt <= 0 ? (__mmask16)0 : (__mmask16)((1u << cnt) - 1u);
}
static inline __m512 ld_f32(const void *p) { return _mm512_loadu_ps(p); }
static inline __m512 ldm_f32(const void *p, __mmask16 k) { return _mm512_maskz_loadu_ps(k, p); }
static inline __m512 ld_f16(const void *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
static inline __m512 ldm_f16(const void *p, __mmask16 k) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, p)); }
static inline __m512 bf16_widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline __m512 ld_bf16(const void *p) { return bf16_widen(_mm256_loadu_si256((const __m256i *)p)); }
static inline __m512 ldm_bf16(const void *p, __mmask16 k) { return bf16_widen(_mm256_maskz_loadu_epi16(k, p)); }
/* ld_bf16 in one vpermw (zeroing the low halves) instead of vpmovzxwd + vpslld:
 * fewer ops, though on Zen 4 it shares a port with FMAs (use where FMAs are few) */
static inline __m512 ld_bf16_1op(const void *p) {
    const __m512i idx = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0, 6, 0, 5, 0, 4, 0,
                                         3, 0, 2, 0, 1, 0, 0, 0);
    const __m512i v = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, idx, v));
}
static inline __m256i f16_narrow(__m512 v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline __m512i f16_pair(__m512 a, __m512 b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(f16_narrow(a)), f16_narrow(b), 1);
}
static inline __mmask16 denormal_lanes(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __mmask16 exp0 = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_test_epi32_mask(exp0, u, _mm512_set1_epi32(0x007fffff));
}

#endif
