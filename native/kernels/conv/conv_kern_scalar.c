/* The portable tier of the conv kernels (conv_kern.h): the oracle. */
#include "kernels/conv/conv_kern.h"

#include "cpu/pa_cpu.h"

void cv_gemm_scalar(int64_t M, int64_t K, int64_t P, const float *A, int64_t lda, const float *B, int64_t ldb,
                    float *C, int64_t ldc) {
    for (int64_t m = 0; m < M; m++) {
        float *c = C + m * ldc;
        const float *a = A + m * lda;
        for (int64_t p = 0; p < P; p++) c[p] = 0.0f;
        for (int64_t k = 0; k < K; k++) {
            const float av = a[k];
            const float *b = B + k * ldb;
            for (int64_t p = 0; p < P; p++) {
                const float prod = av * b[p];
                c[p] = c[p] + prod;
            }
        }
    }
}

cv_gemm_fn cv_gemm_select(void) {
#if defined(PA_HAVE_X86_KERNELS)
    const pa_isa isa = pa_cpu_isa();
    if (isa >= PA_ISA_AVX512) return cv_gemm_avx512;
    if (isa >= PA_ISA_AVX2) return cv_gemm_avx2;
#endif
    return cv_gemm_scalar;
}

int64_t cv_gemm_tile_p(int64_t K) {
    /* about 256 KiB of B per tile (L2), between 64 and 256 columns, a multiple of 32 (the
     * AVX-512 kernel's block) */
    int64_t p = K > 0 ? 65536 / K : 256;
    p = p / 32 * 32;
    if (p < 64) p = 64;
    if (p > 256) p = 256;
    return p;
}
