/* The norms and their gradients: RmsNorm, AddRmsNorm, RmsNormGrad (the
 * vendor's norm/rms_norm, add_rms_norm, rms_norm_grad), LayerNorm,
 * LayerNormBackward (layer_norm_v4, layer_norm_grad_v3) and GroupNorm
 * (group_norm -> GroupNormSilu without the silu on Atlas A2).
 *
 * Numerics (fp32, each operation rounded on its own; sums: the row kernels'
 * fixed order):
 *   RmsNorm     rstd = 1 / sqrt(sum(x*x) * (1/n) + eps), y = (x * rstd) * gamma
 *   AddRmsNorm  x = x1 + x2 (fp16: rounded to fp16; bf16: rounded for xOut,
 *               the fp32 sum used on), rstd = 1 / sqrt(sum(x*x * (1/n)) + eps),
 *               fp32: y = (x * rstd) * gamma; 16-bit: t = round16(x * rstd),
 *               y = round16(t * gamma)   (as the vendor kernel)
 *   LayerNorm   mean = sum(x) * (1/n), var = sum((x - mean)^2) * (1/n),
 *               rstd = 1 / sqrt(var + eps), y = ((x - mean) * rstd) * w + b
 *               (w = 1, b = 0 when absent, as CANN fills them)
 *   GroupNorm   mean = sum(x) * (1/n), rstd = 1 / sqrt((sum(x*x) * (1/n) -
 *               mean*mean) + eps) (the vendor's one-pass variance);
 *               scale = rstd * gamma[c], bias = -scale * mean + beta[c],
 *               y = x * scale + bias
 * Per-row statistics (mean, rstd) are kept during the parallel pass and
 * written afterwards in row order by one thread, so outputs that overlap
 * (ggml-cann's GROUP_NORM passes mean and rstd views of one small buffer)
 * still get the same bits every run. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "ops/nn/nn_impl.h"
#include "runtime/pa_threadpool.h"

/* ---- shared pieces ---- */

/* the element offset of row-major position `pos` of slot s's view */
static int64_t pos_off(const pa_tview *v, int64_t pos) {
    int64_t off = 0;
    for (int i = v->ndim - 1; i >= 0; i--) {
        const int64_t d = v->dims[i];
        off += (pos % d) * v->strides[i];
        pos /= d;
    }
    return off;
}

/* writes stats[r] (r < rows) to slot s in row-major order */
static void put_stats(const nn_plan *p, int s, const float *stats) {
    if (s < 0) return;
    const pa_tview *v = &p->v[s];
    for (int64_t r = 0; r < p->rows; r++) nn_put1(p, s, pos_off(v, r), stats[r]);
}

typedef struct norm_ctx {
    const nn_plan *p;
    const pa_nn_vec *k;
    float *mean, *rstd; /* per row (NULL: not wanted) */
    atomic_int oom;
} norm_ctx;

static int run_rows(const nn_plan *p, pa_range_fn fn, bool want_mean, bool want_rstd, int mean_slot,
                    int rstd_slot) {
    norm_ctx c = {p, pa_nn_vec_active(), NULL, NULL, 0};
    float *stats = NULL;
    if (want_mean || want_rstd) {
        stats = malloc((size_t)(p->rows > 0 ? p->rows : 1) * 2 * sizeof(float));
        if (stats == NULL) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the row statistics");
        c.mean = stats;
        c.rstd = stats + p->rows;
    }
    pa_parallel_for(p->rows, nn_grain(p->rlen), fn, &c);
    if (atomic_load(&c.oom)) {
        free(stats);
        return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the norm rows");
    }
    if (want_mean) put_stats(p, mean_slot, c.mean);
    if (want_rstd) put_stats(p, rstd_slot, c.rstd);
    free(stats);
    return ACLNN_SUCCESS;
}

static int fail_tiling(const char *api, const char *what) {
    return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: %s", api, what);
}

/* ---- RmsNorm / AddRmsNorm ---- */

/* iv: 0 x (or x1), 1 gamma, 2 y, 3 rstd (-1), 4 x2 (-1), 5 xOut (-1); dv[0] = eps, dv[1] = 1/n */
static void rms_rows(void *vctx, int64_t r0, int64_t r1) {
    norm_ctx *c = vctx;
    const nn_plan *p = c->p;
    const pa_nn_vec *k = c->k;
    const int64_t n = p->rlen;
    const int sx = (int)p->iv[0], sg = (int)p->iv[1], sy = (int)p->iv[2], sx2 = (int)p->iv[4],
              sxo = (int)p->iv[5];
    const bool add = p->kernel == PA_NN_ADD_RMS_NORM;
    float *x = nn_scratch(add ? 4 : 3, n);
    if (x == NULL) {
        atomic_store(&c->oom, 1);
        return;
    }
    float *g = x + NN_SSTRIDE(n), *y = g + NN_SSTRIDE(n), *t = add ? y + NN_SSTRIDE(n) : NULL;
    nn_load(p, k, sg, 0, g); /* gamma is the same for every row */
    const float eps = (float)p->dv[0], avg = (float)p->dv[1];
    const aclDataType dt = p->v[sx].dtype;
    const int pf_es = (int)pa_dtype_size(dt);
    for (int64_t r = r0; r < r1; r++) {
        float rstd;
        const void *pf = nn_next_row(p, sx, r, r1); /* prefetched during the second pass */
        if (add) {
            nn_load(p, k, sx, r, x);
            nn_load(p, k, sx2, r, t);
            for (int64_t i = 0; i < n; i++) {
                const float s = x[i] + t[i];
                x[i] = dt == ACL_FLOAT16 ? nn_round_to(ACL_FLOAT16, s) : s;
                t[i] = dt == ACL_FLOAT ? s : nn_round_to(dt, s); /* xOut */
            }
            if (sxo >= 0) nn_store(p, k, sxo, r, t);
            for (int64_t i = 0; i < n; i++) t[i] = (x[i] * x[i]) * avg;
            rstd = 1.0f / sqrtf(k->sum(t, n) + eps);
            if (dt == ACL_FLOAT) {
                for (int64_t i = 0; i < n; i++) y[i] = (x[i] * rstd) * g[i];
            } else {
                for (int64_t i = 0; i < n; i++) y[i] = nn_round_to(dt, x[i] * rstd) * g[i];
            }
            if (c->rstd != NULL) c->rstd[r] = rstd;
            nn_store(p, k, sy, r, y);
        } else {
            const float *xin = nn_row_in_f32(p, sx, r);
            float ss;
            if (xin != NULL) {
                ss = k->sumsq(xin, n);
            } else {
                int bf = 0;
                const uint16_t *x16 = nn_row_in_16(p, sx, r, &bf);
                if (x16 != NULL) {
                    ss = k->ld16_sumsq(x, x16, n, bf);
                } else {
                    nn_load(p, k, sx, r, x);
                    ss = k->sumsq(x, n);
                }
                xin = x;
            }
            rstd = 1.0f / sqrtf(ss * avg + eps);
            float *yout = nn_row_out_f32(p, sy, r);
            int obf = 0;
            uint16_t *y16 = yout != NULL ? NULL : nn_row_out_16(p, sy, r, &obf);
            if (y16 != NULL) {
                k->st16_rms(y16, xin, rstd, g, n, obf, p->nt, pf, pf_es);
            } else {
                k->rms_apply(yout != NULL ? yout : y, xin, rstd, g, n, yout != NULL && p->nt, pf, pf_es);
                if (yout == NULL) nn_store(p, k, sy, r, y);
            }
            if (c->rstd != NULL) c->rstd[r] = rstd;
        }
    }
    if (p->nt) k->fence(); /* the streamed lines land before the chunk counts as done */
}

