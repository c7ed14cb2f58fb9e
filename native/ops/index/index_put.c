/* IndexPutImpl (torch's index_put_ with a list of index tensors) and
 * EmbeddingDenseBackward. The checks follow the vendor's ops
 * (index/index_put_v2, index/embedding_dense_grad_v2):
 *   IndexPutImpl  values dtype == selfRef; at most rank(selfRef) entries in
 *                 indices; a non-empty BOOL entry is a mask over as many dims
 *                 of selfRef as it has, of their sizes; an empty entry stands
 *                 for the whole dim (as the vendor drops it); INT32 / INT64
 *                 entries index one dim each, values in [-size, size) (the
 *                 vendor's IndexCheck), broadcast together (masks give their
 *                 true positions, row-major). The indexed shape is torch's:
 *                 the broadcast index shape in place of the indexed dims when
 *                 they are adjacent, else first; values broadcast to it
 *                 (checked at launch when a mask's count decides it).
 *                 Empty selfRef or values, or no index entry: nothing runs.
 *                 accumulate: sums in index order (FLOAT16 / BF16 in fp32,
 *                 rounded once, as the vendor's fp32 path); otherwise the last
 *                 write in index order wins. `unsafe` changes nothing.
 *   EmbeddingDenseBackward  grad rank >= 1; numel(indices) == the rows of
 *                 grad (prod of all but its last dim) unless that dim is 0;
 *                 out [numWeights, grad's last dim]; empty grad or indices:
 *                 out = 0; indices (floats truncated) in [0, numWeights) at
 *                 launch; rows equal to paddingIdx get nothing; with
 *                 scaleGradByFreq each row is scaled by 1 / its count. Sums in
 *                 fp32 in index order, then cast to out's dtype. */
#include <stdlib.h>

#include "kernels/map/map_cvt.h"
#include "ops/index/index_impl.h"
#include "runtime/pa_threadpool.h"

/* ---- IndexPutImpl: the indexed shape ---- */

/* Where the dims of the indexed shape R come from: the broadcast index shape
 * B (bnd dims) goes where the index entries are when they are adjacent in the
 * list, else first; the other dims of selfRef (slices) keep their order. */
typedef struct put_layout {
    int nsl;                     /* slice dims */
    int slice_dim[PA_MAX_DIMS];  /* their dims in selfRef */
    int r_of_slice[PA_MAX_DIMS]; /* their dims in R */
    int r_b0;                    /* the first dim of B in R */
    int32_t rnd;
    int64_t rdims[2 * PA_MAX_DIMS];
} put_layout;

static void layout_of(const int8_t *kinds, const int32_t *entry_ndim, int nlist, const pa_tview *self,
                      const int64_t *bd, int32_t bnd, put_layout *l) {
    int consumed = 0, first_adv = -1, first_i = -1, last_i = -1;
    l->nsl = 0;
    for (int i = 0; i < nlist; i++) {
        if (kinds[i] == IDX_PUT_SLICE) {
            l->slice_dim[l->nsl++] = consumed++;
            continue;
        }
        if (first_i < 0) first_i = i, first_adv = consumed;
        last_i = i;
        consumed += kinds[i] == IDX_PUT_MASK ? entry_ndim[i] : 1;
    }
    for (int d = consumed; d < self->ndim; d++) l->slice_dim[l->nsl++] = d;
    bool adjacent = true;
    for (int i = first_i; i >= 0 && i <= last_i; i++) adjacent = adjacent && kinds[i] != IDX_PUT_SLICE;
    int nbefore = 0;
    if (adjacent) {
        while (nbefore < l->nsl && l->slice_dim[nbefore] < first_adv) nbefore++;
    }
    l->rnd = 0;
    for (int i = 0; i < nbefore; i++) l->r_of_slice[i] = l->rnd, l->rdims[l->rnd++] = self->dims[l->slice_dim[i]];
    l->r_b0 = l->rnd;
    for (int32_t j = 0; j < bnd; j++) l->rdims[l->rnd++] = bd[j];
    for (int i = nbefore; i < l->nsl; i++) l->r_of_slice[i] = l->rnd, l->rdims[l->rnd++] = self->dims[l->slice_dim[i]];
}

