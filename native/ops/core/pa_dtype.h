/* CANN's dtype rules (deduction_relationship / conversion_relationship in the
 * vendor docs): promotion of two operands and what a result may be cast to. */
#ifndef PA_DTYPE_H
#define PA_DTYPE_H

#include <stdbool.h>

#include "acl/acl_base.h"

bool pa_dt_is_float(aclDataType dt);    /* FLOAT16, BF16, FLOAT, DOUBLE */
bool pa_dt_is_int(aclDataType dt);      /* signed and unsigned integers (not BOOL) */
bool pa_dt_is_unsigned(aclDataType dt); /* UINT8 .. UINT64 */
bool pa_dt_is_16bit_float(aclDataType dt);

/* The TensorTensor table: BOOL yields to anything; FLOAT16 + BF16 -> FLOAT;
 * integers widen (UINT8 + INT8 -> INT16); a float wins over an integer;
 * UINT16 / UINT32 / UINT64 combine only with themselves and BOOL.
 * ACL_DT_UNDEFINED when there is no promoted type. */
aclDataType pa_dt_promote(aclDataType a, aclDataType b);

/* A tensor of dtype t with a scalar of dtype s (the TensorScalar table): the
 * scalar's kind (bool < integer < float) decides only when it is higher than
 * the tensor's: an integer or bool tensor with a float scalar gives FLOAT,
 * a bool tensor with an integer scalar gives INT64; otherwise t. */
aclDataType pa_dt_promote_scalar(aclDataType t, aclDataType s);

/* Whether a result of dtype `from` may be written to an output of dtype `to`
 * (CANN's CanCast, as torch's): a float only to a float, nothing but BOOL to
 * BOOL; integers and BOOL to anything else. */
bool pa_dt_can_cast(aclDataType from, aclDataType to);

#endif
