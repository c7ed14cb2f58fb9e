/* The map family: every elementwise operator of the table (roles, dtype
 * rules and kernel in its pa_map_desc). validate -> plan (pa_map_args) ->
 * run (kernels/map/). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/map/map_cvt.h"
#include "ops/core/pa_dtype.h"
#include "ops/core/pa_families.h"

/* The parameters as the kernel sees them. */
typedef struct map_call {
    const pa_op *op;
    const pa_map_desc *d;
    const char *api;
    int kernel;
    /* inputs a, b, c: a tensor or a scalar (constant), absent if both NULL */
    const aclTensor *t[PA_MAP_MAX_IN];
    const aclScalar *s[PA_MAP_MAX_IN];
    const char *in_name[PA_MAP_MAX_IN];
    const aclTensor *out;
    const char *out_name;
    bool inplace; /* out is also input (a or c) */
    const aclScalar *ps[4]; /* kernel parameters given as scalars */
    double pf[4];           /* ... or as numbers */
    bool p_num[4];
    const char *p_name[4];
    int64_t dtype_attr;
} map_call;

static aclDataType in_dtype(const map_call *c, int j) {
    return c->t[j] ? c->t[j]->dtype : c->s[j] ? c->s[j]->dtype : ACL_DT_UNDEFINED;
}

static int fail_promote(const map_call *c, aclDataType x, aclDataType y) {
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dtypes %s and %s have no promoted dtype", c->api, pa_dtype_name(x),
                   pa_dtype_name(y));
}

/* The TensorTensor promotion of the tensor inputs (from index `first`). */
static int promote_tensors(const map_call *c, int first, aclDataType *out) {
    aclDataType r = ACL_DT_UNDEFINED;
    for (int j = first; j < PA_MAP_MAX_IN; j++) {
        if (c->t[j] == NULL) continue;
        if (r == ACL_DT_UNDEFINED) {
            r = c->t[j]->dtype;
            continue;
        }
        const aclDataType p = pa_dt_promote(r, c->t[j]->dtype);
        if (p == ACL_DT_UNDEFINED) return fail_promote(c, r, c->t[j]->dtype);
        r = p;
    }
    *out = r;
    return ACLNN_SUCCESS;
}

/* The tensor of the op (a, else b) and its scalar partner. */
static const aclTensor *main_tensor(const map_call *c) { return c->t[0] ? c->t[0] : c->t[1] ? c->t[1] : c->t[2]; }
static const aclScalar *the_scalar(const map_call *c) { return c->s[0] ? c->s[0] : c->s[1] ? c->s[1] : c->s[2]; }

/* CANN's PromoteTypeScalar on A2: a float tensor keeps its dtype; a DOUBLE
 * scalar with a FLOAT out gives FLOAT; a float scalar or a BOOL tensor
 * promotes; else the tensor's dtype. */
static aclDataType scalar_rule(aclDataType t, aclDataType s, aclDataType out) {
    if (pa_dt_is_float(t)) return t;
    if (s == ACL_DOUBLE && out == ACL_FLOAT) return ACL_FLOAT;
    if (pa_dt_is_float(s) || t == ACL_BOOL) return pa_dt_promote(t, s);
    return t;
}

static int check_alpha(const map_call *c, aclDataType promote) {
    const aclScalar *alpha = c->ps[0];
    if (alpha == NULL) return ACLNN_SUCCESS;
    if (promote == ACL_BOOL) {
        if (pa_dt_is_float(alpha->dtype)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: alpha dtype %s is not allowed with BOOL inputs; expected "
                           "an integer or BOOL alpha", c->api, pa_dtype_name(alpha->dtype));
        }
        return ACLNN_SUCCESS;
    }
    if (!pa_dt_can_cast(alpha->dtype, promote)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: alpha dtype %s cannot be cast to the promoted dtype %s", c->api,
                       pa_dtype_name(alpha->dtype), pa_dtype_name(promote));
    }
    return ACLNN_SUCCESS;
}

static bool alpha_is_one(const map_call *c) {
    return c->ps[0] == NULL || !(pa_scalar_f(c->ps[0]) > 1 || pa_scalar_f(c->ps[0]) < 1);
}

/* The compute dtype (what the kernel computes in) and the dtype whose
 * castability to out is checked. */
