/* Scaled masked softmax backward, AVX-512 (F/BW/VL/DQ, + BF16 when present).
 *
 * Two passes per row. Pass 1: the row sum in the vendor's order (softmax_grad.h),
 * 128 columns per step, whose 16 block sums come out of an in-register pairwise
 * tree (shuffles, no extra pass over memory). Pass 2: the outputs, while the
 * row (<= 4096 columns) is still in L1/L2; it also prefetches the next row so
 * memory stays busy. Large outputs are written with non-temporal stores (no
 * read-for-ownership). Heads / tails use masked loads and stores.
 * Short rows (and rows up to 256 columns that are not whole cache lines) go in
 * groups of up to 16 rows instead: one sum tree for the whole group and one
 * flat output stream (see "short rows" below); same bits.
 * (Keeping p and y as fp32 from pass 1 to spare pass 2 the fp16 widening was
 * tried: faster in cache, slower once memory-bound, so not done.) */
#include "kernels/softmax_grad/softmax_grad_impl.h"

#include <immintrin.h>

#include "kernels/common/simd_avx512.h"

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

/* ---- the vendor's pairwise trees, in registers ---- */

/* Per 128-bit lane: a0+a1, a2+a3, b0+b1, b2+b3 (adjacent pairs, like hadd). */
static inline __m512 hadd512(__m512 a, __m512 b) {
    return _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}
/* Lane j: ((x0+x1)+(x2+x3))+((x4+x5)+(x6+x7)) over the 8 floats x = group j of
 * the 128 floats v[0..7] (group j = lanes 8(j%2) .. 8(j%2)+7 of v[j/2]).
 * q0 / q1 hold the 4-float sums, 128-bit lane c = quarter c of v[0..3] / v[4..7];
 * the last level adds quarters 0+1 and 2+3, then one permute puts the groups in order. */
