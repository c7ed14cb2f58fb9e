/* The random fills (random.h): every output element from (seed, offset, its
 * row-major index) alone, so chunks may run on any thread in any order. */
#include <math.h>
#include <string.h>

#include "common/pa_common.h"
#include "kernels/map/map_cvt.h"
#include "kernels/random/random.h"
#include "runtime/pa_threadpool.h"

#define TWO_PI 6.283185307179586476925286766559

/* The two normals of words (w0, w1): r = sqrt(-2 ln u1), u1 = (w0 + 1) / 2^32
 * in (0, 1]; theta = 2 pi u2, u2 = w1 / 2^32; z0 = r cos theta, z1 = r sin theta. */
static inline void box_muller(uint32_t w0, uint32_t w1, double *z0, double *z1) {
    const double u1 = ((double)w0 + 1.0) * 0x1p-32, u2 = (double)w1 * 0x1p-32;
    const double r = sqrt(-2.0 * log(u1)), t = TWO_PI * u2;
    double s, c;
#if defined(__GLIBC__)
    sincos(t, &s, &c); /* glibc: the same values as sin() and cos(), in one call */
#else
    s = sin(t);
    c = cos(t);
#endif
    *z0 = r * c;
    *z1 = r * s;
}

double pa_rng_normal(uint64_t seed, uint64_t offset, uint64_t i) {
    uint32_t w[4];
    pa_rng_block(seed, offset, i >> 2, w);
    const int k = (int)((i >> 1) & 1) * 2;
    double z0, z1;
    box_muller(w[k], w[k + 1], &z0, &z1);
    return (i & 1) ? z1 : z0;
}

double pa_rng_uniform(uint64_t seed, uint64_t offset, uint64_t i, int digits) {
    if (digits > 32) return (double)(pa_rng_u64(seed, offset, i) >> 11) * 0x1p-53;
    return ldexp((double)(pa_rng_u32(seed, offset, i) >> (32 - digits)), -digits);
}

/* floor(r * range / 2^64) */
static inline uint64_t mulhi64(uint64_t r, uint64_t range) {
    return (uint64_t)(((unsigned __int128)r * range) >> 64);
}

#define GRAIN 16384 /* elements per chunk (a multiple of 8) */

typedef struct walk {
    int32_t nd;
    int64_t idx[PA_RNG_MAX_DIMS];
    int64_t off, poff; /* element offsets of out and p */
} walk;

static void walk_start(const pa_rng_fill *f, walk *w, int64_t i) {
    w->nd = f->ndim;
    w->off = w->poff = 0;
    for (int32_t d = f->ndim - 1; d >= 0; d--) {
        const int64_t n = f->dims[d];
        w->idx[d] = n > 0 ? i % n : 0;
        i = n > 0 ? i / n : 0;
        w->off += w->idx[d] * f->strides[d];
        if (f->kind == PA_RNG_BERNOULLI_T) w->poff += w->idx[d] * f->p_strides[d];
    }
}

static inline void walk_next(const pa_rng_fill *f, walk *w) {
    for (int32_t d = w->nd - 1; d >= 0; d--) {
        w->idx[d]++;
        w->off += f->strides[d];
        if (f->kind == PA_RNG_BERNOULLI_T) w->poff += f->p_strides[d];
        if (w->idx[d] < f->dims[d]) return;
        w->off -= f->dims[d] * f->strides[d];
        if (f->kind == PA_RNG_BERNOULLI_T) w->poff -= f->dims[d] * f->p_strides[d];
        w->idx[d] = 0;
    }
}

