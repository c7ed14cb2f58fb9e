/* HCCL data types and the element-wise reductions of the collectives. */
#ifndef PA_FOLD_H
#define PA_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hccl/hccl_types.h"

/* Bytes per element; 0 for a value that is not an HcclDataType. */
size_t pa_hccl_dtype_size(HcclDataType dt);
/* "float32", ...; NULL for a value that is not an HcclDataType. */
const char *pa_hccl_dtype_name(HcclDataType dt);
const char *pa_hccl_op_name(HcclReduceOp op);
/* The types a reduction accepts (CANN's list), and those PROD accepts. */
bool pa_hccl_dtype_reducible(HcclDataType dt);
bool pa_hccl_prod_supported(HcclDataType dt);

/* acc[i] = acc[i] op in[i] for n elements of type dt (a reducible type, a valid
 * op). Every step is one correctly rounded operation in the element type:
 * fp16 and bf16 are widened to fp32, combined, and rounded back to nearest
 * even; integers wrap; MAX/MIN follow numpy (maximum: a if a >= b or a is NaN,
 * else b). The result of a fold in rank order is therefore exactly
 * numpy's functools.reduce(op, [x0, x1, ...]) in the same dtype. */
void pa_hccl_fold(HcclDataType dt, HcclReduceOp op, void *acc, const void *in, uint64_t n);

#endif
