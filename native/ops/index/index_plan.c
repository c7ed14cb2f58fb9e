/* The index family's planner and run function (family "index" in the op
 * table): op->kernel (the row's `kernel`, PA_INDEX_*) picks the group whose
 * planner checks the op and makes the plan; pa_run_index runs any plan. */
#include "ops/index/index_impl.h"
#include "ops/index/pa_index.h"

int pa_plan_index(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const int k = op->kernel;
    switch (k) {
    case IDX_GATHER_V2:
    case IDX_INDEX_SELECT:
    case IDX_EMBEDDING:
    case IDX_GATHER: return idx_plan_gather_group(op, k, a, workspaceSize, executor);
    case IDX_INDEX_COPY:
    case IDX_INPLACE_INDEX_COPY:
    case IDX_INDEX_FILL:
    case IDX_INPLACE_INDEX_FILL:
    case IDX_SCATTER:
    case IDX_INPLACE_SCATTER:
    case IDX_SCATTER_ADD: return idx_plan_scatter_group(op, k, a, workspaceSize, executor);
    case IDX_INDEX_PUT:
    case IDX_EMBEDDING_BACKWARD: return idx_plan_put_group(op, k, a, workspaceSize, executor);
    case IDX_REPEAT_INTERLEAVE:
    case IDX_REPEAT_INTERLEAVE_DIM:
    case IDX_REPEAT_INTERLEAVE_INT:
    case IDX_REPEAT_INTERLEAVE_INT_DIM:
    case IDX_UPSAMPLE_NEAREST2D: return idx_plan_repeat_group(op, k, a, workspaceSize, executor);
    default:
        return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: internal error: %s is not an index-family operator",
                       op->ws_api, op->launch.name);
    }
}

int pa_run_index(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const idx_plan *p = plan;
    switch (p->run) {
    case IDX_RUN_NOTHING: return ACLNN_SUCCESS;
    case IDX_RUN_COPY: idx_copy_view(&p->v[IDX_V_OUT], &p->v[IDX_V_SELF]); return ACLNN_SUCCESS;
    case IDX_RUN_GATHER_AXIS: return idx_run_gather_axis(p);
    case IDX_RUN_GATHER_ELEM: return idx_run_gather_elem(p);
    case IDX_RUN_INDEX_COPY: return idx_run_index_copy(p);
    case IDX_RUN_INDEX_FILL: return idx_run_index_fill(p);
    case IDX_RUN_SCATTER: return idx_run_scatter(p);
    case IDX_RUN_INDEX_PUT: return idx_run_index_put(p);
    case IDX_RUN_EMBEDDING_BACKWARD:
    case IDX_RUN_ZERO: return idx_run_embedding_backward(p);
    case IDX_RUN_REPEAT: return idx_run_repeat(p);
    case IDX_RUN_UPSAMPLE: return idx_run_upsample(p);
    default: return pa_fail(ACLNN_ERR_INNER, "%s: internal error: unknown plan %d", p->api, (int)p->run);
    }
}
