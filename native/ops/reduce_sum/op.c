/* aclnnReduceSum: out = sum of self over `dims` (negative dims count from the
 * end; an empty list sums everything), kept as size-1 dims when keepDims, in
 * dtype `dtype` (out's). Each output element is summed in index order in
 * double (int64 for integer dtypes) and rounded once: deterministic, and more
 * accurate than the NPU's fp32 tree (not bit-identical to it).
 * validate -> plan -> run. */
#include <stddef.h>
#include <string.h>

#include "ops/core/pa_families.h"
#include "ops/ew_common/ew_common.h"

#define WS_API "aclnnReduceSumGetWorkspaceSize"

typedef struct sum_plan {
    pa_ew_sum_args args;
    pa_tview self, out;
} sum_plan;

int pa_run_ReduceSum(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const sum_plan *p = plan;
    pa_ew_sum_args g = p->args;
    g.a.ptr = pa_tview_ptr(&p->self);
    g.out.ptr = pa_tview_ptr(&p->out);
    pa_ew_sum(&g);
    return ACLNN_SUCCESS;
}


/* The reduced dims as a mask over self's dims; 161002 for a bad or repeated dim. */
static int reduced_mask(const aclTensor *self, const aclIntArray *dims, bool *red) {
    const int32_t n = self->ndim;
    for (int32_t i = 0; i < n; i++) red[i] = dims->size == 0;
    for (uint64_t k = 0; k < dims->size; k++) {
        int64_t d = dims->values[k];
        const int64_t lim = n > 0 ? n : 1;
        if (d < -lim || d >= lim) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": dims[%llu] = %lld is out of range for a %d-D self",
                           (unsigned long long)k, (long long)d, (int)n);
        }
        if (n == 0) continue; /* a 0-D self: dim 0 / -1 name the scalar itself */
        if (d < 0) d += n;
        if (red[d]) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": dim %lld appears twice in dims", (long long)d);
        }
        red[d] = true;
    }
    return ACLNN_SUCCESS;
}

int pa_plan_ReduceSum(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *self = a[0].p; const aclIntArray *dims = a[1].p; bool keepDims = a[2].b;
    aclDataType dtype = (aclDataType)a[3].i; aclTensor *out = (aclTensor *)a[4].p;
    int rc = PA_EW_REQUIRE(WS_API, self, dims, out, workspaceSize, executor);
    if (rc == 0) rc = pa_ew_check_tensor(WS_API, "self", self);
    if (rc == 0) rc = pa_handle_check(WS_API, "dims", dims, PA_HANDLE_INT_ARRAY);
    if (rc == 0) rc = pa_ew_check_output(WS_API, "out", out);
    if (rc != ACLNN_SUCCESS) return rc;
    if (out->dtype != dtype) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": out dtype must be dtype %s, got %s", pa_dtype_name(dtype),
                       pa_dtype_name(out->dtype));
    }
    bool red[PA_MAX_DIMS];
    rc = reduced_mask(self, dims, red);
    if (rc != ACLNN_SUCCESS) return rc;
    /* expected out shape */
    int64_t want[PA_MAX_DIMS];
    int32_t nw = 0;
    for (int32_t i = 0; i < self->ndim; i++) {
        if (!red[i]) want[nw++] = self->dims[i];
        else if (keepDims) want[nw++] = 1;
    }
    bool same = out->ndim == nw;
    for (int32_t i = 0; same && i < nw; i++) same = out->dims[i] == want[i];
    if (!same) {
        char s1[160], s2[160], s3[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": out shape must be %s (self %s reduced%s), got %s",
                       pa_shape_str(want, nw, s1, sizeof s1), pa_shape_str(self->dims, self->ndim, s2, sizeof s2),
                       keepDims ? ", keepDims" : "", pa_shape_str(out->dims, out->ndim, s3, sizeof s3));
    }
    sum_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.self = pa_tview_of(self);
    plan.out = pa_tview_of(out);
    pa_ew_sum_args *g = &plan.args;
    g->a.dtype = self->dtype;
    g->out.dtype = out->dtype;
    /* kept dims first (with the out dim each maps to), then the reduced ones */
    int32_t k = 0, od = 0;
    for (int32_t i = 0; i < self->ndim; i++) {
        if (red[i]) {
            if (keepDims) od++;
            continue;
        }
        g->dims[k] = self->dims[i];
        g->a.strides[k] = plan.self.strides[i];
        g->out.strides[k] = plan.out.strides[od++];
        k++;
    }
    g->n_outer = k;
    for (int32_t i = 0; i < self->ndim; i++) {
        if (!red[i]) continue;
        g->dims[k] = self->dims[i];
        g->a.strides[k] = plan.self.strides[i];
        k++;
    }
    g->ndim = k;
    const size_t in_view = offsetof(sum_plan, self);
    return pa_ew_executor(&op->launch, &plan, sizeof plan, &in_view, 1, offsetof(sum_plan, out), workspaceSize,
                          executor);
}

