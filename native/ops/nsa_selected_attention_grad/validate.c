/* aclnnNsaSelectedAttentionGrad: parameter validation (GetWorkspaceSize).
 * Strict mode follows the vendor limits; PYACLNN_NSA_RELAXED=1 (read at each
 * GetWorkspaceSize) lifts the shape limits listed in README.md. */
#include <string.h>

#include "meta/pa_handles.h"
#include "ops/nsa_common/nsa_common.h"
#include "ops/nsa_selected_attention_grad/nsa_sag.h"

#define API NSA_SAG_API

int nsa_sag_validate(const nsa_sag_args *a, nsa_shape *sh) {
    memset(sh, 0, sizeof *sh);
    /* ---- required pointers ---- */
    const nsa_named req[] = {
        {a->q, "query"},
        {a->k, "key"},
        {a->v, "value"},
        {a->o, "attentionOut"},
        {a->dout, "attentionOutGrad"},
        {a->smax, "softmaxMax"},
        {a->ssum, "softmaxSum"},
        {a->topk, "topkIndices"},
        {a->layout, "inputLayout"},
        {a->dq, "dqOut"},
        {a->dk, "dkOut"},
        {a->dv, "dvOut"},
        {a->ws_size, "workspaceSize"},
        {a->executor, "executor"},
    };
    int rc = nsa_check_required(API, ACLNN_ERR_PARAM_NULLPTR, req, sizeof req / sizeof req[0]);
    if (rc != ACLNN_SUCCESS) return rc;
    if (strcmp(a->layout, "TND") != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: inputLayout must be \"TND\", got \"%.16s\"", API, a->layout);
    }
    const bool relaxed = nsa_relaxed_mode();

    /* ---- handles, formats, ranks, strides ---- */
    const nsa_named ten[] = {
        {a->q, "query"},         {a->k, "key"},           {a->v, "value"},
        {a->o, "attentionOut"},  {a->dout, "attentionOutGrad"}, {a->smax, "softmaxMax"},
        {a->ssum, "softmaxSum"}, {a->topk, "topkIndices"}, {a->dq, "dqOut"},
        {a->dk, "dkOut"},        {a->dv, "dvOut"},
    };
    if ((rc = nsa_check_tensors(API, ten, 11)) != ACLNN_SUCCESS) return rc;
    if (a->mask != NULL && (rc = nsa_check_tensor(API, a->mask, "attenMaskOptional", 2)) != ACLNN_SUCCESS) return rc;
    if (a->seq_q != NULL &&
        (rc = pa_handle_check(API, "actualSeqQLenOptional", a->seq_q, PA_HANDLE_INT_ARRAY)) != ACLNN_SUCCESS) {
        return rc;
    }
    if (a->seq_kv != NULL &&
        (rc = pa_handle_check(API, "actualSeqKvLenOptional", a->seq_kv, PA_HANDLE_INT_ARRAY)) != ACLNN_SUCCESS) {
        return rc;
    }
    if ((rc = nsa_check_outputs_no_overlap(API, ten + 8, 3)) != ACLNN_SUCCESS) return rc;

    /* ---- dtypes ---- */
    if ((rc = nsa_check_input_dtypes(API, a->q, ten + 1, 4, relaxed)) != ACLNN_SUCCESS ||
        (rc = nsa_check_dtypes(API, ten + 5, 2, ACL_FLOAT, "be FLOAT")) != ACLNN_SUCCESS ||
        (rc = nsa_check_dtypes(API, ten + 7, 1, ACL_INT32, "be INT32")) != ACLNN_SUCCESS) {
        return rc;
    }
    for (size_t i = 8; i < 11; i++) {
        const aclDataType dt = ((const aclTensor *)ten[i].p)->dtype;
        if (!(nsa_is_half(dt) || dt == ACL_FLOAT)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be FLOAT16, BFLOAT16 or FLOAT, got %s", API,
                           ten[i].name, pa_dtype_name(dt));
        }
    }
    if (a->mask != NULL && a->mask->dtype != ACL_BOOL && a->mask->dtype != ACL_UINT8) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: attenMaskOptional must be BOOL or UINT8, got %s", API,
                       pa_dtype_name(a->mask->dtype));
    }

    /* ---- attributes ---- */
    const int64_t B = a->block, C = a->count;
    if ((rc = nsa_check_attrs(API, B, C, a->sparse_mode, relaxed, 128, 8192)) != ACLNN_SUCCESS) return rc;

    /* ---- shapes ---- */
    const int64_t T1 = a->q->dims[0], N1 = a->q->dims[1], D = a->q->dims[2];
    const int64_t T2 = a->k->dims[0], N2 = a->k->dims[1];
    const int64_t Dv = a->v->dims[2];
    const nsa_shape_rule shapes[] = {
        {a->k, "key", {T2, N2, D}, "[T2,N2,D], D of query"},
        {a->v, "value", {T2, N2, Dv}, "[T2,N2,Dv], T2 and N2 of key"},
        {a->o, "attentionOut", {T1, N1, Dv}, "[T1,N1,Dv], T1 and N1 of query, Dv of value"},
        {a->dout, "attentionOutGrad", {T1, N1, Dv}, "[T1,N1,Dv], T1 and N1 of query, Dv of value"},
        {a->smax, "softmaxMax", {T1, N1, 8}, "[T1,N1,8]"},
        {a->ssum, "softmaxSum", {T1, N1, 8}, "[T1,N1,8]"},
        {a->topk, "topkIndices", {T1, N2, C}, "[T1,N2,selectedBlockCount]"},
        {a->dq, "dqOut", {T1, N1, D}, "the shape of query"},
        {a->dk, "dkOut", {T2, N2, D}, "the shape of key"},
        {a->dv, "dvOut", {T2, N2, Dv}, "the shape of value"},
    };
    if ((rc = nsa_check_shapes(API, shapes, sizeof shapes / sizeof shapes[0])) != ACLNN_SUCCESS) return rc;
    if ((rc = nsa_check_heads(API, N1, N2, a->head_num, relaxed)) != ACLNN_SUCCESS) return rc;
    if ((rc = nsa_check_dims(API, T1, T2, D, Dv, relaxed)) != ACLNN_SUCCESS) return rc;

    /* ---- batches ---- */
    if ((a->seq_q == NULL) != (a->seq_kv == NULL)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: actualSeqQLenOptional and actualSeqKvLenOptional must be given together (got %s only)",
                       API, a->seq_q != NULL ? "actualSeqQLenOptional" : "actualSeqKvLenOptional");
    }
    int64_t nbatch = 1;
    if (a->seq_q != NULL) {
        if ((rc = nsa_check_seq_pair(API, a->seq_q, a->seq_kv, T1, T2, 0)) != ACLNN_SUCCESS) return rc;
        nbatch = (int64_t)a->seq_q->size;
    }
    if ((rc = nsa_check_kv_lengths(API, a->seq_kv, nbatch, T2, B, C, relaxed)) != ACLNN_SUCCESS) return rc;

    *sh = nsa_shape_of(T1, T2, N1, N2, D, Dv, B, C, nbatch);
    return ACLNN_SUCCESS;
}
