/* The foreach family's planner and run function (family "foreach" in the op
 * table). A list operator applies one map-engine element function to each
 * list element (kernels/map/map.h), with the lists' tensors as its inputs and
 * the op's scalar (an aclScalar, an aclScalarList element, or a device tensor
 * read at launch) as a constant input or as the parameter p0.
 *
 * The checks follow the vendor's op_api (ops-nn foreach/): every list as long
 * as the first, every tensor of every list of the first tensor's dtype, the
 * scalar's dtype allowed for that dtype, and each element's shape the first
 * list's. Size and shape errors of the operators CANN generates from their
 * definition are 561002 (its tiling error), of the hand-written ones 161002.
 *
 * List tensors are not executor views (CANN sets their addresses with the
 * dynamic-tensor API pyaclnn does not have): the run function checks their
 * addresses at launch, as the executor does for the others, before writing. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/foreach/foreach.h"
#include "kernels/map/map.h"
#include "kernels/map/map_cvt.h"
#include "kernels/reduce/reduce.h"
#include "ops/foreach/pa_foreach.h"
#include "runtime/pa_memory.h"
#include "runtime/pa_stream.h"

#define FE_MAX_LIST 256 /* tensors per list (a pyaclnn limit; CANN's is 50 to 256 by operator) */
#define FE_MAX_LISTS 4  /* a, b, c, out */
#define ERR_TILING 561002 /* ACLNN_ERR_INNER_TILING_ERROR */

/* What a list operator is. */
enum { S_NONE, S_A, S_B, S_C, S_P0 };           /* where the scalar goes */
enum { R_NONE, R_ARITH, R_FLOAT, R_ANY };      /* the scalar's dtype rule */
enum { SP_MAP, SP_NORM, SP_NONFINITE, SP_ADAMW, SP_AMP };

typedef struct fe_desc {
    int16_t mk;   /* map kernel (SP_MAP) */
    uint8_t special, slot, rule;
    bool gen;     /* CANN generates it: size / shape errors are 561002 */
    bool per_elem; /* a device tensor of one scalar per list element */
} fe_desc;

