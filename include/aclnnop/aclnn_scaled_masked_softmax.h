/*
 * pyaclnn: aclnnScaledMaskedSoftmax (two-phase aclnn operator).
 * y = softmax(z) over the last dim, z = x * scale where mask == 0 and -10000
 * where mask != 0 (mask [B|1,N|1,S1,S2] broadcasts against x [B,N,S1,S2]).
 * fixedTriuMask must be false.
 */
/* CANN's include guard, spelled as CANN spells it. */
#ifndef OP_API_INC_SCALED_MSAKED_SOFTMAX_H_
#define OP_API_INC_SCALED_MSAKED_SOFTMAX_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1: validate arguments, report workspace size, build an executor. */
ACLNN_API aclnnStatus aclnnScaledMaskedSoftmaxGetWorkspaceSize(const aclTensor *x, const aclTensor *mask,
                                                               double scale, bool fixedTriuMask, aclTensor *y,
                                                               uint64_t *workspaceSize, aclOpExecutor **executor);

/* Phase 2: enqueue the computation on stream. */
ACLNN_API aclnnStatus aclnnScaledMaskedSoftmax(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                               aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_SCALED_MSAKED_SOFTMAX_H_ */
