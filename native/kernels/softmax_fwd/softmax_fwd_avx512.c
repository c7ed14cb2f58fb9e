/* Scaled masked softmax forward, AVX-512 (F/BW/VL/DQ, + BF16 when present).
 *
 * Three passes per row, the last two over an fp32 scratch row that stays in L1
 * (S2 <= 4096): (A) z = masked x*scale, stored, running max; (B) e = exp(z - max),
 * stored over z, summed in 4 zmm accumulators; (C) y = e * (1 / sum), rounded and
 * stored, non-temporally for large outputs. Only pass A touches x and the mask,
 * only pass C touches y. Rows up to PA_SMSF_PAIR_MAX go in pairs, A A B B C C, so
 * that each row's max and sum reductions overlap the other row's work. Same
 * operations as the scalar oracle (softmax_fwd.h). */
#include "kernels/softmax_fwd/softmax_fwd_impl.h"

#include <immintrin.h>

#include "common/pa_half.h"
#include "kernels/common/simd_avx512.h"

#define SMSF_INLINE static inline __attribute__((always_inline))

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

/* pa_smsf exp (softmax_fwd.h), 16 lanes; tab = pa_smsf_exp2_tab. Cut lanes (and
 * only they) hold garbage before the final zero-masked fma. */
static inline __mmask16 exp_keep(__m512 x) {
    return _mm512_cmp_ps_mask(x, _mm512_set1_ps(PA_SMSF_EXP_LOW), _CMP_NLT_UQ);
}
static inline __m512 exp16(__m512 x, __mmask16 keep, __m512i tab) {
    const __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(PA_SMSF_K), _mm512_set1_ps(PA_SMSF_MAGIC));
    const __m512 nf = _mm512_sub_ps(t, _mm512_set1_ps(PA_SMSF_MAGIC));
    const __m512 r1 = _mm512_fnmadd_ps(nf, _mm512_set1_ps(PA_SMSF_L_HI), x);
    const __m512 r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(PA_SMSF_L_LO), r1);
    const __m512 a = _mm512_fmadd_ps(_mm512_set1_ps(PA_SMSF_C3), r1, _mm512_set1_ps(PA_SMSF_C2));
    const __m512 q = _mm512_fmadd_ps(a, _mm512_mul_ps(r1, r1), r);
    const __m512i ti = _mm512_castps_si512(t);
    const __m512 h = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_permutexvar_epi32(ti, tab), _mm512_slli_epi32(ti, 19)));
    return _mm512_maskz_fmadd_ps(keep, h, q, h);
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

/* A: z = masked x * scale into z, returns max z (max_ps(z, m) = z > m ? z : m, as the oracle) */
#define PA_SMSF_PASS_A(NAME, ES, LD, LDM, MUL)                                                       \
    SMSF_INLINE float NAME(const char *x, const uint8_t *m, float *z, int64_t n, float scale) {      \
        const __m512 sc = _mm512_set1_ps(scale), fill = _mm512_set1_ps(PA_SMSF_MASK_VALUE);          \
        __m512 mx0 = _mm512_set1_ps(-__builtin_inff()), mx1 = mx0;                                   \
        int64_t i = 0;                                                                               \
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
        return _mm512_reduce_max_ps(_mm512_max_ps(mx0, mx1));                                        \
    }

PA_SMSF_PASS_A(pass_a_f32, 4, ld_f32, ldm_f32, mul_f32)
PA_SMSF_PASS_A(pass_a_f16, 2, ld_f16, ldm_f16, mul_f16)
PA_SMSF_PASS_A(pass_a_bf16, 2, ld_bf16_1op, ldm_bf16, mul_f32)

/* B: e = exp(z - mx) over z; returns the sum. track_dmin: *dmin = min of the
 * uncut exp arguments (for the bf16 denormal test). xn/mn (esize es): the row
 * to prefetch, 64 elements per step. A step whose 64 arguments are all cut (a
 * masked run, as in causal masks) stores zeros and skips the exp. */