/* values broadcast to R: its element strides per dim of R (vst), or false. */
static bool values_fit(const pa_tview *vals, const put_layout *l, int64_t *vst) {
    if (vals->ndim > l->rnd) return false;
    for (int32_t r = 0; r < l->rnd; r++) {
        const int32_t j = r - (l->rnd - vals->ndim);
        vst[r] = 0;
        if (j < 0) continue;
        if (vals->dims[j] != l->rdims[r] && vals->dims[j] != 1) return false;
        vst[r] = vals->dims[j] == 1 ? 0 : vals->strides[j];
    }
    return true;
}

/* Broadcasts dims[0..nd) into the right-aligned shape bd[PA_MAX_DIMS - *bnd ..). */
static bool broadcast_into(int64_t *bd, int32_t *bnd, int32_t nd, const int64_t *dims) {
    for (int32_t j = nd - 1, k = 0; j >= 0; j--, k++) {
        if (k >= *bnd) bd[PA_MAX_DIMS - 1 - (*bnd)++] = 1;
        int64_t *b = &bd[PA_MAX_DIMS - 1 - k];
        if (*b == 1) *b = dims[j];
        else if (dims[j] != 1 && dims[j] != *b) return false;
    }
    return true;
}

/* ---- IndexPutImpl: planning ---- */

/* n[0]: number of list entries; mode: accumulate. */
static int plan_index_put(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *values = a[2].p;
    const aclTensorList *list = a[1].p;
    int rc = idx_check_same_dtype(api, "values", values, "selfRef", self);
    if (rc != 0) return rc;
    if (list->size > (uint64_t)self->ndim) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: indices has %llu entries but selfRef only %d dims", api,
                       (unsigned long long)list->size, (int)self->ndim);
    }
    int32_t consumed = 0, bnd = 0, entry_ndim[IDX_MAX_LIST] = {0};
    int64_t bd[PA_MAX_DIMS];
    int n_adv = 0, n_mask = 0;
    idx_plan p;
    idx_plan_init(&p, op, kernel, IDX_RUN_INDEX_PUT);
    for (uint64_t i = 0; i < list->size; i++) {
        const aclTensor *t = list->tensors[i];
        const int8_t kind = idx_is_empty(t) ? IDX_PUT_SLICE : t->dtype == ACL_BOOL ? IDX_PUT_MASK : IDX_PUT_INT;
        entry_ndim[i] = t->ndim;
        if (kind == IDX_PUT_MASK) {
            if (t->ndim == 0) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: indices[%llu] is a 0-d mask; pyaclnn needs masks of at "
                               "least 1 dim", api, (unsigned long long)i);
            }
            if (consumed + t->ndim > self->ndim) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the mask indices[%llu] has %d dims but only %d dims of "
                               "selfRef remain", api, (unsigned long long)i, (int)t->ndim,
                               (int)(self->ndim - consumed));
            }
            for (int32_t j = 0; j < t->ndim; j++) {
                if (t->dims[j] != self->dims[consumed + j]) {
                    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the mask indices[%llu] size %lld at dim %d must be "
                                   "selfRef's size %lld at dim %d", api, (unsigned long long)i,
                                   (long long)t->dims[j], (int)j, (long long)self->dims[consumed + j],
                                   (int)(consumed + j));
                }
            }
            consumed += t->ndim;
            n_mask++;
        } else {
            consumed += 1;
        }
        if (kind == IDX_PUT_INT) {
            int64_t ni = 0;
            rc = idx_numel(api, "indices", t, &ni);
            if (rc != 0) return rc;
            if (!broadcast_into(bd, &bnd, t->ndim, t->dims)) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the index tensors do not broadcast together (at "
                               "indices[%llu])", api, (unsigned long long)i);
            }
        }
        n_adv += kind != IDX_PUT_SLICE;
        p.list_kind[i] = kind;
        idx_plan_view(&p, IDX_V_LIST + (int)i, t);
    }
    int64_t nv = 0;
    rc = idx_numel(api, "values", values, &nv);
    if (rc != 0) return rc;
    idx_plan_view(&p, IDX_V_SELF, self);
    idx_plan_view(&p, IDX_V_SRC, values);
    idx_plan_view(&p, IDX_V_OUT, self);
    const bool nothing = idx_is_empty(self) || nv == 0 || n_adv == 0;
    if (!nothing && n_mask == 0) { /* the indexed shape is known: check values now */
        put_layout l;
        int64_t vst[2 * PA_MAX_DIMS];
        layout_of(p.list_kind, entry_ndim, (int)list->size, &p.v[IDX_V_OUT], bd + PA_MAX_DIMS - bnd, bnd, &l);
        if (!values_fit(&p.v[IDX_V_SRC], &l, vst)) {
            char s1[160], s2[160];
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: values shape %s cannot be broadcast to the indexed shape %s",
                           api, pa_shape_str(values->dims, values->ndim, s1, sizeof s1),
                           pa_shape_str(l.rdims, l.rnd, s2, sizeof s2));
        }
    }
    if (nothing) p.run = IDX_RUN_NOTHING;
    p.n[0] = (int64_t)list->size;
    p.mode = a[3].b ? 1 : 0;
    int in[IDX_MAX_VIEWS], n_in = 0;
    in[n_in++] = IDX_V_SELF;
    for (uint64_t i = 0; i < list->size; i++) in[n_in++] = IDX_V_LIST + (int)i;
    in[n_in++] = IDX_V_SRC;
    const int outs[] = {IDX_V_OUT};
    return idx_finish(op, &p, sizeof p, in, n_in, outs, 1, ws, ex);
}

