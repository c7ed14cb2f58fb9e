/* The index family's shared checks, plan plumbing, index loading and block
 * copies (index_impl.h). */
#include <stdlib.h>

#include "kernels/map/map_cvt.h"
#include "ops/index/index_impl.h"
#include "ops/index/pa_index.h"
#include "runtime/pa_threadpool.h"

/* ---- checks ---- */

int idx_wrap_dim(const char *api, int64_t dim, int64_t ndim, bool zero_d_as_1, int64_t *out) {
    const int64_t rank = ndim == 0 && zero_d_as_1 ? 1 : ndim;
    if (rank == 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dim %lld is given but self is 0-d (it has no dimensions)",
                       api, (long long)dim);
    }
    if (dim < -rank || dim >= rank) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dim must be in [%lld, %lld], got %lld", api, (long long)-rank,
                       (long long)(rank - 1), (long long)dim);
    }
    *out = dim < 0 ? dim + rank : dim;
    return ACLNN_SUCCESS;
}

bool idx_same_shape(const aclTensor *a, const aclTensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int32_t i = 0; i < a->ndim; i++) {
        if (a->dims[i] != b->dims[i]) return false;
    }
    return true;
}

int idx_check_shape(const char *api, const char *name, const aclTensor *t, int32_t nd, const int64_t *dims) {
    bool same = t->ndim == nd;
    for (int32_t i = 0; same && i < nd; i++) same = t->dims[i] == dims[i];
    if (same) return ACLNN_SUCCESS;
    char s1[160], s2[160];
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape must be %s, got %s", api, name,
                   pa_shape_str(dims, nd, s1, sizeof s1), pa_shape_str(t->dims, t->ndim, s2, sizeof s2));
}

int idx_check_same_dtype(const char *api, const char *name, const aclTensor *t, const char *ref_name,
                         const aclTensor *ref) {
    if (t->dtype == ref->dtype) return ACLNN_SUCCESS;
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must be the dtype of %s (%s), got %s", api, name, ref_name,
                   pa_dtype_name(ref->dtype), pa_dtype_name(t->dtype));
}

bool idx_is_empty(const aclTensor *t) {
    for (int32_t i = 0; i < t->ndim; i++) {
        if (t->dims[i] == 0) return true;
    }
    return false;
}

int idx_numel(const char *api, const char *name, const aclTensor *t, int64_t *n) {
    if (idx_is_empty(t)) {
        *n = 0;
        return ACLNN_SUCCESS;
    }
    const int64_t v = pa_tensor_numel(t);
    if (v < 0) {
        char s1[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s (shape %s) has more elements than int64 holds", api, name,
                       pa_shape_str(t->dims, t->ndim, s1, sizeof s1));
    }
    *n = v;
    return ACLNN_SUCCESS;
}

/* ---- plans ---- */

void idx_plan_init(idx_plan *p, const pa_op *op, int kernel, int run) {
    memset(p, 0, sizeof *p);
    p->kernel = kernel;
    p->run = run;
    p->api = op->launch.name;
}

void idx_plan_view(idx_plan *p, int slot, const aclTensor *t) {
    p->v[slot] = pa_tview_of(t);
}

int idx_finish(const pa_op *op, const idx_plan *p, size_t size, const int *in_slots, int n_in,
               const int *out_slots, int n_out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    size_t in_off[IDX_MAX_VIEWS], out_off[IDX_MAX_VIEWS];
    for (int i = 0; i < n_in; i++) in_off[i] = offsetof(idx_plan, v) + (size_t)in_slots[i] * sizeof(pa_tview);
    for (int i = 0; i < n_out; i++) out_off[i] = offsetof(idx_plan, v) + (size_t)out_slots[i] * sizeof(pa_tview);
    return pa_op_executor(op, p, size, in_off, n_in, out_off, n_out, 0, workspaceSize, executor);
}

/* ---- indices ---- */

int64_t idx_prod(const int64_t *dims, int first, int nd) {
    int64_t n = 1;
    for (int i = first; i < first + nd; i++) n *= dims[i];
    return n;
}

