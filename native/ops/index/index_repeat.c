/* The repeat-interleave forms and UpsampleNearest2d. The checks follow the
 * vendor's ops (index/repeat_interleave, ops-cv resize_nearest_neighbor_v2):
 *   RepeatInterleave(self, repeats, outputSize, out), self flattened:
 *       out dtype == self; repeats rank <= 1 with 1 or numel(self)
 *       elements; an empty self needs an empty, 0-d or one-element repeats;
 *       empty self or out: nothing; empty repeats: 161002; out [outputSize].
 *       A single repeat with outputSize == numel(self) copies self (the
 *       vendor's shortcut, whatever the repeat).
 *   RepeatInterleaveWithDim: dim in range (a 0-d self has none); repeats
 *       1 or self.size(dim) elements; empty self or outputSize 0: nothing;
 *       out = self with [dim] = outputSize.
 *   For a repeats tensor the launch checks every repeat >= 0 and their sum
 *   (a single repeat counts once per element) == outputSize (361001).
 *   RepeatInterleaveInt(self, repeats, outputSize, out): repeats >= 0; empty
 *       self or out: nothing; repeats 1: out = self flattened; else out
 *       [outputSize] and outputSize == repeats * numel(self) (161002: the
 *       vendor's kernel has no defined result otherwise).
 *   RepeatInterleaveIntWithDim: as the Int form along dim (out = self when
 *       repeats is 1; outputSize == repeats * self.size(dim)).
 *   UpsampleNearest2d(self, outputSize, out): out dtype == self; outputSize
 *       of 2; self 4-D with dims 1..3 and outputSize non-zero; self's format
 *       NCHW or NHWC (ND is refused, as by the vendor) and out's the same; N
 *       and C kept, H and W of out == outputSize. Each out pixel takes the
 *       input pixel min(floor(dst * (float)in / out), in - 1) per axis, as
 *       torch's legacy 'nearest'. */
#include <math.h>
#include <stdlib.h>

#include "ops/index/index_impl.h"
#include "runtime/pa_threadpool.h"

/* n[0]: outputSize; n[1]: the int repeats; mode 1: repeats is a tensor;
 * n[2] 1: flattened. */
