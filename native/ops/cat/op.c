/* aclnnCat: out = tensors concatenated along dim, each converted to out's
 * dtype; aclnnStack: the same on views with a size-1 dim inserted at dim.
 * The checks follow the vendor's op: every tensor non-NULL, of one rank
 * and of tensor 0's shape outside dim, dim in range, and the promoted input
 * type castable to out's (no float into an integer out, no number into bool);
 * out's shape must be the concatenation. At most MAX_TENSORS tensors (a
 * pyaclnn limit; the vendor has none). Run as one elementwise copy per tensor
 * into its slice of out. validate -> plan -> run.
 *
 * The executor knows the first PA_MAX_IO - 1 input views (the launch checks
 * their addresses; aclSetInputTensorAddr reaches them); the run function
 * checks the addresses of the others the same way before it writes anything. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops/core/pa_dtype.h"
#include "ops/core/pa_families.h"
#include "ops/ew_common/ew_common.h"
#include "runtime/pa_memory.h"
#include "runtime/pa_stream.h"

#define WS_API "aclnnCatGetWorkspaceSize"
#define MAX_TENSORS 16384
#define MAX_REGISTERED (PA_MAX_IO - 1) /* input views the executor holds (out is one more) */

typedef struct cat_plan {
    int32_t n, dim;
    int32_t n_registered; /* in[0, n_registered): the executor's views */
    int32_t stack;        /* the launch name for messages: aclnnStack, else aclnnCat */
    pa_tview out;
    pa_tview in[]; /* n */
} cat_plan;

static size_t plan_size(int32_t n) { return offsetof(cat_plan, in) + (size_t)n * sizeof(pa_tview); }

static cat_plan *plan_alloc(const char *api, int32_t n) {
    cat_plan *p = calloc(1, plan_size(n));
    if (p == NULL) pa_fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the plan", api);
    return p;
}

/* The launch's address checks for the views the executor does not hold. */
static int check_unregistered(const cat_plan *p) {
    const char *api = p->stack ? "aclnnStack" : "aclnnCat";
    const int device = pa_stream_task_device();
    for (int32_t i = p->n_registered; i < p->n; i++) {
        const pa_tview *v = &p->in[i];
        bool empty = false;
        for (int32_t d = 0; d < v->ndim; d++) empty = empty || v->dims[d] == 0;
        if (empty) continue;
        if (v->base == NULL) {
            return pa_fail(ACLNN_ERR_RUNTIME_ERROR, "%s: tensors[%d] has no device address (its data pointer is "
                           "NULL); give one in aclCreateTensor", api, (int)i);
        }
        char what[48];
        snprintf(what, sizeof what, "tensors[%d] storage", (int)i);
        const int rc = pa_mem_check_access(api, what, v->base, (uint64_t)v->storage_elems * pa_dtype_size(v->dtype),
                                           device);
        if (rc != 0) return rc;
    }
    return ACLNN_SUCCESS;
}

/* The executor of a plan (freed here). */
static int plan_executor(const pa_op *op, cat_plan *p, uint64_t *workspaceSize, aclOpExecutor **executor) {
    p->n_registered = p->n < MAX_REGISTERED ? p->n : MAX_REGISTERED;
    size_t in_views[MAX_REGISTERED];
    for (int32_t i = 0; i < p->n_registered; i++) in_views[i] = offsetof(cat_plan, in) + (size_t)i * sizeof(pa_tview);
    const int rc = pa_ew_executor(&op->launch, p, plan_size(p->n), in_views, p->n_registered,
                                  offsetof(cat_plan, out), workspaceSize, executor);
    free(p);
    return rc;
}

int pa_run_Cat(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const cat_plan *p = plan;
    const int rc = check_unregistered(p);
    if (rc != ACLNN_SUCCESS) return rc;
    const int64_t es = (int64_t)pa_dtype_size(p->out.dtype);
    int64_t at = 0; /* where along dim the next tensor goes */
    for (int32_t i = 0; i < p->n; i++) {
        const pa_tview *v = &p->in[i];
        pa_ew_args g = {0};
        g.op = PA_EW_CONVERT;
        g.ndim = v->ndim;
        g.out.dtype = p->out.dtype;
        g.a.dtype = v->dtype;
        for (int32_t d = 0; d < v->ndim; d++) {
            g.dims[d] = v->dims[d];
            g.out.strides[d] = p->out.strides[d];
            g.a.strides[d] = v->strides[d];
        }
        const int64_t len = v->ndim > 0 ? v->dims[p->dim] : 0;
        if (len > 0) { /* pa_ew_run skips a tensor with another zero-size dim */
            g.out.ptr = (char *)pa_tview_ptr(&p->out) + at * p->out.strides[p->dim] * es;
            g.a.ptr = pa_tview_ptr(v);
            pa_ew_run(&g);
        }
        at += len;
    }
    return ACLNN_SUCCESS;
}


