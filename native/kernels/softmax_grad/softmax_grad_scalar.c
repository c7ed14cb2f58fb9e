/* Scaled masked softmax backward, portable C: the oracle the SIMD tiers match
 * bit for bit. Reads any non-negative strides directly (no gather). */
#include "kernels/softmax_grad/softmax_grad_impl.h"

#include <pthread.h>

#include "common/pa_half.h"

static inline float ld_f32(const char *p) { float v; memcpy(&v, p, 4); return v; }
/* fp16 -> fp32 through a 64 Ki-entry table filled from pa_f16_to_f32 (the
 * conversion is exact, so the table is the reference; it saves the branches). */
static float g_f16_table[65536];
static pthread_once_t g_f16_once = PTHREAD_ONCE_INIT;
static void f16_table_init(void) {
    for (uint32_t h = 0; h < 65536; h++) g_f16_table[h] = pa_f16_to_f32((uint16_t)h);
}
static inline float ld_f16(const char *p) { uint16_t h; memcpy(&h, p, 2); return g_f16_table[h]; }
static inline float ld_bf16(const char *p) { uint16_t h; memcpy(&h, p, 2); return pa_bf16_to_f32(h); }
static inline void st_f32(char *p, float v) { memcpy(p, &v, 4); }
static inline void st_f16(char *p, float v) { uint16_t h = pa_f32_to_f16(v); memcpy(p, &h, 2); }
static inline void st_bf16(char *p, float v) { uint16_t h = pa_f32_to_bf16(v); memcpy(p, &h, 2); }

/* The fixed combination tree of the 64 partial sums (see softmax_grad.h). */
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

/* One function per dtype (the loads / stores inline into the loops). */
#define PA_SMSB_ROWS_SCALAR(NAME, ES, LD, ST)                                                      \
    static void NAME(const pa_smsb_args *a, int64_t r0, int64_t r1) {                              \
        const int64_t N = a->dims[1], S1 = a->dims[2], S2 = a->dims[3];                            \
        const float sc = a->scale;                                                                 \
        const int64_t gstep = a->gs[3] * (ES), ystep = a->ys[3] * (ES), mstep = a->ms[3];          \
        int64_t b = r0 / (N * S1);                                                                 \
        int64_t n = (r0 / S1) % N;                                                                 \
        int64_t s = r0 % S1;                                                                       \
        char *o = (char *)a->out + r0 * S2 * (ES);                                                 \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            const char *gp = (const char *)a->g + (b * a->gs[0] + n * a->gs[1] + s * a->gs[2]) * (ES); \
            const char *yp = (const char *)a->y + (b * a->ys[0] + n * a->ys[1] + s * a->ys[2]) * (ES); \
            const uint8_t *mp = a->mask + (b * a->ms[0] + n * a->ms[1] + s * a->ms[2]);            \
                                                                                                   \
            float acc[64];                                                                         \
            for (int l = 0; l < 64; l++) acc[l] = 0.0f;                                            \
            for (int64_t i = 0; i < S2; i++) {                                                     \
                float p = LD(gp + i * gstep) * LD(yp + i * ystep);                                 \
                acc[i & 63] += p;                                                                  \
            }                                                                                      \
            const float sum = reduce64(acc);                                                       \
                                                                                                   \
            for (int64_t i = 0; i < S2; i++) {                                                     \
                float yv = LD(yp + i * ystep);                                                     \
                float p = LD(gp + i * gstep) * yv;                                                 \
                float t = sum * yv;                                                                \
                float d = p - t;                                                                   \
                float v = d * sc;                                                                  \
                if (v != v) v = pa_bits_f32(0xffc00000u); /* the default NaN */                    \
                ST(o + i * (ES), mp[i * mstep] ? 0.0f : v);                                        \
            }                                                                                      \
                                                                                                   \
            o += S2 * (ES);                                                                        \
            if (++s == S1) {                                                                       \
                s = 0;                                                                             \
                if (++n == N) {                                                                    \
                    n = 0;                                                                         \
                    b++;                                                                           \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

PA_SMSB_ROWS_SCALAR(rows_f32_scalar, 4, ld_f32, st_f32)
PA_SMSB_ROWS_SCALAR(rows_f16_scalar, 2, ld_f16, st_f16)
PA_SMSB_ROWS_SCALAR(rows_bf16_scalar, 2, ld_bf16, st_bf16)

void pa_smsb_rows_f16_scalar(const pa_smsb_args *a, int64_t r0, int64_t r1) {
    pthread_once(&g_f16_once, f16_table_init);
    rows_f16_scalar(a, r0, r1);
}

void pa_smsb_rows_f32_scalar(const pa_smsb_args *a, int64_t r0, int64_t r1) { rows_f32_scalar(a, r0, r1); }

void pa_smsb_rows_bf16_scalar(const pa_smsb_args *a, int64_t r0, int64_t r1) { rows_bf16_scalar(a, r0, r1); }
