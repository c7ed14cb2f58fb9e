/* The plain-C parts of the map engine: the fp64 and int64 domains (one build
 * for every tier) and the scalar element routines the fp32 "lane" kernels
 * share. Integer arithmetic wraps (two's complement); division by zero and
 * INT64_MIN / -1 give defined values instead of trapping. */
#include <math.h>
#include <string.h>

#include "kernels/map/map_isa.h"

/* ---- fp32 element routines ---- */

float pa_map_sinf_big(float x) { return (float)sin((double)x); }
float pa_map_cosf_big(float x) { return (float)cos((double)x); }
float pa_map_powf(float a, float b) { return (float)pow((double)a, (double)b); }
float pa_map_tanf(float x) { return (float)tan((double)x); }
float pa_map_asinf(float x) { return (float)asin((double)x); }
float pa_map_acosf(float x) { return (float)acos((double)x); }
float pa_map_atanf(float x) { return (float)atan((double)x); }
float pa_map_sinhf(float x) { return (float)sinh((double)x); }
float pa_map_coshf(float x) { return (float)cosh((double)x); }
float pa_map_asinhf(float x) { return (float)asinh((double)x); }
float pa_map_acoshf(float x) { return (float)acosh((double)x); }
float pa_map_atanhf(float x) { return (float)atanh((double)x); }
float pa_map_atan2f(float a, float b) { return (float)atan2((double)a, (double)b); }

/* erfinv in double: a rational first guess (Giles' single-precision form, in
 * w = -log(1 - x^2)), then three Newton steps on erf(y) - x. */
static double erfinv_d(double x) {
    if (isnan(x) || x < -1.0 || x > 1.0) return NAN;
    if (x == 1.0) return INFINITY;
    if (x == -1.0) return -INFINITY;
    if (x == 0.0) return x;
    const double w = -log((1.0 - x) * (1.0 + x));
    double p;
    if (w < 5.0) {
        const double t = w - 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * t;
        p = -3.5233877e-06 + p * t;
        p = -4.39150654e-06 + p * t;
        p = 0.00021858087 + p * t;
        p = -0.00125372503 + p * t;
        p = -0.00417768164 + p * t;
        p = 0.246640727 + p * t;
        p = 1.50140941 + p * t;
    } else {
        const double t = sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * t;
        p = 0.00134934322 + p * t;
        p = -0.00367342844 + p * t;
        p = 0.00573950773 + p * t;
        p = -0.0076224613 + p * t;
        p = 0.00943887047 + p * t;
        p = 1.00167406 + p * t;
        p = 2.83297682 + p * t;
    }
    double y = p * x;
    for (int it = 0; it < 3; it++) {
        const double d = 1.1283791670955126 * exp(-y * y); /* erf'(y) */
        if (!(d > 0.0)) break;
        y -= (erf(y) - x) / d;
    }
    return y;
}
float pa_map_erfinvf(float x) { return (float)erfinv_d((double)x); }

/* torch's floor division of floats: exact for exactly representable quotients. */
#define FLOORDIV_BODY(T, FMOD, FLOOR, HALF)                                                            \
    if (b == 0) return a / b;                                                                          \
    T mod = FMOD(a, b);                                                                                \
    T div = (a - mod) / b;                                                                             \
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;                                                    \
    if (div == 0) return copysign(0.0, (double)(a / b)) < 0 ? -(T)0 : (T)0;                             \
    T fl = FLOOR(div);                                                                                 \
    if (div - fl > HALF) fl += 1;                                                                      \
    return fl;

float pa_map_floordivf(float a, float b) { FLOORDIV_BODY(float, fmodf, floorf, 0.5f) }
static double floordiv_d(double a, double b) { FLOORDIV_BODY(double, fmod, floor, 0.5) }

float pa_map_remainderf(float a, float b) {
    float mod = fmodf(a, b);
    if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
    return mod;
}
static double remainder_d(double a, double b) {
    double mod = fmod(a, b);
    if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
    return mod;
}

