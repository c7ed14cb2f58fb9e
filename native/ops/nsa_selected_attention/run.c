/* aclnnNsaSelectedAttention: the stream task (see README.md).
 *
 *  1. check topkIndices (sequential, before any output is written), fill the
 *     per-token info and the global block id of every selection;
 *  2. pack K^T per key block and the V rows in the input dtype (the GEMMs' B
 *     operands), as the grad does (bf16 at the npu precision: as bf16 pairs for
 *     the dot GEMM);
 *  3. parallel over (token, n2): S = Q K^T per selected block that is not
 *     wholly masked (G x Bp), row max and exp-sum in fp32, then O = P V with
 *     P = exp(S - m) / l rounded to the input dtype (npu precision) or
 *     O = exp(S - m) V / l (high), rounded once; stats written as 8 lanes.
 *     bf16 at the npu precision: Q and P as bf16, both products on the dot GEMM.
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
    char *kt, *vrows; /* B operands in the core's btype (dot: kt2, vi2 pairs) */
    atomic_int oom;
} nsa_fctx;

static size_t align64(size_t n) { return (n + 63u) & ~(size_t)63u; }

/* Per-thread scratch of one (token, n2) item. */
typedef struct item_scratch {
    float *S;        /* [C][G][Bp]: scores, then P */
    float *q32;      /* [G][Dp] (dot: bf16) */
    uint16_t *p16;   /* dot: P as bf16 [C][G][Bp] */
    float *acc;      /* [G][Dvp] */
    nsa_panel *pan;  /* [C] */
    int64_t *nvis;   /* [C] */
    float *m, *l, *w; /* [G] */
} item_scratch;

static size_t scratch_bytes(const nsa_shape *sh, item_scratch *sc, char *base) {
    const size_t G = (size_t)sh->G, C = (size_t)sh->C;
    size_t off = 0;
#define TAKE(field, type, n)                                                  \
    do {                                                                      \
        if (base != NULL) sc->field = (type *)(void *)(base + off);           \
        off += align64((n) * sizeof(type));                                   \
    } while (0)
    TAKE(S, float, C * G * (size_t)sh->Bp);
    TAKE(q32, float, G * (size_t)sh->Dp);
    TAKE(p16, uint16_t, C * G * (size_t)sh->Bp);
    TAKE(acc, float, G * (size_t)sh->Dvp);
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
    const nsa_core *core = &p->core;
    const nsa_shape *sh = &core->sh;
    const int64_t G = sh->G, C = sh->C, B = sh->B, Bp = sh->Bp, D = sh->D, Dp = sh->Dp, Dvp = sh->Dvp, N2 = sh->N2;
    const int npu = core->precision == NSA_PRECISION_NPU;
    item_scratch sc;
    char *base = pa_thread_scratch(scratch_bytes(sh, &sc, NULL));
    if (base == NULL) {
        atomic_store(&x->oom, 1);
        return;
    }
    scratch_bytes(sh, &sc, base);
    const nsa_kernels *kn = &core->kern;
    /* the score of a masked key: -FLT_MAX, then scaled (fp32), as the vendor */
    const float mv = -FLT_MAX * core->scale;
    for (int64_t it = begin; it < end; it++) {
        const int64_t t = it / N2, n2 = it % N2;
        const int64_t s = x->tok[2 * t], kvb0 = x->tok[2 * t + 1];
        const int32_t *gb = x->gblk + (t * N2 + n2) * C;
        for (int64_t g = 0; g < G; g++) {
            if (core->dot) {
                nsa_read_row_bf16(&p->q, t, n2 * G + g, D, Dp, (uint16_t *)(void *)sc.q32 + g * Dp);
                continue;
            }
            float *q = sc.q32 + g * Dp;
            nsa_read_row(&p->q, t, n2 * G + g, D, q);
            for (int64_t d = D; d < Dp; d++) q[d] = 0.0f;
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
        }
        /* (no software prefetch: an item's K / V blocks mostly sit in L2 and the hardware
         * prefetchers follow each block's stream; prefetching cost ~10% here) */
        for (int64_t i = 0; i < C; i++) {
            if (sc.nvis[i] == 0) continue;
            const nsa_panel one = {sc.q32, x->kt + (n2 * sh->NB + gb[i]) * core->blk_kt};
            const nsa_mm ms = {.m = G, .n = Bp, .k = D, .panels = &one, .npanels = 1, .lda = Dp, .ldb = Bp,
                               .c = sc.S + i * G * Bp, .ldc = Bp, .accumulate = 0, .no_prefetch = 1};
            nsa_mm_run(core, &ms);
        }
        /* row max over all L columns (masked ones count as mv), exp and sum */
        int dense = 0; /* masked keys carry weight: keep every block */
        for (int64_t g = 0; g < G; g++) {
            float m = -INFINITY;
            for (int64_t i = 0; i < C; i++) {
                if (sc.nvis[i] == 0) continue;
                const float mi = kn->rowmax(sc.S + (i * G + g) * Bp, sc.nvis[i], core->scale);
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
                l += kn->expsum(row, sc.nvis[i], core->scale, m);
                fill(row + sc.nvis[i], B - sc.nvis[i], w);
            }
            if (nmask > 0) l += (float)nmask * w;
            sc.m[g] = m;
            sc.l[g] = l;
            sc.w[g] = w;
        }
        /* the blocks that carry weight; P = exp(S - m) / l rounded to the input dtype
         * (npu), or P = exp(S - m) with O divided by l at the end (high) */
        int64_t np = 0;
        for (int64_t i = 0; i < C; i++) {
            if (sc.nvis[i] == 0) {
                if (!dense) continue;
                for (int64_t g = 0; g < G; g++) fill(sc.S + (i * G + g) * Bp, B, sc.w[g]);
            }
            if (core->dot) {
                for (int64_t g = 0; g < G; g++) {
                    kn->normbf16(sc.S + (i * G + g) * Bp, sc.p16 + (i * G + g) * Bp, B, 2 * sh->Bh, sc.l[g]);
                }
                sc.pan[np].a = sc.p16 + i * G * Bp;
            } else {
                if (npu) {
                    for (int64_t g = 0; g < G; g++) kn->normround(sc.S + (i * G + g) * Bp, B, sc.l[g], core->rnd);
                }
                sc.pan[np].a = sc.S + i * G * Bp;
            }
            sc.pan[np].b = x->vrows + (n2 * sh->NB + gb[i]) * core->blk_vrows;
            np++;
        }
        const nsa_mm mv = {.m = G, .n = Dvp, .k = B, .panels = sc.pan, .npanels = np, .lda = Bp, .ldb = Dvp,
                           .c = sc.acc, .ldc = Dvp, .accumulate = 0, .no_prefetch = 1};
        nsa_mm_run(core, &mv);
        for (int64_t g = 0; g < G; g++) {
            float *o = sc.acc + g * Dvp;
            const float l = sc.l[g];
            if (!npu) {
                for (int64_t d = 0; d < sh->Dv; d++) o[d] = o[d] / l;
            }
            const int64_t n1 = n2 * G + g;
            nsa_write_row(&p->out, t, n1, sh->Dv, o, 1.0f, 0);
            float lanes[8];
            fill(lanes, 8, sc.m[g]);
            nsa_write_row(&p->smax, t, n1, 8, lanes, 1.0f, 0);
            fill(lanes, 8, l);
            nsa_write_row(&p->ssum, t, n1, 8, lanes, 1.0f, 0);
        }
    }
}

