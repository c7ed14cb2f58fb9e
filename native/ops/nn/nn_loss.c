/* The losses: SoftmaxCrossEntropyWithLogits (activation/softmax_cross_entropy_with_logits),
 * NLLLoss and NLLLossBackward (loss/nll_loss, loss/nll_loss_grad).
 *
 *   SoftmaxCrossEntropyWithLogits (features, labels [N, C]):
 *     loss[n] = sum_c labels * (log(s) - (x - max)),  backprop = e / s - labels
 *     (e = exp(x - max), s = sum e), fp32, rounded to features' dtype
 *   NLLLoss (self [N, C] or [C], target [N] or []):
 *     l[n] = -weight[t] * self[n, t] (0 where t == ignoreIndex);
 *     none: out = l; sum: out = sum l; mean: out = sum l / totalWeight,
 *     totalWeight = sum weight[t] over the counted rows (both sums: the row
 *     kernels' fixed order); fp16 computes in fp32 (CANN casts it), bf16 / fp32
 *     in fp32 rounded to their dtype
 *   NLLLossBackward: out = 0, out[n, t] = weight[t] * -(g) with g = gradOutput
 *     (none: gradOutput[n]; mean: gradOutput / totalWeight)
 * Targets other than ignoreIndex must lie in [0, C): checked at launch before
 * anything is written (361001 naming the value and its position). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "kernels/map/map_cvt.h"
#include "ops/nn/nn_impl.h"
#include "runtime/pa_threadpool.h"

/* ---- SoftmaxCrossEntropyWithLogits ---- */

/* iv: 0 features, 1 labels, 2 loss, 3 backprop */
static int plan_softmax_ce(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *f = a[0].p, *lb = a[1].p, *loss = a[2].p, *bp = a[3].p;
    int rc = nn_check_same_dtype(api, "loss", loss, "features", f);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_dtype(api, "backprop", bp, "features", f);
    if (rc != ACLNN_SUCCESS) return rc;
    if (f->ndim != 2 || lb->ndim != 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: features and labels must be 2-D, got %d and %d dims", api,
                       (int)f->ndim, (int)lb->ndim);
    }
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_NOTHING);
    if (nn_is_empty(f) || nn_is_empty(lb)) return nn_finish(op, &p, 0, ws, ex);
    rc = nn_check_same_shape(api, "labels", lb, "features", f, ACLNN_ERR_PARAM_INVALID);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_shape(api, "backprop", bp, "features", f, ACLNN_ERR_PARAM_INVALID);
    if (rc == ACLNN_SUCCESS) rc = nn_check_shape(api, "loss", loss, 1, f->dims, ACLNN_ERR_PARAM_INVALID);
    if (rc != ACLNN_SUCCESS) return rc;
    const int sf = p.slot[0], sl = p.slot[1], slo = p.slot[2], sb = p.slot[3];
    nn_set_rows(&p, f->dims, 1, f->dims + 1, 1);
    nn_set_lay_split(&p, sf, 1);
    nn_set_lay_split(&p, sl, 1);
    nn_set_lay_split(&p, sb, 1);
    nn_set_lay(&p, slo, p.v[slo].strides, NULL);
    p.res[slo] = p.res[sb] = f->dtype;
    p.iv[0] = sf, p.iv[1] = sl, p.iv[2] = slo, p.iv[3] = sb;
    p.run = NN_RUN_SOFTMAX_CE;
    return nn_finish(op, &p, 0, ws, ex);
}

typedef struct ce_ctx {
    const nn_plan *p;
    const pa_nn_vec *k;
    atomic_int oom;
} ce_ctx;

