/* Softmax, LogSoftmax and their gradients (the vendor's activation/softmax_v2,
 * log_softmax_v2, softmax_grad, log_softmax_grad), rows along `dim`.
 *
 *   Softmax        y = e / s,  e = exp(x - max), s = sum e   (computed in
 *                  self's dtype: fp32 for fp16 / bf16, rounded to self's
 *                  dtype, then cast to out's)
 *   LogSoftmax     y = (x - max) - log(s)   (self cast to out's dtype first,
 *                  computed and rounded in out's dtype)
 *   SoftmaxBackward     out = y * (dy - sum(dy * y))
 *   LogSoftmaxBackward  out = dy - exp(y) * sum(dy)
 * in fp32 (fp64 for DOUBLE) with the row kernels' fixed-order sums; 1 / s is
 * one division per row. A row holding a NaN (or +inf) gives NaN everywhere. */
#include <math.h>
#include <stdatomic.h>

#include "ops/nn/nn_impl.h"
#include "runtime/pa_threadpool.h"

/* ---- planning ---- */

/* rows along `dim` of a tensor (0-d: one row of one element) */
static void rows_along(nn_plan *p, const aclTensor *t, int64_t dim) {
    if (t->ndim == 0) {
        const int64_t one = 1;
        nn_set_rows(p, NULL, 0, &one, 1);
        return;
    }
    int64_t od[PA_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i != dim) od[k++] = t->dims[i];
    }
    nn_set_rows(p, od, k, &t->dims[dim], 1);
}

static void lay_along(nn_plan *p, int slot, int64_t dim) {
    if (p->v[slot].ndim == 0) {
        const int64_t z = 0;
        nn_set_lay(p, slot, NULL, &z);
    } else {
        nn_set_lay_dim(p, slot, (int)dim);
    }
}

static int plan_forward(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *out = a[2].p;
    const bool log = op->kernel == PA_NN_LOG_SOFTMAX;
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_NOTHING);
    if (!log && nn_is_empty(self)) return nn_finish(op, &p, 0, ws, ex); /* CANN: before any other check */
    int64_t dim = 0;
    int rc = nn_wrap_dim(api, "dim", a[1].i, self->ndim, true, &dim);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_shape(api, "out", out, "self", self, ACLNN_ERR_PARAM_INVALID);
    if (rc != ACLNN_SUCCESS) return rc;
    if (nn_is_empty(self)) return nn_finish(op, &p, 0, ws, ex);
    const int sx = p.slot[0], so = p.slot[2];
    rows_along(&p, self, dim);
    lay_along(&p, sx, dim);
    lay_along(&p, so, dim);
    /* Softmax computes in self's dtype; LogSoftmax casts self to out's dtype first */
    const aclDataType cdt = log ? out->dtype : self->dtype;
    p.f64 = cdt == ACL_DOUBLE;
    p.res[so] = cdt;
    p.mode = log;
    p.flags = log && self->dtype != out->dtype && nn_is_float16ish(out->dtype); /* round x to out's dtype */
    p.nt = nn_stream_out(nn_numel(out) * (int64_t)pa_dtype_size(out->dtype));
    p.iv[0] = sx;
    p.iv[1] = so;
    p.run = NN_RUN_SOFTMAX;
    return nn_finish(op, &p, 0, ws, ex);
}

static int plan_backward(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *dy = a[0].p, *y = a[1].p, *out = a[3].p;
    const bool log = op->kernel == PA_NN_LOG_SOFTMAX_BACKWARD;
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_NOTHING);
    if (nn_is_empty(dy) || nn_is_empty(y)) return nn_finish(op, &p, 0, ws, ex); /* CANN: before the checks */
    int rc = nn_check_same_dtype(api, "output", y, "gradOutput", dy);
    int64_t dim = 0;
    if (rc == ACLNN_SUCCESS && !log) rc = nn_wrap_dim(api, "dim", a[2].i, dy->ndim, true, &dim);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_shape(api, "output", y, "gradOutput", dy, ACLNN_ERR_PARAM_INVALID);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_shape(api, "out", out, "gradOutput", dy, ACLNN_ERR_PARAM_INVALID);
    if (rc == ACLNN_SUCCESS && log) rc = nn_wrap_dim(api, "dim", a[2].i, dy->ndim, true, &dim);
    if (rc != ACLNN_SUCCESS) return rc;
    const int sdy = p.slot[0], sy = p.slot[1], so = p.slot[3];
    rows_along(&p, dy, dim);
    lay_along(&p, sdy, dim);
    lay_along(&p, sy, dim);
    lay_along(&p, so, dim);
    p.res[so] = dy->dtype;
    p.mode = log;
    p.iv[0] = sdy;
    p.iv[1] = sy;
    p.iv[2] = so;
    p.run = NN_RUN_SOFTMAX_GRAD;
    return nn_finish(op, &p, 0, ws, ex);
}

int nn_plan_softmax(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    if (op->kernel == PA_NN_SOFTMAX || op->kernel == PA_NN_LOG_SOFTMAX) return plan_forward(op, a, ws, ex);
    return plan_backward(op, a, ws, ex);
}

/* ---- running ---- */

typedef struct sm_ctx {
    const nn_plan *p;
    const pa_nn_vec *k;
    atomic_int oom;
} sm_ctx;