int nn_run_rms_norm(const nn_plan *p) {
    return run_rows(p, rms_rows, false, p->iv[3] >= 0, -1, (int)p->iv[3]);
}

static bool gamma_ok(aclDataType x, aclDataType g) {
    return g == x || (g == ACL_FLOAT && (x == ACL_FLOAT16 || x == ACL_BF16));
}

static int plan_rms_norm(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *x = a[0].p, *gamma = a[1].p, *y = a[3].p, *rstd = a[4].p;
    const double eps = a[2].f;
    if (!gamma_ok(x->dtype, gamma->dtype)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: gamma dtype %s does not go with x dtype %s (x FLOAT: gamma "
                       "FLOAT; x FLOAT16 / BF16: gamma of x's dtype or FLOAT)", api, pa_dtype_name(gamma->dtype),
                       pa_dtype_name(x->dtype));
    }
    int rc = nn_check_same_dtype(api, "yOut", y, "x", x);
    if (rc != ACLNN_SUCCESS) return rc;
    /* the tiling's checks (561002) */
    const int xn = x->ndim, gn = gamma->ndim;
    if (xn < 1) return fail_tiling(api, "x must have 1 to 8 dims");
    if (gn < 1) return fail_tiling(api, "gamma must have 1 to 8 dims");
    if (gn > xn) return fail_tiling(api, "gamma must not have more dims than x");
    if (y->ndim != xn) return fail_tiling(api, "yOut must have the dims of x");
    for (int i = 0; i < gn; i++) {
        if (gamma->dims[i] == 0 || gamma->dims[i] != x->dims[xn - gn + i]) {
            char s1[160], s2[160];
            return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: gamma shape %s must be the last %d dims of x %s "
                           "(none of them 0)", api, pa_shape_str(gamma->dims, gn, s1, sizeof s1), gn,
                           pa_shape_str(x->dims, xn, s2, sizeof s2));
        }
    }
    for (int i = 0; i < xn; i++) {
        if (x->dims[i] == 0) return fail_tiling(api, "x must not be empty");
    }
    rc = nn_check_same_shape(api, "yOut", y, "x", x, ACLNN_ERR_INNER_TILING_ERROR);
    if (rc != ACLNN_SUCCESS) return rc;
    if (rstd->ndim > xn) return fail_tiling(api, "rstdOut must not have more dims than x");
    int64_t rows = 1;
    for (int i = 0; i < xn - gn; i++) rows *= x->dims[i];
    for (int i = 0; i < rstd->ndim; i++) {
        if (rstd->dims[i] == 0 || (rstd->dims[i] != x->dims[i] && rstd->dims[i] != 1)) {
            char s1[160], s2[160];
            return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: rstdOut shape %s: each dim must be x's (%s) or 1",
                           api, pa_shape_str(rstd->dims, rstd->ndim, s1, sizeof s1),
                           pa_shape_str(x->dims, xn, s2, sizeof s2));
        }
    }
    if (nn_numel(rstd) != rows) {
        return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: rstdOut must hold one value per row of x (%lld), it holds "
                       "%lld", api, (long long)rows, (long long)nn_numel(rstd));
    }
    if (eps < 0) return fail_tiling(api, "epsilon must not be negative");
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_RMS_NORM);
    const int sx = p.slot[0], sg = p.slot[1], sy = p.slot[3], sr = p.slot[4];
    nn_set_rows(&p, x->dims, xn - gn, x->dims + xn - gn, gn);
    nn_set_lay_split(&p, sx, xn - gn);
    nn_set_lay_split(&p, sy, xn - gn);
    nn_set_lay(&p, sg, NULL, p.v[sg].strides);
    p.res[sy] = x->dtype;
    p.nt = nn_stream_out(nn_numel(y) * (int64_t)pa_dtype_size(y->dtype));
    p.iv[0] = sx, p.iv[1] = sg, p.iv[2] = sy, p.iv[3] = sr, p.iv[4] = -1, p.iv[5] = -1;
    p.dv[0] = eps;
    p.dv[1] = 1.0f / (float)p.rlen;
    return nn_finish(op, &p, 0, ws, ex);
}