static int oom_fail(void) {
    return pa_fail(ACLNN_ERR_INNER_NULLPTR, "%s: out of memory for kernel scratch", NSA_SA_RUN_API);
}

int nsa_sa_run(const void *plan, void *workspace, uint64_t workspace_size) {
    const nsa_sa_plan *p = plan;
    if (p->empty) return ACLNN_SUCCESS;
    const nsa_shape *sh = &p->core.sh;
    nsa_fctx x;
    memset(&x, 0, sizeof x);
    x.p = p;
    atomic_init(&x.oom, 0);
    char *ws;
    int rc = nsa_run_begin(NSA_SA_RUN_API, p, &p->core, &p->topk, workspace, workspace_size, p->ws_size, p->off_tok,
                           p->off_gblk, &ws, &x.tok, &x.gblk);
    if (rc != ACLNN_SUCCESS) return rc;
    x.kt = ws + p->off_kt;
    x.vrows = ws + p->off_vrows;

    const nsa_kv_pack pk = {.k = &p->k, .v = &p->v, .core = &p->core, .kt = x.kt, .vrows = x.vrows};
    if (!nsa_pack_kv(&pk)) return oom_fail();

    /* items (token, n2); chunks of about 2^20 multiply-adds, independent of the thread count */
    const int64_t work = PA_MAX((int64_t)1, sh->G * sh->C * sh->Bp * (sh->Dp + sh->Dvp));
    const int64_t grain = PA_MAX((int64_t)1, ((int64_t)1 << 20) / work);
    pa_parallel_for(sh->T1 * sh->N2, grain, attend, &x);
    if (atomic_load(&x.oom)) return oom_fail();
    return ACLNN_SUCCESS;
}