static int compute_dtype(const map_call *c, aclDataType *compute, aclDataType *check) {
    const aclTensor *mt = main_tensor(c);
    const aclDataType self = mt ? mt->dtype : in_dtype(c, 0);
    const aclDataType out = c->out->dtype;
    const aclScalar *sc = the_scalar(c);
    aclDataType r = ACL_DT_UNDEFINED;
    int rc = ACLNN_SUCCESS;
    switch (c->d->compute) {
    case PA_MAPR_PROMOTE:
    case PA_MAPR_PROMOTE_ALPHA_ADD:
    case PA_MAPR_PROMOTE_ALPHA_SUB:
    case PA_MAPR_POW_TT:
    case PA_MAPR_REMAINDER:
    case PA_MAPR_INTEGRAL:
        rc = promote_tensors(c, 0, &r);
        if (rc == 0 && sc != NULL && r != ACL_DT_UNDEFINED) r = scalar_rule(r, sc->dtype, out);
        if (rc == 0 && r == ACL_DT_UNDEFINED) r = sc ? sc->dtype : self;
        break;
    case PA_MAPR_PROMOTE_BC: rc = promote_tensors(c, 1, &r); break;
    case PA_MAPR_SCALAR_ALPHA_ADD:
    case PA_MAPR_SCALAR_ALPHA_SUB:
    case PA_MAPR_REMAINDER_SCALAR:
    case PA_MAPR_SCALAR_POW:
        r = scalar_rule(self, sc->dtype, out);
        if (c->d->compute == PA_MAPR_SCALAR_POW && sc->dtype == ACL_DOUBLE && out == ACL_FLOAT) r = ACL_FLOAT;
        break;
    case PA_MAPR_SCALAR_POW_BASE: {
        const aclDataType e = c->t[1]->dtype;
        r = e == ACL_DOUBLE && out == ACL_FLOAT ? ACL_FLOAT : scalar_rule(e, c->s[0]->dtype, out);
        break;
    }
    case PA_MAPR_SCALAR_MULS:
        if (self == ACL_BF16) r = ACL_FLOAT;
        else if ((self == ACL_BOOL && sc->dtype == ACL_DOUBLE) || (sc->dtype == ACL_DOUBLE && out == ACL_FLOAT)) {
            r = pa_dt_is_float(self) ? self : ACL_FLOAT;
        } else {
            r = scalar_rule(self, sc->dtype, out);
        }
        break;
    case PA_MAPR_PROMOTE_WITH_SCALAR: r = pa_dt_promote(self, sc->dtype); break;
    case PA_MAPR_SCALAR_CMP_SELF:
    case PA_MAPR_INTEGRAL_SCALAR:
    case PA_MAPR_SELF: r = self; break;
    case PA_MAPR_OUT: r = out; break;
    case PA_MAPR_DIV:
    case PA_MAPR_DIVMOD: {
        aclDataType p = ACL_DT_UNDEFINED;
        if (c->t[1] != NULL) {
            rc = promote_tensors(c, 0, &p);
        } else {
            p = pa_dt_promote(self, sc->dtype);
            if (p == ACL_DT_UNDEFINED) rc = fail_promote(c, self, sc->dtype);
        }
        if (rc != 0) break;
        *check = p;
        r = p;
        if (pa_dt_is_int(p) || p == ACL_BOOL) {
            /* true division in FLOAT; floor division of integers stays integral */
            const bool floor_int = c->kernel == PA_K_DIV_FLOOR && p != ACL_BOOL;
            if (!floor_int) r = ACL_FLOAT;
        }
        if (r == ACL_DT_UNDEFINED) return fail_promote(c, self, in_dtype(c, 1));
        *compute = r;
        return ACLNN_SUCCESS;
    }
    case PA_MAPR_SCALAR_DIV:
        r = pa_dt_is_float(self) ? self : ACL_FLOAT;
        *compute = r;
        *check = self;
        return ACLNN_SUCCESS;
    case PA_MAPR_FLOAT:
        rc = promote_tensors(c, 0, &r);
        if (rc == 0 && !pa_dt_is_float(r)) r = ACL_FLOAT;
        break;
    case PA_MAPR_FLOAT_S64_F64: r = pa_dt_is_float(self) ? self : self == ACL_INT64 ? ACL_DOUBLE : ACL_FLOAT; break;
    case PA_MAPR_SELF_OR_F32: r = pa_dt_is_float(self) ? self : ACL_FLOAT; break;
    case PA_MAPR_SELF_OR_OUT: r = pa_dt_is_float(self) ? self : out; break;
    case PA_MAPR_SAME_OR_F32: {
        bool same = true;
        for (int j = 0; j < PA_MAP_MAX_IN; j++) same = same && (c->t[j] == NULL || c->t[j]->dtype == self);
        r = same && (self == ACL_FLOAT || self == ACL_FLOAT16 || self == ACL_BF16) ? self : ACL_FLOAT;
        break;
    }
    default: r = self; break;
    }
    if (rc != ACLNN_SUCCESS) return rc;
    if (r == ACL_DT_UNDEFINED) return fail_promote(c, self, sc ? sc->dtype : in_dtype(c, 1));
    *compute = r;
    *check = r;
    return ACLNN_SUCCESS;
}

