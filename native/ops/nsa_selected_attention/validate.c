/* aclnnNsaSelectedAttention: parameter validation (GetWorkspaceSize).
 * Strict mode follows the documented vendor limits; PYACLNN_NSA_RELAXED=1
 * lifts the same shape limits as for the grad (README.md). */
#include <string.h>

#include "meta/pa_handles.h"
#include "ops/nsa_common/nsa_common.h"
#include "ops/nsa_selected_attention/nsa_sa.h"

#define API NSA_SA_API

/* Strict limits of the forward (the grad allows 128 selected blocks). */
#define NSA_SA_MAX_COUNT 32
#define NSA_SA_MAX_BATCH 1024

static bool all_outputs_empty(const nsa_sa_args *a) {
    const aclTensor *o[3] = {a->smax, a->ssum, a->out};
    for (int i = 0; i < 3; i++) {
        if (!pa_handle_live(o[i], PA_HANDLE_TENSOR) || pa_tensor_numel(o[i]) != 0) return false;
    }
    return true;
}

int nsa_sa_validate(const nsa_sa_args *a, nsa_shape *sh, bool *empty) {
    memset(sh, 0, sizeof *sh);
    *empty = false;
    /* ---- required pointers: the vendor's aclnn layer answers 561103 ---- */
    const nsa_named req[] = {
        {a->q, "query"},
        {a->k, "key"},
        {a->v, "value"},
        {a->topk, "topkIndices"},
        {a->seq_q, "actualSeqQLenOptional"},
        {a->seq_kv, "actualSeqKvLenOptional"},
        {a->layout, "inputLayout"},
        {a->smax, "softmaxMaxOut"},
        {a->ssum, "softmaxSumOut"},
        {a->out, "attentionOut"},
        {a->ws_size, "workspaceSize"},
        {a->executor, "executor"},
    };
    int rc = nsa_check_required(API, ACLNN_ERR_INNER_NULLPTR, req, sizeof req / sizeof req[0]);
    if (rc != ACLNN_SUCCESS) return rc;
    if (all_outputs_empty(a)) { /* as the vendor: success, nothing runs */
        *empty = true;
        return ACLNN_SUCCESS;
    }
    if (strcmp(a->layout, "TND") != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: inputLayout must be \"TND\", got \"%.16s\"", API, a->layout);
    }
    const bool relaxed = nsa_relaxed_mode();

    /* ---- handles, formats, ranks, strides ---- */
    const nsa_named ten[] = {
        {a->q, "query"},          {a->k, "key"},           {a->v, "value"},         {a->topk, "topkIndices"},
        {a->smax, "softmaxMaxOut"}, {a->ssum, "softmaxSumOut"}, {a->out, "attentionOut"},
    };
    if ((rc = nsa_check_tensors(API, ten, 7)) != ACLNN_SUCCESS) return rc;
    if (a->mask != NULL && (rc = nsa_check_tensor(API, a->mask, "attenMaskOptional", 2)) != ACLNN_SUCCESS) {
        return rc;
    }
    if ((rc = pa_handle_check(API, "actualSeqQLenOptional", a->seq_q, PA_HANDLE_INT_ARRAY)) != ACLNN_SUCCESS ||
        (rc = pa_handle_check(API, "actualSeqKvLenOptional", a->seq_kv, PA_HANDLE_INT_ARRAY)) != ACLNN_SUCCESS) {
        return rc;
    }
    if ((rc = nsa_check_outputs_no_overlap(API, ten + 4, 3)) != ACLNN_SUCCESS) return rc;

    /* ---- dtypes ---- */
    const nsa_named same[3] = {{a->k, "key"}, {a->v, "value"}, {a->out, "attentionOut"}};
    if ((rc = nsa_check_input_dtypes(API, a->q, same, 3, relaxed)) != ACLNN_SUCCESS ||
        (rc = nsa_check_dtypes(API, ten + 3, 1, ACL_INT32, "be INT32")) != ACLNN_SUCCESS ||
        (rc = nsa_check_dtypes(API, ten + 4, 2, ACL_FLOAT, "be FLOAT")) != ACLNN_SUCCESS) {
        return rc;
    }
    if (a->mask != NULL && a->mask->dtype != ACL_BOOL && a->mask->dtype != ACL_UINT8) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: attenMaskOptional must be BOOL or UINT8, got %s", API,
                       pa_dtype_name(a->mask->dtype));
    }

    /* ---- attributes ---- */
    const int64_t B = a->block, C = a->count;
    if ((rc = nsa_check_attrs(API, B, C, a->sparse_mode, relaxed, NSA_SA_MAX_COUNT, 0)) != ACLNN_SUCCESS) return rc;

    /* ---- shapes ---- */
    const int64_t T1 = a->q->dims[0], N1 = a->q->dims[1], D = a->q->dims[2];
    const int64_t T2 = a->k->dims[0], N2 = a->k->dims[1];
    const int64_t Dv = a->v->dims[2];
    const nsa_shape_rule shapes[] = {
        {a->k, "key", {T2, N2, D}, "[T2,N2,D], D of query"},
        {a->v, "value", {T2, N2, Dv}, "[T2,N2,Dv], T2 and N2 of key"},
        {a->topk, "topkIndices", {T1, N2, C}, "[T1,N2,selectedBlockCount]"},
        {a->smax, "softmaxMaxOut", {T1, N1, 8}, "[T1,N1,8]"},
        {a->ssum, "softmaxSumOut", {T1, N1, 8}, "[T1,N1,8]"},
        {a->out, "attentionOut", {T1, N1, Dv}, "[T1,N1,Dv], T1 and N1 of query, Dv of value"},
    };
    if ((rc = nsa_check_shapes(API, shapes, sizeof shapes / sizeof shapes[0])) != ACLNN_SUCCESS) return rc;
    if ((rc = nsa_check_heads(API, N1, N2, a->head_num, relaxed)) != ACLNN_SUCCESS) return rc;
    if ((rc = nsa_check_dims(API, T1, T2, D, Dv, relaxed)) != ACLNN_SUCCESS) return rc;

    /* ---- batches ---- */
    rc = nsa_check_seq_pair(API, a->seq_q, a->seq_kv, T1, T2, relaxed ? 0 : NSA_SA_MAX_BATCH);
    if (rc != ACLNN_SUCCESS) return rc;
    const int64_t nbatch = (int64_t)a->seq_q->size;
    if ((rc = nsa_check_kv_lengths(API, a->seq_kv, nbatch, T2, B, C, relaxed)) != ACLNN_SUCCESS) return rc;

    *sh = nsa_shape_of(T1, T2, N1, N2, D, Dv, B, C, nbatch);
    return ACLNN_SUCCESS;
}