/* ---- fp64 ---- */

#define D1(NAME, EXPR)                                                                                 \
    static void d_##NAME(double *o, const double *const *in, int64_t n, const pa_map_kp *kp) {          \
        (void)kp;                                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                              \
            const double a = in[0][i];                                                                 \
            o[i] = (EXPR);                                                                             \
        }                                                                                              \
    }
#define D2(NAME, EXPR)                                                                                 \
    static void d_##NAME(double *o, const double *const *in, int64_t n, const pa_map_kp *kp) {          \
        (void)kp;                                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                              \
            const double a = in[0][i], b = in[1][i];                                                   \
            o[i] = (EXPR);                                                                             \
        }                                                                                              \
    }
#define D3(NAME, EXPR)                                                                                 \
    static void d_##NAME(double *o, const double *const *in, int64_t n, const pa_map_kp *kp) {          \
        (void)kp;                                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                              \
            const double a = in[0][i], b = in[1][i], c = in[2][i];                                     \
            o[i] = (EXPR);                                                                             \
        }                                                                                              \
    }
#define P0 (kp->d[0])
#define P1 (kp->d[1])
#define P2 (kp->d[2])

static double sign_d(double a) { return a > 0 ? 1.0 : a < 0 ? -1.0 : a; }
static double nanmax_d(double a, double b) { return isnan(a) || isnan(b) ? a + b : a > b ? a : b; }
static double nanmin_d(double a, double b) { return isnan(a) || isnan(b) ? a + b : a < b ? a : b; }
static double clamp_d(double a, const pa_map_kp *kp) {
    if (!(kp->i[3] & 1) && a < kp->d[0]) a = kp->d[0];
    if (!(kp->i[3] & 2) && a > kp->d[1]) a = kp->d[1];
    return a;
}
static double hard_d(double a) { double t = a + 3; return t > 6 ? 6 : t < 0 ? 0 : t; }
static double log1p_exp_d(double a) { return log1p(exp(a)); }

