/* The GEMM's AVX2 tier (gemm_impl.h): 6 x 16 micro-kernels with FMAs; the
 * bf16 dot chain emulated in vdpbf16ps's order (odd, then even k of each
 * pair) under MXCSR DAZ + FTZ. Bits equal the scalar tier's (gemm.h). */
#if defined(PA_HAVE_X86_KERNELS)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/gemm/gemm_impl.h"
#include "kernels/common/bf16_vec.h"
#include "kernels/gemm/gemm_qbytes.h"

#define MR 6
#define NR 16
#define GM_DAZ_FTZ 0x8040u

#define GM_INLINE static inline __attribute__((always_inline))

/* lanes j < n of a 256-bit mask vector */
GM_INLINE __m256i gm_mask8(int n) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

/* the C tile of a micro-kernel (R rows of 16): whole tiles without masks (AMD's
 * masked stores are microcoded: slow), partial ones masked */
GM_INLINE void gm_tile_load(const gm_ukr *u, __m256 *c0, __m256 *c1, const int R) {
    const __m256i m0 = gm_mask8(u->nr), m1 = gm_mask8(u->nr - 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        const float *t = u->t + r * u->ldt;
        if (!u->load) {
            c0[r] = c1[r] = _mm256_setzero_ps();
        } else if (u->nr == NR) {
            c0[r] = _mm256_loadu_ps(t);
            c1[r] = _mm256_loadu_ps(t + 8);
        } else {
            c0[r] = _mm256_maskload_ps(t, m0);
            c1[r] = _mm256_maskload_ps(t + 8, m1);
        }
    }
}
GM_INLINE void gm_tile_store(const gm_ukr *u, const __m256 *c0, const __m256 *c1, const int R) {
    const __m256i m0 = gm_mask8(u->nr), m1 = gm_mask8(u->nr - 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        float *t = u->t + r * u->ldt;
        if (u->nr == NR) {
            _mm256_storeu_ps(t, c0[r]);
            _mm256_storeu_ps(t + 8, c1[r]);
        } else {
            _mm256_maskstore_ps(t, m0, c0[r]);
            _mm256_maskstore_ps(t + 8, m1, c1[r]);
        }
    }
}

GM_INLINE void ukr8_body(const gm_ukr *u, const int R) {
    const float *a = u->a, *b = u->b;
    const int64_t ldb = u->ldb;
    const __m256i m0 = gm_mask8(u->nr), m1 = gm_mask8(u->nr - 8);
    __m256 c0[MR], c1[MR];
    gm_tile_load(u, c0, c1, R);
    const int64_t k = u->k;
    if (u->bfull && u->pf > 0) {
        const int64_t pfo = u->pf;
        for (int64_t p = 0; p < k; p++) {
            _mm_prefetch((const char *)(b + pfo), _MM_HINT_T0);
            const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
            for (int r = 0; r < R; r++) {
                const __m256 av = _mm256_broadcast_ss(a + r);
                c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
                c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
            }
            a += MR;
            b += ldb;
        }
    } else if (u->bfull) {
        for (int64_t p = 0; p < k; p++) {
            const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
            for (int r = 0; r < R; r++) {
                const __m256 av = _mm256_broadcast_ss(a + r);
                c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
                c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
            }
            a += MR;
            b += ldb;
        }
    } else {
        for (int64_t p = 0; p < k; p++) {
            const __m256 b0 = _mm256_maskload_ps(b, m0), b1 = _mm256_maskload_ps(b + 8, m1);
#pragma GCC unroll 6
            for (int r = 0; r < R; r++) {
                const __m256 av = _mm256_broadcast_ss(a + r);
                c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
                c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
            }
            a += MR;
            b += ldb;
        }
    }
    gm_tile_store(u, c0, c1, R);
}

GM_INLINE void dot8_body(const gm_ukr *u, const int R) {
    const uint32_t *a = u->a;
    const uint32_t *b = u->b;
    const int64_t ldb = u->ldb;
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
    __m256 c0[MR], c1[MR];
    gm_tile_load(u, c0, c1, R);
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | GM_DAZ_FTZ);
    for (int64_t q = 0; q < u->k; q++) {
        const __m256i v0 = _mm256_loadu_si256((const __m256i *)b);
        const __m256i v1 = _mm256_loadu_si256((const __m256i *)(b + 8));
        const __m256 o0 = _mm256_castsi256_ps(_mm256_and_si256(v0, hi));
        const __m256 e0 = _mm256_castsi256_ps(_mm256_slli_epi32(v0, 16));
        const __m256 o1 = _mm256_castsi256_ps(_mm256_and_si256(v1, hi));
        const __m256 e1 = _mm256_castsi256_ps(_mm256_slli_epi32(v1, 16));
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            /* the pair broadcast from memory (one load), split in vector registers */
            const __m256i w = _mm256_castps_si256(_mm256_broadcast_ss((const float *)(a + r)));
            const __m256 ao = _mm256_castsi256_ps(_mm256_and_si256(w, hi));
            const __m256 ae = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
            c0[r] = _mm256_fmadd_ps(ae, e0, _mm256_fmadd_ps(ao, o0, c0[r]));
            c1[r] = _mm256_fmadd_ps(ae, e1, _mm256_fmadd_ps(ao, o1, c1[r]));
        }
        a += MR;
        b += ldb;
    }
    _mm_setcsr(csr);
    gm_tile_store(u, c0, c1, R);
}