/* The rule-specific checks after the compute dtype is known. */
static int check_rules(const map_call *c, aclDataType compute, aclDataType check) {
    const aclTensor *mt = main_tensor(c);
    const aclDataType self = mt ? mt->dtype : in_dtype(c, 0);
    const aclDataType out = c->out->dtype;
    char list[256];
    switch (c->d->compute) {
    case PA_MAPR_PROMOTE_ALPHA_ADD:
    case PA_MAPR_PROMOTE_ALPHA_SUB:
    case PA_MAPR_SCALAR_ALPHA_ADD:
    case PA_MAPR_SCALAR_ALPHA_SUB: {
        int rc = check_alpha(c, compute);
        if (rc) return rc;
        break;
    }
    case PA_MAPR_POW_TT:
    case PA_MAPR_SCALAR_POW:
    case PA_MAPR_SCALAR_POW_BASE:
        if (in_dtype(c, 0) == ACL_BOOL && in_dtype(c, 1) == ACL_BOOL) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self and exponent may not both be BOOL", c->api);
        }
        break;
    case PA_MAPR_REMAINDER:
    case PA_MAPR_REMAINDER_SCALAR: {
        const uint64_t ok = PA_DT_BIT(ACL_INT32) | PA_DT_BIT(ACL_INT64) | PA_DT_BIT(ACL_FLOAT16) |
                            PA_DT_BIT(ACL_FLOAT) | PA_DT_BIT(ACL_DOUBLE) | PA_DT_BIT(ACL_BF16);
        if (!(PA_DT_BIT(compute) & ok)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the promoted dtype must be %s, got %s", c->api,
                           pa_dtype_list_str(ok, list, sizeof list), pa_dtype_name(compute));
        }
        break;
    }
    case PA_MAPR_INTEGRAL:
    case PA_MAPR_INTEGRAL_SCALAR:
        if (!(pa_dt_is_int(compute) || compute == ACL_BOOL)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: bitwise operations need integer or BOOL dtypes, got %s",
                           c->api, pa_dtype_name(compute));
        }
        if (c->d->compute == PA_MAPR_INTEGRAL_SCALAR && pa_scalar_is_float(the_scalar(c))) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: other must be an integer or BOOL scalar, got %s", c->api,
                           pa_dtype_name(the_scalar(c)->dtype));
        }
        break;
    default: break;
    }
    switch (c->d->outrule) {
    case PA_MAPO_CAST:
        if (!pa_dt_can_cast(check, out)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the result dtype %s cannot be cast to %s dtype %s", c->api,
                           pa_dtype_name(check), c->out_name, pa_dtype_name(out));
        }
        break;
    case PA_MAPO_CAST_SELF:
        if (!pa_dt_can_cast(self, out)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self dtype %s cannot be cast to %s dtype %s", c->api,
                           pa_dtype_name(self), c->out_name, pa_dtype_name(out));
        }
        break;
    case PA_MAPO_SAME:
        if (out != self) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must be the dtype of %s (%s), got %s", c->api,
                           c->out_name, c->in_name[0] ? c->in_name[0] : "self", pa_dtype_name(self),
                           pa_dtype_name(out));
        }
        break;
    case PA_MAPO_COMPUTE:
        if (out != compute) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must be the promoted dtype %s, got %s", c->api,
                           c->out_name, pa_dtype_name(compute), pa_dtype_name(out));
        }
        break;
    case PA_MAPO_DTYPE_ATTR:
        if ((int64_t)out != c->dtype_attr) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must be dtype (%s), got %s", c->api, c->out_name,
                           pa_dtype_name((aclDataType)c->dtype_attr), pa_dtype_name(out));
        }
        break;
    default: break;
    }
    return ACLNN_SUCCESS;
}

