/* The NN family's planner and run function (family "nn" in the op table):
 * op->kernel (PA_NN_*) picks the group whose planner checks the op and makes
 * the plan; pa_run_nn runs any plan. */
#include "ops/nn/nn_impl.h"

int pa_plan_nn(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    switch (op->kernel) {
    case PA_NN_SOFTMAX:
    case PA_NN_LOG_SOFTMAX:
    case PA_NN_SOFTMAX_BACKWARD:
    case PA_NN_LOG_SOFTMAX_BACKWARD: return nn_plan_softmax(op, a, workspaceSize, executor);
    case PA_NN_RMS_NORM:
    case PA_NN_ADD_RMS_NORM:
    case PA_NN_RMS_NORM_GRAD:
    case PA_NN_LAYER_NORM:
    case PA_NN_LAYER_NORM_BACKWARD:
    case PA_NN_GROUP_NORM: return nn_plan_norm(op, a, workspaceSize, executor);
    case PA_NN_SWI_GLU:
    case PA_NN_GE_GLU_V3: return nn_plan_glu(op, a, workspaceSize, executor);
    case PA_NN_ROPE: return nn_plan_rope(op, a, workspaceSize, executor);
    case PA_NN_SOFTMAX_CE:
    case PA_NN_NLL_LOSS:
    case PA_NN_NLL_LOSS_BACKWARD: return nn_plan_loss(op, a, workspaceSize, executor);
    default:
        return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: internal error: %s is not an nn-family operator",
                       op->ws_api, op->launch.name);
    }
}

int pa_run_nn(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const nn_plan *p = plan;
    switch (p->run) {
    case NN_RUN_NOTHING: return ACLNN_SUCCESS;
    case NN_RUN_SOFTMAX: return nn_run_softmax(p);
    case NN_RUN_SOFTMAX_GRAD: return nn_run_softmax_grad(p);
    case NN_RUN_RMS_NORM: return nn_run_rms_norm(p);
    case NN_RUN_RMS_NORM_GRAD: return nn_run_rms_norm_grad(p);
    case NN_RUN_LAYER_NORM: return nn_run_layer_norm(p);
    case NN_RUN_LAYER_NORM_GRAD: return nn_run_layer_norm_grad(p);
    case NN_RUN_GROUP_NORM: return nn_run_group_norm(p);
    case NN_RUN_GLU: return nn_run_glu(p);
    case NN_RUN_ROPE: return nn_run_rope(p);
    case NN_RUN_SOFTMAX_CE: return nn_run_softmax_ce(p);
    case NN_RUN_NLL_LOSS: return nn_run_nll_loss(p);
    case NN_RUN_NLL_LOSS_GRAD: return nn_run_nll_loss_grad(p);
    case NN_RUN_FILL: return nn_run_fill(p);
    default: return pa_fail(ACLNN_ERR_INNER, "%s: internal error: unknown plan %d", p->api, (int)p->run);
    }
}