#define GM_INSTANCES(X) X(1) X(2) X(3) X(4) X(5) X(6)
#define GM_UKR(R) static void u8_##R(const gm_ukr *u) { ukr8_body(u, R); }
#define GM_DOT(R) static void d8_##R(const gm_ukr *u) { dot8_body(u, R); }
GM_INSTANCES(GM_UKR)
GM_INSTANCES(GM_DOT)
#define GM_REF_UKR(R) u8_##R,
#define GM_REF_DOT(R) d8_##R,
typedef void (*gm_ukr_fn)(const gm_ukr *u);
static const gm_ukr_fn k_ukr8[MR + 1] = {NULL, GM_INSTANCES(GM_REF_UKR)};
static const gm_ukr_fn k_dot8[MR + 1] = {NULL, GM_INSTANCES(GM_REF_DOT)};

static void ukr256(const gm_ukr *u) { k_ukr8[u->mr](u); }
static void dot256(const gm_ukr *u) { k_dot8[u->mr](u); }

/* fp32 -> fp16 or bf16 (RNE; NaN -> quiet NaN as pa_f32_to_bf16) -> fp32 */
GM_INLINE __m256 gm_round256(__m256 x, const int32_t dt) {
    if (dt == PA_GEMM_F16) return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    if (dt == PA_GEMM_BF16) {
        const __m256i u = _mm256_castps_si256(x);
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
        const __m256i q = _mm256_or_si256(u, _mm256_set1_epi32(0x400000));
        const __m256 v = _mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(q), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
        return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32((int)0xffff0000u)));
    }
    return x;
}

