/* The plumbing kernels (elementwise.h): load / store per dtype, a strided N-D
 * walk with the dims merged where every operand allows, cut into fixed chunks. */
#include "kernels/elementwise/elementwise.h"

#include <math.h>
#include <string.h>

#include "common/pa_half.h"
#include "runtime/pa_threadpool.h"

bool pa_ew_dtype_ok(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT: case ACL_FLOAT16: case ACL_BF16: case ACL_DOUBLE: case ACL_BOOL: case ACL_INT8:
    case ACL_UINT8: case ACL_INT16: case ACL_UINT16: case ACL_INT32: case ACL_UINT32: case ACL_INT64:
    case ACL_UINT64:
        return true;
    default:
        return false;
    }
}

bool pa_ew_dtype_is_float(aclDataType dt) {
    return dt == ACL_FLOAT || dt == ACL_FLOAT16 || dt == ACL_BF16 || dt == ACL_DOUBLE;
}

static size_t esize(aclDataType dt) {
    switch (dt) {
    case ACL_DOUBLE: case ACL_INT64: case ACL_UINT64: return 8;
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    default: return 1;
    }
}

/* ---- loads ---- */

static double load_f(const char *p, aclDataType dt) {
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
static int64_t f_to_i(double v, double lo, double hi) {
    if (isnan(v)) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

static int64_t load_i(const char *p, aclDataType dt) {
    switch (dt) {
    case ACL_BOOL: return *(const uint8_t *)p != 0;
    case ACL_INT8: return *(const int8_t *)p;
    case ACL_UINT8: return *(const uint8_t *)p;
    case ACL_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case ACL_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case ACL_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case ACL_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case ACL_INT64: case ACL_UINT64: { int64_t v; memcpy(&v, p, 8); return v; }
    default: return f_to_i(load_f(p, dt), -0x1p63, 0x1p63 - 1024.0); /* float types */
    }
}

/* ---- stores ---- */

/* v rounded to fp32 toward zero, with the lowest bit set when inexact ("round
 * to odd"): rounding that to fp16 / bf16 gives the correctly rounded result. */
static float to_f32_odd(double v) {
    float f = (float)v;
    if (isnan(v) || (double)f == v) return f;
    if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f);
    uint32_t u;
    memcpy(&u, &f, 4);
    u |= 1u;
    memcpy(&f, &u, 4);
    return f;
}

static void store_i(char *p, aclDataType dt, int64_t v);

static void store_f(char *p, aclDataType dt, double v) {
    switch (dt) {
    case ACL_FLOAT: { float f = (float)v; memcpy(p, &f, 4); return; }
    case ACL_DOUBLE: memcpy(p, &v, 8); return;
    case ACL_FLOAT16: { uint16_t h = pa_f32_to_f16(to_f32_odd(v)); memcpy(p, &h, 2); return; }
    case ACL_BF16: { uint16_t h = pa_f32_to_bf16(to_f32_odd(v)); memcpy(p, &h, 2); return; }
    case ACL_BOOL: *(uint8_t *)p = v != 0; return;
    case ACL_INT8: store_i(p, dt, f_to_i(v, -128, 127)); return;
    case ACL_UINT8: store_i(p, dt, f_to_i(v, 0, 255)); return;
    case ACL_INT16: store_i(p, dt, f_to_i(v, -32768, 32767)); return;
    case ACL_UINT16: store_i(p, dt, f_to_i(v, 0, 65535)); return;
    case ACL_INT32: store_i(p, dt, f_to_i(v, -2147483648.0, 2147483647.0)); return;
    case ACL_UINT32: store_i(p, dt, f_to_i(v, 0, 4294967295.0)); return;
    case ACL_INT64: store_i(p, dt, f_to_i(v, -0x1p63, 0x1p63 - 1024.0)); return;
    case ACL_UINT64: {
        uint64_t u = isnan(v) || v <= 0 ? 0 : v >= 0x1p64 ? UINT64_MAX : (uint64_t)v;
        memcpy(p, &u, 8);
        return;
    }
    default: return;
    }
}

static void store_i(char *p, aclDataType dt, int64_t v) {
    const uint64_t u = (uint64_t)v; /* narrowing below keeps the low bits */
    switch (dt) {
    case ACL_BOOL: *(uint8_t *)p = v != 0; return;
    case ACL_INT8: case ACL_UINT8: *(uint8_t *)p = (uint8_t)u; return;
    case ACL_INT16: case ACL_UINT16: { uint16_t w = (uint16_t)u; memcpy(p, &w, 2); return; }
    case ACL_INT32: case ACL_UINT32: { uint32_t w = (uint32_t)u; memcpy(p, &w, 4); return; }
    case ACL_INT64: case ACL_UINT64: memcpy(p, &u, 8); return;
    default: store_f(p, dt, (double)v); return; /* float types */
    }
}

/* ---- one row of n elements (strides in bytes) ---- */

typedef struct row {
    char *o;
    const char *a, *b;
    int64_t so, sa, sb;
} row;

/* The conversions torch_npu makes most (fp32 <-> fp16 / bf16): the same results
 * as the general path (an fp32 value needs no rounding to odd), without it. */
static bool convert_fast(row r, int64_t n, aclDataType ta, aclDataType to) {
    if (ta == ACL_FLOAT && (to == ACL_FLOAT16 || to == ACL_BF16)) {
        const bool h = to == ACL_FLOAT16;
        for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa) {
            float f;
            memcpy(&f, r.a, 4);
            const uint16_t v = h ? pa_f32_to_f16(f) : pa_f32_to_bf16(f);
            memcpy(r.o, &v, 2);
        }
        return true;
    }
    if ((ta == ACL_FLOAT16 || ta == ACL_BF16) && to == ACL_FLOAT) {
        const bool h = ta == ACL_FLOAT16;
        for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa) {
            uint16_t v;
            memcpy(&v, r.a, 2);
            const float f = h ? pa_f16_to_f32(v) : pa_bf16_to_f32(v);
            memcpy(r.o, &f, 4);
        }
        return true;
    }
    return false;
}

