/* aclTensor: creation, queries, and the pa_tview snapshots ops plan with. */
#include "meta/pa_tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtype / format tables ---- */

size_t pa_dtype_size(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT: return 4;
    case ACL_FLOAT16: return 2;
    case ACL_INT8: return 1;
    case ACL_INT32: return 4;
    case ACL_UINT8: return 1;
    case ACL_INT16: return 2;
    case ACL_UINT16: return 2;
    case ACL_UINT32: return 4;
    case ACL_INT64: return 8;
    case ACL_UINT64: return 8;
    case ACL_DOUBLE: return 8;
    case ACL_BOOL: return 1;
    case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    case ACL_BF16: return 2;
    default: return 0;
    }
}

const char *pa_dtype_name(aclDataType dt) {
    switch (dt) {
    case ACL_DT_UNDEFINED: return "DT_UNDEFINED";
    case ACL_FLOAT: return "FLOAT";
    case ACL_FLOAT16: return "FLOAT16";
    case ACL_INT8: return "INT8";
    case ACL_INT32: return "INT32";
    case ACL_UINT8: return "UINT8";
    case ACL_INT16: return "INT16";
    case ACL_UINT16: return "UINT16";
    case ACL_UINT32: return "UINT32";
    case ACL_INT64: return "INT64";
    case ACL_UINT64: return "UINT64";
    case ACL_DOUBLE: return "DOUBLE";
    case ACL_BOOL: return "BOOL";
    case ACL_STRING: return "STRING";
    case ACL_COMPLEX64: return "COMPLEX64";
    case ACL_COMPLEX128: return "COMPLEX128";
    case ACL_BF16: return "BF16";
    case ACL_INT4: return "INT4";
    case ACL_UINT1: return "UINT1";
    case ACL_COMPLEX32: return "COMPLEX32";
    case ACL_HIFLOAT8: return "HIFLOAT8";
    case ACL_FLOAT8_E5M2: return "FLOAT8_E5M2";
    case ACL_FLOAT8_E4M3FN: return "FLOAT8_E4M3FN";
    case ACL_FLOAT8_E8M0: return "FLOAT8_E8M0";
    case ACL_FLOAT6_E3M2: return "FLOAT6_E3M2";
    case ACL_FLOAT6_E2M3: return "FLOAT6_E2M3";
    case ACL_FLOAT4_E2M1: return "FLOAT4_E2M1";
    case ACL_FLOAT4_E1M2: return "FLOAT4_E1M2";
    default: return "UNKNOWN_DTYPE";
    }
}

const char *pa_format_name(aclFormat fmt) {
    switch (fmt) {
    case ACL_FORMAT_UNDEFINED: return "UNDEFINED";
    case ACL_FORMAT_NCHW: return "NCHW";
    case ACL_FORMAT_NHWC: return "NHWC";
    case ACL_FORMAT_ND: return "ND";
    case ACL_FORMAT_NC1HWC0: return "NC1HWC0";
    case ACL_FORMAT_FRACTAL_Z: return "FRACTAL_Z";
    case ACL_FORMAT_NC1HWC0_C04: return "NC1HWC0_C04";
    case ACL_FORMAT_HWCN: return "HWCN";
    case ACL_FORMAT_NDHWC: return "NDHWC";
    case ACL_FORMAT_FRACTAL_NZ: return "FRACTAL_NZ";
    case ACL_FORMAT_NCDHW: return "NCDHW";
    case ACL_FORMAT_NDC1HWC0: return "NDC1HWC0";
    case ACL_FRACTAL_Z_3D: return "FRACTAL_Z_3D";
    case ACL_FORMAT_NC: return "NC";
    case ACL_FORMAT_NCL: return "NCL";
    case ACL_FORMAT_FRACTAL_NZ_C0_16: return "FRACTAL_NZ_C0_16";
    case ACL_FORMAT_FRACTAL_NZ_C0_32: return "FRACTAL_NZ_C0_32";
    case ACL_FORMAT_FRACTAL_NZ_C0_2: return "FRACTAL_NZ_C0_2";
    case ACL_FORMAT_FRACTAL_NZ_C0_4: return "FRACTAL_NZ_C0_4";
    case ACL_FORMAT_FRACTAL_NZ_C0_8: return "FRACTAL_NZ_C0_8";
    default: return "UNKNOWN_FORMAT";
    }
}

/* The ND family: row-major layouts whose view strides describe the data.
 * Everything else (5HD, fractal, UNDEFINED, unknown values) is private. */
