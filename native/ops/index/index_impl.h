/* The index family's shared plan, checks and kernels (internal to
 * native/ops/index/). One planner per operator group (index_gather.c,
 * index_scatter.c, index_put.c, index_repeat.c), picked by op->kernel
 * (index_plan.c); the run functions recompute every pointer from the views
 * in the plan blob, read and check every index before writing anything, and
 * copy elements by dtype size. */
#ifndef PA_INDEX_IMPL_H
#define PA_INDEX_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ops/core/pa_op.h"
#include "ops/index/pa_index.h"

/* The operators (op->kernel, pa_index.h). */
enum {
    IDX_GATHER_V2 = PA_INDEX_GATHER_V2, IDX_INDEX_SELECT = PA_INDEX_INDEX_SELECT, IDX_EMBEDDING = PA_INDEX_EMBEDDING,
    IDX_GATHER = PA_INDEX_GATHER, IDX_INDEX_COPY = PA_INDEX_INDEX_COPY,
    IDX_INPLACE_INDEX_COPY = PA_INDEX_INPLACE_INDEX_COPY, IDX_INDEX_FILL = PA_INDEX_INDEX_FILL,
    IDX_INPLACE_INDEX_FILL = PA_INDEX_INPLACE_INDEX_FILL, IDX_SCATTER = PA_INDEX_SCATTER,
    IDX_INPLACE_SCATTER = PA_INDEX_INPLACE_SCATTER, IDX_SCATTER_ADD = PA_INDEX_SCATTER_ADD,
    IDX_INDEX_PUT = PA_INDEX_INDEX_PUT, IDX_EMBEDDING_BACKWARD = PA_INDEX_EMBEDDING_BACKWARD,
    IDX_REPEAT_INTERLEAVE = PA_INDEX_REPEAT_INTERLEAVE, IDX_REPEAT_INTERLEAVE_DIM = PA_INDEX_REPEAT_INTERLEAVE_DIM,
    IDX_REPEAT_INTERLEAVE_INT = PA_INDEX_REPEAT_INTERLEAVE_INT,
    IDX_REPEAT_INTERLEAVE_INT_DIM = PA_INDEX_REPEAT_INTERLEAVE_INT_DIM,
    IDX_UPSAMPLE_NEAREST2D = PA_INDEX_UPSAMPLE_NEAREST2D,
};

/* What a plan runs. */
enum {
    IDX_RUN_NOTHING,      /* checks passed, nothing to compute (empty tensors) */
    IDX_RUN_COPY,         /* out = in (same shape and dtype) */
    IDX_RUN_GATHER_AXIS,  /* GatherV2 / IndexSelect / Embedding */
    IDX_RUN_GATHER_ELEM,  /* Gather (torch.gather) */
    IDX_RUN_INDEX_COPY,
    IDX_RUN_INDEX_FILL,
    IDX_RUN_SCATTER,      /* Scatter / ScatterAdd (mode: reduce) */
    IDX_RUN_INDEX_PUT,
    IDX_RUN_EMBEDDING_BACKWARD,
    IDX_RUN_ZERO,         /* out = 0 */
    IDX_RUN_REPEAT,       /* the repeat-interleave forms */
    IDX_RUN_UPSAMPLE,
};

/* Scatter reductions (the vendor's reduce attribute). */
enum { IDX_REDUCE_NONE = 0, IDX_REDUCE_ADD = 1, IDX_REDUCE_MUL = 2 };

/* Slots of the views in a plan. */
enum { IDX_V_SELF = 0, IDX_V_INDEX = 1, IDX_V_SRC = 2, IDX_V_OUT = 3, IDX_V_LIST = 4 };
#define IDX_MAX_LIST 8
#define IDX_MAX_VIEWS (IDX_V_LIST + IDX_MAX_LIST)

/* Index-put: what each entry of the indices list is. */
enum { IDX_PUT_SLICE = 0, IDX_PUT_INT = 1, IDX_PUT_MASK = 2 };

/* The plan blob (plain data; launches copy it). Fields by run:
 *   dim     the axis (wrapped)
 *   mode    GATHER_AXIS: 1 = negative indices wrap; SCATTER: the reduction;
 *           INDEX_PUT: accumulate; REPEAT: 1 = repeats is a tensor;
 *           UPSAMPLE: 1 = NHWC
 *   n[]     integer parameters (see each planner)
 *   extra[] a variable tail (INDEX_FILL: the sorted distinct indices) */
typedef struct idx_plan {
    int32_t run;
    int32_t kernel;
    int32_t dim;
    int32_t mode;
    int64_t n[8];
    const char *api; /* the launch API name (static), for messages */
    int8_t list_kind[IDX_MAX_LIST];
    pa_tview v[IDX_MAX_VIEWS];
    int64_t nextra;
    int64_t extra[];
} idx_plan;

/* ---- planning helpers (index_common.c) ---- */

/* dim wrapped into [0, rank) where rank = max(ndim, 1) when zero_d_as_1 is
 * set, else ndim (then a 0-d tensor has no valid dim); 161002 otherwise. */
int idx_wrap_dim(const char *api, int64_t dim, int64_t ndim, bool zero_d_as_1, int64_t *out);

