/* Read access to an aclTensorDesc's fields, for the single-operator API (aclop/). */
#ifndef PA_DESC_H
#define PA_DESC_H

#include "acl/acl_base.h"

typedef struct pa_desc_info {
    aclDataType dtype;
    aclFormat format, origin_format; /* storage (aclSetTensorFormat) and as created */
    int ndim, origin_ndim;
    const int64_t *dims, *origin_dims; /* storage (aclSetTensorShape) and as created */
    aclMemType placement;
    const void *const_data; /* aclSetTensorConst, or NULL */
    size_t const_len;
} pa_desc_info;

/* desc must be non-NULL (descriptors are plain host records, not registered handles). */
void pa_desc_get(const aclTensorDesc *desc, pa_desc_info *out);

#endif
