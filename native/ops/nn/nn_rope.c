/* RotaryPositionEmbedding (ops-transformer posembedding/rotary_position_embedding),
 * Atlas A2 modes: over the last dim D of x (3-D or 4-D: BNSD, BSND, SBND,
 * TND), with cos / sin broadcast to x,
 *   mode 0 (half, rotate_half):  y[i] = x[i] cos[i] - x[i+D/2] sin[i],
 *                                y[i+D/2] = x[i+D/2] cos[i+D/2] + x[i] sin[i+D/2]
 *   mode 1 (interleave):         y[2i] = x[2i] cos[2i] - x[2i+1] sin[2i],
 *                                y[2i+1] = x[2i+1] cos[2i+1] + x[2i] sin[2i+1]
 * in fp32 (the vendor kernel's RotateHalfBf16 computes fp16 / bf16 in fp32 too),
 * each product and the sum rounded on their own, y rounded once. Shape
 * errors are the tiling's 561002; modes 2 and 3 are Ascend 950 only. */
#include <stdatomic.h>

#include "ops/nn/nn_impl.h"
#include "runtime/pa_threadpool.h"

/* iv: 0 x, 1 cos, 2 sin, 3 out; mode */
int nn_plan_rope(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *x = a[0].p, *cs = a[1].p, *sn = a[2].p, *out = a[4].p;
    const int64_t mode = a[3].i;
    int rc = nn_check_same_dtype(api, "cos", cs, "x", x);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_dtype(api, "sin", sn, "x", x);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_dtype(api, "out", out, "x", x);
    if (rc != ACLNN_SUCCESS) return rc;
    if (x->ndim != 3 && x->ndim != 4) {
        return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: x must have 3 or 4 dims, got %d", api, (int)x->ndim);
    }
    rc = nn_check_same_shape(api, "out", out, "x", x, ACLNN_ERR_INNER_TILING_ERROR);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_shape(api, "sin", sn, "cos", cs, ACLNN_ERR_INNER_TILING_ERROR);
    if (rc != ACLNN_SUCCESS) return rc;
    const int nd = x->ndim;
    const int64_t D = x->dims[nd - 1];
    bool bc = cs->ndim == nd;
    for (int i = 0; bc && i < nd; i++) bc = cs->dims[i] == x->dims[i] || (cs->dims[i] == 1 && i < nd - 1);
    if (!bc) {
        char s1[160], s2[160];
        return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: cos / sin shape %s must broadcast to x %s (the same rank and "
                       "last dim D, other dims equal or 1)", api, pa_shape_str(cs->dims, cs->ndim, s1, sizeof s1),
                       pa_shape_str(x->dims, nd, s2, sizeof s2));
    }
    if (D % 2 != 0 || D >= 896) {
        return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: the last dim D (%lld) must be even and below 896", api,
                       (long long)D);
    }
    if (mode != 0 && mode != 1) {
        return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: mode must be 0 (half) or 1 (interleave) on Atlas A2 "
                       "(2 and 3 are Ascend 950 only), got %lld", api, (long long)mode);
    }
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_NOTHING);
    if (nn_is_empty(x)) return nn_finish(op, &p, 0, ws, ex);
    const int sx = p.slot[0], sc = p.slot[1], ss = p.slot[2], so = p.slot[4];
    nn_set_rows(&p, x->dims, nd - 1, x->dims + nd - 1, 1);
    const int slots[4] = {sx, sc, ss, so};
    for (int i = 0; i < 4; i++) nn_set_lay_split(&p, slots[i], nd - 1);
    p.iv[0] = sx, p.iv[1] = sc, p.iv[2] = ss, p.iv[3] = so;
    p.mode = (int32_t)mode;
    p.run = NN_RUN_ROPE;
    return nn_finish(op, &p, 0, ws, ex);
}

typedef struct rope_ctx {
    const nn_plan *p;
    const pa_nn_vec *k;
    atomic_int oom;
} rope_ctx;

static void rope_rows(void *vctx, int64_t r0, int64_t r1) {
    rope_ctx *c = vctx;
    const nn_plan *p = c->p;
    const pa_nn_vec *k = c->k;
    const int64_t n = p->rlen, h = n / 2;
    const int sx = (int)p->iv[0], sc = (int)p->iv[1], ss = (int)p->iv[2], so = (int)p->iv[3];
    float *x = nn_scratch(4, n);
    if (x == NULL) {
        atomic_store(&c->oom, 1);
        return;
    }
    float *cs = x + NN_SSTRIDE(n), *sn = cs + NN_SSTRIDE(n), *y = sn + NN_SSTRIDE(n);
    int64_t lastc = -1, lasts = -1;
    for (int64_t r = r0; r < r1; r++) {
        nn_load(p, k, sx, r, x);
        const int64_t co = nn_row_off(p, sc, r), so_ = nn_row_off(p, ss, r);
        if (co != lastc || so_ != lasts || r == r0) { /* consecutive rows often share cos / sin (broadcast heads) */
            nn_load_off(p, k, sc, co, cs);
            nn_load_off(p, k, ss, so_, sn);
            lastc = co, lasts = so_;
        }
        if (p->mode == 0) {
            for (int64_t i = 0; i < h; i++) {
                y[i] = x[i] * cs[i] + (-x[i + h]) * sn[i];
                y[i + h] = x[i + h] * cs[i + h] + x[i] * sn[i + h];
            }
        } else {
            for (int64_t i = 0; i < n; i += 2) {
                y[i] = x[i] * cs[i] + (-x[i + 1]) * sn[i];
                y[i + 1] = x[i + 1] * cs[i + 1] + x[i] * sn[i + 1];
            }
        }
        nn_store(p, k, so, r, y);
    }
}

int nn_run_rope(const nn_plan *p) {
    rope_ctx c = {p, pa_nn_vec_active(), 0};
    pa_parallel_for(p->rows, nn_grain(p->rlen), rope_rows, &c);
    if (atomic_load(&c.oom)) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the rows");
    return ACLNN_SUCCESS;
}