/* 8 consecutive values of an F32 / F16 / BF16 operand from element i, as fp32 */
GM_INLINE __m256 gm_ld8(const void *p, int32_t dt, int64_t i) {
    if (dt == PA_GEMM_F32) return _mm256_loadu_ps((const float *)p + i);
    const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    if (dt == PA_GEMM_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* one bias value, broadcast */
GM_INLINE __m256 gm_ld8_one(const void *p, int32_t dt, int64_t i) { return _mm256_set1_ps(gm_fval(dt, p, i)); }

/* ---- the epilogue: the generic one's operations on 8 lanes (contiguous C rows;
 * a bias contiguous along n or broadcast), callbacks and other layouts generic ---- */

GM_INLINE void store_body256(const gm_epi *e, const float *t, int64_t ldt, int64_t i0, int64_t j0, int mr, int nr,
                             const int32_t MID, const int32_t CDT, const bool BIAS) {
    const __m256 alpha = _mm256_set1_ps(e->alpha), beta = _mm256_set1_ps(e->beta);
    const bool scale = e->alpha != 1.0f, bscale = e->beta != 1.0f;
    for (int r = 0; r < mr; r++) {
        const float *src = t + r * ldt;
        const int64_t base = e->c_off + (i0 + r) * e->c_rs + j0;
        const int64_t bbase = BIAS ? e->bias_off + (i0 + r) * e->bias_rs + j0 * e->bias_cs : 0;
        const __m256 bconst = BIAS && e->bias_cs == 0 ? gm_ld8_one(e->bias, e->bias_dt, bbase) : _mm256_setzero_ps();
        int j = 0;
        for (; j + 8 <= nr; j += 8) {
            __m256 x = gm_round256(_mm256_loadu_ps(src + j), MID);
            if (scale) x = _mm256_mul_ps(alpha, x);
            if (BIAS) {
                __m256 bv = e->bias_cs == 0 ? bconst : gm_ld8(e->bias, e->bias_dt, bbase + j);
                if (bscale) bv = _mm256_mul_ps(beta, bv);
                x = _mm256_add_ps(x, bv);
            }
            if (CDT == PA_GEMM_F16) {
                _mm_storeu_si128((__m128i *)((uint16_t *)e->c + base + j),
                                 _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            } else if (CDT == PA_GEMM_BF16) {
                _mm_storeu_si128((__m128i *)((uint16_t *)e->c + base + j), pa_bf16_pack_avx2(x));
            } else {
                _mm256_storeu_ps((float *)e->c + base + j, x);
            }
        }
        if (j < nr) pa_gemm_store_generic(e, src + j, ldt, i0 + r, j0 + j, 1, nr - j);
    }
}

static void store256(const gm_epi *e, const float *t, int64_t ldt, int64_t i0, int64_t j0, int mr, int nr) {
    const bool bias_ok = e->bias == NULL || ((e->bias_cs == 1 || e->bias_cs == 0) && e->bias_dt <= PA_GEMM_BF16);
    if (e->epi != NULL || e->c_cs != 1 || !bias_ok || e->c_dt > PA_GEMM_BF16 || e->mid_round > PA_GEMM_BF16) {
        pa_gemm_store_generic(e, t, ldt, i0, j0, mr, nr);
        return;
    }
    store_body256(e, t, ldt, i0, j0, mr, nr, e->mid_round, e->c_dt, e->bias != NULL);
}

/* ---- B packers: fp32 / fp16 row-major ---- */

/* 8 x 8 transpose: r[i] lane j -> r[j] lane i */
GM_INLINE void gm_tr8(__m256 *r) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
        r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
    }
}

/* B with its columns contiguous along k (a [n, k] weight passed transposed): 8 x 8
 * blocks of (k, column) transposed into panel rows; tails element by element */
static int pack_b_cols256(const pa_gemm_mat *b, int64_t p0, int64_t kc, int64_t j0, int64_t ncols, float *dst) {
    for (int64_t jp = 0; jp < ncols; jp += NR) {
        const int nr = ncols - jp < NR ? (int)(ncols - jp) : NR;
        float *panel = dst + jp * kc;
        const int64_t e0 = b->off + p0 + (j0 + jp) * b->cs;
        int64_t p = 0;
        if (nr == NR) {
            for (; p + 8 <= kc; p += 8) {
                for (int h = 0; h < 2; h++) {
                    __m256 r[8];
                    for (int c = 0; c < 8; c++) r[c] = gm_ld8(b->p, b->dt, e0 + p + (8 * h + c) * b->cs);
                    gm_tr8(r);
                    for (int i = 0; i < 8; i++) _mm256_storeu_ps(panel + (p + i) * NR + 8 * h, r[i]);
                }
            }
        }
        for (; p < kc; p++) {
            float *row = panel + p * NR;
            for (int j = 0; j < NR; j++) row[j] = j < nr ? gm_fval(b->dt, b->p, e0 + p + j * b->cs) : 0.0f;
        }
    }
    return 1;
}

/* fp32 chain A panels (F32 / F16 / BF16 rows contiguous along k): ap[p*MR + r] = A(i0 + r, p0 + p),
 * rows mr..MR zero; 8 k values of the 6 rows transposed at a time */
static int pack_a256(const pa_gemm_mat *a, int64_t i0, int mr, int64_t p0, int64_t kc, float *dst) {
    if (a->nz || a->cs != 1 || a->dt > PA_GEMM_BF16) return 0;
    const int64_t e0 = a->off + i0 * a->rs + p0;
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; i++) r[i] = i < mr ? gm_ld8(a->p, a->dt, e0 + i * a->rs + p) : _mm256_setzero_ps();
        gm_tr8(r);
        for (int i = 0; i < 8; i++) {
            float *row = dst + (p + i) * MR;
            if (p + i + 1 < kc) {
                _mm256_storeu_ps(row, r[i]); /* lanes 6, 7 land in the next row, written after */
            } else {
                float t[8];
                _mm256_storeu_ps(t, r[i]);
                for (int j = 0; j < MR; j++) row[j] = t[j];
            }
        }
    }
    for (; p < kc; p++) {
        for (int i = 0; i < MR; i++) dst[p * MR + i] = i < mr ? gm_fval(a->dt, a->p, e0 + i * a->rs + p) : 0.0f;
    }
    return 1;
}

static int pack_b256(const pa_gemm_mat *b, int64_t p0, int64_t kc, int64_t j0, int64_t ncols, int nr_, float *dst) {
    (void)nr_;
    if (!b->nz && b->rs == 1 && b->cs != 1 && b->dt <= PA_GEMM_BF16) return pack_b_cols256(b, p0, kc, j0, ncols, dst);
    if (b->nz || b->cs != 1 || (b->dt != PA_GEMM_F32 && b->dt != PA_GEMM_F16)) return 0;
    for (int64_t jp = 0; jp < ncols; jp += NR) {
        const int nr = ncols - jp < NR ? (int)(ncols - jp) : NR;
        float *panel = dst + jp * kc;
        const int64_t first = b->off + p0 * b->rs + j0 + jp;
        for (int64_t p = 0; p < kc; p++) {
            float *row = panel + p * NR;
            if (b->dt == PA_GEMM_F32) {
                const float *src = (const float *)b->p + first + p * b->rs;
                if (nr == NR) {
                    _mm256_storeu_ps(row, _mm256_loadu_ps(src));
                    _mm256_storeu_ps(row + 8, _mm256_loadu_ps(src + 8));
                } else {
                    _mm256_storeu_ps(row, _mm256_maskload_ps(src, gm_mask8(nr)));
                    _mm256_storeu_ps(row + 8, _mm256_maskload_ps(src + 8, gm_mask8(nr - 8)));
                }
            } else {
                const uint16_t *src = (const uint16_t *)b->p + first + p * b->rs;
                if (nr == NR) {
                    _mm256_storeu_ps(row, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)src)));
                    _mm256_storeu_ps(row + 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + 8))));
                } else {
                    for (int j = 0; j < NR; j++) row[j] = j < nr ? pa_f16_to_f32(src[j]) : 0.0f;
                }
            }
        }
    }
    return 1;
}