/* torch's canCast from the promoted input kind to out: 0 bool, 1 integer, 2 float. */
static int kind_of(aclDataType dt) {
    if (dt == ACL_BOOL) return 0;
    return pa_ew_dtype_is_float(dt) ? 2 : 1;
}

static int check_list(const aclTensorList *tensors, int64_t *dim) {
    char name[32], s1[160], s2[160];
    if (tensors->size == 0) return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": tensors must not be empty");
    if (tensors->size > MAX_TENSORS) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": pyaclnn concatenates at most %d tensors, got %llu",
                       MAX_TENSORS, (unsigned long long)tensors->size);
    }
    for (uint64_t i = 0; i < tensors->size; i++) { /* every NULL first, as the vendor's op */
        if (tensors->tensors[i] == NULL) {
            return pa_fail(ACLNN_ERR_PARAM_NULLPTR, WS_API ": tensors[%llu] must not be NULL", (unsigned long long)i);
        }
    }
    for (uint64_t i = 0; i < tensors->size; i++) {
        snprintf(name, sizeof name, "tensors[%llu]", (unsigned long long)i);
        const int rc = pa_ew_check_tensor(WS_API, name, tensors->tensors[i]);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    const aclTensor *t0 = tensors->tensors[0];
    const int64_t n = t0->ndim, d0 = *dim;
    const int64_t d = d0 < 0 ? d0 + n : d0;
    if (d < 0 || d >= n) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": dim %lld is out of range for %lld-D tensors", (long long)d0,
                       (long long)n);
    }
    for (uint64_t i = 1; i < tensors->size; i++) {
        const aclTensor *t = tensors->tensors[i];
        bool same = t->ndim == n;
        for (int64_t j = 0; same && j < n; j++) same = j == d || t->dims[j] == t0->dims[j];
        if (!same) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": tensors[%llu] shape %s must match tensors[0] shape %s "
                           "outside dim %lld", (unsigned long long)i, pa_shape_str(t->dims, t->ndim, s1, sizeof s1),
                           pa_shape_str(t0->dims, t0->ndim, s2, sizeof s2), (long long)d);
        }
    }
    *dim = d;
    return ACLNN_SUCCESS;
}

static int check_out(const aclTensorList *tensors, int64_t dim, const aclTensor *out) {
    int kind = 0;
    int64_t len = 0;
    for (uint64_t i = 0; i < tensors->size; i++) {
        const int k = kind_of(tensors->tensors[i]->dtype);
        kind = k > kind ? k : kind;
        /* a stride-0 input dim may be huge: out's (a real extent) must hold the sum */
        if (__builtin_add_overflow(len, tensors->tensors[i]->dims[dim], &len)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": the tensors' sizes along dim %lld overflow int64",
                           (long long)dim);
        }
    }
    if (kind > kind_of(out->dtype)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": the tensors' %s values cannot be cast to out dtype %s",
                       kind == 2 ? "floating-point" : "integer", pa_dtype_name(out->dtype));
    }
    const aclTensor *t0 = tensors->tensors[0];
    int64_t want[PA_MAX_DIMS];
    for (int32_t j = 0; j < t0->ndim; j++) want[j] = j == dim ? len : t0->dims[j];
    return pa_ew_check_shape(WS_API, out, "out", t0->ndim, want);
}