/* ---- shapes ---- */

static int broadcast_shape(const map_call *c, int32_t *nd, int64_t *dims) {
    int32_t n = 0;
    for (int j = 0; j < PA_MAP_MAX_IN; j++) {
        if (c->t[j] && c->t[j]->ndim > n) n = c->t[j]->ndim;
    }
    for (int32_t i = 0; i < n; i++) dims[i] = 1;
    for (int j = 0; j < PA_MAP_MAX_IN; j++) {
        const aclTensor *t = c->t[j];
        if (t == NULL) continue;
        for (int32_t i = 0; i < t->ndim; i++) {
            const int32_t k = i + (n - t->ndim);
            const int64_t d = t->dims[i];
            if (d == dims[k] || d == 1) continue;
            if (dims[k] == 1) {
                dims[k] = d;
                continue;
            }
            char s1[160], s2[160];
            int other = -1;
            for (int m = 0; m < j; m++) {
                if (c->t[m] != NULL) other = m;
            }
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s and %s shape %s do not broadcast", c->api,
                           other >= 0 ? c->in_name[other] : "?",
                           other >= 0 ? pa_shape_str(c->t[other]->dims, c->t[other]->ndim, s1, sizeof s1) : "?",
                           c->in_name[j], pa_shape_str(t->dims, t->ndim, s2, sizeof s2));
        }
    }
    *nd = n;
    return ACLNN_SUCCESS;
}

static int check_out_shape(const map_call *c, int32_t nd, const int64_t *dims) {
    const aclTensor *o = c->out;
    bool same = o->ndim == nd;
    for (int32_t i = 0; same && i < nd; i++) same = o->dims[i] == dims[i];
    if (same) return ACLNN_SUCCESS;
    char s1[160], s2[160];
    if (c->inplace) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the broadcast shape %s of the inputs must be the shape %s of %s",
                       c->api, pa_shape_str(dims, nd, s1, sizeof s1), pa_shape_str(o->dims, o->ndim, s2, sizeof s2),
                       c->out_name);
    }
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape must be %s, got %s", c->api, c->out_name,
                   pa_shape_str(dims, nd, s1, sizeof s1), pa_shape_str(o->dims, o->ndim, s2, sizeof s2));
}

/* src broadcast to out's dims: element strides (0 where broadcast). */
static void broadcast_strides(const aclTensor *src, int32_t nd, const int64_t *dims, int64_t *st) {
    for (int32_t i = 0; i < nd; i++) {
        const int32_t j = i - (nd - src->ndim);
        st[i] = j < 0 || src->dims[j] == 1 || dims[i] == 1 ? 0 : src->strides[j];
    }
}

/* ---- the plan ---- */

typedef struct map_plan {
    pa_map_args args;
    pa_tview views[4];
    int8_t view_of_in[PA_MAP_MAX_IN]; /* -1: a constant */
    int8_t view_of_out;
} map_plan;

/* A value converted to dtype dt and back (the vendor converts scalars to the
 * compute dtype first). */
static double round_to(double v, aclDataType dt) {
    char tmp[8] = {0};
    pa_cvt_store_f(tmp, dt, v);
    return pa_cvt_load_f(tmp, dt);
}
/* v rounded to fp32, through a volatile: GCC 12's SLP vectorizer turns a pair of
 * (double)(float) round trips into no-ops (at -O2 and -O3). */
static double to_f32(double v) {
    volatile float f = (float)v;
    return (double)f;
}
static int64_t wrap_to(int64_t v, aclDataType dt) {
    char tmp[8] = {0};
    pa_cvt_store_i(tmp, dt, v);
    return pa_cvt_load_i(tmp, dt);
}

static void set_const(pa_map_operand *o, const aclScalar *s, aclDataType compute, pa_map_dom dom, bool round) {
    memset(o, 0, sizeof *o);
    o->is_const = true;
    o->dtype = s->dtype;
    o->via = ACL_DT_UNDEFINED;
    if (dom == PA_DOM_I64) {
        int64_t v = pa_scalar_i(s);
        o->value_i = round ? wrap_to(v, compute) : v;
        o->value_d = (double)o->value_i;
    } else {
        double v = pa_scalar_f(s);
        if (round && compute != ACL_FLOAT && compute != ACL_DOUBLE) v = round_to(v, compute);
        else if (round && compute == ACL_FLOAT) v = (double)(float)v;
        o->value_d = v;
    }
}

