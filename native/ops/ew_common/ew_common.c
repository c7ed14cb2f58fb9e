#include "ops/ew_common/ew_common.h"

#include <stddef.h>
#include <string.h>

#define SHAPE(t, buf) pa_shape_str((t)->dims, (t)->ndim, (buf), sizeof(buf))

int pa_ew_check_nulls(const char *api, const char *names, const void *const *ptrs, int n) {
    for (int i = 0; i < n; i++) {
        if (ptrs[i] != NULL) continue;
        const char *name = names; /* the i-th of "a, b, c" */
        for (int k = 0; k < i; k++) name = strchr(name, ',') + 2;
        const char *end = strchr(name, ',');
        const int len = end ? (int)(end - name) : (int)strlen(name);
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %.*s is NULL", api, len, name);
    }
    return ACLNN_SUCCESS;
}

int pa_ew_check_tensor(const char *api, const char *name, const aclTensor *t) {
    int rc = pa_handle_check(api, name, t, PA_HANDLE_TENSOR);
    if (rc != ACLNN_SUCCESS) return rc;
    if (!pa_ew_dtype_ok(t->dtype)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: %s dtype must be FLOAT, FLOAT16, BF16, DOUBLE, BOOL, INT8, UINT8, INT16, UINT16, INT32, "
                       "UINT32, INT64 or UINT64, got %s",
                       api, name, pa_dtype_name(t->dtype));
    }
    if (t->ndim > PA_EW_MAX_DIMS) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have at most %d dims, got %d", api, name,
                       PA_EW_MAX_DIMS, (int)t->ndim);
    }
    if (!pa_format_is_plain(t->format)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s format %s is not supported; expected ND (or another plain "
                       "format such as NCHW)", api, name, pa_format_name(t->format));
    }
    return pa_tensor_check_view(api, name, t);
}

int pa_ew_check_output(const char *api, const char *name, const aclTensor *t) {
    int rc = pa_ew_check_tensor(api, name, t);
    if (rc != ACLNN_SUCCESS) return rc;
    /* No two elements at one address: with the dims of size > 1 ordered by
     * stride, each stride must exceed the span of the smaller ones. */
    int64_t st[PA_MAX_DIMS], dm[PA_MAX_DIMS];
    int n = 0;
    for (int32_t i = 0; i < t->ndim; i++) {
        if (t->dims[i] == 0) return ACLNN_SUCCESS;
        if (t->dims[i] == 1) continue;
        int j = n++;
        while (j > 0 && st[j - 1] > t->strides[i]) {
            st[j] = st[j - 1];
            dm[j] = dm[j - 1];
            j--;
        }
        st[j] = t->strides[i];
        dm[j] = t->dims[i];
    }
    int64_t span = 0; /* largest offset reachable with the dims so far */
    for (int i = 0; i < n; i++) {
        if (st[i] <= span) {
            char s1[160], s2[160];
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s (shape %s, strides %s) has elements that share an address; an output needs one "
                           "address per element",
                           api, name, SHAPE(t, s1), pa_shape_str(t->strides, t->ndim, s2, sizeof s2));
        }
        span += (dm[i] - 1) * st[i]; /* bounded by the storage (pa_tensor_check_view) */
    }
    return ACLNN_SUCCESS;
}

int pa_ew_check_scalar(const char *api, const char *name, const aclScalar *s) {
    return pa_handle_check(api, name, s, PA_HANDLE_SCALAR);
}

int pa_ew_broadcast(const char *api, const char *name, const aclTensor *src, int32_t ndim, const int64_t *dims,
                    const char *to_name, int64_t *strides) {
    char s1[160], s2[160];
    if (src->ndim > ndim) goto bad;
    for (int32_t i = 0; i < ndim; i++) {
        const int32_t j = i - (ndim - src->ndim);
        if (j < 0) {
            strides[i] = 0;
            continue;
        }
        if (src->dims[j] == dims[i]) strides[i] = dims[i] == 1 ? 0 : src->strides[j];
        else if (src->dims[j] == 1) strides[i] = 0;
        else goto bad;
    }
    return ACLNN_SUCCESS;
bad:
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s cannot be broadcast to the shape %s of %s", api, name,
                   SHAPE(src, s1), pa_shape_str(dims, ndim, s2, sizeof s2), to_name);
}

int pa_ew_broadcast_shape(const char *api, const aclTensor *a, const char *an, const aclTensor *b, const char *bn,
                          int32_t *ndim, int64_t *dims) {
    const int32_t n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int32_t i = 0; i < n; i++) {
        const int32_t ia = i - (n - a->ndim), ib = i - (n - b->ndim);
        const int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char s1[160], s2[160];
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s and %s shape %s do not broadcast", api, an,
                           SHAPE(a, s1), bn, SHAPE(b, s2));
        }
        dims[i] = da == 1 ? db : da;
    }
    *ndim = n;
    return ACLNN_SUCCESS;
}

