/* Scaled masked softmax backward, AVX-512 (F/BW/VL/DQ, + BF16 when present).
 *
 * Two passes per row. Pass 1: the dot product, 4 zmm accumulators (64 columns
 * per step, the lane layout of softmax_grad.h). Pass 2: the outputs, while the
 * row (<= 4096 columns) is still in L1/L2; it also prefetches the next row so
 * memory stays busy. Large outputs are written with non-temporal stores (no
 * read-for-ownership). Heads / tails use masked loads and stores.
 * (Keeping p and y as fp32 from pass 1 to spare pass 2 the fp16 widening was
 * tried: faster in cache, slower once memory-bound, so not done.) */
#include "kernels/softmax_grad/softmax_grad_impl.h"

#include <immintrin.h>

/* ---- loads: 16 elements -> fp32 ---- */

static inline __m512 ld_f32(const void *p) { return _mm512_loadu_ps(p); }
static inline __m512 ldm_f32(const void *p, __mmask16 k) { return _mm512_maskz_loadu_ps(k, p); }
static inline __m512 ld_f16(const void *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline __m512 ldm_f16(const void *p, __mmask16 k) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, p));
}
static inline __m512 bf16_widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline __m512 ld_bf16(const void *p) {
    return bf16_widen(_mm256_loadu_si256((const __m256i *)p));
}
static inline __m512 ldm_bf16(const void *p, __mmask16 k) {
    return bf16_widen(_mm256_maskz_loadu_epi16(k, p));
}

/* ---- stores: fp32 -> elements, round to nearest even ----
 * st2 / st2nt store 32 consecutive elements (two vectors); st2nt needs 64-byte
 * alignment. stm stores the lanes of k. */

static inline void st2_f32(void *p, __m512 v0, __m512 v1) {
    _mm512_storeu_ps(p, v0);
    _mm512_storeu_ps((char *)p + 64, v1);
}
static inline void st2nt_f32(void *p, __m512 v0, __m512 v1) {
    _mm512_stream_ps((float *)p, v0);
    _mm512_stream_ps((float *)p + 16, v1);
}
static inline void stm_f32(void *p, __mmask16 k, __m512 v) { _mm512_mask_storeu_ps(p, k, v); }

static inline __m256i f16_narrow(__m512 v) {
    return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline __m512i f16_pair(__m512 v0, __m512 v1) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(f16_narrow(v0)), f16_narrow(v1), 1);
}
static inline void st2_f16(void *p, __m512 v0, __m512 v1) { _mm512_storeu_si512(p, f16_pair(v0, v1)); }
static inline void st2nt_f16(void *p, __m512 v0, __m512 v1) { _mm512_stream_si512(p, f16_pair(v0, v1)); }
static inline void stm_f16(void *p, __mmask16 k, __m512 v) { _mm256_mask_storeu_epi16(p, k, f16_narrow(v)); }

/* Integer round-to-nearest-even: exactly pa_f32_to_bf16 for every non-NaN input and
 * for the canonical NaN out_vec produces (0xffc00000 -> 0xffc0), the only NaN that
 * reaches it. */
static inline __m256i bf16_narrow(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
    return _mm512_cvtepi32_epi16(r);
}
static inline __m512i bf16_pair(__m512 v0, __m512 v1) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(bf16_narrow(v0)), bf16_narrow(v1), 1);
}
static inline void st2_bf16(void *p, __m512 v0, __m512 v1) { _mm512_storeu_si512(p, bf16_pair(v0, v1)); }
static inline void st2nt_bf16(void *p, __m512 v0, __m512 v1) { _mm512_stream_si512(p, bf16_pair(v0, v1)); }
static inline void stm_bf16(void *p, __mmask16 k, __m512 v) { _mm256_mask_storeu_epi16(p, k, bf16_narrow(v)); }

/* AVX512_BF16: vcvtne2ps2bf16 rounds like pa_f32_to_bf16 except that it flushes
 * fp32 denormal inputs to zero; a pair holding one (rare) takes the integer path. */
