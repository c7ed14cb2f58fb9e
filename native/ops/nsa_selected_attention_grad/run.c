/* aclnnNsaSelectedAttentionGrad: the stream task (see README.md).
 *
 *  1. check topkIndices (sequential, before any output is written), fill the
 *     per-token info and the global block id of every selection;
 *  2. pack K (rows) and K^T, V^T per key block into the workspace (fp32, or
 *     bf16 pairs for the AVX512_BF16 kernel when the inputs are bf16);
 *  3. per token tile: pack the tile's Q, dO (fp32, + bf16 copies), max, sum,
 *     Dsum; inverse index (counting sort, by (n2, key block), pairs in (t, i)
 *     order); pass 1a over the index entries (grouped by key block): S, dP,
 *     P, dS; pass 1b over (token, n2): dq (written); pass 2 over (n2, key
 *     block, dk|dv): dk / dv accumulated in fp32 in the workspace, cast on the
 *     last tile.
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
    uint16_t *qb, *dob; /* bf16 bits of q32 / do32 rows (use_bf16) */
    float *q32, *do32, *mx, *sm, *dsum, *k32, *kt, *vt, *dkacc, *dvacc, *P, *dS;
    int64_t *tok; /* [T1][2]: local position s, first global KV block of the batch */
    int32_t *gblk;
    int64_t *cnt;
    uint32_t *ent;
    int64_t t0, tn; /* current tile */
    int first_tile, last_tile;
    atomic_int oom;
} nsa_ctx;


/* ---- step 2: packing ---- */

static void pack_tokens(void *ctx, int64_t begin, int64_t end) {
    nsa_ctx *x = ctx;
    const nsa_sag_plan *p = x->p;
    float *orow = pa_thread_scratch((size_t)p->Dv * sizeof(float));
    if (orow == NULL) {
        atomic_store(&x->oom, 1);
        return;
    }
    for (int64_t tl = begin; tl < end; tl++) {
        const int64_t t = x->t0 + tl;
        for (int64_t h = 0; h < p->N1; h++) {
            const int64_t row = tl * p->N1 + h;
            float *q = x->q32 + row * p->Dp;
            nsa_read_row(&p->q, t, h, p->D, q);
            for (int64_t d = p->D; d < p->Dp; d++) q[d] = 0.0f;
            float *g = x->do32 + row * p->Dvp;
            nsa_read_row(&p->dout, t, h, p->Dv, g);
            for (int64_t d = p->Dv; d < p->Dvp; d++) g[d] = 0.0f;
            nsa_read_row(&p->o, t, h, p->Dv, orow);
            double acc = 0.0;
            for (int64_t d = 0; d < p->Dv; d++) acc += (double)g[d] * (double)orow[d];
            x->dsum[row] = (float)acc;
            nsa_read_row(&p->smax, t, h, 1, x->mx + row);
            nsa_read_row(&p->ssum, t, h, 1, x->sm + row);
            if (p->use_bf16) { /* exact: the values came from bf16 */
                uint16_t *qb = x->qb + row * p->Dp, *gb = x->dob + row * p->Dvp;
                for (int64_t d = 0; d < p->Dp; d++) qb[d] = (uint16_t)(pa_f32_bits(q[d]) >> 16);
                for (int64_t d = 0; d < p->Dvp; d++) gb[d] = (uint16_t)(pa_f32_bits(g[d]) >> 16);
            }
        }
    }
}

/* items: (n2, key block) */
static void pack_kv(void *ctx, int64_t begin, int64_t end) {
    nsa_ctx *x = ctx;
    const nsa_sag_plan *p = x->p;
    float *scr = pa_thread_scratch((size_t)(p->B * (p->Dp + p->Dv)) * sizeof(float));
    if (scr == NULL) {
        atomic_store(&x->oom, 1);
        return;
    }
    const nsa_kv_pack pk = {.k = &p->k, .v = &p->v, .T2 = p->T2, .NB = p->NB, .B = p->B, .Bp = p->Bp,
                            .D = p->D, .Dv = p->Dv, .Dp = p->Dp, .Dvp = p->Dvp, .use_bf16 = p->use_bf16,
                            .k32 = x->k32, .kt = x->kt, .vt = x->vt, .v32 = NULL};
    for (int64_t it = begin; it < end; it++) nsa_pack_kv_block(&pk, it, scr);
}

