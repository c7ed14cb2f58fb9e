/* aclnnNsaSelectedAttention: the stream task (see README.md).
 *
 *  1. check topkIndices (sequential, before any output is written), fill the
 *     per-token info and the global block id of every selection;
 *  2. pack K^T per key block (fp32, or bf16 pairs for the AVX512_BF16 kernel
 *     when the inputs are bf16) and the V rows (fp32), as the grad does;
 *  3. parallel over (token, n2): S = Q K^T per selected block that is not
 *     wholly masked (G x Bp), row max and exp-sum in fp32, then O = P V / l
 *     with the multi-panel GEMM, rounded once; stats written as 8 lanes.
 * Every output element is written by exactly one item and every sum has a
 * fixed order, so results do not depend on the thread count. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "aclnnop/aclnn_nsa_selected_attention.h"
#include "common/pa_half.h"
#include "ops/nsa_common/nsa_common.h"
#include "ops/nsa_selected_attention/nsa_sa.h"
#include "runtime/pa_threadpool.h"

static const char *const nsa_sa_in_names[] = {"query", "key", "value", "topkIndices", "attenMaskOptional"};
static const char *const nsa_sa_out_names[] = {"softmaxMaxOut", "softmaxSumOut", "attentionOut"};
const pa_op_def nsa_sa_op_def = {NSA_SA_RUN_API, nsa_sa_run, nsa_sa_in_names, nsa_sa_out_names};

PA_API aclnnStatus aclnnNsaSelectedAttention(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                             const aclrtStream stream) {
    return pa_executor_launch(&nsa_sa_op_def, workspace, workspaceSize, executor, stream);
}

typedef struct nsa_fctx {
    const nsa_sa_plan *p;
    int64_t *tok; /* [T1][2]: local position s, first global KV block of the batch */
    int32_t *gblk;
    float *kt, *v32;
    atomic_int oom;
} nsa_fctx;

static void pack_kv(void *ctx, int64_t begin, int64_t end) {
    nsa_fctx *x = ctx;
    const nsa_sa_plan *p = x->p;
    float *scr = pa_thread_scratch((size_t)(p->B * (p->Dp + p->Dv)) * sizeof(float));
    if (scr == NULL) {
        atomic_store(&x->oom, 1);
        return;
    }
    const nsa_kv_pack pk = {.k = &p->k, .v = &p->v, .T2 = p->T2, .NB = p->NB, .B = p->B, .Bp = p->Bp,
                            .D = p->D, .Dv = p->Dv, .Dp = p->Dp, .Dvp = p->Dvp, .use_bf16 = p->use_bf16,
                            .k32 = NULL, .kt = x->kt, .vt = NULL, .v32 = x->v32};
    for (int64_t it = begin; it < end; it++) nsa_pack_kv_block(&pk, it, scr);
}

static size_t align64(size_t n) { return (n + 63u) & ~(size_t)63u; }

/* Per-thread scratch of one (token, n2) item. */
typedef struct item_scratch {
    float *S;        /* [C][G][Bp]: scores, then unnormalised P */
    float *q32;      /* [G][Dp] */
    uint16_t *qb;    /* [G][Dp] bf16 bits */
    float *acc;      /* [G][Dvp] */
    nsa_panel *pan;  /* [C] */
    int64_t *nvis;   /* [C] */
    float *m, *l, *w; /* [G] */
} item_scratch;

static size_t scratch_bytes(const nsa_sa_plan *p, item_scratch *sc, char *base) {
    const size_t G = (size_t)p->G, C = (size_t)p->C;
    size_t off = 0;
#define TAKE(field, type, n)                                                  \
    do {                                                                      \
        if (base != NULL) sc->field = (type *)(void *)(base + off);           \
        off += align64((n) * sizeof(type));                                   \
    } while (0)
    TAKE(S, float, C * G * (size_t)p->Bp);
    TAKE(q32, float, G * (size_t)p->Dp);
    TAKE(qb, uint16_t, G * (size_t)p->Dp);
    TAKE(acc, float, G * (size_t)p->Dvp);
    TAKE(pan, nsa_panel, C);
    TAKE(nvis, int64_t, C);
    TAKE(m, float, G);
    TAKE(l, float, G);
    TAKE(w, float, G);
#undef TAKE
    return off;
}

