/* aclnnIm2col (torch's unfold): self (C, H, W) or (N, C, H, W) into out
 * (C*kh*kw, L) or (N, C*kh*kw, L), L = oh * ow; row c*kh*kw + i*kw + j,
 * column y*ow + x holds self[c, y*sh - ph + i*dh, x*sw - pw + j*dw] (0 in
 * the padding). Checks as the vendor (ops-math conversion/im2col op_api):
 * self 3-D with every dim > 0 or 4-D with C, H, W > 0; kernelSize,
 * dilation, padding and stride of 2 values (kernel, stride, dilation > 0,
 * padding >= 0); oh, ow >= 1; out's shape exactly. An empty batch does
 * nothing. out may be another of FLOAT, FLOAT16, BF16 (its values are
 * converted once, as the vendor's Cast). */
#include "ops/conv/conv_impl.h"
#include "runtime/pa_threadpool.h"

enum { A_SELF, A_KERNEL, A_DILATION, A_PADDING, A_STRIDE, A_OUT };

__extension__ typedef __int128 i128;

/* Floor division (the vendor's div_rtn). */
static i128 div_floor(i128 x, i128 y) {
    i128 q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) q--;
    return q;
}

int cv_plan_im2col(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *api = op->ws_api;
    const aclTensor *x = a[A_SELF].p, *y = a[A_OUT].p;
    const aclIntArray *ks = a[A_KERNEL].p, *dil = a[A_DILATION].p, *pad = a[A_PADDING].p, *st = a[A_STRIDE].p;
    char s1[160], s2[160];
    if (x->ndim != 3 && x->ndim != 4) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self must have 3 (C, H, W) or 4 (N, C, H, W) dims, got %d", api,
                       (int)x->ndim);
    }
    for (int32_t i = x->ndim == 4 ? 1 : 0; i < x->ndim; i++) {
        if (x->dims[i] <= 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self's dims %s must be > 0 (a 4-D self's batch may be 0)",
                           api, pa_shape_str(x->dims, x->ndim, s1, sizeof s1));
        }
    }
    const aclIntArray *arrs[4] = {ks, dil, pad, st};
    const char *names[4] = {"kernelSize", "dilation", "padding", "stride"};
    for (int i = 0; i < 4; i++) {
        if (arrs[i]->size != 2) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have 2 values, got %llu", api, names[i],
                           (unsigned long long)arrs[i]->size);
        }
    }
    for (int i = 0; i < 2; i++) {
        if (ks->values[i] <= 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: kernelSize values must be > 0, got %s", api,
                           cv_array_str(ks, s1, sizeof s1));
        }
    }
    for (int i = 0; i < 2; i++) {
        if (st->values[i] <= 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: stride values must be > 0, got %s", api,
                           cv_array_str(st, s1, sizeof s1));
        }
    }
    for (int i = 0; i < 2; i++) {
        if (dil->values[i] <= 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dilation values must be > 0, got %s", api,
                           cv_array_str(dil, s1, sizeof s1));
        }
    }
    for (int i = 0; i < 2; i++) {
        if (pad->values[i] < 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: padding values must be >= 0, got %s", api,
                           cv_array_str(pad, s1, sizeof s1));
        }
    }
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 2; k++) {
            if (arrs[i]->values[k] > ((int64_t)1 << 40)) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s values must be at most 2^40 (pyaclnn's limit), got %s",
                               api, names[i], cv_array_str(arrs[i], s1, sizeof s1));
            }
        }
    }
    const bool is3 = x->ndim == 3;
    const int64_t N = is3 ? 1 : x->dims[0], C = x->dims[is3 ? 0 : 1], H = x->dims[is3 ? 1 : 2],
                  W = x->dims[is3 ? 2 : 3];
    const i128 oh = div_floor((i128)H + 2 * (i128)pad->values[0] - ((i128)dil->values[0] * (ks->values[0] - 1) + 1),
                              st->values[0]) + 1;
    const i128 ow = div_floor((i128)W + 2 * (i128)pad->values[1] - ((i128)dil->values[1] * (ks->values[1] - 1) + 1),
                              st->values[1]) + 1;
    if (oh < 1 || ow < 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: the output positions (%lld, %lld) computed from self %s, kernelSize, dilation, padding "
                       "and stride must be at least 1",
                       api, (long long)(oh < INT64_MIN ? INT64_MIN : oh), (long long)(ow < INT64_MIN ? INT64_MIN : ow),
                       pa_shape_str(x->dims, x->ndim, s1, sizeof s1));
    }
    const i128 rows = (i128)C * ks->values[0] * ks->values[1], cols = oh * ow;
    bool same = y->ndim == (is3 ? 2 : 3);
    if (same) {
        const int32_t b = is3 ? 0 : 1;
        if (!is3) same = y->dims[0] == N;
        same = same && (i128)y->dims[b] == rows && (i128)y->dims[b + 1] == cols;
    }
    if (!same) {
        int64_t want[3];
        int nw = 0;
        if (!is3) want[nw++] = N;
        want[nw++] = rows > INT64_MAX ? INT64_MAX : (int64_t)rows;
        want[nw++] = cols > INT64_MAX ? INT64_MAX : (int64_t)cols;
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out shape must be %s, got %s", api,
                       pa_shape_str(want, nw, s1, sizeof s1), pa_shape_str(y->dims, y->ndim, s2, sizeof s2));
    }
    cv_plan p;
    cv_plan_init(&p, op, cv_is_empty(x) ? CV_RUN_NOTHING : CV_RUN_IM2COL);
    p.v[CV_V_X] = pa_tview_of(x);
    p.v[CV_V_Y] = pa_tview_of(y);
    p.n = N;
    p.cin = C;
    p.in_sp[1] = H, p.in_sp[2] = W;
    p.out_sp[1] = (int64_t)oh, p.out_sp[2] = (int64_t)ow;
    for (int i = 0; i < 2; i++) {
        p.k[1 + i] = ks->values[i];
        p.s[1 + i] = st->values[i];
        p.p[1 + i] = pad->values[i];
        p.d[1 + i] = dil->values[i];
    }
    const pa_tview xv = pa_tview_of(x);
    /* canonical strides: x [N, C, -, H, W]; y [N, row, -, col, -] */
    p.xs[0] = is3 ? 0 : xv.strides[0];
    p.xs[1] = xv.strides[is3 ? 0 : 1];
    p.xs[3] = xv.strides[is3 ? 1 : 2];
    p.xs[4] = xv.strides[is3 ? 2 : 3];
    p.ymap[0] = is3 ? -1 : 0;
    p.ymap[1] = is3 ? 0 : 1;
    p.ymap[2] = -1;
    p.ymap[3] = is3 ? 1 : 2;
    p.ymap[4] = -1;
    const int ins[1] = {CV_V_X}, outs[1] = {CV_V_Y};
    return cv_finish(op, &p, ins, 1, outs, 1, NULL, workspaceSize, executor);
}

