/* The map engine (map.h): tiles of the innermost dim, loaded into the
 * compute domain, run through the kernel, stored back. */
#include "kernels/map/map.h"

#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include "common/pa_common.h"
#include "kernels/map/map_cvt.h"
#include "kernels/map/map_isa.h"
#include "runtime/pa_threadpool.h"

static const int8_t k_nin[PA_K_COUNT] = {
#define PA_MAP_NIN(name, nin) nin,
    PA_MAP_KERNELS(PA_MAP_NIN)
#undef PA_MAP_NIN
};
static const char *const k_names[PA_K_COUNT] = {
#define PA_MAP_NAME(name, nin) #name,
    PA_MAP_KERNELS(PA_MAP_NAME)
#undef PA_MAP_NAME
};

int pa_map_kernel_nin(int kernel) { return kernel >= 0 && kernel < PA_K_COUNT ? k_nin[kernel] : -1; }
const char *pa_map_kernel_name(int kernel) { return kernel >= 0 && kernel < PA_K_COUNT ? k_names[kernel] : "?"; }

bool pa_map_has_kernel(int kernel, pa_map_dom dom) {
    if (kernel < 0 || kernel >= PA_K_COUNT) return false;
    switch (dom) {
    case PA_DOM_F32: return pa_map_ops_scalar.k32[kernel] != NULL;
    case PA_DOM_F64: return pa_map_f64_tab[kernel] != NULL;
    case PA_DOM_I64: return pa_map_i64_tab[kernel] != NULL;
    default: return false;
    }
}

pa_map_dom pa_map_dom_of(aclDataType res) {
    switch (res) {
    case ACL_FLOAT: case ACL_FLOAT16: case ACL_BF16: return PA_DOM_F32;
    case ACL_DOUBLE: return PA_DOM_F64;
    default: return PA_DOM_I64;
    }
}

static const pa_map_isa_ops *ops_of(pa_isa isa) {
#if defined(PA_HAVE_X86_KERNELS)
    if (isa >= PA_ISA_AVX512) return &pa_map_ops_avx512;
    if (isa >= PA_ISA_AVX2) return &pa_map_ops_avx2;
#else
    (void)isa;
#endif
    return &pa_map_ops_scalar;
}

const pa_map_f32_fn *pa_map_f32_table(pa_isa isa) { return ops_of(isa)->k32; }

/* ---- plan time ---- */

void pa_map_simplify(pa_map_args *a) {
    int32_t nd = 0;
    int64_t dims[PA_MAP_MAX_DIMS], st[PA_MAP_MAX_IN + 1][PA_MAP_MAX_DIMS];
    pa_map_operand *ops[PA_MAP_MAX_IN + 1] = {&a->out, &a->in[0], &a->in[1], &a->in[2]};
    const int nops = 1 + a->nin;
    bool empty = false;
    for (int32_t d = 0; d < a->ndim; d++) {
        if (a->dims[d] == 0) empty = true;
        if (a->dims[d] == 1) continue;
        /* insertion by the output's stride, largest first (stable) */
        int32_t j = nd++;
        while (j > 0 && st[0][j - 1] < ops[0]->strides[d]) {
            dims[j] = dims[j - 1];
            for (int k = 0; k < nops; k++) st[k][j] = st[k][j - 1];
            j--;
        }
        dims[j] = a->dims[d];
        for (int k = 0; k < nops; k++) st[k][j] = ops[k]->is_const ? 0 : ops[k]->strides[d];
    }
    if (empty) { /* nothing to do: keep one dim of size 0 */
        a->ndim = 1;
        a->dims[0] = 0;
        return;
    }
    /* merge d into d+1 where every operand walks both as one */
    int32_t m = 0;
    for (int32_t d = 0; d < nd; d++) {
        if (m > 0) {
            bool merge = true;
            for (int k = 0; k < nops && merge; k++) merge = st[k][m - 1] == st[k][d] * dims[d];
            if (merge) {
                dims[m - 1] *= dims[d];
                for (int k = 0; k < nops; k++) st[k][m - 1] = st[k][d];
                continue;
            }
        }
        dims[m] = dims[d];
        for (int k = 0; k < nops; k++) st[k][m] = st[k][d];
        m++;
    }
    if (m == 0) {
        m = 1;
        dims[0] = 1;
        for (int k = 0; k < nops; k++) st[k][0] = 0;
    }
    a->ndim = m;
    for (int32_t d = 0; d < m; d++) {
        a->dims[d] = dims[d];
        for (int k = 0; k < nops; k++) ops[k]->strides[d] = st[k][d];
    }
    for (int32_t d = m; d < PA_MAP_MAX_DIMS; d++) {
        a->dims[d] = 1;
        for (int k = 0; k < nops; k++) ops[k]->strides[d] = 0;
    }
}

