/* White-box tests of the NSA kernels (native/kernels/nsa), compiled into this
 * program (unity build, the SIMD files under their ISA's target pragma):
 * - the bf16 dot GEMM's step (nsa_dot_fma): fixed cases (rounding, DAZ, FTZ and
 *   the underflow boundary) and, on AVX512_BF16 hosts, millions of random
 *   operands against vdpbf16ps itself: the oracle models the instruction;
 * - the scalar dot GEMM against a double-precision product (the layouts);
 * - every SIMD tier this host runs against the scalar oracle, bit for bit: the
 *   dot GEMM (special values, denormals, tiny products, accumulate, panels) and
 *   the row operations (pgrad, pgrad2, rowmax, expsum, normround, normbf16).
 * Exits 1 if any check fails. */
#define _GNU_SOURCE
#if defined(__x86_64__) && !defined(PA_HAVE_X86_KERNELS)
#define PA_HAVE_X86_KERNELS 1
#endif
#include "cpu/cpu.c"
#include "kernels/nsa/nsa_config.c"
#include "kernels/nsa/nsa_scalar.c"
#if defined(PA_HAVE_X86_KERNELS)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/nsa/nsa_avx2.c"
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
#include "kernels/nsa/nsa_avx512.c"
#pragma GCC pop_options
#endif

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PA_CHECK_ERRMSG() ((const char *)NULL) /* no library calls here */
#include "pa_check.h"

/* ---- random numbers ---- */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd64(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static float f_of(uint32_t u) { return pa_bits_f32(u); }
static float bf(uint16_t h) { return pa_bf16_to_f32(h); }

/* A random bf16: mode 0 moderate magnitudes, 1 tiny (denormals included),
 * 2 anything (inf and NaN included). */
static uint16_t rnd_bf16(int mode) {
    const uint64_t r = rnd64();
    const uint16_t s = (uint16_t)((r & 1) << 15);
    int e;
    if (mode == 0) e = 127 + (int)((r >> 1) % 21) - 10;
    else if (mode == 1) e = (int)((r >> 1) % 40);
    else e = (int)((r >> 1) % 256);
    uint16_t m = (uint16_t)((r >> 9) & 0x7f);
    if ((r >> 20) % 16 == 0) m = 0;
    if ((r >> 30) % 32 == 0) return s; /* a signed zero */
    return (uint16_t)(s | (e << 7) | m);
}

static bool same_bits(float a, float b) { return pa_f32_bits(a) == pa_f32_bits(b) || (a != a && b != b); }

/* ---- the step ---- */

static void test_dot_fma_cases(void) {
    /* one rounding per step, to nearest even */
    CHECK(same_bits(nsa_dot_fma(ldexpf(1, -24), 1.0f, 1.0f), 1.0f));
    CHECK(same_bits(nsa_dot_fma(ldexpf(1, -24), 3.0f, 1.0f), 1.0f + ldexpf(1, -22)));
    /* the product is exact inside the step: FLT_MIN + 1.5*2^-149 ties to even */
    CHECK(same_bits(nsa_dot_fma(1.5f * ldexpf(1, -75), ldexpf(1, -74), FLT_MIN), FLT_MIN + ldexpf(1, -148)));
    /* denormal inputs read as zero (c, a and b) */
    CHECK(same_bits(nsa_dot_fma(0.0f, 0.0f, ldexpf(1, -140)), 0.0f));
    CHECK(same_bits(nsa_dot_fma(ldexpf(1, -130), ldexpf(1, 10), 0.0f), 0.0f));
    CHECK(same_bits(nsa_dot_fma(ldexpf(1, 10), -ldexpf(1, -130), 1.0f), 1.0f));
    /* tiny results flushed to a zero of their sign */
    CHECK(same_bits(nsa_dot_fma(ldexpf(1, -70), ldexpf(1, -70), 0.0f), 0.0f));
    CHECK(same_bits(nsa_dot_fma(-ldexpf(1, -70), ldexpf(1, -70), 0.0f), -0.0f));
    /* underflow after rounding (u = 2^-151): c = FLT_MIN + 8u, products -9u, -10u, -11u */
    const float c = FLT_MIN * (1.0f + ldexpf(1, -22));
    CHECK(same_bits(nsa_dot_fma(-3.0f * ldexpf(1, -76), 3.0f * ldexpf(1, -75), c), FLT_MIN)); /* FLT_MIN - u */
    CHECK(same_bits(nsa_dot_fma(-5.0f * ldexpf(1, -76), 2.0f * ldexpf(1, -75), c), 0.0f));    /* FLT_MIN - 2u */
    CHECK(same_bits(nsa_dot_fma(-11.0f * ldexpf(1, -76), ldexpf(1, -75), c), 0.0f));         /* FLT_MIN - 3u */
    CHECK(same_bits(nsa_dot_fma(3.0f * ldexpf(1, -76), 3.0f * ldexpf(1, -75), -c), -FLT_MIN));
    CHECK(same_bits(nsa_dot_fma(5.0f * ldexpf(1, -76), 2.0f * ldexpf(1, -75), -c), -0.0f));
    /* overflow, inf, NaN */
    CHECK(isinf(nsa_dot_fma(ldexpf(1, 100), ldexpf(1, 100), 0.0f)));
    CHECK(isnan(nsa_dot_fma(INFINITY, 0.0f, 1.0f)));
    CHECK(isnan(nsa_dot_fma(1.0f, 1.0f, NAN)));
    /* signed zeros: +0 + -0 = +0, -0 + -0 = -0 */
    CHECK(same_bits(nsa_dot_fma(-0.0f, 1.0f, 0.0f), 0.0f));
    CHECK(same_bits(nsa_dot_fma(-0.0f, 1.0f, -0.0f), -0.0f));
}

#if defined(PA_HAVE_X86_KERNELS)
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c"))) static float hw_pair(uint16_t a0, uint16_t a1, uint16_t b0,
                                                                               uint16_t b1, float c) {
    const __m128i aw = _mm_set1_epi32((int)((uint32_t)a0 | (uint32_t)a1 << 16));
    const __m128i bw = _mm_set1_epi32((int)((uint32_t)b0 | (uint32_t)b1 << 16));
    return _mm_cvtss_f32(_mm_dpbf16_ps(_mm_set1_ps(c), (__m128bh)aw, (__m128bh)bw));
}

