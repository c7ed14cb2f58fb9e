/* aclnnNsaSelectedAttentionGrad: the stream task (see README.md).
 *
 *  1. check topkIndices (sequential, before any output is written), fill the
 *     per-token info and the global block id of every selection;
 *  2. pack K (rows) and K^T, V^T per key block into the workspace, in the
 *     input dtype (the B operands of the GEMMs);
 *  3. per token tile: pack the tile's Q, dO (fp32, + 16-bit copies), max, sum,
 *     Dsum; inverse index (counting sort, by (n2, key block), pairs in (t, i)
 *     order); pass 1a over the index entries (grouped by key block): S, dP,
 *     P, dS (rounded to the input dtype with the npu precision); pass 1b over
 *     (token, n2): dq (written); pass 2 over (n2, key
 *     block, dk|dv): dk / dv accumulated in fp32 in the workspace, cast on the
 *     last tile.
 * bf16 inputs at the npu precision (core.dot) run every product on the bf16 dot
 * GEMM, with the operands in its layouts: Q / dO rows as bf16 (S, dP), the
 * tile's Q / dO transposed to [d][g] (dk, dv), P and dS as bf16 pairs of rows
 * g, g+1 (dk, dv) and dS as bf16 rows (dq); dk / dv are accumulated transposed
 * ([d][key] per block) and transposed back on output.
 * Every output element is written by exactly one chunk; the summation order of
 * every sum is fixed, so results do not depend on the thread count. */
#include <stdatomic.h>
#include <string.h>

#include "aclnnop/aclnn_nsa_selected_attention_grad.h"
#include "common/pa_half.h"
#include "ops/nsa_common/nsa_common.h"
#include "ops/nsa_selected_attention_grad/nsa_sag.h"
#include "runtime/pa_threadpool.h"

static const char *const nsa_sag_in_names[] = {"query",      "key",        "value",
                                               "attentionOut", "attentionOutGrad", "softmaxMax",
                                               "softmaxSum", "topkIndices", "attenMaskOptional"};
static const char *const nsa_sag_out_names[] = {"dqOut", "dkOut", "dvOut"};
const pa_op_def nsa_sag_op_def = {NSA_SAG_RUN_API, nsa_sag_run, nsa_sag_in_names, nsa_sag_out_names};

PA_API aclnnStatus aclnnNsaSelectedAttentionGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                 aclrtStream stream) {
    return pa_executor_launch(&nsa_sag_op_def, workspace, workspaceSize, executor, stream);
}

/* Pairs (token, selection) handed to one pass-2 GEMM call at most. */
#define NSA_PASS2_MAX_PAIRS 4096

typedef struct nsa_ctx {
    const nsa_sag_plan *p;
    float *mx, *sm, *dsum, *dkacc, *dvacc;
    char *qrows, *dorows;      /* the tile's Q / dO rows (S's and dP's A): fp32, or bf16 (dot) */
    char *qcopy, *docopy;      /* their copies for pass 2: 16-bit rows (B), or transposed bf16 (dot: A) */
    char *P, *dS;              /* per pair slots of slot_p / slot_ds bytes */
    char *krows, *kt, *vt;     /* B operands in the core's btype */
    int64_t *tok; /* [T1][2]: local position s, first global KV block of the batch */
    int32_t *gblk;
    int64_t *cnt;
    uint32_t *ent;
    int64_t t0, tn; /* current tile */
    int first_tile, last_tile;
    atomic_int oom;
} nsa_ctx;


/* ---- step 3: the tile's rows ---- */

/* The tile's Q and dO rows (the A operands of S and dP: fp32, or bf16 for the dot
 * GEMM), their copies for pass 2 (fp32 GEMM: 16-bit rows, B operands; dot GEMM:
 * per (token, n2) transposed to [d][Gp], A operands), max, sum and Dsum. */
