/* The GEMM's internals (gemm.h): the tier interface, the packed layouts and
 * the element readers every tier shares.
 *
 * Packed layouts (one unit = rows [i0, i1) x columns [j0, j1) of one batch):
 *   A panel (MR rows):  ap[p*MR + r]            fp32 (the fp32 chain)
 *                       ap[q*MR + r]            uint32 bf16 pairs (the dot chain):
 *                                               low half A(r, 2q), high half A(r, 2q+1)
 *   B panels (NR cols): bp[jp*kc*NR + p*NR + j] fp32, zero-padded past the last column
 *                       bp[jp*kq*NR + q*NR + j] uint32 pairs B(2q, j) | B(2q+1, j) << 16
 * The fp32 micro-kernel may instead read an fp32 row-major B in place
 * (b + p*ldb + j, columns past nr never touched).
 * The micro-kernel computes an mr x nr tile (mr <= MR, nr <= NR) of C into an
 * fp32 tile t (t + r*ldt + j), starting from 0 or from t's values (load). */
#ifndef PA_GEMM_IMPL_H
#define PA_GEMM_IMPL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/pa_half.h"
#include "kernels/gemm/gemm.h"

typedef struct gm_ukr {
    int64_t k;        /* fp32 chain: k steps; dot chain: pairs */
    const void *a;    /* packed A panel */
    const void *b;    /* packed B panel, or the fp32 B itself */
    int64_t ldb;      /* elements (fp32) or pairs between rows of b */
    float *t;         /* the fp32 tile */
    int64_t ldt;
    int32_t load;     /* 1: the chain continues from t */
    int32_t mr, nr;
    int32_t bfull;    /* b has NR readable columns (packed, zero-padded) */
    int32_t pf;       /* > 0: while reading row p of b, prefetch the row's floats pf columns
                       * ahead (B read in place: a later strip's lines, that no stream covers) */
} gm_ukr;

/* The output side of a unit: C, the bias and the epilogue, resolved for one batch. */
typedef struct gm_epi {
    char *c;
    int32_t c_dt;
    int64_t c_off, c_rs, c_cs;
    const char *bias;  /* NULL: none */
    int32_t bias_dt;
    int64_t bias_off, bias_rs, bias_cs;
    float alpha, beta;
    int32_t mid_round;
    pa_gemm_epi_fn epi;
    void *epi_ctx;
    int64_t bidx;
} gm_epi;

/* One tier's kernels and block sizes. */
typedef struct gm_tier {
    pa_isa isa;
    int32_t mr, nr;
    int64_t kc, mc, nc; /* kc: k values per block (even) */
    void (*ukr)(const gm_ukr *u);
    void (*ukr_dot)(const gm_ukr *u);
    /* the epilogue of an mr x nr tile t (t + r*ldt + j) at C rows i0.., columns j0.. */
    void (*store)(const gm_epi *e, const float *t, int64_t ldt, int64_t i0, int64_t j0, int mr, int nr);
    /* B block packers for common layouts: return 1 when done, 0 to fall back */
    int (*pack_b)(const pa_gemm_mat *b, int64_t p0, int64_t kc, int64_t j0, int64_t ncols, int nr, float *dst);
    int (*pack_b_dot)(const pa_gemm_mat *b, int64_t p0, int64_t kc, int64_t j0, int64_t ncols, int nr,
                      uint32_t *dst);
    /* a dequantised (S8 / S4) B block, as pack_b */
    int (*pack_bq)(const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t p0, int64_t kc, int64_t j0, int64_t ncols,
                   float *dst);
    /* the product of mr (<= 4) fp32 rows a (row stride lda) with nc (<= 16) columns
     * j.. of a dequantised B whose columns are contiguous along k (rs == 1), over
     * all k: tile[r*16 + c] (NULL: the tier has none; 0: not this layout) */
    /* C (fp32, row stride ldc) = the product of mr (<= 4) fp32 rows a (row stride lda) with
     * an fp32 row-major B (row stride ldb), n columns, over all k: each output one fma chain
     * in k order from 0 (NULL: the tier has none) */
    void (*gemv_f32)(const float *a, int64_t lda, int mr, const float *b, int64_t ldb, int64_t k, int64_t n,
                     float *c, int64_t ldc);
    int (*gemv_q)(const float *a, int64_t lda, int mr, const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t k,
                  int64_t j, int nc, float *tile);
    /* A panel packers (mr rows from i0, kc values from p0; MR-strided): 1 when done, 0 to fall back */
    int (*pack_a)(const pa_gemm_mat *a, int64_t i0, int mr, int64_t p0, int64_t kc, float *dst);
    int (*pack_a_dot)(const pa_gemm_mat *a, int64_t i0, int mr, int64_t p0, int64_t kc, uint32_t *dst);
    /* n packed fp32 values rounded to fp16 and back in place (RNE, as pa_f32_to_f16;
     * NULL: the scalar loop) */
    void (*round_f16)(float *p, int64_t n);
} gm_tier;