/* ---- loads into the domain ---- */

static float ld1_f32(const char *p, aclDataType dt, aclDataType via) {
    switch (dt) {
    case ACL_FLOAT: { float v; memcpy(&v, p, 4); return v; }
    case ACL_FLOAT16: { uint16_t h; memcpy(&h, p, 2); return pa_f16_to_f32(h); }
    case ACL_BF16: { uint16_t h; memcpy(&h, p, 2); return pa_bf16_to_f32(h); }
    default: break;
    }
    char tmp[8] = {0};
    if (via == ACL_FLOAT16 || via == ACL_BF16) {
        pa_cvt_store_f(tmp, via, dt == ACL_DOUBLE ? pa_cvt_load_f(p, dt) : (double)pa_cvt_load_i(p, dt));
        return (float)pa_cvt_load_f(tmp, via);
    }
    if (dt == ACL_DOUBLE) return (float)pa_cvt_load_f(p, dt);
    if (dt == ACL_UINT64) { uint64_t u; memcpy(&u, p, 8); return (float)u; }
    return (float)pa_cvt_load_i(p, dt); /* one rounding */
}

static double ld1_f64(const char *p, aclDataType dt) { return pa_cvt_load_f(p, dt); }

static int64_t ld1_i64(const char *p, const pa_map_operand *o) {
    int64_t v;
    if (o->via != ACL_DT_UNDEFINED && o->via != o->dtype) {
        /* cast to the compute dtype first (saturating from floats, wrapping from integers) */
        char tmp[8] = {0};
        if (pa_cvt_is_float(o->dtype)) pa_cvt_store_f(tmp, o->via, pa_cvt_load_f(p, o->dtype));
        else pa_cvt_store_i(tmp, o->via, pa_cvt_load_i(p, o->dtype));
        v = pa_cvt_load_i(tmp, o->via);
    } else {
        v = pa_cvt_load_i(p, o->dtype);
    }
    if (o->u64_order) v = (int64_t)((uint64_t)v ^ 0x8000000000000000ull);
    return v;
}

/* The tile of input `o` at p (n elements, stride s): a pointer to n values of
 * the domain, `buf` when a conversion or gather was needed. */
