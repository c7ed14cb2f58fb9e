/* Ger, WeightQuantBatchMatmulV2, TransMatmulWeight and
 * CalculateMatmulWeightSizeV2 (matmul_impl.h). */
#include <stdlib.h>

#include "kernels/map/map_cvt.h"
#include "ops/core/pa_dtype.h"
#include "ops/matmul/matmul_impl.h"
#include "runtime/pa_rt_base.h"

/* ---- Ger: out = self (x) vec2 in the promoted dtype, cast to out ---- */

int mm_plan_ger(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *self = a[0].p, *vec2 = a[1].p, *out = a[2].p;
    char s1[160];
    const aclDataType pdt = pa_dt_promote(self->dtype, vec2->dtype);
    if (pdt == ACL_DT_UNDEFINED) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self dtype %s and vec2 dtype %s do not promote", api,
                       pa_dtype_name(self->dtype), pa_dtype_name(vec2->dtype));
    }
    if (!pa_dt_can_cast(pdt, out->dtype)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the result dtype %s cannot be cast to out's dtype %s", api,
                       pa_dtype_name(pdt), pa_dtype_name(out->dtype));
    }
    if (self->ndim != 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self must be 1-D, got %d-D (shape %s)", api, (int)self->ndim,
                       mm_shape(self, s1, sizeof s1));
    }
    if (vec2->ndim != 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: vec2 must be 1-D, got %d-D (shape %s)", api, (int)vec2->ndim,
                       mm_shape(vec2, s1, sizeof s1));
    }
    if (out->ndim != 2 || out->dims[0] != self->dims[0] || out->dims[1] != vec2->dims[0]) {
        const int64_t want[2] = {self->dims[0], vec2->dims[0]};
        char s2[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: out shape must be %s, got %s", api,
                       pa_shape_str(want, 2, s1, sizeof s1), mm_shape(out, s2, sizeof s2));
    }
    mm_plan p;
    mm_plan_init(&p, op, mm_is_empty(self) || mm_is_empty(vec2) ? MM_RUN_NOTHING : MM_RUN_GER);
    p.pdt = pdt;
    mm_plan_view(&p, MM_V_A, self);
    mm_plan_view(&p, MM_V_B, vec2);
    mm_plan_view(&p, MM_V_C, out);
    const int ins[] = {MM_V_A, MM_V_B}, outs[] = {MM_V_C};
    return mm_finish(op, &p, ins, 2, outs, 1, 0, ws, ex);
}

/* x rounded to the float dtype dt, as a double */
static double mm_round_to(double x, aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT: return (float)x;
    case ACL_FLOAT16: return pa_f16_to_f32(pa_f32_to_f16(pa_cvt_f32_odd(x)));
    case ACL_BF16: return pa_bf16_to_f32(pa_f32_to_bf16(pa_cvt_f32_odd(x)));
    default: return x;
    }
}

int mm_run_ger(const mm_plan *p) {
    const pa_tview *va = &p->v[MM_V_A], *vb = &p->v[MM_V_B], *vc = &p->v[MM_V_C];
    const aclDataType pdt = (aclDataType)p->pdt;
    const size_t ea = pa_cvt_size(va->dtype), eb = pa_cvt_size(vb->dtype), ec = pa_cvt_size(vc->dtype);
    const char *pa_ = (const char *)va->base + va->offset * (int64_t)ea;
    const char *pb = (const char *)vb->base + vb->offset * (int64_t)eb;
    char *pc = (char *)vc->base + vc->offset * (int64_t)ec;
    const int64_t n1 = va->dims[0], n2 = vb->dims[0];
    for (int64_t i = 0; i < n1; i++) {
        const char *x = pa_ + i * va->strides[0] * (int64_t)ea;
        for (int64_t j = 0; j < n2; j++) {
            const char *y = pb + j * vb->strides[0] * (int64_t)eb;
            char *o = pc + (i * vc->strides[0] + j * vc->strides[1]) * (int64_t)ec;
            if (pdt == ACL_BOOL) {
                pa_cvt_store_i(o, vc->dtype, pa_cvt_load_i(x, va->dtype) != 0 && pa_cvt_load_i(y, vb->dtype) != 0);
            } else if (pa_cvt_is_float(pdt)) {
                /* both operands exact in double, the product rounded once to pdt */
                const double xv = mm_round_to(pa_cvt_load_f(x, va->dtype), pdt);
                const double yv = mm_round_to(pa_cvt_load_f(y, vb->dtype), pdt);
                const double r = pdt == ACL_DOUBLE ? xv * yv : mm_round_to(xv * yv, pdt);
                pa_cvt_store_f(o, vc->dtype, r);
            } else {
                /* integers: the product wraps to pdt's width, then converts */
                const uint64_t u = (uint64_t)pa_cvt_load_i(x, va->dtype) * (uint64_t)pa_cvt_load_i(y, vb->dtype);
                char tmp[8];
                pa_cvt_store_i(tmp, pdt, (int64_t)u);
                pa_cvt_store_i(o, vc->dtype, pa_cvt_load_i(tmp, pdt));
            }
        }
    }
    return ACLNN_SUCCESS;
}

