/* NSA selected-attention backward, AVX2 + FMA tier (see nsa_grad.h).
 *
 * GEMM: micro-kernels of MR (<= 6) rows x 2 ymm vectors (16 floats) of C in
 * registers (12 accumulators, 2 B vectors, 1 broadcast: 15 of 16 ymm), the
 * same panel chunking as the AVX-512 tier. */
#include "kernels/nsa_grad/nsa_grad.h"

#include <immintrin.h>
#include <string.h>

#define NSA_INLINE static inline __attribute__((always_inline))
#ifndef NSA_KC
#define NSA_KC 128
#endif

typedef void (*mk_fn)(const nsa_panel *pan, int64_t np, int64_t K, int64_t a_sm, int64_t a_sk, int64_t m0,
                      int64_t n0, int64_t ldb, float *c, int64_t ldc, int load);

NSA_INLINE void mk_body(const int MR, const int NV, const nsa_panel *pan, int64_t np, int64_t K, int64_t a_sm,
                        int64_t a_sk, int64_t m0, int64_t n0, int64_t ldb, float *c, int64_t ldc, int load) {
    __m256 acc[6][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            acc[i][v] = load ? _mm256_loadu_ps(c + (m0 + i) * ldc + n0 + 8 * v) : _mm256_setzero_ps();
        }
    }
    for (int64_t p = 0; p < np; p++) {
        const float *a = pan[p].a + m0 * a_sm;
        const float *b = pan[p].b + n0;
        for (int64_t k = 0; k < K; k++) {
            __m256 bv[2];
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) bv[v] = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 6
            for (int i = 0; i < MR; i++) {
                const __m256 av = _mm256_broadcast_ss(a + i * a_sm);
#pragma GCC unroll 2
                for (int v = 0; v < NV; v++) acc[i][v] = _mm256_fmadd_ps(av, bv[v], acc[i][v]);
            }
            a += a_sk;
            b += ldb;
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) _mm256_storeu_ps(c + (m0 + i) * ldc + n0 + 8 * v, acc[i][v]);
    }
}

#define MK_DEF(MR, NV)                                                                                      \
    static void mk_rm_##MR##_##NV(const nsa_panel *pan, int64_t np, int64_t K, int64_t a_sm, int64_t a_sk, \
                                  int64_t m0, int64_t n0, int64_t ldb, float *c, int64_t ldc, int load) {  \
        (void)a_sk;                                                                                         \
        mk_body(MR, NV, pan, np, K, a_sm, 1, m0, n0, ldb, c, ldc, load);                                    \
    }                                                                                                       \
    static void mk_cm_##MR##_##NV(const nsa_panel *pan, int64_t np, int64_t K, int64_t a_sm, int64_t a_sk, \
                                  int64_t m0, int64_t n0, int64_t ldb, float *c, int64_t ldc, int load) {  \
        (void)a_sm;                                                                                         \
        mk_body(MR, NV, pan, np, K, 1, a_sk, m0, n0, ldb, c, ldc, load);                                    \
    }
MK_DEF(1, 2)
MK_DEF(2, 2)
MK_DEF(3, 2)
MK_DEF(4, 2)
MK_DEF(5, 2)
MK_DEF(6, 2)

/* [layout][MR-1], NV = 2 */
static const mk_fn mk_table[2][6] = {
    {mk_rm_1_2, mk_rm_2_2, mk_rm_3_2, mk_rm_4_2, mk_rm_5_2, mk_rm_6_2},
    {mk_cm_1_2, mk_cm_2_2, mk_cm_3_2, mk_cm_4_2, mk_cm_5_2, mk_cm_6_2},
};

void nsa_gemm_avx2(const nsa_gemm_args *g) {
    const int layout = nsa_gemm_front(g);
    if (layout < 0) return;
    const int64_t M = g->m, N = g->n, K = g->k;
    int64_t pc = NSA_KC / K;
    if (pc < 1) pc = 1;
    for (int64_t p0 = 0; p0 < g->npanels; p0 += pc) {
        const int64_t np = pc < g->npanels - p0 ? pc : g->npanels - p0;
        const int load = g->accumulate || p0 > 0;
        for (int64_t n0 = 0; n0 < N; n0 += 16) {
            for (int64_t m0 = 0; m0 < M; m0 += 6) {
                const int mr = (int)(M - m0 < 6 ? M - m0 : 6);
                mk_table[layout][mr - 1](g->panels + p0, np, K, g->a_sm, g->a_sk, m0, n0, g->ldb, g->c, g->ldc,
                                         load);
            }
        }
    }
}

