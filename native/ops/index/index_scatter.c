/* IndexCopy / InplaceIndexCopy, IndexFillTensor / InplaceIndexFillTensor,
 * Scatter / InplaceScatter / ScatterAdd. The checks follow the vendor's ops
 * (index/scatter_update, index/index_fill_d, index/scatter_elements_v2):
 *   IndexCopy   source and out dtype == self; self and out of one storage
 *               format; index rank <= 1; out shape == self; a 0-d source
 *               needs one index; ranks of self and source equal unless one is
 *               0-d; dim in range; self and source equal off dim;
 *               numel(index) == source.size(dim); indices in [0, size).
 *               Empty self or index: nothing is written (not even out).
 *               Duplicate indices: the last one in index order wins.
 *   IndexFill   out dtype == self; unless self is empty: out shape == self,
 *               dim in range, every index in [-size, size) (161002: the index
 *               is host data); no index: out = self; value goes through fp32
 *               (the vendor's ToFloat) to self's dtype.
 *   Scatter     src and out dtype == self; no index element: out = self;
 *               ranks of self, index, src equal; out shape == self;
 *               index.size(d) <= src.size(d), and <= self.size(d) off dim;
 *               dim in range; indices in [0, size). reduce: 0 none (the last
 *               write in index order wins), 1 add, 2 multiply, any value
 *               outside 0..5 is none (the vendor's rule); 3..5 (max, min,
 *               mean, experimental on the vendor's side) are refused.
 *   ScatterAdd  Scatter with reduce = add. Sums (and products) are made in
 *               index order: FLOAT16 / BF16 in fp32, rounded once at the end
 *               (as torch and the vendor's fp32 path), other dtypes in their
 *               own (integers wrap, BOOL: or / and). */
#include <stdlib.h>

#include "common/pa_half.h"
#include "kernels/map/map_cvt.h"
#include "ops/index/index_impl.h"
#include "runtime/pa_threadpool.h"

/* ---- IndexCopy ---- */

static int plan_index_copy(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const bool inplace = kernel == IDX_INPLACE_INDEX_COPY;
    const aclTensor *self = a[0].p, *index = a[2].p, *source = a[3].p;
    const aclTensor *out = inplace ? self : a[4].p;
    int rc = idx_check_same_dtype(api, "source", source, "selfRef", self);
    if (rc == 0) rc = idx_check_same_dtype(api, "outRef", out, "selfRef", self);
    if (rc != 0) return rc;
    char s1[160], s2[160];
    if (index->ndim > 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: index must have at most 1 dim, got %d", api, (int)index->ndim);
    }
    if (!idx_same_shape(self, out)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: outRef shape %s must be selfRef's %s", api,
                       pa_shape_str(out->dims, out->ndim, s1, sizeof s1),
                       pa_shape_str(self->dims, self->ndim, s2, sizeof s2));
    }
    int64_t ni = 0;
    rc = idx_numel(api, "index", index, &ni);
    if (rc != 0) return rc;
    if (source->ndim == 0 && ni != 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: a 0-d source needs exactly one index, got %lld", api,
                       (long long)ni);
    }
    if (self->ndim != source->ndim && self->ndim != 0 && source->ndim != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: source must have the rank of selfRef (%d), got %d", api,
                       (int)self->ndim, (int)source->ndim);
    }
    int64_t dim = 0;
    rc = idx_wrap_dim(api, a[1].i, self->ndim, true, &dim);
    if (rc != 0) return rc;
    /* the slices (dim removed; a 0-d tensor has none) must match */
    bool same = true;
    if (self->ndim > 0 && source->ndim > 0) {
        for (int32_t i = 0; i < self->ndim; i++) same = same && (i == dim || self->dims[i] == source->dims[i]);
    } else if (self->ndim > 1 || source->ndim > 1) {
        same = false;
    }
    if (!same) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: source shape %s must match selfRef shape %s outside dim %lld",
                       api, pa_shape_str(source->dims, source->ndim, s1, sizeof s1),
                       pa_shape_str(self->dims, self->ndim, s2, sizeof s2), (long long)dim);
    }
    if (source->ndim > 0 && ni != source->dims[self->ndim > 0 ? dim : 0]) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: index holds %lld elements but source's size along dim %lld is "
                       "%lld", api, (long long)ni, (long long)dim, (long long)source->dims[self->ndim > 0 ? dim : 0]);
    }
    if (!inplace && self->format != out->format) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: outRef format %s must be selfRef's (%s)", api,
                       pa_format_name(out->format), pa_format_name(self->format));
    }
    idx_plan p;
    idx_plan_init(&p, op, kernel, idx_is_empty(self) || ni == 0 ? IDX_RUN_NOTHING : IDX_RUN_INDEX_COPY);
    idx_plan_view(&p, IDX_V_SELF, self);
    idx_plan_view(&p, IDX_V_INDEX, index);
    idx_plan_view(&p, IDX_V_SRC, source);
    idx_plan_view(&p, IDX_V_OUT, out);
    p.dim = (int32_t)dim;
    const int in[] = {IDX_V_SELF, IDX_V_INDEX, IDX_V_SRC}, outs[] = {IDX_V_OUT};
    return idx_finish(op, &p, sizeof p, in, 3, outs, 1, ws, ex);
}

