/* Kernel choice for the NSA selected-attention ops. Every tier gives the
 * scalar oracle's bits (nsa.h). The fp32 GEMM runs its AVX2 kernel on the
 * AVX-512 tiers too (it serves fp16 inputs and the `high` precision; on Zen 4
 * a zmm FMA costs two ymm ones); the bf16 dot GEMM uses vdpbf16ps on
 * avx512bf16 and emulates it with FMAs below. */
#include "kernels/nsa/nsa.h"

nsa_kernels nsa_kernels_select(pa_isa isa) {
    nsa_kernels k;
#if defined(PA_HAVE_X86_KERNELS)
    if (isa >= PA_ISA_AVX512) {
        k.isa = isa >= PA_ISA_AVX512BF16 ? PA_ISA_AVX512BF16 : PA_ISA_AVX512;
        k.gemm = nsa_gemm_avx2;
        k.dot = isa >= PA_ISA_AVX512BF16 ? nsa_dot_avx512bf16 : nsa_dot_avx512;
        k.pgrad = nsa_pgrad_avx512;
        k.pgrad2 = nsa_pgrad2_avx512;
        k.rowmax = nsa_rowmax_avx512;
        k.expsum = nsa_expsum_avx512;
        k.normround = nsa_normround_avx512;
        k.normbf16 = nsa_normbf16_avx512;
        return k;
    }
    if (isa >= PA_ISA_AVX2) {
        k.isa = PA_ISA_AVX2;
        k.gemm = nsa_gemm_avx2;
        k.dot = nsa_dot_avx2;
        k.pgrad = nsa_pgrad_avx2;
        k.pgrad2 = nsa_pgrad2_avx2;
        k.rowmax = nsa_rowmax_avx2;
        k.expsum = nsa_expsum_avx2;
        k.normround = nsa_normround_avx2;
        k.normbf16 = nsa_normbf16_avx2;
        return k;
    }
#else
    (void)isa;
#endif
    k.isa = PA_ISA_SCALAR;
    k.gemm = nsa_gemm_scalar;
    k.dot = nsa_dot_scalar;
    k.pgrad = nsa_pgrad_scalar;
    k.pgrad2 = nsa_pgrad2_scalar;
    k.rowmax = nsa_rowmax_scalar;
    k.expsum = nsa_expsum_scalar;
    k.normround = nsa_normround_scalar;
    k.normbf16 = nsa_normbf16_scalar;
    return k;
}
