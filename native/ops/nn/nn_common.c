/* The NN family's shared checks, plan plumbing and row loads / stores (nn_impl.h). */
#include <math.h>
#include <stdlib.h>

#include "common/pa_half.h"
#include "kernels/map/map_cvt.h"
#include "ops/nn/nn_impl.h"
#include "runtime/pa_threadpool.h"

/* ---- checks ---- */

int nn_wrap_dim(const char *api, const char *what, int64_t dim, int64_t ndim, bool zero_d_as_1, int64_t *out) {
    const int64_t rank = ndim == 0 && zero_d_as_1 ? 1 : ndim;
    if (rank == 0 || dim < -rank || dim >= rank) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be in [%lld, %lld] (the rank of the input is %lld), got %lld",
                       api, what, (long long)-rank, (long long)(rank - 1), (long long)ndim, (long long)dim);
    }
    *out = dim < 0 ? dim + rank : dim;
    return ACLNN_SUCCESS;
}

bool nn_same_shape(const aclTensor *a, const aclTensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int32_t i = 0; i < a->ndim; i++) {
        if (a->dims[i] != b->dims[i]) return false;
    }
    return true;
}

bool nn_is_empty(const aclTensor *t) {
    for (int32_t i = 0; i < t->ndim; i++) {
        if (t->dims[i] == 0) return true;
    }
    return false;
}

int64_t nn_numel(const aclTensor *t) {
    int64_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++) n *= t->dims[i]; /* bounded by the storage (pa_tensor_check_view) */
    return n;
}

int nn_check_same_shape(const char *api, const char *name, const aclTensor *t, const char *ref_name,
                        const aclTensor *ref, int code) {
    if (nn_same_shape(t, ref)) return ACLNN_SUCCESS;
    char s1[160], s2[160];
    return pa_fail(code, "%s: %s shape %s must be the shape of %s, %s", api, name,
                   pa_shape_str(t->dims, t->ndim, s1, sizeof s1), ref_name,
                   pa_shape_str(ref->dims, ref->ndim, s2, sizeof s2));
}

int nn_check_shape(const char *api, const char *name, const aclTensor *t, int32_t nd, const int64_t *dims, int code) {
    bool same = t->ndim == nd;
    for (int32_t i = 0; same && i < nd; i++) same = t->dims[i] == dims[i];
    if (same) return ACLNN_SUCCESS;
    char s1[160], s2[160];
    return pa_fail(code, "%s: %s shape must be %s, got %s", api, name, pa_shape_str(dims, nd, s1, sizeof s1),
                   pa_shape_str(t->dims, t->ndim, s2, sizeof s2));
}

int nn_check_same_dtype(const char *api, const char *name, const aclTensor *t, const char *ref_name,
                        const aclTensor *ref) {
    if (t->dtype == ref->dtype) return ACLNN_SUCCESS;
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype must be the dtype of %s (%s), got %s", api, name, ref_name,
                   pa_dtype_name(ref->dtype), pa_dtype_name(t->dtype));
}

bool nn_is_float16ish(aclDataType dt) { return dt == ACL_FLOAT16 || dt == ACL_BF16; }

/* ---- plans ---- */

void nn_plan_init(nn_plan *p, const pa_op *op, const pa_arg *a, int run) {
    memset(p, 0, sizeof *p);
    p->kernel = op->kernel;
    p->run = run;
    p->api = op->launch.name;
    for (int i = 0; i < NN_MAXP; i++) p->slot[i] = -1;
    int param[PA_OP_MAX_VIEWS], nin = 0, nout = 0;
    pa_op_views(op, a, p->v, param, &nin, &nout);
    p->nv = nin + nout;
    p->nin = nin;
    for (int i = 0; i < p->nv; i++) {
        if (param[i] < NN_MAXP && a[param[i]].p != NULL) p->slot[param[i]] = (int8_t)i;
        p->res[i] = p->v[i].dtype;
    }
}

int nn_slot(const nn_plan *p, const pa_op *op, const char *name) {
    const int i = pa_op_param(op, name);
    return i >= 0 && i < NN_MAXP ? p->slot[i] : -1;
}