#define MAP(k, s, r, g) {PA_K_##k, SP_MAP, s, r, g, false}
#define MAPE(k, s, r, g) {PA_K_##k, SP_MAP, s, r, g, true}
static const fe_desc k_desc[PA_FOREACH_COUNT] = {
    [PA_FOREACH_ABS] = MAP(ABS, S_NONE, R_NONE, true),
    [PA_FOREACH_NEG] = MAP(NEG, S_NONE, R_NONE, true),
    [PA_FOREACH_EXP] = MAP(EXP, S_NONE, R_NONE, true),
    [PA_FOREACH_EXPM1] = MAP(EXPM1, S_NONE, R_NONE, true),
    [PA_FOREACH_LOG] = MAP(LOG, S_NONE, R_NONE, true),
    [PA_FOREACH_LOG2] = MAP(LOG2, S_NONE, R_NONE, true),
    [PA_FOREACH_LOG10] = MAP(LOG10, S_NONE, R_NONE, true),
    [PA_FOREACH_LOG1P] = MAP(LOG1P, S_NONE, R_NONE, true),
    [PA_FOREACH_SIN] = MAP(SIN, S_NONE, R_NONE, true),
    [PA_FOREACH_COS] = MAP(COS, S_NONE, R_NONE, true),
    [PA_FOREACH_TAN] = MAP(TAN, S_NONE, R_NONE, true),
    [PA_FOREACH_TANH] = MAP(TANH, S_NONE, R_NONE, true),
    [PA_FOREACH_ERF] = MAP(ERF, S_NONE, R_NONE, true),
    [PA_FOREACH_SIGMOID] = MAP(SIGMOID, S_NONE, R_NONE, true),
    [PA_FOREACH_SIGN] = MAP(SIGN, S_NONE, R_NONE, true),
    [PA_FOREACH_RECIPROCAL] = MAP(RECIP, S_NONE, R_NONE, true),
    [PA_FOREACH_SQRT] = MAP(SQRT, S_NONE, R_NONE, false),
    [PA_FOREACH_COPY] = MAP(COPY, S_NONE, R_NONE, false),
    [PA_FOREACH_ZERO_INPLACE] = MAP(FILL, S_NONE, R_NONE, true),
    [PA_FOREACH_ADD_SCALAR] = MAP(ADD, S_B, R_ANY, true),
    [PA_FOREACH_ADD_SCALAR_V2] = MAP(ADD, S_B, R_ARITH, false),
    [PA_FOREACH_ADD_SCALAR_LIST] = MAP(ADD, S_B, R_ANY, true),
    [PA_FOREACH_SUB_SCALAR] = MAP(SUB, S_B, R_ANY, true),
    [PA_FOREACH_SUB_SCALAR_V2] = MAP(SUB, S_B, R_ARITH, false),
    [PA_FOREACH_SUB_SCALAR_LIST] = MAP(SUB, S_B, R_ANY, true),
    [PA_FOREACH_MUL_SCALAR] = MAP(MUL, S_B, R_ANY, true),
    [PA_FOREACH_MUL_SCALAR_V2] = MAP(MUL, S_B, R_ARITH, false),
    [PA_FOREACH_MUL_SCALAR_LIST] = MAP(MUL, S_B, R_ANY, true),
    [PA_FOREACH_DIV_SCALAR] = MAP(DIV, S_B, R_ANY, false),
    [PA_FOREACH_DIV_SCALAR_V2] = MAP(DIV, S_B, R_ARITH, false),
    [PA_FOREACH_DIV_SCALAR_LIST] = MAP(DIV, S_B, R_ANY, true),
    [PA_FOREACH_MAXIMUM_SCALAR] = MAP(MAXIMUM, S_B, R_ANY, true),
    [PA_FOREACH_MAXIMUM_SCALAR_V2] = MAP(MAXIMUM, S_B, R_ARITH, false),
    [PA_FOREACH_MAXIMUM_SCALAR_LIST] = MAP(MAXIMUM, S_B, R_ANY, true),
    [PA_FOREACH_MINIMUM_SCALAR] = MAP(MINIMUM, S_B, R_ANY, true),
    [PA_FOREACH_MINIMUM_SCALAR_V2] = MAP(MINIMUM, S_B, R_ARITH, false),
    [PA_FOREACH_MINIMUM_SCALAR_LIST] = MAP(MINIMUM, S_B, R_ANY, true),
    [PA_FOREACH_POW_SCALAR] = MAP(POW, S_B, R_ANY, true),
    [PA_FOREACH_POW_SCALAR_V2] = MAP(POW, S_B, R_ARITH, false),
    [PA_FOREACH_POW_SCALAR_LIST] = MAP(POW, S_B, R_ANY, true),
    [PA_FOREACH_MUL_LIST] = MAP(MUL, S_NONE, R_NONE, false),
    [PA_FOREACH_DIV_LIST] = MAP(DIV, S_NONE, R_NONE, false),
    [PA_FOREACH_MAXIMUM_LIST] = MAP(MAXIMUM, S_NONE, R_NONE, true),
    [PA_FOREACH_MINIMUM_LIST] = MAP(MINIMUM, S_NONE, R_NONE, true),
    [PA_FOREACH_POW_LIST] = MAP(POW, S_NONE, R_NONE, true),
    [PA_FOREACH_ADD_LIST] = MAP(ADD, S_P0, R_ANY, false),
    [PA_FOREACH_ADD_LIST_V2] = MAP(ADD, S_P0, R_ARITH, false),
    [PA_FOREACH_SUB_LIST] = MAP(SUB, S_P0, R_ANY, true),
    [PA_FOREACH_SUB_LIST_V2] = MAP(SUB, S_P0, R_ARITH, false),
    [PA_FOREACH_ADDCMUL_SCALAR] = MAP(ADDCMUL, S_P0, R_ANY, true),
    [PA_FOREACH_ADDCMUL_SCALAR_LIST] = MAPE(ADDCMUL, S_P0, R_ANY, true),
    [PA_FOREACH_ADDCMUL_LIST] = MAPE(ADDCMUL, S_P0, R_ANY, true),
    [PA_FOREACH_ADDCMUL_SCALAR_V2] = MAP(ADDCMUL, S_P0, R_ARITH, false),
    [PA_FOREACH_ADDCDIV_SCALAR] = MAP(ADDCDIV, S_P0, R_ANY, false),
    [PA_FOREACH_ADDCDIV_SCALAR_LIST] = MAPE(ADDCDIV, S_P0, R_ANY, false),
    [PA_FOREACH_ADDCDIV_LIST] = MAPE(ADDCDIV, S_P0, R_ANY, true),
    [PA_FOREACH_ADDCDIV_SCALAR_V2] = MAP(ADDCDIV, S_P0, R_ARITH, false),
    [PA_FOREACH_LERP_SCALAR] = MAP(LERP, S_C, R_FLOAT, false),
    [PA_FOREACH_LERP_LIST] = MAP(LERP, S_NONE, R_NONE, false),
    [PA_FOREACH_NORM] = {0, SP_NORM, S_NONE, R_NONE, true, false},
    [PA_FOREACH_NON_FINITE_CHECK_AND_UNSCALE] = {0, SP_NONFINITE, S_NONE, R_NONE, true, false},
    [PA_FOREACH_APPLY_ADAM_W_V2] = {0, SP_ADAMW, S_NONE, R_NONE, false, false},
    [PA_FOREACH_AMP_UPDATE_SCALE] = {0, SP_AMP, S_NONE, R_NONE, true, false},
};

/* One list element: its tensors (lists a, b, c, then out; dtype UNDEFINED when absent). */
typedef struct fe_entry {
    pa_tview v[FE_MAX_LISTS];
    double s;   /* a host scalar of this element (aclScalar or aclScalarList) */
    int64_t si;
} fe_entry;

enum { ST_NONE, ST_HOST, ST_TENSOR }; /* where the scalar comes from */