static void pack_tokens(void *ctx, int64_t begin, int64_t end) {
    nsa_ctx *x = ctx;
    const nsa_sag_plan *p = x->p;
    const nsa_shape *sh = &p->core.sh;
    const int bt = p->core.btype, dot = p->core.dot;
    const int64_t Dp = sh->Dp, Dvp = sh->Dvp, G = sh->G, Gp = sh->Gp;
    float *orow = pa_thread_scratch((size_t)(sh->Dv + Dvp) * sizeof(float));
    if (orow == NULL) {
        atomic_store(&x->oom, 1);
        return;
    }
    float *grow = orow + sh->Dv; /* dot: dO in fp32 for Dsum */
    uint16_t *q16 = (uint16_t *)(void *)x->qrows, *do16 = (uint16_t *)(void *)x->dorows;
    for (int64_t tl = begin; tl < end; tl++) {
        const int64_t t = x->t0 + tl;
        for (int64_t h = 0; h < sh->N1; h++) {
            const int64_t row = tl * sh->N1 + h;
            float *g = dot ? grow : (float *)(void *)x->dorows + row * Dvp;
            if (dot) {
                nsa_read_row_bf16(&p->q, t, h, sh->D, Dp, q16 + row * Dp);
                nsa_read_row_bf16(&p->dout, t, h, sh->Dv, Dvp, do16 + row * Dvp);
            } else {
                float *q = (float *)(void *)x->qrows + row * Dp;
                nsa_read_row(&p->q, t, h, sh->D, q);
                for (int64_t d = sh->D; d < Dp; d++) q[d] = 0.0f;
            }
            nsa_read_row(&p->dout, t, h, sh->Dv, g);
            for (int64_t d = sh->Dv; d < Dvp; d++) g[d] = 0.0f;
            nsa_read_row(&p->o, t, h, sh->Dv, orow);
            double acc = 0.0;
            for (int64_t d = 0; d < sh->Dv; d++) acc += (double)g[d] * (double)orow[d];
            x->dsum[row] = (float)acc;
            nsa_read_row(&p->smax, t, h, 1, x->mx + row);
            nsa_read_row(&p->ssum, t, h, 1, x->sm + row);
            if (!dot && bt != NSA_B_F32) { /* exact: the values came from the input dtype */
                nsa_store_b(x->qcopy + row * Dp * 2, bt, (const float *)(const void *)x->qrows + row * Dp, Dp, Dp);
                nsa_store_b(x->docopy + row * Dvp * 2, bt, g, Dvp, Dvp);
            }
        }
        for (int64_t n2 = 0; dot && n2 < sh->N2; n2++) {
            const int64_t r0 = tl * sh->N1 + n2 * G; /* first row of the group */
            uint16_t *qd = (uint16_t *)(void *)x->qcopy + (tl * sh->N2 + n2) * Dp * Gp;
            uint16_t *dd = (uint16_t *)(void *)x->docopy + (tl * sh->N2 + n2) * Dvp * Gp;
            for (int64_t g = 0; g < G; g++) {
                for (int64_t d = 0; d < Dp; d++) qd[d * Gp + g] = q16[(r0 + g) * Dp + d];
                for (int64_t d = 0; d < Dvp; d++) dd[d * Gp + g] = do16[(r0 + g) * Dvp + d];
            }
            if (Gp > G) { /* odd G: a zero head pads the last pair */
                for (int64_t d = 0; d < Dp; d++) qd[d * Gp + G] = 0;
                for (int64_t d = 0; d < Dvp; d++) dd[d * Gp + G] = 0;
            }
        }
    }
}

/* ---- step 3: pass 1 of the current tile ---- */

/* Number of visible keys of block `lb` (batch-local block number) for query
 * position s: keys j with j <= s in sparse mode 2, all keys otherwise. */
static inline int64_t visible_keys(const nsa_sag_plan *p, int64_t s, int64_t lb) {
    const int64_t B = p->core.sh.B;
    if (p->sparse_mode != 2) return B;
    const int64_t n = s - lb * B + 1;
    return n < 0 ? 0 : (n > B ? B : n);
}

/* Pass 1a, items: the index entries (pairs grouped by key block, so a block's
 * K^T / V^T stay in cache): S, dP, then P and dS, rounded by the core's precision
 * rule, into the pair's slots: fp32 S / dP turned into P / dS in place, or for
 * the dot GEMM (S and dP in thread scratch) P and dS as bf16 pairs of rows g, g+1
 * [Gp/2][Bp] (dv's and dk's B operands) and dS as bf16 rows [G][Bp] (dq's A). */
