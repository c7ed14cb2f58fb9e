/* Scaled masked softmax forward: row kernels.
 *
 * For every row r = (b,n,s1) of a [B,N,S1,S2] problem, with the mask row m:
 *   z[i] = m[i] != 0 ? -10000 : x[i] * scale
 *     fp32, bf16: x widened to fp32, one fp32 multiply;
 *     fp16: the fp16 product (the exact fp32 product of x and the fp16 scale,
 *           rounded to fp16: what an fp16 multiply gives, overflow -> +-inf).
 *   mx   = max z[i]
 *   e[i] = pa_smsf_exp(z[i] - mx)             (the polynomial below)
 *   s    = sum e[i]                           (the fixed order below)
 *   y[i] = e[i] * (1 / s), rounded once to the output dtype (nearest even).
 * A row whose s is NaN (a NaN or +inf among its unmasked z, or only -inf) is
 * written as x86's default NaN (fp32 0xffc00000) in every element, so no bit
 * depends on NaN propagation order. Otherwise s >= 1 (the max element gives
 * e = 1) and every y is finite.
 *
 * Every tier performs exactly these fp32 operations, each rounded once (fma =
 * fused multiply-add, one rounding; every other multiply and add rounded on its
 * own, never contracted), so all tiers give the same bits:
 *
 * exp(x), x <= 0 or NaN: 2^(nf/16) * e^r with nf the integer nearest x*16/ln2,
 * 2^(j/16) (j = nf mod 16) from a 16-entry table and e^r - 1 a cubic in r:
 *   cut = x < -87                  (e = +0 there: exp(-87) is about the last value
 *                                   that stays normal; no denormal is ever formed,
 *                                   which would cost a microcode assist per lane)
 *   t  = fma(x, K, MAGIC);  nf = t - MAGIC       (t's low mantissa bits hold nf)
 *   r1 = fma(-nf, L_HI, x)                       (exact: |r1| < 2^-5)
 *   r  = fma(-nf, L_LO, r1)                      (|r| <= ln2/32 + tiny)
 *   q  = fma(fma(C3, r1, C2), r1 * r1, r)        (e^r - 1)
 *   h  = the float whose bits are pa_smsf_exp2_tab[bits(t) & 15] + (bits(t) << 19)
 *        in uint32 arithmetic: RN(2^(j/16)) * 2^((nf - j)/16), exactly (the table
 *        holds bits(RN(2^(j/16))) - (j << 19); nf >= -2008 keeps h normal)
 *   e  = cut ? +0 : fma(h, q, h)
 * Max error 1.01 ulp over every fp32 x in [-87, 0]; about 80% of uniformly spread
 * arguments are correctly rounded (the table entries' own rounding is the rest).
 *
 * y[i] = e[i] * inv with inv = 1 / s (one fp32 division per row).
 *
 * Summation order: 64 partial sums acc[0..63] (from +0); element i goes to
 * acc[i % 64] in increasing i; then the fixed tree
 *   t16[l] = (acc[l] + acc[16+l]) + (acc[32+l] + acc[48+l])   l < 16
 *   t8[l] = t16[l] + t16[l+8]; t4[l] = t8[l] + t8[l+4]; t2[l] = t4[l] + t4[l+2];
 *   s = t2[0] + t2[1]
 * (4 zmm or 8 ymm accumulators fold to it naturally).
 */
#ifndef PA_SOFTMAX_FWD_H
#define PA_SOFTMAX_FWD_H

#include <stdbool.h>
#include <stdint.h>

#include "acl/acl_base.h"
#include "cpu/pa_cpu.h"

#define PA_SMSF_MASK_VALUE (-10000.0f)
#define PA_SMSF_EXP_LOW (-87.0f)
#define PA_SMSF_K 0x1.715476p+4f       /* 16 / ln2 */
#define PA_SMSF_MAGIC 12582912.0f    /* 1.5 * 2^23: x*K + MAGIC rounds x*K to an integer */
#define PA_SMSF_L_HI 0x1.62e430p-5f    /* ln2 / 16 = L_HI + L_LO */
#define PA_SMSF_L_LO (-0x1.05c610p-33f)
#define PA_SMSF_C2 0x1.00021ep-1f      /* minimax on [-ln2/32, ln2/32]: 2^-29.2 relative */
#define PA_SMSF_C3 0x1.55559ep-3f
#define PA_SMSF_NAN_BITS 0xffc00000u

/* bits(RN(2^(j/16))) - (j << 19), j = 0..15 (softmax_fwd_config.c) */
extern const uint32_t pa_smsf_exp2_tab[16];

/* The problem, as the kernels see it. Pointers address element 0 of each view;
 * strides are in elements and non-negative; a broadcast mask dim has stride 0.
 * y is contiguous: row r starts at y + r * S2 elements. */
typedef struct pa_smsf_args {
    const void *x;
    const uint8_t *mask; /* bool bytes, nonzero = masked */
    void *y;
    int64_t dims[4];     /* B, N, S1, S2 */
    int64_t xs[4];
    int64_t ms[4];
    float scale;         /* fp16 inputs: already rounded to fp16 */
    bool stream_out;     /* write y with non-temporal stores (large outputs) */
} pa_smsf_args;

/* Processes rows [row_begin, row_end) (rows counted over B*N*S1). */
typedef void (*pa_smsf_rows_fn)(const pa_smsf_args *a, int64_t row_begin, int64_t row_end);

/* The kernel for dtype (ACL_FLOAT / ACL_FLOAT16 / ACL_BF16) at the best tier not
 * above `isa` that the build has. NULL for other dtypes. */
pa_smsf_rows_fn pa_smsf_select(aclDataType dtype, pa_isa isa);

/* Rows per pa_parallel_for chunk: about 1 MB of traffic, independent of the thread count. */
int64_t pa_smsf_grain(aclDataType dtype, int64_t s2);

/* Non-temporal stores for y when it is too large to stay cached anyway. */
bool pa_smsf_stream_out(int64_t out_bytes);

void pa_smsf_rows_f32_scalar(const pa_smsf_args *a, int64_t r0, int64_t r1);
void pa_smsf_rows_f16_scalar(const pa_smsf_args *a, int64_t r0, int64_t r1);
void pa_smsf_rows_bf16_scalar(const pa_smsf_args *a, int64_t r0, int64_t r1);

#if defined(PA_HAVE_X86_KERNELS)
void pa_smsf_rows_f32_avx2(const pa_smsf_args *a, int64_t r0, int64_t r1);
void pa_smsf_rows_f16_avx2(const pa_smsf_args *a, int64_t r0, int64_t r1);
void pa_smsf_rows_bf16_avx2(const pa_smsf_args *a, int64_t r0, int64_t r1);
void pa_smsf_rows_f32_avx512(const pa_smsf_args *a, int64_t r0, int64_t r1);
void pa_smsf_rows_f16_avx512(const pa_smsf_args *a, int64_t r0, int64_t r1);
void pa_smsf_rows_bf16_avx512(const pa_smsf_args *a, int64_t r0, int64_t r1);
/* needs AVX512_BF16 (pa_cpu_has_avx512bf16) */
void pa_smsf_rows_bf16_avx512bf16(const pa_smsf_args *a, int64_t r0, int64_t r1);
#endif

#endif
