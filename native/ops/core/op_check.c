/* The checks every operator makes before its own (pa_op.h), once for all. */
#include "ops/core/pa_op.h"

#include <string.h>

#include "ops/core/pa_dtype.h"

int pa_op_param(const pa_op *op, const char *name) {
    for (int i = 0; i < op->nparams; i++) {
        if (strcmp(op->params[i].name, name) == 0) return i;
    }
    return -1;
}

const char *pa_dtype_list_str(uint64_t mask, char *buf, size_t cap) {
    size_t len = 0;
    int n = 0, total = 0;
    for (int dt = 0; dt < 64; dt++) total += (mask >> dt) & 1;
    buf[0] = '\0';
    for (int dt = 0; dt < 64 && len < cap; dt++) {
        if (!((mask >> dt) & 1)) continue;
        n++;
        const char *sep = n == 1 ? "" : n == total ? " or " : ", ";
        int w = snprintf(buf + len, cap - len, "%s%s", sep, pa_dtype_name((aclDataType)dt));
        if (w < 0) break;
        len += (size_t)w;
    }
    return buf;
}

/* The dtypes pyaclnn's kernels hold at all (complex and the 8-bit float
 * formats are not implemented). */
static const uint64_t k_held = PA_DT_BIT(ACL_FLOAT) | PA_DT_BIT(ACL_FLOAT16) | PA_DT_BIT(ACL_BF16) |
                               PA_DT_BIT(ACL_DOUBLE) | PA_DT_BIT(ACL_INT8) | PA_DT_BIT(ACL_UINT8) |
                               PA_DT_BIT(ACL_INT16) | PA_DT_BIT(ACL_UINT16) | PA_DT_BIT(ACL_INT32) |
                               PA_DT_BIT(ACL_UINT32) | PA_DT_BIT(ACL_INT64) | PA_DT_BIT(ACL_UINT64) |
                               PA_DT_BIT(ACL_BOOL);

static int check_dtype(const char *api, const char *name, aclDataType dt, const pa_param *p) {
    const uint64_t bit = dt >= 0 && dt < 64 ? PA_DT_BIT(dt) : 0;
    const uint64_t ok = p->dtypes ? p->dtypes : k_held;
    const bool int4 = dt == ACL_INT4 && (p->flags & PA_PF_INT4);
    if (!int4 && !(bit & ok)) {
        char list[512];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must be %s, got %s", api, name,
                       pa_dtype_list_str(ok & (k_held | PA_DT_BIT(ACL_INT4)), list, sizeof list),
                       pa_dtype_name(dt));
    }
    if (!int4 && !(bit & k_held)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is accepted by CANN but not implemented by pyaclnn",
                       api, name, pa_dtype_name(dt));
    }
    return ACLNN_SUCCESS;
}

/* No two elements of an output at one address: with the dims of size > 1
 * ordered by stride, each stride must exceed the span of the smaller ones. */
static int check_one_address_per_element(const char *api, const char *name, const aclTensor *t) {
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
    int64_t span = 0;
    for (int i = 0; i < n; i++) {
        if (st[i] <= span) {
            char s1[160], s2[160];
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s (shape %s, strides %s) has elements that share an address; an output needs one "
                           "address per element",
                           api, name, pa_shape_str(t->dims, t->ndim, s1, sizeof s1),
                           pa_shape_str(t->strides, t->ndim, s2, sizeof s2));
        }
        span += (dm[i] - 1) * st[i]; /* bounded by the storage (pa_tensor_check_view) */
    }
    return ACLNN_SUCCESS;
}

