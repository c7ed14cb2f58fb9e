/* aclnnCast: out = self converted to dtype (elementwise.h has the rules); out
 * has self's shape and dtype `dtype`. validate -> plan -> run. */
#include "aclnnop/aclnn_cast.h"
#include "ops/ew_common/ew_common.h"

#define WS_API "aclnnCastGetWorkspaceSize"

static const char *const in_names[] = {"self"};
static const char *const out_names[] = {"out"};
static const pa_op_def cast_op = {"aclnnCast", pa_ew_plan_run, in_names, out_names};

static int validate(const aclTensor *self, aclDataType dtype, const aclTensor *out, const uint64_t *workspaceSize,
                    aclOpExecutor *const *executor, int64_t *self_strides) {
    int rc = PA_EW_REQUIRE(WS_API, self, out, workspaceSize, executor);
    if (rc == 0) rc = pa_ew_check_tensor(WS_API, "self", self);
    if (rc == 0) rc = pa_ew_check_output(WS_API, "out", out);
    if (rc != 0) return rc;
    if (!pa_ew_dtype_ok(dtype)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": dtype %s (%d) is not supported", pa_dtype_name(dtype),
                       (int)dtype);
    }
    if (out->dtype != dtype) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": out dtype must be dtype %s, got %s", pa_dtype_name(dtype),
                       pa_dtype_name(out->dtype));
    }
    bool same = self->ndim == out->ndim;
    for (int32_t i = 0; same && i < out->ndim; i++) same = self->dims[i] == out->dims[i];
    if (!same) {
        char s1[160], s2[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": out shape must equal self shape %s, got %s",
                       pa_shape_str(self->dims, self->ndim, s1, sizeof s1),
                       pa_shape_str(out->dims, out->ndim, s2, sizeof s2));
    }
    return pa_ew_broadcast(WS_API, "self", self, out->ndim, out->dims, "out", self_strides);
}

PA_API aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor *self, const aclDataType dtype, aclTensor *out,
                                             uint64_t *workspaceSize, aclOpExecutor **executor) {
    int64_t strides[PA_MAX_DIMS];
    int rc = validate(self, dtype, out, workspaceSize, executor, strides);
    if (rc != ACLNN_SUCCESS) return rc;
    pa_ew_plan plan = {0};
    plan.args.op = PA_EW_CONVERT;
    pa_ew_plan_views(&plan, out, self, strides, NULL, NULL);
    return pa_ew_make_executor(&cast_op, &plan, workspaceSize, executor);
}

PA_API aclnnStatus aclnnCast(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return pa_executor_launch(&cast_op, workspace, workspaceSize, executor, stream);
}
