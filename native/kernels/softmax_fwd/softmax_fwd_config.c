/* Kernel choice for scaled masked softmax forward: by dtype, then the best tier
 * not above the requested one. All tiers give the same bits. */
#include "kernels/softmax_fwd/softmax_fwd.h"

const uint32_t pa_smsf_exp2_tab[16] = {
    0x3f800000u, 0x3f7daac3u, 0x3f7b95c2u, 0x3f79c3d3u, 0x3f7837f0u, 0x3f76f532u, 0x3f75fed7u, 0x3f75583fu,
    0x3f7504f3u, 0x3f7508a4u, 0x3f75672au, 0x3f76248cu, 0x3f7744fdu, 0x3f78ccdfu, 0x3f7ac0c7u, 0x3f7d257du,
};

pa_smsf_rows_fn pa_smsf_select(aclDataType dtype, pa_isa isa) {
#if defined(PA_HAVE_X86_KERNELS)
    if (isa >= PA_ISA_AVX512) {
        switch (dtype) {
        case ACL_FLOAT: return pa_smsf_rows_f32_avx512;
        case ACL_FLOAT16: return pa_smsf_rows_f16_avx512;
        case ACL_BF16:
            return pa_cpu_has_avx512bf16() ? pa_smsf_rows_bf16_avx512bf16 : pa_smsf_rows_bf16_avx512;
        default: return NULL;
        }
    }
    if (isa >= PA_ISA_AVX2) {
        switch (dtype) {
        case ACL_FLOAT: return pa_smsf_rows_f32_avx2;
        case ACL_FLOAT16: return pa_smsf_rows_f16_avx2;
        case ACL_BF16: return pa_smsf_rows_bf16_avx2;
        default: return NULL;
        }
    }
#else
    (void)isa;
#endif
    switch (dtype) {
    case ACL_FLOAT: return pa_smsf_rows_f32_scalar;
    case ACL_FLOAT16: return pa_smsf_rows_f16_scalar;
    case ACL_BF16: return pa_smsf_rows_bf16_scalar;
    default: return NULL;
    }
}

int64_t pa_smsf_grain(aclDataType dtype, int64_t s2) {
    /* bytes one row moves: x and y in the dtype, plus one mask byte */
    const int64_t esize = dtype == ACL_FLOAT ? 4 : 2;
    const int64_t row_bytes = s2 * (2 * esize + 1);
    const int64_t target = 1024 * 1024;
    if (row_bytes <= 0) return 1;
    const int64_t g = (target + row_bytes - 1) / row_bytes;
    return g < 1 ? 1 : g;
}

bool pa_smsf_stream_out(int64_t out_bytes) {
#if defined(PA_HAVE_X86_KERNELS)
    return out_bytes >= (int64_t)8 << 20;
#else
    (void)out_bytes;
    return false;
#endif
}