static inline __m512 tree8x16_q(__m512 q0, __m512 q1) {
    const __m512 r = _mm512_add_ps(_mm512_shuffle_f32x4(q0, q1, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(q0, q1, _MM_SHUFFLE(3, 1, 3, 1)));
    /* r holds groups 0 2 4 6 1 3 5 7 8 10 12 14 9 11 13 15 */
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15), r);
}
static inline __m512 tree8x16(const __m512 v[8]) {
    return tree8x16_q(hadd512(hadd512(v[0], v[1]), hadd512(v[2], v[3])),
                      hadd512(hadd512(v[4], v[5]), hadd512(v[6], v[7])));
}
/* tree8x16 without the final permute: groups 0 2 4 6 1 3 5 7 8 10 12 14 9 11 13 15. */
static inline __m512 tree8x16_raw(const __m512 v[8]) {
    const __m512 q0 = hadd512(hadd512(v[0], v[1]), hadd512(v[2], v[3]));
    const __m512 q1 = hadd512(hadd512(v[4], v[5]), hadd512(v[6], v[7]));
    return _mm512_add_ps(_mm512_shuffle_f32x4(q0, q1, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(q0, q1, _MM_SHUFFLE(3, 1, 3, 1)));
}
static inline float tree8_of(__m256 a) {
    _Alignas(32) float t[8];
    _mm256_store_ps(t, a);
    return pa_smsb_tree8(t);
}

/* One output vector: masked ? +0 : ((g*y - s*y) * sc), each op rounded.
 * vfixupimmps does the rest in one instruction: lanes outside ~masked become +0,
 * and a NaN (quiet or signalling) becomes the default NaN 0xffc00000, so no bit
 * depends on which operand's payload the hardware propagated. */
static inline __m512 out_vec_p(__m512 p, __m512 y, __m512 s, __m512 sc, __mmask16 masked) {
    const __m512 t = _mm512_mul_ps(s, y);
    const __m512 d = _mm512_sub_ps(p, t);
    const __m512 v = _mm512_mul_ps(d, sc);
    /* token per input class (nibble j = class j): QNaN, SNaN -> 3 (default NaN), others -> 0 (keep) */
    return _mm512_maskz_fixupimm_ps((__mmask16)~masked, v, v, _mm512_set1_epi32(0x33), 0);
}
static inline __m512 out_vec(__m512 g, __m512 y, __m512 s, __m512 sc, __mmask16 masked) {
    return out_vec_p(_mm512_mul_ps(g, y), y, s, sc, masked);
}

static inline void prefetch(const char *p) { _mm_prefetch(p, _MM_HINT_T0); }
/* Prefetches p + off, which may lie past the end of p's array (a prefetch never
 * faults; the address is formed as an integer, so no out-of-range pointer exists). */
static inline void prefetch_at(const void *p, int64_t off) {
    _mm_prefetch((const char *)((uintptr_t)p + (uintptr_t)off), _MM_HINT_T0);
}
static inline void prefetch_l2_at(const void *p, int64_t off) {
    _mm_prefetch((const char *)((uintptr_t)p + (uintptr_t)off), _MM_HINT_T1);
}

/* The 128 products of columns c .. c+127 (16 per vector), those at or past
 * column n +0.0. */
#define PA_SMSB_PROD128(p, ES, LDM, gp, yp, c, n)                                                  \
    for (int k_ = 0; k_ < 8; k_++) {                                                            \
        const __mmask16 km_ = tail_mask((n) - (c) - 16 * k_);                                   \
        p[k_] = _mm512_mul_ps(LDM((gp) + ((c) + 16 * k_) * (ES), km_), LDM((yp) + ((c) + 16 * k_) * (ES), km_)); \
    }

/* The row sums in the vendor's order, per input dtype.
 * acc8_*: the 8 accumulators of a row of n <= PA_SMSB_ACC8_MAX columns (the
 * rest of the last 64-column chunk reads as +0.0): per step of 128 columns,
 * tree8x16 gives the 16 block sums, added to them 8 at a time.
 * row_sum_*: the sum; a longer row folds its block sums, 8 steps at a time,
 * to chunk sums (tree8x16 again) and finishes with pa_smsb_pairwise, like its
 * last short chunk. */
#define PA_SMSB_SUMS_AVX512(SUF, ES, LD, LDM)                                                     \
    static inline __m256 acc8_##SUF(const char *g, const char *y, int64_t n, float *pb) {       \
        /* lanes: acc[0 2 4 6 1 3 5 7] (tree8x16_raw's order, the same in both halves) */       \
        __m256 acc = _mm256_set1_ps(-0.0f); /* -0.0 + b == b: the first step starts it */      \
        __m512 p[8];                                                                            \
        int64_t i = 0;                                                                          \
        for (; i + 128 <= n; i += 128) {                                                        \
            for (int k = 0; k < 8; k++)                                                         \
                p[k] = _mm512_mul_ps(LD(g + (i + 16 * k) * (ES)), LD(y + (i + 16 * k) * (ES))); \
            if (pb != NULL)                                                                     \
                for (int k = 0; k < 8; k++) _mm512_store_ps(pb + i + 16 * k, p[k]);             \
            const __m512 b = tree8x16_raw(p);                                                   \
            acc = _mm256_add_ps(acc, _mm512_castps512_ps256(b));                                \
            acc = _mm256_add_ps(acc, _mm512_extractf32x8_ps(b, 1));                             \
        }                                                                                       \
        if (i < n) {                                                                            \
            PA_SMSB_PROD128(p, ES, LDM, g, y, i, n);                                            \
            if (pb != NULL)                                                                     \
                for (int k = 0; k < 8; k++) _mm512_store_ps(pb + i + 16 * k, p[k]);             \
            const __m512 b = tree8x16_raw(p);                                                   \
            acc = _mm256_add_ps(acc, _mm512_castps512_ps256(b));                                \
            if (n - i > 64) acc = _mm256_add_ps(acc, _mm512_extractf32x8_ps(b, 1));             \
        }                                                                                       \
        return _mm256_permutevar8x32_ps(acc, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));        \
    }                                                                                           \
    static float row_sum_##SUF(const char *g, const char *y, int64_t n) {                       \
        if (n <= PA_SMSB_ACC8_MAX) return tree8_of(acc8_##SUF(g, y, n, NULL));                 \
        __m512 p[8], bs[8];                                                                     \
        float csum[PA_SMSB_CHUNKS_BUF];                                                         \
        int nb = 0;                                                                             \
        int64_t nc = 0, i = 0;                                                                  \
        for (; i + 128 <= n; i += 128) {                                                        \
            for (int k = 0; k < 8; k++)                                                         \
                p[k] = _mm512_mul_ps(LD(g + (i + 16 * k) * (ES)), LD(y + (i + 16 * k) * (ES))); \
            bs[nb++] = tree8x16(p);                                                             \
            if (nb == 8) {                                                                      \
                _mm512_storeu_ps(csum + nc, tree8x16(bs));                                      \
                nc += 16, nb = 0;                                                               \
            }                                                                                   \
        }                                                                                       \
        /* the rest: at most one full chunk, then at most one short one */                      \
        const int64_t full = (n - i) / 64, tail = (n - i) % 64;                                 \
        if (i < n) {                                                                            \
            PA_SMSB_PROD128(p, ES, LDM, g, y, i, n);                                            \
            if (full) bs[nb++] = tree8x16(p); /* its upper half goes unused */                  \
        }                                                                                       \
        if (nb > 0) {                                                                           \
            for (int k = nb; k < 8; k++) bs[k] = _mm512_setzero_ps();                           \
            _mm512_storeu_ps(csum + nc, tree8x16(bs));                                          \
            nc += 2 * nb - full;                                                                \
        }                                                                                       \
        if (tail) {                                                                             \
            float x[64];                                                                        \
            for (int k = 0; k < 4; k++) _mm512_storeu_ps(x + 16 * k, p[4 * full + k]);          \
            csum[nc++] = pa_smsb_pairwise(x, tail);                                             \
        }                                                                                       \
        return pa_smsb_pairwise(csum, nc);                                                      \
    }

