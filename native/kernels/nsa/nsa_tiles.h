/* The tile loop shared by the SIMD GEMMs of kernels/nsa (include it only from
 * the *_avx2.c / *_avx512.c files: it needs their ISA flags).
 *
 * Panels are walked in chunks of about `kc` k-steps so a column tile's B slice
 * stays in L1 across the row tiles; partial sums go back to C between chunks
 * (exact, so the bits do not depend on the chunking). While a chunk runs, the
 * operands of the next chunk (or the caller's hint) are prefetched a few cache
 * lines per micro-kernel call: the selected KV blocks and token rows are
 * gathered from all over L2/L3, and the micro-kernels would otherwise wait. */
#ifndef PA_NSA_TILES_H
#define PA_NSA_TILES_H

#include <immintrin.h>
#include <stdint.h>

#include "kernels/nsa/nsa.h"

#define NSA_INLINE static inline __attribute__((always_inline))

/* Memory regions to prefetch, walked a few lines at a time. */
#define NSA_PF_MAX 16
#ifndef NSA_PF_HINT
#define NSA_PF_HINT _MM_HINT_T1 /* into L2: the current chunk keeps L1 */
#endif
typedef struct nsa_pf_walk {
    const char *p[NSA_PF_MAX];
    int64_t n[NSA_PF_MAX]; /* bytes */
    int cnt, cur;
    int64_t off;
} nsa_pf_walk;

static inline void nsa_pf_add(nsa_pf_walk *w, const void *p, int64_t bytes) {
    if (p != NULL && bytes > 0 && w->cnt < NSA_PF_MAX) {
        w->p[w->cnt] = (const char *)p;
        w->n[w->cnt] = bytes;
        w->cnt++;
    }
}

static inline int64_t nsa_pf_lines(const nsa_pf_walk *w) {
    int64_t t = 0;
    for (int i = 0; i < w->cnt; i++) t += (w->n[i] + 63) / 64;
    return t;
}

NSA_INLINE void nsa_pf_step(nsa_pf_walk *w, int64_t lines) {
    for (; lines > 0 && w->cur < w->cnt; lines--) {
        _mm_prefetch(w->p[w->cur] + w->off, NSA_PF_HINT);
        w->off += 64;
        if (w->off >= w->n[w->cur]) {
            w->cur++;
            w->off = 0;
        }
    }
}

/* One multi-panel product to tile. */
typedef struct nsa_tiling {
    int64_t m, n;             /* C is m x n */
    const nsa_panel *panels;
    int64_t npanels;
    int64_t k;                /* k-steps per panel (chunk budget) */
    int64_t kc;               /* k-steps per chunk (at least one panel) */
    int64_t mr, nr;           /* tile rows, columns (n % 16 == 0; the last column tile may be 16 wide) */
    int64_t a_bytes, b_bytes; /* bytes of one panel's A and B (prefetch) */
    int32_t accumulate;
    const void *pf;
    int64_t pf_bytes;
    int32_t no_prefetch;
} nsa_tiling;

/* Micro-kernel call: C[m0 .. m0+mr) x [n0 .. n0+nc) over np panels from pan,
 * C loaded first when load != 0. */
typedef void (*nsa_tile_fn)(const void *ctx, const nsa_panel *pan, int64_t np, int64_t m0, int64_t n0, int64_t mr,
                            int64_t nc, int load);

NSA_INLINE void nsa_tile_loop(const nsa_tiling *t, nsa_tile_fn mk, const void *ctx) {
    const int64_t calls = ((t->n + t->nr - 1) / t->nr) * ((t->m + t->mr - 1) / t->mr); /* per chunk */
    int64_t pc = t->kc / t->k;
    if (pc < 1) pc = 1;
    for (int64_t p0 = 0; p0 < t->npanels; p0 += pc) {
        const int64_t np = pc < t->npanels - p0 ? pc : t->npanels - p0;
        const int load = t->accumulate || p0 > 0;
        nsa_pf_walk w = {.cnt = 0};
        if (t->no_prefetch) {
            /* nothing to walk */
        } else if (p0 + np < t->npanels) {
            const int64_t nn = pc < t->npanels - p0 - np ? pc : t->npanels - p0 - np;
            for (int64_t q = p0 + np; q < p0 + np + nn; q++) {
                nsa_pf_add(&w, t->panels[q].b, t->b_bytes);
                nsa_pf_add(&w, t->panels[q].a, t->a_bytes);
            }
        } else {
            nsa_pf_add(&w, t->pf, t->pf_bytes);
        }
        const int64_t quota = (nsa_pf_lines(&w) + calls - 1) / calls;
        for (int64_t n0 = 0; n0 < t->n; n0 += t->nr) {
            const int64_t nc = t->n - n0 < t->nr ? t->n - n0 : t->nr;
            for (int64_t m0 = 0; m0 < t->m; m0 += t->mr) {
                const int64_t mr = t->m - m0 < t->mr ? t->m - m0 : t->mr;
                nsa_pf_step(&w, quota);
                mk(ctx, t->panels + p0, np, m0, n0, mr, nc, load);
            }
        }
    }
}

/* MXCSR with denormals read as zero (DAZ) and tiny results flushed (FTZ): the
 * bf16 dot GEMM's emulating tiers run under it, then restore the caller's. */
#define NSA_MXCSR_DAZ_FTZ 0x8040u

#endif
