/* The GEMM's AVX-512 tiers (gemm_impl.h): 12 x 32 micro-kernels.
 *  - avx512:     the fp32 chain with FMAs; the bf16 dot chain emulated with
 *                FMAs in vdpbf16ps's order (odd, then even k of each pair)
 *                under MXCSR DAZ + FTZ, which gives vdpbf16ps's bits;
 *  - avx512bf16: the same fp32 chain; the dot chain with vdpbf16ps itself.
 * Every tier reproduces the scalar tier's bits (gemm.h). */
#if defined(PA_HAVE_X86_KERNELS)
#include <immintrin.h>

#include "kernels/gemm/gemm_impl.h"
#include "kernels/gemm/gemm_qbytes.h"

#define MR 12
#define NR 32
#define GM_DAZ_FTZ 0x8040u

#define GM_INLINE static inline __attribute__((always_inline))

GM_INLINE __mmask16 gm_mask(int n) { return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1u); }

/* ---- fp32 chain ---- */

GM_INLINE void ukr_body(const gm_ukr *u, const int R) {
    const float *a = u->a, *b = u->b;
    const int64_t ldb = u->ldb, ldt = u->ldt;
    float *t = u->t;
    const __mmask16 m0 = gm_mask(u->nr), m1 = gm_mask(u->nr - 16);
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        c0[r] = u->load ? _mm512_maskz_loadu_ps(m0, t + r * ldt) : _mm512_setzero_ps();
        c1[r] = u->load ? _mm512_maskz_loadu_ps(m1, t + r * ldt + 16) : _mm512_setzero_ps();
    }
    const int64_t k = u->k;
    if (u->bfull && u->pf > 0) {
        const int64_t pfo = u->pf;
        for (int64_t p = 0; p < k; p++) {
            _mm_prefetch((const char *)(b + pfo), _MM_HINT_T0);
            _mm_prefetch((const char *)(b + pfo + 16), _MM_HINT_T0);
            const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
            for (int r = 0; r < R; r++) {
                const __m512 av = _mm512_set1_ps(a[r]);
                c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
                c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
            }
            a += MR;
            b += ldb;
        }
    } else if (u->bfull) {
        for (int64_t p = 0; p < k; p++) {
            const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
            for (int r = 0; r < R; r++) {
                const __m512 av = _mm512_set1_ps(a[r]);
                c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
                c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
            }
            a += MR;
            b += ldb;
        }
    } else {
        for (int64_t p = 0; p < k; p++) {
            const __m512 b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);
#pragma GCC unroll 12
            for (int r = 0; r < R; r++) {
                const __m512 av = _mm512_set1_ps(a[r]);
                c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
                c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
            }
            a += MR;
            b += ldb;
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        _mm512_mask_storeu_ps(t + r * ldt, m0, c0[r]);
        _mm512_mask_storeu_ps(t + r * ldt + 16, m1, c1[r]);
    }
}

/* ---- dot chain, emulated (avx512) ---- */

GM_INLINE void dot_emu_body(const gm_ukr *u, const int R) {
    const uint32_t *a = u->a;
    const __m512i *b = u->b;
    const int64_t ldb = u->ldb / 16, ldt = u->ldt;
    float *t = u->t;
    const __mmask16 m0 = gm_mask(u->nr), m1 = gm_mask(u->nr - 16);
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        c0[r] = u->load ? _mm512_maskz_loadu_ps(m0, t + r * ldt) : _mm512_setzero_ps();
        c1[r] = u->load ? _mm512_maskz_loadu_ps(m1, t + r * ldt + 16) : _mm512_setzero_ps();
    }
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | GM_DAZ_FTZ);
    for (int64_t q = 0; q < u->k; q++) {
        const __m512i v0 = _mm512_loadu_si512(b), v1 = _mm512_loadu_si512(b + 1);
        const __m512 o0 = _mm512_castsi512_ps(_mm512_and_si512(v0, hi));
        const __m512 e0 = _mm512_castsi512_ps(_mm512_slli_epi32(v0, 16));
        const __m512 o1 = _mm512_castsi512_ps(_mm512_and_si512(v1, hi));
        const __m512 e1 = _mm512_castsi512_ps(_mm512_slli_epi32(v1, 16));
#pragma GCC unroll 12
        for (int r = 0; r < R; r++) {
            const uint32_t w = a[r];
            const __m512 ao = _mm512_castsi512_ps(_mm512_set1_epi32((int)(w & 0xffff0000u)));
            const __m512 ae = _mm512_castsi512_ps(_mm512_set1_epi32((int)(w << 16)));
            c0[r] = _mm512_fmadd_ps(ae, e0, _mm512_fmadd_ps(ao, o0, c0[r]));
            c1[r] = _mm512_fmadd_ps(ae, e1, _mm512_fmadd_ps(ao, o1, c1[r]));
        }
        a += MR;
        b += ldb;
    }
    _mm_setcsr(csr);
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        _mm512_mask_storeu_ps(t + r * ldt, m0, c0[r]);
        _mm512_mask_storeu_ps(t + r * ldt + 16, m1, c1[r]);
    }
}

/* ---- dot chain with vdpbf16ps (avx512bf16) ---- */

GM_INLINE void dot_bf16_body(const gm_ukr *u, const int R) {
    const uint32_t *a = u->a;
    const __m512i *b = u->b;
    const int64_t ldb = u->ldb / 16, ldt = u->ldt;
    float *t = u->t;
    const __mmask16 m0 = gm_mask(u->nr), m1 = gm_mask(u->nr - 16);
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        c0[r] = u->load ? _mm512_maskz_loadu_ps(m0, t + r * ldt) : _mm512_setzero_ps();
        c1[r] = u->load ? _mm512_maskz_loadu_ps(m1, t + r * ldt + 16) : _mm512_setzero_ps();
    }
    for (int64_t q = 0; q < u->k; q++) {
        const __m512bh v0 = (__m512bh)_mm512_loadu_si512(b), v1 = (__m512bh)_mm512_loadu_si512(b + 1);
#pragma GCC unroll 12
        for (int r = 0; r < R; r++) {
            const __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[r]);
            c0[r] = _mm512_dpbf16_ps(c0[r], av, v0);
            c1[r] = _mm512_dpbf16_ps(c1[r], av, v1);
        }
        a += MR;
        b += ldb;
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        _mm512_mask_storeu_ps(t + r * ldt, m0, c0[r]);
        _mm512_mask_storeu_ps(t + r * ldt + 16, m1, c1[r]);
    }
}

