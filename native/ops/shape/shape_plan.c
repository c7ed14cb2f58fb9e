/* The shape family: operators whose output is the input seen through another
 * view (permute, slice, expand, flip, repeat, reflection padding, roll) run
 * as bit copies on the map engine; tril / triu and arange have their own
 * loops. validate -> plan -> run. */
#include <math.h>
#include <string.h>

#include "kernels/map/map.h"
#include "kernels/map/map_cvt.h"
#include "ops/core/pa_dtype.h"
#include "ops/core/pa_families.h"
#include "runtime/pa_threadpool.h"

#define SHAPE(t, b) pa_shape_str((t)->dims, (t)->ndim, (b), sizeof(b))
#define MAX_PIECES 3 /* reflection padding: left, middle, right */

/* One bit copy: out's elements from the input at in_off with these strides. */
typedef struct piece {
    int32_t ndim;
    int64_t dims[PA_MAP_MAX_DIMS];
    int64_t in_st[PA_MAP_MAX_DIMS], out_st[PA_MAP_MAX_DIMS];
    int64_t in_off, out_off; /* elements */
} piece;

typedef struct shape_plan {
    int32_t kind; /* PA_SHAPE_* */
    pa_tview self, out;
    int32_t npieces;
    piece pieces[MAX_PIECES];
    /* roll */
    int32_t nroll;
    int32_t roll_dim[PA_MAX_DIMS];
    int64_t roll_shift[PA_MAX_DIMS];
    bool roll_flat;
    /* tril / triu */
    int64_t diagonal;
    /* arange */
    double start, step;
    int64_t istart, istep;
} shape_plan;

static int wrap(const char *api, const char *what, int64_t d, int32_t n, int32_t *out) {
    const int64_t lim = n > 0 ? n : 1;
    if (d < -lim || d >= lim) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s %lld is out of range for a %d-D tensor", api, what,
                       (long long)d, (int)n);
    }
    *out = n == 0 ? 0 : (int32_t)(d < 0 ? d + n : d);
    return ACLNN_SUCCESS;
}

static int same_dtype(const char *api, const aclTensor *self, const aclTensor *out, const char *on) {
    if (self->dtype == out->dtype) return ACLNN_SUCCESS;
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must be self's (%s), got %s", api, on,
                   pa_dtype_name(self->dtype), pa_dtype_name(out->dtype));
}

static int want_shape(const char *api, const char *name, const aclTensor *t, int32_t nd, const int64_t *dims) {
    bool ok = t->ndim == nd;
    for (int32_t i = 0; ok && i < nd; i++) ok = t->dims[i] == dims[i];
    if (ok) return ACLNN_SUCCESS;
    char s1[160], s2[160];
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape must be %s, got %s", api, name,
                   pa_shape_str(dims, nd, s1, sizeof s1), SHAPE(t, s2));
}

static void init_plan(shape_plan *p, int kind, const aclTensor *self, const aclTensor *out) {
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->self = pa_tview_of(self);
    p->out = pa_tview_of(out);
}

/* A piece that copies all of out from self's elements at the given strides. */
static piece *add_piece(shape_plan *p, const int64_t *in_st, int64_t in_off) {
    piece *q = &p->pieces[p->npieces++];
    q->ndim = p->out.ndim;
    for (int32_t i = 0; i < q->ndim; i++) {
        q->dims[i] = p->out.dims[i];
        q->out_st[i] = p->out.strides[i];
        q->in_st[i] = in_st[i];
    }
    q->in_off = in_off;
    return q;
}

static int executor(const pa_op *op, shape_plan *p, bool has_in, uint64_t *ws, aclOpExecutor **ex) {
    size_t in_off[1] = {offsetof(shape_plan, self)}, out_off[1] = {offsetof(shape_plan, out)};
    return pa_op_executor(op, p, sizeof *p, in_off, has_in ? 1 : 0, out_off, 1, 0, ws, ex);
}

/* ---- planners ---- */

