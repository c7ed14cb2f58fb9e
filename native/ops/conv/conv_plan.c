/* The conv family's planner and run function (family "conv" in the op table):
 * op->kernel (PA_CONV_*) picks the operator's planner; pa_run_conv runs any
 * plan. Outputs that share storage with an input are computed into a private
 * buffer first and copied at the end (as CANN's kernels write a temporary
 * that a ViewCopy moves into the output). */
#include <stdlib.h>

#include "ops/conv/conv_impl.h"
#include "ops/conv/pa_conv.h"
#include "runtime/pa_threadpool.h"

int pa_plan_conv(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    switch (op->kernel) {
    case PA_CONV_CONVOLUTION: return cv_plan_convolution(op, a, workspaceSize, executor);
    case PA_CONV_IM2COL: return cv_plan_im2col(op, a, workspaceSize, executor);
    case PA_CONV_AVG_POOL2D: return cv_plan_avg_pool(op, a, workspaceSize, executor);
    case PA_CONV_MAX_POOL: return cv_plan_max_pool(op, a, workspaceSize, executor);
    case PA_CONV_TRIANGULAR_SOLVE: return cv_plan_trisolve(op, a, workspaceSize, executor);
    default:
        return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: internal error: %s is not a conv-family operator",
                       op->ws_api, op->launch.name);
    }
}

/* Runs plan p with its Y output (and M for the triangular solve) written to
 * dy / dm. */
static int run_into(const cv_plan *p, const pa_tview *dy, const pa_tview *dm) {
    switch (p->run) {
    case CV_RUN_CONV: return cv_run_conv(p, dy);
    case CV_RUN_IM2COL: return cv_run_im2col(p, dy);
    case CV_RUN_AVG_POOL: return cv_run_avg_pool(p, dy);
    case CV_RUN_MAX_POOL: return cv_run_max_pool(p, dy);
    case CV_RUN_TRISOLVE: return cv_run_trisolve(p, dy, dm);
    default: return pa_fail(ACLNN_ERR_INNER, "%s: internal error: unknown plan %d", p->api, (int)p->run);
    }
}

/* Whether output view o may touch the storage of an input of the plan. */
static bool overlaps_input(const cv_plan *p, const pa_tview *o) {
    if (o->dtype == ACL_DT_UNDEFINED || o->base == NULL) return false;
    for (int s = CV_V_X; s <= CV_V_B; s++) {
        const pa_tview *in = &p->v[s];
        if (in->dtype == ACL_DT_UNDEFINED || in->base == NULL) continue;
        if (cv_views_overlap(in, o)) return true;
    }
    return false;
}

int pa_run_conv(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const cv_plan *p = plan;
    if (p->run == CV_RUN_NOTHING) return ACLNN_SUCCESS;
    const pa_tview *y = &p->v[CV_V_Y], *m = &p->v[CV_V_M];
    const bool stage_y = overlaps_input(p, y);
    const bool stage_m = p->run == CV_RUN_TRISOLVE && overlaps_input(p, m);
    void *by = NULL, *bm = NULL;
    pa_tview ty = *y, tm = *m;
    if (stage_y) {
        by = malloc(cv_view_bytes(y) ? cv_view_bytes(y) : 1);
        if (by == NULL) return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the staged output");
        ty = cv_contig_like(y, by);
    }
    if (stage_m) {
        bm = malloc(cv_view_bytes(m) ? cv_view_bytes(m) : 1);
        if (bm == NULL) {
            free(by);
            return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, p->api, "the staged output");
        }
        tm = cv_contig_like(m, bm);
    }
    const int rc = run_into(p, &ty, &tm);
    if (rc == ACLNN_SUCCESS) {
        if (stage_y) cv_copy_view(y, &ty);
        if (stage_m) cv_copy_view(m, &tm);
    }
    free(by);
    free(bm);
    return rc;
}

/* ---- planning helpers ---- */

void cv_plan_init(cv_plan *p, const pa_op *op, int run) {
    memset(p, 0, sizeof *p);
    p->run = run;
    p->kernel = op->kernel;
    p->api = op->launch.name;
    for (int s = 0; s < CV_NVIEWS; s++) p->v[s].dtype = ACL_DT_UNDEFINED;
}

int cv_finish(const pa_op *op, const cv_plan *p, const int *in_slots, int n_in, const int *out_slots, int n_out,
              const bool *present, uint64_t *workspaceSize, aclOpExecutor **executor) {
    size_t in_off[CV_NVIEWS], out_off[CV_NVIEWS];
    for (int i = 0; i < n_in; i++) {
        in_off[i] = present && !present[i] ? SIZE_MAX
                                           : offsetof(cv_plan, v) + (size_t)in_slots[i] * sizeof(pa_tview);
    }
    for (int i = 0; i < n_out; i++) {
        out_off[i] = present && !present[n_in + i] ? SIZE_MAX
                                                   : offsetof(cv_plan, v) + (size_t)out_slots[i] * sizeof(pa_tview);
    }
    return pa_op_executor(op, p, sizeof *p, in_off, n_in, out_off, n_out, 0, workspaceSize, executor);
}

