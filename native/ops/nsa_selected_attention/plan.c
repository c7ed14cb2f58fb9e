/* aclnnNsaSelectedAttentionGetWorkspaceSize: validate, then build the plan blob
 * (struct + cumulative length arrays) and the executor. The workspace formula
 * is documented in README.md and implemented by nsa_sa_layout. */
#include <stdatomic.h>
#include <string.h>

#include "aclnnop/aclnn_nsa_selected_attention.h"
#include "ops/nsa_common/nsa_common.h"
#include "ops/nsa_selected_attention/nsa_sa.h"

bool nsa_sa_layout(nsa_sa_plan *p) {
    const nsa_shape *sh = &p->core.sh;
    /* K^T blocks and V rows, one per (n2, key block), in nsa_kv_pack's layouts */
    int64_t gn, nblk;
    if (!nsa_mul3(sh->T1, sh->N2, sh->C, &gn) || !pa_mul_ok(sh->N2, sh->NB, &nblk)) return false;
    uint64_t off = 0;
    if (!nsa_ws_section(&off, &p->off_tok, sh->T1, 16) || !nsa_ws_section(&off, &p->off_gblk, gn, 4) ||
        !nsa_ws_section(&off, &p->off_kt, nblk, p->core.blk_kt) ||
        !nsa_ws_section(&off, &p->off_vrows, nblk, p->core.blk_vrows)) {
        return false;
    }
    if (off > UINT64_MAX - 64u) return false;
    p->ws_size = off + 64u; /* slack to align a caller's workspace to 64 bytes */
    return true;
}

/* sparseMode 2 without attenMask: the vendor's forward runs unmasked while its
 * grad masks; said once per process at warning level (aclAppLog's rule:
 * printed when ASCEND_GLOBAL_LOG_LEVEL is 0, 1 or 2). */
static void warn_unmasked_sparse2(void) {
    static atomic_int said = 0;
    if (atomic_exchange(&said, 1) != 0) return;
    aclAppLog(ACL_WARNING, NSA_SA_API, __FILE__, __LINE__,
              "sparseMode 2 without attenMaskOptional: the forward runs unmasked (as the vendor kernel), but "
              "aclnnNsaSelectedAttentionGrad with sparseMode 2 masks causally, so its gradients do not belong to "
              "this forward; pass an attenMask (its values are never read) or use sparseMode 0");
}

PA_API aclnnStatus aclnnNsaSelectedAttentionGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *topkIndices,
    const aclTensor *attenMaskOptional, const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional, double scaleValue, int64_t headNum, char *inputLayout,
    int64_t sparseMode, int64_t selectedBlockSize, int64_t selectedBlockCount, const aclTensor *softmaxMaxOut,
    const aclTensor *softmaxSumOut, const aclTensor *attentionOut, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
    const nsa_sa_args args = {
        .q = query,
        .k = key,
        .v = value,
        .topk = topkIndices,
        .mask = attenMaskOptional,
        .seq_q = actualSeqQLenOptional,
        .seq_kv = actualSeqKvLenOptional,
        .scale = scaleValue,
        .head_num = headNum,
        .layout = inputLayout,
        .sparse_mode = sparseMode,
        .block = selectedBlockSize,
        .count = selectedBlockCount,
        .smax = softmaxMaxOut,
        .ssum = softmaxSumOut,
        .out = attentionOut,
        .ws_size = workspaceSize,
        .executor = executor,
    };
    nsa_shape sh;
    bool empty;
    int rc = nsa_sa_validate(&args, &sh, &empty);
    if (rc != ACLNN_SUCCESS) return rc;

    nsa_sa_plan p;
    memset(&p, 0, sizeof p);
    if (empty) {
        p.empty = 1;
        aclOpExecutor *ex = pa_executor_create(&nsa_sa_op_def, &p, sizeof p, 0, NULL, 0, NULL, 0);
        if (ex == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
        *workspaceSize = 0;
        *executor = ex;
        return ACLNN_SUCCESS;
    }
    if (!nsa_shape_finish(&sh)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the problem is too large (more than 2^31 KV blocks)",
                       NSA_SA_API);
    }
    if ((rc = nsa_core_init(NSA_SA_API, &p.core, &sh, scaleValue, query->dtype)) != ACLNN_SUCCESS) return rc;
    if (sparseMode == 2 && attenMaskOptional == NULL) warn_unmasked_sparse2();
    p.q = pa_tview_of(query);
    p.k = pa_tview_of(key);
    p.v = pa_tview_of(value);
    p.topk = pa_tview_of(topkIndices);
    const bool has_mask = attenMaskOptional != NULL;
    if (has_mask) p.mask = pa_tview_of(attenMaskOptional);
    p.smax = pa_tview_of(softmaxMaxOut);
    p.ssum = pa_tview_of(softmaxSumOut);
    p.out = pa_tview_of(attentionOut);
    p.causal = sparseMode == 2 && has_mask;
    if (!nsa_sa_layout(&p)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the problem is too large (workspace size overflows)",
                       NSA_SA_API);
    }
    const size_t in_views[5] = {
        offsetof(nsa_sa_plan, q), offsetof(nsa_sa_plan, k), offsetof(nsa_sa_plan, v), offsetof(nsa_sa_plan, topk),
        has_mask ? offsetof(nsa_sa_plan, mask) : SIZE_MAX,
    };
    const size_t out_views[3] = {offsetof(nsa_sa_plan, smax), offsetof(nsa_sa_plan, ssum),
                                 offsetof(nsa_sa_plan, out)};
    return nsa_make_executor(NSA_SA_API, &nsa_sa_op_def, &p, sizeof p, &p.core, actualSeqQLenOptional,
                             actualSeqKvLenOptional, p.ws_size, in_views, 5, out_views, 3, workspaceSize, executor);
}
