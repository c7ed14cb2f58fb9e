/* The GEMM driver (gemm.h): the definition (pa_gemm_reference), the scalar
 * tier, the generic packers and epilogue, scratch memory, and the blocked,
 * threaded loop every tier runs.
 *
 * Blocking: the output of each batch is cut into units of mc rows x nc
 * columns; a unit runs on one thread and loops over k in blocks of kc:
 * it packs its B block (kc x nc, in NR-column panels; or reads an fp32
 * row-major B in place), then per MR-row panel of A packs it and calls the
 * micro-kernel for every NR-column panel. Partial sums live in C itself (fp32
 * C without an epilogue), else in a per-unit fp32 buffer, and go through the
 * epilogue at the last k block. Units never share an output element, and the
 * chain of an element is the same whatever the blocking: the bits do not
 * depend on the unit sizes, the tier or the thread count. */
#include <float.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/pa_common.h"
#include "kernels/gemm/gemm_impl.h"
#include "runtime/pa_threadpool.h"

void pa_gemm_init(pa_gemm_args *g) {
    memset(g, 0, sizeof *g);
    g->alpha = 1.0f;
    g->beta = 1.0f;
    g->in_round = PA_GEMM_F32;
    g->mid_round = PA_GEMM_F32;
    g->bq.round_dt = PA_GEMM_F32;
}

/* ---- the bf16 step ---- */