static int check_tensor(const pa_op *op, const pa_param *p, const char *name, const aclTensor *t) {
    const char *api = op->ws_api;
    int rc = pa_handle_check(api, name, t, PA_HANDLE_TENSOR);
    if (rc != ACLNN_SUCCESS) return rc;
    const bool empty_pass = (p->flags & PA_PF_EMPTY_ANY_DTYPE) && pa_tensor_numel(t) == 0 && t->dtype >= 0 &&
                            t->dtype < 64 && (PA_DT_BIT(t->dtype) & k_held);
    if (!empty_pass) rc = check_dtype(api, name, t->dtype, p);
    if (rc != ACLNN_SUCCESS) return rc;
    if (t->ndim > op->max_rank) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have at most %d dims, got %d", api, name, op->max_rank,
                       (int)t->ndim);
    }
    if (t->ndim < op->min_rank) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have at least %d dims, got %d", api, name,
                       op->min_rank, (int)t->ndim);
    }
    if (!pa_format_is_plain(t->format) && !(t->format == ACL_FORMAT_FRACTAL_NZ && (p->flags & PA_PF_NZ))) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: %s format %s is not supported; expected ND (or another plain format such as NCHW)", api,
                       name, pa_format_name(t->format));
    }
    if (t->dtype == ACL_INT4) return ACLNN_SUCCESS; /* half-byte views: the planner checks them */
    rc = pa_tensor_check_view(api, name, t);
    if (rc == ACLNN_SUCCESS && p->io != PA_IN) rc = check_one_address_per_element(api, name, t);
    return rc;
}

aclnnStatus pa_op_plan(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *api = op->ws_api;
    for (int i = 0; i < op->nparams; i++) {
        const pa_param *p = &op->params[i];
        const bool pointer = p->kind <= PA_P_FLOAT_ARRAY || p->kind == PA_P_STRING || p->kind == PA_P_OUT_U64;
        if (pointer && a[i].p == NULL && !(p->flags & PA_PF_OPTIONAL)) {
            return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", api, p->name);
        }
        /* a live list's NULL elements are NULL arguments too (a dead list is 161002 below) */
        if (p->kind == PA_P_TENSOR_LIST && a[i].p != NULL && pa_handle_live(a[i].p, PA_HANDLE_TENSOR_LIST)) {
            const aclTensorList *l = a[i].p;
            for (uint64_t k = 0; k < l->size; k++) {
                if (l->tensors[k] == NULL) {
                    return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s[%llu] must not be NULL", api, p->name,
                                   (unsigned long long)k);
                }
            }
        }
    }
    if (op->params[op->nparams - 1].kind != PA_P_OUT_U64) {
        if (workspaceSize == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspaceSize is NULL", api);
        if (executor == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is NULL", api);
    }
    int rc = ACLNN_SUCCESS;
    for (int i = 0; i < op->nparams && rc == ACLNN_SUCCESS; i++) {
        const pa_param *p = &op->params[i];
        if ((p->kind <= PA_P_FLOAT_ARRAY) && a[i].p == NULL) continue; /* optional, absent */
        switch ((pa_pkind)p->kind) {
        case PA_P_TENSOR: rc = check_tensor(op, p, p->name, a[i].p); break;
        case PA_P_TENSOR_LIST: {
            const aclTensorList *l = a[i].p;
            rc = pa_handle_check(api, p->name, l, PA_HANDLE_TENSOR_LIST);
            for (uint64_t k = 0; rc == ACLNN_SUCCESS && k < l->size; k++) {
                char name[96];
                snprintf(name, sizeof name, "%s[%llu]", p->name, (unsigned long long)k);
                if (l->tensors[k] == NULL) {
                    rc = pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s must not be NULL", api, name);
                } else {
                    rc = check_tensor(op, p, name, l->tensors[k]);
                }
            }
            break;
        }
        case PA_P_SCALAR: {
            const aclScalar *s = a[i].p;
            rc = pa_handle_check(api, p->name, s, PA_HANDLE_SCALAR);
            if (rc == ACLNN_SUCCESS) rc = check_dtype(api, p->name, s->dtype, p);
            break;
        }
        case PA_P_SCALAR_LIST: rc = pa_handle_check(api, p->name, a[i].p, PA_HANDLE_SCALAR_LIST); break;
        case PA_P_INT_ARRAY: rc = pa_handle_check(api, p->name, a[i].p, PA_HANDLE_INT_ARRAY); break;
        case PA_P_BOOL_ARRAY: rc = pa_handle_check(api, p->name, a[i].p, PA_HANDLE_BOOL_ARRAY); break;
        case PA_P_FLOAT_ARRAY: rc = pa_handle_check(api, p->name, a[i].p, PA_HANDLE_FLOAT_ARRAY); break;
        case PA_P_DTYPE:
            if (p->dtypes && !(a[i].i >= 0 && a[i].i < 64 && (PA_DT_BIT(a[i].i) & p->dtypes))) {
                char list[512];
                rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be %s, got %s", api, p->name,
                             pa_dtype_list_str(p->dtypes & k_held, list, sizeof list),
                             pa_dtype_name((aclDataType)a[i].i));
            }
            break;
        default: break;
        }
    }
    if (rc != ACLNN_SUCCESS) return rc;
    if (op->plan == NULL) {
        return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
                       "%s: %s is not implemented by pyaclnn (no CPU kernel; see docs/operators.md)", api,
                       op->launch.name);
    }
    return op->plan(op, a, workspaceSize, executor);
}