/* ---- exp and the softmax-gradient row ---- */

/* exp(x) in fp32, about 1 ulp (same reduction and polynomial as the AVX-512
 * tier); 2^n is applied as two exact power-of-two factors so that results in
 * the subnormal range round like a single scaling. Above ln(FLT_MAX): +inf;
 * NaN stays NaN (min/max return their second operand when it is NaN). */
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
    /* n in [-150, 128] (NaN -> garbage exponent, but p is NaN then) */
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_blendv_ps(_mm256_mul_ps(_mm256_mul_ps(p, f1), f2), _mm256_set1_ps(__builtin_inff()), over);
}

void nsa_pgrad_avx2(float *sp, float *dpds, int64_t n, int64_t nvis, float scale, float m, float l,
                    float dsum) {
    if (nvis > n) nvis = n;
    if (nvis < 0) nvis = 0;
    if (l == 0.0f) nvis = 0;
    const __m256 vs = _mm256_set1_ps(scale), vm = _mm256_set1_ps(m), vl = _mm256_set1_ps(l);
    const __m256 vd = _mm256_set1_ps(dsum);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t c = 0; c < n; c += 8) {
        const int64_t rem = n - c, vis = nvis - c;
        const __m256i io = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(rem > 8 ? 8 : rem)), lane);
        const __m256i vi =
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(vis > 8 ? 8 : (vis < 0 ? 0 : vis))), lane);
        const __m256 vmask = _mm256_castsi256_ps(vi);
        const __m256 s = _mm256_maskload_ps(sp + c, vi);
        const __m256 dp = _mm256_maskload_ps(dpds + c, vi);
        const __m256 x = _mm256_sub_ps(_mm256_mul_ps(vs, s), vm);
        const __m256 p = _mm256_and_ps(_mm256_div_ps(exp256(x), vl), vmask);
        const __m256 ds = _mm256_and_ps(_mm256_mul_ps(p, _mm256_sub_ps(dp, vd)), vmask);
        _mm256_maskstore_ps(sp + c, io, p);
        _mm256_maskstore_ps(dpds + c, io, ds);
    }
}

/* ---- forward row ops ---- */

static inline float hsum256(__m256 v) {
    const __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

float nsa_rowmax_avx2(const float *s, int64_t n, float scale) {
    const __m256 vs = _mm256_set1_ps(scale);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
    __m256 acc = ninf, nan = _mm256_setzero_ps();
    for (int64_t c = 0; c < n; c += 8) {
        const int64_t rem = n - c;
        const __m256i io = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(rem > 8 ? 8 : rem)), lane);
        const __m256 x = _mm256_blendv_ps(ninf, _mm256_mul_ps(vs, _mm256_maskload_ps(s + c, io)),
                                          _mm256_castsi256_ps(io));
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
        acc = _mm256_max_ps(x, acc); /* acc where x is NaN */
    }
    if (_mm256_movemask_ps(nan) != 0) return __builtin_nanf("");
    float v[8];
    _mm256_storeu_ps(v, acc);
    float m = v[0];
    for (int i = 1; i < 8; i++) m = v[i] > m ? v[i] : m;
    return m;
}

float nsa_expsum_avx2(float *s, int64_t n, float scale, float m) {
    const __m256 vs = _mm256_set1_ps(scale), vm = _mm256_set1_ps(m);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t c = 0; c < n; c += 8) {
        const int64_t rem = n - c;
        const __m256i io = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(rem > 8 ? 8 : rem)), lane);
        const __m256 x = _mm256_sub_ps(_mm256_mul_ps(vs, _mm256_maskload_ps(s + c, io)), vm);
        const __m256 e = _mm256_and_ps(exp256(x), _mm256_castsi256_ps(io));
        _mm256_maskstore_ps(s + c, io, e);
        acc = _mm256_add_ps(acc, e);
    }
    return hsum256(acc);
}
