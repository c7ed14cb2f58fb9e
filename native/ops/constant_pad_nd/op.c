/* aclnnConstantPadNd: out = self padded with value. pad holds [before, after]
 * pairs from the last dim backward (pad[0], pad[1] for the last dim); negative
 * entries crop. The checks follow the vendor's op (pad length even and at most
 * twice self's rank, out's rank and shape as inferred, no zero-size dim when
 * anything is padded). Run as two elementwise passes over the views: fill out
 * with value, then copy the kept part of self into its place in out.
 * validate -> plan -> run. */
#include <stddef.h>

#include "ops/core/pa_families.h"
#include "ops/ew_common/ew_common.h"

#define WS_API "aclnnConstantPadNdGetWorkspaceSize"

typedef struct pad_plan {
    pa_ew_args fill, copy; /* copy: dims are the kept part; ptrs set at run */
    int64_t out_skip, self_skip; /* elements from each view's element 0 to the kept part */
    bool has_copy;
    pa_tview self, out;
} pad_plan;

int pa_run_ConstantPadNd(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const pad_plan *p = plan;
    char *out = pa_tview_ptr(&p->out);
    pa_ew_args g = p->fill;
    g.out.ptr = out;
    pa_ew_run(&g);
    if (p->has_copy) {
        g = p->copy;
        g.out.ptr = out + p->out_skip * (int64_t)pa_dtype_size(p->out.dtype);
        g.a.ptr = (char *)pa_tview_ptr(&p->self) + p->self_skip * (int64_t)pa_dtype_size(p->self.dtype);
        pa_ew_run(&g);
    }
    return ACLNN_SUCCESS;
}


/* Pads of dim d (0 when pad does not reach it). */
static void pads_of(const aclIntArray *pad, int32_t ndim, int32_t d, int64_t *lo, int64_t *hi) {
    const uint64_t k = 2 * (uint64_t)(ndim - 1 - d);
    *lo = k < pad->size ? pad->values[k] : 0;
    *hi = k + 1 < pad->size ? pad->values[k + 1] : 0;
}

static int check_shape(const aclTensor *self, const aclIntArray *pad, const aclTensor *out) {
    const int32_t n = self->ndim;
    char s1[160], s2[160];
    if (out->ndim != n) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": out must have self's rank %d, got %d", (int)n,
                       (int)out->ndim);
    }
    if (pad->size % 2 != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": pad length must be even, got %llu",
                       (unsigned long long)pad->size);
    }
    if (pad->size / 2 > (uint64_t)n) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": pad length %llu must be at most twice self's rank %d",
                       (unsigned long long)pad->size, (int)n);
    }
    bool padded = false, zero = false;
    for (int32_t d = 0; d < n; d++) {
        int64_t lo, hi;
        pads_of(pad, n, d, &lo, &hi);
        const int64_t s = self->dims[d];
        int64_t want; /* a stride-0 self dim may be huge: the sum is checked */
        if (lo < -s || hi < -s || __builtin_add_overflow(s, lo, &want) || __builtin_add_overflow(want, hi, &want) ||
            want < 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": self size %lld with pads %lld and %lld at dim %d gives "
                           "a negative size (or overflows int64)", (long long)s, (long long)lo, (long long)hi, (int)d);
        }
        if (out->dims[d] != want) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": out shape %s must be %lld at dim %d (self %s padded), "
                           "got %lld", pa_shape_str(out->dims, n, s1, sizeof s1), (long long)want, (int)d,
                           pa_shape_str(self->dims, n, s2, sizeof s2), (long long)out->dims[d]);
        }
        padded |= lo > 0 || hi > 0;
        zero |= 2 * (uint64_t)(n - 1 - d) < pad->size && want == 0;
    }
    if (padded && zero) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": out shape %s has a zero-size padded dim",
                       pa_shape_str(out->dims, n, s1, sizeof s1));
    }
    return ACLNN_SUCCESS;
}

int pa_plan_ConstantPadNd(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *self = a[0].p; const aclIntArray *pad = a[1].p; const aclScalar *value = a[2].p;
    aclTensor *out = (aclTensor *)a[3].p;
    int rc = PA_EW_REQUIRE(WS_API, self, pad, value, out, workspaceSize, executor);
    if (rc == 0) rc = pa_ew_check_tensor(WS_API, "self", self);
    if (rc == 0) rc = pa_handle_check(WS_API, "pad", pad, PA_HANDLE_INT_ARRAY);
    if (rc == 0) rc = pa_ew_check_scalar(WS_API, "value", value);
    if (rc == 0 && !pa_ew_dtype_ok(value->dtype)) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": value dtype %s is not supported", pa_dtype_name(value->dtype));
    }
    if (rc == 0) rc = pa_ew_check_output(WS_API, "out", out);
    if (rc == 0 && out->dtype != self->dtype) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, WS_API ": out dtype must be self's, %s, got %s",
                     pa_dtype_name(self->dtype), pa_dtype_name(out->dtype));
    }
    if (rc == 0) rc = check_shape(self, pad, out);
    if (rc != ACLNN_SUCCESS) return rc;

    pad_plan plan = {0};
    pa_ew_plan views = {0};
    pa_ew_plan_views(&views, out, NULL, NULL, NULL, NULL);
    plan.fill = views.args;
    plan.fill.op = PA_EW_FILL;
    plan.fill.int_math = !pa_ew_scalar_is_float(value);
    plan.fill.value_f = pa_ew_scalar_f(value);
    plan.fill.value_i = pa_ew_scalar_i(value);
    plan.out = views.out;
    plan.self = pa_tview_of(self);
    /* the kept part: out[max(lo,0) ...] = self[max(-lo,0) ...], kept = out - max(lo,0) - max(hi,0) */
    plan.copy = plan.fill;
    plan.copy.op = PA_EW_CONVERT;
    plan.copy.a.dtype = self->dtype;
    plan.has_copy = true;
    for (int32_t d = 0; d < self->ndim; d++) {
        int64_t lo, hi;
        pads_of(pad, self->ndim, d, &lo, &hi);
        const int64_t kept = out->dims[d] - (lo > 0 ? lo : 0) - (hi > 0 ? hi : 0);
        plan.has_copy &= kept > 0;
        plan.copy.dims[d] = kept;
        plan.copy.a.strides[d] = plan.self.strides[d];
        plan.out_skip += (lo > 0 ? lo : 0) * plan.out.strides[d];
        plan.self_skip += (lo < 0 ? -lo : 0) * plan.self.strides[d];
    }
    const size_t in_view = offsetof(pad_plan, self);
    return pa_ew_executor(&op->launch, &plan, sizeof plan, &in_view, 1, offsetof(pad_plan, out), workspaceSize,
                          executor);
}