/* A rank-r view of t's elements for a 0-d tensor: all dims 1. */
static pa_tview as_rank(pa_tview v, int32_t r) {
    if (v.ndim == 0 && r > 0) {
        v.ndim = r;
        for (int32_t i = 0; i < r; i++) v.dims[i] = 1, v.strides[i] = 0;
    }
    return v;
}

typedef struct pos_pair {
    int64_t value, pos;
} pos_pair;

static int cmp_pair(const void *x, const void *y) {
    const pos_pair *a = x, *b = y;
    if (a->value != b->value) return a->value < b->value ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* win[j] = 1 when index j is the last one with its value. */
static int last_writers(const char *api, const int64_t *idx, int64_t n, uint8_t **win) {
    uint8_t *w = malloc((size_t)n);
    pos_pair *pp = n > 1 ? malloc((size_t)n * sizeof *pp) : NULL;
    if (w == NULL || (n > 1 && pp == NULL)) {
        free(w);
        free(pp);
        return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, api, "the index order");
    }
    if (n == 1) {
        w[0] = 1;
    } else {
        for (int64_t j = 0; j < n; j++) pp[j].value = idx[j], pp[j].pos = j;
        qsort(pp, (size_t)n, sizeof *pp, cmp_pair);
        for (int64_t k = 0; k < n; k++) w[pp[k].pos] = k + 1 == n || pp[k + 1].value != pp[k].value;
    }
    free(pp);
    *win = w;
    return ACLNN_SUCCESS;
}

typedef struct copy_ctx {
    pa_tview src, out;
    const char *ps;
    char *po;
    const int64_t *idx;
    const uint8_t *win;
    int64_t n;
    int dim;
    size_t es;
} copy_ctx;

static void copy_items(void *vctx, int64_t begin, int64_t end) {
    const copy_ctx *c = vctx;
    const int64_t es = (int64_t)c->es;
    const int nc = c->out.ndim - c->dim - 1;
    for (int64_t t = begin; t < end; t++) {
        const int64_t ai = t / c->n, j = t % c->n;
        if (!c->win[j]) continue;
        const int64_t so = idx_offset_of(&c->src, 0, c->dim, ai) + j * c->src.strides[c->dim];
        const int64_t oo = idx_offset_of(&c->out, 0, c->dim, ai) + c->idx[j] * c->out.strides[c->dim];
        idx_copy_block(c->po + oo * es, c->out.strides + c->dim + 1, c->ps + so * es, c->src.strides + c->dim + 1,
                       c->out.dims + c->dim + 1, nc, c->es);
    }
}

