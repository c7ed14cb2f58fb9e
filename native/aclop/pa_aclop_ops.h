/* Private to aclop/: the op-type table and the tensor plumbing its adapters share. */
#ifndef PA_ACLOP_OPS_H
#define PA_ACLOP_OPS_H

#include "aclop/pa_aclop.h"
#include "meta/pa_tensor.h"

#define PA_ACLOP_MAX_IO 8

/* ---- FRACTAL_NZ (format.c) ---- */
typedef struct pa_nz_layout {
    int64_t esize, c0;    /* element bytes; elements per fractal row */
    int64_t batch, h, w;  /* matrices and their origin rows / columns */
    int64_t w1, hp;       /* ceil(w / c0), h padded to a multiple of 16 */
    int32_t nbatch_dims;
    int64_t batch_dims[PA_MAX_DIMS];
} pa_nz_layout;

/* The NZ layout of origin shape dims (false for an element size the layout does not define). */
bool pa_nz_layout_of(aclDataType dt, int32_t ndim, const int64_t *dims, pa_nz_layout *out);
int64_t pa_nz_storage_elems(const pa_nz_layout *l);
/* Whether a descriptor's storage shape is [..batch.., W1, H1, 16, C0] for layout l. */
bool pa_nz_storage_matches(const pa_nz_layout *l, int ndim, const int64_t *dims);
/* Queues on stream the conversion between the NZ buffer and the contiguous ND one. */
aclError pa_nz_convert(const char *api, aclDataType dt, const pa_nz_layout *l, void *nz, void *nd, bool to_nz,
                       aclrtStream stream);

/* One input or output of an aclop call, as an aclnn tensor. */
typedef struct pa_aclop_tensor {
    const char *name;     /* the op's name for it, e.g. "x" */
    aclDataType dtype;
    aclFormat format;     /* storage format of the caller's buffer */
    int32_t ndim;         /* origin (logical) shape */
    int64_t dims[PA_MAX_DIMS];
    void *data;           /* the caller's buffer */
    size_t size;
    aclTensor *t;         /* contiguous ND view: over data, or over scratch for a private format */
    void *scratch;        /* device buffer with the ND copy (NULL when data is ND) */
    bool is_nz;           /* data is FRACTAL_NZ (layout nz) */
    pa_nz_layout nz;
} pa_aclop_tensor;

typedef struct pa_aclop_io {
    int n_in, n_out;
    pa_aclop_tensor in[PA_ACLOP_MAX_IO];
    pa_aclop_tensor out[PA_ACLOP_MAX_IO];
} pa_aclop_io;

typedef struct pa_aclop_def pa_aclop_def;
struct pa_aclop_def {
    const char *name;  /* op type, e.g. "ScaledMaskedSoftmax" */
    int num_inputs, num_outputs;
    const char *const *in_names, *const *out_names;
    /* Checks the attributes, runs the op on io (inputs converted to ND on the
     * stream already) and returns ACL_SUCCESS or a status after pa_rt_fail. */
    aclError (*run)(pa_aclop_io *io, const aclopAttr *attr, aclrtStream stream);
};

/* NULL-terminated table of every op type (ops.c) and their names, ", "-separated. */
extern const pa_aclop_def *const pa_aclop_table[];
const char *pa_aclop_names(void);

/* Loads the descriptors and buffers into io: validates them (dtype, shapes,
 * buffer sizes), creates the ND tensors, and queues on `stream` the conversion
 * of private-format inputs to ND. io is always safe to release afterwards. */
aclError pa_aclop_io_load(const char *api, const pa_aclop_def *op, const aclTensorDesc *const inputDesc[],
                          const aclDataBuffer *const inputs[], const aclTensorDesc *const outputDesc[],
                          aclDataBuffer *const outputs[], aclrtStream stream, pa_aclop_io *io);
/* When ok, queues the conversion of private-format outputs back from ND (the
 * op was queued on stream before); then, in any case, the release of the
 * scratch buffers in stream order; destroys the tensors. Returns the first
 * error of those steps (ACL_SUCCESS when there is none). */
aclError pa_aclop_io_release(const char *api, pa_aclop_io *io, aclrtStream stream, bool ok);
/* *out = a device buffer of `bytes` (the op's scratch, to be freed with
 * pa_aclop_free_after); aclrtMalloc's status after pa_rt_fail naming api. */
aclError pa_aclop_scratch(const char *api, size_t bytes, void **out);
aclError pa_aclop_free_after(void *p, aclrtStream stream);

/* Runs an aclnn op's second phase after its GetWorkspaceSize: allocates the
 * workspace (freed in stream order) and launches. */
aclError pa_aclop_launch(const char *op, uint64_t workspace_size, aclOpExecutor *executor, aclrtStream stream,
                         aclnnStatus (*launch)(void *, uint64_t, aclOpExecutor *, aclrtStream));

#endif
