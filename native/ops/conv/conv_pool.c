/* aclnnAvgPool2d and aclnnMaxPool over (N, C, H, W) or (C, H, W) tensors.
 *
 * AvgPool2d (ops-nn pooling/avg_pool3_d op_api): self / out FLOAT, FLOAT16
 * or BF16 of one dtype; NCHW (4-D) or NCL (3-D) formats; kernelSize 1 or 2
 * values > 0, strides 0 (= kernel), 1 or 2 values > 0, paddings 1 or 2
 * values >= 0 and at most half the kernel; C, H, W > 0; out's shape as
 * torch's (ceilMode: the last window starts inside the input or the left
 * padding); cubeMathType 0..4. Where the vendor runs its cube (or global
 * mean) kernel, an fp32 self with cubeMathType 1, 3 or 4 is refused
 * (161002) and cubeMathType 2 computes in fp16. The mean: the window's sum
 * in fp32 (rows, then columns), divided once by torch's divisor
 * (divisorOverride; or the window clipped to the padded input; or, without
 * countIncludePad, its elements inside the input), rounded once.
 *
 * MaxPool (ops-nn pooling/max_pool_v3 op_api): self / out FLOAT16 or FLOAT
 * of one dtype and one format, 3-D or 4-D; kernelShape 1 or 2 values > 0;
 * strides 0 (= 1), 1 or 2 values > 0; pads 0, 1, 2 or 4 values (top, left,
 * bottom, right), each side's pair at most the kernel; dilations 0, 1, 2 or
 * 4 values, all 1; autoPad 0; ceilMode nonzero = ceil. The maximum of the
 * window's elements inside the input (padding never wins; NaN propagates). */
#include <math.h>

#include "ops/conv/conv_impl.h"
#include "runtime/pa_threadpool.h"

__extension__ typedef __int128 i128;

/* ---- shared ---- */

static int check_same_dtype(const char *api, const aclTensor *x, const aclTensor *y) {
    if (x->dtype == y->dtype) return ACLNN_SUCCESS;
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out dtype must be self's (%s), got %s", api, pa_dtype_name(x->dtype),
                   pa_dtype_name(y->dtype));
}

static int check_limit(const char *api, const char *name, const aclIntArray *arr) {
    for (uint64_t i = 0; i < arr->size; i++) {
        if (arr->values[i] > ((int64_t)1 << 40) || arr->values[i] < -((int64_t)1 << 40)) {
            char s1[160];
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s values must be within +-2^40 (pyaclnn's limit), got %s",
                           api, name, cv_array_str(arr, s1, sizeof s1));
        }
    }
    return ACLNN_SUCCESS;
}

/* Fills the geometry of a (C, H, W) / (N, C, H, W) self and its out. */
static void pool_geometry(cv_plan *p, const aclTensor *x, const aclTensor *y) {
    const bool is3 = x->ndim == 3;
    const pa_tview xv = pa_tview_of(x), yv = pa_tview_of(y);
    p->n = is3 ? 1 : x->dims[0];
    p->cin = x->dims[is3 ? 0 : 1];
    p->in_sp[1] = x->dims[is3 ? 1 : 2];
    p->in_sp[2] = x->dims[is3 ? 2 : 3];
    p->out_sp[1] = y->dims[is3 ? 1 : 2];
    p->out_sp[2] = y->dims[is3 ? 2 : 3];
    p->xs[0] = is3 ? 0 : xv.strides[0];
    p->xs[1] = xv.strides[is3 ? 0 : 1];
    p->xs[3] = xv.strides[is3 ? 1 : 2];
    p->xs[4] = xv.strides[is3 ? 2 : 3];
    p->ymap[0] = is3 ? -1 : 0;
    p->ymap[1] = is3 ? 0 : 1;
    p->ymap[2] = -1;
    p->ymap[3] = is3 ? 1 : 2;
    p->ymap[4] = is3 ? 2 : 3;
    p->v[CV_V_X] = xv;
    p->v[CV_V_Y] = yv;
}

