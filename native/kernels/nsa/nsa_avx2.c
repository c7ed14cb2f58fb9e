/* NSA selected attention, AVX2 + FMA + F16C tier (see nsa.h). Bitwise equal to
 * the scalar oracle: every operation below has its scalar twin there.
 *
 * fp32 GEMM: micro-kernels of MR (<= 6) rows x 16 columns of C in registers (12
 * accumulators), one fused multiply-add chain per element. Per k, the 16 B
 * values of the row are loaded once and widened to two fp32 vectors (fp16:
 * vcvtph2ps; bf16: two unpacks with zero, hence the slot order of nsa_b_slot),
 * and each of the MR A elements is broadcast once.
 *
 * bf16 dot GEMM: the same tiles; per pair, both halves of each 32-bit word are
 * widened (the odd element is the word's high half, the even one shifted up)
 * and multiplied in vdpbf16ps's order, odd then even, under MXCSR DAZ + FTZ.
 * Tiles and prefetching: nsa_tiles.h. */
#include <immintrin.h>
#include <string.h>

#include "kernels/nsa/nsa.h"
#include "kernels/nsa/nsa_tiles.h"

#ifndef NSA_KC
#define NSA_KC 128
#endif

typedef void (*mk_fn)(const nsa_panel *pan, int64_t np, int64_t K, int64_t a_sm, int64_t a_sk, int64_t m0,
                      int64_t n0, int64_t ldb, float *c, int64_t ldc, int load);

/* the 16 B values of one row at column n0 (a multiple of 16), as two fp32 vectors */
NSA_INLINE void load_b(const int BT, const void *b, int64_t off, __m256 *lo, __m256 *hi) {
    if (BT == NSA_B_F32) {
        const float *p = (const float *)b + off;
        *lo = _mm256_loadu_ps(p);
        *hi = _mm256_loadu_ps(p + 8);
    } else if (BT == NSA_B_F16) {
        const uint16_t *p = (const uint16_t *)b + off;
        *lo = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
        *hi = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 8)));
    } else {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)((const uint16_t *)b + off));
        const __m256i z = _mm256_setzero_si256();
        *lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, x));
        *hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, x));
    }
}

NSA_INLINE void mk_body(const int BT, const int MR, const nsa_panel *pan, int64_t np, int64_t K, int64_t a_sm,
                        int64_t a_sk, int64_t m0, int64_t n0, int64_t ldb, float *c, int64_t ldc, int load) {
    __m256 acc[6][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
        acc[i][0] = load ? _mm256_loadu_ps(c + (m0 + i) * ldc + n0) : _mm256_setzero_ps();
        acc[i][1] = load ? _mm256_loadu_ps(c + (m0 + i) * ldc + n0 + 8) : _mm256_setzero_ps();
    }
    for (int64_t p = 0; p < np; p++) {
        const float *a = (const float *)pan[p].a + m0 * a_sm;
        const void *b = pan[p].b;
        int64_t off = n0;
        for (int64_t k = 0; k < K; k++) {
            __m256 b0, b1;
            load_b(BT, b, off, &b0, &b1);
#pragma GCC unroll 6
            for (int i = 0; i < MR; i++) {
                const __m256 av = _mm256_broadcast_ss(a + i * a_sm);
                acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
                acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
            }
            a += a_sk;
            off += ldb;
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
        _mm256_storeu_ps(c + (m0 + i) * ldc + n0, acc[i][0]);
        _mm256_storeu_ps(c + (m0 + i) * ldc + n0 + 8, acc[i][1]);
    }
}

/* instantiations: B type x A layout (row-major: a_sk == 1, column-major: a_sm == 1) x MR */
#define MK_DEF(BT, MR)                                                                                         \
    static void mk_rm_##BT##_##MR(const nsa_panel *pan, int64_t np, int64_t K, int64_t a_sm, int64_t a_sk,    \
                                  int64_t m0, int64_t n0, int64_t ldb, float *c, int64_t ldc, int load) {     \
        (void)a_sk;                                                                                            \
        mk_body(BT, MR, pan, np, K, a_sm, 1, m0, n0, ldb, c, ldc, load);                                       \
    }                                                                                                          \
    static void mk_cm_##BT##_##MR(const nsa_panel *pan, int64_t np, int64_t K, int64_t a_sm, int64_t a_sk,    \
                                  int64_t m0, int64_t n0, int64_t ldb, float *c, int64_t ldc, int load) {     \
        (void)a_sm;                                                                                            \
        mk_body(BT, MR, pan, np, K, 1, a_sk, m0, n0, ldb, c, ldc, load);                                       \
    }
