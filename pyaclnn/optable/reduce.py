"""Reductions, scans and sorting (native/ops/reduce/)."""
from . import ANY, ALL12, FLOAT3, FLOAT4, FLOAT_OUT, op, _planned  # noqa: F401


T = "const aclTensor* "

# ---- reductions, scans, sorting (family "reduce") --------------------------

RED_DT = "f16 f32 s8 s16 s32 s64 u8 bool f64 c64 c128 bf16"
MEAN_DT = "f32 s32 s64 f16 s16 s8 u8 f64 bf16 c64 c128"
EXT_DT = "f32 f16 u8 s8 s16 s32 s64 f64 bool bf16"
ARG_DT = "f32 f16 f64 s8 s16 s32 s64 u8 bf16"
ANYALL_DT = "f32 f16 u8 s8 s16 s32 s64 bool f64 bf16"
CUMSUM_DT = "f32 f16 s32 f64 u8 s8 s16 s64 c64 c128 bf16"
SORT_DT = "f16 f32 bf16 u8 s8 s16 s32 s64 bool"
TOPK_DT = "f32 s32 s64 f16 s16 s8 u8 f64 bf16"


def _red(name, header, params, kernel, ins, outs=None, dtypes=None, note="", family="reduce", flags=()):
    return op(name, header, params, family=family, kernel=kernel, ins=ins, outs=outs, dtypes=dtypes, note=note,
              flags=flags)


_red("ReduceSum", "aclnn_reduce_sum.h", T + "self, const aclIntArray* dims, bool keepDims, aclDataType dtype, "
     "aclTensor* out", "SUM", RED_DT, RED_DT, {"dtype": RED_DT},
     note="self cast to dtype, summed in double (int64 for integers), rounded once; empty dims: everything")
_red("Mean", "aclnn_mean.h", T + "self, const aclIntArray* dim, bool keepDim, aclDataType dtype, aclTensor* out",
     "MEAN", MEAN_DT, MEAN_DT, {"dtype": MEAN_DT}, note="an empty self gives NaN")
_red("Max", "aclnn_max.h", T + "self, aclTensor* out", "MAX", EXT_DT, EXT_DT, note="over every element; NaN wins")
_red("Min", "aclnn_min.h", T + "self, aclTensor* out", "MIN", EXT_DT, EXT_DT)
_red("MaxDim", "aclnn_max_dim.h", T + "self, int64_t dim, bool keepdim, aclTensor* out, aclTensor* indices",
     "MAX_DIM", "f32 f16 s64 bool bf16", "f32 f16 s64 bool bf16", {"indices": "s32 s64"}, flags=("out:indices",),
     note="values and the index of the first maximum")
_red("MinDim", "aclnn_min_dim.h", T + "self, int64_t dim, bool keepdim, aclTensor* out, aclTensor* indices",
     "MIN_DIM", "f32 f16 s64 bool bf16", "f32 f16 s64 bool bf16", {"indices": "s32 s64"}, flags=("out:indices",))
_red("Amax", "aclnn_amax.h", T + "self, const aclIntArray* dim, bool keepDim, aclTensor* out", "AMAX", EXT_DT,
     EXT_DT)
_red("Amin", "aclnn_amin.h", T + "self, const aclIntArray* dim, bool keepDim, aclTensor* out", "AMIN", EXT_DT,
     EXT_DT)
_red("ArgMax", "aclnn_argmax.h", T + "self, int64_t dim, bool keepdim, aclTensor* out", "ARGMAX", ARG_DT, "s32 s64",
     note="the first maximum's index")
_red("ArgMin", "aclnn_argmin.h", T + "self, int64_t dim, bool keepdim, aclTensor* out", "ARGMIN", ARG_DT, "s32 s64")
_red("Any", "aclnn_any.h", T + "self, const aclIntArray* dim, bool keepdim, aclTensor* out", "ANY", ANYALL_DT,
     "bool u8")
_red("All", "aclnn_all.h", T + "self, const aclIntArray* dim, bool keepdim, aclTensor* out", "ALL", ANYALL_DT,
     "bool u8")
_red("Norm", "aclnn_norm.h", T + "self, const aclScalar* pScalar, const aclIntArray* dim, bool keepdim, "
     "aclTensor* out", "NORM", "f32 f16 bf16", "f32 f16 bf16",
     note="p-norm in double; p = inf / -inf: max / min |x|, p = 0: count of nonzeros")
_red("LinalgVectorNorm", "aclnn_linalg_vector_norm.h", T + "self, const aclScalar* ord, const aclIntArray* dims, "
     "bool keepDims, const aclDataType dtype, aclTensor* out", "VECTOR_NORM", "f32 f16 bf16",
     "f32 f16 bf16", {"dtype": "f32 f16 bf16"})
PROD_DT = "f32 f16 f64 s8 u8 s16 s32 s64 bool c64 c128 bf16"
_red("Prod", "aclnn_prod.h", T + "self, const aclDataType dtype, aclTensor* out", "PROD", PROD_DT, PROD_DT,
     {"dtype": PROD_DT}, note="self cast to dtype, multiplied in index order in double (int64 for integers)")
_red("ProdDim", "aclnn_prod.h", T + "self, int64_t dim, bool keepDim, const aclDataType dtype, aclTensor* out",
     "PROD_DIM", PROD_DT, PROD_DT, {"dtype": PROD_DT})