int64_t idx_offset_of(const pa_tview *v, int first, int nd, int64_t linear) {
    int64_t off = 0;
    for (int i = first + nd - 1; i >= first; i--) {
        const int64_t d = v->dims[i];
        off += (linear % d) * v->strides[i];
        linear /= d;
    }
    return off;
}

static int64_t load_one(const char *p, aclDataType dt) {
    switch (dt) {
    case ACL_INT32: { int32_t x; memcpy(&x, p, 4); return x; }
    case ACL_INT64: { int64_t x; memcpy(&x, p, 8); return x; }
    default: return pa_cvt_load_i(p, dt);
    }
}

int idx_load_indices(const char *api, const char *name, const pa_tview *v, int64_t size, bool allow_negative,
                     int64_t **out, int64_t *count) {
    int64_t n = 1;
    for (int32_t i = 0; i < v->ndim; i++) n *= v->dims[i]; /* bounded: the planner checked it */
    int64_t *a = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (a == NULL) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, api, "the indices");
    const char *base = pa_tview_ptr(v);
    const size_t es = pa_dtype_size(v->dtype);
    int64_t coord[PA_MAX_DIMS] = {0}, off = 0;
    const int32_t nd = v->ndim;
    const int64_t lo = allow_negative ? -size : 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t x = load_one(base + off * (int64_t)es, v->dtype);
        if (size >= 0) {
            if (x < lo || x >= size) {
                free(a);
                return pa_fail(ACLNN_ERR_RUNTIME_ERROR,
                               "%s: %s value %lld (element %lld) is out of range: it must be in [%lld, %lld)", api,
                               name, (long long)x, (long long)k, (long long)lo, (long long)size);
            }
            if (x < 0) x += size;
        }
        a[k] = x;
        for (int32_t d = nd - 1; d >= 0; d--) { /* next row-major position */
            off += v->strides[d];
            if (++coord[d] < v->dims[d]) break;
            off -= coord[d] * v->strides[d];
            coord[d] = 0;
        }
    }
    *out = a;
    *count = n;
    return ACLNN_SUCCESS;
}

/* ---- block copies ---- */

/* Drops dims of size 1 and merges dims that are contiguous in both layouts;
 * returns the new rank. */
static int coalesce(int64_t *dims, int64_t *a, int64_t *b, int nd) {
    int m = 0;
    for (int i = 0; i < nd; i++) {
        if (dims[i] == 1) continue;
        if (m > 0 && a[m - 1] == a[i] * dims[i] && b[m - 1] == b[i] * dims[i]) {
            dims[m - 1] *= dims[i];
            a[m - 1] = a[i];
            b[m - 1] = b[i];
            continue;
        }
        dims[m] = dims[i];
        a[m] = a[i];
        b[m] = b[i];
        m++;
    }
    return m;
}

static inline void copy_elem(char *d, const char *s, size_t es) {
    switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    default: memcpy(d, s, 8); break;
    }
}

void idx_copy_block(char *dst, const int64_t *dst_st, const char *src, const int64_t *src_st, const int64_t *dims,
                    int nd, size_t es) {
    int64_t d[PA_MAX_DIMS], a[PA_MAX_DIMS], b[PA_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        if (dims[i] == 0) return;
        d[i] = dims[i];
        a[i] = dst_st[i];
        b[i] = src_st[i];
    }
    nd = coalesce(d, a, b, nd);
    if (nd == 0) {
        copy_elem(dst, src, es);
        return;
    }
    const int64_t len = d[nd - 1], sa = a[nd - 1] * (int64_t)es, sb = b[nd - 1] * (int64_t)es;
    const int64_t outer = idx_prod(d, 0, nd - 1);
    int64_t coord[PA_MAX_DIMS] = {0}, oa = 0, ob = 0;
    for (int64_t r = 0; r < outer; r++) {
        char *pd = dst + oa * (int64_t)es;
        const char *ps = src + ob * (int64_t)es;
        if (a[nd - 1] == 1 && b[nd - 1] == 1) {
            memcpy(pd, ps, (size_t)len * es);
        } else {
            for (int64_t k = 0; k < len; k++) copy_elem(pd + k * sa, ps + k * sb, es);
        }
        for (int i = nd - 2; i >= 0; i--) {
            oa += a[i];
            ob += b[i];
            if (++coord[i] < d[i]) break;
            oa -= coord[i] * a[i];
            ob -= coord[i] * b[i];
            coord[i] = 0;
        }
    }
}