/* a pair (lo, hi) of 16-bit values as one word: hi 0 past the block */
GM_INLINE uint32_t gm_pair(const uint16_t *p, bool odd) { return odd ? (uint32_t)p[0] | (uint32_t)p[1] << 16 : p[0]; }

/* dot chain B panels (bf16): row[q][j] = B(p0 + 2q, j) | B(p0 + 2q + 1, j) << 16 */
static int pack_b_dot256(const pa_gemm_mat *b, int64_t p0, int64_t kc, int64_t j0, int64_t ncols, int nr_,
                         uint32_t *dst) {
    (void)nr_;
    if (b->nz || b->dt != PA_GEMM_BF16) return 0;
    const uint16_t *base = b->p;
    const int64_t kq = (kc + 1) / 2;
    if (b->cs == 1) {
        /* rows contiguous along n: two rows interleaved 16 bits at a time */
        for (int64_t jp = 0; jp < ncols; jp += NR) {
            const int nr = ncols - jp < NR ? (int)(ncols - jp) : NR;
            uint32_t *panel = dst + jp * kq;
            const uint16_t *col = base + b->off + p0 * b->rs + j0 + jp;
            for (int64_t q = 0; q < kq; q++) {
                const uint16_t *r0 = col + 2 * q * b->rs, *r1 = r0 + b->rs;
                const bool odd = 2 * q + 1 < kc;
                uint32_t *row = panel + q * NR;
                if (nr == NR) {
                    const __m256i x0 = _mm256_loadu_si256((const __m256i *)r0);
                    const __m256i x1 = odd ? _mm256_loadu_si256((const __m256i *)r1) : _mm256_setzero_si256();
                    const __m256i lo = _mm256_unpacklo_epi16(x0, x1), hi = _mm256_unpackhi_epi16(x0, x1);
                    _mm256_storeu_si256((__m256i *)row, _mm256_permute2x128_si256(lo, hi, 0x20));
                    _mm256_storeu_si256((__m256i *)(row + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
                } else {
                    for (int j = 0; j < NR; j++) row[j] = j < nr ? (uint32_t)r0[j] | (odd ? (uint32_t)r1[j] << 16 : 0u) : 0u;
                }
            }
        }
        return 1;
    }
    if (b->rs == 1) {
        /* columns contiguous along k: each pair is two neighbours of the column */
        for (int64_t jp = 0; jp < ncols; jp += NR) {
            const int nr = ncols - jp < NR ? (int)(ncols - jp) : NR;
            uint32_t *panel = dst + jp * kq;
            for (int j = 0; j < NR; j++) {
                if (j >= nr) {
                    for (int64_t q = 0; q < kq; q++) panel[q * NR + j] = 0u;
                    continue;
                }
                const uint16_t *c = base + b->off + p0 + (j0 + jp + j) * b->cs;
                const int64_t full = kc / 2;
                int64_t q = 0;
                if (nr == NR) q = full / 8 * 8; /* whole blocks: transposed below */
                for (; q < full; q++) panel[q * NR + j] = gm_pair(c + 2 * q, true);
                if (full < kq) panel[full * NR + j] = gm_pair(c + 2 * full, false);
            }
            if (nr == NR) {
                /* 8 pairs (32-bit words) of 8 columns at a time, transposed */
                for (int64_t q = 0; q + 8 <= kc / 2; q += 8) {
                    for (int h = 0; h < 2; h++) {
                        __m256 r[8];
                        for (int c = 0; c < 8; c++) {
                            const uint16_t *col = base + b->off + p0 + 2 * q + (j0 + jp + 8 * h + c) * b->cs;
                            r[c] = _mm256_loadu_ps((const float *)(const void *)col);
                        }
                        gm_tr8(r);
                        for (int i = 0; i < 8; i++) _mm256_storeu_ps((float *)(void *)(panel + (q + i) * NR + 8 * h), r[i]);
                    }
                }
            }
        }
        return 1;
    }
    return 0;
}

/* dot chain A panels (bf16, rows contiguous along k): ap[q*MR + r] = A(r, 2q) | A(r, 2q+1) << 16 */
static int pack_a_dot256(const pa_gemm_mat *a, int64_t i0, int mr, int64_t p0, int64_t kc, uint32_t *dst) {
    if (a->nz || a->dt != PA_GEMM_BF16 || (a->cs != 1 && a->rs != 1)) return 0;
    const uint16_t *base = a->p;
    const int64_t kq = (kc + 1) / 2, full = kc / 2;
    if (a->cs != 1) {
        /* columns contiguous along m (a transposed operand): the mr values of k 2q and 2q + 1
         * interleaved 16 bits at a time */
        for (int64_t q = 0; q < kq; q++) {
            uint16_t x0[8] = {0}, x1[8] = {0};
            const uint16_t *c0 = base + a->off + i0 + (p0 + 2 * q) * a->cs;
            memcpy(x0, c0, (size_t)mr * 2);
            if (2 * q + 1 < kc) memcpy(x1, c0 + a->cs, (size_t)mr * 2);
            const __m128i v0 = _mm_loadu_si128((const __m128i *)x0), v1 = _mm_loadu_si128((const __m128i *)x1);
            uint32_t w[8];
            _mm_storeu_si128((__m128i *)w, _mm_unpacklo_epi16(v0, v1));
            _mm_storeu_si128((__m128i *)(w + 4), _mm_unpackhi_epi16(v0, v1));
            for (int r = 0; r < MR; r++) dst[q * MR + r] = w[r];
        }
        return 1;
    }
    for (int r = 0; r < MR; r++) {
        if (r >= mr) {
            for (int64_t q = 0; q < kq; q++) dst[q * MR + r] = 0u;
            continue;
        }
        const uint16_t *src = base + a->off + (i0 + r) * a->rs + p0;
        for (int64_t q = 0; q < full; q++) dst[q * MR + r] = gm_pair(src + 2 * q, true);
        if (full < kq) dst[full * MR + r] = gm_pair(src + 2 * full, false);
    }
    return 1;
}

/* fp32 -> fp16 (RNE, no exceptions) -> fp32 in place; F16C rounds as pa_f32_to_f16 */
static void round_f16_256(float *p, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(p + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_ps(p + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) {
        const __m128i h = _mm_cvtps_ph(_mm_set_ss(p[i]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        p[i] = _mm_cvtss_f32(_mm_cvtph_ps(h));
    }
}

/* ---- the fp32 GEMV (gm_tier.gemv_f32): k blocks of 8 rows of B streamed over all the
 * columns, C as the running chain (zero before the first block), no call per tile ---- */

GM_INLINE void gemv_f32_body(const float *a, int64_t lda, const float *b, int64_t ldb, int64_t K, int64_t n, float *c,
                             int64_t ldc, const int R) {
    for (int64_t p0 = 0; p0 < K; p0 += 8) {
        const int kb = K - p0 < 8 ? (int)(K - p0) : 8;
        const bool first = p0 == 0;
        const float *bp = b + p0 * ldb;
        int64_t j = 0;
        for (; j + 16 <= n; j += 16) {
            __m256 c0[4], c1[4];
            for (int r = 0; r < R; r++) {
                c0[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + j);
                c1[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + j + 8);
            }
            for (int p = 0; p < kb; p++) {
                const __m256 b0 = _mm256_loadu_ps(bp + p * ldb + j), b1 = _mm256_loadu_ps(bp + p * ldb + j + 8);
                for (int r = 0; r < R; r++) {
                    const __m256 av = _mm256_broadcast_ss(a + r * lda + p0 + p);
                    c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
                    c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
                }
            }
            for (int r = 0; r < R; r++) {
                _mm256_storeu_ps(c + r * ldc + j, c0[r]);
                _mm256_storeu_ps(c + r * ldc + j + 8, c1[r]);
            }
        }
        for (; j < n; j++) { /* fmaf: the same single rounding as the vector FMA */
            for (int r = 0; r < R; r++) {
                float v = first ? 0.0f : c[r * ldc + j];
                for (int p = 0; p < kb; p++) v = fmaf(a[r * lda + p0 + p], bp[p * ldb + j], v);
                c[r * ldc + j] = v;
            }
        }
    }
}

#define GM_GF(R)                                                                                              \
    static void gf256_##R(const float *a, int64_t lda, const float *b, int64_t ldb, int64_t K, int64_t n,    \
                          float *c, int64_t ldc) {                                                            \
        gemv_f32_body(a, lda, b, ldb, K, n, c, ldc, R);                                                       \
    }
GM_GF(1) GM_GF(2) GM_GF(3) GM_GF(4)
#undef GM_GF

static void gemv_f32_256(const float *a, int64_t lda, int mr, const float *b, int64_t ldb, int64_t K, int64_t n,
                         float *c, int64_t ldc) {
    switch (mr) {
    case 1: gf256_1(a, lda, b, ldb, K, n, c, ldc); break;
    case 2: gf256_2(a, lda, b, ldb, K, n, c, ldc); break;
    case 3: gf256_3(a, lda, b, ldb, K, n, c, ldc); break;
    default: gf256_4(a, lda, b, ldb, K, n, c, ldc); break;
    }
}

/* ---- the fused GEMV of int8 / int4 weights stored [n, k] (gm_tier.gemv_q) ---- */

/* 8 weights (fp32 values) dequantised as gm_dequant: offset added, scale applied, each rounded to RDT */
GM_INLINE __m256 gm_deq8(__m256 w, __m256 s, __m256 o, const int RDT, const int HAS_O) {
    if (HAS_O) w = gm_round256(_mm256_add_ps(w, o), RDT);
    return gm_round256(_mm256_mul_ps(w, s), RDT);
}

/* bytes 0..7 (hi: 8..15) of x as 8 fp32 values */
GM_INLINE __m256 gm_b2f_lo(__m128i x) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(x)); }
GM_INLINE __m256 gm_b2f_hi(__m128i x) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(x, 8))); }

