/* The attention row kernels on the scalar tier (attn_rows.inc). */

#include <math.h>
#include <stdint.h>

#include "kernels/attention/attn.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__STRICT_ANSI__)
#pragma GCC optimize("fp-contract=off")
#endif

typedef float VF;
#define W 1
#define SFX(name) name##_scalar
#define ATTN_TIER_NAME "scalar"
#define PA_ATTN_ROWS_NAME pa_attn_rows_scalar
#define VLD(p) (*(p))
#define VST(p, v) (*(p) = (v))
#define VSET(x) ((float)(x))
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMUL(a, b) ((a) * (b))

#include "kernels/attention/attn_rows.inc"
