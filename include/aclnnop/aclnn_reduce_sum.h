/*
 * pyaclnn: aclnnReduceSum (two-phase aclnn operator): out = sum of self over dims
 * (an empty dims sums every element), in dtype.
 */
/* CANN's include guard. */
#ifndef OP_API_INC_REDUCE_SUM_H_
#define OP_API_INC_REDUCE_SUM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnReduceSumGetWorkspaceSize(const aclTensor *self, const aclIntArray *dims, bool keepDims,
                                                         aclDataType dtype, aclTensor *out, uint64_t *workspaceSize,
                                                         aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnReduceSum(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                     aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_REDUCE_SUM_H_ */