/* ---- IndexPutImpl: run ---- */

typedef struct put_ctx {
    char *ps;                   /* selfRef (or its fp32 copy) */
    const char *pv;
    aclDataType dt;             /* of ps */
    aclDataType vdt;
    size_t es, ves;
    bool acc;
    idx_cursor sl;              /* over the slice dims: 0 self, 1 values */
    const int64_t *boff, *voff; /* per broadcast position: self and values offsets */
    int64_t nb;
} put_ctx;

static inline void put_elem(const put_ctx *c, char *d, const char *v) {
    if (!c->acc) {
        idx_copy_elem(d, v, c->es);
        return;
    }
    switch (c->dt) {
    case ACL_FLOAT: {
        float x;
        memcpy(&x, d, 4);
        x += (float)pa_cvt_load_f(v, c->vdt); /* values are FLOAT, or FLOAT16 / BF16 into the fp32 copy */
        memcpy(d, &x, 4);
        return;
    }
    case ACL_DOUBLE: {
        double x, y;
        memcpy(&x, d, 8), memcpy(&y, v, 8);
        x += y;
        memcpy(d, &x, 8);
        return;
    }
    case ACL_BOOL: *(uint8_t *)d = (*(const uint8_t *)d | *(const uint8_t *)v) != 0; return;
    default: {
        const uint64_t x = (uint64_t)pa_cvt_load_i(d, c->dt), y = (uint64_t)pa_cvt_load_i(v, c->vdt);
        pa_cvt_store_i(d, c->dt, (int64_t)(x + y));
        return;
    }
    }
}

/* Slice positions [begin, end): every broadcast position in order, so each
 * element of selfRef sees its writes in index order. */
static void put_chunk(void *vctx, int64_t begin, int64_t end) {
    const put_ctx *c = vctx;
    idx_cursor cur = c->sl;
    for (int64_t b = 0; b < c->nb; b++) {
        idx_cursor_seek(&cur, begin);
        char *d0 = c->ps + c->boff[b] * (int64_t)c->es;
        const char *v0 = c->pv + c->voff[b] * (int64_t)c->ves;
        for (int64_t s = begin; s < end; s++) {
            put_elem(c, d0 + cur.off[0] * (int64_t)c->es, v0 + cur.off[1] * (int64_t)c->ves);
            idx_cursor_next(&cur);
        }
    }
}