/* ---- step 3: pass 1 of the current tile ---- */

/* Number of visible keys of block `lb` (batch-local block number) for query
 * position s: keys j with j <= s in sparse mode 2, all keys otherwise. */
static inline int64_t visible_keys(const nsa_sag_plan *p, int64_t s, int64_t lb) {
    if (p->sparse_mode != 2) return p->B;
    const int64_t n = s - lb * p->B + 1;
    return n < 0 ? 0 : (n > p->B ? p->B : n);
}

/* Pass 1a, items: the index entries (pairs grouped by key block, so a block's
 * K^T / V^T stay in cache): S, dP, then P and dS in place, per pair. */
static void pass1_scores(void *ctx, int64_t begin, int64_t end) {
    nsa_ctx *x = ctx;
    const nsa_sag_plan *p = x->p;
    const int64_t G = p->G, C = p->C, Bp = p->Bp, Dp = p->Dp, Dvp = p->Dvp, N1 = p->N1, N2 = p->N2;
    const nsa_grad_kernels *kn = &p->kern;
    for (int64_t j = begin; j < end; j++) {
        const int64_t e = x->ent[j];
        const int64_t it = e / C, i = e % C;
        const int64_t tl = it / N2, n2 = it % N2, t = x->t0 + tl;
        const int64_t s = x->tok[2 * t], kvb0 = x->tok[2 * t + 1];
        const int64_t h0 = tl * N1 + n2 * G; /* first query-head row of the group (tile-local) */
        const int64_t gbi = x->gblk[(t * N2 + n2) * C + i];
        const int64_t nvis = visible_keys(p, s, gbi - kvb0);
        const int64_t blk = n2 * p->NB + gbi;
        float *pi = x->P + e * G * Bp;
        float *di = x->dS + e * G * Bp;
        if (p->use_bf16) {
            kn->gemm_bf16(G, Bp, (p->D + 1) / 2 * 2, x->qb + h0 * Dp, Dp,
                          (const uint16_t *)(const void *)(x->kt + blk * p->D * Bp), pi, Bp);
            kn->gemm_bf16(G, Bp, (p->Dv + 1) / 2 * 2, x->dob + h0 * Dvp, Dvp,
                          (const uint16_t *)(const void *)(x->vt + blk * p->Dv * Bp), di, Bp);
        } else {
            nsa_panel one = {x->q32 + h0 * Dp, x->kt + blk * p->D * Bp};
            nsa_gemm_args ga = {.m = G, .n = Bp, .k = p->D, .panels = &one, .npanels = 1, .a_sm = Dp,
                                .a_sk = 1, .ldb = Bp, .c = pi, .ldc = Bp, .accumulate = 0};
            kn->gemm(&ga);
            one.a = x->do32 + h0 * Dvp;
            one.b = x->vt + blk * p->Dv * Bp;
            ga.k = p->Dv;
            ga.a_sm = Dvp;
            ga.c = di;
            kn->gemm(&ga);
        }
        for (int64_t g = 0; g < G; g++) {
            kn->pgrad(pi + g * Bp, di + g * Bp, Bp, nvis, p->scale, x->mx[h0 + g], x->sm[h0 + g], x->dsum[h0 + g]);
        }
    }
}

/* Pass 1b, items (local token, n2): dq = dS K over the visible blocks in
 * selection order, cast and written. */