typedef struct fe_plan {
    int32_t kernel, special;
    const char *api;
    int32_t n;                            /* list elements */
    int8_t nlist;                         /* input lists */
    bool inplace_out;                     /* the last input list is also the output (no out list) */
    const char *names[FE_MAX_LISTS];      /* the lists' parameter names */
    aclDataType dt;                       /* the lists' dtype */
    /* map */
    int16_t mk;
    int8_t slot, scalar_from;
    bool per_elem;
    bool scalar_f32; /* the constant stays fp32 (bf16 lists; the unscale factor) */
    int32_t dom;
    aclDataType compute; /* the domain's dtype the kernel rounds to */
    /* non-list tensors (executor views, API order) */
    int8_t nt;
    pa_tview t[8];
    int8_t t_scalar, t_found, t_inv;       /* indices into t, or -1 */
    /* ApplyAdamWV2 */
    int8_t t_var, t_m, t_v, t_max, t_grad, t_step;
    float lr, beta1, beta2, wd, eps;
    bool maximize;
    /* AmpUpdateScale */
    int8_t t_scale, t_tracker, t_ufound, t_uscale, t_utracker;
    float growth, backoff;
    int32_t interval;
    double p; /* norm */
    fe_entry e[];
} fe_plan;

/* ---- checks --------------------------------------------------------------------- */

typedef struct call {
    const pa_op *op;
    const pa_arg *a;
    const char *api;
    const fe_desc *d;
} call;

static int size_code(const call *c) { return c->d->gen ? ERR_TILING : ACLNN_ERR_PARAM_INVALID; }

static bool same_shape(const aclTensor *x, const aclTensor *y) {
    if (x->ndim != y->ndim) return false;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (x->dims[d] != y->dims[d]) return false;
    }
    return true;
}

static int fail_shape(const call *c, int code, const char *xn, uint64_t i, const aclTensor *x, const char *yn,
                      const aclTensor *y) {
    char s1[160], s2[160];
    return pa_fail(code, "%s: %s[%llu] shape %s must equal %s[%llu] shape %s", c->api, yn, (unsigned long long)i,
                   pa_shape_str(y->dims, y->ndim, s1, sizeof s1), xn, (unsigned long long)i,
                   pa_shape_str(x->dims, x->ndim, s2, sizeof s2));
}

static bool dtype_in(aclDataType dt, const aclDataType *list, int n) {
    for (int i = 0; i < n; i++) {
        if (list[i] == dt) return true;
    }
    return false;
}

/* The scalar's dtype against the lists' (the V2 operators' rule). */
static int check_scalar_dtype(const call *c, const char *name, aclDataType sdt, aclDataType dt) {
    static const aclDataType f32[] = {ACL_FLOAT, ACL_DOUBLE}, f16[] = {ACL_FLOAT16, ACL_DOUBLE},
                             ints[] = {ACL_INT32, ACL_INT64};
    const aclDataType *ok;
    const char *want;
    switch (c->d->rule) {
    case R_ARITH:
        if (dt == ACL_FLOAT || dt == ACL_BF16) ok = f32, want = "FLOAT or DOUBLE";
        else if (dt == ACL_FLOAT16) ok = f16, want = "FLOAT16 or DOUBLE";
        else ok = ints, want = "INT32 or INT64";
        break;
    case R_FLOAT: ok = f32, want = "FLOAT or DOUBLE"; break;
    default: return ACLNN_SUCCESS;
    }
    if (dtype_in(sdt, ok, 2)) return ACLNN_SUCCESS;
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must be %s for %s lists, got %s", c->api, name, want,
                   pa_dtype_name(dt), pa_dtype_name(sdt));
}

/* A value rounded to dtype dt (fp16 stays fp16; bf16 and fp32 lists take the scalar in fp32, as CANN). */
static double scalar_value(double v, aclDataType dt) {
    if (dt == ACL_FLOAT16) {
        char tmp[8] = {0};
        pa_cvt_store_f(tmp, dt, v);
        return pa_cvt_load_f(tmp, dt);
    }
    if (dt == ACL_FLOAT || dt == ACL_BF16) return (double)(float)v;
    return v;
}

static void set_entry_scalar(fe_entry *e, const aclScalar *s, aclDataType dt) {
    e->s = scalar_value(pa_scalar_f(s), dt);
    e->si = pa_scalar_is_float(s) ? pa_cvt_f_to_i(pa_scalar_f(s), -0x1p63, 0x1p63 - 1024.0) : pa_scalar_i(s);
}

/* Non-list tensor parameters: views in API order, and the executor's view lists. */
static int collect_tensors(const call *c, fe_plan *p, size_t *in_off, int *n_in, size_t *out_off, int *n_out) {
    *n_in = *n_out = 0;
    p->nt = 0;
    for (int i = 0; i < c->op->nparams; i++) {
        const pa_param *q = &c->op->params[i];
        if (q->kind != PA_P_TENSOR) continue;
        const aclTensor *t = c->a[i].p;
        const int k = p->nt++;
        const size_t off = offsetof(fe_plan, t) + (size_t)k * sizeof(pa_tview);
        if (t != NULL) {
            p->t[k] = pa_tview_of(t);
        } else {
            memset(&p->t[k], 0, sizeof p->t[k]);
            p->t[k].dtype = ACL_DT_UNDEFINED;
        }
        if (q->io == PA_IN || q->io == PA_INOUT) in_off[(*n_in)++] = t ? off : SIZE_MAX;
        if (q->io == PA_OUT || q->io == PA_INOUT) out_off[(*n_out)++] = t ? off : SIZE_MAX;
    }
    return ACLNN_SUCCESS;
}

