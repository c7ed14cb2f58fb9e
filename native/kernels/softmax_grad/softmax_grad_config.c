/* Kernel choice for scaled masked softmax backward: by dtype, then best tier
 * not above the requested one. All tiers give the same bits. */
#include "kernels/softmax_grad/softmax_grad.h"

pa_smsb_rows_fn pa_smsb_select(aclDataType dtype, pa_isa isa) {
#if defined(PA_HAVE_X86_KERNELS)
    if (isa >= PA_ISA_AVX512) {
        switch (dtype) {
        case ACL_FLOAT: return pa_smsb_rows_f32_avx512;
        case ACL_FLOAT16: return pa_smsb_rows_f16_avx512;
        case ACL_BF16:
            return pa_cpu_has_avx512bf16() ? pa_smsb_rows_bf16_avx512bf16 : pa_smsb_rows_bf16_avx512;
        default: return NULL;
        }
    }
    if (isa >= PA_ISA_AVX2) {
        switch (dtype) {
        case ACL_FLOAT: return pa_smsb_rows_f32_avx2;
        case ACL_FLOAT16: return pa_smsb_rows_f16_avx2;
        case ACL_BF16: return pa_smsb_rows_bf16_avx2;
        default: return NULL;
        }
    }
#else
    (void)isa;
#endif
    switch (dtype) {
    case ACL_FLOAT: return pa_smsb_rows_f32_scalar;
    case ACL_FLOAT16: return pa_smsb_rows_f16_scalar;
    case ACL_BF16: return pa_smsb_rows_bf16_scalar;
    default: return NULL;
    }
}

int64_t pa_smsb_grain(aclDataType dtype, int64_t s2) {
    /* bytes one row moves: g + y + out in the dtype, plus one mask byte */
    const int64_t esize = dtype == ACL_FLOAT ? 4 : 2;
    const int64_t row_bytes = s2 * (3 * esize + 1);
    /* ~1 MB: each chunk is a few long sequential streams (every new chunk makes the
     * hardware prefetchers start over; 128 KB chunks were ~5% slower) */
    const int64_t target = 1024 * 1024;
    if (row_bytes <= 0) return 1;
    int64_t g = (target + row_bytes - 1) / row_bytes;
    /* rows up to 256 columns may go in groups of up to 16 rows (PA_SMSB_GROUP in
     * softmax_grad_impl.h): chunks of whole groups */
    if (s2 <= 256) g = (g + 15) & ~(int64_t)15;
    return g < 1 ? 1 : g;
}

bool pa_smsb_stream_out(int64_t out_bytes) {
#if defined(PA_HAVE_X86_KERNELS)
    /* with g and y the op touches >= 3x this: more than a last-level cache holds */
    return out_bytes >= (int64_t)8 << 20;
#else
    (void)out_bytes;
    return false;
#endif
}