#define GM_INSTANCES(X) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12)
#define GM_UKR(R) static void ukr_##R(const gm_ukr *u) { ukr_body(u, R); }
#define GM_EMU(R) static void emu_##R(const gm_ukr *u) { dot_emu_body(u, R); }
#define GM_BF(R) static void bf_##R(const gm_ukr *u) { dot_bf16_body(u, R); }
GM_INSTANCES(GM_UKR)
GM_INSTANCES(GM_EMU)
GM_INSTANCES(GM_BF)
#define GM_REF_UKR(R) ukr_##R,
#define GM_REF_EMU(R) emu_##R,
#define GM_REF_BF(R) bf_##R,
typedef void (*gm_ukr_fn)(const gm_ukr *u);
static const gm_ukr_fn k_ukr[MR + 1] = {NULL, GM_INSTANCES(GM_REF_UKR)};
static const gm_ukr_fn k_emu[MR + 1] = {NULL, GM_INSTANCES(GM_REF_EMU)};
static const gm_ukr_fn k_bf[MR + 1] = {NULL, GM_INSTANCES(GM_REF_BF)};

static void ukr512(const gm_ukr *u) { k_ukr[u->mr](u); }
static void emu512(const gm_ukr *u) { k_emu[u->mr](u); }
static void bf512(const gm_ukr *u) { k_bf[u->mr](u); }

/* ---- conversions (the scalar tier's bits) ---- */

/* fp32 -> bf16 bits in the low half of each lane: nearest even, NaN quietened
 * (pa_f32_to_bf16; vcvtneps2bf16 would flush denormals) */
GM_INLINE __m512i gm_f2bf(__m512 x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    const __m512i q = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_mov_epi32(r, nan, q);
}