static inline float gm_daz(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

float pa_gemm_dotfma(float a, float b, float c) {
    a = gm_daz(a);
    b = gm_daz(b);
    c = gm_daz(c);
    const float r = fmaf(a, b, c); /* x = a*b + c rounded on the denormal grid */
    const float ar = fabsf(r);
    if (ar < FLT_MIN) return copysignf(0.0f, r);
    if (ar == FLT_MIN) {
        /* x within 2^-150 of +-FLT_MIN: tiny (with an unbounded exponent) iff
         * |x| < FLT_MIN - 2^-151, the midpoint below FLT_MIN (it rounds up, to
         * even). x = s + e exactly: a*b is exact in double, then TwoSum. */
        const double p = (double)a * (double)b, cd = (double)c;
        const double s = p + cd, bb = s - p, e = (p - (s - bb)) + (cd - bb);
        const double as = fabs(s), ae = s < 0.0 ? -e : e, mid = (double)FLT_MIN - 0x1p-151;
        if (as < mid || (as == mid && ae < 0.0)) return copysignf(0.0f, r);
    }
    return r;
}

/* ---- batches ---- */

static int64_t gm_batch_count(const pa_gemm_args *g) {
    int64_t n = 1;
    for (int d = 0; d < g->nbatch; d++) n *= g->batch[d];
    return n;
}

static int64_t gm_boff(const pa_gemm_args *g, const int64_t *bs, int64_t bi) {
    int64_t off = 0;
    for (int d = g->nbatch - 1; d >= 0; d--) {
        const int64_t n = g->batch[d];
        off += (bi % n) * bs[d];
        bi /= n;
    }
    return off;
}

/* The operands of batch bi: offsets folded into .off. */
typedef struct gm_ops {
    pa_gemm_mat a, b;
    pa_gemm_quant q;
    gm_epi e;
} gm_ops;

static void gm_resolve(const pa_gemm_args *g, int64_t bi, gm_ops *o) {
    o->a = g->a;
    o->a.off += gm_boff(g, g->a.bs, bi);
    o->b = g->b;
    o->b.off += gm_boff(g, g->b.bs, bi);
    o->q = g->bq;
    if (o->q.scale.p != NULL) o->q.scale.off += gm_boff(g, g->bq.scale.bs, bi);
    if (o->q.offset.p != NULL) o->q.offset.off += gm_boff(g, g->bq.offset.bs, bi);
    gm_epi *e = &o->e;
    memset(e, 0, sizeof *e);
    e->c = g->c.p;
    e->c_dt = g->c.dt;
    e->c_off = g->c.off + gm_boff(g, g->c.bs, bi);
    e->c_rs = g->c.rs;
    e->c_cs = g->c.cs;
    if (g->bias.p != NULL) {
        e->bias = g->bias.p;
        e->bias_dt = g->bias.dt;
        e->bias_off = g->bias.off + gm_boff(g, g->bias.bs, bi);
        e->bias_rs = g->bias.rs;
        e->bias_cs = g->bias.cs;
    }
    e->alpha = g->alpha;
    e->beta = g->beta;
    e->mid_round = g->mid_round;
    e->epi = g->epi;
    e->epi_ctx = g->epi_ctx;
    e->bidx = bi;
}

static bool gm_is_dot(const pa_gemm_args *g) {
    return g->a.dt == PA_GEMM_BF16 && g->b.dt == PA_GEMM_BF16 && g->in_round == PA_GEMM_F32;
}

/* A(i, p) / B(p, j) as the fp32 chain reads them. */
static inline float gm_aval(const pa_gemm_mat *a, int32_t in_round, int64_t i, int64_t p) {
    return gm_round(gm_fval(a->dt, a->p, gm_index(a, i, p)), in_round);
}

static inline float gm_bval(const pa_gemm_mat *b, const pa_gemm_quant *q, int32_t in_round, int64_t p, int64_t j) {
    const float v = b->dt == PA_GEMM_S8 || b->dt == PA_GEMM_S4 ? gm_dequant(b, q, p, j)
                                                                : gm_fval(b->dt, b->p, gm_index(b, p, j));
    return gm_round(v, in_round);
}

/* ---- the epilogue ---- */

static inline void gm_put(const gm_epi *e, int64_t i, int64_t j, float v) {
    const int64_t idx = e->c_off + i * e->c_rs + j * e->c_cs;
    switch (e->c_dt) {
    case PA_GEMM_F16: ((uint16_t *)e->c)[idx] = pa_f32_to_f16(v); break;
    case PA_GEMM_BF16: ((uint16_t *)e->c)[idx] = pa_f32_to_bf16(v); break;
    default: ((float *)e->c)[idx] = v; break;
    }
}

void pa_gemm_store_generic(const gm_epi *e, const float *t, int64_t ldt, int64_t i0, int64_t j0, int mr, int nr) {
    float v[64];
    for (int r = 0; r < mr; r++) {
        for (int j0b = 0; j0b < nr; j0b += 64) {
            const int n = nr - j0b < 64 ? nr - j0b : 64;
            for (int j = 0; j < n; j++) {
                float x = gm_round(t[r * ldt + j0b + j], e->mid_round);
                if (e->alpha != 1.0f) x = e->alpha * x;
                if (e->bias != NULL) {
                    const int64_t bi = e->bias_off + (i0 + r) * e->bias_rs + (j0 + j0b + j) * e->bias_cs;
                    const float s = gm_fval(e->bias_dt, e->bias, bi);
                    x = x + (e->beta == 1.0f ? s : e->beta * s);
                }
                v[j] = x;
            }
            if (e->epi != NULL) e->epi(e->epi_ctx, e->bidx, i0 + r, j0 + j0b, v, n);
            for (int j = 0; j < n; j++) gm_put(e, i0 + r, j0 + j0b + j, v[j]);
        }
    }
}

/* ---- the definition ---- */

/* The chain of element (i, j) of one batch. */
static float gm_chain(const gm_ops *o, bool dot, int32_t in_round, int64_t K, int64_t i, int64_t j) {
    float acc = 0.0f;
    if (dot) {
        for (int64_t q = 0; 2 * q < K; q++) {
            const bool odd = 2 * q + 1 < K;
            acc = pa_gemm_dotfma(odd ? gm_aval(&o->a, PA_GEMM_F32, i, 2 * q + 1) : 0.0f,
                                 odd ? gm_bval(&o->b, &o->q, PA_GEMM_F32, 2 * q + 1, j) : 0.0f, acc);
            acc = pa_gemm_dotfma(gm_aval(&o->a, PA_GEMM_F32, i, 2 * q), gm_bval(&o->b, &o->q, PA_GEMM_F32, 2 * q, j),
                                 acc);
        }
    } else {
        for (int64_t p = 0; p < K; p++) {
            acc = fmaf(gm_aval(&o->a, in_round, i, p), gm_bval(&o->b, &o->q, in_round, p, j), acc);
        }
    }
    return acc;
}

void pa_gemm_reference(const pa_gemm_args *g) {
    const int64_t M = g->m, N = g->n, NB = gm_batch_count(g);
    if (M <= 0 || N <= 0) return;
    const bool dot = gm_is_dot(g);
    for (int64_t bi = 0; bi < NB; bi++) {
        gm_ops o;
        gm_resolve(g, bi, &o);
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) {
                const float acc = gm_chain(&o, dot, g->in_round, g->k, i, j);
                pa_gemm_store_generic(&o.e, &acc, 1, i, j, 1, 1);
            }
        }
    }
}