int idx_run_index_copy(const idx_plan *p) {
    const pa_tview out = as_rank(p->v[IDX_V_OUT], 1);
    const int64_t size = out.dims[p->dim];
    int64_t *idx = NULL, n = 0;
    int rc = idx_load_indices(p->api, "index", &p->v[IDX_V_INDEX], size, false, &idx, &n);
    uint8_t *win = NULL;
    if (rc == 0) rc = last_writers(p->api, idx, n, &win);
    if (rc != 0) {
        free(idx);
        return rc;
    }
    idx_copy_view(&p->v[IDX_V_OUT], &p->v[IDX_V_SELF]); /* nothing when in place */
    copy_ctx c;
    c.out = out;
    c.src = as_rank(p->v[IDX_V_SRC], out.ndim);
    c.ps = pa_tview_ptr(&c.src);
    c.po = pa_tview_ptr(&c.out);
    c.idx = idx;
    c.win = win;
    c.n = n;
    c.dim = p->dim;
    c.es = pa_dtype_size(out.dtype);
    const int64_t items = idx_prod(out.dims, 0, p->dim) * n;
    pa_parallel_for(items, idx_grain(idx_prod(out.dims, p->dim + 1, out.ndim - p->dim - 1)), copy_items, &c);
    free(win);
    free(idx);
    return ACLNN_SUCCESS;
}

/* ---- IndexFill ---- */

static int cmp_i64(const void *x, const void *y) {
    const int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static int plan_index_fill(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const bool inplace = kernel == IDX_INPLACE_INDEX_FILL;
    const aclTensor *self = a[0].p, *out = inplace ? self : a[4].p;
    const aclIntArray *index = a[2].p;
    const aclScalar *value = a[3].p;
    int rc = idx_check_same_dtype(api, "out", out, "self", self);
    if (rc != 0) return rc;
    int64_t dim = 0, size = 1;
    const bool empty = idx_is_empty(self);
    if (!empty) {
        if (!idx_same_shape(self, out)) {
            char s1[160], s2[160];
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out shape %s must be self's %s", api,
                           pa_shape_str(out->dims, out->ndim, s1, sizeof s1),
                           pa_shape_str(self->dims, self->ndim, s2, sizeof s2));
        }
        rc = idx_wrap_dim(api, a[1].i, self->ndim, true, &dim);
        if (rc != 0) return rc;
        size = self->ndim == 0 ? 1 : self->dims[dim];
        for (uint64_t i = 0; i < index->size; i++) {
            const int64_t v = index->values[i];
            if (v < -size || v >= size) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: index[%llu] = %lld is out of range: it must be in "
                               "[%lld, %lld)", api, (unsigned long long)i, (long long)v, (long long)-size,
                               (long long)size);
            }
        }
    }
    const int run = empty ? IDX_RUN_NOTHING : index->size == 0 ? IDX_RUN_COPY : IDX_RUN_INDEX_FILL;
    const size_t nidx = run == IDX_RUN_INDEX_FILL ? (size_t)index->size : 0;
    idx_plan *p = malloc(sizeof(idx_plan) + (nidx ? nidx : 1) * sizeof(int64_t));
    if (p == NULL) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, api, "the plan");
    idx_plan_init(p, op, kernel, run);
    idx_plan_view(p, IDX_V_SELF, self);
    idx_plan_view(p, IDX_V_OUT, out);
    p->dim = (int32_t)dim;
    int64_t m = 0;
    if (nidx) {
        for (size_t i = 0; i < nidx; i++) {
            const int64_t v = index->values[i];
            p->extra[i] = v < 0 ? v + size : v;
        }
        qsort(p->extra, nidx, sizeof(int64_t), cmp_i64);
        for (size_t i = 0; i < nidx; i++) {
            if (m == 0 || p->extra[m - 1] != p->extra[i]) p->extra[m++] = p->extra[i];
        }
    }
    p->nextra = m;
    /* the vendor builds its fill pattern in fp32, then casts it to self's dtype */
    const float f = (float)pa_scalar_f(value);
    char tmp[8] = {0};
    pa_cvt_store_f(tmp, self->dtype, (double)f);
    memcpy(&p->n[0], tmp, 8);
    const int in[] = {IDX_V_SELF}, outs[] = {IDX_V_OUT};
    rc = idx_finish(op, p, sizeof(idx_plan) + (size_t)m * sizeof(int64_t), in, 1, outs, 1, ws, ex);
    free(p);
    return rc;
}

