/* The NSA core shared by the selected-attention forward and backward (see
 * nsa_common.h): validation rules, precision mode, plan core and executor,
 * row access, topk indexing and operand packing. */
#include "ops/nsa_common/nsa_common.h"

#include <stdlib.h>
#include <string.h>

#include <stdatomic.h>
#include <stdio.h>

#include "common/pa_half.h"
#include "kernels/nsa/nsa_round.h"
#include "meta/pa_handles.h"
#include "runtime/pa_threadpool.h"

int nsa_check_required(const char *api, int status, const nsa_named *list, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (list[i].p == NULL) return pa_fail(status, "%s: %s must not be NULL", api, list[i].name);
    }
    return ACLNN_SUCCESS;
}

int nsa_check_tensors(const char *api, const nsa_named *list, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const int rc = nsa_check_tensor(api, list[i].p, list[i].name, 3);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    return ACLNN_SUCCESS;
}

int nsa_check_outputs_no_overlap(const char *api, const nsa_named *list, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const int rc = nsa_check_no_overlap(api, list[i].p, list[i].name);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    return ACLNN_SUCCESS;
}

int nsa_check_dtypes(const char *api, const nsa_named *list, size_t n, aclDataType want, const char *what) {
    for (size_t i = 0; i < n; i++) {
        const aclDataType dt = ((const aclTensor *)list[i].p)->dtype;
        if (dt != want) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must %s, got %s", api, list[i].name, what,
                           pa_dtype_name(dt));
        }
    }
    return ACLNN_SUCCESS;
}

int nsa_check_input_dtypes(const char *api, const aclTensor *query, const nsa_named *same, size_t n, bool relaxed) {
    const aclDataType idt = query->dtype;
    if (!(nsa_is_half(idt) || (relaxed && idt == ACL_FLOAT))) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: query must be FLOAT16 or BFLOAT16%s, got %s", api,
                       relaxed ? " (or FLOAT in relaxed mode)" : "", pa_dtype_name(idt));
    }
    char same_as_q[64];
    snprintf(same_as_q, sizeof same_as_q, "have the dtype of query (%s)", pa_dtype_name(idt));
    return nsa_check_dtypes(api, same, n, idt, same_as_q);
}

int nsa_check_seq_pair(const char *api, const aclIntArray *seq_q, const aclIntArray *seq_kv, int64_t T1, int64_t T2,
                       uint64_t max_batch) {
    if (seq_q->size != seq_kv->size) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: actualSeqQLenOptional and actualSeqKvLenOptional must have equal lengths, got %llu "
                       "and %llu",
                       api, (unsigned long long)seq_q->size, (unsigned long long)seq_kv->size);
    }
    if (max_batch > 0 && seq_q->size > max_batch) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: the batch count (length of actualSeqQLenOptional) must be <= %llu, got %llu", api,
                       (unsigned long long)max_batch, (unsigned long long)seq_q->size);
    }
    const int rc = nsa_check_seq(api, seq_q, "actualSeqQLenOptional", T1, "T1");
    if (rc != ACLNN_SUCCESS) return rc;
    return nsa_check_seq(api, seq_kv, "actualSeqKvLenOptional", T2, "T2");
}

bool nsa_relaxed_mode(void) {
    const char *e = getenv("PYACLNN_NSA_RELAXED");
    return e != NULL && strcmp(e, "1") == 0;
}

bool nsa_is_half(aclDataType dt) { return dt == ACL_FLOAT16 || dt == ACL_BF16; }

int nsa_check_tensor(const char *api, const aclTensor *t, const char *name, int32_t rank) {
    int rc = pa_handle_check(api, name, t, PA_HANDLE_TENSOR);
    if (rc != ACLNN_SUCCESS) return rc;
    if (!pa_format_is_plain(t->format)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have a plain (ND) format, got %s", api, name,
                       pa_format_name(t->format));
    }
    if (t->ndim != rank) {
        char buf[128];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be %d-D, got %d-D %s", api, name, (int)rank,
                       (int)t->ndim, pa_shape_str(t->dims, t->ndim, buf, sizeof buf));
    }
    return pa_tensor_check_view(api, name, t);
}