/* ---- generic packers ---- */

static void gm_pack_a(const pa_gemm_mat *a, int32_t in_round, int64_t i0, int mr, int MR, int64_t p0, int64_t kc,
                      float *dst) {
    if (a->dt == PA_GEMM_F32 && !a->nz && in_round == PA_GEMM_F32) {
        const float *base = (const float *)a->p + a->off + p0 * a->cs;
        for (int r = 0; r < mr; r++) {
            const float *src = base + (i0 + r) * a->rs;
            if (a->cs == 1) {
                for (int64_t p = 0; p < kc; p++) dst[p * MR + r] = src[p];
            } else {
                for (int64_t p = 0; p < kc; p++) dst[p * MR + r] = src[p * a->cs];
            }
        }
    } else {
        for (int r = 0; r < mr; r++) {
            for (int64_t p = 0; p < kc; p++) dst[p * MR + r] = gm_aval(a, in_round, i0 + r, p0 + p);
        }
    }
    for (int r = mr; r < MR; r++) {
        for (int64_t p = 0; p < kc; p++) dst[p * MR + r] = 0.0f;
    }
}

static void gm_pack_b(const pa_gemm_mat *b, const pa_gemm_quant *q, int32_t in_round, int64_t p0, int64_t kc,
                      int64_t j0, int64_t ncols, int NR, float *dst) {
    for (int64_t jp = 0; jp < ncols; jp += NR) {
        const int nr = ncols - jp < NR ? (int)(ncols - jp) : NR;
        float *panel = dst + jp * kc;
        for (int64_t p = 0; p < kc; p++) {
            float *row = panel + p * NR;
            for (int j = 0; j < nr; j++) row[j] = gm_bval(b, q, in_round, p0 + p, j0 + jp + j);
            for (int j = nr; j < NR; j++) row[j] = 0.0f;
        }
    }
}

/* kq pairs from k value p0 (values at p0 + kc and beyond are zeros). */
static void gm_pack_a_dot(const pa_gemm_mat *a, int64_t i0, int mr, int MR, int64_t p0, int64_t kc, uint32_t *dst) {
    const int64_t kq = (kc + 1) / 2;
    for (int r = 0; r < mr; r++) {
        for (int64_t q = 0; q < kq; q++) {
            const uint32_t lo = gm_bits16(a, i0 + r, p0 + 2 * q);
            const uint32_t hi = 2 * q + 1 < kc ? gm_bits16(a, i0 + r, p0 + 2 * q + 1) : 0u;
            dst[q * MR + r] = lo | hi << 16;
        }
    }
    for (int r = mr; r < MR; r++) {
        for (int64_t q = 0; q < kq; q++) dst[q * MR + r] = 0u;
    }
}

static void gm_pack_b_dot(const pa_gemm_mat *b, int64_t p0, int64_t kc, int64_t j0, int64_t ncols, int NR,
                          uint32_t *dst) {
    const int64_t kq = (kc + 1) / 2;
    for (int64_t jp = 0; jp < ncols; jp += NR) {
        const int nr = ncols - jp < NR ? (int)(ncols - jp) : NR;
        uint32_t *panel = dst + jp * kq;
        for (int64_t q = 0; q < kq; q++) {
            uint32_t *row = panel + q * NR;
            const bool odd = 2 * q + 1 < kc;
            for (int j = 0; j < nr; j++) {
                const uint32_t lo = gm_bits16(b, p0 + 2 * q, j0 + jp + j);
                const uint32_t hi = odd ? gm_bits16(b, p0 + 2 * q + 1, j0 + jp + j) : 0u;
                row[j] = lo | hi << 16;
            }
            for (int j = nr; j < NR; j++) row[j] = 0u;
        }
    }
}

