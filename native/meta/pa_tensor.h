/* Layout of the opaque aclnn handle types and the tensor snapshot ops keep. */
#ifndef PA_TENSOR_H
#define PA_TENSOR_H

#include "common/pa_common.h"

#define PA_MAX_DIMS 8
#define PA_TENSOR_MAGIC 0x54656e73u /* "Tens" */
/* Magic values of the other handle types (set at creation, cleared on destroy). */
#define PA_SCALAR_MAGIC 0x5363616cu      /* "Scal" */
#define PA_INT_ARRAY_MAGIC 0x49417272u   /* "IArr" */
#define PA_FLOAT_ARRAY_MAGIC 0x46417272u /* "FArr" */
#define PA_BOOL_ARRAY_MAGIC 0x42417272u  /* "BArr" */
#define PA_TENSOR_LIST_MAGIC 0x544c7374u /* "TLst" */
#define PA_SCALAR_LIST_MAGIC 0x534c7374u /* "SLst" */

struct aclTensor {
    uint32_t magic;
    aclDataType dtype;
    aclFormat format;
    int32_t ndim;
    int64_t dims[PA_MAX_DIMS];
    int64_t strides[PA_MAX_DIMS]; /* elements */
    int64_t offset;               /* elements */
    int32_t storage_ndim;
    int64_t storage_dims[PA_MAX_DIMS];
    void *data;                   /* storage base address */
};

/* aclScalar keeps the value by kind: float dtypes (FLOAT, FLOAT16, BF16, DOUBLE) in v.f,
 * signed integers in v.i, unsigned in v.u, BOOL in v.b, complex types as raw bytes. */
struct aclScalar { uint32_t magic; aclDataType dtype; union { double f; int64_t i; uint64_t u; bool b; uint8_t raw[16]; } v; };
struct aclIntArray { uint32_t magic; uint64_t size; int64_t *values; };
struct aclFloatArray { uint32_t magic; uint64_t size; float *values; };
struct aclBoolArray { uint32_t magic; uint64_t size; bool *values; };
struct aclTensorList { uint32_t magic; uint64_t size; aclTensor **tensors; };
struct aclScalarList { uint32_t magic; uint64_t size; aclScalar **scalars; };

/* Immutable snapshot of a tensor, taken when an op is planned. Plain data:
 * plans are copied by value at every launch. */
typedef struct pa_tview {
    aclDataType dtype;
    int32_t ndim;
    int64_t dims[PA_MAX_DIMS];
    int64_t strides[PA_MAX_DIMS];
    int64_t offset;        /* elements */
    int64_t storage_elems; /* product of the storage dims (checked by pa_tensor_check_view) */
    void *base;            /* storage address */
} pa_tview;

/* Element size in bytes of the dtypes ops use (0 for unknown). */
size_t pa_dtype_size(aclDataType dt);
const char *pa_dtype_name(aclDataType dt);
const char *pa_format_name(aclFormat fmt);
/* ND-family formats (ND, NCHW, NHWC, NCL, NC, NCDHW, NDHWC, HWCN, UNDEFINED?) vs private ones. */
bool pa_format_is_plain(aclFormat fmt);

bool pa_tensor_is_valid(const aclTensor *t); /* non-NULL and magic ok */
/* The view rules every op applies to every tensor at GetWorkspaceSize: offset
 * >= 0, no negative strides, and the view's extent (offset + sum of
 * (dim-1)*stride over dims > 1, overflow-checked, in bytes too) inside its
 * storage (the product of storageDims). Returns 0, or 161002 after pa_fail()
 * naming `api` and the tensor `name`. */
int pa_tensor_check_view(const char *api, const char *name, const aclTensor *t);
int64_t pa_tensor_numel(const aclTensor *t);
pa_tview pa_tview_of(const aclTensor *t);
bool pa_tview_is_contiguous(const pa_tview *v);
/* Address of element 0 of the view. */
static inline void *pa_tview_ptr(const pa_tview *v) {
    return (char *)v->base + v->offset * (int64_t)pa_dtype_size(v->dtype);
}
/* Formats "[2,3,4]" into buf. */
const char *pa_shape_str(const int64_t *dims, int32_t ndim, char *buf, size_t cap);

#endif