/* weights ahead of the fused GEMV's reads, per stream */
#define GM_QPF 512

/* v[c] = m(g, j + c) for c < nc, fill for the rest (all of them when absent) */
GM_INLINE void gm_qrow8(const pa_gemm_mat *m, bool present, int64_t g, int64_t j, int nc, float fill, float *v) {
    if (present && !m->nz && (m->dt == PA_GEMM_F16 || m->dt == PA_GEMM_F32)) {
        const int64_t first = m->off + g * m->rs + j * m->cs;
        if (m->dt == PA_GEMM_F16) { /* F16C: the same values as pa_f16_to_f32 */
            uint16_t h[16];
            const uint16_t *src = (const uint16_t *)m->p + first;
            for (int c = 0; c < 16; c++) h[c] = c < nc ? src[c * m->cs] : 0;
            _mm256_storeu_ps(v, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)));
            _mm256_storeu_ps(v + 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + 8))));
        } else {
            const float *src = (const float *)m->p + first;
            for (int c = 0; c < nc; c++) v[c] = src[c * m->cs];
        }
        for (int c = nc; c < 16; c++) v[c] = fill;
        return;
    }
    for (int c = 0; c < 16; c++) v[c] = present && c < nc ? gm_fval(m->dt, m->p, gm_index(m, g, j + c)) : fill;
}