static void ce_rows(void *vctx, int64_t r0, int64_t r1) {
    ce_ctx *c = vctx;
    const nn_plan *p = c->p;
    const pa_nn_vec *k = c->k;
    const int64_t n = p->rlen;
    const int sf = (int)p->iv[0], sl = (int)p->iv[1], slo = (int)p->iv[2], sb = (int)p->iv[3];
    float *x = nn_scratch(3, n);
    if (x == NULL) {
        atomic_store(&c->oom, 1);
        return;
    }
    float *e = x + NN_SSTRIDE(n), *lb = e + NN_SSTRIDE(n);
    for (int64_t r = r0; r < r1; r++) {
        nn_load(p, k, sf, r, x);
        nn_load(p, k, sl, r, lb);
        const float m = k->max(x, n);
        memcpy(e, x, (size_t)n * sizeof(float));
        const float s = k->expsub_sum(e, n, m);
        const float ls = logf(s), inv = 1.0f / s;
        for (int64_t i = 0; i < n; i++) x[i] = ls - (x[i] - m);
        const float loss = k->dot(lb, x, n);
        for (int64_t i = 0; i < n; i++) e[i] = e[i] * inv - lb[i];
        nn_store(p, k, sb, r, e);
        nn_put1(p, slo, nn_row_off(p, slo, r), loss);
    }
}

int nn_run_softmax_ce(const nn_plan *p) {
    ce_ctx c = {p, pa_nn_vec_active(), 0};
    pa_parallel_for(p->rows, nn_grain(p->rlen), ce_rows, &c);
    if (atomic_load(&c.oom)) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the rows");
    return ACLNN_SUCCESS;
}

/* ---- NLLLoss / NLLLossBackward ---- */

/* the shape rules both share; self 1-D or 2-D, target 0-D or 1-D, weight [C] */
static int nll_shapes(const char *api, const aclTensor *self, const aclTensor *target, const aclTensor *weight,
                      bool backward) {
    const int sd = self->ndim, td = target->ndim;
    if (sd < 1 || sd > 2) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self must be 1-D or 2-D, got %d dims", api, sd);
    if (td > 1) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: target must be 0-D or 1-D, got %d dims", api, td);
    const bool nobatch = sd == 1 && td == 0;
    const bool ok = backward ? nobatch || (td == 1 && self->dims[0] == target->dims[0])
                             : nobatch || (sd == 2 && td == 1 && self->dims[0] == target->dims[0]);
    if (!ok) {
        char s1[160], s2[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self %s and target %s: a 1-D self takes a 0-D target, a 2-D self "
                       "a 1-D target of its first dim", api, pa_shape_str(self->dims, sd, s1, sizeof s1),
                       pa_shape_str(target->dims, td, s2, sizeof s2));
    }
    const int64_t C = self->dims[sd - 1];
    if (weight->ndim != 1 || weight->dims[0] != C) {
        char s1[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: weight must be 1-D of the %lld classes, got shape %s", api,
                       (long long)C, pa_shape_str(weight->dims, weight->ndim, s1, sizeof s1));
    }
    return ACLNN_SUCCESS;
}

static int check_reduction(const char *api, int64_t reduction) {
    if (reduction < 0 || reduction > 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: reduction must be 0 (none), 1 (mean) or 2 (sum), got %lld", api,
                       (long long)reduction);
    }
    return ACLNN_SUCCESS;
}

/* the dtype values are rounded to: bf16 stays, fp16 computes in fp32 */
static aclDataType nll_res(aclDataType self) { return self == ACL_BF16 ? ACL_BF16 : ACL_FLOAT; }

/* iv: 0 self, 1 target, 2 weight, 3 out, 4 totalWeight / gradOutput, 5 totalWeight (backward); 6 N, 7 C;
 * mode = reduction; dv[0] = ignoreIndex (as iv would overflow: kept exact in iv[5..]) */