static int plan_repeat(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const bool with_dim = kernel == IDX_REPEAT_INTERLEAVE_DIM || kernel == IDX_REPEAT_INTERLEAVE_INT_DIM;
    const bool tensor = kernel == IDX_REPEAT_INTERLEAVE || kernel == IDX_REPEAT_INTERLEAVE_DIM;
    const aclTensor *self = a[0].p, *reps = tensor ? a[1].p : NULL;
    const int64_t rep_int = tensor ? 0 : a[1].i;
    const int64_t out_size = with_dim ? a[3].i : a[2].i;
    const aclTensor *out = with_dim ? a[4].p : a[3].p;
    int rc = idx_check_same_dtype(api, "out", out, "self", self);
    if (rc != 0) return rc;
    int64_t ns = 0, nr = 1, dim = 0;
    rc = idx_numel(api, "self", self, &ns);
    if (rc == 0 && tensor) rc = idx_numel(api, "repeats", reps, &nr);
    if (rc != 0) return rc;
    if (tensor && reps->ndim > 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: repeats must have at most 1 dim, got %d", api, (int)reps->ndim);
    }
    if (!tensor && rep_int < 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: repeats must not be negative, got %lld", api, (long long)rep_int);
    }
    if (with_dim) {
        rc = idx_wrap_dim(api, with_dim ? a[2].i : 0, self->ndim, false, &dim);
        if (rc != 0) return rc;
    }
    const int64_t along = with_dim ? self->dims[dim] : ns;
    if (tensor && reps->ndim == 1 && nr != 1 && nr != along) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: repeats must hold 1 or %lld elements (the size %s), got %lld", api,
                       (long long)along, with_dim ? "of self along dim" : "of self", (long long)nr);
    }
    if (kernel == IDX_REPEAT_INTERLEAVE && ns == 0 && !(nr == 0 || reps->ndim == 0 || nr == 1)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: with an empty self, repeats must be empty, 0-d or hold one "
                       "element", api);
    }
    idx_plan p;
    idx_plan_init(&p, op, kernel, IDX_RUN_REPEAT);
    idx_plan_view(&p, IDX_V_SELF, self);
    idx_plan_view(&p, IDX_V_OUT, out);
    if (tensor) idx_plan_view(&p, IDX_V_INDEX, reps);
    const int in_t[] = {IDX_V_SELF, IDX_V_INDEX}, in_i[] = {IDX_V_SELF}, outs[] = {IDX_V_OUT};
    const int *in = tensor ? in_t : in_i;
    const int n_in = tensor ? 2 : 1;
    const bool nothing = ns == 0 || (with_dim ? out_size == 0 : idx_is_empty(out));
    if (nothing) {
        p.run = IDX_RUN_NOTHING;
        return idx_finish(op, &p, sizeof p, in, n_in, outs, 1, ws, ex);
    }
    if (tensor && nr == 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: repeats is empty; it must hold 1 or %lld elements", api,
                       (long long)along);
    }
    int64_t want[PA_MAX_DIMS];
    int32_t nd = 1;
    want[0] = out_size;
    p.mode = tensor;
    p.n[1] = rep_int;
    p.n[2] = !with_dim;
    if (!tensor && rep_int == 1) { /* the vendor copies self as it is (flattened for the form without dim) */
        want[0] = ns;
        if (with_dim) {
            nd = self->ndim;
            for (int32_t i = 0; i < nd; i++) want[i] = self->dims[i];
        }
    } else if (kernel == IDX_REPEAT_INTERLEAVE && nr == 1 && out_size == ns) {
        p.mode = 0; /* the vendor's shortcut: a copy, whatever the repeat */
        p.n[1] = 1;
    } else if (with_dim) {
        nd = self->ndim;
        for (int32_t i = 0; i < nd; i++) want[i] = self->dims[i];
        want[dim] = out_size;
    }
    rc = idx_check_shape(api, "out", out, nd, want);
    if (rc != 0) return rc;
    int64_t total = 0;
    if (!tensor && p.n[1] != 1 && (!pa_mul_ok(p.n[1], along, &total) || total != out_size)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: outputSize must be repeats * %lld = %lld, got %lld", api,
                       (long long)along, (long long)(p.n[1] * along), (long long)out_size);
    }
    p.dim = (int32_t)dim;
    p.n[0] = p.n[1] == 1 && !tensor ? along : out_size;
    return idx_finish(op, &p, sizeof p, in, n_in, outs, 1, ws, ex);
}

typedef struct rep_ctx {
    const pa_tview *s, *o;
    const char *ps;
    char *po;
    const int64_t *start; /* NULL: i * r */
    int64_t r, along;
    int dim;
    bool flat;
    size_t es;
} rep_ctx;

static void rep_items(void *vctx, int64_t begin, int64_t end) {
    const rep_ctx *c = vctx;
    const int64_t es = (int64_t)c->es;
    for (int64_t t = begin; t < end; t++) {
        const int64_t ai = t / c->along, i = t % c->along;
        const int64_t first = c->start ? c->start[i] : i * c->r, n = c->start ? c->start[i + 1] - first : c->r;
        if (c->flat) {
            const char *src = c->ps + idx_offset_of(c->s, 0, c->s->ndim, i) * es;
            for (int64_t k = 0; k < n; k++) idx_copy_elem(c->po + (first + k) * c->o->strides[0] * es, src, c->es);
            continue;
        }
        const int nc = c->s->ndim - c->dim - 1;
        const char *src = c->ps + (idx_offset_of(c->s, 0, c->dim, ai) + i * c->s->strides[c->dim]) * es;
        char *dst = c->po + idx_offset_of(c->o, 0, c->dim, ai) * es;
        for (int64_t k = 0; k < n; k++) {
            idx_copy_block(dst + (first + k) * c->o->strides[c->dim] * es, c->o->strides + c->dim + 1, src,
                           c->s->strides + c->dim + 1, c->s->dims + c->dim + 1, nc, c->es);
        }
    }
}

