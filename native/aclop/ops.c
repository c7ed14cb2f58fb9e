/* The op types aclopCompileAndExecute runs, each an adapter over the aclnn op
 * that computes it (the math is never written twice):
 *   ScaledMaskedSoftmax     (x, mask) -> y        attrs scale = 1.0, fixed_triu_mask = false
 *   ScaledMaskedSoftmaxGrad (y_grad, y, mask) -> x_grad, the same attrs
 *       -> aclnnScaledMaskedSoftmax[Backward]; fixed_triu_mask = true replaces
 *          the mask with triu(ones(mask.shape), diagonal=1) (True above the
 *          diagonal of every [S1, S2] matrix), as the vendor's TBE op does.
 *   Identity (x) -> y        -> aclnnInplaceCopy (a format change: see io.c)
 *   Cast (x) -> y            attr dst_type = y's type -> aclnnCast
 *   Greater (x1, x2) -> y    -> aclnnGtTensor (x2 broadcast; often a host scalar)
 *   Fill (dims, value) -> y  -> aclnnInplaceFillTensor (dims: y's shape, int32 / int64;
 *                               value: one element, converted to y's type)
 * Every other op type: ACL_ERROR_OP_NOT_FOUND (execute.c). */
#include <stdio.h>
#include <string.h>

#include "aclnnop/aclnn_cast.h"
#include "aclnnop/aclnn_copy.h"
#include "aclnnop/aclnn_fill_tensor.h"
#include "aclnnop/aclnn_gt_tensor.h"
#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"
#include "aclop/pa_aclop_ops.h"
#include "runtime/pa_rt_base.h"

typedef aclnnStatus (*launch_fn)(void *, uint64_t, aclOpExecutor *, aclrtStream);

aclError pa_aclop_launch(const char *op, uint64_t workspace_size, aclOpExecutor *executor, aclrtStream stream,
                         launch_fn launch) {
    void *ws = NULL;
    if (workspace_size > 0) {
        const aclError rc = pa_aclop_scratch(op, (size_t)workspace_size, &ws);
        if (rc != ACL_SUCCESS) {
            aclDestroyAclOpExecutor(executor);
            return rc;
        }
    }
    const aclnnStatus rc = launch(ws, workspace_size, executor, stream);
    const aclError fr = pa_aclop_free_after(ws, stream);
    if (rc != ACLNN_SUCCESS) return rc;
    return fr;
}

/* An aclnn status from GetWorkspaceSize, reported as the aclop call's error. */
static aclError from_aclnn(const char *op, aclnnStatus rc) {
    if (rc == ACLNN_SUCCESS) return ACL_SUCCESS;
    char why[900];
    snprintf(why, sizeof why, "%s", pa_get_errmsg());
    return pa_rt_fail(rc, "aclopCompileAndExecute: op %s: %s", op, why);
}

/* ---- ScaledMaskedSoftmax / ScaledMaskedSoftmaxGrad ---- */

static const char *const smsf_attrs[] = {"scale", "fixed_triu_mask"};

static aclError smsf_attrs_get(const char *op, const aclopAttr *attr, float *scale, bool *triu) {
    bool found;
    *scale = 1.0f;
    *triu = false;
    int rc = pa_attr_check_names(op, attr, smsf_attrs, 2);
    if (rc == 0) rc = pa_attr_get_float(op, attr, "scale", scale, &found);
    if (rc == 0) rc = pa_attr_get_bool(op, attr, "fixed_triu_mask", triu, &found);
    return rc;
}

/* *out = the mask the aclnn op reads: the caller's; for fixed_triu_mask a BOOL
 * tensor of the mask's shape holding triu(ones, 1) in device scratch (*scratch, to
 * be freed after the op is queued; the caller's contents are not read); a UINT8
 * mask is read as BOOL (any non-zero byte masks, as the TBE op's uint8 read).
 * *owned: *out is to be destroyed. A status after pa_rt_fail otherwise. */