D1(COPY, a)
static void d_FILL(double *o, const double *const *in, int64_t n, const pa_map_kp *kp) {
    (void)in;
    for (int64_t i = 0; i < n; i++) o[i] = kp->d[0];
}
D2(ADD, fma(b, P0, a))
D2(SUB, fma(b, -P0, a))
D2(RSUB, fma(a, -P0, b))
D2(MUL, a * b)
D2(DIV, a / b)
D2(DIV_TRUNC, trunc(a / b))
D2(DIV_FLOOR, floordiv_d(a, b))
D2(REMAINDER, remainder_d(a, b))
D2(FMOD, fmod(a, b))
D2(POW, pow(a, b))
D2(MAXIMUM, nanmax_d(a, b))
D2(MINIMUM, nanmin_d(a, b))
D2(EQ, a == b)
D2(NE, a != b)
D2(LT, a < b)
D2(LE, a <= b)
D2(GT, a > b)
D2(GE, a >= b)
D2(LAND, a != 0 && b != 0)
D2(LOR, a != 0 || b != 0)
D2(LXOR, (a != 0) != (b != 0))
D1(LNOT, a == 0)
D1(NEG, -a)
D1(ABS, fabs(a))
D1(SIGN, sign_d(a))
D1(SQUARE, a * a)
D1(RECIP, 1.0 / a)
D1(SQRT, sqrt(a))
D1(RSQRT, 1.0 / sqrt(a))
D1(EXP, exp(a))
D1(EXP2, exp2(a))
D1(EXPM1, expm1(a))
D1(LOG, log(a))
D1(LOG2, log2(a))
D1(LOG10, log10(a))
D1(LOG1P, log1p(a))
D1(SIN, sin(a))
D1(COS, cos(a))
D1(TAN, tan(a))
D1(TANH, tanh(a))
D1(ERF, erf(a))
D1(ASIN, asin(a))
D1(ACOS, acos(a))
D1(ATAN, atan(a))
D1(SINH, sinh(a))
D1(COSH, cosh(a))
D1(ASINH, asinh(a))
D1(ACOSH, acosh(a))
D1(ATANH, atanh(a))
D1(ERFINV, erfinv_d(a))
D2(ATAN2, atan2(a, b))
D1(NAN_TO_NUM, isnan(a) ? P0 : a == INFINITY ? P1 : a == -INFINITY ? P2 : a)
D1(FLOOR, floor(a))
D1(CEIL, ceil(a))
D1(ROUND, nearbyint(a))
D1(TRUNC, trunc(a))
D1(ISFINITE, isfinite(a) ? 1.0 : 0.0)
D1(RELU, a < 0 ? 0.0 : a)
D1(SIGMOID, 1.0 / (1.0 + exp(-a)))
D1(SILU, a / (1.0 + exp(-a)))
D1(GELU_ERF, 0.5 * a * (1.0 + erf(a * 0.70710678118654752440)))
D1(GELU_TANH, a / (1.0 + exp(-1.5957691216057308 * fma(0.044715, a * a * a, a))))
D1(MISH, a * tanh(log1p_exp_d(a)))
D1(HARDSIGMOID, hard_d(a) / 6.0)
D1(HARDSWISH, a * hard_d(a) / 6.0)
D1(LEAKY_RELU, a > 0 ? a : a * P0)
D1(ELU, a > 0 ? a * P1 : P0 * P1 * expm1(a * P2))
D1(SOFTPLUS, a * P0 > P1 ? a : log1p(exp(a * P0)) / P0)
D1(THRESHOLD, a <= P0 ? P1 : a)
D1(CLAMP, clamp_d(a, kp))
D3(CLAMP_T, (a < b ? b : a) > c ? c : (a < b ? b : a))
D2(CLAMP_MIN_T, a < b ? b : a)
D2(CLAMP_MAX_T, a > b ? b : a)
D3(ADDCMUL, a + P0 * b * c)
D3(ADDCDIV, a + P0 * b / c)
D3(LERP, fabs(c) < 0.5 ? fma(c, b - a, a) : fma(-(b - a), 1.0 - c, b))
D3(WHERE, a != 0 ? b : c)
D2(TANH_BACKWARD, fma(-b, b, 1.0) * a)
D2(SIGMOID_BACKWARD, (1.0 - b) * a * b)
D2(LEAKY_RELU_BACKWARD, b > 0 ? a : a * P0)

