/* aclnnCat: out = tensors concatenated along dim, each converted to out's
 * dtype. The checks follow the vendor's op: every tensor non-NULL, of one rank
 * and of tensor 0's shape outside dim, dim in range, and the promoted input
 * type castable to out's (no float into an integer out, no number into bool);
 * out's shape must be the concatenation. At most PA_MAX_IO - 1 tensors (a
 * pyaclnn limit). Run as one elementwise copy per tensor into its slice of out.
 * validate -> plan -> run. */
#include <stddef.h>
#include <stdio.h>

#include "ops/core/pa_families.h"
#include "ops/ew_common/ew_common.h"

#define WS_API "aclnnCatGetWorkspaceSize"
#define MAX_TENSORS (PA_MAX_IO - 1)

typedef struct cat_plan {
    int32_t n, dim;
    pa_tview out;
    pa_tview in[MAX_TENSORS];
} cat_plan;

int pa_run_Cat(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const cat_plan *p = plan;
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
    cat_plan plan = {0};
    plan.n = (int32_t)tensors->size;
    plan.dim = (int32_t)dim;
    plan.out = pa_tview_of(out);
    size_t in_views[MAX_TENSORS];
    for (int32_t i = 0; i < plan.n; i++) {
        plan.in[i] = pa_tview_of(tensors->tensors[i]);
        in_views[i] = offsetof(cat_plan, in) + (size_t)i * sizeof(pa_tview);
    }
    /* the blob ends after the last tensor's view: launches copy only that */
    const size_t size = offsetof(cat_plan, in) + (size_t)plan.n * sizeof(pa_tview);
    return pa_ew_executor(&op->launch, &plan, size, in_views, plan.n, offsetof(cat_plan, out), workspaceSize, executor);
}