/* True when two elements of t may share an address: with the dims of size > 1
 * sorted by stride, each stride must exceed the span of the smaller ones
 * (sufficient for no overlap; it holds for every permutation or slice of a
 * dense layout). */
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

int nsa_check_no_overlap(const char *api, const aclTensor *t, const char *name) {
    if (!may_overlap(t)) return ACLNN_SUCCESS;
    return pa_fail(ACLNN_ERR_PARAM_INVALID,
                   "%s: %s must not have overlapping elements (a zero or too small stride), got strides "
                   "[%lld,%lld,%lld]",
                   api, name, (long long)t->strides[0], (long long)t->strides[1], (long long)t->strides[2]);
}

int nsa_check_shape3(const char *api, const aclTensor *t, const char *name, const int64_t want[3],
                     const char *rule) {
    if (t->dims[0] == want[0] && t->dims[1] == want[1] && t->dims[2] == want[2]) return ACLNN_SUCCESS;
    char got[128], exp[128];
    pa_shape_str(t->dims, 3, got, sizeof got);
    pa_shape_str(want, 3, exp, sizeof exp);
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must have shape %s (%s), got %s", api, name, exp, rule, got);
}

int nsa_check_shapes(const char *api, const nsa_shape_rule *rules, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const int rc = nsa_check_shape3(api, rules[i].t, rules[i].name, rules[i].want, rules[i].rule);
        if (rc != ACLNN_SUCCESS) return rc;
    }
    return ACLNN_SUCCESS;
}

int nsa_check_attrs(const char *api, int64_t B, int64_t C, int64_t sparse_mode, bool relaxed, int64_t max_count,
                    int64_t max_cb) {
    if (relaxed) {
        if (B < 1 || B > 1024) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: selectedBlockSize must be in [1, 1024], got %lld", api,
                           (long long)B);
        }
        if (C < 1 || C > 1024) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: selectedBlockCount must be in [1, 1024], got %lld", api,
                           (long long)C);
        }
    } else {
        if (B < 16 || B > 128 || B % 16 != 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: selectedBlockSize must be a multiple of 16 in [16, 128], got %lld", api, (long long)B);
        }
        if (C < 1 || C > max_count) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: selectedBlockCount must be in [1, %lld], got %lld", api,
                           (long long)max_count, (long long)C);
        }
        if (max_cb > 0 && C * B > max_cb) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: selectedBlockCount * selectedBlockSize must be <= %lld, got %lld * %lld = %lld", api,
                           (long long)max_cb, (long long)C, (long long)B, (long long)(C * B));
        }
    }
    if (sparse_mode != 0 && sparse_mode != 2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: sparseMode must be 0 or 2, got %lld", api,
                       (long long)sparse_mode);
    }
    return ACLNN_SUCCESS;
}

int nsa_check_heads(const char *api, int64_t N1, int64_t N2, int64_t head_num, bool relaxed) {
    if (head_num != N1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: headNum must equal N1 = query.shape[1] = %lld, got %lld", api,
                       (long long)N1, (long long)head_num);
    }
    const int64_t nmax = relaxed ? 1024 : 128;
    if (N1 < 1 || N1 > nmax) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: N1 (query heads) must be in [1, %lld], got %lld", api,
                       (long long)nmax, (long long)N1);
    }
    if (N2 < 1 || N2 > nmax) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: N2 (key/value heads) must be in [1, %lld], got %lld", api,
                       (long long)nmax, (long long)N2);
    }
    if (N1 % N2 != 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: N1 (%lld, query heads) must be a multiple of N2 (%lld, key/value heads)", api,
                       (long long)N1, (long long)N2);
    }
    if (!relaxed && N1 / N2 > 32) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: G = N1/N2 (query heads per key/value head) must be in [1, 32], got %lld", api,
                       (long long)(N1 / N2));
    }
    return ACLNN_SUCCESS;
}

