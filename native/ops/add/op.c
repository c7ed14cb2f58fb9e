/* aclnnAdd / aclnnInplaceAdd: out = self + alpha * other (other broadcast);
 * aclnnAdds / aclnnInplaceAdds: out = self + alpha * other for a scalar other.
 * Computed in double when any of self, other, alpha or out is a float type
 * (one rounding to out's dtype: a correctly rounded add for fp16 / bf16 / fp32
 * with alpha 1), else in int64 (wrapping). validate -> plan -> run. */
#include "aclnnop/aclnn_add.h"
#include "ops/ew_common/ew_common.h"

static const char *const add_in[] = {"self", "other"};
static const char *const adds_in[] = {"self"};
static const char *const out_name[] = {"out"};
static const char *const self_out[] = {"selfRef"};
static const pa_op_def add_op = {"aclnnAdd", pa_ew_plan_run, add_in, out_name};
static const pa_op_def adds_op = {"aclnnAdds", pa_ew_plan_run, adds_in, out_name};
static const pa_op_def iadd_op = {"aclnnInplaceAdd", pa_ew_plan_run, add_in, self_out};
static const pa_op_def iadds_op = {"aclnnInplaceAdds", pa_ew_plan_run, adds_in, self_out};

static int check_alpha(const char *api, const aclScalar *alpha) {
    int rc = pa_ew_check_scalar(api, "alpha", alpha);
    if (rc == 0 && !pa_ew_dtype_ok(alpha->dtype)) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: alpha dtype %s is not supported", api, pa_dtype_name(alpha->dtype));
    }
    return rc;
}

/* self (+) other tensor into out (out may be self: the in-place form). */
static int add_tensor(const pa_op_def *op, const char *api, const aclTensor *self, const aclTensor *other,
                      const aclScalar *alpha, aclTensor *out, const char *out_nm, uint64_t *workspaceSize,
                      aclOpExecutor **executor) {
    int rc = PA_EW_REQUIRE(api, self, other, alpha, out, workspaceSize, executor);
    if (rc == 0) rc = pa_ew_check_tensor(api, "self", self);
    if (rc == 0) rc = pa_ew_check_tensor(api, "other", other);
    if (rc == 0) rc = check_alpha(api, alpha);
    if (rc == 0) rc = pa_ew_check_output(api, out_nm, out);
    int32_t nd = 0;
    int64_t dims[PA_MAX_DIMS], sa[PA_MAX_DIMS], sb[PA_MAX_DIMS];
    if (rc == 0) rc = pa_ew_broadcast_shape(api, self, "self", other, "other", &nd, dims);
    if (rc == 0) rc = pa_ew_check_shape(api, out, out_nm, nd, dims);
    if (rc == 0) rc = pa_ew_broadcast(api, "self", self, nd, dims, out_nm, sa);
    if (rc == 0) rc = pa_ew_broadcast(api, "other", other, nd, dims, out_nm, sb);
    if (rc != ACLNN_SUCCESS) return rc;
    pa_ew_plan plan = {0};
    plan.args.op = PA_EW_ADD;
    pa_ew_plan_views(&plan, out, self, sa, other, sb);
    plan.args.int_math = !(pa_ew_dtype_is_float(self->dtype) || pa_ew_dtype_is_float(other->dtype) ||
                           pa_ew_dtype_is_float(out->dtype) || pa_ew_scalar_is_float(alpha));
    plan.args.alpha_f = pa_ew_scalar_f(alpha);
    plan.args.alpha_i = pa_ew_scalar_i(alpha);
    return pa_ew_make_executor(op, &plan, workspaceSize, executor);
}

static int add_scalar(const pa_op_def *op, const char *api, const aclTensor *self, const aclScalar *other,
                      const aclScalar *alpha, aclTensor *out, const char *out_nm, uint64_t *workspaceSize,
                      aclOpExecutor **executor) {
    int rc = PA_EW_REQUIRE(api, self, other, alpha, out, workspaceSize, executor);
    if (rc == 0) rc = pa_ew_check_tensor(api, "self", self);
    if (rc == 0) rc = pa_ew_check_scalar(api, "other", other);
    if (rc == 0 && !pa_ew_dtype_ok(other->dtype)) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: other dtype %s is not supported", api, pa_dtype_name(other->dtype));
    }
    if (rc == 0) rc = check_alpha(api, alpha);
    if (rc == 0) rc = pa_ew_check_output(api, out_nm, out);
    if (rc == 0) rc = pa_ew_check_shape(api, out, out_nm, self->ndim, self->dims);
    int64_t sa[PA_MAX_DIMS];
    if (rc == 0) rc = pa_ew_broadcast(api, "self", self, out->ndim, out->dims, out_nm, sa);
    if (rc != ACLNN_SUCCESS) return rc;
    pa_ew_plan plan = {0};
    plan.args.op = PA_EW_ADDS;
    pa_ew_plan_views(&plan, out, self, sa, NULL, NULL);
    plan.args.int_math = !(pa_ew_dtype_is_float(self->dtype) || pa_ew_dtype_is_float(out->dtype) ||
                           pa_ew_scalar_is_float(other) || pa_ew_scalar_is_float(alpha));
    plan.args.value_f = pa_ew_scalar_f(alpha) * pa_ew_scalar_f(other);
    plan.args.value_i = (int64_t)((uint64_t)pa_ew_scalar_i(alpha) * (uint64_t)pa_ew_scalar_i(other));
    return pa_ew_make_executor(op, &plan, workspaceSize, executor);
}

PA_API aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor *self, const aclTensor *other, const aclScalar *alpha,
                                            aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    return add_tensor(&add_op, "aclnnAddGetWorkspaceSize", self, other, alpha, out, "out", workspaceSize, executor);
}

PA_API aclnnStatus aclnnAdd(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return pa_executor_launch(&add_op, workspace, workspaceSize, executor, stream);
}

PA_API aclnnStatus aclnnAddsGetWorkspaceSize(const aclTensor *self, const aclScalar *other, const aclScalar *alpha,
                                             aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    return add_scalar(&adds_op, "aclnnAddsGetWorkspaceSize", self, other, alpha, out, "out", workspaceSize,
                      executor);
}

PA_API aclnnStatus aclnnAdds(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return pa_executor_launch(&adds_op, workspace, workspaceSize, executor, stream);
}

PA_API aclnnStatus aclnnInplaceAddGetWorkspaceSize(const aclTensor *selfRef, const aclTensor *other,
                                                   const aclScalar *alpha, uint64_t *workspaceSize,
                                                   aclOpExecutor **executor) {
    return add_tensor(&iadd_op, "aclnnInplaceAddGetWorkspaceSize", selfRef, other, alpha, (aclTensor *)selfRef,
                      "selfRef", workspaceSize, executor);
}

PA_API aclnnStatus aclnnInplaceAdd(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                   aclrtStream stream) {
    return pa_executor_launch(&iadd_op, workspace, workspaceSize, executor, stream);
}

PA_API aclnnStatus aclnnInplaceAddsGetWorkspaceSize(const aclTensor *selfRef, const aclScalar *other,
                                                    const aclScalar *alpha, uint64_t *workspaceSize,
                                                    aclOpExecutor **executor) {
    return add_scalar(&iadds_op, "aclnnInplaceAddsGetWorkspaceSize", selfRef, other, alpha, (aclTensor *)selfRef,
                      "selfRef", workspaceSize, executor);
}

PA_API aclnnStatus aclnnInplaceAdds(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    aclrtStream stream) {
    return pa_executor_launch(&iadds_op, workspace, workspaceSize, executor, stream);
}
