/* The random family's planner and run function (family "random" in the op
 * table). The checks follow the vendor's op_api (ops-math random/); the
 * numbers are pyaclnn's own (docs/random.md): the NPU draws them in hardware
 * (DSA tasks) with no public kernel, so bit-identical values cannot exist. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/pa_half.h"
#include "kernels/map/map_cvt.h"
#include "kernels/random/random.h"
#include "ops/random/pa_random.h"
#include "runtime/pa_threadpool.h"

#define MAX_VIEWS 4
#define MASK_ALIGN_BITS 128 /* the dropout masks cover the element count rounded up to 128 bits */
#define DBL_EPS 2.220446049250313080847263336181640625e-16

enum { RUN_NOTHING, RUN_FILL, RUN_RANDPERM, RUN_MULTINOMIAL, RUN_DO_MASK };
enum { DOMASK_SCALE, DOMASK_COPY, DOMASK_ZERO };

typedef struct rnd_plan {
    int32_t run;
    int32_t kernel;
    const char *api; /* the launch API, for messages */
    pa_tview v[MAX_VIEWS]; /* the tensor parameters in API order */
    int8_t vout, vin, vmask, vseed, voff;
    uint64_t seed, offset; /* the tensor forms add offset to *offsetTensor and read seed from seedTensor */
    pa_rng_fill fill;      /* RUN_FILL: everything but the addresses */
    int64_t n, ns;         /* randperm: n; multinomial: numsamples */
    bool replacement;
    int32_t domask;
    float keep;            /* do mask: 1 - p in self's dtype */
} rnd_plan;

/* ---- argument access ------------------------------------------------------ */

typedef struct call {
    const pa_op *op;
    const pa_arg *a;
    const char *api;
} call;

static const void *ptr(const call *c, const char *name) {
    const int i = pa_op_param(c->op, name);
    return i >= 0 ? c->a[i].p : NULL;
}
static int64_t num_i(const call *c, const char *name) {
    const int i = pa_op_param(c->op, name);
    return i >= 0 ? c->a[i].i : 0;
}
static double num_f(const call *c, const char *name) {
    const int i = pa_op_param(c->op, name);
    return i >= 0 ? c->a[i].f : 0;
}
static bool num_b(const call *c, const char *name) {
    const int i = pa_op_param(c->op, name);
    return i >= 0 ? c->a[i].b : false;
}
/* The first of two parameter names the op has (selfRef / self). */
static const aclTensor *tensor2(const call *c, const char *n1, const char *n2) {
    return pa_op_param(c->op, n1) >= 0 ? ptr(c, n1) : ptr(c, n2);
}

static bool is_empty(const aclTensor *t) { return pa_tensor_numel(t) == 0; }

static bool same_shape(const aclTensor *x, const aclTensor *y) {
    if (x->ndim != y->ndim) return false;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (x->dims[d] != y->dims[d]) return false;
    }
    return true;
}

static int fail_shape(const call *c, const char *what, const aclTensor *t, const char *rule) {
    char s[160];
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s %s", c->api, what, pa_shape_str(t->dims, t->ndim, s, sizeof s),
                   rule);
}

static int check_same_shape(const call *c, const char *xn, const aclTensor *x, const char *yn, const aclTensor *y) {
    if (same_shape(x, y)) return ACLNN_SUCCESS;
    char s1[160], s2[160];
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s must equal %s shape %s", c->api, yn,
                   pa_shape_str(y->dims, y->ndim, s1, sizeof s1), xn, pa_shape_str(x->dims, x->ndim, s2, sizeof s2));
}

static int check_same_dtype(const call *c, const char *xn, const aclTensor *x, const char *yn, const aclTensor *y) {
    if (x->dtype == y->dtype) return ACLNN_SUCCESS;
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must equal %s dtype %s", c->api, yn,
                   pa_dtype_name(y->dtype), xn, pa_dtype_name(x->dtype));
}