int nsa_check_dims(const char *api, int64_t T1, int64_t T2, int64_t D, int64_t Dv, bool relaxed) {
    if (T1 < 1 || T2 < 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: T1 and T2 must be >= 1, got T1=%lld, T2=%lld", api,
                       (long long)T1, (long long)T2);
    }
    if (relaxed) {
        if (D < 1 || D > 65536) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: D (query/key head dim) must be in [1, 65536], got %lld",
                           api, (long long)D);
        }
        if (Dv < 1 || Dv > 1024) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: Dv (value head dim) must be in [1, 1024], got %lld", api,
                           (long long)Dv);
        }
        return ACLNN_SUCCESS;
    }
    if (D != 128 && D != 192) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: D (query/key head dim) must be 128 or 192, got %lld", api,
                       (long long)D);
    }
    if (Dv != 128 && Dv != 192) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: Dv (value head dim) must be 128 or 192, got %lld", api,
                       (long long)Dv);
    }
    if (Dv > D) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: Dv (%lld, value head dim) must not exceed D (%lld, query/key head dim)", api,
                       (long long)Dv, (long long)D);
    }
    return ACLNN_SUCCESS;
}

int nsa_check_seq(const char *api, const aclIntArray *a, const char *name, int64_t total, const char *tname) {
    if (a->size < 1) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must hold at least one cumulative length, got 0", api,
                       name);
    }
    if (a->values == NULL) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s has no values", api, name);
    }
    int64_t prev = 0;
    for (uint64_t i = 0; i < a->size; i++) {
        const int64_t v = a->values[i];
        if (v <= prev) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s must be cumulative lengths [s0, s0+s1, ...] with every batch length > 0, "
                           "got %lld after %lld at index %llu",
                           api, name, (long long)v, (long long)prev, (unsigned long long)i);
        }
        prev = v;
    }
    if (prev != total) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the last value of %s must equal %s = %lld, got %lld", api,
                       name, tname, (long long)total, (long long)prev);
    }
    return ACLNN_SUCCESS;
}

int nsa_check_kv_lengths(const char *api, const aclIntArray *seq_kv, int64_t nbatch, int64_t T2, int64_t B,
                         int64_t C, bool relaxed) {
    const int64_t need = C * B;
    for (int64_t b = 0; b < nbatch; b++) {
        const int64_t lo = (seq_kv == NULL || b == 0) ? 0 : seq_kv->values[b - 1];
        const int64_t hi = seq_kv == NULL ? T2 : seq_kv->values[b];
        const int64_t len = hi - lo;
        if (len % B != 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: the KV length of batch %lld (%lld, from actualSeqKvLenOptional or key) must be a "
                           "multiple of selectedBlockSize (%lld)",
                           api, (long long)b, (long long)len, (long long)B);
        }
        if (!relaxed && len < need) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: the KV length of batch %lld (%lld, from actualSeqKvLenOptional or key) must be >= "
                           "selectedBlockCount * selectedBlockSize = %lld",
                           api, (long long)b, (long long)len, (long long)need);
        }
    }
    return ACLNN_SUCCESS;
}

/* ---- shape, precision, plan core ---- */

int nsa_precision_mode(const char *api, nsa_precision *mode) {
    const char *e = getenv("PYACLNN_NSA_PRECISION");
    if (e == NULL || e[0] == '\0' || strcmp(e, "npu") == 0) {
        *mode = NSA_PRECISION_NPU;
        return ACLNN_SUCCESS;
    }
    if (strcmp(e, "high") == 0) {
        *mode = NSA_PRECISION_HIGH;
        return ACLNN_SUCCESS;
    }
    return pa_fail(ACLNN_ERR_PARAM_INVALID,
                   "%s: the environment variable PYACLNN_NSA_PRECISION must be \"npu\" (the default: P and dS "
                   "rounded to the input dtype, as the NPU) or \"high\" (P and dS in fp32), got \"%.32s\"",
                   api, e);
}

