/*
 * pyaclnn: the CANN 8.1-era path of aclnnScaledMaskedSoftmaxBackward
 * (aclnnop/level2/). It declares nothing itself: it includes the current
 * header, so a program may include either path, or both.
 */
#ifndef OP_API_INC_LEVEL2_ACLNN_SCALED_MASKED_SOFTMAX_BACKWARD_H_
#define OP_API_INC_LEVEL2_ACLNN_SCALED_MASKED_SOFTMAX_BACKWARD_H_

#include "../aclnn_scaled_masked_softmax_backward.h"

#endif /* OP_API_INC_LEVEL2_ACLNN_SCALED_MASKED_SOFTMAX_BACKWARD_H_ */