PA_SMSB_SUMS_AVX512(f32, 4, ld_f32, ldm_f32)
PA_SMSB_SUMS_AVX512(f16, 2, ld_f16, ldm_f16)
PA_SMSB_SUMS_AVX512(bf16, 2, ld_bf16, ldm_bf16)

/* Row kernel: pass 1 (the row sum), then pass 2 (outputs) while prefetching the
 * next row. A 16-bit row of up to PA_SMSB_ACC8_MAX columns keeps its products
 * from pass 1 in an L1 buffer, so pass 2 reads p = g*y back instead of widening
 * g again (for fp32 it saves only a multiply: measured no faster once
 * memory-bound). With nt, pass 2 peels to a 64-byte boundary and streams full
 * lines. */
#define PA_SMSB_ROW_AVX512(NAME, SUF, ES, LD, LDM, ST2, ST2NT, STM)                              \
    static void NAME(const void *gv, const void *yv, const uint8_t *m, void *ov, int64_t n,      \
                     float scale, const void *gnv, const void *ynv, int64_t far, bool far_m,     \
                     bool nt) {                                                                 \
        const char *g = (const char *)gv, *y = (const char *)yv;                                \
        const char *gn = (const char *)gnv, *yn = (const char *)ynv;                            \
        char *o = (char *)ov;                                                                   \
        _Alignas(64) float pb[PA_SMSB_ACC8_MAX + 128];                                          \
        const bool keep = ES == 2 && n <= PA_SMSB_ACC8_MAX;                                     \
        const __m512 s = _mm512_set1_ps(keep ? tree8_of(acc8_##SUF(g, y, n, pb)) : row_sum_##SUF(g, y, n)); \
        const __m512 sc = _mm512_set1_ps(scale);                                                \
        int64_t i = 0, head = 0;                                                                \
        const bool stream = nt && (uintptr_t)o % ES == 0;                                       \
        if (stream) {                                                                           \
            head = (int64_t)(((64 - ((uintptr_t)o & 63)) & 63) / ES);                           \
            if (head > n) head = n;                                                             \
        }                                                                                       \
        for (; i < head; i += 16) {                                                             \
            const __mmask16 km = tail_mask(head - i);                                           \
            const __m512 yv_ = LDM(y + i * ES, km);                                             \
            const __m512 p_ = keep ? _mm512_maskz_loadu_ps(km, pb + i) : _mm512_mul_ps(LDM(g + i * ES, km), yv_); \
            STM(o + i * ES, km, out_vec_p(p_, yv_, s, sc, ldm_mask(m + i, km)));                \
        }                                                                                       \
        i = head;                                                                               \
        for (; i + 32 <= n; i += 32) {                                                          \
            if (gn != NULL) {                                                                   \
                prefetch(gn + i * ES), prefetch(yn + i * ES);                                   \
                if (ES == 4) prefetch(gn + i * ES + 64), prefetch(yn + i * ES + 64);            \
            }                                                                                   \
            if (far != 0) {                                                                     \
                prefetch_l2_at(g, (far + i) * ES), prefetch_l2_at(y, (far + i) * ES);           \
                if (ES == 4) prefetch_l2_at(g, (far + i) * ES + 64), prefetch_l2_at(y, (far + i) * ES + 64); \
                if (far_m && (i & 63) < 32) prefetch_l2_at(m, far + i);                         \
            }                                                                                   \
            const __m512 y0 = LD(y + i * ES), y1 = LD(y + (i + 16) * ES);                       \
            const __m512 p0 = keep ? _mm512_loadu_ps(pb + i) : _mm512_mul_ps(LD(g + i * ES), y0); \
            const __m512 p1 = keep ? _mm512_loadu_ps(pb + i + 16) : _mm512_mul_ps(LD(g + (i + 16) * ES), y1); \
            const __m512 r0 = out_vec_p(p0, y0, s, sc, ld_mask(m + i));                         \
            const __m512 r1 = out_vec_p(p1, y1, s, sc, ld_mask(m + i + 16));                    \
            if (stream) ST2NT(o + i * ES, r0, r1);                                              \
            else ST2(o + i * ES, r0, r1);                                                       \
        }                                                                                       \
        for (; i < n; i += 16) {                                                                \
            const __mmask16 km = tail_mask(n - i);                                              \
            const __m512 yv_ = LDM(y + i * ES, km);                                             \
            const __m512 p_ = keep ? _mm512_maskz_loadu_ps(km, pb + i) : _mm512_mul_ps(LDM(g + i * ES, km), yv_); \
            STM(o + i * ES, km, out_vec_p(p_, yv_, s, sc, ldm_mask(m + i, km)));                \
        }                                                                                       \
    }

PA_SMSB_ROW_AVX512(row_f32, f32, 4, ld_f32, ldm_f32, st2_f32, st2nt_f32, stm_f32)
PA_SMSB_ROW_AVX512(row_f16, f16, 2, ld_f16, ldm_f16, st2_f16, st2nt_f16, stm_f16)
PA_SMSB_ROW_AVX512(row_bf16, bf16, 2, ld_bf16, ldm_bf16, st2_bf16, st2nt_bf16, stm_bf16)
PA_SMSB_ROW_AVX512(row_bf16hw, bf16, 2, ld_bf16, ldm_bf16, st2_bf16hw, st2nt_bf16hw, stm_bf16)

/* ---- short rows: groups of up to 16 rows (see pa_smsb_drive_short) ----
 *
 * Pass 1: the group's row sums, row r in lane r of one vector S. A row of up to
 * 64 columns is one zero-padded chunk, its sum the pairwise tree of its 64
 * (padded) products: tree8x16 of several rows' vectors gives their block sums,
 * the rest of the tree runs for all 16 rows at once (the PA_SMSB_S_* below, by
 * row length). A longer row (<= 256 columns) gets its 8 accumulators like the
 * row kernel (acc8_*); tree8x16 of the group's accumulators gives the row sums.
 * Pass 2 writes the group's outputs as one flat stream: lane l of the vector
 * at flat element e belongs to row (e + l) / n, whose sum a permute fetches.
 * That stream has no per-row heads and tails, and while it is written the next
 * group (which follows in memory) is prefetched. */

/* The sums of the rows that the 16 elements e .. e+15 of the group belong to,
 * from x = e + l + 0.5 (lane l): row = floor(x / n), exact in fp32 here: x is
 * exact (< 2^11), and the two roundings move the quotient (< 17) by under
 * 2^-18, far less than its 0.5/n (n <= 256) distance to a row boundary. */
static inline __m512 elem_pos(int64_t e) {
    return _mm512_add_ps(_mm512_set1_ps((float)e),
                         _mm512_setr_ps(0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f, 8.5f, 9.5f, 10.5f,
                                        11.5f, 12.5f, 13.5f, 14.5f, 15.5f));
}
static inline __m512 sums_of(__m512 S, __m512 x, __m512 inv_n) {
    return _mm512_permutexvar_ps(_mm512_cvttps_epi32(_mm512_mul_ps(x, inv_n)), S);
}
static inline __m512 sums_at(__m512 S, int64_t e, __m512 inv_n) { return sums_of(S, elem_pos(e), inv_n); }

/* v[0..NV) = the products of row r of the group, NV vectors, the last one
 * holding the kt lanes. Rows past the group repeat its last row: their lanes of
 * S go unused. */
#define PA_SMSB_ROW_PRODS(v, ES, LD, LDM, NV, r)                                                  \
    do {                                                                                        \
        const int64_t off_ = ((r) < rows ? (r) : rows - 1) * n * (ES);                          \
        for (int k_ = 0; k_ < (NV) - 1; k_++)                                                   \
            (v)[k_] = _mm512_mul_ps(LD(g + off_ + 16 * k_ * (ES)), LD(y + off_ + 16 * k_ * (ES))); \
        (v)[(NV) - 1] = _mm512_mul_ps(LDM(g + off_ + 16 * ((NV) - 1) * (ES), kt),                \
                                      LDM(y + off_ + 16 * ((NV) - 1) * (ES), kt));               \
    } while (0)

/* S for rows of 1..16 columns: tree8x16 of 8 rows gives their block sums b0, b1
 * (lane j: row j/2, block j%2); blocks 2..7 are +0.0, so a row's sum is
 * (b0 + b1) + 0.0. */
#define PA_SMSB_S_NV1(ES, LD, LDM)                                                                \
    {                                                                                           \
        __m512 v[8], b[2];                                                                      \
        for (int h = 0; h < 2; h++) {                                                           \
            for (int q = 0; q < 8; q++) PA_SMSB_ROW_PRODS(v + q, ES, LD, LDM, 1, 8 * h + q);    \
            b[h] = tree8x16(v);                                                                 \
        }                                                                                       \
        /* lane 4c + j: row 2c + (j & 1) + 8 (j >> 1) */                                         \
        const __m512 s4 = _mm512_add_ps(hadd512(b[0], b[1]), _mm512_setzero_ps());             \
        S = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15), s4); \
    }

