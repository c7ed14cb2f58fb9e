/* The matmul family's planner and run function (family "matmul" in the op
 * table), and the helpers its planners share (matmul_impl.h). */
#include <math.h>
#include <float.h>

#include "ops/core/pa_dtype.h"
#include "kernels/gemm/gemm_impl.h"
#include "ops/matmul/matmul_impl.h"
#include "runtime/pa_rt_base.h"

int pa_plan_matmul(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    switch (op->kernel) {
    case PA_MATMUL_MM:
    case PA_MATMUL_BATCH_MATMUL:
    case PA_MATMUL_MATMUL:
    case PA_MATMUL_MV:
    case PA_MATMUL_ADDMM:
    case PA_MATMUL_INPLACE_ADDMM:
    case PA_MATMUL_BADDBMM:
    case PA_MATMUL_INPLACE_BADDBMM: return mm_plan_dense(op, op->kernel, a, workspaceSize, executor);
    case PA_MATMUL_GER: return mm_plan_ger(op, a, workspaceSize, executor);
    case PA_MATMUL_WQBMM: return mm_plan_wqbmm(op, a, workspaceSize, executor);
    case PA_MATMUL_TRANS_WEIGHT: return mm_plan_trans_weight(op, a, workspaceSize, executor);
    case PA_MATMUL_WEIGHT_SIZE: return mm_weight_size(op, a);
    default:
        return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: internal error: %s is not a matmul-family operator",
                       op->ws_api, op->launch.name);
    }
}

static void mm_bind(pa_gemm_mat *m, const pa_tview *v) { m->p = v->base; }

int pa_run_matmul(const void *plan, void *workspace, uint64_t workspace_size) {
    const mm_plan *p = plan;
    switch (p->run) {
    case MM_RUN_NOTHING: return ACLNN_SUCCESS;
    case MM_RUN_GEMM: {
        pa_gemm_args g = p->g;
        mm_bind(&g.a, &p->v[MM_V_A]);
        mm_bind(&g.b, &p->v[MM_V_B]);
        if (p->used[MM_V_BIAS]) mm_bind(&g.bias, &p->v[MM_V_BIAS]);
        if (p->used[MM_V_SCALE]) mm_bind(&g.bq.scale, &p->v[MM_V_SCALE]);
        if (p->used[MM_V_OFFSET]) mm_bind(&g.bq.offset, &p->v[MM_V_OFFSET]);
        g.c.p = p->v[MM_V_C].base;
        pa_gemm(&g);
        return ACLNN_SUCCESS;
    }
    case MM_RUN_SCALE: return mm_run_scale(p);
    case MM_RUN_GER: return mm_run_ger(p);
    case MM_RUN_TRANS_NZ: return mm_run_trans_nz(p, workspace, workspace_size);
    default: return pa_fail(ACLNN_ERR_INNER, "%s: internal error: unknown plan %d", p->api, (int)p->run);
    }
}

/* ---- helpers ---- */

int mm_gdt(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT: return PA_GEMM_F32;
    case ACL_FLOAT16: return PA_GEMM_F16;
    case ACL_BF16: return PA_GEMM_BF16;
    case ACL_INT8: return PA_GEMM_S8;
    case ACL_INT4: return PA_GEMM_S4;
    default: return -1;
    }
}

bool mm_is_empty(const aclTensor *t) {
    for (int32_t i = 0; i < t->ndim; i++) {
        if (t->dims[i] == 0) return true;
    }
    return false;
}

const char *mm_shape(const aclTensor *t, char *buf, size_t cap) { return pa_shape_str(t->dims, t->ndim, buf, cap); }

void mm_plan_init(mm_plan *p, const pa_op *op, int run) {
    memset(p, 0, sizeof *p);
    p->run = run;
    p->api = op->launch.name;
    pa_gemm_init(&p->g);
}

void mm_plan_view(mm_plan *p, int slot, const aclTensor *t) {
    p->v[slot] = pa_tview_of(t);
    p->used[slot] = 1;
}

