/* Kernel choice for the NSA selected-attention ops.
 *
 * The AVX-512 tier runs the AVX2 kernels: the scalar oracle defines the bits
 * and every tier must give them, and an AVX-512 (or vdpbf16ps) path that the
 * tests cannot run on an AVX2 host could not be shown to. On AVX-512 hosts this
 * costs the wider vectors (fp32 FMA throughput per instruction) and bf16 dot
 * products; see native/ops/nsa_selected_attention_grad/README.md. */
#include "kernels/nsa/nsa.h"

nsa_kernels nsa_kernels_select(pa_isa isa) {
    nsa_kernels k;
#if defined(PA_HAVE_X86_KERNELS)
    if (isa >= PA_ISA_AVX2) {
        k.isa = PA_ISA_AVX2;
        k.gemm = nsa_gemm_avx2;
        k.pgrad = nsa_pgrad_avx2;
        k.rowmax = nsa_rowmax_avx2;
        k.expsum = nsa_expsum_avx2;
        k.normround = nsa_normround_avx2;
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
    k.normround = nsa_normround_scalar;
    return k;
}