#define PA_MAP_F64_ENTRY(name, nin) [PA_K_##name] = d_##name,
const pa_map_f64_fn pa_map_f64_tab[PA_K_COUNT] = {
    PA_MAP_F64_ENTRY(COPY, 1) PA_MAP_F64_ENTRY(FILL, 0) PA_MAP_F64_ENTRY(ADD, 2) PA_MAP_F64_ENTRY(SUB, 2)
    PA_MAP_F64_ENTRY(RSUB, 2) PA_MAP_F64_ENTRY(MUL, 2) PA_MAP_F64_ENTRY(DIV, 2) PA_MAP_F64_ENTRY(DIV_TRUNC, 2)
    PA_MAP_F64_ENTRY(DIV_FLOOR, 2) PA_MAP_F64_ENTRY(REMAINDER, 2) PA_MAP_F64_ENTRY(FMOD, 2)
    PA_MAP_F64_ENTRY(POW, 2) PA_MAP_F64_ENTRY(MAXIMUM, 2) PA_MAP_F64_ENTRY(MINIMUM, 2) PA_MAP_F64_ENTRY(EQ, 2)
    PA_MAP_F64_ENTRY(NE, 2) PA_MAP_F64_ENTRY(LT, 2) PA_MAP_F64_ENTRY(LE, 2) PA_MAP_F64_ENTRY(GT, 2)
    PA_MAP_F64_ENTRY(GE, 2) PA_MAP_F64_ENTRY(LAND, 2) PA_MAP_F64_ENTRY(LOR, 2) PA_MAP_F64_ENTRY(LXOR, 2)
    PA_MAP_F64_ENTRY(LNOT, 1) PA_MAP_F64_ENTRY(NEG, 1) PA_MAP_F64_ENTRY(ABS, 1) PA_MAP_F64_ENTRY(SIGN, 1)
    PA_MAP_F64_ENTRY(SQUARE, 1) PA_MAP_F64_ENTRY(RECIP, 1) PA_MAP_F64_ENTRY(SQRT, 1) PA_MAP_F64_ENTRY(RSQRT, 1)
    PA_MAP_F64_ENTRY(EXP, 1) PA_MAP_F64_ENTRY(EXP2, 1) PA_MAP_F64_ENTRY(EXPM1, 1) PA_MAP_F64_ENTRY(LOG, 1)
    PA_MAP_F64_ENTRY(LOG2, 1) PA_MAP_F64_ENTRY(LOG10, 1) PA_MAP_F64_ENTRY(LOG1P, 1) PA_MAP_F64_ENTRY(SIN, 1)
    PA_MAP_F64_ENTRY(COS, 1) PA_MAP_F64_ENTRY(TAN, 1) PA_MAP_F64_ENTRY(TANH, 1) PA_MAP_F64_ENTRY(ERF, 1)
    PA_MAP_F64_ENTRY(ASIN, 1) PA_MAP_F64_ENTRY(ACOS, 1) PA_MAP_F64_ENTRY(ATAN, 1) PA_MAP_F64_ENTRY(SINH, 1)
    PA_MAP_F64_ENTRY(COSH, 1) PA_MAP_F64_ENTRY(ASINH, 1) PA_MAP_F64_ENTRY(ACOSH, 1) PA_MAP_F64_ENTRY(ATANH, 1)
    PA_MAP_F64_ENTRY(ERFINV, 1) PA_MAP_F64_ENTRY(ATAN2, 2) PA_MAP_F64_ENTRY(NAN_TO_NUM, 1)
    PA_MAP_F64_ENTRY(FLOOR, 1) PA_MAP_F64_ENTRY(CEIL, 1) PA_MAP_F64_ENTRY(ROUND, 1) PA_MAP_F64_ENTRY(TRUNC, 1) PA_MAP_F64_ENTRY(ISFINITE, 1)
    PA_MAP_F64_ENTRY(RELU, 1) PA_MAP_F64_ENTRY(SIGMOID, 1) PA_MAP_F64_ENTRY(SILU, 1)
    PA_MAP_F64_ENTRY(GELU_ERF, 1) PA_MAP_F64_ENTRY(GELU_TANH, 1) PA_MAP_F64_ENTRY(MISH, 1)
    PA_MAP_F64_ENTRY(HARDSIGMOID, 1) PA_MAP_F64_ENTRY(HARDSWISH, 1) PA_MAP_F64_ENTRY(LEAKY_RELU, 1)
    PA_MAP_F64_ENTRY(ELU, 1) PA_MAP_F64_ENTRY(SOFTPLUS, 1) PA_MAP_F64_ENTRY(THRESHOLD, 1)
    PA_MAP_F64_ENTRY(CLAMP, 1) PA_MAP_F64_ENTRY(CLAMP_T, 3) PA_MAP_F64_ENTRY(CLAMP_MIN_T, 2)
    PA_MAP_F64_ENTRY(CLAMP_MAX_T, 2) PA_MAP_F64_ENTRY(ADDCMUL, 3) PA_MAP_F64_ENTRY(ADDCDIV, 3)
    PA_MAP_F64_ENTRY(LERP, 3) PA_MAP_F64_ENTRY(WHERE, 3) PA_MAP_F64_ENTRY(TANH_BACKWARD, 2)
    PA_MAP_F64_ENTRY(SIGMOID_BACKWARD, 2) PA_MAP_F64_ENTRY(LEAKY_RELU_BACKWARD, 2)};

