/* aclnnNsaSelectedAttentionGrad: private glue between validate.c, plan.c and run.c.
 * The math, the plan and the workspace layout are described in README.md. */
#ifndef PA_NSA_SAG_H
#define PA_NSA_SAG_H

#include "common/pa_common.h"
#include "ops/nsa_common/nsa_common.h"

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

/* The plan blob: this struct, then the cumulative lengths (core.seq_q_off,
 * core.seq_kv_off). Plain data only. */
typedef struct nsa_sag_plan {
    /* inputs in API order, then outputs */
    pa_tview q, k, v, o, dout, smax, ssum, topk, mask;
    pa_tview dq, dk, dv;
    int32_t has_mask;
    int32_t sparse_mode;
    nsa_core core;        /* shape, scale, precision, kernels */
    int64_t tile;         /* tokens per tile */
    int64_t ntiles;
    int64_t slot_p, slot_ds; /* bytes of one pair's P and dS slots */

    /* workspace layout: byte offsets from the 64-byte aligned workspace base */
    uint64_t off_qrows, off_dorows, off_qcopy, off_docopy, off_mx, off_sm, off_dsum, off_tok, off_gblk;
    uint64_t off_krows, off_kt, off_vt, off_dkacc, off_dvacc;
    uint64_t off_p, off_ds, off_cnt, off_ent;
    uint64_t ws_size;  /* includes 64 bytes of alignment slack */
} nsa_sag_plan;

extern const pa_op_def nsa_sag_op_def;

/* validate.c: every parameter check; fills *shape on success. */
int nsa_sag_validate(const nsa_sag_args *a, nsa_shape *shape);
/* plan.c: workspace layout for the validated shape (fills the size fields and
 * offsets of *p; returns false on size overflow). */
bool nsa_sag_layout(nsa_sag_plan *p);
/* run.c */
int nsa_sag_run(const void *plan, void *workspace, uint64_t workspace_size);

#endif
