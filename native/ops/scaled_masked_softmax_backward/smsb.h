/* Private to ops/scaled_masked_softmax_backward. */
#ifndef PA_SMSB_OP_H
#define PA_SMSB_OP_H

#include "kernels/softmax_grad/softmax_grad.h"
#include "meta/pa_executor.h"

#define PA_SMSB_WS_API "aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize"
#define PA_SMSB_API "aclnnScaledMaskedSoftmaxBackward"

/* The plan: plain data, copied by value at every launch. */
typedef struct pa_smsb_plan {
    pa_tview g;    /* input 0: gradOutput */
    pa_tview y;    /* input 1: y */
    pa_tview mask; /* input 2: mask */
    pa_tview out;  /* output 0 */
    float scale;   /* rounded to fp32 like the vendor's tiling */
    int64_t grain; /* rows per pa_parallel_for chunk */
    bool stream_out; /* non-temporal stores for a large out */
    pa_smsb_rows_fn fn;
} pa_smsb_plan;

/* Checks the GetWorkspaceSize arguments in the documented order; 0 or a status
 * after pa_fail(). */
aclnnStatus pa_smsb_validate(const aclTensor *gradOutput, const aclTensor *y, const aclTensor *mask,
                             bool fixTriuMask, const aclTensor *out, const uint64_t *workspaceSize,
                             aclOpExecutor *const *executor);

#endif
