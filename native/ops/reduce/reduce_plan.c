/* The reduce family: sums, means, extrema, norms over dims; cumsum, sorts
 * and top-k along one dim. validate -> plan (pa_red_args / pa_scan_args) ->
 * run (kernels/reduce/). */
#include <math.h>
#include <string.h>

#include "kernels/map/map_cvt.h"
#include "kernels/reduce/reduce.h"
#include "ops/core/pa_dtype.h"
#include "ops/core/pa_families.h"

#define SHAPE(t, b) pa_shape_str((t)->dims, (t)->ndim, (b), sizeof(b))

/* ---- shared rules ---- */

/* dim in [-n, n) with a 0-d tensor counting as n = 1; the wrapped dim. */
static int wrap_dim(const char *api, const char *what, int64_t d, int32_t n, int32_t *out) {
    const int64_t lim = n > 0 ? n : 1;
    if (d < -lim || d >= lim) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s %lld is out of range for a %d-D self; expected [%lld, %lld]",
                       api, what, (long long)d, (int)n, (long long)-lim, (long long)(lim - 1));
    }
    *out = n == 0 ? 0 : (int32_t)(d < 0 ? d + n : d);
    return ACLNN_SUCCESS;
}

/* The reduced dims of an aclIntArray (empty = all) as a mask over self's dims. */
static int dims_mask(const char *api, const char *name, const aclTensor *self, const aclIntArray *dims, bool unique,
                     bool *red) {
    for (int32_t i = 0; i < self->ndim; i++) red[i] = dims->size == 0;
    for (uint64_t k = 0; k < dims->size; k++) {
        int32_t d = 0;
        char what[64];
        snprintf(what, sizeof what, "%s[%llu]", name, (unsigned long long)k);
        int rc = wrap_dim(api, what, dims->values[k], self->ndim, &d);
        if (rc) return rc;
        if (self->ndim == 0) continue;
        if (red[d] && unique && dims->size != 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dim %d appears twice in %s", api, (int)d, name);
        }
        red[d] = true;
    }
    return ACLNN_SUCCESS;
}

/* The output shape of reducing `red` of self. */
static int32_t reduced_shape(const aclTensor *self, const bool *red, bool keep, int64_t *dims) {
    int32_t n = 0;
    for (int32_t i = 0; i < self->ndim; i++) {
        if (!red[i]) dims[n++] = self->dims[i];
        else if (keep) dims[n++] = 1;
    }
    return n;
}

/* out's shape must be dims, or both hold exactly one element ([1] and [] alike). */
static int check_shape(const char *api, const char *name, const aclTensor *t, int32_t nd, const int64_t *dims) {
    bool same = t->ndim == nd;
    for (int32_t i = 0; same && i < nd; i++) same = t->dims[i] == dims[i];
    if (same) return ACLNN_SUCCESS;
    int64_t want = 1;
    for (int32_t i = 0; i < nd; i++) want *= dims[i];
    if (want == 1 && pa_tensor_numel(t) == 1) return ACLNN_SUCCESS;
    char s1[160], s2[160];
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape must be %s, got %s", api, name,
                   pa_shape_str(dims, nd, s1, sizeof s1), SHAPE(t, s2));
}

static int check_same_dtype(const char *api, const char *name, const aclTensor *t, aclDataType want,
                            const char *what) {
    if (t->dtype == want) return ACLNN_SUCCESS;
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must be %s (%s), got %s", api, name, pa_dtype_name(want),
                   what, pa_dtype_name(t->dtype));
}

/* ---- plans ---- */

typedef struct red_plan {
    pa_red_args args;
    pa_tview self, out, idx; /* idx: dtype ACL_DT_UNDEFINED when absent */
    pa_tview self2;          /* Dot's second input */
    pa_tview self3, self4;   /* BCE's weight, posWeight (dtype ACL_DT_UNDEFINED when NULL) */
    /* what to do when self is empty */
    int8_t empty_fill; /* 0: nothing, 1: fill out with empty_value */
    double empty_value;
} red_plan;

typedef struct scan_plan {
    pa_scan_args args;
    bool sort;
    pa_tview self, out, idx;
} scan_plan;

/* Fills the kept / reduced dims of `g` from self, the mask and the outputs. */
static void fill_dims(pa_red_args *g, const aclTensor *self, const bool *red, bool keep, const aclTensor *out,
                      const aclTensor *idx) {
    const pa_tview sv = pa_tview_of(self);
    const bool out_one = out && pa_tensor_numel(out) == 1;
    const bool idx_one = idx && pa_tensor_numel(idx) == 1;
    const pa_tview ov = out ? pa_tview_of(out) : sv;
    const pa_tview xv = idx ? pa_tview_of(idx) : sv;
    g->nkeep = g->nred = 0;
    int32_t od = 0;
    for (int32_t i = 0; i < self->ndim; i++) {
        if (red[i]) {
            g->red_dims[g->nred] = self->dims[i];
            g->red_in[g->nred++] = sv.strides[i];
            if (keep) od++;
            continue;
        }
        g->keep_dims[g->nkeep] = self->dims[i];
        g->keep_in[g->nkeep] = sv.strides[i];
        g->keep_out[g->nkeep] = out_one || !out ? 0 : ov.strides[od];
        g->keep_idx[g->nkeep] = idx_one || !idx ? 0 : xv.strides[od];
        g->nkeep++;
        od++;
    }
}