/* 4 rows of A (zero rows past mr, lda apart), 16 columns j.. (nc of them), over k
 * in blocks of 16 values (group % 16 == 0): each output one fma chain in k order,
 * the weight dequantised as gm_dequant. Full blocks transpose bytes in registers;
 * the k tail and fewer than 16 columns go through a dequantised 16 x 16 block. */
GM_INLINE void gemv_q_body256(const float *a, int64_t lda, const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t K,
                              int64_t j, int nc, float *tile, const int DT, const int RDT, const bool HAS_O,
                              const int R) {
    const uint8_t *wb = b->p;
    const bool has_s = q->scale.p != NULL;
    __m256 acc[4][2];
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    float st[16], ot[16];
    const int64_t cs = b->cs, e0 = b->off + j * cs;
    const int64_t glen = q->group > 0 ? q->group : K;
    int64_t g = -1, gnext = 0;
    for (int64_t p = 0; p < K; p += 16) {
        const int np = K - p < 16 ? (int)(K - p) : 16;
        if (p == gnext) {
            g++;
            gnext += glen;
            gm_qrow8(&q->scale, has_s, g, j, nc, 1.0f, st);
            gm_qrow8(&q->offset, HAS_O, g, j, nc, 0.0f, ot);
        }
        if ((p & 63) == 0 && p + GM_QPF < K) {
            for (int c = 0; c < nc; c++) {
                const int64_t e = e0 + p + GM_QPF + c * cs;
                _mm_prefetch((const char *)(wb + (DT == PA_GEMM_S4 ? e >> 1 : e)), _MM_HINT_T0);
            }
        }
        const float *ap = a + p;
        const __m256 s0 = _mm256_loadu_ps(st), s1 = _mm256_loadu_ps(st + 8);
        const __m256 o0 = _mm256_loadu_ps(ot), o1 = _mm256_loadu_ps(ot + 8);
        if (np == 16 && nc == 16) {
            __m128i x[16];
#pragma GCC unroll 16
            for (int c = 0; c < 16; c++) x[c] = gm_bytes16(wb, e0 + p + c * cs, DT);
            gm_tr16_bytes(x);
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) {
                const __m256 w0 = gm_deq8(gm_b2f_lo(x[i]), s0, o0, RDT, HAS_O);
                const __m256 w1 = gm_deq8(gm_b2f_hi(x[i]), s1, o1, RDT, HAS_O);
#pragma GCC unroll 4
                for (int r = 0; r < R; r++) {
                    const __m256 av = _mm256_set1_ps(ap[r * lda + i]);
                    acc[r][0] = _mm256_fmadd_ps(av, w0, acc[r][0]);
                    acc[r][1] = _mm256_fmadd_ps(av, w1, acc[r][1]);
                }
            }
            continue;
        }
        float wt[16][16] __attribute__((aligned(32)));
        for (int c = 0; c < 16; c++) {
            for (int i = 0; i < 16; i++) {
                wt[i][c] = c < nc && i < np ? gm_fval(DT, wb, e0 + p + i + c * cs) : 0.0f;
            }
        }
        for (int i = 0; i < np; i++) {
            const __m256 w0 = gm_deq8(_mm256_load_ps(wt[i]), s0, o0, RDT, HAS_O);
            const __m256 w1 = gm_deq8(_mm256_load_ps(wt[i] + 8), s1, o1, RDT, HAS_O);
            for (int r = 0; r < R; r++) {
                const __m256 av = _mm256_set1_ps(ap[r * lda + i]);
                acc[r][0] = _mm256_fmadd_ps(av, w0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(av, w1, acc[r][1]);
            }
        }
    }
    for (int r = 0; r < R; r++) {
        _mm256_storeu_ps(tile + r * 16, acc[r][0]);
        _mm256_storeu_ps(tile + r * 16 + 8, acc[r][1]);
    }
}

