/* NSA selected attention, AVX-512 tiers (see nsa.h). Bitwise equal to the
 * scalar oracle: every operation below has its scalar twin there.
 *
 * bf16 dot GEMM: micro-kernels of MR (<= 8) rows x 32 (or 16) columns of C in
 * registers (16 zmm accumulators); per pair, one or two 64-byte loads of B
 * (16 pairs of columns each) and one 32-bit broadcast of each row's A pair.
 *   avx512bf16: one vdpbf16ps per row and vector: the chain of nsa.h itself;
 *   avx512:     the pair's odd and even halves widened and multiplied in that
 *               order with FMAs under MXCSR DAZ + FTZ (the same bits).
 * Row operations: the AVX2 tier's, on 16 lanes (one vector is exactly the 16
 * lanes, lane j = column mod 16, of the oracle's sums and maxima).
 * The fp32 GEMM of this tier is the AVX2 one (nsa_config.c). */
#include <immintrin.h>
#include <string.h>

#include "kernels/nsa/nsa.h"
#include "kernels/nsa/nsa_tiles.h"

#ifndef NSA_DOT_KC
#define NSA_DOT_KC 128 /* pairs per panel chunk: a 32-column B slice of 16 KB */
#endif

/* ---- the bf16 dot GEMM ---- */

/* acc += the pair chain of words aw (broadcast A pair) and w (B pairs) */
NSA_INLINE __m512 zdot_step(const int BF, __m512 acc, __m512i aw, __m512i w) {
    if (BF) return _mm512_dpbf16_ps(acc, (__m512bh)aw, (__m512bh)w);
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    const __m512 ao = _mm512_castsi512_ps(_mm512_and_si512(aw, hi)), ae = _mm512_castsi512_ps(_mm512_slli_epi32(aw, 16));
    const __m512 bo = _mm512_castsi512_ps(_mm512_and_si512(w, hi)), be = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    return _mm512_fmadd_ps(ae, be, _mm512_fmadd_ps(ao, bo, acc));
}

NSA_INLINE void zmk_body(const int BF, const int MR, const int NV, const nsa_panel *pan, int64_t np, int64_t kp,
                         int64_t lda, int64_t m0, int64_t n0, int64_t ldb, float *c, int64_t ldc, int load) {
    __m512 acc[8][2];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            acc[i][v] = load ? _mm512_loadu_ps(c + (m0 + i) * ldc + n0 + 16 * v) : _mm512_setzero_ps();
    }
    for (int64_t p = 0; p < np; p++) {
        const uint16_t *a = (const uint16_t *)pan[p].a + m0 * lda;
        const uint32_t *b = (const uint32_t *)pan[p].b + n0;
        for (int64_t j = 0; j < kp; j++) {
            __m512i w[2];
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) w[v] = _mm512_loadu_si512((const void *)(b + 16 * v));
#pragma GCC unroll 8
            for (int i = 0; i < MR; i++) {
                int32_t pair;
                memcpy(&pair, a + i * lda + 2 * j, 4);
                const __m512i aw = _mm512_set1_epi32(pair);
#pragma GCC unroll 2
                for (int v = 0; v < NV; v++) acc[i][v] = zdot_step(BF, acc[i][v], aw, w[v]);
            }
            b += ldb;
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) _mm512_storeu_ps(c + (m0 + i) * ldc + n0 + 16 * v, acc[i][v]);
    }
}

typedef void (*zmk_fn)(const nsa_panel *pan, int64_t np, int64_t kp, int64_t lda, int64_t m0, int64_t n0,
                       int64_t ldb, float *c, int64_t ldc, int load);
#define ZMK_DEF(BF, NV, MR)                                                                                   \
    static void zmk_##BF##_##NV##_##MR(const nsa_panel *pan, int64_t np, int64_t kp, int64_t lda, int64_t m0, \
                                       int64_t n0, int64_t ldb, float *c, int64_t ldc, int load) {           \
        zmk_body(BF, MR, NV, pan, np, kp, lda, m0, n0, ldb, c, ldc, load);                                    \
    }
#define ZMK_NV(BF, NV) \
    ZMK_DEF(BF, NV, 1) ZMK_DEF(BF, NV, 2) ZMK_DEF(BF, NV, 3) ZMK_DEF(BF, NV, 4) \
    ZMK_DEF(BF, NV, 5) ZMK_DEF(BF, NV, 6) ZMK_DEF(BF, NV, 7) ZMK_DEF(BF, NV, 8)
