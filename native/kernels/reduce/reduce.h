/* Reductions over strided N-D tensors: sums, means, extrema (with indices),
 * any / all, p-norms, and the scans and sorts along one dim.
 *
 * Order: each output element reduces its elements in a fixed order that
 * depends only on the layout (never on threads or the ISA tier):
 *  - a run of reduced elements contiguous in memory is cut into blocks of
 *    PA_RED_BLOCK; a block sums in PA_RED_LANES interleaved lanes (element i
 *    to lane i % LANES), lanes combined pairwise; block results add in order;
 *  - otherwise elements add in index order (vectorised across outputs).
 * Floats accumulate in double, integers in int64 (wrapping); the result is
 * rounded once to out's dtype. */
#ifndef PA_REDUCE_KERNELS_H
#define PA_REDUCE_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "acl/acl_base.h"
#include "cpu/pa_cpu.h"

#define PA_RED_MAX_DIMS 8
#define PA_RED_LANES 64
#define PA_RED_BLOCK 4096

typedef enum pa_red_kind {
    PA_RED_SUM,
    PA_RED_MEAN,    /* sum / count */
    PA_RED_MAX,     /* NaN wins */
    PA_RED_MIN,
    PA_RED_ARGMAX,  /* index of the first maximum (a NaN counts as the maximum) */
    PA_RED_ARGMIN,
    PA_RED_ANY,     /* x != 0 */
    PA_RED_ALL,
    PA_RED_NORM,    /* (sum |x|^p)^(1/p); p = inf / -inf / 0 / 1 / 2 special */
    /* reduce_stat.c: every output's elements in index order, in double */
    PA_RED_PROD,      /* product (int_acc: wrapping int64) */
    PA_RED_LOGSUMEXP, /* m + log(sum exp(x - m)), m = max */
    PA_RED_VAR,       /* sum (x - mean)^2 / (n - p); want_values: its root; idx (if set): the mean */
    PA_RED_DOT,       /* sum x * y (y: in2, walked by red_in2) */
    PA_RED_GLU,       /* elementwise: a * sigmoid(b), b at a's offset + red_in2[0] (no reduced dims) */
    PA_RED_BCE,       /* binary cross entropy with logits: x = in, y = in2, weight in3, posWeight in4 (NULL: 1) */
    PA_RED_LOSS,      /* |x - y|^p (p = 1 or 2; y: in2, keep_in2 / red_in2), summed; want_values: the mean */
} pa_red_kind;

typedef struct pa_red_args {
    int32_t kind;
    aclDataType in_dtype;  /* storage dtype */
    aclDataType via;       /* elements cast to this dtype first (ACL_DT_UNDEFINED: none) */
    aclDataType out_dtype;
    aclDataType idx_dtype; /* ARGMAX / ARGMIN / MAX / MIN with indices: INT32 or INT64 */
    bool int_acc;          /* accumulate in int64 (integer results) */
    bool want_values, want_index;
    double p;              /* NORM */
    /* kept dims (the output's), then reduced dims; strides in elements */
    int32_t nkeep, nred;
    int64_t keep_dims[PA_RED_MAX_DIMS], keep_in[PA_RED_MAX_DIMS], keep_out[PA_RED_MAX_DIMS],
        keep_idx[PA_RED_MAX_DIMS];
    int64_t red_dims[PA_RED_MAX_DIMS], red_in[PA_RED_MAX_DIMS];
    int64_t red_in2[PA_RED_MAX_DIMS], keep_in2[PA_RED_MAX_DIMS]; /* DOT, LOSS: the second input's strides */
    aclDataType in2_dtype, in3_dtype, in4_dtype; /* LOSS, BCE */
    int64_t keep_in3[PA_RED_MAX_DIMS], keep_in4[PA_RED_MAX_DIMS], red_in3[PA_RED_MAX_DIMS], red_in4[PA_RED_MAX_DIMS];
    char *in3, *in4;
    char *in, *out, *idx, *in2;
} pa_red_args;

/* Plan time: merges dims walked contiguously and puts the smallest-stride
 * dims last. */
void pa_red_simplify(pa_red_args *a);
void pa_red_run(const pa_red_args *a);
void pa_red_stat_run(const pa_red_args *a);

/* ---- scans and sorts along one dim ---- */

typedef struct pa_scan_args {
    aclDataType in_dtype, out_dtype, idx_dtype;
    int32_t nouter;
    int64_t outer_dims[PA_RED_MAX_DIMS], outer_in[PA_RED_MAX_DIMS], outer_out[PA_RED_MAX_DIMS],
        outer_idx[PA_RED_MAX_DIMS];
    int64_t len, in_stride, out_stride, idx_stride;
    int64_t k;          /* topk: how many to keep (out length) */
    bool descending, stable, want_values, want_index;
    bool prod;          /* cumsum_run: a cumulative product instead */
    char *in, *out, *idx;
    void *ws; /* sort: pa_sort_workspace bytes */
} pa_scan_args;

/* out = cumulative sum of in along the dim (floats in double, ints in int64). */
void pa_cumsum_run(const pa_scan_args *a);
/* Stable sort along the dim (NaN after every number ascending, first
 * descending, as torch); the first k of each row to out / idx. */
void pa_sort_run(const pa_scan_args *a);
uint64_t pa_sort_workspace(const pa_scan_args *a);

/* The lane kernels of one tier (reduce_lanes.inc), for tests. */
typedef struct pa_red_lanes {
    double (*sum_f32)(const float *x, int64_t n);
    double (*sum_f64)(const double *x, int64_t n);
    double (*sumsq_f32)(const float *x, int64_t n);
    double (*sumabs_f32)(const float *x, int64_t n);
    void (*acc_f32)(double *acc, const float *x, int64_t n);  /* acc[i] += x[i] */
    void (*acc_f64)(double *acc, const double *x, int64_t n);
    /* the same over bf16 bits (widened exactly in the lane loop) */
    double (*sum_bf16)(const uint16_t *x, int64_t n);
    double (*sumsq_bf16)(const uint16_t *x, int64_t n);
    double (*sumabs_bf16)(const uint16_t *x, int64_t n);
    void (*acc_bf16)(double *acc, const uint16_t *x, int64_t n);
} pa_red_lanes;

const pa_red_lanes *pa_red_lanes_of(pa_isa isa);

#endif