/* ---- the scalar tier ---- */

enum { GM_SC_MR = 4, GM_SC_NR = 8 };

static void gm_ukr_scalar(const gm_ukr *u) {
    const float *a = u->a, *b = u->b;
    float acc[GM_SC_MR][GM_SC_NR];
    for (int r = 0; r < u->mr; r++) {
        for (int j = 0; j < u->nr; j++) acc[r][j] = u->load ? u->t[r * u->ldt + j] : 0.0f;
    }
    for (int64_t p = 0; p < u->k; p++) {
        const float *brow = b + p * u->ldb;
        for (int r = 0; r < u->mr; r++) {
            const float av = a[p * GM_SC_MR + r];
            for (int j = 0; j < u->nr; j++) acc[r][j] = fmaf(av, brow[j], acc[r][j]);
        }
    }
    for (int r = 0; r < u->mr; r++) {
        for (int j = 0; j < u->nr; j++) u->t[r * u->ldt + j] = acc[r][j];
    }
}

static void gm_ukr_dot_scalar(const gm_ukr *u) {
    const uint32_t *a = u->a, *b = u->b;
    float acc[GM_SC_MR][GM_SC_NR];
    for (int r = 0; r < u->mr; r++) {
        for (int j = 0; j < u->nr; j++) acc[r][j] = u->load ? u->t[r * u->ldt + j] : 0.0f;
    }
    for (int64_t q = 0; q < u->k; q++) {
        const uint32_t *brow = b + q * u->ldb;
        for (int r = 0; r < u->mr; r++) {
            const uint32_t ap = a[q * GM_SC_MR + r];
            const float a0 = pa_bits_f32(ap << 16), a1 = pa_bits_f32(ap & 0xffff0000u);
            for (int j = 0; j < u->nr; j++) {
                const float b0 = pa_bits_f32(brow[j] << 16), b1 = pa_bits_f32(brow[j] & 0xffff0000u);
                acc[r][j] = pa_gemm_dotfma(a0, b0, pa_gemm_dotfma(a1, b1, acc[r][j]));
            }
        }
    }
    for (int r = 0; r < u->mr; r++) {
        for (int j = 0; j < u->nr; j++) u->t[r * u->ldt + j] = acc[r][j];
    }
}

static int gm_no_pack(const pa_gemm_mat *b, int64_t p0, int64_t kc, int64_t j0, int64_t ncols, int nr, float *dst) {
    PA_UNUSED(b), PA_UNUSED(p0), PA_UNUSED(kc), PA_UNUSED(j0), PA_UNUSED(ncols), PA_UNUSED(nr), PA_UNUSED(dst);
    return 0;
}

static int gm_no_pack_dot(const pa_gemm_mat *b, int64_t p0, int64_t kc, int64_t j0, int64_t ncols, int nr,
                          uint32_t *dst) {
    PA_UNUSED(b), PA_UNUSED(p0), PA_UNUSED(kc), PA_UNUSED(j0), PA_UNUSED(ncols), PA_UNUSED(nr), PA_UNUSED(dst);
    return 0;
}

const gm_tier pa_gemm_tier_scalar = {
    .isa = PA_ISA_SCALAR,
    .mr = GM_SC_MR,
    .nr = GM_SC_NR,
    .kc = 256,
    .mc = 64,
    .nc = 256,
    .ukr = gm_ukr_scalar,
    .ukr_dot = gm_ukr_dot_scalar,
    .store = pa_gemm_store_generic,
    .pack_b = gm_no_pack,
    .pack_b_dot = gm_no_pack_dot,
};