/* nsa_dot_fma twice (odd, then even) is what vdpbf16ps computes */
static void test_dot_fma_vs_vdpbf16ps(void) {
    if (pa_cpu_detected_isa() < PA_ISA_AVX512BF16) {
        printf("  (no AVX512_BF16 on this host: the model is checked by its fixed cases only)\n");
        return;
    }
    long bad = 0, n = 0;
    for (int mode = 0; mode < 4; mode++) {
        for (long it = 0; it < 400000; it++) {
            uint16_t a0 = rnd_bf16(mode < 3 ? mode : 0), a1 = rnd_bf16(mode < 3 ? mode : 0);
            uint16_t b0 = rnd_bf16(mode < 3 ? mode : 0), b1 = rnd_bf16(mode < 3 ? mode : 0);
            float c;
            const uint64_t r = rnd64();
            if (mode == 3) {
                /* products and c near FLT_MIN: the underflow boundary */
                a0 = (uint16_t)((a0 & 0x807f) | (uint16_t)(r % 40) << 7);
                b0 = (uint16_t)((b0 & 0x807f) | (uint16_t)(60 + (r >> 8) % 40) << 7);
                a1 = (uint16_t)((a1 & 0x807f) | (uint16_t)((r >> 16) % 40) << 7);
                b1 = (uint16_t)((b1 & 0x807f) | (uint16_t)(60 + (r >> 24) % 40) << 7);
                c = ldexpf((float)(int32_t)((r >> 32) & 0xffffff) - 8388608.0f, -149 + (int)((r >> 60) % 4));
            } else {
                c = f_of((uint32_t)(r >> 32));
            }
            const float want = hw_pair(a0, a1, b0, b1, c);
            const float got = nsa_dot_fma(bf(a0), bf(b0), nsa_dot_fma(bf(a1), bf(b1), c));
            n++;
            if (!same_bits(want, got)) {
                if (bad < 5) {
                    fprintf(stderr, "vdpbf16ps %a vs model %a (a %04x %04x, b %04x %04x, c %a)\n", want, got, a0,
                            a1, b0, b1, c);
                }
                bad++;
            }
        }
    }
    printf("  model vs vdpbf16ps: %ld of %ld differ\n", bad, n);
    CHECK(bad == 0);
}
#endif