static void run_row(const pa_ew_args *g, row r, int64_t n) {
    const aclDataType to = g->out.dtype, ta = g->a.dtype, tb = g->b.dtype;
    switch (g->op) {
    case PA_EW_CONVERT:
        if (to == ta) {
            const size_t es = esize(to);
            if (r.so == (int64_t)es && r.sa == (int64_t)es) {
                memmove(r.o, r.a, (size_t)n * es);
                return;
            }
            for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa) memcpy(r.o, r.a, es);
            return;
        }
        if (convert_fast(r, n, ta, to)) return;
        if (!pa_ew_dtype_is_float(ta) && !pa_ew_dtype_is_float(to)) {
            for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa) store_i(r.o, to, load_i(r.a, ta));
        } else {
            for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa) store_f(r.o, to, load_f(r.a, ta));
        }
        return;
    case PA_EW_FILL: {
        char v[8];
        if (g->int_math) store_i(v, to, g->value_i);
        else store_f(v, to, g->value_f);
        const size_t es = esize(to);
        for (int64_t i = 0; i < n; i++, r.o += r.so) memcpy(r.o, v, es);
        return;
    }
    case PA_EW_ADD:
        if (g->int_math) {
            for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa, r.b += r.sb) {
                const uint64_t s = (uint64_t)load_i(r.a, ta) + (uint64_t)g->alpha_i * (uint64_t)load_i(r.b, tb);
                store_i(r.o, to, (int64_t)s);
            }
        } else {
            for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa, r.b += r.sb) {
                store_f(r.o, to, load_f(r.a, ta) + g->alpha_f * load_f(r.b, tb));
            }
        }
        return;
    case PA_EW_ADDS:
        if (g->int_math) {
            for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa) {
                store_i(r.o, to, (int64_t)((uint64_t)load_i(r.a, ta) + (uint64_t)g->value_i));
            }
        } else {
            for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa) store_f(r.o, to, load_f(r.a, ta) + g->value_f);
        }
        return;
    case PA_EW_GT_T:
        if (g->int_math) {
            for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa, r.b += r.sb) {
                store_i(r.o, to, load_i(r.a, ta) > load_i(r.b, tb));
            }
        } else {
            for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa, r.b += r.sb) {
                store_i(r.o, to, load_f(r.a, ta) > load_f(r.b, tb));
            }
        }
        return;
    case PA_EW_GT:
        if (g->int_math) {
            for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa) store_i(r.o, to, load_i(r.a, ta) > g->value_i);
        } else {
            for (int64_t i = 0; i < n; i++, r.o += r.so, r.a += r.sa) store_i(r.o, to, load_f(r.a, ta) > g->value_f);
        }
        return;
    }
}