/* out's shape must be dims[0..nd): 161002 naming `name` otherwise. */
int idx_check_shape(const char *api, const char *name, const aclTensor *t, int32_t nd, const int64_t *dims);
bool idx_same_shape(const aclTensor *a, const aclTensor *b);
int idx_check_same_dtype(const char *api, const char *name, const aclTensor *t, const char *ref_name,
                         const aclTensor *ref);
/* The element count of a view, 161002 when it does not fit int64. */
int idx_numel(const char *api, const char *name, const aclTensor *t, int64_t *n);
bool idx_is_empty(const aclTensor *t);

/* Starts a plan: zeroed, with kernel and run set. */
void idx_plan_init(idx_plan *p, const pa_op *op, int kernel, int run);
/* Puts the view of tensor t into slot `slot`. */
void idx_plan_view(idx_plan *p, int slot, const aclTensor *t);
/* Makes the executor: views of in_slots (executor inputs, API order) and
 * out_slots (outputs), ws bytes of workspace. `size` is the blob's size. */
int idx_finish(const pa_op *op, const idx_plan *p, size_t size, const int *in_slots, int n_in,
               const int *out_slots, int n_out, uint64_t *workspaceSize, aclOpExecutor **executor);

/* ---- run helpers (index_common.c) ---- */

/* Reads every element of index view v (row-major) as int64 into a new array
 * (free with free()); dtype floats truncate. Each value i must satisfy
 * lo <= i < size with lo = -size when allow_negative (negatives then wrap)
 * else 0; the first bad one fails with 361001 naming `name`, its position and
 * value, before anything is written. size < 0: no range check. */
int idx_load_indices(const char *api, const char *name, const pa_tview *v, int64_t size, bool allow_negative,
                     int64_t **out, int64_t *count);

/* Element offset of row-major position `linear` among dims [first, first+nd)
 * of the view (strides of v). */
int64_t idx_offset_of(const pa_tview *v, int first, int nd, int64_t linear);
int64_t idx_prod(const int64_t *dims, int first, int nd);

/* Copies an nd-dim block elementwise (strides in elements, es bytes each). */
void idx_copy_block(char *dst, const int64_t *dst_st, const char *src, const int64_t *src_st, const int64_t *dims,
                    int nd, size_t es);
/* dst = src for two views of the same shape and dtype (nothing if they are
 * the same view), in parallel. */
void idx_copy_view(const pa_tview *dst, const pa_tview *src);
/* Whether two views address exactly the same elements. */
bool idx_same_view(const pa_tview *a, const pa_tview *b);
/* Fills an nd-dim block with one element `val` (es bytes). */
void idx_fill_block(char *dst, const int64_t *dst_st, const int64_t *dims, int nd, const void *val, size_t es);

/* A row-major walk over dims[0..nd) keeping the element offsets of up to
 * three layouts (strides st[k]). */
typedef struct idx_cursor {
    int nd, nst;
    int64_t dims[PA_MAX_DIMS];
    int64_t coord[PA_MAX_DIMS];
    int64_t st[3][PA_MAX_DIMS];
    int64_t off[3];
} idx_cursor;

static inline void idx_cursor_seek(idx_cursor *c, int64_t linear) {
    for (int k = 0; k < c->nst; k++) c->off[k] = 0;
    for (int i = c->nd - 1; i >= 0; i--) {
        const int64_t d = c->dims[i];
        c->coord[i] = d > 0 ? linear % d : 0;
        linear = d > 0 ? linear / d : 0;
        for (int k = 0; k < c->nst; k++) c->off[k] += c->coord[i] * c->st[k][i];
    }
}

static inline void idx_cursor_next(idx_cursor *c) {
    for (int i = c->nd - 1; i >= 0; i--) {
        for (int k = 0; k < c->nst; k++) c->off[k] += c->st[k][i];
        if (++c->coord[i] < c->dims[i]) return;
        for (int k = 0; k < c->nst; k++) c->off[k] -= c->coord[i] * c->st[k][i];
        c->coord[i] = 0;
    }
}

static inline void idx_copy_elem(char *d, const char *s, size_t es) {
    switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    default: memcpy(d, s, 8); break;
    }
}

/* Items per chunk so that a chunk moves about 16K elements when one item
 * moves `item_elems` (fixed: it does not depend on the thread count). */
int64_t idx_grain(int64_t item_elems);

/* The run functions of each group. */
int idx_run_gather_axis(const idx_plan *p);
int idx_run_gather_elem(const idx_plan *p);
int idx_run_index_copy(const idx_plan *p);
int idx_run_index_fill(const idx_plan *p);
int idx_run_scatter(const idx_plan *p);
int idx_run_index_put(const idx_plan *p);
int idx_run_embedding_backward(const idx_plan *p);
int idx_run_repeat(const idx_plan *p);
int idx_run_upsample(const idx_plan *p);

/* The planners of each group. */
int idx_plan_gather_group(const pa_op *op, int kernel, const pa_arg *a, uint64_t *workspaceSize,
                          aclOpExecutor **executor);
int idx_plan_scatter_group(const pa_op *op, int kernel, const pa_arg *a, uint64_t *workspaceSize,
                           aclOpExecutor **executor);
int idx_plan_put_group(const pa_op *op, int kernel, const pa_arg *a, uint64_t *workspaceSize,
                       aclOpExecutor **executor);
int idx_plan_repeat_group(const pa_op *op, int kernel, const pa_arg *a, uint64_t *workspaceSize,
                          aclOpExecutor **executor);

#endif
