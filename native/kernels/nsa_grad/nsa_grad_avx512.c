/* NSA selected-attention backward, AVX-512 tier (see nsa_grad.h).
 *
 * fp32 GEMM: register-blocked micro-kernels of MR rows x NV zmm vectors (16
 * floats) of C, kept in registers over a chunk of panels; per k, NV B vectors
 * are loaded once and each of the MR A elements is broadcast once and feeds NV
 * FMAs. Panels are walked in chunks of about NSA_KC k-rows so the B slice of a
 * column tile stays in L1/L2 while all row tiles use it; the partial sums go
 * back to C between chunks (exact, so the order of the sum stays "panels, then
 * k" for every element). MR x NV: 6x4, 8x3, 12x2, 12x1 plus smaller row
 * remainders; A row-major (S, dq) and column-major (dk, dv) are separate
 * instantiations.
 *
 * bf16 GEMM (S and dP with bf16 inputs, AVX512_BF16): the same tiling with
 * vdpbf16ps, one bf16 pair of A broadcast per step, B stored as pairs. */
#include "kernels/nsa_grad/nsa_grad.h"

#include <immintrin.h>
#include <string.h>

#define NSA_INLINE static inline __attribute__((always_inline))
#define NSA_MRMAX 12
/* k-rows of B per panel chunk */
#ifndef NSA_KC
#define NSA_KC 192
#endif

typedef void (*mk_fn)(const nsa_panel *pan, int64_t np, int64_t K, int64_t a_sm, int64_t a_sk, int64_t m0,
                      int64_t n0, int64_t ldb, float *c, int64_t ldc, int load);

NSA_INLINE void mk_body(const int MR, const int NV, const nsa_panel *pan, int64_t np, int64_t K, int64_t a_sm,
                        int64_t a_sk, int64_t m0, int64_t n0, int64_t ldb, float *c, int64_t ldc, int load) {
    __m512 acc[NSA_MRMAX][4];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            acc[i][v] = load ? _mm512_loadu_ps(c + (m0 + i) * ldc + n0 + 16 * v) : _mm512_setzero_ps();
        }
    }
    for (int64_t p = 0; p < np; p++) {
        const float *a = pan[p].a + m0 * a_sm;
        const float *b = pan[p].b + n0;
        for (int64_t k = 0; k < K; k++) {
            __m512 bv[4];
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) bv[v] = _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 16
            for (int i = 0; i < MR; i++) {
                const __m512 av = _mm512_set1_ps(a[i * a_sm]);
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
            }
            a += a_sk;
            b += ldb;
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) _mm512_storeu_ps(c + (m0 + i) * ldc + n0 + 16 * v, acc[i][v]);
    }
}

/* A row-major (a_sk == 1) and column-major (a_sm == 1) instantiations */
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

#define MK_ROW(NV)                                                                                          \
    MK_DEF(1, NV) MK_DEF(2, NV) MK_DEF(3, NV) MK_DEF(4, NV) MK_DEF(5, NV) MK_DEF(6, NV) MK_DEF(7, NV)       \
    MK_DEF(8, NV) MK_DEF(9, NV) MK_DEF(10, NV) MK_DEF(11, NV) MK_DEF(12, NV)
MK_ROW(1)
MK_ROW(2)
MK_ROW(3)
MK_DEF(1, 4)
MK_DEF(2, 4)
MK_DEF(3, 4)
MK_DEF(4, 4)
MK_DEF(5, 4)
MK_DEF(6, 4)

