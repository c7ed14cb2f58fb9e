/* Scaled masked softmax forward, AVX2 (+F16C). The three passes of the AVX-512
 * tier with 8 lanes and 8 ymm accumulators (the same summation order); tails go
 * through small zero-padded buffers. Same operations as the scalar oracle. */
#include "kernels/softmax_fwd/softmax_fwd_impl.h"

#include <immintrin.h>

/* ---- loads: 8 elements -> fp32 ---- */
static inline __m256 ld_f32(const void *p) { return _mm256_loadu_ps((const float *)p); }
static inline __m256 ld_f16(const void *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
static inline __m256 ld_bf16(const void *p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* ---- x * scale ---- */
static inline __m256 mul_f32(__m256 x, __m256 s) { return _mm256_mul_ps(x, s); }
static inline __m256 mul_f16(__m256 x, __m256 s) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(x, s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

/* ---- 8 fp32 -> 8 elements at p; nt: p is aligned to the store width ---- */
static inline void st_f32(void *p, __m256 v, bool nt) {
    if (nt) _mm256_stream_ps((float *)p, v);
    else _mm256_storeu_ps((float *)p, v);
}
static inline void st_f16(void *p, __m256 v, bool nt) {
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (nt) _mm_stream_si128((__m128i *)p, h);
    else _mm_storeu_si128((__m128i *)p, h);
}
/* integer round-to-nearest-even, as in the AVX-512 tier */
static inline void st_bf16(void *p, __m256 v, bool nt) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
    const __m256i pk = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    const __m128i h = _mm256_castsi256_si128(pk);
    if (nt) _mm_stream_si128((__m128i *)p, h);
    else _mm_storeu_si128((__m128i *)p, h);
}

/* ---- 16 fp32 (two vectors) -> 16 elements at p; nt: p is 32-byte aligned ---- */
static inline void st2_f32(void *p, __m256 a, __m256 b, bool nt) {
    st_f32(p, a, nt);
    st_f32((float *)p + 8, b, nt);
}
static inline void st2_halves(void *p, __m128i a, __m128i b, bool nt) {
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
    if (nt) _mm256_stream_si256((__m256i *)p, v);
    else _mm256_storeu_si256((__m256i *)p, v);
}
static inline void st2_f16(void *p, __m256 a, __m256 b, bool nt) {
    st2_halves(p, _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
               _mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), nt);
}
static inline __m256i bf16_round(__m256 v) { /* the bf16 bits in the low half of each lane */
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
}
static inline void st2_bf16(void *p, __m256 a, __m256 b, bool nt) {
    const __m256i v = _mm256_permute4x64_epi64(_mm256_packus_epi32(bf16_round(a), bf16_round(b)), 0xd8);
    if (nt) _mm256_stream_si256((__m256i *)p, v);
    else _mm256_storeu_si256((__m256i *)p, v);
}

static inline __m256 lanes_below(int64_t cnt) {
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)(cnt > 8 ? 8 : cnt)), iota));
}

/* z = mask byte != 0 ? fill : v */
static inline __m256 apply_mask(__m256 v, const uint8_t *m, __m256 fill) {
    const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)m));
    const __m256 keep = _mm256_castsi256_ps(_mm256_cmpeq_epi32(b, _mm256_setzero_si256()));
    return _mm256_blendv_ps(fill, v, keep);
}

/* pa_smsf exp (softmax_fwd.h), 8 lanes: the 16-entry table as two 8-entry
 * permutes, picked by bit 3 of the index. Cut lanes may hold garbage until the
 * final and, which zeroes them. */
static inline __m256 exp8(__m256 x, __m256i tab_lo, __m256i tab_hi) {
    const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(PA_SMSF_EXP_LOW), _CMP_NLT_UQ);
    const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(PA_SMSF_K), _mm256_set1_ps(PA_SMSF_MAGIC));
    const __m256 nf = _mm256_sub_ps(t, _mm256_set1_ps(PA_SMSF_MAGIC));
    const __m256 r1 = _mm256_fnmadd_ps(nf, _mm256_set1_ps(PA_SMSF_L_HI), x);
    const __m256 r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(PA_SMSF_L_LO), r1);
    const __m256 a = _mm256_fmadd_ps(_mm256_set1_ps(PA_SMSF_C3), r1, _mm256_set1_ps(PA_SMSF_C2));
    const __m256 q = _mm256_fmadd_ps(a, _mm256_mul_ps(r1, r1), r);
    const __m256i ti = _mm256_castps_si256(t);
    const __m256 lo = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(tab_lo, ti));
    const __m256 hi = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(tab_hi, ti));
    const __m256i tb = _mm256_castps_si256(_mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(ti, 28))));
    const __m256 h = _mm256_castsi256_ps(_mm256_add_epi32(tb, _mm256_slli_epi32(ti, 19)));
    return _mm256_and_ps(keep, _mm256_fmadd_ps(h, q, h));
}

