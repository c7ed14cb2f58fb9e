/* The attention family's planner and run function. The checks follow the
 * vendor's documentation of aclnnFlashAttentionScore(Grad) and
 * aclnnFusedInferAttentionScoreV2 (layouts, GQA, sparse modes, masks); the
 * numbers are native/kernels/attention/attn.h's. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "cpu/pa_cpu.h"
#include "kernels/attention/attn.h"
#include "kernels/gemm/gemm.h"
#include "ops/attention/pa_attention.h"

#define NV 24 /* views: the op's tensors (and FIA's first key / value) */
#define BAND_INF ((int64_t)1 << 62)

/* Where b, n, s, d of a tensor are: dims (-1: absent, stride 0); hsplit: n
 * and d share dim[3] (an H = N * D axis, d fastest, hd elements per head). */
typedef struct amap {
    int8_t view; /* -1: absent */
    int8_t dim[4];
    int8_t hsplit;
    int64_t hd;
} amap;

enum { R_Q, R_K, R_V, R_PSE, R_MASK, R_O, R_MAX, R_SUM, R_LSE, R_DY, R_OIN, R_DQ, R_DK, R_DV, R_N };

typedef struct at_plan {
    int32_t kernel;
    const char *api;
    pa_tview v[NV];
    amap map[R_N];
    int64_t B, N, Nkv, Sq, Skv, Dk, Dv;
    int32_t pse_mode;
    int64_t band_lo, band_hi;
    float scale, rkeep;
    int8_t drop_view; /* -1: no dropout */
    int64_t stat_rep;
    uint64_t ws;
} at_plan;

typedef struct call {
    const pa_op *op;
    const pa_arg *a;
    const char *api;
} call;

static const void *ptr(const call *c, const char *name) {
    const int i = pa_op_param(c->op, name);
    return i >= 0 ? c->a[i].p : NULL;
}
static int64_t num_i(const call *c, const char *name) { return c->a[pa_op_param(c->op, name)].i; }
static double num_f(const call *c, const char *name) { return c->a[pa_op_param(c->op, name)].f; }
static bool num_b(const call *c, const char *name) { return c->a[pa_op_param(c->op, name)].b; }

static bool empty_t(const aclTensor *t) { return t == NULL || pa_tensor_numel(t) == 0; }

static int fail_shape(const call *c, const char *name, const aclTensor *t, const char *rule) {
    char s[160];
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s %s", c->api, name,
                   pa_shape_str(t->dims, t->ndim, s, sizeof s), rule);
}

static int need_shape(const call *c, const char *name, const aclTensor *t, int nd, const int64_t *dims) {
    bool ok = t->ndim == nd;
    for (int i = 0; ok && i < nd; i++) ok = t->dims[i] == dims[i];
    if (ok) return 0;
    char s1[160], s2[160];
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape must be %s, got %s", c->api, name,
                   pa_shape_str(dims, nd, s1, sizeof s1), pa_shape_str(t->dims, t->ndim, s2, sizeof s2));
}

static int same_dtype(const call *c, const char *name, const aclTensor *t, const char *rn, const aclTensor *r) {
    if (t->dtype == r->dtype) return 0;
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be the dtype of %s (%s)", c->api, name,
                   pa_dtype_name(t->dtype), rn, pa_dtype_name(r->dtype));
}

static int32_t gemm_dt(aclDataType dt) {
    return dt == ACL_FLOAT16 ? PA_GEMM_F16 : dt == ACL_BF16 ? PA_GEMM_BF16 : PA_GEMM_F32;
}

/* ---- layouts ---- */

enum { L_BSH, L_SBH, L_BSND, L_BNSD };

static int parse_layout(const call *c, const char *s, bool sbh_ok, int *out) {
    static const char *const names[] = {"BSH", "SBH", "BSND", "BNSD"};
    if (s != NULL) {
        for (int k = 0; k < 4; k++) {
            if (k == L_SBH && !sbh_ok) continue;
            if (strcmp(s, names[k]) == 0) {
                *out = k;
                return 0;
            }
        }
    }
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: inputLayout must be %s, got \"%s\"", c->api,
                   sbh_ok ? "BSH, SBH, BSND or BNSD" : "BSH, BSND or BNSD", s ? s : "(null)");
}