/* seedTensor / offsetTensor: one element (the vendor's InplaceNormalTensor: shape [1]). */
static int check_seed_tensors(const call *c, bool shape_1) {
    const char *names[2] = {"seedTensor", "offsetTensor"};
    for (int k = 0; k < 2; k++) {
        const aclTensor *t = ptr(c, names[k]);
        if (t == NULL) continue; /* not a tensor form */
        const bool ok = shape_1 ? (t->ndim == 1 && t->dims[0] == 1) : pa_tensor_numel(t) == 1;
        if (!ok) return fail_shape(c, names[k], t, shape_1 ? "must be [1]" : "must hold one element");
    }
    return ACLNN_SUCCESS;
}

/* ---- the executor ---------------------------------------------------------- */

/* Fills p->v from the op's tensor parameters (API order) and makes the
 * executor: inputs = IN / INOUT tensors, outputs = OUT / INOUT, in API order. */
static int make_executor(const call *c, rnd_plan *p, uint64_t ws, uint64_t *workspaceSize,
                         aclOpExecutor **executor) {
    size_t in_off[MAX_VIEWS], out_off[MAX_VIEWS];
    int n_in = 0, n_out = 0, nv = 0;
    for (int i = 0; i < c->op->nparams && nv < MAX_VIEWS; i++) {
        const pa_param *q = &c->op->params[i];
        if (q->kind != PA_P_TENSOR) continue;
        const aclTensor *t = c->a[i].p;
        const size_t off = offsetof(rnd_plan, v) + (size_t)nv * sizeof(pa_tview);
        if (t != NULL) {
            p->v[nv] = pa_tview_of(t);
        } else {
            memset(&p->v[nv], 0, sizeof p->v[nv]);
            p->v[nv].dtype = ACL_DT_UNDEFINED;
        }
        if (q->io == PA_IN || q->io == PA_INOUT) in_off[n_in++] = t ? off : SIZE_MAX;
        if (q->io == PA_OUT || q->io == PA_INOUT) out_off[n_out++] = t ? off : SIZE_MAX;
        nv++;
    }
    return pa_op_executor(c->op, p, sizeof *p, in_off, n_in, out_off, n_out, ws, workspaceSize, executor);
}

/* The index (among the op's tensor parameters) of parameter `name`, or -1. */
static int8_t view_of(const call *c, const char *name) {
    int8_t nv = 0;
    for (int i = 0; i < c->op->nparams; i++) {
        if (c->op->params[i].kind != PA_P_TENSOR) continue;
        if (strcmp(c->op->params[i].name, name) == 0) return nv;
        nv++;
    }
    return -1;
}

static void set_fill_out(pa_rng_fill *f, const aclTensor *t, bool collapse) {
    const pa_tview v = pa_tview_of(t);
    f->out_dtype = v.dtype;
    if (collapse && pa_tview_is_contiguous(&v)) { /* one dim: element i at offset i */
        f->ndim = 1;
        f->dims[0] = pa_tensor_numel(t);
        f->strides[0] = 1;
        return;
    }
    f->ndim = v.ndim;
    for (int32_t d = 0; d < v.ndim; d++) {
        f->dims[d] = v.dims[d];
        f->strides[d] = v.strides[d];
    }
}

/* A double rounded to dtype dt and back. */
static double round_to(double v, aclDataType dt) {
    char tmp[8] = {0};
    pa_cvt_store_f(tmp, dt, v);
    return pa_cvt_load_f(tmp, dt);
}

static int uniform_digits(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT16: return 11;
    case ACL_BF16: return 8;
    case ACL_DOUBLE: return 53;
    default: return 24;
    }
}

/* ---- planners ----------------------------------------------------------------- */