static int plan_add_rms_norm(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *x1 = a[0].p, *x2 = a[1].p, *gamma = a[2].p, *y = a[4].p, *rstd = a[5].p, *xo = a[6].p;
    const double eps = a[3].f;
    /* the outputs given choose the mode: both (AddRmsNorm), xOut only (pre), neither (post) */
    const int mode = xo != NULL && rstd == NULL ? 1 : xo == NULL && rstd == NULL ? 2 : 0;
    if (mode == 0 && xo == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: xOut is NULL (rstdOut is given)", api);
    if (mode != 0 && x1->dtype == ACL_FLOAT) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: without rstdOut, x1 dtype must be FLOAT16 or BF16, got FLOAT",
                       api);
    }
    int rc = nn_check_same_dtype(api, "x2", x2, "x1", x1);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_dtype(api, "gamma", gamma, "x1", x1);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_dtype(api, "yOut", y, "x1", x1);
    if (rc == ACLNN_SUCCESS && xo != NULL) rc = nn_check_same_dtype(api, "xOut", xo, "yOut", y);
    if (rc != ACLNN_SUCCESS) return rc;
    if (x1->ndim < 1 || x2->ndim < 1 || gamma->ndim < 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: x1, x2 and gamma must have 1 to 8 dims", api);
    }
    rc = nn_check_same_shape(api, "x2", x2, "x1", x1, ACLNN_ERR_PARAM_INVALID);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_shape(api, "yOut", y, "x1", x1, ACLNN_ERR_PARAM_INVALID);
    if (rc == ACLNN_SUCCESS && xo != NULL) rc = nn_check_same_shape(api, "xOut", xo, "x1", x1, ACLNN_ERR_PARAM_INVALID);
    if (rc != ACLNN_SUCCESS) return rc;
    if (mode != 0 && gamma->ndim > 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: without rstdOut, gamma must have at most 2 dims", api);
    }
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_NOTHING);
    if (nn_is_empty(x1) || nn_is_empty(gamma)) return nn_finish(op, &p, 0, ws, ex);
    /* the kernel's shape rules: gamma = the last dims of x1 */
    const int xn = x1->ndim, gn = gamma->ndim;
    bool ok = gn <= xn;
    for (int i = 0; ok && i < gn; i++) ok = gamma->dims[i] == x1->dims[xn - gn + i];
    if (!ok) {
        char s1[160], s2[160];
        return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: gamma shape %s must be the last dims of x1 %s", api,
                       pa_shape_str(gamma->dims, gn, s1, sizeof s1), pa_shape_str(x1->dims, xn, s2, sizeof s2));
    }
    int64_t rows = 1;
    for (int i = 0; i < xn - gn; i++) rows *= x1->dims[i];
    if (rstd != NULL && nn_numel(rstd) != rows) {
        return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: rstdOut must hold one value per row of x1 (%lld), it holds "
                       "%lld", api, (long long)rows, (long long)nn_numel(rstd));
    }
    if (eps < 0) return fail_tiling(api, "epsilon must not be negative");
    p.run = NN_RUN_RMS_NORM;
    const int sx = p.slot[0], sx2 = p.slot[1], sg = p.slot[2], sy = p.slot[4], sr = p.slot[5], sxo = p.slot[6];
    nn_set_rows(&p, x1->dims, xn - gn, x1->dims + xn - gn, gn);
    nn_set_lay_split(&p, sx, xn - gn);
    nn_set_lay_split(&p, sx2, xn - gn);
    nn_set_lay_split(&p, sy, xn - gn);
    if (sxo >= 0) nn_set_lay_split(&p, sxo, xn - gn);
    nn_set_lay(&p, sg, NULL, p.v[sg].strides);
    p.iv[0] = sx, p.iv[1] = sg, p.iv[2] = sy, p.iv[3] = sr, p.iv[4] = sx2, p.iv[5] = sxo;
    p.dv[0] = eps;
    p.dv[1] = 1.0f / (float)p.rlen;
    return nn_finish(op, &p, 0, ws, ex);
}

/* ---- LayerNorm ---- */

/* iv: 0 input, 1 weight (-1), 2 bias (-1), 3 out, 4 mean (-1), 5 rstd (-1); dv[0] eps, dv[1] 1/n */
static void ln_rows(void *vctx, int64_t r0, int64_t r1) {
    norm_ctx *c = vctx;
    const nn_plan *p = c->p;
    const pa_nn_vec *k = c->k;
    const int64_t n = p->rlen;
    const int sx = (int)p->iv[0], sw = (int)p->iv[1], sb = (int)p->iv[2], so = (int)p->iv[3];
    float *x = nn_scratch(3, n);
    if (x == NULL) {
        atomic_store(&c->oom, 1);
        return;
    }
    float *w = x + NN_SSTRIDE(n), *b = w + NN_SSTRIDE(n);
    if (sw >= 0) nn_load(p, k, sw, 0, w);
    else for (int64_t i = 0; i < n; i++) w[i] = 1.0f;
    if (sb >= 0) nn_load(p, k, sb, 0, b);
    else for (int64_t i = 0; i < n; i++) b[i] = 0.0f;
    const float eps = (float)p->dv[0], inv = (float)p->dv[1];
    const int pf_es = (int)pa_dtype_size(p->v[sx].dtype);
    for (int64_t r = r0; r < r1; r++) {
        const void *pf = nn_next_row(p, sx, r, r1); /* prefetched during the last pass */
        const float *xin = nn_row_in_f32(p, sx, r);
        float s1;
        if (xin != NULL) {
            s1 = k->sum(xin, n);
        } else {
            int bf = 0;
            const uint16_t *x16 = nn_row_in_16(p, sx, r, &bf);
            if (x16 != NULL) {
                s1 = k->ld16_sum(x, x16, n, bf);
            } else {
                nn_load(p, k, sx, r, x);
                s1 = k->sum(x, n);
            }
            xin = x;
        }
        const float mean = s1 * inv;
        const float var = k->sumsqdev(xin, n, mean) * inv;
        const float rstd = 1.0f / sqrtf(var + eps);
        float *yout = nn_row_out_f32(p, so, r);
        int obf = 0;
        uint16_t *y16 = yout != NULL ? NULL : nn_row_out_16(p, so, r, &obf);
        if (y16 != NULL) {
            k->st16_ln(y16, xin, mean, rstd, w, b, n, obf, p->nt, pf, pf_es);
        } else {
            k->ln_apply(yout != NULL ? yout : x, xin, mean, rstd, w, b, n, yout != NULL && p->nt, pf, pf_es);
            if (yout == NULL) nn_store(p, k, so, r, x);
        }
        if (c->mean != NULL) {
            c->mean[r] = mean;
            c->rstd[r] = rstd;
        }
    }
    if (p->nt) k->fence();
}