/* The (B, N, S, D) of tensor t in layout L with n heads (n <= 0: derived
 * from d), and its map. */
static int decode(const call *c, const char *name, const aclTensor *t, int L, int64_t n, int64_t d, int64_t *B,
                  int64_t *N, int64_t *S, int64_t *D, amap *m) {
    const int rank = (L == L_BSH || L == L_SBH) ? 3 : 4;
    if (t->ndim != rank) {
        char s[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be %d-D for inputLayout %s, got shape %s", c->api,
                       name, rank, L == L_BSH ? "BSH" : L == L_SBH ? "SBH" : L == L_BSND ? "BSND" : "BNSD",
                       pa_shape_str(t->dims, t->ndim, s, sizeof s));
    }
    m->hsplit = 0;
    m->hd = 0;
    switch (L) {
    case L_BNSD: m->dim[0] = 0, m->dim[1] = 1, m->dim[2] = 2, m->dim[3] = 3; break;
    case L_BSND: m->dim[0] = 0, m->dim[1] = 2, m->dim[2] = 1, m->dim[3] = 3; break;
    case L_BSH: m->dim[0] = 0, m->dim[1] = -1, m->dim[2] = 1, m->dim[3] = 2; break;
    default: m->dim[0] = 1, m->dim[1] = -1, m->dim[2] = 0, m->dim[3] = 2; break;
    }
    *B = t->dims[m->dim[0]];
    *S = t->dims[m->dim[2]];
    if (rank == 4) {
        *N = t->dims[m->dim[1]];
        *D = t->dims[m->dim[3]];
        return 0;
    }
    const int64_t H = t->dims[2];
    if (n > 0) {
        if (H % n != 0 || H == 0) return fail_shape(c, name, t, "has an H that is not a multiple of the heads");
        *N = n, *D = H / n;
    } else {
        if (d <= 0 || H % d != 0 || H == 0) return fail_shape(c, name, t, "has an H that is not a multiple of D");
        *N = H / d, *D = d;
    }
    m->hsplit = 1;
    m->hd = *D;
    return 0;
}

/* A [.., Sq, Skv]-shaped operand (pse, mask) of rank 2..4 whose leading dims
 * broadcast: dims given as (b, n, s, k) sizes with `want` allowed values. */
static int map_bnss(const call *c, const char *name, const aclTensor *t, int64_t B, int64_t N, int64_t Sq,
                    int64_t Skv, bool allow_s1, bool allow_n1, amap *m, int min_rank) {
    const int r = t->ndim;
    if (r < min_rank || r > 4) return fail_shape(c, name, t, "has an unsupported rank");
    const int64_t full[4] = {B, N, Sq, Skv};
    m->hsplit = 0;
    for (int k = 0; k < 4; k++) m->dim[k] = -1;
    for (int k = 0; k < r; k++) {
        const int slot = 4 - r + k;
        const int64_t dsz = t->dims[k];
        bool ok = dsz == full[slot];
        if (!ok && dsz == 1) ok = slot == 0 || (slot == 1 && allow_n1) || (slot == 2 && allow_s1);
        if (!ok) {
            char s1[160], s2[160];
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s does not broadcast to [B,N,Sq,Skv] = %s",
                           c->api, name, pa_shape_str(t->dims, r, s1, sizeof s1),
                           pa_shape_str(full, 4, s2, sizeof s2));
        }
        m->dim[slot] = (int8_t)k;
    }
    return 0;
}

static pa_attn_tensor at_of(const at_plan *p, int role) {
    pa_attn_tensor t;
    memset(&t, 0, sizeof t);
    const amap *m = &p->map[role];
    if (m->view < 0) return t;
    const pa_tview *v = &p->v[m->view];
    t.p = v->base;
    t.dt = gemm_dt(v->dtype);
    t.off = v->offset;
    int64_t s[4];
    for (int k = 0; k < 4; k++) s[k] = m->dim[k] >= 0 ? v->strides[m->dim[k]] : 0;
    if (m->hsplit) {
        s[1] = v->strides[m->dim[3]] * m->hd;
    }
    t.sb = s[0], t.sn = s[1], t.ss = s[2], t.sd = s[3];
    return t;
}