/* The index arrays of a launch: one per int entry, one per dim of a mask. */
typedef struct put_arrays {
    int n;
    int64_t *arr[PA_MAX_DIMS];
    int32_t nd[PA_MAX_DIMS];
    int64_t dims[PA_MAX_DIMS][PA_MAX_DIMS];
    int self_dim[PA_MAX_DIMS];
} put_arrays;

static void free_arrays(put_arrays *s) {
    for (int i = 0; i < s->n; i++) free(s->arr[i]);
}

/* A mask's true positions, row-major: one array of `count` per dim. */
static int mask_positions(const char *api, const pa_tview *m, int first_dim, put_arrays *s) {
    const int64_t n = idx_prod(m->dims, 0, m->ndim);
    const char *base = pa_tview_ptr(m);
    idx_cursor cur;
    memset(&cur, 0, sizeof cur);
    cur.nd = m->ndim;
    cur.nst = 1;
    for (int32_t i = 0; i < m->ndim; i++) cur.dims[i] = m->dims[i], cur.st[0][i] = m->strides[i];
    int64_t count = 0;
    for (int64_t k = 0; k < n; k++, idx_cursor_next(&cur)) count += base[cur.off[0]] != 0;
    const int k0 = s->n;
    for (int32_t j = 0; j < m->ndim; j++) {
        int64_t *a = malloc((size_t)(count ? count : 1) * sizeof(int64_t));
        if (a == NULL) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, api, "the mask positions");
        s->arr[s->n] = a;
        s->nd[s->n] = 1;
        s->dims[s->n][0] = count;
        s->self_dim[s->n] = first_dim + j;
        s->n++;
    }
    idx_cursor_seek(&cur, 0);
    int64_t w = 0;
    for (int64_t k = 0; k < n; k++, idx_cursor_next(&cur)) {
        if (base[cur.off[0]] == 0) continue;
        for (int32_t j = 0; j < m->ndim; j++) s->arr[k0 + j][w] = cur.coord[j];
        w++;
    }
    return ACLNN_SUCCESS;
}

static void walk_of(const pa_tview *v, const int64_t *st, idx_cursor *c) {
    memset(c, 0, sizeof *c);
    c->nd = v->ndim;
    c->nst = 1;
    for (int32_t i = 0; i < v->ndim; i++) c->dims[i] = v->dims[i], c->st[0][i] = st[i];
}

