/* Groups not written yet (their rows are still in pyaclnn/optable/later.py). */
#include "ops/nn/nn_impl.h"

static int nn_none(const pa_op *op) {
    return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: %s is not implemented by pyaclnn", op->ws_api,
                   op->launch.name);
}
int nn_plan_loss(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    (void)a, (void)ws, (void)ex;
    return nn_none(op);
}
int nn_run_softmax_ce(const nn_plan *p) { return pa_fail(ACLNN_ERR_INNER, "%s: internal error", p->api); }
int nn_run_nll_loss(const nn_plan *p) { return pa_fail(ACLNN_ERR_INNER, "%s: internal error", p->api); }
int nn_run_nll_loss_grad(const nn_plan *p) { return pa_fail(ACLNN_ERR_INNER, "%s: internal error", p->api); }