static int plan_fill(const call *c, rnd_plan *p) {
    const int k = c->op->kernel;
    const aclTensor *self = tensor2(c, "selfRef", "self");
    const aclTensor *out = pa_op_param(c->op, "out") >= 0 ? ptr(c, "out") : self;
    pa_rng_fill *f = &p->fill;
    int rc = check_seed_tensors(c, k == PA_RANDOM_NORMAL_T);
    if (rc) return rc;
    switch (k) {
    case PA_RANDOM_NORMAL:
    case PA_RANDOM_NORMAL_T: {
        const double mean = num_f(c, "mean"), std = num_f(c, "std");
        if (std < 0) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: std must be >= 0, got %g", c->api, std);
        f->kind = PA_RNG_NORMAL;
        f->a = mean;
        f->b = std;
        break;
    }
    case PA_RANDOM_UNIFORM:
    case PA_RANDOM_UNIFORM_T: {
        double from = num_f(c, "from"), to = num_f(c, "to");
        if (from > to) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: from must not exceed to, got from %g and to %g", c->api,
                           from, to);
        }
        /* the vendor passes them as fp32 (fp16 / bf16 for those dtypes) */
        if (self->dtype == ACL_FLOAT16 || self->dtype == ACL_BF16) {
            from = round_to(from, self->dtype), to = round_to(to, self->dtype);
        } else if (self->dtype != ACL_DOUBLE) {
            from = round_to(from, ACL_FLOAT), to = round_to(to, ACL_FLOAT);
        }
        f->kind = PA_RNG_UNIFORM;
        f->a = from;
        f->b = to;
        f->digits = uniform_digits(self->dtype);
        break;
    }
    case PA_RANDOM_RANDOM:
    case PA_RANDOM_RANDOM_T: {
        const int64_t from = num_i(c, "from"), to = num_i(c, "to");
        if (from >= to) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: from must be less than to, got from %lld and to %lld",
                           c->api, (long long)from, (long long)to);
        }
        f->kind = PA_RNG_RANDOM;
        f->ifrom = from;
        f->range = (uint64_t)to - (uint64_t)from;
        break;
    }
    case PA_RANDOM_BERNOULLI:
    case PA_RANDOM_BERNOULLI_T: {
        if (out != self) {
            rc = check_same_dtype(c, "self", self, "out", out);
            if (rc == 0) rc = check_same_shape(c, "self", self, "out", out);
            if (rc) return rc;
        }
        if (k == PA_RANDOM_BERNOULLI) {
            const aclScalar *prob = ptr(c, "prob");
            const double pr = pa_scalar_f(prob);
            if (pr > 1 || pr < 0) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: prob must be in [0, 1], got %g", c->api, pr);
            }
            f->kind = PA_RNG_BERNOULLI;
            f->thr = (float)(1.0 - pr);
        } else {
            const aclTensor *prob = ptr(c, "prob");
            /* prob broadcasts to self (numpy rules) */
            bool ok = prob->ndim <= self->ndim;
            for (int32_t d = 0; ok && d < prob->ndim; d++) {
                const int64_t pd = prob->dims[d], sd = self->dims[d + self->ndim - prob->ndim];
                ok = pd == sd || pd == 1;
            }
            if (!ok) {
                char s1[160], s2[160];
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: prob shape %s cannot be broadcast to self shape %s",
                               c->api, pa_shape_str(prob->dims, prob->ndim, s1, sizeof s1),
                               pa_shape_str(self->dims, self->ndim, s2, sizeof s2));
            }
            if (is_empty(prob)) return ACLNN_SUCCESS; /* the vendor: nothing to do */
            f->kind = PA_RNG_BERNOULLI_T;
            p->vin = view_of(c, "prob");
        }
        break;
    }
    default: return pa_fail(ACLNN_ERR_INNER, "%s: internal error: kernel %d", c->api, k);
    }
    if (is_empty(out)) return ACLNN_SUCCESS;
    set_fill_out(f, out, f->kind != PA_RNG_BERNOULLI_T); /* prob's strides follow out's dims */
    if (f->kind == PA_RNG_BERNOULLI_T) {
        const aclTensor *prob = ptr(c, "prob");
        const pa_tview pv = pa_tview_of(prob);
        f->p_dtype = pv.dtype;
        for (int32_t d = 0; d < f->ndim; d++) {
            const int32_t pd = d - (f->ndim - pv.ndim);
            f->p_strides[d] = pd >= 0 && pv.dims[pd] != 1 ? pv.strides[pd] : 0;
        }
    }
    p->vout = view_of(c, pa_op_param(c->op, "out") >= 0 ? "out" : pa_op_param(c->op, "selfRef") >= 0 ? "selfRef"
                                                                                                        : "self");
    p->run = RUN_FILL;
    return ACLNN_SUCCESS;
}