static const gm_tier *gm_tier_for(pa_isa isa) {
    const pa_isa cap = pa_cpu_isa();
    if (isa > cap) isa = cap;
#if defined(PA_HAVE_X86_KERNELS)
    switch (isa) {
    case PA_ISA_AVX512BF16: return &pa_gemm_tier_avx512bf16;
    case PA_ISA_AVX512: return &pa_gemm_tier_avx512;
    case PA_ISA_AVX2: return &pa_gemm_tier_avx2;
    default: break;
    }
#endif
    return &pa_gemm_tier_scalar;
}

/* ---- scratch: one grow-only buffer per thread, freed at thread exit ---- */

static pthread_key_t g_gm_key;
static pthread_once_t g_gm_once = PTHREAD_ONCE_INIT;
static bool g_gm_key_ok;
static PA_THREAD_LOCAL void *tl_gm_buf;
static PA_THREAD_LOCAL size_t tl_gm_cap;

static void gm_key_free(void *p) { pa_free_aligned(p); }
static void gm_key_init(void) { g_gm_key_ok = pthread_key_create(&g_gm_key, gm_key_free) == 0; }

static void *gm_scratch(size_t bytes) {
    if (tl_gm_buf != NULL && bytes <= tl_gm_cap) return tl_gm_buf;
    pthread_once(&g_gm_once, gm_key_init);
    if (!g_gm_key_ok || bytes > ((size_t)1 << 40)) return NULL;
    const size_t cap = (bytes + 4095) & ~(size_t)4095;
    void *p = pa_alloc_aligned(cap);
    if (p == NULL) return NULL;
    if (pthread_setspecific(g_gm_key, p) != 0) {
        pa_free_aligned(p);
        return NULL;
    }
    pa_free_aligned(tl_gm_buf);
    tl_gm_buf = p;
    tl_gm_cap = cap;
    return p;
}

/* ---- fp16 input rounding of packed panels ---- */

static void gm_round_f16_scalar(float *p, int64_t n) {
    for (int64_t i = 0; i < n; i++) p[i] = pa_f16_to_f32(pa_f32_to_f16(p[i]));
}

/* ---- the blocked loop ---- */

typedef struct gm_job {
    const pa_gemm_args *g;
    const gm_tier *t;
    bool dot;
    bool direct_c; /* partial sums in C (fp32, unit column stride, no epilogue) */
    int64_t mc, nc, nbm, nbn;
} gm_job;

/* Rows [i0, i1) x columns [j0, j1) of one batch by the definition, element by
 * element (no scratch memory: the fallback when none can be had). */
static void gm_unit_plain(const gm_job *J, const gm_ops *o, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    for (int64_t i = i0; i < i1; i++) {
        for (int64_t j = j0; j < j1; j++) {
            const float acc = gm_chain(o, J->dot, J->g->in_round, J->g->k, i, j);
            pa_gemm_store_generic(&o->e, &acc, 1, i, j, 1, 1);
        }
    }
}

/* k rows per block when B is read in place */
#define GM_DIRECT_KC 4
/* at most this many rows of A read B in place (a GEMV's shape: k blocks of GM_DIRECT_KC) */
#define GM_DIRECT_M 4
/* up to this many rows, B is read in place in k blocks of GM_SKINNY_KC rows (one block
 * stays in L2 while the rows' panels pass over it): no packed copy of a B read once */
#define GM_SKINNY_M 48
#define GM_SKINNY_KC 64
/* the first A panel over a k block of such a B prefetches each row's lines this many strips
 * of NR columns ahead: 64 rows a stride apart are more streams than the hardware follows
 * ([16, 4096] x [4096, 4096]: -30% time; 2 was best of 1..4, same bits) */
#define GM_SKINNY_PF 2
/* at most this many rows of A take the fused GEMV of a dequantised B */
#define GM_QGEMV_M 4

