/* The reduction walk (reduce.h): contiguous runs through the lane kernels,
 * strided reductions accumulated across a tile of outputs, the rest element
 * by element; chunks of outputs (or of one output's blocks) over the pool. */
#include "kernels/reduce/reduce.h"
#include "kernels/reduce/reduce_walk.h"

#include <math.h>
#include <stdalign.h>
#include <string.h>

#include "common/pa_common.h"
#include "kernels/map/map_cvt.h"
#include "kernels/map/map_isa.h"
#include "runtime/pa_threadpool.h"

const pa_red_lanes *pa_red_lanes_scalar(void);
#if defined(PA_HAVE_X86_KERNELS)
const pa_red_lanes *pa_red_lanes_avx2(void);
const pa_red_lanes *pa_red_lanes_avx512(void);
#endif

const pa_red_lanes *pa_red_lanes_of(pa_isa isa) {
#if defined(PA_HAVE_X86_KERNELS)
    if (isa >= PA_ISA_AVX512) return pa_red_lanes_avx512();
    if (isa >= PA_ISA_AVX2) return pa_red_lanes_avx2();
#else
    (void)isa;
#endif
    return pa_red_lanes_scalar();
}

static const pa_map_isa_ops *cvt_ops(pa_isa isa) {
#if defined(PA_HAVE_X86_KERNELS)
    if (isa >= PA_ISA_AVX512) return &pa_map_ops_avx512;
    if (isa >= PA_ISA_AVX2) return &pa_map_ops_avx2;
#else
    (void)isa;
#endif
    return &pa_map_ops_scalar;
}

/* ---- plan time ---- */

void pa_red_simplify(pa_red_args *a) {
    /* reduced dims: drop size 1, order by input stride (largest first), merge contiguous */
    int64_t d[PA_RED_MAX_DIMS], s[PA_RED_MAX_DIMS];
    int32_t n = 0;
    for (int32_t i = 0; i < a->nred; i++) {
        if (a->red_dims[i] == 1) continue;
        int32_t j = n++;
        while (j > 0 && s[j - 1] < a->red_in[i]) {
            d[j] = d[j - 1];
            s[j] = s[j - 1];
            j--;
        }
        d[j] = a->red_dims[i];
        s[j] = a->red_in[i];
    }
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        if (m > 0 && s[m - 1] == s[i] * d[i]) {
            d[m - 1] *= d[i];
            s[m - 1] = s[i];
            continue;
        }
        d[m] = d[i];
        s[m] = s[i];
        m++;
    }
    a->nred = m;
    for (int32_t i = 0; i < m; i++) a->red_dims[i] = d[i], a->red_in[i] = s[i];
    /* kept dims: drop size 1, merge where input, output and index walk them as one */
    int32_t k = 0;
    for (int32_t i = 0; i < a->nkeep; i++) {
        if (a->keep_dims[i] == 1) continue;
        if (k > 0 && a->keep_in[k - 1] == a->keep_in[i] * a->keep_dims[i] &&
            a->keep_out[k - 1] == a->keep_out[i] * a->keep_dims[i] &&
            a->keep_idx[k - 1] == a->keep_idx[i] * a->keep_dims[i]) {
            a->keep_dims[k - 1] *= a->keep_dims[i];
            a->keep_in[k - 1] = a->keep_in[i];
            a->keep_out[k - 1] = a->keep_out[i];
            a->keep_idx[k - 1] = a->keep_idx[i];
            continue;
        }
        a->keep_dims[k] = a->keep_dims[i];
        a->keep_in[k] = a->keep_in[i];
        a->keep_out[k] = a->keep_out[i];
        a->keep_idx[k] = a->keep_idx[i];
        k++;
    }
    a->nkeep = k;
}

/* ---- element access ---- */

/* Whether the float path may read fp32 directly / through the fast converters. */
static bool f32_source(const pa_red_args *a) {
    const bool novia = a->via == ACL_DT_UNDEFINED || a->via == a->in_dtype || a->via == ACL_FLOAT;
    return novia && (a->in_dtype == ACL_FLOAT || a->in_dtype == ACL_FLOAT16 || a->in_dtype == ACL_BF16);
}
static bool f64_source(const pa_red_args *a) {
    return a->in_dtype == ACL_DOUBLE && (a->via == ACL_DT_UNDEFINED || a->via == ACL_DOUBLE);
}

