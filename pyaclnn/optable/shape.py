"""Data movement through views: permute, slice, expand, flip, repeat, roll,
tril / triu, padding, concatenation, arange (native/ops/shape/, and the own
planners of ConstantPadNd and Cat)."""
from . import op

T = "const aclTensor* "
MOVE_DT = "f32 f16 f64 u64 s64 u32 s32 u16 s16 u8 s8 bool c64 c128 bf16"
TRI_DT = "u8 s8 s16 s32 s64 f16 f32 f64 bool bf16 u16 u32 u64"


def _shape(name, header, params, kernel, ins, note=""):
    return op(name, header, params, family="shape", kernel=kernel, ins=ins, outs=ins, note=note)


_shape("Permute", "aclnn_permute.h", T + "self, const aclIntArray* dims, aclTensor* out", "PERMUTE", MOVE_DT)
_shape("Slice", "aclnn_slice.h", T + "self, int64_t dim, int64_t start, int64_t end, int64_t step, aclTensor* out",
       "SLICE", "f32 f16 bf16 s32 s64 s8 u8 bool", note="start and end clamped to the dim, step > 0")
_shape("Repeat", "aclnn_repeat.h", T + "self, const aclIntArray* repeats, aclTensor* out", "REPEAT", MOVE_DT,
       note="no limit on how many dims repeat (the NPU's broadcast kernel allows 3 or 4)")
_shape("Expand", "aclnn_expand.h", T + "self, const aclIntArray* size, aclTensor* out", "EXPAND", MOVE_DT)
_shape("Flip", "aclnn_flip.h", T + "self, const aclIntArray* dims, aclTensor* out", "FLIP", MOVE_DT)
_shape("Roll", "aclnn_roll.h", T + "x, const aclIntArray* shifts, const aclIntArray* dims, aclTensor* out", "ROLL",
       "bf16 f16 f32 s8 u8 s32 s64 u32 bool s16", note="empty dims: the flattened tensor rolls")
_shape("Tril", "aclnn_tril.h", T + "self, int64_t diagonal, aclTensor* out", "TRIL", TRI_DT)
_shape("InplaceTril", "aclnn_tril.h", "const aclTensor* selfRef, int64_t diagonal", "TRIL", TRI_DT)
_shape("Triu", "aclnn_triu.h", T + "self, int64_t diagonal, aclTensor* out", "TRIU", TRI_DT)
_shape("InplaceTriu", "aclnn_triu.h", "aclTensor* selfRef, int64_t diagonal", "TRIU", TRI_DT)
_shape("ReflectionPad1d", "aclnn_reflection_pad1d.h", T + "self, const aclIntArray* padding, aclTensor* out",
       "REFLECTION_PAD1D", "f32 s32 s64 f16 s16 f64 s8 u8 bool bf16 c64 c128")
op("ConstantPadNd", "aclnn_constant_pad_nd.h", T + "self, const aclIntArray* pad, const aclScalar* value, "
   "aclTensor* out", family="op")
op("Cat", "aclnn_cat.h", "const aclTensorList* tensors, int64_t dim, aclTensor* out", family="op")
op("Stack", "aclnn_stack.h", "const aclTensorList* tensors, int64_t dim, aclTensor* out", family="op",
   ins="s8 s16 s32 s64 u8 u16 u32 u64 f16 f32 bool f64 c64 c128 bf16",
   outs="s8 s16 s32 s64 u8 u16 u32 u64 f16 f32 bool f64 c64 c128 bf16", max_rank=8,
   flags=("optional:tensors", "optional:out"),
   note="Cat's planner on views with a size-1 dim at dim; NULL tensors / out: 561103 as the vendor's")
op("Arange", "aclnn_arange.h", "const aclScalar* start, const aclScalar* end, const aclScalar* step, aclTensor* out",
   family="shape", kernel="ARANGE", outs="f16 f32 f64 s32 s64 bf16",
   note="fills out (whatever its size) with start + i * step")