static int8_t tensor_index(const call *c, const char *name) {
    int8_t k = 0;
    for (int i = 0; i < c->op->nparams; i++) {
        if (c->op->params[i].kind != PA_P_TENSOR) continue;
        if (strcmp(c->op->params[i].name, name) == 0) return c->a[i].p ? k : -1;
        k++;
    }
    return -1;
}

static const aclTensor *tensor_arg(const call *c, const char *name) {
    const int i = pa_op_param(c->op, name);
    return i >= 0 ? c->a[i].p : NULL;
}

static int make_executor(const call *c, fe_plan *p, size_t size, uint64_t *workspaceSize,
                         aclOpExecutor **executor) {
    size_t in_off[8], out_off[8];
    int n_in, n_out;
    collect_tensors(c, p, in_off, &n_in, out_off, &n_out);
    return pa_op_executor(c->op, p, size, in_off, n_in, out_off, n_out, 0, workspaceSize, executor);
}

/* ---- list operators -------------------------------------------------------------- */

static int plan_lists(const call *c, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const pa_op *op = c->op;
    const aclTensorList *lists[FE_MAX_LISTS] = {NULL};
    const char *names[FE_MAX_LISTS] = {NULL};
    int nl = 0, out_at = -1;
    const aclScalar *scalar = NULL;
    const aclScalarList *slist = NULL;
    const char *sname = NULL;
    for (int i = 0; i < op->nparams; i++) {
        const pa_param *q = &op->params[i];
        if (q->kind == PA_P_TENSOR_LIST && nl < FE_MAX_LISTS) {
            if (q->io == PA_OUT) out_at = nl;
            lists[nl] = c->a[i].p;
            names[nl++] = q->name;
        } else if (q->kind == PA_P_SCALAR) {
            scalar = c->a[i].p, sname = q->name;
        } else if (q->kind == PA_P_SCALAR_LIST) {
            slist = c->a[i].p, sname = q->name;
        }
    }
    const int nin = out_at >= 0 ? nl - 1 : nl; /* out is the last list when there is one */
    const uint64_t n = lists[0]->size;
    for (int k = 1; k < nl; k++) {
        if (lists[k]->size != n) {
            return pa_fail(size_code(c), "%s: %s holds %llu tensors and %s %llu; the lists must be as long", c->api,
                           names[0], (unsigned long long)n, names[k], (unsigned long long)lists[k]->size);
        }
    }
    if (slist != NULL && slist->size != n) {
        return pa_fail(size_code(c), "%s: %s holds %llu scalars for %llu tensors", c->api, sname,
                       (unsigned long long)slist->size, (unsigned long long)n);
    }
    if (n > FE_MAX_LIST) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: pyaclnn runs lists of at most %d tensors, %s holds %llu", c->api,
                       FE_MAX_LIST, names[0], (unsigned long long)n);
    }
    const size_t size = offsetof(fe_plan, e) + (size_t)n * sizeof(fe_entry);
    fe_plan *p = calloc(1, size);
    if (p == NULL) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, c->api, "the plan");
    p->kernel = op->kernel;
    p->special = c->d->special;
    p->api = op->launch.name;
    p->n = (int32_t)n;
    p->nlist = (int8_t)nin;
    p->inplace_out = out_at < 0;
    p->t_scalar = p->t_found = p->t_inv = -1;
    for (int k = 0; k < nl; k++) p->names[k] = names[k];
    int rc = ACLNN_SUCCESS;
    if (n == 0) goto done; /* nothing to do (CANN: the same) */
    /* dtypes: every tensor of every list of the first tensor's dtype */
    const aclDataType dt = lists[0]->tensors[0]->dtype;
    p->dt = dt;
    for (int k = 0; k < nl && rc == 0; k++) {
        for (uint64_t i = 0; i < n; i++) {
            const aclDataType t = lists[k]->tensors[i]->dtype;
            if (t != dt) {
                rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s[%llu] dtype %s must be %s[0]'s, %s", c->api, names[k],
                             (unsigned long long)i, pa_dtype_name(t), names[0], pa_dtype_name(dt));
                break;
            }
        }
    }
    if (rc) goto done;
    if (scalar != NULL) rc = check_scalar_dtype(c, sname, scalar->dtype, dt);
    for (uint64_t i = 0; rc == 0 && slist != NULL && i < n; i++) {
        if (slist->scalars[i] == NULL) {
            rc = pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s[%llu] is NULL", c->api, sname, (unsigned long long)i);
        } else {
            rc = pa_handle_check(c->api, sname, slist->scalars[i], PA_HANDLE_SCALAR);
            if (rc == 0) rc = check_scalar_dtype(c, sname, slist->scalars[i]->dtype, dt);
        }
    }
    if (rc) goto done;
    /* shapes: element i of every list has the shape of the first list's */
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        const aclTensor *x = lists[0]->tensors[i];
        for (int k = 1; k < nl && rc == 0; k++) {
            const aclTensor *y = lists[k]->tensors[i];
            if (p->special == SP_NORM && k == out_at) {
                if (pa_tensor_numel(y) != 1) {
                    char s1[160];
                    rc = pa_fail(size_code(c), "%s: %s[%llu] must hold one element, got shape %s", c->api, names[k],
                                 (unsigned long long)i, pa_shape_str(y->dims, y->ndim, s1, sizeof s1));
                }
            } else if (!same_shape(x, y)) {
                rc = fail_shape(c, size_code(c), names[0], i, x, names[k], y);
            }
        }
    }
    if (rc) goto done;
    /* the device tensors holding the scalar(s) */
    int8_t ts = -1;
    const char *tname = NULL;
    for (int i = 0; i < op->nparams; i++) {
        const pa_param *q = &op->params[i];
        if (q->kind == PA_P_TENSOR && p->special == SP_MAP) {
            ts = tensor_index(c, q->name);
            tname = q->name;
        }
    }
    if (ts >= 0) {
        const aclTensor *t = tensor_arg(c, tname);
        const int64_t want = c->d->per_elem ? (int64_t)n : 1;
        if (pa_tensor_numel(t) != want) {
            char s1[160];
            char what[64] = "one element";
            if (want != 1) snprintf(what, sizeof what, "%lld elements (one per list element)", (long long)want);
            rc = pa_fail(size_code(c), "%s: %s must hold %s, got shape %s", c->api, tname, what,
                         pa_shape_str(t->dims, t->ndim, s1, sizeof s1));
            goto done;
        }
        p->t_scalar = ts;
        p->scalar_from = ST_TENSOR;
    } else if (scalar != NULL || slist != NULL) {
        p->scalar_from = ST_HOST;
    }
    p->per_elem = c->d->per_elem;
    /* entries */
    for (uint64_t i = 0; i < n; i++) {
        fe_entry *e = &p->e[i];
        for (int k = 0; k < FE_MAX_LISTS; k++) {
            if (k < nl) {
                e->v[k] = pa_tview_of(lists[k]->tensors[i]);
            } else {
                memset(&e->v[k], 0, sizeof e->v[k]);
                e->v[k].dtype = ACL_DT_UNDEFINED;
            }
        }
        if (scalar != NULL) set_entry_scalar(e, scalar, dt);
        if (slist != NULL) set_entry_scalar(e, slist->scalars[i], dt);
    }
    if (p->special == SP_MAP) {
        p->mk = c->d->mk;
        p->slot = (int8_t)c->d->slot;
        pa_map_dom dom = pa_map_dom_of(dt);
        p->compute = dt;
        if (!pa_map_has_kernel(p->mk, dom) && pa_map_has_kernel(p->mk, PA_DOM_F32)) {
            dom = PA_DOM_F32; /* an integer list through a float function: fp32, then converted */
            p->compute = ACL_FLOAT;
        }
        if (!pa_map_has_kernel(p->mk, dom)) {
            rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: no kernel for %s lists", c->api, pa_dtype_name(dt));
            goto done;
        }
        p->dom = dom;
        p->scalar_f32 = dt == ACL_BF16 || (p->compute == ACL_FLOAT && dt != ACL_FLOAT);
    } else if (p->special == SP_NORM) {
        p->p = pa_scalar_f(scalar);
    } else if (p->special == SP_NONFINITE) {
        const aclTensor *found = tensor_arg(c, "foundInf"), *inv = tensor_arg(c, "invScale");
        if (pa_tensor_numel(found) != 1 || pa_tensor_numel(inv) != 1) {
            rc = pa_fail(ERR_TILING, "%s: foundInf and invScale must hold one element each", c->api);
            goto done;
        }
        p->t_found = tensor_index(c, "foundInf");
        p->t_inv = tensor_index(c, "invScale");
    }
