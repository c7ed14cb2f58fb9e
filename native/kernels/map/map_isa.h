/* The map engine's per-tier pieces (map_f32_<tier>.c) and plain-C domains. */
#ifndef PA_MAP_ISA_H
#define PA_MAP_ISA_H

#include "kernels/map/map.h"

typedef struct pa_map_isa_ops {
    const pa_map_f32_fn *k32; /* [PA_K_COUNT]; NULL where the kernel has no fp32 form */
    void (*h2f)(float *o, const uint16_t *h, int64_t n); /* fp16 -> fp32 (exact) */
    void (*f2h)(uint16_t *h, const float *f, int64_t n); /* fp32 -> fp16 (nearest even) */
    void (*b2f)(float *o, const uint16_t *h, int64_t n); /* bf16 -> fp32 (exact) */
    void (*f2b)(uint16_t *h, const float *f, int64_t n); /* fp32 -> bf16 (nearest even, NaN quiet) */
    const pa_map_f16_fn *k16; /* fused fp16 kernels ([PA_K_COUNT], NULL where none) */
    const pa_map_f16_fn *kbf; /* fused bf16 kernels */
} pa_map_isa_ops;

extern const pa_map_isa_ops pa_map_ops_scalar;
#if defined(PA_HAVE_X86_KERNELS)
extern const pa_map_isa_ops pa_map_ops_avx2;
extern const pa_map_isa_ops pa_map_ops_avx512;
#endif
extern const pa_map_f64_fn pa_map_f64_tab[PA_K_COUNT];
extern const pa_map_i64_fn pa_map_i64_tab[PA_K_COUNT];

/* fp32 values of arguments where the vector kernels call one scalar routine
 * (the same on every tier): |x| beyond the vector range reduction of sin/cos. */
float pa_map_sinf_big(float x);
float pa_map_cosf_big(float x);
/* The "lane" kernels' element routines (map_lane.c), shared by every tier. */
float pa_map_floordivf(float a, float b);
float pa_map_remainderf(float a, float b);
float pa_map_powf(float a, float b);
float pa_map_tanf(float x);
float pa_map_asinf(float x);
float pa_map_acosf(float x);
float pa_map_atanf(float x);
float pa_map_sinhf(float x);
float pa_map_coshf(float x);
float pa_map_asinhf(float x);
float pa_map_acoshf(float x);
float pa_map_atanhf(float x);
float pa_map_erfinvf(float x);
float pa_map_atan2f(float a, float b);

#endif