static int make_red(const pa_op *op, red_plan *plan, uint64_t *ws, aclOpExecutor **ex) {
    pa_red_simplify(&plan->args);
    size_t in_off[1] = {offsetof(red_plan, self)};
    size_t out_off[2] = {offsetof(red_plan, out), offsetof(red_plan, idx)};
    int nout = plan->idx.dtype != ACL_DT_UNDEFINED ? 2 : 1;
    if (plan->out.dtype == ACL_DT_UNDEFINED) out_off[0] = offsetof(red_plan, idx), nout = 1;
    return pa_op_executor(op, plan, sizeof *plan, in_off, 1, out_off, nout, 0, ws, ex);
}

static void red_init(red_plan *plan, const aclTensor *self, const aclTensor *out, const aclTensor *idx) {
    memset(plan, 0, sizeof *plan);
    plan->self = pa_tview_of(self);
    plan->out = out ? pa_tview_of(out) : (pa_tview){.dtype = ACL_DT_UNDEFINED};
    plan->idx = idx ? pa_tview_of(idx) : (pa_tview){.dtype = ACL_DT_UNDEFINED};
    plan->args.in_dtype = self->dtype;
    plan->args.via = ACL_DT_UNDEFINED;
    plan->args.out_dtype = out ? out->dtype : ACL_DT_UNDEFINED;
    plan->args.idx_dtype = idx ? idx->dtype : ACL_DT_UNDEFINED;
}

/* ReduceSum / Mean / Amax / Amin / Any / All / Norm / LinalgVectorNorm:
 * (self, [scalar p,] dims, keep, [dtype,] out). */
static int plan_dims_reduction(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const int k = op->kernel;
    const aclTensor *self = a[0].p;
    const bool norm = k == PA_REDUCE_NORM || k == PA_REDUCE_VECTOR_NORM;
    const aclScalar *ps = norm ? a[1].p : NULL;
    const int di = norm ? 2 : 1;
    const aclIntArray *dims = a[di].p;
    const bool keep = a[di + 1].b;
    const bool has_dtype = k == PA_REDUCE_SUM || k == PA_REDUCE_MEAN || k == PA_REDUCE_VECTOR_NORM;
    const aclDataType dtype = has_dtype ? (aclDataType)a[di + 2].i : ACL_DT_UNDEFINED;
    const aclTensor *out = a[op->nparams - 1].p;
    bool red[PA_MAX_DIMS];
    const bool unique = k != PA_REDUCE_ANY && k != PA_REDUCE_ALL;
    int rc = ACLNN_SUCCESS;
    if (k == PA_REDUCE_AMAX || k == PA_REDUCE_AMIN) rc = check_same_dtype(api, "out", out, self->dtype, "self's");
    if (rc == 0 && (k == PA_REDUCE_SUM || k == PA_REDUCE_VECTOR_NORM)) {
        rc = check_same_dtype(api, "out", out, dtype, "the dtype argument");
    }
    if (rc == 0 && k == PA_REDUCE_MEAN) {
        if (!pa_dt_can_cast(self->dtype, dtype) || !pa_dt_can_cast(dtype, out->dtype)) {
            rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self dtype %s, dtype %s and out dtype %s must cast in turn",
                         api, pa_dtype_name(self->dtype), pa_dtype_name(dtype), pa_dtype_name(out->dtype));
        }
    }
    if (rc == 0 && k == PA_REDUCE_VECTOR_NORM && pa_dt_promote(self->dtype, out->dtype) == ACL_DT_UNDEFINED) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self dtype %s and out dtype %s have no promoted dtype", api,
                     pa_dtype_name(self->dtype), pa_dtype_name(out->dtype));
    }
    if (rc == 0) rc = dims_mask(api, "dims", self, dims, unique, red);
    if (rc) return rc;
    if (k == PA_REDUCE_AMAX || k == PA_REDUCE_AMIN) {
        for (int32_t i = 0; i < self->ndim; i++) {
            if (red[i] && self->dims[i] == 0) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dim %d of self has size 0 and cannot be reduced", api,
                               (int)i);
            }
        }
    }
    int64_t od[PA_MAX_DIMS];
    const int32_t ond = reduced_shape(self, red, keep, od);
    rc = check_shape(api, "out", out, ond, od);
    if (rc) return rc;
    red_plan plan;
    red_init(&plan, self, out, NULL);
    pa_red_args *g = &plan.args;
    fill_dims(g, self, red, keep, out, NULL);
    switch (k) {
    case PA_REDUCE_SUM:
        g->kind = dtype == ACL_BOOL ? PA_RED_ANY : PA_RED_SUM;
        g->via = dtype;
        g->int_acc = !pa_dt_is_float(dtype);
        plan.empty_fill = 1, plan.empty_value = 0;
        break;
    case PA_REDUCE_MEAN:
        g->kind = PA_RED_MEAN;
        g->via = dtype;
        g->int_acc = !pa_dt_is_float(dtype);
        plan.empty_fill = 1, plan.empty_value = NAN;
        break;
    case PA_REDUCE_AMAX: g->kind = PA_RED_MAX, g->int_acc = !pa_dt_is_float(self->dtype), g->want_values = true; break;
    case PA_REDUCE_AMIN: g->kind = PA_RED_MIN, g->int_acc = !pa_dt_is_float(self->dtype), g->want_values = true; break;
    case PA_REDUCE_ANY: g->kind = PA_RED_ANY, plan.empty_fill = 1, plan.empty_value = 0; break;
    case PA_REDUCE_ALL: g->kind = PA_RED_ALL, plan.empty_fill = 1, plan.empty_value = 1; break;
    default: { /* the norms */
        double p = pa_scalar_f(ps);
        g->kind = PA_RED_NORM;
        g->p = p;
        g->via = pa_dt_is_float(self->dtype) ? ACL_DT_UNDEFINED : ACL_FLOAT;
        plan.empty_fill = 1, plan.empty_value = 0;
        break;
    }
    }
    return make_red(op, &plan, ws, ex);
}