/* n contiguous elements at p as fp32 (buf when converted). */
static const float *as_f32(const pa_red_args *a, const pa_map_isa_ops *ops, const char *p, int64_t n,
                           float *buf) {
    if (a->in_dtype == ACL_FLOAT && f32_source(a)) return (const float *)p;
    if (a->in_dtype == ACL_FLOAT16 && f32_source(a)) ops->h2f(buf, (const uint16_t *)p, n);
    else if (a->in_dtype == ACL_BF16 && f32_source(a)) ops->b2f(buf, (const uint16_t *)p, n);
    else {
        const size_t es = pa_cvt_size(a->in_dtype);
        for (int64_t i = 0; i < n; i++) buf[i] = (float)pa_red_load_f(a, p + i * (int64_t)es);
    }
    return buf;
}

/* ---- one output ---- */

typedef struct red_ctx {
    const pa_red_args *a;
    const pa_red_lanes *lanes;
    const pa_map_isa_ops *ops;
    int64_t nout, count; /* outputs, elements per output */
    int64_t run, nruns;  /* the contiguous run of the last reduced dim (inner mode) */
    bool inner;
} red_ctx;

/* The lane sum of a block of n contiguous elements. */
static double block_sum(const red_ctx *c, const char *p, int64_t n) {
    const pa_red_args *a = c->a;
    const bool sq = a->kind == PA_RED_NORM && a->p == 2, ab = a->kind == PA_RED_NORM && a->p == 1;
    if (f32_source(a) && a->in_dtype == ACL_BF16) {
        const uint16_t *x = (const uint16_t *)p;
        return sq ? c->lanes->sumsq_bf16(x, n) : ab ? c->lanes->sumabs_bf16(x, n) : c->lanes->sum_bf16(x, n);
    }
    if (f32_source(a)) {
        alignas(64) float buf[PA_RED_BLOCK];
        const float *x = as_f32(a, c->ops, p, n, buf);
        return sq ? c->lanes->sumsq_f32(x, n) : ab ? c->lanes->sumabs_f32(x, n) : c->lanes->sum_f32(x, n);
    }
    if (f64_source(a) && !sq && !ab) return c->lanes->sum_f64((const double *)p, n);
    /* any other source: its values in double (squared / absolute for the norms), then the same lanes */
    alignas(64) double dbuf[PA_RED_BLOCK];
    const size_t es = pa_cvt_size(a->in_dtype);
    for (int64_t i = 0; i < n; i++) {
        const double v = pa_red_load_f(a, p + i * (int64_t)es);
        dbuf[i] = sq ? v * v : ab ? fabs(v) : v;
    }
    return c->lanes->sum_f64(dbuf, n);
}

/* The kinds that run through the lane kernels (float sums and the 1- and 2-norms). */
static bool lane_kind(const pa_red_args *a) {
    if (a->int_acc) return false;
    if (a->kind == PA_RED_SUM || a->kind == PA_RED_MEAN) return true;
    return a->kind == PA_RED_NORM && (a->p == 2 || a->p == 1);
}

/* The reduction of output o by walking elements one at a time (every kind). */
typedef struct red_val {
    double f;
    int64_t i, idx;
    bool any;
} red_val;

static void fold_one(const pa_red_args *a, red_val *v, const char *p, int64_t r) {
    switch ((pa_red_kind)a->kind) {
    case PA_RED_SUM:
    case PA_RED_MEAN:
        if (a->int_acc) v->i = (int64_t)((uint64_t)v->i + (uint64_t)pa_red_load_i(a, p));
        else v->f = v->f + pa_red_load_f(a, p);
        break;
    case PA_RED_MAX:
    case PA_RED_ARGMAX:
    case PA_RED_MIN:
    case PA_RED_ARGMIN: {
        const bool mx = a->kind == PA_RED_MAX || a->kind == PA_RED_ARGMAX;
        if (a->int_acc) {
            const int64_t x = pa_red_load_i(a, p);
            if (!v->any || (mx ? x > v->i : x < v->i)) v->i = x, v->idx = r, v->any = true;
        } else {
            const double x = pa_red_load_f(a, p);
            if (!v->any || (v->f == v->f && (x != x || (mx ? x > v->f : x < v->f)))) {
                v->f = x, v->idx = r, v->any = true;
            }
        }
        break;
    }
    case PA_RED_ANY: v->any = v->any || pa_red_load_f(a, p) != 0; break;
    case PA_RED_ALL: v->any = v->any && pa_red_load_f(a, p) != 0; break;
    case PA_RED_NORM: {
        const double x = fabs(pa_red_load_f(a, p));
        if (isinf(a->p)) {
            if (!v->any || (v->f == v->f && (x != x || (a->p > 0 ? x > v->f : x < v->f)))) v->f = x, v->any = true;
        } else if (a->p == 0) {
            v->f += x != 0;
        } else if (a->p == 1) {
            v->f = v->f + x;
        } else if (a->p == 2) {
            v->f = v->f + x * x;
        } else {
            v->f = v->f + pow(x, a->p);
        }
        break;
    }
    case PA_RED_PROD:
    case PA_RED_LOGSUMEXP:
    case PA_RED_VAR:
    case PA_RED_DOT:
    case PA_RED_GLU:
    case PA_RED_BCE:
    case PA_RED_LOSS: break; /* reduce_stat.c */
    }
}

