/* The matmul family (matrix products on the library GEMM, native/kernels/gemm/):
 * native/ops/matmul/. */
#ifndef PA_MATMUL_H
#define PA_MATMUL_H

#include "ops/core/pa_op.h"

/* The kernels (the `kernel` of each op table row; 0 is none). */
enum {
    PA_MATMUL_NONE,
    PA_MATMUL_MM, PA_MATMUL_BATCH_MATMUL, PA_MATMUL_MATMUL, PA_MATMUL_MV,
    PA_MATMUL_ADDMM, PA_MATMUL_INPLACE_ADDMM, PA_MATMUL_BADDBMM, PA_MATMUL_INPLACE_BADDBMM,
    PA_MATMUL_GER, PA_MATMUL_WQBMM, PA_MATMUL_GROUPED, PA_MATMUL_TRANS_WEIGHT, PA_MATMUL_WEIGHT_SIZE,
};

/* Every operator of family "matmul": the planner checks the op's own rules
 * (the shared ones have passed) and makes the plan; the run function reads it. */
int pa_plan_matmul(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int pa_run_matmul(const void *plan, void *workspace, uint64_t workspace_size);

#endif