/* Max / Min over everything: (self, out). */
static int plan_all_extremum(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const aclTensor *self = a[0].p, *out = a[1].p;
    bool red[PA_MAX_DIMS];
    for (int32_t i = 0; i < self->ndim; i++) red[i] = true;
    if (pa_tensor_numel(out) != 1 && pa_tensor_numel(self) != 0) {
        char s1[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out must hold one element, got shape %s", op->ws_api,
                       SHAPE(out, s1));
    }
    red_plan plan;
    red_init(&plan, self, out, NULL);
    fill_dims(&plan.args, self, red, false, out, NULL);
    plan.args.kind = op->kernel == PA_REDUCE_MAX ? PA_RED_MAX : PA_RED_MIN;
    plan.args.int_acc = !pa_dt_is_float(self->dtype);
    plan.args.want_values = true;
    return make_red(op, &plan, ws, ex);
}

/* MaxDim / MinDim (self, dim, keep, out, indices); ArgMax / ArgMin (self, dim, keep, out). */
static int plan_dim_extremum(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const int k = op->kernel;
    const bool arg = k == PA_REDUCE_ARGMAX || k == PA_REDUCE_ARGMIN;
    const aclTensor *self = a[0].p;
    const aclTensor *out = arg ? NULL : a[3].p;
    const aclTensor *idx = arg ? a[3].p : a[4].p;
    int32_t d = 0;
    int rc = ACLNN_SUCCESS;
    if (!arg) rc = check_same_dtype(api, "out", out, self->dtype, "self's");
    if (rc == 0) rc = wrap_dim(api, "dim", a[1].i, self->ndim, &d);
    if (rc) return rc;
    bool red[PA_MAX_DIMS];
    for (int32_t i = 0; i < self->ndim; i++) red[i] = i == d;
    int64_t od[PA_MAX_DIMS];
    const int32_t ond = reduced_shape(self, red, a[2].b, od);
    if (out) rc = check_shape(api, "out", out, ond, od);
    if (rc == 0) rc = check_shape(api, arg ? "out" : "indices", idx, ond, od);
    if (rc) return rc;
    red_plan plan;
    red_init(&plan, self, out, idx);
    fill_dims(&plan.args, self, red, a[2].b, out ? out : idx, idx);
    const bool mx = k == PA_REDUCE_MAX_DIM || k == PA_REDUCE_ARGMAX;
    plan.args.kind = mx ? PA_RED_ARGMAX : PA_RED_ARGMIN;
    plan.args.int_acc = !pa_dt_is_float(self->dtype);
    plan.args.want_values = !arg;
    plan.args.want_index = true;
    return make_red(op, &plan, ws, ex);
}

/* The scan family. Cumsum (self, dim, dtype, out); Argsort (self, dim, descending, out);
 * Sort (self, stable, dim, descending, values, indices);
 * Topk (self, k, dim, largest, sorted, values, indices). */