static void finish(const red_ctx *c, red_val *v, int64_t oo, int64_t io) {
    const pa_red_args *a = c->a;
    switch ((pa_red_kind)a->kind) {
    case PA_RED_SUM:
        if (a->int_acc) pa_cvt_store_i(a->out + oo * (int64_t)pa_cvt_size(a->out_dtype), a->out_dtype, v->i);
        else pa_cvt_store_f(a->out + oo * (int64_t)pa_cvt_size(a->out_dtype), a->out_dtype, v->f);
        return;
    case PA_RED_MEAN: {
        const double s = a->int_acc ? (double)v->i : v->f;
        const double m = s / (double)c->count;
        char *q = a->out + oo * (int64_t)pa_cvt_size(a->out_dtype);
        if (a->int_acc) pa_cvt_store_i(q, a->out_dtype, (int64_t)m); /* integer means truncate */
        else pa_cvt_store_f(q, a->out_dtype, m);
        return;
    }
    case PA_RED_NORM: {
        double r = v->f;
        if (!isinf(a->p) && a->p != 0 && a->p != 1) r = a->p == 2 ? sqrt(r) : pow(r, 1.0 / a->p);
        pa_cvt_store_f(a->out + oo * (int64_t)pa_cvt_size(a->out_dtype), a->out_dtype, r);
        return;
    }
    case PA_RED_ANY:
    case PA_RED_ALL:
        pa_cvt_store_i(a->out + oo * (int64_t)pa_cvt_size(a->out_dtype), a->out_dtype, v->any ? 1 : 0);
        return;
    default:
        if (a->want_values) {
            char *q = a->out + oo * (int64_t)pa_cvt_size(a->out_dtype);
            if (a->int_acc) pa_cvt_store_i(q, a->out_dtype, v->i);
            else pa_cvt_store_f(q, a->out_dtype, v->f);
        }
        if (a->want_index) pa_cvt_store_i(a->idx + io * (int64_t)pa_cvt_size(a->idx_dtype), a->idx_dtype, v->idx);
        return;
    }
}

static void init_val(const pa_red_args *a, red_val *v) {
    memset(v, 0, sizeof *v);
    if (a->kind == PA_RED_ALL) v->any = true;
}

/* Inner mode: output o's value from its contiguous runs, block by block. */
static double inner_sum(const red_ctx *c, int64_t base) {
    const pa_red_args *a = c->a;
    const size_t es = pa_cvt_size(a->in_dtype);
    double total = 0;
    for (int64_t r = 0; r < c->nruns; r++) {
        const char *p = a->in + (base + pa_red_elem_offset(a, r * c->run)) * (int64_t)es;
        for (int64_t b = 0; b < c->run; b += PA_RED_BLOCK) {
            total = total + block_sum(c, p + b * (int64_t)es, PA_MIN(PA_RED_BLOCK, c->run - b));
        }
    }
    return total;
}

static void do_output(const red_ctx *c, int64_t o) {
    const pa_red_args *a = c->a;
    int64_t ib, ob, xb;
    pa_red_out_offsets(a, o, &ib, &ob, &xb);
    red_val v;
    init_val(a, &v);
    if (c->inner) {
        v.f = inner_sum(c, ib);
    } else {
        const size_t es = pa_cvt_size(a->in_dtype);
        for (int64_t r = 0; r < c->count; r++) fold_one(a, &v, a->in + (ib + pa_red_elem_offset(a, r)) * (int64_t)es, r);
    }
    finish(c, &v, ob, xb);
}

static void outputs_range(void *ctx, int64_t begin, int64_t end) {
    const red_ctx *c = ctx;
    for (int64_t o = begin; o < end; o++) do_output(c, o);
}

/* Outer mode: a tile of outputs contiguous in the input (the last kept dim,
 * stride 1) accumulates the reduced rows in index order, each row streamed
 * once per tile (a tile is a chunk of columns; tiles run in parallel). */
