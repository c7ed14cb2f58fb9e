/* Scaled masked softmax backward: row kernels.
 *
 * For every row r of a [B,N,S1,S2] problem (rows are (b,n,s1), S2 columns), in fp32:
 *   p[i] = g[i] * y[i]
 *   s    = sum of p over the whole row (masked columns included)
 *   out[i] = mask[i] ? +0.0 : ((p[i] - s * y[i]) * scale)
 * with every operation rounded separately (no FMA); a NaN result is written as
 * x86's default NaN (fp32 0xffc00000, what inf - inf gives), so no bit depends on
 * NaN-propagation order; then rounded to the output dtype with
 * round-to-nearest-even (pa_half.h).
 *
 * Summation order: the vendor's (the NPU's, as its system-test golden
 * reproduces it: hicann/ops-nn, vfusion/scaled_masked_softmax_grad_v2/tests/st),
 * the same in every tier, so results are bitwise identical across tiers:
 *   S2 <= 1024: pad the row with +0.0 to a multiple of 64; blocks of 8 summed
 *     as ((x0+x1)+(x2+x3))+((x4+x5)+(x6+x7)); block sums 0..7 start 8
 *     accumulators, blocks 8m+j are then added to acc[j] for m = 1, 2, ... in
 *     order; s = ((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7)).
 *   S2 > 1024: chunks of 64 (the last may be shorter, unpadded); each chunk,
 *     then the list of chunk sums, summed by a pairwise tree that adds adjacent
 *     pairs level by level and gives a level of odd length one +0.0 at its end.
 * A full chunk's tree is the 8-block tree above applied twice, which is what
 * the SIMD tiers compute with in-register shuffles.
 */
#ifndef PA_SOFTMAX_GRAD_H
#define PA_SOFTMAX_GRAD_H

#include <stdbool.h>
#include <stdint.h>

#include "acl/acl_base.h"
#include "cpu/pa_cpu.h"

/* Longest row (S2) the op accepts; the kernels size their chunk-sum buffers by it. */
#define PA_SMSB_MAX_S2 4096

/* The problem, as the kernels see it. Pointers address element 0 of each view
 * (base + offset); strides are in elements and non-negative. The mask's strides
 * for broadcast dims (size 1 against B or N) are 0. out is contiguous:
 * row r starts at out + r * S2 elements. */
typedef struct pa_smsb_args {
    const void *g;
    const void *y;
    const uint8_t *mask; /* bool bytes, nonzero = masked */
    void *out;
    int64_t dims[4];     /* B, N, S1, S2 */
    int64_t gs[4];
    int64_t ys[4];
    int64_t ms[4];
    float scale;
    bool stream_out;     /* write out with non-temporal stores (large outputs) */
} pa_smsb_args;

/* Processes rows [row_begin, row_end) (rows counted over B*N*S1). */
typedef void (*pa_smsb_rows_fn)(const pa_smsb_args *a, int64_t row_begin, int64_t row_end);

/* Picks the kernel for dtype (ACL_FLOAT / ACL_FLOAT16 / ACL_BF16) and the given
 * tier (falling back to a lower tier if the build lacks it). NULL for other dtypes. */
pa_smsb_rows_fn pa_smsb_select(aclDataType dtype, pa_isa isa);

/* Rows per pa_parallel_for chunk: ~1 MB of traffic per chunk, independent of the
 * thread count. */
int64_t pa_smsb_grain(aclDataType dtype, int64_t s2);

/* Whether an output of out_bytes should bypass the caches (non-temporal stores):
 * only when it is too large to stay cached anyway, where it saves the
 * read-for-ownership traffic. Never changes the values written. */
bool pa_smsb_stream_out(int64_t out_bytes);

/* Scalar kernels: the oracle. They read any (non-negative) strides directly. */
void pa_smsb_rows_f32_scalar(const pa_smsb_args *a, int64_t r0, int64_t r1);
void pa_smsb_rows_f16_scalar(const pa_smsb_args *a, int64_t r0, int64_t r1);
void pa_smsb_rows_bf16_scalar(const pa_smsb_args *a, int64_t r0, int64_t r1);

#if defined(PA_HAVE_X86_KERNELS)
void pa_smsb_rows_f32_avx2(const pa_smsb_args *a, int64_t r0, int64_t r1);
void pa_smsb_rows_f16_avx2(const pa_smsb_args *a, int64_t r0, int64_t r1);
void pa_smsb_rows_bf16_avx2(const pa_smsb_args *a, int64_t r0, int64_t r1);
void pa_smsb_rows_f32_avx512(const pa_smsb_args *a, int64_t r0, int64_t r1);
void pa_smsb_rows_f16_avx512(const pa_smsb_args *a, int64_t r0, int64_t r1);
void pa_smsb_rows_bf16_avx512(const pa_smsb_args *a, int64_t r0, int64_t r1);
/* needs AVX512_BF16 (pa_cpu_has_avx512bf16) */
void pa_smsb_rows_bf16_avx512bf16(const pa_smsb_args *a, int64_t r0, int64_t r1);
#endif

#endif
