/*
 * pyaclnn: aclnnConstantPadNd (two-phase aclnn operator): out = self padded with value,
 * pad = [before, after] pairs from the last dim backward (negative entries crop), as
 * torch.nn.functional.pad in "constant" mode.
 */
/* CANN's include guard. */
#ifndef OP_API_INC_CONSTANT_PAD_ND_H_
#define OP_API_INC_CONSTANT_PAD_ND_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnConstantPadNdGetWorkspaceSize(const aclTensor *self, const aclIntArray *pad,
                                                         const aclScalar *value, aclTensor *out,
                                                         uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnConstantPadNd(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                         aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* OP_API_INC_CONSTANT_PAD_ND_H_ */