/* S for rows of 17..32 columns: tree8x16 of 4 rows gives their block sums
 * b0..b3 (lane j: row j/4, block j%4); blocks 4..7 are +0.0, so a row's sum is
 * ((b0 + b1) + (b2 + b3)) + 0.0. */
#define PA_SMSB_S_NV2(ES, LD, LDM)                                                                \
    {                                                                                           \
        __m512 v[8], b[4];                                                                      \
        for (int h = 0; h < 4; h++) {                                                           \
            for (int q = 0; q < 4; q++) PA_SMSB_ROW_PRODS(v + 2 * q, ES, LD, LDM, 2, 4 * h + q); \
            b[h] = tree8x16(v);                                                                 \
        }                                                                                       \
        /* lane 4c + j: row 4j + c */                                                           \
        const __m512 s4 = _mm512_add_ps(hadd512(hadd512(b[0], b[1]), hadd512(b[2], b[3])), _mm512_setzero_ps()); \
        S = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), s4); \
    }

/* S for rows of 33..64 columns: tree8x16 of 2 rows (4 vectors each, the 4th
 * +0.0 for NV = 3) gives their 8 block sums; tree8x16 of those, the row sums. */
#define PA_SMSB_S_PAIRS(ES, LD, LDM, NV)                                                          \
    {                                                                                           \
        __m512 v[8], t[8];                                                                      \
        v[3] = v[7] = _mm512_setzero_ps();                                                      \
        for (int h = 0; h < 8; h++) {                                                           \
            PA_SMSB_ROW_PRODS(v, ES, LD, LDM, NV, 2 * h);                                       \
            PA_SMSB_ROW_PRODS(v + 4, ES, LD, LDM, NV, 2 * h + 1);                               \
            t[h] = tree8x16(v);                                                                 \
        }                                                                                       \
        S = tree8x16(t);                                                                        \
    }

