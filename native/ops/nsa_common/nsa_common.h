/* Shared by aclnnNsaSelectedAttention and aclnnNsaSelectedAttentionGrad: the
 * validation rules the two ops have in common, strided row access, the
 * topkIndices range check (run time) and the K/V block packing. */
#ifndef PA_NSA_COMMON_H
#define PA_NSA_COMMON_H

#include "common/pa_common.h"
#include "meta/pa_tensor.h"

/* ---- validation (GetWorkspaceSize); each returns 0 or a status after pa_fail ---- */

/* PYACLNN_NSA_RELAXED=1, read at each call. */
bool nsa_relaxed_mode(void);
bool nsa_is_half(aclDataType dt);
/* Handle validity, plain format, rank, then the shared view rules (pa_tensor_check_view). */
int nsa_check_tensor(const char *api, const aclTensor *t, const char *name, int32_t rank);
/* Output views whose elements may share an address (several writers). */
int nsa_check_no_overlap(const char *api, const aclTensor *t, const char *name);
/* t->dims must equal want[0..2]; `rule` explains want. */
int nsa_check_shape3(const char *api, const aclTensor *t, const char *name, const int64_t want[3],
                     const char *rule);
/* selectedBlockSize (strict: multiple of 16 in [16,128]), selectedBlockCount
 * (strict: [1, max_count], C*B <= max_cb if max_cb > 0) and sparseMode (0, 2). */
int nsa_check_attrs(const char *api, int64_t B, int64_t C, int64_t sparse_mode, bool relaxed, int64_t max_count,
                    int64_t max_cb);
/* headNum == N1, N1 and N2 in [1, 128] (relaxed 1024), N1 % N2 == 0, G <= 32 (strict). */
int nsa_check_heads(const char *api, int64_t N1, int64_t N2, int64_t head_num, bool relaxed);
/* T1, T2 >= 1; D, Dv in {128, 192}, Dv <= D (strict); D in [1,65536], Dv in [1,1024] (relaxed). */
int nsa_check_dims(const char *api, int64_t T1, int64_t T2, int64_t D, int64_t Dv, bool relaxed);
/* Cumulative lengths: >= 1 entry, strictly increasing from > 0, last == total. */
int nsa_check_seq(const char *api, const aclIntArray *a, const char *name, int64_t total, const char *tname);
/* Every batch's KV length a multiple of B and (strict) >= C*B. seq_kv NULL = one batch of T2. */
int nsa_check_kv_lengths(const char *api, const aclIntArray *seq_kv, int64_t nbatch, int64_t T2, int64_t B,
                         int64_t C, bool relaxed);

/* ---- plans ---- */

static inline int64_t nsa_round16(int64_t x) { return (x + 15) / 16 * 16; }
/* Adds a workspace section of n elements of `esize` bytes at *off (64-byte
 * aligned), storing its offset in *at. Returns false on overflow. */
bool nsa_ws_section(uint64_t *off, uint64_t *at, int64_t n, int64_t esize);
/* out = a*b*c; false on overflow (non-negative operands). */
bool nsa_mul3(int64_t a, int64_t b, int64_t c, int64_t *out);
/* The executor blob of both ops: the plan struct (plan_size bytes, padded to 8),
 * then nbatch int64 cumulative query lengths and nbatch cumulative KV lengths
 * (seq_q / seq_kv NULL: one batch of T1 / T2). The byte offsets of the two arrays
 * go to *seq_q_off / *seq_kv_off, fields of the plan, before it is copied.
 * Returns 0 with *blob (pa_free_aligned) and *blob_size, or a status after pa_fail. */
int nsa_plan_blob(const char *api, void *plan, size_t plan_size, size_t *seq_q_off, size_t *seq_kv_off,
                  const aclIntArray *seq_q, const aclIntArray *seq_kv, int64_t nbatch, int64_t T1, int64_t T2,
                  char **blob, size_t *blob_size);

/* ---- run time ---- */

/* dst[j] = v[i0, i1, j] as fp32, j < n */
void nsa_read_row(const pa_tview *v, int64_t i0, int64_t i1, int64_t n, float *dst);
/* v[i0, i1, j] = src[j] * mul rounded (RNE) to v's dtype, j < n */
void nsa_write_row(const pa_tview *v, int64_t i0, int64_t i1, int64_t n, const float *src, float mul);

/* Checks topk against every batch's KV length (first bad value in (t, n2, i)
 * order: 361001 after pa_fail) and fills tok[2t] = batch-local position s,
 * tok[2t+1] = first global KV block of t's batch, and gblk[(t*N2+n2)*C+i] =
 * global block id. seq_q / seq_kv: nbatch cumulative lengths. */
int nsa_index_topk(const char *api, const pa_tview *topk, const int64_t *seq_q, const int64_t *seq_kv,
                   int64_t nbatch, int64_t N2, int64_t C, int64_t B, int64_t *tok, int32_t *gblk);

/* K/V packing of one (n2, key block): kb is the global block number. */
typedef struct nsa_kv_pack {
    const pa_tview *k, *v;
    int64_t T2, NB, B, Bp, D, Dv, Dp, Dvp;
    int use_bf16;  /* K^T (and V^T) as bf16 pairs [ceil(n/2)][Bp][2] instead of fp32 [n][Bp] */
    float *k32;    /* K rows [N2][T2][Dp] fp32, or NULL (then krow_scratch must hold B*Dp) */
    float *kt;     /* K^T blocks [N2*NB][D][Bp] (bf16 pairs use half) */
    float *vt;     /* V^T blocks [N2*NB][Dv][Bp], or NULL */
    float *v32;    /* V rows [N2][T2][Dvp] fp32, or NULL */
} nsa_kv_pack;
/* Packs block `it` = n2*NB + kb; scratch holds B*(Dp + Dv) floats. */
void nsa_pack_kv_block(const nsa_kv_pack *pk, int64_t it, float *scratch);

#endif
