/* The gated activations: SwiGlu (activation/swi_glu) and GeGluV3
 * (activation/ge_glu_v2). x splits along `dim` into A (first half) and B
 * (second half); a row is one index of the dims before `dim` and the half's
 * elements (dim's first half and everything after it).
 *
 *   SwiGlu   fp32: out = (1 / (1 + exp(-A))) * A * B
 *            16-bit: out = (A / (1 + exp(-A))) * B in fp32, rounded once
 *   GeGluV3  g = gelu(the activated half: A when activateLeft, else B),
 *            out = g * the other half, outGelu = g
 *            approximate 1 (tanh): g = x / (1 + exp(-1.5957691 (x + 0.044715 x^3)))
 *            approximate 0 (erf):  x1 = min(x, 5.75), g = x / (1 + exp(x1 P(x1^2)))
 *            (the vendor kernel's polynomial); fp16: g rounded to fp16 before
 *            the product (an fp16 multiply), bf16 / fp32: one rounding
 * as the vendor kernels order the operations (exp: the map engine's). */
#include <math.h>
#include <stdatomic.h>

#include "ops/nn/nn_impl.h"
#include "runtime/pa_threadpool.h"

/* ---- planning ---- */

/* iv: 0 x, 1 out, 2 outGelu (-1), 3 B's element offset (half * stride of dim); mode: approximate; flags:
 * activateLeft */
static void set_halves(nn_plan *p, const aclTensor *x, int64_t d, int sx, int so, int sg) {
    const int64_t h = x->dims[d] / 2;
    int64_t rd[PA_MAX_DIMS];
    rd[0] = h;
    for (int i = (int)d + 1; i < x->ndim; i++) rd[i - d] = x->dims[i];
    nn_set_rows(p, x->dims, (int)d, rd, x->ndim - (int)d);
    nn_set_lay_split(p, sx, (int)d);
    nn_set_lay_split(p, so, (int)d);
    if (sg >= 0) nn_set_lay_split(p, sg, (int)d);
    p->iv[0] = sx, p->iv[1] = so, p->iv[2] = sg;
    p->iv[3] = h * p->v[sx].strides[d];
    p->run = NN_RUN_GLU;
}

static int half_shape(const char *api, const char *name, const aclTensor *t, const aclTensor *x, int64_t d,
                      int code) {
    int64_t want[PA_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) want[i] = x->dims[i];
    want[d] /= 2;
    return nn_check_shape(api, name, t, x->ndim, want, code);
}

static int plan_swiglu(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *x = a[0].p, *out = a[2].p;
    int rc = nn_check_same_dtype(api, "out", out, "x", x);
    int64_t d = 0;
    if (rc == ACLNN_SUCCESS) rc = nn_wrap_dim(api, "dim", a[1].i, x->ndim, false, &d);
    if (rc != ACLNN_SUCCESS) return rc;
    if (x->dims[d] % 2 != 0) {
        return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: x dim %lld (%lld) must be even to split in halves", api,
                       (long long)d, (long long)x->dims[d]);
    }
    rc = half_shape(api, "out", out, x, d, ACLNN_ERR_INNER_TILING_ERROR);
    if (rc != ACLNN_SUCCESS) return rc;
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_NOTHING);
    if (!nn_is_empty(x)) set_halves(&p, x, d, p.slot[0], p.slot[2], -1);
    return nn_finish(op, &p, 0, ws, ex);
}

static int plan_geglu(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *x = a[0].p, *out = a[4].p, *og = a[5].p;
    const int64_t approx = a[2].i;
    int rc = ACLNN_SUCCESS;
    if (!nn_is_empty(x) && x->ndim > 0) {
        rc = nn_check_same_dtype(api, "out", out, "self", x);
        if (rc == ACLNN_SUCCESS) rc = nn_check_same_dtype(api, "outGelu", og, "self", x);
    }
    int64_t d = 0;
    if (rc == ACLNN_SUCCESS) rc = nn_wrap_dim(api, "dim", a[1].i, x->ndim, true, &d);
    if (rc != ACLNN_SUCCESS) return rc;
    const int64_t size = x->ndim == 0 ? 1 : x->dims[d];
    if (size % 2 != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self dim %lld (%lld) must be even to split in halves", api,
                       (long long)d, (long long)size);
    }
    rc = half_shape(api, "out", out, x, d, ACLNN_ERR_PARAM_INVALID);
    if (rc == ACLNN_SUCCESS) rc = half_shape(api, "outGelu", og, x, d, ACLNN_ERR_PARAM_INVALID);
    if (rc != ACLNN_SUCCESS) return rc;
    if (approx < 0 || approx > 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: approximate must be 0 (erf) or 1 (tanh), got %lld", api,
                       (long long)approx);
    }
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_NOTHING);
    if (!nn_is_empty(x)) {
        set_halves(&p, x, d, p.slot[0], p.slot[4], p.slot[5]);
        p.mode = (int32_t)approx;
        p.flags = a[3].b;
    }
    return nn_finish(op, &p, 0, ws, ex);
}

