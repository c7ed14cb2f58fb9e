/* Scans and sorts along one dim (reduce.h): one row per work item. */
#include <math.h>
#include <string.h>

#include "common/pa_common.h"
#include "kernels/map/map_cvt.h"
#include "kernels/reduce/reduce.h"
#include "runtime/pa_threadpool.h"

static void row_offsets(const pa_scan_args *a, int64_t r, int64_t *in, int64_t *out, int64_t *idx) {
    int64_t i = 0, o = 0, x = 0;
    for (int32_t d = a->nouter - 1; d >= 0; d--) {
        const int64_t c = r % a->outer_dims[d];
        r /= a->outer_dims[d];
        i += c * a->outer_in[d];
        o += c * a->outer_out[d];
        x += c * a->outer_idx[d];
    }
    *in = i, *out = o, *idx = x;
}

static int64_t rows_of(const pa_scan_args *a) {
    int64_t n = 1;
    for (int32_t d = 0; d < a->nouter; d++) n *= a->outer_dims[d];
    return n;
}

/* ---- cumsum ---- */

static void cumsum_range(void *ctx, int64_t begin, int64_t end) {
    const pa_scan_args *a = ctx;
    const size_t ei = pa_cvt_size(a->in_dtype), eo = pa_cvt_size(a->out_dtype);
    const bool ints = !pa_cvt_is_float(a->out_dtype);
    for (int64_t r = begin; r < end; r++) {
        int64_t ib, ob, xb;
        row_offsets(a, r, &ib, &ob, &xb);
        const char *p = a->in + ib * (int64_t)ei;
        char *q = a->out + ob * (int64_t)eo;
        double sf = a->prod ? 1.0 : 0.0;
        int64_t si = a->prod ? 1 : 0;
        for (int64_t k = 0; k < a->len; k++) {
            const char *pk = p + k * a->in_stride * (int64_t)ei;
            char *qk = q + k * a->out_stride * (int64_t)eo;
            /* the input is cast to out's dtype first */
            char tmp[8] = {0};
            if (pa_cvt_is_float(a->in_dtype)) pa_cvt_store_f(tmp, a->out_dtype, pa_cvt_load_f(pk, a->in_dtype));
            else pa_cvt_store_i(tmp, a->out_dtype, pa_cvt_load_i(pk, a->in_dtype));
            if (ints) {
                const uint64_t v = (uint64_t)pa_cvt_load_i(tmp, a->out_dtype);
                si = (int64_t)(a->prod ? (uint64_t)si * v : (uint64_t)si + v);
                pa_cvt_store_i(qk, a->out_dtype, si);
            } else {
                sf = a->prod ? sf * pa_cvt_load_f(tmp, a->out_dtype) : sf + pa_cvt_load_f(tmp, a->out_dtype);
                pa_cvt_store_f(qk, a->out_dtype, sf);
            }
        }
    }
}

void pa_cumsum_run(const pa_scan_args *a) {
    const int64_t rows = rows_of(a);
    if (rows == 0 || a->len == 0) return;
    pa_parallel_for(rows, PA_MAX(1, 65536 / PA_MAX(1, a->len)), cumsum_range, (void *)a);
}

/* ---- sort ---- */

typedef struct key {
    union {
        double f;
        int64_t i; /* integer keys (exact) */
    } v;
    int64_t pos; /* the element's index along the dim */
} key;

typedef struct sort_ctx {
    const pa_scan_args *a;
    bool ints;
} sort_ctx;

/* a before b? NaN is the largest value (last ascending, first descending);
 * equal keys keep their order (the merge sort is stable). */
static bool before(const sort_ctx *s, const key *x, const key *y) {
    int c;
    if (s->ints) {
        c = x->v.i < y->v.i ? -1 : x->v.i > y->v.i ? 1 : 0;
    } else {
        const bool xn = x->v.f != x->v.f, yn = y->v.f != y->v.f;
        if (xn || yn) c = xn && yn ? 0 : xn ? 1 : -1;
        else c = x->v.f < y->v.f ? -1 : x->v.f > y->v.f ? 1 : 0;
    }
    if (s->a->descending) c = -c;
    return c < 0;
}

static void merge_sort(const sort_ctx *s, key *v, key *tmp, int64_t n) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            const int64_t mid = PA_MIN(lo + w, n), hi = PA_MIN(lo + 2 * w, n);
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = before(s, &v[j], &v[i]) ? v[j++] : v[i++];
            while (i < mid) tmp[k++] = v[i++];
            while (j < hi) tmp[k++] = v[j++];
        }
        memcpy(v, tmp, (size_t)n * sizeof *v);
    }
}

static void sort_range(void *ctx, int64_t begin, int64_t end) {
    const sort_ctx *s = ctx;
    const pa_scan_args *a = s->a;
    const size_t ei = pa_cvt_size(a->in_dtype), eo = pa_cvt_size(a->out_dtype), ex = pa_cvt_size(a->idx_dtype);
    for (int64_t r = begin; r < end; r++) {
        key *v = (key *)a->ws + r * 2 * a->len, *tmp = v + a->len; /* the row's part of the workspace */
        int64_t ib, ob, xb;
        row_offsets(a, r, &ib, &ob, &xb);
        for (int64_t k = 0; k < a->len; k++) {
            const char *p = a->in + (ib + k * a->in_stride) * (int64_t)ei;
            v[k].pos = k;
            if (s->ints) v[k].v.i = pa_cvt_load_i(p, a->in_dtype);
            else v[k].v.f = pa_cvt_load_f(p, a->in_dtype);
        }
        merge_sort(s, v, tmp, a->len);
        for (int64_t k = 0; k < a->k; k++) {
            if (a->want_values) {
                char *q = a->out + (ob + k * a->out_stride) * (int64_t)eo;
                if (s->ints) pa_cvt_store_i(q, a->out_dtype, v[k].v.i);
                else pa_cvt_store_f(q, a->out_dtype, v[k].v.f);
            }
            if (a->want_index) pa_cvt_store_i(a->idx + (xb + k * a->idx_stride) * (int64_t)ex, a->idx_dtype, v[k].pos);
        }
    }
}

uint64_t pa_sort_workspace(const pa_scan_args *a) { return (uint64_t)rows_of(a) * (uint64_t)a->len * 2 * sizeof(key); }

void pa_sort_run(const pa_scan_args *a) {
    const int64_t rows = rows_of(a);
    if (rows == 0 || a->len == 0 || a->k == 0) return;
    sort_ctx s = {a, !pa_cvt_is_float(a->in_dtype)};
    pa_parallel_for(rows, PA_MAX(1, 16384 / PA_MAX(1, a->len)), sort_range, &s);
}