#define PA_SMSF_B_STEP(K, ACC)                                                                       \
    do {                                                                                             \
        if (track_dmin) dmin = _mm512_mask_min_ps(dmin, kp##K, d##K, dmin);                          \
        const __m512 e = exp16(d##K, kp##K, tab);                                                    \
        _mm512_store_ps(z + i + 16 * (K), e);                                                        \
        ACC = _mm512_add_ps(ACC, e);                                                                 \
    } while (0)

SMSF_INLINE float pass_b(float *z, int64_t n, float mx, bool track_dmin, float *dmin_out, const char *xn,
                           const uint8_t *mn, int es) {
    const __m512 mxv = _mm512_set1_ps(mx);
    const __m512i tab = _mm512_loadu_si512(pa_smsf_exp2_tab);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, dmin = a0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        if (xn != NULL) {
            for (int l = 0; l < 64 * es; l += 64) _mm_prefetch(xn + i * es + l, _MM_HINT_T0);
        }
        if (mn != NULL) _mm_prefetch((const char *)mn + i, _MM_HINT_T0);
        const __m512 d0 = _mm512_sub_ps(_mm512_load_ps(z + i), mxv);
        const __m512 d1 = _mm512_sub_ps(_mm512_load_ps(z + i + 16), mxv);
        const __m512 d2 = _mm512_sub_ps(_mm512_load_ps(z + i + 32), mxv);
        const __m512 d3 = _mm512_sub_ps(_mm512_load_ps(z + i + 48), mxv);
        const __mmask16 kp0 = exp_keep(d0), kp1 = exp_keep(d1), kp2 = exp_keep(d2), kp3 = exp_keep(d3);
        if ((kp0 | kp1 | kp2 | kp3) == 0) { /* 64 cut (masked) elements: e = +0, the sums unchanged */
            for (int k = 0; k < 4; k++) _mm512_store_ps(z + i + 16 * k, _mm512_setzero_ps());
            continue;
        }
        PA_SMSF_B_STEP(0, a0);
        PA_SMSF_B_STEP(1, a1);
        PA_SMSF_B_STEP(2, a2);
        PA_SMSF_B_STEP(3, a3);
    }
    for (int k = 0; k < 4 && i + 16 * k < n; k++) {
        const __mmask16 km = tail_mask(n - i - 16 * k);
        const __m512 d = _mm512_sub_ps(_mm512_maskz_load_ps(km, z + i + 16 * k), mxv);
        const __mmask16 kp = exp_keep(d);
        if (track_dmin) dmin = _mm512_mask_min_ps(dmin, kp & km, d, dmin);
        const __m512 e = _mm512_maskz_mov_ps(km, exp16(d, kp, tab));
        _mm512_store_ps(z + i + 16 * k, e);
        if (k == 0) a0 = _mm512_add_ps(a0, e);
        else if (k == 1) a1 = _mm512_add_ps(a1, e);
        else if (k == 2) a2 = _mm512_add_ps(a2, e);
        else a3 = _mm512_add_ps(a3, e);
    }
    if (track_dmin) *dmin_out = _mm512_reduce_min_ps(dmin);
    return reduce4(a0, a1, a2, a3);
}

/* C: y = e * (1 / sum), rounded and stored (a NaN sum: the default NaN). dmin: see
 * pass_b. The loops are specialised on `stream` and `dn` (no per-vector tests). */
#define PA_SMSF_PASS_C(NAME, ES, ST2, ST2NT, STM, DN)                                                \
    SMSF_INLINE void NAME##_loop(const float *z, char *o, int64_t i, int64_t n, __m512 s, bool stream, bool dn) { \
        for (; i + 32 <= n; i += 32) {                                                               \
            const __m512 v0 = _mm512_mul_ps(_mm512_loadu_ps(z + i), s);                              \
            const __m512 v1 = _mm512_mul_ps(_mm512_loadu_ps(z + i + 16), s);                         \
            if (stream) ST2NT(o + i * (ES), v0, v1, dn);                                             \
            else ST2(o + i * (ES), v0, v1, dn);                                                      \
        }                                                                                            \
        for (; i < n; i += 16) {                                                                     \
            const __mmask16 k = tail_mask(n - i);                                                    \
            STM(o + i * (ES), k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, z + i), s));                 \
        }                                                                                            \
    }                                                                                                \
    SMSF_INLINE void NAME(const float *z, char *o, int64_t n, float sum, float dmin, bool nt) {      \
        if (sum != sum) {                                                                            \
            const __m512 qnan = _mm512_castsi512_ps(_mm512_set1_epi32((int)PA_SMSF_NAN_BITS));       \
            for (int64_t i = 0; i < n; i += 16) STM(o + i * (ES), tail_mask(n - i), qnan);           \
            return;                                                                                  \
        }                                                                                            \
        const __m512 s = _mm512_set1_ps(1.0f / sum);                                                 \
        /* no y is denormal when the smallest nonzero e (> exp(dmin) * (1 - 2^-21)) times 1/sum  \
         * stays >= 2^-126: dmin >= ln(sum) - 87.3365 (+ margin), with ln(sum) < 2^(ex+1) * ln 2  \
         * for sum's binary exponent ex (sum >= 1) */                                               \
        const bool dn = DN && !(dmin >= (float)(((int)(pa_f32_bits(sum) >> 23) & 0xff) - 126) * 0.6931472f - 87.3365f + 1e-3f); \
        int64_t head = 0;                                                                            \
        const bool stream = nt && (uintptr_t)o % (ES) == 0;                                          \
        if (stream) {                                                                                \
            head = (int64_t)(((64 - ((uintptr_t)o & 63)) & 63) / (ES));                              \
            if (head > n) head = n;                                                                  \
            for (int64_t i = 0; i < head; i += 16) {                                                 \
                const __mmask16 k = tail_mask(head - i);                                             \
                STM(o + i * (ES), k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, z + i), s));             \
            }                                                                                        \
        }                                                                                            \
        if (stream && dn) NAME##_loop(z, o, head, n, s, true, true);                                 \
        else if (stream) NAME##_loop(z, o, head, n, s, true, false);                                 \
        else if (dn) NAME##_loop(z, o, head, n, s, false, true);                                     \
        else NAME##_loop(z, o, head, n, s, false, false);                                            \
    }