static int plan_nll(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *target = a[1].p, *weight = a[2].p, *out = a[5].p, *tw = a[6].p;
    const int64_t reduction = a[3].i;
    int rc = nn_check_same_dtype(api, "weight", weight, "self", self);
    if (rc == ACLNN_SUCCESS) rc = check_reduction(api, reduction);
    if (rc == ACLNN_SUCCESS) rc = nll_shapes(api, self, target, weight, false);
    if (rc != ACLNN_SUCCESS) return rc;
    const int sd = self->ndim;
    if (reduction == 0 && sd == 2) {
        rc = nn_check_shape(api, "out", out, 1, self->dims, ACLNN_ERR_PARAM_INVALID);
    } else if (out->ndim > 1 || nn_numel(out) != 1) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out must be a single element tensor", api);
    }
    if (rc == ACLNN_SUCCESS && nn_numel(tw) != 1) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: totalWeightOut must have 1 element", api);
    }
    if (rc != ACLNN_SUCCESS) return rc;
    const int64_t C = self->dims[sd - 1];
    if (nn_is_empty(self) && C == 0 && nn_numel(target) > 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: target is out of bounds (self has no classes)", api);
    }
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_NOTHING);
    const int ss = p.slot[0], st = p.slot[1], sw = p.slot[2], so = p.slot[5], stw = p.slot[6];
    p.res[so] = p.res[stw] = nll_res(self->dtype);
    if (nn_is_empty(self)) {
        if (reduction != 0) {
            p.run = NN_RUN_FILL;
            p.iv[0] = 2, p.iv[1] = so, p.dv[0] = reduction == 1 ? NAN : 0.0, p.iv[3] = stw, p.dv[1] = 0.0;
        }
        return nn_finish(op, &p, 0, ws, ex);
    }
    p.run = NN_RUN_NLL_LOSS;
    p.iv[0] = ss, p.iv[1] = st, p.iv[2] = sw, p.iv[3] = so, p.iv[4] = stw;
    p.iv[6] = sd == 2 ? self->dims[0] : 1;
    p.iv[7] = C;
    p.iv[5] = a[4].i; /* ignoreIndex */
    p.mode = (int32_t)reduction;
    return nn_finish(op, &p, 0, ws, ex);
}

/* iv: 0 gradOutput, 1 self, 2 target, 3 weight, 4 totalWeight, 5 ignoreIndex, 6 N, 7 C; slot of out in flags */
static int plan_nll_grad(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *g = a[0].p, *self = a[1].p, *target = a[2].p, *weight = a[3].p, *tw = a[6].p, *out = a[7].p;
    const int64_t reduction = a[4].i;
    int rc = nn_check_same_dtype(api, "weight", weight, "self", self);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_dtype(api, "gradOutput", g, "self", self);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_dtype(api, "totalWeight", tw, "self", self);
    if (rc == ACLNN_SUCCESS) rc = check_reduction(api, reduction);
    if (rc == ACLNN_SUCCESS) rc = nll_shapes(api, self, target, weight, true);
    if (rc != ACLNN_SUCCESS) return rc;
    if (nn_numel(tw) != 1) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: totalWeight must have 1 element", api);
    const int sd = self->ndim;
    if (reduction == 0 && sd == 2) {
        rc = nn_check_shape(api, "gradOutput", g, 1, self->dims, ACLNN_ERR_PARAM_INVALID);
    } else if (g->ndim > 1 || nn_numel(g) != 1) {
        rc = pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: gradOutput must be a single element tensor", api);
    }
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_shape(api, "out", out, "self", self, ACLNN_ERR_PARAM_INVALID);
    if (rc != ACLNN_SUCCESS) return rc;
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_NOTHING);
    if (nn_is_empty(self)) return nn_finish(op, &p, 0, ws, ex);
    const int so = p.slot[7];
    p.res[so] = nll_res(self->dtype);
    p.run = NN_RUN_NLL_LOSS_GRAD;
    p.iv[0] = p.slot[0], p.iv[1] = p.slot[1], p.iv[2] = p.slot[2], p.iv[3] = p.slot[3], p.iv[4] = p.slot[6];
    p.iv[5] = a[5].i;
    p.iv[6] = sd == 2 ? self->dims[0] : 1;
    p.iv[7] = self->dims[sd - 1];
    p.flags = so;
    p.mode = (int32_t)reduction;
    return nn_finish(op, &p, 0, ws, ex);
}

int nn_plan_loss(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    switch (op->kernel) {
    case PA_NN_SOFTMAX_CE: return plan_softmax_ce(op, a, ws, ex);
    case PA_NN_NLL_LOSS: return plan_nll(op, a, ws, ex);
    default: return plan_nll_grad(op, a, ws, ex);
    }
}

/* the element offset of [n, c] (or [c]) of a 1-D / 2-D view */
static int64_t off2(const pa_tview *v, int64_t n, int64_t c) {
    return v->ndim == 2 ? n * v->strides[0] + c * v->strides[1] : c * (v->ndim == 1 ? v->strides[0] : 0);
}