_red("LogSumExp", "aclnn_logsumexp.h", T + "self, const aclIntArray* dim, bool keepDim, aclTensor* out",
     "LOGSUMEXP", "f32 s32 s64 f16 s16 s8 u8 bool bf16", "f32 f16 bf16",
     note="max + log(sum(exp(x - max))) in double; empty dim: everything")
VAR_DT = "f32 f16 bf16"
_red("Var", "aclnn_var.h", T + "self, const aclIntArray* dim, bool unbiased, bool keepdim, aclTensor* out", "VAR",
     VAR_DT, VAR_DT, note="two passes in double (the mean, then the squares); empty dim: everything")
_red("VarCorrection", "aclnn_var.h", T + "self, const aclIntArray* dim, int64_t correction, bool keepdim, "
     "aclTensor* out", "VAR_CORRECTION", VAR_DT, VAR_DT, note="divides by max(0, n - correction)")
_red("VarMean", "aclnn_var_mean.h", T + "self, const aclIntArray* dim, int64_t correction, bool keepdim, "
     "aclTensor* varOut, aclTensor* meanOut", "VAR_MEAN", VAR_DT, VAR_DT, {"meanOut": VAR_DT},
     flags=("out:meanOut",))
_red("Std", "aclnn_std.h", T + "self, const aclIntArray* dim, const int64_t correction, bool keepdim, "
     "aclTensor* out", "STD", VAR_DT, VAR_DT, note="the square root of VarCorrection's value")
_red("StdMeanCorrection", "aclnn_std_mean_correction.h", T + "self, const aclIntArray* dim, int64_t correction, "
     "bool keepdim, aclTensor* stdOut, aclTensor* meanOut", "STD_MEAN", VAR_DT, VAR_DT, {"meanOut": VAR_DT},
     flags=("out:meanOut",))
DOT_DT = "f32 f16 bf16 s8 s32 u8"
_red("Dot", "aclnn_dot.h", T + "self, const aclTensor* tensor, aclTensor* out", "DOT", DOT_DT, DOT_DT,
     {"tensor": DOT_DT}, note="1-D self and tensor of one dtype; products summed in index order in double "
     "(int64 for integers)")
_red("MseLoss", "aclnn_mse_loss.h", T + "self, const aclTensor* target, int64_t reduction, aclTensor* out",
     "MSE_LOSS", "f32 f16 bf16", "f32 f16 bf16", {"target": "f32 f16 bf16"},
     note="(self - target)^2, broadcast; reduction 0 none, 1 mean, 2 sum (in double, index order)")
_red("L1Loss", "aclnn_l1_loss.h", T + "self, const aclTensor* target, int64_t reduction, aclTensor* out",
     "L1_LOSS", "f32 f16 s64 bf16", "f32 f16 s64 bf16", {"target": "f32 f16 s64 bf16"},
     note="|self - target|, as MseLoss; mean needs a floating self or target")
_red("Glu", "aclnn_glu.h", T + "self, int64_t dim, const aclTensor* out", "GLU", FLOAT4, FLOAT4,
     note="a * sigmoid(b), a / b the first / second half of self along dim (even size), in double")
_red("BinaryCrossEntropyWithLogits", "aclnn_binary_cross_entropy_with_logits.h", T + "self, const aclTensor* target, "
     "const aclTensor* weightOptional, const aclTensor* posWeightOptional, int64_t reduction, aclTensor* out",
     "BCE_WITH_LOGITS", FLOAT3, FLOAT3, {n: FLOAT3 for n in ("target", "weightOptional", "posWeightOptional")},
     note="target the shape of self, the weights broadcast to it; in double, reduction 0 none, 1 mean, 2 sum")
CUMPROD_DT = "f32 f16 bf16 f64 s8 s16 s32 s64 u8 u16 u32 u64"
_red("Cumprod", "aclnn_cumprod.h", "const aclTensor* input, const aclScalar* dim, const aclDataType dtype, "
     "aclTensor* out", "CUMPROD", CUMPROD_DT, CUMPROD_DT, {"dtype": CUMPROD_DT}, family="scan",
     note="input cast to out's dtype, then a sequential product in double (int64 for integers)")
_red("InplaceCumprod", "aclnn_cumprod.h", "aclTensor* input, const aclScalar* dim", "CUMPROD_INPLACE", CUMPROD_DT,
     None, family="scan", note="dim: an integer scalar")
_red("Cumsum", "aclnn_cumsum.h", T + "self, int64_t dim, aclDataType dtype, aclTensor* out", "CUMSUM", None,
     CUMSUM_DT, {"dtype": CUMSUM_DT}, family="scan",
     note="self cast to out's dtype, then a sequential scan in double (int64 for integers)")
_red("Argsort", "aclnn_argsort.h", T + "self, int64_t dim, bool descending, aclTensor* out", "ARGSORT",
     "f32 f16 s8 s16 s32 s64 u8 bf16", "s64", family="scan", note="stable; NaN sorts as the largest value")
_red("Sort", "aclnn_sort.h", T + "self, bool stable, int64_t dim, bool descending, aclTensor* valuesOut, "
     "aclTensor* indicesOut", "SORT", SORT_DT, SORT_DT + " f64", {"indicesOut": "s64"}, family="scan",
     note="always stable")
_red("Topk", "aclnn_topk.h", T + "self, int64_t k, int64_t dim, bool largest, bool sorted, aclTensor* valuesOut, "
     "aclTensor* indicesOut", "TOPK", TOPK_DT, TOPK_DT, {"indicesOut": "s64"}, family="scan",
     note="ties keep index order")
_planned("Sum", "aclnn_sum.h", "const aclTensorList* tensors, aclTensor* out", None)