int pa_plan_scan(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const int kind = op->kernel;
    const aclTensor *self = a[0].p;
    const aclTensor *vals = NULL, *idx = NULL;
    int64_t dim_arg, k = -1;
    bool desc = false, stable = true;
    switch (kind) {
    case PA_SCAN_CUMSUM: dim_arg = a[1].i, vals = a[3].p; break;
    case PA_SCAN_CUMPROD: dim_arg = pa_scalar_i(a[1].p), vals = a[3].p; break;
    case PA_SCAN_CUMPROD_INPLACE: dim_arg = pa_scalar_i(a[1].p), vals = a[0].p; break;
    case PA_SCAN_ARGSORT: dim_arg = a[1].i, desc = a[2].b, idx = a[3].p; break;
    case PA_SCAN_SORT: stable = a[1].b, dim_arg = a[2].i, desc = a[3].b, vals = a[4].p, idx = a[5].p; break;
    default: k = a[1].i, dim_arg = a[2].i, desc = a[3].b, vals = a[5].p, idx = a[6].p; break; /* topk */
    }
    if ((kind == PA_SCAN_CUMPROD || kind == PA_SCAN_CUMPROD_INPLACE) && pa_scalar_is_float(a[1].p)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dim must be an integer scalar (INT32 or INT64)", api);
    }
    int32_t d = 0;
    int rc = wrap_dim(api, "dim", dim_arg, self->ndim, &d);
    if (rc) return rc;
    const int64_t len = self->ndim ? self->dims[d] : 1;
    if (kind == PA_SCAN_TOPK) {
        if (k < 0 || k > len) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: k must be in [0, %lld] (the size of dim %d), got %lld", api,
                           (long long)len, (int)d, (long long)k);
        }
        if (!a[4].b) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: sorted must be true", api);
        rc = check_same_dtype(api, "valuesOut", vals, self->dtype, "self's");
    }
    if (rc == 0 && (kind == PA_SCAN_CUMSUM || kind == PA_SCAN_CUMPROD)) {
        rc = check_same_dtype(api, "out", vals, (aclDataType)a[2].i, "dtype");
    }
    if (rc == 0 && kind == PA_SCAN_ARGSORT && self->dtype == ACL_BF16 && len == 1) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: a BF16 self cannot be sorted along a dim of size 1", api);
    }
    if (rc) return rc;
    int64_t od[PA_MAX_DIMS];
    for (int32_t i = 0; i < self->ndim; i++) od[i] = i == d && k >= 0 ? k : self->dims[i];
    const bool cum = kind == PA_SCAN_CUMSUM || kind == PA_SCAN_CUMPROD || kind == PA_SCAN_CUMPROD_INPLACE;
    if (vals) rc = check_shape(api, cum ? "out" : "valuesOut", vals, self->ndim, od);
    if (rc == 0 && idx) rc = check_shape(api, kind == PA_SCAN_ARGSORT ? "out" : "indicesOut", idx, self->ndim, od);
    if (rc) return rc;
    scan_plan plan;
    memset(&plan, 0, sizeof plan);
    pa_scan_args *g = &plan.args;
    plan.self = pa_tview_of(self);
    plan.out = vals ? pa_tview_of(vals) : (pa_tview){.dtype = ACL_DT_UNDEFINED};
    plan.idx = idx ? pa_tview_of(idx) : (pa_tview){.dtype = ACL_DT_UNDEFINED};
    plan.sort = !cum;
    g->prod = kind == PA_SCAN_CUMPROD || kind == PA_SCAN_CUMPROD_INPLACE;
    g->in_dtype = self->dtype;
    g->out_dtype = vals ? vals->dtype : ACL_DT_UNDEFINED;
    g->idx_dtype = idx ? idx->dtype : ACL_DT_UNDEFINED;
    g->len = len;
    g->k = k >= 0 ? k : len;
    g->descending = desc;
    g->stable = stable;
    g->want_values = vals != NULL;
    g->want_index = idx != NULL;
    for (int32_t i = 0; i < self->ndim; i++) {
        if (i == d) {
            g->in_stride = plan.self.strides[i];
            g->out_stride = vals ? plan.out.strides[i] : 0;
            g->idx_stride = idx ? plan.idx.strides[i] : 0;
            continue;
        }
        g->outer_dims[g->nouter] = self->dims[i];
        g->outer_in[g->nouter] = plan.self.strides[i];
        g->outer_out[g->nouter] = vals ? plan.out.strides[i] : 0;
        g->outer_idx[g->nouter] = idx ? plan.idx.strides[i] : 0;
        g->nouter++;
    }
    const uint64_t wsz = plan.sort ? pa_sort_workspace(g) : 0;
    size_t in_off[1] = {offsetof(scan_plan, self)};
    size_t out_off[2];
    int nout = 0;
    if (vals) out_off[nout++] = offsetof(scan_plan, out);
    if (idx) out_off[nout++] = offsetof(scan_plan, idx);
    return pa_op_executor(op, &plan, sizeof plan, in_off, 1, out_off, nout, wsz, ws, ex);
}