int nn_finish(const pa_op *op, const nn_plan *p, uint64_t ws, uint64_t *workspaceSize, aclOpExecutor **executor) {
    size_t in_off[NN_MAXV], out_off[NN_MAXV];
    for (int i = 0; i < p->nv; i++) {
        const size_t off = p->v[i].dtype == ACL_DT_UNDEFINED ? SIZE_MAX
                                                             : offsetof(nn_plan, v) + (size_t)i * sizeof(pa_tview);
        if (i < p->nin) in_off[i] = off;
        else out_off[i - p->nin] = off;
    }
    return pa_op_executor(op, p, sizeof *p, in_off, p->nin, out_off, p->nv - p->nin, ws, workspaceSize, executor);
}

void nn_set_rows(nn_plan *p, const int64_t *odims, int ond, const int64_t *rdims, int rnd) {
    p->ond = ond;
    p->rnd = rnd;
    p->rows = 1;
    p->rlen = 1;
    for (int i = 0; i < ond; i++) p->rows *= (p->odims[i] = odims[i]);
    for (int i = 0; i < rnd; i++) p->rlen *= (p->rdims[i] = rdims[i]);
}

void nn_set_lay(nn_plan *p, int slot, const int64_t *ost, const int64_t *rst) {
    nn_lay *l = &p->lay[slot];
    for (int i = 0; i < p->ond; i++) l->ost[i] = ost ? ost[i] : 0;
    for (int i = 0; i < p->rnd; i++) l->rst[i] = rst ? rst[i] : 0;
    /* contiguous rows: the row-major strides over the row dims of size > 1 */
    int64_t want = 1;
    bool c = true;
    for (int i = p->rnd - 1; i >= 0; i--) {
        if (p->rdims[i] == 1) continue;
        if (l->rst[i] != want) c = false;
        want *= p->rdims[i];
    }
    l->contig = c;
}

void nn_set_lay_split(nn_plan *p, int slot, int axis) {
    const pa_tview *v = &p->v[slot];
    if (v->ndim == 0) {
        const int64_t z = 0;
        nn_set_lay(p, slot, NULL, &z);
        return;
    }
    nn_set_lay(p, slot, v->strides, v->strides + axis);
}

void nn_set_lay_dim(nn_plan *p, int slot, int dim) {
    const pa_tview *v = &p->v[slot];
    int64_t ost[PA_MAX_DIMS], rst[1] = {0};
    int k = 0;
    for (int i = 0; i < v->ndim; i++) {
        if (i == dim) rst[0] = v->strides[i];
        else ost[k++] = v->strides[i];
    }
    nn_set_lay(p, slot, ost, rst);
}

/* ---- rows ---- */

int64_t nn_row_off(const nn_plan *p, int s, int64_t r) {
    const nn_lay *l = &p->lay[s];
    int64_t off = 0;
    for (int i = p->ond - 1; i >= 0; i--) {
        const int64_t d = p->odims[i];
        off += (r % d) * l->ost[i];
        r /= d;
    }
    return off;
}

float nn_round_to(aclDataType dt, float v) {
    switch (dt) {
    case ACL_FLOAT16: return pa_f16_to_f32(pa_f32_to_f16(v));
    case ACL_BF16: return pa_bf16_to_f32(pa_f32_to_bf16(v));
    default: return v;
    }
}

/* row-major walk over the row dims: calls BODY with `off` the element offset */
#define NN_WALK(p, l, base_off, BODY)                                                                 \
    do {                                                                                              \
        int64_t c_[PA_MAX_DIMS] = {0}, off = (base_off);                                              \
        const int nd_ = (p)->rnd;                                                                     \
        for (int64_t k_ = 0; k_ < (p)->rlen; k_++) {                                                  \
            BODY;                                                                                     \
            for (int d_ = nd_ - 1; d_ >= 0; d_--) {                                                   \
                off += (l)->rst[d_];                                                          \
                if (++c_[d_] < (p)->rdims[d_]) break;                                                 \
                off -= c_[d_] * (l)->rst[d_];                                                         \
                c_[d_] = 0;                                                                           \
            }                                                                                         \
        }                                                                                             \
    } while (0)

void nn_load(const nn_plan *p, const pa_nn_vec *k, int s, int64_t r, float *dst) {
    nn_load_off(p, k, s, nn_row_off(p, s, r), dst);
}