/* ---- the executor ---- */

static int8_t add_view(at_plan *p, int *nv, const aclTensor *t) {
    p->v[*nv] = pa_tview_of(t);
    return (int8_t)(*nv)++;
}

static int make_executor(const call *c, at_plan *p, uint64_t *workspaceSize, aclOpExecutor **executor) {
    size_t in_off[NV], out_off[NV];
    int n_in = 0, n_out = 0;
    for (int r = 0; r < R_N; r++) {
        if (p->map[r].view < 0) continue;
        const size_t off = offsetof(at_plan, v) + (size_t)p->map[r].view * sizeof(pa_tview);
        const bool out = r == R_O || r == R_LSE || r == R_DQ || r == R_DK || r == R_DV ||
                         ((r == R_MAX || r == R_SUM) && p->kernel == PA_ATTENTION_FA_FWD);
        if (out) out_off[n_out++] = off;
        else in_off[n_in++] = off;
    }
    if (p->drop_view >= 0) in_off[n_in++] = offsetof(at_plan, v) + (size_t)p->drop_view * sizeof(pa_tview);
    return pa_op_executor(c->op, p, sizeof *p, in_off, n_in, out_off, n_out, p->ws, workspaceSize, executor);
}

/* ---- sparse modes ---- */

static int band_of(const call *c, int64_t mode, bool has_mask, int64_t pre, int64_t next, int64_t Sq, int64_t Skv,
                   int64_t *lo, int64_t *hi) {
    *lo = -BAND_INF, *hi = BAND_INF;
    if (mode < 0 || mode > 6) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: sparseMode must be in [0, 6], got %lld", c->api,
                       (long long)mode);
    }
    if (mode == 5 || mode == 6) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: sparseMode %lld (prefix) is not supported by pyaclnn", c->api,
                       (long long)mode);
    }
    if (!has_mask) return 0; /* no mask: the whole matrix, whatever the mode */
    const int64_t cap = (int64_t)1 << 40;
    if (pre > cap) pre = cap;
    if (pre < -cap) pre = -cap;
    if (next > cap) next = cap;
    if (next < -cap) next = -cap;
    switch (mode) {
    case 0:
        *lo = -pre, *hi = next;
        break;
    case 2: *hi = 0; break;
    case 3: *hi = Skv - Sq; break;
    case 4:
        *lo = -pre + (Skv - Sq), *hi = next + (Skv - Sq);
        break;
    default: break;
    }
    if (*lo > *hi) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: preTokens %lld and nextTokens %lld leave no key to attend to (the band is empty)", c->api,
                       (long long)pre, (long long)next);
    }
    return 0;
}

/* ---- FlashAttentionScore / Grad ---- */

