/* Layout of the opaque aclnn handle types and the tensor snapshot ops keep. */
#ifndef PA_TENSOR_H
#define PA_TENSOR_H

#include "common/pa_common.h"
#include "meta/pa_handles.h"

#define PA_MAX_DIMS 8
/* Largest storage a tensor may declare: far beyond any memory, and small
 * enough that element offsets, a stride more, and their byte offsets never
 * overflow int64 in the kernels' address arithmetic. */
#define PA_MAX_STORAGE_BYTES_LOG2 60
#define PA_MAX_STORAGE_BYTES ((int64_t)1 << PA_MAX_STORAGE_BYTES_LOG2)

/* The handle structs. Whether a pointer is a live handle is known only from
 * the registry (pa_handles.h): check it there before reading any field. */
struct aclTensor {
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
struct aclScalar { aclDataType dtype; union { double f; int64_t i; uint64_t u; bool b; uint8_t raw[16]; } v; };
struct aclIntArray { uint64_t size; int64_t *values; };
struct aclFloatArray { uint64_t size; float *values; };
struct aclBoolArray { uint64_t size; bool *values; };
struct aclTensorList { uint64_t size; aclTensor **tensors; };
struct aclScalarList { uint64_t size; aclScalar **scalars; };

/* Immutable snapshot of a tensor, taken when an op is planned. Plain data:
 * plans are copied by value at every launch. */
typedef struct pa_tview {
    aclDataType dtype;
    int32_t ndim;
    int64_t dims[PA_MAX_DIMS];
    int64_t strides[PA_MAX_DIMS]; /* elements; 0 for dims of size 1 */
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

bool pa_tensor_is_valid(const aclTensor *t); /* a live aclTensor (registry lookup) */
/* The view rules every op applies to every tensor at GetWorkspaceSize (the
 * handle must be live): offset >= 0; no negative stride (a dim of size 1 may
 * carry any stride); storage (the product of storageDims) of at most
 * PA_MAX_STORAGE_BYTES; the view's last element (offset + sum of
 * (dim-1)*stride over dims > 1, overflow-checked) inside the storage, or for
 * an empty view offset <= storage. Returns 0, or 161002 after pa_fail()
 * naming `api`, the tensor `name`, its view and its storage. */
int pa_tensor_check_view(const char *api, const char *name, const aclTensor *t);
int64_t pa_tensor_numel(const aclTensor *t);
/* The snapshot of a live tensor; dims of size 1 get stride 0. */
pa_tview pa_tview_of(const aclTensor *t);
bool pa_tview_is_contiguous(const pa_tview *v);
/* Address of element 0 of the view (NULL for a NULL base). */
static inline void *pa_tview_ptr(const pa_tview *v) {
    if (v->base == NULL) return NULL;
    return (char *)v->base + v->offset * (int64_t)pa_dtype_size(v->dtype);
}
/* Formats "[2,3,4]" into buf. */
const char *pa_shape_str(const int64_t *dims, int32_t ndim, char *buf, size_t cap);

#endif