#define MK_TYPE(BT) MK_DEF(BT, 1) MK_DEF(BT, 2) MK_DEF(BT, 3) MK_DEF(BT, 4) MK_DEF(BT, 5) MK_DEF(BT, 6)
MK_TYPE(0)
MK_TYPE(1)
MK_TYPE(2)
#define MK_ROW(L, BT) {mk_##L##_##BT##_1, mk_##L##_##BT##_2, mk_##L##_##BT##_3, mk_##L##_##BT##_4, mk_##L##_##BT##_5, mk_##L##_##BT##_6}

/* [btype][layout][MR-1] */
static const mk_fn mk_table[3][2][6] = {
    {MK_ROW(rm, 0), MK_ROW(cm, 0)},
    {MK_ROW(rm, 1), MK_ROW(cm, 1)},
    {MK_ROW(rm, 2), MK_ROW(cm, 2)},
};

typedef struct gemm_ctx {
    const nsa_gemm_args *g;
    const mk_fn *tab;
} gemm_ctx;

static void gemm_tile(const void *ctx, const nsa_panel *pan, int64_t np, int64_t m0, int64_t n0, int64_t mr,
                      int64_t nc, int load) {
    (void)nc;
    const gemm_ctx *x = ctx;
    const nsa_gemm_args *g = x->g;
    x->tab[mr - 1](pan, np, g->k, g->a_sm, g->a_sk, m0, n0, g->ldb, g->c, g->ldc, load);
}

void nsa_gemm_avx2(const nsa_gemm_args *g) {
    const int layout = nsa_gemm_front(g);
    if (layout < 0) return;
    if (g->btype < 0 || g->btype > 2) {
        nsa_gemm_scalar(g);
        return;
    }
    const int64_t M = g->m, N = g->n, K = g->k;
    const int64_t es = g->btype == NSA_B_F32 ? 4 : 2;
    const gemm_ctx x = {g, mk_table[g->btype][layout]};
    const nsa_tiling t = {.m = M, .n = N, .panels = g->panels, .npanels = g->npanels, .k = K, .kc = NSA_KC,
                          .mr = 6, .nr = 16,
                          .a_bytes = 4 * (layout == 0 ? (M - 1) * g->a_sm + K : (K - 1) * g->a_sk + M),
                          .b_bytes = es * ((K - 1) * g->ldb + N), .accumulate = g->accumulate, .pf = g->pf,
                          .pf_bytes = g->pf_bytes, .no_prefetch = g->no_prefetch};
    nsa_tile_loop(&t, gemm_tile, &x);
}

/* ---- the bf16 dot GEMM, emulated: MR (<= 4) rows x 16 columns ----
 * (8 accumulators: with both halves of a B pair widened, 6 rows would spill) */

NSA_INLINE __m256 odd_half(__m256i w) { return _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32((int)0xffff0000u))); }
NSA_INLINE __m256 even_half(__m256i w) { return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)); }

