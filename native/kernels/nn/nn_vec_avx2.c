/* The NN row kernels on 8 lanes (AVX2 + FMA + F16C). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/map/map_isa.h"
#include "kernels/nn/nn_vec.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__STRICT_ANSI__)
#pragma GCC optimize("fp-contract=off")
#endif

typedef __m256 VF;
typedef __m256i VI;
#define W 8
#define SFX(name) name##_avx2
#define NN_TIER_NAME "avx2"
#define MAP_OPS pa_map_ops_avx2

#define VLD(p) _mm256_loadu_ps(p)
#define VST(p, v) _mm256_storeu_ps((p), (v))
#define VSET(x) _mm256_set1_ps((float)(x))
#define VZERO _mm256_setzero_ps()
#define VADD(a, b) _mm256_add_ps((a), (b))
#define VSUB(a, b) _mm256_sub_ps((a), (b))
#define VMUL(a, b) _mm256_mul_ps((a), (b))
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VGT(a, b) _mm256_cmp_ps((a), (b), _CMP_GT_OQ)
#define VLT(a, b) _mm256_cmp_ps((a), (b), _CMP_LT_OQ)
#define VISNAN(a) _mm256_cmp_ps((a), (a), _CMP_UNORD_Q)
#define VSEL(m, a, b) _mm256_blendv_ps((b), (a), (m))
#define VI_F2I(a) _mm256_cvttps_epi32(a)
#define VI_SET(x) _mm256_set1_epi32((int)(x))
#define VI_ADD(a, b) _mm256_add_epi32((a), (b))
#define VI_SLL(a, n) _mm256_slli_epi32((a), (n))
#define VFROMBITS(i) _mm256_castsi256_ps(i)

#include "kernels/nn/nn_vec.inc"