static int plan_permute(const pa_op *op, const pa_arg *a, shape_plan *p) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *out = a[2].p;
    const aclIntArray *dims = a[1].p;
    int rc = same_dtype(api, self, out, "out");
    if (rc) return rc;
    if ((int64_t)dims->size != self->ndim) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dims must list every dim of self (%d), got %llu", api,
                       (int)self->ndim, (unsigned long long)dims->size);
    }
    bool seen[PA_MAX_DIMS] = {false};
    int64_t od[PA_MAX_DIMS], st[PA_MAX_DIMS];
    const pa_tview sv = pa_tview_of(self);
    for (int32_t i = 0; i < self->ndim; i++) {
        int32_t d = 0;
        char what[32];
        snprintf(what, sizeof what, "dims[%d]", (int)i);
        rc = wrap(api, what, dims->values[i], self->ndim, &d);
        if (rc) return rc;
        if (seen[d]) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dim %d appears twice in dims", api, (int)d);
        seen[d] = true;
        od[i] = self->dims[d];
        st[i] = sv.strides[d];
    }
    rc = want_shape(api, "out", out, self->ndim, od);
    if (rc) return rc;
    init_plan(p, PA_SHAPE_PERMUTE, self, out);
    add_piece(p, st, 0);
    return ACLNN_SUCCESS;
}

static int plan_slice(const pa_op *op, const pa_arg *a, shape_plan *p) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *out = a[5].p;
    int rc = same_dtype(api, self, out, "out");
    if (rc) return rc;
    if (self->ndim == 0) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self must have at least 1 dim", api);
    int32_t d = 0;
    rc = wrap(api, "dim", a[1].i, self->ndim, &d);
    if (rc) return rc;
    const int64_t step = a[4].i, n = self->dims[d];
    if (step <= 0) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: step must be positive, got %lld", api, (long long)step);
    int64_t start = a[2].i, end = a[3].i;
    if (start < 0) start += n;
    if (end < 0) end += n;
    start = start < 0 ? 0 : start > n ? n : start;
    end = end < start ? start : end > n ? n : end;
    const int64_t len = end > start ? (end - start - 1) / step + 1 : 0; /* no overflow for a huge step */
    int64_t od[PA_MAX_DIMS], st[PA_MAX_DIMS];
    const pa_tview sv = pa_tview_of(self);
    for (int32_t i = 0; i < self->ndim; i++) {
        od[i] = i == d ? len : self->dims[i];
        /* with 2+ elements the stride lies inside the view's storage; with fewer it is never used */
        st[i] = i == d && len > 1 ? sv.strides[i] * step : sv.strides[i];
    }
    rc = want_shape(api, "out", out, self->ndim, od);
    if (rc) return rc;
    init_plan(p, PA_SHAPE_COPY, self, out);
    add_piece(p, st, start * sv.strides[d]);
    return ACLNN_SUCCESS;
}

static int plan_expand(const pa_op *op, const pa_arg *a, shape_plan *p) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *out = a[2].p;
    const aclIntArray *size = a[1].p;
    int rc = same_dtype(api, self, out, "out");
    if (rc) return rc;
    const int32_t n = (int32_t)size->size;
    if (n < self->ndim || n > PA_MAX_DIMS) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: size must have between %d and %d entries, got %d", api,
                       (int)self->ndim, PA_MAX_DIMS, (int)n);
    }
    const pa_tview sv = pa_tview_of(self);
    int64_t od[PA_MAX_DIMS], st[PA_MAX_DIMS];
    for (int32_t i = 0; i < n; i++) {
        const int32_t j = i - (n - self->ndim);
        int64_t want = size->values[i];
        const int64_t have = j >= 0 ? self->dims[j] : 1;
        if (want == -1 && j >= 0) want = have;
        if (want < 0 || (have != want && have != 1)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: size[%d] = %lld cannot expand self's dim of size %lld", api,
                           (int)i, (long long)size->values[i], (long long)have);
        }
        od[i] = want;
        st[i] = j >= 0 && have == want && want != 1 ? sv.strides[j] : 0;
    }
    rc = want_shape(api, "out", out, n, od);
    if (rc) return rc;
    init_plan(p, PA_SHAPE_COPY, self, out);
    add_piece(p, st, 0);
    return ACLNN_SUCCESS;
}

