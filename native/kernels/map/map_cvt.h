/* Scalar element conversions of the map engine (and of every op that moves
 * elements between dtypes): the reference every SIMD conversion matches.
 *   float -> float  rounded once to nearest even (double -> fp16 / bf16 via
 *                   fp32 rounded to odd, so there is no double rounding);
 *   int   -> float  one rounding;
 *   float -> int    truncated toward zero, NaN -> 0, saturated to the range;
 *   int   -> int    wraps to the width (two's complement);
 *   any   -> bool   v != 0 (NaN is true); bool loads as 0 / 1. */
#ifndef PA_MAP_CVT_H
#define PA_MAP_CVT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "acl/acl_base.h"
#include "common/pa_half.h"

static inline size_t pa_cvt_size(aclDataType dt) {
    switch (dt) {
    case ACL_DOUBLE: case ACL_INT64: case ACL_UINT64: return 8;
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    default: return 1;
    }
}

static inline double pa_cvt_load_f(const char *p, aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT: { float v; memcpy(&v, p, 4); return v; }
    case ACL_DOUBLE: { double v; memcpy(&v, p, 8); return v; }
    case ACL_FLOAT16: { uint16_t h; memcpy(&h, p, 2); return pa_f16_to_f32(h); }
    case ACL_BF16: { uint16_t h; memcpy(&h, p, 2); return pa_bf16_to_f32(h); }
    case ACL_BOOL: return *(const uint8_t *)p != 0;
    case ACL_INT8: return *(const int8_t *)p;
    case ACL_UINT8: return *(const uint8_t *)p;
    case ACL_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case ACL_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case ACL_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case ACL_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case ACL_INT64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case ACL_UINT64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    default: return 0;
    }
}

/* Truncation toward zero into [lo, hi]; NaN -> 0. */
static inline int64_t pa_cvt_f_to_i(double v, double lo, double hi) {
    if (v != v) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

static inline int pa_cvt_is_float(aclDataType dt) {
    return dt == ACL_FLOAT || dt == ACL_FLOAT16 || dt == ACL_BF16 || dt == ACL_DOUBLE;
}

static inline int64_t pa_cvt_load_i(const char *p, aclDataType dt) {
    switch (dt) {
    case ACL_BOOL: return *(const uint8_t *)p != 0;
    case ACL_INT8: return *(const int8_t *)p;
    case ACL_UINT8: return *(const uint8_t *)p;
    case ACL_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case ACL_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case ACL_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case ACL_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case ACL_INT64: case ACL_UINT64: { int64_t v; memcpy(&v, p, 8); return v; }
    default: return pa_cvt_f_to_i(pa_cvt_load_f(p, dt), -0x1p63, 0x1p63 - 1024.0); /* float types */
    }
}

/* v rounded to fp32 toward zero, with the lowest bit set when inexact ("round
 * to odd"): rounding that to fp16 / bf16 gives the correctly rounded result. */
static inline float pa_cvt_f32_odd(double v) {
    float f = (float)v;
    if (v != v || (double)f == v) return f;
    if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f);
    uint32_t u;
    memcpy(&u, &f, 4);
    u |= 1u;
    memcpy(&f, &u, 4);
    return f;
}

static inline void pa_cvt_store_i(char *p, aclDataType dt, int64_t v);

static inline void pa_cvt_store_f(char *p, aclDataType dt, double v) {
    switch (dt) {
    case ACL_FLOAT: { float f = (float)v; memcpy(p, &f, 4); return; }
    case ACL_DOUBLE: memcpy(p, &v, 8); return;
    case ACL_FLOAT16: { uint16_t h = pa_f32_to_f16(pa_cvt_f32_odd(v)); memcpy(p, &h, 2); return; }
    case ACL_BF16: { uint16_t h = pa_f32_to_bf16(pa_cvt_f32_odd(v)); memcpy(p, &h, 2); return; }
    case ACL_BOOL: *(uint8_t *)p = v != 0; return;
    case ACL_INT8: pa_cvt_store_i(p, dt, pa_cvt_f_to_i(v, -128, 127)); return;
    case ACL_UINT8: pa_cvt_store_i(p, dt, pa_cvt_f_to_i(v, 0, 255)); return;
    case ACL_INT16: pa_cvt_store_i(p, dt, pa_cvt_f_to_i(v, -32768, 32767)); return;
    case ACL_UINT16: pa_cvt_store_i(p, dt, pa_cvt_f_to_i(v, 0, 65535)); return;
    case ACL_INT32: pa_cvt_store_i(p, dt, pa_cvt_f_to_i(v, -2147483648.0, 2147483647.0)); return;
    case ACL_UINT32: pa_cvt_store_i(p, dt, pa_cvt_f_to_i(v, 0, 4294967295.0)); return;
    case ACL_INT64: pa_cvt_store_i(p, dt, pa_cvt_f_to_i(v, -0x1p63, 0x1p63 - 1024.0)); return;
    case ACL_UINT64: {
        uint64_t u = v != v || v <= 0 ? 0 : v >= 0x1p64 ? UINT64_MAX : (uint64_t)v;
        memcpy(p, &u, 8);
        return;
    }
    default: return;
    }
}

static inline void pa_cvt_store_i(char *p, aclDataType dt, int64_t v) {
    const uint64_t u = (uint64_t)v; /* narrowing keeps the low bits */
    switch (dt) {
    case ACL_BOOL: *(uint8_t *)p = v != 0; return;
    case ACL_INT8: case ACL_UINT8: *(uint8_t *)p = (uint8_t)u; return;
    case ACL_INT16: case ACL_UINT16: { uint16_t w = (uint16_t)u; memcpy(p, &w, 2); return; }
    case ACL_INT32: case ACL_UINT32: { uint32_t w = (uint32_t)u; memcpy(p, &w, 4); return; }
    case ACL_INT64: case ACL_UINT64: memcpy(p, &u, 8); return;
    case ACL_FLOAT: { float f = (float)v; memcpy(p, &f, 4); return; }         /* one rounding */
    case ACL_DOUBLE: { double d = (double)v; memcpy(p, &d, 8); return; }
    case ACL_UINT1: case ACL_DT_UNDEFINED: return;
    default: pa_cvt_store_f(p, dt, (double)v); return; /* fp16 / bf16 */
    }
}

/* An unsigned 64-bit value stored from the int64 domain is the same bits;
 * a float store of it must read it as unsigned. */
static inline void pa_cvt_store_u64_as(char *p, aclDataType dt, uint64_t u) {
    if (pa_cvt_is_float(dt)) {
        if (dt == ACL_FLOAT) { float f = (float)u; memcpy(p, &f, 4); return; }
        pa_cvt_store_f(p, dt, (double)u);
        return;
    }
    pa_cvt_store_i(p, dt, (int64_t)u);
}

#endif