typedef void (*gm_gemvq256_fn)(const float *a, int64_t lda, const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t K,
                            int64_t j, int nc, float *tile);
#define GM_GQ(NAME, DT, RDT, R)                                                                               \
    static void NAME(const float *a, int64_t lda, const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t K,    \
                     int64_t j, int nc, float *tile) {                                                        \
        gemv_q_body256(a, lda, b, q, K, j, nc, tile, DT, RDT, q->offset.p != NULL, R);                        \
    }
#define GM_GQ_R(S, DT, RDTN, RDT) GM_GQ(gq256_##S##_##RDTN##_1, DT, RDT, 1) GM_GQ(gq256_##S##_##RDTN##_4, DT, RDT, 4)
GM_GQ_R(s8, PA_GEMM_S8, h, PA_GEMM_F16)
GM_GQ_R(s8, PA_GEMM_S8, b, PA_GEMM_BF16)
GM_GQ_R(s8, PA_GEMM_S8, f, PA_GEMM_F32)
GM_GQ_R(s4, PA_GEMM_S4, h, PA_GEMM_F16)
GM_GQ_R(s4, PA_GEMM_S4, b, PA_GEMM_BF16)
GM_GQ_R(s4, PA_GEMM_S4, f, PA_GEMM_F32)
#undef GM_GQ
#undef GM_GQ_R
#define GM_GQ_ROW(S, RDTN) {gq256_##S##_##RDTN##_1, gq256_##S##_##RDTN##_4}
/* [S4?][round: F16, BF16, F32][4 rows?] (the offset's presence is a branch) */
static const gm_gemvq256_fn k_gq256[2][3][2] = {
    {GM_GQ_ROW(s8, h), GM_GQ_ROW(s8, b), GM_GQ_ROW(s8, f)},
    {GM_GQ_ROW(s4, h), GM_GQ_ROW(s4, b), GM_GQ_ROW(s4, f)},
};
#undef GM_GQ_ROW

static int gemv_q256(const float *a, int64_t lda, int mr, const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t K,
                     int64_t j, int nc, float *tile) {
    if (b->nz || b->rs != 1 || mr > 4 || (q->group != 0 && q->group % 16 != 0)) return 0;
    if (b->dt == PA_GEMM_S4 && ((b->off & 1) || (b->cs & 1))) return 0;
    const int ri = q->round_dt == PA_GEMM_F16 ? 0 : q->round_dt == PA_GEMM_BF16 ? 1 : 2;
    k_gq256[b->dt == PA_GEMM_S4][ri][mr > 1](a, lda, b, q, K, j, nc, tile);
    return 1;
}

/* A dequantised B block for the GEMM (gm_tier.pack_bq) of int8 / int4 weights stored
 * [n, k] (rs == 1): 16 x 16 blocks as bytes, transposed in registers, dequantised a
 * panel row (16 columns) at a time; the k tail and a last panel of fewer columns
 * through a 16 x 16 block of raw values. Other layouts: 0 (the generic packer). */