typedef struct fill_ctx {
    pa_tview out;
    char *po;
    const int64_t *idx;
    int64_t n;
    int dim;
    const void *val;
    size_t es;
} fill_ctx;

static void fill_items(void *vctx, int64_t begin, int64_t end) {
    const fill_ctx *c = vctx;
    const int64_t es = (int64_t)c->es;
    for (int64_t t = begin; t < end; t++) {
        const int64_t ai = t / c->n, j = t % c->n;
        const int64_t oo = idx_offset_of(&c->out, 0, c->dim, ai) + c->idx[j] * c->out.strides[c->dim];
        idx_fill_block(c->po + oo * es, c->out.strides + c->dim + 1, c->out.dims + c->dim + 1,
                       c->out.ndim - c->dim - 1, c->val, c->es);
    }
}

int idx_run_index_fill(const idx_plan *p) {
    idx_copy_view(&p->v[IDX_V_OUT], &p->v[IDX_V_SELF]);
    fill_ctx c;
    c.out = as_rank(p->v[IDX_V_OUT], 1);
    c.po = pa_tview_ptr(&c.out);
    c.idx = p->extra;
    c.n = p->nextra;
    c.dim = p->dim;
    c.val = &p->n[0];
    c.es = pa_dtype_size(c.out.dtype);
    const int64_t items = idx_prod(c.out.dims, 0, p->dim) * c.n;
    pa_parallel_for(items, idx_grain(idx_prod(c.out.dims, p->dim + 1, c.out.ndim - p->dim - 1)), fill_items, &c);
    return ACLNN_SUCCESS;
}

/* ---- Scatter / ScatterAdd ---- */

static int plan_scatter(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *index = a[2].p, *src = a[3].p;
    const aclTensor *out = kernel == IDX_SCATTER ? a[5].p : kernel == IDX_SCATTER_ADD ? a[4].p : self;
    int64_t reduce = kernel == IDX_SCATTER_ADD ? IDX_REDUCE_ADD : a[4].i;
    if (reduce >= 3 && reduce <= 5) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: reduce %lld (%s) is experimental in CANN and not implemented by "
                       "pyaclnn; use 0 (none), 1 (add) or 2 (multiply)", api, (long long)reduce,
                       reduce == 3 ? "max" : reduce == 4 ? "min" : "mean");
    }
    if (reduce < 0 || reduce > 5) reduce = IDX_REDUCE_NONE; /* the vendor's fallback */
    const char *sname = kernel == IDX_INPLACE_SCATTER ? "selfRef" : "self";
    int rc = idx_check_same_dtype(api, "src", src, sname, self);
    if (rc == 0) rc = idx_check_same_dtype(api, "out", out, sname, self);
    if (rc != 0) return rc;
    char s1[160], s2[160];
    int64_t ni = 0;
    rc = idx_numel(api, "index", index, &ni);
    if (rc != 0) return rc;
    if (!idx_same_shape(self, out)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out shape %s must be %s's %s", api,
                       pa_shape_str(out->dims, out->ndim, s1, sizeof s1), sname,
                       pa_shape_str(self->dims, self->ndim, s2, sizeof s2));
    }
    int64_t dim = 0;
    int run = IDX_RUN_COPY;
    if (ni > 0) {
        if (index->ndim != self->ndim || src->ndim != self->ndim) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s, index and src must have one rank, got %d, %d and %d",
                           api, sname, (int)self->ndim, (int)index->ndim, (int)src->ndim);
        }
        const int32_t n = self->ndim;
        /* the vendor's clamped dim for the shape checks, then the range check */
        const int64_t fd = a[1].i < 0 ? PA_MAX(a[1].i + n, 0) : PA_MIN(a[1].i, n - 1);
        for (int32_t i = 0; i < n; i++) {
            if (index->dims[i] > src->dims[i]) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: index shape %s must not exceed src shape %s in any dim",
                               api, pa_shape_str(index->dims, n, s1, sizeof s1),
                               pa_shape_str(src->dims, n, s2, sizeof s2));
            }
        }
        for (int32_t i = 0; i < n; i++) {
            if (i != fd && index->dims[i] > self->dims[i]) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: index shape %s must not exceed %s shape %s outside dim "
                               "%lld", api, pa_shape_str(index->dims, n, s1, sizeof s1), sname,
                               pa_shape_str(self->dims, n, s2, sizeof s2), (long long)a[1].i);
            }
        }
        rc = idx_wrap_dim(api, a[1].i, n, true, &dim);
        if (rc != 0) return rc;
        run = IDX_RUN_SCATTER;
    }
    idx_plan p;
    idx_plan_init(&p, op, kernel, run);
    idx_plan_view(&p, IDX_V_SELF, self);
    idx_plan_view(&p, IDX_V_INDEX, index);
    idx_plan_view(&p, IDX_V_SRC, src);
    idx_plan_view(&p, IDX_V_OUT, out);
    p.dim = (int32_t)dim;
    p.mode = (int32_t)reduce;
    const int in[] = {IDX_V_SELF, IDX_V_INDEX, IDX_V_SRC}, outs[] = {IDX_V_OUT};
    return idx_finish(op, &p, sizeof p, in, 3, outs, 1, ws, ex);
}

