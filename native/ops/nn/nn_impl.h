/* The NN family's shared plan, checks and row driver (internal to
 * native/ops/nn/).
 *
 * Most NN operators are "row" problems: the elements of a tensor split into
 * rows (the reduced dims: the softmax dim, a norm's normalized dims, a group)
 * indexed by the outer dims. A plan keeps the outer dims and the row dims
 * once, and for every tensor its strides over both (a tensor broadcast over
 * rows - gamma - has outer strides 0; one value per row - mean, rstd - has
 * row strides 0). Rows are independent: each row is computed by one thread
 * in one fixed sequence of operations (the row kernels, kernels/nn/nn_vec.h),
 * so results do not depend on the thread count or the ISA tier. Values are
 * computed in fp32 (fp64 for DOUBLE), rounded to the operator's result dtype,
 * then converted to the output's dtype (nearest even). */
#ifndef PA_NN_IMPL_H
#define PA_NN_IMPL_H

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__STRICT_ANSI__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/nn/nn_vec.h"
#include "ops/core/pa_op.h"
#include "ops/nn/pa_nn.h"

#define NN_MAXV PA_OP_MAX_VIEWS
#define NN_MAXP 16 /* parameters */

/* What a plan runs. */
enum {
    NN_RUN_NOTHING,
    NN_RUN_SOFTMAX,      /* Softmax / LogSoftmax */
    NN_RUN_SOFTMAX_GRAD, /* SoftmaxBackward / LogSoftmaxBackward */
    NN_RUN_RMS_NORM,     /* RmsNorm / AddRmsNorm */
    NN_RUN_RMS_NORM_GRAD,
    NN_RUN_LAYER_NORM,
    NN_RUN_LAYER_NORM_GRAD,
    NN_RUN_GROUP_NORM,
    NN_RUN_GLU,
    NN_RUN_ROPE,
    NN_RUN_SOFTMAX_CE,
    NN_RUN_NLL_LOSS,
    NN_RUN_NLL_LOSS_GRAD,
    NN_RUN_FILL,         /* empty-input conventions: fill outputs with constants */
};

/* A tensor's strides (elements) over the outer dims and the row dims. */
typedef struct nn_lay {
    int64_t ost[PA_MAX_DIMS];
    int64_t rst[PA_MAX_DIMS];
    bool contig; /* a row is rlen consecutive elements */
} nn_lay;

typedef struct nn_plan {
    int32_t kernel, run;
    const char *api;  /* launch API name (static) */
    int32_t nv;       /* views in v (executor order: inputs, then outputs) */
    int32_t nin;
    int8_t slot[NN_MAXP]; /* parameter index -> slot in v (-1: none / absent) */
    pa_tview v[NN_MAXV];
    /* the row problem */
    int32_t ond, rnd;
    int64_t odims[PA_MAX_DIMS], rdims[PA_MAX_DIMS];
    int64_t rows, rlen;
    nn_lay lay[NN_MAXV];
    aclDataType res[NN_MAXV]; /* per slot (outputs): the dtype values are rounded to first */
    bool f64;                 /* compute in double */
    bool nt;                  /* stream the main output (non-temporal stores): too large to stay cached */
    int32_t mode;             /* op specific */
    int32_t flags;            /* op specific */
    int64_t iv[8];            /* op specific integers */
    double dv[8];             /* op specific numbers */
} nn_plan;

/* ---- planning (nn_common.c) ---- */

/* Starts a plan: views of every tensor parameter (pa_op_views), slots. */
void nn_plan_init(nn_plan *p, const pa_op *op, const pa_arg *a, int run);
/* The view slot of parameter `name` (-1 when absent). */
int nn_slot(const nn_plan *p, const pa_op *op, const char *name);
/* Makes the executor over the plan (ws bytes of workspace). */
int nn_finish(const pa_op *op, const nn_plan *p, uint64_t ws, uint64_t *workspaceSize, aclOpExecutor **executor);

/* The row problem: outer dims odims[0..ond), row dims rdims[0..rnd). */
void nn_set_rows(nn_plan *p, const int64_t *odims, int ond, const int64_t *rdims, int rnd);
/* A slot's layout: strides over the outer and the row dims (NULL = all 0). */
void nn_set_lay(nn_plan *p, int slot, const int64_t *ost, const int64_t *rst);
/* A slot whose view has the full shape split at `axis`: outer = dims[0..axis),
 * rows = dims[axis..nd). */
void nn_set_lay_split(nn_plan *p, int slot, int axis);
/* A slot whose view has the full shape with the single row dim `dim`. */
void nn_set_lay_dim(nn_plan *p, int slot, int dim);