int idx_run_index_put(const idx_plan *p) {
    const char *api = p->api;
    const pa_tview *self = &p->v[IDX_V_OUT], *vals = &p->v[IDX_V_SRC];
    const int nlist = (int)p->n[0];
    put_arrays s;
    memset(&s, 0, sizeof s);
    int rc = ACLNN_SUCCESS, consumed = 0;
    int32_t entry_ndim[IDX_MAX_LIST] = {0};
    for (int i = 0; i < nlist && rc == 0; i++) {
        const pa_tview *t = &p->v[IDX_V_LIST + i];
        entry_ndim[i] = t->ndim;
        if (p->list_kind[i] == IDX_PUT_MASK) {
            rc = mask_positions(api, t, consumed, &s);
            consumed += t->ndim;
        } else if (p->list_kind[i] == IDX_PUT_INT) {
            char name[32];
            snprintf(name, sizeof name, "indices[%d]", i);
            int64_t n = 0;
            rc = idx_load_indices(api, name, t, self->dims[consumed], true, &s.arr[s.n], &n);
            if (rc == 0) {
                s.nd[s.n] = t->ndim;
                for (int32_t j = 0; j < t->ndim; j++) s.dims[s.n][j] = t->dims[j];
                s.self_dim[s.n++] = consumed;
            }
            consumed += 1;
        } else {
            consumed += 1;
        }
    }
    int32_t bnd = 0;
    int64_t bdims[PA_MAX_DIMS];
    for (int i = 0; i < s.n && rc == 0; i++) {
        if (!broadcast_into(bdims, &bnd, s.nd[i], s.dims[i])) {
            rc = pa_fail(ACLNN_ERR_RUNTIME_ERROR, "%s: the index tensors, with the masks' true counts, do not "
                         "broadcast together", api);
        }
    }
    put_layout l;
    int64_t vst[2 * PA_MAX_DIMS];
    const int64_t *bd = bdims + PA_MAX_DIMS - bnd;
    if (rc == 0) {
        layout_of(p->list_kind, entry_ndim, nlist, self, bd, bnd, &l);
        if (!values_fit(vals, &l, vst)) {
            char s1[160], s2[160];
            rc = pa_fail(ACLNN_ERR_RUNTIME_ERROR, "%s: values shape %s cannot be broadcast to the indexed shape %s",
                         api, pa_shape_str(vals->dims, vals->ndim, s1, sizeof s1),
                         pa_shape_str(l.rdims, l.rnd, s2, sizeof s2));
        }
    }
    const int64_t nb = idx_prod(bd, 0, bnd), nself = idx_prod(self->dims, 0, self->ndim);
    const bool half = p->mode && (self->dtype == ACL_FLOAT16 || self->dtype == ACL_BF16);
    int64_t *boff = NULL, *voff = NULL;
    float *acc32 = NULL;
    if (rc == 0) {
        boff = malloc((size_t)(nb ? nb : 1) * sizeof(int64_t));
        voff = malloc((size_t)(nb ? nb : 1) * sizeof(int64_t));
        if (half) acc32 = malloc((size_t)nself * sizeof(float));
        if (boff == NULL || voff == NULL || (half && acc32 == NULL)) {
            rc = pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, api, "the index positions");
        }
    }
    if (rc != 0) {
        free(boff), free(voff), free(acc32), free_arrays(&s);
        return rc;
    }
    /* selfRef's element strides, or the contiguous ones of its fp32 copy */
    int64_t sst[PA_MAX_DIMS];
    int64_t m = 1;
    for (int32_t i = self->ndim - 1; i >= 0; i--) {
        sst[i] = half ? m : self->strides[i];
        m *= self->dims[i];
    }
    idx_cursor bc;
    memset(&bc, 0, sizeof bc);
    bc.nd = bnd;
    for (int32_t j = 0; j < bnd; j++) bc.dims[j] = bd[j];
    for (int64_t b = 0; b < nb; b++, idx_cursor_next(&bc)) {
        int64_t o = 0, v = 0;
        for (int k = 0; k < s.n; k++) { /* each array broadcast into B, right-aligned */
            int64_t lin = 0;
            for (int32_t j = 0; j < s.nd[k]; j++) {
                const int32_t bj = bnd - s.nd[k] + j;
                lin = lin * s.dims[k][j] + (s.dims[k][j] == 1 ? 0 : bc.coord[bj]);
            }
            o += s.arr[k][lin] * sst[s.self_dim[k]];
        }
        for (int32_t j = 0; j < bnd; j++) v += bc.coord[j] * vst[l.r_b0 + j];
        boff[b] = o;
        voff[b] = v;
    }
    free_arrays(&s);
    put_ctx c;
    memset(&c, 0, sizeof c);
    c.acc = p->mode != 0;
    c.pv = pa_tview_ptr(vals);
    c.vdt = vals->dtype;
    c.ves = pa_dtype_size(vals->dtype);
    c.dt = half ? ACL_FLOAT : self->dtype;
    c.es = pa_dtype_size(c.dt);
    c.ps = half ? (char *)acc32 : (char *)pa_tview_ptr(self);
    c.boff = boff;
    c.voff = voff;
    c.nb = nb;
    c.sl.nd = l.nsl;
    c.sl.nst = 2;
    for (int i = 0; i < l.nsl; i++) {
        c.sl.dims[i] = self->dims[l.slice_dim[i]];
        c.sl.st[0][i] = sst[l.slice_dim[i]];
        c.sl.st[1][i] = vst[l.r_of_slice[i]];
    }
    char *ps = pa_tview_ptr(self);
    idx_cursor sc;
    if (half) { /* selfRef -> fp32, sum there, round once back into selfRef */
        walk_of(self, self->strides, &sc);
        for (int64_t k = 0; k < nself; k++, idx_cursor_next(&sc)) {
            acc32[k] = (float)pa_cvt_load_f(ps + sc.off[0] * 2, self->dtype);
        }
    }
    pa_parallel_for(idx_prod(c.sl.dims, 0, l.nsl), idx_grain(nb), put_chunk, &c);
    if (half) {
        walk_of(self, self->strides, &sc);
        for (int64_t k = 0; k < nself; k++, idx_cursor_next(&sc)) {
            pa_cvt_store_f(ps + sc.off[0] * 2, self->dtype, (double)acc32[k]);
        }
    }
    free(acc32);
    free(boff);
    free(voff);
    return ACLNN_SUCCESS;
}