static int plan_flip(const pa_op *op, const pa_arg *a, shape_plan *p) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *out = a[2].p;
    const aclIntArray *dims = a[1].p;
    int rc = same_dtype(api, self, out, "out");
    if (rc == 0) rc = want_shape(api, "out", out, self->ndim, self->dims);
    if (rc) return rc;
    const pa_tview sv = pa_tview_of(self);
    int64_t st[PA_MAX_DIMS], off = 0;
    bool flip[PA_MAX_DIMS] = {false};
    for (uint64_t k = 0; k < dims->size; k++) {
        int32_t d = 0;
        rc = wrap(api, "dims entry", dims->values[k], self->ndim, &d);
        if (rc) return rc;
        if (flip[d]) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: dim %d appears twice in dims", api, (int)d);
        flip[d] = self->ndim > 0;
    }
    for (int32_t i = 0; i < self->ndim; i++) {
        st[i] = flip[i] ? -sv.strides[i] : sv.strides[i];
        if (flip[i] && self->dims[i] > 0) off += (self->dims[i] - 1) * sv.strides[i];
    }
    init_plan(p, PA_SHAPE_COPY, self, out);
    add_piece(p, st, off);
    return ACLNN_SUCCESS;
}

/* out viewed as [r0, d0, r1, d1, ...] (a dim split where it repeats a
 * non-trivial input dim), self as [0, s0, 0, s1, ...]. */
static int plan_repeat(const pa_op *op, const pa_arg *a, shape_plan *p) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *out = a[2].p;
    const aclIntArray *rep = a[1].p;
    int rc = same_dtype(api, self, out, "out");
    if (rc) return rc;
    const int32_t n = (int32_t)rep->size;
    if (n < self->ndim) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: repeats must have at least as many entries as self has dims "
                       "(%d), got %d", api, (int)self->ndim, (int)n);
    }
    for (int32_t i = 0; i < n; i++) {
        if (rep->values[i] < 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: repeats[%d] must not be negative, got %lld", api, (int)i,
                           (long long)rep->values[i]);
        }
    }
    if (n > PA_MAX_DIMS) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: repeats must have at most %d entries, got %d", api, PA_MAX_DIMS,
                       (int)n);
    }
    const pa_tview sv = pa_tview_of(self);
    int64_t od[PA_MAX_DIMS];
    for (int32_t i = 0; i < n; i++) {
        const int32_t j = i - (n - self->ndim);
        const int64_t d = j >= 0 ? self->dims[j] : 1;
        if (!pa_mul_ok(d, rep->values[i], &od[i])) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the repeated size of dim %d overflows", api, (int)i);
        }
    }
    rc = want_shape(api, "out", out, n, od);
    if (rc) return rc;
    init_plan(p, PA_SHAPE_COPY, self, out);
    piece *q = &p->pieces[p->npieces++];
    const pa_tview ov = p->out;
    q->ndim = 0;
    for (int32_t i = 0; i < n; i++) {
        const int32_t j = i - (n - self->ndim);
        const int64_t d = j >= 0 ? self->dims[j] : 1, r = rep->values[i];
        if (d > 1 && r > 1) { /* split: r copies of d */
            q->dims[q->ndim] = r, q->in_st[q->ndim] = 0, q->out_st[q->ndim] = d * ov.strides[i];
            q->ndim++;
            q->dims[q->ndim] = d, q->in_st[q->ndim] = sv.strides[j], q->out_st[q->ndim] = ov.strides[i];
            q->ndim++;
        } else {
            q->dims[q->ndim] = od[i];
            q->in_st[q->ndim] = d > 1 ? sv.strides[j] : 0;
            q->out_st[q->ndim] = ov.strides[i];
            q->ndim++;
        }
    }
    return ACLNN_SUCCESS;
}

static int plan_reflection_pad1d(const pa_op *op, const pa_arg *a, shape_plan *p) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *out = a[2].p;
    const aclIntArray *pad = a[1].p;
    int rc = same_dtype(api, self, out, "out");
    if (rc) return rc;
    if (self->ndim != 2 && self->ndim != 3) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self must be 2-D or 3-D, got %d-D", api, (int)self->ndim);
    }
    if (pad->size != 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: padding must have 2 entries, got %llu", api,
                       (unsigned long long)pad->size);
    }
    const int32_t last = self->ndim - 1;
    const int64_t w = self->dims[last], l = pad->values[0], r = pad->values[1];
    if (l < 0 || r < 0 || l >= w || r >= w) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: each padding must be in [0, %lld) (below the last dim's size), "
                       "got [%lld, %lld]", api, (long long)w, (long long)l, (long long)r);
    }
    int64_t od[3];
    for (int32_t i = 0; i < self->ndim; i++) od[i] = self->dims[i];
    od[last] = w + l + r;
    rc = want_shape(api, "out", out, self->ndim, od);
    if (rc) return rc;
    init_plan(p, PA_SHAPE_COPY, self, out);
    const pa_tview sv = p->self, ov = p->out;
    const int64_t s = sv.strides[last];
    /* middle: out[l + j] = in[j]; left: out[j] = in[l - j]; right: out[l + w + j] = in[w - 2 - j] */
    piece *m = add_piece(p, sv.strides, 0);
    m->dims[last] = w;
    m->out_off = l * ov.strides[last];
    if (l > 0) {
        piece *q = add_piece(p, sv.strides, l * s);
        q->dims[last] = l;
        q->in_st[last] = -s;
    }
    if (r > 0) {
        piece *q = add_piece(p, sv.strides, (w - 2) * s);
        q->dims[last] = r;
        q->in_st[last] = -s;
        q->out_off = (l + w) * ov.strides[last];
    }
    return ACLNN_SUCCESS;
}