static aclError mask_for(const char *op, pa_aclop_tensor *mask, bool triu, aclTensor **out, bool *owned,
                         void **scratch) {
    *out = NULL;
    *owned = false;
    *scratch = NULL;
    void *base = NULL;
    aclGetRawTensorAddr(mask->t, &base);
    if (triu) {
        if (mask->ndim != 4) {
            return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclopCompileAndExecute: op %s: mask must be 4-D "
                              "[B|1,N|1,S1,S2], got %d-D", op, (int)mask->ndim);
        }
        const int64_t s1 = mask->dims[2], s2 = mask->dims[3], mats = mask->dims[0] * mask->dims[1];
        const int64_t n = mats * s1 * s2;
        if (n <= 0) {
            return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclopCompileAndExecute: op %s: mask must not be empty", op);
        }
        uint8_t *m = NULL;
        const aclError rc = pa_aclop_scratch(op, (size_t)n, (void **)&m);
        if (rc != ACL_SUCCESS) return rc;
        /* Fresh device memory that no queued work uses yet: written directly, as
         * the TBE op generates its mask into workspace. Row i keeps columns 0..i. */
        for (int64_t b = 0; b < mats; b++) {
            for (int64_t i = 0; i < s1; i++) {
                uint8_t *row = m + (b * s1 + i) * s2;
                const int64_t keep = i + 1 < s2 ? i + 1 : s2;
                memset(row, 0, (size_t)keep);
                memset(row + keep, 1, (size_t)(s2 - keep));
            }
        }
        *scratch = m;
        base = m;
    } else if (mask->dtype != ACL_UINT8) {
        *out = mask->t;
        return ACL_SUCCESS;
    }
    const int64_t flat = pa_tensor_numel(mask->t);
    *out = aclCreateTensor(mask->dims, (uint64_t)mask->ndim, ACL_BOOL, NULL, 0, ACL_FORMAT_ND, &flat, 1, base);
    if (*out == NULL) return pa_rt_fail_oom(op, "the mask's tensor");
    *owned = true;
    return ACL_SUCCESS;
}

/* Frees what mask_for made, after the op's launch was queued on stream. */
static aclError mask_done(aclTensor *mask, bool owned, void *scratch, aclrtStream stream) {
    if (owned) aclDestroyTensor(mask);
    return pa_aclop_free_after(scratch, stream);
}

/* ScaledMaskedSoftmax (grad false: x, mask -> y) and ScaledMaskedSoftmaxGrad
 * (grad true: y_grad, y, mask -> x_grad): the mask is the last input. */
static aclError run_softmax_pair(pa_aclop_io *io, const aclopAttr *attr, aclrtStream stream, bool grad) {
    const char *op = grad ? "ScaledMaskedSoftmaxGrad" : "ScaledMaskedSoftmax";
    float scale;
    bool triu, owned;
    void *scratch;
    aclError rc = smsf_attrs_get(op, attr, &scale, &triu);
    if (rc != ACL_SUCCESS) return rc;
    aclTensor *mask = NULL;
    rc = mask_for(op, &io->in[io->n_in - 1], triu, &mask, &owned, &scratch);
    if (rc != ACL_SUCCESS) {
        pa_aclop_free_after(scratch, stream);
        return rc;
    }
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    if (grad) {
        rc = from_aclnn(op, aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(io->in[0].t, io->in[1].t, mask, scale,
                                                                             false, io->out[0].t, &ws, &ex));
        if (rc == ACL_SUCCESS) rc = pa_aclop_launch(op, ws, ex, stream, aclnnScaledMaskedSoftmaxBackward);
    } else {
        rc = from_aclnn(op, aclnnScaledMaskedSoftmaxGetWorkspaceSize(io->in[0].t, mask, scale, false, io->out[0].t,
                                                                     &ws, &ex));
        if (rc == ACL_SUCCESS) rc = pa_aclop_launch(op, ws, ex, stream, aclnnScaledMaskedSoftmax);
    }
    const aclError done = mask_done(mask, owned, scratch, stream);
    return rc != ACL_SUCCESS ? rc : done;
}