int nn_run_layer_norm(const nn_plan *p) {
    const bool stats = p->iv[4] >= 0 || p->iv[5] >= 0;
    return run_rows(p, ln_rows, stats, stats, (int)p->iv[4], (int)p->iv[5]);
}

static int plan_layer_norm(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *in = a[0].p, *w = a[2].p, *b = a[3].p, *out = a[5].p, *mean = a[6].p, *rstd = a[7].p;
    const aclIntArray *ns = a[1].p;
    /* dtypes: weight / bias of input's dtype or FLOAT, and alike */
    if (w != NULL && w->dtype != ACL_FLOAT) {
        int rc = nn_check_same_dtype(api, "weightOptional", w, "input", in);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    if (b != NULL && b->dtype != ACL_FLOAT) {
        int rc = nn_check_same_dtype(api, "biasOptional", b, "input", in);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    if (w != NULL && b != NULL) {
        int rc = nn_check_same_dtype(api, "biasOptional", b, "weightOptional", w);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    const int64_t j = (int64_t)ns->size;
    if (j > 8) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape must have at most 8 dims, got %lld", api,
                              (long long)j);
    if (j < 1) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape must not be empty", api);
    if (in->ndim < j) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: input must have at least %lld dims (normalizedShape), got %d",
                       api, (long long)j, (int)in->ndim);
    }
    if (w != NULL && w->ndim != j) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: weightOptional must have %lld dims, got %d", api, (long long)j,
                       (int)w->ndim);
    }
    if (b != NULL && b->ndim != j) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: biasOptional must have %lld dims, got %d", api, (long long)j,
                       (int)b->ndim);
    }
    const int axis = in->ndim - (int)j;
    for (int64_t i = 0; i < j; i++) {
        const int64_t d = ns->values[i];
        if (d != in->dims[axis + i] || (w != NULL && d != w->dims[i]) || (b != NULL && d != b->dims[i])) {
            char s1[160];
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape[%lld] = %lld must equal input dim %lld (%lld) "
                           "and the weight's and bias's dim %lld (input %s)", api, (long long)i, (long long)d,
                           (long long)(axis + i), (long long)in->dims[axis + i], (long long)i,
                           pa_shape_str(in->dims, in->ndim, s1, sizeof s1));
        }
    }
    int rc = nn_check_same_shape(api, "out", out, "input", in, ACLNN_ERR_PARAM_INVALID);
    if (rc != ACLNN_SUCCESS) return rc;
    int64_t M = 1, N = 1;
    for (int i = 0; i < axis; i++) M *= in->dims[i];
    for (int i = axis; i < in->ndim; i++) N *= in->dims[i];
    /* mean / rstd: one value per row (CANN's are [A.., 1..]) */
    const aclTensor *st[2] = {mean, rstd};
    const char *stn[2] = {"meanOutOptional", "rstdOutOptional"};
    for (int i = 0; i < 2; i++) {
        if (st[i] != NULL && M != 0 && nn_numel(st[i]) != M) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must hold one value per row of input (%lld), it holds "
                           "%lld", api, stn[i], (long long)M, (long long)nn_numel(st[i]));
        }
    }
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_NOTHING);
    if (M == 0) return nn_finish(op, &p, 0, ws, ex);
    const int sx = p.slot[0], sw = p.slot[2], sb = p.slot[3], so = p.slot[5], sm = p.slot[6], sr = p.slot[7];
    /* the statistics' dtype before the cast to the outputs: LayerNormV3's are the weight's (the bias's,
     * the input's); where CANN picks LayerNormV4 on Atlas A2 (BF16 input and weight with n = 1024 or 4096,
     * or n < 64 not a multiple of 32 bytes' worth) they are FLOAT */
    const aclDataType wdt = w != NULL ? w->dtype : b != NULL ? b->dtype : in->dtype;
    const bool v4 = (in->dtype == ACL_BF16 && wdt == ACL_BF16 && (N == 1024 || N == 4096)) ||
                    (N % (in->dtype == ACL_FLOAT ? 8 : 16) != 0 && N < 64);
    const aclDataType pdt = v4 ? ACL_FLOAT : wdt;
    if (sm >= 0) p.res[sm] = pdt;
    if (sr >= 0) p.res[sr] = pdt;
    if (N == 0) { /* CANN: mean 0, rstd NaN */
        p.run = NN_RUN_FILL;
        int nf = 0;
        if (sm >= 0) p.iv[1 + 2 * nf] = sm, p.dv[nf++] = 0.0;
        if (sr >= 0) p.iv[1 + 2 * nf] = sr, p.dv[nf++] = NAN;
        p.iv[0] = nf;
        return nn_finish(op, &p, 0, ws, ex);
    }
    p.run = NN_RUN_LAYER_NORM;
    nn_set_rows(&p, in->dims, axis, in->dims + axis, (int)j);
    nn_set_lay_split(&p, sx, axis);
    nn_set_lay_split(&p, so, axis);
    if (sw >= 0) nn_set_lay(&p, sw, NULL, p.v[sw].strides);
    if (sb >= 0) nn_set_lay(&p, sb, NULL, p.v[sb].strides);
    p.res[so] = in->dtype;
    p.nt = nn_stream_out(nn_numel(out) * (int64_t)pa_dtype_size(out->dtype));
    p.iv[0] = sx, p.iv[1] = sw, p.iv[2] = sb, p.iv[3] = so, p.iv[4] = sm, p.iv[5] = sr;
    p.dv[0] = a[4].f;
    p.dv[1] = 1.0f / (float)N;
    return nn_finish(op, &p, 0, ws, ex);
}

/* ---- GroupNorm ---- */

