/* This machine's bf16 dot-product peak and fp32 FMA peak, on T threads, measured
 * in the same run as the ops (the NSA rows' yardstick).
 * usage: bf16_peak <threads> <seconds per measurement> [bf16]; prints "bf16 <GFLOP/s> fp32 <GFLOP/s> <kind>"
 * (best of three alternating measurements of each; with "bf16": one bf16 measurement, fp32 nan,
 * the probe the benchmark runs between the NSA launches it times).
 *
 * Both kernels are register-blocked micro-kernels on L1-resident operands, the
 * fastest a GEMM can run on this ISA, FLOPs counted 2 per multiply-add:
 * - AVX512_BF16 (built with -march=native on such a host): vdpbf16ps, 12 x 32
 *   outputs (24 zmm accumulators), bf16 pairs of A broadcast, B as bf16 pairs;
 * - otherwise AVX2 + FMA: B in bf16 widened to fp32 with two unpacks per 16
 *   values (the NSA kernels' B operand), A broadcast from fp32 (a GEMM widens
 *   its small operand once), 6 x 16 outputs (12 ymm accumulators), FMA.
 * The fp32 peak is the same AVX2/AVX-512F kernel with fp32 B. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define K 256 /* k-steps per pass: A 6 KB fp32, B 8 KB bf16 / 16 KB fp32 */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    int kind; /* 0 bf16, 1 fp32 */
    double seconds;
    double flops;
    float sink;
} job;

#if defined(__AVX512BF16__) && defined(__AVX512F__)
#define KIND "avx512bf16 vdpbf16ps 12x32"
/* one pass: C[12][32] += A[12][K] B[K][32] on bf16 pairs (24 zmm accumulators,
 * 2 B vectors, one broadcast per row); returns FLOPs */
static double pass_bf16(const uint16_t *a, const uint16_t *b, float *c) {
    __m512 acc[12][2];
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++)
#pragma GCC unroll 2
        for (int v = 0; v < 2; v++) acc[i][v] = _mm512_loadu_ps(c + i * 32 + 16 * v);
    for (int j = 0; j < K / 2; j++) {
        __m512i bv[2];
#pragma GCC unroll 2
        for (int v = 0; v < 2; v++) bv[v] = _mm512_loadu_si512((const void *)(b + (j * 32 + 16 * v) * 2));
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) {
            int32_t pair;
            memcpy(&pair, a + (i * K + 2 * j), 4);
            const __m512i av = _mm512_set1_epi32(pair);
#pragma GCC unroll 2
            for (int v = 0; v < 2; v++) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], (__m512bh)av, (__m512bh)bv[v]);
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++)
#pragma GCC unroll 2
        for (int v = 0; v < 2; v++) _mm512_storeu_ps(c + i * 32 + 16 * v, acc[i][v]);
    return 2.0 * 12 * 32 * K;
}
static double pass_f32(const float *a, const float *b, float *c) {
    __m512 acc[6][4];
    #pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
        #pragma GCC unroll 4
        for (int v = 0; v < 4; v++) acc[i][v] = _mm512_loadu_ps(c + i * 64 + 16 * v);
    for (int k = 0; k < K; k++) {
        __m512 bv[4];
        #pragma GCC unroll 4
        for (int v = 0; v < 4; v++) bv[v] = _mm512_loadu_ps(b + k * 64 + 16 * v);
        #pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            const __m512 av = _mm512_set1_ps(a[i * K + k]);
            #pragma GCC unroll 4
            for (int v = 0; v < 4; v++) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
        }
    }
    #pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
        #pragma GCC unroll 4
        for (int v = 0; v < 4; v++) _mm512_storeu_ps(c + i * 64 + 16 * v, acc[i][v]);
    return 2.0 * 6 * 64 * K;
}
#elif defined(__AVX2__) && defined(__FMA__)
#define KIND "avx2 fma, bf16 B widened 6x16"
static double pass_bf16(const float *a, const uint16_t *b, float *c) {
    __m256 acc[6][2];
    #pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
        #pragma GCC unroll 2
        for (int v = 0; v < 2; v++) acc[i][v] = _mm256_loadu_ps(c + i * 16 + 8 * v);
    const __m256i z = _mm256_setzero_si256();
    for (int k = 0; k < K; k++) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(b + k * 16));
        const __m256 b0 = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, x));
        const __m256 b1 = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, x));
        #pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            const __m256 av = _mm256_broadcast_ss(a + i * K + k);
            acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
        }
    }
    #pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
        #pragma GCC unroll 2
        for (int v = 0; v < 2; v++) _mm256_storeu_ps(c + i * 16 + 8 * v, acc[i][v]);
    return 2.0 * 6 * 16 * K;
}
static double pass_f32(const float *a, const float *b, float *c) {
    __m256 acc[6][2];
    #pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
        #pragma GCC unroll 2
        for (int v = 0; v < 2; v++) acc[i][v] = _mm256_loadu_ps(c + i * 16 + 8 * v);
    for (int k = 0; k < K; k++) {
        const __m256 b0 = _mm256_loadu_ps(b + k * 16), b1 = _mm256_loadu_ps(b + k * 16 + 8);
        #pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            const __m256 av = _mm256_broadcast_ss(a + i * K + k);
            acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
        }
    }
    #pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
        #pragma GCC unroll 2
        for (int v = 0; v < 2; v++) _mm256_storeu_ps(c + i * 16 + 8 * v, acc[i][v]);
    return 2.0 * 6 * 16 * K;
}
#endif