void idx_fill_block(char *dst, const int64_t *dst_st, const int64_t *dims, int nd, const void *val, size_t es) {
    int64_t d[PA_MAX_DIMS], a[PA_MAX_DIMS], b[PA_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        if (dims[i] == 0) return;
        d[i] = dims[i];
        a[i] = dst_st[i];
        b[i] = 0;
    }
    nd = coalesce(d, a, b, nd);
    if (nd == 0) {
        copy_elem(dst, val, es);
        return;
    }
    const int64_t len = d[nd - 1], sa = a[nd - 1] * (int64_t)es;
    const int64_t outer = idx_prod(d, 0, nd - 1);
    int64_t coord[PA_MAX_DIMS] = {0}, oa = 0;
    for (int64_t r = 0; r < outer; r++) {
        char *pd = dst + oa * (int64_t)es;
        for (int64_t k = 0; k < len; k++) copy_elem(pd + k * sa, val, es);
        for (int i = nd - 2; i >= 0; i--) {
            oa += a[i];
            if (++coord[i] < d[i]) break;
            oa -= coord[i] * a[i];
            coord[i] = 0;
        }
    }
}

int64_t idx_grain(int64_t item_elems) {
    const int64_t target = 16384;
    if (item_elems <= 0) return target;
    return item_elems >= target ? 1 : target / item_elems;
}

bool idx_same_view(const pa_tview *a, const pa_tview *b) {
    if (pa_tview_ptr(a) != pa_tview_ptr(b) || a->ndim != b->ndim || a->dtype != b->dtype) return false;
    for (int32_t i = 0; i < a->ndim; i++) {
        if (a->dims[i] != b->dims[i] || (a->dims[i] > 1 && a->strides[i] != b->strides[i])) return false;
    }
    return true;
}

/* Copy of one view into another: parallel over the rows of dim 0 (or one
 * item for rank <= 1). */
typedef struct copy_ctx {
    const pa_tview *dst, *src;
    char *pd;
    const char *ps;
    size_t es;
} copy_ctx;

static void copy_rows(void *vctx, int64_t begin, int64_t end) {
    const copy_ctx *c = vctx;
    const int nd = c->dst->ndim;
    if (nd <= 1) {
        idx_copy_block(c->pd, c->dst->strides, c->ps, c->src->strides, c->dst->dims, nd, c->es);
        return;
    }
    for (int64_t r = begin; r < end; r++) {
        idx_copy_block(c->pd + r * c->dst->strides[0] * (int64_t)c->es, c->dst->strides + 1,
                       c->ps + r * c->src->strides[0] * (int64_t)c->es, c->src->strides + 1, c->dst->dims + 1,
                       nd - 1, c->es);
    }
}

void idx_copy_view(const pa_tview *dst, const pa_tview *src) {
    if (idx_same_view(dst, src) || dst->ndim != src->ndim || dst->dtype != src->dtype) return;
    for (int32_t i = 0; i < dst->ndim; i++) {
        if (dst->dims[i] == 0 || dst->dims[i] != src->dims[i]) return; /* the planners make them equal */
    }
    copy_ctx c = {dst, src, pa_tview_ptr(dst), pa_tview_ptr(src), pa_dtype_size(dst->dtype)};
    if (dst->ndim <= 1) {
        copy_rows(&c, 0, 1);
        return;
    }
    pa_parallel_for(dst->dims[0], idx_grain(idx_prod(dst->dims, 1, dst->ndim - 1)), copy_rows, &c);
}