typedef struct im2col_ctx {
    const cv_plan *p;
    const pa_tview *y;
} im2col_ctx;

/* Items: output rows (n, c, i, j). */
static void im2col_rows(void *vctx, int64_t begin, int64_t end) {
    const im2col_ctx *c = vctx;
    const cv_plan *p = c->p;
    const pa_tview *x = &p->v[CV_V_X], *y = c->y;
    const char *xb = pa_tview_ptr(x);
    char *yb = pa_tview_ptr(y);
    const aclDataType xd = x->dtype, yd = y->dtype;
    const size_t xes = pa_dtype_size(xd), yes = pa_dtype_size(yd);
    const int64_t KH = p->k[1], KW = p->k[2], OH = p->out_sp[1], OW = p->out_sp[2], H = p->in_sp[1],
                  W = p->in_sp[2];
    const int64_t rows = p->cin * KH * KW;
    int64_t ys[5];
    cv_out_strides(p, y, ys);
    for (int64_t r = begin; r < end; r++) {
        const int64_t n = r / rows, row = r % rows;
        const int64_t ch = row / (KH * KW), i = row / KW % KH, j = row % KW;
        const char *xc = xb + (n * p->xs[0] + ch * p->xs[1]) * (int64_t)xes;
        char *yr = yb + (n * ys[0] + row * ys[1]) * (int64_t)yes;
        int64_t col = 0;
        for (int64_t oy = 0; oy < OH; oy++) {
            const int64_t iy = oy * p->s[1] - p->p[1] + i * p->d[1];
            for (int64_t ox = 0; ox < OW; ox++, col++) {
                const int64_t ix = ox * p->s[2] - p->p[2] + j * p->d[2];
                char *dst = yr + col * ys[3] * (int64_t)yes;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) {
                    memset(dst, 0, yes);
                    continue;
                }
                const char *src = xc + (iy * p->xs[3] + ix * p->xs[4]) * (int64_t)xes;
                if (xd == yd) {
                    memcpy(dst, src, xes);
                } else {
                    cv_store_f32(dst, yd, cv_load_f32(src, xd));
                }
            }
        }
    }
}

int cv_run_im2col(const cv_plan *p, const pa_tview *y) {
    im2col_ctx c = {p, y};
    const int64_t items = p->n * p->cin * p->k[1] * p->k[2];
    const int64_t per = p->out_sp[1] * p->out_sp[2];
    pa_parallel_for(items, per >= 16384 ? 1 : 16384 / per, im2col_rows, &c);
    return ACLNN_SUCCESS;
}
