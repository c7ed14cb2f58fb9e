/* Mm, BatchMatMul, Matmul, Mv, Addmm, Baddbmm and their in-place forms: the
 * vendor's shape and dtype checks (Atlas A2), then one GEMM over strided
 * views (transposes and batch broadcast are strides; an NZ mat2 is read as
 * such). See pyaclnn/optable/matmul.py for the precision rules. */
#include <float.h>
#include <math.h>

#include "ops/core/pa_dtype.h"
#include "ops/matmul/matmul_impl.h"
#include "runtime/pa_rt_base.h"

/* |x - v| <= FLT_EPSILON, as the vendor tests a scalar for 0 and 1 */
static bool mm_near(float x, float v) { return fabsf(x - v) <= FLT_EPSILON; }

static int mm_dim_err(const char *api, const char *name, const aclTensor *t, const char *want) {
    char s[160];
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be %s, got %d-D (shape %s)", api, name, want, (int)t->ndim,
                   mm_shape(t, s, sizeof s));
}

static int mm_out_err(const char *api, const char *name, const aclTensor *t, const int64_t *dims, int nd) {
    char s1[160], s2[160];
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape must be %s, got %s", api, name,
                   pa_shape_str(dims, nd, s1, sizeof s1), mm_shape(t, s2, sizeof s2));
}

static bool mm_shape_is(const aclTensor *t, const int64_t *dims, int nd) {
    if (t->ndim != nd) return false;
    for (int i = 0; i < nd; i++) {
        if (t->dims[i] != dims[i]) return false;
    }
    return true;
}

/* B's operand: strided, or the NZ layout */
static int mm_b_operand(const char *api, const char *name, const aclTensor *t, const pa_tview *v, int rdim, int cdim,
                        int nb, const int64_t *batch, int own_nb, pa_gemm_mat *m) {
    if (t->format == ACL_FORMAT_FRACTAL_NZ) return mm_nz_operand(api, name, t, v, nb, batch, m);
    mm_operand(m, v, rdim, cdim, nb, batch, own_nb);
    return ACLNN_SUCCESS;
}

/* The standard broadcast of two dim lists (right-aligned); false if they do not broadcast. */
static bool mm_broadcast(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out, int *nout) {
    const int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        const int ia = i - (n - na), ib = i - (n - nb);
        const int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
        if (x != y && x != 1 && y != 1) return false;
        out[i] = x == 1 ? y : x;
    }
    *nout = n;
    return true;
}