static int plan_roll(const pa_op *op, const pa_arg *a, shape_plan *p) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *out = a[3].p;
    const aclIntArray *shifts = a[1].p, *dims = a[2].p;
    int rc = same_dtype(api, self, out, "out");
    if (rc == 0) rc = want_shape(api, "out", out, self->ndim, self->dims);
    if (rc) return rc;
    if (dims->size == 0 ? shifts->size != 1 : shifts->size != dims->size) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: shifts (%llu entries) must match dims (%llu entries), or be one "
                       "shift when dims is empty", api, (unsigned long long)shifts->size,
                       (unsigned long long)dims->size);
    }
    if (dims->size > PA_MAX_DIMS) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: too many dims", api);
    init_plan(p, PA_SHAPE_ROLL, self, out);
    p->roll_flat = dims->size == 0;
    if (p->roll_flat) {
        p->nroll = 1;
        p->roll_shift[0] = shifts->values[0];
        return ACLNN_SUCCESS;
    }
    for (uint64_t k = 0; k < dims->size; k++) {
        int32_t d = 0;
        rc = wrap(api, "dims entry", dims->values[k], self->ndim, &d);
        if (rc) return rc;
        p->roll_dim[p->nroll] = d;
        p->roll_shift[p->nroll] = shifts->values[k];
        p->nroll++;
    }
    return ACLNN_SUCCESS;
}

static int plan_tri(const pa_op *op, const pa_arg *a, shape_plan *p) {
    const char *api = op->ws_api;
    const bool inplace = op->nparams == 2;
    const aclTensor *self = a[0].p, *out = inplace ? a[0].p : a[2].p;
    int rc = same_dtype(api, self, out, "out");
    if (rc == 0 && !inplace) rc = want_shape(api, "out", out, self->ndim, self->dims);
    if (rc) return rc;
    const bool lower = op->kernel == PA_SHAPE_TRIL;
    if (self->ndim < 2 && (lower || pa_tensor_numel(self) > 0)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self must have at least 2 dims, got %d", api, (int)self->ndim);
    }
    init_plan(p, op->kernel, self, out);
    p->diagonal = a[1].i;
    return ACLNN_SUCCESS;
}

static int plan_arange(const pa_op *op, const pa_arg *a, shape_plan *p) {
    const char *api = op->ws_api;
    const aclScalar *start = a[0].p, *end = a[1].p, *step = a[2].p;
    const aclTensor *out = a[3].p;
    const double s0 = pa_scalar_f(start), s1 = pa_scalar_f(end), st = pa_scalar_f(step);
    if (st == 0 || st != st) return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: step must not be 0", api);
    if ((st > 0 && s1 < s0) || (st < 0 && s1 > s0)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: step's sign must agree with end - start (start %g, end %g, step "
                       "%g)", api, s0, s1, st);
    }
    memset(p, 0, sizeof *p);
    p->kind = PA_SHAPE_ARANGE;
    p->out = pa_tview_of(out);
    p->start = s0, p->step = st;
    p->istart = pa_scalar_i(start), p->istep = pa_scalar_i(step);
    return ACLNN_SUCCESS;
}

