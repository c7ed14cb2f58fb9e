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

/* A contiguous-row kernel: x and m hold n consecutive elements, y receives n.
 * z: fp32 scratch of PA_SMSF_ROUND64(n) elements, 64-byte aligned.
 * nt: write y with non-temporal stores. */
typedef void (*pa_smsf_row_fn)(const void *x, const uint8_t *m, void *y, int64_t n, float scale, float *z,
                               bool nt);

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

/* Walks rows [r0, r1) with a (b, n, s1) odometer; rows whose last-dim strides
 * are not 1 are gathered into per-thread scratch first. Without scratch the
 * rows go to the scalar `fallback` (same bits). */
static inline void pa_smsf_drive(const pa_smsf_args *a, int64_t r0, int64_t r1, int64_t esize,
                                 pa_smsf_row_fn row, pa_smsf_rows_fn fallback) {
    const int64_t N = a->dims[1], S1 = a->dims[2], S2 = a->dims[3];
    const size_t zbytes = (size_t)PA_SMSF_ROUND64(S2) * 4;
    const size_t xbytes = (size_t)PA_SMSF_ROUND64(S2 * esize);
    char *scratch = (char *)pa_thread_scratch(zbytes + xbytes + (size_t)PA_SMSF_ROUND64(S2));
    if (scratch == NULL) {
        fallback(a, r0, r1);
        return;
    }
    float *z = (float *)scratch;
    char *xbuf = scratch + zbytes, *mbuf = xbuf + xbytes;
    int64_t b = r0 / (N * S1), n = (r0 / S1) % N, s = r0 % S1;
    int64_t xo = b * a->xs[0] + n * a->xs[1] + s * a->xs[2];
    int64_t mo = b * a->ms[0] + n * a->ms[1] + s * a->ms[2];
    const char *x0 = (const char *)a->x;
    char *o = (char *)a->y + r0 * S2 * esize;
    for (int64_t r = r0; r < r1; r++) {
        const void *xr = pa_smsf_gather(x0 + xo * esize, a->xs[3], S2, esize, xbuf);
        const void *mr = pa_smsf_gather(a->mask + mo, a->ms[3], S2, 1, mbuf);
        row(xr, (const uint8_t *)mr, o, S2, a->scale, z, a->stream_out);
        o += S2 * esize;
        xo += a->xs[2], mo += a->ms[2];
        if (++s == S1) {
            s = 0;
            xo += a->xs[1] - S1 * a->xs[2], mo += a->ms[1] - S1 * a->ms[2];
            if (++n == N) {
                n = 0;
                xo += a->xs[0] - N * a->xs[1], mo += a->ms[0] - N * a->ms[1];
            }
        }
    }
}

#endif