/* iv: 0 self, 1 gamma (-1), 2 beta (-1), 3 out, 4 mean, 5 rstd; dv[0] eps, dv[1] 1/n */
static void gn_rows(void *vctx, int64_t r0, int64_t r1) {
    norm_ctx *c = vctx;
    const nn_plan *p = c->p;
    const pa_nn_vec *k = c->k;
    const int64_t n = p->rlen;
    const int sx = (int)p->iv[0], sg = (int)p->iv[1], sb = (int)p->iv[2], so = (int)p->iv[3];
    float *x = nn_scratch(3, n);
    if (x == NULL) {
        atomic_store(&c->oom, 1);
        return;
    }
    float *g = x + NN_SSTRIDE(n), *b = g + NN_SSTRIDE(n);
    if (sg < 0) for (int64_t i = 0; i < n; i++) g[i] = 1.0f;
    if (sb < 0) for (int64_t i = 0; i < n; i++) b[i] = 0.0f;
    const float eps = (float)p->dv[0], inv = (float)p->dv[1];
    for (int64_t r = r0; r < r1; r++) {
        nn_load(p, k, sx, r, x);
        if (sg >= 0) nn_load(p, k, sg, r, g);
        if (sb >= 0) nn_load(p, k, sb, r, b);
        const float mean = k->sum(x, n) * inv;
        const float rstd = 1.0f / sqrtf((k->sumsq(x, n) * inv - mean * mean) + eps);
        for (int64_t i = 0; i < n; i++) {
            const float scale = rstd * g[i];
            const float bias = -scale * mean + b[i];
            x[i] = x[i] * scale + bias;
        }
        c->mean[r] = mean;
        c->rstd[r] = rstd;
        nn_store(p, k, so, r, x);
    }
}

int nn_run_group_norm(const nn_plan *p) {
    return run_rows(p, gn_rows, true, true, (int)p->iv[4], (int)p->iv[5]);
}

static int plan_group_norm(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *x = a[0].p, *gamma = a[1].p, *beta = a[2].p, *out = a[8].p, *mean = a[9].p, *rstd = a[10].p;
    const int64_t N = a[3].i, C = a[4].i, HxW = a[5].i, G = a[6].i;
    const double eps = a[7].f;
    int rc = ACLNN_SUCCESS;
    if (gamma != NULL) rc = nn_check_same_dtype(api, "gamma", gamma, "self", x);
    if (rc == ACLNN_SUCCESS && beta != NULL) rc = nn_check_same_dtype(api, "beta", beta, "self", x);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_dtype(api, "out", out, "self", x);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_dtype(api, "meanOut", mean, "self", x);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_dtype(api, "rstdOut", rstd, "self", x);
    if (rc != ACLNN_SUCCESS) return rc;
    if (G <= 0) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: group must be greater than 0, got %lld", api, (long long)G);
    if (C % G != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: C (%lld) must be divisible by group (%lld)", api, (long long)C,
                       (long long)G);
    }
    if (!(eps > 0.0)) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: eps must be greater than 0, got %g", api, eps);
    if (x->ndim < 2) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self must have 2 to 8 dims, got %d", api, (int)x->ndim);
    rc = nn_check_same_shape(api, "out", out, "self", x, ACLNN_ERR_PARAM_INVALID);
    const int64_t mv[2] = {N, G};
    if (rc == ACLNN_SUCCESS) rc = nn_check_shape(api, "meanOut", mean, 2, mv, ACLNN_ERR_PARAM_INVALID);
    if (rc == ACLNN_SUCCESS) rc = nn_check_shape(api, "rstdOut", rstd, 2, mv, ACLNN_ERR_PARAM_INVALID);
    if (rc != ACLNN_SUCCESS) return rc;
    int64_t hw = 1;
    for (int i = 2; i < x->ndim; i++) hw *= x->dims[i];
    if (x->dims[0] != N || x->dims[1] != C || hw != HxW) {
        char s1[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self shape %s must be [N, C, ...] with N = %lld, C = %lld and the "
                       "other dims holding HxW = %lld elements", api, pa_shape_str(x->dims, x->ndim, s1, sizeof s1),
                       (long long)N, (long long)C, (long long)HxW);
    }
    const aclTensor *gb[2] = {gamma, beta};
    const char *gbn[2] = {"gamma", "beta"};
    for (int i = 0; i < 2; i++) {
        if (gb[i] != NULL && (gb[i]->ndim != 1 || gb[i]->dims[0] != C)) {
            char s1[160];
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be 1-D of C = %lld elements, got shape %s", api, gbn[i],
                           (long long)C, pa_shape_str(gb[i]->dims, gb[i]->ndim, s1, sizeof s1));
        }
    }
    if (x->format != out->format) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self format %s and out format %s must be the same", api,
                       pa_format_name(x->format), pa_format_name(out->format));
    }
    if (x->format == ACL_FORMAT_NHWC || x->format == ACL_FORMAT_HWCN || x->format == ACL_FORMAT_NDHWC) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self format %s is not supported (ND, NCL, NCHW or NCDHW)", api,
                       pa_format_name(x->format));
    }
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_GROUP_NORM);
    const int sx = p.slot[0], sg = p.slot[1], sb = p.slot[2], so = p.slot[8], sm = p.slot[9], sr = p.slot[10];
    if (nn_is_empty(x)) { /* CANN: mean 0, rstd NaN */
        p.run = NN_RUN_FILL;
        p.iv[0] = 2, p.iv[1] = sm, p.dv[0] = 0.0, p.iv[3] = sr, p.dv[1] = NAN;
        return nn_finish(op, &p, 0, ws, ex);
    }
    /* rows (n, g): outer [N, G], row [C/G, dims 2..] */
    const int64_t cg = C / G;
    int64_t od[2] = {N, G}, rd[PA_MAX_DIMS];
    rd[0] = cg;
    for (int i = 2; i < x->ndim; i++) rd[i - 1] = x->dims[i];
    nn_set_rows(&p, od, 2, rd, x->ndim - 1);
    const int slots[2] = {sx, so};
    for (int i = 0; i < 2; i++) {
        const pa_tview *v = &p.v[slots[i]];
        int64_t ost[2] = {v->strides[0], v->strides[1] * cg}, rst[PA_MAX_DIMS];
        rst[0] = v->strides[1];
        for (int d = 2; d < v->ndim; d++) rst[d - 1] = v->strides[d];
        nn_set_lay(&p, slots[i], ost, rst);
    }
    const int gslots[2] = {sg, sb};
    for (int i = 0; i < 2; i++) {
        if (gslots[i] < 0) continue;
        const int64_t s = p.v[gslots[i]].strides[0];
        int64_t ost[2] = {0, s * cg}, rst[PA_MAX_DIMS] = {0};
        rst[0] = s;
        nn_set_lay(&p, gslots[i], ost, rst);
    }
    p.iv[0] = sx, p.iv[1] = sg, p.iv[2] = sb, p.iv[3] = so, p.iv[4] = sm, p.iv[5] = sr;
    p.dv[0] = eps;
    p.dv[1] = 1.0f / (float)p.rlen;
    return nn_finish(op, &p, 0, ws, ex);
}