nsa_shape nsa_shape_of(int64_t T1, int64_t T2, int64_t N1, int64_t N2, int64_t D, int64_t Dv, int64_t B, int64_t C,
                       int64_t nbatch) {
    const nsa_shape sh = {.T1 = T1, .T2 = T2, .N1 = N1, .N2 = N2, .G = N1 / N2, .D = D, .Dv = Dv, .B = B, .C = C,
                          .nbatch = nbatch};
    return sh;
}

bool nsa_shape_finish(nsa_shape *sh) {
    sh->Bp = nsa_round16(sh->B);
    sh->Dp = nsa_round16(sh->D);
    sh->Dvp = nsa_round16(sh->Dv);
    sh->NB = sh->T2 / sh->B;
    sh->Gp = sh->G + (sh->G & 1);
    sh->Bh = (sh->B + 1) / 2;
    return sh->NB <= INT32_MAX; /* global block ids are int32 */
}

int nsa_core_init(const char *api, nsa_core *c, const nsa_shape *sh, double scale, aclDataType idt) {
    memset(c, 0, sizeof *c);
    nsa_precision mode = NSA_PRECISION_NPU;
    const int rc = nsa_precision_mode(api, &mode);
    if (rc != ACLNN_SUCCESS) return rc;
    c->sh = *sh;
    c->scale = pa_scale_to_f32(scale);
    c->precision = mode;
    c->btype = idt == ACL_FLOAT16 ? NSA_B_F16 : idt == ACL_BF16 ? NSA_B_BF16 : NSA_B_F32;
    c->esize = c->btype == NSA_B_F32 ? 4 : 2;
    /* the precision rule: P and dS rounded to the input dtype (fp32 inputs: nothing to round) */
    c->rnd = mode == NSA_PRECISION_HIGH ? NSA_ROUND_NONE
             : c->btype == NSA_B_F16   ? NSA_ROUND_F16
             : c->btype == NSA_B_BF16  ? NSA_ROUND_BF16
                                       : NSA_ROUND_NONE;
    c->dot = c->btype == NSA_B_BF16 && mode == NSA_PRECISION_NPU;
    /* the layouts of nsa_kv_pack (small: D <= 65536, B <= 1024) */
    c->blk_kt = c->dot ? sh->Dp * sh->Bp * 2 : sh->D * sh->Bp * c->esize;
    c->blk_vt = c->dot ? sh->Dvp * sh->Bp * 2 : sh->Dv * sh->Bp * c->esize;
    c->blk_krows = c->dot ? sh->Bh * sh->Dp * 4 : sh->B * sh->Dp * c->esize;
    c->blk_vrows = c->dot ? sh->Bh * sh->Dvp * 4 : sh->B * sh->Dvp * c->esize;
    c->kern = nsa_kernels_select(pa_cpu_isa());
    return ACLNN_SUCCESS;
}

int nsa_make_executor(const char *api, const pa_op_def *op, void *plan, size_t plan_size, nsa_core *core,
                      const aclIntArray *seq_q, const aclIntArray *seq_kv, uint64_t ws_size,
                      const size_t *in_views, int n_in, const size_t *out_views, int n_out, uint64_t *workspace_size,
                      aclOpExecutor **executor) {
    char *blob = NULL;
    size_t blob_size = 0;
    const int rc = nsa_plan_blob(api, plan, plan_size, &core->seq_q_off, &core->seq_kv_off, seq_q, seq_kv,
                                 core->sh.nbatch, core->sh.T1, core->sh.T2, &blob, &blob_size);
    if (rc != ACLNN_SUCCESS) return rc;
    aclOpExecutor *ex = pa_executor_create(op, blob, blob_size, ws_size, in_views, n_in, out_views, n_out);
    pa_free_aligned(blob);
    if (ex == NULL) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    *workspace_size = ws_size;
    *executor = ex;
    return ACLNN_SUCCESS;
}