int pa_plan_shape(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    shape_plan p;
    int rc;
    switch (op->kernel) {
    case PA_SHAPE_PERMUTE: rc = plan_permute(op, a, &p); break;
    case PA_SHAPE_SLICE: rc = plan_slice(op, a, &p); break;
    case PA_SHAPE_EXPAND: rc = plan_expand(op, a, &p); break;
    case PA_SHAPE_FLIP: rc = plan_flip(op, a, &p); break;
    case PA_SHAPE_REPEAT: rc = plan_repeat(op, a, &p); break;
    case PA_SHAPE_REFLECTION_PAD1D: rc = plan_reflection_pad1d(op, a, &p); break;
    case PA_SHAPE_ROLL: rc = plan_roll(op, a, &p); break;
    case PA_SHAPE_TRIL:
    case PA_SHAPE_TRIU: rc = plan_tri(op, a, &p); break;
    case PA_SHAPE_ARANGE: rc = plan_arange(op, a, &p); break;
    default: return pa_fail(ACLNN_ERR_INNER, "%s: internal error: unknown shape kernel %d", op->ws_api, op->kernel);
    }
    if (rc) return rc;
    return executor(op, &p, op->kernel != PA_SHAPE_ARANGE, ws, ex);
}

/* ---- run ---- */

/* A bit copy of n dims from in (element strides) to out on the map engine. */
static void copy_view(aclDataType dt, char *in, char *out, int32_t ndim, const int64_t *dims, const int64_t *in_st,
                      const int64_t *out_st) {
    pa_map_args g;
    memset(&g, 0, sizeof g);
    g.kernel = PA_K_COPY;
    g.dom = PA_DOM_I64;
    g.nin = 1;
    g.raw = true;
    g.res = ACL_DT_UNDEFINED;
    g.ndim = ndim;
    g.out.ptr = out;
    g.out.dtype = dt;
    g.out.via = ACL_DT_UNDEFINED;
    g.in[0].ptr = in;
    g.in[0].dtype = dt;
    g.in[0].via = ACL_DT_UNDEFINED;
    for (int32_t i = 0; i < ndim; i++) {
        g.dims[i] = dims[i];
        g.out.strides[i] = out_st[i];
        g.in[0].strides[i] = in_st[i];
    }
    if (ndim == 0) {
        g.ndim = 1;
        g.dims[0] = 1;
    }
    pa_map_simplify(&g);
    pa_map_run(&g);
}

/* Roll: for each rolled dim the output splits in two ranges; every
 * combination of ranges is one copy. */
static void run_roll(const shape_plan *p, char *in, char *out) {
    const pa_tview *sv = &p->self, *ov = &p->out;
    const size_t es = pa_cvt_size(sv->dtype);
    if (p->roll_flat) {
        /* the flattened tensor (row-major order) rolled: element k goes to (k + shift) mod n */
        int64_t n = 1;
        for (int32_t i = 0; i < sv->ndim; i++) n *= sv->dims[i];
        if (n == 0) return;
        const int64_t sh = ((p->roll_shift[0] % n) + n) % n;
        for (int64_t k = 0; k < n; k++) {
            int64_t ko = (k + sh) % n, oi = 0, ii = 0, r1 = k, r2 = ko;
            for (int32_t i = sv->ndim - 1; i >= 0; i--) {
                ii += (r1 % sv->dims[i]) * sv->strides[i];
                r1 /= sv->dims[i];
                oi += (r2 % ov->dims[i]) * ov->strides[i];
                r2 /= ov->dims[i];
            }
            memcpy(out + oi * (int64_t)es, in + ii * (int64_t)es, es);
        }
        return;
    }
    /* the net shift of each dim */
    int64_t shift[PA_MAX_DIMS] = {0};
    for (int32_t k = 0; k < p->nroll; k++) {
        const int32_t d = p->roll_dim[k];
        const int64_t n = sv->dims[d];
        if (n > 0) shift[d] = ((shift[d] + p->roll_shift[k] % n) % n + n) % n;
    }
    int32_t rolled[PA_MAX_DIMS], nr = 0;
    for (int32_t i = 0; i < sv->ndim; i++) {
        if (shift[i] != 0) rolled[nr++] = i;
    }
    for (int64_t combo = 0; combo < ((int64_t)1 << nr); combo++) {
        int64_t dims[PA_MAX_DIMS], in_off = 0, out_off = 0;
        bool empty = false;
        for (int32_t i = 0; i < sv->ndim; i++) dims[i] = sv->dims[i];
        for (int32_t k = 0; k < nr; k++) {
            const int32_t d = rolled[k];
            const int64_t n = sv->dims[d], s = shift[d];
            if ((combo >> k) & 1) { /* out[0, s) = in[n - s, n) */
                dims[d] = s;
                in_off += (n - s) * sv->strides[d];
            } else { /* out[s, n) = in[0, n - s) */
                dims[d] = n - s;
                out_off += s * ov->strides[d];
            }
            empty = empty || dims[d] == 0;
        }
        if (!empty) {
            copy_view(sv->dtype, in + in_off * (int64_t)es, out + out_off * (int64_t)es, sv->ndim, dims, sv->strides,
                      ov->strides);
        }
    }
}

