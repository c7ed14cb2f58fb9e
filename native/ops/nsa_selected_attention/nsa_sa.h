/* aclnnNsaSelectedAttention: private glue between validate.c, plan.c and run.c.
 * The math, the plan and the workspace layout are described in README.md. */
#ifndef PA_NSA_SA_H
#define PA_NSA_SA_H

#include "common/pa_common.h"
#include "ops/nsa_common/nsa_common.h"

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

/* The plan blob: this struct, then the cumulative lengths (core.seq_q_off,
 * core.seq_kv_off). Plain data only. */
typedef struct nsa_sa_plan {
    /* inputs in API order, then outputs */
    pa_tview q, k, v, topk, mask;
    pa_tview smax, ssum, out;
    int32_t empty;        /* nothing to do */
    int32_t causal;       /* sparseMode 2 with an attenMask: key j visible iff j <= s */
    nsa_core core;        /* shape, scale, precision, kernels */

    /* workspace layout: byte offsets from the 64-byte aligned workspace base */
    uint64_t off_tok, off_gblk, off_kt, off_vrows;
    uint64_t ws_size;  /* includes 64 bytes of alignment slack; 0 when empty */
} nsa_sa_plan;

extern const pa_op_def nsa_sa_op_def;

int nsa_sa_validate(const nsa_sa_args *a, nsa_shape *shape, bool *empty);
bool nsa_sa_layout(nsa_sa_plan *p);
int nsa_sa_run(const void *plan, void *workspace, uint64_t workspace_size);

#endif
