/* acl_base.h's host-side descriptors: aclDataBuffer (an address and a size the
 * caller owns) and aclTensorDesc (type, shape, format and the optional extras
 * CANN lets a caller attach: ranges, name, constant data, placement). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_base.h"
#include "runtime/pa_desc.h"
#include "runtime/pa_rt_base.h"

/* ---------------------------------------------------------------------------
 * aclDataBuffer
 * ------------------------------------------------------------------------- */

#define PA_DATABUF_MAGIC 0x44425546u /* "DBUF" */

struct aclDataBuffer {
    uint32_t magic;
    void *data;
    size_t size;
};

PA_API aclDataBuffer *aclCreateDataBuffer(void *data, size_t size) {
    aclDataBuffer *b = malloc(sizeof *b);
    if (b == NULL) {
        pa_rt_fail(ACL_ERROR_BAD_ALLOC, "aclCreateDataBuffer: out of host memory");
        return NULL;
    }
    b->magic = PA_DATABUF_MAGIC;
    b->data = data;
    b->size = size;
    return b;
}

PA_API aclError aclDestroyDataBuffer(const aclDataBuffer *dataBuffer) {
    if (dataBuffer == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclDestroyDataBuffer: dataBuffer must not be NULL");
    }
    aclDataBuffer *b = (aclDataBuffer *)(uintptr_t)dataBuffer;
    b->magic = 0;
    free(b);
    return ACL_SUCCESS;
}

PA_API aclError aclUpdateDataBuffer(aclDataBuffer *dataBuffer, void *data, size_t size) {
    if (dataBuffer == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclUpdateDataBuffer: dataBuffer must not be NULL");
    }
    dataBuffer->data = data;
    dataBuffer->size = size;
    return ACL_SUCCESS;
}

PA_API void *aclGetDataBufferAddr(const aclDataBuffer *dataBuffer) {
    return dataBuffer == NULL ? NULL : dataBuffer->data;
}

PA_API uint32_t aclGetDataBufferSize(const aclDataBuffer *dataBuffer) {
    if (dataBuffer == NULL) return 0;
    return dataBuffer->size > UINT32_MAX ? UINT32_MAX : (uint32_t)dataBuffer->size;
}

PA_API size_t aclGetDataBufferSizeV2(const aclDataBuffer *dataBuffer) {
    return dataBuffer == NULL ? 0 : dataBuffer->size;
}

/* ---------------------------------------------------------------------------
 * aclTensorDesc
 * ------------------------------------------------------------------------- */

#define PA_UNKNOWN_RANK_DIM (-2)

typedef struct {
    int n;
    int64_t *dims;
} pa_shape;

typedef struct {
    size_t n;
    int64_t (*r)[2];
} pa_ranges;

struct aclTensorDesc {
    aclDataType dtype;
    aclFormat format, origin_format;
    pa_shape shape, origin_shape;
    pa_ranges shape_range, value_range;
    char *name, *dynamic_input;
    void *const_data;
    size_t const_len;
    aclMemType placement;
};

static void *dup_bytes(const void *p, size_t n) {
    void *q = malloc(n == 0 ? 1 : n);
    if (q != NULL && n > 0) memcpy(q, p, n);
    return q;
}

/* Validates and copies a shape; -1 (unknown) and the lone -2 (unknown rank) are allowed. */
static aclError shape_set(const char *api, pa_shape *s, int numDims, const int64_t *dims) {
    if (numDims < 0) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: numDims must be >= 0, got %d", api, numDims);
    if (numDims > 0 && dims == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: dims must not be NULL when numDims (%d) > 0", api, numDims);
    }
    for (int i = 0; i < numDims; i++) {
        if (dims[i] < -1 && !(dims[i] == PA_UNKNOWN_RANK_DIM && numDims == 1)) {
            return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                              "%s: dims[%d] must be >= 0, -1 (unknown) or a lone -2 (unknown rank), got %lld", api, i,
                              (long long)dims[i]);
        }
    }
    int64_t *copy = dup_bytes(dims, (size_t)numDims * sizeof *dims);
    if (copy == NULL) return pa_rt_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", api);
    free(s->dims);
    s->dims = copy;
    s->n = numDims;
    return ACL_SUCCESS;
}

static aclError ranges_set(const char *api, pa_ranges *r, size_t count, int64_t (*ranges)[2]) {
    if (count > 0 && ranges == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: the range array must not be NULL when its count (%zu) > 0",
                          api, count);
    }
    if (count > SIZE_MAX / sizeof *ranges) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: count %zu is too large", api, count);
    }
    int64_t(*copy)[2] = dup_bytes(ranges, count * sizeof *ranges);
    if (copy == NULL) return pa_rt_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", api);
    free(r->r);
    r->r = copy;
    r->n = count;
    return ACL_SUCCESS;
}

