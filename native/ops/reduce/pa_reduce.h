/* The reduce family (sums, means, extrema, norms, scans, sorting). */
#ifndef PA_REDUCE_H
#define PA_REDUCE_H

#include "ops/core/pa_op.h"

#endif