ZMK_NV(0, 1)
ZMK_NV(0, 2)
ZMK_NV(1, 1)
ZMK_NV(1, 2)
#define ZMK_ROW(BF, NV) \
    {zmk_##BF##_##NV##_1, zmk_##BF##_##NV##_2, zmk_##BF##_##NV##_3, zmk_##BF##_##NV##_4, \
     zmk_##BF##_##NV##_5, zmk_##BF##_##NV##_6, zmk_##BF##_##NV##_7, zmk_##BF##_##NV##_8}

/* [vdpbf16ps][NV-1][MR-1] */
static const zmk_fn zmk_table[2][2][8] = {
    {ZMK_ROW(0, 1), ZMK_ROW(0, 2)},
    {ZMK_ROW(1, 1), ZMK_ROW(1, 2)},
};

typedef struct zdot_ctx {
    const nsa_dot_args *g;
    const zmk_fn (*tab)[8];
} zdot_ctx;

static void zdot_tile(const void *ctx, const nsa_panel *pan, int64_t np, int64_t m0, int64_t n0, int64_t mr,
                     int64_t nc, int load) {
    const zdot_ctx *x = ctx;
    const nsa_dot_args *g = x->g;
    x->tab[nc / 16 - 1][mr - 1](pan, np, g->kp, g->lda, m0, n0, g->ldb, g->c, g->ldc, load);
}

static void zdot_run(const nsa_dot_args *g, int bf) {
    const zdot_ctx x = {g, zmk_table[bf]};
    const nsa_tiling t = {.m = g->m, .n = g->n, .panels = g->panels, .npanels = g->npanels, .k = g->kp,
                          .kc = NSA_DOT_KC, .mr = 8, .nr = 32, .a_bytes = 2 * ((g->m - 1) * g->lda + 2 * g->kp),
                          .b_bytes = 4 * ((g->kp - 1) * g->ldb + g->n), .accumulate = g->accumulate, .pf = g->pf,
                          .pf_bytes = g->pf_bytes, .no_prefetch = g->no_prefetch};
    nsa_tile_loop(&t, zdot_tile, &x);
}

void nsa_dot_avx512bf16(const nsa_dot_args *g) {
    if (nsa_dot_front(g) < 0) return;
    zdot_run(g, 1);
}

void nsa_dot_avx512(const nsa_dot_args *g) {
    if (nsa_dot_front(g) < 0) return;
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | NSA_MXCSR_DAZ_FTZ);
    zdot_run(g, 0);
    _mm_setcsr(csr);
}

/* ---- the precision rule (nsa_round_scalar, 16 lanes) ---- */

NSA_INLINE __m512 zround16(__m512 x, int rnd) {
    if (rnd == NSA_ROUND_NONE) return x;
    const __m512i u = _mm512_castps_si512(x);
    const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
    const __m512i a = _mm512_and_si512(u, absmask);
    const __m512i sgn = _mm512_andnot_si512(absmask, u);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x7f800000));
    __m512i r;
    if (rnd == NSA_ROUND_BF16) {
        r = _mm512_and_si512(_mm512_add_epi32(u, _mm512_set1_epi32(0x8000)), _mm512_set1_epi32((int)0xffff0000u));
    } else {
        /* normal range: round the magnitude bits, then overflow to inf */
        __m512i rn = _mm512_and_si512(_mm512_add_epi32(a, _mm512_set1_epi32(0x1000)), _mm512_set1_epi32(~0x1fff));
        rn = _mm512_mask_mov_epi32(rn, _mm512_cmpgt_epi32_mask(rn, _mm512_set1_epi32(0x477fe000)),
                                   _mm512_set1_epi32(0x7f800000));
        /* subnormal range: multiples of 2^-24, ties away */
        const __m512 y = _mm512_mul_ps(_mm512_castsi512_ps(a), _mm512_set1_ps(16777216.0f));
        const __m512 t = _mm512_roundscale_ps(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        const __m512 up = _mm512_maskz_mov_ps(
            _mm512_cmp_ps_mask(_mm512_sub_ps(y, t), _mm512_set1_ps(0.5f), _CMP_GE_OQ), _mm512_set1_ps(1.0f));
        const __m512 rs = _mm512_mul_ps(_mm512_add_ps(t, up), _mm512_set1_ps(5.9604644775390625e-8f));
        const __mmask16 small = _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(0x38800000), a);
        r = _mm512_or_si512(sgn, _mm512_mask_mov_epi32(rn, small, _mm512_castps_si512(rs)));
    }
    return _mm512_castsi512_ps(_mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0x7fc00000)));
}

