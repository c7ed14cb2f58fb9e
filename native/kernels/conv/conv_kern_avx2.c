/* The AVX2 tier of the conv kernels (conv_kern.h): 8 columns per vector,
 * blocks of 6 (or 4) rows x 16 columns; separate multiplies and adds (as the scalar
 * tier), so the bits are the scalar tier's. */
#include <immintrin.h>

#include "kernels/conv/conv_kern.h"

static inline void rows6(int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                         int64_t ldc, int64_t p) {
    __m256 c[12];
    for (int i = 0; i < 12; i++) c[i] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        const float *b = B + k * ldb + p;
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        for (int r = 0; r < 6; r++) {
            const __m256 av = _mm256_set1_ps(A[r * lda + k]);
            c[2 * r] = _mm256_add_ps(c[2 * r], _mm256_mul_ps(av, b0));
            c[2 * r + 1] = _mm256_add_ps(c[2 * r + 1], _mm256_mul_ps(av, b1));
        }
    }
    for (int r = 0; r < 6; r++) {
        _mm256_storeu_ps(C + r * ldc + p, c[2 * r]);
        _mm256_storeu_ps(C + r * ldc + p + 8, c[2 * r + 1]);
    }
}

static inline void rows4(int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                         int64_t ldc, int64_t p) {
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(),
           c11 = _mm256_setzero_ps(), c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(),
           c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
    const float *a0 = A, *a1 = A + lda, *a2 = A + 2 * lda, *a3 = A + 3 * lda;
    for (int64_t k = 0; k < K; k++) {
        const float *b = B + k * ldb + p;
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        __m256 av = _mm256_set1_ps(a0[k]);
        c00 = _mm256_add_ps(c00, _mm256_mul_ps(av, b0));
        c01 = _mm256_add_ps(c01, _mm256_mul_ps(av, b1));
        av = _mm256_set1_ps(a1[k]);
        c10 = _mm256_add_ps(c10, _mm256_mul_ps(av, b0));
        c11 = _mm256_add_ps(c11, _mm256_mul_ps(av, b1));
        av = _mm256_set1_ps(a2[k]);
        c20 = _mm256_add_ps(c20, _mm256_mul_ps(av, b0));
        c21 = _mm256_add_ps(c21, _mm256_mul_ps(av, b1));
        av = _mm256_set1_ps(a3[k]);
        c30 = _mm256_add_ps(c30, _mm256_mul_ps(av, b0));
        c31 = _mm256_add_ps(c31, _mm256_mul_ps(av, b1));
    }
    _mm256_storeu_ps(C + p, c00);
    _mm256_storeu_ps(C + p + 8, c01);
    _mm256_storeu_ps(C + ldc + p, c10);
    _mm256_storeu_ps(C + ldc + p + 8, c11);
    _mm256_storeu_ps(C + 2 * ldc + p, c20);
    _mm256_storeu_ps(C + 2 * ldc + p + 8, c21);
    _mm256_storeu_ps(C + 3 * ldc + p, c30);
    _mm256_storeu_ps(C + 3 * ldc + p + 8, c31);
}

static inline void row1(int64_t K, const float *A, const float *B, int64_t ldb, float *C, int64_t p) {
    __m256 c0 = _mm256_setzero_ps(), c1 = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        const float *b = B + k * ldb + p;
        const __m256 av = _mm256_set1_ps(A[k]);
        c0 = _mm256_add_ps(c0, _mm256_mul_ps(av, _mm256_loadu_ps(b)));
        c1 = _mm256_add_ps(c1, _mm256_mul_ps(av, _mm256_loadu_ps(b + 8)));
    }
    _mm256_storeu_ps(C + p, c0);
    _mm256_storeu_ps(C + p + 8, c1);
}

void cv_gemm_avx2(int64_t M, int64_t K, int64_t P, const float *A, int64_t lda, const float *B, int64_t ldb,
                  float *C, int64_t ldc) {
    for (int64_t p = 0; p < P; p += 16) {
        int64_t m = 0;
        for (; m + 6 <= M; m += 6) rows6(K, A + m * lda, lda, B, ldb, C + m * ldc, ldc, p);
        for (; m + 4 <= M; m += 4) rows4(K, A + m * lda, lda, B, ldb, C + m * ldc, ldc, p);
        for (; m < M; m++) row1(K, A + m * lda, B, ldb, C + m * ldc, p);
    }
}