static const void *load_tile(const pa_map_args *a, const pa_map_isa_ops *ops, const pa_map_operand *o,
                             const char *p, int64_t s, int64_t n, void *buf) {
    const size_t es = pa_cvt_size(o->dtype);
    switch ((pa_map_dom)a->dom) {
    case PA_DOM_F32: {
        float *b = buf;
        const bool direct_dt = o->via == ACL_DT_UNDEFINED || o->via == o->dtype || o->via == ACL_FLOAT;
        if (s == 1 && direct_dt) {
            if (o->dtype == ACL_FLOAT) return p;
            if (o->dtype == ACL_FLOAT16) { ops->h2f(b, (const uint16_t *)p, n); return b; }
            if (o->dtype == ACL_BF16) { ops->b2f(b, (const uint16_t *)p, n); return b; }
        }
        if (s == 0) {
            const float v = ld1_f32(p, o->dtype, o->via);
            for (int64_t i = 0; i < n; i++) b[i] = v;
            return b;
        }
        if (o->dtype == ACL_FLOAT && direct_dt) {
            const float *f = (const float *)p;
            for (int64_t i = 0; i < n; i++) b[i] = f[i * s];
            return b;
        }
        for (int64_t i = 0; i < n; i++) b[i] = ld1_f32(p + i * s * (int64_t)es, o->dtype, o->via);
        return b;
    }
    case PA_DOM_F64: {
        double *b = buf;
        if (s == 1 && o->dtype == ACL_DOUBLE) return p;
        if (s == 0) {
            const double v = ld1_f64(p, o->dtype);
            for (int64_t i = 0; i < n; i++) b[i] = v;
            return b;
        }
        for (int64_t i = 0; i < n; i++) b[i] = ld1_f64(p + i * s * (int64_t)es, o->dtype);
        return b;
    }
    default: {
        int64_t *b = buf;
        if (a->raw) {
            const size_t es = pa_cvt_size(o->dtype);
            if (s == 1 && es == 8) return p;
            for (int64_t i = 0; i < n; i++) {
                uint64_t v = 0;
                memcpy(&v, p + i * s * (int64_t)es, es);
                b[i] = (int64_t)v;
            }
            return b;
        }
        if (s == 1 && (o->dtype == ACL_INT64 || o->dtype == ACL_UINT64) && !o->u64_order &&
            (o->via == ACL_DT_UNDEFINED || o->via == ACL_INT64 || o->via == ACL_UINT64)) {
            return p;
        }
        if (s == 0) {
            const int64_t v = ld1_i64(p, o);
            for (int64_t i = 0; i < n; i++) b[i] = v;
            return b;
        }
        for (int64_t i = 0; i < n; i++) b[i] = ld1_i64(p + i * s * (int64_t)es, o);
        return b;
    }
    }
}

static void fill_const(const pa_map_args *a, const pa_map_operand *o, void *buf, int64_t n) {
    switch ((pa_map_dom)a->dom) {
    case PA_DOM_F32: {
        float *b = buf;
        float v = (float)o->value_d;
        if (o->via == ACL_FLOAT16 || o->via == ACL_BF16) {
            char tmp[8] = {0};
            pa_cvt_store_f(tmp, o->via, o->value_d);
            v = (float)pa_cvt_load_f(tmp, o->via);
        }
        for (int64_t i = 0; i < n; i++) b[i] = v;
        return;
    }
    case PA_DOM_F64: {
        double *b = buf;
        for (int64_t i = 0; i < n; i++) b[i] = o->value_d;
        return;
    }
    default: {
        int64_t *b = buf;
        int64_t v = o->value_i;
        if (o->u64_order) v = (int64_t)((uint64_t)v ^ 0x8000000000000000ull);
        for (int64_t i = 0; i < n; i++) b[i] = v;
        return;
    }
    }
}

/* ---- stores from the domain ---- */

static bool out_direct(const pa_map_args *a, int64_t s) {
    const pa_map_operand *o = &a->out;
    if (s != 1) return false;
    const bool res_ok = a->res == o->dtype || a->res == ACL_DT_UNDEFINED;
    switch ((pa_map_dom)a->dom) {
    case PA_DOM_F32: return o->dtype == ACL_FLOAT && (res_ok || a->res == ACL_FLOAT);
    case PA_DOM_F64: return o->dtype == ACL_DOUBLE && (res_ok || a->res == ACL_DOUBLE);
    default:
        if (a->raw) return pa_cvt_size(o->dtype) == 8;
        return (o->dtype == ACL_INT64 || o->dtype == ACL_UINT64) && !o->u64_order && !a->u64_values &&
               (res_ok || a->res == ACL_INT64 || a->res == ACL_UINT64);
    }
}