static inline __mmask16 denormal_lanes(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __mmask16 exp0 = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_test_epi32_mask(exp0, u, _mm512_set1_epi32(0x007fffff));
}
static inline __m512i bf16hw_pair(__m512 v0, __m512 v1) {
    if ((denormal_lanes(v0) | denormal_lanes(v1)) != 0) return bf16_pair(v0, v1);
    return (__m512i)_mm512_cvtne2ps_pbh(v1, v0); /* v0 -> low 16 lanes */
}
static inline void st2_bf16hw(void *p, __m512 v0, __m512 v1) { _mm512_storeu_si512(p, bf16hw_pair(v0, v1)); }
static inline void st2nt_bf16hw(void *p, __m512 v0, __m512 v1) { _mm512_stream_si512(p, bf16hw_pair(v0, v1)); }

/* ---- mask bytes -> "masked" lanes ---- */
static inline __mmask16 ld_mask(const uint8_t *m) {
    const __m128i v = _mm_loadu_si128((const __m128i *)m);
    return _mm_test_epi8_mask(v, v);
}
static inline __mmask16 ldm_mask(const uint8_t *m, __mmask16 k) {
    const __m128i v = _mm_maskz_loadu_epi8(k, m);
    return _mm_test_epi8_mask(v, v);
}

static inline __mmask16 tail_mask(int64_t cnt) {
    return cnt >= 16 ? (__mmask16)0xffff : cnt <= 0 ? (__mmask16)0 : (__mmask16)((1u << cnt) - 1u);
}

/* The combination tree of softmax_grad.h applied to 4 x 16 accumulators. */
static inline float reduce4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    const __m512 t16 = _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
    const __m256 t8 = _mm256_add_ps(_mm512_castps512_ps256(t16), _mm512_extractf32x8_ps(t16, 1));
    const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
    const __m128 t1 = _mm_add_ss(t2, _mm_shuffle_ps(t2, t2, 1));
    return _mm_cvtss_f32(t1);
}

/* One output vector: masked ? +0 : ((g*y - s*y) * sc), each op rounded.
 * vfixupimmps does the rest in one instruction: lanes outside ~masked become +0,
 * and a NaN (quiet or signalling) becomes the default NaN 0xffc00000, so no bit
 * depends on which operand's payload the hardware propagated. */
static inline __m512 out_vec(__m512 g, __m512 y, __m512 s, __m512 sc, __mmask16 masked) {
    const __m512 p = _mm512_mul_ps(g, y);
    const __m512 t = _mm512_mul_ps(s, y);
    const __m512 d = _mm512_sub_ps(p, t);
    const __m512 v = _mm512_mul_ps(d, sc);
    /* token per input class (nibble j = class j): QNaN, SNaN -> 3 (default NaN), others -> 0 (keep) */
    return _mm512_maskz_fixupimm_ps((__mmask16)~masked, v, v, _mm512_set1_epi32(0x33), 0);
}

static inline void prefetch(const char *p) { _mm_prefetch(p, _MM_HINT_T0); }

/* Row kernel: pass 1 (dot product), then pass 2 (outputs) while prefetching the
 * next row. With nt, pass 2 peels to a 64-byte boundary and streams full lines. */
