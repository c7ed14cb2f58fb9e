/*
 * pyaclnn: aclnnNsaSelectedAttention (native sparse attention, forward of the
 * selected-block attention). Two-phase aclnn operator.
 * Note the attribute order: headNum, inputLayout, sparseMode, then
 * selectedBlockSize and selectedBlockCount (the grad has size and count first).
 */
#ifndef OP_API_INC_LEVEL2_ACLNN_NSA_SELECTED_ATTENTION_H_
#define OP_API_INC_LEVEL2_ACLNN_NSA_SELECTED_ATTENTION_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1 (18 parameters). inputLayout must be "TND". softmaxMaxOut,
 * softmaxSumOut and attentionOut are written by the operator although
 * declared const. */
aclnnStatus aclnnNsaSelectedAttentionGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *topkIndices,
    const aclTensor *attenMaskOptional, const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional, double scaleValue, int64_t headNum, char *inputLayout,
    int64_t sparseMode, int64_t selectedBlockSize, int64_t selectedBlockCount, const aclTensor *softmaxMaxOut,
    const aclTensor *softmaxSumOut, const aclTensor *attentionOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2: enqueue the computation on stream. */
aclnnStatus aclnnNsaSelectedAttention(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                      const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_LEVEL2_ACLNN_NSA_SELECTED_ATTENTION_H_ */