int nsa_run_begin(const char *api, const void *plan, const nsa_core *core, const pa_tview *topk, void *workspace,
                  uint64_t workspace_size, uint64_t ws_need, uint64_t off_tok, uint64_t off_gblk, char **ws,
                  int64_t **tok, int32_t **gblk) {
    if (workspace == NULL || workspace_size < ws_need) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: workspace of %llu bytes is smaller than the %llu required", api,
                       (unsigned long long)workspace_size, (unsigned long long)ws_need);
    }
    *ws = (char *)workspace + ((64u - ((uintptr_t)workspace & 63u)) & 63u);
    *tok = (int64_t *)(void *)(*ws + off_tok);
    *gblk = (int32_t *)(void *)(*ws + off_gblk);
    const nsa_shape *sh = &core->sh;
    return nsa_index_topk(api, topk, nsa_seq_q(plan, core), nsa_seq_kv(plan, core), sh->nbatch, sh->N2, sh->C,
                          sh->B, *tok, *gblk);
}

/* ---- plans ---- */

bool nsa_ws_section(uint64_t *off, uint64_t *at, int64_t n, int64_t esize) {
    int64_t bytes;
    if (n < 0 || !pa_mul_ok(n, esize, &bytes)) return false;
    const uint64_t rounded = ((uint64_t)bytes + 63u) & ~(uint64_t)63u;
    if (rounded < (uint64_t)bytes) return false;
    *at = *off;
    if (*off > UINT64_MAX - rounded) return false;
    *off += rounded;
    return true;
}

bool nsa_mul3(int64_t a, int64_t b, int64_t c, int64_t *out) {
    int64_t t;
    return pa_mul_ok(a, b, &t) && pa_mul_ok(t, c, out);
}

int nsa_plan_blob(const char *api, void *plan, size_t plan_size, size_t *seq_q_off, size_t *seq_kv_off,
                  const aclIntArray *seq_q, const aclIntArray *seq_kv, int64_t nbatch, int64_t T1, int64_t T2,
                  char **blob, size_t *blob_size) {
    const size_t head = (plan_size + 7u) & ~(size_t)7u;
    if ((uint64_t)nbatch > (SIZE_MAX - head) / (2 * sizeof(int64_t))) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: too many batches (%lld)", api, (long long)nbatch);
    }
    const size_t arr = (size_t)nbatch * sizeof(int64_t);
    *blob_size = head + 2 * arr;
    *seq_q_off = head;
    *seq_kv_off = head + arr;
    char *b = pa_alloc_aligned(*blob_size);
    if (b == NULL) {
        /* the plan is part of the executor: the vendor's code when it cannot be created */
        return pa_fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the plan (%zu bytes)", api,
                       *blob_size);
    }
    memcpy(b, plan, plan_size);
    if (seq_q != NULL) {
        memcpy(b + head, seq_q->values, arr);
        memcpy(b + head + arr, seq_kv->values, arr);
    } else {
        memcpy(b + head, &T1, sizeof T1);
        memcpy(b + head + arr, &T2, sizeof T2);
    }
    *blob = b;
    return ACLNN_SUCCESS;
}

/* ---- run time ---- */

void nsa_mm_run(const nsa_core *core, const nsa_mm *mm) {
    if (core->dot) {
        const nsa_dot_args g = {.m = mm->m, .n = mm->n, .kp = (mm->k + 1) / 2, .panels = mm->panels,
                                .npanels = mm->npanels, .lda = mm->lda, .ldb = mm->ldb, .c = mm->c, .ldc = mm->ldc,
                                .accumulate = mm->accumulate, .pf = mm->pf, .pf_bytes = mm->pf_bytes,
                                .no_prefetch = mm->no_prefetch};
        core->kern.dot(&g);
        return;
    }
    const nsa_gemm_args g = {.m = mm->m, .n = mm->n, .k = mm->k, .panels = mm->panels, .npanels = mm->npanels,
                             .a_sm = mm->lda, .a_sk = 1, .ldb = mm->ldb, .btype = core->btype, .c = mm->c,
                             .ldc = mm->ldc, .accumulate = mm->accumulate, .pf = mm->pf, .pf_bytes = mm->pf_bytes,
                             .no_prefetch = mm->no_prefetch};
    core->kern.gemm(&g);
}

