/* aclnnNsaSelectedAttentionGrad: private glue between validate.c, plan.c and run.c.
 * The math, the plan and the workspace layout are described in README.md. */
#ifndef PA_NSA_SAG_H
#define PA_NSA_SAG_H

#include "common/pa_common.h"
#include "kernels/nsa_grad/nsa_grad.h"
#include "meta/pa_executor.h"
#include "meta/pa_tensor.h"

#define NSA_SAG_API "aclnnNsaSelectedAttentionGradGetWorkspaceSize"
#define NSA_SAG_RUN_API "aclnnNsaSelectedAttentionGrad"

/* Budget for the per-tile arrays (P, dS, packed Q and dO, stats, index
 * entries), in bytes; the token tile size is derived from it and from the
 * shapes only. */
#define NSA_SAG_TILE_BYTES ((int64_t)8 << 20)

/* Everything GetWorkspaceSize receives. */
typedef struct nsa_sag_args {
    const aclTensor *q, *k, *v, *o, *dout, *smax, *ssum, *topk;
    const aclIntArray *seq_q, *seq_kv;
    const aclTensor *mask;
    double scale;
    int64_t block, count, head_num;
    const char *layout;
    int64_t sparse_mode;
    const aclTensor *dq, *dk, *dv;
    const uint64_t *ws_size;
    aclOpExecutor *const *executor;
} nsa_sag_args;

/* Shapes after validation. */
typedef struct nsa_sag_shape {
    int64_t T1, T2, N1, N2, G, D, Dv, B, C, nbatch;
    bool relaxed;
} nsa_sag_shape;

/* The plan blob: this struct, then nbatch int64 cumulative query lengths at
 * seq_q_off and nbatch int64 cumulative KV lengths at seq_kv_off (byte offsets
 * from the start of the blob). Plain data only. */
typedef struct nsa_sag_plan {
    /* inputs in API order, then outputs */
    pa_tview q, k, v, o, dout, smax, ssum, topk, mask;
    pa_tview dq, dk, dv;
    int32_t has_mask;
    int32_t sparse_mode;
    int32_t use_bf16;     /* S and dP with the bf16 kernel (bf16 inputs, AVX512_BF16) */
    float scale;

    int64_t T1, T2, N1, N2, G, D, Dv, B, C, nbatch;
    int64_t Bp, Dp, Dvp;  /* B, D, Dv rounded up to 16 */
    int64_t NB;           /* KV blocks over all batches: T2 / B */
    int64_t tile;         /* tokens per tile */
    int64_t ntiles;

    size_t seq_q_off, seq_kv_off;

    /* workspace layout: byte offsets from the 64-byte aligned workspace base */
    uint64_t off_q32, off_do32, off_qb, off_dob, off_mx, off_sm, off_dsum, off_tok, off_gblk;
    uint64_t off_k32, off_kt, off_vt, off_dkacc, off_dvacc;
    uint64_t off_p, off_ds, off_cnt, off_ent;
    uint64_t ws_size;  /* includes 64 bytes of alignment slack */

    nsa_grad_kernels kern;
} nsa_sag_plan;

extern const pa_op_def nsa_sag_op_def;

/* validate.c: every parameter check; fills *shape on success. */
int nsa_sag_validate(const nsa_sag_args *a, nsa_sag_shape *shape);
/* plan.c: workspace layout for the validated shape (fills the size fields and
 * offsets of *p; returns false on size overflow). */
bool nsa_sag_layout(nsa_sag_plan *p);
/* run.c */
int nsa_sag_run(const void *plan, void *workspace, uint64_t workspace_size);

#endif
