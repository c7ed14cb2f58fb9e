/* Elementwise kernels of the tensor plumbing ops (copy, cast, fill, add,
 * compare) and the sum reduction: plain C, exact, every dtype by one rule.
 *
 * Values: each dtype is loaded into a compute domain, double for the float
 * types (exact for fp16 / bf16 / fp32 / fp64) or int64 for the integer types
 * and bool, and stored from it:
 *   float -> float    rounded once to nearest even (double -> fp16/bf16 via
 *                     fp32 rounded to odd, so there is no double rounding);
 *   int   -> float    (double)v, then as above;
 *   float -> int      truncated toward zero, NaN -> 0, saturated to the range;
 *   int   -> int      wraps to the width (two's complement), as C and torch;
 *   any   -> bool     v != 0 (NaN is true); bool loads as 0 / 1.
 * An operation (add, compare) runs in double when any operand or the output is
 * a float type, else in int64 (wrapping): a + alpha*b is one rounding in double.
 * Results do not depend on the thread count: no element depends on another. */
#ifndef PA_ELEMENTWISE_H
#define PA_ELEMENTWISE_H

#include <stdbool.h>
#include <stdint.h>

#include "acl/acl_base.h"

#define PA_EW_MAX_DIMS 8

/* The dtypes the kernels handle. */
bool pa_ew_dtype_ok(aclDataType dt);
bool pa_ew_dtype_is_float(aclDataType dt);

typedef struct pa_ew_operand {
    char *ptr; /* element 0 */
    aclDataType dtype;
    int64_t strides[PA_EW_MAX_DIMS]; /* elements; 0 repeats an element (broadcast) */
} pa_ew_operand;

typedef enum pa_ew_op {
    PA_EW_CONVERT, /* out = a */
    PA_EW_FILL,    /* out = value */
    PA_EW_ADD,     /* out = a + alpha * b */
    PA_EW_ADDS,    /* out = a + value (value = alpha * the scalar, formed at plan time) */
    PA_EW_GT,      /* out = a > value (the scalar) */
    PA_EW_GT_T,    /* out = a > b */
} pa_ew_op;

typedef struct pa_ew_args {
    pa_ew_op op;
    int32_t ndim;
    int64_t dims[PA_EW_MAX_DIMS];
    pa_ew_operand out, a, b; /* a for CONVERT/ADD/GT, b for ADD */
    bool int_math;           /* compute in int64, else in double */
    double value_f, alpha_f; /* FILL / GT value and ADD alpha, in the compute domain */
    int64_t value_i, alpha_i;
} pa_ew_args;

/* Runs the operation over every element (multithreaded, fixed chunks). */
void pa_ew_run(const pa_ew_args *args);

/* out[o] = sum of a over the reduced dims, in index order, accumulated in
 * double (float) or int64 (integers), rounded once to out's dtype. `a` is
 * addressed with outer dims (kept) then reduced dims: dims[0..n_outer) index
 * the output (out_strides), dims[n_outer..ndim) are summed. */
typedef struct pa_ew_sum_args {
    int32_t ndim, n_outer;
    int64_t dims[PA_EW_MAX_DIMS];
    pa_ew_operand a, out; /* out.strides: the first n_outer entries */
} pa_ew_sum_args;

void pa_ew_sum(const pa_ew_sum_args *args);

#endif