/* ---- exp (exp_ref of nsa_scalar.c, 16 lanes) ---- */

NSA_INLINE __m512 exp512(__m512 x0) {
    const __m512 hi = _mm512_set1_ps(88.72283935546875f);
    const __mmask16 over = _mm512_cmp_ps_mask(x0, hi, _CMP_GT_OQ);
    __m512 x = _mm512_min_ps(hi, x0);
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 r2 = _mm512_mul_ps(r, r);
    p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    /* n in [-150, 128] (NaN lanes: garbage exponent, but p is NaN) */
    const __m512i ni = _mm512_cvtps_epi32(n);
    const __m512i n1 = _mm512_srai_epi32(ni, 1);
    const __m512i n2 = _mm512_sub_epi32(ni, n1);
    const __m512i bias = _mm512_set1_epi32(127);
    const __m512 f1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, bias), 23));
    const __m512 f2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, bias), 23));
    return _mm512_mask_mov_ps(_mm512_mul_ps(_mm512_mul_ps(p, f1), f2), over, _mm512_set1_ps(__builtin_inff()));
}

/* lanes i < n of 16 (n clamped to [0, 16]) */
NSA_INLINE __mmask16 zlanes_below(int64_t n) {
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1u);
}

/* ---- row operations ---- */

void nsa_pgrad_avx512(float *sp, float *dpds, int64_t n, int64_t nvis, float scale, float m, float l, float dsum,
                      int rnd) {
    if (nvis > n) nvis = n;
    if (nvis < 0) nvis = 0;
    if (l == 0.0f) nvis = 0;
    const __m512 vs = _mm512_set1_ps(scale), vm = _mm512_set1_ps(m), vl = _mm512_set1_ps(l);
    const __m512 vd = _mm512_set1_ps(dsum);
    for (int64_t c = 0; c < n; c += 16) {
        const __mmask16 io = zlanes_below(n - c), vi = zlanes_below(nvis - c);
        if (vi == 0) {
            _mm512_mask_storeu_ps(sp + c, io, _mm512_setzero_ps());
            _mm512_mask_storeu_ps(dpds + c, io, _mm512_setzero_ps());
            continue;
        }
        const __m512 s = _mm512_maskz_loadu_ps(vi, sp + c), dp = _mm512_maskz_loadu_ps(vi, dpds + c);
        const __m512 x = _mm512_sub_ps(_mm512_mul_ps(vs, s), vm);
        const __m512 p = _mm512_div_ps(exp512(x), vl);
        const __m512 ds = _mm512_mul_ps(p, _mm512_sub_ps(dp, vd));
        _mm512_mask_storeu_ps(sp + c, io, _mm512_maskz_mov_ps(vi, zround16(p, rnd)));
        _mm512_mask_storeu_ps(dpds + c, io, _mm512_maskz_mov_ps(vi, zround16(ds, rnd)));
    }
}

/* bf16 bits of 16 rounded values, in column order */
NSA_INLINE __m256i zbf16_pack(__m512 x) { return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(x), 16)); }

/* words (bf16 of a, bf16 of b): a in the low half */
NSA_INLINE __m512i zbf16_pairs(__m512 a, __m512 b) {
    return _mm512_or_si512(_mm512_srli_epi32(_mm512_castps_si512(a), 16),
                           _mm512_and_si512(_mm512_castps_si512(b), _mm512_set1_epi32((int)0xffff0000u)));
}

