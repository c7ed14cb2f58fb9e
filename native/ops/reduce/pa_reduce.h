/* The reduce family (sums, means, extrema, norms over dims) and the scan
 * family (cumsum, sort, argsort, top-k along one dim): native/ops/reduce/. */
#ifndef PA_REDUCE_H
#define PA_REDUCE_H

#include "ops/core/pa_op.h"

enum {
    PA_REDUCE_SUM, PA_REDUCE_MEAN, PA_REDUCE_MAX, PA_REDUCE_MIN, PA_REDUCE_MAX_DIM, PA_REDUCE_MIN_DIM,
    PA_REDUCE_AMAX, PA_REDUCE_AMIN, PA_REDUCE_ARGMAX, PA_REDUCE_ARGMIN, PA_REDUCE_ANY, PA_REDUCE_ALL,
    PA_REDUCE_NORM, PA_REDUCE_VECTOR_NORM, PA_REDUCE_PROD, PA_REDUCE_PROD_DIM, PA_REDUCE_LOGSUMEXP,
    PA_REDUCE_VAR, PA_REDUCE_VAR_CORRECTION, PA_REDUCE_STD, PA_REDUCE_STD_MEAN, PA_REDUCE_VAR_MEAN, PA_REDUCE_DOT,
    PA_REDUCE_MSE_LOSS, PA_REDUCE_L1_LOSS, PA_REDUCE_GLU, PA_REDUCE_BCE_WITH_LOGITS,
};
enum { PA_SCAN_CUMSUM, PA_SCAN_ARGSORT, PA_SCAN_SORT, PA_SCAN_TOPK, PA_SCAN_CUMPROD, PA_SCAN_CUMPROD_INPLACE };

int pa_plan_reduce(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int pa_run_reduce(const void *plan, void *workspace, uint64_t workspace_size);
int pa_plan_scan(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int pa_run_scan(const void *plan, void *workspace, uint64_t workspace_size);

#endif