static int check_out_shape(const char *api, const aclTensor *x, const aclTensor *y, i128 oh, i128 ow) {
    char s1[160], s2[160];
    const bool is3 = x->ndim == 3;
    const int64_t C = x->dims[is3 ? 0 : 1], H = x->dims[is3 ? 1 : 2], W = x->dims[is3 ? 2 : 3];
    if (C == 0 || H == 0 || W == 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self's channels, height and width must be > 0, got shape %s", api,
                       pa_shape_str(x->dims, x->ndim, s1, sizeof s1));
    }
    if (oh <= 0 || ow <= 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: the output height and width (%lld, %lld) computed for self %s must be > 0", api,
                       (long long)(oh < -INT64_MAX ? -INT64_MAX : oh), (long long)(ow < -INT64_MAX ? -INT64_MAX : ow),
                       pa_shape_str(x->dims, x->ndim, s1, sizeof s1));
    }
    int64_t want[4];
    int nw = 0;
    if (!is3) want[nw++] = x->dims[0];
    want[nw++] = C;
    want[nw++] = oh > INT64_MAX ? INT64_MAX : (int64_t)oh;
    want[nw++] = ow > INT64_MAX ? INT64_MAX : (int64_t)ow;
    bool same = y->ndim == nw && (i128)want[nw - 2] == oh && (i128)want[nw - 1] == ow;
    for (int i = 0; same && i < nw; i++) same = y->dims[i] == want[i];
    if (!same) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out shape must be %s, got %s", api,
                       pa_shape_str(want, nw, s1, sizeof s1), pa_shape_str(y->dims, y->ndim, s2, sizeof s2));
    }
    return ACLNN_SUCCESS;
}

/* ---- AvgPool2d ---- */

enum { AV_SELF, AV_KERNEL, AV_STRIDES, AV_PADDINGS, AV_CEIL, AV_COUNT_PAD, AV_DIVISOR, AV_CUBE, AV_OUT };

/* torch's / the vendor's pooling output size (no dilation). */
static i128 avg_out_size(int64_t in, int64_t k, int64_t pad, int64_t s, bool ceil) {
    i128 o = ((i128)in + 2 * (i128)pad - k + (ceil ? s - 1 : 0)) / s + 1;
    if (ceil && (o - 1) * s >= (i128)in + pad) o--;
    return o;
}