static bool format_valid(aclFormat f) {
    switch (f) {
    case ACL_FORMAT_UNDEFINED: case ACL_FORMAT_NCHW: case ACL_FORMAT_NHWC: case ACL_FORMAT_ND:
    case ACL_FORMAT_NC1HWC0: case ACL_FORMAT_FRACTAL_Z: case ACL_FORMAT_NC1HWC0_C04: case ACL_FORMAT_HWCN:
    case ACL_FORMAT_NDHWC: case ACL_FORMAT_FRACTAL_NZ: case ACL_FORMAT_NCDHW: case ACL_FORMAT_NDC1HWC0:
    case ACL_FRACTAL_Z_3D: case ACL_FORMAT_NC: case ACL_FORMAT_NCL: case ACL_FORMAT_FRACTAL_NZ_C0_16:
    case ACL_FORMAT_FRACTAL_NZ_C0_32: case ACL_FORMAT_FRACTAL_NZ_C0_2: case ACL_FORMAT_FRACTAL_NZ_C0_4:
    case ACL_FORMAT_FRACTAL_NZ_C0_8: return true;
    default: return false;
    }
}

static aclError check_format(const char *api, aclFormat f) {
    if (format_valid(f)) return ACL_SUCCESS;
    return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: format %d is not an aclFormat", api, (int)f);
}

#define REQUIRE_DESC(api, d)                                                                                \
    do {                                                                                                    \
        if ((d) == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: desc must not be NULL", (api));   \
    } while (0)

PA_API void aclDestroyTensorDesc(const aclTensorDesc *desc) {
    if (desc == NULL) return;
    aclTensorDesc *d = (aclTensorDesc *)(uintptr_t)desc;
    free(d->shape.dims);
    free(d->origin_shape.dims);
    free(d->shape_range.r);
    free(d->value_range.r);
    free(d->name);
    free(d->dynamic_input);
    free(d->const_data);
    free(d);
}

PA_API aclTensorDesc *aclCreateTensorDesc(aclDataType dataType, int numDims, const int64_t *dims, aclFormat format) {
    const char *api = "aclCreateTensorDesc";
    if (check_format(api, format) != ACL_SUCCESS) return NULL;
    aclTensorDesc *d = calloc(1, sizeof *d);
    if (d == NULL) {
        pa_rt_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", api);
        return NULL;
    }
    d->dtype = dataType;
    d->format = d->origin_format = format;
    d->placement = ACL_MEMTYPE_DEVICE;
    if (shape_set(api, &d->shape, numDims, dims) != ACL_SUCCESS ||
        shape_set(api, &d->origin_shape, numDims, dims) != ACL_SUCCESS) {
        aclDestroyTensorDesc(d);
        return NULL;
    }
    return d;
}

PA_API aclError aclSetTensorShapeRange(aclTensorDesc *desc, size_t dimsCount,
                                       int64_t dimsRange[][ACL_TENSOR_SHAPE_RANGE_NUM]) {
    REQUIRE_DESC("aclSetTensorShapeRange", desc);
    for (size_t i = 0; dimsRange != NULL && i < dimsCount; i++) {
        if (dimsRange[i][0] < 0 || (dimsRange[i][1] != -1 && dimsRange[i][1] < dimsRange[i][0])) {
            return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                              "aclSetTensorShapeRange: dimsRange[%zu] must be [min >= 0, max >= min or -1], got "
                              "[%lld, %lld]",
                              i, (long long)dimsRange[i][0], (long long)dimsRange[i][1]);
        }
    }
    return ranges_set("aclSetTensorShapeRange", &desc->shape_range, dimsCount, dimsRange);
}

PA_API aclError aclSetTensorValueRange(aclTensorDesc *desc, size_t valueCount,
                                       int64_t valueRange[][ACL_TENSOR_VALUE_RANGE_NUM]) {
    REQUIRE_DESC("aclSetTensorValueRange", desc);
    return ranges_set("aclSetTensorValueRange", &desc->value_range, valueCount, valueRange);
}

PA_API aclDataType aclGetTensorDescType(const aclTensorDesc *desc) {
    return desc == NULL ? ACL_DT_UNDEFINED : desc->dtype;
}

PA_API aclFormat aclGetTensorDescFormat(const aclTensorDesc *desc) {
    return desc == NULL ? ACL_FORMAT_UNDEFINED : desc->format;
}

/* Element count; 0 if a dim is unknown or the product overflows. */
static size_t element_count(const aclTensorDesc *d) {
    size_t n = 1;
    for (int i = 0; i < d->shape.n; i++) {
        int64_t v = d->shape.dims[i];
        if (v < 0) return 0;
        if (v != 0 && n > SIZE_MAX / (uint64_t)v) return 0;
        n *= (size_t)v;
    }
    return n;
}

PA_API size_t aclGetTensorDescElementCount(const aclTensorDesc *desc) {
    return desc == NULL ? 0 : element_count(desc);
}

PA_API size_t aclGetTensorDescSize(const aclTensorDesc *desc) {
    if (desc == NULL) return 0;
    size_t n = element_count(desc), es = aclDataTypeSize(desc->dtype);
    if (es != 0 && n > SIZE_MAX / es) return 0;
    return n * es;
}

PA_API size_t aclGetTensorDescNumDims(const aclTensorDesc *desc) {
    if (desc == NULL) return 0;
    if (desc->shape.n == 1 && desc->shape.dims[0] == PA_UNKNOWN_RANK_DIM) return (size_t)ACL_UNKNOWN_RANK;
    return (size_t)desc->shape.n;
}

PA_API aclError aclGetTensorDescDimV2(const aclTensorDesc *desc, size_t index, int64_t *dimSize) {
    const char *api = "aclGetTensorDescDimV2";
    REQUIRE_DESC(api, desc);
    if (dimSize == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: dimSize must not be NULL", api);
    if (index >= (size_t)desc->shape.n) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: index must be < numDims (%d), got %zu", api, desc->shape.n,
                          index);
    }
    *dimSize = desc->shape.dims[index];
    return ACL_SUCCESS;
}

