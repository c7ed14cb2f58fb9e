/* The map engine: out[i] = f(in0[i], in1[i], in2[i]) over strided,
 * broadcast N-D operands of any dtype, for every elementwise operator.
 *
 * Each input is cast to its `via` dtype (the op's promoted type) and widened
 * to a compute domain (fp32 for fp32 / fp16 / bf16, fp64, or int64); the
 * kernel runs on contiguous tiles of that domain; the result is rounded to
 * the op's result dtype `res`, then cast to the output's dtype. Casts follow
 * kernels/map/map_cvt.h (float -> int truncates and saturates, NaN -> 0;
 * int -> int wraps; anything -> bool is v != 0).
 *
 * The fp32 kernels exist per ISA tier (map_f32.inc, one template) and give
 * the same bits on every tier: the same operations in the same order, FMAs
 * only where written. fp64 and int64 kernels are plain C (one build).
 * No element depends on another, so results do not depend on threads. */
#ifndef PA_MAP_H
#define PA_MAP_H

#include <stdbool.h>
#include <stdint.h>

#include "acl/acl_base.h"
#include "cpu/pa_cpu.h"

#define PA_MAP_MAX_DIMS 16 /* views with split dims (Repeat) need more than a tensor's 8 */
#define PA_MAP_MAX_IN 3
#define PA_MAP_TILE 1024 /* elements per tile */

/* The kernels: name, number of inputs. Parameters p0..p3 (kp.f / kp.d / kp.i). */
#define PA_MAP_KERNELS(X)                                                                              \
    X(COPY, 1)        /* x (the conversion is the load and the store) */                              \
    X(FILL, 0)        /* p0 */                                                                         \
    X(ADD, 2)         /* a + p0*b (p0 == 1: a + b) */                                                  \
    X(SUB, 2)         /* a - p0*b */                                                                   \
    X(RSUB, 2)        /* b - p0*a */                                                                   \
    X(MUL, 2)         /* a * b */                                                                      \
    X(DIV, 2)         /* a / b */                                                                      \
    X(DIV_TRUNC, 2)   /* trunc(a / b) */                                                               \
    X(DIV_FLOOR, 2)   /* floor(a / b) */                                                               \
    X(REMAINDER, 2)   /* a - floor(a / b) * b (sign of b) */                                           \
    X(FMOD, 2)        /* a - trunc(a / b) * b (sign of a) */                                           \
    X(POW, 2)         /* a ** b */                                                                     \
    X(MAXIMUM, 2)     /* NaN if either is NaN */                                                       \
    X(MINIMUM, 2)                                                                                      \
    X(EQ, 2) X(NE, 2) X(LT, 2) X(LE, 2) X(GT, 2) X(GE, 2) /* 1 or 0 */                                 \
    X(LAND, 2) X(LOR, 2) X(LXOR, 2) X(LNOT, 1)            /* on truth values */                       \
    X(BAND, 2) X(BOR, 2) X(BXOR, 2) X(BNOT, 1)            /* int64 only */                            \
    X(NEG, 1) X(ABS, 1) X(SIGN, 1) X(SQUARE, 1) X(RECIP, 1) X(SQRT, 1) X(RSQRT, 1)                    \
    X(EXP, 1) X(EXP2, 1) X(EXPM1, 1) X(LOG, 1) X(LOG2, 1) X(LOG10, 1) X(LOG1P, 1)                     \
    X(SIN, 1) X(COS, 1) X(TAN, 1) X(TANH, 1) X(ERF, 1)                                                \
    X(ASIN, 1) X(ACOS, 1) X(ATAN, 1) X(SINH, 1) X(COSH, 1) X(ASINH, 1) X(ACOSH, 1) X(ATANH, 1)        \
    X(ERFINV, 1)      /* the inverse of erf; +-1: +-inf, beyond: NaN */                               \
    X(ATAN2, 2)       /* atan2(a, b) */                                                                \
    X(NAN_TO_NUM, 1)  /* NaN: p0, +inf: p1, -inf: p2, else x */                                        \
    X(FLOOR, 1) X(CEIL, 1) X(ROUND, 1) X(TRUNC, 1) X(ISFINITE, 1)                                     \
    X(RELU, 1) X(SIGMOID, 1) X(SILU, 1) X(GELU_ERF, 1) X(GELU_TANH, 1) X(MISH, 1)                     \
    X(HARDSIGMOID, 1) X(HARDSWISH, 1)                                                                  \
    X(LEAKY_RELU, 1)  /* x > 0 ? x : p0*x */                                                          \
    X(ELU, 1)         /* x > 0 ? p1*x : p0*p1*(exp(p2*x) - 1) (alpha, scale, inputScale) */          \
    X(SOFTPLUS, 1)    /* p0*x > p1 ? x : log1p(exp(p0*x)) / p0 (beta, threshold) */                  \
    X(THRESHOLD, 1)   /* x > p0 ? x : p1 */                                                            \
    X(CLAMP, 1)       /* min(max(x, p0), p1); pi[3] bit 0: no min, bit 1: no max; NaN stays */           \
    X(CLAMP_T, 3)     /* min(max(a, b), c) */                                                          \
    X(CLAMP_MIN_T, 2) /* max(a, b) */                                                                  \
    X(CLAMP_MAX_T, 2) /* min(a, b) */                                                                  \
    X(ADDCMUL, 3)     /* a + p0 * b * c */                                                             \
    X(ADDCDIV, 3)     /* a + p0 * b / c */                                                             \
    X(LERP, 3)        /* a + c * (b - a) (torch's two-sided form) */                                  \
    X(WHERE, 3)       /* a != 0 ? b : c */                                                              \
    /* activation gradients: a = gradOutput, b = the forward input (or result); the vendor kernels' forms */ \
    X(GELU_BACKWARD_TANH, 2)   /* a * d/dx [x / (1 + exp(-1.5957691 (x + 0.044715 x^3)))] */               \
    X(GELU_BACKWARD_ERF, 2)    /* a * (0.5 erf(x / sqrt 2) + 0.5 + x exp(-x^2 / 2) / sqrt(2 pi)) */       \
    X(SILU_BACKWARD, 2)        /* a * s (1 + x (1 - s)), s = sigmoid(x) */                                 \
    X(TANH_BACKWARD, 2)        /* a * (1 - y^2) (b = tanh's result y) */                                   \
    X(SIGMOID_BACKWARD, 2)     /* (1 - y) * a * y (b = sigmoid's result y) */                              \
    X(THRESHOLD_BACKWARD, 2)   /* x <= p0 ? 0 : a */                                                       \
    X(LEAKY_RELU_BACKWARD, 2)  /* x > 0 ? a : a * p0 */                                                    \
    X(HARDSWISH_BACKWARD, 2)   /* a * (x < -3 ? 0 : x > 3 ? 1 : x / 3 + 0.5) */                            \
    X(HARDSIGMOID_BACKWARD, 2) /* 0 < x / 6 + 0.5 < 1 ? a / 6 : 0 */                                       \
    X(HARDTANH_BACKWARD, 2)    /* p0 < x < p1 or x NaN ? a : 0 (min, max) */                               \
    X(SOFTPLUS_BACKWARD, 2)    /* p0 x > p1 ? a : a / (1 + exp(-p0 x)) (beta, threshold) */                \
    X(ELU_BACKWARD, 2)         /* x <= 0 ? a p2 p0 p1 exp(x p2) : a p1 (alpha, scale, inputScale) */       \
    X(ELU_BACKWARD_RESULT, 2)  /* y <= 0 ? a p2 (y + p0 p1) : a p1 (b = elu's result y) */                 \
    X(MISH_BACKWARD, 2)        /* a * (t + x sigmoid(x) (1 - t^2)), t = tanh(softplus(x)) */

