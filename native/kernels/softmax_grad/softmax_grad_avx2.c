/* Scaled masked softmax backward, AVX2 + FMA + F16C (FMA is deliberately not
 * used: every op is rounded on its own). Two passes per row: a dot product with
 * 8 ymm accumulators (64 columns per step, the lane layout of softmax_grad.h),
 * then the output pass, which prefetches the next row. Large outputs are
 * streamed (non-temporal stores). Heads / tails go through small zero-padded
 * stack buffers. Rows up to 64 columns go in groups of 8 rows: one sum tree for
 * the group and one flat output stream (see "short rows" below); same bits. */
#include "kernels/softmax_grad/softmax_grad_impl.h"

#include <immintrin.h>

/* ---- loads: 8 elements -> fp32 ---- */
static inline __m256 ld_f32(const void *p) { return _mm256_loadu_ps((const float *)p); }
static inline __m256 ld_f16(const void *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline __m256 ld_bf16(const void *p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* ---- stores: fp32 -> 8 elements, round to nearest even ---- */
static inline void st_f32(void *p, __m256 v) { _mm256_storeu_ps((float *)p, v); }
static inline void stnt_f32(void *p, __m256 v) { _mm256_stream_ps((float *)p, v); } /* p 32-byte aligned */
static inline __m128i f16_narrow(__m256 v) {
    return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline void st_f16(void *p, __m256 v) { _mm_storeu_si128((__m128i *)p, f16_narrow(v)); }
static inline void stnt_f16(void *p, __m256 v) { _mm_stream_si128((__m128i *)p, f16_narrow(v)); }
/* Integer round-to-nearest-even: exactly pa_f32_to_bf16 for every non-NaN input and
 * for the canonical NaN out_vec produces (0xffc00000), the only NaN that reaches it. */
static inline __m128i bf16_narrow(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i h = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
    return _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}
static inline void st_bf16(void *p, __m256 v) { _mm_storeu_si128((__m128i *)p, bf16_narrow(v)); }
static inline void stnt_bf16(void *p, __m256 v) { _mm_stream_si128((__m128i *)p, bf16_narrow(v)); }

static inline void prefetch(const char *p) { _mm_prefetch(p, _MM_HINT_T0); }
/* Prefetches p + off, which may lie past the end of p's array (a prefetch never
 * faults; the address is formed as an integer, so no out-of-range pointer exists). */
static inline void prefetch_at(const void *p, int64_t off) {
    _mm_prefetch((const char *)((uintptr_t)p + (uintptr_t)off), _MM_HINT_T0);
}
static inline void prefetch_l2_at(const void *p, int64_t off) {
    _mm_prefetch((const char *)((uintptr_t)p + (uintptr_t)off), _MM_HINT_T1);
}

/* 8 mask bytes -> all-ones lanes where NOT masked (to AND the result with). */
static inline __m256 keep_lanes(const uint8_t *m) {
    const __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)m));
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(w, _mm256_setzero_si256()));
}

/* The combination tree of softmax_grad.h applied to 8 x 8 accumulators. */
static inline float reduce8(const __m256 b[8]) {
    const __m256 c0 = _mm256_add_ps(_mm256_add_ps(b[0], b[2]), _mm256_add_ps(b[4], b[6]));
    const __m256 c1 = _mm256_add_ps(_mm256_add_ps(b[1], b[3]), _mm256_add_ps(b[5], b[7]));
    const __m256 t8 = _mm256_add_ps(c0, c1);
    const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
    const __m128 t1 = _mm_add_ss(t2, _mm_shuffle_ps(t2, t2, 1));
    return _mm_cvtss_f32(t1);
}

/* masked ? +0 : ((g*y - s*y) * sc), each op rounded; a NaN becomes the default
 * NaN 0xffc00000 (no bit depends on NaN-propagation order). */
static inline __m256 out_vec(__m256 g, __m256 y, __m256 s, __m256 sc, __m256 keep) {
    const __m256 p = _mm256_mul_ps(g, y);
    const __m256 t = _mm256_mul_ps(s, y);
    const __m256 d = _mm256_sub_ps(p, t);
    const __m256 v = _mm256_mul_ps(d, sc);
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    const __m256 c = _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(-0x400000) /* 0xffc00000 */), nan);
    return _mm256_and_ps(c, keep);
}

