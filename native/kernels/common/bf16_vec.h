/* fp32 -> bf16 on vectors: round to nearest even, NaN -> a quiet NaN (the bits
 * of pa_f32_to_bf16). For the per-tier kernel files: each function exists when
 * the file is compiled for its ISA. */
#ifndef PA_KERNELS_BF16_VEC_H
#define PA_KERNELS_BF16_VEC_H

#include <immintrin.h>

#if defined(__AVX2__)
static inline __m128i pa_bf16_pack_avx2(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
    const __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    r = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(q),
                                             _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}

/* two vectors narrowed by 128-bit lane: lanes of lo then hi in each half (the order
 * unpacklo / unpackhi_epi16 widen in) */
static inline __m256i pa_bf16_pack2_avx2(__m256 lo, __m256 hi) {
    const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff), quiet = _mm256_set1_epi32(0x40);
    __m256i r[2];
    const __m256 v[2] = {lo, hi};
    for (int k = 0; k < 2; k++) {
        const __m256i u = _mm256_castps_si256(v[k]);
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
        const __m256i t = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, bias), lsb), 16);
        const __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
        r[k] = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(t), _mm256_castsi256_ps(q),
                                                    _mm256_cmp_ps(v[k], v[k], _CMP_UNORD_Q)));
    }
    return _mm256_packus_epi32(r[0], r[1]);
}
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__)
static inline __m256i pa_bf16_pack_avx512(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
    const __m512i q = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    r = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r, q);
    return _mm512_cvtepi32_epi16(r);
}
#endif

#endif