/* ---- int64 (wrapping) ---- */

#define I1(NAME, EXPR)                                                                                 \
    static void i_##NAME(int64_t *o, const int64_t *const *in, int64_t n, const pa_map_kp *kp) {        \
        (void)kp;                                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                              \
            const int64_t a = in[0][i];                                                                \
            o[i] = (EXPR);                                                                             \
        }                                                                                              \
    }
#define I2(NAME, EXPR)                                                                                 \
    static void i_##NAME(int64_t *o, const int64_t *const *in, int64_t n, const pa_map_kp *kp) {        \
        (void)kp;                                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                              \
            const int64_t a = in[0][i], b = in[1][i];                                                  \
            o[i] = (EXPR);                                                                             \
        }                                                                                              \
    }
#define I3(NAME, EXPR)                                                                                 \
    static void i_##NAME(int64_t *o, const int64_t *const *in, int64_t n, const pa_map_kp *kp) {        \
        (void)kp;                                                                                      \
        for (int64_t i = 0; i < n; i++) {                                                              \
            const int64_t a = in[0][i], b = in[1][i], c = in[2][i];                                    \
            o[i] = (EXPR);                                                                             \
        }                                                                                              \
    }
#define U(x) ((uint64_t)(x))
#define S(x) ((int64_t)(x))
#define Q0 (kp->i[0])
#define Q1 (kp->i[1])