/* ---- WeightQuantBatchMatmulV2 ---- */

/* An INT4 view (nibble units; the shared checks leave it to the planner):
 * non-negative strides and its last element inside the storage. */
static int mm_check_int4(const char *api, const char *name, const aclTensor *t) {
    int64_t storage = 1, last = t->offset;
    bool empty = false, bad = t->offset < 0;
    char s1[160], s2[160];
    for (int32_t i = 0; i < t->storage_ndim; i++) {
        if (t->storage_dims[i] < 0 || (t->storage_dims[i] > 0 && storage > PA_MAX_STORAGE_BYTES / t->storage_dims[i])) {
            bad = true;
            break;
        }
        storage *= t->storage_dims[i];
    }
    for (int32_t i = 0; i < t->ndim && !bad; i++) {
        if (t->dims[i] == 0) empty = true;
        if (t->dims[i] <= 1) continue;
        if (t->strides[i] < 0 || t->strides[i] > PA_MAX_STORAGE_BYTES / (t->dims[i] - 1)) {
            bad = true;
        } else {
            last += (t->dims[i] - 1) * t->strides[i];
            if (last > PA_MAX_STORAGE_BYTES) bad = true;
        }
    }
    /* as for every view (pa_tensor_check_view): a storage counted from the view's offset is accepted */
    if (bad || (empty ? t->offset > storage : last - t->offset >= storage)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: %s (INT4, shape %s, strides %s, offset %lld nibbles) is not inside its storage of %lld "
                       "nibbles",
                       api, name, mm_shape(t, s1, sizeof s1), pa_shape_str(t->strides, t->ndim, s2, sizeof s2),
                       (long long)t->offset, (long long)storage);
    }
    return ACLNN_SUCCESS;
}

