/* The index family (gather, scatter, index copy / fill / put, embedding,
 * repeat-interleave, nearest upsampling): planners and run functions. */
#ifndef PA_INDEX_H
#define PA_INDEX_H

#include "ops/core/pa_op.h"

#endif