done:
    if (rc == ACLNN_SUCCESS) {
        /* an empty list writes nothing; its plan holds no entries */
        rc = make_executor(c, p, size, workspaceSize, executor);
    }
    free(p);
    return rc;
}

/* ---- ApplyAdamWV2, AmpUpdateScale ------------------------------------------------- */

static int check_same(const call *c, const char *xn, const aclTensor *x, const char *yn, const aclTensor *y,
                      bool dtype) {
    if (!same_shape(x, y)) {
        char s1[160], s2[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s must equal %s shape %s", c->api, yn,
                       pa_shape_str(y->dims, y->ndim, s1, sizeof s1), xn, pa_shape_str(x->dims, x->ndim, s2, sizeof s2));
    }
    if (dtype && x->dtype != y->dtype) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must equal %s dtype %s", c->api, yn,
                       pa_dtype_name(y->dtype), xn, pa_dtype_name(x->dtype));
    }
    return ACLNN_SUCCESS;
}

static int plan_adamw(const call *c, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const aclTensor *var = tensor_arg(c, "varRef"), *m = tensor_arg(c, "mRef"), *v = tensor_arg(c, "vRef"),
                    *mx = tensor_arg(c, "maxGradNormOptionalRef"), *g = tensor_arg(c, "grad"),
                    *step = tensor_arg(c, "step");
    const bool ams = c->a[pa_op_param(c->op, "amsgrad")].b;
    if (ams && mx == NULL) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: maxGradNormOptionalRef is NULL but amsgrad is true", c->api);
    }
    int rc = check_same(c, "varRef", var, "mRef", m, false);
    if (rc == 0) rc = check_same(c, "varRef", var, "vRef", v, false);
    if (rc == 0 && mx != NULL) rc = check_same(c, "varRef", var, "maxGradNormOptionalRef", mx, false);
    if (rc == 0) rc = check_same(c, "varRef", var, "grad", g, false);
    if (rc) return rc;
    if (pa_tensor_numel(step) != 1) {
        char s1[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: step must hold one element, got shape %s", c->api,
                       pa_shape_str(step->dims, step->ndim, s1, sizeof s1));
    }
    /* mixed dtypes: only fp32 var / m / v with 16-bit grad (and maxGradNorm of grad's dtype) run as they
     * are; any other mix computes in fp32 (CANN casts), which is what the kernel does anyway */
    fe_plan p;
    memset(&p, 0, sizeof p);
    p.kernel = c->op->kernel;
    p.special = SP_ADAMW;
    p.api = c->op->launch.name;
    p.t_var = tensor_index(c, "varRef");
    p.t_m = tensor_index(c, "mRef");
    p.t_v = tensor_index(c, "vRef");
    p.t_max = ams ? tensor_index(c, "maxGradNormOptionalRef") : -1;
    p.t_grad = tensor_index(c, "grad");
    p.t_step = tensor_index(c, "step");
    p.t_scalar = p.t_found = p.t_inv = -1;
    p.lr = (float)c->a[pa_op_param(c->op, "lr")].f;
    p.beta1 = (float)c->a[pa_op_param(c->op, "beta1")].f;
    p.beta2 = (float)c->a[pa_op_param(c->op, "beta2")].f;
    p.wd = (float)c->a[pa_op_param(c->op, "weightDecay")].f;
    p.eps = (float)c->a[pa_op_param(c->op, "eps")].f;
    p.maximize = c->a[pa_op_param(c->op, "maximize")].b;
    p.n = pa_tensor_numel(var) == 0 ? 0 : 1;
    return make_executor(c, &p, sizeof p, workspaceSize, executor);
}

