/* aclnnConvolution: 1-D / 2-D / 3-D convolution and transposed convolution
 * with groups, strides, (asymmetric) padding, dilation and output padding.
 *
 * Checks, in the vendor's order (ops-nn conv/convolution_forward op_api):
 * dims (3, 4 or 5, the same for input, weight and output; bias 1-D with the
 * output's channel count; stride / dilation / padding / outputPadding
 * lengths), formats (input's = output's; NCL for 1-D, NCHW for 2-D, NCDHW or
 * NDHWC for 3-D; bias ND / NCL / NCHW / NCDHW), values (kernel sizes > 0,
 * strides and dilations > 0, the padded input at least one dilated kernel,
 * groups > 0 dividing the channels, outputPadding below stride or
 * dilation), the output shape, cubeMathType in 0..4.
 *
 * Compute (conv_run below): the inputs rounded to the compute dtype, fp32
 * products summed in the order (input channel, kD, kH, kW), the bias added,
 * one rounding to the kernel's output dtype, then converted to the output's
 * dtype. Work is cut into (batch, group, output-position tile) items; each
 * builds its im2col tile and multiplies it with the group's weights
 * (kernels/conv/conv_kern.h). */
#include <stdatomic.h>
#include <stdlib.h>

#include "kernels/conv/conv_kern.h"
#include "ops/conv/conv_impl.h"
#include "runtime/pa_threadpool.h"

enum { A_INPUT, A_WEIGHT, A_BIAS, A_STRIDE, A_PADDING, A_DILATION, A_TRANSPOSED, A_OUTPAD, A_GROUPS, A_OUTPUT,
       A_CUBE };

/* Where N, C and the spatial dims sit in a tensor of format f and rank nd
 * (the vendor reads them from the format's letters). */
typedef struct layout {
    int n, c;      /* indices of N and C */
    int sp[CV_SP]; /* indices of D, H, W (-1: absent, size 1) */
    bool channel_last;
} layout;

static layout layout_of(aclFormat f, int32_t nd) {
    layout l = {0, 1, {-1, -1, -1}, false};
    if (f == ACL_FORMAT_NDHWC && nd == 5) {
        l.c = 4;
        l.sp[0] = 1, l.sp[1] = 2, l.sp[2] = 3;
        l.channel_last = true;
        return l;
    }
    for (int i = 0; i < nd - 2 && i < CV_SP; i++) l.sp[CV_SP - (nd - 2) + i] = 2 + i;
    return l;
}

static int64_t dim_at(const aclTensor *t, int idx) { return idx < 0 || idx >= t->ndim ? 1 : t->dims[idx]; }

/* Canonical [N, C, D, H, W] strides of t. */
static void canon_strides(const aclTensor *t, const layout *l, int64_t *st) {
    const pa_tview v = pa_tview_of(t);
    st[0] = v.strides[l->n];
    st[1] = v.strides[l->c];
    for (int i = 0; i < CV_SP; i++) st[2 + i] = l->sp[i] < 0 ? 0 : v.strides[l->sp[i]];
}

static aclDataType upper_float(aclDataType a, aclDataType b) {
    if (a == ACL_DOUBLE || b == ACL_DOUBLE) return ACL_DOUBLE;
    if (a == ACL_FLOAT || b == ACL_FLOAT) return ACL_FLOAT;
    if (a == ACL_BF16 && b == ACL_BF16) return ACL_BF16;
    if (a == ACL_FLOAT16 && b == ACL_FLOAT16) return ACL_FLOAT16;
    return ACL_FLOAT;
}

static int check_dims(const char *api, const char *name, const aclTensor *t) {
    if (t->ndim == 3 || t->ndim == 4 || t->ndim == 5) return ACLNN_SUCCESS;
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have 3, 4 or 5 dims (1-D, 2-D or 3-D convolution), got %d",
                   api, name, (int)t->ndim);
}

static const char *fmt_name(aclFormat f) { return pa_format_name(f); }

__extension__ typedef __int128 i128;