bool pa_format_is_plain(aclFormat fmt) {
    switch (fmt) {
    case ACL_FORMAT_ND:
    case ACL_FORMAT_NCHW:
    case ACL_FORMAT_NHWC:
    case ACL_FORMAT_NCL:
    case ACL_FORMAT_NC:
    case ACL_FORMAT_NCDHW:
    case ACL_FORMAT_NDHWC:
    case ACL_FORMAT_HWCN:
        return true;
    default:
        return false;
    }
}

/* ---- creation ---- */

/* Checks the aclCreateTensor / aclInitTensor arguments. Returns 0 or a status
 * after recording a message naming `api`. */
static int check_tensor_args(const char *api, const int64_t *viewDims, uint64_t viewDimsNum,
                             const int64_t *storageDims, uint64_t storageDimsNum) {
    if (viewDims == NULL && viewDimsNum > 0) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: viewDims is NULL but viewDimsNum is %llu", api,
                       (unsigned long long)viewDimsNum);
    }
    if (storageDims == NULL && storageDimsNum > 0) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: storageDims is NULL but storageDimsNum is %llu", api,
                       (unsigned long long)storageDimsNum);
    }
    if (viewDimsNum > PA_MAX_DIMS) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: viewDimsNum must be at most %d, got %llu", api,
                       PA_MAX_DIMS, (unsigned long long)viewDimsNum);
    }
    if (storageDimsNum > PA_MAX_DIMS) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: storageDimsNum must be at most %d, got %llu", api,
                       PA_MAX_DIMS, (unsigned long long)storageDimsNum);
    }
    for (uint64_t i = 0; i < viewDimsNum; i++) {
        if (viewDims[i] < 0) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: viewDims[%llu] must be >= 0, got %lld", api,
                           (unsigned long long)i, (long long)viewDims[i]);
        }
    }
    /* A negative storage dim is accepted, as CANN does (ggml-cann computes the
     * storage of empty views as 1 + (0 - 1) * stride): it declares no storage,
     * so only an empty view can use it (pa_tensor_check_view). */
    return ACLNN_SUCCESS;
}

/* Fills *t from already-checked arguments. stride NULL = contiguous strides. */
static void fill_tensor(aclTensor *t, const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                        const int64_t *stride, int64_t offset, aclFormat format, const int64_t *storageDims,
                        uint64_t storageDimsNum, void *data) {
    memset(t, 0, sizeof *t);
    t->dtype = dataType;
    t->format = format;
    t->ndim = (int32_t)viewDimsNum;
    for (int32_t i = 0; i < t->ndim; i++) t->dims[i] = viewDims[i];
    if (stride != NULL) {
        for (int32_t i = 0; i < t->ndim; i++) t->strides[i] = stride[i];
    } else {
        /* contiguous; a dim of 0 or 1 contributes factor 1 so strides stay meaningful */
        int64_t s = 1;
        for (int32_t i = t->ndim - 1; i >= 0; i--) {
            t->strides[i] = s;
            int64_t d = t->dims[i] > 1 ? t->dims[i] : 1;
            if (!pa_mul_ok(s, d, &s)) s = INT64_MAX;
        }
    }
    t->offset = offset;
    t->storage_ndim = (int32_t)storageDimsNum;
    for (int32_t i = 0; i < t->storage_ndim; i++) t->storage_dims[i] = storageDims[i];
    t->data = data;
}

PA_API aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                                  const int64_t *stride, int64_t offset, aclFormat format,
                                  const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
    if (check_tensor_args("aclCreateTensor", viewDims, viewDimsNum, storageDims, storageDimsNum) != 0) {
        return NULL;
    }
    aclTensor *t = malloc(sizeof *t);
    if (t == NULL) {
        pa_set_errmsg("aclCreateTensor: out of host memory");
        return NULL;
    }
    fill_tensor(t, viewDims, viewDimsNum, dataType, stride, offset, format, storageDims, storageDimsNum,
                tensorData);
    if (!pa_handle_register(t, PA_HANDLE_TENSOR)) {
        free(t);
        pa_set_errmsg("aclCreateTensor: out of host memory for the handle registry");
        return NULL;
    }
    return t;
}

