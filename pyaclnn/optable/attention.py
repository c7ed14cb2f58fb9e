"""Attention: FlashAttentionScore (+ Grad) as torch_npu's scaled_dot_product_attention
calls them, and FusedInferAttentionScoreV2 on the paths llama.cpp's CANN backend uses
(family "attention", native/ops/attention/, kernels in native/kernels/attention/)."""
from . import op


FLOAT = "f16 bf16 f32"

op("FlashAttentionScore", "aclnn_flash_attention_score.h",
   "const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *realShiftOptional, "
   "const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional, "
   "const aclIntArray *prefixOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, "
   "int64_t headNum, char *inputLayout, int64_t innerPrecise, int64_t sparseMode, const aclTensor *softmaxMaxOut, "
   "const aclTensor *softmaxSumOut, const aclTensor *softmaxOutOut, const aclTensor *attentionOutOut",
   family="attention", kernel="FA_FWD", ins=FLOAT, outs=FLOAT,
   dtypes={"dropMaskOptional": "u8", "paddingMaskOptional": FLOAT, "attenMaskOptional": "bool u8",
           "softmaxMaxOut": "f32", "softmaxSumOut": "f32"},
   flags=("optional:softmaxOutOut",),
   note="layouts BSH SBH BSND BNSD; GQA (Nq a multiple of Nkv); sparseMode 0 (attenMask [B,N,Sq,Skv] / [B,1,Sq,Skv] "
        "/ [1,1,Sq,Skv] / [Sq,Skv] plus the preTokens / nextTokens band from the top left), 1 (mask only), 2 / 3 "
        "(causal from the top left / bottom right; the compressed mask is not read), 4 (band from the bottom "
        "right); 5 / 6 (prefix) refused; realShift is added before the scale (scale*(qk + pse)); dropMask one bit "
        "per [B,N,Sq,Skv] element (DropoutGenMaskV2's layout); softmaxMax / softmaxSum [B,N,Sq,8] (the value 8 "
        "times); softmaxOut not written; fully masked rows give 0 (max -inf, sum 0); docs/attention.md")

op("FlashAttentionScoreGrad", "aclnn_flash_attention_score_grad.h",
   "const aclTensor *query, const aclTensor *keyIn, const aclTensor *value, const aclTensor *dy, "
   "const aclTensor *pseShiftOptional, const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, "
   "const aclTensor *attenMaskOptional, const aclTensor *softmaxMaxOptional, const aclTensor *softmaxSumOptional, "
   "const aclTensor *softmaxInOptional, const aclTensor *attentionInOptional, const aclIntArray *prefixOptional, "
   "double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout, "
   "int64_t innerPrecise, int64_t sparseMode, const aclTensor *dqOut, const aclTensor *dkOut, "
   "const aclTensor *dvOut, const aclTensor *dpseOut",
   family="attention", kernel="FA_BWD", ins=FLOAT, outs=FLOAT,
   dtypes={"dropMaskOptional": "u8", "paddingMaskOptional": FLOAT, "attenMaskOptional": "bool u8",
           "softmaxMaxOptional": "f32", "softmaxSumOptional": "f32"},
   flags=("optional:dpseOut",),
   note="as FlashAttentionScore; needs softmaxMax, softmaxSum and attentionIn (the forward's outputs: 161001 "
        "without them); deterministic (fixed-order sums); dpseOut not written")

op("FusedInferAttentionScoreV2", "aclnn_fused_infer_attention_score_v2.h",
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
   "int64_t valueAntiquantMode, const aclTensor *attentionOut, const aclTensor *softmaxLse",
   family="attention", kernel="FIA", ins="f16 bf16", outs="f16 bf16",
   dtypes={"pseShiftOptional": "f16 bf16", "attenMaskOptional": "bool s8 u8", "softmaxLse": "f32"},
   flags=("optional:softmaxLse", "out:softmaxLse"),
   note="the non-quantised paths: layouts BSH BSND BNSD, one K and one V tensor, GQA via numKeyValueHeads, "
        "pseShift [B,N,Sq,Skv] / [1,N,Sq,Skv] added after the scale (scale*qk + pse), attenMask [Sq,Skv] / "
        "[B,Sq,Skv] / [B,1,Sq,Skv] / [1,Sq,Skv], sparseMode 0 / 2 / 3 / 4 as FlashAttentionScore, "
        "actualSeqLengths(Kv) (the first rows / keys of each batch), softmaxLse [B,N,Sq,1]; quantisation, page "
        "attention (blockTable), padding sizes and shared prefixes refused (161002)")