GM_INLINE void pack_bq_body256(const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t p0, int64_t kc, int64_t j0,
                               int64_t ncols, float *dst, const int DT, const int32_t RDT, const bool HAS_O) {
    const uint8_t *wb = b->p;
    const bool has_s = q->scale.p != NULL;
    const int64_t cs = b->cs;
    float st[16], ot[16];
    for (int64_t jp = 0; jp < ncols; jp += NR) {
        const int nc = ncols - jp < NR ? (int)(ncols - jp) : NR;
        const int64_t e0 = b->off + p0 + (j0 + jp) * cs;
        float *panel = dst + jp * kc;
        int64_t gcur = -1;
        for (int64_t p = 0; p < kc; p += 16) {
            const int np = kc - p < 16 ? (int)(kc - p) : 16;
            const int64_t g = q->group > 0 ? (p0 + p) / q->group : 0;
            if (g != gcur) {
                gm_qrow8(&q->scale, has_s, g, j0 + jp, nc, 1.0f, st);
                gm_qrow8(&q->offset, HAS_O, g, j0 + jp, nc, 0.0f, ot);
                gcur = g;
            }
            const __m256 s0 = _mm256_loadu_ps(st), s1 = _mm256_loadu_ps(st + 8);
            const __m256 o0 = _mm256_loadu_ps(ot), o1 = _mm256_loadu_ps(ot + 8);
            float *row = panel + p * NR;
            if (np == 16 && nc == 16) {
                __m128i x[16];
#pragma GCC unroll 16
                for (int c = 0; c < 16; c++) x[c] = gm_bytes16(wb, e0 + p + c * cs, DT);
                gm_tr16_bytes(x);
#pragma GCC unroll 16
                for (int i = 0; i < 16; i++) {
                    _mm256_storeu_ps(row + i * NR, gm_deq8(gm_b2f_lo(x[i]), s0, o0, RDT, HAS_O));
                    _mm256_storeu_ps(row + i * NR + 8, gm_deq8(gm_b2f_hi(x[i]), s1, o1, RDT, HAS_O));
                }
                continue;
            }
            float wt[16][16] __attribute__((aligned(32)));
            for (int c = 0; c < 16; c++) {
                for (int i = 0; i < 16; i++) wt[i][c] = c < nc && i < np ? gm_fval(DT, wb, e0 + p + i + c * cs) : 0.0f;
            }
            const __m256 keep0 = _mm256_castsi256_ps(gm_mask8(nc)), keep1 = _mm256_castsi256_ps(gm_mask8(nc - 8));
            for (int i = 0; i < np; i++) {
                const __m256 w0 = gm_deq8(_mm256_load_ps(wt[i]), s0, o0, RDT, HAS_O);
                const __m256 w1 = gm_deq8(_mm256_load_ps(wt[i] + 8), s1, o1, RDT, HAS_O);
                _mm256_storeu_ps(row + i * NR, _mm256_and_ps(w0, keep0));
                _mm256_storeu_ps(row + i * NR + 8, _mm256_and_ps(w1, keep1));
            }
        }
    }
}

static void pq256_s8(const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t p0, int64_t kc, int64_t j0, int64_t ncols,
                     float *dst) {
    pack_bq_body256(b, q, p0, kc, j0, ncols, dst, PA_GEMM_S8, q->round_dt, q->offset.p != NULL);
}
static void pq256_s4(const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t p0, int64_t kc, int64_t j0, int64_t ncols,
                     float *dst) {
    pack_bq_body256(b, q, p0, kc, j0, ncols, dst, PA_GEMM_S4, q->round_dt, q->offset.p != NULL);
}

static int pack_bq256(const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t p0, int64_t kc, int64_t j0, int64_t ncols,
                      float *dst) {
    if (b->nz || b->rs != 1 || b->cs == 1 || (q->group != 0 && q->group % 16 != 0) || p0 % 16 != 0) return 0;
    if (b->dt == PA_GEMM_S4 && (((b->off + p0) & 1) || (b->cs & 1))) return 0;
    (b->dt == PA_GEMM_S4 ? pq256_s4 : pq256_s8)(b, q, p0, kc, j0, ncols, dst);
    return 1;
}

const gm_tier pa_gemm_tier_avx2 = {
    .isa = PA_ISA_AVX2,
    .mr = MR,
    .nr = NR,
    .kc = 256,
    .mc = 240,
    .nc = 256, /* a 256 x 256 fp32 B block (256 KB) stays in a 512 KB L2: 1024^3 23.7 -> 17.3 ms */
    .ukr = ukr256,
    .ukr_dot = dot256,
    .store = store256,
    .pack_b = pack_b256,
    .pack_b_dot = pack_b_dot256,
    .pack_a_dot = pack_a_dot256,
    .pack_a = pack_a256,
    .round_f16 = round_f16_256,
    .gemv_q = gemv_q256,
    .gemv_f32 = gemv_f32_256,
    .pack_bq = pack_bq256,
};

#undef MR
#undef NR
#undef GM_DAZ_FTZ
#undef GM_QPF
#undef GM_INLINE
#undef GM_INSTANCES
#undef GM_UKR
#undef GM_DOT
#undef GM_REF_UKR
#undef GM_REF_DOT
#endif
