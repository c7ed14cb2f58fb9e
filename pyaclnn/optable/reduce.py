"""Reductions, scans and sorting (native/ops/reduce/)."""
from . import ANY, ALL12, FLOAT3, FLOAT4, FLOAT_OUT, op, _planned  # noqa: F401


T = "const aclTensor* "

# ---- reductions, scans, sorting (family "reduce") --------------------------

RED = [
    ("ReduceSum", "aclnn_reduce_sum.h", T + "self, const aclIntArray* dims, bool keepDims, aclDataType dtype, "
     "aclTensor* out"),
    ("Sum", "aclnn_sum.h", "const aclTensorList* tensors, aclTensor* out"),
    ("Mean", "aclnn_mean.h", T + "self, const aclIntArray* dim, bool keepDim, aclDataType dtype, aclTensor* out"),
    ("Max", "aclnn_max.h", T + "self, aclTensor* out"),
    ("Min", "aclnn_min.h", T + "self, aclTensor* out"),
    ("MaxDim", "aclnn_max_dim.h", T + "self, int64_t dim, bool keepdim, aclTensor* out, aclTensor* indices"),
    ("MinDim", "aclnn_min_dim.h", T + "self, int64_t dim, bool keepdim, aclTensor* out, aclTensor* indices"),
    ("Amax", "aclnn_amax.h", T + "self, const aclIntArray* dim, bool keepDim, aclTensor* out"),
    ("Amin", "aclnn_amin.h", T + "self, const aclIntArray* dim, bool keepDim, aclTensor* out"),
    ("ArgMax", "aclnn_argmax.h", T + "self, int64_t dim, bool keepdim, aclTensor* out"),
    ("ArgMin", "aclnn_argmin.h", T + "self, int64_t dim, bool keepdim, aclTensor* out"),
    ("Any", "aclnn_any.h", T + "self, const aclIntArray* dim, bool keepdim, aclTensor* out"),
    ("All", "aclnn_all.h", T + "self, const aclIntArray* dim, bool keepdim, aclTensor* out"),
    ("Norm", "aclnn_norm.h", T + "self, const aclScalar* pScalar, const aclIntArray* dim, bool keepdim, "
     "aclTensor* out"),
    ("LinalgVectorNorm", "aclnn_linalg_vector_norm.h", T + "self, const aclScalar* ord, const aclIntArray* dims, "
     "bool keepDims, const aclDataType dtype, aclTensor* out"),
    ("Cumsum", "aclnn_cumsum.h", T + "self, int64_t dim, aclDataType dtype, aclTensor* out"),
    ("Argsort", "aclnn_argsort.h", T + "self, int64_t dim, bool descending, aclTensor* out"),
    ("Sort", "aclnn_sort.h", T + "self, bool stable, int64_t dim, bool descending, aclTensor* valuesOut, "
     "aclTensor* indicesOut"),
    ("Topk", "aclnn_topk.h", T + "self, int64_t k, int64_t dim, bool largest, bool sorted, aclTensor* valuesOut, "
     "aclTensor* indicesOut"),
]
for _n, _h, _p in RED:
    if _n == "ReduceSum":
        op(_n, _h, _p, family="op", ins="f16 f32 s8 s16 s32 s64 u8 bool f64 c64 c128 bf16")
    else:
        _planned(_n, _h, _p, "reduce")