static int plan_randperm(const call *c, rnd_plan *p, uint64_t *ws) {
    const aclTensor *out = ptr(c, "out");
    const int64_t n = num_i(c, "n");
    if (out->ndim != 1 || out->dims[0] != n) {
        char s[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out shape must be [%lld], got %s", c->api, (long long)n,
                       pa_shape_str(out->dims, out->ndim, s, sizeof s));
    }
    if (n < 0) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: n must be >= 0, got %lld", c->api, (long long)n);
    if (n == 0) return ACLNN_SUCCESS;
    p->n = n;
    p->vout = view_of(c, "out");
    p->run = RUN_RANDPERM;
    *ws = (uint64_t)n * sizeof(int64_t);
    return ACLNN_SUCCESS;
}

static int plan_multinomial(const call *c, rnd_plan *p, uint64_t *ws) {
    const aclTensor *self = ptr(c, "self"), *out = ptr(c, "out");
    const int64_t ns = num_i(c, "numsamples");
    const bool repl = num_b(c, "replacement");
    if (self->ndim != 1 && self->ndim != 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self must have 1 or 2 dims, got %d", c->api, (int)self->ndim);
    }
    if (out->ndim != self->ndim) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out must have as many dims as self (%d), got %d", c->api,
                       (int)self->ndim, (int)out->ndim);
    }
    if (out->dims[out->ndim - 1] != ns) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out's last dim must be numsamples (%lld), got %lld", c->api,
                       (long long)ns, (long long)out->dims[out->ndim - 1]);
    }
    if (self->ndim == 2 && self->dims[0] != out->dims[0]) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out's first dim must be self's (%lld), got %lld", c->api,
                       (long long)self->dims[0], (long long)out->dims[0]);
    }
    const int64_t ncat = self->dims[self->ndim - 1];
    if (ns <= 0) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: numsamples must be > 0, got %lld", c->api, (long long)ns);
    if (!repl && ns > ncat) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: numsamples (%lld) must not exceed the number of categories (%lld) without replacement",
                       c->api, (long long)ns, (long long)ncat);
    }
    if (ncat > ((int64_t)1 << 24)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the number of categories (%lld) must not exceed 2^24", c->api,
                       (long long)ncat);
    }
    int rc = check_seed_tensors(c, false);
    if (rc) return rc;
    if (is_empty(self)) return ACLNN_SUCCESS;
    p->ns = ns;
    p->replacement = repl;
    p->vin = view_of(c, "self");
    p->vout = view_of(c, "out");
    p->run = RUN_MULTINOMIAL;
    *ws = (uint64_t)ncat * 16;
    return ACLNN_SUCCESS;
}

