/* aclnnScaledMaskedSoftmaxBackward: validate -> plan -> run rows in parallel.
 *   out = mask ? 0 : scale * (g*y - sum(g*y, last dim) * y), in fp32.
 * The kernel (dtype x ISA tier) is chosen when the plan is made; rows are
 * independent, so results are bitwise identical for any thread count. */
#include <stddef.h>
#include <string.h>

#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"
#include "ops/scaled_masked_softmax_backward/smsb.h"
#include "runtime/pa_threadpool.h"

typedef struct {
    pa_smsb_rows_fn fn;
    pa_smsb_args args;
} smsb_ctx;

static void run_rows(void *ctx, int64_t begin, int64_t end) {
    const smsb_ctx *c = ctx;
    c->fn(&c->args, begin, end);
}

static int smsb_run(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const pa_smsb_plan *p = plan;
    smsb_ctx c;
    c.fn = p->fn;
    c.args.g = pa_tview_ptr(&p->g);
    c.args.y = pa_tview_ptr(&p->y);
    c.args.mask = (const uint8_t *)pa_tview_ptr(&p->mask);
    c.args.out = pa_tview_ptr(&p->out);
    for (int i = 0; i < 4; i++) {
        c.args.dims[i] = p->g.dims[i];
        c.args.gs[i] = p->g.strides[i];
        c.args.ys[i] = p->y.strides[i];
        c.args.ms[i] = p->mask.strides[i];
    }
    /* broadcast mask dims read the same row again */
    if (p->mask.dims[0] == 1) c.args.ms[0] = 0;
    if (p->mask.dims[1] == 1) c.args.ms[1] = 0;
    c.args.scale = p->scale;
    c.args.stream_out = p->stream_out;
    const int64_t rows = p->g.dims[0] * p->g.dims[1] * p->g.dims[2];
    pa_parallel_for(rows, p->grain, run_rows, &c);
    return ACLNN_SUCCESS;
}

static const char *const smsb_in_names[] = {"gradOutput", "y", "mask"};
static const char *const smsb_out_names[] = {"out"};
static const pa_op_def smsb_op = {PA_SMSB_API, smsb_run, smsb_in_names, smsb_out_names};

PA_API aclnnStatus aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *y,
                                                                   const aclTensor *mask, double scale,
                                                                   bool fixTriuMask, aclTensor *out,
                                                                   uint64_t *workspaceSize,
                                                                   aclOpExecutor **executor) {
    aclnnStatus rc = pa_smsb_validate(gradOutput, y, mask, fixTriuMask, out, workspaceSize, executor);
    if (rc != ACLNN_SUCCESS) return rc;

    pa_smsb_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.g = pa_tview_of(gradOutput);
    plan.y = pa_tview_of(y);
    plan.mask = pa_tview_of(mask);
    plan.out = pa_tview_of(out);
    plan.scale = pa_scale_to_f32(scale);
    plan.grain = pa_smsb_grain(gradOutput->dtype, gradOutput->dims[3]);
    plan.stream_out = pa_smsb_stream_out(pa_tensor_numel(out) * (int64_t)pa_dtype_size(out->dtype));
    plan.fn = pa_smsb_select(gradOutput->dtype, pa_cpu_isa());
    if (plan.fn == NULL) {
        return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, PA_SMSB_WS_API ": no kernel for dtype %s",
                       pa_dtype_name(gradOutput->dtype));
    }

    const size_t in_views[3] = {offsetof(pa_smsb_plan, g), offsetof(pa_smsb_plan, y),
                                offsetof(pa_smsb_plan, mask)};
    const size_t out_views[1] = {offsetof(pa_smsb_plan, out)};
    aclOpExecutor *ex = pa_executor_create(&smsb_op, &plan, sizeof plan, 0, in_views, 3, out_views, 1);
    if (ex == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR; /* message already set */
    *workspaceSize = 0;
    *executor = ex;
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclnnScaledMaskedSoftmaxBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                   const aclrtStream stream) {
    return pa_executor_launch(&smsb_op, workspace, workspaceSize, executor, stream);
}
