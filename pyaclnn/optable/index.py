"""Data movement and indexing (native/ops/shape/ and native/ops/index/)."""
from . import ANY, ALL12, FLOAT3, FLOAT4, FLOAT_OUT, op, _planned  # noqa: F401


T = "const aclTensor* "

# ---- data movement and indexing (families "shape" and "index") -------------

MOVE = [
    ("Permute", "aclnn_permute.h", T + "self, const aclIntArray* dims, aclTensor* out"),
    ("Slice", "aclnn_slice.h", T + "self, int64_t dim, int64_t start, int64_t end, int64_t step, aclTensor* out"),
    ("Repeat", "aclnn_repeat.h", T + "self, const aclIntArray* repeats, aclTensor* out"),
    ("Expand", "aclnn_expand.h", T + "self, const aclIntArray* size, aclTensor* out"),
    ("Flip", "aclnn_flip.h", T + "self, const aclIntArray* dims, aclTensor* out"),
    ("RepeatInterleave", "aclnn_repeat_interleave.h", T + "self, const aclTensor* repeats, int64_t outputSize, "
     "aclTensor* out"),
    ("RepeatInterleaveWithDim", "aclnn_repeat_interleave.h", T + "self, const aclTensor* repeats, int64_t dim, "
     "int64_t outputSize, aclTensor* out"),
    ("RepeatInterleaveInt", "aclnn_repeat_interleave.h", T + "self, int64_t repeats, int64_t outputSize, "
     "aclTensor* out"),
    ("RepeatInterleaveIntWithDim", "aclnn_repeat_interleave.h", T + "self, int64_t repeats, int64_t dim, "
     "int64_t outputSize, aclTensor* out"),
    ("Roll", "aclnn_roll.h", T + "x, const aclIntArray* shifts, const aclIntArray* dims, aclTensor* out"),
    ("Tril", "aclnn_tril.h", T + "self, int64_t diagonal, aclTensor* out"),
    ("InplaceTril", "aclnn_tril.h", "const aclTensor* selfRef, int64_t diagonal"),
    ("Triu", "aclnn_triu.h", T + "self, int64_t diagonal, aclTensor* out"),
    ("InplaceTriu", "aclnn_triu.h", "aclTensor* selfRef, int64_t diagonal"),
    ("ReflectionPad1d", "aclnn_reflection_pad1d.h", T + "self, const aclIntArray* padding, aclTensor* out"),
    ("ConstantPadNd", "aclnn_constant_pad_nd.h", T + "self, const aclIntArray* pad, const aclScalar* value, "
     "aclTensor* out"),
    ("Cat", "aclnn_cat.h", "const aclTensorList* tensors, int64_t dim, aclTensor* out"),
    ("Arange", "aclnn_arange.h", "const aclScalar* start, const aclScalar* end, const aclScalar* step, "
     "aclTensor* out"),
    ("UpsampleNearest2d", "aclnn_upsample_nearest_2d.h", T + "self, const aclIntArray* outputSize, aclTensor* out"),
    ("GatherV2", "aclnn_gather_v2.h", T + "self, int64_t dim, const aclTensor* index, aclTensor* out"),
    ("Gather", "aclnn_gather.h", T + "self, const int64_t dim, const aclTensor* index, aclTensor* out"),
    ("IndexSelect", "aclnn_index_select.h", T + "self, int64_t dim, const aclTensor* index, aclTensor* out"),
    ("InplaceIndexCopy", "aclnn_index_copy.h", "aclTensor* selfRef, int64_t dim, const aclTensor* index, "
     "const aclTensor* source"),
    ("IndexCopy", "aclnn_index_copy.h", "aclTensor* selfRef, int64_t dim, const aclTensor* index, "
     "const aclTensor* source, aclTensor* outRef"),
    ("InplaceIndexFillTensor", "aclnn_index_fill_tensor.h", "aclTensor* selfRef, int64_t dim, "
     "const aclIntArray* index, const aclScalar* value"),
    ("IndexFillTensor", "aclnn_index_fill_tensor.h", T + "self, int64_t dim, const aclIntArray* index, "
     "const aclScalar* value, aclTensor* out"),
    ("Scatter", "aclnn_scatter.h", T + "self, int64_t dim, const aclTensor* index, const aclTensor* src, "
     "int64_t reduce, aclTensor* out"),
    ("InplaceScatter", "aclnn_scatter.h", "aclTensor* selfRef, int64_t dim, const aclTensor* index, "
     "const aclTensor* src, int64_t reduce"),
    ("ScatterAdd", "aclnn_scatter_add.h", T + "self, int64_t dim, const aclTensor* index, const aclTensor* src, "
     "aclTensor* out"),
    ("IndexPutImpl", "aclnn_index_put_impl.h", "aclTensor* selfRef, const aclTensorList* indices, "
     "const aclTensor* values, const bool accumulate, const bool unsafe"),
    ("Embedding", "aclnn_embedding.h", "const aclTensor* weight, const aclTensor* indices, const aclTensor* out"),
    ("EmbeddingDenseBackward", "aclnn_embedding_dense_backward.h", "const aclTensor* grad, const aclTensor* indices, "
     "uint64_t numWeights, uint64_t paddingIdx, bool scaleGradByFreq, const aclTensor* out"),
]
for _n, _h, _p in MOVE:
    if _n in ("Cat", "ConstantPadNd"):
        op(_n, _h, _p, family="op")
    else:
        _planned(_n, _h, _p, "index")