GM_INLINE __m512 gm_bf2f(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

GM_INLINE __m512 gm_load16(int32_t dt, const void *p, __mmask16 m) {
    switch (dt) {
    case PA_GEMM_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    case PA_GEMM_BF16: return gm_bf2f(_mm256_maskz_loadu_epi16(m, p));
    default: return _mm512_maskz_loadu_ps(m, p);
    }
}

/* ---- the epilogue ---- */

static void store512(const gm_epi *e, const float *t, int64_t ldt, int64_t i0, int64_t j0, int mr, int nr) {
    if (e->epi != NULL || e->c_cs != 1 || (e->bias != NULL && e->bias_cs != 0 && e->bias_cs != 1)) {
        pa_gemm_store_generic(e, t, ldt, i0, j0, mr, nr);
        return;
    }
    const __m512 alpha = _mm512_set1_ps(e->alpha), beta = _mm512_set1_ps(e->beta);
    const size_t ces = e->c_dt == PA_GEMM_F32 ? 4 : 2;
    for (int r = 0; r < mr; r++) {
        char *crow = e->c + (e->c_off + (i0 + r) * e->c_rs + j0) * (int64_t)ces;
        for (int j = 0; j < nr; j += 16) {
            const __mmask16 m = gm_mask(nr - j);
            __m512 x = _mm512_maskz_loadu_ps(m, t + r * ldt + j);
            if (e->mid_round == PA_GEMM_F16) {
                x = _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            } else if (e->mid_round == PA_GEMM_BF16) {
                x = _mm512_castsi512_ps(_mm512_slli_epi32(gm_f2bf(x), 16));
            }
            if (e->alpha != 1.0f) x = _mm512_mul_ps(alpha, x);
            if (e->bias != NULL) {
                const size_t bes = e->bias_dt == PA_GEMM_F32 ? 4 : 2;
                const char *brow = e->bias + (e->bias_off + (i0 + r) * e->bias_rs) * (int64_t)bes;
                __m512 s;
                if (e->bias_cs == 0) {
                    s = _mm512_set1_ps(gm_fval(e->bias_dt, brow, 0));
                } else {
                    s = gm_load16(e->bias_dt, brow + (j0 + j) * (int64_t)bes, m);
                }
                if (e->beta != 1.0f) s = _mm512_mul_ps(beta, s);
                x = _mm512_add_ps(x, s);
            }
            switch (e->c_dt) {
            case PA_GEMM_F16:
                _mm256_mask_storeu_epi16(crow + j * 2, m,
                                         _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
                break;
            case PA_GEMM_BF16: _mm256_mask_storeu_epi16(crow + j * 2, m, _mm512_cvtepi32_epi16(gm_f2bf(x))); break;
            default: _mm512_mask_storeu_ps(crow + j * 4, m, x); break;
            }
        }
    }
}

/* ---- B packers ---- */

/* 16 x 16 fp32 transpose of r[0..16) in place */
GM_INLINE void gm_tr16(__m512 *r) {
    __m512 t[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        const __m512d a0 = _mm512_castps_pd(t[4 * i]), a1 = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d a2 = _mm512_castps_pd(t[4 * i + 2]), a3 = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
    }
    /* r[4i + c] now holds, in each 128-bit lane L, rows 4i..4i+3 of column 4L + c */
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        const __m512 x0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88), x1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
        const __m512 x2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        const __m512 x3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
        t[c] = _mm512_shuffle_f32x4(x0, x2, 0x88);      /* column c */
        t[8 + c] = _mm512_shuffle_f32x4(x0, x2, 0xdd);  /* column 8 + c */
        t[4 + c] = _mm512_shuffle_f32x4(x1, x3, 0x88);  /* column 4 + c */
        t[12 + c] = _mm512_shuffle_f32x4(x1, x3, 0xdd); /* column 12 + c */
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

static int pack_b512(const pa_gemm_mat *b, int64_t p0, int64_t kc, int64_t j0, int64_t ncols, int nr_, float *dst) {
    (void)nr_;
    if (b->nz || b->dt > PA_GEMM_BF16) return 0;
    const size_t es = b->dt == PA_GEMM_F32 ? 4 : 2;
    const char *base = (const char *)b->p;
    if (b->cs == 1) {
        /* row by row (one sequential stream through B), each row into every panel */
        const int64_t full = ncols / NR * NR;
        for (int64_t p = 0; p < kc; p++) {
            const char *src = base + (b->off + (p0 + p) * b->rs + j0) * (int64_t)es;
            float *row = dst + p * NR;
            int64_t jp = 0;
            if (b->dt == PA_GEMM_F32) {
                for (; jp < full; jp += NR) {
                    const float *s = (const float *)src + jp;
                    _mm512_storeu_ps(row + jp * kc, _mm512_loadu_ps(s));
                    _mm512_storeu_ps(row + jp * kc + 16, _mm512_loadu_ps(s + 16));
                }
            }
            for (; jp < ncols; jp += NR) {
                const int nr = ncols - jp < NR ? (int)(ncols - jp) : NR;
                const char *s = src + jp * (int64_t)es;
                _mm512_storeu_ps(row + jp * kc, gm_load16(b->dt, s, gm_mask(nr)));
                _mm512_storeu_ps(row + jp * kc + 16, gm_load16(b->dt, s + 16 * es, gm_mask(nr - 16)));
            }
        }
        return 1;
    }
    if (b->rs == 1) {
        /* columns of B contiguous along k: 16 x 16 transposes */
        for (int64_t jp = 0; jp < ncols; jp += 16) {
            const int nc = ncols - jp < 16 ? (int)(ncols - jp) : 16;
            float *out = dst + (jp / NR) * NR * kc + (jp % NR);
            for (int64_t p = 0; p < kc; p += 16) {
                const int np = kc - p < 16 ? (int)(kc - p) : 16;
                const __mmask16 m = gm_mask(np);
                __m512 r[16];
                for (int c = 0; c < 16; c++) {
                    r[c] = c < nc ? gm_load16(b->dt, base + (b->off + (p0 + p) + (j0 + jp + c) * b->cs) * (int64_t)es, m)
                                  : _mm512_setzero_ps();
                }
                gm_tr16(r);
                for (int i = 0; i < np; i++) _mm512_storeu_ps(out + (p + i) * NR, r[i]);
            }
        }
        if (ncols % NR != 0 && ncols % NR <= 16) {
            /* the second half of a last panel with at most 16 columns */
            float *panel = dst + (ncols / NR) * NR * kc;
            for (int64_t p = 0; p < kc; p++) _mm512_storeu_ps(panel + p * NR + 16, _mm512_setzero_ps());
        }
        return 1;
    }
    return 0;
}

/* bf16 pairs: B(2q, j) | B(2q + 1, j) << 16 */
static int pack_b_dot512(const pa_gemm_mat *b, int64_t p0, int64_t kc, int64_t j0, int64_t ncols, int nr_,
                         uint32_t *dst) {
    (void)nr_;
    if (b->nz || b->dt != PA_GEMM_BF16) return 0;
    const uint16_t *base = b->p;
    const int64_t kq = (kc + 1) / 2;
    if (b->cs == 1) {
        for (int64_t jp = 0; jp < ncols; jp += NR) {
            const int nr = ncols - jp < NR ? (int)(ncols - jp) : NR;
            const __mmask16 m0 = gm_mask(nr), m1 = gm_mask(nr - 16);
            uint32_t *panel = dst + jp * kq;
            const uint16_t *col = base + b->off + p0 * b->rs + j0 + jp;
            for (int64_t q = 0; q < kq; q++) {
                const uint16_t *r0 = col + 2 * q * b->rs;
                const bool odd = 2 * q + 1 < kc;
                __m512i lo0 = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m0, r0));
                __m512i lo1 = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m1, r0 + 16));
                if (odd) {
                    const uint16_t *r1 = r0 + b->rs;
                    lo0 = _mm512_or_si512(lo0, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m0, r1)), 16));
                    lo1 = _mm512_or_si512(lo1,
                                          _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m1, r1 + 16)), 16));
                }
                _mm512_storeu_si512(panel + q * NR, lo0);
                _mm512_storeu_si512(panel + q * NR + 16, lo1);
            }
        }
        return 1;
    }
    if (b->rs == 1) {
        /* columns of B contiguous along k: each pair is one aligned 32-bit word */
        const int64_t full = kc / 2; /* complete pairs */
        for (int64_t jp = 0; jp < ncols; jp += 16) {
            const int nc = ncols - jp < 16 ? (int)(ncols - jp) : 16;
            uint32_t *out = dst + (jp / NR) * NR * kq + (jp % NR);
            for (int64_t q = 0; q < kq; q += 16) {
                const int nq = kq - q < 16 ? (int)(kq - q) : 16;
                const int nfull = full - q < 0 ? 0 : full - q < nq ? (int)(full - q) : nq;
                __m512 r[16];
                for (int c = 0; c < 16; c++) {
                    if (c >= nc) {
                        r[c] = _mm512_setzero_ps();
                        continue;
                    }
                    const uint16_t *src = base + b->off + p0 + 2 * q + (j0 + jp + c) * b->cs;
                    __m512i v = _mm512_maskz_loadu_epi32(gm_mask(nfull), src);
                    if (nfull < nq) { /* the odd last value: its pair is (value, 0) */
                        const uint32_t last = src[2 * nfull];
                        v = _mm512_mask_set1_epi32(v, (__mmask16)(1u << nfull), (int)last);
                    }
                    r[c] = _mm512_castsi512_ps(v);
                }
                gm_tr16(r);
                for (int i = 0; i < nq; i++) _mm512_storeu_ps((float *)(out + (q + i) * NR), r[i]);
            }
        }
        if (ncols % NR != 0 && ncols % NR <= 16) {
            uint32_t *panel = dst + (ncols / NR) * NR * kq;
            for (int64_t q = 0; q < kq; q++) _mm512_storeu_si512(panel + q * NR + 16, _mm512_setzero_si512());
        }
        return 1;
    }
    return 0;
}

/* ---- dequantised B (int8 / int4 weights) ---- */

GM_INLINE __m512 gm_round512(__m512 x, int32_t dt) {
    if (dt == PA_GEMM_F16) return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    if (dt == PA_GEMM_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(gm_f2bf(x), 16));
    return x;
}

/* n (<= 16) consecutive weights from element e (even for S4) as fp32, zeros past n */
GM_INLINE __m512 gm_load_w(const pa_gemm_mat *b, int64_t e, int n) {
    const uint8_t *base = b->p;
    if (b->dt == PA_GEMM_S8) {
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(gm_mask(n), base + e)));
    }
    const __m128i v = _mm_maskz_loadu_epi8(gm_mask((n + 1) / 2), base + (e >> 1));
    const __m128i f = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    const __m128i lo = _mm_and_si128(v, f), hi = _mm_and_si128(_mm_srli_epi16(v, 4), f);
    __m128i x = _mm_unpacklo_epi8(lo, hi);
    x = _mm_sub_epi8(_mm_xor_si128(x, eight), eight);
    x = _mm_maskz_mov_epi8(gm_mask(n), x);
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(x));
}

GM_INLINE __m512 gm_dequant512(__m512 w, const __m512 *o, __m512 s, int32_t rdt) {
    if (o != NULL) w = gm_round512(_mm512_add_ps(w, *o), rdt);
    return gm_round512(_mm512_mul_ps(w, s), rdt);
}

