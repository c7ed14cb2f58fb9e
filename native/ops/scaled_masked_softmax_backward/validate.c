/* aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize argument checks, in order:
 * NULLs, dtypes, formats, ranks and shapes, sizes, views, out contiguity,
 * fixTriuMask. Every message names the parameter, what was expected and what
 * was given. */
#include "ops/scaled_masked_softmax_backward/smsb.h"

#include <stdio.h>

#define SHAPE(t, buf) pa_shape_str((t)->dims, (t)->ndim, (buf), sizeof(buf))

static int check_dtype_float(const char *name, const aclTensor *t) {
    if (t->dtype != ACL_FLOAT && t->dtype != ACL_FLOAT16 && t->dtype != ACL_BF16) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSB_WS_API ": %s dtype must be FLOAT, FLOAT16 or BF16, got %s",
                       name, pa_dtype_name(t->dtype));
    }
    return 0;
}

static int check_format(const char *name, const aclTensor *t) {
    if (!pa_format_is_plain(t->format)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       PA_SMSB_WS_API ": %s format %s is not supported; expected ND (or another plain format such "
                       "as NCHW)",
                       name, pa_format_name(t->format));
    }
    return 0;
}

static int check_rank4(const char *name, const aclTensor *t) {
    if (t->ndim != 4) {
        char s[160];
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSB_WS_API ": %s must be 4-D [B,N,S1,S2], got %d-D %s", name,
                       (int)t->ndim, SHAPE(t, s));
    }
    return 0;
}

static bool same_shape(const aclTensor *a, const aclTensor *b) {
    for (int i = 0; i < 4; i++) {
        if (a->dims[i] != b->dims[i]) return false;
    }
    return true;
}

aclnnStatus pa_smsb_validate(const aclTensor *g, const aclTensor *y, const aclTensor *mask, bool fixTriuMask,
                             const aclTensor *out, const uint64_t *workspaceSize, aclOpExecutor *const *executor) {
    /* 1. NULL pointers */
    const struct { const char *name; const void *p; } ptrs[] = {
        {"gradOutput", g}, {"y", y}, {"mask", mask}, {"out", out},
        {"workspaceSize", workspaceSize}, {"executor", executor},
    };
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) {
        if (ptrs[i].p == NULL) {
            return pa_fail(ACLNN_ERR_PARAM_NULLPTR, PA_SMSB_WS_API ": %s is NULL", ptrs[i].name);
        }
    }
    const struct { const char *name; const aclTensor *t; } ts[] = {
        {"gradOutput", g}, {"y", y}, {"mask", mask}, {"out", out},
    };
    int rc;
    for (size_t i = 0; i < 4; i++) {
        if ((rc = pa_handle_check(PA_SMSB_WS_API, ts[i].name, ts[i].t, PA_HANDLE_TENSOR)) != 0) return rc;
    }

    /* 2. dtypes */
    rc = check_dtype_float("gradOutput", g);
    if (rc != 0) return rc;
    if (y->dtype != g->dtype) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSB_WS_API ": y dtype must equal gradOutput dtype %s, got %s",
                       pa_dtype_name(g->dtype), pa_dtype_name(y->dtype));
    }
    if (mask->dtype != ACL_BOOL) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSB_WS_API ": mask dtype must be BOOL, got %s",
                       pa_dtype_name(mask->dtype));
    }
    if (out->dtype != g->dtype) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSB_WS_API ": out dtype must equal gradOutput dtype %s, got %s",
                       pa_dtype_name(g->dtype), pa_dtype_name(out->dtype));
    }

    /* 3. formats */
    for (size_t i = 0; i < 4; i++) {
        if ((rc = check_format(ts[i].name, ts[i].t)) != 0) return rc;
    }

    /* 4. ranks and shapes */
    for (size_t i = 0; i < 4; i++) {
        if ((rc = check_rank4(ts[i].name, ts[i].t)) != 0) return rc;
    }
    char s1[160], s2[160];
    if (!same_shape(y, g)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSB_WS_API ": y shape must equal gradOutput shape %s, got %s",
                       SHAPE(g, s1), SHAPE(y, s2));
    }
    if (!same_shape(out, g)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSB_WS_API ": out shape must equal gradOutput shape %s, got %s",
                       SHAPE(g, s1), SHAPE(out, s2));
    }
    const int64_t B = g->dims[0], N = g->dims[1], S1 = g->dims[2], S2 = g->dims[3];
    if (mask->dims[2] != S1 || mask->dims[3] != S2 || (mask->dims[0] != 1 && mask->dims[0] != B) ||
        (mask->dims[1] != 1 && mask->dims[1] != N)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       PA_SMSB_WS_API ": mask shape must be [B or 1, N or 1, S1, S2] = [%lld or 1,%lld or 1,%lld,%lld] "
                       "to broadcast against gradOutput %s, got %s",
                       (long long)B, (long long)N, (long long)S1, (long long)S2, SHAPE(g, s1), SHAPE(mask, s2));
    }

    /* 5. sizes: S2 in (0, 4096], no empty dims, element count within int64 */
    if (S2 <= 0 || S2 > PA_SMSB_MAX_S2) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSB_WS_API ": gradOutput last dim S2 must be in (0, %d], got %lld",
                       PA_SMSB_MAX_S2, (long long)S2);
    }
    if (B <= 0 || N <= 0 || S1 <= 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       PA_SMSB_WS_API ": gradOutput dims must all be > 0 (empty tensors are not supported), got %s",
                       SHAPE(g, s1));
    }
    if (pa_tensor_numel(g) < 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSB_WS_API ": gradOutput shape %s has too many elements",
                       SHAPE(g, s1));
    }

    /* 6. views inside their storage (inputs may be non-contiguous) */
    for (size_t i = 0; i < 4; i++) {
        if ((rc = pa_tensor_check_view(PA_SMSB_WS_API, ts[i].name, ts[i].t)) != 0) return rc;
    }

    /* 7. out must be contiguous (an offset is fine) */
    const pa_tview ov = pa_tview_of(out);
    if (!pa_tview_is_contiguous(&ov)) {
        char s3[160];
        const int64_t want[4] = {N * S1 * S2, S1 * S2, S2, 1};
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       PA_SMSB_WS_API ": out must be contiguous (strides %s for shape %s), got strides %s",
                       pa_shape_str(want, 4, s1, sizeof s1), SHAPE(out, s2),
                       pa_shape_str(out->strides, 4, s3, sizeof s3));
    }

    /* 8. attributes */
    if (fixTriuMask) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, PA_SMSB_WS_API ": fixTriuMask=true is not supported; only false");
    }
    return ACLNN_SUCCESS;
}
