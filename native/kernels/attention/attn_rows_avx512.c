/* The attention row kernels on the avx512 tier (attn_rows.inc). */
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

typedef __m512 VF;
#define W 16
#define SFX(name) name##_avx512
#define ATTN_TIER_NAME "avx512"
#define PA_ATTN_ROWS_NAME pa_attn_rows_avx512
#define VLD(p) _mm512_loadu_ps(p)
#define VST(p, v) _mm512_storeu_ps((p), (v))
#define VSET(x) _mm512_set1_ps((float)(x))
#define VADD(a, b) _mm512_add_ps((a), (b))
#define VSUB(a, b) _mm512_sub_ps((a), (b))
#define VMUL(a, b) _mm512_mul_ps((a), (b))

#include "kernels/attention/attn_rows.inc"

#endif
