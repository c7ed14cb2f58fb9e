/* Scaled masked softmax forward, AVX-512 (F/BW/VL/DQ).
 *
 * Three passes per row, the last two over an fp32 scratch row that stays in L1
 * (S2 <= 4096): (A) z = masked x*scale, stored, running max; (B) e = exp(z - max),
 * stored over z, summed in 4 zmm accumulators; (C) y = e * (1 / sum), rounded and
 * stored, non-temporally for large outputs. Only pass A touches x and the mask,
 * only pass C touches y. Same operations as the scalar oracle (softmax_fwd.h). */
#include "kernels/softmax_fwd/softmax_fwd_impl.h"

#include <immintrin.h>

static inline __mmask16 tail_mask(int64_t cnt) {
    return cnt >= 16 ? (__mmask16)0xffff : cnt <= 0 ? (__mmask16)0 : (__mmask16)((1u << cnt) - 1u);
}

/* ---- loads: 16 elements -> fp32 (masked variants zero the other lanes) ---- */
static inline __m512 ld_f32(const void *p) { return _mm512_loadu_ps(p); }
static inline __m512 ldm_f32(const void *p, __mmask16 k) { return _mm512_maskz_loadu_ps(k, p); }
static inline __m512 ld_f16(const void *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
static inline __m512 ldm_f16(const void *p, __mmask16 k) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, p)); }
static inline __m512 bf16_widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline __m512 ld_bf16(const void *p) { return bf16_widen(_mm256_loadu_si256((const __m256i *)p)); }
static inline __m512 ldm_bf16(const void *p, __mmask16 k) { return bf16_widen(_mm256_maskz_loadu_epi16(k, p)); }

/* ---- x * scale ---- */
static inline __m512 mul_f32(__m512 x, __m512 s) { return _mm512_mul_ps(x, s); }
static inline __m512 mul_f16(__m512 x, __m512 s) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_mul_ps(x, s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

/* ---- stores: fp32 -> elements, round to nearest even ---- */
static inline void st2_f32(void *p, __m512 a, __m512 b) {
    _mm512_storeu_ps(p, a);
    _mm512_storeu_ps((char *)p + 64, b);
}
static inline void st2nt_f32(void *p, __m512 a, __m512 b) {
    _mm512_stream_ps((float *)p, a);
    _mm512_stream_ps((float *)p + 16, b);
}
static inline void stm_f32(void *p, __mmask16 k, __m512 v) { _mm512_mask_storeu_ps(p, k, v); }
static inline __m256i f16_narrow(__m512 v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline __m512i f16_pair(__m512 a, __m512 b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(f16_narrow(a)), f16_narrow(b), 1);
}
static inline void st2_f16(void *p, __m512 a, __m512 b) { _mm512_storeu_si512(p, f16_pair(a, b)); }
static inline void st2nt_f16(void *p, __m512 a, __m512 b) { _mm512_stream_si512(p, f16_pair(a, b)); }
static inline void stm_f16(void *p, __mmask16 k, __m512 v) { _mm256_mask_storeu_epi16(p, k, f16_narrow(v)); }
/* integer round-to-nearest-even: pa_f32_to_bf16 for every value this kernel
 * stores (finite outputs and the default NaN 0xffc00000 -> 0xffc0) */
static inline __m256i bf16_narrow(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    return _mm512_cvtepi32_epi16(
        _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16));
}
static inline __m512i bf16_pair(__m512 a, __m512 b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(bf16_narrow(a)), bf16_narrow(b), 1);
}
static inline void st2_bf16(void *p, __m512 a, __m512 b) { _mm512_storeu_si512(p, bf16_pair(a, b)); }
static inline void st2nt_bf16(void *p, __m512 a, __m512 b) { _mm512_stream_si512(p, bf16_pair(a, b)); }
static inline void stm_bf16(void *p, __mmask16 k, __m512 v) { _mm256_mask_storeu_epi16(p, k, bf16_narrow(v)); }

/* mask bytes -> masked lanes */
static inline __mmask16 ld_mask(const uint8_t *m) {
    const __m128i v = _mm_loadu_si128((const __m128i *)m);
    return _mm_test_epi8_mask(v, v);
}
static inline __mmask16 ldm_mask(const uint8_t *m, __mmask16 k) {
    const __m128i v = _mm_maskz_loadu_epi8(k, m);
    return _mm_test_epi8_mask(v, v);
}