PA_API int64_t aclGetTensorDescDim(const aclTensorDesc *desc, size_t index) {
    int64_t v = -1;
    return aclGetTensorDescDimV2(desc, index, &v) == ACL_SUCCESS ? v : -1;
}

/* Without a shape range, a dim's range is [dim, dim]. */
PA_API aclError aclGetTensorDescDimRange(const aclTensorDesc *desc, size_t index, size_t dimRangeNum,
                                         int64_t *dimRange) {
    const char *api = "aclGetTensorDescDimRange";
    REQUIRE_DESC(api, desc);
    if (dimRange == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: dimRange must not be NULL", api);
    if (dimRangeNum < ACL_TENSOR_SHAPE_RANGE_NUM) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: dimRangeNum must be >= %d, got %zu", api,
                          ACL_TENSOR_SHAPE_RANGE_NUM, dimRangeNum);
    }
    if (index >= (size_t)desc->shape.n) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: index must be < numDims (%d), got %zu", api, desc->shape.n,
                          index);
    }
    if (index < desc->shape_range.n) {
        dimRange[0] = desc->shape_range.r[index][0];
        dimRange[1] = desc->shape_range.r[index][1];
    } else {
        dimRange[0] = dimRange[1] = desc->shape.dims[index];
    }
    return ACL_SUCCESS;
}

static aclError set_string(const char *api, char **slot, const char *s) {
    char *copy = NULL;
    if (s != NULL && (copy = dup_bytes(s, strlen(s) + 1)) == NULL) {
        return pa_rt_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", api);
    }
    free(*slot);
    *slot = copy;
    return ACL_SUCCESS;
}

PA_API void aclSetTensorDescName(aclTensorDesc *desc, const char *name) {
    if (desc != NULL) (void)set_string("aclSetTensorDescName", &desc->name, name);
}

PA_API const char *aclGetTensorDescName(aclTensorDesc *desc) {
    return desc == NULL || desc->name == NULL ? "" : desc->name;
}

/* Only the identity conversion is emulated: a copy with the same format. */
PA_API aclError aclTransTensorDescFormat(const aclTensorDesc *srcDesc, aclFormat dstFormat, aclTensorDesc **dstDesc) {
    const char *api = "aclTransTensorDescFormat";
    if (srcDesc == NULL || dstDesc == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: srcDesc and dstDesc must not be NULL", api);
    }
    aclError rc = check_format(api, dstFormat);
    if (rc != ACL_SUCCESS) return rc;
    if (dstFormat != srcDesc->format) {
        return pa_rt_fail(ACL_ERROR_API_NOT_SUPPORT,
                          "%s: converting format %d to %d is not emulated (only to the same format)", api,
                          (int)srcDesc->format, (int)dstFormat);
    }
    aclTensorDesc *d = aclCreateTensorDesc(srcDesc->dtype, srcDesc->shape.n, srcDesc->shape.dims, dstFormat);
    if (d == NULL) return pa_rt_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", api);
    *dstDesc = d;
    return ACL_SUCCESS;
}

