/* The op families' planners and run functions, and the family-specific
 * descriptions the generated table (native/ops/gen/optable.c) carries. */
#ifndef PA_FAMILIES_H
#define PA_FAMILIES_H

#include "kernels/map/map.h"
#include "ops/core/pa_op.h"
#include "ops/attention/pa_attention.h"
#include "ops/conv/pa_conv.h"
#include "ops/foreach/pa_foreach.h"
#include "ops/index/pa_index.h"
#include "ops/matmul/pa_matmul.h"
#include "ops/nn/pa_nn.h"
#include "ops/random/pa_random.h"
#include "ops/reduce/pa_reduce.h"
#include "ops/shape/pa_shape.h"

/* Operators that are declared but not implemented (their planner is NULL). */
int pa_run_none(const void *plan, void *workspace, uint64_t workspace_size);

/* ---- map: every elementwise operator (native/ops/map/) ---- */

/* What a parameter is to the map kernel. */
enum {
    PA_ROLE_NONE,
    PA_ROLE_A, PA_ROLE_B, PA_ROLE_C, /* kernel inputs a, b, c (tensor, or scalar as a constant) */
    PA_ROLE_OUT,
    PA_ROLE_A_OUT, PA_ROLE_C_OUT,   /* in place: input a (c) and the output */
    PA_ROLE_P0, PA_ROLE_P1, PA_ROLE_P2, PA_ROLE_P3,
    PA_ROLE_KERNEL, /* an int attribute choosing the kernel */
    PA_ROLE_DTYPE,  /* the output dtype */
};

/* Compute-dtype rules (native/ops/map/map_rules.c). */
enum {
    PA_MAPR_PROMOTE,         /* the tensor inputs promoted (TensorTensor table) */
    PA_MAPR_PROMOTE_BC,      /* b and c promoted (a is a condition) */
    PA_MAPR_PROMOTE_ALPHA_ADD, PA_MAPR_PROMOTE_ALPHA_SUB, /* + the alpha checks */
    PA_MAPR_SCALAR_ALPHA_ADD, PA_MAPR_SCALAR_ALPHA_SUB,   /* tensor with a scalar, + alpha */
    PA_MAPR_SCALAR_MULS,
    PA_MAPR_DIV, PA_MAPR_SCALAR_DIV, PA_MAPR_DIVMOD,
    PA_MAPR_SCALAR_POW, PA_MAPR_SCALAR_POW_BASE, PA_MAPR_POW_TT,
    PA_MAPR_REMAINDER, PA_MAPR_REMAINDER_SCALAR,
    PA_MAPR_PROMOTE_WITH_SCALAR, /* the scalar's dtype takes part in the TensorTensor table */
    PA_MAPR_SCALAR_CMP_SELF,     /* the scalar converted to self's dtype */
    PA_MAPR_FLOAT,               /* promoted; integers and BOOL compute in FLOAT */
    PA_MAPR_FLOAT_S64_F64,       /* as FLOAT, but INT64 computes in DOUBLE */
    PA_MAPR_SELF_OR_F32,         /* self's dtype if a float, else FLOAT */
    PA_MAPR_SELF_OR_OUT,         /* self's dtype if a float, else out's */
    PA_MAPR_SELF,                /* self's dtype */
    PA_MAPR_OUT,                 /* out's dtype */
    PA_MAPR_INTEGRAL, PA_MAPR_INTEGRAL_SCALAR, /* bitwise ops */
    PA_MAPR_SAME_OR_F32,         /* the inputs' dtype if they share one of FLOAT / FLOAT16 / BF16, else FLOAT */
};

/* Output-dtype rules. */
enum {
    PA_MAPO_CAST,       /* CanCast(result, out) */
    PA_MAPO_ANY,        /* any dtype the out parameter accepts */
    PA_MAPO_SAME,       /* out's dtype is self's */
    PA_MAPO_CAST_SELF,  /* CanCast(self, out) */
    PA_MAPO_DTYPE_ATTR, /* out's dtype is the dtype attribute */
    PA_MAPO_COMPUTE,    /* out's dtype is the compute dtype */
};

/* Flags. */
#define PA_MAPF_MIN_LE_MAX 1u            /* min > max is an error (Hardtanh) */
#define PA_MAPF_PARAMS_IN_SELF_DTYPE 2u  /* the scalar parameters are converted to self's dtype first */
#define PA_MAPF_CLAMP_ONE_BOUND 4u       /* min and max may not both be NULL (161001) */
#define PA_MAPF_VALUE_ONE_ELEMENT 8u     /* input b (a value tensor) must hold one element */
#define PA_MAPF_FILL0 16u
#define PA_MAPF_FILL1 32u
#define PA_MAPF_SAME_DTYPE_INPUTS 64u /* the tensor inputs share one dtype */
#define PA_MAPF_NO_BROADCAST 128u     /* every tensor input has out's shape */
#define PA_MAPF_RESULT_NONNEG 256u    /* the k attribute (isResult) true with p0 < 0 is an error */

#define PA_MAP_MAX_ROLES 8

typedef struct pa_map_desc {
    uint8_t roles[PA_MAP_MAX_ROLES]; /* one per parameter */
    int16_t kernel;                  /* or the default of kmap */
    int16_t nkmap;
    int64_t kmap_value[4];
    int16_t kmap_kernel[4];
    const char *kmap_name[4]; /* a string attribute (role k): the values kmap_kernel stands for */
    uint8_t compute, outrule;
    uint32_t flags;
} pa_map_desc;

int pa_plan_map(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int pa_run_map(const void *plan, void *workspace, uint64_t workspace_size);

/* ---- single operators with a planner of their own ---- */
#define PA_OWN_OP(name)                                                                                \
    int pa_plan_##name(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor); \
    int pa_run_##name(const void *plan, void *workspace, uint64_t workspace_size);
PA_OWN_OP(Cat)
PA_OWN_OP(ConstantPadNd)
PA_OWN_OP(Stack)
#undef PA_OWN_OP

#endif