void nsa_pgrad2_avx512(const nsa_pgrad2_args *g) {
    const int64_t n = g->n;
    int64_t vis[2];
    __m512 vm[2], vl[2], vd[2];
    const __m512 vs = _mm512_set1_ps(g->scale);
    for (int r = 0; r < 2; r++) {
        vis[r] = g->s[r] == NULL || g->l[r] == 0.0f ? 0 : (g->nvis > n ? n : g->nvis);
        vm[r] = _mm512_set1_ps(g->m[r]);
        vl[r] = _mm512_set1_ps(g->l[r]);
        vd[r] = _mm512_set1_ps(g->dsum[r]);
    }
    for (int64_t c = 0; c < n; c += 16) {
        __m512 p[2], ds[2];
        for (int r = 0; r < 2; r++) {
            const __mmask16 vi = zlanes_below(vis[r] - c);
            if (vi == 0) {
                p[r] = ds[r] = _mm512_setzero_ps();
                continue;
            }
            const __m512 x = _mm512_sub_ps(_mm512_mul_ps(vs, _mm512_loadu_ps(g->s[r] + c)), vm[r]);
            const __m512 pv = _mm512_div_ps(exp512(x), vl[r]);
            const __m512 dsv = _mm512_mul_ps(pv, _mm512_sub_ps(_mm512_loadu_ps(g->dp[r] + c), vd[r]));
            p[r] = _mm512_maskz_mov_ps(vi, zround16(pv, NSA_ROUND_BF16));
            ds[r] = _mm512_maskz_mov_ps(vi, zround16(dsv, NSA_ROUND_BF16));
        }
        _mm256_storeu_si256((__m256i *)(void *)(g->ds16[0] + c), zbf16_pack(ds[0]));
        if (g->s[1] != NULL) _mm256_storeu_si256((__m256i *)(void *)(g->ds16[1] + c), zbf16_pack(ds[1]));
        _mm512_storeu_si512((void *)(g->p2 + c), zbf16_pairs(p[0], p[1]));
        _mm512_storeu_si512((void *)(g->ds2 + c), zbf16_pairs(ds[0], ds[1]));
    }
}

float nsa_rowmax_avx512(const float *s, int64_t n, float scale) {
    const __m512 vs = _mm512_set1_ps(scale);
    const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
    __m512 acc = ninf;
    __mmask16 nan = 0;
    for (int64_t c = 0; c < n; c += 16) {
        const __mmask16 io = zlanes_below(n - c);
        const __m512 xs = _mm512_mask_mul_ps(ninf, io, vs, _mm512_maskz_loadu_ps(io, s + c)); /* beyond n: -inf */
        nan |= _mm512_cmp_ps_mask(xs, xs, _CMP_UNORD_Q);
        acc = _mm512_max_ps(xs, acc); /* x > acc ? x : acc */
    }
    if (nan != 0) return __builtin_nanf("");
    float v[16];
    _mm512_storeu_ps(v, acc);
    float m = v[0];
    for (int j = 1; j < 16; j++) m = v[j] > m ? v[j] : m;
    return m;
}

float nsa_expsum_avx512(float *s, int64_t n, float scale, float m) {
    const __m512 vs = _mm512_set1_ps(scale), vm = _mm512_set1_ps(m);
    __m512 acc = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m512 e = exp512(_mm512_sub_ps(_mm512_mul_ps(vs, _mm512_loadu_ps(s + c)), vm));
        _mm512_storeu_ps(s + c, e);
        acc = _mm512_add_ps(acc, e);
    }
    if (c < n) {
        const __mmask16 io = zlanes_below(n - c);
        const __m512 x = _mm512_sub_ps(_mm512_mul_ps(vs, _mm512_maskz_loadu_ps(io, s + c)), vm);
        const __m512 e = _mm512_maskz_mov_ps(io, exp512(x));
        _mm512_mask_storeu_ps(s + c, io, e);
        acc = _mm512_add_ps(acc, e);
    }
    /* the oracle's tree: lanes j + 8, then j + 4, j + 2, j + 1 */
    const __m256 v = _mm256_add_ps(_mm512_castps512_ps256(acc),
                                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1)));
    const __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

void nsa_normround_avx512(float *x, int64_t n, float l, int rnd) {
    const __m512 vl = _mm512_set1_ps(l);
    for (int64_t c = 0; c < n; c += 16) {
        const __mmask16 io = zlanes_below(n - c);
        const __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(io, x + c), vl);
        _mm512_mask_storeu_ps(x + c, io, zround16(v, rnd));
    }
}

void nsa_normbf16_avx512(const float *x, uint16_t *out, int64_t n, int64_t npad, float l) {
    const __m512 vl = _mm512_set1_ps(l);
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m512 v = zround16(_mm512_div_ps(_mm512_loadu_ps(x + c), vl), NSA_ROUND_BF16);
        _mm256_storeu_si256((__m256i *)(void *)(out + c), zbf16_pack(v));
    }
    nsa_normbf16_scalar(x + c, out + c, n - c, npad - c, l); /* the same operations */
}
