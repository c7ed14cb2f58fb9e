/* The AdamW step and the non-finite check (foreach.h). */
#include <math.h>
#include <string.h>

#include "common/pa_common.h"
#include "kernels/foreach/foreach.h"
#include "kernels/map/map_cvt.h"
#include "runtime/pa_threadpool.h"

#define GRAIN 16384

/* A row-major walk over N-D offsets of up to 5 operands. */
typedef struct walk {
    int32_t nd, nops;
    const int64_t *dims;
    const pa_fe_operand *ops[5];
    int64_t idx[PA_FE_MAX_DIMS];
    int64_t off[5];
} walk;

static void walk_start(walk *w, int64_t i) {
    for (int k = 0; k < w->nops; k++) w->off[k] = 0;
    for (int32_t d = w->nd - 1; d >= 0; d--) {
        const int64_t n = w->dims[d];
        w->idx[d] = n > 0 ? i % n : 0;
        i = n > 0 ? i / n : 0;
        for (int k = 0; k < w->nops; k++) w->off[k] += w->idx[d] * w->ops[k]->strides[d];
    }
}

static inline void walk_next(walk *w) {
    for (int32_t d = w->nd - 1; d >= 0; d--) {
        w->idx[d]++;
        for (int k = 0; k < w->nops; k++) w->off[k] += w->ops[k]->strides[d];
        if (w->idx[d] < w->dims[d]) return;
        for (int k = 0; k < w->nops; k++) w->off[k] -= w->dims[d] * w->ops[k]->strides[d];
        w->idx[d] = 0;
    }
}

static inline char *at(const pa_fe_operand *o, int64_t off) {
    return o->ptr + off * (int64_t)pa_cvt_size(o->dtype);
}

static inline float ld(const pa_fe_operand *o, int64_t off) { return (float)pa_cvt_load_f(at(o, off), o->dtype); }
static inline void st(const pa_fe_operand *o, int64_t off, float v) { pa_cvt_store_f(at(o, off), o->dtype, v); }

static int64_t numel(int32_t nd, const int64_t *dims) {
    int64_t n = 1;
    for (int32_t d = 0; d < nd; d++) n *= dims[d];
    return n;
}

void pa_adamw_consts(pa_adamw_args *a, float step, float lr, float beta1, float beta2, float weight_decay,
                     float eps) {
    const float t = step + 1.0f;
    const float bc1 = 1.0f - powf(beta1, t), bc2 = 1.0f - powf(beta2, t);
    a->step_size = lr / bc1;
    a->bc2_rsqrt = 1.0f / sqrtf(bc2);
    a->wd_factor = 1.0f - lr * weight_decay;
    a->one_b1 = 1.0f - beta1;
    a->one_b2 = 1.0f - beta2;
    a->b2 = beta2;
    a->eps = eps;
}

static void adamw_range(void *ctx, int64_t begin, int64_t end) {
    const pa_adamw_args *a = ctx;
    const bool ams = a->maxv.ptr != NULL;
    walk w = {.nd = a->ndim, .nops = ams ? 5 : 4, .dims = a->dims, .ops = {&a->var, &a->m, &a->v, &a->grad, &a->maxv}};
    walk_start(&w, begin);
    for (int64_t i = begin; i < end; i++, walk_next(&w)) {
        float g = ld(&a->grad, w.off[3]);
        if (a->maximize) g = -g;
        const float var = ld(&a->var, w.off[0]) * a->wd_factor;
        const float m0 = ld(&a->m, w.off[1]);
        const float d = g - m0;
        const float t1 = d * a->one_b1;
        const float m = t1 + m0;
        const float vb = ld(&a->v, w.off[2]) * a->b2;
        const float gg = g * g;
        const float g2 = gg * a->one_b2;
        const float v = vb + g2;
        float s;
        if (ams) {
            const float mx0 = ld(&a->maxv, w.off[4]);
            const float mx = mx0 > v || isnan(mx0) ? mx0 : v;
            st(&a->maxv, w.off[4], mx);
            s = sqrtf(mx);
        } else {
            s = sqrtf(v);
        }
        const float sc = s * a->bc2_rsqrt;
        const float den = sc + a->eps;
        const float q = m / den;
        const float u = q * a->step_size;
        st(&a->var, w.off[0], var - u);
        st(&a->m, w.off[1], m);
        st(&a->v, w.off[2], v);
    }
}

void pa_adamw_run(const pa_adamw_args *a) {
    const int64_t n = numel(a->ndim, a->dims);
    if (n <= 0) return;
    if (n <= GRAIN) adamw_range((void *)a, 0, n);
    else pa_parallel_for(n, GRAIN, adamw_range, (void *)a);
}

bool pa_fe_any_nonfinite(const pa_fe_operand *x, int32_t ndim, const int64_t *dims) {
    const int64_t n = numel(ndim, dims);
    walk w = {.nd = ndim, .nops = 1, .dims = dims, .ops = {x}};
    walk_start(&w, 0);
    for (int64_t i = 0; i < n; i++, walk_next(&w)) {
        if (!isfinite(pa_cvt_load_f(at(x, w.off[0]), x->dtype))) return true;
    }
    return false;
}
