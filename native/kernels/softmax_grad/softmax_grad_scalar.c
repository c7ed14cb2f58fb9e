/* Scaled masked softmax backward, portable C: the oracle the SIMD tiers match
 * bit for bit (the summation order of softmax_grad.h, written out plainly).
 * Reads any non-negative strides directly (no gather). */
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
            /* the row sum, chunk by chunk of 64 columns (+0.0 past the row) */                  \
            const int64_t nch = (S2 + 63) / 64;                                                    \
            /* -0.0 + b == b for every b: the first blocks start the accumulators */            \
            float acc[8] = {-0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f};               \
            float csum[PA_SMSB_CHUNKS_BUF];                                                        \
            for (int64_t k = 0; k < nch; k++) {                                                    \
                const int64_t c0 = 64 * k, len = S2 - c0 < 64 ? S2 - c0 : 64;                      \
                float x[64];                                                                       \
                for (int64_t j = 0; j < 64; j++)                                                   \
                    x[j] = j < len ? LD(gp + (c0 + j) * gstep) * LD(yp + (c0 + j) * ystep) : 0.0f; \
                if (S2 > PA_SMSB_ACC8_MAX) {                                                       \
                    csum[k] = pa_smsb_pairwise(x, len);                                            \
                    continue;                                                                      \
                }                                                                                  \
                for (int j = 0; j < 8; j++) acc[j] = acc[j] + pa_smsb_tree8(x + 8 * j);            \
            }                                                                                      \
            const float sum = S2 > PA_SMSB_ACC8_MAX ? pa_smsb_pairwise(csum, nch) : pa_smsb_tree8(acc); \
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