/* dst = dst (op) val for one element of dtype dt (val of dtype vdt: dt, or
 * FLOAT16 / BF16 into an fp32 copy). */
static inline void reduce_elem(char *d, const char *v, aclDataType dt, aclDataType vdt, int op, size_t es) {
    if (op == IDX_REDUCE_NONE) {
        idx_copy_elem(d, v, es);
        return;
    }
    const bool add = op == IDX_REDUCE_ADD;
    switch (dt) {
    case ACL_FLOAT: {
        float x, y;
        memcpy(&x, d, 4);
        if (vdt == ACL_FLOAT) memcpy(&y, v, 4);
        else y = (float)pa_cvt_load_f(v, vdt);
        x = add ? x + y : x * y;
        memcpy(d, &x, 4);
        return;
    }
    case ACL_DOUBLE: {
        double x, y;
        memcpy(&x, d, 8), memcpy(&y, v, 8);
        x = add ? x + y : x * y;
        memcpy(d, &x, 8);
        return;
    }
    case ACL_BOOL: {
        const uint8_t x = *(const uint8_t *)d != 0, y = *(const uint8_t *)v != 0;
        *(uint8_t *)d = add ? (x | y) : (x & y);
        return;
    }
    default: { /* integers: wrap to the width */
        const uint64_t x = (uint64_t)pa_cvt_load_i(d, dt), y = (uint64_t)pa_cvt_load_i(v, dt);
        pa_cvt_store_i(d, dt, (int64_t)(add ? x + y : x * y));
        return;
    }
    }
}

typedef struct scatter_ctx {
    idx_cursor lines; /* index dims with the axis at 1: 0 src, 1 out, 2 index (row-major) */
    const char *ps;
    char *po;
    const int64_t *idx;
    int64_t k, src_step, out_step, idx_step;
    aclDataType dt, vdt;
    int op;
    size_t es, ses; /* of out, of src */
} scatter_ctx;

static void scatter_lines(void *vctx, int64_t begin, int64_t end) {
    const scatter_ctx *c = vctx;
    idx_cursor cur = c->lines;
    idx_cursor_seek(&cur, begin);
    const int64_t es = (int64_t)c->es;
    for (int64_t l = begin; l < end; l++) {
        for (int64_t k = 0; k < c->k; k++) {
            const int64_t t = c->idx[cur.off[2] + k * c->idx_step];
            reduce_elem(c->po + (cur.off[1] + t * c->out_step) * es,
                        c->ps + (cur.off[0] + k * c->src_step) * (int64_t)c->ses,
                        c->dt, c->vdt, c->op, c->es);
        }
        idx_cursor_next(&cur);
    }
}

