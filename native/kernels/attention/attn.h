/* Attention kernels (FlashAttentionScore / Grad, FusedInferAttentionScoreV2):
 * tiled online softmax over fixed blocks of keys, never an Sq x Skv matrix in
 * memory. The matrix products run on the library GEMM (kernels/gemm/gemm.h),
 * the row max / exp / sum on the NN row kernels (kernels/nn/nn_vec.h), the
 * remaining elementwise row steps on this directory's per-tier row kernels;
 * every one of them gives the same bits on every tier and thread count, and
 * the work is cut so that each output element is computed by one fixed
 * sequence of operations. The definition (the scalar tier):
 *
 * Forward, query row i of head n (batch b), kv head g = n / (N / Nkv), over
 * the key blocks t = [t*BC, (t+1)*BC) in increasing t that hold an allowed
 * key for the row (band: key j is allowed iff lo <= j - i <= hi; and
 * mask(b,n,i,j) == 0):
 *   s_j  = GEMM(q_i . k_j)  (fp32, gemm.h's chain)
 *          pse INNER: s_j = (s_j + pse_ij) * scale;  OUTER: s_j = s_j*scale + pse_ij
 *          none: s_j = s_j * scale;   disallowed keys: s_j = -inf
 *   mb = max_j s_j (nn_vec max);  m' = max(m, mb);  c = exp(m - m') (nn_vec exp, 0 for m = -inf)
 *   e_j = exp(s_j - m'), r = sum_j e_j (nn_vec expsub_sum_to);  l = l * c + r
 *   acc = acc * c  (per element), then acc = GEMM(round(drop(e)) @ V_t) + acc
 *   where drop(e)_j = bit ? e_j * (1/keep) : 0 and round() is V's dtype.
 * Then out_i = acc / l in out's dtype (0 when l == 0: a row without allowed
 * key), max = m, sum = l (repeated stat_rep times), lse = m + log(l).
 * Decode (forward with G * Sq <= PA_ATTN_DEC_ROWS, G = N / Nkv): the G * Sq
 * rows of a kv head (row h * Sq + i: head g*G + h, query i) read each K and V
 * row once, converted to fp32 on the fly, and the definition above changes in
 * three places:
 *   - the score product is a 16-lane dot: acc_l = +0 (l < 16); for c in
 *     increasing order acc_l = fmaf(q_{16c+l}, k_{16c+l}, acc_l) (both 0 past
 *     Dk); then t8_l = acc_l + acc_{l+8}, t4_l = t8_l + t8_{l+4},
 *     t2_l = t4_l + t4_{l+2}, s = t2_0 + t2_1 (then scale / pse / band / mask
 *     as above, pse OUTER as s*scale, then + pse);
 *   - V: acc = acc * c, then for j in increasing order
 *     acc_d = fmaf(round(drop(e))_j, v_jd, acc_d)   (one chain, no GEMM);
 *   - the keys are cut into fixed chunks of PA_ATTN_DEC_CHUNK keys (chunk
 *     boundaries at multiples of it, blocks of BC inside a chunk from its
 *     start); each chunk runs the online softmax above from m = -inf, l = 0,
 *     acc = 0 on its own (the blocks that hold a key the band allows to some
 *     row of the group), giving (m_c, l_c, acc_c); then, in increasing c over
 *     the chunks with m_c > -inf: M = max m_c;  w_c = m_c == M ? 1 : exp(m_c - M)
 *     (nn_vec exp);  L = L + l_c * w_c;  A_d = A_d + acc_c,d * w_c  (from +0);
 *     out = A / L (0 if no chunk: L = 0), max = M, sum = L, lse = M + log(L).
 *   Chunks are the threads' units, so the bits do not depend on the threads.
 *   (The backward keeps the GEMM definition, against these max / sum.)
 *
 * Backward, per (b, g), for each key block t (increasing), for each query
 * head of the group (increasing) and each block of BR query rows
 * (increasing), with D_i = sum_d dy_id * o_id (nn_vec dot, fp32):
 *   s as above, p_j = exp(s_j - max_i) * (1 / sum_i) (0 for disallowed keys)
 *   dV_t = GEMM(round(drop(p))^T @ dy) + dV_t
 *   dp   = GEMM(dy @ V_t^T);  ds_j = p_j * (drop(dp)_j - D_i)
 *   dK_t = scale * GEMM(round(ds)^T @ Q) + dK_t;   dQ = scale * GEMM(round(ds) @ K_t) + dQ
 * (dQ in fp32 in the workspace, accumulated over t in increasing order);
 * dK / dV / dQ are rounded once to their dtypes at the end. */
