/* aclnnGtScalar / aclnnGtTensor: out = self > other (1 / 0 in out's dtype,
 * usually BOOL), other a scalar or a tensor broadcast with self; the in-place
 * forms write into self. Compared in int64 when both sides are integers (or
 * bool), else in double (NaN > x is false). validate -> plan -> run. */
#include "aclnnop/aclnn_gt_scalar.h"
#include "aclnnop/aclnn_gt_tensor.h"
#include "ops/ew_common/ew_common.h"

static const char *const self_in[] = {"self"};
static const char *const two_in[] = {"self", "other"};
static const char *const out_name[] = {"out"};
static const char *const self_out[] = {"selfRef"};
static const pa_op_def gts_op = {"aclnnGtScalar", pa_ew_plan_run, self_in, out_name};
static const pa_op_def igts_op = {"aclnnInplaceGtScalar", pa_ew_plan_run, self_in, self_out};
static const pa_op_def gtt_op = {"aclnnGtTensor", pa_ew_plan_run, two_in, out_name};
static const pa_op_def igtt_op = {"aclnnInplaceGtTensor", pa_ew_plan_run, two_in, self_out};

static int gt_scalar(const pa_op_def *op, const char *api, const aclTensor *self, const aclScalar *other,
                     aclTensor *out, const char *out_nm, uint64_t *workspaceSize, aclOpExecutor **executor) {
    int rc = PA_EW_REQUIRE(api, self, other, out, workspaceSize, executor);
    if (rc == 0) rc = pa_ew_check_tensor(api, "self", self);
    if (rc == 0) rc = pa_ew_check_scalar(api, "other", other);
    if (rc == 0 && !pa_ew_dtype_ok(other->dtype)) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: other dtype %s is not supported", api, pa_dtype_name(other->dtype));
    }
    if (rc == 0) rc = pa_ew_check_output(api, out_nm, out);
    if (rc == 0) rc = pa_ew_check_shape(api, out, out_nm, self->ndim, self->dims);
    int64_t sa[PA_MAX_DIMS];
    if (rc == 0) rc = pa_ew_broadcast(api, "self", self, out->ndim, out->dims, out_nm, sa);
    if (rc != ACLNN_SUCCESS) return rc;
    pa_ew_plan plan = {0};
    plan.args.op = PA_EW_GT;
    pa_ew_plan_views(&plan, out, self, sa, NULL, NULL);
    plan.args.int_math = !(pa_ew_dtype_is_float(self->dtype) || pa_ew_scalar_is_float(other));
    plan.args.value_f = pa_ew_scalar_f(other);
    plan.args.value_i = pa_ew_scalar_i(other);
    return pa_ew_make_executor(op, &plan, workspaceSize, executor);
}

static int gt_tensor(const pa_op_def *op, const char *api, const aclTensor *self, const aclTensor *other,
                     aclTensor *out, const char *out_nm, uint64_t *workspaceSize, aclOpExecutor **executor) {
    int rc = PA_EW_REQUIRE(api, self, other, out, workspaceSize, executor);
    if (rc == 0) rc = pa_ew_check_tensor(api, "self", self);
    if (rc == 0) rc = pa_ew_check_tensor(api, "other", other);
    if (rc == 0) rc = pa_ew_check_output(api, out_nm, out);
    int32_t nd = 0;
    int64_t dims[PA_MAX_DIMS], sa[PA_MAX_DIMS], sb[PA_MAX_DIMS];
    if (rc == 0) rc = pa_ew_broadcast_shape(api, self, "self", other, "other", &nd, dims);
    if (rc == 0) rc = pa_ew_check_shape(api, out, out_nm, nd, dims);
    if (rc == 0) rc = pa_ew_broadcast(api, "self", self, nd, dims, out_nm, sa);
    if (rc == 0) rc = pa_ew_broadcast(api, "other", other, nd, dims, out_nm, sb);
    if (rc != ACLNN_SUCCESS) return rc;
    pa_ew_plan plan = {0};
    plan.args.op = PA_EW_GT_T;
    pa_ew_plan_views(&plan, out, self, sa, other, sb);
    plan.args.int_math = !(pa_ew_dtype_is_float(self->dtype) || pa_ew_dtype_is_float(other->dtype));
    return pa_ew_make_executor(op, &plan, workspaceSize, executor);
}

PA_API aclnnStatus aclnnGtScalarGetWorkspaceSize(const aclTensor *self, const aclScalar *other, aclTensor *out,
                                                 uint64_t *workspaceSize, aclOpExecutor **executor) {
    return gt_scalar(&gts_op, "aclnnGtScalarGetWorkspaceSize", self, other, out, "out", workspaceSize, executor);
}

PA_API aclnnStatus aclnnGtScalar(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                 aclrtStream stream) {
    return pa_executor_launch(&gts_op, workspace, workspaceSize, executor, stream);
}

PA_API aclnnStatus aclnnInplaceGtScalarGetWorkspaceSize(aclTensor *selfRef, const aclScalar *other,
                                                        uint64_t *workspaceSize, aclOpExecutor **executor) {
    return gt_scalar(&igts_op, "aclnnInplaceGtScalarGetWorkspaceSize", selfRef, other, selfRef, "selfRef",
                     workspaceSize, executor);
}

PA_API aclnnStatus aclnnInplaceGtScalar(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                        aclrtStream stream) {
    return pa_executor_launch(&igts_op, workspace, workspaceSize, executor, stream);
}

PA_API aclnnStatus aclnnGtTensorGetWorkspaceSize(const aclTensor *self, const aclTensor *other, aclTensor *out,
                                                 uint64_t *workspaceSize, aclOpExecutor **executor) {
    return gt_tensor(&gtt_op, "aclnnGtTensorGetWorkspaceSize", self, other, out, "out", workspaceSize, executor);
}

PA_API aclnnStatus aclnnGtTensor(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                 aclrtStream stream) {
    return pa_executor_launch(&gtt_op, workspace, workspaceSize, executor, stream);
}

PA_API aclnnStatus aclnnInplaceGtTensorGetWorkspaceSize(const aclTensor *selfRef, const aclTensor *other,
                                                        uint64_t *workspaceSize, aclOpExecutor **executor) {
    return gt_tensor(&igtt_op, "aclnnInplaceGtTensorGetWorkspaceSize", selfRef, other, (aclTensor *)selfRef,
                     "selfRef", workspaceSize, executor);
}

PA_API aclnnStatus aclnnInplaceGtTensor(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                        aclrtStream stream) {
    return pa_executor_launch(&igtt_op, workspace, workspaceSize, executor, stream);
}