/* cnt (<= 8) outputs at column c through zero-padded stack copies (head / tail). */
#define PA_SMSB_PART_AVX2(ES, LD, ST, c, cnt)                                                     \
    do {                                                                                          \
        _Alignas(32) char gb_[8 * (ES)], yb_[8 * (ES)], ob_[8 * (ES)];                            \
        uint8_t mb_[8] = {0};                                                                     \
        memset(gb_, 0, sizeof gb_);                                                               \
        memset(yb_, 0, sizeof yb_);                                                               \
        memcpy(gb_, g + (c) * (ES), (size_t)((cnt) * (ES)));                                      \
        memcpy(yb_, y + (c) * (ES), (size_t)((cnt) * (ES)));                                      \
        memcpy(mb_, m + (c), (size_t)(cnt));                                                      \
        ST(ob_, out_vec(LD(gb_), LD(yb_), s, sc, keep_lanes(mb_)));                               \
        memcpy(o + (c) * (ES), ob_, (size_t)((cnt) * (ES)));                                     \
    } while (0)

/* Row kernel: pass 1 (dot product), then pass 2 (outputs) while prefetching the
 * next row. With nt, pass 2 peels to a 64-byte boundary and streams full lines. */
#define PA_SMSB_ROW_AVX2(NAME, ES, LD, ST, STNT)                                                 \
    static void NAME(const void *gv, const void *yv, const uint8_t *m, void *ov, int64_t n,      \
                     float scale, const void *gnv, const void *ynv, int64_t far, bool far_m,     \
                     bool nt) {                                                                 \
        const char *g = (const char *)gv, *y = (const char *)yv;                                \
        const char *gn = (const char *)gnv, *yn = (const char *)ynv;                            \
        char *o = (char *)ov;                                                                   \
        __m256 b[8];                                                                            \
        for (int k = 0; k < 8; k++) b[k] = _mm256_setzero_ps();                                 \
        int64_t i = 0;                                                                          \
        for (; i + 64 <= n; i += 64) {                                                          \
            for (int k = 0; k < 8; k++) {                                                       \
                const int64_t c = i + 8 * k;                                                    \
                b[k] = _mm256_add_ps(b[k], _mm256_mul_ps(LD(g + c * (ES)), LD(y + c * (ES))));  \
            }                                                                                   \
        }                                                                                       \
        if (i < n) {                                                                            \
            /* last partial step: zero-padded copies; add only the lanes < rem */              \
            const int64_t rem = n - i;                                                          \
            _Alignas(32) char gb[64 * (ES)], yb[64 * (ES)];                                     \
            memset(gb, 0, sizeof gb);                                                           \
            memset(yb, 0, sizeof yb);                                                           \
            memcpy(gb, g + i * (ES), (size_t)(rem * (ES)));                                     \
            memcpy(yb, y + i * (ES), (size_t)(rem * (ES)));                                     \
            const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);                     \
            for (int k = 0; k < 8 && k * 8 < rem; k++) {                                        \
                const __m256 valid = _mm256_castsi256_ps(                                       \
                    _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(rem - k * 8)), iota));           \
                const __m256 p = _mm256_mul_ps(LD(gb + k * 8 * (ES)), LD(yb + k * 8 * (ES)));   \
                b[k] = _mm256_blendv_ps(b[k], _mm256_add_ps(b[k], p), valid);                   \
            }                                                                                   \
        }                                                                                       \
        const __m256 s = _mm256_set1_ps(reduce8(b));                                            \
        const __m256 sc = _mm256_set1_ps(scale);                                                \
        i = 0;                                                                                  \
        int64_t head = 0;                                                                       \
        const bool stream = nt && (uintptr_t)o % (ES) == 0;                                     \
        if (stream) {                                                                           \
            /* peel to a 64-byte boundary so the streamed stores fill whole lines */            \
            head = (int64_t)(((64 - ((uintptr_t)o & 63)) & 63) / (ES));                         \
            if (head > n) head = n;                                                             \
        }                                                                                       \
        for (; i < head; i += 8) PA_SMSB_PART_AVX2(ES, LD, ST, i, (head - i < 8 ? head - i : 8)); \
        i = head;                                                                               \
        for (; i + 16 <= n; i += 16) {                                                          \
            if (gn != NULL) prefetch(gn + i * (ES)), prefetch(yn + i * (ES));                   \
            if (far != 0) {                                                                     \
                prefetch_l2_at(g, (far + i) * (ES)), prefetch_l2_at(y, (far + i) * (ES));       \
                if (far_m && (i & 63) < 16) prefetch_l2_at(m, far + i);                         \
            }                                                                                   \
            const __m256 r0 = out_vec(LD(g + i * (ES)), LD(y + i * (ES)), s, sc, keep_lanes(m + i)); \
            const __m256 r1 = out_vec(LD(g + (i + 8) * (ES)), LD(y + (i + 8) * (ES)), s, sc,   \
                                      keep_lanes(m + i + 8));                                   \
            if (stream) STNT(o + i * (ES), r0), STNT(o + (i + 8) * (ES), r1);                   \
            else ST(o + i * (ES), r0), ST(o + (i + 8) * (ES), r1);                              \
        }                                                                                       \
        for (; i < n; i += 8) PA_SMSB_PART_AVX2(ES, LD, ST, i, (n - i < 8 ? n - i : 8));        \
    }

