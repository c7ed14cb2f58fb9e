/* FRACTAL_NZ <-> ND for the aclop layer. The NZ layout of a tensor with origin
 * shape [..., H, W] (a 1-D [W] is [1, W], a 0-D one [1, 1]) is the storage shape
 * [..., W1, H1, 16, C0] with C0 = 32 bytes / element size (16 for 2- and
 * 4-byte types, as torch_npu computes it), W1 = ceil(W / C0), H1 = ceil(H / 16):
 * element (.., h, w) lives at ((w / C0) * H1*16 + h) * C0 + w % C0 of its
 * matrix; the padding is written as zeros. The conversion runs on the stream as
 * an op, with every op's launch-time address checks. */
#include <stddef.h>
#include <string.h>

#include "aclop/pa_aclop_ops.h"
#include "meta/pa_executor.h"
#include "runtime/pa_rt_base.h"
#include "runtime/pa_threadpool.h"

bool pa_nz_layout_of(aclDataType dt, int32_t ndim, const int64_t *dims, pa_nz_layout *out) {
    const size_t es = pa_dtype_size(dt);
    if (es == 0 || es > 4) return false;
    out->esize = (int64_t)es;
    out->c0 = 32 / (es > 2 ? 2 : (int64_t)es);
    out->h = ndim >= 2 ? dims[ndim - 2] : 1;
    out->w = ndim >= 1 ? dims[ndim - 1] : 1;
    out->batch = 1;
    for (int32_t i = 0; i + 2 < ndim; i++) out->batch *= dims[i];
    out->w1 = (out->w + out->c0 - 1) / out->c0;
    out->hp = (out->h + 15) / 16 * 16;
    out->nbatch_dims = ndim > 2 ? ndim - 2 : 0;
    for (int32_t i = 0; i < out->nbatch_dims; i++) out->batch_dims[i] = dims[i];
    return true;
}

int64_t pa_nz_storage_elems(const pa_nz_layout *l) { return l->batch * l->w1 * l->hp * l->c0; }

bool pa_nz_storage_matches(const pa_nz_layout *l, int ndim, const int64_t *dims) {
    if (ndim != l->nbatch_dims + 4) return false;
    for (int32_t i = 0; i < l->nbatch_dims; i++) {
        if (dims[i] != l->batch_dims[i]) return false;
    }
    const int64_t *t = dims + l->nbatch_dims;
    return t[0] == l->w1 && t[1] == l->hp / 16 && t[2] == 16 && t[3] == l->c0;
}

typedef struct nz_plan {
    pa_tview nz, nd; /* flat 1-D views of the two buffers */
    pa_nz_layout l;
    bool to_nz;
} nz_plan;

static void convert_range(void *ctx, int64_t begin, int64_t end) {
    const nz_plan *p = ctx;
    const pa_nz_layout *l = &p->l;
    const int64_t es = l->esize, mat = l->w1 * l->hp * l->c0;
    char *nz = pa_tview_ptr(&p->nz), *nd = pa_tview_ptr(&p->nd);
    for (int64_t b = begin; b < end; b++) {
        char *zb = nz + b * mat * es;
        char *db = nd + b * l->h * l->w * es;
        for (int64_t w1 = 0; w1 < l->w1; w1++) {
            const int64_t w0 = w1 * l->c0;
            const int64_t n = l->w - w0 < l->c0 ? l->w - w0 : l->c0;
            for (int64_t h = 0; h < l->hp; h++) {
                char *z = zb + ((w1 * l->hp + h) * l->c0) * es;
                if (p->to_nz) {
                    if (h < l->h) {
                        memcpy(z, db + (h * l->w + w0) * es, (size_t)(n * es));
                        memset(z + n * es, 0, (size_t)((l->c0 - n) * es));
                    } else {
                        memset(z, 0, (size_t)(l->c0 * es));
                    }
                } else if (h < l->h) {
                    memcpy(db + (h * l->w + w0) * es, z, (size_t)(n * es));
                }
            }
        }
    }
}

static int nz_run(const void *plan, void *workspace, uint64_t workspace_size) {
    PA_UNUSED(workspace), PA_UNUSED(workspace_size);
    const nz_plan *p = plan;
    const int64_t per = p->l.w1 * p->l.hp * p->l.c0;
    pa_parallel_for(p->l.batch, per > 0 ? (65536 + per - 1) / per : 1, convert_range, (void *)p);
    return ACLNN_SUCCESS;
}

static const char *const to_nz_in[] = {"ND input"};
static const char *const to_nz_out[] = {"FRACTAL_NZ output"};
static const char *const to_nd_in[] = {"FRACTAL_NZ input"};
static const char *const to_nd_out[] = {"ND output"};
static const pa_op_def to_nz_op = {"TransData (ND to FRACTAL_NZ)", nz_run, to_nz_in, to_nz_out};
static const pa_op_def to_nd_op = {"TransData (FRACTAL_NZ to ND)", nz_run, to_nd_in, to_nd_out};

static pa_tview flat_view(aclDataType dt, int64_t n, void *base) {
    pa_tview v;
    memset(&v, 0, sizeof v);
    v.dtype = dt;
    v.ndim = 1;
    v.dims[0] = n;
    v.strides[0] = 1;
    v.storage_elems = n;
    v.base = base;
    return v;
}

aclError pa_nz_convert(const char *api, aclDataType dt, const pa_nz_layout *l, void *nz, void *nd, bool to_nz,
                       aclrtStream stream) {
    nz_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.l = *l;
    plan.to_nz = to_nz;
    plan.nz = flat_view(dt, pa_nz_storage_elems(l), nz);
    plan.nd = flat_view(dt, l->batch * l->h * l->w, nd);
    const pa_op_def *op = to_nz ? &to_nz_op : &to_nd_op;
    const size_t src = to_nz ? offsetof(nz_plan, nd) : offsetof(nz_plan, nz);
    const size_t dst = to_nz ? offsetof(nz_plan, nz) : offsetof(nz_plan, nd);
    aclOpExecutor *ex = pa_executor_create(op, &plan, sizeof plan, 0, &src, 1, &dst, 1);
    if (ex == NULL) return pa_rt_fail_oom(api, "the FRACTAL_NZ conversion's executor");
    const int rc = pa_executor_launch(op, NULL, 0, ex, stream);
    if (rc != 0) pa_rt_note_error(rc);
    return rc;
}