static void pass1_scores(void *ctx, int64_t begin, int64_t end) {
    nsa_ctx *x = ctx;
    const nsa_sag_plan *p = x->p;
    const nsa_core *core = &p->core;
    const nsa_shape *sh = &core->sh;
    const int64_t G = sh->G, C = sh->C, Bp = sh->Bp, Dp = sh->Dp, Dvp = sh->Dvp, N1 = sh->N1, N2 = sh->N2;
    const nsa_kernels *kn = &core->kern;
    const int dot = core->dot;
    const int64_t rb = dot ? 2 : 4;                        /* bytes per element of the Q / dO rows */
    float *S = NULL, *dP = NULL;
    if (dot && (S = pa_thread_scratch((size_t)(2 * G * Bp) * sizeof(float))) == NULL) {
        atomic_store(&x->oom, 1);
        return;
    }
    const char *q = x->qrows, *dout = x->dorows;
    for (int64_t j = begin; j < end; j++) {
        const int64_t e = x->ent[j];
        const int64_t it = e / C, i = e % C;
        const int64_t tl = it / N2, n2 = it % N2, t = x->t0 + tl;
        const int64_t s = x->tok[2 * t], kvb0 = x->tok[2 * t + 1];
        const int64_t h0 = tl * N1 + n2 * G; /* first query-head row of the group (tile-local) */
        const int64_t gbi = x->gblk[(t * N2 + n2) * C + i];
        const int64_t nvis = visible_keys(p, s, gbi - kvb0);
        const int64_t blk = n2 * sh->NB + gbi;
        char *pslot = x->P + e * p->slot_p, *dslot = x->dS + e * p->slot_ds;
        if (!dot) {
            S = (float *)(void *)pslot;
            dP = (float *)(void *)dslot;
        } else {
            dP = S + G * Bp;
        }
        nsa_panel one = {q + h0 * Dp * rb, x->kt + blk * core->blk_kt};
        /* prefetched meanwhile: this pair's dO rows (the dP GEMM's A), then the next pair's Q rows */
        nsa_mm mm = {.m = G, .n = Bp, .k = sh->D, .panels = &one, .npanels = 1, .lda = Dp, .ldb = Bp, .c = S,
                     .ldc = Bp, .accumulate = 0, .pf = dout + h0 * Dvp * rb, .pf_bytes = G * Dvp * rb};
        nsa_mm_run(core, &mm);
        one.a = dout + h0 * Dvp * rb;
        one.b = x->vt + blk * core->blk_vt;
        mm.k = sh->Dv;
        mm.lda = Dvp;
        mm.c = dP;
        mm.pf = NULL;
        mm.pf_bytes = 0;
        if (j + 1 < end) {
            const int64_t en = x->ent[j + 1], itn = en / C;
            mm.pf = q + ((itn / N2) * N1 + (itn % N2) * G) * Dp * rb;
            mm.pf_bytes = G * Dp * rb;
        }
        nsa_mm_run(core, &mm);
        if (!dot) {
            for (int64_t g = 0; g < G; g++) {
                kn->pgrad(S + g * Bp, dP + g * Bp, Bp, nvis, core->scale, x->mx[h0 + g], x->sm[h0 + g],
                          x->dsum[h0 + g], core->rnd);
            }
            continue;
        }
        uint32_t *p2 = (uint32_t *)(void *)pslot, *ds2 = (uint32_t *)(void *)dslot;
        uint16_t *ds16 = (uint16_t *)(void *)(ds2 + (sh->Gp / 2) * Bp);
        for (int64_t g = 0; g < G; g += 2) {
            const int two = g + 1 < G; /* else row g + 1 is the zero head of an odd G */
            const int64_t h = h0 + g, h1 = two ? h + 1 : h;
            const nsa_pgrad2_args pa = {
                .s = {S + g * Bp, two ? S + (g + 1) * Bp : NULL},
                .dp = {dP + g * Bp, two ? dP + (g + 1) * Bp : NULL},
                .n = Bp,
                .nvis = nvis,
                .scale = core->scale,
                .m = {x->mx[h], x->mx[h1]},
                .l = {x->sm[h], x->sm[h1]},
                .dsum = {x->dsum[h], x->dsum[h1]},
                .ds16 = {ds16 + g * Bp, two ? ds16 + (g + 1) * Bp : NULL},
                .p2 = p2 + (g / 2) * Bp,
                .ds2 = ds2 + (g / 2) * Bp,
            };
            kn->pgrad2(&pa);
        }
    }
}