/* S for rows of 65..256 columns: the 8 accumulators of each row (two rows per
 * vector); tree8x16 of those, the row sums. */
#define PA_SMSB_S_LONG(SUF, ES)                                                                   \
    {                                                                                           \
        __m512 t[8];                                                                            \
        for (int k = 0; k < 8; k++) {                                                           \
            __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(); /* unused lanes of S */  \
            if (2 * k < rows) a0 = acc8_##SUF(g + 2 * k * n * (ES), y + 2 * k * n * (ES), n, NULL);   \
            if (2 * k + 1 < rows) a1 = acc8_##SUF(g + (2 * k + 1) * n * (ES), y + (2 * k + 1) * n * (ES), n, NULL); \
            t[k] = _mm512_insertf32x8(_mm512_castps256_ps512(a0), a1, 1);                       \
        }                                                                                       \
        S = tree8x16(t);                                                                        \
    }

#define PA_SMSB_GROUP_AVX512(NAME, SUF, ES, LD, LDM, ST2, ST2NT, STM)                            \
    static void NAME(const void *gv, const void *yv, const uint8_t *m, void *ov, int64_t n,      \
                     int64_t rows, float scale, bool nt) {                                      \
        const char *g = (const char *)gv, *y = (const char *)yv;                                \
        char *o = (char *)ov;                                                                   \
        const int nv = (int)((n + 15) / 16);                                                    \
        const __mmask16 kt = tail_mask(n - 16 * (nv - 1));                                      \
        __m512 S;                                                                               \
        switch (nv) {                                                                           \
        case 1: PA_SMSB_S_NV1(ES, LD, LDM) break;                                               \
        case 2: PA_SMSB_S_NV2(ES, LD, LDM) break;                                               \
        case 3: PA_SMSB_S_PAIRS(ES, LD, LDM, 3) break;                                          \
        case 4: PA_SMSB_S_PAIRS(ES, LD, LDM, 4) break;                                          \
        default: PA_SMSB_S_LONG(SUF, ES) break;                                                 \
        }                                                                                       \
        const __m512 sc = _mm512_set1_ps(scale);                                                \
        const __m512 inv_n = _mm512_set1_ps(1.0f / (float)n);                                   \
        const int64_t E = rows * n;                                                             \
        int64_t i = 0, head = 0;                                                                \
        const bool stream = nt && (uintptr_t)o % (ES) == 0;                                     \
        if (stream) {                                                                           \
            head = (int64_t)(((64 - ((uintptr_t)o & 63)) & 63) / (ES));                         \
            if (head > E) head = E;                                                             \
        }                                                                                       \
        for (; i < head; i += 16) {                                                             \
            const __mmask16 km = tail_mask(head - i);                                           \
            STM(o + i * (ES), km,                                                               \
                out_vec(LDM(g + i * (ES), km), LDM(y + i * (ES), km), sums_at(S, i, inv_n), sc, \
                        ldm_mask(m + i, km)));                                                  \
        }                                                                                       \
        i = head;                                                                               \
        __m512 x = elem_pos(i); /* exact: steps of 16 and 32 stay integers + 0.5 */              \
        for (; i + 32 <= E; i += 32) {                                                          \
            /* the next group, which (in place) follows this one */                            \
            prefetch_at(g, (E + i) * (ES)), prefetch_at(y, (E + i) * (ES));                     \
            if ((ES) == 4) prefetch_at(g, (E + i) * (ES) + 64), prefetch_at(y, (E + i) * (ES) + 64); \
            if ((i & 63) < 32) prefetch_at(m, E + i);                                           \
            const __m512 x16 = _mm512_add_ps(x, _mm512_set1_ps(16.0f));                         \
            const __m512 r0 = out_vec(LD(g + i * (ES)), LD(y + i * (ES)), sums_of(S, x, inv_n), sc, \
                                      ld_mask(m + i));                                          \
            const __m512 r1 = out_vec(LD(g + (i + 16) * (ES)), LD(y + (i + 16) * (ES)),         \
                                      sums_of(S, x16, inv_n), sc, ld_mask(m + i + 16));         \
            x = _mm512_add_ps(x, _mm512_set1_ps(32.0f));                                        \
            if (stream) ST2NT(o + i * (ES), r0, r1);                                            \
            else ST2(o + i * (ES), r0, r1);                                                     \
        }                                                                                       \
        for (; i < E; i += 16) {                                                                \
            const __mmask16 km = tail_mask(E - i);                                              \
            STM(o + i * (ES), km,                                                               \
                out_vec(LDM(g + i * (ES), km), LDM(y + i * (ES), km), sums_at(S, i, inv_n), sc, \
                        ldm_mask(m + i, km)));                                                  \
        }                                                                                       \
    }