/* Prod (self, dtype, out); ProdDim (self, dim, keepDim, dtype, out); LogSumExp (self, dim, keepDim, out);
 * Var (self, dim, unbiased, keepdim, out); VarCorrection / Std (self, dim, correction, keepdim, out);
 * StdMeanCorrection / VarMean (self, dim, correction, keepdim, out, meanOut). */
static int plan_stat(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const int k = op->kernel;
    const aclTensor *self = a[0].p;
    const aclTensor *out = NULL, *mean = NULL;
    bool red[PA_MAX_DIMS];
    bool keep = false;
    int rc = ACLNN_SUCCESS;
    double correction = 0;
    aclDataType dtype = ACL_DT_UNDEFINED;
    if (k == PA_REDUCE_PROD) {
        dtype = (aclDataType)a[1].i, out = a[2].p;
        for (int32_t i = 0; i < self->ndim; i++) red[i] = true;
    } else if (k == PA_REDUCE_PROD_DIM) {
        int32_t d = 0;
        dtype = (aclDataType)a[3].i, out = a[4].p, keep = a[2].b;
        rc = wrap_dim(api, "dim", a[1].i, self->ndim, &d);
        for (int32_t i = 0; i < self->ndim; i++) red[i] = i == d;
    } else {
        const aclIntArray *dims = a[1].p;
        if (k == PA_REDUCE_LOGSUMEXP) keep = a[2].b, out = a[3].p;
        else {
            keep = a[3].b, out = a[4].p;
            correction = k == PA_REDUCE_VAR ? (a[2].b ? 1.0 : 0.0) : (double)a[2].i;
            if (k == PA_REDUCE_STD_MEAN || k == PA_REDUCE_VAR_MEAN) mean = a[5].p;
        }
        rc = dims_mask(api, "dim", self, dims, true, red);
    }
    if (rc) return rc;
    if (k == PA_REDUCE_PROD || k == PA_REDUCE_PROD_DIM) {
        rc = check_same_dtype(api, "out", out, dtype, "the dtype argument");
    } else if (k != PA_REDUCE_LOGSUMEXP) {
        rc = check_same_dtype(api, "out", out, self->dtype, "self's");
        if (rc == 0 && mean) rc = check_same_dtype(api, "meanOut", mean, self->dtype, "self's");
    }
    if (rc) return rc;
    int64_t od[PA_MAX_DIMS];
    const int32_t ond = reduced_shape(self, red, keep, od);
    rc = check_shape(api, "out", out, ond, od);
    if (rc == 0 && mean) rc = check_shape(api, "meanOut", mean, ond, od);
    if (rc) return rc;
    red_plan plan;
    red_init(&plan, self, out, mean);
    pa_red_args *g = &plan.args;
    fill_dims(g, self, red, keep, out, mean);
    if (k == PA_REDUCE_PROD || k == PA_REDUCE_PROD_DIM) {
        g->kind = PA_RED_PROD;
        g->via = dtype;
        g->int_acc = !pa_dt_is_float(dtype);
        plan.empty_fill = 1, plan.empty_value = 1;
    } else if (k == PA_REDUCE_LOGSUMEXP) {
        g->kind = PA_RED_LOGSUMEXP;
        plan.empty_fill = 1, plan.empty_value = -INFINITY;
    } else {
        g->kind = PA_RED_VAR;
        g->p = correction;
        g->want_values = k == PA_REDUCE_STD || k == PA_REDUCE_STD_MEAN;
        plan.empty_fill = 2, plan.empty_value = NAN; /* the var and the mean of nothing: NaN */
    }
    return make_red(op, &plan, ws, ex);
}

/* Dot (self, tensor, out): two 1-D tensors of one length and dtype, out 0-d. */
static int plan_dot(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *x = a[0].p, *y = a[1].p, *out = a[2].p;
    char s1[160], s2[160];
    if (x->ndim != 1 || y->ndim != 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self and tensor must be 1-D, got shapes %s and %s", api,
                       SHAPE(x, s1), SHAPE(y, s2));
    }
    if (x->dims[0] != y->dims[0]) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self shape %s and tensor shape %s must have one length", api,
                       SHAPE(x, s1), SHAPE(y, s2));
    }
    int rc = check_same_dtype(api, "tensor", y, x->dtype, "self's");
    if (rc == 0) rc = check_same_dtype(api, "out", out, x->dtype, "self's");
    if (rc == 0 && out->ndim != 0) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out must be 0-D, got shape %s", api, SHAPE(out, s1));
    }
    if (rc) return rc;
    red_plan plan;
    red_init(&plan, x, out, NULL);
    plan.self2 = pa_tview_of(y);
    pa_red_args *g = &plan.args;
    g->kind = PA_RED_DOT;
    g->int_acc = !pa_dt_is_float(x->dtype);
    g->nkeep = 0;
    g->nred = 1;
    g->red_dims[0] = x->dims[0];
    g->red_in[0] = plan.self.strides[0];
    g->red_in2[0] = plan.self2.strides[0];
    plan.empty_fill = 1, plan.empty_value = 0;
    size_t in_off[2] = {offsetof(red_plan, self), offsetof(red_plan, self2)};
    size_t out_off[1] = {offsetof(red_plan, out)};
    return pa_op_executor(op, &plan, sizeof plan, in_off, 2, out_off, 1, 0, ws, ex);
}