/* ---- the dot GEMM ---- */

typedef struct dot_problem {
    int64_t m, n, kp, np, lda, ldb, ldc;
    int acc;
    uint16_t *a, *b; /* np panels each */
    nsa_panel pan[8];
    float *c0;       /* initial C */
} dot_problem;

static void dot_make(dot_problem *p, int64_t m, int64_t n, int64_t kp, int64_t np, int acc, int mode) {
    memset(p, 0, sizeof *p);
    p->m = m;
    p->n = n;
    p->kp = kp;
    p->np = np;
    p->lda = 2 * kp + 2 * (int64_t)(rnd64() % 3);
    p->ldb = n + 16 * (int64_t)(rnd64() % 2);
    p->ldc = n + 16 * (int64_t)(rnd64() % 2);
    p->acc = acc;
    const int64_t asz = m * p->lda + 2, bsz = 2 * kp * p->ldb + 2;
    p->a = malloc((size_t)(np * asz + 1) * 2);
    p->b = malloc((size_t)(np * bsz + 1) * 2);
    p->c0 = malloc((size_t)(m * p->ldc + 1) * 4);
    CHECK(p->a && p->b && p->c0);
    for (int64_t i = 0; i < np * asz; i++) p->a[i] = rnd_bf16(mode == 3 ? (int)(rnd64() % 3) : mode);
    for (int64_t i = 0; i < np * bsz; i++) p->b[i] = rnd_bf16(mode == 3 ? (int)(rnd64() % 3) : mode);
    for (int64_t i = 0; i < m * p->ldc; i++) p->c0[i] = bf(rnd_bf16(mode == 1 ? 1 : 0));
    for (int64_t q = 0; q < np; q++) {
        p->pan[q].a = p->a + q * asz;
        p->pan[q].b = p->b + q * bsz;
    }
}

static void dot_free(dot_problem *p) {
    free(p->a);
    free(p->b);
    free(p->c0);
}

static void dot_run(const dot_problem *p, nsa_dot_fn fn, float *c) {
    memcpy(c, p->c0, (size_t)(p->m * p->ldc) * 4);
    const nsa_dot_args g = {.m = p->m, .n = p->n, .kp = p->kp, .panels = p->pan, .npanels = p->np,
                            .lda = p->lda, .ldb = p->ldb, .c = c, .ldc = p->ldc, .accumulate = p->acc};
    fn(&g);
}

/* the scalar GEMM reads the layouts of nsa.h: against a double product */
static void test_dot_layout(void) {
    dot_problem p;
    dot_make(&p, 5, 32, 7, 3, 1, 0);
    float *c = malloc((size_t)(p.m * p.ldc) * 4);
    CHECK(c != NULL);
    dot_run(&p, nsa_dot_scalar, c);
    int bad = 0;
    for (int64_t i = 0; i < p.m; i++) {
        for (int64_t j = 0; j < p.n; j++) {
            double s = p.c0[i * p.ldc + j], mag = fabs(s);
            for (int64_t q = 0; q < p.np; q++) {
                const uint16_t *a = (const uint16_t *)p.pan[q].a + i * p.lda;
                const uint16_t *b = p.pan[q].b;
                for (int64_t k = 0; k < 2 * p.kp; k++) {
                    /* B[k][n] is element (k % 2) of the pair at word (k / 2) * ldb + n */
                    const double t = (double)bf(a[k]) * bf(b[2 * ((k / 2) * p.ldb + j) + k % 2]);
                    s += t;
                    mag += fabs(t);
                }
            }
            if (fabs(c[i * p.ldc + j] - s) > 1e-5 * mag) bad++;
        }
    }
    CHECK(bad == 0);
    free(c);
    dot_free(&p);
}

