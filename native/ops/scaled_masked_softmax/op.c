/* aclnnScaledMaskedSoftmax: validate -> plan -> run rows in parallel.
 *   y = softmax(mask ? -10000 : x * scale) over the last dim, in fp32
 * (kernels/softmax_fwd/softmax_fwd.h has the exact operations). The kernel
 * (dtype x ISA tier) is chosen when the plan is made; rows are independent and
 * cut into fixed chunks, so results are bitwise identical for any thread count. */
#include <stddef.h>
#include <string.h>

#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "common/pa_half.h"
#include "ops/scaled_masked_softmax/smsf.h"
#include "runtime/pa_threadpool.h"

typedef struct {
    pa_smsf_rows_fn fn;
    pa_smsf_args args;
} smsf_ctx;

static void run_rows(void *ctx, int64_t begin, int64_t end) {
    const smsf_ctx *c = ctx;
    c->fn(&c->args, begin, end);
}

static int smsf_run(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const pa_smsf_plan *p = plan;
    smsf_ctx c;
    c.fn = p->fn;
    c.args.x = pa_tview_ptr(&p->x);
    c.args.mask = (const uint8_t *)pa_tview_ptr(&p->mask);
    c.args.y = pa_tview_ptr(&p->y);
    for (int i = 0; i < 4; i++) {
        c.args.dims[i] = p->x.dims[i];
        c.args.xs[i] = p->x.strides[i];
        c.args.ms[i] = p->mask.strides[i];
    }
    /* broadcast mask dims read the same rows again */
    if (p->mask.dims[0] == 1) c.args.ms[0] = 0;
    if (p->mask.dims[1] == 1) c.args.ms[1] = 0;
    c.args.scale = p->scale;
    c.args.stream_out = p->stream_out;
    pa_parallel_for(p->x.dims[0] * p->x.dims[1] * p->x.dims[2], p->grain, run_rows, &c);
    return ACLNN_SUCCESS;
}

static const char *const smsf_in_names[] = {"x", "mask"};
static const char *const smsf_out_names[] = {"y"};
static const pa_op_def smsf_op = {PA_SMSF_API, smsf_run, smsf_in_names, smsf_out_names};

PA_API aclnnStatus aclnnScaledMaskedSoftmaxGetWorkspaceSize(const aclTensor *x, const aclTensor *mask, double scale,
                                                           bool fixedTriuMask, aclTensor *y,
                                                           uint64_t *workspaceSize, aclOpExecutor **executor) {
    aclnnStatus rc = pa_smsf_validate(x, mask, fixedTriuMask, y, workspaceSize, executor);
    if (rc != ACLNN_SUCCESS) return rc;

    pa_smsf_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.x = pa_tview_of(x);
    plan.mask = pa_tview_of(mask);
    plan.y = pa_tview_of(y);
    plan.scale = pa_scale_to_f32(scale);
    /* the fp16 kernel multiplies by (half)scale, as the vendor's does */
    if (x->dtype == ACL_FLOAT16) plan.scale = pa_f16_to_f32(pa_f32_to_f16(plan.scale));
    plan.grain = pa_smsf_grain(x->dtype, x->dims[3]);
    plan.stream_out = pa_smsf_stream_out(pa_tensor_numel(y) * (int64_t)pa_dtype_size(y->dtype));
    plan.fn = pa_smsf_select(x->dtype, pa_cpu_isa());
    if (plan.fn == NULL) {
        return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, PA_SMSF_WS_API ": no kernel for dtype %s",
                       pa_dtype_name(x->dtype));
    }

    const size_t in_views[2] = {offsetof(pa_smsf_plan, x), offsetof(pa_smsf_plan, mask)};
    const size_t out_views[1] = {offsetof(pa_smsf_plan, y)};
    aclOpExecutor *ex = pa_executor_create(&smsf_op, &plan, sizeof plan, 0, in_views, 2, out_views, 1);
    if (ex == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR; /* message already set */
    *workspaceSize = 0;
    *executor = ex;
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclnnScaledMaskedSoftmax(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                           aclrtStream stream) {
    return pa_executor_launch(&smsf_op, workspace, workspaceSize, executor, stream);
}