int cv_plan_convolution(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *api = op->ws_api;
    const aclTensor *x = a[A_INPUT].p, *w = a[A_WEIGHT].p, *bias = a[A_BIAS].p, *y = a[A_OUTPUT].p;
    const aclIntArray *stride = a[A_STRIDE].p, *padding = a[A_PADDING].p, *dilation = a[A_DILATION].p,
                      *outpad = a[A_OUTPAD].p;
    const bool transposed = a[A_TRANSPOSED].b;
    const int64_t groups = a[A_GROUPS].i;
    const int64_t cube = (int8_t)a[A_CUBE].i;
    char s1[160], s2[160], s3[160];

    if (transposed && outpad == NULL) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: outputPadding is NULL (it is required when transposed is true)",
                       api);
    }
    /* ---- dims ---- */
    int rc = check_dims(api, "input", x);
    if (rc == ACLNN_SUCCESS) rc = check_dims(api, "weight", w);
    if (rc == ACLNN_SUCCESS) rc = check_dims(api, "output", y);
    if (rc != ACLNN_SUCCESS) return rc;
    const int32_t nd = x->ndim;
    if (w->ndim != nd) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: weight must have the input's %d dims, got %d", api, (int)nd,
                       (int)w->ndim);
    }
    if (y->ndim != nd) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: output must have the input's %d dims, got %d", api, (int)nd,
                       (int)y->ndim);
    }
    const layout lx = layout_of(x->format, nd), lw = layout_of(w->format, nd), ly = layout_of(y->format, nd);
    const int64_t wN = dim_at(w, lw.n), wC = dim_at(w, lw.c), xC = dim_at(x, lx.c);
    if (bias != NULL) {
        if (bias->ndim != 1) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: bias must be 1-D, got %d dims", api, (int)bias->ndim);
        }
        int64_t want = wN; /* groups is checked later: an overflowing product matches no bias */
        if (transposed && __builtin_mul_overflow(wC, groups, &want)) want = -1;
        if (bias->dims[0] != want) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: bias (shape %s) must hold one value per output channel, %lld (%s); weight shape %s",
                           api, pa_shape_str(bias->dims, bias->ndim, s1, sizeof s1), (long long)want,
                           transposed ? "weight.shape[1] * groups" : "weight.shape[0]",
                           pa_shape_str(w->dims, w->ndim, s2, sizeof s2));
        }
    }
    const uint64_t sp = (uint64_t)nd - 2;
    if (stride->size != sp) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: stride must have %llu values (input dims - 2), got %llu", api,
                       (unsigned long long)sp, (unsigned long long)stride->size);
    }
    if (dilation->size != sp) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dilation must have %llu values (input dims - 2), got %llu", api,
                       (unsigned long long)sp, (unsigned long long)dilation->size);
    }
    const bool two_sided = (nd <= 4 && !transposed) || (nd == 4 && transposed);
    if (two_sided ? (padding->size != sp && padding->size != 2 * sp) : padding->size != sp) {
        if (two_sided) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: padding must have %llu or %llu values, got %llu", api,
                           (unsigned long long)sp, (unsigned long long)(2 * sp), (unsigned long long)padding->size);
        }
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: padding must have %llu values%s, got %llu", api,
                       (unsigned long long)sp, nd == 3 ? " (a transposed 1-D convolution)" : "",
                       (unsigned long long)padding->size);
    }
    if (transposed && outpad->size != sp) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: outputPadding must have %llu values (input dims - 2), got %llu",
                       api, (unsigned long long)sp, (unsigned long long)outpad->size);
    }
    /* ---- formats ---- */
    if (x->format != y->format) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: input and output must have one format, got %s and %s", api,
                       fmt_name(x->format), fmt_name(y->format));
    }
    if (bias != NULL && bias->format != ACL_FORMAT_ND && bias->format != ACL_FORMAT_NCL &&
        bias->format != ACL_FORMAT_NCHW && bias->format != ACL_FORMAT_NCDHW) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: bias format must be ND, NCL, NCHW or NCDHW, got %s", api,
                       fmt_name(bias->format));
    }
    {
        const aclTensor *ts[3] = {x, w, y};
        const char *names[3] = {"input", "weight", "output"};
        for (int i = 0; i < 3; i++) {
            const aclFormat f = ts[i]->format;
            const bool ok = nd == 3 ? f == ACL_FORMAT_NCL
                            : nd == 4 ? f == ACL_FORMAT_NCHW
                                      : (f == ACL_FORMAT_NCDHW || f == ACL_FORMAT_NDHWC);
            if (!ok) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s format must be %s for a %d-D convolution, got %s",
                               api, names[i], nd == 3 ? "NCL" : nd == 4 ? "NCHW" : "NCDHW or NDHWC", (int)nd - 2,
                               fmt_name(f));
            }
        }
    }
    /* ---- values ---- */
    int64_t xin[CV_SP], kw[CV_SP];
    for (int i = 0; i < CV_SP; i++) {
        xin[i] = dim_at(x, lx.sp[i]);
        kw[i] = dim_at(w, lw.sp[i]);
    }
    for (int i = CV_SP - (int)sp; i < CV_SP; i++) {
        if (kw[i] <= 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the weight's spatial sizes must be > 0, got weight shape %s",
                           api, pa_shape_str(w->dims, w->ndim, s1, sizeof s1));
        }
    }
    for (uint64_t i = 0; i < sp; i++) {
        if (stride->values[i] <= 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: stride values must be > 0, got %s", api,
                           cv_array_str(stride, s1, sizeof s1));
        }
    }
    for (uint64_t i = 0; i < sp; i++) {
        if (dilation->values[i] <= 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dilation values must be > 0, got %s", api,
                           cv_array_str(dilation, s1, sizeof s1));
        }
    }
    for (uint64_t i = 0; i < padding->size; i++) {
        if (padding->values[i] < 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: padding values must be >= 0, got %s", api,
                           cv_array_str(padding, s1, sizeof s1));
        }
        if (padding->values[i] > ((int64_t)1 << 40)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: padding values must be at most 2^40 (pyaclnn's limit), got %s", api,
                           cv_array_str(padding, s1, sizeof s1));
        }
    }
    for (uint64_t i = 0; i < sp; i++) {
        if (stride->values[i] > ((int64_t)1 << 40) || dilation->values[i] > ((int64_t)1 << 40)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: stride and dilation values must be at most 2^40 (pyaclnn's limit), got %s and %s",
                           api, cv_array_str(stride, s1, sizeof s1), cv_array_str(dilation, s2, sizeof s2));
        }
    }
    /* per spatial dim (canonical index i): stride, dilation, the two paddings */
    int64_t st[CV_SP] = {1, 1, 1}, dl[CV_SP] = {1, 1, 1}, pf[CV_SP] = {0, 0, 0}, pb[CV_SP] = {0, 0, 0},
            op_[CV_SP] = {0, 0, 0};
    for (int j = 0; j < (int)sp; j++) {
        const int i = CV_SP - (int)sp + j;
        st[i] = stride->values[j];
        dl[i] = dilation->values[j];
        if (padding->size == sp) {
            pf[i] = pb[i] = padding->values[j];
        } else { /* two values per dim: (begin, end); conv2d: top, bottom, left, right */
            pf[i] = padding->values[2 * j];
            pb[i] = padding->values[2 * j + 1];
        }
        if (transposed) op_[i] = outpad->values[j];
    }
    const bool x_empty = cv_is_empty(x), w_empty = cv_is_empty(w), y_empty = cv_is_empty(y);
    if (!transposed && !x_empty) {
        for (int i = CV_SP - (int)sp; i < CV_SP; i++) {
            if ((i128)xin[i] + pf[i] + pb[i] - (i128)dl[i] * (kw[i] - 1) - 1 < 0) {
                char s4[160];
                return pa_fail(ACLNN_ERR_PARAM_INVALID,
                               "%s: the padded input (shape %s, padding %s) is smaller than the dilated kernel "
                               "(weight shape %s, dilation %s)",
                               api, pa_shape_str(x->dims, x->ndim, s1, sizeof s1), cv_array_str(padding, s2, sizeof s2),
                               pa_shape_str(w->dims, w->ndim, s3, sizeof s3), cv_array_str(dilation, s4, sizeof s4));
            }
        }
    }
    if (groups <= 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: groups must be > 0, got %lld", api, (long long)groups);
    }
    int64_t cout;
    if (transposed) {
        if (!pa_mul_ok(wC, groups, &cout)) cout = -1;
        if (wN != xC) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: with transposed true, weight.shape[0] (%lld) must equal the input's channels (%lld)",
                           api, (long long)wN, (long long)xC);
        }
        for (int j = 0; j < (int)sp; j++) {
            const int i = CV_SP - (int)sp + j;
            if (op_[i] >= st[i] && op_[i] >= dl[i]) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID,
                               "%s: outputPadding %s must be less than the stride %s or the dilation %s", api,
                               cv_array_str(outpad, s1, sizeof s1), cv_array_str(stride, s2, sizeof s2),
                               cv_array_str(dilation, s3, sizeof s3));
            }
            if (op_[i] < 0) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: outputPadding values must be >= 0, got %s", api,
                               cv_array_str(outpad, s1, sizeof s1));
            }
        }
    } else {
        cout = wN;
        int64_t cin_total;
        if (!pa_mul_ok(wC, groups, &cin_total) || cin_total != xC) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: the input's channels (%lld) must equal weight.shape[1] (%lld) * groups (%lld)", api,
                           (long long)xC, (long long)wC, (long long)groups);
        }
    }
    if (wN % groups != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: weight.shape[0] (%lld) must be a multiple of groups (%lld)", api,
                       (long long)wN, (long long)groups);
    }
    if (transposed && xC == 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: with transposed true, the input's channels must be > 0", api);
    }
    if (transposed && !x_empty && !w_empty && !y_empty) {
        /* the vendor's limit of its backprop kernels: (k - 1) * dilation - padding <= 255, read at the indices
         * its check reads */
        const int64_t *dv = dilation->values, *pv = padding->values;
        bool ok = true;
        if (nd == 3) {
            ok = (i128)(kw[2] - 1) * dv[0] - pv[0] <= 255;
        } else if (nd == 4) {
            const int64_t dw_ = dv[dilation->size == 1 ? 0 : 1], pl = pv[padding->size == 1 ? 0 : 1];
            ok = (i128)(kw[2] - 1) * dw_ - pl <= 255 && (i128)(kw[1] - 1) * dv[0] - pv[0] <= 255;
        } else {
            const i128 e1 = (i128)(kw[2] - 1) * dv[2] - pv[2], e2 = (i128)(kw[1] - 1) * dv[1] - pv[1];
            ok = e1 <= 255 && e1 >= 0 && e2 <= 255 && e2 >= 0;
        }
        if (!ok) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: a transposed convolution needs 0 <= (kernel - 1) * dilation - padding <= 255 "
                           "(weight shape %s, dilation %s, padding %s)",
                           api, pa_shape_str(w->dims, w->ndim, s1, sizeof s1), cv_array_str(dilation, s2, sizeof s2),
                           cv_array_str(padding, s3, sizeof s3));
        }
    }
    /* ---- the output shape ---- */
    /* in 128 bits: C's division truncates toward zero, as the vendor's */
    i128 osp128[CV_SP] = {1, 1, 1};
    int64_t osp[CV_SP] = {1, 1, 1};
    for (int i = CV_SP - (int)sp; i < CV_SP; i++) {
        if (!transposed) {
            osp128[i] = ((i128)xin[i] + pf[i] + pb[i] - (i128)dl[i] * (kw[i] - 1) - 1) / st[i] + 1;
        } else {
            osp128[i] = (i128)(xin[i] - 1) * st[i] - pf[i] - pb[i] + (i128)dl[i] * (kw[i] - 1) + op_[i] + 1;
        }
        osp[i] = osp128[i] > INT64_MAX ? INT64_MAX : osp128[i] < INT64_MIN ? INT64_MIN : (int64_t)osp128[i];
    }
    {
        int64_t want[5];
        const int64_t xN = dim_at(x, lx.n);
        want[ly.n] = xN;
        want[ly.c] = cout;
        for (int i = 0; i < CV_SP; i++) {
            if (ly.sp[i] >= 0) want[ly.sp[i]] = osp[i];
        }
        bool same = true;
        for (int32_t i = 0; i < nd; i++) same = same && want[i] == y->dims[i];
        for (int i = 0; i < CV_SP; i++) same = same && osp128[i] == osp[i];
        if (!same) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: output shape must be %s, got %s", api,
                           pa_shape_str(want, nd, s1, sizeof s1), pa_shape_str(y->dims, y->ndim, s2, sizeof s2));
        }
        if ((x_empty || w_empty) && !y_empty) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: input (shape %s) or weight (shape %s) is empty, so the output must be empty, got %s",
                           api, pa_shape_str(x->dims, x->ndim, s1, sizeof s1),
                           pa_shape_str(w->dims, w->ndim, s2, sizeof s2),
                           pa_shape_str(y->dims, y->ndim, s3, sizeof s3));
        }
    }
    if (cube < 0 || cube > 4) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: cubeMathType must be 0 (KEEP_DTYPE), 1 (ALLOW_FP32_DOWN_PRECISION), 2 (USE_FP16), "
                       "3 (USE_HF32) or 4 (USE_FP32_ADD), got %lld",
                       api, (long long)cube);
    }

    cv_plan p;
    if (x_empty || w_empty || y_empty) {
        cv_plan_init(&p, op, CV_RUN_NOTHING);
    } else {
        cv_plan_init(&p, op, CV_RUN_CONV);
    }
    p.v[CV_V_X] = pa_tview_of(x);
    p.v[CV_V_W] = pa_tview_of(w);
    if (bias != NULL) p.v[CV_V_B] = pa_tview_of(bias);
    p.v[CV_V_Y] = pa_tview_of(y);
    p.n = dim_at(x, lx.n);
    p.cin = xC;
    p.cout = cout;
    p.groups = groups;
    p.transposed = transposed;
    p.cin_g = xC / groups;
    p.cout_g = cout / groups;
    for (int i = 0; i < CV_SP; i++) {
        p.in_sp[i] = xin[i];
        p.out_sp[i] = osp[i];
        p.k[i] = kw[i];
        p.s[i] = st[i];
        p.p[i] = pf[i];
        p.d[i] = dl[i];
    }
    canon_strides(x, &lx, p.xs);
    canon_strides(w, &lw, p.ws);
    p.ymap[0] = (int8_t)ly.n;
    p.ymap[1] = (int8_t)ly.c;
    for (int i = 0; i < CV_SP; i++) p.ymap[2 + i] = (int8_t)ly.sp[i];
    const aclDataType upper = upper_float(x->dtype, w->dtype);
    const aclDataType cd = cube == 2 ? ACL_FLOAT16 : upper;
    aclDataType od = transposed ? (y->dtype == ACL_FLOAT ? ACL_FLOAT : cd) : cd;
    if (cube == 2) od = ACL_FLOAT16;
    aclDataType bd = cd;
    if (bias != NULL) {
        if (transposed) bd = upper_float(od, bias->dtype);
        if (bd == ACL_BF16 && !(transposed && nd == 5)) bd = ACL_FLOAT;
    }
    p.cd = cd;
    p.od = od;
    p.bd = bd;
    p.has_bias = bias != NULL;
    const int ins[3] = {CV_V_X, CV_V_W, CV_V_B}, outs[1] = {CV_V_Y};
    const bool present[4] = {true, true, bias != NULL, true};
    return cv_finish(op, &p, ins, 3, outs, 1, present, workspaceSize, executor);
}

