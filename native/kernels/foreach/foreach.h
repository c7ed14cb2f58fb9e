/* Kernels of the foreach family that are not one map-engine element function:
 * the AdamW step, the AMP non-finite check and the loss-scale update. Each
 * output element is computed by one fixed sequence of fp32 operations, so the
 * results do not depend on the thread count. */
#ifndef PA_FOREACH_KERNELS_H
#define PA_FOREACH_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "acl/acl_base.h"

#define PA_FE_MAX_DIMS 8

/* One strided operand (element strides). */
typedef struct pa_fe_operand {
    char *ptr; /* element 0 */
    aclDataType dtype;
    int64_t strides[PA_FE_MAX_DIMS];
} pa_fe_operand;

/* AdamW, CANN's ApplyAdamWV2 order (fp32, no fused multiply-add):
 *   g = maximize ? -grad : grad
 *   var' = var * wd_factor
 *   m' = (g - m) * one_b1 + m
 *   v' = v * b2 + (g * g) * one_b2
 *   s = sqrt(amsgrad ? (max' = max(maxv, v')) : v')
 *   var'' = var' - (m' / (s * bc2_rsqrt + eps)) * step_size
 * with the constants in fp32 (pa_adamw_consts). */
typedef struct pa_adamw_args {
    int32_t ndim;
    int64_t dims[PA_FE_MAX_DIMS];
    pa_fe_operand var, m, v, maxv, grad; /* maxv.ptr NULL without amsgrad */
    float wd_factor, one_b1, b2, one_b2, bc2_rsqrt, eps, step_size;
    bool maximize;
} pa_adamw_args;

/* The constants of a step: t = step + 1, bc1 = 1 - b1^t, bc2 = 1 - b2^t,
 * step_size = lr / bc1, bc2_rsqrt = 1 / sqrt(bc2), wd_factor = 1 - lr * wd. */
void pa_adamw_consts(pa_adamw_args *a, float step, float lr, float beta1, float beta2, float weight_decay,
                     float eps);
void pa_adamw_run(const pa_adamw_args *a);

/* Whether any element of an N-D view is inf or NaN. */
bool pa_fe_any_nonfinite(const pa_fe_operand *x, int32_t ndim, const int64_t *dims);

#endif