#define PA_SMSB_ROW_AVX512(NAME, ES, LD, LDM, ST2, ST2NT, STM)                                   \
    static void NAME(const void *gv, const void *yv, const uint8_t *m, void *ov, int64_t n,      \
                     float scale, const void *gnv, const void *ynv, bool nt) {                  \
        const char *g = (const char *)gv, *y = (const char *)yv;                                \
        const char *gn = (const char *)gnv, *yn = (const char *)ynv;                            \
        char *o = (char *)ov;                                                                   \
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),         \
                         _mm512_setzero_ps()};                                                  \
        int64_t i = 0;                                                                          \
        for (; i + 64 <= n; i += 64) {                                                          \
            for (int k = 0; k < 4; k++) {                                                       \
                const int64_t c = i + 16 * k;                                                   \
                acc[k] = _mm512_add_ps(acc[k], _mm512_mul_ps(LD(g + c * ES), LD(y + c * ES)));  \
            }                                                                                   \
        }                                                                                       \
        if (i < n) {                                                                            \
            for (int k = 0; k < 4; k++) {                                                       \
                const int64_t c = i + 16 * k;                                                   \
                const __mmask16 km = tail_mask(n - c);                                          \
                const __m512 p = _mm512_mul_ps(LDM(g + c * ES, km), LDM(y + c * ES, km));       \
                acc[k] = _mm512_mask_add_ps(acc[k], km, acc[k], p);                             \
            }                                                                                   \
        }                                                                                       \
        const __m512 s = _mm512_set1_ps(reduce4(acc[0], acc[1], acc[2], acc[3]));               \
        const __m512 sc = _mm512_set1_ps(scale);                                                \
        i = 0;                                                                                  \
        int64_t head = 0;                                                                       \
        const bool stream = nt && (uintptr_t)o % ES == 0;                                       \
        if (stream) {                                                                           \
            head = (int64_t)(((64 - ((uintptr_t)o & 63)) & 63) / ES);                           \
            if (head > n) head = n;                                                             \
        }                                                                                       \
        for (; i < head; i += 16) {                                                             \
            const __mmask16 km = tail_mask(head - i);                                           \
            STM(o + i * ES, km,                                                                 \
                out_vec(LDM(g + i * ES, km), LDM(y + i * ES, km), s, sc, ldm_mask(m + i, km))); \
        }                                                                                       \
        i = head;                                                                               \
        for (; i + 32 <= n; i += 32) {                                                          \
            if (gn != NULL) {                                                                   \
                prefetch(gn + i * ES), prefetch(yn + i * ES);                                   \
                if (ES == 4) prefetch(gn + i * ES + 64), prefetch(yn + i * ES + 64);            \
            }                                                                                   \
            const __m512 r0 = out_vec(LD(g + i * ES), LD(y + i * ES), s, sc, ld_mask(m + i));   \
            const __m512 r1 = out_vec(LD(g + (i + 16) * ES), LD(y + (i + 16) * ES), s, sc,      \
                                      ld_mask(m + i + 16));                                     \
            if (stream) ST2NT(o + i * ES, r0, r1);                                              \
            else ST2(o + i * ES, r0, r1);                                                       \
        }                                                                                       \
        for (; i < n; i += 16) {                                                                \
            const __mmask16 km = tail_mask(n - i);                                              \
            STM(o + i * ES, km,                                                                 \
                out_vec(LDM(g + i * ES, km), LDM(y + i * ES, km), s, sc, ldm_mask(m + i, km))); \
        }                                                                                       \
    }

PA_SMSB_ROW_AVX512(row_f32, 4, ld_f32, ldm_f32, st2_f32, st2nt_f32, stm_f32)
PA_SMSB_ROW_AVX512(row_f16, 2, ld_f16, ldm_f16, st2_f16, st2nt_f16, stm_f16)
PA_SMSB_ROW_AVX512(row_bf16, 2, ld_bf16, ldm_bf16, st2_bf16, st2nt_bf16, stm_bf16)
PA_SMSB_ROW_AVX512(row_bf16hw, 2, ld_bf16, ldm_bf16, st2_bf16hw, st2nt_bf16hw, stm_bf16)

void pa_smsb_rows_f32_avx512(const pa_smsb_args *a, int64_t r0, int64_t r1) {
    pa_smsb_drive(a, r0, r1, 4, row_f32, pa_smsb_rows_f32_scalar);
    if (a->stream_out) _mm_sfence(); /* order the streamed lines before the chunk counts as done */
}

void pa_smsb_rows_f16_avx512(const pa_smsb_args *a, int64_t r0, int64_t r1) {
    pa_smsb_drive(a, r0, r1, 2, row_f16, pa_smsb_rows_f16_scalar);
    if (a->stream_out) _mm_sfence();
}

void pa_smsb_rows_bf16_avx512(const pa_smsb_args *a, int64_t r0, int64_t r1) {
    pa_smsb_drive(a, r0, r1, 2, row_bf16, pa_smsb_rows_bf16_scalar);
    if (a->stream_out) _mm_sfence();
}

void pa_smsb_rows_bf16_avx512bf16(const pa_smsb_args *a, int64_t r0, int64_t r1) {
    pa_smsb_drive(a, r0, r1, 2, row_bf16hw, pa_smsb_rows_bf16_scalar);
    if (a->stream_out) _mm_sfence();
}