static int pack_bq512(const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t p0, int64_t kc, int64_t j0, int64_t ncols,
                      float *dst) {
    if (b->nz || (q->group != 0 && q->group % 16 != 0) || p0 % 16 != 0) return 0;
    const bool s4 = b->dt == PA_GEMM_S4;
    const int32_t rdt = q->round_dt;
    const bool has_o = q->offset.p != NULL, has_s = q->scale.p != NULL;
    if (b->rs == 1 && b->cs != 1) {
        /* columns contiguous along k (a [n, k] weight passed transposed): dequantise
         * along the column (one scale per 16 values), then 16 x 16 transposes */
        if (s4 && (((b->off + p0) & 1) || (b->cs & 1))) return 0;
        /* the scales and offsets of this block: [column][group], groups of 16 k at least */
        const int64_t g0 = q->group > 0 ? p0 / q->group : 0;
        const int64_t ng = q->group > 0 ? (p0 + kc - 1) / q->group - g0 + 1 : 1;
        if (ng > 64) return 0;
        float st[16][64], ot[16][64];
        for (int64_t jp = 0; jp < ncols; jp += 16) {
            const int nc = ncols - jp < 16 ? (int)(ncols - jp) : 16;
            float *out = dst + (jp / NR) * NR * kc + (jp % NR);
            for (int c = 0; c < nc; c++) {
                for (int64_t gi = 0; gi < ng; gi++) {
                    const int64_t j = j0 + jp + c;
                    st[c][gi] = has_s ? gm_fval(q->scale.dt, q->scale.p, gm_index(&q->scale, g0 + gi, j)) : 1.0f;
                    ot[c][gi] = has_o ? gm_fval(q->offset.dt, q->offset.p, gm_index(&q->offset, g0 + gi, j)) : 0.0f;
                }
            }
            for (int64_t p = 0; p < kc; p += 16) {
                const int np = kc - p < 16 ? (int)(kc - p) : 16;
                const int64_t gi = q->group > 0 ? (p0 + p) / q->group - g0 : 0;
                __m512 r[16];
                for (int c = 0; c < 16; c++) {
                    if (c >= nc) {
                        r[c] = _mm512_setzero_ps();
                        continue;
                    }
                    const int64_t j = j0 + jp + c;
                    const __m512 w = gm_load_w(b, b->off + (p0 + p) + j * b->cs, np);
                    const __m512 s = _mm512_set1_ps(st[c][gi]);
                    if (has_o) {
                        const __m512 o = _mm512_set1_ps(ot[c][gi]);
                        r[c] = gm_dequant512(w, &o, s, rdt);
                    } else {
                        r[c] = gm_dequant512(w, NULL, s, rdt);
                    }
                }
                gm_tr16(r);
                for (int i = 0; i < np; i++) _mm512_storeu_ps(out + (p + i) * NR, r[i]);
            }
        }
        if (ncols % NR != 0 && ncols % NR <= 16) {
            float *panel = dst + (ncols / NR) * NR * kc;
            for (int64_t p = 0; p < kc; p++) _mm512_storeu_ps(panel + p * NR + 16, _mm512_setzero_ps());
        }
        return 1;
    }
    if (b->cs == 1) {
        /* rows contiguous along n: the scales of a group as vectors */
        if (s4 && (((b->off + j0) & 1) || (b->rs & 1))) return 0;
        if (ncols > 512) return 0;
        float sc[512], of[512];
        int64_t gcur = -1;
        for (int64_t p = 0; p < kc; p++) {
            const int64_t g = q->group > 0 ? (p0 + p) / q->group : 0;
            if (g != gcur) {
                for (int64_t j = 0; j < ncols; j++) {
                    sc[j] = has_s ? gm_fval(q->scale.dt, q->scale.p, gm_index(&q->scale, g, j0 + j)) : 1.0f;
                    of[j] = has_o ? gm_fval(q->offset.dt, q->offset.p, gm_index(&q->offset, g, j0 + j)) : 0.0f;
                }
                gcur = g;
            }
            float *row = dst + p * NR;
            for (int64_t jp = 0; jp < ncols; jp += 16) {
                const int n = ncols - jp < 16 ? (int)(ncols - jp) : 16;
                const __mmask16 m = gm_mask(n);
                const __m512 w = gm_load_w(b, b->off + (p0 + p) * b->rs + j0 + jp, n);
                const __m512 s = _mm512_maskz_loadu_ps(m, sc + jp);
                __m512 v;
                if (has_o) {
                    const __m512 o = _mm512_maskz_loadu_ps(m, of + jp);
                    v = gm_dequant512(w, &o, s, rdt);
                } else {
                    v = gm_dequant512(w, NULL, s, rdt);
                }
                _mm512_storeu_ps(row + (jp / NR) * NR * kc + (jp % NR), _mm512_maskz_mov_ps(m, v));
            }
            if (ncols % NR != 0 && ncols % NR <= 16) {
                _mm512_storeu_ps(row + (ncols / NR) * NR * kc + 16, _mm512_setzero_ps());
            }
        }
        return 1;
    }
    return 0;
}

/* a scale / offset value (F16 through F16C: the same value as pa_f16_to_f32) */
GM_INLINE float gm_qval(const pa_gemm_mat *m, int64_t g, int64_t j) {
    const int64_t i = gm_index(m, g, j);
    if (m->dt == PA_GEMM_F16) return _cvtsh_ss(((const uint16_t *)m->p)[i]);
    return gm_fval(m->dt, m->p, i);
}

/* weights ahead of the fused GEMV's reads, per stream */
#define GM_QPF 512

/* 16 consecutive weights of dtype DT from element e (even for S4) as fp32 */
GM_INLINE __m512 gm_w16(const uint8_t *base, int64_t e, const int DT) {
    if (DT == PA_GEMM_S8) return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(base + e))));
    const __m128i v = _mm_loadl_epi64((const __m128i *)(base + (e >> 1)));
    const __m128i f = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    const __m128i lo = _mm_and_si128(v, f), hi = _mm_and_si128(_mm_srli_epi16(v, 4), f);
    const __m128i x = _mm_sub_epi8(_mm_xor_si128(_mm_unpacklo_epi8(lo, hi), eight), eight);
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(x));
}