int nn_plan_glu(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    return op->kernel == PA_NN_SWI_GLU ? plan_swiglu(op, a, ws, ex) : plan_geglu(op, a, ws, ex);
}

/* ---- running ---- */

typedef struct glu_ctx {
    const nn_plan *p;
    const pa_nn_vec *k;
    atomic_int oom;
} glu_ctx;

#define ERF_P21 (-0.3512339572e-8f)
#define ERF_P22 0.2645266170e-6f
#define ERF_P23 (-0.7929488134e-5f)
#define ERF_P24 0.1106123840e-3f
#define ERF_P25 0.6518995814e-4f
#define ERF_P26 (-0.7266616915e-1f)
#define ERF_P27 (-0.1595769883e1f)

/* g = gelu(x) into g (t: scratch) */
static void gelu_row(const pa_nn_vec *k, int approx, const float *x, float *g, float *t, int64_t n) {
    if (approx == 1) {
        for (int64_t i = 0; i < n; i++) {
            float u = x[i] * x[i];
            u = x[i] * u;
            u = u * 0.044715f;
            u = x[i] + u;
            u = u * 1.5957691f;
            t[i] = -u;
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            const float x1 = x[i] > 5.75f ? 5.75f : x[i];
            const float q = x1 * x1;
            float c = q * ERF_P21;
            c = c + ERF_P22;
            c = c * q;
            c = c + ERF_P23;
            c = c * q;
            c = c + ERF_P24;
            c = c * q;
            c = c + ERF_P25;
            c = c * q;
            c = c + ERF_P26;
            c = c * q;
            c = c + ERF_P27;
            t[i] = c * x1;
        }
    }
    k->exp(t, t, n);
    for (int64_t i = 0; i < n; i++) g[i] = x[i] / (t[i] + 1.0f);
}

static void glu_rows(void *vctx, int64_t r0, int64_t r1) {
    glu_ctx *c = vctx;
    const nn_plan *p = c->p;
    const pa_nn_vec *k = c->k;
    const int64_t n = p->rlen;
    const int sx = (int)p->iv[0], so = (int)p->iv[1], sg = (int)p->iv[2];
    const int64_t boff = p->iv[3];
    float *A = nn_scratch(4, n);
    if (A == NULL) {
        atomic_store(&c->oom, 1);
        return;
    }
    float *B = A + NN_SSTRIDE(n), *t = B + NN_SSTRIDE(n), *g = t + NN_SSTRIDE(n);
    const aclDataType dt = p->v[sx].dtype;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t off = nn_row_off(p, sx, r);
        nn_load_off(p, k, sx, off, A);
        nn_load_off(p, k, sx, off + boff, B);
        if (p->kernel == PA_NN_SWI_GLU) {
            for (int64_t i = 0; i < n; i++) t[i] = A[i] * -1.0f;
            k->exp(t, t, n);
            if (dt == ACL_FLOAT) {
                for (int64_t i = 0; i < n; i++) t[i] = ((1.0f / (t[i] + 1.0f)) * A[i]) * B[i];
            } else {
                for (int64_t i = 0; i < n; i++) t[i] = (A[i] / (t[i] + 1.0f)) * B[i];
            }
            nn_store(p, k, so, r, t);
        } else {
            const float *act = p->flags ? A : B, *other = p->flags ? B : A;
            gelu_row(k, p->mode, act, g, t, n);
            if (dt == ACL_FLOAT16) {
                for (int64_t i = 0; i < n; i++) t[i] = nn_round_to(ACL_FLOAT16, g[i]) * other[i];
            } else {
                for (int64_t i = 0; i < n; i++) t[i] = g[i] * other[i];
            }
            nn_store(p, k, sg, r, g);
            nn_store(p, k, so, r, t);
        }
    }
}

int nn_run_glu(const nn_plan *p) {
    glu_ctx c = {p, pa_nn_vec_active(), 0};
    pa_parallel_for(p->rows, nn_grain(p->rlen), glu_rows, &c);
    if (atomic_load(&c.oom)) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the rows");
    return ACLNN_SUCCESS;
}