#define OUTER_TILE 2048
static void outer_range(void *ctx, int64_t begin, int64_t end) {
    const red_ctx *c = ctx;
    const pa_red_args *a = c->a;
    const int64_t m = a->keep_dims[a->nkeep - 1];
    const int64_t tiles = (m + OUTER_TILE - 1) / OUTER_TILE;
    const size_t es = pa_cvt_size(a->in_dtype);
    alignas(64) double acc[OUTER_TILE]; /* 40 KiB of stack: nothing to allocate, nothing to fail */
    alignas(64) double dbuf[OUTER_TILE];
    alignas(64) float buf[OUTER_TILE];
    for (int64_t u = begin; u < end; u++) {
        const int64_t row = u / tiles, t0 = (u % tiles) * OUTER_TILE;
        const int64_t n = PA_MIN(OUTER_TILE, m - t0);
        int64_t ib, ob, xb;
        pa_red_out_offsets(a, row * m + t0, &ib, &ob, &xb);
        for (int64_t j = 0; j < n; j++) acc[j] = 0;
        for (int64_t r = 0; r < c->count; r++) {
            const char *p = a->in + (ib + pa_red_elem_offset(a, r)) * (int64_t)es;
            if (f64_source(a)) {
                c->lanes->acc_f64(acc, (const double *)p, n);
            } else if (f32_source(a) && a->in_dtype == ACL_BF16) {
                c->lanes->acc_bf16(acc, (const uint16_t *)p, n);
            } else if (f32_source(a)) {
                c->lanes->acc_f32(acc, as_f32(a, c->ops, p, n, buf), n);
            } else {
                for (int64_t j = 0; j < n; j++) dbuf[j] = pa_red_load_f(a, p + j * (int64_t)es);
                c->lanes->acc_f64(acc, dbuf, n);
            }
        }
        const int64_t so = a->keep_out[a->nkeep - 1];
        for (int64_t j = 0; j < n; j++) {
            red_val v;
            init_val(a, &v);
            v.f = acc[j];
            finish(c, &v, ob + j * so, 0);
        }
    }
}

/* One output with many blocks: block sums in parallel, added in order. */
typedef struct split_ctx {
    const red_ctx *c;
    const char *p;
    double *part;
} split_ctx;

static void split_range(void *ctx, int64_t begin, int64_t end) {
    const split_ctx *s = ctx;
    const size_t es = pa_cvt_size(s->c->a->in_dtype);
    for (int64_t b = begin; b < end; b++) {
        const int64_t off = b * PA_RED_BLOCK;
        s->part[b] = block_sum(s->c, s->p + off * (int64_t)es, PA_MIN(PA_RED_BLOCK, s->c->run - off));
    }
}

void pa_red_run(const pa_red_args *a) {
    if (a->kind >= PA_RED_PROD) {
        pa_red_stat_run(a);
        return;
    }
    red_ctx c;
    memset(&c, 0, sizeof c);
    c.a = a;
    c.lanes = pa_red_lanes_of(pa_cpu_isa());
    c.ops = cvt_ops(pa_cpu_isa());
    c.nout = 1;
    for (int32_t d = 0; d < a->nkeep; d++) c.nout *= a->keep_dims[d];
    c.count = 1;
    for (int32_t d = 0; d < a->nred; d++) c.count *= a->red_dims[d];
    if (c.nout == 0) return;
    c.inner = lane_kind(a) && a->nred > 0 && a->red_in[a->nred - 1] == 1;
    if (c.inner) {
        c.run = a->red_dims[a->nred - 1];
        c.nruns = c.count / c.run;
    }
    const bool outer = !c.inner && lane_kind(a) && a->nkeep > 0 && a->keep_in[a->nkeep - 1] == 1 &&
                       a->nred > 0 && a->kind != PA_RED_NORM;
    if (outer) {
        const int64_t m = a->keep_dims[a->nkeep - 1];
        const int64_t units = (c.nout / m) * ((m + OUTER_TILE - 1) / OUTER_TILE);
        pa_parallel_for(units, 1, outer_range, &c);
        return;
    }
    if (c.inner && c.nout == 1 && c.nruns == 1 && c.run > 4 * PA_RED_BLOCK) {
        /* one long run: its blocks in parallel (the same blocks and order as alone) */
        const int64_t nb = (c.run + PA_RED_BLOCK - 1) / PA_RED_BLOCK;
        double stack_part[256];
        double *part = nb <= 256 ? stack_part : pa_alloc_aligned((size_t)nb * sizeof(double));
        if (part != NULL) {
            int64_t ib, ob, xb;
            pa_red_out_offsets(a, 0, &ib, &ob, &xb);
            split_ctx s = {&c, a->in + ib * (int64_t)pa_cvt_size(a->in_dtype), part};
            pa_parallel_for(nb, 16, split_range, &s);
            red_val v;
            init_val(a, &v);
            for (int64_t b = 0; b < nb; b++) v.f = v.f + part[b];
            finish(&c, &v, ob, xb);
            if (part != stack_part) pa_free_aligned(part);
            return;
        }
        /* out of memory for the partials: the sequential walk gives the same bits */
    }
    const int64_t per = PA_MAX(1, c.count);
    pa_parallel_for(c.nout, PA_MAX(1, 65536 / per), outputs_range, &c);
}