static bool kernel_orders(int k) {
    return k == PA_K_LT || k == PA_K_LE || k == PA_K_GT || k == PA_K_GE || k == PA_K_MAXIMUM ||
           k == PA_K_MINIMUM || k == PA_K_CLAMP || k == PA_K_CLAMP_T || k == PA_K_CLAMP_MIN_T ||
           k == PA_K_CLAMP_MAX_T || k == PA_K_DIV_FLOOR || k == PA_K_DIV_TRUNC || k == PA_K_REMAINDER ||
           k == PA_K_FMOD;
}

static bool kernel_is_predicate(int k) {
    return (k >= PA_K_EQ && k <= PA_K_LNOT) || k == PA_K_ISFINITE;
}

int pa_plan_map(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    map_call c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.d = op->ext;
    c.api = op->ws_api;
    c.kernel = c.d->kernel;
    c.dtype_attr = -1;
    int64_t kval = 0;
    const char *kstr = NULL, *kname = NULL; /* a string attribute choosing the kernel */
    bool have_k = false;
    for (int i = 0; i < op->nparams; i++) {
        const pa_param *p = &op->params[i];
        const int role = c.d->roles[i];
        int j = -1;
        switch (role) {
        case PA_ROLE_A: j = 0; break;
        case PA_ROLE_B: j = 1; break;
        case PA_ROLE_C: j = 2; break;
        case PA_ROLE_A_OUT: j = 0; c.inplace = true; break;
        case PA_ROLE_C_OUT: j = 2; c.inplace = true; break;
        case PA_ROLE_OUT: c.out = a[i].p; c.out_name = p->name; break;
        case PA_ROLE_P0: case PA_ROLE_P1: case PA_ROLE_P2: case PA_ROLE_P3: {
            const int k = role - PA_ROLE_P0;
            c.p_name[k] = p->name;
            if (p->kind == PA_P_SCALAR) c.ps[k] = a[i].p;
            else {
                c.p_num[k] = true;
                c.pf[k] = p->kind == PA_P_FLOAT ? a[i].f : p->kind == PA_P_BOOL ? (double)a[i].b : (double)a[i].i;
            }
            break;
        }
        case PA_ROLE_KERNEL:
            if (p->kind == PA_P_STRING) kstr = a[i].p, kname = p->name;
            else kval = p->kind == PA_P_BOOL ? (int64_t)a[i].b : a[i].i;
            have_k = true;
            break;
        case PA_ROLE_DTYPE: c.dtype_attr = a[i].i; break;
        default: break;
        }
        if (j >= 0) {
            c.in_name[j] = p->name;
            if (p->kind == PA_P_TENSOR) c.t[j] = a[i].p;
            else c.s[j] = a[i].p;
            if (role == PA_ROLE_A_OUT || role == PA_ROLE_C_OUT) {
                c.out = a[i].p;
                c.out_name = p->name;
            }
        }
    }
    if (have_k) {
        int k = c.d->kernel;
        for (int m = 0; m < c.d->nkmap; m++) {
            const char *nm = c.d->kmap_name[m];
            if (kstr != NULL ? nm != NULL && strcmp(nm, kstr) == 0 : c.d->kmap_value[m] == kval) {
                k = c.d->kmap_kernel[m];
            }
        }
        if (k < 0 && kstr != NULL) {
            char list[96] = "";
            for (int m = 0; m < c.d->nkmap; m++) {
                const size_t at = strlen(list);
                snprintf(list + at, sizeof list - at, "%s\"%s\"", m == 0 ? "" : m + 1 == c.d->nkmap ? " or " : ", ",
                         c.d->kmap_name[m]);
            }
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be %s, got \"%.64s\"", c.api, kname, list, kstr);
        }
        if (k < 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: mode must be 0 (true division), 1 (truncating) or 2 "
                           "(floor division), got %lld", c.api, (long long)kval);
        }
        c.kernel = k;
    }
    if ((c.d->flags & PA_MAPF_CLAMP_ONE_BOUND) && c.kernel == PA_K_CLAMP_T) {
        /* ClampTensor: either bound may be NULL (not both); one bound is ClampMinTensor / ClampMaxTensor */
        if (c.t[1] == NULL && c.t[2] == NULL) {
            return pa_fail(ACLNN_ERR_PARAM_NULLPTR,
                           "%s: clipValueMin and clipValueMax are both NULL; give at least one", c.api);
        }
        if (c.t[2] == NULL) {
            c.kernel = PA_K_CLAMP_MIN_T;
        } else if (c.t[1] == NULL) {
            c.kernel = PA_K_CLAMP_MAX_T;
            c.t[1] = c.t[2];
            c.in_name[1] = c.in_name[2];
            c.t[2] = NULL;
            c.in_name[2] = NULL;
        }
    } else if ((c.d->flags & PA_MAPF_CLAMP_ONE_BOUND) && c.ps[0] == NULL && c.ps[1] == NULL) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: clipValueMin and clipValueMax are both NULL; give at least one",
                       c.api);
    }
    if (c.d->flags & PA_MAPF_VALUE_ONE_ELEMENT) {
        const int iv = pa_op_param(op, "value");
        const aclTensor *v = iv >= 0 ? a[iv].p : NULL;
        if (v != NULL && pa_tensor_numel(v) != 1) {
            char s1[160];
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: value must hold exactly one element, got shape %s", c.api,
                           pa_shape_str(v->dims, v->ndim, s1, sizeof s1));
        }
    }
    if (c.d->flags & PA_MAPF_NO_BROADCAST) {
        const aclTensor *t0 = main_tensor(&c);
        for (int j = 0; j < PA_MAP_MAX_IN; j++) {
            const aclTensor *t = c.t[j];
            bool same = t == NULL || t->ndim == t0->ndim;
            for (int32_t i = 0; same && t != NULL && i < t->ndim; i++) same = t->dims[i] == t0->dims[i];
            if (!same) {
                char s1[160], s2[160];
                const int j0 = t0 == c.t[0] ? 0 : t0 == c.t[1] ? 1 : 2;
                return pa_fail(ACLNN_ERR_PARAM_INVALID,
                               "%s: %s shape %s must be the shape %s of %s (no broadcasting)", c.api, c.in_name[j],
                               pa_shape_str(t->dims, t->ndim, s1, sizeof s1),
                               pa_shape_str(t0->dims, t0->ndim, s2, sizeof s2), c.in_name[j0]);
            }
        }
    }
    /* shapes: the inputs broadcast to out (in place: to selfRef's shape) */
    int32_t nd = 0;
    int64_t dims[PA_MAX_DIMS];
    int rc = broadcast_shape(&c, &nd, dims);
    if (rc) return rc;
    const bool has_tensor_in = c.t[0] || c.t[1] || c.t[2];
    if (has_tensor_in && !(c.inplace || c.d->compute == PA_MAPR_OUT)) {
        rc = check_out_shape(&c, nd, dims);
    } else if (has_tensor_in) {
        /* inputs broadcast to out */
        for (int j = 0; j < PA_MAP_MAX_IN && rc == 0; j++) {
            if (c.t[j] == NULL || c.t[j] == c.out) continue;
            int32_t n2 = c.out->ndim;
            bool ok = c.t[j]->ndim <= n2;
            for (int32_t i = 0; ok && i < c.t[j]->ndim; i++) {
                const int64_t d = c.t[j]->dims[i], od = c.out->dims[i + (n2 - c.t[j]->ndim)];
                ok = d == od || d == 1;
            }
            if (!ok) {
                char s1[160], s2[160];
                rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s cannot be broadcast to the shape %s of %s",
                             c.api, c.in_name[j], pa_shape_str(c.t[j]->dims, c.t[j]->ndim, s1, sizeof s1),
                             pa_shape_str(c.out->dims, c.out->ndim, s2, sizeof s2), c.out_name);
            }
        }
    }
    if (rc) return rc;
    /* dtypes */
    if (c.d->flags & PA_MAPF_SAME_DTYPE_INPUTS) {
        const aclTensor *t0 = main_tensor(&c);
        for (int j = 0; j < PA_MAP_MAX_IN; j++) {
            if (c.t[j] == NULL || c.t[j]->dtype == t0->dtype) continue;
            const int j0 = t0 == c.t[0] ? 0 : t0 == c.t[1] ? 1 : 2;
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be the dtype of %s (%s)", c.api,
                           c.in_name[j], pa_dtype_name(c.t[j]->dtype), c.in_name[j0], pa_dtype_name(t0->dtype));
        }
    }
    aclDataType compute = ACL_DT_UNDEFINED, check = ACL_DT_UNDEFINED;
    rc = compute_dtype(&c, &compute, &check);
    if (rc == 0) rc = check_rules(&c, compute, check);
    if (rc) return rc;
    if ((c.d->flags & PA_MAPF_RESULT_NONNEG) && kval != 0 && c.ps[0] != NULL) {
        /* the in-place forward with a negative slope loses the input's sign (Elu reads alpha as fp32) */
        const double v = c.kernel == PA_K_ELU_BACKWARD_RESULT ? to_f32(pa_scalar_f(c.ps[0])) : pa_scalar_f(c.ps[0]);
        if (v < 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must not be negative when the saved tensor is the "
                           "forward's result (the in-place forward with a negative %s)", c.api, c.p_name[0],
                           c.p_name[0]);
        }
    }
    if ((c.d->flags & PA_MAPF_MIN_LE_MAX) && c.ps[0] && c.ps[1]) {
        const bool bad = pa_scalar_is_float(c.ps[0]) ? pa_scalar_f(c.ps[0]) > pa_scalar_f(c.ps[1])
                                                      : pa_scalar_i(c.ps[0]) > pa_scalar_i(c.ps[1]);
        if (bad) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: clipValueMin must not exceed clipValueMax", c.api);
        }
    }
    pa_map_dom dom = pa_map_dom_of(compute);
    int kernel = c.kernel;
    if (c.d->flags & (PA_MAPF_FILL0 | PA_MAPF_FILL1)) kernel = PA_K_FILL;
    if (compute == ACL_BOOL && kernel == PA_K_MAXIMUM) kernel = PA_K_LOR;
    if (compute == ACL_BOOL && kernel == PA_K_MINIMUM) kernel = PA_K_LAND;
    if (!pa_map_has_kernel(kernel, dom)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: no kernel for dtype %s", c.api, pa_dtype_name(compute));
    }

    map_plan plan;
    memset(&plan, 0, sizeof plan);
    pa_map_args *g = &plan.args;
    g->kernel = kernel;
    g->dom = dom;
    g->nin = pa_map_kernel_nin(kernel);
    g->res = kernel_is_predicate(kernel) ? ACL_DT_UNDEFINED : compute;
    g->ndim = c.out->ndim;
    for (int32_t i = 0; i < g->ndim; i++) g->dims[i] = c.out->dims[i];
    pa_tview ov = pa_tview_of(c.out);
    g->out.dtype = c.out->dtype;
    g->out.via = ACL_DT_UNDEFINED;
    for (int32_t i = 0; i < g->ndim; i++) g->out.strides[i] = ov.strides[i];
    const bool order_u64 = compute == ACL_UINT64 && kernel_orders(kernel);
    g->out.u64_order = order_u64 && !kernel_is_predicate(kernel);
    g->u64_values = compute == ACL_UINT64 && kernel == PA_K_COPY;
    int nv = 0;
    /* the kernel's inputs: a, b, c in order (masked fill: mask, value, self) */
    for (int j = 0; j < g->nin; j++) {
        pa_map_operand *o = &g->in[j];
        plan.view_of_in[j] = -1;
        if (c.t[j] != NULL) {
            o->dtype = c.t[j]->dtype;
            o->via = compute;
            if (kernel == PA_K_WHERE && j == 0) o->via = ACL_DT_UNDEFINED; /* the condition */
            if (o->via == o->dtype) o->via = ACL_DT_UNDEFINED;
            o->u64_order = order_u64;
            broadcast_strides(c.t[j], g->ndim, g->dims, o->strides);
            plan.views[nv] = pa_tview_of(c.t[j]);
            plan.view_of_in[j] = (int8_t)nv++;
        } else if (c.s[j] != NULL) {
            set_const(o, c.s[j], compute, dom, true);
            o->u64_order = order_u64;
        } else {
            /* a kernel input the op does not give: cannot happen for a consistent table */
            return pa_fail(ACLNN_ERR_INNER, "%s: internal error: kernel %s input %d missing", c.api,
                           pa_map_kernel_name(kernel), j);
        }
    }
    plan.views[nv] = ov;
    plan.view_of_out = (int8_t)nv++;
    /* parameters */
    for (int k = 0; k < 4; k++) {
        double v = 0;
        int64_t vi = 0;
        if (c.ps[k] != NULL) {
            v = pa_scalar_f(c.ps[k]);
            vi = pa_scalar_i(c.ps[k]);
            if ((c.d->flags & PA_MAPF_PARAMS_IN_SELF_DTYPE) || kernel == PA_K_CLAMP) {
                if (dom == PA_DOM_I64) {
                    vi = pa_dt_is_float(c.ps[k]->dtype) ? pa_cvt_f_to_i(v, -0x1p63, 0x1p63 - 1024.0) : vi;
                    vi = wrap_to(vi, compute);
                    v = (double)vi;
                } else {
                    v = round_to(v, compute);
                }
            }
        } else if (c.p_num[k]) {
            v = c.pf[k];
            vi = pa_cvt_f_to_i(v, -0x1p63, 0x1p63 - 1024.0);
        }
        g->p[k] = v;
        g->pi[k] = vi;
    }
    if (kernel == PA_K_CLAMP) g->pi[3] = (c.ps[0] == NULL ? 1 : 0) | (c.ps[1] == NULL ? 2 : 0);
    if (kernel == PA_K_ADD || kernel == PA_K_SUB || kernel == PA_K_RSUB) {
        if (c.ps[0] == NULL) {
            g->p[0] = 1;
            g->pi[0] = 1;
        } else if (alpha_is_one(&c)) {
            g->p[0] = 1;
            g->pi[0] = 1;
        }
    }
    if (kernel == PA_K_ADDCMUL || kernel == PA_K_ADDCDIV) g->p[0] = c.ps[0] ? g->p[0] : 1;
    if (kernel == PA_K_FILL) {
        if (c.d->flags & PA_MAPF_FILL1) g->p[0] = 1, g->pi[0] = 1;
        else if (c.d->flags & PA_MAPF_FILL0) g->p[0] = 0, g->pi[0] = 0;
        else if (c.ps[0] != NULL && dom == PA_DOM_I64 && pa_dt_is_float(c.ps[0]->dtype)) {
            g->pi[0] = pa_cvt_f_to_i(g->p[0], -0x1p63, 0x1p63 - 1024.0);
        }
        if (dom == PA_DOM_F32 && compute != ACL_FLOAT) g->p[0] = round_to(g->p[0], compute);
    }
    if (kernel == PA_K_LEAKY_RELU || kernel == PA_K_ELU || kernel == PA_K_SOFTPLUS ||
        kernel == PA_K_LEAKY_RELU_BACKWARD) {
        /* the vendor passes these as fp32 attributes */
        for (int k = 0; k < 3; k++) g->p[k] = to_f32(g->p[k]);
    }
    if (kernel == PA_K_THRESHOLD_BACKWARD) {
        /* the vendor's float attribute; within FLT_EPSILON of 0 it runs ReluGrad (threshold 0) */
        g->p[0] = to_f32(g->p[0]);
        if (fabs(g->p[0]) <= FLT_EPSILON) g->p[0] = 0;
    }
    pa_map_simplify(g);
    /* executor views: inputs in API order, then outputs */
    size_t in_off[3], out_off[1];
    int n_in = 0;
    for (int i = 0; i < op->nparams; i++) {
        const int role = c.d->roles[i];
        if (op->params[i].kind != PA_P_TENSOR) continue;
        if (role == PA_ROLE_OUT) continue;
        const void *t = a[i].p;
        for (int j = 0; j < g->nin; j++) {
            if (c.t[j] == t && plan.view_of_in[j] >= 0) {
                in_off[n_in++] = offsetof(map_plan, views) + (size_t)plan.view_of_in[j] * sizeof(pa_tview);
                break;
            }
        }
    }
    out_off[0] = offsetof(map_plan, views) + (size_t)plan.view_of_out * sizeof(pa_tview);
    return pa_op_executor(op, &plan, sizeof plan, in_off, n_in, out_off, 1, 0, workspaceSize, executor);
}

int pa_run_map(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const map_plan *p = plan;
    pa_map_args g = p->args;
    g.out.ptr = pa_tview_ptr(&p->views[p->view_of_out]);
    for (int j = 0; j < g.nin; j++) {
        if (p->view_of_in[j] >= 0) g.in[j].ptr = pa_tview_ptr(&p->views[p->view_of_in[j]]);
    }
    pa_map_run(&g);
    return ACLNN_SUCCESS;
}

int pa_run_none(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(plan), PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "internal error: an operator without a kernel was launched");
}