PA_API aclnnStatus aclInitTensor(aclTensor *tensor, const int64_t *viewDims, uint64_t viewDimsNum,
                                 aclDataType dataType, const int64_t *stride, int64_t offset, aclFormat format,
                                 const int64_t *storageDims, uint64_t storageDimsNum, void *tensorDataAddr) {
    /* aclTensor is opaque: the only tensors a caller can hold come from aclCreateTensor */
    int rc = pa_handle_check("aclInitTensor", "tensor", tensor, PA_HANDLE_TENSOR);
    if (rc != 0) return rc;
    rc = check_tensor_args("aclInitTensor", viewDims, viewDimsNum, storageDims, storageDimsNum);
    if (rc != 0) return rc;
    fill_tensor(tensor, viewDims, viewDimsNum, dataType, stride, offset, format, storageDims, storageDimsNum,
                tensorDataAddr);
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
    if (tensor == NULL) return ACLNN_SUCCESS;
    int rc = pa_handle_take("aclDestroyTensor", "tensor", tensor, PA_HANDLE_TENSOR);
    if (rc != 0) return rc;
    pa_handle_retire((aclTensor *)tensor, PA_HANDLE_TENSOR);
    return ACLNN_SUCCESS;
}

/* ---- queries ---- */

/* NULL -> 161001, not a live tensor -> 161002. */
static int check_tensor(const char *api, const aclTensor *t) {
    return pa_handle_check(api, "tensor", t, PA_HANDLE_TENSOR);
}

/* Returns a malloc'd copy of n int64 values (at least one slot, so a 0-d tensor
 * still gets a freeable pointer). CANN documents these arrays as new int64_t[n]
 * released with delete[]; ours come from malloc (for a trivially destructible
 * int64_t array the common C++ runtimes accept delete[] on it, and the Python
 * binding releases them with libc free). */
static int copy_dims(const char *api, const int64_t *src, int32_t n, int64_t **out, uint64_t *count) {
    int64_t *a = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (a == NULL) return pa_fail(ACLNN_ERR_INNER_NULLPTR, "%s: out of host memory", api);
    for (int32_t i = 0; i < n; i++) a[i] = src[i];
    if (n == 0) a[0] = 0;
    *out = a;
    *count = (uint64_t)n;
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims, uint64_t *viewDimsNum) {
    int rc = check_tensor("aclGetViewShape", tensor);
    if (rc != 0) return rc;
    if (viewDims == NULL || viewDimsNum == NULL) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewShape: %s is NULL",
                       viewDims == NULL ? "viewDims" : "viewDimsNum");
    }
    return copy_dims("aclGetViewShape", tensor->dims, tensor->ndim, viewDims, viewDimsNum);
}

PA_API aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims, uint64_t *storageDimsNum) {
    int rc = check_tensor("aclGetStorageShape", tensor);
    if (rc != 0) return rc;
    if (storageDims == NULL || storageDimsNum == NULL) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetStorageShape: %s is NULL",
                       storageDims == NULL ? "storageDims" : "storageDimsNum");
    }
    return copy_dims("aclGetStorageShape", tensor->storage_dims, tensor->storage_ndim, storageDims,
                     storageDimsNum);
}

PA_API aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue, uint64_t *stridesNum) {
    int rc = check_tensor("aclGetViewStrides", tensor);
    if (rc != 0) return rc;
    if (stridesValue == NULL || stridesNum == NULL) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewStrides: %s is NULL",
                       stridesValue == NULL ? "stridesValue" : "stridesNum");
    }
    return copy_dims("aclGetViewStrides", tensor->strides, tensor->ndim, stridesValue, stridesNum);
}

