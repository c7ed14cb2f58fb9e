/* Scaled masked softmax backward, AVX2 + FMA + F16C (FMA is deliberately not
 * used: every op is rounded on its own). Two passes per row: the row sum in the
 * vendor's order (softmax_grad.h: 64 columns per step, whose 8 block sums
 * come out of an in-register pairwise tree), then the output pass, which
 * prefetches the next row. Large outputs are streamed (non-temporal stores).
 * Heads / tails go through small zero-padded stack buffers. Rows up to 64
 * columns go in groups of 8 rows: one sum tree for the group and one flat
 * output stream (see "short rows" below); same bits. */
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

/* Lane k: ((x0+x1)+(x2+x3))+((x4+x5)+(x6+x7)) over the 8 lanes x of v[k]
 * (_mm256_hadd_ps adds adjacent lanes: exactly the tree's pairs). */
static inline __m256 tree8x8(const __m256 v[8]) {
    const __m256 q0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const __m256 q1 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
    /* q0: lanes 0-3 = (x0..x3) of v[0..3], lanes 4-7 = (x4..x7) of v[0..3]; q1 likewise for v[4..7] */
    return _mm256_add_ps(_mm256_permute2f128_ps(q0, q1, 0x20), _mm256_permute2f128_ps(q0, q1, 0x31));
}
/* The same when v[4..7] are all +0.0 (their lanes come out +0.0). */
static inline __m256 tree8x8_lo4(const __m256 v[8]) {
    const __m256 q0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const __m256 z = _mm256_setzero_ps();
    return _mm256_add_ps(_mm256_permute2f128_ps(q0, z, 0x20), _mm256_permute2f128_ps(q0, z, 0x31));
}