PA_SMSF_PASS_C(pass_c_f32, 4, st2_f32, st2nt_f32, stm_f32, 0)
PA_SMSF_PASS_C(pass_c_f16, 2, st2_f16, st2nt_f16, stm_f16, 0)
PA_SMSF_PASS_C(pass_c_bf16, 2, st2_bf16, st2nt_bf16, stm_bf16, 0)
PA_SMSF_PASS_C(pass_c_bf16hw, 2, st2_bf16hw, st2nt_bf16hw, stm_bf16, 1)

/* one row, and two rows interleaved */
#define PA_SMSF_ROWS_AVX512(ROW, PAIR, ES, A, C, DN)                                                 \
    static void ROW(const pa_smsf_row *rw, int64_t n, float scale, float *z, bool nt) {              \
        const float mx = A((const char *)rw->x, rw->m, z, n, scale);                                 \
        float dmin = 0.0f;                                                                           \
        const float sum = pass_b(z, n, mx, DN, &dmin, (const char *)rw->xn, rw->mn, ES);             \
        C(z, (char *)rw->y, n, sum, dmin, nt);                                                       \
    }                                                                                                \
    static void PAIR(const pa_smsf_row rw[2], int64_t n, float scale, float *z0, float *z1, bool nt) { \
        const float mx0 = A((const char *)rw[0].x, rw[0].m, z0, n, scale);                           \
        const float mx1 = A((const char *)rw[1].x, rw[1].m, z1, n, scale);                           \
        float dmin0 = 0.0f, dmin1 = 0.0f;                                                            \
        const float sum0 = pass_b(z0, n, mx0, DN, &dmin0, (const char *)rw[0].xn, rw[0].mn, ES);     \
        const float sum1 = pass_b(z1, n, mx1, DN, &dmin1, (const char *)rw[1].xn, rw[1].mn, ES);     \
        C(z0, (char *)rw[0].y, n, sum0, dmin0, nt);                                                  \
        C(z1, (char *)rw[1].y, n, sum1, dmin1, nt);                                                  \
    }

PA_SMSF_ROWS_AVX512(row_f32, pair_f32, 4, pass_a_f32, pass_c_f32, 0)
PA_SMSF_ROWS_AVX512(row_f16, pair_f16, 2, pass_a_f16, pass_c_f16, 0)
PA_SMSF_ROWS_AVX512(row_bf16, pair_bf16, 2, pass_a_bf16, pass_c_bf16, 0)
PA_SMSF_ROWS_AVX512(row_bf16hw, pair_bf16hw, 2, pass_a_bf16, pass_c_bf16hw, 1)

void pa_smsf_rows_f32_avx512(const pa_smsf_args *a, int64_t r0, int64_t r1) {
    pa_smsf_drive(a, r0, r1, 4, row_f32, pair_f32, pa_smsf_rows_f32_scalar);
    if (a->stream_out) _mm_sfence(); /* order the streamed lines before the chunk counts as done */
}
void pa_smsf_rows_f16_avx512(const pa_smsf_args *a, int64_t r0, int64_t r1) {
    pa_smsf_drive(a, r0, r1, 2, row_f16, pair_f16, pa_smsf_rows_f16_scalar);
    if (a->stream_out) _mm_sfence();
}
void pa_smsf_rows_bf16_avx512(const pa_smsf_args *a, int64_t r0, int64_t r1) {
    pa_smsf_drive(a, r0, r1, 2, row_bf16, pair_bf16, pa_smsf_rows_bf16_scalar);
    if (a->stream_out) _mm_sfence();
}
void pa_smsf_rows_bf16_avx512bf16(const pa_smsf_args *a, int64_t r0, int64_t r1) {
    pa_smsf_drive(a, r0, r1, 2, row_bf16hw, pair_bf16hw, pa_smsf_rows_bf16_scalar);
    if (a->stream_out) _mm_sfence();
}