#define MK_PTRS(L, NV)                                                                                      \
    {mk_##L##_1_##NV, mk_##L##_2_##NV, mk_##L##_3_##NV, mk_##L##_4_##NV, mk_##L##_5_##NV, mk_##L##_6_##NV, \
     mk_##L##_7_##NV, mk_##L##_8_##NV, mk_##L##_9_##NV, mk_##L##_10_##NV, mk_##L##_11_##NV, mk_##L##_12_##NV}
#define MK_PTRS4(L) \
    {mk_##L##_1_4, mk_##L##_2_4, mk_##L##_3_4, mk_##L##_4_4, mk_##L##_5_4, mk_##L##_6_4, NULL, NULL, NULL, NULL, NULL, NULL}

/* [layout][NV-1][MR-1] */
static const mk_fn mk_table[2][4][NSA_MRMAX] = {
    {MK_PTRS(rm, 1), MK_PTRS(rm, 2), MK_PTRS(rm, 3), MK_PTRS4(rm)},
    {MK_PTRS(cm, 1), MK_PTRS(cm, 2), MK_PTRS(cm, 3), MK_PTRS4(cm)},
};
static const int mr_max[4] = {12, 12, 8, 6};

/* Column tiling: vectors per tile for n/16 vectors. */
static int pick_nv(int64_t nvec) {
    if (nvec % 4 == 0) return 4;
    if (nvec % 3 == 0) return 3;
    return nvec >= 4 ? 4 : (int)nvec;
}

void nsa_gemm_avx512(const nsa_gemm_args *g) {
    const int layout = nsa_gemm_front(g);
    if (layout < 0) return;
    const int64_t M = g->m, N = g->n, K = g->k;
    const int64_t nvec = N / 16;
    const int nv_main = pick_nv(nvec);
    /* panels per chunk: about NSA_KC k-rows */
    int64_t pc = NSA_KC / K;
    if (pc < 1) pc = 1;
    for (int64_t p0 = 0; p0 < g->npanels; p0 += pc) {
        const int64_t np = pc < g->npanels - p0 ? pc : g->npanels - p0;
        const int load = g->accumulate || p0 > 0;
        for (int64_t v0 = 0; v0 < nvec; v0 += nv_main) {
            const int nv = (int)(nvec - v0 < nv_main ? nvec - v0 : nv_main);
            const int mrm = mr_max[nv - 1];
            for (int64_t m0 = 0; m0 < M; m0 += mrm) {
                const int mr = (int)(M - m0 < mrm ? M - m0 : mrm);
                mk_table[layout][nv - 1][mr - 1](g->panels + p0, np, K, g->a_sm, g->a_sk, m0, v0 * 16, g->ldb,
                                                 g->c, g->ldc, load);
            }
        }
    }
}

/* ---- bf16 pairs: C = A B with vdpbf16ps ---- */

typedef void (*mkb_fn)(const uint16_t *a, int64_t lda, const uint16_t *b, int64_t n, int64_t kp, int64_t m0,
                       int64_t n0, float *c, int64_t ldc);

NSA_INLINE __m512i bcast_pair(const uint16_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

NSA_INLINE void mkb_body(const int MR, const int NV, const uint16_t *a, int64_t lda, const uint16_t *b, int64_t n,
                         int64_t kp, int64_t m0, int64_t n0, float *c, int64_t ldc) {
    __m512 acc[NSA_MRMAX][4];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[i][v] = _mm512_setzero_ps();
    }
    const uint16_t *ar = a + m0 * lda;
    const uint16_t *br = b + n0 * 2;
    for (int64_t j = 0; j < kp; j++) {
        __m512i bv[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) bv[v] = _mm512_loadu_si512((const void *)(br + 32 * v));
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            const __m512i av = bcast_pair(ar + i * lda);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                acc[i][v] = _mm512_dpbf16_ps(acc[i][v], (__m512bh)av, (__m512bh)bv[v]);
            }
        }
        ar += 2;
        br += 2 * n;
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) _mm512_storeu_ps(c + (m0 + i) * ldc + n0 + 16 * v, acc[i][v]);
    }
}

#define MKB_DEF(MR, NV)                                                                                      \
    static void mkb_##MR##_##NV(const uint16_t *a, int64_t lda, const uint16_t *b, int64_t n, int64_t kp,    \
                                int64_t m0, int64_t n0, float *c, int64_t ldc) {                             \
        mkb_body(MR, NV, a, lda, b, n, kp, m0, n0, c, ldc);                                                  \
    }
#define MKB_ROW(NV)                                                                                          \
    MKB_DEF(1, NV) MKB_DEF(2, NV) MKB_DEF(3, NV) MKB_DEF(4, NV) MKB_DEF(5, NV) MKB_DEF(6, NV) MKB_DEF(7, NV) \
    MKB_DEF(8, NV) MKB_DEF(9, NV) MKB_DEF(10, NV) MKB_DEF(11, NV) MKB_DEF(12, NV)
MKB_ROW(1)
MKB_ROW(2)
MKB_ROW(3)
MKB_DEF(1, 4)
MKB_DEF(2, 4)
MKB_DEF(3, 4)
MKB_DEF(4, 4)
MKB_DEF(5, 4)
MKB_DEF(6, 4)