typedef enum pa_map_kernel {
#define PA_MAP_ENUM(name, nin) PA_K_##name,
    PA_MAP_KERNELS(PA_MAP_ENUM)
#undef PA_MAP_ENUM
        PA_K_COUNT
} pa_map_kernel;

/* Inputs each kernel takes. */
int pa_map_kernel_nin(int kernel);
const char *pa_map_kernel_name(int kernel);

typedef enum pa_map_dom { PA_DOM_F32 = 0, PA_DOM_F64 = 1, PA_DOM_I64 = 2, PA_DOM_COUNT } pa_map_dom;

/* Kernel parameters, in the domain's type. */
typedef struct pa_map_kp {
    float f[4];
    double d[4];
    int64_t i[4];
} pa_map_kp;

typedef void (*pa_map_f32_fn)(float *o, const float *const *in, int64_t n, const pa_map_kp *kp);
/* fused fp16 / bf16 forms: 16-bit arrays in and out, fp32 in registers */
typedef void (*pa_map_f16_fn)(uint16_t *o, const uint16_t *const *in, int64_t n, const pa_map_kp *kp);
typedef void (*pa_map_f64_fn)(double *o, const double *const *in, int64_t n, const pa_map_kp *kp);
typedef void (*pa_map_i64_fn)(int64_t *o, const int64_t *const *in, int64_t n, const pa_map_kp *kp);

/* Whether `kernel` exists in domain `dom`. */
bool pa_map_has_kernel(int kernel, pa_map_dom dom);

typedef struct pa_map_operand {
    char *ptr;          /* element 0 (filled at launch) */
    aclDataType dtype;  /* storage dtype */
    aclDataType via;    /* inputs: cast to this dtype before widening; ACL_DT_UNDEFINED = none */
    bool is_const;      /* an input that is one value (value_d / value_i), no memory */
    bool u64_order;     /* int64 domain: load UINT64 biased by 2^63 (ordering compares) */
    double value_d;
    int64_t value_i;
    int64_t strides[PA_MAP_MAX_DIMS]; /* elements; 0 repeats (broadcast) */
} pa_map_operand;

typedef struct pa_map_args {
    int32_t kernel; /* pa_map_kernel */
    int32_t dom;    /* pa_map_dom */
    int32_t nin;
    aclDataType res; /* the result is rounded to this dtype before out's cast */
    bool u64_values; /* int64 domain: the values are UINT64 bits (a copy from UINT64) */
    bool raw;        /* int64 domain, COPY: move the elements' bits (every operand one dtype size) */
    int32_t ndim;
    int64_t dims[PA_MAP_MAX_DIMS];
    pa_map_operand out, in[PA_MAP_MAX_IN];
    double p[4];  /* parameters (fp32 / fp64 domains) */
    int64_t pi[4];
} pa_map_args;

/* Plan time: drops dims of size 1, orders dims by the output's strides
 * (largest first) and merges dims every operand walks contiguously. */
void pa_map_simplify(pa_map_args *a);

/* Runs the map (multithreaded over fixed chunks of tiles). */
void pa_map_run(const pa_map_args *a);

/* The domain a result dtype computes in. */
pa_map_dom pa_map_dom_of(aclDataType res);

/* The fp32 kernel table of a tier (scalar, avx2, avx512), for tests. */
const pa_map_f32_fn *pa_map_f32_table(pa_isa isa);

#endif