int cv_plan_avg_pool(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *api = op->ws_api;
    const aclTensor *x = a[AV_SELF].p, *y = a[AV_OUT].p;
    const aclIntArray *ks = a[AV_KERNEL].p, *st = a[AV_STRIDES].p, *pd = a[AV_PADDINGS].p;
    const bool ceil = a[AV_CEIL].b, count_pad = a[AV_COUNT_PAD].b;
    const int64_t divisor = a[AV_DIVISOR].i, cube = (int8_t)a[AV_CUBE].i;
    char s1[160];
    int rc = check_same_dtype(api, x, y);
    if (rc != ACLNN_SUCCESS) return rc;
    /* formats */
    const aclFormat xf = x->format, yf = y->format;
    if (xf != ACL_FORMAT_NCHW && xf != ACL_FORMAT_NCL) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self format must be NCHW or NCL, got %s", api, pa_format_name(xf));
    }
    if (yf != ACL_FORMAT_NCHW && yf != ACL_FORMAT_NCL) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out format must be NCHW or NCL, got %s", api, pa_format_name(yf));
    }
    if (x->ndim == 4 && (xf != ACL_FORMAT_NCHW || yf != ACL_FORMAT_NCHW)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: a 4-D self and its out must both be NCHW, got %s and %s", api,
                       pa_format_name(xf), pa_format_name(yf));
    }
    if (x->ndim == 3 && (xf != ACL_FORMAT_NCL || yf != ACL_FORMAT_NCL)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: a 3-D self and its out must both be NCL, got %s and %s", api,
                       pa_format_name(xf), pa_format_name(yf));
    }
    /* values */
    for (uint64_t i = 0; i < ks->size; i++) {
        if (ks->values[i] <= 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: kernelSize values must be > 0, got %s", api,
                           cv_array_str(ks, s1, sizeof s1));
        }
    }
    for (uint64_t i = 0; i < st->size; i++) {
        if (st->values[i] <= 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: strides values must be > 0, got %s", api,
                           cv_array_str(st, s1, sizeof s1));
        }
    }
    for (uint64_t i = 0; i < pd->size; i++) {
        if (pd->values[i] < 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: paddings values must be >= 0, got %s", api,
                           cv_array_str(pd, s1, sizeof s1));
        }
    }
    if ((rc = check_limit(api, "kernelSize", ks)) != ACLNN_SUCCESS || (rc = check_limit(api, "strides", st)) != 0 ||
        (rc = check_limit(api, "paddings", pd)) != 0) {
        return rc;
    }
    /* shapes */
    if (!((x->ndim == 3 && y->ndim == 3) || (x->ndim == 4 && y->ndim == 4))) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self and out must both be 3-D or both 4-D, got %d and %d dims",
                       api, (int)x->ndim, (int)y->ndim);
    }
    {
        const bool ok = x->dims[1] != 0 && x->dims[2] != 0 && (x->ndim == 3 ? x->dims[0] != 0 : x->dims[3] != 0);
        if (!ok) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: self (shape %s) may be empty only in its batch dim (of a 4-D self)", api,
                           pa_shape_str(x->dims, x->ndim, s1, sizeof s1));
        }
    }
    if (ks->size < 1) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: kernelSize must have 1 or 2 values, got 0", api);
    if (pd->size != 1 && pd->size != 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: paddings must have 1 or 2 values, got %llu", api,
                       (unsigned long long)pd->size);
    }
    if (st->size > 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: strides must have 0, 1 or 2 values, got %llu", api,
                       (unsigned long long)st->size);
    }
    const int64_t kH = ks->values[0], kW = ks->size == 1 ? kH : ks->values[1];
    const int64_t padH = pd->values[0], padW = pd->size == 1 ? padH : pd->values[1];
    if (kH < 2 * padH || kW < 2 * padW) {
        char s2[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: paddings %s must be at most half of kernelSize %s", api,
                       cv_array_str(pd, s1, sizeof s1), cv_array_str(ks, s2, sizeof s2));
    }
    const int64_t sH = st->size == 0 ? kH : st->values[0];
    const int64_t sW = st->size == 0 ? kW : st->size == 1 ? sH : st->values[1];
    const bool is3 = x->ndim == 3;
    const int64_t C = x->dims[is3 ? 0 : 1], H = x->dims[is3 ? 1 : 2], W = x->dims[is3 ? 2 : 3];
    const i128 oh = avg_out_size(H, kH, padH, sH, ceil), ow = avg_out_size(W, kW, padW, sW, ceil);
    if ((rc = check_out_shape(api, x, y, oh, ow)) != ACLNN_SUCCESS) return rc;
    if (cube < 0 || cube > 4) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: cubeMathType must be 0 (KEEP_DTYPE), 1 (ALLOW_FP32_DOWN_PRECISION), 2 (USE_FP16), "
                       "3 (USE_HF32) or 4 (USE_FP32_ADD), got %lld",
                       api, (long long)cube);
    }
    aclDataType cd = x->dtype == ACL_BF16 ? ACL_FLOAT : x->dtype;
    if (!cv_is_empty(x) && !cv_is_empty(y)) {
        /* the vendor's kernel choice on 910B: the global mean or the cube kernel convert fp32 by cubeMathType */
        const bool global = H == kH && W == kW && padH == 0 && padW == 0;
        const bool strip = !(W / H < 2 && H / W < 2);
        const bool kernel_ok = kH <= 255 && kW <= 255 && (kH * kW <= 255 || (kH <= 20 && kW <= 20)) &&
                               divisor >= -255 && divisor <= 255;
        const bool cube_path = global || (!strip && kernel_ok && !ceil && C < 65536);
        if (cube_path && x->dtype == ACL_FLOAT) {
            if (cube == 2) {
                cd = ACL_FLOAT16;
            } else if (cube != 0) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID,
                               "%s: cubeMathType %lld (HF32) is not supported for a FLOAT self by this kernel; use 0 "
                               "(KEEP_DTYPE) or 2 (USE_FP16)",
                               api, (long long)cube);
            }
        }
    }
    cv_plan p;
    cv_plan_init(&p, op, cv_is_empty(x) || cv_is_empty(y) ? CV_RUN_NOTHING : CV_RUN_AVG_POOL);
    pool_geometry(&p, x, y);
    p.k[1] = kH, p.k[2] = kW;
    p.s[1] = sH, p.s[2] = sW;
    p.p[1] = padH, p.p[2] = padW;
    p.count_include_pad = count_pad;
    p.divisor = divisor;
    p.cd = cd;
    const int ins[1] = {CV_V_X}, outs[1] = {CV_V_Y};
    return cv_finish(op, &p, ins, 1, outs, 1, NULL, workspaceSize, executor);
}

