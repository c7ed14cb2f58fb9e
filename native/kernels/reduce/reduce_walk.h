/* Walking a reduction's operands (reduce.h's pa_red_args): where output o and
 * its reduced element r sit, and an element read through the `via` dtype.
 * Shared by the lane engine (reduce_engine.c) and the index-order walks
 * (reduce_stat.c). */
#ifndef PA_REDUCE_WALK_H
#define PA_REDUCE_WALK_H

#include "kernels/map/map_cvt.h"
#include "kernels/reduce/reduce.h"

/* Offsets of output o (index order over the kept dims): in the input, the
 * output and the index output, in elements. */
static inline void pa_red_out_offsets(const pa_red_args *a, int64_t o, int64_t *in, int64_t *out, int64_t *idx) {
    int64_t i = 0, q = 0, x = 0;
    for (int32_t d = a->nkeep - 1; d >= 0; d--) {
        const int64_t c = o % a->keep_dims[d];
        o /= a->keep_dims[d];
        i += c * a->keep_in[d];
        q += c * a->keep_out[d];
        x += c * a->keep_idx[d];
    }
    *in = i, *out = q, *idx = x;
}

/* The input offset of reduced element r (index order over the reduced dims). */
static inline int64_t pa_red_elem_offset(const pa_red_args *a, int64_t r) {
    int64_t off = 0;
    for (int32_t d = a->nred - 1; d >= 0; d--) {
        off += (r % a->red_dims[d]) * a->red_in[d];
        r /= a->red_dims[d];
    }
    return off;
}

/* The element at p cast to `via` (when set) and stored there, the bytes that cast holds. */
static inline void pa_red_via_bytes(const pa_red_args *a, const char *p, char tmp[8]) {
    if (pa_cvt_is_float(a->in_dtype)) pa_cvt_store_f(tmp, a->via, pa_cvt_load_f(p, a->in_dtype));
    else pa_cvt_store_i(tmp, a->via, pa_cvt_load_i(p, a->in_dtype));
}

static inline bool pa_red_has_via(const pa_red_args *a) {
    return a->via != ACL_DT_UNDEFINED && a->via != a->in_dtype;
}

/* The element at p as a double / int64, cast to `via` first when set. */
static inline double pa_red_load_f(const pa_red_args *a, const char *p) {
    if (!pa_red_has_via(a)) return pa_cvt_load_f(p, a->in_dtype);
    char tmp[8] = {0};
    pa_red_via_bytes(a, p, tmp);
    return pa_cvt_load_f(tmp, a->via);
}

static inline int64_t pa_red_load_i(const pa_red_args *a, const char *p) {
    if (!pa_red_has_via(a)) return pa_cvt_load_i(p, a->in_dtype);
    char tmp[8] = {0};
    pa_red_via_bytes(a, p, tmp);
    return pa_cvt_load_i(tmp, a->via);
}

#endif