static void store_tile(const pa_map_args *a, const pa_map_isa_ops *ops, char *p, int64_t s, const void *buf,
                       int64_t n) {
    const pa_map_operand *o = &a->out;
    const aclDataType dt = o->dtype;
    const size_t es = pa_cvt_size(dt);
    switch ((pa_map_dom)a->dom) {
    case PA_DOM_F32: {
        const float *b = buf;
        const bool round16 = (a->res == ACL_FLOAT16 || a->res == ACL_BF16) && a->res != dt;
        if (s == 1 && !round16) {
            if (dt == ACL_FLOAT16) { ops->f2h((uint16_t *)p, b, n); return; }
            if (dt == ACL_BF16) { ops->f2b((uint16_t *)p, b, n); return; }
            if (dt == ACL_FLOAT) { memcpy(p, b, (size_t)n * 4); return; }
        }
        for (int64_t i = 0; i < n; i++) {
            float v = b[i];
            if (round16) {
                char tmp[8] = {0};
                pa_cvt_store_f(tmp, a->res, v);
                v = (float)pa_cvt_load_f(tmp, a->res);
            }
            char *q = p + i * s * (int64_t)es;
            if (dt == ACL_FLOAT) memcpy(q, &v, 4);
            else pa_cvt_store_f(q, dt, v);
        }
        return;
    }
    case PA_DOM_F64: {
        const double *b = buf;
        const bool round = a->res != ACL_DT_UNDEFINED && a->res != ACL_DOUBLE && a->res != dt;
        for (int64_t i = 0; i < n; i++) {
            double v = b[i];
            if (round) {
                char tmp[8] = {0};
                pa_cvt_store_f(tmp, a->res, v);
                v = pa_cvt_load_f(tmp, a->res);
            }
            pa_cvt_store_f(p + i * s * (int64_t)es, dt, v);
        }
        return;
    }
    default: {
        const int64_t *b = buf;
        if (a->raw) {
            for (int64_t i = 0; i < n; i++) {
                const uint64_t v = (uint64_t)b[i];
                memcpy(p + i * s * (int64_t)es, &v, es);
            }
            return;
        }
        const bool unbias = o->u64_order;
        const bool as_u64 = a->u64_values;
        /* an integer or BOOL result narrower than out is wrapped to its width first */
        const bool wrap = a->res != ACL_DT_UNDEFINED && a->res != dt && a->res != ACL_INT64 && a->res != ACL_UINT64 &&
                          !pa_cvt_is_float(a->res);
        for (int64_t i = 0; i < n; i++) {
            int64_t v = b[i];
            if (unbias) v = (int64_t)((uint64_t)v ^ 0x8000000000000000ull);
            if (wrap) {
                char tmp[8] = {0};
                pa_cvt_store_i(tmp, a->res, v);
                v = pa_cvt_load_i(tmp, a->res);
            }
            char *q = p + i * s * (int64_t)es;
            if (as_u64) pa_cvt_store_u64_as(q, dt, (uint64_t)v);
            else pa_cvt_store_i(q, dt, v);
        }
        return;
    }
    }
}

/* ---- the walk ---- */

typedef struct run_ctx {
    const pa_map_args *a;
    const pa_map_isa_ops *ops;
    pa_map_kp kp;
    int64_t n0, tile, ntile; /* inner length, tile length, tiles per row */
    pa_map_f16_fn fused;     /* same-dtype fp16 / bf16 work: the fused kernel, else NULL */
} run_ctx;

/* The fused 16-bit kernel when every operand is that dtype (16-bit constants
 * included), contiguous or broadcast along the inner dim, and the result is it. */
