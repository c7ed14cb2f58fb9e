/* The attention row kernels on the avx2 tier (attn_rows.inc). */
#include <math.h>
#include <stdint.h>

#include "kernels/attention/attn.h"

#if defined(PA_HAVE_X86_KERNELS)
#include <immintrin.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__STRICT_ANSI__)
#pragma GCC optimize("fp-contract=off")
#endif

typedef __m256 VF;
#define W 8
#define SFX(name) name##_avx2
#define ATTN_TIER_NAME "avx2"
#define PA_ATTN_ROWS_NAME pa_attn_rows_avx2
#define VLD(p) _mm256_loadu_ps(p)
#define VST(p, v) _mm256_storeu_ps((p), (v))
#define VSET(x) _mm256_set1_ps((float)(x))
#define VADD(a, b) _mm256_add_ps((a), (b))
#define VSUB(a, b) _mm256_sub_ps((a), (b))
#define VMUL(a, b) _mm256_mul_ps((a), (b))

#include "kernels/attention/attn_rows.inc"

#endif