/* every SIMD tier against the oracle, bit for bit */
static void test_dot_tiers(void) {
    const pa_isa top = pa_cpu_detected_isa();
    int runs = 0;
    for (int it = 0; it < 120; it++) {
        const int mode = it % 4; /* moderate, tiny (DAZ/FTZ), anything, mixed */
        const int64_t m = 1 + (int64_t)(rnd64() % 19), n = 16 * (1 + (int64_t)(rnd64() % 6));
        const int64_t kp = it % 7 == 0 ? 150 : 1 + (int64_t)(rnd64() % 40), np = (int64_t)(rnd64() % 6);
        dot_problem p;
        dot_make(&p, m, n, kp, np, (int)(rnd64() % 2), mode);
        float *want = malloc((size_t)(m * p.ldc) * 4), *got = malloc((size_t)(m * p.ldc) * 4);
        CHECK(want && got);
        dot_run(&p, nsa_dot_scalar, want);
        for (int t = PA_ISA_AVX2; t <= (int)top; t++) {
            const nsa_kernels k = nsa_kernels_select((pa_isa)t);
            dot_run(&p, k.dot, got);
            int bad = 0;
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) bad += !same_bits(want[i * p.ldc + j], got[i * p.ldc + j]);
            if (bad) {
                fprintf(stderr, "dot tier %s: %d of %lld differ (m %lld n %lld kp %lld np %lld mode %d)\n",
                        pa_isa_name((pa_isa)t), bad, (long long)(m * n), (long long)m, (long long)n, (long long)kp,
                        (long long)np, mode);
            }
            CHECK(bad == 0);
            runs++;
        }
        free(want);
        free(got);
        dot_free(&p);
    }
    printf("  dot GEMM: %d (problem, tier) pairs bit-equal to the oracle\n", runs);
}

/* ---- row operations ---- */

static float rnd_score(void) {
    const uint64_t r = rnd64();
    if (r % 97 == 0) return NAN;
    if (r % 89 == 0) return INFINITY;
    if (r % 83 == 0) return ldexpf(1, -140); /* a denormal */
    return (float)((int64_t)(r >> 11) % 2000001 - 1000000) * 1e-5f;
}

static void test_rows_tiers(void) {
    const pa_isa top = pa_cpu_detected_isa();
    enum { N = 96 };
    float s[2][N], dp[2][N], w1[N], w2[N], x1[N], x2[N];
    int runs = 0;
    for (int it = 0; it < 400; it++) {
        const int special = it % 5 == 0;
        for (int r = 0; r < 2; r++) {
            for (int c = 0; c < N; c++) {
                s[r][c] = special ? rnd_score() : (float)((int64_t)(rnd64() % 20001) - 10000) * 1e-3f;
                dp[r][c] = special ? rnd_score() : (float)((int64_t)(rnd64() % 20001) - 10000) * 1e-3f;
            }
        }
        const int64_t n = 16 * (1 + it % 6), nvis = (int64_t)(rnd64() % (uint64_t)(n + 20)) - 5;
        const int64_t nr = 1 + (int64_t)(rnd64() % N); /* any length for rowmax / expsum / norm */
        const float scale = 0.0883883f, m0 = (float)(rnd64() % 5), m1 = -1.5f;
        const float l0 = it % 11 == 0 ? 0.0f : 3.25f, l1 = 17.0f;
        const int rnd = (int)(rnd64() % 3);
        for (int t = PA_ISA_AVX2; t <= (int)top; t++) {
            const nsa_kernels ks = nsa_kernels_select(PA_ISA_SCALAR), kt = nsa_kernels_select((pa_isa)t);
            int bad = 0;
            /* pgrad, in place */
            memcpy(w1, s[0], sizeof w1);
            memcpy(x1, dp[0], sizeof x1);
            memcpy(w2, s[0], sizeof w2);
            memcpy(x2, dp[0], sizeof x2);
            ks.pgrad(w1, x1, n, nvis, scale, m0, l0, 0.25f, rnd);
            kt.pgrad(w2, x2, n, nvis, scale, m0, l0, 0.25f, rnd);
            for (int c = 0; c < n; c++) bad += !same_bits(w1[c], w2[c]) + !same_bits(x1[c], x2[c]);
            /* pgrad2 (second row absent on some runs) */
            uint16_t d16a[2][N], d16b[2][N];
            uint32_t p2a[N], p2b[N], ds2a[N], ds2b[N];
            const int two = it % 3 != 0;
            nsa_pgrad2_args ga = {.s = {s[0], two ? s[1] : NULL}, .dp = {dp[0], dp[1]}, .n = n, .nvis = nvis,
                                  .scale = scale, .m = {m0, m1}, .l = {l0, l1}, .dsum = {0.25f, -0.5f},
                                  .ds16 = {d16a[0], d16a[1]}, .p2 = p2a, .ds2 = ds2a};
            nsa_pgrad2_args gb = ga;
            gb.ds16[0] = d16b[0];
            gb.ds16[1] = d16b[1];
            gb.p2 = p2b;
            gb.ds2 = ds2b;
            ks.pgrad2(&ga);
            kt.pgrad2(&gb);
            for (int c = 0; c < n; c++) {
                bad += d16a[0][c] != d16b[0][c] || p2a[c] != p2b[c] || ds2a[c] != ds2b[c];
                if (two) bad += d16a[1][c] != d16b[1][c];
            }
            /* rowmax, expsum */
            bad += !same_bits(ks.rowmax(s[0], nr, scale), kt.rowmax(s[0], nr, scale));
            memcpy(w1, s[1], sizeof w1);
            memcpy(w2, s[1], sizeof w2);
            bad += !same_bits(ks.expsum(w1, nr, scale, m0), kt.expsum(w2, nr, scale, m0));
            for (int c = 0; c < nr; c++) bad += !same_bits(w1[c], w2[c]);
            /* normround, normbf16 */
            memcpy(w1, s[0], sizeof w1);
            memcpy(w2, s[0], sizeof w2);
            ks.normround(w1, nr, 3.0f, rnd);
            kt.normround(w2, nr, 3.0f, rnd);
            for (int c = 0; c < nr; c++) bad += !same_bits(w1[c], w2[c]);
            uint16_t o1[N + 16], o2[N + 16];
            ks.normbf16(s[1], o1, nr, nr + 3, 7.0f);
            kt.normbf16(s[1], o2, nr, nr + 3, 7.0f);
            bad += memcmp(o1, o2, (size_t)(nr + 3) * 2) != 0;
            if (bad) fprintf(stderr, "row ops tier %s: %d differences (it %d)\n", pa_isa_name((pa_isa)t), bad, it);
            CHECK(bad == 0);
            runs++;
        }
    }
    printf("  row operations: %d (case, tier) pairs bit-equal to the oracle\n", runs);
}