NSA_INLINE void dmk_body(const int MR, const nsa_panel *pan, int64_t np, int64_t kp, int64_t lda, int64_t m0,
                         int64_t n0, int64_t ldb, float *c, int64_t ldc, int load) {
    __m256 acc[4][2];
#pragma GCC unroll 4
    for (int i = 0; i < MR; i++) {
        acc[i][0] = load ? _mm256_loadu_ps(c + (m0 + i) * ldc + n0) : _mm256_setzero_ps();
        acc[i][1] = load ? _mm256_loadu_ps(c + (m0 + i) * ldc + n0 + 8) : _mm256_setzero_ps();
    }
    for (int64_t p = 0; p < np; p++) {
        const uint16_t *a = (const uint16_t *)pan[p].a + m0 * lda;
        const uint32_t *b = (const uint32_t *)pan[p].b + n0;
        for (int64_t j = 0; j < kp; j++) {
            const __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)b);
            const __m256i w1 = _mm256_loadu_si256((const __m256i *)(const void *)(b + 8));
            const __m256 b0o = odd_half(w0), b0e = even_half(w0), b1o = odd_half(w1), b1e = even_half(w1);
#pragma GCC unroll 4
            for (int i = 0; i < MR; i++) {
                int32_t pair;
                memcpy(&pair, a + i * lda + 2 * j, 4);
                const __m256i aw = _mm256_set1_epi32(pair);
                const __m256 ao = odd_half(aw), ae = even_half(aw);
                acc[i][0] = _mm256_fmadd_ps(ae, b0e, _mm256_fmadd_ps(ao, b0o, acc[i][0]));
                acc[i][1] = _mm256_fmadd_ps(ae, b1e, _mm256_fmadd_ps(ao, b1o, acc[i][1]));
            }
            b += ldb;
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR; i++) {
        _mm256_storeu_ps(c + (m0 + i) * ldc + n0, acc[i][0]);
        _mm256_storeu_ps(c + (m0 + i) * ldc + n0 + 8, acc[i][1]);
    }
}

typedef void (*dmk_fn)(const nsa_panel *pan, int64_t np, int64_t kp, int64_t lda, int64_t m0, int64_t n0,
                       int64_t ldb, float *c, int64_t ldc, int load);
#define DMK_DEF(MR)                                                                                           \
    static void dmk_##MR(const nsa_panel *pan, int64_t np, int64_t kp, int64_t lda, int64_t m0, int64_t n0,  \
                         int64_t ldb, float *c, int64_t ldc, int load) {                                     \
        dmk_body(MR, pan, np, kp, lda, m0, n0, ldb, c, ldc, load);                                            \
    }
DMK_DEF(1)
DMK_DEF(2)
DMK_DEF(3)
DMK_DEF(4)
static const dmk_fn dmk_table[4] = {dmk_1, dmk_2, dmk_3, dmk_4};

static void dot_tile(const void *ctx, const nsa_panel *pan, int64_t np, int64_t m0, int64_t n0, int64_t mr,
                     int64_t nc, int load) {
    (void)nc;
    const nsa_dot_args *g = ctx;
    dmk_table[mr - 1](pan, np, g->kp, g->lda, m0, n0, g->ldb, g->c, g->ldc, load);
}

void nsa_dot_avx2(const nsa_dot_args *g) {
    if (nsa_dot_front(g) < 0) return;
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | NSA_MXCSR_DAZ_FTZ);
    const nsa_tiling t = {.m = g->m, .n = g->n, .panels = g->panels, .npanels = g->npanels, .k = g->kp,
                          .kc = NSA_KC, .mr = 4, .nr = 16, .a_bytes = 2 * ((g->m - 1) * g->lda + 2 * g->kp),
                          .b_bytes = 4 * ((g->kp - 1) * g->ldb + g->n), .accumulate = g->accumulate, .pf = g->pf,
                          .pf_bytes = g->pf_bytes, .no_prefetch = g->no_prefetch};
    nsa_tile_loop(&t, dot_tile, g);
    _mm_setcsr(csr);
}

/* ---- the precision rule (nsa_round_scalar, 8 lanes) ---- */