typedef struct pool_ctx {
    const cv_plan *p;
    const pa_tview *y;
} pool_ctx;

/* Items: output rows (n, c, oh). */
static void avg_rows(void *vctx, int64_t begin, int64_t end) {
    const pool_ctx *c = vctx;
    const cv_plan *p = c->p;
    const pa_tview *x = &p->v[CV_V_X], *y = c->y;
    const char *xb = pa_tview_ptr(x);
    char *yb = pa_tview_ptr(y);
    const size_t xes = pa_dtype_size(x->dtype), yes = pa_dtype_size(y->dtype);
    const int64_t H = p->in_sp[1], W = p->in_sp[2], OH = p->out_sp[1], OW = p->out_sp[2];
    const int64_t kH = p->k[1], kW = p->k[2], sH = p->s[1], sW = p->s[2], pH = p->p[1], pW = p->p[2];
    const aclDataType cd = (aclDataType)p->cd;
    int64_t ys[5];
    cv_out_strides(p, y, ys);
    for (int64_t r = begin; r < end; r++) {
        const int64_t oy = r % OH, nc = r / OH, ch = nc % p->cin, n = nc / p->cin;
        const char *xc = xb + (n * p->xs[0] + ch * p->xs[1]) * (int64_t)xes;
        char *yr = yb + (n * ys[0] + ch * ys[1] + oy * ys[3]) * (int64_t)yes;
        int64_t h0 = oy * sH - pH, h1 = h0 + kH;
        if (h1 > H + pH) h1 = H + pH;
        const int64_t hn_pad = h1 - h0;
        if (h0 < 0) h0 = 0;
        if (h1 > H) h1 = H;
        for (int64_t ox = 0; ox < OW; ox++) {
            int64_t w0 = ox * sW - pW, w1 = w0 + kW;
            if (w1 > W + pW) w1 = W + pW;
            const int64_t wn_pad = w1 - w0;
            if (w0 < 0) w0 = 0;
            if (w1 > W) w1 = W;
            float sum = 0.0f;
            for (int64_t ih = h0; ih < h1; ih++) {
                const char *xr = xc + ih * p->xs[3] * (int64_t)xes;
                for (int64_t iw = w0; iw < w1; iw++) {
                    const float v = cv_round_to(cv_load_f32(xr + iw * p->xs[4] * (int64_t)xes, x->dtype), cd);
                    sum = sum + v;
                }
            }
            float div;
            if (p->divisor != 0) {
                div = (float)p->divisor;
            } else if (p->count_include_pad) {
                div = (float)(hn_pad * wn_pad);
            } else {
                div = (float)((h1 - h0) * (w1 - w0));
            }
            const float v = cv_round_to(sum / div, cd);
            cv_store_f32(yr + ox * ys[4] * (int64_t)yes, y->dtype, v);
        }
    }
}

int cv_run_avg_pool(const cv_plan *p, const pa_tview *y) {
    pool_ctx c = {p, y};
    const int64_t rows = p->n * p->cin * p->out_sp[1];
    const int64_t kh = PA_MIN(p->k[1], p->in_sp[1]), kw = PA_MIN(p->k[2], p->in_sp[2]);
    const double per = (double)p->out_sp[2] * (double)kh * (double)kw;
    pa_parallel_for(rows, per >= 16384 ? 1 : (int64_t)(16384 / per), avg_rows, &c);
    return ACLNN_SUCCESS;
}

/* ---- MaxPool ---- */

enum { MX_SELF, MX_KERNEL, MX_STRIDES, MX_AUTOPAD, MX_PADS, MX_DILATIONS, MX_CEIL, MX_OUT };