/* ---- the N-D walk ---- */

#define PA_EW_BLOCK 16384 /* elements of the inner dim per work item */
#define PA_EW_GRAIN_ELEMS 65536

typedef struct walk {
    const pa_ew_args *g; /* dims merged: inner dim last */
    int64_t nblocks;     /* blocks per inner row */
} walk;

static void walk_range(void *ctx, int64_t begin, int64_t end) {
    const walk *w = ctx;
    const pa_ew_args *g = w->g;
    const int32_t nd = g->ndim;
    const int64_t inner = g->dims[nd - 1];
    const int64_t so = (int64_t)esize(g->out.dtype), sa = (int64_t)esize(g->a.dtype),
                  sb = (int64_t)esize(g->b.dtype);
    for (int64_t item = begin; item < end; item++) {
        int64_t rowi = item / w->nblocks, blk = item % w->nblocks;
        int64_t oo = 0, oa = 0, ob = 0;
        for (int32_t d = nd - 2; d >= 0; d--) {
            const int64_t i = rowi % g->dims[d];
            rowi /= g->dims[d];
            oo += i * g->out.strides[d];
            oa += i * g->a.strides[d];
            ob += i * g->b.strides[d];
        }
        const int64_t i0 = blk * PA_EW_BLOCK;
        const int64_t n = inner - i0 < PA_EW_BLOCK ? inner - i0 : PA_EW_BLOCK;
        oo += i0 * g->out.strides[nd - 1];
        oa += i0 * g->a.strides[nd - 1];
        ob += i0 * g->b.strides[nd - 1];
        row r = {g->out.ptr + oo * so, g->a.ptr ? g->a.ptr + oa * sa : NULL, g->b.ptr ? g->b.ptr + ob * sb : NULL,
                 g->out.strides[nd - 1] * so, g->a.strides[nd - 1] * sa, g->b.strides[nd - 1] * sb};
        run_row(g, r, n);
    }
}

/* Drops size-1 dims and merges dim d into d+1 where every operand is
 * contiguous across them. Keeps at least one dim. */
static void merge_dims(pa_ew_args *g) {
    int32_t n = 0;
    pa_ew_args m = *g;
    for (int32_t d = 0; d < g->ndim; d++) {
        if (g->dims[d] == 1) continue;
        if (n > 0) {
            const int64_t len = g->dims[d];
            const bool ok = m.out.strides[n - 1] == g->out.strides[d] * len &&
                            m.a.strides[n - 1] == g->a.strides[d] * len &&
                            m.b.strides[n - 1] == g->b.strides[d] * len;
            if (ok) {
                m.dims[n - 1] *= len;
                m.out.strides[n - 1] = g->out.strides[d];
                m.a.strides[n - 1] = g->a.strides[d];
                m.b.strides[n - 1] = g->b.strides[d];
                continue;
            }
        }
        m.dims[n] = g->dims[d];
        m.out.strides[n] = g->out.strides[d];
        m.a.strides[n] = g->a.strides[d];
        m.b.strides[n] = g->b.strides[d];
        n++;
    }
    if (n == 0) {
        m.dims[0] = 1;
        m.out.strides[0] = m.a.strides[0] = m.b.strides[0] = 0;
        n = 1;
    }
    m.ndim = n;
    *g = m;
}

