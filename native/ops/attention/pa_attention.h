/* The attention family (FlashAttentionScore, FlashAttentionScoreGrad,
 * FusedInferAttentionScoreV2): native/ops/attention/, kernels in
 * native/kernels/attention/. */
#ifndef PA_ATTENTION_H
#define PA_ATTENTION_H

#include "ops/core/pa_op.h"

enum { PA_ATTENTION_NONE, PA_ATTENTION_FA_FWD, PA_ATTENTION_FA_BWD, PA_ATTENTION_FIA };

int pa_plan_attention(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int pa_run_attention(const void *plan, void *workspace, uint64_t workspace_size);

#endif
