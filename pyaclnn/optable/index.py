"""Indexing: gather, scatter, index copy / fill / put, embedding, repeat-interleave,
nearest upsampling (native/ops/index/). The view-like data movement is in shape.py."""
from . import ANY, ALL12, FLOAT3, FLOAT4, FLOAT_OUT, op, _planned  # noqa: F401


T = "const aclTensor* "

# ---- indexing (family "index", native/ops/index/) ------------------------------

MOVE = [
    ("RepeatInterleave", "aclnn_repeat_interleave.h", T + "self, const aclTensor* repeats, int64_t outputSize, "
     "aclTensor* out"),
    ("RepeatInterleaveWithDim", "aclnn_repeat_interleave.h", T + "self, const aclTensor* repeats, int64_t dim, "
     "int64_t outputSize, aclTensor* out"),
    ("RepeatInterleaveInt", "aclnn_repeat_interleave.h", T + "self, int64_t repeats, int64_t outputSize, "
     "aclTensor* out"),
    ("RepeatInterleaveIntWithDim", "aclnn_repeat_interleave.h", T + "self, int64_t repeats, int64_t dim, "
     "int64_t outputSize, aclTensor* out"),
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

# A2 (910B) dtype lists, from the vendor's op_api sources.
GATHER_V2_DT = "f32 s32 s64 f16 s16 s8 u8 bool f64 c64 c128 bf16"
SELECT_DT = "f32 s32 s64 f16 s16 s8 u8 bool u64 u32 u16 f64 c64 c128 bf16"
GATHER_DT = "f32 s32 f16 s8 f64 s16 s64 u64 u32 u16 u8 bool bf16"
COPY_DT = "f64 s16 s8 u8 c64 c128 bool f32 f16 s32 s64 bf16"
FILL_DT = "s32 f16 f32 s64 bool bf16"
SCATTER_DT = "u8 s8 s16 s32 s64 bool f16 f32 f64 c64 c128 bf16"
PUT_DT = "f32 s32 s64 f16 s16 s8 u8 f64 bool bf16"
EMBED_DT = "f64 f32 f16 s64 s32 s16 s8 u8 bool c128 c64 bf16"
REPEAT_DT = "u8 s8 s16 s32 s64 bool f16 f32 bf16"
UPSAMPLE_DT = "f16 f32 f64 u8 bf16"
IDX = "s32 s64"

# name -> (kernel, ins, outs, per-parameter dtypes, other Op fields)
ROWS = {
    "RepeatInterleave": ("REPEAT_INTERLEAVE", REPEAT_DT, REPEAT_DT, {"repeats": IDX}, dict(
        note="self flattened; the repeats must add up to outputSize (checked at launch, 361001)")),
    "RepeatInterleaveWithDim": ("REPEAT_INTERLEAVE_DIM", REPEAT_DT, REPEAT_DT, {"repeats": IDX}, dict(
        note="the repeats must add up to outputSize (checked at launch, 361001)")),
    "RepeatInterleaveInt": ("REPEAT_INTERLEAVE_INT", REPEAT_DT, REPEAT_DT, {}, dict(
        note="self flattened; outputSize must be repeats * numel(self) (161002)")),
    "RepeatInterleaveIntWithDim": ("REPEAT_INTERLEAVE_INT_DIM", REPEAT_DT, REPEAT_DT, {}, dict(
        note="outputSize must be repeats * self.size(dim) (161002)")),
    "UpsampleNearest2d": ("UPSAMPLE_NEAREST2D", UPSAMPLE_DT, UPSAMPLE_DT, {}, dict(
        note="NCHW or NHWC tensors (ND refused, as by CANN); source pixel min(floor(dst * in / out), in - 1) "
             "as torch's legacy 'nearest'")),
    "GatherV2": ("GATHER_V2", GATHER_V2_DT, GATHER_V2_DT, {"index": IDX}, dict(
        note="indices in [-size, size) (negative ones wrap, as CANN's kernel is called); out of range: 361001 "
             "at launch")),
    "Gather": ("GATHER", GATHER_DT, GATHER_DT, {"index": IDX}, dict(
        flags=("empty_any_dtype:index",),
        note="indices in [-size, size); out of range: 361001 at launch; an empty index may have any dtype")),
    "IndexSelect": ("INDEX_SELECT", SELECT_DT, SELECT_DT, {"index": IDX}, dict(
        note="indices in [0, size); out of range: 361001 at launch")),
    "InplaceIndexCopy": ("INPLACE_INDEX_COPY", COPY_DT, COPY_DT, {"index": IDX}, dict(
        note="indices in [0, size) (361001 at launch); duplicate indices: the last one wins")),
    "IndexCopy": ("INDEX_COPY", COPY_DT, COPY_DT, {"index": IDX}, dict(
        roles="- - - - o",
        note="selfRef is only read; indices in [0, size) (361001 at launch); duplicate indices: the last one wins")),
    "InplaceIndexFillTensor": ("INPLACE_INDEX_FILL", FILL_DT, FILL_DT, {}, dict(
        note="value converted through fp32 (as CANN) to selfRef's dtype")),
    "IndexFillTensor": ("INDEX_FILL", FILL_DT, FILL_DT, {}, dict(
        note="value converted through fp32 (as CANN) to self's dtype")),
    "Scatter": ("SCATTER", SCATTER_DT, SCATTER_DT, {"index": IDX}, dict(
        note="reduce 0 none / 1 add / 2 multiply (3-5, experimental in CANN, are refused); indices in [0, size) "
             "(361001 at launch); duplicates: the last one wins")),
    "InplaceScatter": ("INPLACE_SCATTER", SCATTER_DT, SCATTER_DT, {"index": IDX}, dict(
        note="as Scatter")),
    "ScatterAdd": ("SCATTER_ADD", SCATTER_DT, SCATTER_DT, {"index": IDX}, dict(
        note="sums in index order (fp16 / bf16 in fp32, rounded once); indices in [0, size) (361001 at launch)")),
    "IndexPutImpl": ("INDEX_PUT", PUT_DT, PUT_DT, {"indices": "s32 s64 bool"}, dict(
        note="empty index tensors stand for whole dims (as CANN drops them); accumulate sums in index order "
             "(fp16 / bf16 in fp32)")),
    "Embedding": ("EMBEDDING", EMBED_DT, EMBED_DT, {"indices": IDX}, dict(
        note="indices in [0, rows) (361001 at launch)")),
    "EmbeddingDenseBackward": ("EMBEDDING_BACKWARD", "f32 f16 bf16", "f32 f16 bf16",
                               {"indices": "f16 f32 f64 s8 u8 s16 s32 s64 bool"}, dict(
        note="sums in fp32 in index order; indices in [0, numWeights) (361001 at launch)")),
}

for _n, _h, _p in MOVE:
    _k, _ins, _outs, _dts, _kw = ROWS[_n]
    op(_n, _h, _p, family="index", kernel=_k, ins=_ins, outs=_outs, dtypes=_dts, **_kw)