PA_SMSB_ROW_AVX2(row_f32, 4, ld_f32, st_f32, stnt_f32)
PA_SMSB_ROW_AVX2(row_f16, 2, ld_f16, st_f16, stnt_f16)
PA_SMSB_ROW_AVX2(row_bf16, 2, ld_bf16, st_bf16, stnt_bf16)

/* ---- short rows: groups of 8 rows (see pa_smsb_drive_short) ----
 *
 * As in the AVX-512 file: pass 1 folds each row's (at most 8) vectors, which
 * are its partial sums acc[i % 64] (at most one element each; absent vectors
 * are +0.0), to its t8 (the first tree levels), hsum8 finishes the tree for 8
 * rows at once with the oracle's adds, and pass 2 writes the group's outputs as
 * one flat stream, each lane fetching its row's sum. A partial here is the
 * product p itself where the oracle has +0.0 + p: that only changes the sign of
 * zero sums (the oracle never has -0.0), so one final + (+0.0) gives the
 * oracle's bits (see softmax_grad_avx512.c). */

/* The tree levels below t8 for 8 rows: t[r] = t8 of row r; s of row r in lane r. */
static inline __m256 hsum8(const __m256 t[8]) {
    __m256 u[4], w[2];
    for (int i = 0; i < 4; i++) {
        /* t4[l] = t8[l] + t8[l+4]: lanes 0-3 row 2i, lanes 4-7 row 2i+1 */
        const __m256 a = t[2 * i], b = t[2 * i + 1];
        u[i] = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
    }
    for (int i = 0; i < 2; i++) {
        /* t2[l] = t4[l] + t4[l+2]: 128-bit half j holds rows 4i+j (lanes 0, 1) and 4i+2+j (lanes 2, 3) */
        const __m256 a = u[2 * i], b = u[2 * i + 1];
        w[i] = _mm256_add_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
    }
    /* s = t2[0] + t2[1]: lane 4j+k holds row 2k+j */
    const __m256 s = _mm256_add_ps(_mm256_shuffle_ps(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm256_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    return _mm256_add_ps(_mm256_permutevar8x32_ps(s, order), _mm256_setzero_ps());
}

/* The sums of the rows of elements e .. e+7, from x = e + l + 0.5 (lane l):
 * row = floor(x / n), exact in fp32 here (x < 2^10, n <= 64; see the AVX-512 file). */
static inline __m256 elem_pos(int64_t e) {
    return _mm256_add_ps(_mm256_set1_ps((float)e), _mm256_setr_ps(0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f));
}
static inline __m256 sums_of(__m256 S, __m256 x, __m256 inv_n) {
    return _mm256_permutevar8x32_ps(S, _mm256_cvttps_epi32(_mm256_mul_ps(x, inv_n)));
}
static inline __m256 sums_at(__m256 S, int64_t e, __m256 inv_n) { return sums_of(S, elem_pos(e), inv_n); }

/* Pass 1 for the 8 rows with NV vectors per row (the last holds tl elements).
 * The last vector is read in place when the 8 elements stay inside the group
 * (then the lanes past the row are cleared), else from a zero-padded copy. */
#define PA_SMSB_T8_ROWS_AVX2(ES, LD, NV)                                                          \
    for (int r = 0; r < 8; r++) {                                                               \
        /* rows past the group repeat its last row: their lanes of S go unused */              \
        const int64_t rr = r < rows ? r : rows - 1;                                             \
        const char *gr = g + rr * n * (ES), *yr = y + rr * n * (ES);                            \
        __m256 p[8];                                                                            \
        for (int k = 0; k < 8; k++) p[k] = _mm256_setzero_ps();                                 \
        for (int k = 0; k < (NV) - 1; k++)                                                      \
            p[k] = _mm256_mul_ps(LD(gr + 8 * k * (ES)), LD(yr + 8 * k * (ES)));                 \
        const int64_t c = 8 * ((NV) - 1);                                                       \
        if (rr * n + c + 8 <= E) {                                                              \
            p[(NV) - 1] = _mm256_and_ps(_mm256_mul_ps(LD(gr + c * (ES)), LD(yr + c * (ES))), keep_tl); \
        } else {                                                                                \
            _Alignas(32) char gb_[8 * (ES)], yb_[8 * (ES)];                                     \
            memset(gb_, 0, sizeof gb_);                                                         \
            memset(yb_, 0, sizeof yb_);                                                         \
            memcpy(gb_, gr + c * (ES), (size_t)(tl * (ES)));                                    \
            memcpy(yb_, yr + c * (ES), (size_t)(tl * (ES)));                                    \
            p[(NV) - 1] = _mm256_mul_ps(LD(gb_), LD(yb_));                                      \
        }                                                                                       \
        const __m256 lo = _mm256_add_ps(_mm256_add_ps(p[0], p[2]), _mm256_add_ps(p[4], p[6]));  \
        const __m256 hi = _mm256_add_ps(_mm256_add_ps(p[1], p[3]), _mm256_add_ps(p[5], p[7]));  \
        t[r] = _mm256_add_ps(lo, hi);                                                           \
    }

/* cnt (<= 8) outputs at flat element c through zero-padded stack copies. */
#define PA_SMSB_GPART_AVX2(ES, LD, ST, c, cnt)                                                    \
    do {                                                                                          \
        _Alignas(32) char gb_[8 * (ES)], yb_[8 * (ES)], ob_[8 * (ES)];                            \
        uint8_t mb_[8] = {0};                                                                     \
        memset(gb_, 0, sizeof gb_);                                                               \
        memset(yb_, 0, sizeof yb_);                                                               \
        memcpy(gb_, g + (c) * (ES), (size_t)((cnt) * (ES)));                                      \
        memcpy(yb_, y + (c) * (ES), (size_t)((cnt) * (ES)));                                      \
        memcpy(mb_, m + (c), (size_t)(cnt));                                                      \
        ST(ob_, out_vec(LD(gb_), LD(yb_), sums_at(S, (c), inv_n), sc, keep_lanes(mb_)));         \
        memcpy(o + (c) * (ES), ob_, (size_t)((cnt) * (ES)));                                     \
    } while (0)

#define PA_SMSB_GROUP_AVX2(NAME, ES, LD, ST, STNT)                                               \
    static void NAME(const void *gv, const void *yv, const uint8_t *m, void *ov, int64_t n,      \
                     int64_t rows, float scale, bool nt) {                                      \
        const char *g = (const char *)gv, *y = (const char *)yv;                                \
        char *o = (char *)ov;                                                                   \
        const int64_t E = rows * n;                                                             \
        const int nv = (int)((n + 7) / 8);                                                      \
        const int64_t tl = n - 8 * (nv - 1);                                                    \
        const __m256 keep_tl = _mm256_castsi256_ps(                                             \
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)tl), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))); \
        __m256 t[8];                                                                            \
        switch (nv) {                                                                           \
        case 1: PA_SMSB_T8_ROWS_AVX2(ES, LD, 1) break;                                          \
        case 2: PA_SMSB_T8_ROWS_AVX2(ES, LD, 2) break;                                          \
        case 3: PA_SMSB_T8_ROWS_AVX2(ES, LD, 3) break;                                          \
        case 4: PA_SMSB_T8_ROWS_AVX2(ES, LD, 4) break;                                          \
        case 5: PA_SMSB_T8_ROWS_AVX2(ES, LD, 5) break;                                          \
        case 6: PA_SMSB_T8_ROWS_AVX2(ES, LD, 6) break;                                          \
        case 7: PA_SMSB_T8_ROWS_AVX2(ES, LD, 7) break;                                          \
        default: PA_SMSB_T8_ROWS_AVX2(ES, LD, 8) break;                                         \
        }                                                                                       \
        const __m256 S = hsum8(t);                                                              \
        const __m256 sc = _mm256_set1_ps(scale);                                                \
        const __m256 inv_n = _mm256_set1_ps(1.0f / (float)n);                                   \
        int64_t i = 0, head = 0;                                                                \
        const bool stream = nt && (uintptr_t)o % (ES) == 0;                                     \
        if (stream) {                                                                           \
            head = (int64_t)(((64 - ((uintptr_t)o & 63)) & 63) / (ES));                         \
            if (head > E) head = E;                                                             \
        }                                                                                       \
        for (; i < head; i += 8) PA_SMSB_GPART_AVX2(ES, LD, ST, i, (head - i < 8 ? head - i : 8)); \
        i = head;                                                                               \
        __m256 x = elem_pos(i); /* exact: steps of 8 and 16 stay integers + 0.5 */                \
        for (; i + 16 <= E; i += 16) {                                                          \
            /* the next group, which (in place) follows this one */                            \
            prefetch_at(g, (E + i) * (ES)), prefetch_at(y, (E + i) * (ES));                     \
            if ((i & 63) < 16) prefetch_at(m, E + i);                                           \
            const __m256 x8 = _mm256_add_ps(x, _mm256_set1_ps(8.0f));                           \
            const __m256 r0 = out_vec(LD(g + i * (ES)), LD(y + i * (ES)), sums_of(S, x, inv_n), sc, \
                                      keep_lanes(m + i));                                       \
            const __m256 r1 = out_vec(LD(g + (i + 8) * (ES)), LD(y + (i + 8) * (ES)),           \
                                      sums_of(S, x8, inv_n), sc, keep_lanes(m + i + 8));        \
            x = _mm256_add_ps(x, _mm256_set1_ps(16.0f));                                        \
            if (stream) STNT(o + i * (ES), r0), STNT(o + (i + 8) * (ES), r1);                   \
            else ST(o + i * (ES), r0), ST(o + (i + 8) * (ES), r1);                              \
        }                                                                                       \
        for (; i < E; i += 8) PA_SMSB_GPART_AVX2(ES, LD, ST, i, (E - i < 8 ? E - i : 8));       \
    }