static int plan_gen_mask(const call *c, rnd_plan *p) {
    const int k = c->op->kernel;
    const aclIntArray *shape = ptr(c, "shape");
    const aclTensor *out = ptr(c, "out");
    const double prob = num_f(c, "prob");
    if (out->dtype != ACL_UINT8) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out dtype must be UINT8, got %s", c->api,
                       pa_dtype_name(out->dtype));
    }
    if (prob > 1 || prob < 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: prob must be in [0, 1], got %g", c->api, prob);
    }
    int64_t numel = 1;
    for (uint64_t i = 0; i < shape->size; i++) {
        const int64_t d = shape->values[i];
        if (d < 0 || !pa_mul_ok(numel, d, &numel) || numel > (INT64_MAX - MASK_ALIGN_BITS)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: shape must hold non-negative sizes of at most 2^62 elements",
                           c->api);
        }
    }
    const int64_t need = (numel + MASK_ALIGN_BITS - 1) / MASK_ALIGN_BITS * MASK_ALIGN_BITS / 8;
    if (pa_tensor_numel(out) != need) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: out must hold %lld bytes (one bit per element of shape, rounded up to 128 bits), got %lld",
                       c->api, (long long)need, (long long)pa_tensor_numel(out));
    }
    int rc = check_seed_tensors(c, false);
    if (rc) return rc;
    if (need == 0) return ACLNN_SUCCESS;
    float thr;
    if (fabs(prob) <= DBL_EPS) {
        thr = 0.0f; /* every bit set (the vendor fills 0xFF) */
    } else if (fabs(prob - 1.0) <= DBL_EPS) {
        thr = 1.0f; /* none */
    } else {
        const aclDataType pdt = k == PA_RANDOM_GEN_MASK ? ACL_FLOAT : (aclDataType)num_i(c, "probDataType");
        if (pdt != ACL_FLOAT && pdt != ACL_FLOAT16 && pdt != ACL_BF16) {
            /* the vendor fails here, after the checks, with this code */
            return pa_fail(ACLNN_ERR_INNER_NULLPTR, "%s: probDataType must be FLOAT, FLOAT16 or BF16, got %s", c->api,
                           pa_dtype_name(pdt));
        }
        thr = (float)round_to((double)(float)prob, pdt);
    }
    pa_rng_fill *f = &p->fill;
    f->kind = PA_RNG_MASK;
    f->thr = thr;
    set_fill_out(f, out, true);
    p->vout = view_of(c, "out");
    p->run = RUN_FILL;
    return ACLNN_SUCCESS;
}

static int plan_do_mask(const call *c, rnd_plan *p) {
    const aclTensor *self = ptr(c, "self"), *mask = ptr(c, "mask"), *out = ptr(c, "out");
    const double prob = num_f(c, "prob");
    if (is_empty(self) || is_empty(mask)) return ACLNN_SUCCESS; /* the vendor returns before its checks */
    if (!pa_cvt_is_float(out->dtype)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self dtype %s cannot be cast to out dtype %s", c->api,
                       pa_dtype_name(self->dtype), pa_dtype_name(out->dtype));
    }
    if (prob > 1 || prob < 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: prob must be in [0, 1], got %g", c->api, prob);
    }
    int rc = check_same_shape(c, "self", self, "out", out);
    if (rc) return rc;
    const int64_t n = pa_tensor_numel(self);
    const int64_t need = (n + MASK_ALIGN_BITS - 1) / MASK_ALIGN_BITS * MASK_ALIGN_BITS / 8;
    if (pa_tensor_numel(mask) < need) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: mask must hold at least %lld bytes (one bit per element of self, rounded up to 128 bits), "
                       "got %lld", c->api, (long long)need, (long long)pa_tensor_numel(mask));
    }
    if (fabs(prob) <= DBL_EPS) {
        p->domask = DOMASK_COPY;
    } else if (fabs(prob - 1.0) <= DBL_EPS) {
        p->domask = DOMASK_ZERO;
    } else {
        p->domask = DOMASK_SCALE;
        p->keep = (float)round_to((double)(float)(1.0 - prob), self->dtype);
    }
    p->vin = view_of(c, "self");
    p->vmask = view_of(c, "mask");
    p->vout = view_of(c, "out");
    p->run = RUN_DO_MASK;
    return ACLNN_SUCCESS;
}

