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
 * gnext / ynext: the row that comes next (to prefetch into L1), or NULL.
 * far: when nonzero, the rows of g and y continue back to back past this one
 * (those of m too if far_m): prefetch into L2 `far` elements ahead.
 * nt: write out with non-temporal stores. */
typedef void (*pa_smsb_row_fn)(const void *g, const void *y, const uint8_t *m, void *out, int64_t n,
                               float scale, const void *gnext, const void *ynext, int64_t far, bool far_m,
                               bool nt);

/* How far ahead (bytes of g, and as many elements of y and m) the kernels
 * prefetch into L2, beyond the next row / group that they prefetch into L1.
 * With 4 KB pages the hardware prefetchers stop at every page end; a few
 * pages of reach keep the streams going ([8,16,512,512]: ~+5% fp32, ~+15% fp16
 * and bf16; 2 KB or 16 KB were slower). Not in the short-row groups (slower there). */
#define PA_SMSB_FAR_BYTES 4096

/* The drive names the next row (for the kernel to prefetch into L1) only if
 * its g and y take at most this many bytes: with longer rows (fp32 S2 = 4096:
 * 32 KB) the prefetched lines evict the current row before pass 2 reads it
 * back (~12% more CPU time there); the L2 prefetch `far` ahead still runs. */
#define PA_SMSB_L1_NEXT_MAX 16384

#define PA_SMSB_ROUND64(x) (((x) + 63) & ~(int64_t)63)

/* ---- the vendor's summation order (softmax_grad.h), scalar pieces ---- */

/* Rows up to this many columns: padded 8-block sums in 8 accumulators. */
#define PA_SMSB_ACC8_MAX 1024
/* Chunk sums of a longer row (one per 64 columns), plus room for a SIMD tier
 * to store 16 at a time past the last. */
#define PA_SMSB_CHUNKS_BUF (PA_SMSB_MAX_S2 / 64 + 16)

/* ((v0+v1)+(v2+v3))+((v4+v5)+(v6+v7)) */
static inline float pa_smsb_tree8(const float v[8]) {
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

/* The pairwise tree of x[0..len) (len >= 1): adjacent pairs level by level, a
 * level of odd length gets +0.0 appended (x + 0.0f: -0.0 becomes +0.0).
 * Overwrites x. */
static inline float pa_smsb_pairwise(float *x, int64_t len) {
    while (len > 1) {
        const int64_t half = len / 2;
        for (int64_t i = 0; i < half; i++) x[i] = x[2 * i] + x[2 * i + 1];
        if (len & 1) x[half] = x[len - 1] + 0.0f;
        len = (len + 1) / 2;
    }
    return x[0];
}

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
    /* (rows of different (b, n) may not follow each other: then some far
     * prefetches fetch lines that are not needed, which is harmless) */
    const int64_t far = contig && a->gs[2] == S2 && a->ys[2] == S2 ? PA_SMSB_FAR_BYTES / esize : 0;
    const bool far_m = a->ms[2] == S2;
    const bool l1_next = 2 * S2 * esize <= PA_SMSB_L1_NEXT_MAX;
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
            const bool more = r + 1 < r1 && l1_next;
            row(gp, yp, mp, o, S2, a->scale, more ? g0 + go * esize : NULL, more ? y0 + yo * esize : NULL,
                far, far_m, a->stream_out);
        } else {
            const void *gr = pa_smsb_gather(gp, a->gs[3], S2, esize, gbuf);
            const void *yr = pa_smsb_gather(yp, a->ys[3], S2, esize, ybuf);
            const void *mr = pa_smsb_gather(mp, a->ms[3], S2, 1, mbuf);
            row(gr, yr, (const uint8_t *)mr, o, S2, a->scale, NULL, NULL, 0, false, a->stream_out);
        }
        o += S2 * esize;
    }
}