/* Pass 1b, items (local token, n2): dq = dS K over the visible blocks in
 * selection order (fp32 GEMM: dS slots and K rows; dot GEMM: dS bf16 rows and K
 * as pairs of rows), scaled, cast and written. */
static void pass1_dq(void *ctx, int64_t begin, int64_t end) {
    nsa_ctx *x = ctx;
    const nsa_sag_plan *p = x->p;
    const nsa_core *core = &p->core;
    const nsa_shape *sh = &core->sh;
    const int64_t G = sh->G, C = sh->C, B = sh->B, Bp = sh->Bp, Dp = sh->Dp, N2 = sh->N2;
    const size_t pan_bytes = ((size_t)C * sizeof(nsa_panel) + 63u) & ~(size_t)63u;
    char *scr = pa_thread_scratch(pan_bytes + (size_t)(G * Dp) * sizeof(float));
    if (scr == NULL) {
        atomic_store(&x->oom, 1);
        return;
    }
    nsa_panel *pan = (nsa_panel *)(void *)scr;
    float *dqb = (float *)(void *)(scr + pan_bytes);
    const int away = core->precision == NSA_PRECISION_NPU;
    /* dS in its slot: fp32 rows at the start, or bf16 rows after the pairs (dot) */
    const int64_t ds_at = core->dot ? sh->Gp * Bp * 2 : 0;
    for (int64_t it = begin; it < end; it++) {
        const int64_t tl = it / N2, n2 = it % N2, t = x->t0 + tl;
        const int64_t s = x->tok[2 * t], kvb0 = x->tok[2 * t + 1];
        const char *dslot = x->dS + it * C * p->slot_ds;
        const int32_t *gb = x->gblk + (t * N2 + n2) * C;
        int64_t npan = 0;
        for (int64_t i = 0; i < C; i++) {
            if (visible_keys(p, s, gb[i] - kvb0) <= 0) continue; /* fully masked: P = dS = 0, skipped */
            pan[npan].a = dslot + i * p->slot_ds + ds_at;
            pan[npan].b = x->krows + (n2 * sh->NB + gb[i]) * core->blk_krows;
            npan++;
        }
        const nsa_mm mq = {.m = G, .n = Dp, .k = B, .panels = pan, .npanels = npan, .lda = Bp, .ldb = Dp,
                           .c = dqb, .ldc = Dp, .accumulate = 0};
        nsa_mm_run(core, &mq);
        for (int64_t g = 0; g < G; g++) nsa_write_row(&p->dq, t, n2 * G + g, sh->D, dqb + g * Dp, core->scale, away);
    }
}

/* ---- inverse index of the current tile (sequential, deterministic) ---- */

static void build_index(nsa_ctx *x) {
    const nsa_sag_plan *p = x->p;
    const int64_t N2 = p->core.sh.N2, C = p->core.sh.C, NB = p->core.sh.NB;
    int64_t *cnt = x->cnt;
    memset(cnt, 0, (size_t)(N2 * NB + 1) * sizeof *cnt);
    for (int64_t tl = 0; tl < x->tn; tl++) {
        const int64_t t = x->t0 + tl;
        const int64_t s = x->tok[2 * t], kvb0 = x->tok[2 * t + 1];
        for (int64_t n2 = 0; n2 < N2; n2++) {
            const int32_t *gb = x->gblk + (t * N2 + n2) * C;
            for (int64_t i = 0; i < C; i++) {
                if (visible_keys(p, s, gb[i] - kvb0) > 0) cnt[n2 * NB + gb[i] + 1]++;
            }
        }
    }
    for (int64_t k = 0; k < N2 * NB; k++) cnt[k + 1] += cnt[k];
    /* fill: cnt[key] walks from the start of key to the start of key + 1 */
    for (int64_t tl = 0; tl < x->tn; tl++) {
        const int64_t t = x->t0 + tl;
        const int64_t s = x->tok[2 * t], kvb0 = x->tok[2 * t + 1];
        for (int64_t n2 = 0; n2 < N2; n2++) {
            const int32_t *gb = x->gblk + (t * N2 + n2) * C;
            for (int64_t i = 0; i < C; i++) {
                if (visible_keys(p, s, gb[i] - kvb0) > 0) {
                    x->ent[cnt[n2 * NB + gb[i]]++] = (uint32_t)((tl * N2 + n2) * C + i);
                }
            }
        }
    }
    /* now the pairs of key k are ent[k ? cnt[k-1] : 0 .. cnt[k]) */
}