static i128 div_floor(i128 x, i128 y) {
    i128 q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) q--;
    return q;
}

static i128 max_out_size(int64_t in, int64_t k, int64_t pl, int64_t pr, int64_t s, bool ceil) {
    i128 o = div_floor((i128)in + pl + pr - (k - 1) - 1 + (ceil ? s - 1 : 0), s) + 1;
    if (ceil && (o - 1) * s >= (i128)in + pl) o--;
    return o;
}

int cv_plan_max_pool(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *api = op->ws_api;
    const aclTensor *x = a[MX_SELF].p, *y = a[MX_OUT].p;
    const aclIntArray *ks = a[MX_KERNEL].p, *st = a[MX_STRIDES].p, *pd = a[MX_PADS].p, *dl = a[MX_DILATIONS].p;
    const int64_t autopad = a[MX_AUTOPAD].i, ceil = a[MX_CEIL].i;
    char s1[160];
    int rc = check_same_dtype(api, x, y);
    if (rc != ACLNN_SUCCESS) return rc;
    if (x->format != y->format) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self and out must have one format, got %s and %s", api,
                       pa_format_name(x->format), pa_format_name(y->format));
    }
    if (x->ndim != 3 && x->ndim != 4) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self must be 3-D (C, H, W) or 4-D (N, C, H, W), got %d dims",
                       api, (int)x->ndim);
    }
    if (ks->size != 1 && ks->size != 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: kernelShape must have 1 or 2 values, got %llu", api,
                       (unsigned long long)ks->size);
    }
    if (st->size > 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: strides must have 0, 1 or 2 values, got %llu", api,
                       (unsigned long long)st->size);
    }
    if (pd->size != 0 && pd->size != 1 && pd->size != 2 && pd->size != 4) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: pads must have 0, 1, 2 or 4 values, got %llu", api,
                       (unsigned long long)pd->size);
    }
    if (dl->size != 0 && dl->size != 1 && dl->size != 2 && dl->size != 4) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dilations must have 0, 1, 2 or 4 values, got %llu", api,
                       (unsigned long long)dl->size);
    }
    if (autopad != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: autoPad must be 0 (NOTSET), got %lld", api, (long long)autopad);
    }
    for (uint64_t i = 0; i < dl->size; i++) {
        if (dl->values[i] != 1) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dilations must all be 1, got %s", api,
                           cv_array_str(dl, s1, sizeof s1));
        }
    }
    const int64_t kH = ks->values[0], kW = ks->size == 1 ? kH : ks->values[1];
    if (kH <= 0 || kW <= 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: kernelShape values must be > 0, got %s", api,
                       cv_array_str(ks, s1, sizeof s1));
    }
    const int64_t sH = st->size == 0 ? 1 : st->values[0];
    const int64_t sW = st->size == 0 ? 1 : st->size == 1 ? sH : st->values[1];
    if (sH <= 0 || sW <= 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: strides values must be > 0, got %s", api,
                       cv_array_str(st, s1, sizeof s1));
    }
    int64_t pHL = 0, pHR = 0, pWL = 0, pWR = 0;
    if (pd->size == 1) {
        pHL = pHR = pWL = pWR = pd->values[0];
    } else if (pd->size == 2) {
        pHL = pHR = pd->values[0];
        pWL = pWR = pd->values[1];
    } else if (pd->size == 4) {
        pHL = pd->values[0], pWL = pd->values[1], pHR = pd->values[2], pWR = pd->values[3];
    }
    for (uint64_t i = 0; i < pd->size; i++) {
        if (pd->values[i] < 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: pads values must be >= 0, got %s", api,
                           cv_array_str(pd, s1, sizeof s1));
        }
    }
    if ((rc = check_limit(api, "kernelShape", ks)) != ACLNN_SUCCESS || (rc = check_limit(api, "strides", st)) != 0 ||
        (rc = check_limit(api, "pads", pd)) != 0) {
        return rc;
    }
    if (pHL + pHR > kH || pWL + pWR > kW) {
        char s2[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: pads %s: each dim's begin + end padding must be at most its kernel size %s", api,
                       cv_array_str(pd, s1, sizeof s1), cv_array_str(ks, s2, sizeof s2));
    }
    const bool is3 = x->ndim == 3;
    const int64_t H = x->dims[is3 ? 1 : 2], W = x->dims[is3 ? 2 : 3];
    const i128 oh = max_out_size(H, kH, pHL, pHR, sH, ceil != 0), ow = max_out_size(W, kW, pWL, pWR, sW, ceil != 0);
    if ((rc = check_out_shape(api, x, y, oh, ow)) != ACLNN_SUCCESS) return rc;
    cv_plan p;
    cv_plan_init(&p, op, cv_is_empty(x) || cv_is_empty(y) ? CV_RUN_NOTHING : CV_RUN_MAX_POOL);
    pool_geometry(&p, x, y);
    p.k[1] = kH, p.k[2] = kW;
    p.s[1] = sH, p.s[2] = sW;
    p.p[1] = pHL, p.p[2] = pWL;
    p.pad_end[1] = pHR, p.pad_end[2] = pWR;
    const int ins[1] = {CV_V_X}, outs[1] = {CV_V_Y};
    return cv_finish(op, &p, ins, 1, outs, 1, NULL, workspaceSize, executor);
}

