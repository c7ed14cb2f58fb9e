/* The shape family (permute, slice, repeat, expand, flip, roll, tril / triu,
 * padding, concatenation, arange). */
#ifndef PA_SHAPE_H
#define PA_SHAPE_H

#include "ops/core/pa_op.h"

#endif