typedef struct tri_ctx {
    const shape_plan *p;
    char *in, *out;
    int64_t rows, cols;
} tri_ctx;

static void tri_range(void *ctx, int64_t begin, int64_t end) {
    const tri_ctx *c = ctx;
    const pa_tview *sv = &c->p->self, *ov = &c->p->out;
    const size_t es = pa_cvt_size(sv->dtype);
    const int32_t nd = sv->ndim;
    const bool lower = c->p->kind == PA_SHAPE_TRIL;
    for (int64_t u = begin; u < end; u++) { /* u: (batch, row) */
        int64_t r = u % c->rows, b = u / c->rows, ii = r * sv->strides[nd - 2], oi = r * ov->strides[nd - 2];
        for (int32_t i = nd - 3; i >= 0; i--) {
            ii += (b % sv->dims[i]) * sv->strides[i];
            oi += (b % ov->dims[i]) * ov->strides[i];
            b /= sv->dims[i];
        }
        for (int64_t j = 0; j < c->cols; j++) {
            const bool keep = lower ? j - r <= c->p->diagonal : j - r >= c->p->diagonal;
            char *q = c->out + (oi + j * ov->strides[nd - 1]) * (int64_t)es;
            if (keep) memmove(q, c->in + (ii + j * sv->strides[nd - 1]) * (int64_t)es, es);
            else memset(q, 0, es);
        }
    }
}

static void run_arange(const shape_plan *p, char *out) {
    const pa_tview *ov = &p->out;
    const size_t es = pa_cvt_size(ov->dtype);
    int64_t n = 1;
    for (int32_t i = 0; i < ov->ndim; i++) n *= ov->dims[i];
    const bool ints = !pa_cvt_is_float(ov->dtype);
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0, r = k;
        for (int32_t i = ov->ndim - 1; i >= 0; i--) {
            off += (r % ov->dims[i]) * ov->strides[i];
            r /= ov->dims[i];
        }
        if (ints) {
            const uint64_t v = (uint64_t)p->istart + (uint64_t)k * (uint64_t)p->istep; /* wraps, no overflow */
            pa_cvt_store_i(out + off * (int64_t)es, ov->dtype, (int64_t)v);
        } else {
            pa_cvt_store_f(out + off * (int64_t)es, ov->dtype, p->start + (double)k * p->step);
        }
    }
}

int pa_run_shape(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const shape_plan *p = plan;
    char *out = pa_tview_ptr(&p->out);
    if (p->kind == PA_SHAPE_ARANGE) {
        run_arange(p, out);
        return ACLNN_SUCCESS;
    }
    char *in = pa_tview_ptr(&p->self);
    for (int32_t i = 0; i < p->self.ndim; i++) {
        if (p->self.dims[i] == 0) return ACLNN_SUCCESS;
    }
    for (int32_t i = 0; i < p->out.ndim; i++) {
        if (p->out.dims[i] == 0) return ACLNN_SUCCESS;
    }
    const size_t es = pa_cvt_size(p->self.dtype);
    switch (p->kind) {
    case PA_SHAPE_ROLL: run_roll(p, in, out); return ACLNN_SUCCESS;
    case PA_SHAPE_TRIL:
    case PA_SHAPE_TRIU: {
        const int32_t nd = p->self.ndim;
        tri_ctx c = {p, in, out, p->self.dims[nd - 2], p->self.dims[nd - 1]};
        int64_t units = 1;
        for (int32_t i = 0; i < nd - 1; i++) units *= p->self.dims[i];
        pa_parallel_for(units, PA_MAX(1, 16384 / PA_MAX(1, c.cols)), tri_range, &c);
        return ACLNN_SUCCESS;
    }
    default:
        for (int32_t k = 0; k < p->npieces; k++) {
            const piece *q = &p->pieces[k];
            copy_view(p->self.dtype, in + q->in_off * (int64_t)es, out + q->out_off * (int64_t)es, q->ndim, q->dims,
                      q->in_st, q->out_st);
        }
        return ACLNN_SUCCESS;
    }
}