static int plan_amp(const call *c, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *names[5] = {"currentScale", "growthTracker", "foundInf", "updatedScale", "updatedGrowthTracker"};
    const aclTensor *t[5];
    for (int k = 0; k < 5; k++) t[k] = tensor_arg(c, names[k]);
    if (t[2]->dtype != t[0]->dtype || t[3]->dtype != t[0]->dtype) {
        const int k = t[2]->dtype != t[0]->dtype ? 2 : 3;
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must equal currentScale dtype %s", c->api, names[k],
                       pa_dtype_name(t[k]->dtype), pa_dtype_name(t[0]->dtype));
    }
    /* CANN's documentation says shape [1]; torch's GradScaler passes 0-d tensors, which the NPU takes */
    for (int k = 0; k < 5; k++) {
        if (pa_tensor_numel(t[k]) != 1) {
            char s1[160];
            return pa_fail(ERR_TILING, "%s: %s must hold one element, got shape %s", c->api, names[k],
                           pa_shape_str(t[k]->dims, t[k]->ndim, s1, sizeof s1));
        }
    }
    const int64_t interval = c->a[pa_op_param(c->op, "growthInterval")].i;
    if (interval < 1 || interval > INT32_MAX) {
        return pa_fail(ERR_TILING, "%s: growthInterval must be in [1, 2147483647], got %lld", c->api,
                       (long long)interval);
    }
    fe_plan p;
    memset(&p, 0, sizeof p);
    p.kernel = c->op->kernel;
    p.special = SP_AMP;
    p.api = c->op->launch.name;
    p.t_scalar = p.t_found = p.t_inv = -1;
    p.t_scale = tensor_index(c, names[0]);
    p.t_tracker = tensor_index(c, names[1]);
    p.t_ufound = tensor_index(c, names[2]);
    p.t_uscale = tensor_index(c, names[3]);
    p.t_utracker = tensor_index(c, names[4]);
    p.growth = (float)c->a[pa_op_param(c->op, "growthFactor")].f;
    p.backoff = (float)c->a[pa_op_param(c->op, "backoffFactor")].f;
    p.interval = (int32_t)interval;
    p.n = 1;
    return make_executor(c, &p, sizeof p, workspaceSize, executor);
}

int pa_plan_foreach(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    if (op->kernel <= PA_FOREACH_NONE || op->kernel >= PA_FOREACH_COUNT) {
        return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: internal error: %s is not a foreach-family operator",
                       op->ws_api, op->launch.name);
    }
    call c = {op, a, op->ws_api, &k_desc[op->kernel]};
    switch (c.d->special) {
    case SP_ADAMW: return plan_adamw(&c, workspaceSize, executor);
    case SP_AMP: return plan_amp(&c, workspaceSize, executor);
    default: return plan_lists(&c, workspaceSize, executor);
    }
}

