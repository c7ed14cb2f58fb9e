/* int8 / int4 weights as bytes for the fused GEMVs of the x86 tiers: SSE2
 * only, so every x86 tier file can include it. */
#ifndef PA_KERNELS_GEMM_QBYTES_H
#define PA_KERNELS_GEMM_QBYTES_H

#include <emmintrin.h>
#include <stdint.h>

#include "kernels/gemm/gemm.h"

#define GM_QB_INLINE static inline __attribute__((always_inline))

/* 16 weights of dtype DT from element e (even for S4) as 16 signed bytes */
GM_QB_INLINE __m128i gm_bytes16(const uint8_t *base, int64_t e, const int DT) {
    if (DT == PA_GEMM_S8) return _mm_loadu_si128((const __m128i *)(base + e));
    const __m128i v = _mm_loadl_epi64((const __m128i *)(base + (e >> 1)));
    const __m128i f = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    const __m128i lo = _mm_and_si128(v, f), hi = _mm_and_si128(_mm_srli_epi16(v, 4), f);
    return _mm_sub_epi8(_mm_xor_si128(_mm_unpacklo_epi8(lo, hi), eight), eight);
}

/* 16 x 16 byte transpose: x[c] byte k -> x[k] byte c */
GM_QB_INLINE void gm_tr16_bytes(__m128i *x) {
    __m128i b[16], c[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        b[2 * i] = _mm_unpacklo_epi8(x[2 * i], x[2 * i + 1]);
        b[2 * i + 1] = _mm_unpackhi_epi8(x[2 * i], x[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) { /* columns 4g..4g+3 */
        c[4 * g] = _mm_unpacklo_epi16(b[4 * g], b[4 * g + 2]);     /* k0..3 */
        c[4 * g + 1] = _mm_unpackhi_epi16(b[4 * g], b[4 * g + 2]); /* k4..7 */
        c[4 * g + 2] = _mm_unpacklo_epi16(b[4 * g + 1], b[4 * g + 3]); /* k8..11 */
        c[4 * g + 3] = _mm_unpackhi_epi16(b[4 * g + 1], b[4 * g + 3]); /* k12..15 */
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) { /* columns 8h..8h+7: c[8h + q] (cols 8h..+3) with c[8h + 4 + q] (cols +4..+7) */
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            b[8 * h + 2 * q] = _mm_unpacklo_epi32(c[8 * h + q], c[8 * h + 4 + q]);     /* k 4q, 4q+1 */
            b[8 * h + 2 * q + 1] = _mm_unpackhi_epi32(c[8 * h + q], c[8 * h + 4 + q]); /* k 4q+2, 4q+3 */
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) { /* b[i]: k 2i, 2i+1 of columns 0..7; b[8 + i]: of columns 8..15 */
        x[2 * i] = _mm_unpacklo_epi64(b[i], b[8 + i]);
        x[2 * i + 1] = _mm_unpackhi_epi64(b[i], b[8 + i]);
    }
}

#undef GM_QB_INLINE
#endif
