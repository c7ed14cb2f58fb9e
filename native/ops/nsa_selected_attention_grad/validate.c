/* aclnnNsaSelectedAttentionGrad: parameter validation (GetWorkspaceSize).
 * Strict mode follows the vendor limits; PYACLNN_NSA_RELAXED=1 (read at each
 * GetWorkspaceSize) lifts the shape limits listed in README.md. */
#include <stdlib.h>
#include <string.h>

#include "ops/nsa_selected_attention_grad/nsa_sag.h"

#define API NSA_SAG_API

static bool relaxed_mode(void) {
    const char *e = getenv("PYACLNN_NSA_RELAXED");
    return e != NULL && strcmp(e, "1") == 0;
}

static bool is_half(aclDataType dt) { return dt == ACL_FLOAT16 || dt == ACL_BF16; }

/* Handle validity, plain format, rank, and the shared view rules. */
static int check_tensor(const aclTensor *t, const char *name, int32_t rank) {
    int rc = pa_handle_check(API, name, t, PA_HANDLE_TENSOR);
    if (rc != ACLNN_SUCCESS) return rc;
    if (!pa_format_is_plain(t->format)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have a plain (ND) format, got %s", API, name,
                       pa_format_name(t->format));
    }
    if (t->ndim != rank) {
        char buf[128];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be %d-D, got %d-D %s", API, name, (int)rank,
                       (int)t->ndim, pa_shape_str(t->dims, t->ndim, buf, sizeof buf));
    }
    return pa_tensor_check_view(API, name, t);
}

/* True when two elements of t may share an address: with the dims of size > 1
 * sorted by stride, each stride must exceed the span of the smaller ones
 * (sufficient for no overlap; it holds for every permutation or slice of a
 * dense layout). Outputs with overlap would be written by several chunks. */
static bool may_overlap(const aclTensor *t) {
    int64_t st[PA_MAX_DIMS], sz[PA_MAX_DIMS];
    int n = 0;
    for (int32_t i = 0; i < t->ndim; i++) {
        if (t->dims[i] > 1) {
            st[n] = t->strides[i];
            sz[n] = t->dims[i];
            n++;
        }
    }
    for (int i = 1; i < n; i++) { /* insertion sort by stride */
        for (int j = i; j > 0 && st[j] < st[j - 1]; j--) {
            const int64_t a = st[j], b = sz[j];
            st[j] = st[j - 1];
            sz[j] = sz[j - 1];
            st[j - 1] = a;
            sz[j - 1] = b;
        }
    }
    int64_t span = 0; /* largest offset reachable with the dims so far */
    for (int i = 0; i < n; i++) {
        if (st[i] <= span) return true;
        int64_t add;
        if (!pa_mul_ok(st[i], sz[i] - 1, &add) || __builtin_add_overflow(span, add, &span)) return true;
    }
    return false;
}

/* t->dims must equal want[0..2]. */
static int check_shape3(const aclTensor *t, const char *name, const int64_t want[3], const char *rule) {
    if (t->dims[0] == want[0] && t->dims[1] == want[1] && t->dims[2] == want[2]) return ACLNN_SUCCESS;
    char got[128], exp[128];
    pa_shape_str(t->dims, 3, got, sizeof got);
    pa_shape_str(want, 3, exp, sizeof exp);
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have shape %s (%s), got %s", API, name, exp, rule, got);
}

static int check_seq(const aclIntArray *a, const char *name, int64_t total, const char *tname) {
    if (a->size < 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must hold at least one cumulative length, got 0", API,
                       name);
    }
    if (a->values == NULL) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s has no values", API, name);
    }
    int64_t prev = 0;
    for (uint64_t i = 0; i < a->size; i++) {
        const int64_t v = a->values[i];
        if (v <= prev) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s must be cumulative lengths [s0, s0+s1, ...] with every batch length > 0, "
                           "got %lld after %lld at index %llu",
                           API, name, (long long)v, (long long)prev, (unsigned long long)i);
        }
        prev = v;
    }
    if (prev != total) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the last value of %s must equal %s = %lld, got %lld", API,
                       name, tname, (long long)total, (long long)prev);
    }
    return ACLNN_SUCCESS;
}

