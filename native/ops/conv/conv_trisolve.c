/* aclnnTriangularSolve: X with op(A) X = b, op(A) = A or A^T, A (*, m, m)
 * upper or lower triangular (only that triangle is read; unitriangular: its
 * diagonal taken as 1), b = self (*, m, n), batch dims broadcast; mOut (when
 * given) = A broadcast to the batch. Checks as the vendor (ops-math
 * math/triangular_solve op_api): one dtype for self, A, xOut and mOut
 * (FLOAT or DOUBLE here; COMPLEX64 / COMPLEX128 are not implemented), at
 * least 2 dims, A square, self's rows = A's, batch dims broadcast, xOut
 * (*, m, n) and mOut (*, m, m) of the broadcast batch; empty A or self: no
 * work; unitriangular only for FLOAT (161002). Substitution in the dtype
 * (fp32 / fp64), each x_i = (b_i - sum_j T_ij x_j) / T_ii with j in
 * ascending order: one column of b per work item. */
#include <stdatomic.h>

#include "ops/conv/conv_impl.h"
#include "runtime/pa_threadpool.h"

enum { T_SELF, T_A, T_UPPER, T_TRANSPOSE, T_UNIT, T_X, T_M };

static int check_dtype(const char *api, const char *name, const aclTensor *t, const aclTensor *ref) {
    if (t->dtype == ref->dtype) return ACLNN_SUCCESS;
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must be self's (%s), got %s", api, name,
                   pa_dtype_name(ref->dtype), pa_dtype_name(t->dtype));
}

static int check_min2(const char *api, const char *name, const aclTensor *t) {
    if (t->ndim >= 2) return ACLNN_SUCCESS;
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have at least 2 dims, got %d", api, name, (int)t->ndim);
}

int cv_plan_trisolve(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *api = op->ws_api;
    const aclTensor *b = a[T_SELF].p, *A = a[T_A].p, *x = a[T_X].p, *mo = a[T_M].p;
    char s1[160], s2[160];
    int rc = check_dtype(api, "A", A, b);
    if (rc == ACLNN_SUCCESS) rc = check_dtype(api, "xOut", x, b);
    if (rc == ACLNN_SUCCESS && mo != NULL) rc = check_dtype(api, "mOut", mo, b);
    if (rc == ACLNN_SUCCESS) rc = check_min2(api, "self", b);
    if (rc == ACLNN_SUCCESS) rc = check_min2(api, "A", A);
    if (rc == ACLNN_SUCCESS) rc = check_min2(api, "xOut", x);
    if (rc != ACLNN_SUCCESS) return rc;
    const int32_t ra = A->ndim, rb = b->ndim;
    const int64_t m = A->dims[ra - 2];
    if (A->dims[ra - 1] != m) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: A must be (batches of) square matrices, got shape %s", api,
                       pa_shape_str(A->dims, ra, s1, sizeof s1));
    }
    if (b->dims[rb - 2] != m) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: self's rows must be A's (%lld): A is shape %s, self is shape %s", api, (long long)m,
                       pa_shape_str(A->dims, ra, s1, sizeof s1), pa_shape_str(b->dims, rb, s2, sizeof s2));
    }
    const int64_t ncols = b->dims[rb - 1];
    /* broadcast of A and self with its last dim taken as m */
    const int32_t r = ra > rb ? ra : rb;
    int64_t bs[PA_MAX_DIMS];
    for (int32_t i = 0; i < r; i++) {
        const int32_t ia = i - (r - ra), ib = i - (r - rb);
        const int64_t da = ia >= 0 ? A->dims[ia] : 1;
        const int64_t db = ib >= 0 ? (ib == rb - 1 ? m : b->dims[ib]) : 1;
        if (da != db && da != 1 && db != 1) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: the batch dims of A (shape %s) and self (shape %s) do not broadcast", api,
                           pa_shape_str(A->dims, ra, s1, sizeof s1), pa_shape_str(b->dims, rb, s2, sizeof s2));
        }
        bs[i] = da == 1 ? db : da;
    }
    {
        int64_t want[PA_MAX_DIMS];
        memcpy(want, bs, sizeof want);
        want[r - 1] = ncols;
        bool same = x->ndim == r;
        for (int32_t i = 0; same && i < r; i++) same = x->dims[i] == want[i];
        if (!same) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: xOut shape must be %s, got %s", api,
                           pa_shape_str(want, r, s1, sizeof s1), pa_shape_str(x->dims, x->ndim, s2, sizeof s2));
        }
    }
    if (mo != NULL) {
        if ((rc = check_min2(api, "mOut", mo)) != ACLNN_SUCCESS) return rc;
        bool same = mo->ndim == r;
        for (int32_t i = 0; same && i < r; i++) same = mo->dims[i] == bs[i];
        if (!same) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: mOut shape must be %s, got %s", api,
                           pa_shape_str(bs, r, s1, sizeof s1), pa_shape_str(mo->dims, mo->ndim, s2, sizeof s2));
        }
    }
    const bool empty = cv_is_empty(A) || cv_is_empty(b);
    if (!empty && a[T_UNIT].b && b->dtype != ACL_FLOAT) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: unitriangular true is supported only for FLOAT, got %s", api,
                       pa_dtype_name(b->dtype));
    }
    cv_plan p;
    cv_plan_init(&p, op, empty ? CV_RUN_NOTHING : CV_RUN_TRISOLVE);
    p.v[CV_V_X] = pa_tview_of(b);
    p.v[CV_V_W] = pa_tview_of(A);
    p.v[CV_V_Y] = pa_tview_of(x);
    if (mo != NULL) p.v[CV_V_M] = pa_tview_of(mo);
    p.upper = a[T_UPPER].b;
    p.transpose = a[T_TRANSPOSE].b;
    p.unit = a[T_UNIT].b;
    p.m = m;
    p.ncols = ncols;
    p.nbatch = r - 2;
    for (int32_t i = 0; i < r - 2; i++) {
        const int32_t ia = i - (r - ra), ib = i - (r - rb);
        p.bdims[i] = bs[i];
        p.bst_a[i] = ia >= 0 && A->dims[ia] != 1 ? p.v[CV_V_W].strides[ia] : 0;
        p.bst_b[i] = ib >= 0 && b->dims[ib] != 1 ? p.v[CV_V_X].strides[ib] : 0;
    }
    const int ins[2] = {CV_V_X, CV_V_W}, outs[2] = {CV_V_Y, CV_V_M};
    const bool present[4] = {true, true, true, mo != NULL};
    return cv_finish(op, &p, ins, 2, outs, 2, present, workspaceSize, executor);
}

