/* aclnnNsaSelectedAttentionGradGetWorkspaceSize: validate, then build the plan
 * blob (struct + cumulative length arrays) and the executor. The workspace
 * formula is documented in README.md and implemented by nsa_sag_layout. */
#include <stdlib.h>
#include <string.h>

#include "aclnnop/aclnn_nsa_selected_attention_grad.h"
#include "ops/nsa_common/nsa_common.h"
#include "ops/nsa_selected_attention_grad/nsa_sag.h"

bool nsa_sag_layout(nsa_sag_plan *p) {
    const nsa_shape *sh = &p->core.sh;
    const int dot = p->core.dot;
    const int half = p->core.btype != NSA_B_F32;   /* fp32 GEMM: 16-bit copies of Q and dO rows */
    const int64_t hb = half ? 6 : 4;               /* fp32 GEMM: bytes per packed Q / dO element */

    /* One pair's P and dS slots (bytes): fp32 G x Bp each, or for the dot GEMM the
     * bf16 pairs p2 [Gp/2][Bp] and ds2 [Gp/2][Bp] words, then ds16 [G][Bp] bf16. */
    p->slot_p = dot ? sh->Gp * sh->Bp * 2 : sh->G * sh->Bp * 4;
    p->slot_ds = dot ? (sh->Gp + sh->G) * sh->Bp * 2 : sh->G * sh->Bp * 4;
    /* tokens per tile: one token's tile-sized arrays take
     *   N2*C*(slot_p + slot_ds + 4) + N1*12 + qd bytes
     * (P and dS, index entries, max/sum/Dsum, packed Q and dO: fp32 GEMM N1*(Dp+Dvp)*hb,
     * dot GEMM N1*(Dp+Dvp)*2 rows + N2*Gp*(Dp+Dvp)*2 transposed) */
    int64_t per_tok, t1, t2, qd;
    const int64_t dd = sh->Dp + sh->Dvp;
    if (!nsa_mul3(sh->N2, sh->C, p->slot_p + p->slot_ds + 4, &t1) || !pa_mul_ok(sh->N1, 12, &t2) ||
        !pa_mul_ok(sh->N1, dd * (dot ? 2 : hb), &qd) || __builtin_add_overflow(t1, t2, &per_tok) ||
        __builtin_add_overflow(per_tok, qd, &per_tok)) {
        return false;
    }
    if (dot && (!nsa_mul3(sh->N2, sh->Gp, dd * 2, &qd) || __builtin_add_overflow(per_tok, qd, &per_tok))) {
        return false;
    }
    int64_t tile = NSA_SAG_TILE_BYTES / per_tok;
    /* testing knob: force a smaller tile (results must not change) */
    const char *force = getenv("PYACLNN_NSA_TILE_TOKENS");
    if (force != NULL) {
        char *end = NULL;
        const long long v = strtoll(force, &end, 10);
        if (end != force && *end == '\0' && v > 0 && v < tile) tile = (int64_t)v;
    }
    if (tile < 1) tile = 1;
    if (tile > sh->T1) tile = sh->T1;
    p->tile = tile;
    p->ntiles = (sh->T1 + tile - 1) / tile;

    /* element counts; per (n2, key block): the packed K / V layouts (nsa_kv_pack) and
     * the dk / dv fp32 accumulators ([B][Dp|Dvp], or transposed [Dp|Dvp][Bp] for the
     * dot GEMM) */
    int64_t qn, don, tn, gn, pn, nblk, qcn, docn; /* pn: the tile's pairs (slots, index entries) */
    const int64_t accr = dot ? sh->Bp : sh->B; /* accumulator rows (dot: columns) per block */
    if (!nsa_mul3(tile, sh->N1, sh->Dp, &qn) || !nsa_mul3(tile, sh->N1, sh->Dvp, &don) ||
        !pa_mul_ok(tile, sh->N1, &tn) || !nsa_mul3(sh->T1, sh->N2, sh->C, &gn) ||
        !nsa_mul3(tile, sh->N2, sh->C, &pn) || !pa_mul_ok(sh->N2, sh->NB, &nblk)) {
        return false;
    }
    if (dot) { /* transposed bf16 copies [tile][N2][Dp|Dvp][Gp] */
        if (!nsa_mul3(tile, sh->N2, sh->Dp * sh->Gp, &qcn) || !nsa_mul3(tile, sh->N2, sh->Dvp * sh->Gp, &docn)) {
            return false;
        }
    } else {
        qcn = half ? qn : 0;
        docn = half ? don : 0;
    }
    uint64_t off = 0;
    const int64_t rowb = dot ? 2 : 4; /* Q / dO rows: bf16 (dot) or fp32 */
    if (!nsa_ws_section(&off, &p->off_qrows, qn, rowb) || !nsa_ws_section(&off, &p->off_dorows, don, rowb) ||
        !nsa_ws_section(&off, &p->off_qcopy, qcn, 2) || !nsa_ws_section(&off, &p->off_docopy, docn, 2) ||
        !nsa_ws_section(&off, &p->off_mx, tn, 4) || !nsa_ws_section(&off, &p->off_sm, tn, 4) ||
        !nsa_ws_section(&off, &p->off_dsum, tn, 4) || !nsa_ws_section(&off, &p->off_tok, sh->T1, 16) ||
        !nsa_ws_section(&off, &p->off_gblk, gn, 4) ||
        !nsa_ws_section(&off, &p->off_krows, nblk, p->core.blk_krows) ||
        !nsa_ws_section(&off, &p->off_kt, nblk, p->core.blk_kt) ||
        !nsa_ws_section(&off, &p->off_vt, nblk, p->core.blk_vt) ||
        !nsa_ws_section(&off, &p->off_dkacc, nblk, accr * sh->Dp * 4) ||
        !nsa_ws_section(&off, &p->off_dvacc, nblk, accr * sh->Dvp * 4) ||
        !nsa_ws_section(&off, &p->off_p, pn, p->slot_p) || !nsa_ws_section(&off, &p->off_ds, pn, p->slot_ds) ||
        !nsa_ws_section(&off, &p->off_cnt, nblk + 1, 8) || !nsa_ws_section(&off, &p->off_ent, pn, 4)) {
        return false;
    }
    if (off > UINT64_MAX - 64u) return false;
    p->ws_size = off + 64u; /* slack to align a caller's workspace to 64 bytes */
    return true;
}