static inline float load_elem(const pa_tview *v, int64_t idx) {
    const char *base = (const char *)v->base;
    switch (v->dtype) {
    case ACL_FLOAT: {
        float f;
        memcpy(&f, base + idx * 4, 4);
        return f;
    }
    case ACL_FLOAT16: {
        uint16_t h;
        memcpy(&h, base + idx * 2, 2);
        return pa_f16_to_f32(h);
    }
    default: {
        uint16_t h;
        memcpy(&h, base + idx * 2, 2);
        return pa_bf16_to_f32(h);
    }
    }
}

void nsa_read_row(const pa_tview *v, int64_t i0, int64_t i1, int64_t n, float *dst) {
    const int64_t off = v->offset + i0 * v->strides[0] + i1 * v->strides[1];
    const int64_t st = v->strides[2];
    const char *base = (const char *)v->base;
    if (st == 1) {
        switch (v->dtype) {
        case ACL_FLOAT:
            memcpy(dst, base + off * 4, (size_t)n * 4);
            return;
        case ACL_FLOAT16: {
            const char *s = base + off * 2;
            for (int64_t j = 0; j < n; j++) {
                uint16_t h;
                memcpy(&h, s + j * 2, 2);
                dst[j] = pa_f16_to_f32(h);
            }
            return;
        }
        default: {
            const char *s = base + off * 2;
            for (int64_t j = 0; j < n; j++) {
                uint16_t h;
                memcpy(&h, s + j * 2, 2);
                dst[j] = pa_bf16_to_f32(h);
            }
            return;
        }
        }
    }
    for (int64_t j = 0; j < n; j++) dst[j] = load_elem(v, off + j * st);
}

/* the output cast: rnd (ties away) or nearest even, the default NaN for NaN */
static inline float out_value(float f, int rnd) {
    f = nsa_round_inline(f, rnd); /* exact in the output dtype when rounded */
    return f != f ? pa_bits_f32(0x7fc00000u) : f;
}

void nsa_write_row(const pa_tview *v, int64_t i0, int64_t i1, int64_t n, const float *src, float mul, int away) {
    const int64_t off = v->offset + i0 * v->strides[0] + i1 * v->strides[1];
    const int64_t st = v->strides[2];
    char *base = (char *)v->base;
    if (v->dtype == ACL_FLOAT) {
        for (int64_t j = 0; j < n; j++) {
            const float f = out_value(src[j] * mul, NSA_ROUND_NONE);
            memcpy(base + (off + j * st) * 4, &f, 4);
        }
    } else if (v->dtype == ACL_FLOAT16) {
        const int rnd = away ? NSA_ROUND_F16 : NSA_ROUND_NONE;
        for (int64_t j = 0; j < n; j++) {
            const uint16_t h = pa_f32_to_f16(out_value(src[j] * mul, rnd));
            memcpy(base + (off + j * st) * 2, &h, 2);
        }
    } else {
        const int rnd = away ? NSA_ROUND_BF16 : NSA_ROUND_NONE;
        for (int64_t j = 0; j < n; j++) {
            const uint16_t h = pa_f32_to_bf16(out_value(src[j] * mul, rnd));
            memcpy(base + (off + j * st) * 2, &h, 2);
        }
    }
}

void nsa_store_b(void *dst, int btype, const float *src, int64_t n, int64_t npad) {
    if (btype == NSA_B_F32) {
        float *d = dst;
        memcpy(d, src, (size_t)n * sizeof(float));
        for (int64_t j = n; j < npad; j++) d[j] = 0.0f;
        return;
    }
    uint16_t *d = dst;
    if (btype == NSA_B_F16) {
        for (int64_t j = 0; j < npad; j++) d[j] = j < n ? pa_f32_to_f16(src[j]) : 0;
        return;
    }
    for (int64_t j = 0; j < npad; j++) {
        /* exact: the values came from bf16 */
        d[nsa_b_slot(NSA_B_BF16, j)] = j < n ? (uint16_t)(pa_f32_bits(src[j]) >> 16) : 0;
    }
}