/* MseLoss / L1Loss (self, target, reduction, out): self and target broadcast; reduction 0 none,
 * 1 mean, 2 sum; out's dtype the promoted one. */
static int plan_loss(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *x = a[0].p, *y = a[1].p, *out = a[3].p;
    const int64_t reduction = a[2].i;
    char s1[160], s2[160];
    if (reduction < 0 || reduction > 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: reduction must be 0 (none), 1 (mean) or 2 (sum), got %lld", api,
                       (long long)reduction);
    }
    const aclDataType pt = pa_dt_promote(x->dtype, y->dtype);
    if (pt == ACL_DT_UNDEFINED) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self dtype %s and target dtype %s have no promoted dtype", api,
                       pa_dtype_name(x->dtype), pa_dtype_name(y->dtype));
    }
    if (reduction == 1 && !pa_dt_is_float(pt)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: reduction mean needs a floating self or target, got %s and %s",
                       api, pa_dtype_name(x->dtype), pa_dtype_name(y->dtype));
    }
    int rc = check_same_dtype(api, "out", out, pt, "the promoted dtype of self and target");
    if (rc) return rc;
    /* the broadcast shape */
    const int32_t nd = x->ndim > y->ndim ? x->ndim : y->ndim;
    int64_t bd[PA_MAX_DIMS];
    for (int32_t i = 0; i < nd; i++) {
        const int32_t ix = i - (nd - x->ndim), iy = i - (nd - y->ndim);
        const int64_t dx = ix >= 0 ? x->dims[ix] : 1, dy = iy >= 0 ? y->dims[iy] : 1;
        if (dx != dy && dx != 1 && dy != 1) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self shape %s and target shape %s do not broadcast", api,
                           SHAPE(x, s1), SHAPE(y, s2));
        }
        bd[i] = dx == 1 ? dy : dx;
    }
    if (reduction == 0) rc = check_shape(api, "out", out, nd, bd);
    else if (out->ndim != 0) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out must be 0-D for reduction %lld, got shape %s", api,
                     (long long)reduction, SHAPE(out, s1));
    }
    if (rc) return rc;
    red_plan plan;
    red_init(&plan, x, out, NULL);
    plan.self2 = pa_tview_of(y);
    pa_red_args *g = &plan.args;
    g->kind = PA_RED_LOSS;
    g->p = op->kernel == PA_REDUCE_MSE_LOSS ? 2 : 1;
    g->in2_dtype = y->dtype;
    g->int_acc = !pa_dt_is_float(pt);
    g->want_values = reduction == 1;
    const pa_tview ov = plan.out;
    for (int32_t i = 0; i < nd; i++) {
        const int32_t ix = i - (nd - x->ndim), iy = i - (nd - y->ndim);
        const int64_t sx = ix >= 0 && x->dims[ix] != 1 ? plan.self.strides[ix] : 0;
        const int64_t sy = iy >= 0 && y->dims[iy] != 1 ? plan.self2.strides[iy] : 0;
        if (reduction == 0) {
            g->keep_dims[g->nkeep] = bd[i];
            g->keep_in[g->nkeep] = sx;
            g->keep_in2[g->nkeep] = sy;
            g->keep_out[g->nkeep++] = out->ndim == nd ? ov.strides[i] : 0;
        } else {
            g->red_dims[g->nred] = bd[i];
            g->red_in[g->nred] = sx;
            g->red_in2[g->nred++] = sy;
        }
    }
    bool empty = false;
    for (int32_t i = 0; i < nd; i++) empty = empty || bd[i] == 0;
    plan.empty_fill = reduction != 0 && empty ? 1 : 0;
    plan.empty_value = reduction == 1 ? NAN : 0;
    size_t in_off[2] = {offsetof(red_plan, self), offsetof(red_plan, self2)};
    size_t out_off[1] = {offsetof(red_plan, out)};
    return pa_op_executor(op, &plan, sizeof plan, in_off, 2, out_off, 1, 0, ws, ex);
}