int idx_run_repeat(const idx_plan *p) {
    const pa_tview *s = &p->v[IDX_V_SELF], *o = &p->v[IDX_V_OUT];
    const bool flat = p->n[2] != 0;
    const int64_t along = flat ? idx_prod(s->dims, 0, s->ndim) : s->dims[p->dim];
    int64_t *start = NULL;
    if (p->mode) { /* a repeats tensor: check it, then where each element's copies start */
        int64_t *r = NULL, nr = 0;
        int rc = idx_load_indices(p->api, "repeats", &p->v[IDX_V_INDEX], -1, false, &r, &nr);
        if (rc != 0) return rc;
        start = malloc((size_t)(along + 1) * sizeof(int64_t));
        if (start == NULL) {
            free(r);
            return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the repeat offsets");
        }
        start[0] = 0;
        for (int64_t i = 0; i < along && rc == 0; i++) {
            const int64_t x = r[nr == 1 ? 0 : i];
            if (x < 0) {
                rc = pa_fail(ACLNN_ERR_RUNTIME_ERROR, "%s: repeats value %lld (element %lld) is negative", p->api,
                             (long long)x, (long long)(nr == 1 ? 0 : i));
            } else if (__builtin_add_overflow(start[i], x, &start[i + 1]) || start[i + 1] > p->n[0]) {
                rc = pa_fail(ACLNN_ERR_RUNTIME_ERROR, "%s: the repeats add up to more than outputSize (%lld)", p->api,
                             (long long)p->n[0]);
            }
        }
        if (rc == 0 && start[along] != p->n[0]) {
            rc = pa_fail(ACLNN_ERR_RUNTIME_ERROR, "%s: the repeats add up to %lld, but outputSize is %lld", p->api,
                         (long long)start[along], (long long)p->n[0]);
        }
        free(r);
        if (rc != 0) {
            free(start);
            return rc;
        }
    }
    rep_ctx c;
    c.s = s;
    c.o = o;
    c.ps = pa_tview_ptr(s);
    c.po = pa_tview_ptr(o);
    c.start = start;
    c.r = p->n[1];
    c.along = along;
    c.dim = p->dim;
    c.flat = flat;
    c.es = pa_dtype_size(s->dtype);
    const int64_t outer = flat ? 1 : idx_prod(s->dims, 0, p->dim);
    const int64_t per = flat ? 1 : idx_prod(s->dims, p->dim + 1, s->ndim - p->dim - 1);
    const int64_t avg = along > 0 ? (p->n[0] + along - 1) / along : 1;
    pa_parallel_for(outer * along, idx_grain(per * (avg > 0 ? avg : 1)), rep_items, &c);
    free(start);
    return ACLNN_SUCCESS;
}

/* ---- UpsampleNearest2d ---- */

/* n[0..1]: out H, W; mode 1: NHWC. */
static int plan_upsample(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *out = a[2].p;
    const aclIntArray *size = a[1].p;
    int rc = idx_check_same_dtype(api, "out", out, "self", self);
    if (rc != 0) return rc;
    char s1[160];
    if (size->size != 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: outputSize must hold 2 values (H, W), got %llu", api,
                       (unsigned long long)size->size);
    }
    if (self->ndim != 4) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self must be 4-D, got shape %s", api,
                       pa_shape_str(self->dims, self->ndim, s1, sizeof s1));
    }
    const int64_t oh = size->values[0], ow = size->values[1];
    if (self->dims[1] == 0 || self->dims[2] == 0 || self->dims[3] == 0 || oh == 0 || ow == 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self's dims 1..3 and outputSize must be non-zero, got self %s "
                       "and outputSize [%lld,%lld]", api, pa_shape_str(self->dims, self->ndim, s1, sizeof s1),
                       (long long)oh, (long long)ow);
    }
    if (self->format != ACL_FORMAT_NCHW && self->format != ACL_FORMAT_NHWC) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self format must be NCHW or NHWC, got %s", api,
                       pa_format_name(self->format));
    }
    if (out->format != self->format) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out format must be self's (%s), got %s", api,
                       pa_format_name(self->format), pa_format_name(out->format));
    }
    const bool nhwc = self->format == ACL_FORMAT_NHWC;
    int64_t want[4] = {self->dims[0], self->dims[1], oh, ow};
    if (nhwc) want[1] = oh, want[2] = ow, want[3] = self->dims[3];
    rc = idx_check_shape(api, "out", out, 4, want);
    if (rc != 0) return rc;
    idx_plan p;
    idx_plan_init(&p, op, kernel, idx_is_empty(self) || idx_is_empty(out) ? IDX_RUN_NOTHING : IDX_RUN_UPSAMPLE);
    idx_plan_view(&p, IDX_V_SELF, self);
    idx_plan_view(&p, IDX_V_OUT, out);
    p.mode = nhwc;
    p.n[0] = oh;
    p.n[1] = ow;
    const int in[] = {IDX_V_SELF}, outs[] = {IDX_V_OUT};
    return idx_finish(op, &p, sizeof p, in, 1, outs, 1, ws, ex);
}