PA_SMSB_GROUP_AVX2(group_f32, 4, ld_f32, st_f32, stnt_f32)
PA_SMSB_GROUP_AVX2(group_f16, 2, ld_f16, st_f16, stnt_f16)
PA_SMSB_GROUP_AVX2(group_bf16, 2, ld_bf16, st_bf16, stnt_bf16)

void pa_smsb_rows_f32_avx2(const pa_smsb_args *a, int64_t r0, int64_t r1) {
    if (a->dims[3] > 0 && a->dims[3] <= PA_SMSB_SHORT_MAX)
        pa_smsb_drive_short(a, r0, r1, 4, 8, group_f32, pa_smsb_rows_f32_scalar);
    else
        pa_smsb_drive(a, r0, r1, 4, row_f32, pa_smsb_rows_f32_scalar);
    if (a->stream_out) _mm_sfence(); /* order the streamed lines before the chunk counts as done */
}

void pa_smsb_rows_f16_avx2(const pa_smsb_args *a, int64_t r0, int64_t r1) {
    if (a->dims[3] > 0 && a->dims[3] <= PA_SMSB_SHORT_MAX)
        pa_smsb_drive_short(a, r0, r1, 2, 8, group_f16, pa_smsb_rows_f16_scalar);
    else
        pa_smsb_drive(a, r0, r1, 2, row_f16, pa_smsb_rows_f16_scalar);
    if (a->stream_out) _mm_sfence();
}

void pa_smsb_rows_bf16_avx2(const pa_smsb_args *a, int64_t r0, int64_t r1) {
    if (a->dims[3] > 0 && a->dims[3] <= PA_SMSB_SHORT_MAX)
        pa_smsb_drive_short(a, r0, r1, 2, 8, group_bf16, pa_smsb_rows_bf16_scalar);
    else
        pa_smsb_drive(a, r0, r1, 2, row_bf16, pa_smsb_rows_bf16_scalar);
    if (a->stream_out) _mm_sfence();
}