static aclError run_smsf(pa_aclop_io *io, const aclopAttr *attr, aclrtStream stream) {
    return run_softmax_pair(io, attr, stream, false);
}

static aclError run_smsf_grad(pa_aclop_io *io, const aclopAttr *attr, aclrtStream stream) {
    return run_softmax_pair(io, attr, stream, true);
}

/* ---- Identity / Cast ---- */

static bool same_shape(const pa_aclop_tensor *a, const pa_aclop_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int32_t i = 0; i < a->ndim; i++) {
        if (a->dims[i] != b->dims[i]) return false;
    }
    return true;
}

static aclError shape_mismatch(const char *op, const pa_aclop_io *io) {
    char s1[160], s2[160];
    return pa_rt_fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "aclopCompileAndExecute: op %s: y shape %s must equal x shape %s",
                      op, pa_shape_str(io->out[0].dims, io->out[0].ndim, s1, sizeof s1),
                      pa_shape_str(io->in[0].dims, io->in[0].ndim, s2, sizeof s2));
}

static aclError run_identity(pa_aclop_io *io, const aclopAttr *attr, aclrtStream stream) {
    const char *op = "Identity";
    aclError rc = pa_attr_check_names(op, attr, NULL, 0);
    if (rc != ACL_SUCCESS) return rc;
    if (!same_shape(&io->in[0], &io->out[0])) return shape_mismatch(op, io);
    if (io->in[0].dtype != io->out[0].dtype) {
        return pa_rt_fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "aclopCompileAndExecute: op Identity: y data type %s must "
                          "equal x data type %s", pa_dtype_name(io->out[0].dtype), pa_dtype_name(io->in[0].dtype));
    }
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    rc = from_aclnn(op, aclnnInplaceCopyGetWorkspaceSize(io->out[0].t, io->in[0].t, &ws, &ex));
    if (rc == ACL_SUCCESS) rc = pa_aclop_launch(op, ws, ex, stream, aclnnInplaceCopy);
    return rc;
}

static aclError run_cast(pa_aclop_io *io, const aclopAttr *attr, aclrtStream stream) {
    const char *op = "Cast";
    static const char *const names[] = {"dst_type"};
    aclError rc = pa_attr_check_names(op, attr, names, 1);
    aclDataType dst = io->out[0].dtype;
    bool found = false;
    if (rc == ACL_SUCCESS) rc = pa_attr_get_data_type(op, attr, "dst_type", &dst, &found);
    if (rc != ACL_SUCCESS) return rc;
    if (found && dst != io->out[0].dtype) {
        return pa_rt_fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "aclopCompileAndExecute: op Cast: dst_type %s must be the "
                          "data type of y, %s", pa_dtype_name(dst), pa_dtype_name(io->out[0].dtype));
    }
    if (!same_shape(&io->in[0], &io->out[0])) return shape_mismatch(op, io);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    rc = from_aclnn(op, aclnnCastGetWorkspaceSize(io->in[0].t, io->out[0].dtype, io->out[0].t, &ws, &ex));
    if (rc == ACL_SUCCESS) rc = pa_aclop_launch(op, ws, ex, stream, aclnnCast);
    return rc;
}

static aclError run_greater(pa_aclop_io *io, const aclopAttr *attr, aclrtStream stream) {
    const char *op = "Greater";
    aclError rc = pa_attr_check_names(op, attr, NULL, 0);
    if (rc != ACL_SUCCESS) return rc;
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    rc = from_aclnn(op, aclnnGtTensorGetWorkspaceSize(io->in[0].t, io->in[1].t, io->out[0].t, &ws, &ex));
    if (rc == ACL_SUCCESS) rc = pa_aclop_launch(op, ws, ex, stream, aclnnGtTensor);
    return rc;
}

