/*
 * pyaclnn: aclnnInplaceOne (two-phase aclnn operator): every element of selfRef = 1.
 */
/* CANN's include guard. */
#ifndef OP_API_INC_ONES_H_
#define OP_API_INC_ONES_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnInplaceOneGetWorkspaceSize(const aclTensor *selfRef, uint64_t *workspaceSize,
                                                          aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnInplaceOne(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                      aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_ONES_H_ */
