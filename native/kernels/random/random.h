/* pyaclnn's random numbers (docs/random.md): a counter-based generator,
 * Philox4x32-10, keyed by (seed, offset, element index).
 *
 * Block b of a call with (seed, offset) is
 *     philox4x32_10(counter = {lo(b), hi(b), lo(offset), hi(offset)},
 *                   key     = {lo(seed), hi(seed)})
 * four 32-bit words. Element i of an output (its row-major index in the view)
 * takes its words from fixed places (random.md lists them per op), so a value
 * depends only on (seed, offset, i): never on threads, chunking, strides,
 * streams or the ISA tier. Different offsets select disjoint counter ranges,
 * so torch_npu's calls (the offset advancing by 12 per call) never overlap. */
#ifndef PA_RANDOM_KERNELS_H
#define PA_RANDOM_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "acl/acl_base.h"

#define PA_RNG_MAX_DIMS 8

/* One Philox4x32-10 block (Random123's constants and round). */
static inline void pa_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        const uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* Block `block` of the stream (seed, offset). */
static inline void pa_rng_block(uint64_t seed, uint64_t offset, uint64_t block, uint32_t out[4]) {
    const uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)offset, (uint32_t)(offset >> 32)};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    pa_philox4x32_10(ctr, key, out);
}

/* 64 bits for element i (block i / 2, words 2(i % 2) (low) and 2(i % 2) + 1 (high)). */
static inline uint64_t pa_rng_u64(uint64_t seed, uint64_t offset, uint64_t i) {
    uint32_t w[4];
    pa_rng_block(seed, offset, i >> 1, w);
    const int k = (int)(i & 1) * 2;
    return (uint64_t)w[k] | (uint64_t)w[k + 1] << 32;
}

/* 32 bits for element i (block i / 4, word i % 4). */
static inline uint32_t pa_rng_u32(uint64_t seed, uint64_t offset, uint64_t i) {
    uint32_t w[4];
    pa_rng_block(seed, offset, i >> 2, w);
    return w[i & 3];
}

/* The fills: every element of an N-D strided output from its index alone. */
typedef enum pa_rng_kind {
    PA_RNG_NORMAL,      /* a + b * z, z standard normal (Box-Muller) */
    PA_RNG_UNIFORM,     /* a + u * (b - a), u in [0, 1) with `digits` bits */
    PA_RNG_RANDOM,      /* ifrom + floor(r64 * range / 2^64): integers in [from, from + range) */
    PA_RNG_BERNOULLI,   /* u24 >= thr ? 1 : 0 (thr = fp32(1 - p)) */
    PA_RNG_BERNOULLI_T, /* the same with thr_i = fp32(1 - p[i]), p a tensor broadcast to out */
    PA_RNG_MASK,        /* byte j of a bit mask: bit k = u24(8j + k) >= thr (LSB first) */
} pa_rng_kind;

typedef struct pa_rng_fill {
    int32_t kind;
    uint64_t seed, offset;
    double a, b;      /* normal: mean, std; uniform: from, to */
    int32_t digits;   /* uniform: random bits per value (53: 64-bit words) */
    int64_t ifrom;    /* random */
    uint64_t range;   /* random: to - from (>= 1) */
    float thr;        /* bernoulli, mask */
    /* the output (element strides) */
    char *out;
    aclDataType out_dtype;
    int32_t ndim;
    int64_t dims[PA_RNG_MAX_DIMS];
    int64_t strides[PA_RNG_MAX_DIMS];
    /* bernoulli_t: the probabilities, strides broadcast to out's dims */
    const char *p;
    aclDataType p_dtype;
    int64_t p_strides[PA_RNG_MAX_DIMS];
} pa_rng_fill;

/* Writes every element of f's output (multithreaded, fixed chunks). */
void pa_rng_run(const pa_rng_fill *f);

/* The standard normal value of element i (the pair of element i & ~1). */
double pa_rng_normal(uint64_t seed, uint64_t offset, uint64_t i);
/* The uniform value in [0, 1) of element i with `digits` bits (8 .. 24, or 53). */
double pa_rng_uniform(uint64_t seed, uint64_t offset, uint64_t i, int digits);
/* The fp32 uniform with 24 bits that bernoulli and the dropout masks compare. */
static inline float pa_rng_u24(uint64_t seed, uint64_t offset, uint64_t i) {
    return (float)(pa_rng_u32(seed, offset, i) >> 8) * 0x1p-24f;
}

/* randperm: a[0..n) = a random permutation of 0..n-1 (Fisher-Yates from the
 * top, j_k = floor(r64(k) * (k + 1) / 2^64) swapped with k for k = n-1 .. 1). */
void pa_rng_randperm(uint64_t seed, uint64_t offset, int64_t *a, int64_t n);

#endif