/* Which rows go in groups: all short ones, and rows up to 256 columns whose
 * output rows do not fill whole cache lines (row by row, every row would then
 * start and end in a partial line, written with ordinary stores next to the
 * streamed ones; a group's output is one flat stream). Rows of whole lines
 * are a little faster row by row. */
static inline bool use_groups(int64_t n, int64_t esize) {
    return n > 0 && (n <= PA_SMSB_SHORT_MAX || (n <= 256 && n * esize % 64 != 0));
}
/* Rows per group: at most 1024 elements (16 rows up to 64 columns, then 8, then
 * 4), so a group stays in L1 between the two passes. */
static inline int64_t group_rows(int64_t n) { return n <= 64 ? 16 : n <= 128 ? 8 : 4; }

PA_SMSB_GROUP_AVX512(group_f32, f32, 4, ld_f32, ldm_f32, st2_f32, st2nt_f32, stm_f32)
PA_SMSB_GROUP_AVX512(group_f16, f16, 2, ld_f16, ldm_f16, st2_f16, st2nt_f16, stm_f16)
PA_SMSB_GROUP_AVX512(group_bf16, bf16, 2, ld_bf16, ldm_bf16, st2_bf16, st2nt_bf16, stm_bf16)
PA_SMSB_GROUP_AVX512(group_bf16hw, bf16, 2, ld_bf16, ldm_bf16, st2_bf16hw, st2nt_bf16hw, stm_bf16)

