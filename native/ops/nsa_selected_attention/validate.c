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
    const struct {
        const void *p;
        const char *name;
    } req[] = {
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
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        if (req[i].p == NULL) {
            return pa_fail(ACLNN_ERR_INNER_NULLPTR, "%s: %s must not be NULL", API, req[i].name);
        }
    }
    if (all_outputs_empty(a)) { /* as the vendor: success, nothing runs */
        *empty = true;
        return ACLNN_SUCCESS;
    }
    if (strcmp(a->layout, "TND") != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: inputLayout must be \"TND\", got \"%.16s\"", API, a->layout);
    }
    const bool relaxed = nsa_relaxed_mode();

    /* ---- handles, formats, ranks, strides ---- */
    const struct {
        const aclTensor *t;
        const char *name;
    } ten[] = {
        {a->q, "query"},          {a->k, "key"},           {a->v, "value"},         {a->topk, "topkIndices"},
        {a->smax, "softmaxMaxOut"}, {a->ssum, "softmaxSumOut"}, {a->out, "attentionOut"},
    };
    int rc;
    for (size_t i = 0; i < sizeof ten / sizeof ten[0]; i++) {
        if ((rc = nsa_check_tensor(API, ten[i].t, ten[i].name, 3)) != ACLNN_SUCCESS) return rc;
    }
    if (a->mask != NULL && (rc = nsa_check_tensor(API, a->mask, "attenMaskOptional", 2)) != ACLNN_SUCCESS) {
        return rc;
    }
    if ((rc = pa_handle_check(API, "actualSeqQLenOptional", a->seq_q, PA_HANDLE_INT_ARRAY)) != ACLNN_SUCCESS ||
        (rc = pa_handle_check(API, "actualSeqKvLenOptional", a->seq_kv, PA_HANDLE_INT_ARRAY)) != ACLNN_SUCCESS) {
        return rc;
    }
    for (size_t i = 4; i < 7; i++) {
        if ((rc = nsa_check_no_overlap(API, ten[i].t, ten[i].name)) != ACLNN_SUCCESS) return rc;
    }

    /* ---- dtypes ---- */
    const aclDataType idt = a->q->dtype;
    if (!(nsa_is_half(idt) || (relaxed && idt == ACL_FLOAT))) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: query must be FLOAT16 or BFLOAT16%s, got %s", API,
                       relaxed ? " (or FLOAT in relaxed mode)" : "", pa_dtype_name(idt));
    }
    const aclTensor *same[3] = {a->k, a->v, a->out};
    const char *same_name[3] = {"key", "value", "attentionOut"};
    for (int i = 0; i < 3; i++) {
        if (same[i]->dtype != idt) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have the dtype of query (%s), got %s", API,
                           same_name[i], pa_dtype_name(idt), pa_dtype_name(same[i]->dtype));
        }
    }
    if (a->topk->dtype != ACL_INT32) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: topkIndices must be INT32, got %s", API,
                       pa_dtype_name(a->topk->dtype));
    }
    for (size_t i = 4; i < 6; i++) {
        if (ten[i].t->dtype != ACL_FLOAT) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be FLOAT, got %s", API, ten[i].name,
                           pa_dtype_name(ten[i].t->dtype));
        }
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
    {
        const int64_t kshape[3] = {T2, N2, D};
        const int64_t vshape[3] = {T2, N2, Dv};
        const int64_t tshape[3] = {T1, N2, C};
        const int64_t sshape[3] = {T1, N1, 8};
        const int64_t oshape[3] = {T1, N1, Dv};
        if ((rc = nsa_check_shape3(API, a->k, "key", kshape, "[T2,N2,D], D of query")) ||
            (rc = nsa_check_shape3(API, a->v, "value", vshape, "[T2,N2,Dv], T2 and N2 of key")) ||
            (rc = nsa_check_shape3(API, a->topk, "topkIndices", tshape, "[T1,N2,selectedBlockCount]")) ||
            (rc = nsa_check_shape3(API, a->smax, "softmaxMaxOut", sshape, "[T1,N1,8]")) ||
            (rc = nsa_check_shape3(API, a->ssum, "softmaxSumOut", sshape, "[T1,N1,8]")) ||
            (rc = nsa_check_shape3(API, a->out, "attentionOut", oshape,
                                   "[T1,N1,Dv], T1 and N1 of query, Dv of value"))) {
            return rc;
        }
    }
    if ((rc = nsa_check_heads(API, N1, N2, a->head_num, relaxed)) != ACLNN_SUCCESS) return rc;
    if ((rc = nsa_check_dims(API, T1, T2, D, Dv, relaxed)) != ACLNN_SUCCESS) return rc;

    /* ---- batches ---- */
    if (a->seq_q->size != a->seq_kv->size) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: actualSeqQLenOptional and actualSeqKvLenOptional must have equal lengths, got %llu "
                       "and %llu",
                       API, (unsigned long long)a->seq_q->size, (unsigned long long)a->seq_kv->size);
    }
    if (!relaxed && a->seq_q->size > NSA_SA_MAX_BATCH) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the batch count (length of actualSeqQLenOptional) must be <= %d, got %llu",
                       API, NSA_SA_MAX_BATCH, (unsigned long long)a->seq_q->size);
    }
    if ((rc = nsa_check_seq(API, a->seq_q, "actualSeqQLenOptional", T1, "T1")) != ACLNN_SUCCESS) return rc;
    if ((rc = nsa_check_seq(API, a->seq_kv, "actualSeqKvLenOptional", T2, "T2")) != ACLNN_SUCCESS) return rc;
    const int64_t nbatch = (int64_t)a->seq_q->size;
    if ((rc = nsa_check_kv_lengths(API, a->seq_kv, nbatch, T2, B, C, relaxed)) != ACLNN_SUCCESS) return rc;

    sh->T1 = T1;
    sh->T2 = T2;
    sh->N1 = N1;
    sh->N2 = N2;
    sh->G = N1 / N2;
    sh->D = D;
    sh->Dv = Dv;
    sh->B = B;
    sh->C = C;
    sh->nbatch = nbatch;
    return ACLNN_SUCCESS;
}