int mm_plan_wqbmm(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const aclTensor *x = a[0].p, *w = a[1].p, *scale = a[2].p, *offset = a[3].p, *qscale = a[4].p,
                    *qoffset = a[5].p, *bias = a[6].p, *y = a[8].p;
    const int64_t group = a[7].i;
    char s1[160], s2[160];
    int rc;
    if (w->dtype == ACL_INT32) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: weight dtype INT32 (int4 packed 8 to a word) is accepted by CANN but not implemented by "
                       "pyaclnn; pass ACL_INT4",
                       api);
    }
    if (w->dtype == ACL_INT4) {
        rc = mm_check_int4(api, "weight", w);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    if (qscale != NULL || qoffset != NULL) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: quantScaleOptional / quantOffsetOptional (an int8 y) are accepted by CANN but not "
                       "implemented by pyaclnn",
                       api);
    }
    if (scale->dtype != ACL_FLOAT16 && scale->dtype != ACL_BF16) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: antiquantScale dtype %s (the fixpipe form) is accepted by CANN but not implemented by "
                       "pyaclnn; pass it in x's dtype",
                       api, pa_dtype_name(scale->dtype));
    }
    if (scale->dtype != x->dtype) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: antiquantScale dtype must be x's dtype (%s), got %s", api,
                       pa_dtype_name(x->dtype), pa_dtype_name(scale->dtype));
    }
    if (offset != NULL && offset->dtype != scale->dtype) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: antiquantOffsetOptional dtype must be antiquantScale's (%s), got %s",
                       api, pa_dtype_name(scale->dtype), pa_dtype_name(offset->dtype));
    }
    if (y->dtype != x->dtype) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: y dtype must be x's dtype (%s) without quantScaleOptional, got %s",
                       api, pa_dtype_name(x->dtype), pa_dtype_name(y->dtype));
    }
    if (bias != NULL && bias->dtype != x->dtype && bias->dtype != ACL_FLOAT) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: biasOptional dtype must be %s or FLOAT, got %s", api,
                       pa_dtype_name(x->dtype), pa_dtype_name(bias->dtype));
    }
    /* dims (Atlas A2: no batch) */
    const aclTensor *two[] = {x, w, y};
    const char *two_names[] = {"x", "weight", "y"};
    for (int i = 0; i < 3; i++) {
        if (two[i]->ndim != 2) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be 2-D, got %d-D (shape %s)", api, two_names[i],
                           (int)two[i]->ndim, mm_shape(two[i], s1, sizeof s1));
        }
    }
    if (scale->ndim < 1 || scale->ndim > 2 || (offset != NULL && (offset->ndim < 1 || offset->ndim > 2)) ||
        (bias != NULL && (bias->ndim < 1 || bias->ndim > 2))) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: antiquantScale, antiquantOffsetOptional and biasOptional must be "
                       "1-D or 2-D", api);
    }
    const int64_t M = x->dims[0], K = x->dims[1], N = w->dims[1];
    if (w->dims[0] != K) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: x's k (%lld) and weight's k (%lld) differ", api, (long long)K,
                       (long long)w->dims[0]);
    }
    if (M < 1 || K < 1 || N < 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: m, k and n must be at least 1, got m %lld, k %lld, n %lld", api,
                       (long long)M, (long long)K, (long long)N);
    }
    if (y->dims[0] != M || y->dims[1] != N) {
        const int64_t want[2] = {M, N};
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: y shape must be %s, got %s", api,
                       pa_shape_str(want, 2, s1, sizeof s1), mm_shape(y, s2, sizeof s2));
    }
    if (group != 0) {
        if (group < 32 || group % 32 != 0 || group + 1 > K) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: antiquantGroupSize must be 0 or a multiple of 32 in [32, k-1] (k = %lld), got %lld",
                           api, (long long)K, (long long)group);
        }
    }
    /* the weight's orientation: int4 needs an even contiguous dim */
    const bool wtrans = w->format != ACL_FORMAT_FRACTAL_NZ ? (w->strides[0] == 1 && w->strides[1] == K) : false;
    if (w->dtype == ACL_INT4 && w->format != ACL_FORMAT_FRACTAL_NZ) {
        if ((wtrans && (K & 1)) || (!wtrans && (N & 1))) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: an INT4 weight needs an even %s (got %lld)", api,
                           wtrans ? "k" : "n", (long long)(wtrans ? K : N));
        }
    }
    /* scale / offset shapes: (1), (n), (1, n) / (1, 1) per tensor or channel; (ceil(k/g), n) per group */
    const int64_t groups = group > 0 ? (K + group - 1) / group : 1;
    const int64_t sn = scale->dims[scale->ndim - 1], sk = scale->ndim == 2 ? scale->dims[0] : 1;
    bool ok;
    if (group > 0) {
        ok = scale->ndim == 2 && sk == groups && sn == N;
    } else {
        ok = sk == 1 && (sn == 1 || sn == N);
    }
    if (!ok) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: antiquantScale shape must be %s, got %s", api,
                       group > 0 ? "[ceil(k / antiquantGroupSize), n]" : "[1], [n], [1, 1] or [1, n]",
                       mm_shape(scale, s1, sizeof s1));
    }
    if (offset != NULL) {
        bool same = offset->ndim == scale->ndim;
        for (int i = 0; same && i < scale->ndim; i++) same = offset->dims[i] == scale->dims[i];
        if (!same) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: antiquantOffsetOptional shape must be antiquantScale's (%s), "
                           "got %s", api, mm_shape(scale, s1, sizeof s1), mm_shape(offset, s2, sizeof s2));
        }
    }
    if (bias != NULL) {
        const int64_t bn = bias->dims[bias->ndim - 1];
        if (bn != N || (bias->ndim == 2 && bias->dims[0] != 1)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: biasOptional shape must be [%lld] or [1, %lld], got %s", api,
                           (long long)N, (long long)N, mm_shape(bias, s1, sizeof s1));
        }
    }

    mm_plan p;
    mm_plan_init(&p, op, MM_RUN_GEMM);
    pa_gemm_args *g = &p.g;
    g->m = M;
    g->n = N;
    g->k = K;
    mm_plan_view(&p, MM_V_A, x);
    mm_plan_view(&p, MM_V_B, w);
    mm_plan_view(&p, MM_V_C, y);
    mm_plan_view(&p, MM_V_SCALE, scale);
    mm_operand(&g->a, &p.v[MM_V_A], 0, 1, 0, NULL, 0);
    if (w->format == ACL_FORMAT_FRACTAL_NZ) {
        rc = mm_nz_operand(api, "weight", w, &p.v[MM_V_B], 0, NULL, &g->b);
        if (rc != ACLNN_SUCCESS) return rc;
    } else {
        /* the raw strides: pa_tview_of zeroes size-1 dims, INT4 included */
        g->b.dt = mm_gdt(w->dtype);
        g->b.off = w->offset;
        g->b.rs = w->dims[0] > 1 ? w->strides[0] : 0;
        g->b.cs = w->dims[1] > 1 ? w->strides[1] : 0;
    }
    mm_output(&g->c, &p.v[MM_V_C], 0, 1, 0);
    /* scale(g, j): row = group, column = n */
    const pa_tview *sv = &p.v[MM_V_SCALE];
    g->bq.scale.dt = mm_gdt(scale->dtype);
    g->bq.scale.off = sv->offset;
    g->bq.scale.rs = scale->ndim == 2 ? sv->strides[0] : 0;
    g->bq.scale.cs = sv->strides[scale->ndim - 1];
    g->bq.scale.p = (const void *)1;
    g->bq.group = group;
    g->bq.round_dt = mm_gdt(x->dtype);
    int nin = 3;
    int ins[6] = {MM_V_A, MM_V_B, MM_V_SCALE};
    if (offset != NULL) {
        mm_plan_view(&p, MM_V_OFFSET, offset);
        const pa_tview *ov = &p.v[MM_V_OFFSET];
        g->bq.offset.dt = mm_gdt(offset->dtype);
        g->bq.offset.off = ov->offset;
        g->bq.offset.rs = offset->ndim == 2 ? ov->strides[0] : 0;
        g->bq.offset.cs = ov->strides[offset->ndim - 1];
        g->bq.offset.p = (const void *)1;
    }
    ins[nin++] = offset != NULL ? MM_V_OFFSET : -1;
    ins[nin++] = -1; /* quantScale */
    ins[nin++] = -1; /* quantOffset */
    if (bias != NULL) {
        mm_plan_view(&p, MM_V_BIAS, bias);
        const pa_tview *bv = &p.v[MM_V_BIAS];
        g->bias.dt = mm_gdt(bias->dtype);
        g->bias.off = bv->offset;
        g->bias.rs = 0;
        g->bias.cs = bv->strides[bias->ndim - 1];
        g->bias.p = (const void *)1;
    }
    int allins[7];
    for (int i = 0; i < nin; i++) allins[i] = ins[i];
    allins[nin] = bias != NULL ? MM_V_BIAS : -1;
    const int outs[] = {MM_V_C};
    return mm_finish(op, &p, allins, nin + 1, outs, 1, 0, ws, ex);
}

