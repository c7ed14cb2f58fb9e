/* GatherV2, IndexSelect, Embedding (whole slices along one axis) and Gather
 * (torch.gather, one element per index). The checks follow the vendor's ops
 * (index/gather_v2, index/embedding, index/gather_elements_v2):
 *   GatherV2     out dtype == self; dim in range (a 0-d self counts as 1-D);
 *                out = self[:dim] + index.shape + self[dim+1:] (a 0-d index
 *                keeps the dim as 1; a 0-d self gives a 0-d out); indices in
 *                [-size, size): the vendor calls its kernel with negative
 *                indices supported (its own doc sample gathers -2 and -1).
 *   IndexSelect  index rank <= 1; a 0-d self needs a 0-d out; out = self with
 *                [dim] = len(index) (checked when self and index hold
 *                elements); indices in [0, size).
 *   Embedding    out rank = indices rank + 1 with the indices' dims first;
 *                weight 2-D, out's last dim weight's; indices in [0, rows).
 *   Gather       rank(index) == rank(self) (0-d as 1-D), out shape == index
 *                shape, dim in range, index.size(d) <= self.size(d) off dim,
 *                self.size(dim) > 0 when index holds elements; indices in
 *                [-size, size).
 * Empty self or index: nothing runs. Bad index values fail the launch
 * (361001) before anything is written. */
#include <stdlib.h>

#include "ops/index/index_impl.h"
#include "runtime/pa_threadpool.h"

/* ---- planners ---- */

static int plan_gather_v2(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *index = a[2].p, *out = a[3].p;
    int rc = idx_check_same_dtype(api, "out", out, "self", self);
    int64_t dim = 0, ni = 0;
    if (rc == 0) rc = idx_wrap_dim(api, a[1].i, self->ndim, true, &dim);
    if (rc == 0) rc = idx_numel(api, "index", index, &ni);
    if (rc != 0) return rc;
    int64_t want[2 * PA_MAX_DIMS];
    int32_t nd = 0;
    if (self->ndim > 0) {
        for (int64_t i = 0; i < dim; i++) want[nd++] = self->dims[i];
        if (index->ndim == 0) want[nd++] = 1;
        for (int32_t i = 0; i < index->ndim; i++) want[nd++] = index->dims[i];
        for (int32_t i = (int32_t)dim + 1; i < self->ndim; i++) want[nd++] = self->dims[i];
    }
    rc = idx_check_shape(api, "out", out, nd, want);
    if (rc != 0) return rc;
    idx_plan p;
    idx_plan_init(&p, op, kernel, idx_is_empty(self) || ni == 0 ? IDX_RUN_NOTHING : IDX_RUN_GATHER_AXIS);
    idx_plan_view(&p, IDX_V_SELF, self);
    idx_plan_view(&p, IDX_V_INDEX, index);
    idx_plan_view(&p, IDX_V_OUT, out);
    p.dim = (int32_t)dim;
    p.mode = 1;
    const int in[] = {IDX_V_SELF, IDX_V_INDEX}, outs[] = {IDX_V_OUT};
    return idx_finish(op, &p, sizeof p, in, 2, outs, 1, ws, ex);
}

static int plan_index_select(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *index = a[2].p, *out = a[3].p;
    int rc = idx_check_same_dtype(api, "out", out, "self", self);
    if (rc != 0) return rc;
    if (self->ndim == 0 && out->ndim != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self is 0-d, so out must be 0-d too, got %d dims", api,
                       (int)out->ndim);
    }
    int64_t dim = 0, ni = 0;
    rc = idx_wrap_dim(api, a[1].i, self->ndim, true, &dim);
    if (rc != 0) return rc;
    if (index->ndim > 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: index must have at most 1 dim, got %d", api, (int)index->ndim);
    }
    rc = idx_numel(api, "index", index, &ni);
    if (rc != 0) return rc;
    const bool empty = idx_is_empty(self) || ni == 0;
    if (!empty && self->ndim > 0) {
        int64_t want[PA_MAX_DIMS];
        for (int32_t i = 0; i < self->ndim; i++) want[i] = self->dims[i];
        want[dim] = index->ndim == 0 ? 1 : index->dims[0];
        rc = idx_check_shape(api, "out", out, self->ndim, want);
        if (rc != 0) return rc;
    }
    idx_plan p;
    idx_plan_init(&p, op, kernel, empty ? IDX_RUN_NOTHING : IDX_RUN_GATHER_AXIS);
    idx_plan_view(&p, IDX_V_SELF, self);
    idx_plan_view(&p, IDX_V_INDEX, index);
    idx_plan_view(&p, IDX_V_OUT, out);
    p.dim = (int32_t)dim;
    const int in[] = {IDX_V_SELF, IDX_V_INDEX}, outs[] = {IDX_V_OUT};
    return idx_finish(op, &p, sizeof p, in, 2, outs, 1, ws, ex);
}