void pa_smsb_rows_f32_avx512(const pa_smsb_args *a, int64_t r0, int64_t r1) {
    if (use_groups(a->dims[3], 4))
        pa_smsb_drive_short(a, r0, r1, 4, group_rows(a->dims[3]), group_f32, pa_smsb_rows_f32_scalar);
    else
        pa_smsb_drive(a, r0, r1, 4, row_f32, pa_smsb_rows_f32_scalar);
    if (a->stream_out) _mm_sfence(); /* order the streamed lines before the chunk counts as done */
}

void pa_smsb_rows_f16_avx512(const pa_smsb_args *a, int64_t r0, int64_t r1) {
    if (use_groups(a->dims[3], 2))
        pa_smsb_drive_short(a, r0, r1, 2, group_rows(a->dims[3]), group_f16, pa_smsb_rows_f16_scalar);
    else
        pa_smsb_drive(a, r0, r1, 2, row_f16, pa_smsb_rows_f16_scalar);
    if (a->stream_out) _mm_sfence();
}

void pa_smsb_rows_bf16_avx512(const pa_smsb_args *a, int64_t r0, int64_t r1) {
    if (use_groups(a->dims[3], 2))
        pa_smsb_drive_short(a, r0, r1, 2, group_rows(a->dims[3]), group_bf16, pa_smsb_rows_bf16_scalar);
    else
        pa_smsb_drive(a, r0, r1, 2, row_bf16, pa_smsb_rows_bf16_scalar);
    if (a->stream_out) _mm_sfence();
}

void pa_smsb_rows_bf16_avx512bf16(const pa_smsb_args *a, int64_t r0, int64_t r1) {
    if (use_groups(a->dims[3], 2))
        pa_smsb_drive_short(a, r0, r1, 2, group_rows(a->dims[3]), group_bf16hw, pa_smsb_rows_bf16_scalar);
    else
        pa_smsb_drive(a, r0, r1, 2, row_bf16hw, pa_smsb_rows_bf16_scalar);
    if (a->stream_out) _mm_sfence();
}