int pa_plan_Cat(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensorList *tensors = a[0].p; int64_t dim = a[1].i; aclTensor *out = (aclTensor *)a[2].p;
    int rc = PA_EW_REQUIRE(WS_API, tensors, out, workspaceSize, executor);
    if (rc == 0) rc = pa_handle_check(WS_API, "tensors", tensors, PA_HANDLE_TENSOR_LIST);
    if (rc == 0) rc = check_list(tensors, &dim);
    if (rc == 0) rc = pa_ew_check_output(WS_API, "out", out);
    if (rc == 0) rc = check_out(tensors, dim, out);
    if (rc != ACLNN_SUCCESS) return rc;
    cat_plan *plan = plan_alloc(WS_API, (int32_t)tensors->size);
    if (plan == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    plan->n = (int32_t)tensors->size;
    plan->dim = (int32_t)dim;
    plan->out = pa_tview_of(out);
    for (int32_t i = 0; i < plan->n; i++) plan->in[i] = pa_tview_of(tensors->tensors[i]);
    return plan_executor(op, plan, workspaceSize, executor);
}


/* ---- aclnnStack ----
 * The vendor's checks in its order: tensors and out not NULL (561103, as the
 * vendor's op answers), dtypes (the table's lists), the promoted dtype of the
 * tensors defined and castable to out's, tensor 0 at most 7 dims (out has one
 * more, at most 8), dim in [-(n+1), n], every tensor of tensor 0's shape;
 * empty tensors: success without looking at out; else out's shape must be
 * the stacked shape. Each tensor is converted straight to out's dtype (the
 * vendor converts to the promoted dtype first: the same values unless that
 * dtype is narrower than both, e.g. INT32 with FLOAT16 into FLOAT). */
#define STACK_API "aclnnStackGetWorkspaceSize"

static int stack_check(const aclTensorList *tensors, int64_t *dim, const aclTensor *out) {
    char name[32], s1[160], s2[160];
    if (tensors->size == 0) return pa_fail(ACLNN_ERR_PARAM_INVALID, STACK_API ": tensors must not be empty");
    if (tensors->size > MAX_TENSORS) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, STACK_API ": pyaclnn stacks at most %d tensors, got %llu",
                       MAX_TENSORS, (unsigned long long)tensors->size);
    }
    const aclTensor *t0 = tensors->tensors[0];
    aclDataType promote = t0->dtype;
    for (uint64_t i = 1; i < tensors->size; i++) {
        const aclDataType d = tensors->tensors[i]->dtype;
        const aclDataType p = pa_dt_promote(d, promote);
        if (p == ACL_DT_UNDEFINED) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           STACK_API ": tensors[%llu] dtype %s and dtype %s have no promoted dtype",
                           (unsigned long long)i, pa_dtype_name(d), pa_dtype_name(promote));
        }
        promote = p;
    }
    if (!pa_dt_can_cast(promote, out->dtype)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, STACK_API ": the tensors' promoted dtype %s cannot be cast to out "
                       "dtype %s", pa_dtype_name(promote), pa_dtype_name(out->dtype));
    }
    for (uint64_t i = 0; i < tensors->size; i++) {
        snprintf(name, sizeof name, "tensors[%llu]", (unsigned long long)i);
        const int rc = pa_ew_check_tensor(STACK_API, name, tensors->tensors[i]);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    const int64_t n = t0->ndim, d0 = *dim;
    if (n > PA_MAX_DIMS - 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, STACK_API ": tensors must have at most %d dims (out has one more), "
                       "got %lld", PA_MAX_DIMS - 1, (long long)n);
    }
    const int64_t d = d0 < 0 ? d0 + n + 1 : d0;
    if (d < 0 || d > n) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       STACK_API ": dim %lld is out of range [%lld, %lld] for %lld-D tensors",
                       (long long)d0, (long long)-(n + 1), (long long)n, (long long)n);
    }
    for (uint64_t i = 1; i < tensors->size; i++) {
        const aclTensor *t = tensors->tensors[i];
        bool same = t->ndim == n;
        for (int64_t j = 0; same && j < n; j++) same = t->dims[j] == t0->dims[j];
        if (!same) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           STACK_API ": tensors[%llu] shape %s must be tensors[0]'s shape %s",
                           (unsigned long long)i, pa_shape_str(t->dims, t->ndim, s1, sizeof s1),
                           pa_shape_str(t0->dims, t0->ndim, s2, sizeof s2));
        }
    }
    *dim = d;
    return ACLNN_SUCCESS;
}

int pa_plan_Stack(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensorList *tensors = a[0].p; int64_t dim = a[1].i; aclTensor *out = (aclTensor *)a[2].p;
    if (tensors == NULL || out == NULL) {
        return pa_fail(ACLNN_ERR_INNER_NULLPTR, STACK_API ": %s is NULL", tensors == NULL ? "tensors" : "out");
    }
    int rc = stack_check(tensors, &dim, out);
    if (rc == 0) rc = pa_ew_check_output(STACK_API, "out", out);
    if (rc != ACLNN_SUCCESS) return rc;
    const aclTensor *t0 = tensors->tensors[0];
    const bool empty = pa_tensor_numel(t0) == 0;
    if (!empty) {
        int64_t want[PA_MAX_DIMS];
        for (int32_t j = 0, k = 0; j <= t0->ndim; j++) want[j] = j == dim ? (int64_t)tensors->size : t0->dims[k++];
        rc = pa_ew_check_shape(STACK_API, out, "out", t0->ndim + 1, want);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    cat_plan *plan = plan_alloc(STACK_API, empty ? 0 : (int32_t)tensors->size);
    if (plan == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    plan->stack = 1;
    plan->dim = (int32_t)dim;
    plan->out = pa_tview_of(out);
    if (empty) {
        /* nothing to stack: the vendor's op succeeds without looking at out's shape; no element is written */
        plan->out.ndim = 1;
        plan->out.dims[0] = 0;
    }
    plan->n = empty ? 0 : (int32_t)tensors->size;
    for (int32_t i = 0; i < plan->n; i++) {
        /* tensor i seen with a size-1 dim at dim: Cat's copy into out's slice i along dim */
        const pa_tview v = pa_tview_of(tensors->tensors[i]);
        pa_tview *u = &plan->in[i];
        *u = v;
        u->ndim = v.ndim + 1;
        for (int32_t j = 0, k = 0; j < u->ndim; j++) {
            u->dims[j] = j == dim ? 1 : v.dims[k];
            u->strides[j] = j == dim ? 0 : v.strides[k];
            k += j != dim;
        }
    }
    return plan_executor(op, plan, workspaceSize, executor);
}

int pa_run_Stack(const void *plan, void *workspace, uint64_t workspace_size) {
    return pa_run_Cat(plan, workspace, workspace_size);
}
