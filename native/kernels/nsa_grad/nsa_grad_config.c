/* Kernel choice for the NSA selected-attention backward: the best tier not above
 * the requested one that this build contains. */
#include "kernels/nsa_grad/nsa_grad.h"

#include <stddef.h>

nsa_grad_kernels nsa_grad_select(pa_isa isa) {
    nsa_grad_kernels k;
#if defined(PA_HAVE_X86_KERNELS)
    if (isa >= PA_ISA_AVX512) {
        k.isa = PA_ISA_AVX512;
        k.gemm = nsa_gemm_avx512;
        k.pgrad = nsa_pgrad_avx512;
        k.rowmax = nsa_rowmax_avx512;
        k.expsum = nsa_expsum_avx512;
        k.gemm_bf16 = pa_cpu_has_avx512bf16() ? nsa_gemm_bf16_avx512 : NULL;
        return k;
    }
    if (isa >= PA_ISA_AVX2) {
        k.isa = PA_ISA_AVX2;
        k.gemm = nsa_gemm_avx2;
        k.pgrad = nsa_pgrad_avx2;
        k.rowmax = nsa_rowmax_avx2;
        k.expsum = nsa_expsum_avx2;
        k.gemm_bf16 = NULL;
        return k;
    }
#else
    (void)isa;
#endif
    k.isa = PA_ISA_SCALAR;
    k.gemm = nsa_gemm_scalar;
    k.pgrad = nsa_pgrad_scalar;
    k.rowmax = nsa_rowmax_scalar;
    k.expsum = nsa_expsum_scalar;
    k.gemm_bf16 = NULL;
    return k;
}
