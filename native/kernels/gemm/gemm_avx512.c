/* The GEMM's AVX-512 tiers (gemm_impl.h): 12 x 32 micro-kernels.
 *  - avx512:     the fp32 chain with FMAs; the bf16 dot chain emulated with
 *                FMAs in vdpbf16ps's order (odd, then even k of each pair)
 *                under MXCSR DAZ + FTZ, which gives vdpbf16ps's bits;
 *  - avx512bf16: the same fp32 chain; the dot chain with vdpbf16ps itself.
 * Every tier reproduces the scalar tier's bits (gemm.h). */
#if defined(PA_HAVE_X86_KERNELS)
#include <immintrin.h>

#include "kernels/gemm/gemm_impl.h"

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
        const int64_t pfo = u->pf * ldb;
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
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        const __m512d a0 = _mm512_castps_pd(t[4 * i]), a1 = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d a2 = _mm512_castps_pd(t[4 * i + 2]), a3 = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
    }
    /* r[4i + c] now holds, in each 128-bit lane L, rows 4i..4i+3 of column 4L + c */
    for (int c = 0; c < 4; c++) {
        const __m512 x0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88), x1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
        const __m512 x2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        const __m512 x3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
        t[c] = _mm512_shuffle_f32x4(x0, x2, 0x88);      /* column c */
        t[8 + c] = _mm512_shuffle_f32x4(x0, x2, 0xdd);  /* column 8 + c */
        t[4 + c] = _mm512_shuffle_f32x4(x1, x3, 0x88);  /* column 4 + c */
        t[12 + c] = _mm512_shuffle_f32x4(x1, x3, 0xdd); /* column 12 + c */
    }
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