/* ---- short rows: groups of up to PA_SMSB_GROUP rows ----
 *
 * Every SIMD tier takes rows of up to PA_SMSB_SHORT_MAX columns (AVX-512 also
 * some longer ones) in groups, not one by one: a per-row kernel spends most of
 * a short row's time on per-row overhead (call, loop setup, tails, the
 * reduction's latency). A group kernel gets `rows` (1..its group size)
 * consecutive rows of n columns whose g, y, m and out rows each lie back to
 * back (row k at element k * n). It sums each row in registers, finishes the
 * group's sums together, then writes the group's outputs as one flat stream.
 * The bits are the oracle's: the same adds in the same order. */
#define PA_SMSB_GROUP 16
#define PA_SMSB_SHORT_MAX 64

typedef void (*pa_smsb_group_fn)(const void *g, const void *y, const uint8_t *m, void *out, int64_t n,
                                 int64_t rows, float scale, bool nt);

/* Whether the rows of a view lie back to back over all B*N*S1 rows. */
static inline bool pa_smsb_flat(const int64_t dims[4], const int64_t st[4]) {
    const int64_t S1 = dims[2], S2 = dims[3];
    return st[3] == 1 && (S1 == 1 || st[2] == S2) && (dims[1] == 1 || st[1] == S1 * S2) &&
           (dims[0] == 1 || st[0] == dims[1] * S1 * S2);
}

/* Copies one row of n elements (last-dim stride st3) to dst. */
static inline void pa_smsb_copy_row(const char *row, int64_t st3, int64_t n, int64_t esize, char *dst) {
    if (st3 == 1) memcpy(dst, row, (size_t)(n * esize));
    else pa_smsb_gather(row, st3, n, esize, dst);
}

/* `cnt` rows at element offsets off[k] (last-dim stride st3): src itself if they
 * already lie back to back there, else their copies back to back in dst. */
static inline const void *pa_smsb_group_rows(const char *src, const int64_t *off, int64_t cnt, int64_t st3,
                                             int64_t n, int64_t esize, char *dst) {
    bool direct = st3 == 1;
    for (int64_t k = 1; k < cnt && direct; k++) direct = off[k] == off[0] + k * n;
    if (direct) return src + off[0] * esize;
    for (int64_t k = 0; k < cnt; k++) pa_smsb_copy_row(src + off[k] * esize, st3, n, esize, dst + k * n * esize);
    return dst;
}

/* The same for rows at offsets off0 + k * step. */
static inline const void *pa_smsb_group_rows_step(const char *src, int64_t off0, int64_t step, int64_t cnt,
                                                  int64_t st3, int64_t n, int64_t esize, char *dst) {
    if (st3 == 1 && (cnt == 1 || step == n)) return src + off0 * esize;
    for (int64_t k = 0; k < cnt; k++)
        pa_smsb_copy_row(src + (off0 + k * step) * esize, st3, n, esize, dst + k * n * esize);
    return dst;
}

/* Walks rows [r0, r1) in groups of `gsize` (<= PA_SMSB_GROUP) rows, the last one shorter. When g,
 * y and the mask are all flat, the group kernel reads them in place; otherwise
 * each group's rows are located with the (b, n, s1) odometer and, per tensor,
 * read in place if they lie back to back or gathered into scratch. */