static int plan_fa(const call *c, bool grad, uint64_t *workspaceSize, aclOpExecutor **executor) {
    at_plan P;
    memset(&P, 0, sizeof P);
    at_plan *p = &P;
    p->kernel = grad ? PA_ATTENTION_FA_BWD : PA_ATTENTION_FA_FWD;
    p->api = c->op->launch.name;
    for (int r = 0; r < R_N; r++) p->map[r].view = -1;
    p->drop_view = -1;
    const aclTensor *q = ptr(c, "query"), *k = ptr(c, grad ? "keyIn" : "key"), *v = ptr(c, "value");
    const aclTensor *pse = ptr(c, grad ? "pseShiftOptional" : "realShiftOptional");
    const aclTensor *drop = ptr(c, "dropMaskOptional"), *mask = ptr(c, "attenMaskOptional");
    const aclIntArray *prefix = ptr(c, "prefixOptional");
    const double scale = num_f(c, "scaleValue"), keep = num_f(c, "keepProb");
    const int64_t pre = num_i(c, "preTokens"), next = num_i(c, "nextTokens"), heads = num_i(c, "headNum");
    const char *layout = ptr(c, "inputLayout");
    const int64_t inner = num_i(c, "innerPrecise"), mode = num_i(c, "sparseMode");
    int L = 0, rc;
    if ((rc = parse_layout(c, layout, true, &L))) return rc;
    if ((rc = same_dtype(c, grad ? "keyIn" : "key", k, "query", q))) return rc;
    if ((rc = same_dtype(c, "value", v, "query", q))) return rc;
    if (heads < 1 || heads > 256) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: headNum must be in [1, 256], got %lld", c->api,
                       (long long)heads);
    }
    if (inner < 0 || inner > 3) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: innerPrecise must be in [0, 3], got %lld", c->api,
                       (long long)inner);
    }
    if (!(keep > 0.0 && keep <= 1.0)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: keepProb must be in (0, 1], got %g", c->api, keep);
    }
    (void)prefix; /* only the prefix modes (5, 6, refused) read it */
    int64_t B, N, Sq, D, Bk, Nkv, Skv, Dk, Bv, Nv, Sv, Dv;
    amap mq, mk, mv;
    if ((rc = decode(c, "query", q, L, heads, 0, &B, &N, &Sq, &D, &mq))) return rc;
    if (N != heads) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: query has %lld heads but headNum is %lld", c->api,
                       (long long)N, (long long)heads);
    }
    if ((rc = decode(c, grad ? "keyIn" : "key", k, L, 0, D, &Bk, &Nkv, &Skv, &Dk, &mk))) return rc;
    if ((rc = decode(c, "value", v, L, Nkv, 0, &Bv, &Nv, &Sv, &Dv, &mv))) return rc;
    if (Bk != B || Bv != B) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: query, key and value must have the same B (%lld, %lld, %lld)",
                       c->api, (long long)B, (long long)Bk, (long long)Bv);
    }
    if (Dk != D || Dv > Dk || Dv < 1 || Nv != Nkv || Sv != Skv) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: key must have query's D (%lld, got %lld), value key's N and S and a D of at most key's "
                       "(got N %lld / %lld, S %lld / %lld, D %lld)",
                       c->api, (long long)D, (long long)Dk, (long long)Nv, (long long)Nkv, (long long)Sv,
                       (long long)Skv, (long long)Dv);
    }
    if (Nkv < 1 || N % Nkv != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: query's heads (%lld) must be a multiple of key's (%lld)", c->api,
                       (long long)N, (long long)Nkv);
    }
    if (D < 1 || D > 768) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: D must be in [1, 768], got %lld", c->api, (long long)D);
    }
    int nv = 0;
    p->B = B, p->N = N, p->Nkv = Nkv, p->Sq = Sq, p->Skv = Skv, p->Dk = Dk, p->Dv = Dv;
    mq.view = add_view(p, &nv, q);
    mk.view = add_view(p, &nv, k);
    mv.view = add_view(p, &nv, v);
    p->map[R_Q] = mq, p->map[R_K] = mk, p->map[R_V] = mv;
    /* the output shape: query's with value's D */
    int64_t odims[4];
    for (int i = 0; i < q->ndim; i++) odims[i] = q->dims[i];
    odims[q->ndim - 1] = q->ndim == 3 ? N * Dv : Dv;
    if (!empty_t(pse)) {
        if ((rc = same_dtype(c, grad ? "pseShiftOptional" : "realShiftOptional", pse, "query", q))) return rc;
        amap m;
        if ((rc = map_bnss(c, grad ? "pseShiftOptional" : "realShiftOptional", pse, B, N, Sq, Skv, true, false, &m,
                           4)))
            return rc;
        m.view = add_view(p, &nv, pse);
        p->map[R_PSE] = m;
        p->pse_mode = PA_ATTN_PSE_INNER;
    }
    const bool has_mask = !empty_t(mask);
    if ((rc = band_of(c, mode, has_mask, pre, next, Sq, Skv, &p->band_lo, &p->band_hi))) return rc;
    if (has_mask && (mode == 0 || mode == 1)) {
        amap m;
        if ((rc = map_bnss(c, "attenMaskOptional", mask, B, N, Sq, Skv, false, true, &m, 2))) return rc;
        if (mask->ndim == 3) return fail_shape(c, "attenMaskOptional", mask, "must be [B,N,Sq,Skv], [B,1,Sq,Skv], "
                                                                             "[1,1,Sq,Skv] or [Sq,Skv]");
        m.view = add_view(p, &nv, mask);
        p->map[R_MASK] = m;
    }
    p->scale = (float)scale;
    p->rkeep = 1.0f;
    if (keep < 1.0) {
        if (empty_t(drop)) {
            return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: dropMaskOptional is needed when keepProb (%g) is below 1",
                           c->api, keep);
        }
        const double bits = (double)B * (double)N * (double)Sq * (double)Skv;
        const pa_tview dv = pa_tview_of(drop);
        if ((double)pa_tensor_numel(drop) * 8.0 < bits || !pa_tview_is_contiguous(&dv)) {
            char s[160];
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: dropMaskOptional must be contiguous and hold at least B*N*Sq*Skv/8 = %.0f bytes "
                           "(one bit per element), got shape %s",
                           c->api, ceil(bits / 8.0), pa_shape_str(drop->dims, drop->ndim, s, sizeof s));
        }
        p->drop_view = add_view(p, &nv, drop);
        p->rkeep = (float)(1.0 / keep);
    }
    const int64_t sdims[4] = {B, N, Sq, 8};
    if (!grad) {
        const aclTensor *smax = ptr(c, "softmaxMaxOut"), *ssum = ptr(c, "softmaxSumOut");
        const aclTensor *out = ptr(c, "attentionOutOut");
        if ((rc = need_shape(c, "softmaxMaxOut", smax, 4, sdims))) return rc;
        if ((rc = need_shape(c, "softmaxSumOut", ssum, 4, sdims))) return rc;
        if ((rc = same_dtype(c, "attentionOutOut", out, "query", q))) return rc;
        if ((rc = need_shape(c, "attentionOutOut", out, q->ndim, odims))) return rc;
        amap m = mq;
        m.hd = Dv;
        m.view = add_view(p, &nv, out);
        p->map[R_O] = m;
        amap ms = {.view = add_view(p, &nv, smax), .dim = {0, 1, 2, 3}};
        p->map[R_MAX] = ms;
        ms.view = add_view(p, &nv, ssum);
        p->map[R_SUM] = ms;
        p->stat_rep = 8;
    } else {
        const aclTensor *dy = ptr(c, "dy"), *smax = ptr(c, "softmaxMaxOptional"), *ssum = ptr(c, "softmaxSumOptional");
        const aclTensor *oin = ptr(c, "attentionInOptional");
        const aclTensor *dq = ptr(c, "dqOut"), *dk = ptr(c, "dkOut"), *dv = ptr(c, "dvOut");
        const char *missing = smax == NULL ? "softmaxMaxOptional" : ssum == NULL ? "softmaxSumOptional"
                              : oin == NULL ? "attentionInOptional" : NULL;
        if (missing != NULL) {
            return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is needed (pyaclnn recomputes the softmax from the "
                           "forward's max, sum and output)", c->api, missing);
        }
        if ((rc = same_dtype(c, "dy", dy, "query", q))) return rc;
        if ((rc = need_shape(c, "dy", dy, q->ndim, odims))) return rc;
        if ((rc = same_dtype(c, "attentionInOptional", oin, "query", q))) return rc;
        if ((rc = need_shape(c, "attentionInOptional", oin, q->ndim, odims))) return rc;
        if ((rc = need_shape(c, "softmaxMaxOptional", smax, 4, sdims))) return rc;
        if ((rc = need_shape(c, "softmaxSumOptional", ssum, 4, sdims))) return rc;
        if ((rc = same_dtype(c, "dqOut", dq, "query", q)) || (rc = same_dtype(c, "dkOut", dk, "query", q)) ||
            (rc = same_dtype(c, "dvOut", dv, "query", q)))
            return rc;
        if ((rc = need_shape(c, "dqOut", dq, q->ndim, q->dims)) || (rc = need_shape(c, "dkOut", dk, k->ndim, k->dims)) ||
            (rc = need_shape(c, "dvOut", dv, v->ndim, v->dims)))
            return rc;
        amap m = mq;
        m.hd = Dv;
        m.view = add_view(p, &nv, dy);
        p->map[R_DY] = m;
        m.view = add_view(p, &nv, oin);
        p->map[R_OIN] = m;
        amap ms = {.view = add_view(p, &nv, smax), .dim = {0, 1, 2, 3}};
        p->map[R_MAX] = ms;
        ms.view = add_view(p, &nv, ssum);
        p->map[R_SUM] = ms;
        m = mq, m.view = add_view(p, &nv, dq);
        p->map[R_DQ] = m;
        m = mk, m.view = add_view(p, &nv, dk);
        p->map[R_DK] = m;
        m = mv, m.view = add_view(p, &nv, dv);
        p->map[R_DV] = m;
        pa_attn_args t = {.B = B, .N = N, .Sq = Sq, .Dk = Dk};
        p->ws = pa_attn_bwd_workspace(&t);
    }
    return make_executor(c, p, workspaceSize, executor);
}