int mm_finish(const pa_op *op, const mm_plan *p, const int *in_slots, int n_in, const int *out_slots, int n_out,
              uint64_t ws, uint64_t *workspaceSize, aclOpExecutor **executor) {
    size_t in_off[PA_OP_MAX_VIEWS], out_off[PA_OP_MAX_VIEWS];
    for (int i = 0; i < n_in; i++) {
        in_off[i] = in_slots[i] < 0 ? SIZE_MAX : offsetof(mm_plan, v) + (size_t)in_slots[i] * sizeof(pa_tview);
    }
    for (int i = 0; i < n_out; i++) out_off[i] = offsetof(mm_plan, v) + (size_t)out_slots[i] * sizeof(pa_tview);
    return pa_op_executor(op, p, sizeof *p, in_off, n_in, out_off, n_out, ws, workspaceSize, executor);
}

void mm_operand(pa_gemm_mat *m, const pa_tview *v, int rdim, int cdim, int nb, const int64_t *batch, int own_nb) {
    (void)batch;
    m->dt = mm_gdt(v->dtype);
    m->off = v->offset;
    m->rs = rdim >= 0 ? v->strides[rdim] : 0;
    m->cs = cdim >= 0 ? v->strides[cdim] : 0;
    for (int d = 0; d < nb; d++) {
        const int od = d - (nb - own_nb);
        m->bs[d] = od >= 0 ? v->strides[od] : 0;
    }
}

void mm_output(pa_gemm_out *c, const pa_tview *v, int rdim, int cdim, int nb) {
    c->dt = mm_gdt(v->dtype);
    c->off = v->offset;
    c->rs = rdim >= 0 ? v->strides[rdim] : 0;
    c->cs = cdim >= 0 ? v->strides[cdim] : 0;
    for (int d = 0; d < nb; d++) c->bs[d] = v->strides[d];
}

int mm_nz_c0(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT: return 8;
    case ACL_INT8: return 32;
    case ACL_INT4: return 64;
    default: return 16;
    }
}

int mm_nz_operand(const char *api, const char *name, const aclTensor *t, const pa_tview *v, int nb,
                  const int64_t *batch, pa_gemm_mat *m) {
    (void)batch;
    const int nd = t->ndim;
    char s1[160], s2[160];
    if (nd < 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s in FRACTAL_NZ must have at least 2 dims, got %d", api, name,
                       nd);
    }
    const int64_t d0 = t->dims[nd - 2], d1 = t->dims[nd - 1], st0 = t->strides[nd - 2], st1 = t->strides[nd - 1];
    int trans;
    int64_t R, C;
    if ((d1 == 1 || st1 == 1) && (d0 == 1 || st0 == d1)) {
        trans = 0;
        R = d0;
        C = d1;
    } else if ((d0 == 1 || st0 == 1) && (d1 == 1 || st1 == d0)) {
        trans = 1;
        R = d1;
        C = d0;
    } else {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: %s is FRACTAL_NZ but its view (shape %s, strides %s) is not a dense matrix or the "
                       "transpose of one",
                       api, name, mm_shape(t, s1, sizeof s1), pa_shape_str(t->strides, t->ndim, s2, sizeof s2));
    }
    const int64_t c0 = mm_nz_c0(t->dtype);
    const int64_t r1 = (R + 15) / 16, c1 = (C + c0 - 1) / c0;
    int padded = 0;
    int64_t prow = R, per = R * C;
    const int sn = t->storage_ndim;
    if (sn >= 4 && t->storage_dims[sn - 1] == c0 && t->storage_dims[sn - 2] == 16 && t->storage_dims[sn - 3] == r1 &&
        t->storage_dims[sn - 4] == c1) {
        padded = 1;
        prow = r1 * 16;
        per = prow * c1 * c0;
    }
    /* the tensor's own batch dims: one NZ matrix after the other */
    int64_t count = 1;
    for (int d = 0; d < nd - 2; d++) count *= t->dims[d];
    if (v->offset + count * per > v->storage_elems) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: %s (FRACTAL_NZ, shape %s, offset %lld) needs %lld storage elements, the storage has %lld",
                       api, name, mm_shape(t, s1, sizeof s1), (long long)v->offset,
                       (long long)(v->offset + count * per), (long long)v->storage_elems);
    }
    m->dt = mm_gdt(t->dtype);
    m->nz = 1;
    m->off = v->offset;
    m->rs = m->cs = 0;
    m->nzl.trans = trans;
    m->nzl.c0 = (int32_t)c0;
    m->nzl.padded = padded;
    m->nzl.rows = R;
    m->nzl.cols = C;
    m->nzl.prow = prow;
    const int own = nd - 2;
    int64_t stride = per;
    int64_t own_bs[PA_MAX_DIMS];
    for (int d = own - 1; d >= 0; d--) {
        own_bs[d] = t->dims[d] == 1 ? 0 : stride;
        stride *= t->dims[d];
    }
    for (int d = 0; d < nb; d++) {
        const int od = d - (nb - own);
        m->bs[d] = od >= 0 ? own_bs[od] : 0;
    }
    return ACLNN_SUCCESS;
}