#ifndef PA_ATTN_H
#define PA_ATTN_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/pa_cpu.h"

#define PA_ATTN_BR 64  /* query rows per block */
#define PA_ATTN_BC 128 /* keys per block */
#define PA_ATTN_DEC_ROWS 16     /* at most this many rows per kv head take the decode kernel */
#define PA_ATTN_DEC_CHUNK 512   /* keys per decode chunk */

/* A 4-D operand: element (b, n, s, d) at p + off + b*sb + n*sn + s*ss + d*sd
 * (elements of dtype dt, a pa_gemm_dt). For pse and masks d is the key. */
typedef struct pa_attn_tensor {
    const void *p; /* NULL: absent */
    int32_t dt;
    int64_t off, sb, sn, ss, sd;
} pa_attn_tensor;

enum { PA_ATTN_PSE_NONE, PA_ATTN_PSE_INNER, PA_ATTN_PSE_OUTER };

typedef struct pa_attn_args {
    int64_t B, N, Nkv, Sq, Skv, Dk, Dv;
    pa_attn_tensor q, k, v;
    pa_attn_tensor pse;  /* dt F32 / F16 / BF16 */
    int32_t pse_mode;
    pa_attn_tensor mask; /* bytes, nonzero = masked (p NULL: none) */
    int64_t band_lo, band_hi;
    float scale;
    const uint8_t *drop; /* bit ((b*N + n)*Sq + i)*Skv + j, 1 = keep; NULL: no dropout */
    float rkeep;         /* 1 / keepProb */
    /* forward */
    pa_attn_tensor o;            /* attention out */
    pa_attn_tensor smax, ssum;   /* fp32, (b, n, i, r) for r < stat_rep; p NULL: not written */
    pa_attn_tensor lse;          /* fp32, (b, n, i, 0) */
    int64_t stat_rep;
    /* backward */
    pa_attn_tensor dy, oin, dq, dk, dv; /* oin: the forward's output; smax / ssum read */
    float *dq_acc;                     /* workspace: B*N*Sq*Dk floats */
} pa_attn_args;

/* Workspace bytes the backward needs. */
uint64_t pa_attn_bwd_workspace(const pa_attn_args *a);

/* Return 0, or -1 when scratch memory could not be had (nothing is written then
 * only if it fails before the first block; the callers report 361001). */
int pa_attn_fwd(const pa_attn_args *a, pa_isa isa);
int pa_attn_bwd(const pa_attn_args *a, pa_isa isa);

/* ---- per-tier elementwise row kernels (same bits on every tier) ---- */
typedef struct pa_attn_rows {
    const char *name;
    void (*scale)(float *x, float s, int64_t n);                              /* x = x * s */
    void (*add_scale)(float *x, const float *y, float s, int64_t n);          /* x = (x + y) * s */
    void (*mask)(float *x, const uint8_t *m, int64_t sm, int64_t n);          /* x = -inf where m[i*sm] */
    void (*drop)(float *y, const float *x, const uint8_t *bits, uint64_t bit0, float rk, int64_t n);
    void (*ds)(float *ds, const float *p, const float *dp, float di, int64_t n); /* p * (dp - di) */
    /* (decode kernels: pf NULL or, for j < nb, a row of pfw bytes at pf + j*pfs to prefetch meanwhile) */
    /* decode: S[r*sst + j] = the 16-lane dot of fp32 row Q + r*Dp (Dp = Dk rounded up to 16,
     * zeros past Dk) and key row j (K + j*krs elements, dtype kdt, Dk contiguous), r < m, j < nb */
    void (*dec_scores)(float *S, int64_t sst, const float *Q, int64_t m, int64_t Dp, const void *K, int32_t kdt,
                       int64_t krs, int64_t nb, int64_t Dk, const char *pf, int64_t pfs, int64_t pfw);
    /* decode: acc[r*Dv + d] = fmaf(P[r*pst + j], V(j, d), acc[r*Dv + d]) for j < nb in increasing order */
    void (*dec_accv)(float *acc, int64_t Dv, const float *P, int64_t pst, int64_t m, const void *V, int32_t vdt,
                     int64_t vrs, int64_t nb, const char *pf, int64_t pfs, int64_t pfw);
} pa_attn_rows;

const pa_attn_rows *pa_attn_rows_for(pa_isa isa);

extern const pa_attn_rows pa_attn_rows_scalar;
#if defined(PA_HAVE_X86_KERNELS)
extern const pa_attn_rows pa_attn_rows_avx2;
extern const pa_attn_rows pa_attn_rows_avx512;
#endif

#endif