int pa_plan_random(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    call c = {op, a, op->ws_api};
    rnd_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.run = RUN_NOTHING;
    plan.kernel = op->kernel;
    plan.api = op->launch.name;
    plan.vout = plan.vin = plan.vmask = -1;
    plan.vseed = view_of(&c, "seedTensor");
    plan.voff = view_of(&c, "offsetTensor");
    plan.seed = (uint64_t)num_i(&c, "seed");
    plan.offset = (uint64_t)num_i(&c, "offset");
    uint64_t ws = 0;
    int rc;
    switch (op->kernel) {
    case PA_RANDOM_NORMAL: case PA_RANDOM_NORMAL_T:
    case PA_RANDOM_UNIFORM: case PA_RANDOM_UNIFORM_T:
    case PA_RANDOM_RANDOM: case PA_RANDOM_RANDOM_T:
    case PA_RANDOM_BERNOULLI: case PA_RANDOM_BERNOULLI_T: rc = plan_fill(&c, &plan); break;
    case PA_RANDOM_RANDPERM: rc = plan_randperm(&c, &plan, &ws); break;
    case PA_RANDOM_MULTINOMIAL: case PA_RANDOM_MULTINOMIAL_T: rc = plan_multinomial(&c, &plan, &ws); break;
    case PA_RANDOM_GEN_MASK: case PA_RANDOM_GEN_MASK_V2: case PA_RANDOM_GEN_MASK_V2_T:
        rc = plan_gen_mask(&c, &plan);
        break;
    case PA_RANDOM_DO_MASK: rc = plan_do_mask(&c, &plan); break;
    default:
        return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: internal error: %s is not a random-family operator",
                       op->ws_api, op->launch.name);
    }
    if (rc != ACLNN_SUCCESS) return rc;
    if (plan.run == RUN_NOTHING) ws = 0;
    return make_executor(&c, &plan, ws, workspaceSize, executor);
}

/* ---- run ----------------------------------------------------------------------- */

/* A row-major walk over a view's elements. */
typedef struct vwalk {
    const pa_tview *v;
    int64_t idx[PA_MAX_DIMS];
    int64_t off; /* elements */
} vwalk;

static void vwalk_start(vwalk *w, const pa_tview *v, int64_t i) {
    w->v = v;
    w->off = 0;
    for (int32_t d = v->ndim - 1; d >= 0; d--) {
        const int64_t n = v->dims[d];
        w->idx[d] = n > 0 ? i % n : 0;
        i = n > 0 ? i / n : 0;
        w->off += w->idx[d] * v->strides[d];
    }
}

static inline void vwalk_next(vwalk *w) {
    const pa_tview *v = w->v;
    for (int32_t d = v->ndim - 1; d >= 0; d--) {
        w->idx[d]++;
        w->off += v->strides[d];
        if (w->idx[d] < v->dims[d]) return;
        w->off -= v->dims[d] * v->strides[d];
        w->idx[d] = 0;
    }
}

static inline char *vat(const pa_tview *v, int64_t off) {
    return (char *)v->base + (v->offset + off) * (int64_t)pa_dtype_size(v->dtype);
}

static int64_t load_s64(const pa_tview *v) {
    int64_t x;
    memcpy(&x, vat(v, 0), sizeof x);
    return x;
}

/* The seed and offset of this launch (the tensor forms read them now). */
static void seed_offset(const rnd_plan *p, uint64_t *seed, uint64_t *offset) {
    *seed = p->seed;
    *offset = p->offset;
    if (p->vseed >= 0) *seed = (uint64_t)load_s64(&p->v[p->vseed]);
    if (p->voff >= 0) *offset = (uint64_t)load_s64(&p->v[p->voff]) + p->offset;
}