static inline void pa_smsb_drive_short(const pa_smsb_args *a, int64_t r0, int64_t r1, int64_t esize,
                                       int64_t gsize, pa_smsb_group_fn grp, pa_smsb_rows_fn fallback) {
    const int64_t N = a->dims[1], S1 = a->dims[2], S2 = a->dims[3];
    const char *g0 = (const char *)a->g, *y0 = (const char *)a->y;
    char *o0 = (char *)a->out;
    if (pa_smsb_flat(a->dims, a->gs) && pa_smsb_flat(a->dims, a->ys) && pa_smsb_flat(a->dims, a->ms)) {
        for (int64_t r = r0; r < r1; r += gsize) {
            const int64_t cnt = r1 - r < gsize ? r1 - r : gsize;
            grp(g0 + r * S2 * esize, y0 + r * S2 * esize, a->mask + r * S2, o0 + r * S2 * esize, S2, cnt,
                a->scale, a->stream_out);
        }
        return;
    }
    const size_t part = (size_t)PA_SMSB_ROUND64(gsize * S2 * esize);
    char *gbuf = (char *)pa_thread_scratch(2 * part + (size_t)PA_SMSB_ROUND64(gsize * S2));
    if (gbuf == NULL) {
        fallback(a, r0, r1);
        return;
    }
    char *ybuf = gbuf + part, *mbuf = ybuf + part;
    int64_t b = r0 / (N * S1), n = (r0 / S1) % N, s = r0 % S1;
    int64_t go = b * a->gs[0] + n * a->gs[1] + s * a->gs[2];
    int64_t yo = b * a->ys[0] + n * a->ys[1] + s * a->ys[2];
    int64_t mo = b * a->ms[0] + n * a->ms[1] + s * a->ms[2];
    for (int64_t r = r0; r < r1; r += gsize) {
        const int64_t cnt = r1 - r < gsize ? r1 - r : gsize;
        const void *gp, *yp, *mp;
        if (s + cnt <= S1) {
            /* one (b, n): row k of the group is at offset + k * stride[2] */
            gp = pa_smsb_group_rows_step(g0, go, a->gs[2], cnt, a->gs[3], S2, esize, gbuf);
            yp = pa_smsb_group_rows_step(y0, yo, a->ys[2], cnt, a->ys[3], S2, esize, ybuf);
            mp = pa_smsb_group_rows_step((const char *)a->mask, mo, a->ms[2], cnt, a->ms[3], S2, 1, mbuf);
            go += cnt * a->gs[2], yo += cnt * a->ys[2], mo += cnt * a->ms[2];
            if ((s += cnt) == S1) {
                s = 0;
                go += a->gs[1] - S1 * a->gs[2], yo += a->ys[1] - S1 * a->ys[2], mo += a->ms[1] - S1 * a->ms[2];
                if (++n == N) {
                    n = 0;
                    go += a->gs[0] - N * a->gs[1], yo += a->ys[0] - N * a->ys[1], mo += a->ms[0] - N * a->ms[1];
                }
            }
            grp(gp, yp, (const uint8_t *)mp, o0 + r * S2 * esize, S2, cnt, a->scale, a->stream_out);
            continue;
        }
        /* the group spans several (b, n): locate each row */
        int64_t goff[PA_SMSB_GROUP], yoff[PA_SMSB_GROUP], moff[PA_SMSB_GROUP];
        for (int64_t k = 0; k < cnt; k++) {
            goff[k] = go, yoff[k] = yo, moff[k] = mo;
            go += a->gs[2], yo += a->ys[2], mo += a->ms[2];
            if (++s == S1) {
                s = 0;
                go += a->gs[1] - S1 * a->gs[2], yo += a->ys[1] - S1 * a->ys[2], mo += a->ms[1] - S1 * a->ms[2];
                if (++n == N) {
                    n = 0;
                    go += a->gs[0] - N * a->gs[1], yo += a->ys[0] - N * a->ys[1], mo += a->ms[0] - N * a->ms[1];
                }
            }
        }
        gp = pa_smsb_group_rows(g0, goff, cnt, a->gs[3], S2, esize, gbuf);
        yp = pa_smsb_group_rows(y0, yoff, cnt, a->ys[3], S2, esize, ybuf);
        mp = pa_smsb_group_rows((const char *)a->mask, moff, cnt, a->ms[3], S2, 1, mbuf);
        grp(gp, yp, (const uint8_t *)mp, o0 + r * S2 * esize, S2, cnt, a->scale, a->stream_out);
    }
}

#endif