static inline float tree8_of(__m256 a) {
    _Alignas(32) float t[8];
    _mm256_store_ps(t, a);
    return pa_smsb_tree8(t);
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

/* The 64 products of columns c .. c+63 (8 per vector). */
#define PA_SMSB_PROD64_AVX2(p, ES, LD, gp, yp, c)                                                 \
    for (int k_ = 0; k_ < 8; k_++)                                                              \
        p[k_] = _mm256_mul_ps(LD((gp) + ((c) + 8 * k_) * (ES)), LD((yp) + ((c) + 8 * k_) * (ES)))

/* The row sum in the vendor's order. Per step of 64 columns, tree8x8 gives the
 * 8 block sums; rows up to PA_SMSB_ACC8_MAX add them to 8 accumulators (the
 * last step zero-padded), longer rows fold them, 8 steps at a time, to chunk
 * sums (tree8x8 again) and finish with pa_smsb_pairwise, like a last short
 * chunk. */
#define PA_SMSB_ROW_SUM_AVX2(NAME, ES, LD)                                                        \
    static float NAME(const char *g, const char *y, int64_t n) {                                \
        const bool acc8 = n <= PA_SMSB_ACC8_MAX;                                                \
        __m256 acc = _mm256_set1_ps(-0.0f); /* -0.0 + b == b: the first step starts it */      \
        __m256 p[8], bs[8];                                                                     \
        float csum[PA_SMSB_CHUNKS_BUF];                                                         \
        int nb = 0;                                                                             \
        int64_t nc = 0, i = 0;                                                                  \
        for (; i + 64 <= n; i += 64) {                                                          \
            PA_SMSB_PROD64_AVX2(p, ES, LD, g, y, i);                                            \
            const __m256 b = tree8x8(p);                                                        \
            if (acc8) {                                                                         \
                acc = _mm256_add_ps(acc, b);                                                    \
            } else {                                                                            \
                bs[nb++] = b;                                                                   \
                if (nb == 8) {                                                                  \
                    _mm256_storeu_ps(csum + nc, tree8x8(bs));                                   \
                    nc += 8, nb = 0;                                                            \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
        if (i < n) { /* the last, partial chunk: products of zero-padded copies */              \
            _Alignas(32) char gb[64 * (ES)], yb[64 * (ES)];                                     \
            memset(gb, 0, sizeof gb);                                                           \
            memset(yb, 0, sizeof yb);                                                           \
            memcpy(gb, g + i * (ES), (size_t)((n - i) * (ES)));                                 \
            memcpy(yb, y + i * (ES), (size_t)((n - i) * (ES)));                                 \
            PA_SMSB_PROD64_AVX2(p, ES, LD, gb, yb, 0);                                          \
            if (acc8) {                                                                         \
                acc = _mm256_add_ps(acc, tree8x8(p));                                           \
            } else {                                                                            \
                _Alignas(32) float x[64];                                                       \
                for (int k = 0; k < 8; k++) _mm256_store_ps(x + 8 * k, p[k]);                    \
                if (nb > 0) {                                                                   \
                    for (int k = nb; k < 8; k++) bs[k] = _mm256_setzero_ps();                   \
                    _mm256_storeu_ps(csum + nc, tree8x8(bs));                                   \
                    nc += nb, nb = 0;                                                           \
                }                                                                               \
                csum[nc++] = pa_smsb_pairwise(x, n - i);                                        \
            }                                                                                   \
        }                                                                                       \
        if (acc8) return tree8_of(acc);                                                         \
        if (nb > 0) {                                                                           \
            for (int k = nb; k < 8; k++) bs[k] = _mm256_setzero_ps();                           \
            _mm256_storeu_ps(csum + nc, tree8x8(bs));                                           \
            nc += nb;                                                                           \
        }                                                                                       \
        return pa_smsb_pairwise(csum, nc);                                                      \
    }

PA_SMSB_ROW_SUM_AVX2(row_sum_f32, 4, ld_f32)
PA_SMSB_ROW_SUM_AVX2(row_sum_f16, 2, ld_f16)
PA_SMSB_ROW_SUM_AVX2(row_sum_bf16, 2, ld_bf16)

/* Row kernel: pass 1 (the row sum), then pass 2 (outputs) while prefetching the
 * next row. With nt, pass 2 peels to a 64-byte boundary and streams full lines. */
#define PA_SMSB_ROW_AVX2(NAME, SUM, ES, LD, ST, STNT)                                            \
    static void NAME(const void *gv, const void *yv, const uint8_t *m, void *ov, int64_t n,      \
                     float scale, const void *gnv, const void *ynv, int64_t far, bool far_m,     \
                     bool nt) {                                                                 \
        const char *g = (const char *)gv, *y = (const char *)yv;                                \
        const char *gn = (const char *)gnv, *yn = (const char *)ynv;                            \
        char *o = (char *)ov;                                                                   \
        const __m256 s = _mm256_set1_ps(SUM(g, y, n));                                          \
        const __m256 sc = _mm256_set1_ps(scale);                                                \
        int64_t i = 0, head = 0;                                                                \
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

PA_SMSB_ROW_AVX2(row_f32, row_sum_f32, 4, ld_f32, st_f32, stnt_f32)
PA_SMSB_ROW_AVX2(row_f16, row_sum_f16, 2, ld_f16, st_f16, stnt_f16)
PA_SMSB_ROW_AVX2(row_bf16, row_sum_bf16, 2, ld_bf16, st_bf16, stnt_bf16)

/* ---- short rows: groups of 8 rows (see pa_smsb_drive_short) ----
 *
 * Pass 1: a row of n <= 64 columns is one zero-padded chunk, so its sum is the
 * pairwise tree of its 64 (padded) products: tree8x8 of its 8 vectors gives its
 * block sums, and tree8x8 of the 8 rows' block-sum vectors gives the 8 row
 * sums at once, row r in lane r. Pass 2 writes the group's outputs as one flat
 * stream, each lane fetching its row's sum. */

/* The sums of the rows of elements e .. e+7, from x = e + l + 0.5 (lane l):
 * row = floor(x / n), exact in fp32 here (x < 2^10, n <= 64; see the AVX-512 file). */
static inline __m256 elem_pos(int64_t e) {
    return _mm256_add_ps(_mm256_set1_ps((float)e), _mm256_setr_ps(0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f));
}
static inline __m256 sums_of(__m256 S, __m256 x, __m256 inv_n) {
    return _mm256_permutevar8x32_ps(S, _mm256_cvttps_epi32(_mm256_mul_ps(x, inv_n)));
}
static inline __m256 sums_at(__m256 S, int64_t e, __m256 inv_n) { return sums_of(S, elem_pos(e), inv_n); }

/* Pass 1 for the 8 rows with NV vectors per row (the last holds tl elements):
 * t[r] = the block sums of row r.
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
        t[r] = (NV) <= 4 ? tree8x8_lo4(p) : tree8x8(p);                                         \
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
        const __m256 S = tree8x8(t);                                                            \
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
