/* The attention kernels' tiling (attn.h defines the numbers): blocks of
 * PA_ATTN_BR query rows against blocks of PA_ATTN_BC keys, the products on
 * the library GEMM, the row steps on the NN row kernels and attn_rows.inc.
 * Threads take whole row blocks (forward) or whole (batch, kv head) groups
 * (backward): no element is ever summed by two threads. */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "common/pa_half.h"
#include "kernels/attention/attn.h"
#include "kernels/gemm/gemm.h"
#include "kernels/nn/nn_vec.h"
#include "runtime/pa_threadpool.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__STRICT_ANSI__)
#pragma GCC optimize("fp-contract=off")
#endif

#define BR PA_ATTN_BR
#define BC PA_ATTN_BC
#define BAND_INF ((int64_t)1 << 62)
#define SMALL_M 16 /* row blocks this small take the keys-as-rows score product */

const pa_attn_rows *pa_attn_rows_for(pa_isa isa) {
#if defined(PA_HAVE_X86_KERNELS)
    if (isa >= PA_ISA_AVX512) return &pa_attn_rows_avx512;
    if (isa >= PA_ISA_AVX2) return &pa_attn_rows_avx2;
#else
    (void)isa;
#endif
    return &pa_attn_rows_scalar;
}

/* ---- element access ---- */

static size_t dt_size(int32_t dt) { return dt == PA_GEMM_F32 ? 4 : 2; }

static float ld(const pa_attn_tensor *t, int64_t e) {
    const char *p = (const char *)t->p;
    switch (t->dt) {
    case PA_GEMM_F16: {
        uint16_t h;
        memcpy(&h, p + e * 2, 2);
        return pa_f16_to_f32(h);
    }
    case PA_GEMM_BF16: {
        uint16_t h;
        memcpy(&h, p + e * 2, 2);
        return pa_bf16_to_f32(h);
    }
    default: {
        float f;
        memcpy(&f, p + e * 4, 4);
        return f;
    }
    }
}

static void st(const pa_attn_tensor *t, int64_t e, float v) {
    char *p = (char *)t->p;
    switch (t->dt) {
    case PA_GEMM_F16: {
        const uint16_t h = pa_f32_to_f16(v);
        memcpy(p + e * 2, &h, 2);
        break;
    }
    case PA_GEMM_BF16: {
        const uint16_t h = pa_f32_to_bf16(v);
        memcpy(p + e * 2, &h, 2);
        break;
    }
    default: memcpy(p + e * 4, &v, 4); break;
    }
}

static int64_t eoff(const pa_attn_tensor *t, int64_t b, int64_t n, int64_t s, int64_t d) {
    return t->off + b * t->sb + n * t->sn + s * t->ss + d * t->sd;
}

/* A GEMM operand over tensor t at (b, n, s, 0): rows along s (or along n when
 * rows_are_heads), columns along d; trans swaps them. */
static pa_gemm_mat mat_of(const pa_attn_tensor *t, int64_t b, int64_t n, int64_t s, bool rows_are_heads,
                          bool trans) {
    pa_gemm_mat m;
    memset(&m, 0, sizeof m);
    m.p = t->p;
    m.dt = t->dt;
    m.off = eoff(t, b, n, s, 0);
    const int64_t rs = rows_are_heads ? t->sn : t->ss;
    m.rs = trans ? t->sd : rs;
    m.cs = trans ? rs : t->sd;
    return m;
}

static pa_gemm_mat mat_f32(const float *p, int64_t rs, int64_t cs) {
    pa_gemm_mat m;
    memset(&m, 0, sizeof m);
    m.p = p;
    m.dt = PA_GEMM_F32;
    m.rs = rs;
    m.cs = cs;
    return m;
}

static pa_gemm_mat mat_16(const void *p, int32_t dt, int64_t rs, int64_t cs) {
    pa_gemm_mat m = mat_f32(p, rs, cs);
    m.dt = dt;
    return m;
}

static pa_gemm_out out_f32(float *p, int64_t rs) {
    pa_gemm_out o;
    memset(&o, 0, sizeof o);
    o.p = p;
    o.dt = PA_GEMM_F32;
    o.rs = rs;
    o.cs = 1;
    return o;
}

/* ---- a block of rows ---- */

/* Rows r < m: query i0 + r of head n0 (rows of one head), or query 0 of head
 * n0 + r (heads: the Sq == 1 shape, the group's heads together). */
typedef struct rowblk {
    int64_t b, g, n0, i0, m;
    bool heads;
} rowblk;