/* ---- the gradients: RmsNormGrad, LayerNormBackward ----
 * Per-row work as the forward ops; the column sums (dgamma, gradWeight,
 * gradBias) are summed per chunk of rows (chunks fixed by the shape, at most
 * 256) in row order, then the chunks in order: the same bits for any thread
 * count (CANN's are atomic adds, non-deterministic by default). */

typedef struct grad_ctx {
    const nn_plan *p;
    const pa_nn_vec *k;
    int64_t grain;
    float *pa, *pb; /* [chunk][rlen] partial column sums (NULL: not wanted) */
    atomic_int oom;
} grad_ctx;

static int64_t grad_grain(const nn_plan *p) {
    int64_t g = nn_grain(p->rlen);
    const int64_t minimum = (p->rows + 255) / 256;
    return g > minimum ? g : minimum;
}

/* runs fn over the rows, then folds the partial sums into cols[0] (a) / cols[1] (b) (rlen floats each) */
static int run_grad(const nn_plan *p, pa_range_fn fn, bool want_a, bool want_b, float **cols) {
    grad_ctx c = {p, pa_nn_vec_active(), grad_grain(p), NULL, NULL, 0};
    const int64_t nch = (p->rows + c.grain - 1) / c.grain;
    const size_t per = (size_t)p->rlen * sizeof(float);
    float *buf = NULL;
    if (want_a || want_b) {
        buf = calloc((size_t)(nch + 1) * 2, per > 0 ? per : 1);
        if (buf == NULL) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the column sums");
        if (want_a) c.pa = buf;
        if (want_b) c.pb = buf + (size_t)nch * p->rlen;
    }
    pa_parallel_for(p->rows, c.grain, fn, &c);
    if (atomic_load(&c.oom)) {
        free(buf);
        return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the rows");
    }
    if (buf != NULL) {
        float *fa = buf + (size_t)2 * nch * p->rlen, *fb = fa + p->rlen;
        for (int64_t j = 0; j < p->rlen; j++) {
            float sa = 0.0f, sb = 0.0f;
            for (int64_t ch = 0; ch < nch; ch++) {
                if (c.pa) sa += c.pa[ch * p->rlen + j];
                if (c.pb) sb += c.pb[ch * p->rlen + j];
            }
            fa[j] = sa, fb[j] = sb;
        }
        cols[0] = fa, cols[1] = fb, cols[2] = buf;
    }
    return ACLNN_SUCCESS;
}

/* stores n column values as the (single) row of slot s */
static void put_cols(const nn_plan *p, int s, const float *v) {
    const pa_tview *t = &p->v[s];
    for (int64_t j = 0; j < p->rlen; j++) nn_put1(p, s, pos_off(t, j), v[j]);
}

/* RmsNormGrad. iv: 0 dy, 1 x, 2 rstd, 3 gamma, 4 dx, 5 dgamma; dv[1] = 1/n */
static void rmsg_rows(void *vctx, int64_t r0, int64_t r1) {
    grad_ctx *c = vctx;
    const nn_plan *p = c->p;
    const pa_nn_vec *k = c->k;
    const int64_t n = p->rlen;
    const int sdy = (int)p->iv[0], sx = (int)p->iv[1], sr = (int)p->iv[2], sg = (int)p->iv[3], sdx = (int)p->iv[4];
    float *dy = nn_scratch(4, n);
    if (dy == NULL) {
        atomic_store(&c->oom, 1);
        return;
    }
    float *x = dy + NN_SSTRIDE(n), *g = x + NN_SSTRIDE(n), *t = g + NN_SSTRIDE(n);
    nn_load(p, k, sg, 0, g);
    float *part = c->pa + (r0 / c->grain) * n;
    const float avg = (float)p->dv[1];
    const bool h16 = p->flags; /* fp16 with fp16 gamma: the kernel's fp16 intermediates */
    const pa_tview *rv = &p->v[sr];
    for (int64_t r = r0; r < r1; r++) {
        nn_load(p, k, sdy, r, dy);
        nn_load(p, k, sx, r, x);
        const float rstd = nn_get1(p, sr, pos_off(rv, r));
        for (int64_t i = 0; i < n; i++) x[i] = x[i] * rstd; /* xr */
        if (h16) {
            for (int64_t i = 0; i < n; i++) {
                part[i] += nn_round_to(ACL_FLOAT16, dy[i] * nn_round_to(ACL_FLOAT16, x[i]));
                dy[i] = nn_round_to(ACL_FLOAT16, dy[i] * g[i]);
            }
        } else {
            for (int64_t i = 0; i < n; i++) {
                part[i] += dy[i] * x[i];
                dy[i] = dy[i] * g[i];
            }
        }
        for (int64_t i = 0; i < n; i++) t[i] = dy[i] * x[i];
        const float s = k->sum(t, n) * avg;
        for (int64_t i = 0; i < n; i++) t[i] = (dy[i] - s * x[i]) * rstd;
        nn_store(p, k, sdx, r, t);
    }
}

int nn_run_rms_norm_grad(const nn_plan *p) {
    float *cols[3] = {NULL, NULL, NULL};
    int rc = run_grad(p, rmsg_rows, true, false, cols);
    if (rc != ACLNN_SUCCESS) return rc;
    put_cols(p, (int)p->iv[5], cols[0]);
    free(cols[2]);
    return ACLNN_SUCCESS;
}

