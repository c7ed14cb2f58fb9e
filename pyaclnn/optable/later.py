"""Operators of later issues: declared and exported, answering 561003 until their family lands."""
from . import ANY, ALL12, FLOAT3, FLOAT4, FLOAT_OUT, op, _planned  # noqa: F401


T = "const aclTensor* "

# ---- the operators of later issues: declared and exported, not implemented ---

LATER = [
    # matmul (issue 24; the rest are in matmul.py)
    ("GroupedMatmulV3", "aclnn_grouped_matmul_v3.h",
     "const aclTensorList* x, const aclTensorList* weight, const aclTensorList* biasOptional, "
     "const aclTensorList* scaleOptional, const aclTensorList* offsetOptional, "
     "const aclTensorList* antiquantScaleOptional, const aclTensorList* antiquantOffsetOptional, "
     "const aclTensor* groupListOptional, int64_t splitItem, int64_t groupType, const aclTensorList* y", 24),
]
for _n, _h, _p, _i in LATER:
    _planned(_n, _h, _p, None, issue=_i)

# Headers ggml-cann includes without calling what they declare: they only have to exist.
EMPTY_HEADERS = ("aclnn_recurrent_gated_delta_rule.h",)