/* v[c] = m(g, j + c) for c < nc (fill for the rest, or all when absent) */
GM_INLINE void gm_qrow(const pa_gemm_mat *m, bool present, int64_t g, int64_t j, int nc, float fill, float *v) {
    if (!present) {
        for (int c = 0; c < 16; c++) v[c] = fill;
        return;
    }
    if (m->dt == PA_GEMM_F16 && !m->nz) {
        uint16_t h[16];
        const uint16_t *src = (const uint16_t *)m->p + m->off + g * m->rs + j * m->cs;
        for (int c = 0; c < 16; c++) h[c] = c < nc ? src[c * m->cs] : 0;
        _mm512_storeu_ps(v, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)h)));
        for (int c = nc; c < 16; c++) v[c] = fill;
        return;
    }
    for (int c = 0; c < 16; c++) v[c] = c < nc ? gm_qval(m, g, j + c) : fill;
}

/* tab[16 i + c] = m(g0 + i, j + c) for i < ng (<= 16) and c < nc (fill for the rest, or
 * all when absent): a 16 x 16 transpose when a column's groups are contiguous (rs == 1, a
 * [n, groups] tensor seen transposed), rows of 16 when the columns are (cs == 1), else
 * element by element */
GM_INLINE void gm_qtab(const pa_gemm_mat *m, bool present, int64_t g0, int ng, int64_t j, int nc, float fill,
                       float *tab) {
    const bool plain = present && !m->nz && (m->dt == PA_GEMM_F16 || m->dt == PA_GEMM_BF16 || m->dt == PA_GEMM_F32);
    const int64_t es = m->dt == PA_GEMM_F32 ? 4 : 2;
    const char *base = (const char *)m->p;
    if (!present) {
        for (int i = 0; i < ng; i++) _mm512_storeu_ps(tab + 16 * i, _mm512_set1_ps(fill));
    } else if (plain && m->rs == 1) {
        __m512 r[16];
        for (int c = 0; c < 16; c++) {
            r[c] = c < nc ? gm_load16(m->dt, base + (m->off + g0 + (j + c) * m->cs) * es, gm_mask(ng))
                          : _mm512_set1_ps(fill);
        }
        gm_tr16(r);
        for (int i = 0; i < ng; i++) _mm512_storeu_ps(tab + 16 * i, r[i]);
    } else if (plain && m->cs == 1) {
        const __mmask16 mk = gm_mask(nc);
        for (int i = 0; i < ng; i++) {
            const __m512 v = gm_load16(m->dt, base + (m->off + (g0 + i) * m->rs + j) * es, mk);
            _mm512_storeu_ps(tab + 16 * i, _mm512_mask_blend_ps(mk, _mm512_set1_ps(fill), v));
        }
    } else {
        for (int i = 0; i < ng; i++) gm_qrow(m, true, g0 + i, j, nc, fill, tab + 16 * i);
    }
}

/* fp16 rounding in fp32 arithmetic, for |x| < 65504: x + M - M with M = 1.5 * 2^(e(x) + 13),
 * at least 0.75 (the step of fp16's subnormals, 2^-24). The same values as the
 * conversion round trip for every such x (checked exhaustively) but for the sign of a
 * zero, which a chain that starts at +0 cannot tell apart; faster on Zen 4. */
GM_INLINE __m512 gm_round16a(__m512 x) {
    const __m512i e = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7F800000));
    const __m512i m = _mm512_max_epi32(_mm512_add_epi32(e, _mm512_set1_epi32((13 << 23) | 0x400000)),
                                       _mm512_set1_epi32(0x3F400000));
    const __m512 M = _mm512_castsi512_ps(m);
    return _mm512_sub_ps(_mm512_add_ps(x, M), M);
}

/* fp16 rounding by Veltkamp's split (c = 8193 x, c - (c - x): x to 11 significant bits), for
 * x == 0 or 2^-14 <= |x| < 65504 (fp16's normal range): the same values as the conversion
 * round trip for every such x (checked exhaustively); three fp operations */
GM_INLINE __m512 gm_round16v(__m512 x) {
    const __m512 c = _mm512_mul_ps(x, _mm512_set1_ps(8193.0f));
    return _mm512_sub_ps(c, _mm512_sub_ps(c, x));
}

/* 1.5 * 2^23: the float whose bits are 0x4B400000; adding an int32 w in [-2^22, 2^22) to
 * those bits gives the float 1.5 * 2^23 + w */
#define GM_QMAGIC 12582912.0f

/* whether a group without offsets may take gm_q16_step's path in every column (NaN: no):
 * every w * s is 0 or in fp16's normal range with room to spare (s == 0 or
 * 2^-14 <= |s| <= 256), and 1.5 * 2^23 * s is exact in fp32 */
GM_INLINE bool gm_q16_split_ok(__m512 s) {
    const __m512 a = _mm512_abs_ps(s);
    const __m512 big = _mm512_mul_ps(s, _mm512_set1_ps(GM_QMAGIC));
    const __mmask16 ok = ((_mm512_cmp_ps_mask(a, _mm512_set1_ps(0x1p-14f), _CMP_GE_OQ) &
                           _mm512_cmp_ps_mask(a, _mm512_set1_ps(256.0f), _CMP_LE_OQ)) |
                          _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_EQ_OQ)) &
                         _mm512_cmp_ps_mask(_mm512_fmsub_ps(s, _mm512_set1_ps(GM_QMAGIC), big), _mm512_setzero_ps(),
                                            _CMP_EQ_OQ);
    return ok == 0xffff;
}

/* R16(w * s) for 16 int8 / int4 values xb and a group that passed gm_q16_split_ok, with
 * nbig = -1.5 * 2^23 * s: the float 1.5 * 2^23 + w from w's bits, then
 * fma(1.5 * 2^23 + w, s, nbig) = w * s rounded once (as fl(w * s)), then gm_round16v */
GM_INLINE __m512 gm_q16_step(__m128i xb, __m512 s, __m512 nbig) {
    const __m512i v = _mm512_add_epi32(_mm512_cvtepi8_epi32(xb), _mm512_castps_si512(_mm512_set1_ps(GM_QMAGIC)));
    return gm_round16v(_mm512_fmadd_ps(_mm512_castsi512_ps(v), s, nbig));
}

/* whether a group's fp16 dequantisation stays below 65504 in every column (NaN: no):
 * |w + o| <= 128 + |o| and |R16(w + o) * s| with a factor 2 to spare */
