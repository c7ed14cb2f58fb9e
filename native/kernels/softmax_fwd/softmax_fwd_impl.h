/* Private to kernels/softmax_fwd: the row walker shared by the SIMD tiers.
 * Include first in every softmax_fwd_*.c file. */
#ifndef PA_SOFTMAX_FWD_IMPL_H
#define PA_SOFTMAX_FWD_IMPL_H

/* Every multiply and add is rounded on its own (all tiers must agree bit for
 * bit): never let the compiler fuse them into FMAs. ISO C mode (-std=c11)
 * already means -ffp-contract=off for GCC; this keeps it so under gnu11 too. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__STRICT_ANSI__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <string.h>

#include "kernels/softmax_fwd/softmax_fwd.h"
#include "runtime/pa_threadpool.h"

#define PA_SMSF_ROUND64(v) (((v) + 63) & ~(int64_t)63)

/* One row for a contiguous-row kernel: x and m hold n consecutive elements, y
 * receives n. xn, mn: a later row's x and mask (or NULL), which the kernel
 * prefetches while it computes this row in L1, so memory stays busy. */
typedef struct pa_smsf_row {
    const void *x;
    const uint8_t *m;
    void *y;
    const void *xn;
    const uint8_t *mn;
} pa_smsf_row;

/* z: fp32 scratch of PA_SMSF_ROUND64(n) elements per row, 64-byte aligned.
 * nt: write y with non-temporal stores. A pair kernel computes rows[0] and
 * rows[1] interleaved (one row's reductions overlap the other's passes). */
typedef void (*pa_smsf_row_fn)(const pa_smsf_row *row, int64_t n, float scale, float *z, bool nt);
typedef void (*pa_smsf_pair_fn)(const pa_smsf_row rows[2], int64_t n, float scale, float *z0, float *z1, bool nt);

/* Rows up to this long go in pairs (two z rows stay in L1). */
#define PA_SMSF_PAIR_MAX 2048

static inline const void *pa_smsf_gather(const void *src, int64_t stride, int64_t n, int64_t esize, void *dst) {
    if (stride == 1) return src;
    const char *s = (const char *)src;
    char *d = (char *)dst;
    const int64_t step = stride * esize;
    if (esize == 4) {
        for (int64_t i = 0; i < n; i++) memcpy(d + i * 4, s + i * step, 4);
    } else if (esize == 2) {
        for (int64_t i = 0; i < n; i++) memcpy(d + i * 2, s + i * step, 2);
    } else {
        for (int64_t i = 0; i < n; i++) d[i] = s[i * step];
    }
    return dst;
}

/* (b, n, s1) odometer over the rows: element offsets of a row's x and mask. */
typedef struct pa_smsf_odo {
    int64_t n, s, xo, mo;
} pa_smsf_odo;

static inline pa_smsf_odo pa_smsf_odo_at(const pa_smsf_args *a, int64_t r) {
    const int64_t N = a->dims[1], S1 = a->dims[2];
    const int64_t b = r / (N * S1), n = (r / S1) % N, s = r % S1;
    return (pa_smsf_odo){n, s, b * a->xs[0] + n * a->xs[1] + s * a->xs[2], b * a->ms[0] + n * a->ms[1] + s * a->ms[2]};
}

static inline void pa_smsf_odo_next(pa_smsf_odo *o, const pa_smsf_args *a) {
    o->xo += a->xs[2], o->mo += a->ms[2];
    if (++o->s == a->dims[2]) {
        o->s = 0;
        o->xo += a->xs[1] - a->dims[2] * a->xs[2], o->mo += a->ms[1] - a->dims[2] * a->ms[2];
        if (++o->n == a->dims[1]) {
            o->n = 0;
            o->xo += a->xs[0] - a->dims[1] * a->xs[1], o->mo += a->ms[0] - a->dims[1] * a->ms[1];
        }
    }
}

/* Walks rows [r0, r1), in pairs when `pair` is given and S2 <= PA_SMSF_PAIR_MAX;
 * rows whose last-dim strides are not 1 are gathered into per-thread scratch
 * first. Without scratch the rows go to the scalar `fallback` (same bits). */
static inline void pa_smsf_drive(const pa_smsf_args *a, int64_t r0, int64_t r1, int64_t esize,
                                 pa_smsf_row_fn row, pa_smsf_pair_fn pair, pa_smsf_rows_fn fallback) {
    const int64_t S2 = a->dims[3];
    const int64_t step = pair != NULL && S2 <= PA_SMSF_PAIR_MAX ? 2 : 1;
    const size_t zbytes = (size_t)PA_SMSF_ROUND64(S2) * 4;
    const size_t xbytes = (size_t)PA_SMSF_ROUND64(S2 * esize);
    const size_t mbytes = (size_t)PA_SMSF_ROUND64(S2);
    char *scratch = (char *)pa_thread_scratch((size_t)step * (zbytes + xbytes + mbytes));
    if (scratch == NULL) {
        fallback(a, r0, r1);
        return;
    }
    float *z[2] = {(float *)scratch, (float *)(scratch + zbytes)};
    char *xbuf[2] = {scratch + step * zbytes, scratch + step * zbytes + xbytes};
    char *mbuf[2] = {scratch + step * (zbytes + xbytes), scratch + step * (zbytes + xbytes) + mbytes};
    const bool prefetch = a->xs[3] == 1 && a->ms[3] == 1;
    pa_smsf_odo cur = pa_smsf_odo_at(a, r0), ahead = pa_smsf_odo_at(a, r0 + step < r1 ? r0 + step : r0);
    const char *x0 = (const char *)a->x;
    char *o = (char *)a->y + r0 * S2 * esize;
    for (int64_t r = r0; r < r1;) {
        const int64_t take = step == 2 && r + 1 < r1 ? 2 : 1;
        pa_smsf_row rows[2];
        for (int64_t k = 0; k < take; k++) {
            const bool more = prefetch && r + k + step < r1;
            rows[k] = (pa_smsf_row){pa_smsf_gather(x0 + cur.xo * esize, a->xs[3], S2, esize, xbuf[k]),
                                    (const uint8_t *)pa_smsf_gather(a->mask + cur.mo, a->ms[3], S2, 1, mbuf[k]),
                                    o + k * S2 * esize, more ? x0 + ahead.xo * esize : NULL,
                                    more ? a->mask + ahead.mo : NULL};
            pa_smsf_odo_next(&cur, a);
            if (r + k + step < r1) pa_smsf_odo_next(&ahead, a);
        }
        if (take == 2) pair(rows, S2, a->scale, z[0], z[1], a->stream_out);
        else row(&rows[0], S2, a->scale, z[0], a->stream_out);
        r += take;
        o += take * S2 * esize;
    }
}

#endif
