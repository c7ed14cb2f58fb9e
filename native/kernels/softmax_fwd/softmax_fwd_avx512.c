/* Scaled masked softmax forward, AVX-512 (F/BW/VL/DQ, + BF16 when present).
 *
 * Three passes per row, the last two over an fp32 scratch row that stays in L1
 * (S2 <= 4096): (A) z = masked x*scale, stored, running max; (B) e = exp(z - max),
 * stored over z, summed in 4 zmm accumulators; (C) y = e * (1 / sum), rounded and
 * stored, non-temporally for large outputs. Only pass A touches x and the mask,
 * only pass C touches y. Same operations as the scalar oracle (softmax_fwd.h). */
#include "kernels/softmax_fwd/softmax_fwd_impl.h"

#include <immintrin.h>

#include "common/pa_half.h"
#include "kernels/common/simd_avx512.h"

/* ---- z = keep ? x * scale : fill ---- */
static inline __m512 mul_f32(__m512 fill, __mmask16 keep, __m512 x, __m512 s) { return _mm512_mask_mul_ps(fill, keep, x, s); }
static inline __m512 mul_f16(__m512 fill, __mmask16 keep, __m512 x, __m512 s) {
    return _mm512_mask_mov_ps(
        fill, keep,
        _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_mul_ps(x, s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
}

/* ---- stores: fp32 -> elements, round to nearest even ---- */
static inline void st2_f32(void *p, __m512 a, __m512 b, bool dn) {
    (void)dn;
    _mm512_storeu_ps(p, a);
    _mm512_storeu_ps((char *)p + 64, b);
}
static inline void st2nt_f32(void *p, __m512 a, __m512 b, bool dn) {
    (void)dn;
    _mm512_stream_ps((float *)p, a);
    _mm512_stream_ps((float *)p + 16, b);
}
static inline void stm_f32(void *p, __mmask16 k, __m512 v) { _mm512_mask_storeu_ps(p, k, v); }
static inline void st2_f16(void *p, __m512 a, __m512 b, bool dn) { (void)dn; _mm512_storeu_si512(p, f16_pair(a, b)); }
static inline void st2nt_f16(void *p, __m512 a, __m512 b, bool dn) { (void)dn; _mm512_stream_si512(p, f16_pair(a, b)); }
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
static inline void st2_bf16(void *p, __m512 a, __m512 b, bool dn) { (void)dn; _mm512_storeu_si512(p, bf16_pair(a, b)); }
static inline void st2nt_bf16(void *p, __m512 a, __m512 b, bool dn) { (void)dn; _mm512_stream_si512(p, bf16_pair(a, b)); }
static inline void stm_bf16(void *p, __mmask16 k, __m512 v) { _mm256_mask_storeu_epi16(p, k, bf16_narrow(v)); }

/* AVX512_BF16: vcvtne2ps2bf16 rounds like the integer path except that it flushes
 * fp32 denormal inputs to zero; a pair holding one (rare: outputs below 2^-126)
 * takes the integer path. Rows that cannot produce one (dn false) skip the test. */
static inline __m512i bf16hw_pair(__m512 a, __m512 b, bool dn) {
    if (dn && (denormal_lanes(a) | denormal_lanes(b)) != 0) return bf16_pair(a, b);
    return (__m512i)_mm512_cvtne2ps_pbh(b, a); /* a -> low 16 lanes */
}
static inline void st2_bf16hw(void *p, __m512 a, __m512 b, bool dn) { _mm512_storeu_si512(p, bf16hw_pair(a, b, dn)); }
static inline void st2nt_bf16hw(void *p, __m512 a, __m512 b, bool dn) { _mm512_stream_si512(p, bf16hw_pair(a, b, dn)); }

/* mask bytes -> unmasked lanes (masked-load tails: lanes past k count as unmasked) */
static inline __mmask16 ld_keep(const uint8_t *m) {
    const __m128i v = _mm_loadu_si128((const __m128i *)m);
    return _mm_testn_epi8_mask(v, v);
}
static inline __mmask16 ldm_keep(const uint8_t *m, __mmask16 k) {
    const __m128i v = _mm_maskz_loadu_epi8(k, m);
    return _mm_testn_epi8_mask(v, v);
}

/* pa_smsf exp (softmax_fwd.h), 16 lanes. keep = exp_keep(x). Cut lanes (and only
 * they) may hold garbage before the final masked scalef, which zeroes them. */
static inline __mmask16 exp_keep(__m512 x) {
    return _mm512_cmp_ps_mask(x, _mm512_set1_ps(PA_SMSF_EXP_LOW), _CMP_NLT_UQ);
}
static inline __m512 exp16(__m512 x, __mmask16 keep) {
    const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(PA_SMSF_LOG2E));
    const __m512 nf = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-PA_SMSF_LN2_HI), x);
    r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-PA_SMSF_LN2_LO), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(PA_SMSF_C6), r, _mm512_set1_ps(PA_SMSF_C5));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(PA_SMSF_C4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(PA_SMSF_C3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(PA_SMSF_C2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(PA_SMSF_C1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(PA_SMSF_C0));
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

#define PA_SMSF_ROW_AVX512(NAME, ES, LD, LDM, MUL, ST2, ST2NT, STM, DN)                                \
    static void NAME(const void *xv, const uint8_t *m, void *yv, int64_t n, float scale, float *z,     \
                     bool nt, const void *xnv, const uint8_t *mn) {                                                                      \
        const char *x = (const char *)xv, *xn = (const char *)xnv;                                   \
        char *o = (char *)yv;                                                                        \
        const __m512 sc = _mm512_set1_ps(scale), fill = _mm512_set1_ps(PA_SMSF_MASK_VALUE);          \
        __m512 mx0 = _mm512_set1_ps(-__builtin_inff()), mx1 = mx0;                                   \
        int64_t i = 0;                                                                               \
        /* A: z and its max (max_ps(z, m) = z > m ? z : m, as the oracle) */                         \
        for (; i + 32 <= n; i += 32) {                                                               \
            const __m512 z0 = MUL(fill, ld_keep(m + i), LD(x + i * (ES)), sc);                       \
            const __m512 z1 = MUL(fill, ld_keep(m + i + 16), LD(x + (i + 16) * (ES)), sc);           \
            _mm512_store_ps(z + i, z0);                                                              \
            _mm512_store_ps(z + i + 16, z1);                                                         \
            mx0 = _mm512_max_ps(z0, mx0);                                                            \
            mx1 = _mm512_max_ps(z1, mx1);                                                            \
        }                                                                                            \
        for (; i < n; i += 16) {                                                                     \
            const __mmask16 k = tail_mask(n - i);                                                    \
            const __m512 z0 = MUL(fill, ldm_keep(m + i, k), LDM(x + i * (ES), k), sc);               \
            _mm512_store_ps(z + i, z0);                                                              \
            mx0 = _mm512_mask_max_ps(mx0, k, z0, mx0);                                               \
        }                                                                                            \
        const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(mx0, mx1)));             \
        /* B: e = exp(z - max) over z, and the sum */                                                \
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),              \
                         _mm512_setzero_ps()};                                                       \
        __m512 dmin = _mm512_setzero_ps(); /* min of the uncut exp arguments (DN only) */            \
        i = 0;                                                                                       \
        for (; i + 64 <= n; i += 64) {                                                               \
            /* the next row, 64 elements per step (it is read by the next pass A) */                 \
            if (xn != NULL) {                                                                        \
                for (int l = 0; l < 64 * (ES); l += 64) _mm_prefetch(xn + i * (ES) + l, _MM_HINT_T0); \
            }                                                                                        \
            if (mn != NULL) _mm_prefetch((const char *)mn + i, _MM_HINT_T0);                         \
            for (int k = 0; k < 4; k++) {                                                            \
                const __m512 d = _mm512_sub_ps(_mm512_load_ps(z + i + 16 * k), mx);                  \
                const __mmask16 kp = exp_keep(d);                                                    \
                if (DN) dmin = _mm512_mask_min_ps(dmin, kp, d, dmin);                                \
                const __m512 e = exp16(d, kp);                                                       \
                _mm512_store_ps(z + i + 16 * k, e);                                                  \
                acc[k] = _mm512_add_ps(acc[k], e);                                                   \
            }                                                                                        \
        }                                                                                            \
        for (int k = 0; k < 4 && i + 16 * k < n; k++) {                                              \
            const __mmask16 km = tail_mask(n - i - 16 * k);                                          \
            const __m512 d = _mm512_sub_ps(_mm512_maskz_load_ps(km, z + i + 16 * k), mx);            \
            const __mmask16 kp = exp_keep(d);                                                        \
            if (DN) dmin = _mm512_mask_min_ps(dmin, kp & km, d, dmin);                               \
            const __m512 e = _mm512_maskz_mov_ps(km, exp16(d, kp));                                  \
            _mm512_store_ps(z + i + 16 * k, e);                                                      \
            acc[k] = _mm512_mask_add_ps(acc[k], km, acc[k], e);                                      \
        }                                                                                            \
        const float sum = reduce4(acc[0], acc[1], acc[2], acc[3]);                                   \
        /* C: y = e * (1 / sum) */                                                                         \
        const __m512 s = _mm512_set1_ps(1.0f / sum);                                                      \
        const bool nan_row = sum != sum;                                                             \
        /* no y is denormal when the smallest nonzero e (> exp(dmin) * (1 - 2^-21)) times 1/sum  \
         * stays >= 2^-126: dmin >= ln(sum) - 87.3365 (+ margin), with ln(sum) < 2^(ex+1) * ln 2  \
         * for sum's binary exponent ex (sum >= 1, or NaN: then dn) */                              \
        const bool dn = DN && !(_mm512_reduce_min_ps(dmin) >=                                        \
                                (float)(((int)(pa_f32_bits(sum) >> 23) & 0xff) - 126) * 0.6931472f - 87.3365f + 1e-3f); \
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
        for (; i + 32 <= n; i += 32) {                                                               \
            const __m512 v0 = nan_row ? qnan : _mm512_mul_ps(_mm512_loadu_ps(z + i), s);             \
            const __m512 v1 = nan_row ? qnan : _mm512_mul_ps(_mm512_loadu_ps(z + i + 16), s);        \
            if (stream) ST2NT(o + i * (ES), v0, v1, dn);                                             \
            else ST2(o + i * (ES), v0, v1, dn);                                                      \
        }                                                                                            \
        for (; i < n; i += 16) {                                                                     \
            const __mmask16 k = tail_mask(n - i);                                                    \
            STM(o + i * (ES), k, nan_row ? qnan : _mm512_mul_ps(_mm512_maskz_loadu_ps(k, z + i), s)); \
        }                                                                                            \
    }

PA_SMSF_ROW_AVX512(row_f32, 4, ld_f32, ldm_f32, mul_f32, st2_f32, st2nt_f32, stm_f32, 0)
PA_SMSF_ROW_AVX512(row_f16, 2, ld_f16, ldm_f16, mul_f16, st2_f16, st2nt_f16, stm_f16, 0)
PA_SMSF_ROW_AVX512(row_bf16, 2, ld_bf16, ldm_bf16, mul_f32, st2_bf16, st2nt_bf16, stm_bf16, 0)
PA_SMSF_ROW_AVX512(row_bf16hw, 2, ld_bf16, ldm_bf16, mul_f32, st2_bf16hw, st2nt_bf16hw, stm_bf16, 1)

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
void pa_smsf_rows_bf16_avx512bf16(const pa_smsf_args *a, int64_t r0, int64_t r1) {
    pa_smsf_drive(a, r0, r1, 2, row_bf16hw, pa_smsf_rows_bf16_scalar);
    if (a->stream_out) _mm_sfence();
}