/* ---- run ------------------------------------------------------------------------- */

static inline char *vptr(const pa_tview *v) { return (char *)pa_tview_ptr(v); }

static double load_f(const pa_tview *v, int64_t i) {
    /* element i of a 1-element or n-element view, in row-major order */
    int64_t off = 0;
    for (int32_t d = v->ndim - 1; d >= 0; d--) {
        const int64_t n = v->dims[d];
        off += (n > 0 ? i % n : 0) * v->strides[d];
        i = n > 0 ? i / n : 0;
    }
    return pa_cvt_load_f(vptr(v) + off * (int64_t)pa_dtype_size(v->dtype), v->dtype);
}

static bool view_empty(const pa_tview *v) {
    for (int32_t d = 0; d < v->ndim; d++) {
        if (v->dims[d] == 0) return true;
    }
    return false;
}

/* The executor's launch checks, for the list tensors. */
static int check_list_addresses(const fe_plan *p) {
    const int device = pa_stream_task_device();
    const int nl = p->nlist + (p->inplace_out ? 0 : 1);
    for (int32_t i = 0; i < p->n; i++) {
        for (int k = 0; k < nl; k++) {
            const pa_tview *v = &p->e[i].v[k];
            if (view_empty(v)) continue;
            char what[128];
            snprintf(what, sizeof what, "%s[%d]", p->names[k], (int)i);
            if (v->base == NULL) {
                return pa_fail(ACLNN_ERR_RUNTIME_ERROR,
                               "%s: %s has no device address (its data pointer is NULL)", p->api, what);
            }
            snprintf(what + strlen(what), sizeof what - strlen(what), " storage");
            const uint64_t bytes = (uint64_t)v->storage_elems * pa_dtype_size(v->dtype);
            const int rc = pa_mem_check_access(p->api, what, v->base, bytes, device);
            if (rc != 0) return rc;
        }
    }
    return ACLNN_SUCCESS;
}

static void set_operand(pa_map_operand *o, const pa_tview *v, int32_t nd) {
    memset(o, 0, sizeof *o);
    o->ptr = vptr(v);
    o->dtype = v->dtype;
    o->via = ACL_DT_UNDEFINED;
    for (int32_t d = 0; d < nd; d++) o->strides[d] = v->strides[d];
}

static void run_map_entry(const fe_plan *p, const fe_entry *e, double s, int64_t si) {
    const pa_tview *out = &e->v[p->inplace_out ? p->nlist - 1 : p->nlist];
    if (view_empty(out)) return;
    pa_map_args g;
    memset(&g, 0, sizeof g);
    g.kernel = p->mk;
    g.dom = p->dom;
    g.nin = pa_map_kernel_nin(p->mk);
    g.res = p->compute;
    g.ndim = out->ndim;
    for (int32_t d = 0; d < out->ndim; d++) g.dims[d] = out->dims[d];
    if (g.ndim == 0) { /* a 0-d tensor: one element */
        g.ndim = 1;
        g.dims[0] = 1;
    }
    set_operand(&g.out, out, out->ndim);
    int li = 0;
    for (int j = 0; j < g.nin; j++) {
        pa_map_operand *o = &g.in[j];
        const bool scalar_here = (p->slot == S_A && j == 0) || (p->slot == S_B && j == 1) || (p->slot == S_C && j == 2);
        if (scalar_here) {
            memset(o, 0, sizeof *o);
            o->is_const = true;
            o->dtype = p->compute;
            /* an fp32 constant in a 16-bit list: keep it off the fused 16-bit path */
            o->via = p->scalar_f32 ? ACL_FLOAT : ACL_DT_UNDEFINED;
            o->value_d = s;
            o->value_i = si;
        } else {
            set_operand(o, &e->v[li++], out->ndim);
            if (p->compute != p->dt) o->via = p->compute;
        }
    }
    if (p->slot == S_P0) {
        g.p[0] = s;
        g.pi[0] = si;
    } else if (p->mk == PA_K_ADD || p->mk == PA_K_SUB) {
        g.p[0] = 1;
        g.pi[0] = 1;
    }
    pa_map_simplify(&g);
    pa_map_run(&g);
}

static int run_map(const fe_plan *p) {
    double s0 = 0;
    int64_t si0 = 0;
    for (int32_t i = 0; i < p->n; i++) {
        const fe_entry *e = &p->e[i];
        double s = e->s;
        int64_t si = e->si;
        if (p->scalar_from == ST_TENSOR) {
            if (i == 0 || p->per_elem) {
                const pa_tview *t = &p->t[p->t_scalar];
                const double raw = load_f(t, p->per_elem ? i : 0);
                s0 = scalar_value(raw, p->dt);
                si0 = pa_cvt_is_float(t->dtype) ? pa_cvt_f_to_i(raw, -0x1p63, 0x1p63 - 1024.0) : (int64_t)raw;
            }
            s = s0, si = si0;
        }
        run_map_entry(p, e, s, si);
    }
    return ACLNN_SUCCESS;
}