static pa_map_f16_fn fused_kernel(const pa_map_args *a, const pa_map_isa_ops *ops) {
    const aclDataType d = a->out.dtype;
    if (a->dom != PA_DOM_F32 || (d != ACL_FLOAT16 && d != ACL_BF16) || a->res != d) return NULL;
    const int nd = a->ndim;
    if (a->out.strides[nd - 1] != 1) return NULL;
    for (int j = 0; j < a->nin; j++) {
        const pa_map_operand *o = &a->in[j];
        const bool via_ok = o->via == ACL_DT_UNDEFINED || o->via == d;
        if (o->is_const) {
            if (!via_ok && o->via != d) return NULL;
            continue;
        }
        if (o->dtype != d || !via_ok) return NULL;
        if (o->strides[nd - 1] != 1 && o->strides[nd - 1] != 0) return NULL;
    }
    const pa_map_f16_fn *tab = d == ACL_FLOAT16 ? ops->k16 : ops->kbf;
    return tab[a->kernel];
}

static uint16_t half_bits(aclDataType d, float v) { return d == ACL_FLOAT16 ? pa_f32_to_f16(v) : pa_f32_to_bf16(v); }

/* The fused path of one chunk: direct pointers, 16-bit buffers for constants
 * and broadcast operands. */
static void run_range_fused(const run_ctx *c, int64_t begin, int64_t end) {
    const pa_map_args *a = c->a;
    const int nd = a->ndim;
    const aclDataType d = a->out.dtype;
    uint16_t bufs[PA_MAP_MAX_IN][PA_MAP_TILE];
    const uint16_t *src[PA_MAP_MAX_IN] = {NULL, NULL, NULL};
    /* a broadcast operand's buffer holds `filled` copies of `held` (refilled when either falls short) */
    uint16_t held[PA_MAP_MAX_IN] = {0, 0, 0};
    int64_t filled[PA_MAP_MAX_IN] = {0, 0, 0};
    for (int j = 0; j < a->nin; j++) {
        if (!a->in[j].is_const) continue;
        float v = (float)a->in[j].value_d;
        const uint16_t h = half_bits(d, v);
        for (int64_t i = 0; i < c->tile; i++) bufs[j][i] = h;
        src[j] = bufs[j];
    }
    for (int64_t u = begin; u < end; u++) {
        int64_t row = u / c->ntile;
        const int64_t start = (u % c->ntile) * c->tile;
        const int64_t n = PA_MIN(c->tile, c->n0 - start);
        int64_t off[PA_MAP_MAX_IN + 1] = {0, 0, 0, 0};
        for (int dd = nd - 2; dd >= 0; dd--) {
            const int64_t idx = row % a->dims[dd];
            row /= a->dims[dd];
            off[0] += idx * a->out.strides[dd];
            for (int j = 0; j < a->nin; j++) off[j + 1] += idx * a->in[j].strides[dd];
        }
        for (int j = 0; j < a->nin; j++) {
            const pa_map_operand *o = &a->in[j];
            if (o->is_const) continue;
            const int64_t s = o->strides[nd - 1];
            const uint16_t *p = (const uint16_t *)o->ptr + off[j + 1] + start * s;
            if (s == 1) {
                src[j] = p;
            } else {
                const uint16_t v = *p;
                if (v != held[j] || filled[j] < n) {
                    for (int64_t i = 0; i < n; i++) bufs[j][i] = v;
                    held[j] = v;
                    filled[j] = n;
                }
                src[j] = bufs[j];
            }
        }
        c->fused((uint16_t *)a->out.ptr + off[0] + start, src, n, &c->kp);
    }
}

static void run_kernel(const run_ctx *c, void *o, const void *const *in, int64_t n) {
    const pa_map_args *a = c->a;
    switch ((pa_map_dom)a->dom) {
    case PA_DOM_F32: c->ops->k32[a->kernel](o, (const float *const *)in, n, &c->kp); return;
    case PA_DOM_F64: pa_map_f64_tab[a->kernel](o, (const double *const *)in, n, &c->kp); return;
    default: pa_map_i64_tab[a->kernel](o, (const int64_t *const *)in, n, &c->kp); return;
    }
}