/* ---- TransMatmulWeight: the weight rewritten in place to pyaclnn's NZ ---- */

int mm_plan_trans_weight(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    aclTensor *t = (aclTensor *)a[0].p;
    char s1[160], s2[160];
    if (t->format != ACL_FORMAT_ND) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: mmWeightRef format must be ND, got %s", api,
                       pa_format_name(t->format));
    }
    if (t->ndim < 2 || t->ndim > 6) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: mmWeightRef must have 2 to 6 dims, got %d (shape %s)", api,
                       (int)t->ndim, mm_shape(t, s1, sizeof s1));
    }
    mm_plan p;
    mm_plan_init(&p, op, MM_RUN_TRANS_NZ);
    mm_plan_view(&p, MM_V_C, t);
    if (mm_is_empty(t)) {
        p.run = MM_RUN_NOTHING;
        const int outs[] = {MM_V_C};
        return mm_finish(op, &p, outs, 1, outs, 1, 0, ws, ex);
    }
    /* the matrices as stored: dense in the last two dims (either orientation), one after the other */
    const int nd = t->ndim;
    const int64_t d0 = t->dims[nd - 2], d1 = t->dims[nd - 1], st0 = t->strides[nd - 2], st1 = t->strides[nd - 1];
    int trans;
    if ((d1 == 1 || st1 == 1) && (d0 == 1 || st0 == d1)) {
        trans = 0;
    } else if ((d0 == 1 || st0 == 1) && (d1 == 1 || st1 == d0)) {
        trans = 1;
    } else {
        trans = -1;
    }
    int64_t per = d0 * d1, count = 1;
    bool dense = trans >= 0;
    for (int d = nd - 3; d >= 0 && dense; d--) {
        if (t->dims[d] > 1 && t->strides[d] != per * count) dense = false;
        count *= t->dims[d];
    }
    if (!dense) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: mmWeightRef (shape %s, strides %s) must be a dense weight (each matrix contiguous or "
                       "transposed, one after the other)",
                       api, mm_shape(t, s1, sizeof s1), pa_shape_str(t->strides, t->ndim, s2, sizeof s2));
    }
    p.nzl.trans = trans;
    p.nzl.c0 = mm_nz_c0(t->dtype);
    p.nzl.padded = 0;
    p.nzl.rows = trans ? d1 : d0;
    p.nzl.cols = trans ? d0 : d1;
    p.nzl.prow = p.nzl.rows;
    p.nz_batches = count;
    /* as the vendor does at this point: the tensor is now FRACTAL_NZ */
    t->format = ACL_FORMAT_FRACTAL_NZ;
    const uint64_t bytes = (uint64_t)(per * count) * pa_dtype_size(t->dtype);
    const int outs[] = {MM_V_C};
    return mm_finish(op, &p, outs, 1, outs, 1, bytes, ws, ex);
}