/* ---- run ---- */

typedef struct conv_ctx {
    const cv_plan *p;
    const pa_tview *y;
    const float *xf;   /* the input as fp32 (rounded to the compute dtype), canonical contiguous [N, C, D, H, W] */
    const float *wf;   /* per group: [cout_g][K] fp32 */
    const float *bf;   /* [cout] or NULL */
    int64_t K, P, tp, ntiles, kvol;
    cv_gemm_fn gemm;
    atomic_int failed; /* a thread's scratch could not be allocated */
} conv_ctx;

/* Ceiling / floor division for b > 0. */
static inline int64_t div_ceil(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
static inline int64_t div_floor(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* One row of the im2col tile: the input values that output positions ow in
 * [ow0, ow1) of output row (od, oh) multiply by kernel tap (kd, kh, kx) of
 * input channel plane xc, written to dst[0 .. ow1 - ow0) (0 in the padding). */
static void col_run(const cv_plan *p, const float *xc, int64_t od, int64_t oh, int64_t ow0, int64_t ow1,
                    int64_t kd, int64_t kh, int64_t kx, float *dst) {
    const int64_t ID = p->in_sp[0], IH = p->in_sp[1], IW = p->in_sp[2];
    const int64_t n = ow1 - ow0;
    if (!p->transposed) {
        const int64_t id = od * p->s[0] - p->p[0] + kd * p->d[0];
        const int64_t ih = oh * p->s[1] - p->p[1] + kh * p->d[1];
        if (id < 0 || id >= ID || ih < 0 || ih >= IH) {
            memset(dst, 0, (size_t)n * sizeof(float));
            return;
        }
        const float *xr = xc + (id * IH + ih) * IW;
        const int64_t s = p->s[2], base = kx * p->d[2] - p->p[2]; /* iw = ow * s + base */
        int64_t lo = div_ceil(-base, s), hi = div_floor(IW - 1 - base, s) + 1; /* valid ow: [lo, hi) */
        lo = lo < ow0 ? ow0 : lo > ow1 ? ow1 : lo;
        hi = hi > ow1 ? ow1 : hi < lo ? lo : hi;
        for (int64_t ow = ow0; ow < lo; ow++) dst[ow - ow0] = 0.0f;
        if (s == 1) {
            if (hi > lo) memcpy(dst + (lo - ow0), xr + lo + base, (size_t)(hi - lo) * sizeof(float));
        } else {
            for (int64_t ow = lo; ow < hi; ow++) dst[ow - ow0] = xr[ow * s + base];
        }
        for (int64_t ow = hi; ow < ow1; ow++) dst[ow - ow0] = 0.0f;
        return;
    }
    const int64_t td = od + p->p[0] - kd * p->d[0];
    const int64_t th = oh + p->p[1] - kh * p->d[1];
    if (td < 0 || th < 0 || td % p->s[0] != 0 || th % p->s[1] != 0 || td / p->s[0] >= ID || th / p->s[1] >= IH) {
        memset(dst, 0, (size_t)n * sizeof(float));
        return;
    }
    const float *xr = xc + (td / p->s[0] * IH + th / p->s[1]) * IW;
    const int64_t s = p->s[2], base = p->p[2] - kx * p->d[2]; /* tw = ow + base, iw = tw / s */
    for (int64_t ow = ow0; ow < ow1; ow++) {
        const int64_t tw = ow + base;
        dst[ow - ow0] = tw >= 0 && tw % s == 0 && tw / s < IW ? xr[tw / s] : 0.0f;
    }
}

/* Fills col[K][tp] for output positions [p0, p0 + tp) of batch n, group g:
 * row (ic, kd, kh, kx), one run of positions per output row. */
static void build_col(const conv_ctx *c, int64_t n, int64_t g, int64_t p0, float *col) {
    const cv_plan *p = c->p;
    const int64_t OH = p->out_sp[1], OW = p->out_sp[2];
    const int64_t KD = p->k[0], KH = p->k[1], KW = p->k[2];
    const int64_t tp = c->tp, P = c->P;
    const int64_t cnt = P - p0 < tp ? P - p0 : tp;
    const int64_t plane = p->in_sp[0] * p->in_sp[1] * p->in_sp[2];
    for (int64_t ic = 0; ic < p->cin_g; ic++) {
        const float *xc = c->xf + (n * p->cin + g * p->cin_g + ic) * plane;
        for (int64_t kd = 0; kd < KD; kd++) {
            for (int64_t kh = 0; kh < KH; kh++) {
                for (int64_t kx = 0; kx < KW; kx++) {
                    float *row = col + (((ic * KD + kd) * KH + kh) * KW + kx) * tp;
                    int64_t j = 0;
                    while (j < cnt) {
                        const int64_t pos = p0 + j, orow = pos / OW, ow = pos % OW;
                        const int64_t len = OW - ow < cnt - j ? OW - ow : cnt - j;
                        col_run(p, xc, orow / OH, orow % OH, ow, ow + len, kd, kh, kx, row + j);
                        j += len;
                    }
                    for (j = cnt; j < tp; j++) row[j] = 0.0f;
                }
            }
        }
    }
}

static void conv_items(void *vctx, int64_t begin, int64_t end) {
    conv_ctx *c = vctx;
    const cv_plan *p = c->p;
    const int64_t tp = c->tp, K = c->K;
    float *col = pa_thread_scratch((size_t)(K * tp + p->cout_g * tp) * sizeof(float));
    if (col == NULL) {
        atomic_store(&c->failed, 1);
        return;
    }
    float *acc = col + K * tp;
    const pa_tview *y = c->y;
    char *yb = pa_tview_ptr(y);
    const size_t es = pa_dtype_size(y->dtype);
    const int64_t OH = p->out_sp[1], OW = p->out_sp[2];
    int64_t ys[5];
    cv_out_strides(p, y, ys);
    for (int64_t it = begin; it < end; it++) {
        const int64_t tile = it % c->ntiles, ng = it / c->ntiles;
        const int64_t g = ng % p->groups, n = ng / p->groups;
        const int64_t p0 = tile * tp;
        const int64_t cnt = c->P - p0 < tp ? c->P - p0 : tp;
        build_col(c, n, g, p0, col);
        c->gemm(p->cout_g, K, tp, c->wf + g * p->cout_g * K, K, col, tp, acc, tp);
        for (int64_t oc = 0; oc < p->cout_g; oc++) {
            const int64_t ocg = g * p->cout_g + oc;
            const float b = c->bf ? c->bf[ocg] : 0.0f;
            const float *a = acc + oc * tp;
            int64_t pos = p0;
            int64_t od = pos / (OH * OW), oh = pos / OW % OH, ow = pos % OW;
            for (int64_t j = 0; j < cnt; j++) {
                float v = a[j];
                if (c->bf) v = v + b;
                v = cv_round_to(v, (aclDataType)p->od);
                const int64_t off = n * ys[0] + ocg * ys[1] + od * ys[2] + oh * ys[3] + ow * ys[4];
                cv_store_f32(yb + off * (int64_t)es, y->dtype, v);
                if (++ow == OW) {
                    ow = 0;
                    if (++oh == OH) {
                        oh = 0;
                        od++;
                    }
                }
            }
        }
    }
}

typedef struct cvt_ctx {
    const cv_plan *p;
    float *xf;
    int64_t plane;
} cvt_ctx;

/* One input row of n elements (stride st) as fp32 rounded to dtype cd. */
static void load_row(float *dst, const char *src, int64_t n, int64_t st, aclDataType dt, aclDataType cd) {
    const bool round = cd != ACL_FLOAT && cd != dt;
    if (dt == ACL_FLOAT && !round && st == 1) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    const size_t es = pa_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        const float v = cv_load_f32(src + i * st * (int64_t)es, dt);
        dst[i] = round ? cv_round_to(v, cd) : v;
    }
}

/* Converts input channels [begin, end) (over N * C) into the canonical fp32 buffer. */
static void convert_input(void *vctx, int64_t begin, int64_t end) {
    const cvt_ctx *c = vctx;
    const cv_plan *p = c->p;
    const pa_tview *x = &p->v[CV_V_X];
    const char *xb = pa_tview_ptr(x);
    const size_t es = pa_dtype_size(x->dtype);
    const int64_t ID = p->in_sp[0], IH = p->in_sp[1], IW = p->in_sp[2];
    for (int64_t nc = begin; nc < end; nc++) {
        const int64_t n = nc / p->cin, ch = nc % p->cin;
        float *dst = c->xf + nc * c->plane;
        for (int64_t id = 0; id < ID; id++) {
            for (int64_t ih = 0; ih < IH; ih++) {
                const int64_t base = n * p->xs[0] + ch * p->xs[1] + id * p->xs[2] + ih * p->xs[3];
                load_row(dst, xb + base * (int64_t)es, IW, p->xs[4], x->dtype, (aclDataType)p->cd);
                dst += IW;
            }
        }
    }
}

int cv_run_conv(const cv_plan *p, const pa_tview *y) {
    const int64_t kvol = p->k[0] * p->k[1] * p->k[2];
    const int64_t K = p->cin_g * kvol;
    const int64_t P = p->out_sp[0] * p->out_sp[1] * p->out_sp[2];
    const int64_t plane = p->in_sp[0] * p->in_sp[1] * p->in_sp[2];
    int64_t tp = cv_gemm_tile_p(K);
    const int64_t one_tile = P <= 16 ? 16 : (P + 31) / 32 * 32;
    if (one_tile < tp) tp = one_tile; /* a small output: one tile, little padding */
    /* sizes: every one is at most the elements of a checked tensor, except the
     * im2col tile (K * tp floats per thread) */
    int64_t nx, nw, scratch;
    if (!pa_mul_ok(p->n * p->cin, plane, &nx) || !pa_mul_ok(p->cout, K, &nw) ||
        !pa_mul_ok(K + p->cout_g, tp, &scratch) || nx > ((int64_t)1 << 40) || scratch > ((int64_t)1 << 36)) {
        return pa_fail(ACLNN_ERR_INNER_NULLPTR, "%s: the convolution is too large for pyaclnn's CPU kernel", p->api);
    }
    float *xf = malloc((size_t)(nx > 0 ? nx : 1) * sizeof(float));
    float *wf = malloc((size_t)(nw > 0 ? nw : 1) * sizeof(float));
    float *bf = p->has_bias ? malloc((size_t)p->cout * sizeof(float)) : NULL;
    if (xf == NULL || wf == NULL || (p->has_bias && bf == NULL)) {
        free(xf), free(wf), free(bf);
        return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the convolution's buffers");
    }
    /* weights -> [group][oc][ic][kd][kh][kw] fp32, rounded to the compute dtype */
    const pa_tview *w = &p->v[CV_V_W];
    const char *wb = pa_tview_ptr(w);
    const size_t wes = pa_dtype_size(w->dtype);
    for (int64_t g = 0; g < p->groups; g++) {
        for (int64_t oc = 0; oc < p->cout_g; oc++) {
            float *dst = wf + (g * p->cout_g + oc) * K;
            for (int64_t ic = 0; ic < p->cin_g; ic++) {
                /* forward: weight [cout, cin_g, k]; transposed: weight [cin, cout_g, k] */
                const int64_t o = p->transposed ? g * p->cin_g + ic : g * p->cout_g + oc;
                const int64_t i = p->transposed ? oc : ic;
                for (int64_t kd = 0; kd < p->k[0]; kd++) {
                    for (int64_t kh = 0; kh < p->k[1]; kh++) {
                        for (int64_t kx = 0; kx < p->k[2]; kx++) {
                            const int64_t off = o * p->ws[0] + i * p->ws[1] + kd * p->ws[2] + kh * p->ws[3] +
                                                kx * p->ws[4];
                            const float v = cv_load_f32(wb + off * (int64_t)wes, w->dtype);
                            *dst++ = cv_round_to(v, (aclDataType)p->cd);
                        }
                    }
                }
            }
        }
    }
    if (bf != NULL) {
        const pa_tview *b = &p->v[CV_V_B];
        const char *bb = pa_tview_ptr(b);
        const size_t bes = pa_dtype_size(b->dtype);
        for (int64_t oc = 0; oc < p->cout; oc++) {
            bf[oc] = cv_round_to(cv_load_f32(bb + oc * b->strides[0] * (int64_t)bes, b->dtype), (aclDataType)p->bd);
        }
    }
    cvt_ctx cc = {p, xf, plane};
    const int64_t nch = p->n * p->cin;
    pa_parallel_for(nch, plane >= 16384 ? 1 : 16384 / (plane > 0 ? plane : 1), convert_input, &cc);

    conv_ctx c = {p, y, xf, wf, bf, K, P, tp, (P + tp - 1) / tp, kvol, cv_gemm_select(), 0};
    if (pa_thread_scratch((size_t)scratch * sizeof(float)) == NULL) {
        free(xf), free(wf), free(bf);
        return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the im2col tile");
    }
    const int64_t items = p->n * p->groups * c.ntiles;
    /* about 2^18 multiply-adds per chunk (fixed: it does not depend on the thread count) */
    const int64_t per_item = p->cout_g * K * tp;
    const int64_t grain = per_item >= (1 << 18) ? 1 : (1 << 18) / (per_item > 0 ? per_item : 1);
    pa_parallel_for(items, grain, conv_items, &c);
    free(xf), free(wf), free(bf);
    if (atomic_load(&c.failed)) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the im2col tile");
    return ACLNN_SUCCESS;
}