/* Glu (self, dim, out): out = a * sigmoid(b), a and b the halves of self along dim. */
static int plan_glu(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *x = a[0].p, *out = a[2].p;
    char s1[160];
    if (x->ndim == 0) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self must have at least 1 dim, got 0-D", api);
    int32_t d = 0;
    int rc = wrap_dim(api, "dim", a[1].i, x->ndim, &d);
    if (rc == 0 && x->dims[d] % 2 != 0) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self size %lld at dim %d must be even", api,
                     (long long)x->dims[d], (int)d);
    }
    if (rc == 0) rc = check_same_dtype(api, "out", out, x->dtype, "self's");
    if (rc) return rc;
    int64_t od[PA_MAX_DIMS];
    for (int32_t i = 0; i < x->ndim; i++) od[i] = i == d ? x->dims[i] / 2 : x->dims[i];
    if (out->ndim != x->ndim) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out must have self's %d dims, got shape %s", api, (int)x->ndim,
                       SHAPE(out, s1));
    }
    rc = check_shape(api, "out", out, x->ndim, od);
    if (rc) return rc;
    red_plan plan;
    red_init(&plan, x, out, NULL);
    pa_red_args *g = &plan.args;
    g->kind = PA_RED_GLU;
    for (int32_t i = 0; i < x->ndim; i++) {
        g->keep_dims[i] = od[i];
        g->keep_in[i] = plan.self.strides[i];
        g->keep_out[i] = plan.out.strides[i];
    }
    g->nkeep = x->ndim;
    g->nred = 0;
    g->red_in2[0] = od[d] * plan.self.strides[d];
    size_t in_off[1] = {offsetof(red_plan, self)};
    size_t out_off[1] = {offsetof(red_plan, out)};
    return pa_op_executor(op, &plan, sizeof plan, in_off, 1, out_off, 1, 0, ws, ex);
}

/* BinaryCrossEntropyWithLogits (self, target, weightOptional, posWeightOptional, reduction, out): target
 * the shape of self, weight / posWeight broadcast to it; out's dtype target's. */
static int plan_bce(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *x = a[0].p, *y = a[1].p, *w = a[2].p, *pw = a[3].p, *out = a[5].p;
    const int64_t reduction = a[4].i;
    char s1[160], s2[160];
    if (reduction < 0 || reduction > 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: reduction must be 0 (none), 1 (mean) or 2 (sum), got %lld", api,
                       (long long)reduction);
    }
    int rc = check_same_dtype(api, "out", out, y->dtype, "target's");
    if (rc == 0) rc = check_shape(api, "target", y, x->ndim, x->dims);
    if (rc) return rc;
    bool empty = pa_tensor_numel(x) == 0;
    const aclTensor *extra[2] = {w, pw};
    const char *names[2] = {"weightOptional", "posWeightOptional"};
    for (int k = 0; k < 2 && !empty; k++) {
        const aclTensor *t = extra[k];
        if (t == NULL) continue;
        bool ok = t->ndim <= x->ndim;
        for (int32_t i = 0; ok && i < t->ndim; i++) {
            const int64_t dt = t->dims[i], dx = x->dims[i + x->ndim - t->ndim];
            ok = dt == dx || dt == 1;
        }
        if (!ok) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s cannot be broadcast to the shape %s of target",
                           api, names[k], SHAPE(t, s1), SHAPE(y, s2));
        }
    }
    if (reduction == 0) rc = check_shape(api, "out", out, x->ndim, x->dims);
    else if (out->ndim != 0 && pa_tensor_numel(out) != 1) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out must hold one element for reduction %lld, got shape %s", api,
                     (long long)reduction, SHAPE(out, s1));
    }
    if (rc) return rc;
    red_plan plan;
    red_init(&plan, x, out, NULL);
    plan.self2 = pa_tview_of(y);
    plan.self3 = w ? pa_tview_of(w) : (pa_tview){.dtype = ACL_DT_UNDEFINED};
    plan.self4 = pw ? pa_tview_of(pw) : (pa_tview){.dtype = ACL_DT_UNDEFINED};
    pa_red_args *g = &plan.args;
    g->kind = PA_RED_BCE;
    g->in2_dtype = y->dtype;
    g->in3_dtype = w ? w->dtype : ACL_DT_UNDEFINED;
    g->in4_dtype = pw ? pw->dtype : ACL_DT_UNDEFINED;
    g->want_values = reduction == 1;
    const int32_t nd = x->ndim;
    for (int32_t i = 0; i < nd; i++) {
        int64_t s3 = 0, s4 = 0;
        const int32_t i3 = w ? i - (nd - w->ndim) : -1, i4 = pw ? i - (nd - pw->ndim) : -1;
        if (i3 >= 0 && w->dims[i3] != 1) s3 = plan.self3.strides[i3];
        if (i4 >= 0 && pw->dims[i4] != 1) s4 = plan.self4.strides[i4];
        if (reduction == 0) {
            g->keep_dims[g->nkeep] = x->dims[i];
            g->keep_in[g->nkeep] = plan.self.strides[i];
            g->keep_in2[g->nkeep] = plan.self2.strides[i];
            g->keep_in3[g->nkeep] = s3;
            g->keep_in4[g->nkeep] = s4;
            g->keep_out[g->nkeep++] = plan.out.strides[i];
        } else {
            g->red_dims[g->nred] = x->dims[i];
            g->red_in[g->nred] = plan.self.strides[i];
            g->red_in2[g->nred] = plan.self2.strides[i];
            g->red_in3[g->nred] = s3;
            g->red_in4[g->nred++] = s4;
        }
    }
    plan.empty_fill = reduction != 0 && empty ? 1 : 0;
    plan.empty_value = reduction == 1 ? NAN : 0;
    size_t in_off[4] = {offsetof(red_plan, self), offsetof(red_plan, self2)};
    int nin = 2;
    if (w) in_off[nin++] = offsetof(red_plan, self3);
    if (pw) in_off[nin++] = offsetof(red_plan, self4);
    size_t out_off[1] = {offsetof(red_plan, out)};
    return pa_op_executor(op, &plan, sizeof plan, in_off, nin, out_off, 1, 0, ws, ex);
}