PA_API aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset) {
    int rc = check_tensor("aclGetViewOffset", tensor);
    if (rc != 0) return rc;
    if (offset == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewOffset: offset is NULL");
    *offset = tensor->offset;
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format) {
    int rc = check_tensor("aclGetFormat", tensor);
    if (rc != 0) return rc;
    if (format == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat: format is NULL");
    *format = tensor->format;
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType) {
    int rc = check_tensor("aclGetDataType", tensor);
    if (rc != 0) return rc;
    if (dataType == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetDataType: dataType is NULL");
    *dataType = tensor->dtype;
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclSetRawTensorAddr(aclTensor *tensor, void *addr) {
    int rc = check_tensor("aclSetRawTensorAddr", tensor);
    if (rc != 0) return rc;
    tensor->data = addr;
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclGetRawTensorAddr(const aclTensor *tensor, void **addr) {
    int rc = check_tensor("aclGetRawTensorAddr", tensor);
    if (rc != 0) return rc;
    if (addr == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetRawTensorAddr: addr is NULL");
    *addr = tensor->data;
    return ACLNN_SUCCESS;
}

/* Prints a one-line description of each tensor to stderr (no device data is
 * read: the emulator's "dump" is a description of what was passed). */
PA_API aclnnStatus aclDumpOpTensors(const char *opType, const char *opName, aclTensor **tensors,
                                    size_t inputTensorNum, size_t outputTensorNum, aclrtStream stream) {
    PA_UNUSED(stream);
    const size_t total = inputTensorNum + outputTensorNum;
    if (total < inputTensorNum) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "aclDumpOpTensors: inputTensorNum + outputTensorNum overflows");
    }
    if (tensors == NULL && total > 0) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "aclDumpOpTensors: tensors is NULL but %zu tensors were announced",
                       total);
    }
    for (size_t i = 0; i < total; i++) {
        const aclTensor *t = tensors[i];
        char shape[256];
        if (!pa_handle_live(t, PA_HANDLE_TENSOR)) {
            fprintf(stderr, "[pyaclnn dump] %s/%s %s[%zu]: %s\n", opType ? opType : "?", opName ? opName : "?",
                    i < inputTensorNum ? "input" : "output", i < inputTensorNum ? i : i - inputTensorNum,
                    t == NULL ? "NULL" : "invalid tensor");
            continue;
        }
        fprintf(stderr, "[pyaclnn dump] %s/%s %s[%zu]: %s %s %s offset=%lld data=%p\n", opType ? opType : "?",
                opName ? opName : "?", i < inputTensorNum ? "input" : "output",
                i < inputTensorNum ? i : i - inputTensorNum, pa_dtype_name(t->dtype), pa_format_name(t->format),
                pa_shape_str(t->dims, t->ndim, shape, sizeof shape), (long long)t->offset, t->data);
    }
    return ACLNN_SUCCESS;
}

/* ---- snapshots ---- */

bool pa_tensor_is_valid(const aclTensor *t) { return pa_handle_live(t, PA_HANDLE_TENSOR); }

/* Product of the view dims; -1 if it overflows int64. */
int64_t pa_tensor_numel(const aclTensor *t) {
    int64_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++) {
        if (!pa_mul_ok(n, t->dims[i], &n)) return -1;
    }
    return n;
}

pa_tview pa_tview_of(const aclTensor *t) {
    pa_tview v;
    memset(&v, 0, sizeof v);
    v.dtype = t->dtype;
    v.ndim = t->ndim;
    for (int32_t i = 0; i < t->ndim; i++) {
        v.dims[i] = t->dims[i];
        v.strides[i] = t->dims[i] == 1 ? 0 : t->strides[i]; /* never multiplied by a nonzero index */
    }
    v.offset = t->offset;
    v.storage_elems = 1;
    for (int32_t i = 0; i < t->storage_ndim; i++) {
        if (t->storage_dims[i] < 0) {
            v.storage_elems = 0; /* declares no storage */
            break;
        }
        if (!pa_mul_ok(v.storage_elems, t->storage_dims[i], &v.storage_elems)) v.storage_elems = -1;
        if (v.storage_elems < 0) break;
    }
    /* A view whose storage was declared from its offset on (accepted by
     * pa_tensor_check_view) covers [0, offset + extent): the launch-time
     * address check covers all of that. */
    int64_t last = t->offset;
    bool empty = false;
    for (int32_t i = 0; i < t->ndim; i++) {
        empty = empty || t->dims[i] == 0;
        if (t->dims[i] > 1 && t->strides[i] > 0) {
            int64_t span;
            if (pa_mul_ok(t->dims[i] - 1, t->strides[i], &span) && !__builtin_add_overflow(last, span, &last)) continue;
            last = INT64_MAX - 1;
        }
    }
    if (!empty && v.storage_elems >= 0 && last >= v.storage_elems) v.storage_elems = last + 1;
    v.base = t->data;
    return v;
}

int pa_tensor_check_view(const char *api, const char *name, const aclTensor *t) {
    char sh[160], st[160], sd[160];
#define PA_VIEW_ARGS                                                                                          \
    pa_shape_str(t->dims, t->ndim, sh, sizeof sh), pa_shape_str(t->strides, t->ndim, st, sizeof st),        \
        (long long)t->offset
    if (t->offset < 0) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s view offset must be >= 0, got %lld", api, name,
                       (long long)t->offset);
    }
    bool empty = false;
    for (int32_t i = 0; i < t->ndim; i++) {
        if (t->strides[i] < 0 && t->dims[i] != 1) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s strides must be non-negative, got %s", api, name,
                           pa_shape_str(t->strides, t->ndim, st, sizeof st));
        }
        if (t->dims[i] == 0) empty = true;
    }
    int64_t storage = 1, bytes = 0;
    bool too_big = false;
    const int64_t esize = pa_dtype_size(t->dtype) ? (int64_t)pa_dtype_size(t->dtype) : 1;
    for (int32_t i = 0; i < t->storage_ndim && !too_big; i++) {
        if (t->storage_dims[i] < 0) { /* accepted by aclCreateTensor: declares no storage */
            storage = 0;
            break;
        }
        too_big = !pa_mul_ok(storage, t->storage_dims[i], &storage);
    }
    if (!too_big) too_big = !pa_mul_ok(storage, esize, &bytes);
    if (too_big || bytes > PA_MAX_STORAGE_BYTES) {
        char got[64] = "more than 2^63";
        if (!too_big) snprintf(got, sizeof got, "%lld", (long long)bytes);
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: %s storage (shape %s, %s) must be at most 2^%d bytes, got %s bytes", api, name,
                       pa_shape_str(t->storage_dims, t->storage_ndim, sd, sizeof sd), pa_dtype_name(t->dtype),
                       PA_MAX_STORAGE_BYTES_LOG2, got);
    }
    if (empty) {
        /* no element is addressed; element 0's address must still be computable */
        if (t->offset > storage) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s view (shape %s, strides %s, offset %lld) is empty, but its offset lies past its "
                           "storage of %lld elements (storage shape %s)",
                           api, name, PA_VIEW_ARGS, (long long)storage,
                           pa_shape_str(t->storage_dims, t->storage_ndim, sd, sizeof sd));
        }
        return ACLNN_SUCCESS;
    }
    /* last < storage below also bounds the byte extent by `bytes` */
    int64_t last = t->offset; /* element index of the farthest element */
    for (int32_t i = 0; i < t->ndim; i++) {
        int64_t span;
        if (t->dims[i] == 1) continue; /* a size-1 dim may carry any stride */
        if (!pa_mul_ok(t->dims[i] - 1, t->strides[i], &span) || __builtin_add_overflow(last, span, &last)) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s view (shape %s, strides %s, offset %lld) reaches beyond element 2^63 (int64 "
                           "overflow), past its storage of %lld elements (storage shape %s)",
                           api, name, PA_VIEW_ARGS, (long long)storage,
                           pa_shape_str(t->storage_dims, t->storage_ndim, sd, sizeof sd));
        }
    }
    /* CANN accepts a storage counted from the view's offset (ggml-cann declares
     * some that way): what the view spans from its offset must fit; the
     * launch checks that every byte from the base lies in one allocation. */
    if (last >= storage && last - t->offset < storage && last >= PA_MAX_STORAGE_BYTES / esize) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: %s view (shape %s, strides %s, offset %lld) reaches element %lld, beyond 2^%d bytes",
                       api, name, PA_VIEW_ARGS, (long long)last, PA_MAX_STORAGE_BYTES_LOG2);
    }
    if (last >= storage && last - t->offset >= storage) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: %s view (shape %s, strides %s, offset %lld) reaches element %lld, past its storage of "
                       "%lld elements (storage shape %s)",
                       api, name, PA_VIEW_ARGS, (long long)last, (long long)storage,
                       pa_shape_str(t->storage_dims, t->storage_ndim, sd, sizeof sd));
    }
    return ACLNN_SUCCESS;
