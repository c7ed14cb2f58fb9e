/* aclOpExecutor: the plan an op's GetWorkspaceSize makes, launched later on a stream.
 * An op: validate -> plan (a POD blob + workspace size) -> pa_executor_create.
 * The launch entry point calls pa_executor_launch, which checks the executor and
 * workspace, copies the plan blob into a stream task and queues op->run. */
#ifndef PA_EXECUTOR_H
#define PA_EXECUTOR_H

#include "meta/pa_tensor.h"

#define PA_MAX_IO 64

/* Runs a plan. Called on the stream worker with a private copy of the plan.
 * Returns ACLNN_SUCCESS or a status after pa_fail(). */
typedef int (*pa_op_run_fn)(const void *plan, void *workspace, uint64_t workspace_size);

typedef struct pa_op_def {
    const char *name;  /* launch API name, e.g. "aclnnScaledMaskedSoftmaxBackward" */
    pa_op_run_fn run;
    const char *const *in_names;  /* parameter names of the input views, API order */
    const char *const *out_names; /* ... and of the output views */
} pa_op_def;

/* Creates an executor owning a copy of `plan` (plan_size bytes, plain data).
 * in_views / out_views are byte offsets of the pa_tview inputs / outputs inside the
 * plan, in API order (for aclSetInputTensorAddr / aclSetOutputTensorAddr); use
 * SIZE_MAX for an absent optional tensor. Returns NULL (message set) on OOM. */
aclOpExecutor *pa_executor_create(const pa_op_def *op, const void *plan, size_t plan_size,
                                  uint64_t workspace_size,
                                  const size_t *in_views, int n_in,
                                  const size_t *out_views, int n_out);

/* The body of every aclnnXxx(workspace, workspaceSize, executor, stream).
 * When the task starts, before op->run, every view that addresses an element
 * must have a non-NULL data address (else 361001) and its whole storage must
 * lie inside one live device-accessible range of the memory registry, as must
 * [workspace, workspace + workspaceSize) when the op needs a workspace (else
 * ACL_ERROR_RT_AICORE_EXCEPTION, the NPU's code for an out-of-range address);
 * the task then fails without touching any output.
 * PYACLNN_CHECK_ADDRESSES=0 turns the range check (not the NULL check) off. */
aclnnStatus pa_executor_launch(const pa_op_def *op, void *workspace, uint64_t workspace_size,
                               aclOpExecutor *executor, aclrtStream stream);

#endif