static int64_t rb_head(const rowblk *r, int64_t k) { return r->heads ? r->n0 + k : r->n0; }
static int64_t rb_query(const rowblk *r, int64_t k) { return r->heads ? r->i0 : r->i0 + k; }

static int64_t sat_add(int64_t a, int64_t b) {
    const int64_t s = a + b; /* |a|, |b| < 2^62 */
    return s;
}

/* The key range [*j0, *j1) the band allows to any row of the block. */
static void rb_keys(const pa_attn_args *a, const rowblk *r, int64_t *j0, int64_t *j1) {
    const int64_t ifirst = rb_query(r, 0), ilast = rb_query(r, r->m - 1);
    int64_t lo = sat_add(ifirst, a->band_lo), hi = sat_add(ilast, a->band_hi) + 1;
    if (lo < 0) lo = 0;
    if (hi > a->Skv) hi = a->Skv;
    if (hi < lo) hi = lo;
    *j0 = lo;
    *j1 = hi;
}

/* Scores of the block's rows against keys [j0, j0 + nb): S[r*BC + j]. */
static void scores(const pa_attn_args *a, const rowblk *r, int64_t j0, int64_t nb, float *S, pa_isa isa,
                   const pa_attn_rows *rows) {
    pa_gemm_args g;
    pa_gemm_init(&g);
    const bool pse = a->pse.p != NULL;
    const bool swap = r->m <= SMALL_M;
    if (swap) {
        /* few rows (decode): S^T = K @ Q^T, the keys as GEMM rows (contiguous
         * panels); the same chain per element (fma and the bf16 pair step are
         * symmetric in their two factors), so the same bits */
        g.m = nb;
        g.n = r->m;
        g.k = a->Dk;
        g.a = mat_of(&a->k, r->b, r->g, j0, false, false);
        g.b = mat_of(&a->q, r->b, r->n0, r->i0, r->heads, true);
        g.c = out_f32(S, 1);
        g.c.cs = BC;
    } else {
        g.m = r->m;
        g.n = nb;
        g.k = a->Dk;
        g.a = mat_of(&a->q, r->b, r->n0, r->i0, r->heads, false);
        g.b = mat_of(&a->k, r->b, r->g, j0, false, true);
        g.c = out_f32(S, BC);
    }
    if (pse && a->pse_mode == PA_ATTN_PSE_OUTER) {
        g.alpha = a->scale;
        g.bias = mat_of(&a->pse, r->b, r->n0, r->i0, r->heads, swap);
        g.bias.off += j0 * a->pse.sd;
        g.beta = 1.0f;
    } else if (!pse) {
        g.alpha = a->scale;
    }
    pa_gemm_on(&g, isa);
    for (int64_t k = 0; k < r->m; k++) {
        float *s = S + k * BC;
        const int64_t n = rb_head(r, k), i = rb_query(r, k);
        if (pse && a->pse_mode == PA_ATTN_PSE_INNER) {
            float tmp[BC];
            const int64_t e0 = eoff(&a->pse, r->b, n, i, j0);
            for (int64_t j = 0; j < nb; j++) tmp[j] = ld(&a->pse, e0 + j * a->pse.sd);
            rows->add_scale(s, tmp, a->scale, nb);
        }
        /* band: keys j with lo <= j - i <= hi */
        const int64_t lo = sat_add(i, a->band_lo) - j0, hi = sat_add(i, a->band_hi) - j0;
        for (int64_t j = 0; j < nb && j < lo; j++) s[j] = -INFINITY;
        for (int64_t j = hi + 1 < 0 ? 0 : hi + 1; j < nb; j++) s[j] = -INFINITY;
        if (a->mask.p != NULL) {
            const uint8_t *mp = (const uint8_t *)a->mask.p + eoff(&a->mask, r->b, n, i, j0);
            rows->mask(s, mp, a->mask.sd, nb);
        }
    }
}

static uint64_t drop_bit0(const pa_attn_args *a, int64_t b, int64_t n, int64_t i, int64_t j0) {
    return (((uint64_t)b * (uint64_t)a->N + (uint64_t)n) * (uint64_t)a->Sq + (uint64_t)i) * (uint64_t)a->Skv +
           (uint64_t)j0;
}

/* fp32 row -> V's dtype (contiguous), nearest even. */
static void to_dt(const pa_nn_vec *vec, void *dst, int32_t dt, const float *src, int64_t n) {
    if (dt == PA_GEMM_BF16) {
        vec->f2b(dst, src, n);
    } else if (dt == PA_GEMM_F16) {
        vec->f2h(dst, src, n);
    } else {
        memcpy(dst, src, (size_t)n * 4);
    }
}

