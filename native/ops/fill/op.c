/* aclnnInplaceFillScalar (selfRef = value), aclnnInplaceZero (selfRef = 0),
 * aclnnInplaceOne (selfRef = 1), aclnnInplaceFillTensor (selfRef = the one element of value, read when the op
 * runs). The value is converted to selfRef's dtype by the rules of
 * elementwise.h. validate -> plan -> run. */
#include "aclnnop/aclnn_fill_scalar.h"
#include "aclnnop/aclnn_fill_tensor.h"
#include "aclnnop/aclnn_ones.h"
#include "aclnnop/aclnn_zero.h"
#include "ops/ew_common/ew_common.h"

static const char *const no_names[] = {NULL};
static const char *const value_names[] = {"value"};
static const char *const out_names[] = {"selfRef"};
static const pa_op_def fill_scalar_op = {"aclnnInplaceFillScalar", pa_ew_plan_run, no_names, out_names};
static const pa_op_def zero_op = {"aclnnInplaceZero", pa_ew_plan_run, no_names, out_names};
static const pa_op_def one_op = {"aclnnInplaceOne", pa_ew_plan_run, no_names, out_names};
static const pa_op_def fill_tensor_op = {"aclnnInplaceFillTensor", pa_ew_plan_run, value_names, out_names};

/* The value goes straight to selfRef's dtype: from double (as_float) or int64. */
static int plan_fill(const pa_op_def *op, aclTensor *selfRef, bool as_float, double vf, int64_t vi,
                     uint64_t *workspaceSize, aclOpExecutor **executor) {
    pa_ew_plan plan = {0};
    plan.args.op = PA_EW_FILL;
    pa_ew_plan_views(&plan, selfRef, NULL, NULL, NULL, NULL);
    plan.args.int_math = !as_float;
    plan.args.value_f = vf;
    plan.args.value_i = vi;
    return pa_ew_make_executor(op, &plan, workspaceSize, executor);
}

#define FS_API "aclnnInplaceFillScalarGetWorkspaceSize"

PA_API aclnnStatus aclnnInplaceFillScalarGetWorkspaceSize(aclTensor *selfRef, const aclScalar *value,
                                                          uint64_t *workspaceSize, aclOpExecutor **executor) {
    int rc = PA_EW_REQUIRE(FS_API, selfRef, value, workspaceSize, executor);
    if (rc == 0) rc = pa_ew_check_output(FS_API, "selfRef", selfRef);
    if (rc == 0) rc = pa_ew_check_scalar(FS_API, "value", value);
    if (rc == 0 && !pa_ew_dtype_ok(value->dtype)) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, FS_API ": value dtype %s is not supported", pa_dtype_name(value->dtype));
    }
    if (rc != ACLNN_SUCCESS) return rc;
    return plan_fill(&fill_scalar_op, selfRef, pa_ew_scalar_is_float(value), pa_ew_scalar_f(value),
                     pa_ew_scalar_i(value), workspaceSize, executor);
}

PA_API aclnnStatus aclnnInplaceFillScalar(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                          aclrtStream stream) {
    return pa_executor_launch(&fill_scalar_op, workspace, workspaceSize, executor, stream);
}

#define Z_API "aclnnInplaceZeroGetWorkspaceSize"

PA_API aclnnStatus aclnnInplaceZeroGetWorkspaceSize(aclTensor *selfRef, uint64_t *workspaceSize,
                                                    aclOpExecutor **executor) {
    int rc = PA_EW_REQUIRE(Z_API, selfRef, workspaceSize, executor);
    if (rc == 0) rc = pa_ew_check_output(Z_API, "selfRef", selfRef);
    if (rc != ACLNN_SUCCESS) return rc;
    return plan_fill(&zero_op, selfRef, false, 0.0, 0, workspaceSize, executor);
}

PA_API aclnnStatus aclnnInplaceZero(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    aclrtStream stream) {
    return pa_executor_launch(&zero_op, workspace, workspaceSize, executor, stream);
}

#define O_API "aclnnInplaceOneGetWorkspaceSize"

PA_API aclnnStatus aclnnInplaceOneGetWorkspaceSize(const aclTensor *selfRef, uint64_t *workspaceSize,
                                                   aclOpExecutor **executor) {
    int rc = PA_EW_REQUIRE(O_API, selfRef, workspaceSize, executor);
    if (rc == 0) rc = pa_ew_check_output(O_API, "selfRef", selfRef);
    if (rc != ACLNN_SUCCESS) return rc;
    return plan_fill(&one_op, (aclTensor *)selfRef, false, 1.0, 1, workspaceSize, executor);
}

PA_API aclnnStatus aclnnInplaceOne(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                   aclrtStream stream) {
    return pa_executor_launch(&one_op, workspace, workspaceSize, executor, stream);
}

#define FT_API "aclnnInplaceFillTensorGetWorkspaceSize"

PA_API aclnnStatus aclnnInplaceFillTensorGetWorkspaceSize(aclTensor *selfRef, const aclTensor *value,
                                                          uint64_t *workspaceSize, aclOpExecutor **executor) {
    int rc = PA_EW_REQUIRE(FT_API, selfRef, value, workspaceSize, executor);
    if (rc == 0) rc = pa_ew_check_output(FT_API, "selfRef", selfRef);
    if (rc == 0) rc = pa_ew_check_tensor(FT_API, "value", value);
    if (rc != ACLNN_SUCCESS) return rc;
    if (pa_tensor_numel(value) != 1) {
        char s[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, FT_API ": value must hold exactly one element, got shape %s",
                       pa_shape_str(value->dims, value->ndim, s, sizeof s));
    }
    const int64_t zero[PA_MAX_DIMS] = {0};
    pa_ew_plan plan = {0};
    plan.args.op = PA_EW_CONVERT; /* every element from value's one element */
    pa_ew_plan_views(&plan, selfRef, value, zero, NULL, NULL);
    return pa_ew_make_executor(&fill_tensor_op, &plan, workspaceSize, executor);
}

PA_API aclnnStatus aclnnInplaceFillTensor(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                          aclrtStream stream) {
    return pa_executor_launch(&fill_tensor_op, workspace, workspaceSize, executor, stream);
}