/* reads the N targets and checks them: [0, C) or ignoreIndex */
static int load_targets(const nn_plan *p, int st, int64_t N, int64_t C, int64_t ignore, int64_t **out) {
    const pa_tview *v = &p->v[st];
    int64_t *t = malloc((size_t)N * sizeof(int64_t));
    if (t == NULL) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the targets");
    const char *base = (const char *)pa_tview_ptr(v);
    const size_t es = pa_dtype_size(v->dtype);
    for (int64_t n = 0; n < N; n++) {
        const int64_t off = v->ndim == 1 ? n * v->strides[0] : 0;
        const int64_t x = pa_cvt_load_i(base + off * (int64_t)es, v->dtype);
        if (x != ignore && (x < 0 || x >= C)) {
            free(t);
            return pa_fail(ACLNN_ERR_RUNTIME_ERROR, "%s: target value %lld (element %lld) is out of range: it must be "
                           "in [0, %lld) or ignoreIndex (%lld)", p->api, (long long)x, (long long)n, (long long)C,
                           (long long)ignore);
        }
        t[n] = x;
    }
    *out = t;
    return ACLNN_SUCCESS;
}

int nn_run_nll_loss(const nn_plan *p) {
    const int ss = (int)p->iv[0], st = (int)p->iv[1], sw = (int)p->iv[2], so = (int)p->iv[3], stw = (int)p->iv[4];
    const int64_t N = p->iv[6], C = p->iv[7], ignore = p->iv[5];
    int64_t *t = NULL;
    int rc = load_targets(p, st, N, C, ignore, &t);
    if (rc != ACLNN_SUCCESS) return rc;
    float *buf = malloc((size_t)N * 2 * sizeof(float));
    if (buf == NULL) {
        free(t);
        return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the losses");
    }
    float *l = buf, *w = buf + N;
    const pa_tview *sv = &p->v[ss], *wv = &p->v[sw];
    for (int64_t n = 0; n < N; n++) {
        if (t[n] == ignore) {
            l[n] = 0.0f, w[n] = 0.0f;
            continue;
        }
        w[n] = nn_get1(p, sw, off2(wv, 0, t[n]));
        l[n] = -w[n] * nn_get1(p, ss, off2(sv, n, t[n]));
    }
    const pa_tview *ov = &p->v[so];
    if (p->mode == 0) {
        for (int64_t n = 0; n < N; n++) nn_put1(p, so, ov->ndim == 1 ? n * ov->strides[0] : 0, l[n]);
    } else {
        const pa_nn_vec *k = pa_nn_vec_active();
        const float sum = k->sum(l, N), tw = k->sum(w, N);
        nn_put1(p, so, 0, p->mode == 1 ? sum / tw : sum);
        nn_put1(p, stw, 0, tw);
    }
    free(buf);
    free(t);
    return ACLNN_SUCCESS;
}

int nn_run_nll_loss_grad(const nn_plan *p) {
    const int sg = (int)p->iv[0], st = (int)p->iv[2], sw = (int)p->iv[3], stw = (int)p->iv[4], so = p->flags;
    const int64_t N = p->iv[6], C = p->iv[7], ignore = p->iv[5];
    int64_t *t = NULL;
    int rc = load_targets(p, st, N, C, ignore, &t);
    if (rc != ACLNN_SUCCESS) return rc;
    const pa_tview *ov = &p->v[so], *gv = &p->v[sg], *wv = &p->v[sw];
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < C; c++) nn_put1(p, so, off2(ov, n, c), 0.0);
    }
    const aclDataType cdt = nll_res(p->v[sg].dtype);
    const float tw = nn_round_to(cdt, nn_get1(p, stw, 0));
    for (int64_t n = 0; n < N; n++) {
        if (t[n] == ignore) continue;
        const float g = nn_round_to(cdt, nn_get1(p, sg, p->mode == 0 && gv->ndim == 1 ? n * gv->strides[0] : 0));
        const float gv_ = p->mode == 1 ? -(g / tw) : -g;
        nn_put1(p, so, off2(ov, n, t[n]), nn_get1(p, sw, off2(wv, 0, t[n])) * gv_);
    }
    free(t);
    return ACLNN_SUCCESS;
}