static void pass1_dq(void *ctx, int64_t begin, int64_t end) {
    nsa_ctx *x = ctx;
    const nsa_sag_plan *p = x->p;
    const int64_t G = p->G, C = p->C, B = p->B, Bp = p->Bp, Dp = p->Dp, N2 = p->N2;
    const size_t pan_bytes = ((size_t)C * sizeof(nsa_panel) + 63u) & ~(size_t)63u;
    char *scr = pa_thread_scratch(pan_bytes + (size_t)(G * Dp) * sizeof(float));
    if (scr == NULL) {
        atomic_store(&x->oom, 1);
        return;
    }
    nsa_panel *pan = (nsa_panel *)(void *)scr;
    float *dqb = (float *)(void *)(scr + pan_bytes);
    for (int64_t it = begin; it < end; it++) {
        const int64_t tl = it / N2, n2 = it % N2, t = x->t0 + tl;
        const int64_t s = x->tok[2 * t], kvb0 = x->tok[2 * t + 1];
        const float *dslot = x->dS + it * C * G * Bp;
        const int32_t *gb = x->gblk + (t * N2 + n2) * C;
        int64_t npan = 0;
        for (int64_t i = 0; i < C; i++) {
            if (visible_keys(p, s, gb[i] - kvb0) <= 0) continue; /* fully masked: P = dS = 0, skipped */
            pan[npan].a = dslot + i * G * Bp;
            pan[npan].b = x->k32 + (n2 * p->T2 + (int64_t)gb[i] * B) * Dp;
            npan++;
        }
        const nsa_gemm_args gq = {.m = G, .n = Dp, .k = B, .panels = pan, .npanels = npan, .a_sm = Bp, .a_sk = 1,
                                  .ldb = Dp, .c = dqb, .ldc = Dp, .accumulate = 0};
        p->kern.gemm(&gq);
        for (int64_t g = 0; g < G; g++) nsa_write_row(&p->dq, t, n2 * G + g, p->D, dqb + g * Dp, p->scale);
    }
}

/* ---- inverse index of the current tile (sequential, deterministic) ---- */