static void gm_unit(const gm_job *J, int64_t u) {
    const pa_gemm_args *g = J->g;
    const gm_tier *t = J->t;
    const int MR = t->mr, NR = t->nr;
    const int64_t ib = u % J->nbm, jb = (u / J->nbm) % J->nbn, bi = u / J->nbm / J->nbn;
    const int64_t i0 = ib * J->mc, i1 = i0 + J->mc < g->m ? i0 + J->mc : g->m;
    const int64_t j0 = jb * J->nc, j1 = j0 + J->nc < g->n ? j0 + J->nc : g->n;
    gm_ops o;
    gm_resolve(g, bi, &o);
    /* B in place: an fp32 row-major B read by few A panels, in short k blocks
     * so that each block streams a few whole rows of B (a GEMV's access) */
    const bool direct_b = !J->dot && o.b.dt == PA_GEMM_F32 && !o.b.nz && o.b.cs == 1 &&
                          g->in_round == PA_GEMM_F32 && (i1 - i0) <= GM_SKINNY_M && g->m <= GM_SKINNY_M;
    const int64_t K = g->k;
    const int64_t KC = direct_b ? ((i1 - i0) <= GM_DIRECT_M ? GM_DIRECT_KC : GM_SKINNY_KC)
                                : J->dot ? 2 * t->kc : t->kc; /* k values per block */
    const int64_t ncols = j1 - j0, ncols_pad = (ncols + NR - 1) / NR * NR;
    const bool multi = K > KC;
    const bool use_acc = !J->direct_c && multi;
    /* int8 / int4 weights stored [n, k] times a few rows: the fused GEMV */
    const bool qgemv = t->gemv_q != NULL && (o.b.dt == PA_GEMM_S8 || o.b.dt == PA_GEMM_S4) && !o.b.nz &&
                       o.b.rs == 1 && g->in_round == PA_GEMM_F32 && i1 - i0 <= GM_QGEMV_M && K > 0;
    const size_t kslots = (size_t)(J->dot ? KC / 2 : KC); /* packed rows per block */
    const size_t a_bytes = (size_t)MR * kslots * 4;
    const size_t b_bytes = direct_b ? 0 : kslots * (size_t)ncols_pad * 4;
    const size_t acc_bytes = use_acc ? (size_t)(i1 - i0) * (size_t)ncols * 4 : 0;
    const bool fgemv = direct_b && i1 - i0 <= GM_DIRECT_M && J->direct_c && t->gemv_f32 != NULL;
    size_t need = a_bytes + b_bytes + acc_bytes + 128;
    if (qgemv || fgemv) need = (size_t)GM_QGEMV_M * (size_t)K * 4 + 128;
    char *mem = K > 0 ? gm_scratch(need) : NULL;
    if (K > 0 && mem == NULL) {
        gm_unit_plain(J, &o, i0, i1, j0, j1);
        return;
    }
    if (fgemv && K > 0) {
        /* a GEMV's shape on an fp32 B read in place, C written directly: A's rows as fp32,
         * then the tier's loop over k blocks and all the unit's columns */
        float *arow = (float *)mem;
        const int64_t mr = i1 - i0;
        for (int64_t i = i0; i < i1; i++) {
            for (int64_t p = 0; p < K; p++) arow[(i - i0) * K + p] = gm_aval(&o.a, PA_GEMM_F32, i, p);
        }
        t->gemv_f32(arow, K, (int)mr, (const float *)o.b.p + o.b.off + j0, o.b.rs, K, j1 - j0,
                    (float *)o.e.c + o.e.c_off + i0 * o.e.c_rs + j0, o.e.c_rs);
        return;
    }
    if (qgemv) {
        /* a few rows of A times a dequantised weight stored [n, k]: A's rows as fp32,
         * then 16 columns at a time over all of k */
        float *arow = (float *)mem;
        for (int64_t i = i0; i < i0 + GM_QGEMV_M; i++) {
            for (int64_t p = 0; p < K; p++) arow[(i - i0) * K + p] = i < i1 ? gm_aval(&o.a, PA_GEMM_F32, i, p) : 0.0f;
        }
        float tile[4 * 16] __attribute__((aligned(64)));
        for (int64_t jp = j0; jp < j1; jp += 16) {
            const int nc = j1 - jp < 16 ? (int)(j1 - jp) : 16;
            if (!t->gemv_q(arow, K, (int)(i1 - i0), &o.b, &o.q, K, jp, nc, tile)) {
                gm_unit_plain(J, &o, i0, i1, jp, jp + nc);
                continue;
            }
            t->store(&o.e, tile, 16, i0, jp, (int)(i1 - i0), nc);
        }
        return;
    }
    /* fp16 inputs (USE_FP16): the panels are packed as fp32 and then rounded, which
     * gives the same values as rounding each one while packing (padding stays 0) */
    const bool hround = g->in_round == PA_GEMM_F16 && !J->dot;
    const int32_t pack_round = hround ? PA_GEMM_F32 : g->in_round;
    void (*const round_h)(float *, int64_t) = t->round_f16 != NULL ? t->round_f16 : gm_round_f16_scalar;
    float *ap = (float *)mem;
    float *bp = (float *)(mem + a_bytes);
    float *acc = (float *)(mem + a_bytes + b_bytes);
    float tile[12 * 32] __attribute__((aligned(64)));
    if (K == 0) {
        memset(tile, 0, sizeof tile);
        for (int64_t ip = i0; ip < i1; ip += MR) {
            for (int64_t jp = j0; jp < j1; jp += NR) {
                const int mr = i1 - ip < MR ? (int)(i1 - ip) : MR, nr = j1 - jp < NR ? (int)(j1 - jp) : NR;
                t->store(&o.e, tile, NR, ip, jp, mr, nr);
            }
        }
        return;
    }
    for (int64_t p0 = 0; p0 < K; p0 += KC) {
        const int64_t kc = K - p0 < KC ? K - p0 : KC;
        const int64_t kq = (kc + 1) / 2; /* pairs (dot chain) */
        const bool first = p0 == 0, last = p0 + kc >= K;
        if (J->dot) {
            if (!t->pack_b_dot(&o.b, p0, kc, j0, ncols, NR, (uint32_t *)bp)) {
                gm_pack_b_dot(&o.b, p0, kc, j0, ncols, NR, (uint32_t *)bp);
            }
        } else if (!direct_b) {
            bool done = false;
            if (pack_round == PA_GEMM_F32) {
                if (o.b.dt > PA_GEMM_BF16) {
                    done = t->pack_bq != NULL && t->pack_bq(&o.b, &o.q, p0, kc, j0, ncols, bp);
                } else {
                    done = t->pack_b(&o.b, p0, kc, j0, ncols, NR, bp);
                }
            }
            if (!done) gm_pack_b(&o.b, &o.q, pack_round, p0, kc, j0, ncols, NR, bp);
            if (hround) round_h(bp, kc * ncols_pad);
        }
        for (int64_t ip = i0; ip < i1; ip += MR) {
            const int mr = i1 - ip < MR ? (int)(i1 - ip) : MR;
            if (J->dot) {
                if (t->pack_a_dot == NULL || !t->pack_a_dot(&o.a, ip, mr, p0, kc, (uint32_t *)ap)) {
                    gm_pack_a_dot(&o.a, ip, mr, MR, p0, kc, (uint32_t *)ap);
                }
            } else {
                if (pack_round != PA_GEMM_F32 || t->pack_a == NULL || !t->pack_a(&o.a, ip, mr, p0, kc, ap)) {
                    gm_pack_a(&o.a, pack_round, ip, mr, MR, p0, kc, ap);
                }
                if (hround) round_h(ap, kc * MR);
            }
            for (int64_t jp = j0; jp < j1; jp += NR) {
                const int nr = j1 - jp < NR ? (int)(j1 - jp) : NR;
                gm_ukr uk;
                uk.pf = 0;
                if (direct_b && ip == i0 && jp + (GM_SKINNY_PF + 1) * NR <= j1) uk.pf = GM_SKINNY_PF * NR;
                uk.a = ap;
                uk.mr = mr;
                uk.nr = nr;
                if (J->dot) {
                    uk.k = kq;
                    uk.b = (const uint32_t *)bp + (jp - j0) * kq;
                    uk.ldb = NR;
                    uk.bfull = 1;
                } else if (direct_b) {
                    uk.k = kc;
                    uk.b = (const float *)o.b.p + o.b.off + p0 * o.b.rs + jp;
                    uk.ldb = o.b.rs;
                    uk.bfull = nr == NR;
                } else {
                    uk.k = kc;
                    uk.b = bp + (jp - j0) * kc;
                    uk.ldb = NR;
                    uk.bfull = 1;
                }
                if (J->direct_c) {
                    uk.t = (float *)o.e.c + o.e.c_off + ip * o.e.c_rs + jp;
                    uk.ldt = o.e.c_rs;
                    uk.load = !first;
                } else if (use_acc) {
                    uk.t = acc + (ip - i0) * ncols + (jp - j0);
                    uk.ldt = ncols;
                    uk.load = !first;
                } else {
                    uk.t = tile;
                    uk.ldt = NR;
                    uk.load = 0;
                }
                if (J->dot) {
                    t->ukr_dot(&uk);
                } else {
                    t->ukr(&uk);
                }
                if (!J->direct_c && last) t->store(&o.e, uk.t, uk.ldt, ip, jp, mr, nr);
            }
        }
    }
}