void nsa_read_row_bf16(const pa_tview *v, int64_t i0, int64_t i1, int64_t n, int64_t npad, uint16_t *dst) {
    const int64_t off = v->offset + i0 * v->strides[0] + i1 * v->strides[1];
    const int64_t st = v->strides[2];
    const char *base = (const char *)v->base + off * 2;
    if (st == 1) {
        memcpy(dst, base, (size_t)n * 2);
    } else {
        for (int64_t j = 0; j < n; j++) memcpy(dst + j, base + j * st * 2, 2);
    }
    for (int64_t j = n; j < npad; j++) dst[j] = 0;
}

int nsa_index_topk(const char *api, const pa_tview *tv, const int64_t *seq_q, const int64_t *seq_kv,
                   int64_t nbatch, int64_t N2, int64_t C, int64_t B, int64_t *tok, int32_t *gblk) {
    const char *base = (const char *)tv->base;
    int64_t q_lo = 0, kv_lo = 0;
    for (int64_t b = 0; b < nbatch; b++) {
        const int64_t q_hi = seq_q[b], kv_hi = seq_kv[b];
        const int64_t nblk = (kv_hi - kv_lo) / B;
        const int64_t kvb0 = kv_lo / B;
        for (int64_t t = q_lo; t < q_hi; t++) {
            tok[2 * t] = t - q_lo;
            tok[2 * t + 1] = kvb0;
            for (int64_t n2 = 0; n2 < N2; n2++) {
                const int64_t off = tv->offset + t * tv->strides[0] + n2 * tv->strides[1];
                int32_t *dst = gblk + (t * N2 + n2) * C;
                for (int64_t i = 0; i < C; i++) {
                    int32_t v;
                    memcpy(&v, base + (off + i * tv->strides[2]) * 4, 4);
                    if (v < 0 || v >= nblk) {
                        return pa_fail(ACLNN_ERR_RUNTIME_ERROR,
                                       "%s: topkIndices[t=%lld, n2=%lld, i=%lld] = %d is out of range [0, %lld) for "
                                       "batch %lld",
                                       api, (long long)t, (long long)n2, (long long)i, (int)v, (long long)nblk,
                                       (long long)b);
                    }
                    dst[i] = (int32_t)(kvb0 + v);
                }
            }
        }
        q_lo = q_hi;
        kv_lo = kv_hi;
    }
    return ACLNN_SUCCESS;
}


/* dst rows d < n of Bp values: column r = src[r*ld + d] (r < B), zeros to Bp */
static void store_transposed(char *dst, int btype, int64_t esize, const float *src, int64_t ld, int64_t n, int64_t B,
                             int64_t Bp, float *col) {
    for (int64_t d = 0; d < n; d++) {
        for (int64_t r = 0; r < B; r++) col[r] = src[r * ld + d];
        nsa_store_b(dst + d * Bp * esize, btype, col, B, Bp);
    }
}

/* bf16 pairs of a block's rows rows[r][0..W) (r < B, zeros beyond):
 * along the row, transposed:  dst[j*Bp + r] = (rows[r][2j], rows[r][2j+1]), j < W/2
 * across rows:                dst[j*W + d]  = (rows[2j][d], rows[2j+1][d]), j < Bh */
static void store_pairs_t(uint32_t *dst, const uint16_t *rows, int64_t W, int64_t B, int64_t Bp) {
    for (int64_t j = 0; j < W / 2; j++) {
        for (int64_t r = 0; r < Bp; r++) {
            dst[j * Bp + r] = r < B ? (uint32_t)rows[r * W + 2 * j] | (uint32_t)rows[r * W + 2 * j + 1] << 16 : 0;
        }
    }
}
static void store_pairs_rows(uint32_t *dst, const uint16_t *rows, int64_t W, int64_t B, int64_t Bh) {
    for (int64_t j = 0; j < Bh; j++) {
        const uint16_t *r0 = rows + 2 * j * W, *r1 = 2 * j + 1 < B ? r0 + W : NULL;
        for (int64_t d = 0; d < W; d++) dst[j * W + d] = (uint32_t)r0[d] | (r1 != NULL ? (uint32_t)r1[d] << 16 : 0);
    }
}

