/* The operator framework: every aclnn operator is one row of the op table
 * (pyaclnn/optable/). tools/gen_ops.py turns each row into a pa_op
 * descriptor and the two exported entry points (native/ops/gen/optable.c),
 * which pack their arguments into pa_arg slots in API order and call
 * pa_op_plan. That checks what every op needs (NULLs, handles, dtypes, ranks,
 * formats, views, outputs) once, then calls the family's planner, which
 * checks the op's own rules and makes the executor. */
#ifndef PA_OP_H
#define PA_OP_H

#include "meta/pa_executor.h"

/* What a parameter is. */
typedef enum pa_pkind {
    PA_P_TENSOR,      /* const aclTensor * / aclTensor * */
    PA_P_TENSOR_LIST, /* aclTensorList * */
    PA_P_SCALAR,      /* aclScalar * */
    PA_P_SCALAR_LIST, /* aclScalarList * */
    PA_P_INT_ARRAY,   /* aclIntArray * */
    PA_P_BOOL_ARRAY,  /* aclBoolArray * */
    PA_P_FLOAT_ARRAY, /* aclFloatArray * */
    PA_P_INT,         /* int64_t, int32_t, int8_t, int, uint64_t (in a.i) */
    PA_P_FLOAT,       /* double, float (in a.f) */
    PA_P_BOOL,        /* bool */
    PA_P_DTYPE,       /* aclDataType (in a.i) */
    PA_P_STRING,      /* char * */
    PA_P_OUT_U64,     /* uint64_t * result of a single-call API */
} pa_pkind;

typedef enum pa_pio { PA_IN = 0, PA_OUT = 1, PA_INOUT = 2 } pa_pio;

/* Flags of a parameter. */
#define PA_PF_OPTIONAL 1u /* may be NULL */
#define PA_PF_NZ 2u       /* may be FRACTAL_NZ (private format) */
#define PA_PF_INT4 4u     /* may be INT4 (half-byte elements) */
#define PA_PF_EMPTY_ANY_DTYPE 8u /* an empty tensor of any held dtype passes the dtype list */

typedef struct pa_param {
    const char *name;
    uint8_t kind; /* pa_pkind */
    uint8_t io;   /* pa_pio */
    uint8_t flags;
    uint64_t dtypes; /* PA_DT_BIT mask of the accepted dtypes; 0 = any the op can hold */
} pa_param;

#define PA_DT_BIT(dt) ((uint64_t)1 << (unsigned)(dt))

/* One argument, by kind. */
typedef union pa_arg {
    const void *p;
    int64_t i;
    double f;
    bool b;
} pa_arg;

typedef struct pa_op pa_op;
/* A family planner: the op's own checks, then the executor. `a` holds the
 * arguments in API order (the generic checks have passed). */
typedef int (*pa_plan_fn)(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);

struct pa_op {
    const char *ws_api;  /* "aclnnMulGetWorkspaceSize" */
    pa_op_def launch;    /* name "aclnnMul", the family's run function, view names */
    const pa_param *params;
    int nparams;
    pa_plan_fn plan;     /* NULL: not implemented (561003) */
    int kernel;          /* the family's kernel id (PA_K_*) */
    int variant;         /* a family-specific switch from the table */
    int max_rank;        /* tensors may have up to this many dims */
    int min_rank;
    uint32_t flags;      /* PA_OF_* */
    const void *ext;     /* the family's description of the op (generated), or NULL */
};

/* Op flags. */
#define PA_OF_NO_EMPTY_CHECK 1u /* the planner handles empty tensors itself */

/* Checks the arguments every op checks, in API order, then runs op->plan.
 *  - workspaceSize / executor and every required pointer: not NULL (161001);
 *  - tensors: live handles, dtype in the parameter's list (161002, naming the
 *    list), at most op->max_rank dims, a plain format (or FRACTAL_NZ where
 *    allowed), a view inside its storage; outputs: one address per element;
 *  - scalars, arrays, lists: live handles; scalar dtypes in the list;
 *    every tensor of a list checked as a tensor.
 * An op without a planner answers 561003, naming itself. */
aclnnStatus pa_op_plan(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);

/* The index of the parameter named `name` (-1 if none). */
int pa_op_param(const pa_op *op, const char *name);

/* "FLOAT, FLOAT16 or BF16" for a dtype mask. */
const char *pa_dtype_list_str(uint64_t mask, char *buf, size_t cap);

/* Makes an executor over a plan blob whose views of tensors are at the given
 * offsets (inputs in API order, then outputs), with a workspace of ws bytes. */
int pa_op_executor(const pa_op *op, const void *plan, size_t plan_size, const size_t *in_views, int n_in,
                   const size_t *out_views, int n_out, uint64_t ws, uint64_t *workspaceSize,
                   aclOpExecutor **executor);

/* A scalar's value as a double / as int64 (floats truncated toward zero and
 * saturated, NaN -> 0; unsigned values above INT64_MAX keep their bits). */
double pa_scalar_f(const aclScalar *s);
int64_t pa_scalar_i(const aclScalar *s);
bool pa_scalar_is_float(const aclScalar *s);

/* The tensor parameters of an op in executor order: inputs (IN, INOUT) in API
 * order, then outputs (OUT, INOUT). Fills views[] (NULL tensors -> an empty
 * view marked absent with dtype ACL_DT_UNDEFINED), param[] (the index of each
 * view's parameter) and the counts. */
#define PA_OP_MAX_VIEWS 16
void pa_op_views(const pa_op *op, const pa_arg *a, pa_tview *views, int *param, int *n_in, int *n_out);

#endif