/* ---- run ---- */

typedef struct tri_ctx {
    const cv_plan *p;
    const pa_tview *x, *mo;
    atomic_int failed;
} tri_ctx;

/* Element offsets of batch `bi` (row-major over bdims) in self, A and the
 * outputs x and m (views of the broadcast batch shape, or NULL). */
static void batch_offsets(const cv_plan *p, const pa_tview *x, const pa_tview *m, int64_t bi, int64_t *ob,
                          int64_t *oa, int64_t *ox, int64_t *om) {
    *ob = *oa = *ox = *om = 0;
    for (int32_t i = p->nbatch - 1; i >= 0; i--) {
        const int64_t d = p->bdims[i], c = bi % d;
        bi /= d;
        *ob += c * p->bst_b[i];
        *oa += c * p->bst_a[i];
        if (x) *ox += c * x->strides[i];
        if (m) *om += c * m->strides[i];
    }
}

#define TRI_SOLVE(T, LOAD, STORE)                                                                             \
    do {                                                                                                      \
        T *xs = scratch;                                                                                      \
        for (int64_t i = 0; i < M; i++) xs[i] = LOAD(bb + (ob + i * bsr + col * bsc) * es);                   \
        for (int64_t s = 0; s < M; s++) {                                                                     \
            const int64_t i = lower ? s : M - 1 - s;                                                          \
            T acc = xs[i];                                                                                    \
            const int64_t j0 = lower ? 0 : i + 1, j1 = lower ? i : M;                                         \
            for (int64_t j = j0; j < j1; j++) {                                                               \
                const int64_t ti = tr ? j : i, tj = tr ? i : j;                                               \
                const T t = LOAD(ab + (oa + ti * asr + tj * asc) * es);                                       \
                const T prod = t * xs[j];                                                                     \
                acc = acc - prod;                                                                             \
            }                                                                                                 \
            if (!unit) acc = acc / LOAD(ab + (oa + i * asr + i * asc) * es);                                  \
            xs[i] = acc;                                                                                      \
        }                                                                                                     \
        for (int64_t i = 0; i < M; i++) STORE(xb + (ox + i * xsr + col * xsc) * es, xs[i]);                   \
    } while (0)