/* dim wrapped into [0, rank) (rank = max(ndim, 1) when zero_d_as_1), 161002 otherwise. */
int nn_wrap_dim(const char *api, const char *what, int64_t dim, int64_t ndim, bool zero_d_as_1, int64_t *out);
bool nn_same_shape(const aclTensor *a, const aclTensor *b);
bool nn_is_empty(const aclTensor *t);
int64_t nn_numel(const aclTensor *t); /* the planner's tensors always fit */
int nn_check_same_shape(const char *api, const char *name, const aclTensor *t, const char *ref_name,
                        const aclTensor *ref, int code);
int nn_check_shape(const char *api, const char *name, const aclTensor *t, int32_t nd, const int64_t *dims, int code);
int nn_check_same_dtype(const char *api, const char *name, const aclTensor *t, const char *ref_name,
                        const aclTensor *ref);
bool nn_is_float16ish(aclDataType dt);

/* ---- running (nn_common.c) ---- */

/* Element offset of row r's first element in slot s (outer coordinates). */
int64_t nn_row_off(const nn_plan *p, int s, int64_t r);
/* Loads row r of slot s into fp32 (n = rlen values). */
void nn_load(const nn_plan *p, const pa_nn_vec *k, int s, int64_t r, float *dst);
/* Stores n = rlen fp32 values as row r of output slot s, rounded to
 * p->res[s], then converted to the slot's dtype. */
void nn_store(const nn_plan *p, const pa_nn_vec *k, int s, int64_t r, const float *src);
/* ... with the row's first element at element offset `off` of the slot. */
void nn_load_off(const nn_plan *p, const pa_nn_vec *k, int s, int64_t off, float *dst);
void nn_store_off(const nn_plan *p, const pa_nn_vec *k, int s, int64_t off, const float *src);
/* Row r of slot s in place as fp32 when the slot holds FLOAT rows of
 * consecutive elements (outputs: rounded to FLOAT too), else NULL. */
const float *nn_row_in_f32(const nn_plan *p, int s, int64_t r);
float *nn_row_out_f32(const nn_plan *p, int s, int64_t r);
/* ... as FLOAT16 / BF16 elements (*bf: 1 for BF16); outputs: rounded to their own dtype (or FLOAT) first. */
const uint16_t *nn_row_in_16(const nn_plan *p, int s, int64_t r, int *bf);
uint16_t *nn_row_out_16(const nn_plan *p, int s, int64_t r, int *bf);
/* Row r + 1 of slot s when it lies in [.., r1) and its elements are consecutive (else NULL). */
const void *nn_next_row(const nn_plan *p, int s, int64_t r, int64_t r1);
/* Prefetches row r + 1 of slot s when it lies in [.., r1) and its elements are consecutive. */
void nn_prefetch_next(const nn_plan *p, const pa_nn_vec *k, int s, int64_t r, int64_t r1);
/* The double versions (DOUBLE compute). */
void nn_load_d(const nn_plan *p, int s, int64_t r, double *dst);
void nn_store_d(const nn_plan *p, int s, int64_t r, const double *src);
/* One value at element offset `off` of slot s (rounded to p->res[s] first). */
void nn_put1(const nn_plan *p, int s, int64_t off, double v);
float nn_get1(const nn_plan *p, int s, int64_t off);
/* v rounded to dtype dt and back to fp32. */
float nn_round_to(aclDataType dt, float v);

/* Whether an output of `bytes` is streamed past the caches (8 MiB and up, x86). */
bool nn_stream_out(int64_t bytes);

/* Rows per chunk: about 64K elements of work (independent of threads). */
int64_t nn_grain(int64_t rlen);

/* Per-thread fp32 scratch: `count` rows of NN_SSTRIDE(len) floats each,
 * 64-byte aligned, staggered by 64 bytes against 4 KiB aliasing (NULL when
 * out of memory). */
#define NN_SSTRIDE(len) ((((len) + 15) & ~(int64_t)15) + 16)
float *nn_scratch(int count, int64_t len);

/* ---- the groups (nn_softmax.c, nn_norm.c, ...) ---- */
int nn_plan_softmax(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int nn_run_softmax(const nn_plan *p);
int nn_run_softmax_grad(const nn_plan *p);
int nn_plan_norm(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int nn_run_rms_norm(const nn_plan *p);
int nn_run_rms_norm_grad(const nn_plan *p);
int nn_run_layer_norm(const nn_plan *p);
int nn_run_layer_norm_grad(const nn_plan *p);
int nn_run_group_norm(const nn_plan *p);
int nn_plan_glu(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int nn_run_glu(const nn_plan *p);
int nn_plan_rope(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int nn_run_rope(const nn_plan *p);
int nn_plan_loss(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int nn_run_softmax_ce(const nn_plan *p);
int nn_run_nll_loss(const nn_plan *p);
int nn_run_nll_loss_grad(const nn_plan *p);
int nn_run_fill(const nn_plan *p);

#endif