/* pa_smsf exp (softmax_fwd.h), 16 lanes. max_ps(LOW, x) = LOW > x ? LOW : x.
 * scalef(p, nf) = p * 2^nf, exact here, like the oracle's bit-built power. */
static inline __m512 exp16(__m512 x) {
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(PA_SMSF_EXP_LOW), _CMP_NLT_UQ);
    x = _mm512_max_ps(_mm512_set1_ps(PA_SMSF_EXP_LOW), x);
    const __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(PA_SMSF_LOG2E), _mm512_set1_ps(PA_SMSF_MAGIC));
    const __m512 nf = _mm512_sub_ps(t, _mm512_set1_ps(PA_SMSF_MAGIC));
    __m512 r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-PA_SMSF_LN2_HI), x);
    r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-PA_SMSF_LN2_LO), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(PA_SMSF_P0), r, _mm512_set1_ps(PA_SMSF_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(PA_SMSF_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(PA_SMSF_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(PA_SMSF_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(PA_SMSF_P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
    p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(keep, p, nf);
}

/* the summation tree of softmax_fwd.h on 4 x 16 accumulators */
static inline float reduce4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    const __m512 t16 = _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
    const __m256 t8 = _mm256_add_ps(_mm512_castps512_ps256(t16), _mm512_extractf32x8_ps(t16, 1));
    const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
    const __m128 t1 = _mm_add_ss(t2, _mm_shuffle_ps(t2, t2, 1));
    return _mm_cvtss_f32(t1);
}

#define PA_SMSF_ROW_AVX512(NAME, ES, LD, LDM, MUL, ST2, ST2NT, STM)                                  \
    static void NAME(const void *xv, const uint8_t *m, void *yv, int64_t n, float scale, float *z,     \
                     bool nt) {                                                                      \
        const char *x = (const char *)xv;                                                            \
        char *o = (char *)yv;                                                                        \
        const __m512 sc = _mm512_set1_ps(scale), fill = _mm512_set1_ps(PA_SMSF_MASK_VALUE);          \
        __m512 mx0 = _mm512_set1_ps(-__builtin_inff()), mx1 = mx0;                                   \
        int64_t i = 0;                                                                               \
        /* A: z and its max (max_ps(z, m) = z > m ? z : m, as the oracle) */                         \
        for (; i + 32 <= n; i += 32) {                                                               \
            const __m512 z0 = _mm512_mask_mov_ps(MUL(LD(x + i * (ES)), sc), ld_mask(m + i), fill);   \
            const __m512 z1 =                                                                        \
                _mm512_mask_mov_ps(MUL(LD(x + (i + 16) * (ES)), sc), ld_mask(m + i + 16), fill);     \
            _mm512_store_ps(z + i, z0);                                                              \
            _mm512_store_ps(z + i + 16, z1);                                                         \
            mx0 = _mm512_max_ps(z0, mx0);                                                            \
            mx1 = _mm512_max_ps(z1, mx1);                                                            \
        }                                                                                            \
        for (; i < n; i += 16) {                                                                     \
            const __mmask16 k = tail_mask(n - i);                                                    \
            const __m512 z0 = _mm512_mask_mov_ps(MUL(LDM(x + i * (ES), k), sc), ldm_mask(m + i, k), fill); \
            _mm512_store_ps(z + i, z0);                                                              \
            mx0 = _mm512_mask_max_ps(mx0, k, z0, mx0);                                               \
        }                                                                                            \
        const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(mx0, mx1)));             \
        /* B: e = exp(z - max) over z, and the sum */                                                \
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),              \
                         _mm512_setzero_ps()};                                                       \
        i = 0;                                                                                       \
        for (; i + 64 <= n; i += 64) {                                                               \
            for (int k = 0; k < 4; k++) {                                                            \
                const __m512 e = exp16(_mm512_sub_ps(_mm512_load_ps(z + i + 16 * k), mx));           \
                _mm512_store_ps(z + i + 16 * k, e);                                                  \
                acc[k] = _mm512_add_ps(acc[k], e);                                                   \
            }                                                                                        \
        }                                                                                            \
        for (int k = 0; k < 4 && i + 16 * k < n; k++) {                                              \
            const __mmask16 km = tail_mask(n - i - 16 * k);                                          \
            const __m512 e =                                                                         \
                _mm512_maskz_mov_ps(km, exp16(_mm512_sub_ps(_mm512_maskz_load_ps(km, z + i + 16 * k), mx))); \
            _mm512_store_ps(z + i + 16 * k, e);                                                      \
            acc[k] = _mm512_mask_add_ps(acc[k], km, acc[k], e);                                      \
        }                                                                                            \
        const float sum = reduce4(acc[0], acc[1], acc[2], acc[3]);                                   \
        /* C: y = e * (1 / sum) */                                                                         \
        const __m512 s = _mm512_set1_ps(1.0f / sum);                                                      \
        const bool nan_row = sum != sum;                                                             \
        const __m512 qnan = _mm512_castsi512_ps(_mm512_set1_epi32((int)PA_SMSF_NAN_BITS));           \
        i = 0;                                                                                       \
        int64_t head = 0;                                                                            \
        const bool stream = nt && (uintptr_t)o % (ES) == 0;                                          \
        if (stream) {                                                                                \
            head = (int64_t)(((64 - ((uintptr_t)o & 63)) & 63) / (ES));                              \
            if (head > n) head = n;                                                                  \
        }                                                                                            \
        for (; i < head; i += 16) {                                                                  \
            const __mmask16 k = tail_mask(head - i);                                                 \
            STM(o + i * (ES), k, nan_row ? qnan : _mm512_mul_ps(_mm512_load_ps(z + i), s));          \
        }                                                                                            \
        i = head;                                                                                    \
        if (nan_row) {                                                                               \
            for (; i + 32 <= n; i += 32) ST2(o + i * (ES), qnan, qnan);                              \
        } else if (stream) {                                                                         \
            for (; i + 32 <= n; i += 32)                                                             \
                ST2NT(o + i * (ES), _mm512_mul_ps(_mm512_loadu_ps(z + i), s),                        \
                      _mm512_mul_ps(_mm512_loadu_ps(z + i + 16), s));                                \
        } else {                                                                                     \
            for (; i + 32 <= n; i += 32)                                                             \
                ST2(o + i * (ES), _mm512_mul_ps(_mm512_loadu_ps(z + i), s),                          \
                    _mm512_mul_ps(_mm512_loadu_ps(z + i + 16), s));                                  \
        }                                                                                            \
        for (; i < n; i += 16) {                                                                     \
            const __mmask16 k = tail_mask(n - i);                                                    \
            STM(o + i * (ES), k, nan_row ? qnan : _mm512_mul_ps(_mm512_maskz_loadu_ps(k, z + i), s)); \
        }                                                                                            \
    }