/* ---- pass 2, items (n2, key block, part): part 0 = dk, 1 = dv ----
 * fp32 GEMM: dk_blk += dS^T Q, dv_blk += P^T dO ([key][d], A = the pair's slot
 * read column-major, B = the pair's token's 16-bit Q / dO rows);
 * dot GEMM: dk_blk^T += Q^T dS, dv_blk^T += dO^T P ([d][key], A = the pair's
 * token's Q / dO transposed [d][Gp], B = the slot's bf16 pairs [Gp/2][Bp]),
 * transposed back when written. Pairs in list order; written on the last tile. */
static void pass2(void *ctx, int64_t begin, int64_t end) {
    nsa_ctx *x = ctx;
    const nsa_sag_plan *p = x->p;
    const nsa_core *core = &p->core;
    const nsa_shape *sh = &core->sh;
    const int64_t G = sh->G, C = sh->C, B = sh->B, Bp = sh->Bp, N1 = sh->N1, N2 = sh->N2, NB = sh->NB;
    const int dot = core->dot;
    const int64_t maxpairs = PA_MIN((int64_t)NSA_PASS2_MAX_PAIRS, x->tn * C);
    const size_t pan_bytes = ((size_t)maxpairs * sizeof(nsa_panel) + 63u) & ~(size_t)63u;
    char *scr = pa_thread_scratch(pan_bytes + (size_t)PA_MAX(sh->Dp, sh->Dvp) * sizeof(float));
    if (scr == NULL) {
        atomic_store(&x->oom, 1);
        return;
    }
    nsa_panel *pan = (nsa_panel *)(void *)scr;
    float *row = (float *)(void *)(scr + pan_bytes); /* dot: one output row, transposed back */
    const int half = core->btype != NSA_B_F32;
    const int away = core->precision == NSA_PRECISION_NPU;
    for (int64_t it = begin; it < end; it++) {
        const int64_t key = it / 2, part = it % 2;
        const int64_t n2 = key / NB, kb = key % NB;
        const int64_t lo = key ? x->cnt[key - 1] : 0, hi = x->cnt[key];
        const int64_t W = part ? sh->Dvp : sh->Dp, n = part ? sh->Dv : sh->D;
        const int64_t rows = dot ? W : B, cols = dot ? Bp : W; /* C of this key block */
        float *acc = (part ? x->dvacc : x->dkacc) + key * rows * cols;
        const char *slots = part ? x->P : x->dS;
        const int64_t slot_bytes = part ? p->slot_p : p->slot_ds;
        /* the tile's Q / dO: fp32 GEMM 16-bit (or fp32) rows [tile][N1][W]; dot [tile][N2][W][Gp] */
        const char *src = dot || half ? (part ? x->docopy : x->qcopy) : (part ? x->dorows : x->qrows);
        const int64_t es = dot || half ? 2 : 4;
        if (hi == lo && x->first_tile) memset(acc, 0, (size_t)(rows * cols) * sizeof(float));
        for (int64_t j0 = lo; j0 < hi; j0 += maxpairs) {
            const int64_t nj = PA_MIN(maxpairs, hi - j0);
            for (int64_t j = 0; j < nj; j++) {
                const int64_t e = x->ent[j0 + j];
                const int64_t tl = e / (N2 * C);
                const char *tok = src + (dot ? (tl * N2 + n2) * W * sh->Gp : (tl * N1 + n2 * G) * W) * es;
                pan[j].a = dot ? (const void *)tok : (const void *)(slots + e * slot_bytes);
                pan[j].b = dot ? (const void *)(slots + e * slot_bytes) : (const void *)tok;
            }
            const int accumulate = !(x->first_tile && j0 == lo);
            if (dot) {
                const nsa_dot_args ga = {.m = n, .n = Bp, .kp = sh->Gp / 2, .panels = pan, .npanels = nj,
                                         .lda = sh->Gp, .ldb = Bp, .c = acc, .ldc = Bp, .accumulate = accumulate};
                core->kern.dot(&ga);
            } else {
                const nsa_gemm_args ga = {.m = B, .n = W, .k = G, .panels = pan, .npanels = nj, .a_sm = 1,
                                          .a_sk = Bp, .ldb = W, .btype = core->btype, .c = acc, .ldc = W,
                                          .accumulate = accumulate};
                core->kern.gemm(&ga);
            }
        }
        if (x->last_tile) {
            const pa_tview *out = part ? &p->dv : &p->dk;
            const float mul = part ? 1.0f : core->scale;
            for (int64_t r = 0; r < B; r++) {
                const float *src_row = acc + r * W;
                if (dot) {
                    for (int64_t d = 0; d < n; d++) row[d] = acc[d * Bp + r];
                    src_row = row;
                }
                nsa_write_row(out, kb * B + r, n2, n, src_row, mul, away);
            }
        }
    }
}

