/* The NN family (softmax and its gradient, the norms and theirs, the gated
 * activations, rotary position embedding, the losses): native/ops/nn/, with
 * the row kernels in native/kernels/nn/. */
#ifndef PA_NN_H
#define PA_NN_H

#include "ops/core/pa_op.h"

/* The kernels (the `kernel` of each op table row; 0 is none). */
enum {
    PA_NN_NONE,
    PA_NN_SOFTMAX, PA_NN_LOG_SOFTMAX, PA_NN_SOFTMAX_BACKWARD, PA_NN_LOG_SOFTMAX_BACKWARD,
    PA_NN_RMS_NORM, PA_NN_ADD_RMS_NORM, PA_NN_RMS_NORM_GRAD,
    PA_NN_LAYER_NORM, PA_NN_LAYER_NORM_BACKWARD, PA_NN_GROUP_NORM,
    PA_NN_SWI_GLU, PA_NN_GE_GLU_V3, PA_NN_ROPE,
    PA_NN_SOFTMAX_CE, PA_NN_NLL_LOSS, PA_NN_NLL_LOSS_BACKWARD,
};

/* Every operator of family "nn": the planner checks the op's own rules (the
 * shared ones have passed) and makes the plan; the run function reads it. */
int pa_plan_nn(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int pa_run_nn(const void *plan, void *workspace, uint64_t workspace_size);

#endif