PA_API aclnnStatus aclnnNsaSelectedAttentionGradGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *attentionOut,
    const aclTensor *attentionOutGrad, const aclTensor *softmaxMax, const aclTensor *softmaxSum,
    const aclTensor *topkIndices, const aclIntArray *actualSeqQLenOptional, const aclIntArray *actualSeqKvLenOptional,
    const aclTensor *attenMaskOptional, double scaleValue, int64_t selectedBlockSize, int64_t selectedBlockCount,
    int64_t headNum, char *inputLayout, int64_t sparseMode, const aclTensor *dqOut, const aclTensor *dkOut,
    const aclTensor *dvOut, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const nsa_sag_args args = {
        .q = query,
        .k = key,
        .v = value,
        .o = attentionOut,
        .dout = attentionOutGrad,
        .smax = softmaxMax,
        .ssum = softmaxSum,
        .topk = topkIndices,
        .seq_q = actualSeqQLenOptional,
        .seq_kv = actualSeqKvLenOptional,
        .mask = attenMaskOptional,
        .scale = scaleValue,
        .block = selectedBlockSize,
        .count = selectedBlockCount,
        .head_num = headNum,
        .layout = inputLayout,
        .sparse_mode = sparseMode,
        .dq = dqOut,
        .dk = dkOut,
        .dv = dvOut,
        .ws_size = workspaceSize,
        .executor = executor,
    };
    nsa_shape sh;
    int rc = nsa_sag_validate(&args, &sh);
    if (rc != ACLNN_SUCCESS) return rc;
    if (!nsa_shape_finish(&sh)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the problem is too large (more than 2^31 KV blocks)",
                       NSA_SAG_API);
    }

    nsa_sag_plan p;
    memset(&p, 0, sizeof p);
    if ((rc = nsa_core_init(NSA_SAG_API, &p.core, &sh, scaleValue, query->dtype)) != ACLNN_SUCCESS) return rc;
    p.q = pa_tview_of(query);
    p.k = pa_tview_of(key);
    p.v = pa_tview_of(value);
    p.o = pa_tview_of(attentionOut);
    p.dout = pa_tview_of(attentionOutGrad);
    p.smax = pa_tview_of(softmaxMax);
    p.ssum = pa_tview_of(softmaxSum);
    p.topk = pa_tview_of(topkIndices);
    p.has_mask = attenMaskOptional != NULL;
    if (p.has_mask) p.mask = pa_tview_of(attenMaskOptional);
    p.dq = pa_tview_of(dqOut);
    p.dk = pa_tview_of(dkOut);
    p.dv = pa_tview_of(dvOut);
    p.sparse_mode = (int32_t)sparseMode;
    if (!nsa_sag_layout(&p)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the problem is too large (workspace size overflows)",
                       NSA_SAG_API);
    }
    const size_t in_views[9] = {
        offsetof(nsa_sag_plan, q),    offsetof(nsa_sag_plan, k),    offsetof(nsa_sag_plan, v),
        offsetof(nsa_sag_plan, o),    offsetof(nsa_sag_plan, dout), offsetof(nsa_sag_plan, smax),
        offsetof(nsa_sag_plan, ssum), offsetof(nsa_sag_plan, topk),
        p.has_mask ? offsetof(nsa_sag_plan, mask) : SIZE_MAX,
    };
    const size_t out_views[3] = {offsetof(nsa_sag_plan, dq), offsetof(nsa_sag_plan, dk),
                                 offsetof(nsa_sag_plan, dv)};
    return nsa_make_executor(NSA_SAG_API, &nsa_sag_op_def, &p, sizeof p, &p.core, actualSeqQLenOptional,
                             actualSeqKvLenOptional, p.ws_size, in_views, 9, out_views, 3, workspaceSize, executor);
}