static int plan_embedding(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *weight = a[0].p, *indices = a[1].p, *out = a[2].p;
    int rc = idx_check_same_dtype(api, "out", out, "weight", weight);
    if (rc != 0) return rc;
    char s1[160], s2[160];
    bool lead = out->ndim == indices->ndim + 1;
    for (int32_t i = 0; lead && i < indices->ndim; i++) lead = out->dims[i] == indices->dims[i];
    if (!lead) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out shape %s must be the indices shape %s and one more dim",
                       api, pa_shape_str(out->dims, out->ndim, s1, sizeof s1),
                       pa_shape_str(indices->dims, indices->ndim, s2, sizeof s2));
    }
    if (weight->ndim != 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: weight must be 2-D, got shape %s", api,
                       pa_shape_str(weight->dims, weight->ndim, s1, sizeof s1));
    }
    if (out->dims[out->ndim - 1] != weight->dims[1]) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out's last dim must be weight's (%lld), got %lld", api,
                       (long long)weight->dims[1], (long long)out->dims[out->ndim - 1]);
    }
    int64_t ni = 0;
    rc = idx_numel(api, "indices", indices, &ni);
    if (rc != 0) return rc;
    idx_plan p;
    idx_plan_init(&p, op, kernel, idx_is_empty(weight) || ni == 0 ? IDX_RUN_NOTHING : IDX_RUN_GATHER_AXIS);
    idx_plan_view(&p, IDX_V_SELF, weight);
    idx_plan_view(&p, IDX_V_INDEX, indices);
    idx_plan_view(&p, IDX_V_OUT, out);
    const int in[] = {IDX_V_SELF, IDX_V_INDEX}, outs[] = {IDX_V_OUT};
    return idx_finish(op, &p, sizeof p, in, 2, outs, 1, ws, ex);
}

static int plan_gather(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *index = a[2].p, *out = a[3].p;
    int rc = idx_check_same_dtype(api, "out", out, "self", self);
    if (rc != 0) return rc;
    const int32_t rs = self->ndim ? self->ndim : 1, ri = index->ndim ? index->ndim : 1;
    if (rs != ri) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: index must have the rank of self (%d), got %d", api,
                       (int)self->ndim, (int)index->ndim);
    }
    rc = idx_check_shape(api, "out", out, index->ndim, index->dims);
    int64_t dim = 0, ni = 0;
    if (rc == 0) rc = idx_wrap_dim(api, a[1].i, self->ndim, true, &dim);
    if (rc == 0) rc = idx_numel(api, "index", index, &ni);
    if (rc != 0) return rc;
    if (ni > 0) {
        for (int32_t i = 0; i < self->ndim; i++) {
            if (i != dim && index->dims[i] > self->dims[i]) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: index size %lld at dim %d exceeds self's (%lld)", api,
                               (long long)index->dims[i], (int)i, (long long)self->dims[i]);
            }
            if (i == dim && self->dims[i] == 0) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self is empty along dim %d but index is not", api,
                               (int)i);
            }
        }
    }
    idx_plan p;
    idx_plan_init(&p, op, kernel, idx_is_empty(self) || ni == 0 ? IDX_RUN_NOTHING : IDX_RUN_GATHER_ELEM);
    idx_plan_view(&p, IDX_V_SELF, self);
    idx_plan_view(&p, IDX_V_INDEX, index);
    idx_plan_view(&p, IDX_V_OUT, out);
    p.dim = (int32_t)dim;
    const int in[] = {IDX_V_SELF, IDX_V_INDEX}, outs[] = {IDX_V_OUT};
    return idx_finish(op, &p, sizeof p, in, 2, outs, 1, ws, ex);
}

int idx_plan_gather_group(const pa_op *op, int kernel, const pa_arg *a, uint64_t *workspaceSize,
                          aclOpExecutor **executor) {
    switch (kernel) {
    case IDX_GATHER_V2: return plan_gather_v2(op, kernel, a, workspaceSize, executor);
    case IDX_INDEX_SELECT: return plan_index_select(op, kernel, a, workspaceSize, executor);
    case IDX_EMBEDDING: return plan_embedding(op, kernel, a, workspaceSize, executor);
    default: return plan_gather(op, kernel, a, workspaceSize, executor);
    }
}

/* ---- runs ---- */

/* Slices along one axis: out[a, j..., c] = self[a, idx[j], c] with A = the
 * dims before the axis, B = the index dims in out, C = the dims after. */