void nn_load_off(const nn_plan *p, const pa_nn_vec *k, int s, int64_t o, float *dst) {
    const pa_tview *v = &p->v[s];
    const nn_lay *l = &p->lay[s];
    const size_t es = pa_dtype_size(v->dtype);
    const char *base = (const char *)pa_tview_ptr(v);
    const int64_t n = p->rlen;
    if (l->contig) {
        const char *src = base + o * (int64_t)es;
        switch (v->dtype) {
        case ACL_FLOAT: memcpy(dst, src, (size_t)n * 4); return;
        case ACL_FLOAT16: k->h2f(dst, (const uint16_t *)src, n); return;
        case ACL_BF16: k->b2f(dst, (const uint16_t *)src, n); return;
        default: break;
        }
    }
    float *d = dst;
    NN_WALK(p, l, o, *d++ = (float)pa_cvt_load_f(base + off * (int64_t)es, v->dtype));
}

const float *nn_row_in_f32(const nn_plan *p, int s, int64_t r) {
    const pa_tview *v = &p->v[s];
    if (v->dtype != ACL_FLOAT || !p->lay[s].contig) return NULL;
    return (const float *)pa_tview_ptr(v) + nn_row_off(p, s, r);
}

float *nn_row_out_f32(const nn_plan *p, int s, int64_t r) {
    const pa_tview *v = &p->v[s];
    if (v->dtype != ACL_FLOAT || p->res[s] != ACL_FLOAT || !p->lay[s].contig) return NULL;
    return (float *)pa_tview_ptr(v) + nn_row_off(p, s, r);
}

const uint16_t *nn_row_in_16(const nn_plan *p, int s, int64_t r, int *bf) {
    const pa_tview *v = &p->v[s];
    if (!nn_is_float16ish(v->dtype) || !p->lay[s].contig) return NULL;
    *bf = v->dtype == ACL_BF16;
    return (const uint16_t *)pa_tview_ptr(v) + nn_row_off(p, s, r);
}

uint16_t *nn_row_out_16(const nn_plan *p, int s, int64_t r, int *bf) {
    const pa_tview *v = &p->v[s];
    if (!nn_is_float16ish(v->dtype) || !p->lay[s].contig || (p->res[s] != v->dtype && p->res[s] != ACL_FLOAT)) {
        return NULL;
    }
    *bf = v->dtype == ACL_BF16;
    return (uint16_t *)pa_tview_ptr(v) + nn_row_off(p, s, r);
}

const void *nn_next_row(const nn_plan *p, int s, int64_t r, int64_t r1) {
    if (r + 1 >= r1 || !p->lay[s].contig) return NULL;
    const pa_tview *v = &p->v[s];
    return (const char *)pa_tview_ptr(v) + nn_row_off(p, s, r + 1) * (int64_t)pa_dtype_size(v->dtype);
}

void nn_prefetch_next(const nn_plan *p, const pa_nn_vec *k, int s, int64_t r, int64_t r1) {
    if (r + 1 >= r1 || !p->lay[s].contig) return;
    const pa_tview *v = &p->v[s];
    const int64_t es = (int64_t)pa_dtype_size(v->dtype);
    const int64_t bytes = p->rlen * es;
    k->prefetch((const char *)pa_tview_ptr(v) + nn_row_off(p, s, r + 1) * es, bytes < 262144 ? bytes : 262144);
}

void nn_load_d(const nn_plan *p, int s, int64_t r, double *dst) {
    const pa_tview *v = &p->v[s];
    const nn_lay *l = &p->lay[s];
    const size_t es = pa_dtype_size(v->dtype);
    const char *base = (const char *)pa_tview_ptr(v);
    double *d = dst;
    NN_WALK(p, l, nn_row_off(p, s, r), *d++ = pa_cvt_load_f(base + off * (int64_t)es, v->dtype));
}

void nn_store(const nn_plan *p, const pa_nn_vec *k, int s, int64_t r, const float *src) {
    nn_store_off(p, k, s, nn_row_off(p, s, r), src);
}