/* ---- FusedInferAttentionScoreV2 ---- */

static int plan_fia(const call *c, uint64_t *workspaceSize, aclOpExecutor **executor) {
    at_plan P;
    memset(&P, 0, sizeof P);
    at_plan *p = &P;
    p->kernel = PA_ATTENTION_FIA;
    p->api = c->op->launch.name;
    for (int r = 0; r < R_N; r++) p->map[r].view = -1;
    p->drop_view = -1;
    p->rkeep = 1.0f;
    int rc;
    static const char *const refused[] = {
        "deqScale1Optional", "quantScale1Optional", "deqScale2Optional", "quantScale2Optional",
        "quantOffset2Optional", "antiquantScaleOptional", "antiquantOffsetOptional", "blockTableOptional",
        "queryPaddingSizeOptional", "kvPaddingSizeOptional", "keyAntiquantScaleOptional",
        "keyAntiquantOffsetOptional", "valueAntiquantScaleOptional", "valueAntiquantOffsetOptional",
        "keySharedPrefixOptional", "valueSharedPrefixOptional", "actualSharedPrefixLenOptional"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        if (ptr(c, refused[i]) != NULL) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s is given; pyaclnn implements the non-quantised, non-paged paths only (pass NULL)",
                           c->api, refused[i]);
        }
    }
    const aclTensor *q = ptr(c, "query");
    const aclTensorList *kl = ptr(c, "key"), *vl = ptr(c, "value");
    if (kl->size != 1 || vl->size != 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: key and value must each hold one tensor (pyaclnn), got %llu and %llu", c->api,
                       (unsigned long long)kl->size, (unsigned long long)vl->size);
    }
    const aclTensor *k = kl->tensors[0], *v = vl->tensors[0];
    if (k == NULL || v == NULL) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: key / value holds a NULL tensor", c->api);
    }
    const aclTensor *pse = ptr(c, "pseShiftOptional"), *mask = ptr(c, "attenMaskOptional");
    const aclTensor *out = ptr(c, "attentionOut"), *lse = ptr(c, "softmaxLse");
    const int64_t heads = num_i(c, "numHeads"), pre = num_i(c, "preTokens"), next = num_i(c, "nextTokens");
    int64_t kvh = num_i(c, "numKeyValueHeads");
    const int64_t mode = num_i(c, "sparseMode"), inner = num_i(c, "innerPrecise");
    const double scale = num_f(c, "scaleValue");
    const bool lse_flag = num_b(c, "softmaxLseFlag");
    int L = 0;
    if ((rc = parse_layout(c, ptr(c, "inputLayout"), false, &L))) return rc;
    if ((rc = same_dtype(c, "key", k, "query", q)) || (rc = same_dtype(c, "value", v, "query", q))) return rc;
    if ((rc = same_dtype(c, "attentionOut", out, "query", q))) return rc;
    if (heads < 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: numHeads must be positive, got %lld", c->api, (long long)heads);
    }
    if (kvh == 0) kvh = heads;
    if (kvh < 0 || heads % kvh != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: numHeads (%lld) must be a multiple of numKeyValueHeads (%lld)",
                       c->api, (long long)heads, (long long)kvh);
    }
    if (inner < 0 || inner > 3) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: innerPrecise must be in [0, 3], got %lld", c->api,
                       (long long)inner);
    }
    int64_t B, N, Sq, D, Bk, Nkv, Skv, Dk, Bv, Nv, Sv, Dv;
    amap mq, mk, mv;
    if ((rc = decode(c, "query", q, L, heads, 0, &B, &N, &Sq, &D, &mq))) return rc;
    if (N != heads) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: query has %lld heads but numHeads is %lld", c->api,
                       (long long)N, (long long)heads);
    }
    if ((rc = decode(c, "key", k, L, kvh, 0, &Bk, &Nkv, &Skv, &Dk, &mk))) return rc;
    if ((rc = decode(c, "value", v, L, kvh, 0, &Bv, &Nv, &Sv, &Dv, &mv))) return rc;
    if (Nkv != kvh) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: key has %lld heads but numKeyValueHeads is %lld", c->api,
                       (long long)Nkv, (long long)kvh);
    }
    if (Bk != B || Bv != B || Dk != D || Dv != D || Nv != Nkv || Sv != Skv) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: key and value must match query's B and D and each other's N and S (query B %lld D "
                       "%lld; key B %lld N %lld S %lld D %lld; value B %lld N %lld S %lld D %lld)",
                       c->api, (long long)B, (long long)D, (long long)Bk, (long long)Nkv, (long long)Skv,
                       (long long)Dk, (long long)Bv, (long long)Nv, (long long)Sv, (long long)Dv);
    }
    if (D < 1 || D > 512) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: D must be in [1, 512], got %lld", c->api, (long long)D);
    }
    const aclIntArray *aq = ptr(c, "actualSeqLengthsOptional"), *akv = ptr(c, "actualSeqLengthsKvOptional");
    const aclIntArray *arrs[2] = {aq, akv};
    const int64_t full[2] = {Sq, Skv};
    for (int t = 0; t < 2; t++) {
        if (arrs[t] == NULL || arrs[t]->size == 0) continue;
        const uint64_t n = arrs[t]->size < (uint64_t)B ? arrs[t]->size : (uint64_t)B;
        for (uint64_t i = 0; i < n; i++) {
            if (arrs[t]->values[i] != full[t]) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID,
                               "%s: %s[%llu] = %lld: pyaclnn supports only the full length (%lld)", c->api,
                               t ? "actualSeqLengthsKvOptional" : "actualSeqLengthsOptional", (unsigned long long)i,
                               (long long)arrs[t]->values[i], (long long)full[t]);
            }
        }
    }
    int nv = 0;
    p->B = B, p->N = N, p->Nkv = Nkv, p->Sq = Sq, p->Skv = Skv, p->Dk = D, p->Dv = D;
    mq.view = add_view(p, &nv, q);
    mk.view = add_view(p, &nv, k);
    mv.view = add_view(p, &nv, v);
    p->map[R_Q] = mq, p->map[R_K] = mk, p->map[R_V] = mv;
    if ((rc = need_shape(c, "attentionOut", out, q->ndim, q->dims))) return rc;
    if (!empty_t(pse)) {
        if ((rc = same_dtype(c, "pseShiftOptional", pse, "query", q))) return rc;
        amap m;
        if ((rc = map_bnss(c, "pseShiftOptional", pse, B, N, Sq, Skv, false, false, &m, 4))) return rc;
        m.view = add_view(p, &nv, pse);
        p->map[R_PSE] = m;
        p->pse_mode = PA_ATTN_PSE_OUTER;
    }
    const bool has_mask = !empty_t(mask);
    if ((rc = band_of(c, mode, has_mask, pre, next, Sq, Skv, &p->band_lo, &p->band_hi))) return rc;
    if (has_mask && (mode == 0 || mode == 1)) {
        amap m;
        if (mask->ndim == 3) { /* [B, Sq, Skv] */
            const aclTensor *t = mask;
            if ((t->dims[0] != B && t->dims[0] != 1) || t->dims[1] != Sq || t->dims[2] != Skv) {
                return fail_shape(c, "attenMaskOptional", t, "must be [Sq,Skv], [B,Sq,Skv], [1,Sq,Skv] or "
                                                             "[B,1,Sq,Skv]");
            }
            m.hsplit = 0, m.dim[0] = 0, m.dim[1] = -1, m.dim[2] = 1, m.dim[3] = 2;
        } else if ((rc = map_bnss(c, "attenMaskOptional", mask, B, N, Sq, Skv, false, true, &m, 2))) {
            return rc;
        }
        m.view = add_view(p, &nv, mask);
        p->map[R_MASK] = m;
    }
    amap m = mq;
    m.view = add_view(p, &nv, out);
    p->map[R_O] = m;
    if (lse_flag) {
        if (lse == NULL) {
            return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: softmaxLse is needed when softmaxLseFlag is true", c->api);
        }
        const int64_t ld[4] = {B, N, Sq, 1};
        if ((rc = need_shape(c, "softmaxLse", lse, 4, ld))) return rc;
        amap ml = {.view = add_view(p, &nv, lse), .dim = {0, 1, 2, 3}};
        p->map[R_LSE] = ml;
    }
    p->scale = (float)scale;
    return make_executor(c, p, workspaceSize, executor);
}