static int run_fill(const rnd_plan *p) {
    pa_rng_fill f = p->fill;
    seed_offset(p, &f.seed, &f.offset);
    const pa_tview *o = &p->v[p->vout];
    f.out = vat(o, 0);
    if (f.kind == PA_RNG_BERNOULLI_T) {
        const pa_tview *pv = &p->v[p->vin];
        /* every probability in [0, 1] before anything is written */
        int64_t n = 1;
        for (int32_t d = 0; d < pv->ndim; d++) n *= pv->dims[d];
        vwalk w;
        vwalk_start(&w, pv, 0);
        for (int64_t i = 0; i < n; i++, vwalk_next(&w)) {
            const double x = pa_cvt_load_f(vat(pv, w.off), pv->dtype);
            if (!(x >= 0 && x <= 1)) {
                return pa_fail(ACLNN_ERR_RUNTIME_ERROR, "%s: prob element %lld is %g; probabilities must be in [0, 1]",
                               p->api, (long long)i, x);
            }
        }
        f.p = vat(pv, 0);
    }
    pa_rng_run(&f);
    return ACLNN_SUCCESS;
}

static int run_randperm(const rnd_plan *p, void *workspace) {
    uint64_t seed, offset;
    seed_offset(p, &seed, &offset);
    int64_t *a = workspace;
    pa_rng_randperm(seed, offset, a, p->n);
    const pa_tview *o = &p->v[p->vout];
    vwalk w;
    vwalk_start(&w, o, 0);
    for (int64_t i = 0; i < p->n; i++, vwalk_next(&w)) pa_cvt_store_i(vat(o, w.off), o->dtype, a[i]);
    return ACLNN_SUCCESS;
}

typedef struct keyed {
    double key;
    int64_t idx;
} keyed;

static int by_key_desc(const void *x, const void *y) {
    const keyed *a = x, *b = y;
    if (a->key > b->key) return -1;
    if (a->key < b->key) return 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int run_multinomial(const rnd_plan *p, void *workspace) {
    uint64_t seed, offset;
    seed_offset(p, &seed, &offset);
    const pa_tview *s = &p->v[p->vin], *o = &p->v[p->vout];
    const int64_t rows = s->ndim == 2 ? s->dims[0] : 1, ncat = s->dims[s->ndim - 1], ns = p->ns;
    const int64_t rs = s->ndim == 2 ? s->strides[0] : 0, cs = s->strides[s->ndim - 1];
    const int64_t ors = o->ndim == 2 ? o->strides[0] : 0, ocs = o->strides[o->ndim - 1];
    /* every row a valid distribution before anything is written */
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0;
        int64_t positive = 0;
        for (int64_t j = 0; j < ncat; j++) {
            const double w = pa_cvt_load_f(vat(s, r * rs + j * cs), s->dtype);
            if (!(w >= 0) || isinf(w)) {
                return pa_fail(ACLNN_ERR_RUNTIME_ERROR,
                               "%s: invalid multinomial distribution: self row %lld holds %g at %lld (weights must be "
                               "finite and >= 0)", p->api, (long long)r, w, (long long)j);
            }
            sum += w;
            positive += w > 0;
        }
        if (!(sum > 0) || isinf(sum)) {
            return pa_fail(ACLNN_ERR_RUNTIME_ERROR,
                           "%s: invalid multinomial distribution: the weights of self row %lld sum to %g", p->api,
                           (long long)r, sum);
        }
        if (!p->replacement && positive < ns) {
            return pa_fail(ACLNN_ERR_RUNTIME_ERROR,
                           "%s: invalid multinomial distribution: self row %lld has %lld categories of non-zero "
                           "weight, fewer than numsamples (%lld) without replacement", p->api, (long long)r,
                           (long long)positive, (long long)ns);
        }
    }
    for (int64_t r = 0; r < rows; r++) {
        if (p->replacement) {
            double *cdf = workspace, acc = 0;
            int64_t last = 0;
            for (int64_t j = 0; j < ncat; j++) {
                const double w = pa_cvt_load_f(vat(s, r * rs + j * cs), s->dtype);
                acc += w;
                cdf[j] = acc;
                if (w > 0) last = j;
            }
            for (int64_t k = 0; k < ns; k++) {
                const double u = (double)(pa_rng_u64(seed, offset, (uint64_t)(r * ns + k)) >> 11) * 0x1p-53;
                const double target = u * acc;
                int64_t lo = 0, hi = ncat; /* the first j with cdf[j] > target */
                while (lo < hi) {
                    const int64_t mid = lo + (hi - lo) / 2;
                    if (cdf[mid] > target) hi = mid;
                    else lo = mid + 1;
                }
                pa_cvt_store_i(vat(o, r * ors + k * ocs), o->dtype, lo < ncat ? lo : last);
            }
        } else {
            keyed *kv = workspace;
            for (int64_t j = 0; j < ncat; j++) {
                const double w = pa_cvt_load_f(vat(s, r * rs + j * cs), s->dtype);
                const uint64_t bits = pa_rng_u64(seed, offset, (uint64_t)(r * ncat + j));
                const double u = (double)((bits >> 11) + 1) * 0x1p-53; /* (0, 1] */
                const double e = -log(u);                             /* Exp(1) */
                kv[j].key = w > 0 ? w / e : 0; /* e == 0: +inf */
                kv[j].idx = j;
            }
            qsort(kv, (size_t)ncat, sizeof *kv, by_key_desc);
            for (int64_t k = 0; k < ns; k++) pa_cvt_store_i(vat(o, r * ors + k * ocs), o->dtype, kv[k].idx);
        }
    }
    return ACLNN_SUCCESS;
}

