/* The reductions that walk each output's elements once or twice in index
 * order (reduce.h): products, log-sum-exp, variance / standard deviation
 * (with the mean). One output element per work item, accumulated in double
 * (products of integers in wrapping int64), so the bits depend on neither
 * threads nor the ISA tier. */
#include <math.h>
#include <string.h>

#include "common/pa_common.h"
#include "kernels/map/map_cvt.h"
#include "kernels/reduce/reduce.h"
#include "kernels/reduce/reduce_walk.h"
#include "runtime/pa_threadpool.h"

typedef struct stat_ctx {
    const pa_red_args *a;
    int64_t count;
} stat_ctx;

static void stat_range(void *ctx, int64_t begin, int64_t end) {
    const stat_ctx *c = ctx;
    const pa_red_args *a = c->a;
    const int64_t ei = (int64_t)pa_cvt_size(a->in_dtype);
    const int64_t eo = a->out ? (int64_t)pa_cvt_size(a->out_dtype) : 0;
    const int64_t ex = a->idx ? (int64_t)pa_cvt_size(a->idx_dtype) : 0;
    const int64_t n = c->count;
    for (int64_t o = begin; o < end; o++) {
        int64_t ib, ob, xb;
        pa_red_out_offsets(a, o, &ib, &ob, &xb);
        const char *base = a->in + ib * ei;
        char *q = a->out ? a->out + ob * eo : NULL;
        switch (a->kind) {
        case PA_RED_PROD:
            if (a->int_acc) {
                uint64_t pr = 1;
                for (int64_t r = 0; r < n; r++) pr *= (uint64_t)pa_red_load_i(a, base + pa_red_elem_offset(a, r) * ei);
                pa_cvt_store_i(q, a->out_dtype, (int64_t)pr);
            } else {
                double pr = 1.0;
                for (int64_t r = 0; r < n; r++) pr *= pa_red_load_f(a, base + pa_red_elem_offset(a, r) * ei);
                pa_cvt_store_f(q, a->out_dtype, pr);
            }
            break;
        case PA_RED_LOGSUMEXP: {
            double m = -INFINITY;
            bool nan = false;
            for (int64_t r = 0; r < n; r++) {
                const double v = pa_red_load_f(a, base + pa_red_elem_offset(a, r) * ei);
                if (isnan(v)) nan = true;
                else if (v > m) m = v;
            }
            double res;
            if (nan) res = NAN;
            else if (isinf(m)) res = m; /* all -inf (or empty): -inf; any +inf: +inf */
            else {
                double s = 0.0;
                for (int64_t r = 0; r < n; r++) s += exp(pa_red_load_f(a, base + pa_red_elem_offset(a, r) * ei) - m);
                res = m + log(s);
            }
            pa_cvt_store_f(q, a->out_dtype, res);
            break;
        }
        case PA_RED_DOT: {
            const char *b2 = a->in2;
            if (a->int_acc) {
                uint64_t acc = 0;
                for (int64_t r = 0; r < n; r++) {
                    const uint64_t x = (uint64_t)pa_cvt_load_i(base + r * a->red_in[0] * ei, a->in_dtype);
                    acc += x * (uint64_t)pa_cvt_load_i(b2 + r * a->red_in2[0] * ei, a->in_dtype);
                }
                pa_cvt_store_i(q, a->out_dtype, (int64_t)acc);
            } else {
                double acc = 0.0;
                for (int64_t r = 0; r < n; r++) {
                    acc += pa_cvt_load_f(base + r * a->red_in[0] * ei, a->in_dtype) *
                           pa_cvt_load_f(b2 + r * a->red_in2[0] * ei, a->in_dtype);
                }
                pa_cvt_store_f(q, a->out_dtype, acc);
            }
            break;
        }
        case PA_RED_GLU: {
            const double x = pa_cvt_load_f(base, a->in_dtype), g = pa_cvt_load_f(base + a->red_in2[0] * ei, a->in_dtype);
            pa_cvt_store_f(q, a->out_dtype, x / (1.0 + exp(-g)));
            break;
        }
        case PA_RED_BCE: {
            int64_t i2 = 0, i3 = 0, i4 = 0;
            for (int64_t r = o, d = a->nkeep - 1; d >= 0; d--) {
                const int64_t c2 = r % a->keep_dims[d];
                i2 += c2 * a->keep_in2[d], i3 += c2 * a->keep_in3[d], i4 += c2 * a->keep_in4[d];
                r /= a->keep_dims[d];
            }
            const int64_t e2 = (int64_t)pa_cvt_size(a->in2_dtype);
            const int64_t e3 = a->in3 ? (int64_t)pa_cvt_size(a->in3_dtype) : 0;
            const int64_t e4 = a->in4 ? (int64_t)pa_cvt_size(a->in4_dtype) : 0;
            double acc = 0.0;
            for (int64_t r = 0; r < n; r++) {
                int64_t o1 = 0, o2 = 0, o3 = 0, o4 = 0;
                for (int64_t t = r, d = a->nred - 1; d >= 0; d--) {
                    const int64_t c2 = t % a->red_dims[d];
                    o1 += c2 * a->red_in[d], o2 += c2 * a->red_in2[d], o3 += c2 * a->red_in3[d];
                    o4 += c2 * a->red_in4[d];
                    t /= a->red_dims[d];
                }
                const double x = pa_cvt_load_f(base + o1 * ei, a->in_dtype);
                const double y = pa_cvt_load_f(a->in2 + (i2 + o2) * e2, a->in2_dtype);
                const double w = a->in3 ? pa_cvt_load_f(a->in3 + (i3 + o3) * e3, a->in3_dtype) : 1.0;
                const double pw = a->in4 ? pa_cvt_load_f(a->in4 + (i4 + o4) * e4, a->in4_dtype) : 1.0;
                const double sp = log1p(exp(-fabs(x))) + (x < 0 ? -x : 0.0); /* -log sigmoid(x) */
                acc += w * ((1.0 - y) * x + (1.0 + (pw - 1.0) * y) * sp);
            }
            pa_cvt_store_f(q, a->out_dtype, a->want_values ? acc / (double)n : acc);
            break;
        }
        case PA_RED_LOSS: {
            int64_t i2 = 0;
            for (int64_t r = o, d = a->nkeep - 1; d >= 0; d--) {
                i2 += (r % a->keep_dims[d]) * a->keep_in2[d];
                r /= a->keep_dims[d];
            }
            const int64_t e2 = (int64_t)pa_cvt_size(a->in2_dtype);
            const char *b2 = a->in2 + i2 * e2;
            if (a->int_acc) {
                uint64_t acc = 0;
                for (int64_t r = 0; r < n; r++) {
                    int64_t o1 = 0, o2 = 0;
                    for (int64_t t = r, d = a->nred - 1; d >= 0; d--) {
                        o1 += (t % a->red_dims[d]) * a->red_in[d];
                        o2 += (t % a->red_dims[d]) * a->red_in2[d];
                        t /= a->red_dims[d];
                    }
                    const uint64_t df = (uint64_t)pa_cvt_load_i(base + o1 * ei, a->in_dtype) -
                                        (uint64_t)pa_cvt_load_i(b2 + o2 * e2, a->in2_dtype);
                    const uint64_t ad = (int64_t)df < 0 ? 0 - df : df;
                    acc += a->p == 2 ? df * df : ad;
                }
                pa_cvt_store_i(q, a->out_dtype, (int64_t)acc);
            } else {
                double acc = 0.0;
                for (int64_t r = 0; r < n; r++) {
                    int64_t o1 = 0, o2 = 0;
                    for (int64_t t = r, d = a->nred - 1; d >= 0; d--) {
                        o1 += (t % a->red_dims[d]) * a->red_in[d];
                        o2 += (t % a->red_dims[d]) * a->red_in2[d];
                        t /= a->red_dims[d];
                    }
                    const double df = pa_cvt_load_f(base + o1 * ei, a->in_dtype) - pa_cvt_load_f(b2 + o2 * e2, a->in2_dtype);
                    acc += a->p == 2 ? df * df : fabs(df);
                }
                pa_cvt_store_f(q, a->out_dtype, a->want_values ? acc / (double)n : acc);
            }
            break;
        }
        default: { /* PA_RED_VAR: p = correction; out = var (std: its root), idx = the mean */
            double s = 0.0;
            for (int64_t r = 0; r < n; r++) s += pa_red_load_f(a, base + pa_red_elem_offset(a, r) * ei);
            const double mean = n > 0 ? s / (double)n : NAN;
            double ss = 0.0;
            for (int64_t r = 0; r < n; r++) {
                const double d = pa_red_load_f(a, base + pa_red_elem_offset(a, r) * ei) - mean;
                ss += d * d;
            }
            const double den = (double)n - a->p;
            double var = n > 0 ? ss / (den > 0 ? den : 0.0) : NAN;
            if (a->want_values) var = sqrt(var); /* std */
            if (q) pa_cvt_store_f(q, a->out_dtype, var);
            if (a->idx) pa_cvt_store_f(a->idx + xb * ex, a->idx_dtype, mean);
            break;
        }
        }
    }
}

void pa_red_stat_run(const pa_red_args *a) {
    stat_ctx c = {a, 1};
    int64_t nout = 1;
    for (int32_t d = 0; d < a->nkeep; d++) nout *= a->keep_dims[d];
    for (int32_t d = 0; d < a->nred; d++) c.count *= a->red_dims[d];
    if (nout == 0) return;
    const int64_t per = c.count > 0 ? c.count : 1;
    pa_parallel_for(nout, PA_MAX(1, 65536 / per), stat_range, &c);
}