static void max_rows(void *vctx, int64_t begin, int64_t end) {
    const pool_ctx *c = vctx;
    const cv_plan *p = c->p;
    const pa_tview *x = &p->v[CV_V_X], *y = c->y;
    const char *xb = pa_tview_ptr(x);
    char *yb = pa_tview_ptr(y);
    const size_t es = pa_dtype_size(x->dtype);
    const int64_t H = p->in_sp[1], W = p->in_sp[2], OH = p->out_sp[1], OW = p->out_sp[2];
    const int64_t kH = p->k[1], kW = p->k[2], sH = p->s[1], sW = p->s[2], pH = p->p[1], pW = p->p[2];
    int64_t ys[5];
    cv_out_strides(p, y, ys);
    for (int64_t r = begin; r < end; r++) {
        const int64_t oy = r % OH, nc = r / OH, ch = nc % p->cin, n = nc / p->cin;
        const char *xc = xb + (n * p->xs[0] + ch * p->xs[1]) * (int64_t)es;
        char *yr = yb + (n * ys[0] + ch * ys[1] + oy * ys[3]) * (int64_t)es;
        int64_t h0 = oy * sH - pH, h1 = h0 + kH;
        if (h0 < 0) h0 = 0;
        if (h1 > H) h1 = H;
        for (int64_t ox = 0; ox < OW; ox++) {
            int64_t w0 = ox * sW - pW, w1 = w0 + kW;
            if (w0 < 0) w0 = 0;
            if (w1 > W) w1 = W;
            float m = -INFINITY;
            const char *best = NULL;
            bool nan = false;
            for (int64_t ih = h0; ih < h1 && !nan; ih++) {
                const char *xr = xc + ih * p->xs[3] * (int64_t)es;
                for (int64_t iw = w0; iw < w1; iw++) {
                    const char *e = xr + iw * p->xs[4] * (int64_t)es;
                    const float v = cv_load_f32(e, x->dtype);
                    if (best == NULL || v > m || v != v) {
                        m = v;
                        best = e;
                        if (v != v) {
                            nan = true; /* NaN propagates: the first one wins */
                            break;
                        }
                    }
                }
            }
            char *dst = yr + ox * ys[4] * (int64_t)es;
            if (best != NULL) {
                memcpy(dst, best, es); /* the element itself: exact, NaN payloads kept */
            } else {
                cv_store_f32(dst, y->dtype, -INFINITY); /* a window only over padding */
            }
        }
    }
}

int cv_run_max_pool(const cv_plan *p, const pa_tview *y) {
    pool_ctx c = {p, y};
    const int64_t rows = p->n * p->cin * p->out_sp[1];
    const int64_t kh = PA_MIN(p->k[1], p->in_sp[1]), kw = PA_MIN(p->k[2], p->in_sp[2]);
    const double per = (double)p->out_sp[2] * (double)kh * (double)kw;
    pa_parallel_for(rows, per >= 16384 ? 1 : (int64_t)(16384 / per), max_rows, &c);
    return ACLNN_SUCCESS;
}