#define MKB_PTRS(NV)                                                                                         \
    {mkb_1_##NV, mkb_2_##NV, mkb_3_##NV, mkb_4_##NV, mkb_5_##NV, mkb_6_##NV, mkb_7_##NV, mkb_8_##NV,         \
     mkb_9_##NV, mkb_10_##NV, mkb_11_##NV, mkb_12_##NV}
static const mkb_fn mkb_table[4][NSA_MRMAX] = {
    MKB_PTRS(1), MKB_PTRS(2), MKB_PTRS(3),
    {mkb_1_4, mkb_2_4, mkb_3_4, mkb_4_4, mkb_5_4, mkb_6_4, NULL, NULL, NULL, NULL, NULL, NULL}};

void nsa_gemm_bf16_avx512(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t lda, const uint16_t *b,
                          float *c, int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    const int64_t nvec = n / 16, kp = k / 2;
    const int nv_main = pick_nv(nvec);
    for (int64_t v0 = 0; v0 < nvec; v0 += nv_main) {
        const int nv = (int)(nvec - v0 < nv_main ? nvec - v0 : nv_main);
        const int mrm = mr_max[nv - 1];
        for (int64_t m0 = 0; m0 < m; m0 += mrm) {
            const int mr = (int)(m - m0 < mrm ? m - m0 : mrm);
            mkb_table[nv - 1][mr - 1](a, lda, b, n, kp, m0, v0 * 16, c, ldc);
        }
    }
}

/* ---- exp and the softmax-gradient row ---- */

/* exp(x) in fp32, about 1 ulp: 2^n * e^r with |r| <= ln2/2, degree-6 polynomial;
 * x below -104 gives 0, above ln(FLT_MAX) +inf, NaN stays NaN (min/max take
 * the NaN operand when it is the second one). */
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
    return _mm512_mask_blend_ps(over, _mm512_scalef_ps(p, n), _mm512_set1_ps(__builtin_inff()));
}

void nsa_pgrad_avx512(float *sp, float *dpds, int64_t n, int64_t nvis, float scale, float m, float l,
                      float dsum) {
    if (nvis > n) nvis = n;
    if (nvis < 0) nvis = 0;
    if (l == 0.0f) nvis = 0;
    const __m512 vs = _mm512_set1_ps(scale), vm = _mm512_set1_ps(m), vl = _mm512_set1_ps(l);
    const __m512 vd = _mm512_set1_ps(dsum);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int64_t c = 0; c < n; c += 16) {
        const int64_t rem = n - c;
        const __mmask16 io = rem >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << rem) - 1u);
        const int64_t vis = nvis - c;
        const __mmask16 vmask =
            vis >= 16 ? io
                      : (vis <= 0 ? (__mmask16)0
                                  : (__mmask16)(io & _mm512_cmplt_epi32_mask(lane, _mm512_set1_epi32((int)vis))));
        if (vmask == 0) {
            _mm512_mask_storeu_ps(sp + c, io, _mm512_setzero_ps());
            _mm512_mask_storeu_ps(dpds + c, io, _mm512_setzero_ps());
            continue;
        }
        const __m512 s = _mm512_maskz_loadu_ps(vmask, sp + c);
        const __m512 dp = _mm512_maskz_loadu_ps(vmask, dpds + c);
        const __m512 x = _mm512_sub_ps(_mm512_mul_ps(vs, s), vm);
        const __m512 p = _mm512_maskz_div_ps(vmask, exp512(x), vl);
        const __m512 ds = _mm512_maskz_mul_ps(vmask, p, _mm512_sub_ps(dp, vd));
        _mm512_mask_storeu_ps(sp + c, io, p);
        _mm512_mask_storeu_ps(dpds + c, io, ds);
    }
}

/* ---- forward row ops ---- */

float nsa_rowmax_avx512(const float *s, int64_t n, float scale) {
    const __m512 vs = _mm512_set1_ps(scale);
    __m512 acc = _mm512_set1_ps(-__builtin_inff());
    __mmask16 nan = 0;
    for (int64_t c = 0; c < n; c += 16) {
        const int64_t rem = n - c;
        const __mmask16 io = rem >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << rem) - 1u);
        const __m512 x = _mm512_mul_ps(vs, _mm512_maskz_loadu_ps(io, s + c));
        nan |= _mm512_mask_cmp_ps_mask(io, x, x, _CMP_UNORD_Q);
        acc = _mm512_mask_max_ps(acc, io, x, acc); /* acc where x is NaN */
    }
    return nan ? __builtin_nanf("") : _mm512_reduce_max_ps(acc);
}

float nsa_expsum_avx512(float *s, int64_t n, float scale, float m) {
    const __m512 vs = _mm512_set1_ps(scale), vm = _mm512_set1_ps(m);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t c = 0; c < n; c += 16) {
        const int64_t rem = n - c;
        const __mmask16 io = rem >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << rem) - 1u);
        const __m512 x = _mm512_sub_ps(_mm512_mul_ps(vs, _mm512_maskz_loadu_ps(io, s + c)), vm);
        const __m512 e = exp512(x);
        _mm512_mask_storeu_ps(s + c, io, e);
        acc = _mm512_mask_add_ps(acc, io, acc, e);
    }
    return _mm512_reduce_add_ps(acc);
}