typedef struct axis_ctx {
    const pa_tview *s, *o;
    const char *ps;
    char *po;
    const int64_t *idx;
    int64_t n;      /* indices used per A position */
    int na, nb, nc; /* dims of A, B (in out), C */
    int sdim;       /* the axis in self */
    size_t es;
} axis_ctx;

static void axis_items(void *vctx, int64_t begin, int64_t end) {
    const axis_ctx *c = vctx;
    const int64_t es = (int64_t)c->es;
    for (int64_t t = begin; t < end; t++) {
        const int64_t ai = t / c->n, j = t % c->n;
        const int64_t so = idx_offset_of(c->s, 0, c->na, ai) + c->idx[j] * c->s->strides[c->sdim];
        const int64_t oo = idx_offset_of(c->o, 0, c->na, ai) + idx_offset_of(c->o, c->na, c->nb, j);
        idx_copy_block(c->po + oo * es, c->o->strides + c->na + c->nb, c->ps + so * es, c->s->strides + c->sdim + 1,
                       c->o->dims + c->na + c->nb, c->nc, c->es);
    }
}

int idx_run_gather_axis(const idx_plan *p) {
    pa_tview s = p->v[IDX_V_SELF];
    const pa_tview *o = &p->v[IDX_V_OUT];
    if (s.ndim == 0) { /* a 0-d self is a 1-D one of one element */
        s.ndim = 1;
        s.dims[0] = 1;
        s.strides[0] = 0;
    }
    const char *name = p->kernel == IDX_EMBEDDING ? "indices" : "index";
    int64_t *idx = NULL, n = 0;
    int rc = idx_load_indices(p->api, name, &p->v[IDX_V_INDEX], s.dims[p->dim], p->mode == 1, &idx, &n);
    if (rc != 0) return rc;
    axis_ctx c;
    c.s = &s;
    c.o = o;
    c.ps = pa_tview_ptr(&s);
    c.po = pa_tview_ptr(o);
    c.idx = idx;
    c.sdim = p->dim;
    c.na = p->dim;
    c.nc = s.ndim - p->dim - 1;
    c.nb = o->ndim - c.na - c.nc;
    if (c.nb < 0) { /* a 0-d out (0-d self): one element */
        c.na = c.nc = c.nb = 0;
    }
    c.n = c.nb == 0 ? 1 : n; /* an out without index dims takes the first index */
    c.es = pa_dtype_size(s.dtype);
    const int64_t items = idx_prod(o->dims, 0, c.na) * c.n;
    pa_parallel_for(items, idx_grain(idx_prod(o->dims, c.na + c.nb, c.nc)), axis_items, &c);
    free(idx);
    return ACLNN_SUCCESS;
}

/* torch.gather: out[p] = self[p with the axis coordinate idx[p]]. */
typedef struct elem_ctx {
    idx_cursor cur; /* over index dims: 0 out, 1 self (axis stride 0) */
    const char *ps;
    char *po;
    const int64_t *idx;
    int64_t axis_stride;
    size_t es;
} elem_ctx;

static void elem_items(void *vctx, int64_t begin, int64_t end) {
    const elem_ctx *c = vctx;
    idx_cursor cur = c->cur;
    idx_cursor_seek(&cur, begin);
    const int64_t es = (int64_t)c->es;
    for (int64_t t = begin; t < end; t++) {
        idx_copy_elem(c->po + cur.off[0] * es, c->ps + (cur.off[1] + c->idx[t] * c->axis_stride) * es, c->es);
        idx_cursor_next(&cur);
    }
}

int idx_run_gather_elem(const idx_plan *p) {
    const pa_tview *s = &p->v[IDX_V_SELF], *iv = &p->v[IDX_V_INDEX], *o = &p->v[IDX_V_OUT];
    const int64_t size = s->ndim == 0 ? 1 : s->dims[p->dim];
    int64_t *idx = NULL, n = 0;
    int rc = idx_load_indices(p->api, "index", iv, size, true, &idx, &n);
    if (rc != 0) return rc;
    elem_ctx c;
    memset(&c, 0, sizeof c);
    c.cur.nd = iv->ndim;
    c.cur.nst = 2;
    for (int32_t i = 0; i < iv->ndim; i++) {
        c.cur.dims[i] = iv->dims[i];
        c.cur.st[0][i] = o->strides[i];
        c.cur.st[1][i] = i == p->dim ? 0 : s->strides[i];
    }
    c.ps = pa_tview_ptr(s);
    c.po = pa_tview_ptr(o);
    c.idx = idx;
    c.axis_stride = s->ndim == 0 ? 0 : s->strides[p->dim];
    c.es = pa_dtype_size(s->dtype);
    pa_parallel_for(n, idx_grain(1), elem_items, &c);
    free(idx);
    return ACLNN_SUCCESS;
}
