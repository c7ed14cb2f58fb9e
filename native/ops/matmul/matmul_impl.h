/* The matmul family's plan and shared helpers (internal to native/ops/matmul/).
 * A plan holds the GEMM's arguments with the operands' views; the run function
 * puts the views' (possibly re-bound) addresses into them and calls pa_gemm. */
#ifndef PA_MATMUL_IMPL_H
#define PA_MATMUL_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/gemm/gemm.h"
#include "ops/core/pa_op.h"
#include "ops/matmul/pa_matmul.h"

/* cubeMathType values */
enum { MM_KEEP_DTYPE = 0, MM_ALLOW_FP32_DOWN = 1, MM_USE_FP16 = 2, MM_USE_HF32 = 3, MM_USE_FP32_ADD = 4 };

/* What a plan runs. */
enum {
    MM_RUN_NOTHING,   /* checks passed, nothing to compute (empty output) */
    MM_RUN_GEMM,      /* pa_gemm over g (the views below fill its pointers) */
    MM_RUN_SCALE,     /* out = beta * bias broadcast (Addmm with alpha 0 or k 0) */
    MM_RUN_GER,       /* out[i][j] = a[i] * b[j] in dtype pdt */
    MM_RUN_TRANS_NZ,  /* the weight (view C) rewritten in place to NZ (workspace: a copy) */
};

/* Slots of the views in a plan. */
enum { MM_V_A, MM_V_B, MM_V_BIAS, MM_V_SCALE, MM_V_OFFSET, MM_V_C, MM_NV };

typedef struct mm_plan {
    int32_t run;
    int32_t pdt;      /* GER: the promoted dtype (aclDataType) */
    const char *api;  /* the launch API name (static), for messages */
    pa_gemm_args g;
    int32_t used[MM_NV];
    /* TRANS_NZ: the layout written */
    pa_gemm_nz nzl;
    int64_t nz_batches;
    pa_tview v[MM_NV];
} mm_plan;

/* ---- planning helpers (matmul_plan.c) ---- */

/* pa_gemm_dt of a tensor dtype (-1 if none). */
int mm_gdt(aclDataType dt);
bool mm_is_empty(const aclTensor *t);
const char *mm_shape(const aclTensor *t, char *buf, size_t cap);

void mm_plan_init(mm_plan *p, const pa_op *op, int run);
/* Puts t's view into slot `slot`. */
void mm_plan_view(mm_plan *p, int slot, const aclTensor *t);
/* Makes the executor: views of in_slots (executor inputs, API order) and
 * out_slots, ws bytes of workspace. */
int mm_finish(const pa_op *op, const mm_plan *p, const int *in_slots, int n_in, const int *out_slots, int n_out,
              uint64_t ws, uint64_t *workspaceSize, aclOpExecutor **executor);

/* Operand m of the GEMM from view v: rows along dim rdim, columns along cdim
 * (-1: that dimension is absent, one row / column); batch dims nb (the
 * output's), the operand's own batch dims right-aligned against them. */
void mm_operand(pa_gemm_mat *m, const pa_tview *v, int rdim, int cdim, int nb, const int64_t *batch, int own_nb);
void mm_output(pa_gemm_out *c, const pa_tview *v, int rdim, int cdim, int nb);

/* B from an FRACTAL_NZ tensor t (view v): the layout from its view and
 * storage (161002 if the view is not a dense matrix in either orientation
 * or the storage is too small). nb / batch: the GEMM's batch dims; the
 * tensor's own batch dims are right-aligned (broadcast where 1). */
int mm_nz_operand(const char *api, const char *name, const aclTensor *t, const pa_tview *v, int nb,
                  const int64_t *batch, pa_gemm_mat *m);
/* The NZ panel width of a dtype (32 bytes of elements). */
int mm_nz_c0(aclDataType dt);

/* The vendor's cubeMathType check (161002 outside 0..4) and dtype rules for
 * A x B -> out: input and product rounding. `addmm`: the Addmm / Baddbmm
 * forms (16-bit inputs with KEEP_DTYPE / USE_HF32 keep an fp32 product). */
int mm_rules(const char *api, aclDataType a, aclDataType b, aclDataType out, int64_t cube, bool addmm,
             pa_gemm_args *g);

/* ---- the planners ---- */
int mm_plan_dense(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex);
int mm_plan_ger(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex);
int mm_plan_wqbmm(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex);
int mm_plan_trans_weight(const pa_op *op, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex);
int mm_weight_size(const pa_op *op, const pa_arg *a);

/* ---- runs ---- */
int mm_run_ger(const mm_plan *p);
int mm_run_scale(const mm_plan *p);
int mm_run_trans_nz(const mm_plan *p, void *workspace, uint64_t workspace_size);

#endif
