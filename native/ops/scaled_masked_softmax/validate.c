/* aclnnScaledMaskedSoftmaxGetWorkspaceSize argument checks, in the order of the
 * vendor's aclnn layer: NULLs (561103, as the vendor's code; its doc says
 * 161001), dtypes, ranks, mask broadcast, S2 range; then what pyaclnn adds for
 * memory safety (y shape = x shape, no empty dims, plain formats, views inside
 * their storage, contiguous y);
 * fixedTriuMask last, as in the vendor's code. Every message names the
 * parameter, what was expected and what was given. */
#include "ops/scaled_masked_softmax/smsf.h"

#define SHAPE(t, buf) pa_shape_str((t)->dims, (t)->ndim, (buf), sizeof(buf))

static bool is_float_dtype(aclDataType dt) { return dt == ACL_FLOAT || dt == ACL_FLOAT16 || dt == ACL_BF16; }

aclnnStatus pa_smsf_validate(const aclTensor *x, const aclTensor *mask, bool fixedTriuMask, const aclTensor *y,
                             const uint64_t *workspaceSize, aclOpExecutor *const *executor) {
    /* 1. NULL tensors: ACLNN_ERR_INNER_NULLPTR like the vendor's code */
    const struct { const char *name; const aclTensor *t; } ts[] = {{"x", x}, {"mask", mask}, {"y", y}};
    for (size_t i = 0; i < 3; i++) {
        if (ts[i].t == NULL) return pa_fail(ACLNN_ERR_INNER_NULLPTR, PA_SMSF_WS_API ": %s is NULL", ts[i].name);
    }
    if (workspaceSize == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, PA_SMSF_WS_API ": workspaceSize is NULL");
    if (executor == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, PA_SMSF_WS_API ": executor is NULL");
    for (size_t i = 0; i < 3; i++) {
        if (!pa_tensor_is_valid(ts[i].t)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSF_WS_API ": %s is not a live aclTensor", ts[i].name);
        }
    }

    /* 2. dtypes */
    if (!is_float_dtype(x->dtype)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSF_WS_API ": x dtype must be FLOAT, FLOAT16 or BF16, got %s",
                       pa_dtype_name(x->dtype));
    }
    if (mask->dtype != ACL_BOOL) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSF_WS_API ": mask dtype must be BOOL, got %s",
                       pa_dtype_name(mask->dtype));
    }
    if (y->dtype != x->dtype) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSF_WS_API ": y dtype must equal x dtype %s, got %s",
                       pa_dtype_name(x->dtype), pa_dtype_name(y->dtype));
    }

    /* 3. ranks */
    char s1[160], s2[160];
    for (size_t i = 0; i < 3; i++) {
        if (ts[i].t->ndim != 4) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSF_WS_API ": %s must be 4-D [B,N,S1,S2], got %d-D %s",
                           ts[i].name, (int)ts[i].t->ndim, SHAPE(ts[i].t, s1));
        }
    }

    /* 4. mask broadcast */
    const int64_t B = x->dims[0], N = x->dims[1], S1 = x->dims[2], S2 = x->dims[3];
    if (mask->dims[2] != S1 || mask->dims[3] != S2 || (mask->dims[0] != 1 && mask->dims[0] != B) ||
        (mask->dims[1] != 1 && mask->dims[1] != N)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       PA_SMSF_WS_API ": mask shape must be [B or 1, N or 1, S1, S2] = [%lld or 1,%lld or 1,%lld,%lld] "
                       "to broadcast against x %s, got %s",
                       (long long)B, (long long)N, (long long)S1, (long long)S2, SHAPE(x, s1), SHAPE(mask, s2));
    }

    /* 5. S2 in (0, 4096] */
    if (S2 <= 0 || S2 > PA_SMSF_MAX_S2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSF_WS_API ": x last dim S2 must be in (0, %d], got %lld",
                       PA_SMSF_MAX_S2, (long long)S2);
    }

    /* pyaclnn's additions (the vendor's aclnn layer leaves them to later layers) */
    for (int i = 0; i < 4; i++) {
        if (y->dims[i] != x->dims[i]) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSF_WS_API ": y shape must equal x shape %s, got %s",
                           SHAPE(x, s1), SHAPE(y, s2));
        }
    }
    if (B <= 0 || N <= 0 || S1 <= 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       PA_SMSF_WS_API ": x dims must all be > 0 (empty tensors are not supported), got %s",
                       SHAPE(x, s1));
    }
    if (pa_tensor_numel(x) < 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSF_WS_API ": x shape %s has too many elements", SHAPE(x, s1));
    }
    for (size_t i = 0; i < 3; i++) {
        if (!pa_format_is_plain(ts[i].t->format)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           PA_SMSF_WS_API ": %s format %s is not supported; expected ND (or another plain format "
                           "such as NCHW)",
                           ts[i].name, pa_format_name(ts[i].t->format));
        }
    }
    for (size_t i = 0; i < 3; i++) {
        const int rc = pa_tensor_check_view(PA_SMSF_WS_API, ts[i].name, ts[i].t);
        if (rc != 0) return rc;
    }
    const pa_tview yv = pa_tview_of(y);
    if (!pa_tview_is_contiguous(&yv)) {
        char s3[160];
        const int64_t want[4] = {N * S1 * S2, S1 * S2, S2, 1};
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       PA_SMSF_WS_API ": y must be contiguous (strides %s for shape %s), got strides %s",
                       pa_shape_str(want, 4, s1, sizeof s1), SHAPE(y, s2), pa_shape_str(y->strides, 4, s3, sizeof s3));
    }

    /* 6. attributes */
    if (fixedTriuMask) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSF_WS_API ": fixedTriuMask=true is not supported; only false");
    }
    return ACLNN_SUCCESS;
}