#ifdef KIND
static void *worker(void *p) {
    job *j = p;
    /* small values that keep the sums finite: A and B hold +-2^-10 */
    float *a = aligned_alloc(64, 12 * K * sizeof(float));
    uint16_t *b16 = aligned_alloc(64, (size_t)K * 64 * sizeof(uint16_t));
    float *b32 = aligned_alloc(64, (size_t)K * 64 * sizeof(float));
    float *c = aligned_alloc(64, 12 * 64 * sizeof(float));
    for (int i = 0; i < 12 * K; i++) a[i] = (i & 1) ? 0.0009765625f : -0.0009765625f;
    for (int i = 0; i < K * 64; i++) {
        b16[i] = (i & 1) ? 0x3a80 : 0xba80;
        b32[i] = (i & 1) ? 0.0009765625f : -0.0009765625f;
    }
    memset(c, 0, 12 * 64 * sizeof(float));
#if defined(__AVX512BF16__) && defined(__AVX512F__)
    uint16_t *a16 = aligned_alloc(64, 12 * K * sizeof(uint16_t));
    for (int i = 0; i < 12 * K; i++) a16[i] = (i & 1) ? 0x3a80 : 0xba80;
#endif
    double flops = 0.0;
    const double t0 = now();
    double t = t0;
    while (t - t0 < j->seconds) {
        for (int r = 0; r < 256; r++) {
#if defined(__AVX512BF16__) && defined(__AVX512F__)
            flops += j->kind == 0 ? pass_bf16(a16, b16, c) : pass_f32(a, b32, c);
#else
            flops += j->kind == 0 ? pass_bf16(a, b16, c) : pass_f32(a, b32, c);
#endif
        }
        t = now();
    }
    j->flops = flops / (t - t0);
    j->sink = c[0];
    free(a);
    free(b16);
    free(b32);
    free(c);
    return NULL;
}

static double measure(int kind, int threads, double seconds) {
    pthread_t th[256];
    job jobs[256];
    double total = 0.0;
    for (int i = 0; i < threads; i++) {
        jobs[i].kind = kind;
        jobs[i].seconds = seconds;
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        total += jobs[i].flops;
    }
    return total / 1e9;
}
#endif

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    const double seconds = argc > 2 ? atof(argv[2]) : 0.5;
    if (threads < 1) threads = 1;
    if (threads > 256) threads = 256;
#ifdef KIND
    if (argc > 3 && strcmp(argv[3], "bf16") == 0) {
        printf("bf16 %.2f fp32 nan %s\n", measure(0, threads, seconds), KIND);
        return 0;
    }
    /* best of three alternating measurements of each */
    double bf = 0.0, f32 = 0.0;
    for (int r = 0; r < 3; r++) {
        const double x = measure(0, threads, seconds), y = measure(1, threads, seconds);
        bf = x > bf ? x : bf;
        f32 = y > f32 ? y : f32;
    }
    printf("bf16 %.2f fp32 %.2f %s\n", bf, f32, KIND);
#else
    (void)seconds;
    printf("bf16 nan fp32 nan none\n");
#endif
    return 0;
}