GM_INLINE bool gm_q16_in_range(__m512 s, __m512 o, const int HAS_O) {
    const __m512 lim = _mm512_set1_ps(32768.0f);
    __m512 w = _mm512_set1_ps(128.0f);
    if (HAS_O) w = _mm512_add_ps(w, _mm512_abs_ps(o));
    const __mmask16 ok = _mm512_cmp_ps_mask(w, lim, _CMP_LE_OQ) &
                         _mm512_cmp_ps_mask(_mm512_mul_ps(_mm512_abs_ps(s), w), lim, _CMP_LE_OQ);
    return ok == 0xffff;
}

/* 64 consecutive weights of dtype DT from element e (even for S4) as 64 signed bytes */
GM_INLINE __m512i gm_bytes64(const uint8_t *base, int64_t e, const int DT) {
    if (DT == PA_GEMM_S8) return _mm512_loadu_si512(base + e);
    /* each byte HL to the word 0x0H0L: element 2e (low nibble) first */
    const __m512i w = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(base + (e >> 1))));
    const __m512i n = _mm512_and_si512(_mm512_or_si512(w, _mm512_slli_epi16(w, 4)), _mm512_set1_epi16(0x0F0F));
    const __m512i eight = _mm512_set1_epi8(8);
    return _mm512_sub_epi8(_mm512_xor_si512(n, eight), eight);
}

/* gm_tr16_bytes in each 128-bit lane: x[c] byte 16L + k -> x[k] byte 16L + c */
GM_INLINE void gm_tr16_bytes512(__m512i *x) {
    __m512i b[16], c[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        b[2 * i] = _mm512_unpacklo_epi8(x[2 * i], x[2 * i + 1]);
        b[2 * i + 1] = _mm512_unpackhi_epi8(x[2 * i], x[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        c[4 * g] = _mm512_unpacklo_epi16(b[4 * g], b[4 * g + 2]);
        c[4 * g + 1] = _mm512_unpackhi_epi16(b[4 * g], b[4 * g + 2]);
        c[4 * g + 2] = _mm512_unpacklo_epi16(b[4 * g + 1], b[4 * g + 3]);
        c[4 * g + 3] = _mm512_unpackhi_epi16(b[4 * g + 1], b[4 * g + 3]);
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            b[8 * h + 2 * q] = _mm512_unpacklo_epi32(c[8 * h + q], c[8 * h + 4 + q]);
            b[8 * h + 2 * q + 1] = _mm512_unpackhi_epi32(c[8 * h + q], c[8 * h + 4 + q]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        x[2 * i] = _mm512_unpacklo_epi64(b[i], b[8 + i]);
        x[2 * i + 1] = _mm512_unpackhi_epi64(b[i], b[8 + i]);
    }
}

/* The fused GEMV (gm_tier.gemv_q): R rows of A (1, or 4 with zero rows past mr) times 16
 * columns, over k in blocks of 16 values (one quantisation group each: group % 16 == 0).
 * Each output is one fma chain in k order. Full blocks take the specialised path; the k
 * tail and fewer than 16 columns the general one. */
GM_INLINE void gemv_q_body(const float *a, int64_t lda, const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t K,
                           int64_t j, int nc, float *tile, const int DT, const int RDT, const int HAS_O, const int R) {
    const uint8_t *wb = b->p;
    const bool has_s = q->scale.p != NULL;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps(), acc2 = _mm512_setzero_ps(),
           acc3 = _mm512_setzero_ps();
    const int64_t cs = b->cs, e0 = b->off + j * cs;
    const int64_t glen = q->group > 0 ? q->group : K; /* k values per group */
    const int64_t ngroups = (K + glen - 1) / glen;
    /* the scales and offsets of 16 groups at a time (gm_qtab), and whether each group may
     * take the arithmetic fp16 rounding (gm_q16_step, or gm_round16a with offsets) */
    float ts[16 * 16] __attribute__((aligned(64))), to[HAS_O ? 16 * 16 : 1] __attribute__((aligned(64)));
    bool tok[16];
    int64_t g = -1, gnext = 0, g0 = 0, gend = 0;
    const float *srow = ts, *orow = to;
    __m512 sv = _mm512_setzero_ps(), ov = _mm512_setzero_ps(), nbig = _mm512_setzero_ps();
    bool arith = false;
#define GM_Q_GROUP(P)                                                                               \
    if ((P) == gnext) {                                                                             \
        g++;                                                                                        \
        gnext += glen;                                                                              \
        if (g == gend) {                                                                            \
            g0 = g;                                                                                 \
            const int ng = ngroups - g < 16 ? (int)(ngroups - g) : 16;                              \
            gend = g + ng;                                                                          \
            gm_qtab(&q->scale, has_s, g0, ng, j, nc, 1.0f, ts);                                     \
            if (HAS_O) gm_qtab(&q->offset, true, g0, ng, j, nc, 0.0f, to);                          \
            for (int i = 0; i < ng; i++) {                                                          \
                const __m512 s16 = _mm512_load_ps(ts + 16 * i);                                     \
                tok[i] = RDT == PA_GEMM_F16 &&                                                      \
                         (HAS_O ? gm_q16_in_range(s16, _mm512_load_ps(to + 16 * i), 1) : gm_q16_split_ok(s16)); \
            }                                                                                       \
        }                                                                                           \
        srow = ts + 16 * (g - g0);                                                                  \
        orow = HAS_O ? to + 16 * (g - g0) : to;                                                     \
        arith = tok[g - g0];                                                                        \
        sv = _mm512_load_ps(srow);                                                                  \
        if (HAS_O) ov = _mm512_load_ps(orow);                                                       \
        nbig = _mm512_mul_ps(sv, _mm512_set1_ps(-GM_QMAGIC));                                       \
    }
#define GM_Q_FMA(W, I)                                                                              \
    {                                                                                               \
        acc0 = _mm512_fmadd_ps(_mm512_set1_ps(ap[I]), W, acc0);                                     \
        if (R > 1) {                                                                                \
            acc1 = _mm512_fmadd_ps(_mm512_set1_ps(ap[lda + (I)]), W, acc1);                         \
            acc2 = _mm512_fmadd_ps(_mm512_set1_ps(ap[2 * lda + (I)]), W, acc2);                     \
            acc3 = _mm512_fmadd_ps(_mm512_set1_ps(ap[3 * lda + (I)]), W, acc3);                     \
        }                                                                                           \
    }
#define GM_Q_STEP(XB, I, ROUND)                                                                     \
    {                                                                                               \
        __m512 w = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(XB));                                    \
        if (HAS_O) w = ROUND(_mm512_add_ps(w, ov));                                                 \
        w = ROUND(_mm512_mul_ps(w, sv));                                                            \
        GM_Q_FMA(w, I)                                                                              \
    }
#define GM_RQ(x) gm_round512((x), RDT)
#define GM_Q_PREFETCH(P)                                                                            \
    {                                                                                               \
        /* the weights' rows are 16 streams: fetch each one a few lines ahead, and near the       \
         * end of k the first lines of the next 16 columns' rows */                                 \
        const int64_t ahead = (P) + GM_QPF < K ? (P) + GM_QPF : (P) + GM_QPF - K + 16 * cs;         \
        for (int c = 0; c < nc; c++) {                                                              \
            const int64_t e = e0 + ahead + c * cs; /* may be past B: an address, not a pointer */ \
            _mm_prefetch((const char *)((uintptr_t)wb + (uintptr_t)(DT == PA_GEMM_S4 ? e >> 1 : e)), _MM_HINT_T1); \
        }                                                                                           \
    }
/* the 16 x 64 block of bytes at k = P (k along each column), transposed in zmm registers
 * (four 16 x 16 transposes at once) into DST: DST[64 i + 16 l + c] = w(P + 16 l + i, c) */
#define GM_Q_TRANSPOSE(P, DST)                                                                      \
    {                                                                                               \
        __m512i x[16];                                                                              \
        _Pragma("GCC unroll 16") for (int c = 0; c < 16; c++) x[c] = gm_bytes64(wb, e0 + (P) + c * cs, DT); \
        gm_tr16_bytes512(x);                                                                        \
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) _mm512_store_si512((DST) + 64 * i, x[i]); \
    }
    int64_t p = 0;
    if (nc == 16) {
        /* 64 k at a time from a transposed block, 16 k at a time as below; the next block is
         * transposed half-way through this one, so that its loads overlap this one's arithmetic */
        uint8_t xtb[2][16 * 64] __attribute__((aligned(64)));
        if (p + 64 <= K) GM_Q_TRANSPOSE(p, xtb[0])
        for (int blk = 0; p + 64 <= K; p += 64, blk ^= 1) {
            const uint8_t *xt = xtb[blk];
            GM_Q_PREFETCH(p)
#pragma GCC unroll 4
            for (int l = 0; l < 4; l++) {
                if (l == 2 && p + 128 <= K) GM_Q_TRANSPOSE(p + 64, xtb[blk ^ 1])
                GM_Q_GROUP(p + 16 * l)
                const float *ap = a + p + 16 * l;
                if (arith) {
#pragma GCC unroll 16
                    for (int i = 0; i < 16; i++) {
                        const __m128i xb = _mm_load_si128((const __m128i *)(xt + 64 * i + 16 * l));
                        if (HAS_O) {
                            GM_Q_STEP(xb, i, gm_round16a)
                        } else {
                            const __m512 w = gm_q16_step(xb, sv, nbig);
                            GM_Q_FMA(w, i)
                        }
                    }
                } else {
#pragma GCC unroll 16
                    for (int i = 0; i < 16; i++) GM_Q_STEP(_mm_load_si128((const __m128i *)(xt + 64 * i + 16 * l)), i, GM_RQ)
                }
            }
        }
    }
    for (; p < K; p += 16) {
        const int np = K - p < 16 ? (int)(K - p) : 16;
        GM_Q_GROUP(p)
        if ((p & 63) == 0) GM_Q_PREFETCH(p)
        const float *ap = a + p;
        if (np == 16 && nc == 16) {
            /* the 16 x 16 block as bytes (k along each column), transposed in xmm
             * registers, then dequantised 16 columns at a time in k order */
            __m128i x[16];
#pragma GCC unroll 16
            for (int c = 0; c < 16; c++) x[c] = gm_bytes16(wb, e0 + p + c * cs, DT);
            gm_tr16_bytes(x);
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) GM_Q_STEP(x[i], i, GM_RQ)
            continue;
        }
        __m512 r[16];
        for (int c = 0; c < 16; c++) {
            if (c >= nc) {
                r[c] = _mm512_setzero_ps();
                continue;
            }
            __m512 w = gm_load_w(b, e0 + p + c * cs, np);
            if (HAS_O) w = gm_round512(_mm512_add_ps(w, _mm512_set1_ps(orow[c])), RDT);
            r[c] = gm_round512(_mm512_mul_ps(w, _mm512_set1_ps(srow[c])), RDT);
        }
        gm_tr16(r);
        for (int i = 0; i < np; i++) GM_Q_FMA(r[i], i)
    }
#undef GM_Q_GROUP
#undef GM_Q_FMA
#undef GM_Q_STEP
#undef GM_RQ
#undef GM_Q_PREFETCH
#undef GM_Q_TRANSPOSE
    _mm512_storeu_ps(tile, acc0);
    if (R > 1) {
        _mm512_storeu_ps(tile + 16, acc1);
        _mm512_storeu_ps(tile + 32, acc2);
        _mm512_storeu_ps(tile + 48, acc3);
    }
}