int pa_plan_reduce(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    switch (op->kernel) {
    case PA_REDUCE_BCE_WITH_LOGITS: return plan_bce(op, a, ws, ex);
    case PA_REDUCE_GLU: return plan_glu(op, a, ws, ex);
    case PA_REDUCE_MSE_LOSS:
    case PA_REDUCE_L1_LOSS: return plan_loss(op, a, ws, ex);
    case PA_REDUCE_DOT: return plan_dot(op, a, ws, ex);
    case PA_REDUCE_PROD:
    case PA_REDUCE_PROD_DIM:
    case PA_REDUCE_LOGSUMEXP:
    case PA_REDUCE_VAR:
    case PA_REDUCE_VAR_CORRECTION:
    case PA_REDUCE_STD:
    case PA_REDUCE_STD_MEAN:
    case PA_REDUCE_VAR_MEAN: return plan_stat(op, a, ws, ex);
    case PA_REDUCE_MAX:
    case PA_REDUCE_MIN: return plan_all_extremum(op, a, ws, ex);
    case PA_REDUCE_MAX_DIM:
    case PA_REDUCE_MIN_DIM:
    case PA_REDUCE_ARGMAX:
    case PA_REDUCE_ARGMIN: return plan_dim_extremum(op, a, ws, ex);
    default: return plan_dims_reduction(op, a, ws, ex);
    }
}

int pa_run_reduce(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const red_plan *p = plan;
    pa_red_args g = p->args;
    bool empty = false;
    for (int32_t i = 0; i < p->self.ndim; i++) empty = empty || p->self.dims[i] == 0;
    g.in = pa_tview_ptr(&p->self);
    g.out = p->out.dtype != ACL_DT_UNDEFINED ? pa_tview_ptr(&p->out) : NULL;
    g.idx = p->idx.dtype != ACL_DT_UNDEFINED ? pa_tview_ptr(&p->idx) : NULL;
    if (g.kind == PA_RED_DOT || g.kind == PA_RED_LOSS || g.kind == PA_RED_BCE) g.in2 = pa_tview_ptr(&p->self2);
    if (g.kind == PA_RED_BCE) {
        g.in3 = p->self3.dtype != ACL_DT_UNDEFINED ? pa_tview_ptr(&p->self3) : NULL;
        g.in4 = p->self4.dtype != ACL_DT_UNDEFINED ? pa_tview_ptr(&p->self4) : NULL;
    }
    if (empty) {
        for (int w = 0; w < 2; w++) {
            /* every output element gets the empty reduction's value (empty_fill 2: the second output too) */
            const pa_tview *v = w == 0 ? &p->out : &p->idx;
            char *base = w == 0 ? g.out : g.idx;
            if (p->empty_fill <= w || base == NULL) continue;
            int64_t nout = 1;
            for (int32_t i = 0; i < v->ndim; i++) nout *= v->dims[i];
            const size_t es = pa_cvt_size(v->dtype);
            for (int64_t o = 0; o < nout; o++) {
                int64_t off = 0, r = o;
                for (int32_t i = v->ndim - 1; i >= 0; i--) {
                    off += (r % v->dims[i]) * v->strides[i];
                    r /= v->dims[i];
                }
                pa_cvt_store_f(base + off * (int64_t)es, v->dtype, p->empty_value);
            }
        }
        return ACLNN_SUCCESS;
    }
    pa_red_run(&g);
    return ACLNN_SUCCESS;
}

int pa_run_scan(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace_size);
    const scan_plan *p = plan;
    pa_scan_args g = p->args;
    g.in = pa_tview_ptr(&p->self);
    g.out = p->out.dtype != ACL_DT_UNDEFINED ? pa_tview_ptr(&p->out) : NULL;
    g.idx = p->idx.dtype != ACL_DT_UNDEFINED ? pa_tview_ptr(&p->idx) : NULL;
    g.ws = workspace;
    if (p->sort) pa_sort_run(&g);
    else pa_cumsum_run(&g);
    return ACLNN_SUCCESS;
}