int mm_plan_dense(const pa_op *op, int kernel, const pa_arg *a, uint64_t *ws, aclOpExecutor **ex) {
    const char *api = op->ws_api;
    const bool addmm = kernel == PA_MATMUL_ADDMM || kernel == PA_MATMUL_INPLACE_ADDMM;
    const bool baddbmm = kernel == PA_MATMUL_BADDBMM || kernel == PA_MATMUL_INPLACE_BADDBMM;
    const bool inplace = kernel == PA_MATMUL_INPLACE_ADDMM || kernel == PA_MATMUL_INPLACE_BADDBMM;
    const bool with_bias = addmm || baddbmm;
    const aclTensor *self = NULL, *A, *B, *out;
    const aclScalar *beta_s = NULL, *alpha_s = NULL;
    int64_t cube;
    const char *aname, *bname;
    if (with_bias) {
        self = a[0].p;
        A = a[1].p;
        B = a[2].p;
        beta_s = a[3].p;
        alpha_s = a[4].p;
        out = inplace ? self : a[5].p;
        cube = inplace ? a[5].i : a[6].i;
        aname = addmm ? "mat1" : "batch1";
        bname = addmm ? "mat2" : "batch2";
    } else {
        A = a[0].p;
        B = a[1].p;
        out = a[2].p;
        cube = a[3].i;
        aname = "self";
        bname = kernel == PA_MATMUL_MV ? "vec" : "mat2";
    }
    const char *oname = inplace ? "selfRef" : "out";
    if (kernel == PA_MATMUL_BATCH_MATMUL || kernel == PA_MATMUL_MV) {
        if (cube == MM_USE_FP32_ADD) cube = MM_KEEP_DTYPE; /* the vendor routes 4 to 0 here */
    }
    char s1[160], s2[160];
    int rc;

    /* ---- dtypes ---- */
    if (kernel == PA_MATMUL_MV) {
        if (out->dtype != B->dtype || (!mm_is_empty(A) && A->dtype != B->dtype)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self, vec and out must have one dtype, got %s, %s and %s",
                           api, pa_dtype_name(A->dtype), pa_dtype_name(B->dtype), pa_dtype_name(out->dtype));
        }
    }
    mm_plan p;
    mm_plan_init(&p, op, MM_RUN_GEMM);
    pa_gemm_args *g = &p.g;
    rc = mm_rules(api, A->dtype, B->dtype, out->dtype, cube, with_bias, g);
    if (rc != ACLNN_SUCCESS) return rc;

    /* ---- shapes: M, N, K, the batch dims and each operand's dims ---- */
    int64_t M = 0, N = 0, K = 0;
    int nb = 0;
    int64_t batch[PA_MAX_DIMS];
    int a_rdim, a_cdim, a_own, b_rdim, b_cdim, b_own, c_rdim, c_cdim;
    int64_t want[PA_MAX_DIMS];
    int nwant = 0;
    switch (kernel) {
    case PA_MATMUL_MM:
    case PA_MATMUL_ADDMM:
    case PA_MATMUL_INPLACE_ADDMM:
        if (B->ndim != 2) return mm_dim_err(api, bname, B, "2-D");
        if (A->ndim != 2) return mm_dim_err(api, aname, A, "2-D");
        M = A->dims[0];
        K = A->dims[1];
        N = B->dims[1];
        if (B->dims[0] != K) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the k dims of %s (%s) and %s (%s) differ", api, aname,
                           mm_shape(A, s1, sizeof s1), bname, mm_shape(B, s2, sizeof s2));
        }
        a_rdim = 0, a_cdim = 1, a_own = 0, b_rdim = 0, b_cdim = 1, b_own = 0, c_rdim = 0, c_cdim = 1;
        want[0] = M, want[1] = N, nwant = 2;
        break;
    case PA_MATMUL_BATCH_MATMUL:
    case PA_MATMUL_BADDBMM:
    case PA_MATMUL_INPLACE_BADDBMM:
        if (A->ndim != 3) return mm_dim_err(api, aname, A, "3-D");
        if (B->ndim != 3) return mm_dim_err(api, bname, B, "3-D");
        if (kernel == PA_MATMUL_BATCH_MATMUL && out->ndim != 3) return mm_dim_err(api, oname, out, "3-D");
        M = A->dims[1];
        K = A->dims[2];
        N = B->dims[2];
        if (B->dims[1] != K) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the last dim of %s (%s) and the middle dim of %s (%s) differ",
                           api, aname, mm_shape(A, s1, sizeof s1), bname, mm_shape(B, s2, sizeof s2));
        }
        if (A->dims[0] != B->dims[0] && A->dims[0] != 1 && B->dims[0] != 1) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: the batch dims of %s (%s) and %s (%s) must be equal or one of them 1", api, aname,
                           mm_shape(A, s1, sizeof s1), bname, mm_shape(B, s2, sizeof s2));
        }
        if (B->format == ACL_FORMAT_FRACTAL_NZ && (B->dims[1] == 1 || B->dims[2] == 1)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: an FRACTAL_NZ %s cannot have a k or n dim of 1 (shape %s)",
                           api, bname, mm_shape(B, s1, sizeof s1));
        }
        nb = 1;
        batch[0] = A->dims[0] > B->dims[0] ? A->dims[0] : B->dims[0];
        a_rdim = 1, a_cdim = 2, a_own = 1, b_rdim = 1, b_cdim = 2, b_own = 1, c_rdim = 1, c_cdim = 2;
        want[0] = batch[0], want[1] = M, want[2] = N, nwant = 3;
        break;
    case PA_MATMUL_MV:
        if (A->ndim != 2) return mm_dim_err(api, "self", A, "2-D");
        if (B->ndim != 1) return mm_dim_err(api, "vec", B, "1-D");
        if (out->ndim != 1) return mm_dim_err(api, "out", out, "1-D");
        M = A->dims[0];
        K = A->dims[1];
        N = 1;
        if (B->dims[0] != K) {
            const int64_t w = K;
            return mm_out_err(api, "vec", B, &w, 1);
        }
        a_rdim = 0, a_cdim = 1, a_own = 0, b_rdim = 0, b_cdim = -1, b_own = 0, c_rdim = 0, c_cdim = -1;
        want[0] = M, nwant = 1;
        break;
    default: { /* MATMUL: torch.matmul */
        const int n1 = A->ndim, n2 = B->ndim;
        if (n1 == 0 || n2 == 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self (%s) and mat2 (%s) must have at least 1 dim", api,
                           mm_shape(A, s1, sizeof s1), mm_shape(B, s2, sizeof s2));
        }
        if (n1 > 6 || n2 > 6) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self (%d-D) and mat2 (%d-D) may have at most 6 dims", api, n1,
                           n2);
        }
        K = A->dims[n1 - 1];
        const int64_t bk = n2 >= 2 ? B->dims[n2 - 2] : B->dims[0];
        if (bk != K) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the k dims of self (%s) and mat2 (%s) differ", api,
                           mm_shape(A, s1, sizeof s1), mm_shape(B, s2, sizeof s2));
        }
        M = n1 >= 2 ? A->dims[n1 - 2] : 1;
        N = n2 >= 2 ? B->dims[n2 - 1] : 1;
        a_own = n1 > 2 ? n1 - 2 : 0;
        b_own = n2 > 2 ? n2 - 2 : 0;
        if (!mm_broadcast(A->dims, a_own, B->dims, b_own, batch, &nb)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: the batch dims of self (%s) and mat2 (%s) do not broadcast",
                           api, mm_shape(A, s1, sizeof s1), mm_shape(B, s2, sizeof s2));
        }
        a_rdim = n1 >= 2 ? n1 - 2 : -1;
        a_cdim = n1 - 1;
        b_rdim = n2 >= 2 ? n2 - 2 : 0;
        b_cdim = n2 >= 2 ? n2 - 1 : -1;
        for (int d = 0; d < nb; d++) want[nwant++] = batch[d];
        c_rdim = -1, c_cdim = -1;
        if (n1 >= 2) {
            c_rdim = nwant;
            want[nwant++] = M;
        }
        if (n2 >= 2) {
            c_cdim = nwant;
            want[nwant++] = N;
        }
        if (B->format == ACL_FORMAT_FRACTAL_NZ && n2 < 2) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: an FRACTAL_NZ mat2 must have at least 2 dims", api);
        }
        break;
    }
    }
    /* the output (Addmm's may be empty when m or n is 0) */
    bool prod_empty = M == 0 || N == 0;
    for (int d = 0; d < nb; d++) prod_empty = prod_empty || batch[d] == 0;
    if (addmm && prod_empty && !inplace) {
        if (!mm_is_empty(out)) return mm_out_err(api, oname, out, want, nwant);
    } else if (!mm_shape_is(out, want, nwant)) {
        return mm_out_err(api, oname, out, want, nwant);
    }
    /* the bias (self) */
    float alpha = 1.0f, beta = 1.0f;
    bool use_bias = false, scale_only = false;
    if (with_bias) {
        alpha = (float)pa_scalar_f(alpha_s);
        beta = (float)pa_scalar_f(beta_s);
        if (addmm) {
            if (self->ndim > 2) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: self must have at most 2 dims, got %d (shape %s)", api,
                               (int)self->ndim, mm_shape(self, s1, sizeof s1));
            }
        }
        /* self broadcasts to the product, never the other way */
        const int pn = addmm ? 2 : 3;
        const int64_t pd[3] = {addmm ? M : batch[0], addmm ? N : M, N};
        int64_t bc[PA_MAX_DIMS];
        int nbc = 0;
        bool ok = self->ndim <= pn && mm_broadcast(self->dims, self->ndim, pd, pn, bc, &nbc);
        for (int i = 0; ok && i < pn; i++) ok = bc[i] == pd[i];
        if (inplace) ok = ok && mm_shape_is(self, pd, pn);
        if (!ok) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s (shape %s) must broadcast to the product's shape %s", api,
                           inplace ? "selfRef" : "self", mm_shape(self, s1, sizeof s1),
                           pa_shape_str(pd, pn, s2, sizeof s2));
        }
        if (baddbmm) {
            if (A->dims[0] == 1 && batch[0] != 1) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID,
                               "%s: batch1's batch dim is 1 but the result's is %lld (only batch2 broadcasts)", api,
                               (long long)batch[0]);
            }
            if (mm_is_empty(self) != prod_empty) {
                return pa_fail(ACLNN_ERR_PARAM_INVALID,
                               "%s: self (%s) and batch1 @ batch2 must both be empty or both not", api,
                               mm_shape(self, s1, sizeof s1));
            }
        }
        if (cube > MM_USE_FP32_ADD) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: cubeMathType must be at most 4, got %lld", api,
                           (long long)cube);
        }
        if (addmm) {
            if (mm_is_empty(self) || prod_empty) {
                p.run = MM_RUN_NOTHING;
            } else if (K == 0 || mm_near(alpha, 0.0f)) {
                p.run = MM_RUN_SCALE; /* beta * self */
                use_bias = true;
                scale_only = true;
            } else if (mm_near(beta, 0.0f)) {
                use_bias = false; /* self is not read: its NaNs do not matter */
            } else {
                use_bias = true;
            }
            if (mm_near(alpha, 1.0f)) alpha = 1.0f;
            if (mm_near(beta, 1.0f)) beta = 1.0f;
        } else {
            use_bias = !mm_near(beta, 0.0f); /* beta 0: out = alpha * bmm */
            if (use_bias && mm_near(alpha, 1.0f)) alpha = 1.0f;
            if (prod_empty) p.run = MM_RUN_NOTHING;
        }
    }
    if (!with_bias && prod_empty) p.run = MM_RUN_NOTHING;

    /* ---- the GEMM ---- */
    g->m = M;
    g->n = N;
    g->k = K;
    g->nbatch = nb;
    for (int d = 0; d < nb; d++) g->batch[d] = batch[d];
    g->alpha = alpha;
    g->beta = beta;
    mm_plan_view(&p, MM_V_A, A);
    mm_plan_view(&p, MM_V_B, B);
    mm_plan_view(&p, MM_V_C, out);
    mm_operand(&g->a, &p.v[MM_V_A], a_rdim, a_cdim, nb, batch, a_own);
    rc = mm_b_operand(api, bname, B, &p.v[MM_V_B], b_rdim, b_cdim, nb, batch, b_own, &g->b);
    if (rc != ACLNN_SUCCESS) return rc;
    mm_output(&g->c, &p.v[MM_V_C], c_rdim, c_cdim, nb);
    if (with_bias) {
        mm_plan_view(&p, MM_V_BIAS, self);
        p.used[MM_V_BIAS] = use_bias;
        if (use_bias) {
            const pa_tview *sv = &p.v[MM_V_BIAS];
            const int pn = addmm ? 2 : 3, sn = self->ndim;
            /* self's dims right-aligned against (batch,) M, N */
            const int rdim = sn - 2 >= 0 ? sn - 2 : -1, cdim = sn - 1 >= 0 ? sn - 1 : -1;
            g->bias.dt = mm_gdt(self->dtype);
            g->bias.off = sv->offset;
            g->bias.rs = rdim >= 0 ? sv->strides[rdim] : 0;
            g->bias.cs = cdim >= 0 ? sv->strides[cdim] : 0;
            if (pn == 3 && sn == 3) g->bias.bs[0] = sv->strides[0];
            g->bias.p = (const void *)1; /* present; the run binds the address */
        }
    }
    if (scale_only) {
        g->bias.p = NULL;
    }
    if (with_bias) {
        const int ins[] = {MM_V_BIAS, MM_V_A, MM_V_B}, outs[] = {MM_V_C};
        return mm_finish(op, &p, ins, 3, outs, 1, 0, ws, ex);
    }
    const int ins[] = {MM_V_A, MM_V_B}, outs[] = {MM_V_C};
    return mm_finish(op, &p, ins, 2, outs, 1, 0, ws, ex);
}
