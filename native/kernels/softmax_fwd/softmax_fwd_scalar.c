/* Scaled masked softmax forward, portable C: the oracle the SIMD tiers match bit
 * for bit (softmax_fwd.h defines the operations). Reads any non-negative strides
 * directly; one row's z / e lives on the stack (16 KB), so it needs no scratch. */
#include "kernels/softmax_fwd/softmax_fwd_impl.h"

#include <math.h>

#include "common/pa_half.h"

static inline float ld_f32(const char *p) { float v; memcpy(&v, p, 4); return v; }
static inline float ld_f16(const char *p) { uint16_t h; memcpy(&h, p, 2); return pa_f16_to_f32(h); }
static inline float ld_bf16(const char *p) { uint16_t h; memcpy(&h, p, 2); return pa_bf16_to_f32(h); }
static inline void st_f32(char *p, float v) { memcpy(p, &v, 4); }
static inline void st_f16(char *p, float v) { uint16_t h = pa_f32_to_f16(v); memcpy(p, &h, 2); }
static inline void st_bf16(char *p, float v) { uint16_t h = pa_f32_to_bf16(v); memcpy(p, &h, 2); }

/* x * scale as each dtype's kernel forms it (see softmax_fwd.h). */
static inline float mul_f32(float x, float s) { return x * s; }
static inline float mul_f16(float x, float s) { return pa_f16_to_f32(pa_f32_to_f16(x * s)); }

static inline float exp_tab(float x) {
    if (x < PA_SMSF_EXP_LOW) return 0.0f;
    const float t = fmaf(x, PA_SMSF_K, PA_SMSF_MAGIC);
    const float nf = t - PA_SMSF_MAGIC;
    const float r1 = fmaf(-nf, PA_SMSF_L_HI, x);
    const float r = fmaf(-nf, PA_SMSF_L_LO, r1);
    const float q = fmaf(fmaf(PA_SMSF_C3, r1, PA_SMSF_C2), r1 * r1, r);
    const uint32_t tb = pa_f32_bits(t);
    const float h = pa_bits_f32(pa_smsf_exp2_tab[tb & 15] + (tb << 19));
    return fmaf(h, q, h); /* NaN x: NaN */
}

static inline float reduce64(const float acc[64]) {
    float t16[16], t8[8], t4[4], t2[2];
    for (int l = 0; l < 16; l++) {
        float u = acc[l] + acc[16 + l];
        float v = acc[32 + l] + acc[48 + l];
        t16[l] = u + v;
    }
    for (int l = 0; l < 8; l++) t8[l] = t16[l] + t16[l + 8];
    for (int l = 0; l < 4; l++) t4[l] = t8[l] + t8[l + 4];
    for (int l = 0; l < 2; l++) t2[l] = t4[l] + t4[l + 2];
    return t2[0] + t2[1];
}

/* z, then e, of one row live in a stack buffer (S2 <= PA_SMSF_ROW_MAX). */
#define PA_SMSF_ROW_MAX 4096

#define PA_SMSF_ROWS_SCALAR(NAME, ES, LD, ST, MUL)                                                   \
    static void NAME(const pa_smsf_args *a, int64_t r0, int64_t r1) {                                \
        const int64_t N = a->dims[1], S1 = a->dims[2], S2 = a->dims[3];                              \
        const float sc = a->scale;                                                                   \
        const int64_t xstep = a->xs[3] * (ES), mstep = a->ms[3];                                     \
        int64_t b = r0 / (N * S1), n = (r0 / S1) % N, s = r0 % S1;                                   \
        char *o = (char *)a->y + r0 * S2 * (ES);                                                     \
        float z[PA_SMSF_ROW_MAX];                                                                    \
        if (S2 > PA_SMSF_ROW_MAX) return; /* the op never plans such rows */                         \
        for (int64_t r = r0; r < r1; r++) {                                                          \
            const char *xp = (const char *)a->x + (b * a->xs[0] + n * a->xs[1] + s * a->xs[2]) * (ES); \
            const uint8_t *mp = a->mask + (b * a->ms[0] + n * a->ms[1] + s * a->ms[2]);              \
            float mx = -INFINITY;                                                                    \
            for (int64_t i = 0; i < S2; i++) {                                                       \
                z[i] = mp[i * mstep] ? PA_SMSF_MASK_VALUE : MUL(LD(xp + i * xstep), sc);             \
                mx = z[i] > mx ? z[i] : mx;                                                          \
            }                                                                                        \
            float acc[64];                                                                           \
            for (int l = 0; l < 64; l++) acc[l] = 0.0f;                                              \
            for (int64_t i = 0; i < S2; i++) {                                                       \
                z[i] = exp_tab(z[i] - mx);                                                          \
                acc[i & 63] += z[i];                                                                 \
            }                                                                                        \
            const float sum = reduce64(acc);                                                         \
            const float inv = 1.0f / sum;                                                            \
            if (sum != sum) {                                                                        \
                for (int64_t i = 0; i < S2; i++) ST(o + i * (ES), pa_bits_f32(PA_SMSF_NAN_BITS));   \
            } else {                                                                                 \
                for (int64_t i = 0; i < S2; i++) ST(o + i * (ES), z[i] * inv);                       \
            }                                                                                        \
            o += S2 * (ES);                                                                          \
            if (++s == S1) {                                                                         \
                s = 0;                                                                               \
                if (++n == N) {                                                                      \
                    n = 0;                                                                           \
                    b++;                                                                             \
                }                                                                                    \
            }                                                                                        \
        }                                                                                            \
    }

PA_SMSF_ROWS_SCALAR(rows_f32, 4, ld_f32, st_f32, mul_f32)
PA_SMSF_ROWS_SCALAR(rows_f16, 2, ld_f16, st_f16, mul_f16)
PA_SMSF_ROWS_SCALAR(rows_bf16, 2, ld_bf16, st_bf16, mul_f32)

void pa_smsf_rows_f32_scalar(const pa_smsf_args *a, int64_t r0, int64_t r1) { rows_f32(a, r0, r1); }
void pa_smsf_rows_f16_scalar(const pa_smsf_args *a, int64_t r0, int64_t r1) { rows_f16(a, r0, r1); }
void pa_smsf_rows_bf16_scalar(const pa_smsf_args *a, int64_t r0, int64_t r1) { rows_bf16(a, r0, r1); }
