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
    # NN (issue 25)
    ("FusedInferAttentionScoreV2", "aclnn_fused_infer_attention_score_v2.h",
     "const aclTensor *query, const aclTensorList *key, const aclTensorList *value, "
     "const aclTensor *pseShiftOptional, const aclTensor *attenMaskOptional, "
     "const aclIntArray *actualSeqLengthsOptional, const aclIntArray *actualSeqLengthsKvOptional, "
     "const aclTensor *deqScale1Optional, const aclTensor *quantScale1Optional, "
     "const aclTensor *deqScale2Optional, const aclTensor *quantScale2Optional, "
     "const aclTensor *quantOffset2Optional, const aclTensor *antiquantScaleOptional, "
     "const aclTensor *antiquantOffsetOptional, const aclTensor *blockTableOptional, "
     "const aclTensor *queryPaddingSizeOptional, const aclTensor *kvPaddingSizeOptional, "
     "const aclTensor *keyAntiquantScaleOptional, const aclTensor *keyAntiquantOffsetOptional, "
     "const aclTensor *valueAntiquantScaleOptional, const aclTensor *valueAntiquantOffsetOptional, "
     "const aclTensor *keySharedPrefixOptional, const aclTensor *valueSharedPrefixOptional, "
     "const aclIntArray *actualSharedPrefixLenOptional, int64_t numHeads, double scaleValue, int64_t preTokens, "
     "int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise, "
     "int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode, "
     "int64_t valueAntiquantMode, const aclTensor *attentionOut, const aclTensor *softmaxLse", 25),
]
for _n, _h, _p, _i in LATER:
    _planned(_n, _h, _p, None, issue=_i)

# Headers ggml-cann includes without calling what they declare: they only have to exist.
EMPTY_HEADERS = ("aclnn_recurrent_gated_delta_rule.h",)