bool pa_ew_scalar_is_float(const aclScalar *s) {
    return s->dtype == ACL_FLOAT || s->dtype == ACL_FLOAT16 || s->dtype == ACL_BF16 || s->dtype == ACL_DOUBLE;
}

static bool scalar_is_unsigned(const aclScalar *s) {
    return s->dtype == ACL_UINT8 || s->dtype == ACL_UINT16 || s->dtype == ACL_UINT32 || s->dtype == ACL_UINT64;
}

double pa_ew_scalar_f(const aclScalar *s) {
    if (pa_ew_scalar_is_float(s)) return s->v.f;
    if (s->dtype == ACL_BOOL) return s->v.b ? 1.0 : 0.0;
    return scalar_is_unsigned(s) ? (double)s->v.u : (double)s->v.i;
}

int64_t pa_ew_scalar_i(const aclScalar *s) {
    if (s->dtype == ACL_BOOL) return s->v.b;
    if (pa_ew_scalar_is_float(s)) {
        const double v = s->v.f;
        if (v != v) return 0;
        if (v <= -0x1p63) return INT64_MIN;
        if (v >= 0x1p63) return INT64_MAX;
        return (int64_t)v;
    }
    return scalar_is_unsigned(s) ? (int64_t)s->v.u : s->v.i;
}

void pa_ew_plan_views(pa_ew_plan *plan, const aclTensor *out, const aclTensor *a, const int64_t *a_strides,
                      const aclTensor *b, const int64_t *b_strides) {
    plan->out = pa_tview_of(out);
    plan->a.dtype = plan->b.dtype = ACL_DT_UNDEFINED;
    pa_ew_args *g = &plan->args;
    g->ndim = out->ndim;
    for (int32_t i = 0; i < out->ndim; i++) {
        g->dims[i] = out->dims[i];
        g->out.strides[i] = plan->out.strides[i];
        g->a.strides[i] = a_strides ? a_strides[i] : 0;
        g->b.strides[i] = b_strides ? b_strides[i] : 0;
    }
    g->out.dtype = out->dtype;
    if (a != NULL) {
        plan->a = pa_tview_of(a);
        g->a.dtype = a->dtype;
    }
    if (b != NULL) {
        plan->b = pa_tview_of(b);
        g->b.dtype = b->dtype;
    }
}

int pa_ew_check_shape(const char *api, const aclTensor *out, const char *out_name, int32_t ndim, const int64_t *dims) {
    bool same = out->ndim == ndim;
    for (int32_t i = 0; same && i < ndim; i++) same = out->dims[i] == dims[i];
    if (same) return ACLNN_SUCCESS;
    char s1[160], s2[160];
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape must be %s, got %s", api, out_name,
                   pa_shape_str(dims, ndim, s1, sizeof s1), pa_shape_str(out->dims, out->ndim, s2, sizeof s2));
}

int pa_ew_executor(const pa_op_def *op, const void *plan, size_t plan_size, const size_t *in_views, int n_in,
                   size_t out_view, uint64_t *workspaceSize, aclOpExecutor **executor) {
    aclOpExecutor *ex = pa_executor_create(op, plan, plan_size, 0, in_views, n_in, &out_view, 1);
    if (ex == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR; /* message already set */
    *workspaceSize = 0;
    *executor = ex;
    return ACLNN_SUCCESS;
}

int pa_ew_make_executor(const pa_op_def *op, const pa_ew_plan *plan, uint64_t *workspaceSize,
                        aclOpExecutor **executor) {
    size_t in_views[2];
    int n_in = 0;
    if (plan->a.dtype != ACL_DT_UNDEFINED) in_views[n_in++] = offsetof(pa_ew_plan, a);
    if (plan->b.dtype != ACL_DT_UNDEFINED) in_views[n_in++] = offsetof(pa_ew_plan, b);
    return pa_ew_executor(op, plan, sizeof *plan, in_views, n_in, offsetof(pa_ew_plan, out), workspaceSize,
                          executor);
}

int pa_ew_plan_run(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const pa_ew_plan *p = plan;
    pa_ew_args g = p->args;
    g.out.ptr = pa_tview_ptr(&p->out);
    g.a.ptr = p->a.dtype != ACL_DT_UNDEFINED ? pa_tview_ptr(&p->a) : NULL;
    g.b.ptr = p->b.dtype != ACL_DT_UNDEFINED ? pa_tview_ptr(&p->b) : NULL;
    pa_ew_run(&g);
    return ACLNN_SUCCESS;
}
