/* The NSA core shared by aclnnNsaSelectedAttention and aclnnNsaSelectedAttentionGrad:
 * the validation rules the two ops have in common, the shape, the precision mode
 * and the plan core, the executor blob, strided row access, the topkIndices range
 * check (run time) and the packing of the 16-bit GEMM operands. */
#ifndef PA_NSA_COMMON_H
#define PA_NSA_COMMON_H

#include "common/pa_common.h"
#include "kernels/nsa/nsa.h"
#include "meta/pa_executor.h"
#include "meta/pa_tensor.h"

/* ---- shape, precision, plan core ---- */

/* The problem after validation. G = N1/N2; Bp, Dp, Dvp: B, D, Dv rounded up
 * to 16; NB = T2/B (KV blocks over all batches); Gp, Bh: G rounded up to even,
 * the pairs of a key block (B/2 rounded up): the bf16 dot GEMM's k-pairs. */
typedef struct nsa_shape {
    int64_t T1, T2, N1, N2, G, D, Dv, B, C, nbatch;
    int64_t Bp, Dp, Dvp, NB, Gp, Bh;
} nsa_shape;

/* PYACLNN_NSA_PRECISION, read at each GetWorkspaceSize (so fixed for an executor):
 * unset, "" or "npu": the NPU's precision (P and dS rounded to the input dtype
 * before the products that use them); "high": P and dS in fp32. */
typedef enum nsa_precision { NSA_PRECISION_NPU = 0, NSA_PRECISION_HIGH = 1 } nsa_precision;
/* *mode from the environment; anything else: 161002 after pa_fail naming the variable. */
int nsa_precision_mode(const char *api, nsa_precision *mode);

/* What both plans carry besides their tensor views. Plain data. */
typedef struct nsa_core {
    nsa_shape sh;
    float scale;           /* scaleValue rounded to fp32 */
    int32_t precision;     /* nsa_precision */
    int32_t rnd;           /* the precision rule for P and dS: nsa_round (NONE: high, or fp32 inputs) */
    int32_t btype;         /* storage of the packed input copies (the GEMMs' B operands): nsa_btype */
    int32_t esize;         /* bytes per element of btype */
    int32_t dot;           /* bf16 inputs at the NPU's precision: every product on the bf16 dot GEMM */
    /* bytes of one (n2, key block) of each packed K / V layout (nsa_kv_pack) */
    int64_t blk_kt, blk_vt, blk_krows, blk_vrows;
    nsa_kernels kern;
    size_t seq_q_off, seq_kv_off; /* byte offsets of the cumulative lengths in the blob */
} nsa_core;

/* The validated problem (G = N1 / N2; padded sizes by nsa_shape_finish). */
nsa_shape nsa_shape_of(int64_t T1, int64_t T2, int64_t N1, int64_t N2, int64_t D, int64_t Dv, int64_t B, int64_t C,
                       int64_t nbatch);
/* Fills the padded sizes of *sh (validators set the rest); false if NB > INT32_MAX. */
bool nsa_shape_finish(nsa_shape *sh);
/* The core for a validated shape and input dtype: scale, precision (from the
 * environment: a status after pa_fail on an invalid value), rule, kernels. */
int nsa_core_init(const char *api, nsa_core *c, const nsa_shape *sh, double scale, aclDataType input_dtype);

/* The executor of either op: the plan (plan_size bytes, beginning with whatever
 * the op keeps, `core` inside it), then the cumulative lengths (seq_q / seq_kv
 * NULL: one batch of T1 / T2). */
int nsa_make_executor(const char *api, const pa_op_def *op, void *plan, size_t plan_size, nsa_core *core,
                      const aclIntArray *seq_q, const aclIntArray *seq_kv, uint64_t ws_size,
                      const size_t *in_views, int n_in, const size_t *out_views, int n_out, uint64_t *workspace_size,
                      aclOpExecutor **executor);

/* Start of either task: checks the workspace, aligns it (*ws), checks topk and
 * fills tok / gblk (see nsa_index_topk) at the given workspace offsets. */
int nsa_run_begin(const char *api, const void *plan, const nsa_core *core, const pa_tview *topk, void *workspace,
                  uint64_t workspace_size, uint64_t ws_need, uint64_t off_tok, uint64_t off_gblk, char **ws,
                  int64_t **tok, int32_t **gblk);

/* ---- validation (GetWorkspaceSize); each returns 0 or a status after pa_fail ---- */

/* A named argument, for the list checks below (each op keeps its own order). */
typedef struct nsa_named {
    const void *p;      /* a tensor, array, string or output pointer */
    const char *name;
} nsa_named;
/* The first NULL of list[0..n): `status` (the op's NULL code) naming it. */
int nsa_check_required(const char *api, int status, const nsa_named *list, size_t n);
/* nsa_check_tensor on the tensors list[0..n) (rank 3). */
int nsa_check_tensors(const char *api, const nsa_named *list, size_t n);
/* nsa_check_no_overlap on the output tensors list[0..n). */
int nsa_check_outputs_no_overlap(const char *api, const nsa_named *list, size_t n);
/* Every tensor of list[0..n) has dtype `want`; `what` describes it ("the dtype of query (X)" / "FLOAT"). */
int nsa_check_dtypes(const char *api, const nsa_named *list, size_t n, aclDataType want, const char *what);
/* query FLOAT16 / BFLOAT16 (relaxed: or FLOAT), then every tensor of same[0..n) of query's dtype. */
int nsa_check_input_dtypes(const char *api, const aclTensor *query, const nsa_named *same, size_t n, bool relaxed);
/* actualSeqQLen / actualSeqKvLen: equal lengths, at most max_batch (0: no limit), cumulative to T1 / T2. */
int nsa_check_seq_pair(const char *api, const aclIntArray *seq_q, const aclIntArray *seq_kv, int64_t T1, int64_t T2,
                       uint64_t max_batch);