NSA_INLINE __m256 round16(__m256 x, int rnd) {
    if (rnd == NSA_ROUND_NONE) return x;
    const __m256i u = _mm256_castps_si256(x);
    const __m256i absmask = _mm256_set1_epi32(0x7fffffff);
    const __m256i a = _mm256_and_si256(u, absmask);
    const __m256i sgn = _mm256_andnot_si256(absmask, u);
    const __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000));
    __m256i r;
    if (rnd == NSA_ROUND_BF16) {
        r = _mm256_and_si256(_mm256_add_epi32(u, _mm256_set1_epi32(0x8000)), _mm256_set1_epi32((int)0xffff0000u));
    } else {
        /* normal range: round the magnitude bits, then overflow to inf */
        __m256i rn = _mm256_and_si256(_mm256_add_epi32(a, _mm256_set1_epi32(0x1000)), _mm256_set1_epi32(~0x1fff));
        rn = _mm256_blendv_epi8(rn, _mm256_set1_epi32(0x7f800000), _mm256_cmpgt_epi32(rn, _mm256_set1_epi32(0x477fe000)));
        /* subnormal range: multiples of 2^-24, ties away */
        const __m256 y = _mm256_mul_ps(_mm256_castsi256_ps(a), _mm256_set1_ps(16777216.0f));
        const __m256 t = _mm256_round_ps(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        const __m256 up = _mm256_and_ps(_mm256_cmp_ps(_mm256_sub_ps(y, t), _mm256_set1_ps(0.5f), _CMP_GE_OQ),
                                        _mm256_set1_ps(1.0f));
        const __m256 rs = _mm256_mul_ps(_mm256_add_ps(t, up), _mm256_set1_ps(5.9604644775390625e-8f));
        const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x38800000), a);
        r = _mm256_or_si256(sgn, _mm256_blendv_epi8(rn, _mm256_castps_si256(rs), small));
    }
    return _mm256_castsi256_ps(_mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc00000), nan));
}

/* ---- exp (exp_ref of nsa_scalar.c, 8 lanes) ---- */

NSA_INLINE __m256 exp256(__m256 x0) {
    const __m256 hi = _mm256_set1_ps(88.72283935546875f);
    const __m256 over = _mm256_cmp_ps(x0, hi, _CMP_GT_OQ);
    __m256 x = _mm256_min_ps(hi, x0);
    x = _mm256_max_ps(_mm256_set1_ps(-104.0f), x);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    const __m256 r2 = _mm256_mul_ps(r, r);
    p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* n in [-150, 128] (NaN lanes: garbage exponent, but p is NaN) */
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_blendv_ps(_mm256_mul_ps(_mm256_mul_ps(p, f1), f2), _mm256_set1_ps(__builtin_inff()), over);
}