void pa_ew_run(const pa_ew_args *args) {
    pa_ew_args g = *args;
    for (int32_t d = 0; d < g.ndim; d++) {
        if (g.dims[d] == 0) return;
        if (g.a.ptr == NULL) g.a.strides[d] = 0;
        if (g.b.ptr == NULL) g.b.strides[d] = 0;
    }
    if (g.a.ptr == NULL) g.a.dtype = g.out.dtype;
    if (g.b.ptr == NULL) g.b.dtype = g.out.dtype;
    merge_dims(&g);
    const int64_t inner = g.dims[g.ndim - 1];
    int64_t rows = 1;
    for (int32_t d = 0; d < g.ndim - 1; d++) rows *= g.dims[d];
    walk w = {&g, (inner + PA_EW_BLOCK - 1) / PA_EW_BLOCK};
    const int64_t per_item = inner < PA_EW_BLOCK ? inner : PA_EW_BLOCK;
    int64_t grain = PA_EW_GRAIN_ELEMS / (per_item > 0 ? per_item : 1);
    if (grain < 1) grain = 1;
    pa_parallel_for(rows * w.nblocks, grain, walk_range, &w);
}

/* ---- sum ---- */

typedef struct sum_ctx {
    const pa_ew_sum_args *g;
    int64_t n_red; /* elements summed per output */
} sum_ctx;

static void sum_range(void *ctx, int64_t begin, int64_t end) {
    const sum_ctx *c = ctx;
    const pa_ew_sum_args *g = c->g;
    const int64_t sa = (int64_t)esize(g->a.dtype), so = (int64_t)esize(g->out.dtype);
    const bool fl = pa_ew_dtype_is_float(g->a.dtype) || pa_ew_dtype_is_float(g->out.dtype);
    for (int64_t o = begin; o < end; o++) {
        int64_t rest = o, oa = 0, oo = 0;
        for (int32_t d = g->n_outer - 1; d >= 0; d--) {
            const int64_t i = rest % g->dims[d];
            rest /= g->dims[d];
            oa += i * g->a.strides[d];
            oo += i * g->out.strides[d];
        }
        double sf = 0;
        uint64_t si = 0;
        for (int64_t k = 0; k < c->n_red; k++) {
            int64_t kr = k, off = oa;
            for (int32_t d = g->ndim - 1; d >= g->n_outer; d--) {
                const int64_t i = kr % g->dims[d];
                kr /= g->dims[d];
                off += i * g->a.strides[d];
            }
            const char *p = g->a.ptr + off * sa;
            if (fl) sf += load_f(p, g->a.dtype);
            else si += (uint64_t)load_i(p, g->a.dtype);
        }
        char *q = g->out.ptr + oo * so;
        if (fl) store_f(q, g->out.dtype, sf);
        else store_i(q, g->out.dtype, (int64_t)si);
    }
}

void pa_ew_sum(const pa_ew_sum_args *args) {
    int64_t n_out = 1, n_red = 1;
    for (int32_t d = 0; d < args->n_outer; d++) n_out *= args->dims[d];
    for (int32_t d = args->n_outer; d < args->ndim; d++) n_red *= args->dims[d];
    if (n_out == 0) return;
    sum_ctx c = {args, n_red};
    int64_t grain = n_red > 0 ? PA_EW_GRAIN_ELEMS / n_red : n_out;
    if (grain < 1) grain = 1;
    pa_parallel_for(n_out, grain, sum_range, &c);
}
