/* The shape family (permute, slice, expand, flip, repeat, reflection padding,
 * roll, tril / triu, arange): native/ops/shape/. */
#ifndef PA_SHAPE_H
#define PA_SHAPE_H

#include "ops/core/pa_op.h"

enum {
    PA_SHAPE_PERMUTE, PA_SHAPE_SLICE, PA_SHAPE_EXPAND, PA_SHAPE_FLIP, PA_SHAPE_REPEAT, PA_SHAPE_REFLECTION_PAD1D,
    PA_SHAPE_ROLL, PA_SHAPE_TRIL, PA_SHAPE_TRIU, PA_SHAPE_ARANGE,
    PA_SHAPE_COPY, /* plan kind: the pieces are plain bit copies */
};

int pa_plan_shape(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int pa_run_shape(const void *plan, void *workspace, uint64_t workspace_size);

#endif