static void run_range(void *ctx, int64_t begin, int64_t end) {
    const run_ctx *c = ctx;
    if (c->fused != NULL) {
        run_range_fused(c, begin, end);
        return;
    }
    const pa_map_args *a = c->a;
    const int nd = a->ndim;
    /* 32 KiB of stack: no allocation can fail. The buffers are staggered by 320 bytes so that
     * streams through them do not alias modulo 4 KiB (stalled loads behind unrelated stores). */
    enum { BUF_STRIDE = PA_MAP_TILE * 8 + 320 };
    alignas(64) char scratch[(PA_MAP_MAX_IN + 1) * BUF_STRIDE];
    void *bufs[PA_MAP_MAX_IN + 1];
    for (int k = 0; k <= PA_MAP_MAX_IN; k++) bufs[k] = scratch + (size_t)k * BUF_STRIDE;
    const void *src[PA_MAP_MAX_IN] = {NULL, NULL, NULL};
    for (int j = 0; j < a->nin; j++) {
        if (a->in[j].is_const) {
            fill_const(a, &a->in[j], bufs[j + 1], c->tile);
            src[j] = bufs[j + 1];
        }
    }
    const size_t oes = pa_cvt_size(a->out.dtype);
    for (int64_t u = begin; u < end; u++) {
        int64_t row = u / c->ntile;
        const int64_t start = (u % c->ntile) * c->tile;
        const int64_t n = PA_MIN(c->tile, c->n0 - start);
        /* offsets of the row: the outer dims, last varying fastest */
        int64_t off[PA_MAP_MAX_IN + 1] = {0, 0, 0, 0};
        for (int d = nd - 2; d >= 0; d--) {
            const int64_t idx = row % a->dims[d];
            row /= a->dims[d];
            off[0] += idx * a->out.strides[d];
            for (int j = 0; j < a->nin; j++) off[j + 1] += idx * a->in[j].strides[d];
        }
        for (int j = 0; j < a->nin; j++) {
            const pa_map_operand *o = &a->in[j];
            if (o->is_const) continue;
            const int64_t s = o->strides[nd - 1];
            const char *p = o->ptr + (off[j + 1] + start * s) * (int64_t)pa_cvt_size(o->dtype);
            src[j] = load_tile(a, c->ops, o, p, s, n, bufs[j + 1]);
        }
        const int64_t so = a->out.strides[nd - 1];
        char *po = a->out.ptr + (off[0] + start * so) * (int64_t)oes;
        if (out_direct(a, so)) {
            run_kernel(c, po, src, n);
        } else {
            run_kernel(c, bufs[0], src, n);
            store_tile(a, c->ops, po, so, bufs[0], n);
        }
    }
}

void pa_map_run(const pa_map_args *a) {
    if (a->ndim <= 0 || a->dims[a->ndim - 1] == 0) return;
    int64_t outer = 1;
    for (int d = 0; d < a->ndim - 1; d++) outer *= a->dims[d];
    if (outer == 0) return;
    run_ctx c;
    c.a = a;
    c.ops = ops_of(pa_cpu_isa());
    for (int k = 0; k < 4; k++) {
        c.kp.d[k] = a->p[k];
        c.kp.f[k] = (float)a->p[k];
        c.kp.i[k] = a->pi[k];
    }
    c.n0 = a->dims[a->ndim - 1];
    c.tile = c.n0 < PA_MAP_TILE ? c.n0 : PA_MAP_TILE;
    c.fused = fused_kernel(a, c.ops);
    c.ntile = (c.n0 + c.tile - 1) / c.tile;
    const int64_t units = outer * c.ntile;
    /* chunks of about 64 Ki elements, whatever the thread count */
    int64_t grain = (65536 + c.tile - 1) / c.tile;
    if (grain < 1) grain = 1;
    if (units <= grain) {
        run_range(&c, 0, units);
        return;
    }
    pa_parallel_for(units, grain, run_range, &c);
}