typedef void (*gm_gemvq_fn)(const float *a, int64_t lda, const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t K,
                            int64_t j, int nc, float *tile);
#define GM_GQ(NAME, DT, RDT, HO, R)                                                                           \
    static void NAME(const float *a, int64_t lda, const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t K,    \
                     int64_t j, int nc, float *tile) {                                                        \
        gemv_q_body(a, lda, b, q, K, j, nc, tile, DT, RDT, HO, R);                                            \
    }
#define GM_GQ_R(S, DT, RDTN, RDT)                                                                             \
    GM_GQ(gq_##S##_##RDTN##_0_1, DT, RDT, 0, 1) GM_GQ(gq_##S##_##RDTN##_1_1, DT, RDT, 1, 1)                   \
    GM_GQ(gq_##S##_##RDTN##_0_4, DT, RDT, 0, 4) GM_GQ(gq_##S##_##RDTN##_1_4, DT, RDT, 1, 4)
GM_GQ_R(s8, PA_GEMM_S8, h, PA_GEMM_F16)
GM_GQ_R(s8, PA_GEMM_S8, b, PA_GEMM_BF16)
GM_GQ_R(s8, PA_GEMM_S8, f, PA_GEMM_F32)
GM_GQ_R(s4, PA_GEMM_S4, h, PA_GEMM_F16)
GM_GQ_R(s4, PA_GEMM_S4, b, PA_GEMM_BF16)
GM_GQ_R(s4, PA_GEMM_S4, f, PA_GEMM_F32)
#undef GM_GQ
#undef GM_GQ_R
#define GM_GQ_ROW(S, RDTN) {{gq_##S##_##RDTN##_0_1, gq_##S##_##RDTN##_0_4}, {gq_##S##_##RDTN##_1_1, gq_##S##_##RDTN##_1_4}}
/* [S4?][round: F16, BF16, F32][offset?][4 rows?] */
static const gm_gemvq_fn k_gq[2][3][2][2] = {
    {GM_GQ_ROW(s8, h), GM_GQ_ROW(s8, b), GM_GQ_ROW(s8, f)},
    {GM_GQ_ROW(s4, h), GM_GQ_ROW(s4, b), GM_GQ_ROW(s4, f)},
};
#undef GM_GQ_ROW

/* a: 4 rows (rows past mr are zeros), lda apart */
static int gemv_q512(const float *a, int64_t lda, int mr, const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t K,
                     int64_t j, int nc, float *tile) {
    if (b->nz || b->rs != 1 || mr > 4 || (q->group != 0 && q->group % 16 != 0)) return 0;
    if (b->dt == PA_GEMM_S4 && ((b->off & 1) || (b->cs & 1))) return 0;
    const int ri = q->round_dt == PA_GEMM_F16 ? 0 : q->round_dt == PA_GEMM_BF16 ? 1 : 2;
    k_gq[b->dt == PA_GEMM_S4][ri][q->offset.p != NULL][mr > 1](a, lda, b, q, K, j, nc, tile);
    return 1;
}

/* ---- A packers ---- */

/* fp32 chain: ap[p*MR + r] = A(i0 + r, p0 + p), rows mr..MR zero */
static int pack_a512(const pa_gemm_mat *a, int64_t i0, int mr, int64_t p0, int64_t kc, float *dst) {
    if (a->nz || a->dt > PA_GEMM_BF16) return 0;
    const size_t es = a->dt == PA_GEMM_F32 ? 4 : 2;
    const char *base = (const char *)a->p;
    const __mmask16 rows = gm_mask(MR);
    if (a->cs == 1) {
        /* rows contiguous along k: 16 x 16 transposes of (up to) MR rows */
        for (int64_t p = 0; p < kc; p += 16) {
            const int np = kc - p < 16 ? (int)(kc - p) : 16;
            const __mmask16 m = gm_mask(np);
            __m512 r[16];
            for (int i = 0; i < 16; i++) {
                r[i] = i < mr ? gm_load16(a->dt, base + (a->off + (i0 + i) * a->rs + p0 + p) * (int64_t)es, m)
                              : _mm512_setzero_ps();
            }
            gm_tr16(r);
            for (int i = 0; i < np; i++) _mm512_mask_storeu_ps(dst + (p + i) * MR, rows, r[i]);
        }
        return 1;
    }
    if (a->rs == 1) {
        /* columns contiguous along m */
        const __mmask16 m = gm_mask(mr);
        for (int64_t p = 0; p < kc; p++) {
            const __m512 v = gm_load16(a->dt, base + (a->off + i0 + (p0 + p) * a->cs) * (int64_t)es, m);
            _mm512_mask_storeu_ps(dst + p * MR, rows, v);
        }
        return 1;
    }
    return 0;
}

/* dot chain: ap[q*MR + r] = A(i0 + r, p0 + 2q) | A(i0 + r, p0 + 2q + 1) << 16 */
static int pack_a_dot512(const pa_gemm_mat *a, int64_t i0, int mr, int64_t p0, int64_t kc, uint32_t *dst) {
    if (a->nz || a->dt != PA_GEMM_BF16 || a->cs != 1) return 0;
    const uint16_t *base = a->p;
    const int64_t kq = (kc + 1) / 2, full = kc / 2;
    const __mmask16 rows = gm_mask(MR);
    for (int64_t q = 0; q < kq; q += 16) {
        const int nq = kq - q < 16 ? (int)(kq - q) : 16;
        const int nfull = full - q < 0 ? 0 : full - q < nq ? (int)(full - q) : nq;
        __m512 r[16];
        for (int i = 0; i < 16; i++) {
            if (i >= mr) {
                r[i] = _mm512_setzero_ps();
                continue;
            }
            const uint16_t *src = base + a->off + (i0 + i) * a->rs + p0 + 2 * q;
            __m512i v = _mm512_maskz_loadu_epi32(gm_mask(nfull), src);
            if (nfull < nq) v = _mm512_mask_set1_epi32(v, (__mmask16)(1u << nfull), (int)src[2 * nfull]);
            r[i] = _mm512_castsi512_ps(v);
        }
        gm_tr16(r);
        for (int i = 0; i < nq; i++) _mm512_mask_storeu_ps((float *)(dst + (q + i) * MR), rows, r[i]);
    }
    return 1;
}

/* fp32 -> fp16 (RNE, no exceptions) -> fp32 in place; F16C rounds as pa_f32_to_f16 */
static void round_f16_512(float *p, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(p + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm512_storeu_ps(p + i, _mm512_cvtph_ps(h));
    }
    if (i < n) {
        const __mmask16 m = gm_mask((int)(n - i));
        const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, p + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm512_mask_storeu_ps(p + i, m, _mm512_cvtph_ps(h));
    }
}

const gm_tier pa_gemm_tier_avx512 = {
    .isa = PA_ISA_AVX512,
    .mr = MR,
    .nr = NR,
    .kc = 256,
    .mc = 240,
    .nc = 512,
    .ukr = ukr512,
    .ukr_dot = emu512,
    .store = store512,
    .pack_b = pack_b512,
    .pack_b_dot = pack_b_dot512,
    .pack_bq = pack_bq512,
    .gemv_q = gemv_q512,
    .pack_a = pack_a512,
    .pack_a_dot = pack_a_dot512,
    .round_f16 = round_f16_512,
};

const gm_tier pa_gemm_tier_avx512bf16 = {
    .isa = PA_ISA_AVX512BF16,
    .mr = MR,
    .nr = NR,
    .kc = 512,
    .mc = 240,
    .nc = 512,
    .ukr = ukr512,
    .ukr_dot = bf512,
    .store = store512,
    .pack_b = pack_b512,
    .pack_b_dot = pack_b_dot512,
    .pack_bq = pack_bq512,
    .gemv_q = gemv_q512,
    .pack_a = pack_a512,
    .pack_a_dot = pack_a_dot512,
    .round_f16 = round_f16_512,
};

#undef MR
#undef NR
#undef GM_DAZ_FTZ
#undef GM_INLINE
#undef GM_INSTANCES
#undef GM_UKR
#undef GM_EMU
#undef GM_BF
#undef GM_REF_UKR
#undef GM_REF_EMU
#undef GM_REF_BF
#endif