static void fwd_rows_f32(void *vctx, int64_t r0, int64_t r1) {
    sm_ctx *c = vctx;
    const nn_plan *p = c->p;
    const pa_nn_vec *k = c->k;
    const int64_t n = p->rlen;
    const int sx = (int)p->iv[0], so = (int)p->iv[1];
    float *x = nn_scratch(2, n);
    if (x == NULL) {
        atomic_store(&c->oom, 1);
        return;
    }
    float *e = x + NN_SSTRIDE(n);
    const aclDataType cdt = p->res[so];
    const int pf_es = (int)pa_dtype_size(p->v[sx].dtype);
    for (int64_t r = r0; r < r1; r++) {
        const void *pf = nn_next_row(p, sx, r, r1); /* prefetched during the exp */
        /* FLOAT rows in and out are used in place, 16-bit ones converted in the max / the scale */
        const float *xin = p->flags ? NULL : nn_row_in_f32(p, sx, r);
        float m;
        if (xin != NULL) {
            m = k->max(xin, n);
        } else {
            int bf = 0;
            const uint16_t *x16 = p->flags ? NULL : nn_row_in_16(p, sx, r, &bf);
            if (x16 != NULL) {
                m = k->ld16_max(x, x16, n, bf);
            } else {
                nn_load(p, k, sx, r, x);
                if (p->flags) {
                    for (int64_t i = 0; i < n; i++) x[i] = nn_round_to(cdt, x[i]);
                }
                m = k->max(x, n);
            }
            xin = x;
        }
        float *yout = nn_row_out_f32(p, so, r);
        int obf = 0;
        uint16_t *y16 = yout != NULL ? NULL : nn_row_out_16(p, so, r, &obf);
        if (p->mode) { /* log softmax: (x - max) - log(sum exp(x - max)) */
            const float ls = logf(k->expsub_sum_to(e, xin, n, m, pf, pf_es));
            float *y = yout != NULL ? yout : e;
            k->sub2(y, xin, m, ls, n, yout != NULL && p->nt, NULL, 0);
            if (yout == NULL) {
                if (y16 != NULL) (obf ? k->f2b : k->f2h)(y16, y, n);
                else nn_store(p, k, so, r, y);
            }
        } else { /* e in scratch, then e * (1 / sum) into the output */
            float *t = xin == x ? x : e;
            const float inv = 1.0f / k->expsub_sum_to(t, xin, n, m, pf, pf_es);
            if (y16 != NULL) {
                k->st16_scale(y16, t, inv, n, obf, p->nt, NULL, 0);
            } else if (yout != NULL) {
                k->scale(yout, t, inv, n, p->nt, NULL, 0);
            } else {
                k->scale(t, t, inv, n, 0, NULL, 0);
                nn_store(p, k, so, r, t);
            }
        }
    }
    if (p->nt) k->fence(); /* the streamed lines land before the chunk counts as done */
}

static void fwd_rows_f64(void *vctx, int64_t r0, int64_t r1) {
    sm_ctx *c = vctx;
    const nn_plan *p = c->p;
    const int64_t n = p->rlen;
    const int sx = (int)p->iv[0], so = (int)p->iv[1];
    double *x = (double *)nn_scratch(4, n);
    if (x == NULL) {
        atomic_store(&c->oom, 1);
        return;
    }
    double *e = x + NN_SSTRIDE(n);
    for (int64_t r = r0; r < r1; r++) {
        nn_load_d(p, sx, r, x);
        double m = -INFINITY;
        for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
        double s = 0.0;
        for (int64_t i = 0; i < n; i++) {
            e[i] = exp(x[i] - m);
            s += e[i];
        }
        if (p->mode) {
            const double ls = log(s);
            for (int64_t i = 0; i < n; i++) e[i] = (x[i] - m) - ls;
        } else {
            const double inv = 1.0 / s;
            for (int64_t i = 0; i < n; i++) e[i] = e[i] * inv;
        }
        nn_store_d(p, so, r, e);
    }
}

int nn_run_softmax(const nn_plan *p) {
    sm_ctx c = {p, pa_nn_vec_active(), 0};
    pa_parallel_for(p->rows, nn_grain(p->rlen), p->f64 ? fwd_rows_f64 : fwd_rows_f32, &c);
    if (atomic_load(&c.oom)) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the softmax rows");
    return ACLNN_SUCCESS;
}

static void bwd_rows(void *vctx, int64_t r0, int64_t r1) {
    sm_ctx *c = vctx;
    const nn_plan *p = c->p;
    const pa_nn_vec *k = c->k;
    const int64_t n = p->rlen;
    const int sdy = (int)p->iv[0], sy = (int)p->iv[1], so = (int)p->iv[2];
    float *dy = nn_scratch(2, n);
    if (dy == NULL) {
        atomic_store(&c->oom, 1);
        return;
    }
    float *y = dy + NN_SSTRIDE(n);
    for (int64_t r = r0; r < r1; r++) {
        nn_load(p, k, sdy, r, dy);
        nn_load(p, k, sy, r, y);
        if (p->mode) { /* out = dy - exp(y) * sum(dy) */
            const float s = k->sum(dy, n);
            k->exp(y, y, n);
            for (int64_t i = 0; i < n; i++) y[i] = dy[i] - y[i] * s;
        } else { /* out = y * (dy - sum(dy * y)) */
            const float d = k->dot(dy, y, n);
            for (int64_t i = 0; i < n; i++) y[i] = y[i] * (dy[i] - d);
        }
        nn_store(p, k, so, r, y);
    }
}

int nn_run_softmax_grad(const nn_plan *p) {
    sm_ctx c = {p, pa_nn_vec_active(), 0};
    pa_parallel_for(p->rows, nn_grain(p->rlen), bwd_rows, &c);
    if (atomic_load(&c.oom)) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the softmax rows");
    return ACLNN_SUCCESS;
}