static void fill(float *dst, int64_t n, float v) {
    for (int64_t i = 0; i < n; i++) dst[i] = v;
}

static void attend(void *ctx, int64_t begin, int64_t end) {
    nsa_fctx *x = ctx;
    const nsa_sa_plan *p = x->p;
    const int64_t G = p->G, C = p->C, B = p->B, Bp = p->Bp, D = p->D, Dp = p->Dp, Dvp = p->Dvp, N2 = p->N2;
    item_scratch sc;
    char *base = pa_thread_scratch(scratch_bytes(p, &sc, NULL));
    if (base == NULL) {
        atomic_store(&x->oom, 1);
        return;
    }
    scratch_bytes(p, &sc, base);
    const nsa_grad_kernels *kn = &p->kern;
    /* the score of a masked key: -FLT_MAX, then scaled (fp32), as the vendor */
    const float mv = -FLT_MAX * p->scale;
    for (int64_t it = begin; it < end; it++) {
        const int64_t t = it / N2, n2 = it % N2;
        const int64_t s = x->tok[2 * t], kvb0 = x->tok[2 * t + 1];
        const int32_t *gb = x->gblk + (t * N2 + n2) * C;
        for (int64_t g = 0; g < G; g++) {
            float *q = sc.q32 + g * Dp;
            nsa_read_row(&p->q, t, n2 * G + g, D, q);
            for (int64_t d = D; d < Dp; d++) q[d] = 0.0f;
            if (p->use_bf16) { /* exact: the values came from bf16 */
                for (int64_t d = 0; d < Dp; d++) sc.qb[g * Dp + d] = (uint16_t)(pa_f32_bits(q[d]) >> 16);
            }
        }
        /* S per block with a visible key */
        int64_t nmask = 0;
        for (int64_t i = 0; i < C; i++) {
            int64_t nv = B;
            if (p->causal) {
                const int64_t n = s - (gb[i] - kvb0) * B + 1;
                nv = n < 0 ? 0 : (n > B ? B : n);
            }
            sc.nvis[i] = nv;
            nmask += B - nv;
            if (nv == 0) continue;
            float *Si = sc.S + i * G * Bp;
            const float *kt = x->kt + (n2 * p->NB + gb[i]) * D * Bp;
            if (p->use_bf16) {
                kn->gemm_bf16(G, Bp, (D + 1) / 2 * 2, sc.qb, Dp, (const uint16_t *)(const void *)kt, Si, Bp);
            } else {
                const nsa_panel one = {sc.q32, kt};
                const nsa_gemm_args ga = {.m = G, .n = Bp, .k = D, .panels = &one, .npanels = 1, .a_sm = Dp,
                                          .a_sk = 1, .ldb = Bp, .c = Si, .ldc = Bp, .accumulate = 0};
                kn->gemm(&ga);
            }
        }
        /* row max over all L columns (masked ones count as mv), exp and sum */
        int dense = 0; /* masked keys carry weight: keep every block */
        for (int64_t g = 0; g < G; g++) {
            float m = -INFINITY;
            for (int64_t i = 0; i < C; i++) {
                if (sc.nvis[i] == 0) continue;
                const float mi = kn->rowmax(sc.S + (i * G + g) * Bp, sc.nvis[i], p->scale);
                if (mi > m || mi != mi) m = mi; /* NaN sticks */
                if (m != m) break;
            }
            float w = 0.0f;
            if (nmask > 0) {
                if (mv > m || mv != mv) m = mv;
                w = mv;
                kn->expsum(&w, 1, 1.0f, m); /* w = exp(mv - m), the same exp as every other column */
                if (w != 0.0f) dense = 1;  /* also NaN */
            }
            float l = 0.0f;
            for (int64_t i = 0; i < C; i++) {
                if (sc.nvis[i] == 0) continue;
                float *row = sc.S + (i * G + g) * Bp;
                l += kn->expsum(row, sc.nvis[i], p->scale, m);
                fill(row + sc.nvis[i], B - sc.nvis[i], w);
            }
            if (nmask > 0) l += (float)nmask * w;
            sc.m[g] = m;
            sc.l[g] = l;
            sc.w[g] = w;
        }
        /* O = P V / l over the blocks that carry weight */
        int64_t np = 0;
        for (int64_t i = 0; i < C; i++) {
            if (sc.nvis[i] == 0) {
                if (!dense) continue;
                for (int64_t g = 0; g < G; g++) fill(sc.S + (i * G + g) * Bp, B, sc.w[g]);
            }
            sc.pan[np].a = sc.S + i * G * Bp;
            sc.pan[np].b = x->v32 + (n2 * p->T2 + (int64_t)gb[i] * B) * Dvp;
            np++;
        }
        const nsa_gemm_args gv = {.m = G, .n = Dvp, .k = B, .panels = sc.pan, .npanels = np, .a_sm = Bp,
                                  .a_sk = 1, .ldb = Dvp, .c = sc.acc, .ldc = Dvp, .accumulate = 0};
        kn->gemm(&gv);
        for (int64_t g = 0; g < G; g++) {
            float *o = sc.acc + g * Dvp;
            const float l = sc.l[g];
            for (int64_t d = 0; d < p->Dv; d++) o[d] = o[d] / l;
            const int64_t n1 = n2 * G + g;
            nsa_write_row(&p->out, t, n1, p->Dv, o, 1.0f);
            float lanes[8];
            fill(lanes, 8, sc.m[g]);
            nsa_write_row(&p->smax, t, n1, 8, lanes, 1.0f);
            fill(lanes, 8, l);
            nsa_write_row(&p->ssum, t, n1, 8, lanes, 1.0f);
        }
    }
}

