/* Private to kernels/softmax_grad: the row walker shared by the SIMD tiers.
 * Include first in every softmax_grad_*.c file. */
#ifndef PA_SOFTMAX_GRAD_IMPL_H
#define PA_SOFTMAX_GRAD_IMPL_H

/* Every multiply and add is rounded on its own (the scalar oracle and the SIMD
 * tiers must agree bit for bit): never let the compiler fuse them into FMAs.
 * ISO C mode (-std=c11) already means -ffp-contract=off for GCC; this keeps it
 * so under -std=gnu11 too. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__STRICT_ANSI__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <string.h>

#include "kernels/softmax_grad/softmax_grad.h"
#include "runtime/pa_threadpool.h"

/* A contiguous-row kernel: g, y, m and out each hold n consecutive elements.
 * gnext / ynext: the row that comes next (to prefetch), or NULL.
 * nt: write out with non-temporal stores. */
typedef void (*pa_smsb_row_fn)(const void *g, const void *y, const uint8_t *m, void *out, int64_t n,
                               float scale, const void *gnext, const void *ynext, bool nt);

#define PA_SMSB_ROUND64(x) (((x) + 63) & ~(int64_t)63)

/* Copies n strided elements of `esize` bytes into dst (unless stride is 1, in
 * which case the source is used in place). Returns the contiguous row. */
static inline const void *pa_smsb_gather(const void *src, int64_t stride, int64_t n, int64_t esize,
                                         void *dst) {
    if (stride == 1) return src;
    const char *s = (const char *)src;
    char *d = (char *)dst;
    const int64_t step = stride * esize;
    switch (esize) {
    case 4:
        for (int64_t i = 0; i < n; i++) memcpy(d + i * 4, s + i * step, 4);
        break;
    case 2:
        for (int64_t i = 0; i < n; i++) memcpy(d + i * 2, s + i * step, 2);
        break;
    default:
        for (int64_t i = 0; i < n; i++) d[i] = s[i * step];
        break;
    }
    return dst;
}

/* Walks rows [r0, r1): a row whose last-dim strides are all 1 goes straight to
 * `row` (told where the next row is, to prefetch it); other rows are gathered
 * into per-thread scratch first. If the scratch cannot be allocated, the rows go
 * to the scalar `fallback`, which reads strides directly and gives the same bits.
 * Row offsets are advanced incrementally (b, n, s1 odometer). */
static inline void pa_smsb_drive(const pa_smsb_args *a, int64_t r0, int64_t r1, int64_t esize,
                                 pa_smsb_row_fn row, pa_smsb_rows_fn fallback) {
    const int64_t N = a->dims[1], S1 = a->dims[2], S2 = a->dims[3];
    const bool contig = a->gs[3] == 1 && a->ys[3] == 1 && a->ms[3] == 1;
    const size_t row_bytes = (size_t)PA_SMSB_ROUND64(S2 * esize);
    char *gbuf = NULL, *ybuf = NULL, *mbuf = NULL;
    if (!contig) {
        /* g row, y row, mask row; each part 64-byte aligned */
        gbuf = (char *)pa_thread_scratch(2 * row_bytes + (size_t)PA_SMSB_ROUND64(S2));
        if (gbuf == NULL) {
            fallback(a, r0, r1);
            return;
        }
        ybuf = gbuf + row_bytes;
        mbuf = ybuf + row_bytes;
    }
    /* odometer over (b, n, s1) with element offsets kept in step */
    int64_t b = r0 / (N * S1), n = (r0 / S1) % N, s = r0 % S1;
    int64_t go = b * a->gs[0] + n * a->gs[1] + s * a->gs[2];
    int64_t yo = b * a->ys[0] + n * a->ys[1] + s * a->ys[2];
    int64_t mo = b * a->ms[0] + n * a->ms[1] + s * a->ms[2];
    const char *g0 = (const char *)a->g, *y0 = (const char *)a->y;
    char *o = (char *)a->out + r0 * S2 * esize;
    for (int64_t r = r0; r < r1; r++) {
        const char *gp = g0 + go * esize, *yp = y0 + yo * esize;
        const uint8_t *mp = a->mask + mo;
        /* advance to row r + 1 */
        go += a->gs[2], yo += a->ys[2], mo += a->ms[2];
        if (++s == S1) {
            s = 0;
            go += a->gs[1] - S1 * a->gs[2], yo += a->ys[1] - S1 * a->ys[2], mo += a->ms[1] - S1 * a->ms[2];
            if (++n == N) {
                n = 0;
                go += a->gs[0] - N * a->gs[1], yo += a->ys[0] - N * a->ys[1], mo += a->ms[0] - N * a->ms[1];
            }
        }
        if (contig) {
            const bool more = r + 1 < r1;
            row(gp, yp, mp, o, S2, a->scale, more ? g0 + go * esize : NULL, more ? y0 + yo * esize : NULL,
                a->stream_out);
        } else {
            const void *gr = pa_smsb_gather(gp, a->gs[3], S2, esize, gbuf);
            const void *yr = pa_smsb_gather(yp, a->ys[3], S2, esize, ybuf);
            const void *mr = pa_smsb_gather(mp, a->ms[3], S2, 1, mbuf);
            row(gr, yr, (const uint8_t *)mr, o, S2, a->scale, NULL, NULL, a->stream_out);
        }
        o += S2 * esize;
    }
}

#endif
