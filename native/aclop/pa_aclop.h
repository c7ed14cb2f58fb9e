/* The single-operator API (acl/acl_op.h, acl/acl_op_compiler.h): attribute sets
 * and the op types aclopCompileAndExecute runs. Each op type is an adapter over
 * an aclnn op (ops/): it reads its attributes, turns the aclTensorDesc +
 * aclDataBuffer pairs into aclTensors and runs the aclnn op's two phases on the
 * stream, so the math lives in one place. Inputs or outputs in a private format
 * (FRACTAL_NZ) are converted to and from ND around the op, as CANN's graph
 * engine inserts TransData nodes. */
#ifndef PA_ACLOP_H
#define PA_ACLOP_H

#include "acl/acl_op_compiler.h"
#include "common/pa_common.h"

/* ---- attributes (attr.c) ---- */
typedef enum pa_attr_kind {
    PA_ATTR_BOOL = 1,
    PA_ATTR_INT,
    PA_ATTR_FLOAT,
    PA_ATTR_STRING,
    PA_ATTR_DATA_TYPE,
    PA_ATTR_LIST, /* any list: only stored (no op type pyaclnn runs takes one) */
} pa_attr_kind;

const char *pa_attr_kind_name(pa_attr_kind kind);
/* Live aclopAttr (registry lookup), or NULL attr. */
bool pa_attr_is_live(const aclopAttr *attr);
/* The attribute `name` of an op type: 0 with *found false when attr is NULL or
 * has no such name (the caller applies the op's default); ACL_ERROR_OP_ATTR_NOT_MATCH
 * naming op and attribute when it has another kind. Scalars convert as CANN
 * does: a bool, int or float attribute may be read as float (scale = 1 set
 * with aclopSetAttrInt is 1.0f); only a bool reads as bool. */
int pa_attr_get_float(const char *op, const aclopAttr *attr, const char *name, float *out, bool *found);
int pa_attr_get_bool(const char *op, const aclopAttr *attr, const char *name, bool *out, bool *found);
int pa_attr_get_int(const char *op, const aclopAttr *attr, const char *name, int64_t *out, bool *found);
int pa_attr_get_data_type(const char *op, const aclopAttr *attr, const char *name, aclDataType *out,
                          bool *found);
/* 0 if every attribute of attr is one of the `n` names (NULL attr: 0), else
 * ACL_ERROR_OP_ATTR_NOT_MATCH naming op and the unknown attribute. */
int pa_attr_check_names(const char *op, const aclopAttr *attr, const char *const *names, int n);

#endif