/* lanes i < n of 8 (n clamped to [0, 8]) */
NSA_INLINE __m256i lanes_below(int64_t n) {
    const int v = (int)(n > 8 ? 8 : (n < 0 ? 0 : n));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(v), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* One vector of pgrad. Full vectors (rem >= 8: all 8 lanes inside the row) use
 * plain loads and stores (masked stores are slow on AMD cores); lanes at or beyond
 * vis are zeroed by vmask either way, so the bits are those of the masked form. */
NSA_INLINE void pgrad8(float *sp, float *dpds, int64_t rem, int64_t vis, __m256 vs, __m256 vm, __m256 vl,
                       __m256 vd, int rnd) {
    const __m256i vi = lanes_below(vis);
    const __m256 vmask = _mm256_castsi256_ps(vi);
    const int full = rem >= 8;
    const __m256 s = full ? _mm256_loadu_ps(sp) : _mm256_maskload_ps(sp, vi);
    const __m256 dp = full ? _mm256_loadu_ps(dpds) : _mm256_maskload_ps(dpds, vi);
    const __m256 x = _mm256_sub_ps(_mm256_mul_ps(vs, s), vm);
    const __m256 p = _mm256_div_ps(exp256(x), vl);
    const __m256 ds = _mm256_mul_ps(p, _mm256_sub_ps(dp, vd));
    const __m256 po = _mm256_and_ps(round16(p, rnd), vmask), dso = _mm256_and_ps(round16(ds, rnd), vmask);
    if (full) {
        _mm256_storeu_ps(sp, po);
        _mm256_storeu_ps(dpds, dso);
    } else {
        const __m256i io = lanes_below(rem);
        _mm256_maskstore_ps(sp, io, po);
        _mm256_maskstore_ps(dpds, io, dso);
    }
}

void nsa_pgrad_avx2(float *sp, float *dpds, int64_t n, int64_t nvis, float scale, float m, float l, float dsum,
                    int rnd) {
    if (nvis > n) nvis = n;
    if (nvis < 0) nvis = 0;
    if (l == 0.0f) nvis = 0;
    const __m256 vs = _mm256_set1_ps(scale), vm = _mm256_set1_ps(m), vl = _mm256_set1_ps(l);
    const __m256 vd = _mm256_set1_ps(dsum);
    int64_t c = 0;
    if (nvis == 0) { /* nothing visible: zeros */
        for (; c + 8 <= n; c += 8) {
            _mm256_storeu_ps(sp + c, _mm256_setzero_ps());
            _mm256_storeu_ps(dpds + c, _mm256_setzero_ps());
        }
    }
    for (; c < n; c += 8) pgrad8(sp + c, dpds + c, n - c, nvis - c, vs, vm, vl, vd, rnd);
}

/* ---- forward row operations: 16 lanes (two vectors), as the oracle ---- */

float nsa_rowmax_avx2(const float *s, int64_t n, float scale) {
    const __m256 vs = _mm256_set1_ps(scale);
    const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
    __m256 acc[2] = {ninf, ninf}, nan = _mm256_setzero_ps();
    for (int64_t c = 0; c < n; c += 16) {
        for (int h = 0; h < 2; h++) {
            const int64_t rem = n - c - 8 * h;
            if (rem <= 0) break;
            __m256 xs;
            if (rem >= 8) {
                xs = _mm256_mul_ps(vs, _mm256_loadu_ps(s + c + 8 * h));
            } else { /* lanes beyond n: -inf */
                const __m256i io = lanes_below(rem);
                xs = _mm256_blendv_ps(ninf, _mm256_mul_ps(vs, _mm256_maskload_ps(s + c + 8 * h, io)),
                                      _mm256_castsi256_ps(io));
            }
            nan = _mm256_or_ps(nan, _mm256_cmp_ps(xs, xs, _CMP_UNORD_Q));
            acc[h] = _mm256_max_ps(xs, acc[h]); /* x > acc ? x : acc */
        }
    }
    if (_mm256_movemask_ps(nan) != 0) return __builtin_nanf("");
    float v[16];
    _mm256_storeu_ps(v, acc[0]);
    _mm256_storeu_ps(v + 8, acc[1]);
    float m = v[0];
    for (int j = 1; j < 16; j++) m = v[j] > m ? v[j] : m;
    return m;
}

float nsa_expsum_avx2(float *s, int64_t n, float scale, float m) {
    const __m256 vs = _mm256_set1_ps(scale), vm = _mm256_set1_ps(m);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) { /* full vectors: plain loads and stores */
        for (int h = 0; h < 2; h++) {
            float *p = s + c + 8 * h;
            const __m256 e = exp256(_mm256_sub_ps(_mm256_mul_ps(vs, _mm256_loadu_ps(p)), vm));
            _mm256_storeu_ps(p, e);
            acc[h] = _mm256_add_ps(acc[h], e);
        }
    }
    for (; c < n; c += 16) {
        for (int h = 0; h < 2; h++) {
            const __m256i io = lanes_below(n - c - 8 * h);
            float *p = s + c + 8 * h;
            const __m256 x = _mm256_sub_ps(_mm256_mul_ps(vs, _mm256_maskload_ps(p, io)), vm);
            const __m256 e = _mm256_and_ps(exp256(x), _mm256_castsi256_ps(io));
            _mm256_maskstore_ps(p, io, e);
            acc[h] = _mm256_add_ps(acc[h], e);
        }
    }
    /* the oracle's tree: lanes j + 8, then j + 4, j + 2, j + 1 */
    const __m256 v = _mm256_add_ps(acc[0], acc[1]);
    const __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

void nsa_normround_avx2(float *x, int64_t n, float l, int rnd) {
    const __m256 vl = _mm256_set1_ps(l);
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) _mm256_storeu_ps(x + c, round16(_mm256_div_ps(_mm256_loadu_ps(x + c), vl), rnd));
    if (c < n) {
        const __m256i io = lanes_below(n - c);
        const __m256 v = _mm256_div_ps(_mm256_maskload_ps(x + c, io), vl);
        _mm256_maskstore_ps(x + c, io, round16(v, rnd));
    }
}

/* ---- bf16 outputs ---- */

/* bf16 bits of 16 rounded values (lo: columns 0..7, hi: 8..15), in column order */
NSA_INLINE __m256i bf16_pack(__m256 lo, __m256 hi) {
    const __m256i w = _mm256_packus_epi32(_mm256_srli_epi32(_mm256_castps_si256(lo), 16),
                                          _mm256_srli_epi32(_mm256_castps_si256(hi), 16));
    return _mm256_permute4x64_epi64(w, 0xD8);
}

