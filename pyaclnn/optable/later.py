"""Operators of later issues: declared and exported, answering 561003 until their family lands."""
from . import ANY, ALL12, FLOAT3, FLOAT4, FLOAT_OUT, op, _planned  # noqa: F401


T = "const aclTensor* "

# ---- the operators of later issues: declared and exported, not implemented ---

LATER = [
    # matmul (issue 24)
    ("Mm", "aclnn_mm.h", T + "self, const aclTensor* mat2, aclTensor* out, int8_t cubeMathType", 24),
    ("BatchMatMul", "aclnn_batch_matmul.h", T + "self, const aclTensor* mat2, aclTensor* out, int8_t cubeMathType",
     24),
    ("Matmul", "aclnn_matmul.h", T + "self, const aclTensor* mat2, aclTensor* out, int8_t cubeMathType", 24),
    ("Mv", "aclnn_mv.h", T + "self, const aclTensor* vec, aclTensor* out, int8_t cubeMathType", 24),
    ("Ger", "aclnn_ger.h", T + "self, const aclTensor* vec2, aclTensor* out", 24),
    ("WeightQuantBatchMatmulV2", "aclnn_weight_quant_batch_matmul_v2.h",
     "const aclTensor* x, const aclTensor* weight, const aclTensor* antiquantScale, "
     "const aclTensor* antiquantOffsetOptional, const aclTensor* quantScaleOptional, "
     "const aclTensor* quantOffsetOptional, const aclTensor* biasOptional, int antiquantGroupSize, "
     "const aclTensor* y", 24),
    ("GroupedMatmulV3", "aclnn_grouped_matmul_v3.h",
     "const aclTensorList* x, const aclTensorList* weight, const aclTensorList* biasOptional, "
     "const aclTensorList* scaleOptional, const aclTensorList* offsetOptional, "
     "const aclTensorList* antiquantScaleOptional, const aclTensorList* antiquantOffsetOptional, "
     "const aclTensor* groupListOptional, int64_t splitItem, int64_t groupType, const aclTensorList* y", 24),
    ("TransMatmulWeight", "aclnn_trans_matmul_weight.h", "aclTensor* mmWeightRef", 24),
    # NN (issue 25)
    ("RmsNorm", "aclnn_rms_norm.h", "const aclTensor *x, const aclTensor *gamma, double epsilon, "
     "const aclTensor *yOut, const aclTensor *rstdOut", 25),
    ("LayerNorm", "aclnn_layer_norm.h", "const aclTensor* input, const aclIntArray* normalizedShape, "
     "const aclTensor* weightOptional, const aclTensor* biasOptional, double eps, aclTensor* out, "
     "aclTensor* meanOutOptional, aclTensor* rstdOutOptional", 25),
    ("GroupNorm", "aclnn_group_norm.h", T + "self, const aclTensor* gamma, const aclTensor* beta, int64_t N, "
     "int64_t C, int64_t HxW, int64_t group, double eps, aclTensor* out, aclTensor* meanOut, aclTensor* rstdOut",
     25),
    ("AddRmsNorm", "aclnn_add_rms_norm.h", "const aclTensor* x1, const aclTensor* x2, const aclTensor* gamma, "
     "double epsilon, aclTensor* yOut, aclTensor* rstdOut, aclTensor* xOut", 25),
    ("Softmax", "aclnn_softmax.h", T + "self, int64_t dim, aclTensor* out", 25),
    ("LogSoftmax", "aclnn_logsoftmax.h", T + "self, int64_t dim, aclTensor* out", 25),
    ("SoftmaxCrossEntropyWithLogits", "aclnn_softmax_cross_entropy_with_logits.h",
     "const aclTensor* features, aclTensor* labels, aclTensor* loss, aclTensor* backprop", 25),
    ("RotaryPositionEmbedding", "aclnn_rotary_position_embedding.h",
     "const aclTensor* x, const aclTensor* cos, const aclTensor* sin, int64_t mode, aclTensor* out", 25),
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
    ("SwiGlu", "aclnn_swi_glu.h", "const aclTensor *x, int64_t dim, const aclTensor *out", 25),
    ("GeGluV3", "aclnn_geglu.h", T + "self, int64_t dim, int64_t approximate, bool activateLeft, aclTensor* out, "
     "aclTensor* outGelu", 25),
]
for _n, _h, _p, _i in LATER:
    _planned(_n, _h, _p, None, issue=_i)

# One call, no executor.
op("CalculateMatmulWeightSizeV2", "aclnn_trans_matmul_weight.h",
   "const aclIntArray* tensorShape, aclDataType dataType, uint64_t* weightTensorSize", single=True, issue=24)

# Headers ggml-cann includes without calling what they declare: they only have to exist.
EMPTY_HEADERS = ("aclnn_recurrent_gated_delta_rule.h",)