PA_API aclError aclSetTensorFormat(aclTensorDesc *desc, aclFormat format) {
    REQUIRE_DESC("aclSetTensorFormat", desc);
    aclError rc = check_format("aclSetTensorFormat", format);
    if (rc == ACL_SUCCESS) desc->format = format;
    return rc;
}

PA_API aclError aclSetTensorStorageFormat(aclTensorDesc *desc, aclFormat format) {
    return aclSetTensorFormat(desc, format);
}

PA_API aclError aclSetTensorShape(aclTensorDesc *desc, int numDims, const int64_t *dims) {
    REQUIRE_DESC("aclSetTensorShape", desc);
    return shape_set("aclSetTensorShape", &desc->shape, numDims, dims);
}

PA_API aclError aclSetTensorStorageShape(aclTensorDesc *desc, int numDims, const int64_t *dims) {
    return aclSetTensorShape(desc, numDims, dims);
}

PA_API aclError aclSetTensorOriginFormat(aclTensorDesc *desc, aclFormat format) {
    REQUIRE_DESC("aclSetTensorOriginFormat", desc);
    aclError rc = check_format("aclSetTensorOriginFormat", format);
    if (rc == ACL_SUCCESS) desc->origin_format = format;
    return rc;
}

PA_API aclError aclSetTensorOriginShape(aclTensorDesc *desc, int numDims, const int64_t *dims) {
    REQUIRE_DESC("aclSetTensorOriginShape", desc);
    return shape_set("aclSetTensorOriginShape", &desc->origin_shape, numDims, dims);
}

/* A description created here is a single one: index 0 is itself. */
PA_API aclTensorDesc *aclGetTensorDescByIndex(aclTensorDesc *desc, size_t index) {
    if (desc == NULL || index != 0) {
        pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                   "aclGetTensorDescByIndex: desc must not be NULL and index must be 0, got %zu", index);
        return NULL;
    }
    return desc;
}

/* Device addresses are attached to descriptions only by model execution, which
 * pyaclnn does not have. */
PA_API void *aclGetTensorDescAddress(const aclTensorDesc *desc) {
    (void)desc;
    return NULL;
}

PA_API aclError aclSetTensorDynamicInput(aclTensorDesc *desc, const char *dynamicInputName) {
    const char *api = "aclSetTensorDynamicInput";
    REQUIRE_DESC(api, desc);
    if (dynamicInputName == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: dynamicInputName must not be NULL", api);
    }
    return set_string(api, &desc->dynamic_input, dynamicInputName);
}

PA_API aclError aclSetTensorConst(aclTensorDesc *desc, void *dataBuffer, size_t length) {
    const char *api = "aclSetTensorConst";
    REQUIRE_DESC(api, desc);
    if (dataBuffer == NULL || length == 0) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: dataBuffer must not be NULL and length must be > 0, got %zu",
                          api, length);
    }
    void *copy = dup_bytes(dataBuffer, length);
    if (copy == NULL) return pa_rt_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", api);
    free(desc->const_data);
    desc->const_data = copy;
    desc->const_len = length;
    return ACL_SUCCESS;
}

PA_API aclError aclSetTensorPlaceMent(aclTensorDesc *desc, aclMemType memType) {
    const char *api = "aclSetTensorPlaceMent";
    REQUIRE_DESC(api, desc);
    if ((int)memType < (int)ACL_MEMTYPE_DEVICE || (int)memType > (int)ACL_MEMTYPE_HOST_COMPILE_INDEPENDENT) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: memType must be an aclMemType (0..2), got %d", api,
                          (int)memType);
    }
    desc->placement = memType;
    return ACL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Read access for the single-operator API (aclop/), see pa_desc.h
 * ------------------------------------------------------------------------- */

void pa_desc_get(const aclTensorDesc *desc, pa_desc_info *out) {
    out->dtype = desc->dtype;
    out->format = desc->format;
    out->origin_format = desc->origin_format;
    out->ndim = desc->shape.n;
    out->dims = desc->shape.dims;
    out->origin_ndim = desc->origin_shape.n;
    out->origin_dims = desc->origin_shape.dims;
    out->placement = desc->placement;
    out->const_data = desc->const_data;
    out->const_len = desc->const_len;
}