int mm_run_trans_nz(const mm_plan *p, void *workspace, uint64_t workspace_size) {
    const pa_tview *v = &p->v[MM_V_C];
    const size_t es = pa_dtype_size(v->dtype);
    const int64_t R = p->nzl.rows, C = p->nzl.cols, c0 = p->nzl.c0, per = R * C;
    if (workspace_size < (uint64_t)(per * p->nz_batches) * es) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the workspace (%llu bytes) is smaller than the %llu it needs",
                       p->api, (unsigned long long)workspace_size,
                       (unsigned long long)((uint64_t)(per * p->nz_batches) * es));
    }
    char *base = (char *)v->base + v->offset * (int64_t)es;
    memcpy(workspace, base, (size_t)(per * p->nz_batches) * es);
    const char *src = workspace;
    for (int64_t b = 0; b < p->nz_batches; b++) {
        const char *s = src + b * per * (int64_t)es;
        char *d = base + b * per * (int64_t)es;
        /* source: X(r, c) at r*C + c (the stored orientation) */
        for (int64_t q = 0; q * c0 < C; q++) {
            const int64_t w = C - q * c0 < c0 ? C - q * c0 : c0;
            char *panel = d + q * R * c0 * (int64_t)es;
            for (int64_t r = 0; r < R; r++) memcpy(panel + r * w * (int64_t)es, s + (r * C + q * c0) * (int64_t)es,
                                                   (size_t)w * es);
        }
    }
    return ACLNN_SUCCESS;
}

/* ---- CalculateMatmulWeightSizeV2 ---- */

int mm_weight_size(const pa_op *op, const pa_arg *a) {
    const char *api = op->ws_api;
    const aclIntArray *shape = a[0].p;
    const aclDataType dt = (aclDataType)a[1].i;
    uint64_t *outp = (uint64_t *)a[2].p;
    const uint64_t n = shape->size;
    if (n < 2 || n > 6) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: tensorShape must have 2 to 6 dims, got %llu", api,
                       (unsigned long long)n);
    }
    uint64_t size = 1;
    for (uint64_t i = 0; i < n; i++) {
        int64_t d = shape->values[i];
        if (d <= 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: tensorShape dims must be positive, got %lld at %llu", api,
                           (long long)d, (unsigned long long)i);
        }
        if (d > INT64_MAX / 2) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: tensorShape dim %llu is %lld, must be below 2^62", api,
                           (unsigned long long)i, (long long)d);
        }
        if (i + 2 >= n) {
            const int64_t align = (dt == ACL_FLOAT16 || dt == ACL_BF16 || i == n - 2) ? 16 : 32;
            d = (d + align - 1) / align * align;
        }
        if (size > UINT64_MAX / (uint64_t)d) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the weight size overflows", api);
        }
        size *= (uint64_t)d;
    }
    *outp = size;
    return ACLNN_SUCCESS;
}