#undef PA_VIEW_ARGS
}

/* Row-major contiguous: every dim of size > 1 has the stride of the dims after it
 * multiplied together (dims of size 1 may carry any stride). The offset is free. */
bool pa_tview_is_contiguous(const pa_tview *v) {
    int64_t expect = 1;
    for (int32_t i = v->ndim - 1; i >= 0; i--) {
        if (v->dims[i] == 0) return true;
        if (v->dims[i] != 1 && v->strides[i] != expect) return false;
        if (!pa_mul_ok(expect, v->dims[i], &expect)) return false;
    }
    return true;
}

const char *pa_shape_str(const int64_t *dims, int32_t ndim, char *buf, size_t cap) {
    if (buf == NULL || cap == 0) return "";
    size_t pos = 0;
    buf[0] = '\0';
    int w = snprintf(buf, cap, "[");
    if (w > 0) pos = (size_t)w < cap ? (size_t)w : cap - 1;
    for (int32_t i = 0; i < ndim && pos < cap - 1; i++) {
        w = snprintf(buf + pos, cap - pos, i == 0 ? "%lld" : ",%lld", (long long)dims[i]);
        if (w < 0) break;
        pos += (size_t)w < cap - pos ? (size_t)w : cap - pos - 1;
    }
    if (pos < cap - 1) snprintf(buf + pos, cap - pos, "]");
    return buf;
}