/* ---- EmbeddingDenseBackward ---- */

/* n[0]: numWeights, n[1]: paddingIdx (bits of the uint64), n[2]: scaleGradByFreq. */
static int plan_embedding_backward(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *grad = a[0].p, *indices = a[1].p, *out = a[5].p;
    const uint64_t num_weights = (uint64_t)a[2].i;
    char s1[160], s2[160];
    if (grad->ndim == 0) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: grad must have at least 1 dim, got 0-d", api);
    const int64_t d = grad->dims[grad->ndim - 1];
    int64_t ni = 0, rows = 1;
    int rc = idx_numel(api, "indices", indices, &ni);
    if (rc != 0) return rc;
    for (int32_t i = 0; i < grad->ndim - 1; i++) {
        if (!pa_mul_ok(rows, grad->dims[i], &rows)) rows = -1;
        if (rows < 0) break;
    }
    if (d != 0 && rows != ni) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: grad shape %s does not match indices shape %s (grad must have "
                       "one row per index)", api, pa_shape_str(grad->dims, grad->ndim, s1, sizeof s1),
                       pa_shape_str(indices->dims, indices->ndim, s2, sizeof s2));
    }
    if (out->ndim != 2 || (uint64_t)out->dims[0] != num_weights || out->dims[1] != d) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out shape must be [%llu,%lld] (numWeights, grad's last dim), "
                       "got %s", api, (unsigned long long)num_weights, (long long)d,
                       pa_shape_str(out->dims, out->ndim, s1, sizeof s1));
    }
    idx_plan p;
    idx_plan_init(&p, op, kernel, idx_is_empty(grad) || ni == 0 ? IDX_RUN_ZERO : IDX_RUN_EMBEDDING_BACKWARD);
    idx_plan_view(&p, IDX_V_SELF, grad);
    idx_plan_view(&p, IDX_V_INDEX, indices);
    idx_plan_view(&p, IDX_V_OUT, out);
    p.n[0] = (int64_t)num_weights;
    p.n[1] = a[3].i;
    p.n[2] = a[4].b;
    const int in[] = {IDX_V_SELF, IDX_V_INDEX}, outs[] = {IDX_V_OUT};
    return idx_finish(op, &p, sizeof p, in, 2, outs, 1, ws, ex);
}

typedef struct edb_ctx {
    const pa_tview *g, *o;
    const char *pg;
    char *po;
    const int64_t *start, *order, *count;
    int64_t d, padding;
    bool scale;
} edb_ctx;

#define EDB_TILE 256