/* ---- the task ---- */

static int oom_fail(void) {
    return pa_fail(ACLNN_ERR_INNER_NULLPTR, "%s: out of memory for kernel scratch", NSA_SAG_RUN_API);
}


int nsa_sag_run(const void *plan, void *workspace, uint64_t workspace_size) {
    const nsa_sag_plan *p = plan;
    const nsa_shape *sh = &p->core.sh;
    nsa_ctx x;
    memset(&x, 0, sizeof x);
    x.p = p;
    atomic_init(&x.oom, 0);
    char *ws;
    int rc = nsa_run_begin(NSA_SAG_RUN_API, p, &p->core, &p->topk, workspace, workspace_size, p->ws_size, p->off_tok,
                           p->off_gblk, &ws, &x.tok, &x.gblk);
    if (rc != ACLNN_SUCCESS) return rc;
    x.qrows = ws + p->off_qrows;
    x.dorows = ws + p->off_dorows;
    x.qcopy = ws + p->off_qcopy;
    x.docopy = ws + p->off_docopy;
    x.mx = (float *)(void *)(ws + p->off_mx);
    x.sm = (float *)(void *)(ws + p->off_sm);
    x.dsum = (float *)(void *)(ws + p->off_dsum);
    x.krows = ws + p->off_krows;
    x.kt = ws + p->off_kt;
    x.vt = ws + p->off_vt;
    x.dkacc = (float *)(void *)(ws + p->off_dkacc);
    x.dvacc = (float *)(void *)(ws + p->off_dvacc);
    x.P = ws + p->off_p;
    x.dS = ws + p->off_ds;
    x.cnt = (int64_t *)(void *)(ws + p->off_cnt);
    x.ent = (uint32_t *)(void *)(ws + p->off_ent);

    const nsa_kv_pack pk = {.k = &p->k, .v = &p->v, .core = &p->core, .kt = x.kt, .vt = x.vt, .krows = x.krows};
    if (!nsa_pack_kv(&pk)) return oom_fail();

    const int64_t row_elems = sh->N1 * (sh->D + 2 * sh->Dv);
    const int64_t tgrain = PA_MAX((int64_t)1, (int64_t)16384 / PA_MAX((int64_t)1, row_elems));
    for (int64_t tile = 0; tile < p->ntiles; tile++) {
        x.t0 = tile * p->tile;
        x.tn = PA_MIN(p->tile, sh->T1 - x.t0);
        x.first_tile = tile == 0;
        x.last_tile = tile == p->ntiles - 1;
        pa_parallel_for(x.tn, tgrain, pack_tokens, &x);
        if (atomic_load(&x.oom)) return oom_fail();
        build_index(&x);
        /* pass 1a: chunks of 8 pairs (independent of the thread count) */
        pa_parallel_for(x.cnt[sh->N2 * sh->NB - 1], 8, pass1_scores, &x);
        pa_parallel_for(x.tn * sh->N2, 1, pass1_dq, &x);
        if (atomic_load(&x.oom)) return oom_fail();
        /* pass-2 items: grain independent of the thread count, 1 unless there are many */
        const int64_t items2 = sh->N2 * sh->NB * 2;
        pa_parallel_for(items2, PA_MAX((int64_t)1, items2 / 512), pass2, &x);
        if (atomic_load(&x.oom)) return oom_fail();
    }
    return ACLNN_SUCCESS;
}
