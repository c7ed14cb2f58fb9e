/* aclnnNsaSelectedAttention: private glue between validate.c, plan.c and run.c.
 * The math, the plan and the workspace layout are described in README.md. */
#ifndef PA_NSA_SA_H
#define PA_NSA_SA_H

#include "common/pa_common.h"
#include "kernels/nsa_grad/nsa_grad.h"
#include "meta/pa_executor.h"
#include "meta/pa_tensor.h"

#define NSA_SA_API "aclnnNsaSelectedAttentionGetWorkspaceSize"
#define NSA_SA_RUN_API "aclnnNsaSelectedAttention"

/* Everything GetWorkspaceSize receives. */
typedef struct nsa_sa_args {
    const aclTensor *q, *k, *v, *topk, *mask;
    const aclIntArray *seq_q, *seq_kv;
    double scale;
    int64_t head_num;
    const char *layout;
    int64_t sparse_mode, block, count;
    const aclTensor *smax, *ssum, *out;
    const uint64_t *ws_size;
    aclOpExecutor *const *executor;
} nsa_sa_args;

/* Shapes after validation (empty: all three outputs are empty, nothing runs). */
typedef struct nsa_sa_shape {
    int64_t T1, T2, N1, N2, G, D, Dv, B, C, nbatch;
    bool empty;
} nsa_sa_shape;

/* The plan blob: this struct, then nbatch int64 cumulative query lengths at
 * seq_q_off and nbatch int64 cumulative KV lengths at seq_kv_off (byte offsets
 * from the start of the blob). Plain data only. */
typedef struct nsa_sa_plan {
    /* inputs in API order, then outputs */
    pa_tview q, k, v, topk, mask;
    pa_tview smax, ssum, out;
    int32_t empty;        /* nothing to do */
    int32_t causal;       /* sparseMode 2 with an attenMask: key j visible iff j <= s */
    int32_t use_bf16;     /* S = Q K^T with the bf16 kernel (bf16 inputs, AVX512_BF16) */
    float scale;

    int64_t T1, T2, N1, N2, G, D, Dv, B, C, nbatch;
    int64_t Bp, Dp, Dvp;  /* B, D, Dv rounded up to 16 */
    int64_t NB;           /* KV blocks over all batches: T2 / B */

    size_t seq_q_off, seq_kv_off;

    /* workspace layout: byte offsets from the 64-byte aligned workspace base */
    uint64_t off_tok, off_gblk, off_kt, off_v32;
    uint64_t ws_size;  /* includes 64 bytes of alignment slack; 0 when empty */

    nsa_grad_kernels kern;
} nsa_sa_plan;

extern const pa_op_def nsa_sa_op_def;

int nsa_sa_validate(const nsa_sa_args *a, nsa_sa_shape *shape);
bool nsa_sa_layout(nsa_sa_plan *p);
int nsa_sa_run(const void *plan, void *workspace, uint64_t workspace_size);

#endif
