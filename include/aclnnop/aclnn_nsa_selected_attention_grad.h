/*
 * pyaclnn: aclnnNsaSelectedAttentionGrad (native sparse attention, backward
 * of the selected-block attention). Two-phase aclnn operator.
 * The include guard keeps CANN's "NAS" spelling on purpose.
 */
#ifndef OP_API_INC_NAS_SELECTED_ATTENTION_GRAD_H_
#define OP_API_INC_NAS_SELECTED_ATTENTION_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1 (22 parameters). inputLayout is e.g. "TND". dqOut/dkOut/dvOut
 * are written by the operator although declared const. */
aclnnStatus aclnnNsaSelectedAttentionGradGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *attentionOut,
    const aclTensor *attentionOutGrad, const aclTensor *softmaxMax, const aclTensor *softmaxSum,
    const aclTensor *topkIndices, const aclIntArray *actualSeqQLenOptional, const aclIntArray *actualSeqKvLenOptional,
    const aclTensor *attenMaskOptional, double scaleValue, int64_t selectedBlockSize, int64_t selectedBlockCount,
    int64_t headNum, char *inputLayout, int64_t sparseMode, const aclTensor *dqOut, const aclTensor *dkOut,
    const aclTensor *dvOut, uint64_t *workspaceSize, aclOpExecutor **executor);

/* Phase 2: enqueue the computation on stream. */
aclnnStatus aclnnNsaSelectedAttentionGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                          aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_NAS_SELECTED_ATTENTION_GRAD_H_ */
