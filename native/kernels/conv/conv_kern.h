/* The conv family's compute kernels (native/kernels/conv/), per ISA tier.
 *
 * cv_gemm: C[m][p] = sum over k = 0 .. K-1, in that order, of A[m][k] * B[k][p]
 * for m < M, p < P: every product rounded to fp32, then added to an fp32
 * accumulator that starts at 0 (no fused multiply-add), so every tier gives
 * the scalar tier's bits. P must be a multiple of 16 (callers pad B with
 * zero columns); lda / ldb / ldc are element strides of the rows.
 * This is the convolution's inner product: a GEMM with the same contract
 * (a fixed k order per output element) can replace it. */
#ifndef PA_CONV_KERN_H
#define PA_CONV_KERN_H

#include <stdint.h>

typedef void (*cv_gemm_fn)(int64_t M, int64_t K, int64_t P, const float *A, int64_t lda, const float *B,
                           int64_t ldb, float *C, int64_t ldc);

void cv_gemm_scalar(int64_t M, int64_t K, int64_t P, const float *A, int64_t lda, const float *B, int64_t ldb,
                    float *C, int64_t ldc);
#if defined(PA_HAVE_X86_KERNELS)
void cv_gemm_avx2(int64_t M, int64_t K, int64_t P, const float *A, int64_t lda, const float *B, int64_t ldb,
                  float *C, int64_t ldc);
void cv_gemm_avx512(int64_t M, int64_t K, int64_t P, const float *A, int64_t lda, const float *B, int64_t ldb,
                    float *C, int64_t ldc);
#endif

/* The kernel of the active ISA tier (pa_cpu_isa()). */
cv_gemm_fn cv_gemm_select(void);

/* P columns per tile for a reduction of K (a multiple of 32; depends only on K). */
int64_t cv_gemm_tile_p(int64_t K);

#endif