static aclError run_fill(pa_aclop_io *io, const aclopAttr *attr, aclrtStream stream) {
    const char *op = "Fill";
    aclError rc = pa_attr_check_names(op, attr, NULL, 0);
    if (rc != ACL_SUCCESS) return rc;
    const pa_aclop_tensor *dims = &io->in[0], *y = &io->out[0];
    if (dims->dtype != ACL_INT32 && dims->dtype != ACL_INT64) {
        return pa_rt_fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "aclopCompileAndExecute: op Fill: dims data type must be "
                          "int32 or int64, got %s", pa_dtype_name(dims->dtype));
    }
    if (dims->ndim != 1 || dims->dims[0] != y->ndim) {
        char s1[160], s2[160];
        return pa_rt_fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "aclopCompileAndExecute: op Fill: dims must be 1-D with one "
                          "entry per dimension of y %s, got shape %s",
                          pa_shape_str(y->dims, y->ndim, s1, sizeof s1), pa_shape_str(dims->dims, dims->ndim, s2,
                          sizeof s2));
    }
    /* a host constant's values were copied at load: they must be y's shape */
    if (dims->scratch != NULL && !dims->is_nz) {
        for (int32_t i = 0; i < y->ndim; i++) {
            int64_t v;
            if (dims->dtype == ACL_INT64) {
                memcpy(&v, (const char *)dims->scratch + 8 * (size_t)i, 8);
            } else {
                int32_t v32;
                memcpy(&v32, (const char *)dims->scratch + 4 * (size_t)i, 4);
                v = v32;
            }
            if (v != y->dims[i]) {
                char s1[160];
                return pa_rt_fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "aclopCompileAndExecute: op Fill: y shape %s must "
                                  "equal dims, whose entry %d is %lld", pa_shape_str(y->dims, y->ndim, s1, sizeof s1),
                                  (int)i, (long long)v);
            }
        }
    }
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    rc = from_aclnn(op, aclnnInplaceFillTensorGetWorkspaceSize(io->out[0].t, io->in[1].t, &ws, &ex));
    if (rc == ACL_SUCCESS) rc = pa_aclop_launch(op, ws, ex, stream, aclnnInplaceFillTensor);
    return rc;
}

/* ---- the table ---- */

static const char *const x_in[] = {"x"};
static const char *const y_out[] = {"y"};
static const char *const smsf_in[] = {"x", "mask"};
static const char *const smsf_grad_in[] = {"y_grad", "y", "mask"};
static const char *const x_grad_out[] = {"x_grad"};

static const pa_aclop_def smsf_def = {"ScaledMaskedSoftmax", 2, 1, smsf_in, y_out, run_smsf};
static const pa_aclop_def smsf_grad_def = {"ScaledMaskedSoftmaxGrad", 3, 1, smsf_grad_in, x_grad_out, run_smsf_grad};
static const pa_aclop_def identity_def = {"Identity", 1, 1, x_in, y_out, run_identity};
static const pa_aclop_def cast_def = {"Cast", 1, 1, x_in, y_out, run_cast};
static const char *const x12_in[] = {"x1", "x2"};
static const pa_aclop_def greater_def = {"Greater", 2, 1, x12_in, y_out, run_greater};
static const char *const fill_in[] = {"dims", "value"};
static const pa_aclop_def fill_def = {"Fill", 2, 1, fill_in, y_out, run_fill};

const pa_aclop_def *const pa_aclop_table[] = {&smsf_def, &smsf_grad_def, &identity_def, &cast_def, &greater_def,
                                               &fill_def, NULL};

const char *pa_aclop_names(void) {
    return "ScaledMaskedSoftmax, ScaledMaskedSoftmaxGrad, Identity, Cast, Greater and Fill";
}