/* Row-major contiguous fp32 copy of a view (to), or the view from it (back). */
static void f32_copy(const pa_tview *v, float *buf, bool back) {
    idx_cursor c;
    memset(&c, 0, sizeof c);
    c.nd = v->ndim;
    c.nst = 1;
    for (int32_t i = 0; i < v->ndim; i++) c.dims[i] = v->dims[i], c.st[0][i] = v->strides[i];
    char *base = pa_tview_ptr(v);
    const int64_t n = idx_prod(v->dims, 0, v->ndim), es = (int64_t)pa_dtype_size(v->dtype);
    for (int64_t k = 0; k < n; k++, idx_cursor_next(&c)) {
        if (back) pa_cvt_store_f(base + c.off[0] * es, v->dtype, (double)buf[k]);
        else buf[k] = (float)pa_cvt_load_f(base + c.off[0] * es, v->dtype);
    }
}

int idx_run_scatter(const idx_plan *p) {
    pa_tview out = as_rank(p->v[IDX_V_OUT], 1);
    const pa_tview src = as_rank(p->v[IDX_V_SRC], 1), iv = as_rank(p->v[IDX_V_INDEX], 1);
    int64_t *idx = NULL, n = 0;
    int rc = idx_load_indices(p->api, "index", &p->v[IDX_V_INDEX], out.dims[p->dim], false, &idx, &n);
    if (rc != 0) return rc;
    /* FLOAT16 / BF16 sums and products: in fp32, rounded once (as torch, and
     * the vendor's fp32 path) */
    const bool half = p->mode != IDX_REDUCE_NONE && (out.dtype == ACL_FLOAT16 || out.dtype == ACL_BF16);
    float *buf = NULL;
    if (half) {
        buf = malloc((size_t)idx_prod(out.dims, 0, out.ndim) * sizeof(float));
        if (buf == NULL) {
            free(idx);
            return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the fp32 copy");
        }
        f32_copy(&p->v[IDX_V_SELF], buf, false);
        int64_t m = 1;
        for (int32_t i = out.ndim - 1; i >= 0; i--) {
            out.strides[i] = out.dims[i] == 1 ? 0 : m;
            m *= out.dims[i];
        }
        out.dtype = ACL_FLOAT;
        out.base = buf;
        out.offset = 0;
    } else {
        idx_copy_view(&p->v[IDX_V_OUT], &p->v[IDX_V_SELF]);
    }
    scatter_ctx c;
    memset(&c, 0, sizeof c);
    const int nd = iv.ndim;
    c.lines.nd = nd;
    c.lines.nst = 3;
    int64_t row = 1;
    for (int i = nd - 1; i >= 0; i--) {
        c.lines.dims[i] = i == p->dim ? 1 : iv.dims[i];
        c.lines.st[0][i] = src.strides[i];
        c.lines.st[1][i] = i == p->dim ? 0 : out.strides[i];
        c.lines.st[2][i] = row;
        if (i == p->dim) c.idx_step = row;
        row *= iv.dims[i];
    }
    c.k = iv.dims[p->dim];
    c.src_step = src.strides[p->dim];
    c.out_step = out.strides[p->dim];
    c.ps = pa_tview_ptr(&src);
    c.po = pa_tview_ptr(&out);
    c.idx = idx;
    c.dt = out.dtype;
    c.vdt = src.dtype;
    c.op = p->mode;
    c.es = pa_dtype_size(out.dtype);
    c.ses = pa_dtype_size(src.dtype);
    const int64_t nlines = c.k > 0 ? n / c.k : 0;
    pa_parallel_for(nlines, idx_grain(c.k), scatter_lines, &c);
    if (half) {
        f32_copy(&p->v[IDX_V_OUT], buf, true);
        free(buf);
    }
    free(idx);
    return ACLNN_SUCCESS;
}

int idx_plan_scatter_group(const pa_op *op, int kernel, const pa_arg *a, uint64_t *workspaceSize,
                           aclOpExecutor **executor) {
    switch (kernel) {
    case IDX_INDEX_COPY:
    case IDX_INPLACE_INDEX_COPY: return plan_index_copy(op, kernel, a, workspaceSize, executor);
    case IDX_INDEX_FILL:
    case IDX_INPLACE_INDEX_FILL: return plan_index_fill(op, kernel, a, workspaceSize, executor);
    default: return plan_scatter(op, kernel, a, workspaceSize, executor);
    }
}