static int run_norm(const fe_plan *p) {
    for (int32_t i = 0; i < p->n; i++) {
        const pa_tview *x = &p->e[i].v[0], *o = &p->e[i].v[1];
        pa_red_args r;
        memset(&r, 0, sizeof r);
        r.kind = PA_RED_NORM;
        r.in_dtype = x->dtype;
        r.via = ACL_DT_UNDEFINED;
        r.out_dtype = o->dtype;
        r.want_values = true;
        r.p = p->p;
        r.nkeep = 0;
        r.nred = x->ndim;
        for (int32_t d = 0; d < x->ndim; d++) {
            r.red_dims[d] = x->dims[d];
            r.red_in[d] = x->strides[d];
        }
        r.in = vptr(x);
        r.out = vptr(o);
        pa_red_simplify(&r);
        pa_red_run(&r);
    }
    return ACLNN_SUCCESS;
}

static void operand_of(pa_fe_operand *o, const pa_tview *v) {
    o->ptr = vptr(v);
    o->dtype = v->dtype;
    for (int32_t d = 0; d < v->ndim; d++) o->strides[d] = v->strides[d];
}

static int run_nonfinite(const fe_plan *p) {
    const float inv = (float)load_f(&p->t[p->t_inv], 0);
    bool found = false;
    for (int32_t i = 0; i < p->n; i++) {
        const pa_tview *x = &p->e[i].v[0];
        if (view_empty(x)) continue;
        pa_fe_operand o;
        operand_of(&o, x);
        if (!found) found = pa_fe_any_nonfinite(&o, x->ndim, x->dims);
        fe_entry e = p->e[i];
        /* x = x * inv: the map engine's MUL with a constant */
        fe_plan q = *p;
        q.mk = PA_K_MUL;
        q.slot = S_B;
        q.nlist = 1;
        q.inplace_out = true;
        q.dom = PA_DOM_F32;
        q.compute = q.dt = x->dtype;
        q.scalar_f32 = true; /* inv in fp32, the product rounded once (CANN's kernel) */
        run_map_entry(&q, &e, (double)inv, 0);
    }
    if (found) {
        const pa_tview *f = &p->t[p->t_found];
        pa_cvt_store_f(vptr(f), f->dtype, 1.0);
    }
    return ACLNN_SUCCESS;
}

static int run_adamw(const fe_plan *p) {
    const pa_tview *var = &p->t[p->t_var];
    pa_adamw_args a;
    memset(&a, 0, sizeof a);
    a.ndim = var->ndim;
    for (int32_t d = 0; d < var->ndim; d++) a.dims[d] = var->dims[d];
    operand_of(&a.var, var);
    operand_of(&a.m, &p->t[p->t_m]);
    operand_of(&a.v, &p->t[p->t_v]);
    operand_of(&a.grad, &p->t[p->t_grad]);
    if (p->t_max >= 0) operand_of(&a.maxv, &p->t[p->t_max]);
    a.maximize = p->maximize;
    const float step = (float)load_f(&p->t[p->t_step], 0);
    pa_adamw_consts(&a, step, p->lr, p->beta1, p->beta2, p->wd, p->eps);
    pa_adamw_run(&a);
    return ACLNN_SUCCESS;
}

static int run_amp(const fe_plan *p) {
    float scale = (float)load_f(&p->t[p->t_scale], 0);
    const double fi = load_f(&p->t[p->t_ufound], 0);
    int32_t tracker = (int32_t)pa_cvt_load_i(vptr(&p->t[p->t_tracker]), ACL_INT32);
    if (fi != 0) { /* NaN counts as found, as a C++ truth test does */
        scale *= p->backoff;
        tracker = 0;
    } else {
        const int64_t ok = (int64_t)tracker + 1;
        if (ok == p->interval) {
            const float grown = scale * p->growth;
            if (isfinite(grown)) scale = grown;
            tracker = 0;
        } else {
            tracker = (int32_t)ok;
        }
    }
    const pa_tview *us = &p->t[p->t_uscale], *ut = &p->t[p->t_utracker];
    pa_cvt_store_f(vptr(us), us->dtype, scale);
    pa_cvt_store_i(vptr(ut), ut->dtype, tracker);
    return ACLNN_SUCCESS;
}

int pa_run_foreach(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const fe_plan *p = plan;
    if (p->n == 0) return ACLNN_SUCCESS;
    int rc;
    switch (p->special) {
    case SP_MAP:
        rc = check_list_addresses(p);
        return rc ? rc : run_map(p);
    case SP_NORM:
        rc = check_list_addresses(p);
        return rc ? rc : run_norm(p);
    case SP_NONFINITE:
        rc = check_list_addresses(p);
        return rc ? rc : run_nonfinite(p);
    case SP_ADAMW: return run_adamw(p);
    case SP_AMP: return run_amp(p);
    default: return pa_fail(ACLNN_ERR_INNER, "%s: internal error: unknown plan %d", p->api, (int)p->special);
    }
}
