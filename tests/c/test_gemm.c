/* The library GEMM (native/kernels/gemm/gemm.h) against its definition:
 * random shapes, strides (transposes, batch broadcast), dtypes (f32, f16,
 * bf16, int8 / int4 dequantised B, NZ B), epilogues; every tier and thread
 * count must give the bits of pa_gemm_reference, which must be within a few
 * ulps of the float64 product. Usage: test_gemm [cases] [seed]. */
#define _GNU_SOURCE
/* the suite builds at -O0: the kernels and the reference need the optimiser to be quick */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#pragma GCC optimize("O1") /* under a sanitizer -O2 of the SIMD files costs a minute and a half */
#else
#pragma GCC optimize("O2")
#endif
#if defined(__x86_64__) && !defined(PA_HAVE_X86_KERNELS)
#define PA_HAVE_X86_KERNELS 1
#endif
/* unity build: the GEMM and what it needs, the SIMD files under their ISA's target pragma */
#include "common/pa_common.c"
#include "cpu/cpu.c"
#include "runtime/threadpool.c"
#include "kernels/gemm/gemm.c"
#if defined(PA_HAVE_X86_KERNELS)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/gemm/gemm_avx2.c"
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
#include "kernels/gemm/gemm_avx512.c"
#pragma GCC pop_options
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static int64_t rint_(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }
static float rfloat(void) { return (float)((double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

static int g_fail;
#define CHECK(c, ...)                                                                                         \
    do {                                                                                                      \
        if (!(c)) {                                                                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                              \
            fprintf(stderr, __VA_ARGS__);                                                                     \
            fprintf(stderr, "\n");                                                                            \
            g_fail++;                                                                                         \
        }                                                                                                     \
    } while (0)

static size_t es_of(int dt) { return dt == PA_GEMM_F32 ? 4 : dt == PA_GEMM_S8 || dt == PA_GEMM_S4 ? 1 : 2; }

static void fill(void *p, int dt, int64_t n, int special) {
    for (int64_t i = 0; i < n; i++) {
        float v = rfloat();
        if (special && rnd() % 64 == 0) {
            const float sp[] = {0.0f, -0.0f, 1e-39f, -3e-40f, 1e30f, 5e-38f, 1.17549435e-38f};
            v = sp[rnd() % 7];
        }
        switch (dt) {
        case PA_GEMM_F32: ((float *)p)[i] = v; break;
        case PA_GEMM_F16: ((uint16_t *)p)[i] = pa_f32_to_f16(v); break;
        case PA_GEMM_BF16: ((uint16_t *)p)[i] = pa_f32_to_bf16(v); break;
        default: ((uint8_t *)p)[i] = (uint8_t)rnd(); break;
        }
    }
}

typedef struct mat {
    void *p;
    int64_t elems;
} mat;

/* A strided operand of rows x cols: row-major, column-major or padded, and batch
 * strides (some broadcast). */
/* the decode-shaped cases: 1 = few rows of A times an int8 / int4 B stored [n, k]
 * (column-major here), no NZ, fp32 inputs: the fused GEMV and the dequantising packer;
 * 2 = up to 4 rows times an fp32 row-major B into a plain fp32 C: the fp32 GEMV */
static int g_mode;

static void make(pa_gemm_mat *m, mat *store, int dt, int64_t rows, int64_t cols, int nb, const int64_t *batch,
                 int special, int allow_nz) {
    memset(m, 0, sizeof *m);
    m->dt = dt;
    const int layout = g_mode && allow_nz ? (g_mode == 1 ? 1 : 0) : (int)(rnd() % 3);
    if (g_mode) allow_nz = 0;
    const int64_t pad = rint_(0, 3);
    int64_t rs, cs, span;
    if (layout == 1) { /* column-major */
        rs = 1;
        cs = rows + pad;
        span = cols * cs;
    } else { /* row-major, maybe padded, maybe column stride 2 */
        cs = layout == 2 ? 2 : 1;
        rs = cols * cs + pad;
        span = rows * rs;
    }
    int64_t total = span + 3;
    int64_t bstride = total;
    for (int d = nb - 1; d >= 0; d--) {
        if (rnd() % 3 == 0) {
            m->bs[d] = 0;
        } else {
            m->bs[d] = bstride;
            bstride *= batch[d];
        }
    }
    total = bstride + 3;
    m->rs = rs;
    m->cs = cs;
    m->off = rint_(0, 2);
    if (allow_nz && rnd() % 4 == 0) {
        /* NZ of X = operand (trans 0) or operand^T (trans 1), one batch block each */
        m->nz = 1;
        m->nzl.trans = (int)(rnd() % 2);
        m->nzl.c0 = dt == PA_GEMM_F32 ? 8 : dt == PA_GEMM_S8 ? 32 : 16;
        m->nzl.rows = m->nzl.trans ? cols : rows;
        m->nzl.cols = m->nzl.trans ? rows : cols;
        m->nzl.padded = (int)(rnd() % 2);
        m->nzl.prow = m->nzl.padded ? (m->nzl.rows + 15) / 16 * 16 : m->nzl.rows;
        const int64_t cpad = m->nzl.padded ? (m->nzl.cols + m->nzl.c0 - 1) / m->nzl.c0 * m->nzl.c0 : m->nzl.cols;
        const int64_t one = m->nzl.prow * cpad;
        bstride = one;
        for (int d = nb - 1; d >= 0; d--) {
            if (m->bs[d] != 0) {
                m->bs[d] = bstride;
                bstride *= batch[d];
            }
        }
        total = bstride + 3;
    }
    if (dt == PA_GEMM_S4) total = total + 1;
    store->elems = total;
    const size_t bytes = dt == PA_GEMM_S4 ? (size_t)(total + 1) / 2 : (size_t)total * es_of(dt);
    store->p = malloc(bytes + 64);
    fill(store->p, dt == PA_GEMM_S4 ? PA_GEMM_S8 : dt, dt == PA_GEMM_S4 ? (int64_t)bytes : total, special);
    m->p = store->p;
}

static double to_d(int dt, const void *p, int64_t i) { return gm_fval(dt, p, i); }

static int64_t batch_off(int nb, const int64_t *batch, const int64_t *bs, int64_t bi) {
    int64_t off = 0;
    for (int d = nb - 1; d >= 0; d--) {
        off += (bi % batch[d]) * bs[d];
        bi /= batch[d];
    }
    return off;
}

static int one_case(int cs) {
    pa_gemm_args g;
    pa_gemm_init(&g);
    const int big = rnd() % 12 == 0;
    g.m = rint_(1, big ? 200 : 40);
    g.n = rint_(1, big ? 200 : 70);
    g.k = rnd() % 16 == 0 ? 0 : rint_(1, big ? 600 : 90);
    if (rnd() % 6 == 0) g.m = 1;
    if (g_mode == 1) {
        g.m = rnd() % 3 == 0 ? rint_(5, 30) : rint_(1, 4); /* more than 4 rows: the packed GEMM of a dequantised B */
        g.k = rint_(1, 400);
    }
    if (g_mode == 2) {
        g.m = rint_(1, 4);
        g.k = rint_(1, 300);
    }
    g.nbatch = g_mode ? 0 : (int)(rnd() % 3);
    int64_t nb = 1;
    for (int d = 0; d < g.nbatch; d++) {
        g.batch[d] = rint_(1, 3);
        nb *= g.batch[d];
    }
    const int kinds[] = {PA_GEMM_F32, PA_GEMM_F16, PA_GEMM_BF16};
    const int adt = kinds[rnd() % 3];
    int bdt = g_mode == 2 ? PA_GEMM_F32 : rnd() % 2 ? adt : kinds[rnd() % 3];
    const int quant = g_mode == 1 || (!g_mode && rnd() % 6 == 0);
    if (quant) bdt = rnd() % 2 ? PA_GEMM_S8 : PA_GEMM_S4;
    const int special = rnd() % 4 == 0;
    mat sa, sb, sc, sbias = {0}, ssc = {0}, sof = {0};
    make(&g.a, &sa, adt, g.m, g.k, g.nbatch, g.batch, special, 0);
    make(&g.b, &sb, bdt, g.k, g.n, g.nbatch, g.batch, special, 1);
    if (quant) {
        const int64_t glen = rnd() % 3 == 0 ? 64 : 32;
        const int64_t groups = rnd() % 2 ? 1 : (g.k + glen - 1) / glen;
        g.bq.group = groups == 1 ? 0 : glen;
        make(&g.bq.scale, &ssc, rnd() % 2 ? PA_GEMM_F16 : PA_GEMM_F32, groups, g.n, g.nbatch, g.batch, 0, 0);
        if (rnd() % 2) make(&g.bq.offset, &sof, PA_GEMM_F16, groups, g.n, g.nbatch, g.batch, 0, 0);
        g.bq.round_dt = rnd() % 3 == 0 ? PA_GEMM_F16 : rnd() % 2 ? PA_GEMM_BF16 : PA_GEMM_F32;
    }
    const int cdt = g_mode == 2 && rnd() % 4 != 0 ? PA_GEMM_F32 : kinds[rnd() % 3];
    /* C: contiguous row-major or padded */
    const int64_t cpad = rint_(0, 2);
    g.c.dt = cdt;
    g.c.rs = g.n + cpad;
    g.c.cs = 1;
    if (rnd() % 5 == 0 && g_mode != 2) { /* column-major C */
        g.c.rs = 1;
        g.c.cs = g.m + cpad;
    }
    int64_t cb = (g.m - 1) * g.c.rs + (g.n - 1) * g.c.cs + 1;
    for (int d = g.nbatch - 1; d >= 0; d--) {
        g.c.bs[d] = cb;
        cb *= g.batch[d];
    }
    sc.elems = cb + 2;
    sc.p = calloc((size_t)sc.elems, 4);
    g.c.p = sc.p;
    g.c.off = 1;
    if (rnd() % (g_mode == 2 ? 8 : 3) == 0) {
        g.alpha = rnd() % 2 ? 0.5f : -1.25f;
    }
    if (rnd() % (g_mode == 2 ? 8 : 3) == 0) {
        const int kind = (int)(rnd() % 3);
        make(&g.bias, &sbias, kinds[rnd() % 3], g.m, g.n, g.nbatch, g.batch, 0, 0);
        if (kind == 1) g.bias.rs = 0; /* a row vector broadcast */
        if (kind == 2) g.bias.cs = 0;
        g.beta = rnd() % 2 ? 1.0f : 0.75f;
    }
    if (rnd() % 5 == 0 && !g_mode) g.in_round = PA_GEMM_F16;
    if (rnd() % (g_mode == 2 ? 8 : 5) == 0) g.mid_round = rnd() % 2 ? PA_GEMM_F16 : PA_GEMM_BF16;

    /* the definition */
    const size_t cbytes = (size_t)sc.elems * 4;
    void *ref = malloc(cbytes);
    memset(sc.p, 0x5a, cbytes);
    pa_gemm_reference(&g);
    memcpy(ref, sc.p, cbytes);

    /* accuracy of the reference against float64 (plain cases) */
    if (!quant && g.in_round == PA_GEMM_F32 && g.mid_round == PA_GEMM_F32 && !special) {
        for (int64_t bi = 0; bi < nb; bi++) {
            for (int64_t i = 0; i < g.m; i++) {
                for (int64_t j = 0; j < g.n; j++) {
                    double s = 0, mag = 0;
                    for (int64_t p = 0; p < g.k; p++) {
                        const double x = to_d(adt, g.a.p, gm_index(&g.a, i, p) + batch_off(g.nbatch, g.batch, g.a.bs, bi));
                        pa_gemm_mat bb = g.b;
                        bb.off += batch_off(g.nbatch, g.batch, g.b.bs, bi);
                        const double y = to_d(bdt, g.b.p, gm_index(&bb, p, j));
                        s += x * y;
                        mag += fabs(x * y);
                    }
                    double v = (double)g.alpha * s;
                    double vmag = fabs((double)g.alpha) * mag;
                    if (g.bias.p) {
                        const double bv = to_d(g.bias.dt, g.bias.p,
                                               g.bias.off + i * g.bias.rs + j * g.bias.cs +
                                                   batch_off(g.nbatch, g.batch, g.bias.bs, bi));
                        v += g.beta * bv;
                        vmag += fabs(g.beta * bv);
                    }
                    const int64_t ci = g.c.off + i * g.c.rs + j * g.c.cs + batch_off(g.nbatch, g.batch, g.c.bs, bi);
                    const double got = to_d(cdt, ref, ci);
                    const double eps = cdt == PA_GEMM_F32 ? 1.2e-7 : cdt == PA_GEMM_F16 ? 9.8e-4 : 7.9e-3;
                    const double tol = (double)(g.k + 4) * 1.2e-7 * vmag + eps * fabs(v) + 1e-30;
                    if (fabs(got - v) > tol) {
                        CHECK(0, "case %d: ref (%lld,%lld) of batch %lld = %.9g, float64 %.9g (tol %.3g) m%lld n%lld k%lld",
                              cs, (long long)i, (long long)j, (long long)bi, got, v, tol, (long long)g.m,
                              (long long)g.n, (long long)g.k);
                        goto done_acc;
                    }
                }
            }
        }
    }
done_acc:;
    /* every tier and thread count: the same bits */
    const pa_isa best = pa_cpu_detected_isa();
    for (int isa = PA_ISA_SCALAR; isa <= (int)best; isa++) {
        for (int th = 1; th <= 3; th += 2) {
            pa_set_num_threads(th);
            memset(sc.p, 0x5a, cbytes);
            pa_gemm_on(&g, (pa_isa)isa);
            if (memcmp(sc.p, ref, cbytes) != 0) {
                int64_t at = 0;
                const uint8_t *x = sc.p, *y = ref;
                while (x[at] == y[at]) at++;
                CHECK(0, "case %d: tier %s threads %d differs from the reference at byte %lld (m%lld n%lld k%lld "
                      "a%d b%d c%d nz%d bias%d alpha%g inr%d mid%d batch%d)",
                      cs, pa_isa_name((pa_isa)isa), th, (long long)at, (long long)g.m, (long long)g.n,
                      (long long)g.k, adt, bdt, cdt, g.b.nz, g.bias.p != NULL, g.alpha, g.in_round, g.mid_round,
                      g.nbatch);
                break;
            }
        }
    }
    pa_set_num_threads(0);
    free(ref);
    free(sa.p);
    free(sb.p);
    free(sc.p);
    free(sbias.p);
    free(ssc.p);
    free(sof.p);
    return 0;
}

#if defined(PA_HAVE_X86_KERNELS)
/* the AVX-512 tier's fp16 roundings in fp32 arithmetic against the conversion round trip,
 * for every float of either sign in their domain: gm_round16a below 65504, gm_round16v on
 * 0 and fp16's normal range */
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
static void check_round16(void) {
    const uint32_t top = 0x477FE000u; /* 65504 */
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 normal = _mm512_set1_ps(0x1p-14f);
    long long bad_a = 0, bad_v = 0;
    for (uint32_t u = 0; u < top; u += 16) {
        for (int sign = 0; sign < 2; sign++) {
            const __m512i bits = _mm512_or_si512(_mm512_add_epi32(_mm512_set1_epi32((int)u), lane),
                                                 _mm512_set1_epi32(sign ? (int)0x80000000u : 0));
            const __m512 x = _mm512_castsi512_ps(bits);
            const __mmask16 in = _mm512_cmplt_epu32_mask(_mm512_add_epi32(_mm512_set1_epi32((int)u), lane),
                                                         _mm512_set1_epi32((int)top));
            const __m512 want = _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            /* values, not bits: a chain that starts at +0 cannot see the sign of a zero */
            bad_a += __builtin_popcount(in & ~_mm512_cmp_ps_mask(gm_round16a(x), want, _CMP_EQ_OQ));
            const __mmask16 dom = in & (_mm512_cmp_ps_mask(_mm512_abs_ps(x), normal, _CMP_GE_OQ) |
                                        _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ));
            bad_v += __builtin_popcount(dom & ~_mm512_cmp_ps_mask(gm_round16v(x), want, _CMP_EQ_OQ));
        }
    }
    CHECK(bad_a == 0 && bad_v == 0, "fp16 rounding in fp32 arithmetic: %lld (x + M - M) and %lld (Veltkamp) floats "
          "differ from the conversion round trip", bad_a, bad_v);
}
#pragma GCC pop_options
#endif

int main(int argc, char **argv) {
    const int cases = argc > 1 ? atoi(argv[1]) : 60;
    if (argc > 2) g_rng = strtoull(argv[2], NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
#if defined(PA_HAVE_X86_KERNELS)
    if (pa_cpu_detected_isa() >= PA_ISA_AVX512) check_round16();
#endif
    for (int c = 0; c < cases && g_fail < 10; c++) one_case(c);
    g_mode = 1;
    for (int c = 0; c < cases / 2 && g_fail < 10; c++) one_case(cases + c);
    g_mode = 2;
    for (int c = 0; c < cases / 2 && g_fail < 10; c++) one_case(cases + cases / 2 + c);
    printf("test_gemm: %d cases, %d quantised and %d fp32 GEMV cases, %d failures\n", cases, cases / 2, cases / 2,
           g_fail);
    return g_fail != 0;
}