int pa_plan_attention(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const call c = {op, a, op->ws_api};
    switch (op->kernel) {
    case PA_ATTENTION_FA_FWD: return plan_fa(&c, false, workspaceSize, executor);
    case PA_ATTENTION_FA_BWD: return plan_fa(&c, true, workspaceSize, executor);
    case PA_ATTENTION_FIA: return plan_fia(&c, workspaceSize, executor);
    default:
        return pa_fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: internal error: not an attention operator", op->ws_api);
    }
}

int pa_run_attention(const void *plan, void *workspace, uint64_t workspace_size) {
    const at_plan *p = plan;
    pa_attn_args a;
    memset(&a, 0, sizeof a);
    a.B = p->B, a.N = p->N, a.Nkv = p->Nkv, a.Sq = p->Sq, a.Skv = p->Skv, a.Dk = p->Dk, a.Dv = p->Dv;
    a.q = at_of(p, R_Q), a.k = at_of(p, R_K), a.v = at_of(p, R_V);
    a.pse = at_of(p, R_PSE);
    a.pse_mode = p->pse_mode;
    a.mask = at_of(p, R_MASK);
    a.band_lo = p->band_lo, a.band_hi = p->band_hi;
    a.scale = p->scale;
    a.rkeep = p->rkeep;
    a.drop = p->drop_view >= 0 ? pa_tview_ptr(&p->v[p->drop_view]) : NULL;
    a.o = at_of(p, R_O);
    a.smax = at_of(p, R_MAX), a.ssum = at_of(p, R_SUM), a.lse = at_of(p, R_LSE);
    a.stat_rep = p->stat_rep;
    a.dy = at_of(p, R_DY), a.oin = at_of(p, R_OIN);
    a.dq = at_of(p, R_DQ), a.dk = at_of(p, R_DK), a.dv = at_of(p, R_DV);
    const pa_isa isa = pa_cpu_isa();
    int rc;
    if (p->kernel == PA_ATTENTION_FA_BWD) {
        if (workspace_size < p->ws || (p->ws > 0 && workspace == NULL)) {
            return pa_fail(ACLNN_ERR_RUNTIME_ERROR, "%s: the workspace is smaller than the %llu bytes planned",
                           p->api, (unsigned long long)p->ws);
        }
        a.dq_acc = workspace;
        rc = pa_attn_bwd(&a, isa);
    } else {
        rc = pa_attn_fwd(&a, isa);
    }
    if (rc != 0) return pa_fail(ACLNN_ERR_RUNTIME_ERROR, "%s: out of scratch memory", p->api);
    return ACLNN_SUCCESS;
}