static inline float ld_f(const char *p) { float v; memcpy(&v, p, 4); return v; }
static inline double ld_d(const char *p) { double v; memcpy(&v, p, 8); return v; }
static inline void st_f(char *p, float v) { memcpy(p, &v, 4); }
static inline void st_d(char *p, double v) { memcpy(p, &v, 8); }

static void tri_items(void *vctx, int64_t begin, int64_t end) {
    tri_ctx *c = vctx;
    const cv_plan *p = c->p;
    const pa_tview *bv = &p->v[CV_V_X], *av = &p->v[CV_V_W], *xv = c->x;
    const int64_t M = p->m, N = p->ncols;
    const int64_t es = (int64_t)pa_dtype_size(bv->dtype);
    void *scratch = pa_thread_scratch((size_t)M * 8);
    if (scratch == NULL) {
        atomic_store(&c->failed, 1);
        return;
    }
    const char *bb = pa_tview_ptr(bv), *ab = pa_tview_ptr(av);
    char *xb = pa_tview_ptr(xv);
    const int32_t rb = bv->ndim, ra = av->ndim, rx = xv->ndim;
    const int64_t bsr = bv->strides[rb - 2], bsc = bv->strides[rb - 1];
    const int64_t asr = av->strides[ra - 2], asc = av->strides[ra - 1];
    const int64_t xsr = xv->strides[rx - 2], xsc = xv->strides[rx - 1];
    const bool tr = p->transpose, unit = p->unit;
    const bool lower = p->upper == p->transpose; /* the triangle op(A) has */
    for (int64_t it = begin; it < end; it++) {
        const int64_t bi = it / N, col = it % N;
        int64_t ob, oa, ox, om;
        batch_offsets(p, xv, NULL, bi, &ob, &oa, &ox, &om);
        if (bv->dtype == ACL_DOUBLE) {
            TRI_SOLVE(double, ld_d, st_d);
        } else {
            TRI_SOLVE(float, ld_f, st_f);
        }
    }
}

static void copy_a(void *vctx, int64_t begin, int64_t end) {
    tri_ctx *c = vctx;
    const cv_plan *p = c->p;
    const pa_tview *av = &p->v[CV_V_W], *mv = c->mo;
    const int64_t M = p->m;
    const size_t es = pa_dtype_size(av->dtype);
    const char *ab = pa_tview_ptr(av);
    char *mb = pa_tview_ptr(mv);
    const int32_t ra = av->ndim, rm = mv->ndim;
    const int64_t asr = av->strides[ra - 2], asc = av->strides[ra - 1];
    const int64_t msr = mv->strides[rm - 2], msc = mv->strides[rm - 1];
    for (int64_t bi = begin; bi < end; bi++) {
        int64_t ob, oa, ox, om;
        batch_offsets(p, NULL, mv, bi, &ob, &oa, &ox, &om);
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < M; j++) {
                memcpy(mb + (om + i * msr + j * msc) * (int64_t)es, ab + (oa + i * asr + j * asc) * (int64_t)es, es);
            }
        }
    }
}

int cv_run_trisolve(const cv_plan *p, const pa_tview *y, const pa_tview *m) {
    int64_t nb = 1;
    for (int32_t i = 0; i < p->nbatch; i++) nb *= p->bdims[i];
    tri_ctx c = {p, y, m, 0};
    const double per = (double)p->m * (double)p->m;
    pa_parallel_for(nb * p->ncols, per >= 16384 ? 1 : (int64_t)(16384 / per), tri_items, &c);
    if (atomic_load(&c.failed)) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the solver's column");
    if (m->dtype != ACL_DT_UNDEFINED) pa_parallel_for(nb, per >= 16384 ? 1 : (int64_t)(16384 / per), copy_a, &c);
    return ACLNN_SUCCESS;
}
