/* What the tensor plumbing ops (copy, cast, fill, add, gt, reduce sum) share:
 * argument checks, broadcasting, and one executor that runs a pa_ew_args plan. */
#ifndef PA_EW_COMMON_H
#define PA_EW_COMMON_H

#include "kernels/elementwise/elementwise.h"
#include "meta/pa_executor.h"

/* A plan: the kernel arguments without addresses, and the views that give them. */
typedef struct pa_ew_plan {
    pa_ew_args args;
    pa_tview out, a, b; /* a / b: dtype ACL_DT_UNDEFINED when absent */
} pa_ew_plan;

/* The NULL checks every op makes first (161001 for the first NULL argument, named):
 * PA_EW_REQUIRE(api, selfRef, src, workspaceSize, executor). */
#define PA_EW_REQUIRE(api, ...)                                                                        \
    pa_ew_check_nulls((api), #__VA_ARGS__, (const void *const[]){__VA_ARGS__},                          \
                      (int)(sizeof((const void *const[]){__VA_ARGS__}) / sizeof(const void *)))
int pa_ew_check_nulls(const char *api, const char *names, const void *const *ptrs, int n);
/* A required tensor: NULL (161001), not live / dtype the ops do not handle /
 * more than 8 dims / a private format (FRACTAL_NZ, ...) / view outside its
 * storage (161002). */
int pa_ew_check_tensor(const char *api, const char *name, const aclTensor *t);
/* An output: also no two elements at one address (161002). */
int pa_ew_check_output(const char *api, const char *name, const aclTensor *t);
/* A scalar: NULL (161001), not live (161002). */
int pa_ew_check_scalar(const char *api, const char *name, const aclScalar *s);
/* src broadcast to dims (numpy rules, aligned at the last dim): 0 and the
 * element strides of src for dims (0 where broadcast), or 161002 naming both. */
int pa_ew_broadcast(const char *api, const char *name, const aclTensor *src, int32_t ndim, const int64_t *dims,
                    const char *to_name, int64_t *strides);
/* The broadcast shape of a and b (161002 if they do not broadcast). */
int pa_ew_broadcast_shape(const char *api, const aclTensor *a, const char *an, const aclTensor *b, const char *bn,
                          int32_t *ndim, int64_t *dims);
/* A scalar's value in the compute domain (double, or int64 for integer and bool dtypes). */
double pa_ew_scalar_f(const aclScalar *s);
int64_t pa_ew_scalar_i(const aclScalar *s);
bool pa_ew_scalar_is_float(const aclScalar *s);

/* Fills plan->out / a / b and the args' strides and dims from the tensors
 * (a, b may be NULL; their strides broadcast to out's shape). Call after the checks. */
void pa_ew_plan_views(pa_ew_plan *plan, const aclTensor *out, const aclTensor *a, const int64_t *a_strides,
                      const aclTensor *b, const int64_t *b_strides);

/* out's shape must be dims (161002 "<api>: <out_name> shape must be <dims>, got <shape>"). */
int pa_ew_check_shape(const char *api, const aclTensor *out, const char *out_name, int32_t ndim, const int64_t *dims);

/* Makes the executor of any plan blob of these ops (no workspace, one output
 * view at out_view): sets *workspaceSize = 0 and *executor. */
int pa_ew_executor(const pa_op_def *op, const void *plan, size_t plan_size, const size_t *in_views, int n_in,
                   size_t out_view, uint64_t *workspaceSize, aclOpExecutor **executor);

/* Makes the executor of an ew plan: `op` names the launch API; in_names /
 * out_names the views, in order a, b (those present), then out. */
int pa_ew_make_executor(const pa_op_def *op, const pa_ew_plan *plan, uint64_t *workspaceSize,
                        aclOpExecutor **executor);
/* The run function of every ew op. */
int pa_ew_plan_run(const void *plan, void *workspace, uint64_t workspace_size);

#endif