static void fill_range(void *ctx, int64_t begin, int64_t end) {
    const pa_rng_fill *f = ctx;
    const size_t es = pa_cvt_size(f->out_dtype), ps = f->p ? pa_cvt_size(f->p_dtype) : 0;
    walk w;
    walk_start(f, &w, begin);
    uint32_t blk[4];
    uint64_t have = UINT64_MAX; /* the block in blk */
    double z[4];
    const double ulp = f->kind == PA_RNG_UNIFORM && f->digits <= 32 ? ldexp(1.0, -f->digits) : 0;
    for (int64_t i = begin; i < end; i++, walk_next(f, &w)) {
        char *dst = f->out + w.off * (int64_t)es;
        const uint64_t u = (uint64_t)i;
        switch (f->kind) {
        case PA_RNG_NORMAL:
            if (have != u >> 2) {
                have = u >> 2;
                pa_rng_block(f->seed, f->offset, have, blk);
                box_muller(blk[0], blk[1], &z[0], &z[1]);
                box_muller(blk[2], blk[3], &z[2], &z[3]);
            }
            pa_cvt_store_f(dst, f->out_dtype, f->a + f->b * z[u & 3]);
            break;
        case PA_RNG_UNIFORM: {
            double v;
            if (f->digits > 32) {
                if (have != u >> 1) {
                    have = u >> 1;
                    pa_rng_block(f->seed, f->offset, have, blk);
                }
                const int k = (int)(u & 1) * 2;
                v = (double)(((uint64_t)blk[k] | (uint64_t)blk[k + 1] << 32) >> 11) * 0x1p-53;
            } else {
                if (have != u >> 2) {
                    have = u >> 2;
                    pa_rng_block(f->seed, f->offset, have, blk);
                }
                v = (double)(blk[u & 3] >> (32 - f->digits)) * ulp; /* exact: a power of two */
            }
            pa_cvt_store_f(dst, f->out_dtype, f->a + v * (f->b - f->a));
            break;
        }
        case PA_RNG_RANDOM: {
            if (have != u >> 1) {
                have = u >> 1;
                pa_rng_block(f->seed, f->offset, have, blk);
            }
            const int k = (int)(u & 1) * 2;
            const uint64_t r = (uint64_t)blk[k] | (uint64_t)blk[k + 1] << 32;
            pa_cvt_store_i(dst, f->out_dtype, (int64_t)((uint64_t)f->ifrom + mulhi64(r, f->range)));
            break;
        }
        case PA_RNG_BERNOULLI:
        case PA_RNG_BERNOULLI_T: {
            if (have != u >> 2) {
                have = u >> 2;
                pa_rng_block(f->seed, f->offset, have, blk);
            }
            float thr = f->thr;
            if (f->kind == PA_RNG_BERNOULLI_T) {
                thr = (float)(1.0 - pa_cvt_load_f(f->p + w.poff * (int64_t)ps, f->p_dtype));
            }
            const float v = (float)(blk[u & 3] >> 8) * 0x1p-24f;
            pa_cvt_store_i(dst, f->out_dtype, v >= thr);
            break;
        }
        case PA_RNG_MASK: { /* byte i: elements 8i .. 8i+7 = blocks 2i and 2i+1 */
            uint32_t lo[4], hi[4];
            pa_rng_block(f->seed, f->offset, 2 * u, lo);
            pa_rng_block(f->seed, f->offset, 2 * u + 1, hi);
            unsigned byte = 0;
            for (int k = 0; k < 8; k++) {
                const uint32_t word = k < 4 ? lo[k] : hi[k - 4];
                byte |= (unsigned)((float)(word >> 8) * 0x1p-24f >= f->thr) << k;
            }
            *(uint8_t *)dst = (uint8_t)byte;
            break;
        }
        default: return;
        }
    }
}

void pa_rng_run(const pa_rng_fill *f) {
    int64_t n = 1;
    for (int32_t d = 0; d < f->ndim; d++) n *= f->dims[d];
    if (n <= 0) return;
    if (n <= GRAIN) {
        fill_range((void *)f, 0, n);
        return;
    }
    pa_parallel_for(n, GRAIN, fill_range, (void *)f);
}

void pa_rng_randperm(uint64_t seed, uint64_t offset, int64_t *a, int64_t n) {
    for (int64_t k = 0; k < n; k++) a[k] = k;
    for (int64_t k = n - 1; k > 0; k--) {
        const int64_t j = (int64_t)mulhi64(pa_rng_u64(seed, offset, (uint64_t)k), (uint64_t)k + 1);
        const int64_t t = a[k];
        a[k] = a[j];
        a[j] = t;
    }
}
