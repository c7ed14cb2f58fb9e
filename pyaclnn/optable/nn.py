"""The NN family (native/ops/nn/, kernels in native/kernels/nn/): softmax and its
gradient, the norms and theirs, the gated activations, rotary position
embedding, the losses. Prototypes, A2 dtypes and rules from the vendor's
ops-nn / ops-transformer sources (op_api, op_host defs, kernels)."""
from . import ANY, ALL12, FLOAT3, FLOAT4, FLOAT_OUT, op  # noqa: F401


T = "const aclTensor* "
F32 = "f32"

# name -> (header, prototype, kernel, ins, outs, per-parameter dtypes, other Op fields)
ROWS = [
    ("Softmax", "aclnn_softmax.h", T + "self, int64_t dim, aclTensor* out", "SOFTMAX", FLOAT4, FLOAT4, {}, dict(
        note="computed in self's dtype (fp32 for fp16 / bf16, fp64 for DOUBLE), rounded to it, then cast to out's; "
             "rows along dim, fixed-order sums (bits independent of threads and ISA); an empty self returns at "
             "once")),
    ("LogSoftmax", "aclnn_logsoftmax.h", T + "self, int64_t dim, aclTensor* out", "LOG_SOFTMAX", FLOAT4, FLOAT4,
     {}, dict(note="self cast to out's dtype first, computed and rounded in it: (x - max) - log(sum exp)")),
    ("SoftmaxBackward", "aclnn_softmax_backward.h",
     T + "gradOutput, " + T + "output, int64_t dim, aclTensor* out", "SOFTMAX_BACKWARD", FLOAT3, FLOAT3, {}, dict(
         note="out = y * (dy - sum(dy * y)) in fp32, rounded to gradOutput's dtype, cast to out's; gradOutput and "
              "output of one dtype and shape")),
    ("LogSoftmaxBackward", "aclnn_logsoftmax_backward.h",
     T + "gradOutput, " + T + "output, int64_t dim, aclTensor* out", "LOG_SOFTMAX_BACKWARD", FLOAT3, FLOAT3, {},
     dict(note="out = dy - exp(y) * sum(dy) in fp32")),
    ("RmsNorm", "aclnn_rms_norm.h", "const aclTensor *x, const aclTensor *gamma, double epsilon, "
     "const aclTensor *yOut, const aclTensor *rstdOut", "RMS_NORM", FLOAT3, FLOAT3, {"rstdOut": F32}, dict(
         note="gamma = the last dims of x (x FLOAT16 / BF16 take gamma of their dtype or FLOAT); rstd = "
              "1/sqrt(sum(x^2)/n + eps), y = (x*rstd)*gamma in fp32, rounded once; shape errors are the tiling's "
              "561002; rstdOut one value per row")),
    ("AddRmsNorm", "aclnn_add_rms_norm.h", T + "x1, " + T + "x2, " + T + "gamma, double epsilon, aclTensor* yOut, "
     "aclTensor* rstdOut, aclTensor* xOut", "ADD_RMS_NORM", FLOAT3, FLOAT3, {"rstdOut": F32}, dict(
         flags=("optional:rstdOut", "optional:xOut"),
         note="xOut = x1 + x2, yOut = rmsnorm(xOut) * gamma with the vendor kernel's 16-bit roundings; without "
              "rstdOut (and xOut) the 16-bit-only pre / post modes")),
    ("RmsNormGrad", "aclnn_rms_norm_grad.h", "const aclTensor *dy, const aclTensor *x, const aclTensor *rstd, "
     "const aclTensor *gamma, const aclTensor *dxOut, const aclTensor *dgammaOut", "RMS_NORM_GRAD", FLOAT3, FLOAT3,
     {"rstd": F32, "dgammaOut": F32}, dict(
         note="dx = (dy*g - mean(dy*g*xr) * xr) * rstd with xr = x*rstd (fp16 with fp16 gamma: the kernel's fp16 "
              "intermediates); dgamma = sum over rows of dy*xr in a fixed chunk order (CANN: atomics)")),
    ("LayerNorm", "aclnn_layer_norm.h", "const aclTensor* input, const aclIntArray* normalizedShape, "
     "const aclTensor* weightOptional, const aclTensor* biasOptional, double eps, aclTensor* out, "
     "aclTensor* meanOutOptional, aclTensor* rstdOutOptional", "LAYER_NORM", FLOAT3, FLOAT3, {}, dict(
         note="two-pass mean / variance in fp32; weight / bias of input's dtype or FLOAT (NULL: ones / zeros); mean "
              "and rstd rounded to the weight's (bias's, input's) dtype, FLOAT where CANN runs LayerNormV4, then cast; "
              "one value per row; an empty "
              "normalized part gives mean 0, rstd NaN")),
    ("LayerNormBackward", "aclnn_layer_norm_backward.h", T + "gradOut, " + T + "input, "
     "const aclIntArray* normalizedShape, " + T + "mean, " + T + "rstd, " + T + "weightOptional, " + T +
     "biasOptional, const aclBoolArray* outputMask, aclTensor* gradInputOut, aclTensor* gradWeightOut, "
     "aclTensor* gradBiasOut", "LAYER_NORM_BACKWARD", FLOAT3, FLOAT3, {}, dict(
         roles="- - - - - - - - o o o",
         flags=("optional:gradInputOut", "optional:gradWeightOut", "optional:gradBiasOut"),
         note="outputMask (3 entries) picks the outputs (NULL where it is false); dx = (dy*w - xhat*mean(dy*w*xhat) "
              "- mean(dy*w)) * rstd (LayerNormGradV3's order); gradWeight / gradBias in fp32 summed in a fixed chunk "
              "order; mean / rstd one value per row")),
    ("GroupNorm", "aclnn_group_norm.h", T + "self, const aclTensor* gamma, const aclTensor* beta, int64_t N, "
     "int64_t C, int64_t HxW, int64_t group, double eps, aclTensor* out, aclTensor* meanOut, aclTensor* rstdOut",
     "GROUP_NORM", FLOAT3, FLOAT3, {}, dict(
         flags=("optional:gamma", "optional:beta"),
         note="gamma / beta may be NULL (ones / zeros, as CANN); the vendor kernel's one-pass variance; mean / rstd "
              "(N, group) of self's dtype, written after the rows (overlapping views give the same bits every "
              "run); an empty self gives mean 0, rstd NaN")),
    ("SwiGlu", "aclnn_swi_glu.h", "const aclTensor *x, int64_t dim, const aclTensor *out", "SWI_GLU", FLOAT3,
     FLOAT3, {}, dict(note="out = silu(A) * B for the halves A, B of x along dim (fp32: (1/(1+exp(-A)))*A*B; "
                           "16-bit: (A/(1+exp(-A)))*B in fp32, rounded once); odd dim or a wrong out shape: 561002")),
    ("GeGluV3", "aclnn_geglu.h", T + "self, int64_t dim, int64_t approximate, bool activateLeft, aclTensor* out, "
     "aclTensor* outGelu", "GE_GLU_V3", FLOAT3, FLOAT3, {}, dict(
         note="outGelu = gelu(the activated half), out = outGelu * the other; approximate 0 = erf (the vendor "
              "kernel's exp form), 1 = tanh; activateLeft picks A; fp16 rounds gelu before the product")),
    ("RotaryPositionEmbedding", "aclnn_rotary_position_embedding.h",
     "const aclTensor* x, const aclTensor* cos, const aclTensor* sin, int64_t mode, aclTensor* out", "ROPE", FLOAT3,
     FLOAT3, {}, dict(
         note="A2 modes 0 (half / rotate_half) and 1 (interleave) over the last dim (even, < 896); x 3-D or 4-D, "
              "cos / sin of x's dtype broadcast to it; computed in fp32; shape and mode errors: 561002")),
    ("SoftmaxCrossEntropyWithLogits", "aclnn_softmax_cross_entropy_with_logits.h",
     "const aclTensor* features, aclTensor* labels, aclTensor* loss, aclTensor* backprop", "SOFTMAX_CE", FLOAT3,
     FLOAT3, {}, dict(
         flags=("out:loss", "out:backprop"),
         note="features / labels 2-D [N, C] of one shape; loss[n] = -sum labels * log_softmax(features), backprop = "
              "softmax(features) - labels, in fp32, rounded to features' dtype (loss, backprop of that dtype)")),
    ("NLLLoss", "aclnn_nll_loss.h", T + "self, " + T + "target, " + T + "weight, int64_t reduction, "
     "int64_t ignoreIndex, aclTensor* out, aclTensor* totalWeightOut", "NLL_LOSS", FLOAT3, FLOAT3,
     {"target": "s64 u8 s32"}, dict(
         note="reduction 0 none / 1 mean / 2 sum; ignoreIndex rows count 0; fixed-order sums in fp32 (CANN: "
              "non-deterministic atomics); targets outside [0, C) fail the launch (361001) before any write; an empty "
              "self gives out NaN (mean) / 0 (sum) and totalWeight 0")),
    ("NLLLossBackward", "aclnn_nll_loss_backward.h", T + "gradOutput, " + T + "self, " + T + "target, " + T +
     "weight, int64_t reduction, int64_t ignoreIndex, " + T + "totalWeight, aclTensor* out", "NLL_LOSS_BACKWARD",
     FLOAT3, FLOAT3, {"target": "s64 u8 s32"}, dict(
         note="out = 0 but out[n, target] = -weight[target] * gradOutput (/ totalWeight for mean); targets checked "
              "at launch (361001)")),
]

for _n, _h, _p, _k, _ins, _outs, _dts, _kw in ROWS:
    op(_n, _h, _p, family="nn", kernel=_k, ins=_ins, outs=_outs, dtypes=_dts, **_kw)