/* pgrad2 gives pgrad's values, in its layouts */
static void test_pgrad2_layout(void) {
    enum { N = 48 };
    float s[2][N], dp[2][N], p[2][N], ds[2][N];
    for (int r = 0; r < 2; r++) {
        for (int c = 0; c < N; c++) {
            s[r][c] = p[r][c] = (float)(c % 7) - 3.0f + (float)r;
            dp[r][c] = ds[r][c] = 0.5f * (float)(c % 5) - (float)r;
        }
    }
    const float m[2] = {1.0f, 2.0f}, l[2] = {5.0f, 9.0f}, d[2] = {0.125f, -0.25f};
    for (int r = 0; r < 2; r++) nsa_pgrad_scalar(p[r], ds[r], N, 40, 0.5f, m[r], l[r], d[r], NSA_ROUND_BF16);
    uint16_t d16[2][N];
    uint32_t p2[N], ds2[N];
    const nsa_pgrad2_args g = {.s = {s[0], s[1]}, .dp = {dp[0], dp[1]}, .n = N, .nvis = 40, .scale = 0.5f,
                               .m = {m[0], m[1]}, .l = {l[0], l[1]}, .dsum = {d[0], d[1]},
                               .ds16 = {d16[0], d16[1]}, .p2 = p2, .ds2 = ds2};
    nsa_pgrad2_scalar(&g);
    int bad = 0;
    for (int c = 0; c < N; c++) {
        for (int r = 0; r < 2; r++) {
            bad += d16[r][c] != nsa_bf16_bits(ds[r][c]);
            bad += (uint16_t)(p2[c] >> (16 * r)) != nsa_bf16_bits(p[r][c]);
            bad += (uint16_t)(ds2[c] >> (16 * r)) != nsa_bf16_bits(ds[r][c]);
        }
    }
    CHECK(bad == 0);
}

int main(void) {
    printf("detected ISA: %s\n", pa_isa_name(pa_cpu_detected_isa()));
    test_dot_fma_cases();
#if defined(PA_HAVE_X86_KERNELS)
    test_dot_fma_vs_vdpbf16ps();
#endif
    test_dot_layout();
    test_pgrad2_layout();
    test_dot_tiers();
    test_rows_tiers();
    printf("test_nsa_kernels: %d checks passed\n", (int)g_checks);
    return 0;
}
