/* The conv family (convolution, im2col, pooling, triangular solve):
 * native/ops/conv/, kernels in native/kernels/conv/. */
#ifndef PA_CONV_H
#define PA_CONV_H

#include "ops/core/pa_op.h"

/* The kernels (the `kernel` of each op table row; 0 is none). */
enum {
    PA_CONV_NONE,
    PA_CONV_CONVOLUTION,
    PA_CONV_IM2COL,
    PA_CONV_AVG_POOL2D,
    PA_CONV_MAX_POOL,
    PA_CONV_TRIANGULAR_SOLVE,
};

/* Every operator of family "conv": the planner checks the op's own rules
 * (the shared ones have passed) and makes the plan; the run function runs it. */
int pa_plan_conv(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int pa_run_conv(const void *plan, void *workspace, uint64_t workspace_size);

#endif