/* torch's nearest source index (upsample 'nearest', no scale given). */
static int64_t nearest_src(int64_t dst, int64_t in, int64_t out) {
    if (out == in) return dst;
    if (out == 2 * in) return dst >> 1;
    const float scale = (float)in / (float)out;
    const int64_t s = (int64_t)floorf((float)dst * scale);
    return s < in - 1 ? s : in - 1;
}

typedef struct up_ctx {
    const pa_tview *s, *o;
    const char *ps;
    char *po;
    const int64_t *wsrc;
    int hd, wd, cd; /* dims of H, W, C */
    int64_t ih, oh, ow, c;
    size_t es;
} up_ctx;

static void up_rows(void *vctx, int64_t begin, int64_t end) {
    const up_ctx *c = vctx;
    const int64_t es = (int64_t)c->es;
    for (int64_t t = begin; t < end; t++) { /* t = (n, c, oh) */
        const int64_t y = t % c->oh, ch = (t / c->oh) % c->c, n = t / (c->oh * c->c);
        const int64_t sy = nearest_src(y, c->ih, c->oh);
        const char *srow = c->ps + (n * c->s->strides[0] + ch * c->s->strides[c->cd] + sy * c->s->strides[c->hd]) * es;
        char *drow = c->po + (n * c->o->strides[0] + ch * c->o->strides[c->cd] + y * c->o->strides[c->hd]) * es;
        const int64_t sw = c->s->strides[c->wd], dw = c->o->strides[c->wd];
        for (int64_t x = 0; x < c->ow; x++) idx_copy_elem(drow + x * dw * es, srow + c->wsrc[x] * sw * es, c->es);
    }
}

int idx_run_upsample(const idx_plan *p) {
    const pa_tview *s = &p->v[IDX_V_SELF], *o = &p->v[IDX_V_OUT];
    up_ctx c;
    c.hd = p->mode ? 1 : 2;
    c.wd = p->mode ? 2 : 3;
    c.cd = p->mode ? 3 : 1;
    c.s = s;
    c.o = o;
    c.ps = pa_tview_ptr(s);
    c.po = pa_tview_ptr(o);
    c.ih = s->dims[c.hd];
    c.oh = p->n[0];
    c.ow = p->n[1];
    c.c = s->dims[c.cd];
    c.es = pa_dtype_size(s->dtype);
    int64_t *wsrc = malloc((size_t)c.ow * sizeof(int64_t));
    if (wsrc == NULL) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the column map");
    for (int64_t x = 0; x < c.ow; x++) wsrc[x] = nearest_src(x, s->dims[c.wd], c.ow);
    c.wsrc = wsrc;
    pa_parallel_for(s->dims[0] * c.c * c.oh, idx_grain(c.ow), up_rows, &c);
    free(wsrc);
    return ACLNN_SUCCESS;
}

int idx_plan_repeat_group(const pa_op *op, int kernel, const pa_arg *a, uint64_t *workspaceSize,
                          aclOpExecutor **executor) {
    if (kernel == IDX_UPSAMPLE_NEAREST2D) return plan_upsample(op, kernel, a, workspaceSize, executor);
    return plan_repeat(op, kernel, a, workspaceSize, executor);
}