void nn_store_off(const nn_plan *p, const pa_nn_vec *k, int s, int64_t o, const float *src) {
    const pa_tview *v = &p->v[s];
    const nn_lay *l = &p->lay[s];
    const size_t es = pa_dtype_size(v->dtype);
    char *base = (char *)pa_tview_ptr(v);
    const int64_t n = p->rlen;
    const aclDataType res = p->res[s];
    const bool direct = res == v->dtype || res == ACL_FLOAT || res == ACL_DOUBLE;
    if (l->contig && direct) {
        char *dst = base + o * (int64_t)es;
        switch (v->dtype) {
        case ACL_FLOAT: memcpy(dst, src, (size_t)n * 4); return;
        case ACL_FLOAT16: k->f2h((uint16_t *)dst, src, n); return;
        case ACL_BF16: k->f2b((uint16_t *)dst, src, n); return;
        default: break;
        }
    }
    const float *q = src;
    if (direct) {
        NN_WALK(p, l, o, pa_cvt_store_f(base + off * (int64_t)es, v->dtype, (double)*q++));
    } else {
        NN_WALK(p, l, o, pa_cvt_store_f(base + off * (int64_t)es, v->dtype, (double)nn_round_to(res, *q++)));
    }
}

void nn_store_d(const nn_plan *p, int s, int64_t r, const double *src) {
    const pa_tview *v = &p->v[s];
    const nn_lay *l = &p->lay[s];
    const size_t es = pa_dtype_size(v->dtype);
    char *base = (char *)pa_tview_ptr(v);
    const aclDataType res = p->res[s];
    const double *q = src;
    if (res == ACL_DOUBLE) {
        NN_WALK(p, l, nn_row_off(p, s, r), pa_cvt_store_f(base + off * (int64_t)es, v->dtype, *q++));
    } else { /* rounded to fp32 (or a 16-bit dtype through it) first */
        NN_WALK(p, l, nn_row_off(p, s, r),
                pa_cvt_store_f(base + off * (int64_t)es, v->dtype, (double)nn_round_to(res, (float)*q++)));
    }
}

void nn_put1(const nn_plan *p, int s, int64_t off, double v) {
    const pa_tview *t = &p->v[s];
    char *base = (char *)pa_tview_ptr(t);
    const aclDataType res = p->res[s];
    const double x = res == ACL_DOUBLE ? v : (double)nn_round_to(res, (float)v);
    pa_cvt_store_f(base + off * (int64_t)pa_dtype_size(t->dtype), t->dtype, x);
}

float nn_get1(const nn_plan *p, int s, int64_t off) {
    const pa_tview *t = &p->v[s];
    const char *base = (const char *)pa_tview_ptr(t);
    return (float)pa_cvt_load_f(base + off * (int64_t)pa_dtype_size(t->dtype), t->dtype);
}

bool nn_stream_out(int64_t bytes) {
#if defined(PA_HAVE_X86_KERNELS)
    return bytes >= ((int64_t)8 << 20);
#else
    (void)bytes;
    return false;
#endif
}

int64_t nn_grain(int64_t rlen) {
    const int64_t target = 65536;
    if (rlen <= 0) return target;
    return rlen >= target ? 1 : target / rlen;
}

float *nn_scratch(int count, int64_t len) {
    return (float *)pa_thread_scratch((size_t)count * (size_t)NN_SSTRIDE(len) * sizeof(float));
}

/* ---- empty-input fills ---- */

/* iv[0] = number of fills; iv[1 + 2k] = slot, dv[k] = value (k < 3) */
int nn_run_fill(const nn_plan *p) {
    for (int64_t k = 0; k < p->iv[0] && k < 3; k++) {
        const int s = (int)p->iv[1 + 2 * k];
        const pa_tview *v = &p->v[s];
        int64_t n = 1;
        for (int i = 0; i < v->ndim; i++) n *= v->dims[i];
        if (n == 0) continue;
        int64_t c[PA_MAX_DIMS] = {0}, off = 0;
        for (int64_t e = 0; e < n; e++) {
            nn_put1(p, s, off, p->dv[k]);
            for (int d = v->ndim - 1; d >= 0; d--) {
                off += v->strides[d];
                if (++c[d] < v->dims[d]) break;
                off -= c[d] * v->strides[d];
                c[d] = 0;
            }
        }
    }
    return ACLNN_SUCCESS;
}