PA_SMSF_ROW_AVX512(row_f32, 4, ld_f32, ldm_f32, mul_f32, st2_f32, st2nt_f32, stm_f32)
PA_SMSF_ROW_AVX512(row_f16, 2, ld_f16, ldm_f16, mul_f16, st2_f16, st2nt_f16, stm_f16)
PA_SMSF_ROW_AVX512(row_bf16, 2, ld_bf16, ldm_bf16, mul_f32, st2_bf16, st2nt_bf16, stm_bf16)

void pa_smsf_rows_f32_avx512(const pa_smsf_args *a, int64_t r0, int64_t r1) {
    pa_smsf_drive(a, r0, r1, 4, row_f32, pa_smsf_rows_f32_scalar);
    if (a->stream_out) _mm_sfence(); /* order the streamed lines before the chunk counts as done */
}
void pa_smsf_rows_f16_avx512(const pa_smsf_args *a, int64_t r0, int64_t r1) {
    pa_smsf_drive(a, r0, r1, 2, row_f16, pa_smsf_rows_f16_scalar);
    if (a->stream_out) _mm_sfence();
}
void pa_smsf_rows_bf16_avx512(const pa_smsf_args *a, int64_t r0, int64_t r1) {
    pa_smsf_drive(a, r0, r1, 2, row_bf16, pa_smsf_rows_bf16_scalar);
    if (a->stream_out) _mm_sfence();
}
