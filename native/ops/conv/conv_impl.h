/* The conv family's shared plan, checks and run helpers (internal to
 * native/ops/conv/). One planner per operator (conv_convolution.c,
 * conv_im2col.c, conv_pool.c, conv_trisolve.c), picked by op->kernel
 * (conv_plan.c). The run functions recompute every pointer from the views in
 * the plan blob; every output element is computed by one fixed sequence of
 * fp32 (or fp64) operations, so results do not depend on threads or ISA tiers. */
#ifndef PA_CONV_IMPL_H
#define PA_CONV_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/pa_half.h"
#include "ops/conv/pa_conv.h"
#include "ops/core/pa_op.h"

/* What a plan runs. */
enum {
    CV_RUN_NOTHING,     /* checks passed, nothing to compute (empty tensors) */
    CV_RUN_CONV,
    CV_RUN_IM2COL,
    CV_RUN_AVG_POOL,
    CV_RUN_MAX_POOL,
    CV_RUN_TRISOLVE,
};

/* Slots of the views in a plan. */
enum { CV_V_X = 0, CV_V_W = 1, CV_V_B = 2, CV_V_Y = 3, CV_V_M = 4, CV_NVIEWS = 5 };

/* Spatial rank of the canonical layouts (1-D and 2-D use leading dims of 1). */
#define CV_SP 3

/* The plan blob (plain data; launches copy it).
 * Canonical layouts: activations [N, C, D, H, W], weights [O, I, kD, kH, kW];
 * xs / ws / ys are the element strides of the views in that order (the
 * views' own dims may be NCL, NCHW, NCDHW or NDHWC). */
typedef struct cv_plan {
    int32_t run;
    int32_t kernel;
    const char *api; /* the launch API name (static), for messages */
    pa_tview v[CV_NVIEWS];
    /* convolution / im2col / pooling geometry */
    int64_t n, cin, cout, groups, cin_g, cout_g;
    int64_t in_sp[CV_SP], out_sp[CV_SP], k[CV_SP], s[CV_SP], p[CV_SP], d[CV_SP];
    int64_t xs[5], ws[5];
    int8_t ymap[5]; /* the dim of the output view holding each canonical dim (-1: none, stride 0) */
    int32_t transposed;
    int32_t cd; /* compute dtype: inputs are rounded to it (aclDataType) */
    int32_t od; /* the kernel's output dtype: the result is rounded to it, then converted to out's */
    int32_t bd; /* the dtype the bias is rounded to (then used as fp32) */
    int32_t has_bias;
    /* pooling */
    int32_t count_include_pad;
    int64_t divisor; /* 0: none */
    int64_t pad_end[CV_SP]; /* MaxPool: bottom / right padding */
    /* triangular solve: batch dims of x (broadcast), strides of self / A for them (0: broadcast) */
    int32_t upper, transpose, unit;
    int32_t nbatch;
    int64_t bdims[PA_MAX_DIMS];
    int64_t bst_b[PA_MAX_DIMS], bst_a[PA_MAX_DIMS];
    int64_t m, ncols;
} cv_plan;

/* ---- planning helpers (conv_plan.c) ---- */

void cv_plan_init(cv_plan *p, const pa_op *op, int run);
/* Makes the executor: views of in_slots (executor inputs, API order; a slot
 * whose view is absent gives SIZE_MAX) and out_slots. */
int cv_finish(const pa_op *op, const cv_plan *p, const int *in_slots, int n_in, const int *out_slots, int n_out,
              const bool *present, uint64_t *workspaceSize, aclOpExecutor **executor);
bool cv_is_empty(const aclTensor *t);
/* "[1,2,3]" of an int array. */
const char *cv_array_str(const aclIntArray *a, char *buf, size_t cap);

/* ---- run helpers (conv_plan.c) ---- */

/* An element of dtype dt as fp32 / an fp32 value stored rounded once (to
 * nearest even) into dtype dt / v rounded to dtype dt (FLOAT16 / BF16; others
 * unchanged) and back to fp32. */
static inline float cv_load_f32(const char *p, aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT: { float v; memcpy(&v, p, 4); return v; }
    case ACL_FLOAT16: { uint16_t h; memcpy(&h, p, 2); return pa_f16_to_f32(h); }
    case ACL_BF16: { uint16_t h; memcpy(&h, p, 2); return pa_bf16_to_f32(h); }
    case ACL_DOUBLE: { double v; memcpy(&v, p, 8); return (float)v; }
    default: return 0.0f;
    }
}

static inline void cv_store_f32(char *p, aclDataType dt, float v) {
    switch (dt) {
    case ACL_FLOAT: memcpy(p, &v, 4); return;
    case ACL_FLOAT16: { uint16_t h = pa_f32_to_f16(v); memcpy(p, &h, 2); return; }
    case ACL_BF16: { uint16_t h = pa_f32_to_bf16(v); memcpy(p, &h, 2); return; }
    case ACL_DOUBLE: { double d = v; memcpy(p, &d, 8); return; }
    default: return;
    }
}

static inline float cv_round_to(float v, aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT16: return pa_f16_to_f32(pa_f32_to_f16(v));
    case ACL_BF16: return pa_bf16_to_f32(pa_f32_to_bf16(v));
    default: return v;
    }
}

/* The canonical element strides of output view y (the plan's view or a staged copy). */
void cv_out_strides(const cv_plan *p, const pa_tview *y, int64_t *ys);
/* Whether the storage bytes two views may touch overlap. */
bool cv_views_overlap(const pa_tview *a, const pa_tview *b);
/* A contiguous row-major view of the same shape and dtype as v over buf. */
pa_tview cv_contig_like(const pa_tview *v, void *buf);
/* dst = src for two views of one shape and dtype. */
void cv_copy_view(const pa_tview *dst, const pa_tview *src);
/* Bytes of a row-major copy of view v (0 for an empty view). */
size_t cv_view_bytes(const pa_tview *v);

/* ---- the planners and run functions of each operator ---- */
int cv_plan_convolution(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int cv_plan_im2col(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int cv_plan_avg_pool(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int cv_plan_max_pool(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int cv_plan_trisolve(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);

int cv_run_conv(const cv_plan *p, const pa_tview *y);
int cv_run_im2col(const cv_plan *p, const pa_tview *y);
int cv_run_avg_pool(const cv_plan *p, const pa_tview *y);
int cv_run_max_pool(const cv_plan *p, const pa_tview *y);
int cv_run_trisolve(const cv_plan *p, const pa_tview *y, const pa_tview *m);

#endif