static void edb_rows(void *vctx, int64_t begin, int64_t end) {
    const edb_ctx *c = vctx;
    float acc[EDB_TILE];
    const size_t ges = pa_dtype_size(c->g->dtype), oes = pa_dtype_size(c->o->dtype);
    const int gnd = c->g->ndim;
    const int64_t gst = c->g->strides[gnd - 1] * (int64_t)ges, ost = c->o->strides[1] * (int64_t)oes;
    for (int64_t w = begin; w < end; w++) {
        char *orow = c->po + w * c->o->strides[0] * (int64_t)oes;
        const float s = c->scale && c->count[w] > 0 ? (float)(1.0 / (double)c->count[w]) : 1.0f;
        for (int64_t k0 = 0; k0 < c->d; k0 += EDB_TILE) {
            const int64_t kn = PA_MIN(EDB_TILE, c->d - k0);
            for (int64_t k = 0; k < kn; k++) acc[k] = 0.0f;
            for (int64_t q = c->start[w]; w != c->padding && q < c->start[w + 1]; q++) {
                const char *row = c->pg + idx_offset_of(c->g, 0, gnd - 1, c->order[q]) * (int64_t)ges + k0 * gst;
                for (int64_t k = 0; k < kn; k++) {
                    const float x = (float)pa_cvt_load_f(row + k * gst, c->g->dtype);
                    acc[k] += c->scale ? x * s : x;
                }
            }
            for (int64_t k = 0; k < kn; k++) pa_cvt_store_f(orow + (k0 + k) * ost, c->o->dtype, (double)acc[k]);
        }
    }
}

int idx_run_embedding_backward(const idx_plan *p) {
    const pa_tview *g = &p->v[IDX_V_SELF], *o = &p->v[IDX_V_OUT];
    const int64_t nw = p->n[0];
    int64_t *idx = NULL, n = 0;
    if (p->run == IDX_RUN_EMBEDDING_BACKWARD) {
        int rc = idx_load_indices(p->api, "indices", &p->v[IDX_V_INDEX], nw, false, &idx, &n);
        if (rc != 0) return rc;
    }
    int64_t *start = calloc((size_t)nw + 1, sizeof(int64_t));
    int64_t *order = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (start == NULL || order == NULL) {
        free(start), free(order), free(idx);
        return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the index buckets");
    }
    /* counting sort: the rows of each weight, in index order */
    for (int64_t r = 0; r < n; r++) start[idx[r] + 1]++;
    int64_t *count = malloc((size_t)(nw ? nw : 1) * sizeof(int64_t));
    if (count == NULL) {
        free(start), free(order), free(idx);
        return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the index counts");
    }
    for (int64_t w = 0; w < nw; w++) count[w] = start[w + 1];
    for (int64_t w = 0; w < nw; w++) start[w + 1] += start[w];
    int64_t *fill = malloc((size_t)(nw ? nw : 1) * sizeof(int64_t));
    if (fill == NULL) {
        free(start), free(order), free(idx), free(count);
        return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the index buckets");
    }
    for (int64_t w = 0; w < nw; w++) fill[w] = start[w];
    for (int64_t r = 0; r < n; r++) order[fill[idx[r]]++] = r;
    free(fill);
    edb_ctx c;
    c.g = g;
    c.o = o;
    c.pg = pa_tview_ptr(g);
    c.po = pa_tview_ptr(o);
    c.start = start;
    c.order = order;
    c.count = count;
    c.d = o->dims[1];
    c.padding = (uint64_t)p->n[1] < (uint64_t)nw ? p->n[1] : -1;
    c.scale = p->n[2] != 0;
    if (nw > 0 && c.d > 0) pa_parallel_for(nw, idx_grain(c.d * (n / nw + 1)), edb_rows, &c);
    free(count);
    free(start);
    free(order);
    free(idx);
    return ACLNN_SUCCESS;
}

int idx_plan_put_group(const pa_op *op, int kernel, const pa_arg *a, uint64_t *workspaceSize,
                       aclOpExecutor **executor) {
    if (kernel == IDX_INDEX_PUT) return plan_index_put(op, kernel, a, workspaceSize, executor);
    return plan_embedding_backward(op, kernel, a, workspaceSize, executor);
}