static int oom_fail(void) {
    return pa_fail(ACLNN_ERR_INNER_NULLPTR, "%s: out of memory for kernel scratch", NSA_SA_RUN_API);
}

int nsa_sa_run(const void *plan, void *workspace, uint64_t workspace_size) {
    const nsa_sa_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    if (workspace == NULL || workspace_size < p->ws_size) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: workspace of %llu bytes is smaller than the %llu required",
                       NSA_SA_RUN_API, (unsigned long long)workspace_size, (unsigned long long)p->ws_size);
    }
    char *ws = (char *)workspace + ((64u - ((uintptr_t)workspace & 63u)) & 63u);
    nsa_fctx x;
    memset(&x, 0, sizeof x);
    x.p = p;
    x.tok = (int64_t *)(void *)(ws + p->off_tok);
    x.gblk = (int32_t *)(void *)(ws + p->off_gblk);
    x.kt = (float *)(void *)(ws + p->off_kt);
    x.v32 = (float *)(void *)(ws + p->off_v32);
    atomic_init(&x.oom, 0);

    const int64_t *seq_q = (const int64_t *)(const void *)((const char *)p + p->seq_q_off);
    const int64_t *seq_kv = (const int64_t *)(const void *)((const char *)p + p->seq_kv_off);
    int rc = nsa_index_topk(NSA_SA_RUN_API, &p->topk, seq_q, seq_kv, p->nbatch, p->N2, p->C, p->B, x.tok, x.gblk);
    if (rc != ACLNN_SUCCESS) return rc;

    pa_parallel_for(p->N2 * p->NB, 1, pack_kv, &x);
    if (atomic_load(&x.oom)) return oom_fail();

    /* items (token, n2); chunks of about 2^20 multiply-adds, independent of the thread count */
    const int64_t work = PA_MAX((int64_t)1, p->G * p->C * p->Bp * (p->Dp + p->Dvp));
    const int64_t grain = PA_MAX((int64_t)1, ((int64_t)1 << 20) / work);
    pa_parallel_for(p->T1 * p->N2, grain, attend, &x);
    if (atomic_load(&x.oom)) return oom_fail();
    return ACLNN_SUCCESS;
}