/* words (bf16 of a, bf16 of b): a in the low half */
NSA_INLINE __m256i bf16_pairs(__m256 a, __m256 b) {
    return _mm256_or_si256(_mm256_srli_epi32(_mm256_castps_si256(a), 16),
                           _mm256_and_si256(_mm256_castps_si256(b), _mm256_set1_epi32((int)0xffff0000u)));
}

/* P and dS of one row, 8 columns from c (all inside the row), rounded to bf16;
 * zeros at and beyond vis (vis <= 0: the whole vector) */
NSA_INLINE void pgrad_bf16_8(const float *s, const float *dp, int64_t vis, __m256 vs, __m256 vm, __m256 vl,
                             __m256 vd, __m256 *po, __m256 *dso) {
    if (vis <= 0) {
        *po = _mm256_setzero_ps();
        *dso = _mm256_setzero_ps();
        return;
    }
    const __m256 vmask = _mm256_castsi256_ps(lanes_below(vis));
    const __m256 x = _mm256_sub_ps(_mm256_mul_ps(vs, _mm256_loadu_ps(s)), vm);
    const __m256 p = _mm256_div_ps(exp256(x), vl);
    const __m256 ds = _mm256_mul_ps(p, _mm256_sub_ps(_mm256_loadu_ps(dp), vd));
    *po = _mm256_and_ps(round16(p, NSA_ROUND_BF16), vmask);
    *dso = _mm256_and_ps(round16(ds, NSA_ROUND_BF16), vmask);
}

void nsa_pgrad2_avx2(const nsa_pgrad2_args *g) {
    const int64_t n = g->n;
    int64_t vis[2];
    __m256 vm[2], vl[2], vd[2];
    const __m256 vs = _mm256_set1_ps(g->scale);
    for (int r = 0; r < 2; r++) {
        vis[r] = g->s[r] == NULL || g->l[r] == 0.0f ? 0 : (g->nvis > n ? n : g->nvis);
        vm[r] = _mm256_set1_ps(g->m[r]);
        vl[r] = _mm256_set1_ps(g->l[r]);
        vd[r] = _mm256_set1_ps(g->dsum[r]);
    }
    for (int64_t c = 0; c < n; c += 16) {
        __m256 p[2][2], ds[2][2]; /* [row][half] */
        for (int r = 0; r < 2; r++) {
            for (int h = 0; h < 2; h++) {
                const int64_t c8 = c + 8 * h;
                pgrad_bf16_8(g->s[r] + c8, g->dp[r] + c8, vis[r] - c8, vs, vm[r], vl[r], vd[r], &p[r][h],
                             &ds[r][h]);
            }
        }
        _mm256_storeu_si256((__m256i *)(void *)(g->ds16[0] + c), bf16_pack(ds[0][0], ds[0][1]));
        if (g->s[1] != NULL) _mm256_storeu_si256((__m256i *)(void *)(g->ds16[1] + c), bf16_pack(ds[1][0], ds[1][1]));
        for (int h = 0; h < 2; h++) {
            _mm256_storeu_si256((__m256i *)(void *)(g->p2 + c + 8 * h), bf16_pairs(p[0][h], p[1][h]));
            _mm256_storeu_si256((__m256i *)(void *)(g->ds2 + c + 8 * h), bf16_pairs(ds[0][h], ds[1][h]));
        }
    }
}

void nsa_normbf16_avx2(const float *x, uint16_t *out, int64_t n, int64_t npad, float l) {
    const __m256 vl = _mm256_set1_ps(l);
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m256 lo = round16(_mm256_div_ps(_mm256_loadu_ps(x + c), vl), NSA_ROUND_BF16);
        const __m256 hi = round16(_mm256_div_ps(_mm256_loadu_ps(x + c + 8), vl), NSA_ROUND_BF16);
        _mm256_storeu_si256((__m256i *)(void *)(out + c), bf16_pack(lo, hi));
    }
    nsa_normbf16_scalar(x + c, out + c, n - c, npad - c, l); /* the same operations */
}
