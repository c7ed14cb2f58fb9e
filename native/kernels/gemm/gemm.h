/* The library's GEMM: one BLIS-style engine for every matrix product
 * (the matmul family, and later convolution and attention kernels).
 *
 *   C[b](i, j) = E( A[b] @ B[b] )(i, j)      i < m, j < n, over batch index b
 *
 * Operands are strided views in any layout: element (r, c) of A, B, C, the
 * bias and the dequantisation tensors is at  p + off + r*rs + c*cs + sum_d b_d*bs[d]
 * (element units; ACL_INT4 operands count nibbles, element 2e in the low
 * nibble of byte e). Transposes are strides (rs == 1), batch broadcast is a
 * batch stride of 0. B may instead be in FRACTAL_NZ (pa_gemm_nz). The packing
 * stage reads every layout and dtype; the micro-kernels only see packed fp32
 * (or bf16-pair) panels.
 *
 * The bits (the definition the scalar tier implements and every tier
 * reproduces exactly, on any thread count):
 *
 *  - values: A(i,p) and B(p,j) are read as fp32 (fp16 / bf16 exactly; int8 /
 *    int4 B dequantised, see pa_gemm_quant), then rounded to fp16 when
 *    in_round == PA_GEMM_F16 (cubeMathType USE_FP16);
 *  - the product: ONE chain per output element, k in increasing order,
 *        acc = 0;  for p < k:  acc = fmaf(A(i,p), B(p,j), acc)
 *    except when both A and B are BF16 (and in_round is F32): then k goes in
 *    pairs, exactly as an AVX512_BF16 vdpbf16ps lane computes them,
 *        for q < ceil(k/2):  acc = dotfma(A(i,2q+1), B(2q+1,j), acc);
 *                            acc = dotfma(A(i,2q),   B(2q,j),   acc)
 *    with A(i,k) = B(k,j) = 0 past the end, and dotfma(a,b,c) = a*b + c
 *    rounded once to nearest even with denormal a, b, c read as zero and a
 *    result tiny after rounding flushed to a zero of its sign (pa_gemm_dotfma);
 *  - the epilogue, in fp32:  r = acc rounded to mid_round (F16 / BF16) if set;
 *        v = alpha == 1 ? r : alpha * r;
 *        if bias: v = v + (beta == 1 ? s : beta * s),  s = bias(i,j) as fp32;
 *        v = epi(v) if a callback is given;
 *        C(i,j) = v converted to C's dtype (nearest even; NaN stays NaN).
 *    k == 0 gives acc = 0.
 *
 * Threads split the output into blocks of rows and columns only; the chain of
 * an element never depends on the blocking, the tier or the thread count.
 * C must not overlap A, B or the dequantisation tensors; the bias may be C
 * itself (the same element at the same address: in-place Addmm).
 * pa_gemm may be called from inside a pa_parallel_for chunk (it then runs on
 * the calling thread) and from several threads at once. */
#ifndef PA_GEMM_H
#define PA_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/pa_cpu.h"

#define PA_GEMM_MAX_BATCH 6

typedef enum pa_gemm_dt {
    PA_GEMM_F32 = 0,
    PA_GEMM_F16 = 1,
    PA_GEMM_BF16 = 2,
    PA_GEMM_S8 = 3, /* B only (weights), dequantised */
    PA_GEMM_S4 = 4, /* B only: two's complement nibbles */
} pa_gemm_dt;

/* FRACTAL_NZ: the operand is X (trans == 0) or X^T (trans == 1), X an R x C
 * matrix stored as column panels of c0 columns: panel q = C / c0 holds columns
 * [q*c0, q*c0 + w_q) as prow rows of w_q contiguous elements, at element
 * q * prow * c0 of the matrix, so X(r, c) is at
 *     q*prow*c0 + r*w_q + c - q*c0.
 * padded == 0 (pyaclnn's in-place layout): prow = R, w_q = min(c0, C - q*c0);
 * padded == 1 (CANN's layout, [C1, R1, 16, c0] with padding): prow = R
 * rounded up to 16, w_q = c0. Batch offsets come from bs[]. */