/* The vendor's (Atlas A2) promotion table: the dtype the cube computes in. */
static aclDataType mm_upper(aclDataType a, aclDataType b, int64_t cube) {
    const bool f32 = a == ACL_FLOAT || b == ACL_FLOAT;
    const bool bf = a == ACL_BF16 || b == ACL_BF16;
    const bool f16 = a == ACL_FLOAT16 || b == ACL_FLOAT16;
    if (a == ACL_BF16 && b == ACL_BF16) return ACL_BF16; /* USE_FP16 is ignored for bf16 x bf16 */
    if (cube == MM_USE_FP16) return ACL_FLOAT16;
    if (f32) return ACL_FLOAT;
    if (bf && f16) return ACL_FLOAT;
    return ACL_FLOAT16;
}

static int mm_round_of(aclDataType dt) {
    return dt == ACL_FLOAT16 ? PA_GEMM_F16 : dt == ACL_BF16 ? PA_GEMM_BF16 : PA_GEMM_F32;
}

int mm_rules(const char *api, aclDataType a, aclDataType b, aclDataType out, int64_t cube, bool addmm,
             pa_gemm_args *g) {
    if (cube < -1 || cube > MM_USE_FP32_ADD) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: cubeMathType must be 0 (KEEP_DTYPE), 1 (ALLOW_FP32_DOWN_PRECISION), 2 (USE_FP16), 3 "
                       "(USE_HF32) or 4 (USE_FP32_ADD), got %lld",
                       api, (long long)cube);
    }
    const aclDataType u = mm_upper(a, b, cube);
    g->in_round = u == ACL_FLOAT16 && (a != ACL_FLOAT16 || b != ACL_FLOAT16) ? PA_GEMM_F16 : PA_GEMM_F32;
    const bool low16 = (a == ACL_FLOAT16 && b == ACL_FLOAT16) || (a == ACL_BF16 && b == ACL_BF16);
    bool fp32_out = out == ACL_FLOAT && cube != MM_USE_FP16;
    if (addmm && low16 && (cube == MM_KEEP_DTYPE || cube == MM_USE_HF32 || cube == MM_USE_FP32_ADD || cube == -1)) {
        fp32_out = true; /* the vendor keeps Addmm's 16-bit product in fp32 (USE_FP32_ADD) */
    }
    g->mid_round = fp32_out ? PA_GEMM_F32 : mm_round_of(u);
    return ACLNN_SUCCESS;
}

/* ---- Addmm with alpha 0 or k 0: out = beta * self, broadcast ---- */

int mm_run_scale(const mm_plan *p) {
    const pa_tview *b = &p->v[MM_V_BIAS], *c = &p->v[MM_V_C];
    const pa_gemm_args *g = &p->g;
    const int64_t M = g->m, N = g->n;
    const int cdt = mm_gdt(c->dtype), bdt = mm_gdt(b->dtype);
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            const float s = gm_fval(bdt, b->base, g->bias.off + i * g->bias.rs + j * g->bias.cs);
            const float v = g->beta == 1.0f ? s : g->beta * s;
            const int64_t ci = g->c.off + i * g->c.rs + j * g->c.cs;
            if (cdt == PA_GEMM_F32) {
                ((float *)c->base)[ci] = v;
            } else {
                ((uint16_t *)c->base)[ci] = cdt == PA_GEMM_F16 ? pa_f32_to_f16(v) : pa_f32_to_bf16(v);
            }
        }
    }
    return ACLNN_SUCCESS;
}