/* scratch: fp32 B*(Dp + Dv) + max(D, Dv)*Bp, or bf16 B*(Dp + Dvp) for the dot layouts */
static void pack_kv_block(const nsa_kv_pack *pk, int64_t it, float *scratch) {
    const nsa_core *c = pk->core;
    const nsa_shape *sh = &c->sh;
    const int bt = c->btype;
    const int64_t es = c->esize;
    const int64_t B = sh->B, Bp = sh->Bp, D = sh->D, Dv = sh->Dv, Dp = sh->Dp, Dvp = sh->Dvp;
    const int64_t n2 = it / sh->NB, kb = it % sh->NB;
    char *kt = pk->kt ? pk->kt + it * c->blk_kt : NULL, *vt = pk->vt ? pk->vt + it * c->blk_vt : NULL;
    char *kr = pk->krows ? pk->krows + it * c->blk_krows : NULL, *vr = pk->vrows ? pk->vrows + it * c->blk_vrows : NULL;
    if (c->dot) {
        uint16_t *k = (uint16_t *)(void *)scratch, *v = k + B * Dp;
        for (int64_t r = 0; r < B; r++) {
            nsa_read_row_bf16(pk->k, kb * B + r, n2, D, Dp, k + r * Dp);
            nsa_read_row_bf16(pk->v, kb * B + r, n2, Dv, Dvp, v + r * Dvp);
        }
        if (kt != NULL) store_pairs_t((uint32_t *)(void *)kt, k, Dp, B, Bp);
        if (vt != NULL) store_pairs_t((uint32_t *)(void *)vt, v, Dvp, B, Bp);
        if (kr != NULL) store_pairs_rows((uint32_t *)(void *)kr, k, Dp, B, sh->Bh);
        if (vr != NULL) store_pairs_rows((uint32_t *)(void *)vr, v, Dvp, B, sh->Bh);
        return;
    }
    float *k = scratch, *vrow = scratch + B * Dp, *col = vrow + B * Dv;
    for (int64_t r = 0; r < B; r++) {
        nsa_read_row(pk->k, kb * B + r, n2, D, k + r * Dp);
        nsa_read_row(pk->v, kb * B + r, n2, Dv, vrow + r * Dv);
        if (kr != NULL) nsa_store_b(kr + r * Dp * es, bt, k + r * Dp, D, Dp);
        if (vr != NULL) nsa_store_b(vr + r * Dvp * es, bt, vrow + r * Dv, Dv, Dvp);
    }
    if (kt != NULL) store_transposed(kt, bt, es, k, Dp, D, B, Bp, col);
    if (vt != NULL) store_transposed(vt, bt, es, vrow, Dv, Dv, B, Bp, col);
}

typedef struct pack_job {
    const nsa_kv_pack *pk;
    atomic_int oom;
} pack_job;

/* items: (n2, key block); scratch: B*(Dp + Dv) + max(D, Dv)*Bp floats */
static void pack_range(void *ctx, int64_t begin, int64_t end) {
    pack_job *j = ctx;
    const nsa_shape *sh = &j->pk->core->sh;
    const int64_t w = sh->D > sh->Dv ? sh->D : sh->Dv;
    float *scr = pa_thread_scratch((size_t)(sh->B * (sh->Dp + sh->Dv) + w * sh->Bp) * sizeof(float));
    if (scr == NULL) {
        atomic_store(&j->oom, 1);
        return;
    }
    for (int64_t it = begin; it < end; it++) pack_kv_block(j->pk, it, scr);
}

bool nsa_pack_kv(const nsa_kv_pack *pk) {
    pack_job j = {.pk = pk};
    atomic_init(&j.oom, 0);
    pa_parallel_for(pk->core->sh.N2 * pk->core->sh.NB, 1, pack_range, &j);
    return atomic_load(&j.oom) == 0;
}