int nsa_sag_validate(const nsa_sag_args *a, nsa_sag_shape *sh) {
    /* ---- required pointers ---- */
    const struct {
        const void *p;
        const char *name;
    } req[] = {
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
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        if (req[i].p == NULL) {
            return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s must not be NULL", API, req[i].name);
        }
    }
    if (strcmp(a->layout, "TND") != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: inputLayout must be \"TND\", got \"%.16s\"", API, a->layout);
    }
    const bool relaxed = relaxed_mode();

    /* ---- handles, formats, ranks, strides ---- */
    const struct {
        const aclTensor *t;
        const char *name;
    } ten[] = {
        {a->q, "query"},         {a->k, "key"},           {a->v, "value"},
        {a->o, "attentionOut"},  {a->dout, "attentionOutGrad"}, {a->smax, "softmaxMax"},
        {a->ssum, "softmaxSum"}, {a->topk, "topkIndices"}, {a->dq, "dqOut"},
        {a->dk, "dkOut"},        {a->dv, "dvOut"},
    };
    int rc;
    for (size_t i = 0; i < sizeof ten / sizeof ten[0]; i++) {
        if ((rc = check_tensor(ten[i].t, ten[i].name, 3)) != ACLNN_SUCCESS) return rc;
    }
    if (a->mask != NULL && (rc = check_tensor(a->mask, "attenMaskOptional", 2)) != ACLNN_SUCCESS) return rc;
    if (a->seq_q != NULL &&
        (rc = pa_handle_check(API, "actualSeqQLenOptional", a->seq_q, PA_HANDLE_INT_ARRAY)) != ACLNN_SUCCESS) {
        return rc;
    }
    if (a->seq_kv != NULL &&
        (rc = pa_handle_check(API, "actualSeqKvLenOptional", a->seq_kv, PA_HANDLE_INT_ARRAY)) != ACLNN_SUCCESS) {
        return rc;
    }
    for (size_t i = 8; i < 11; i++) {
        if (may_overlap(ten[i].t)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s must not have overlapping elements (a zero or too small stride), got strides "
                           "[%lld,%lld,%lld]",
                           API, ten[i].name, (long long)ten[i].t->strides[0], (long long)ten[i].t->strides[1],
                           (long long)ten[i].t->strides[2]);
        }
    }

    /* ---- dtypes ---- */
    const aclDataType idt = a->q->dtype;
    if (!(is_half(idt) || (relaxed && idt == ACL_FLOAT))) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: query must be FLOAT16 or BFLOAT16%s, got %s", API,
                       relaxed ? " (or FLOAT in relaxed mode)" : "", pa_dtype_name(idt));
    }
    for (size_t i = 1; i < 5; i++) {
        if (ten[i].t->dtype != idt) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have the dtype of query (%s), got %s", API,
                           ten[i].name, pa_dtype_name(idt), pa_dtype_name(ten[i].t->dtype));
        }
    }
    for (size_t i = 5; i < 7; i++) {
        if (ten[i].t->dtype != ACL_FLOAT) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be FLOAT, got %s", API, ten[i].name,
                           pa_dtype_name(ten[i].t->dtype));
        }
    }
    if (a->topk->dtype != ACL_INT32) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: topkIndices must be INT32, got %s", API,
                       pa_dtype_name(a->topk->dtype));
    }
    for (size_t i = 8; i < 11; i++) {
        const aclDataType dt = ten[i].t->dtype;
        if (!(is_half(dt) || dt == ACL_FLOAT)) {
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
    if (relaxed) {
        if (B < 1 || B > 1024) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: selectedBlockSize must be in [1, 1024], got %lld", API,
                           (long long)B);
        }
        if (C < 1 || C > 1024) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: selectedBlockCount must be in [1, 1024], got %lld", API,
                           (long long)C);
        }
    } else {
        if (B < 16 || B > 128 || B % 16 != 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: selectedBlockSize must be a multiple of 16 in [16, 128], got %lld", API, (long long)B);
        }
        if (C < 1 || C > 128) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: selectedBlockCount must be in [1, 128], got %lld", API,
                           (long long)C);
        }
        if (C * B > 8192) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: selectedBlockCount * selectedBlockSize must be <= 8192, got %lld * %lld = %lld", API,
                           (long long)C, (long long)B, (long long)(C * B));
        }
    }
    if (a->sparse_mode != 0 && a->sparse_mode != 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: sparseMode must be 0 or 2, got %lld", API,
                       (long long)a->sparse_mode);
    }

    /* ---- shapes ---- */
    const int64_t T1 = a->q->dims[0], N1 = a->q->dims[1], D = a->q->dims[2];
    const int64_t T2 = a->k->dims[0], N2 = a->k->dims[1];
    const int64_t Dv = a->v->dims[2];
    {
        const int64_t kshape[3] = {T2, N2, D};
        const int64_t vshape[3] = {T2, N2, Dv};
        const int64_t oshape[3] = {T1, N1, Dv};
        const int64_t qshape[3] = {T1, N1, D};
        const int64_t sshape[3] = {T1, N1, 8};
        const int64_t tshape[3] = {T1, N2, C};
        if ((rc = check_shape3(a->k, "key", kshape, "[T2,N2,D], D of query")) ||
            (rc = check_shape3(a->v, "value", vshape, "[T2,N2,Dv], T2 and N2 of key")) ||
            (rc = check_shape3(a->o, "attentionOut", oshape, "[T1,N1,Dv], T1 and N1 of query, Dv of value")) ||
            (rc = check_shape3(a->dout, "attentionOutGrad", oshape,
                               "[T1,N1,Dv], T1 and N1 of query, Dv of value")) ||
            (rc = check_shape3(a->smax, "softmaxMax", sshape, "[T1,N1,8]")) ||
            (rc = check_shape3(a->ssum, "softmaxSum", sshape, "[T1,N1,8]")) ||
            (rc = check_shape3(a->topk, "topkIndices", tshape, "[T1,N2,selectedBlockCount]")) ||
            (rc = check_shape3(a->dq, "dqOut", qshape, "the shape of query")) ||
            (rc = check_shape3(a->dk, "dkOut", kshape, "the shape of key")) ||
            (rc = check_shape3(a->dv, "dvOut", vshape, "the shape of value"))) {
            return rc;
        }
    }
    if (a->head_num != N1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: headNum must equal N1 = query.shape[1] = %lld, got %lld", API,
                       (long long)N1, (long long)a->head_num);
    }
    const int64_t nmax = relaxed ? 1024 : 128;
    if (N1 < 1 || N1 > nmax) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: N1 (query heads) must be in [1, %lld], got %lld", API,
                       (long long)nmax, (long long)N1);
    }
    if (N2 < 1 || N2 > nmax) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: N2 (key/value heads) must be in [1, %lld], got %lld", API,
                       (long long)nmax, (long long)N2);
    }
    if (N1 % N2 != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: N1 (%lld, query heads) must be a multiple of N2 (%lld, key/value heads)", API, (long long)N1,
                       (long long)N2);
    }
    const int64_t G = N1 / N2;
    if (!relaxed && G > 32) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: G = N1/N2 (query heads per key/value head) must be in [1, 32], got %lld", API, (long long)G);
    }
    if (T1 < 1 || T2 < 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: T1 and T2 must be >= 1, got T1=%lld, T2=%lld", API,
                       (long long)T1, (long long)T2);
    }
    if (relaxed) {
        if (D < 1 || D > 65536) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: D (query/key head dim) must be in [1, 65536], got %lld",
                           API, (long long)D);
        }
        if (Dv < 1 || Dv > 1024) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: Dv (value head dim) must be in [1, 1024], got %lld", API,
                           (long long)Dv);
        }
    } else {
        if (D != 128 && D != 192) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: D (query/key head dim) must be 128 or 192, got %lld", API,
                           (long long)D);
        }
        if (Dv != 128 && Dv != 192) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: Dv (value head dim) must be 128 or 192, got %lld", API,
                           (long long)Dv);
        }
        if (Dv > D) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: Dv (%lld, value head dim) must not exceed D (%lld, query/key head dim)", API, (long long)Dv,
                           (long long)D);
        }
    }

    /* ---- batches ---- */
    if ((a->seq_q == NULL) != (a->seq_kv == NULL)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: actualSeqQLenOptional and actualSeqKvLenOptional must be given together (got %s only)",
                       API, a->seq_q != NULL ? "actualSeqQLenOptional" : "actualSeqKvLenOptional");
    }
    int64_t nbatch = 1;
    if (a->seq_q != NULL) {
        if (a->seq_q->size != a->seq_kv->size) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: actualSeqQLenOptional and actualSeqKvLenOptional must have equal lengths, got %llu "
                           "and %llu",
                           API, (unsigned long long)a->seq_q->size, (unsigned long long)a->seq_kv->size);
        }
        if ((rc = check_seq(a->seq_q, "actualSeqQLenOptional", T1, "T1")) != ACLNN_SUCCESS) return rc;
        if ((rc = check_seq(a->seq_kv, "actualSeqKvLenOptional", T2, "T2")) != ACLNN_SUCCESS) return rc;
        nbatch = (int64_t)a->seq_q->size;
    }
    const int64_t need = C * B;
    for (int64_t b = 0; b < nbatch; b++) {
        const int64_t lo = (a->seq_kv == NULL || b == 0) ? 0 : a->seq_kv->values[b - 1];
        const int64_t hi = a->seq_kv == NULL ? T2 : a->seq_kv->values[b];
        const int64_t len = hi - lo;
        if (len % B != 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: the KV length of batch %lld (%lld, from actualSeqKvLenOptional or key) must be a multiple of "
                           "selectedBlockSize (%lld)", API,
                           (long long)b, (long long)len, (long long)B);
        }
        if (!relaxed && len < need) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: the KV length of batch %lld (%lld, from actualSeqKvLenOptional or key) must be >= "
                           "selectedBlockCount * "
                           "selectedBlockSize = %lld",
                           API, (long long)b, (long long)len, (long long)need);
        }
    }

    sh->T1 = T1;
    sh->T2 = T2;
    sh->N1 = N1;
    sh->N2 = N2;
    sh->G = G;
    sh->D = D;
    sh->Dv = Dv;
    sh->B = B;
    sh->C = C;
    sh->nbatch = nbatch;
    sh->relaxed = relaxed;
    return ACLNN_SUCCESS;
}