typedef struct pa_gemm_nz {
    int32_t trans;
    int32_t c0;
    int32_t padded;
    int64_t rows, cols; /* R, C */
    int64_t prow;
} pa_gemm_nz;

typedef struct pa_gemm_mat {
    const void *p;  /* storage base; NULL = absent (bias, scale, offset) */
    int32_t dt;     /* pa_gemm_dt */
    int32_t nz;     /* 1: FRACTAL_NZ (nzl) instead of rs / cs (B only) */
    int64_t off;    /* element offset of (0, 0) of batch 0 */
    int64_t rs, cs; /* element strides of rows and columns */
    int64_t bs[PA_GEMM_MAX_BATCH];
    pa_gemm_nz nzl;
} pa_gemm_mat;

/* Dequantisation of an S8 / S4 B: with g = p / group (group 0: one group),
 *     t = offset ? R(w + offset(g, j)) : w;   B(p, j) = R(t * scale(g, j))
 * where w is the integer, scale / offset (F32 / F16 / BF16, row = group,
 * column = j) are read as fp32, each operation is done in fp32 and R rounds
 * to round_dt (F16 / BF16: the weight dequantised to x's dtype, as the NPU's
 * vector unit does; F32: no rounding). scale.p NULL means 1. */
typedef struct pa_gemm_quant {
    pa_gemm_mat scale, offset;
    int64_t group;
    int32_t round_dt;
} pa_gemm_quant;

typedef struct pa_gemm_out {
    void *p;
    int32_t dt; /* F32, F16, BF16 */
    int64_t off, rs, cs;
    int64_t bs[PA_GEMM_MAX_BATCH];
} pa_gemm_out;

/* Optional epilogue callback: transforms v[0..n) = row i, columns j0..j0+n of
 * batch bidx (the linear batch index) in place, before the conversion to C's
 * dtype. It must be a pure function of its arguments (any thread calls it). */
typedef void (*pa_gemm_epi_fn)(void *ctx, int64_t bidx, int64_t i, int64_t j0, float *v, int64_t n);

typedef struct pa_gemm_args {
    int64_t m, n, k;
    int32_t nbatch;                  /* batch dims (0: one matrix) */
    int64_t batch[PA_GEMM_MAX_BATCH]; /* their sizes, row-major */
    pa_gemm_mat a, b;                /* A: m x k, B: k x n */
    pa_gemm_quant bq;                /* for an S8 / S4 B */
    pa_gemm_out c;
    pa_gemm_mat bias;                /* bias(i, j) (any strides, 0 = broadcast); p NULL = none */
    float alpha, beta;
    int32_t in_round;                /* PA_GEMM_F16 or PA_GEMM_F32 (none) */
    int32_t mid_round;               /* PA_GEMM_F16, PA_GEMM_BF16 or PA_GEMM_F32 (none) */
    pa_gemm_epi_fn epi;
    void *epi_ctx;
} pa_gemm_args;

/* Fills *g with an empty product: m = n = k = 0, no batch, alpha 1, beta 1,
 * no bias / quant / rounding / callback; the caller sets the operands. */
void pa_gemm_init(pa_gemm_args *g);

/* Runs the product on the active ISA tier (pa_cpu_isa()) and the kernel
 * thread pool. Never fails: when scratch memory cannot be had, a block is
 * computed without it (slowly, the same bits). */
void pa_gemm(const pa_gemm_args *g);

/* The same on a given tier (capped to what the build and CPU have). */
void pa_gemm_on(const pa_gemm_args *g, pa_isa isa);

/* The definition itself: unblocked, single-threaded, element by element (for
 * tests; pa_gemm_on(g, PA_ISA_SCALAR) gives the same bits, faster). */
void pa_gemm_reference(const pa_gemm_args *g);

/* One step of the bf16 chain (see above). */
float pa_gemm_dotfma(float a, float b, float c);

#endif