/* PYACLNN_NSA_RELAXED=1, read at each call. */
bool nsa_relaxed_mode(void);
bool nsa_is_half(aclDataType dt);
/* Handle validity, plain format, rank, then the shared view rules (pa_tensor_check_view). */
int nsa_check_tensor(const char *api, const aclTensor *t, const char *name, int32_t rank);
/* Output views whose elements may share an address (several writers). */
int nsa_check_no_overlap(const char *api, const aclTensor *t, const char *name);
/* One expected shape: t->dims must equal want; `rule` explains it. */
typedef struct nsa_shape_rule {
    const aclTensor *t;
    const char *name;
    int64_t want[3];
    const char *rule;
} nsa_shape_rule;
/* nsa_check_shape3 on rules[0..n), in order. */
int nsa_check_shapes(const char *api, const nsa_shape_rule *rules, size_t n);
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
/* The blob's cumulative lengths. */
static inline const int64_t *nsa_seq_q(const void *plan, const nsa_core *c) {
    return (const int64_t *)(const void *)((const char *)plan + c->seq_q_off);
}
static inline const int64_t *nsa_seq_kv(const void *plan, const nsa_core *c) {
    return (const int64_t *)(const void *)((const char *)plan + c->seq_kv_off);
}

/* ---- run time ---- */

/* One product of the drivers on the core's GEMM: the bf16 dot GEMM when core->dot
 * (A bf16 rows, B bf16 pairs, k taken as ceil(k/2) pairs), else the fp32 GEMM with
 * row-major A (fp32) and B in the core's btype. */
typedef struct nsa_mm {
    int64_t m, n, k;          /* C is m x n; k: the length of each panel's products */
    const nsa_panel *panels;
    int64_t npanels;
    int64_t lda;              /* A's row stride in its elements (fp32, or bf16) */
    int64_t ldb;              /* B's row stride in its elements (btype), or in pairs */
    float *c;
    int64_t ldc;
    int32_t accumulate;
    const void *pf;           /* prefetch hint and switch (nsa_gemm_args) */
    int64_t pf_bytes;
    int32_t no_prefetch;
} nsa_mm;
void nsa_mm_run(const nsa_core *core, const nsa_mm *mm);

/* dst[j] = v[i0, i1, j] as fp32, j < n */
void nsa_read_row(const pa_tview *v, int64_t i0, int64_t i1, int64_t n, float *dst);
/* v[i0, i1, j] = fl(src[j] * mul) rounded to v's dtype, j < n: to nearest, ties to
 * even, or ties away from zero (AscendC CAST_ROUND) when `away`; NaN as the default NaN. */
void nsa_write_row(const pa_tview *v, int64_t i0, int64_t i1, int64_t n, const float *src, float mul, int away);
/* dst (btype) = the n values of src in slot order (nsa_b_slot), zeros up to npad
 * (a multiple of 16); the values must be exact in btype. */
void nsa_store_b(void *dst, int btype, const float *src, int64_t n, int64_t npad);
/* dst[j] = bf16 bits of v[i0, i1, j] (a bf16 view), j < n; zeros up to npad */
void nsa_read_row_bf16(const pa_tview *v, int64_t i0, int64_t i1, int64_t n, int64_t npad, uint16_t *dst);

/* Checks topk against every batch's KV length (first bad value in (t, n2, i)
 * order: 361001 after pa_fail) and fills tok[2t] = batch-local position s,
 * tok[2t+1] = first global KV block of t's batch, and gblk[(t*N2+n2)*C+i] =
 * global block id. seq_q / seq_kv: nbatch cumulative lengths. */
int nsa_index_topk(const char *api, const pa_tview *topk, const int64_t *seq_q, const int64_t *seq_kv,
                   int64_t nbatch, int64_t N2, int64_t C, int64_t B, int64_t *tok, int32_t *gblk);

/* K/V packing of every (n2, key block) into B operands; NULL: not wanted. Block
 * (n2, kb) starts at (n2*NB + kb) * core->blk_<name> bytes. The fp32 GEMM's
 * layouts, in the core's btype (row order by nsa_store_b):
 *   kt     K^T  [D][Bp]         (S = Q K^T)     krows  K rows [B][Dp]   (dq = dS K)
 *   vt     V^T  [Dv][Bp]        (dP = dO V^T)   vrows  V rows [B][Dvp]  (O = P V)
 * the bf16 dot GEMM's (core->dot), in 32-bit words = bf16 pairs:
 *   kt     [Dp/2][Bp]: (K[key][2j], K[key][2j+1]) at [j][key]
 *   vt     [Dvp/2][Bp]: the same for V
 *   krows  [Bh][Dp]:   (K[2j][d], K[2j+1][d]) at [j][d]
 *   vrows  [Bh][Dvp]:  the same for V
 * Keys and dims beyond the block / D / Dv are zeros. */
typedef struct nsa_kv_pack {
    const pa_tview *k, *v;
    const nsa_core *core;
    char *kt, *vt, *krows, *vrows;
} nsa_kv_pack;
/* Packs every (n2, key block) in parallel; false if kernel scratch ran out. */
bool nsa_pack_kv(const nsa_kv_pack *pk);

#endif
