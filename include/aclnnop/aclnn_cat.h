/*
 * pyaclnn: aclnnCat (two-phase aclnn operator): out = the tensors concatenated along dim
 * (negative dim counts from the end), each converted to out's dtype.
 */
/* CANN's include guard. */
#ifndef OP_API_INC_CAT_H_
#define OP_API_INC_CAT_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnCatGetWorkspaceSize(const aclTensorList *tensors, int64_t dim, aclTensor *out,
                                               uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnCat(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                               const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_CAT_H_ */
