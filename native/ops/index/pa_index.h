/* The index family (gather, scatter, index copy / fill / put, embedding,
 * repeat-interleave, nearest upsampling): native/ops/index/. */
#ifndef PA_INDEX_H
#define PA_INDEX_H

#include "ops/core/pa_op.h"

/* The kernels (the `kernel` of each op table row; 0 is none). */
enum {
    PA_INDEX_NONE,
    PA_INDEX_GATHER_V2, PA_INDEX_INDEX_SELECT, PA_INDEX_EMBEDDING, PA_INDEX_GATHER,
    PA_INDEX_INDEX_COPY, PA_INDEX_INPLACE_INDEX_COPY, PA_INDEX_INDEX_FILL, PA_INDEX_INPLACE_INDEX_FILL,
    PA_INDEX_SCATTER, PA_INDEX_INPLACE_SCATTER, PA_INDEX_SCATTER_ADD, PA_INDEX_INDEX_PUT,
    PA_INDEX_EMBEDDING_BACKWARD,
    PA_INDEX_REPEAT_INTERLEAVE, PA_INDEX_REPEAT_INTERLEAVE_DIM, PA_INDEX_REPEAT_INTERLEAVE_INT,
    PA_INDEX_REPEAT_INTERLEAVE_INT_DIM,
    PA_INDEX_UPSAMPLE_NEAREST2D,
};

/* Every operator of family "index": the planner checks the op's own rules
 * (the shared ones have passed) and makes the plan; the run function reads it. */
int pa_plan_index(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int pa_run_index(const void *plan, void *workspace, uint64_t workspace_size);

#endif