static void gm_range(void *ctx, int64_t begin, int64_t end) {
    const gm_job *J = ctx;
    for (int64_t u = begin; u < end; u++) gm_unit(J, u);
}

static int64_t gm_ceil(int64_t a, int64_t b) { return (a + b - 1) / b; }

void pa_gemm_on(const pa_gemm_args *g, pa_isa isa) {
    if (g->m <= 0 || g->n <= 0) return;
    const int64_t NB = gm_batch_count(g);
    if (NB <= 0) return;
    gm_job J;
    J.g = g;
    J.t = gm_tier_for(isa);
    J.dot = gm_is_dot(g);
    J.direct_c = g->c.dt == PA_GEMM_F32 && g->c.cs == 1 && g->bias.p == NULL && g->alpha == 1.0f &&
                 g->mid_round == PA_GEMM_F32 && g->epi == NULL;
    const int MR = J.t->mr, NR = J.t->nr;
    int64_t mc = J.t->mc, nc = J.t->nc;
    if (mc > g->m) mc = gm_ceil(g->m, MR) * MR;
    if (nc > g->n) nc = gm_ceil(g->n, NR) * NR;
    const int threads = pa_num_threads();
    bool gemv = false;
    if (!J.dot && g->b.dt == PA_GEMM_F32 && !g->b.nz && g->b.cs == 1 && g->in_round == PA_GEMM_F32 &&
        g->m <= GM_DIRECT_M && NB < threads) {
        gemv = true;
    }
    if ((g->b.dt == PA_GEMM_S8 || g->b.dt == PA_GEMM_S4) && !g->b.nz && g->b.rs == 1 && g->m <= GM_QGEMV_M &&
        NB < threads) {
        gemv = true;
    }
    if (gemv) {
        /* B read in place (a GEMV's shape): one wide column block per thread, so
         * that each k block streams long row segments */
        mc = gm_ceil(g->m, MR) * MR;
        nc = gm_ceil(gm_ceil(g->n, threads > 1 ? threads : 1), NR) * NR;
    }
    /* enough units to keep every thread busy, none smaller than ~2^18 multiply-adds */
    const double work = (double)g->m * (double)g->n * (double)(g->k > 0 ? g->k : 1) * (double)NB;
    int64_t want = threads > 1 ? (gemv ? threads : 4 * (int64_t)threads) : 1;
    const int64_t max_units = (int64_t)(work / 262144.0) + 1;
    if (want > max_units) want = max_units;
    for (;;) {
        const int64_t units = NB * gm_ceil(g->m, mc) * gm_ceil(g->n, nc);
        if (units >= want) break;
        if (nc > 4 * NR) {
            nc = gm_ceil(nc / 2, NR) * NR;
        } else if (mc > 2 * MR) {
            mc = gm_ceil(mc / 2, MR) * MR;
        } else {
            break;
        }
    }
    J.mc = mc;
    J.nc = nc;
    J.nbm = gm_ceil(g->m, mc);
    J.nbn = gm_ceil(g->n, nc);
    const int64_t units = NB * J.nbm * J.nbn;
    if (units == 1 || threads <= 1) {
        gm_range(&J, 0, units);
    } else {
        pa_parallel_for(units, 1, gm_range, &J);
    }
}

void pa_gemm(const pa_gemm_args *g) { pa_gemm_on(g, pa_cpu_isa()); }