static inline float hmax8(__m256 v) {
    __m128 a = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_max_ps(a, _mm_movehl_ps(a, a));
    a = _mm_max_ss(a, _mm_shuffle_ps(a, a, 1));
    return _mm_cvtss_f32(a);
}

/* the summation tree of softmax_fwd.h: acc[k] lane l holds element 8k+l of each 64 */
static inline float reduce8(const __m256 acc[8]) {
    const __m256 t16lo = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[4], acc[6]));
    const __m256 t16hi = _mm256_add_ps(_mm256_add_ps(acc[1], acc[3]), _mm256_add_ps(acc[5], acc[7]));
    const __m256 t8 = _mm256_add_ps(t16lo, t16hi);
    const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
    const __m128 t1 = _mm_add_ss(t2, _mm_shuffle_ps(t2, t2, 1));
    return _mm_cvtss_f32(t1);
}

#define PA_SMSF_ROW_AVX2(NAME, ES, LD, MUL, ST, ST2)                                                    \
    static void NAME(const pa_smsf_row *row, int64_t n, float scale, float *z, bool nt) {             \
        const char *x = (const char *)row->x, *xn = (const char *)row->xn;                           \
        const uint8_t *m = row->m, *mn = row->mn;                                                    \
        char *o = (char *)row->y;                                                                    \
        const __m256 sc = _mm256_set1_ps(scale), fill = _mm256_set1_ps(PA_SMSF_MASK_VALUE);          \
        const __m256 ninf = _mm256_set1_ps(-__builtin_inff());                                       \
        __m256 mx0 = ninf, mx1 = ninf;                                                               \
        int64_t i = 0;                                                                               \
        /* A: z and its max */                                                                       \
        for (; i + 16 <= n; i += 16) {                                                               \
            const __m256 z0 = apply_mask(MUL(LD(x + i * (ES)), sc), m + i, fill);                    \
            const __m256 z1 = apply_mask(MUL(LD(x + (i + 8) * (ES)), sc), m + i + 8, fill);          \
            _mm256_store_ps(z + i, z0);                                                              \
            _mm256_store_ps(z + i + 8, z1);                                                          \
            mx0 = _mm256_max_ps(z0, mx0);                                                            \
            mx1 = _mm256_max_ps(z1, mx1);                                                            \
        }                                                                                            \
        for (; i < n; i += 8) {                                                                      \
            const int64_t cnt = n - i < 8 ? n - i : 8;                                               \
            _Alignas(32) char xt[32] = {0};                                                          \
            uint8_t mt[8] = {0};                                                                     \
            memcpy(xt, x + i * (ES), (size_t)(cnt * (ES)));                                          \
            memcpy(mt, m + i, (size_t)cnt);                                                          \
            __m256 z0 = apply_mask(MUL(LD(xt), sc), mt, fill);                                       \
            z0 = _mm256_blendv_ps(ninf, z0, lanes_below(cnt)); /* past the row: -inf, e = 0 */       \
            _mm256_store_ps(z + i, z0);                                                              \
            mx0 = _mm256_max_ps(z0, mx0);                                                            \
        }                                                                                            \
        const __m256 mx = _mm256_set1_ps(hmax8(_mm256_max_ps(mx0, mx1)));                            \
        /* B: e = exp(z - max) over z, and the sum */                                                \
        __m256 acc[8];                                                                               \
        const __m256i tlo = _mm256_loadu_si256((const __m256i *)pa_smsf_exp2_tab);                    \
        const __m256i thi = _mm256_loadu_si256((const __m256i *)(pa_smsf_exp2_tab + 8));              \
        for (int k = 0; k < 8; k++) acc[k] = _mm256_setzero_ps();                                    \
        i = 0;                                                                                       \
        for (; i + 64 <= n; i += 64) {                                                               \
            /* the next row, 64 elements per step (it is read by the next pass A) */                 \
            if (xn != NULL) {                                                                        \
                for (int l = 0; l < 64 * (ES); l += 64) _mm_prefetch(xn + i * (ES) + l, _MM_HINT_T0); \
            }                                                                                        \
            if (mn != NULL) _mm_prefetch((const char *)mn + i, _MM_HINT_T0);                         \
            for (int k = 0; k < 8; k++) {                                                            \
                const __m256 e = exp8(_mm256_sub_ps(_mm256_load_ps(z + i + 8 * k), mx), tlo, thi);             \
                _mm256_store_ps(z + i + 8 * k, e);                                                   \
                acc[k] = _mm256_add_ps(acc[k], e);                                                   \
            }                                                                                        \
        }                                                                                            \
        for (int k = 0; k < 8 && i + 8 * k < n; k++) {                                               \
            const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(_mm256_load_ps(z + i + 8 * k), mx), tlo, thi), \
                                           lanes_below(n - i - 8 * k));                              \
            _mm256_store_ps(z + i + 8 * k, e);                                                       \
            acc[k] = _mm256_add_ps(acc[k], e);                                                       \
        }                                                                                            \
        const float sum = reduce8(acc);                                                              \
        /* C: y = e * (1 / sum) */                                                                         \
        __m256 s = _mm256_set1_ps(1.0f / sum);                                                              \
        const bool nan_row = sum != sum;                                                             \
        if (nan_row) s = _mm256_castsi256_ps(_mm256_set1_epi32((int)PA_SMSF_NAN_BITS));              \
        int64_t head = 0;                                                                            \
        const bool stream = nt && (uintptr_t)o % (ES) == 0;                                          \
        if (stream) {                                                                                \
            head = (int64_t)(((64 - ((uintptr_t)o & 63)) & 63) / (ES));                              \
            if (head > n) head = n;                                                                  \
        }                                                                                            \
        /* a NaN row: s is NaN, so every e * s is NaN; store the default NaN instead */              \
        _Alignas(32) char t[32];                                                                     \
        i = 0;                                                                                       \
        for (; i < head; i += 8) { /* up to the 64-byte boundary */                                  \
            const __m256 v = nan_row ? s : _mm256_mul_ps(_mm256_loadu_ps(z + i), s);                 \
            ST(t, v, false);                                                                         \
            memcpy(o + i * (ES), t, (size_t)(((head - i) < 8 ? head - i : 8) * (ES)));               \
        }                                                                                            \
        i = head;                                                                                    \
        if (nan_row) {                                                                               \
            for (; i + 16 <= n; i += 16) ST2(o + i * (ES), s, s, false);                             \
        } else if (stream) {                                                                         \
            for (; i + 16 <= n; i += 16)                                                             \
                ST2(o + i * (ES), _mm256_mul_ps(_mm256_loadu_ps(z + i), s),                          \
                    _mm256_mul_ps(_mm256_loadu_ps(z + i + 8), s), true);                             \
        } else {                                                                                     \
            for (; i + 16 <= n; i += 16)                                                             \
                ST2(o + i * (ES), _mm256_mul_ps(_mm256_loadu_ps(z + i), s),                          \
                    _mm256_mul_ps(_mm256_loadu_ps(z + i + 8), s), false);                            \
        }                                                                                            \
        for (; i < n; i += 8) {                                                                      \
            const __m256 v = nan_row ? s : _mm256_mul_ps(_mm256_loadu_ps(z + i), s);                 \
            ST(t, v, false);                                                                         \
            memcpy(o + i * (ES), t, (size_t)(((n - i) < 8 ? n - i : 8) * (ES)));                     \
        }                                                                                            \
    }

PA_SMSF_ROW_AVX2(row_f32, 4, ld_f32, mul_f32, st_f32, st2_f32)
PA_SMSF_ROW_AVX2(row_f16, 2, ld_f16, mul_f16, st_f16, st2_f16)
PA_SMSF_ROW_AVX2(row_bf16, 2, ld_bf16, mul_f32, st_bf16, st2_bf16)

void pa_smsf_rows_f32_avx2(const pa_smsf_args *a, int64_t r0, int64_t r1) {
    pa_smsf_drive(a, r0, r1, 4, row_f32, NULL, pa_smsf_rows_f32_scalar);
    if (a->stream_out) _mm_sfence();
}
void pa_smsf_rows_f16_avx2(const pa_smsf_args *a, int64_t r0, int64_t r1) {
    pa_smsf_drive(a, r0, r1, 2, row_f16, NULL, pa_smsf_rows_f16_scalar);
    if (a->stream_out) _mm_sfence();
}
void pa_smsf_rows_bf16_avx2(const pa_smsf_args *a, int64_t r0, int64_t r1) {
    pa_smsf_drive(a, r0, r1, 2, row_bf16, NULL, pa_smsf_rows_bf16_scalar);
    if (a->stream_out) _mm_sfence();
}
