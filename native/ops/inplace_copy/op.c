/* aclnnInplaceCopy: selfRef = src, src broadcast to selfRef's shape and converted
 * to selfRef's dtype (elementwise.h has the conversion rules); either may be
 * strided. validate -> plan -> run (the shared elementwise executor). */
#include "aclnnop/aclnn_copy.h"
#include "ops/ew_common/ew_common.h"

#define WS_API "aclnnInplaceCopyGetWorkspaceSize"

static const char *const in_names[] = {"src"};
static const char *const out_names[] = {"selfRef"};
static const pa_op_def copy_op = {"aclnnInplaceCopy", pa_ew_plan_run, in_names, out_names};

static int validate(const aclTensor *selfRef, const aclTensor *src, const uint64_t *workspaceSize,
                    aclOpExecutor *const *executor, int64_t *src_strides) {
    int rc = PA_EW_REQUIRE(WS_API, selfRef, src, workspaceSize, executor);
    if (rc == 0) rc = pa_ew_check_output(WS_API, "selfRef", selfRef);
    if (rc == 0) rc = pa_ew_check_tensor(WS_API, "src", src);
    if (rc == 0) rc = pa_ew_broadcast(WS_API, "src", src, selfRef->ndim, selfRef->dims, "selfRef", src_strides);
    return rc;
}

PA_API aclnnStatus aclnnInplaceCopyGetWorkspaceSize(aclTensor *selfRef, const aclTensor *src,
                                                    uint64_t *workspaceSize, aclOpExecutor **executor) {
    int64_t src_strides[PA_MAX_DIMS];
    int rc = validate(selfRef, src, workspaceSize, executor, src_strides);
    if (rc != ACLNN_SUCCESS) return rc;
    pa_ew_plan plan = {0};
    plan.args.op = PA_EW_CONVERT;
    pa_ew_plan_views(&plan, selfRef, src, src_strides, NULL, NULL);
    return pa_ew_make_executor(&copy_op, &plan, workspaceSize, executor);
}

PA_API aclnnStatus aclnnInplaceCopy(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    const aclrtStream stream) {
    return pa_executor_launch(&copy_op, workspace, workspaceSize, executor, stream);
}
