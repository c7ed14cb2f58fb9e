/* The NN row kernels one lane at a time: the oracle of every tier. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/pa_half.h"
#include "kernels/map/map_isa.h"
#include "kernels/nn/nn_vec.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__STRICT_ANSI__)
#pragma GCC optimize("fp-contract=off")
#endif

typedef float VF;
typedef int32_t VI;
#define W 1
#define SFX(name) name##_scalar
#define NN_TIER_NAME "scalar"
#define MAP_OPS pa_map_ops_scalar

static inline float nn_from_bits(int32_t i) { float f; memcpy(&f, &i, 4); return f; }
static inline int32_t nn_to_bits(float f) { int32_t i; memcpy(&i, &f, 4); return i; }

#define VLD(p) (*(p))
#define VST(p, v) (*(p) = (v))
#define VSET(x) ((float)(x))
#define VZERO 0.0f
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMUL(a, b) ((a) * (b))
#define VFMA(a, b, c) fmaf((a), (b), (c))
#define VGT(a, b) ((a) > (b))
#define VLT(a, b) ((a) < (b))
#define VISNAN(a) ((a) != (a))
#define VSEL(m, a, b) ((m) ? (a) : (b))
#define VI_F2I(a) ((int32_t)(a))
#define VI_SET(x) ((int32_t)(x))
#define VI_ADD(a, b) ((int32_t)((uint32_t)(a) + (uint32_t)(b)))
#define VI_SLL(a, n) ((int32_t)((uint32_t)(a) << (n)))
#define VFROMBITS(i) nn_from_bits(i)
#define VLDH(p) pa_f16_to_f32(*(p))
#define VSTH(p, v) (*(p) = pa_f32_to_f16(v))
#define VLDB(p) pa_bf16_to_f32(*(p))
#define VSTB(p, v) (*(p) = pa_f32_to_bf16(v))

#define VSTNT(p, v) VST(p, v)
#define VSTHNT(p, v) VSTH(p, v)
#define VSTBNT(p, v) VSTB(p, v)
#define NN_FENCE() ((void)0)

#define VBITS(v) nn_to_bits(v)
#define VTABT const uint32_t *
#define VTABLOAD(t) (t)
#define VTAB16(tab, i) ((int32_t)(tab)[(uint32_t)(i) & 15u])

#define NN_PREFETCH(p) ((void)(p))

#include "kernels/nn/nn_vec.inc"

const pa_nn_vec *pa_nn_vec_for(pa_isa isa) {
#if defined(PA_HAVE_X86_KERNELS)
    if (isa >= PA_ISA_AVX512BF16 && pa_cpu_has_avx512bf16()) return &pa_nn_vec_avx512bf16;
    if (isa >= PA_ISA_AVX512) return &pa_nn_vec_avx512;
    if (isa >= PA_ISA_AVX2) return &pa_nn_vec_avx2;
#else
    (void)isa;
#endif
    return &pa_nn_vec_scalar;
}

const pa_nn_vec *pa_nn_vec_active(void) { return pa_nn_vec_for(pa_cpu_isa()); }