static void build_index(nsa_ctx *x) {
    const nsa_sag_plan *p = x->p;
    const int64_t N2 = p->N2, C = p->C, NB = p->NB;
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

/* ---- pass 2, items (n2, key block, part): part 0 = dk, 1 = dv ---- */

static void pass2(void *ctx, int64_t begin, int64_t end) {
    nsa_ctx *x = ctx;
    const nsa_sag_plan *p = x->p;
    const int64_t G = p->G, C = p->C, B = p->B, Bp = p->Bp, N1 = p->N1, N2 = p->N2, NB = p->NB;
    const int64_t maxpairs = PA_MIN((int64_t)NSA_PASS2_MAX_PAIRS, x->tn * C);
    nsa_panel *pan = pa_thread_scratch((size_t)maxpairs * sizeof(nsa_panel));
    if (pan == NULL) {
        atomic_store(&x->oom, 1);
        return;
    }
    for (int64_t it = begin; it < end; it++) {
        const int64_t key = it / 2, part = it % 2;
        const int64_t n2 = key / NB, kb = key % NB;
        const int64_t lo = key ? x->cnt[key - 1] : 0, hi = x->cnt[key];
        const int64_t W = part ? p->Dvp : p->Dp;
        float *acc = (part ? x->dvacc : x->dkacc) + (n2 * p->T2 + kb * B) * W;
        const float *slots = part ? x->P : x->dS;
        const float *src = part ? x->do32 : x->q32;
        if (hi == lo && x->first_tile) memset(acc, 0, (size_t)(B * W) * sizeof(float));
        for (int64_t j0 = lo; j0 < hi; j0 += maxpairs) {
            const int64_t nj = PA_MIN(maxpairs, hi - j0);
            for (int64_t j = 0; j < nj; j++) {
                const int64_t e = x->ent[j0 + j];
                const int64_t tl = e / (N2 * C);
                pan[j].a = slots + e * G * Bp;
                pan[j].b = src + (tl * N1 + n2 * G) * W;
            }
            const nsa_gemm_args ga = {.m = B, .n = W, .k = G, .panels = pan, .npanels = nj, .a_sm = 1, .a_sk = Bp,
                                      .ldb = W, .c = acc, .ldc = W,
                                      .accumulate = !(x->first_tile && j0 == lo)};
            p->kern.gemm(&ga);
        }
        if (x->last_tile) {
            const pa_tview *out = part ? &p->dv : &p->dk;
            const int64_t n = part ? p->Dv : p->D;
            const float mul = part ? 1.0f : p->scale;
            for (int64_t r = 0; r < B; r++) nsa_write_row(out, kb * B + r, n2, n, acc + r * W, mul);
        }
    }
}

/* ---- the task ---- */

static int oom_fail(void) {
    return pa_fail(ACLNN_ERR_INNER_NULLPTR, "%s: out of memory for kernel scratch", NSA_SAG_RUN_API);
}


int nsa_sag_run(const void *plan, void *workspace, uint64_t workspace_size) {
    const nsa_sag_plan *p = plan;
    if (workspace == NULL || workspace_size < p->ws_size) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: workspace of %llu bytes is smaller than the %llu required",
                       NSA_SAG_RUN_API, (unsigned long long)workspace_size, (unsigned long long)p->ws_size);
    }
    char *ws = (char *)workspace + ((64u - ((uintptr_t)workspace & 63u)) & 63u);
    nsa_ctx x;
    memset(&x, 0, sizeof x);
    x.p = p;
    x.q32 = (float *)(void *)(ws + p->off_q32);
    x.do32 = (float *)(void *)(ws + p->off_do32);
    x.qb = (uint16_t *)(void *)(ws + p->off_qb);
    x.dob = (uint16_t *)(void *)(ws + p->off_dob);
    x.mx = (float *)(void *)(ws + p->off_mx);
    x.sm = (float *)(void *)(ws + p->off_sm);
    x.dsum = (float *)(void *)(ws + p->off_dsum);
    x.tok = (int64_t *)(void *)(ws + p->off_tok);
    x.gblk = (int32_t *)(void *)(ws + p->off_gblk);
    x.k32 = (float *)(void *)(ws + p->off_k32);
    x.kt = (float *)(void *)(ws + p->off_kt);
    x.vt = (float *)(void *)(ws + p->off_vt);
    x.dkacc = (float *)(void *)(ws + p->off_dkacc);
    x.dvacc = (float *)(void *)(ws + p->off_dvacc);
    x.P = (float *)(void *)(ws + p->off_p);
    x.dS = (float *)(void *)(ws + p->off_ds);
    x.cnt = (int64_t *)(void *)(ws + p->off_cnt);
    x.ent = (uint32_t *)(void *)(ws + p->off_ent);
    atomic_init(&x.oom, 0);

    int rc = nsa_index_topk(NSA_SAG_RUN_API, &p->topk, (const int64_t *)(const void *)((const char *)p + p->seq_q_off),
                            (const int64_t *)(const void *)((const char *)p + p->seq_kv_off), p->nbatch, p->N2,
                            p->C, p->B, x.tok, x.gblk);
    if (rc != ACLNN_SUCCESS) return rc;

    pa_parallel_for(p->N2 * p->NB, 1, pack_kv, &x);
    if (atomic_load(&x.oom)) return oom_fail();

    const int64_t row_elems = p->N1 * (p->D + 2 * p->Dv);
    const int64_t tgrain = PA_MAX((int64_t)1, (int64_t)16384 / PA_MAX((int64_t)1, row_elems));
    for (int64_t tile = 0; tile < p->ntiles; tile++) {
        x.t0 = tile * p->tile;
        x.tn = PA_MIN(p->tile, p->T1 - x.t0);
        x.first_tile = tile == 0;
        x.last_tile = tile == p->ntiles - 1;
        pa_parallel_for(x.tn, tgrain, pack_tokens, &x);
        if (atomic_load(&x.oom)) return oom_fail();
        build_index(&x);
        /* pass 1a: chunks of 8 pairs (independent of the thread count) */
        pa_parallel_for(x.cnt[p->N2 * p->NB - 1], 8, pass1_scores, &x);
        pa_parallel_for(x.tn * p->N2, 1, pass1_dq, &x);
        if (atomic_load(&x.oom)) return oom_fail();
        /* pass-2 items: grain independent of the thread count, 1 unless there are many */
        const int64_t items2 = p->N2 * p->NB * 2;
        pa_parallel_for(items2, PA_MAX((int64_t)1, items2 / 512), pass2, &x);
        if (atomic_load(&x.oom)) return oom_fail();
    }
    return ACLNN_SUCCESS;
}
