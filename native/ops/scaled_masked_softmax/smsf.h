/* Private to ops/scaled_masked_softmax. */
#ifndef PA_SMSF_OP_H
#define PA_SMSF_OP_H

#include "kernels/softmax_fwd/softmax_fwd.h"
#include "meta/pa_executor.h"

#define PA_SMSF_WS_API "aclnnScaledMaskedSoftmaxGetWorkspaceSize"
#define PA_SMSF_API "aclnnScaledMaskedSoftmax"
#define PA_SMSF_MAX_S2 4096

/* The plan: plain data, copied by value at every launch. */
typedef struct pa_smsf_plan {
    pa_tview x;    /* input 0 */
    pa_tview mask; /* input 1 */
    pa_tview y;    /* output 0 */
    float scale;   /* fp32 like the vendor's tiling; fp16 inputs: rounded on to fp16 */
    int64_t grain; /* rows per pa_parallel_for chunk */
    bool stream_out;
    pa_smsf_rows_fn fn;
} pa_smsf_plan;

/* Checks the GetWorkspaceSize arguments in the vendor's order; 0 or a status after pa_fail(). */
aclnnStatus pa_smsf_validate(const aclTensor *x, const aclTensor *mask, bool fixedTriuMask, const aclTensor *y,
                             const uint64_t *workspaceSize, aclOpExecutor *const *executor);

#endif