static int plan_rms_norm_grad(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *dy = a[0].p, *x = a[1].p, *rstd = a[2].p, *gamma = a[3].p, *dx = a[4].p, *dg = a[5].p;
    int rc = nn_check_same_dtype(api, "dy", dy, "x", x);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_dtype(api, "dxOut", dx, "x", x);
    if (rc != ACLNN_SUCCESS) return rc;
    if (!gamma_ok(x->dtype, gamma->dtype)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: gamma dtype %s does not go with x dtype %s (x FLOAT: gamma "
                       "FLOAT; x FLOAT16 / BF16: gamma of x's dtype or FLOAT)", api, pa_dtype_name(gamma->dtype),
                       pa_dtype_name(x->dtype));
    }
    const int xn = x->ndim, gn = gamma->ndim;
    if (xn < 2) return fail_tiling(api, "x must have 2 to 8 dims");
    rc = nn_check_same_shape(api, "dy", dy, "x", x, ACLNN_ERR_INNER_TILING_ERROR);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_shape(api, "dxOut", dx, "x", x, ACLNN_ERR_INNER_TILING_ERROR);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_shape(api, "dgammaOut", dg, "gamma", gamma,
                                                      ACLNN_ERR_INNER_TILING_ERROR);
    if (rc != ACLNN_SUCCESS) return rc;
    bool ok = gn >= 1 && gn <= xn;
    for (int i = 0; ok && i < gn; i++) ok = gamma->dims[i] == x->dims[xn - gn + i] && gamma->dims[i] > 0;
    if (!ok) {
        char s1[160], s2[160];
        return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: gamma shape %s must be the last dims of x %s", api,
                       pa_shape_str(gamma->dims, gn, s1, sizeof s1), pa_shape_str(x->dims, xn, s2, sizeof s2));
    }
    int64_t rows = 1;
    for (int i = 0; i < xn - gn; i++) rows *= x->dims[i];
    if (nn_numel(rstd) != rows) {
        return pa_fail(ACLNN_ERR_INNER_TILING_ERROR, "%s: rstd must hold one value per row of x (%lld), it holds %lld",
                       api, (long long)rows, (long long)nn_numel(rstd));
    }
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_NOTHING);
    if (nn_is_empty(x)) { /* dgamma = 0 */
        p.run = NN_RUN_FILL;
        p.iv[0] = 1, p.iv[1] = p.slot[5], p.dv[0] = 0.0;
        return nn_finish(op, &p, 0, ws, ex);
    }
    p.run = NN_RUN_RMS_NORM_GRAD;
    const int sdy = p.slot[0], sx = p.slot[1], sg = p.slot[3], sdx = p.slot[4];
    nn_set_rows(&p, x->dims, xn - gn, x->dims + xn - gn, gn);
    nn_set_lay_split(&p, sdy, xn - gn);
    nn_set_lay_split(&p, sx, xn - gn);
    nn_set_lay_split(&p, sdx, xn - gn);
    nn_set_lay(&p, sg, NULL, p.v[sg].strides);
    p.res[sdx] = x->dtype;
    p.flags = x->dtype == ACL_FLOAT16 && gamma->dtype == ACL_FLOAT16;
    p.iv[0] = sdy, p.iv[1] = sx, p.iv[2] = p.slot[2], p.iv[3] = sg, p.iv[4] = sdx, p.iv[5] = p.slot[5];
    p.dv[1] = 1.0f / (float)p.rlen;
    return nn_finish(op, &p, 0, ws, ex);
}

/* LayerNormBackward. iv: 0 dy, 1 x, 2 mean, 3 rstd, 4 weight (-1), 5 dx (-1), 6 dw (-1), 7 db (-1); dv[1] 1/n */
static void lng_rows(void *vctx, int64_t r0, int64_t r1) {
    grad_ctx *c = vctx;
    const nn_plan *p = c->p;
    const pa_nn_vec *k = c->k;
    const int64_t n = p->rlen;
    const int sdy = (int)p->iv[0], sx = (int)p->iv[1], sm = (int)p->iv[2], sr = (int)p->iv[3], sw = (int)p->iv[4],
              sdx = (int)p->iv[5];
    float *dy = nn_scratch(4, n);
    if (dy == NULL) {
        atomic_store(&c->oom, 1);
        return;
    }
    float *x = dy + NN_SSTRIDE(n), *w = x + NN_SSTRIDE(n), *t = w + NN_SSTRIDE(n);
    if (sw >= 0) nn_load(p, k, sw, 0, w);
    else for (int64_t i = 0; i < n; i++) w[i] = 1.0f;
    float *pw = c->pa ? c->pa + (r0 / c->grain) * n : NULL, *pb = c->pb ? c->pb + (r0 / c->grain) * n : NULL;
    const float inv = (float)p->dv[1];
    const pa_tview *mv = &p->v[sm], *rv = &p->v[sr];
    for (int64_t r = r0; r < r1; r++) {
        nn_load(p, k, sdy, r, dy);
        if (pb) for (int64_t i = 0; i < n; i++) pb[i] += dy[i];
        if (sdx < 0 && pw == NULL) continue;
        nn_load(p, k, sx, r, x);
        const float mean = nn_get1(p, sm, pos_off(mv, r)), rstd = nn_get1(p, sr, pos_off(rv, r));
        for (int64_t i = 0; i < n; i++) x[i] = (x[i] - mean) * rstd; /* mul_1 = xhat */
        if (pw) for (int64_t i = 0; i < n; i++) pw[i] += dy[i] * x[i];
        if (sdx < 0) continue;
        for (int64_t i = 0; i < n; i++) dy[i] = dy[i] * w[i];     /* mul_3 */
        for (int64_t i = 0; i < n; i++) t[i] = dy[i] * x[i];      /* mul_4 */
        const float r3 = k->sum(t, n) * inv, r2 = k->sum(dy, n) * inv;
        for (int64_t i = 0; i < n; i++) t[i] = ((dy[i] - x[i] * r3) - r2) * rstd;
        nn_store(p, k, sdx, r, t);
    }
}

int nn_run_layer_norm_grad(const nn_plan *p) {
    float *cols[3] = {NULL, NULL, NULL};
    int rc = run_grad(p, lng_rows, p->iv[6] >= 0, p->iv[7] >= 0, cols);
    if (rc != ACLNN_SUCCESS) return rc;
    if (p->iv[6] >= 0) put_cols(p, (int)p->iv[6], cols[0]);
    if (p->iv[7] >= 0) put_cols(p, (int)p->iv[7], cols[1]);
    free(cols[2]);
    return ACLNN_SUCCESS;
}