static int64_t div_trunc_i(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return S(0 - U(a));
    return a / b;
}
static int64_t mod_trunc_i(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }
static int64_t div_floor_i(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return S(0 - U(a));
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
static int64_t mod_floor_i(int64_t a, int64_t b) {
    int64_t m = mod_trunc_i(a, b);
    if (m != 0 && ((m < 0) != (b < 0))) m = S(U(m) + U(b));
    return m;
}
static int64_t pow_i(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? (b & 1 ? -1 : 1) : 0;
    uint64_t r = 1, x = U(a);
    while (b > 0) {
        if (b & 1) r *= x;
        x *= x;
        b >>= 1;
    }
    return S(r);
}
static int64_t clamp_i(int64_t a, const pa_map_kp *kp) {
    if (!(kp->i[3] & 1) && a < kp->i[0]) a = kp->i[0];
    if (!(kp->i[3] & 2) && a > kp->i[1]) a = kp->i[1];
    return a;
}
static int64_t sign_i(int64_t a) { return a > 0 ? 1 : a < 0 ? -1 : 0; }

I1(COPY, a)
I1(NAN_TO_NUM, a) /* integers have no NaN or inf */
static void i_FILL(int64_t *o, const int64_t *const *in, int64_t n, const pa_map_kp *kp) {
    (void)in;
    for (int64_t i = 0; i < n; i++) o[i] = kp->i[0];
}
I2(ADD, S(U(a) + U(b) * U(Q0)))
I2(SUB, S(U(a) - U(b) * U(Q0)))
I2(RSUB, S(U(b) - U(a) * U(Q0)))
I2(MUL, S(U(a) * U(b)))
I2(DIV_TRUNC, div_trunc_i(a, b))
I2(DIV_FLOOR, div_floor_i(a, b))
I2(REMAINDER, mod_floor_i(a, b))
I2(FMOD, mod_trunc_i(a, b))
I2(POW, pow_i(a, b))
I2(MAXIMUM, a > b ? a : b)
I2(MINIMUM, a < b ? a : b)
I2(EQ, a == b)
I2(NE, a != b)
I2(LT, a < b)
I2(LE, a <= b)
I2(GT, a > b)
I2(GE, a >= b)
I2(LAND, a != 0 && b != 0)
I2(LOR, a != 0 || b != 0)
I2(LXOR, (a != 0) != (b != 0))
I1(LNOT, a == 0)
I2(BAND, S(U(a) & U(b)))
I2(BOR, S(U(a) | U(b)))
I2(BXOR, S(U(a) ^ U(b)))
I1(BNOT, S(~U(a)))
I1(NEG, S(0 - U(a)))
I1(ABS, a < 0 ? S(0 - U(a)) : a)
I1(SIGN, sign_i(a))
I1(SQUARE, S(U(a) * U(a)))
I1(FLOOR, a)
I1(CEIL, a)
I1(ROUND, a)
I1(TRUNC, a)
static void i_ISFINITE(int64_t *o, const int64_t *const *in, int64_t n, const pa_map_kp *kp) {
    (void)in, (void)kp;
    for (int64_t i = 0; i < n; i++) o[i] = 1;
}
I1(RELU, a < 0 ? 0 : a)
I1(THRESHOLD, a <= Q0 ? Q1 : a)
I1(CLAMP, clamp_i(a, kp))
I3(CLAMP_T, (a < b ? b : a) > c ? c : (a < b ? b : a))
I2(CLAMP_MIN_T, a < b ? b : a)
I2(CLAMP_MAX_T, a > b ? b : a)
I3(ADDCMUL, S(U(a) + U(Q0) * U(b) * U(c)))
I3(WHERE, a != 0 ? b : c)

#define PA_MAP_I64_ENTRY(name) [PA_K_##name] = i_##name,
const pa_map_i64_fn pa_map_i64_tab[PA_K_COUNT] = {
    PA_MAP_I64_ENTRY(COPY) PA_MAP_I64_ENTRY(NAN_TO_NUM) PA_MAP_I64_ENTRY(FILL) PA_MAP_I64_ENTRY(ADD) PA_MAP_I64_ENTRY(SUB)
    PA_MAP_I64_ENTRY(RSUB) PA_MAP_I64_ENTRY(MUL) PA_MAP_I64_ENTRY(DIV_TRUNC) PA_MAP_I64_ENTRY(DIV_FLOOR)
    PA_MAP_I64_ENTRY(REMAINDER) PA_MAP_I64_ENTRY(FMOD) PA_MAP_I64_ENTRY(POW) PA_MAP_I64_ENTRY(MAXIMUM)
    PA_MAP_I64_ENTRY(MINIMUM) PA_MAP_I64_ENTRY(EQ) PA_MAP_I64_ENTRY(NE) PA_MAP_I64_ENTRY(LT) PA_MAP_I64_ENTRY(LE)
    PA_MAP_I64_ENTRY(GT) PA_MAP_I64_ENTRY(GE) PA_MAP_I64_ENTRY(LAND) PA_MAP_I64_ENTRY(LOR) PA_MAP_I64_ENTRY(LXOR)
    PA_MAP_I64_ENTRY(LNOT) PA_MAP_I64_ENTRY(BAND) PA_MAP_I64_ENTRY(BOR) PA_MAP_I64_ENTRY(BXOR)
    PA_MAP_I64_ENTRY(BNOT) PA_MAP_I64_ENTRY(NEG) PA_MAP_I64_ENTRY(ABS) PA_MAP_I64_ENTRY(SIGN)
    PA_MAP_I64_ENTRY(SQUARE) PA_MAP_I64_ENTRY(FLOOR) PA_MAP_I64_ENTRY(CEIL) PA_MAP_I64_ENTRY(ROUND)
    PA_MAP_I64_ENTRY(TRUNC) PA_MAP_I64_ENTRY(ISFINITE) PA_MAP_I64_ENTRY(RELU) PA_MAP_I64_ENTRY(THRESHOLD) PA_MAP_I64_ENTRY(CLAMP)
    PA_MAP_I64_ENTRY(CLAMP_T) PA_MAP_I64_ENTRY(CLAMP_MIN_T) PA_MAP_I64_ENTRY(CLAMP_MAX_T)
    PA_MAP_I64_ENTRY(ADDCMUL) PA_MAP_I64_ENTRY(WHERE)};