static float exp_scalar(const pa_nn_vec *vec, float x) { /* x <= 0 */
    float t = 0.0f;
    vec->expsub_sum_to(&t, &x, 1, 0.0f, NULL, 0);
    return t;
}

/* ---- forward ---- */

typedef struct fwd_job {
    const pa_attn_args *a;
    pa_isa isa;
    int64_t G, nqb, mmax;
    bool heads;
    int failed; /* set by a chunk without scratch (only ever 0 -> 1) */
} fwd_job;

static void fwd_block(fwd_job *J, const rowblk *r) {
    const pa_attn_args *a = J->a;
    const pa_nn_vec *vec = pa_nn_vec_for(J->isa);
    const pa_attn_rows *rows = pa_attn_rows_for(J->isa);
    const int64_t m = r->m, Dv = a->Dv;
    const size_t need = (size_t)m * BC * 4 * 2 + (size_t)m * BC * 4 + (size_t)m * (size_t)Dv * 4 +
                        (size_t)m * 8 * 2 + 256;
    char *mem = pa_thread_scratch(need);
    if (mem == NULL) {
        __atomic_store_n(&J->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    float *S = (float *)mem;                        /* m x BC */
    float *E = S + m * BC;                          /* m x BC */
    void *P = E + m * BC;                           /* m x BC in V's dtype */
    float *acc = (float *)((char *)P + (size_t)m * BC * 4);
    float *mx = acc + m * Dv, *l = mx + m;
    const int32_t pdt = a->v.dt;
    const size_t ps = dt_size(pdt);
    for (int64_t k = 0; k < m; k++) mx[k] = -INFINITY, l[k] = 0.0f;
    memset(acc, 0, (size_t)m * (size_t)Dv * 4);
    int64_t jlo, jhi;
    rb_keys(a, r, &jlo, &jhi);
    for (int64_t t = jlo / BC; t * BC < jhi; t++) {
        const int64_t j0 = t * BC, nb = a->Skv - j0 < BC ? a->Skv - j0 : BC;
        scores(a, r, j0, nb, S, J->isa, rows);
        for (int64_t k = 0; k < m; k++) {
            float *s = S + k * BC, *e = E + k * BC;
            char *pk = (char *)P + (size_t)k * BC * ps;
            const float mb = vec->max(s, nb);
            const float mn = mx[k] > mb ? mx[k] : mb;
            if (mn == -INFINITY) { /* no allowed key in this block */
                memset(pk, 0, (size_t)nb * ps);
                continue;
            }
            const float c = mx[k] == -INFINITY ? 0.0f : exp_scalar(vec, mx[k] - mn);
            const float rs = vec->expsub_sum_to(e, s, nb, mn, NULL, 0);
            l[k] = l[k] * c + rs;
            mx[k] = mn;
            rows->scale(acc + k * Dv, c, Dv);
            if (a->drop != NULL) {
                rows->drop(e, e, a->drop, drop_bit0(a, r->b, rb_head(r, k), rb_query(r, k), j0), a->rkeep, nb);
            }
            to_dt(vec, pk, pdt, e, nb);
        }
        pa_gemm_args g;
        pa_gemm_init(&g);
        g.m = m;
        g.n = Dv;
        g.k = nb;
        g.a = mat_16(P, pdt, BC, 1);
        g.b = mat_of(&a->v, r->b, r->g, j0, false, false);
        g.c = out_f32(acc, Dv);
        g.bias = mat_f32(acc, Dv, 1);
        g.beta = 1.0f;
        pa_gemm_on(&g, J->isa);
    }
    for (int64_t k = 0; k < m; k++) {
        const int64_t n = rb_head(r, k), i = rb_query(r, k);
        const float lk = l[k];
        const int64_t e0 = eoff(&a->o, r->b, n, i, 0);
        for (int64_t d = 0; d < Dv; d++) st(&a->o, e0 + d * a->o.sd, lk > 0.0f ? acc[k * Dv + d] / lk : 0.0f);
        if (a->smax.p != NULL) {
            const int64_t s0 = eoff(&a->smax, r->b, n, i, 0);
            for (int64_t q = 0; q < a->stat_rep; q++) ((float *)a->smax.p)[s0 + q * a->smax.sd] = mx[k];
        }
        if (a->ssum.p != NULL) {
            const int64_t s0 = eoff(&a->ssum, r->b, n, i, 0);
            for (int64_t q = 0; q < a->stat_rep; q++) ((float *)a->ssum.p)[s0 + q * a->ssum.sd] = lk;
        }
        if (a->lse.p != NULL) {
            const float v = lk > 0.0f ? mx[k] + logf(lk) : -INFINITY;
            st(&a->lse, eoff(&a->lse, r->b, n, i, 0), v);
        }
    }
}

static void fwd_chunk(void *ctx, int64_t u0, int64_t u1) {
    fwd_job *J = ctx;
    const pa_attn_args *a = J->a;
    for (int64_t u = u0; u < u1; u++) {
        rowblk r;
        if (J->heads) { /* u = b * Nkv + g */
            r.b = u / a->Nkv;
            r.g = u % a->Nkv;
            r.n0 = r.g * J->G;
            r.i0 = 0;
            r.m = J->G;
            r.heads = true;
        } else { /* u = ((b * N) + n) * nqb + qb */
            const int64_t qb = u % J->nqb, bn = u / J->nqb;
            r.b = bn / a->N;
            r.n0 = bn % a->N;
            r.g = r.n0 / J->G;
            r.i0 = qb * BR;
            r.m = a->Sq - r.i0 < BR ? a->Sq - r.i0 : BR;
            r.heads = false;
        }
        fwd_block(J, &r);
    }
}

/* ---- decode (attn.h, "Decode") ---- */

#define DCH PA_ATTN_DEC_CHUNK

typedef struct dec_job {
    const pa_attn_args *a;
    pa_isa isa;
    int64_t G, m, nch, Dp;
    float *part; /* per unit (b, g, chunk): m maxima, m sums, m x Dv accumulators */
    int failed;
} dec_job;

static float *dec_part(const dec_job *J, int64_t u) { return J->part + u * J->m * (J->a->Dv + 2); }

static void dec_unit(dec_job *J, int64_t u) {
    const pa_attn_args *a = J->a;
    const pa_nn_vec *vec = pa_nn_vec_for(J->isa);
    const pa_attn_rows *rows = pa_attn_rows_for(J->isa);
    const int64_t m = J->m, Dk = a->Dk, Dv = a->Dv, Dp = J->Dp, Sq = a->Sq, G = J->G;
    const int64_t c = u % J->nch, bg = u / J->nch, b = bg / a->Nkv, g = bg % a->Nkv;
    const bool kt = a->k.sd != 1, vt = a->v.sd != 1;
    const size_t need = (size_t)m * (size_t)Dp * 4 + (size_t)m * BC * 4 * 2 + (size_t)m * BC * 2 + BC * 4 +
                        (kt ? (size_t)BC * (size_t)Dk * 4 : 0) + (vt ? (size_t)BC * (size_t)Dv * 4 : 0) + 256;
    char *mem = pa_thread_scratch(need);
    if (mem == NULL) {
        __atomic_store_n(&J->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    float *Q = (float *)mem;  /* m x Dp */
    float *S = Q + m * Dp;    /* m x BC */
    float *E = S + m * BC;    /* m x BC */
    float *ptmp = E + m * BC; /* BC */
    float *Kt = ptmp + BC;    /* BC x Dk (strided K) */
    float *Vt = Kt + (kt ? BC * Dk : 0);
    uint16_t *P16 = (uint16_t *)(Vt + (vt ? BC * Dv : 0)); /* m x BC */
    float *mx = dec_part(J, u), *l = mx + m, *acc = l + m;
    for (int64_t r = 0; r < m; r++) {
        const int64_t n = g * G + r / Sq, i = r % Sq;
        const int64_t e0 = eoff(&a->q, b, n, i, 0);
        for (int64_t d = 0; d < Dp; d++) Q[r * Dp + d] = d < Dk ? ld(&a->q, e0 + d * a->q.sd) : 0.0f;
        mx[r] = -INFINITY;
        l[r] = 0.0f;
    }
    memset(acc, 0, (size_t)m * (size_t)Dv * 4);
    int64_t jlo = a->band_lo, jhi = sat_add(Sq - 1, a->band_hi) + 1; /* keys allowed to some row */
    if (jlo < 0) jlo = 0;
    if (jhi > a->Skv) jhi = a->Skv;
    const int64_t cend = (c + 1) * DCH < a->Skv ? (c + 1) * DCH : a->Skv;
    const int32_t pdt = a->v.dt;
    const size_t ks = dt_size(a->k.dt), vs = dt_size(a->v.dt);
    for (int64_t j0 = c * DCH; j0 < cend; j0 += BC) {
        const int64_t nb = cend - j0 < BC ? cend - j0 : BC;
        if (j0 + nb <= jlo || j0 >= jhi) continue;
        const void *Kp;
        int32_t kdt;
        int64_t krs;
        if (kt) {
            for (int64_t j = 0; j < nb; j++) {
                const int64_t e0 = eoff(&a->k, b, g, j0 + j, 0);
                for (int64_t d = 0; d < Dk; d++) Kt[j * Dk + d] = ld(&a->k, e0 + d * a->k.sd);
            }
            Kp = Kt, kdt = PA_GEMM_F32, krs = Dk;
        } else {
            Kp = (const char *)a->k.p + eoff(&a->k, b, g, j0, 0) * (int64_t)ks, kdt = a->k.dt, krs = a->k.ss;
        }
        /* V's rows of this block come into the cache while the scores run */
        const char *vpf = vt ? NULL : (const char *)a->v.p + eoff(&a->v, b, g, j0, 0) * (int64_t)vs;
        rows->dec_scores(S, BC, Q, m, Dp, Kp, kdt, krs, nb, Dk, vpf, a->v.ss * (int64_t)vs, Dv * (int64_t)vs);
        for (int64_t r = 0; r < m; r++) {
            float *s = S + r * BC, *e = E + r * BC;
            const int64_t n = g * G + r / Sq, i = r % Sq;
            if (a->pse.p != NULL) {
                const int64_t e0 = eoff(&a->pse, b, n, i, j0);
                for (int64_t j = 0; j < nb; j++) ptmp[j] = ld(&a->pse, e0 + j * a->pse.sd);
                if (a->pse_mode == PA_ATTN_PSE_INNER) {
                    rows->add_scale(s, ptmp, a->scale, nb);
                } else {
                    rows->scale(s, a->scale, nb);
                    rows->add_scale(s, ptmp, 1.0f, nb);
                }
            } else {
                rows->scale(s, a->scale, nb);
            }
            const int64_t lo = sat_add(i, a->band_lo) - j0, hi = sat_add(i, a->band_hi) - j0;
            for (int64_t j = 0; j < nb && j < lo; j++) s[j] = -INFINITY;
            for (int64_t j = hi + 1 < 0 ? 0 : hi + 1; j < nb; j++) s[j] = -INFINITY;
            if (a->mask.p != NULL) {
                const uint8_t *mp = (const uint8_t *)a->mask.p + eoff(&a->mask, b, n, i, j0);
                rows->mask(s, mp, a->mask.sd, nb);
            }
            const float mb = vec->max(s, nb);
            const float mn = mx[r] > mb ? mx[r] : mb;
            if (mn == -INFINITY) {
                memset(e, 0, (size_t)nb * 4);
                continue;
            }
            const float cf = mx[r] == -INFINITY ? 0.0f : exp_scalar(vec, mx[r] - mn);
            const float rs = vec->expsub_sum_to(e, s, nb, mn, NULL, 0);
            l[r] = l[r] * cf + rs;
            mx[r] = mn;
            rows->scale(acc + r * Dv, cf, Dv);
            if (a->drop != NULL) rows->drop(e, e, a->drop, drop_bit0(a, b, n, i, j0), a->rkeep, nb);
            if (pdt != PA_GEMM_F32) { /* round to V's dtype */
                uint16_t *pk = P16 + r * BC;
                to_dt(vec, pk, pdt, e, nb);
                (void)vec->ld16_sum(e, pk, nb, pdt == PA_GEMM_BF16);
            }
        }
        const void *Vp;
        int32_t vdt;
        int64_t vrs;
        if (vt) {
            for (int64_t j = 0; j < nb; j++) {
                const int64_t e0 = eoff(&a->v, b, g, j0 + j, 0);
                for (int64_t d = 0; d < Dv; d++) Vt[j * Dv + d] = ld(&a->v, e0 + d * a->v.sd);
            }
            Vp = Vt, vdt = PA_GEMM_F32, vrs = Dv;
        } else {
            Vp = (const char *)a->v.p + eoff(&a->v, b, g, j0, 0) * (int64_t)vs, vdt = a->v.dt, vrs = a->v.ss;
        }
        /* and K's rows of the next block while V is summed */
        const int64_t nj0 = j0 + BC, nnb = a->Skv - nj0 < BC ? a->Skv - nj0 : BC;
        const char *kpf = kt || nnb < nb ? NULL : (const char *)a->k.p + eoff(&a->k, b, g, nj0, 0) * (int64_t)ks;
        rows->dec_accv(acc, Dv, E, BC, m, Vp, vdt, vrs, nb, kpf,
                       a->k.ss * (int64_t)ks, Dk * (int64_t)ks);
    }
}

static void dec_chunk(void *ctx, int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) dec_unit(ctx, u);
}

/* the chunks of (b, g) combined in increasing chunk order */
static void dec_combine(void *ctx, int64_t u0, int64_t u1) {
    dec_job *J = ctx;
    const pa_attn_args *a = J->a;
    const pa_nn_vec *vec = pa_nn_vec_for(J->isa);
    const int64_t m = J->m, Dv = a->Dv, Sq = a->Sq;
    for (int64_t bg = u0; bg < u1; bg++) {
        const int64_t b = bg / a->Nkv, g = bg % a->Nkv;
        for (int64_t r = 0; r < m; r++) {
            const int64_t n = g * J->G + r / Sq, i = r % Sq;
            float M = -INFINITY, L = 0.0f;
            for (int64_t c = 0; c < J->nch; c++) {
                const float mc = dec_part(J, bg * J->nch + c)[r];
                M = mc > M ? mc : M;
            }
            const int64_t e0 = eoff(&a->o, b, n, i, 0);
            if (M > -INFINITY) {
                float *A = J->part + bg * J->nch * m * (Dv + 2); /* the first chunk's row, as the sum */
                float *A0 = A + 2 * m + r * Dv;
                int first = 1;
                for (int64_t c = 0; c < J->nch; c++) {
                    const float *pc = dec_part(J, bg * J->nch + c);
                    const float mc = pc[r];
                    if (!(mc > -INFINITY)) continue;
                    const float w = mc == M ? 1.0f : exp_scalar(vec, mc - M);
                    const float *ac = pc + 2 * m + r * Dv;
                    L = L + pc[m + r] * w;
                    if (first) { /* A = +0 + acc_c * w */
                        for (int64_t d = 0; d < Dv; d++) A0[d] = 0.0f + ac[d] * w;
                        first = 0;
                    } else {
                        for (int64_t d = 0; d < Dv; d++) A0[d] = A0[d] + ac[d] * w;
                    }
                }
                for (int64_t d = 0; d < Dv; d++) st(&a->o, e0 + d * a->o.sd, L > 0.0f ? A0[d] / L : 0.0f);
            } else {
                for (int64_t d = 0; d < Dv; d++) st(&a->o, e0 + d * a->o.sd, 0.0f);
            }
            if (a->smax.p != NULL) {
                const int64_t s0 = eoff(&a->smax, b, n, i, 0);
                for (int64_t q = 0; q < a->stat_rep; q++) ((float *)a->smax.p)[s0 + q * a->smax.sd] = M;
            }
            if (a->ssum.p != NULL) {
                const int64_t s0 = eoff(&a->ssum, b, n, i, 0);
                for (int64_t q = 0; q < a->stat_rep; q++) ((float *)a->ssum.p)[s0 + q * a->ssum.sd] = L;
            }
            if (a->lse.p != NULL) {
                const float v = L > 0.0f ? M + logf(L) : -INFINITY;
                st(&a->lse, eoff(&a->lse, b, n, i, 0), v);
            }
        }
    }
}

static int attn_decode(const pa_attn_args *a, pa_isa isa, int64_t G) {
    dec_job J = {.a = a, .isa = isa, .G = G, .m = G * a->Sq, .failed = 0};
    J.nch = a->Skv > 0 ? (a->Skv + DCH - 1) / DCH : 1;
    J.Dp = (a->Dk + 15) / 16 * 16;
    const int64_t units = a->B * a->Nkv * J.nch;
    J.part = malloc((size_t)units * (size_t)J.m * (size_t)(a->Dv + 2) * 4);
    if (J.part == NULL) return -1;
    pa_parallel_for(units, 1, dec_chunk, &J);
    if (!J.failed) pa_parallel_for(a->B * a->Nkv, 1, dec_combine, &J);
    free(J.part);
    return J.failed ? -1 : 0;
}

int pa_attn_fwd(const pa_attn_args *a, pa_isa isa) {
    if (a->B == 0 || a->N == 0 || a->Sq == 0) return 0;
    if ((a->N / a->Nkv) * a->Sq <= PA_ATTN_DEC_ROWS) return attn_decode(a, isa, a->N / a->Nkv);
    fwd_job J = {.a = a, .isa = isa, .G = a->N / a->Nkv, .failed = 0};
    J.heads = a->Sq == 1 && J.G > 1;
    J.nqb = (a->Sq + BR - 1) / BR;
    const int64_t units = J.heads ? a->B * a->Nkv : a->B * a->N * J.nqb;
    pa_parallel_for(units, 1, fwd_chunk, &J);
    return J.failed ? -1 : 0;
}

/* ---- backward ---- */

uint64_t pa_attn_bwd_workspace(const pa_attn_args *a) {
    return (uint64_t)a->B * (uint64_t)a->N * (uint64_t)a->Sq * (uint64_t)a->Dk * 4u;
}

typedef struct bwd_job {
    const pa_attn_args *a;
    pa_isa isa;
    int64_t G, nqb;
    bool heads;
    int failed;
} bwd_job;

static float *dq_row(const pa_attn_args *a, int64_t b, int64_t n, int64_t i) {
    return a->dq_acc + (((b * a->N) + n) * a->Sq + i) * a->Dk;
}

static void bwd_group(bwd_job *J, int64_t b, int64_t g) {
    const pa_attn_args *a = J->a;
    const pa_nn_vec *vec = pa_nn_vec_for(J->isa);
    const pa_attn_rows *rows = pa_attn_rows_for(J->isa);
    const int64_t G = J->G, Dk = a->Dk, Dv = a->Dv, Sq = a->Sq;
    const int64_t mmax = J->heads ? G : (Sq < BR ? Sq : BR);
    const int32_t pdt = a->v.dt;
    const size_t ps = dt_size(pdt);
    const int64_t dvec = Dv > Dk ? Dv : Dk;
    const size_t need = (size_t)G * (size_t)Sq * 4 + (size_t)mmax * BC * 4 * 3 + (size_t)mmax * BC * ps * 2 +
                        (size_t)BC * (size_t)(Dk + Dv) * 4 + (size_t)dvec * 8 + 512;
    char *mem = pa_thread_scratch(need);
    if (mem == NULL) {
        __atomic_store_n(&J->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    float *Di = (float *)mem;          /* G x Sq: (head - g*G) * Sq + i */
    float *S = Di + G * Sq;            /* mmax x BC: scores, then p */
    float *dP = S + mmax * BC;         /* mmax x BC: dp, then ds */
    float *T = dP + mmax * BC;         /* mmax x BC: drop(p) */
    char *P16 = (char *)(T + mmax * BC);
    char *dS16 = P16 + (size_t)mmax * BC * ps;
    float *dK = (float *)(dS16 + (size_t)mmax * BC * ps);
    float *dV = dK + BC * Dk;
    float *ra = dV + BC * Dv, *rb = ra + dvec;
    /* D_i and the zeroed dQ accumulators */
    for (int64_t h = 0; h < G; h++) {
        const int64_t n = g * G + h;
        for (int64_t i = 0; i < Sq; i++) {
            const int64_t e1 = eoff(&a->dy, b, n, i, 0), e2 = eoff(&a->oin, b, n, i, 0);
            for (int64_t d = 0; d < Dv; d++) {
                ra[d] = ld(&a->dy, e1 + d * a->dy.sd);
                rb[d] = ld(&a->oin, e2 + d * a->oin.sd);
            }
            Di[h * Sq + i] = vec->dot(ra, rb, Dv);
            memset(dq_row(a, b, n, i), 0, (size_t)Dk * 4);
        }
    }
    const int64_t nkb = (a->Skv + BC - 1) / BC;
    const int64_t nblk = J->heads ? 1 : G * J->nqb;
    for (int64_t t = 0; t < nkb; t++) {
        const int64_t j0 = t * BC, nb = a->Skv - j0 < BC ? a->Skv - j0 : BC;
        memset(dK, 0, (size_t)nb * (size_t)Dk * 4);
        memset(dV, 0, (size_t)nb * (size_t)Dv * 4);
        for (int64_t u = 0; u < nblk; u++) {
            rowblk r;
            r.b = b;
            r.g = g;
            if (J->heads) {
                r.n0 = g * G, r.i0 = 0, r.m = G, r.heads = true;
            } else {
                r.n0 = g * G + u / J->nqb;
                r.i0 = (u % J->nqb) * BR;
                r.m = Sq - r.i0 < BR ? Sq - r.i0 : BR;
                r.heads = false;
            }
            int64_t jlo, jhi;
            rb_keys(a, &r, &jlo, &jhi);
            if (jhi <= j0 || jlo >= j0 + nb) continue;
            const int64_t m = r.m;
            scores(a, &r, j0, nb, S, J->isa, rows);
            /* p = exp(s - max) / sum */
            for (int64_t k = 0; k < m; k++) {
                const int64_t n = rb_head(&r, k), i = rb_query(&r, k);
                float *s = S + k * BC;
                const float mxk = ld(&a->smax, eoff(&a->smax, b, n, i, 0));
                const float sm = ld(&a->ssum, eoff(&a->ssum, b, n, i, 0));
                if (mxk == -INFINITY || !(sm > 0.0f)) {
                    memset(s, 0, (size_t)nb * 4);
                } else {
                    vec->expsub_sum_to(s, s, nb, mxk, NULL, 0);
                    rows->scale(s, 1.0f / sm, nb);
                }
                float *tk = T + k * BC;
                if (a->drop != NULL) {
                    rows->drop(tk, s, a->drop, drop_bit0(a, b, n, i, j0), a->rkeep, nb);
                } else {
                    memcpy(tk, s, (size_t)nb * 4);
                }
                to_dt(vec, P16 + (size_t)k * BC * ps, pdt, tk, nb);
            }
            pa_gemm_args q;
            /* dV += drop(p)^T @ dy */
            pa_gemm_init(&q);
            q.m = nb, q.n = Dv, q.k = m;
            q.a = mat_16(P16, pdt, 1, BC);
            q.b = mat_of(&a->dy, b, r.n0, r.i0, r.heads, false);
            q.c = out_f32(dV, Dv);
            q.bias = mat_f32(dV, Dv, 1);
            pa_gemm_on(&q, J->isa);
            /* dp = dy @ V^T */
            pa_gemm_init(&q);
            q.m = m, q.n = nb, q.k = Dv;
            q.a = mat_of(&a->dy, b, r.n0, r.i0, r.heads, false);
            q.b = mat_of(&a->v, b, g, j0, false, true);
            q.c = out_f32(dP, BC);
            pa_gemm_on(&q, J->isa);
            for (int64_t k = 0; k < m; k++) {
                const int64_t n = rb_head(&r, k), i = rb_query(&r, k);
                float *dp = dP + k * BC;
                if (a->drop != NULL) rows->drop(dp, dp, a->drop, drop_bit0(a, b, n, i, j0), a->rkeep, nb);
                rows->ds(dp, S + k * BC, dp, Di[(n - g * G) * Sq + i], nb);
                to_dt(vec, dS16 + (size_t)k * BC * ps, pdt, dp, nb);
            }
            /* dK += scale * ds^T @ Q */
            pa_gemm_init(&q);
            q.m = nb, q.n = Dk, q.k = m;
            q.a = mat_16(dS16, pdt, 1, BC);
            q.b = mat_of(&a->q, b, r.n0, r.i0, r.heads, false);
            q.c = out_f32(dK, Dk);
            q.bias = mat_f32(dK, Dk, 1);
            q.alpha = a->scale;
            pa_gemm_on(&q, J->isa);
            /* dQ += scale * ds @ K */
            pa_gemm_init(&q);
            q.m = m, q.n = Dk, q.k = nb;
            q.a = mat_16(dS16, pdt, BC, 1);
            q.b = mat_of(&a->k, b, g, j0, false, false);
            float *dq0 = dq_row(a, b, r.n0, r.i0);
            const int64_t dqrs = r.heads ? Sq * Dk : Dk;
            q.c = out_f32(dq0, dqrs);
            q.bias = mat_f32(dq0, dqrs, 1);
            q.alpha = a->scale;
            pa_gemm_on(&q, J->isa);
        }
        for (int64_t j = 0; j < nb; j++) {
            const int64_t ek = eoff(&a->dk, b, g, j0 + j, 0), ev = eoff(&a->dv, b, g, j0 + j, 0);
            for (int64_t d = 0; d < Dk; d++) st(&a->dk, ek + d * a->dk.sd, dK[j * Dk + d]);
            for (int64_t d = 0; d < Dv; d++) st(&a->dv, ev + d * a->dv.sd, dV[j * Dv + d]);
        }
    }
    for (int64_t h = 0; h < G; h++) {
        const int64_t n = g * G + h;
        for (int64_t i = 0; i < Sq; i++) {
            const float *src = dq_row(a, b, n, i);
            const int64_t e = eoff(&a->dq, b, n, i, 0);
            for (int64_t d = 0; d < Dk; d++) st(&a->dq, e + d * a->dq.sd, src[d]);
        }
    }
}

static void bwd_chunk(void *ctx, int64_t u0, int64_t u1) {
    bwd_job *J = ctx;
    for (int64_t u = u0; u < u1; u++) bwd_group(J, u / J->a->Nkv, u % J->a->Nkv);
}

int pa_attn_bwd(const pa_attn_args *a, pa_isa isa) {
    if (a->B == 0 || a->Nkv == 0) return 0;
    bwd_job J = {.a = a, .isa = isa, .G = a->N / a->Nkv, .failed = 0};
    J.heads = a->Sq == 1 && J.G > 1;
    J.nqb = (a->Sq + BR - 1) / BR;
    pa_parallel_for(a->B * a->Nkv, 1, bwd_chunk, &J);
    return J.failed ? -1 : 0;
}