static int plan_layer_norm_grad(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *dy = a[0].p, *x = a[1].p, *mean = a[3].p, *rstd = a[4].p, *w = a[5].p, *b = a[6].p;
    const aclTensor *gi = a[8].p, *gw = a[9].p, *gb = a[10].p;
    const aclIntArray *ns = a[2].p;
    const aclBoolArray *mask = a[7].p;
    if (mask->size != 3) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: outputMask must have 3 entries, got %llu", api,
                       (unsigned long long)mask->size);
    }
    const bool mi = mask->values[0], mw = mask->values[1], mb = mask->values[2];
    if (mi && gi == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: gradInputOut is NULL (outputMask[0] is set)", api);
    if (mw && gw == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: gradWeightOut is NULL (outputMask[1] is set)", api);
    if (mb && gb == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: gradBiasOut is NULL (outputMask[2] is set)", api);
    int rc = nn_check_same_dtype(api, "gradOut", dy, "input", x);
    if (rc == ACLNN_SUCCESS && w != NULL && w->dtype != ACL_FLOAT) rc = nn_check_same_dtype(api, "weightOptional", w,
                                                                                           "input", x);
    if (rc != ACLNN_SUCCESS) return rc;
    const int64_t j = (int64_t)ns->size;
    if (j > 8 || j < 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape must have 1 to 8 dims, got %lld", api, (long long)j);
    }
    if (x->ndim < j) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: input must have at least %lld dims (normalizedShape), got %d",
                       api, (long long)j, (int)x->ndim);
    }
    const int axis = x->ndim - (int)j;
    const aclTensor *wb[2] = {w, b};
    for (int64_t i = 0; i < j; i++) {
        const int64_t d = ns->values[i];
        bool ok = d == x->dims[axis + i];
        for (int q = 0; q < 2; q++) ok = ok && (wb[q] == NULL || (wb[q]->ndim == j && wb[q]->dims[i] == d));
        if (!ok) {
            char s1[160];
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape[%lld] = %lld must equal input dim %lld and "
                           "the weight's and bias's dim %lld (input %s)", api, (long long)i, (long long)d,
                           (long long)(axis + i), (long long)i, pa_shape_str(x->dims, x->ndim, s1, sizeof s1));
        }
    }
    for (int q = 0; q < 2; q++) {
        if (wb[q] != NULL && wb[q]->ndim != j) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have %lld dims", api,
                           q ? "biasOptional" : "weightOptional", (long long)j);
        }
    }
    rc = nn_check_same_shape(api, "gradOut", dy, "input", x, ACLNN_ERR_PARAM_INVALID);
    if (rc == ACLNN_SUCCESS) rc = nn_check_same_shape(api, "rstd", rstd, "mean", mean, ACLNN_ERR_PARAM_INVALID);
    if (rc != ACLNN_SUCCESS) return rc;
    int64_t M = 1, N = 1;
    for (int i = 0; i < axis; i++) M *= x->dims[i];
    for (int i = axis; i < x->ndim; i++) N *= x->dims[i];
    if (nn_numel(mean) != M) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: mean must hold %lld values (one per row), it holds %lld", api,
                       (long long)M, (long long)nn_numel(mean));
    }
    if (mi) rc = nn_check_same_shape(api, "gradInputOut", gi, "input", x, ACLNN_ERR_PARAM_INVALID);
    if (rc != ACLNN_SUCCESS) return rc;
    if ((mw && nn_numel(gw) != N) || (mb && nn_numel(gb) != N)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: gradWeightOut and gradBiasOut must hold %lld values", api,
                       (long long)N);
    }
    nn_plan p;
    nn_plan_init(&p, op, a, NN_RUN_NOTHING);
    const int sdx = mi ? p.slot[8] : -1, sdw = mw ? p.slot[9] : -1, sdb = mb ? p.slot[10] : -1;
    if (!mi && !mw && !mb) return nn_finish(op, &p, 0, ws, ex);
    if (M <= 0 || N <= 0) { /* CANN: gradWeight / gradBias 0 when there are no rows */
        if (M <= 0) {
            int nf = 0;
            if (sdw >= 0) p.iv[1 + 2 * nf] = sdw, p.dv[nf++] = 0.0;
            if (sdb >= 0) p.iv[1 + 2 * nf] = sdb, p.dv[nf++] = 0.0;
            p.iv[0] = nf;
            p.run = NN_RUN_FILL;
        }
        return nn_finish(op, &p, 0, ws, ex);
    }
    p.run = NN_RUN_LAYER_NORM_GRAD;
    const int sdy = p.slot[0], sx = p.slot[1], sw = p.slot[5];
    nn_set_rows(&p, x->dims, axis, x->dims + axis, (int)j);
    nn_set_lay_split(&p, sdy, axis);
    nn_set_lay_split(&p, sx, axis);
    if (sdx >= 0) {
        nn_set_lay_split(&p, sdx, axis);
        p.res[sdx] = x->dtype;
    }
    if (sw >= 0) nn_set_lay(&p, sw, NULL, p.v[sw].strides);
    /* gradWeight / gradBias computed in fp32, then cast */
    if (sdw >= 0) p.res[sdw] = ACL_FLOAT;
    if (sdb >= 0) p.res[sdb] = ACL_FLOAT;
    p.iv[0] = sdy, p.iv[1] = sx, p.iv[2] = p.slot[3], p.iv[3] = p.slot[4], p.iv[4] = sw, p.iv[5] = sdx, p.iv[6] = sdw,
    p.iv[7] = sdb;
    p.dv[1] = 1.0f / (float)N;
    return nn_finish(op, &p, 0, ws, ex);
}

/* ---- dispatch ---- */

int nn_plan_norm(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    switch (op->kernel) {
    case PA_NN_RMS_NORM: return plan_rms_norm(op, a, ws, ex);
    case PA_NN_ADD_RMS_NORM: return plan_add_rms_norm(op, a, ws, ex);
    case PA_NN_LAYER_NORM: return plan_layer_norm(op, a, ws, ex);
    case PA_NN_GROUP_NORM: return plan_group_norm(op, a, ws, ex);
    case PA_NN_RMS_NORM_GRAD: return plan_rms_norm_grad(op, a, ws, ex);
    case PA_NN_LAYER_NORM_BACKWARD: return plan_layer_norm_grad(op, a, ws, ex);
    default:
        return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: %s is not implemented by pyaclnn", op->ws_api,
                       op->launch.name);
    }
}