bool cv_is_empty(const aclTensor *t) {
    for (int32_t i = 0; i < t->ndim; i++) {
        if (t->dims[i] == 0) return true;
    }
    return false;
}

const char *cv_array_str(const aclIntArray *a, char *buf, size_t cap) {
    const int32_t n = a->size > PA_MAX_DIMS ? PA_MAX_DIMS : (int32_t)a->size;
    pa_shape_str(a->values, n, buf, cap);
    if (a->size > PA_MAX_DIMS && cap > 5) {
        size_t len = strlen(buf);
        if (len > 0 && len + 5 < cap) memcpy(buf + len - 1, ",...]", 6);
    }
    return buf;
}

/* ---- run helpers ---- */

/* [lo, hi) bytes a view may address: its element span (strides are never
 * negative, see pa_tensor_check_view). */
static bool view_span(const pa_tview *v, uintptr_t *lo, uintptr_t *hi) {
    const size_t es = pa_dtype_size(v->dtype);
    int64_t last = 0;
    for (int32_t i = 0; i < v->ndim; i++) {
        if (v->dims[i] == 0) return false;
        last += (v->dims[i] - 1) * v->strides[i];
    }
    const char *b = pa_tview_ptr(v);
    if (b == NULL) return false;
    *lo = (uintptr_t)b;
    *hi = (uintptr_t)(b + (last + 1) * (int64_t)es);
    return true;
}

void cv_out_strides(const cv_plan *p, const pa_tview *y, int64_t *ys) {
    for (int i = 0; i < 5; i++) ys[i] = p->ymap[i] >= 0 && p->ymap[i] < y->ndim ? y->strides[p->ymap[i]] : 0;
}

bool cv_views_overlap(const pa_tview *a, const pa_tview *b) {
    uintptr_t alo, ahi, blo, bhi;
    if (!view_span(a, &alo, &ahi) || !view_span(b, &blo, &bhi)) return false;
    return alo < bhi && blo < ahi;
}

size_t cv_view_bytes(const pa_tview *v) {
    size_t n = pa_dtype_size(v->dtype);
    for (int32_t i = 0; i < v->ndim; i++) n *= (size_t)v->dims[i];
    return n;
}

pa_tview cv_contig_like(const pa_tview *v, void *buf) {
    pa_tview t = *v;
    int64_t st = 1;
    for (int32_t i = v->ndim - 1; i >= 0; i--) {
        t.strides[i] = v->dims[i] == 1 ? 0 : st;
        st *= v->dims[i];
    }
    t.offset = 0;
    t.base = buf;
    t.storage_elems = st;
    return t;
}

typedef struct copy_ctx {
    const pa_tview *dst, *src;
    int64_t inner; /* elements per item: the product of the dims after the first */
    size_t es;
} copy_ctx;

static void copy_items(void *vctx, int64_t begin, int64_t end) {
    const copy_ctx *c = vctx;
    const pa_tview *d = c->dst, *s = c->src;
    const int nd = d->ndim;
    char *pd = pa_tview_ptr(d);
    const char *ps = pa_tview_ptr(s);
    for (int64_t it = begin; it < end; it++) {
        for (int64_t e = 0; e < c->inner; e++) {
            int64_t lin = it * c->inner + e, od = 0, os = 0;
            for (int i = nd - 1; i >= 0; i--) {
                const int64_t x = lin % d->dims[i];
                lin /= d->dims[i];
                od += x * d->strides[i];
                os += x * s->strides[i];
            }
            memcpy(pd + od * (int64_t)c->es, ps + os * (int64_t)c->es, c->es);
        }
    }
}

void cv_copy_view(const pa_tview *dst, const pa_tview *src) {
    int64_t total = 1;
    for (int32_t i = 0; i < dst->ndim; i++) total *= dst->dims[i];
    if (total == 0) return;
    copy_ctx c = {dst, src, 1, pa_dtype_size(dst->dtype)};
    int64_t items = total;
    if (dst->ndim > 1) {
        items = dst->dims[0];
        c.inner = total / items;
    } else {
        c.inner = 1;
    }
    const int64_t grain = c.inner >= 16384 ? 1 : 16384 / c.inner;
    pa_parallel_for(items, grain, copy_items, &c);
}