int pa_op_executor(const pa_op *op, const void *plan, size_t plan_size, const size_t *in_views, int n_in,
                   const size_t *out_views, int n_out, uint64_t ws, uint64_t *workspaceSize,
                   aclOpExecutor **executor) {
    aclOpExecutor *ex = pa_executor_create(&op->launch, plan, plan_size, ws, in_views, n_in, out_views, n_out);
    if (ex == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR; /* message already set */
    *workspaceSize = ws;
    *executor = ex;
    return ACLNN_SUCCESS;
}

bool pa_scalar_is_float(const aclScalar *s) {
    return s->dtype == ACL_FLOAT || s->dtype == ACL_FLOAT16 || s->dtype == ACL_BF16 || s->dtype == ACL_DOUBLE;
}

static bool scalar_is_unsigned(const aclScalar *s) {
    return s->dtype == ACL_UINT8 || s->dtype == ACL_UINT16 || s->dtype == ACL_UINT32 || s->dtype == ACL_UINT64;
}

double pa_scalar_f(const aclScalar *s) {
    if (pa_scalar_is_float(s)) return s->v.f;
    if (s->dtype == ACL_BOOL) return s->v.b ? 1.0 : 0.0;
    return scalar_is_unsigned(s) ? (double)s->v.u : (double)s->v.i;
}

int64_t pa_scalar_i(const aclScalar *s) {
    if (s->dtype == ACL_BOOL) return s->v.b;
    if (pa_scalar_is_float(s)) {
        const double v = s->v.f;
        if (v != v) return 0;
        if (v <= -0x1p63) return INT64_MIN;
        if (v >= 0x1p63) return INT64_MAX;
        return (int64_t)v;
    }
    return scalar_is_unsigned(s) ? (int64_t)s->v.u : s->v.i;
}

void pa_op_views(const pa_op *op, const pa_arg *a, pa_tview *views, int *param, int *n_in, int *n_out) {
    int n = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < op->nparams && n < PA_OP_MAX_VIEWS; i++) {
            const pa_param *p = &op->params[i];
            if (p->kind != PA_P_TENSOR) continue;
            const bool in = p->io == PA_IN || p->io == PA_INOUT, out = p->io == PA_OUT || p->io == PA_INOUT;
            if (pass == 0 ? !in : !out) continue;
            if (a[i].p != NULL) {
                views[n] = pa_tview_of(a[i].p);
            } else {
                memset(&views[n], 0, sizeof views[n]);
                views[n].dtype = ACL_DT_UNDEFINED;
            }
            param[n++] = i;
        }
        if (pass == 0) *n_in = n;
    }
    *n_out = n - *n_in;
}
