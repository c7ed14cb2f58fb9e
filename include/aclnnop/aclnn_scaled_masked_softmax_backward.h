/*
 * pyaclnn: aclnnScaledMaskedSoftmaxBackward (two-phase aclnn operator).
 * out = (gradOutput*y - sum(gradOutput*y, -1) * y), scaled by `scale`
 * where mask == 0 and zeroed where mask == 1. fixTriuMask must be false.
 */
#ifndef OP_API_INC_ACLNN_SCALED_MASKED_SOFTMAX_BACKWARD_H_
#define OP_API_INC_ACLNN_SCALED_MASKED_SOFTMAX_BACKWARD_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1: validate arguments, report workspace size, build an executor. */
ACLNN_API aclnnStatus aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(const aclTensor *gradOutput,
                                                                       const aclTensor *y, const aclTensor *mask,
                                                                       double scale, bool fixTriuMask,
                                                                       aclTensor *out, uint64_t *workspaceSize,
                                                                       aclOpExecutor **executor);

/* Phase 2: enqueue the computation on stream. */
ACLNN_API aclnnStatus aclnnScaledMaskedSoftmaxBackward(void *workspace, uint64_t workspaceSize,
                                                       aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_ACLNN_SCALED_MASKED_SOFTMAX_BACKWARD_H_ */