typedef struct domask_ctx {
    const rnd_plan *p;
    const uint8_t *mask; /* contiguous mask bytes, or NULL: read through the view */
} domask_ctx;

static inline unsigned mask_bit(const domask_ctx *c, int64_t i) {
    const pa_tview *m = &c->p->v[c->p->vmask];
    uint8_t byte;
    if (c->mask != NULL) {
        byte = c->mask[i >> 3];
    } else {
        vwalk w;
        vwalk_start(&w, m, i >> 3);
        byte = *(const uint8_t *)vat(m, w.off);
    }
    return (byte >> (i & 7)) & 1u;
}

static void domask_range(void *ctx, int64_t begin, int64_t end) {
    const domask_ctx *c = ctx;
    const rnd_plan *p = c->p;
    const pa_tview *x = &p->v[p->vin], *o = &p->v[p->vout];
    const float recip = 1.0f / p->keep;
    vwalk wx, wo;
    vwalk_start(&wx, x, begin);
    vwalk_start(&wo, o, begin);
    for (int64_t i = begin; i < end; i++, vwalk_next(&wx), vwalk_next(&wo)) {
        double y = 0;
        if (p->domask == DOMASK_COPY) {
            y = pa_cvt_load_f(vat(x, wx.off), x->dtype);
        } else if (p->domask == DOMASK_SCALE && mask_bit(c, i)) {
            const float v = (float)pa_cvt_load_f(vat(x, wx.off), x->dtype) * recip;
            y = round_to((double)v, x->dtype); /* the kernel's result is self's dtype */
        }
        pa_cvt_store_f(vat(o, wo.off), o->dtype, y);
    }
}

static int run_do_mask(const rnd_plan *p) {
    const pa_tview *x = &p->v[p->vin], *m = &p->v[p->vmask];
    int64_t n = 1;
    for (int32_t d = 0; d < x->ndim; d++) n *= x->dims[d];
    domask_ctx c = {p, pa_tview_is_contiguous(m) ? (const uint8_t *)vat(m, 0) : NULL};
    if (n <= 16384) domask_range(&c, 0, n);
    else pa_parallel_for(n, 16384, domask_range, &c);
    return ACLNN_SUCCESS;
}

int pa_run_random(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace_size);
    const rnd_plan *p = plan;
    switch (p->run) {
    case RUN_NOTHING: return ACLNN_SUCCESS;
    case RUN_FILL: return run_fill(p);
    case RUN_RANDPERM: return run_randperm(p, workspace);
    case RUN_MULTINOMIAL: return run_multinomial(p, workspace);
    case RUN_DO_MASK: return run_do_mask(p);
    default: return pa_fail(ACLNN_ERR_INNER, "%s: internal error: unknown plan %d", p->api, (int)p->run);
    }
}