extern const gm_tier pa_gemm_tier_scalar;
#if defined(PA_HAVE_X86_KERNELS)
extern const gm_tier pa_gemm_tier_avx2;
extern const gm_tier pa_gemm_tier_avx512;
extern const gm_tier pa_gemm_tier_avx512bf16;
#endif

/* The generic epilogue (any layout and dtype), the definition's order. */
void pa_gemm_store_generic(const gm_epi *e, const float *t, int64_t ldt, int64_t i0, int64_t j0, int mr, int nr);

/* ---- element readers ---- */

/* Index of element (r, c) of m (storage elements; nibbles for S4). */
static inline int64_t gm_index(const pa_gemm_mat *m, int64_t r, int64_t c) {
    if (!m->nz) return m->off + r * m->rs + c * m->cs;
    const pa_gemm_nz *z = &m->nzl;
    if (z->trans) {
        const int64_t t = r;
        r = c;
        c = t;
    }
    const int64_t c0 = z->c0, q = c / c0, rest = z->cols - q * c0;
    const int64_t w = z->padded ? c0 : (rest < c0 ? rest : c0);
    return m->off + q * z->prow * c0 + r * w + (c - q * c0);
}

static inline float gm_fval(int32_t dt, const void *p, int64_t i) {
    switch (dt) {
    case PA_GEMM_F16: return pa_f16_to_f32(((const uint16_t *)p)[i]);
    case PA_GEMM_BF16: return pa_bf16_to_f32(((const uint16_t *)p)[i]);
    case PA_GEMM_S8: return (float)((const int8_t *)p)[i];
    case PA_GEMM_S4: {
        const uint8_t byte = ((const uint8_t *)p)[i >> 1];
        const int v = (i & 1) ? byte >> 4 : byte & 15;
        return (float)(v >= 8 ? v - 16 : v);
    }
    default: return ((const float *)p)[i];
    }
}

static inline float gm_round(float x, int32_t dt) {
    if (dt == PA_GEMM_F16) return pa_f16_to_f32(pa_f32_to_f16(x));
    if (dt == PA_GEMM_BF16) return pa_bf16_to_f32(pa_f32_to_bf16(x));
    return x;
}

/* B(p, j) of a dequantised (S8 / S4) B, with the quantisation resolved for its batch. */
static inline float gm_dequant(const pa_gemm_mat *b, const pa_gemm_quant *q, int64_t p, int64_t j) {
    float w = gm_fval(b->dt, b->p, gm_index(b, p, j));
    const int64_t g = q->group > 0 ? p / q->group : 0;
    if (q->offset.p != NULL) {
        w = gm_round(w + gm_fval(q->offset.dt, q->offset.p, gm_index(&q->offset, g, j)), q->round_dt);
    }
    const float s = q->scale.p != NULL ? gm_fval(q->scale.dt, q->scale.p, gm_index(&q->scale, g, j)) : 1.0f;
    return gm_round(w * s, q->round_dt);
}

/* The 16-bit pattern of a bf16 A or B element (the dot chain reads bits). */
static inline uint32_t gm_bits16(const pa_gemm_mat *m, int64_t r, int64_t c) {
    return ((const uint16_t *)m->p)[gm_index(m, r, c)];
}

#endif
