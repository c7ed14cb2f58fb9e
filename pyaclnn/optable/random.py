"""Random numbers: normal / uniform / integer fills, bernoulli, randperm,
multinomial, the dropout bit masks and their application (native/ops/random/,
kernels in native/kernels/random/). The numbers are pyaclnn's own Philox4x32-10
streams keyed by (seed, offset, element index): docs/random.md."""
from . import op


T = "const aclTensor* "
SEEDS = "const aclTensor* seedTensor, const aclTensor* offsetTensor"

RANDOM = [
    ("InplaceNormal", "aclnn_normal.h", T + "selfRef, float mean, float std, int64_t seed, int64_t offset"),
    ("InplaceNormalTensor", "aclnn_normal.h", T + "selfRef, float mean, float std, " + SEEDS + ", int64_t offset"),
    ("InplaceUniform", "aclnn_uniform.h", T + "selfRef, double from, double to, uint64_t seed, uint64_t offset"),
    ("InplaceUniformTensor", "aclnn_uniform.h", T + "selfRef, double from, double to, " + SEEDS +
     ", uint64_t offset"),
    ("InplaceRandom", "aclnn_random.h", T + "selfRef, int64_t from, int64_t to, int64_t seed, int64_t offset"),
    ("InplaceRandomTensor", "aclnn_random.h", T + "selfRef, int64_t from, int64_t to, " + SEEDS +
     ", int64_t offset"),
    ("Bernoulli", "aclnn_bernoulli.h", T + "self, const aclScalar* prob, int64_t seed, int64_t offset, aclTensor* out"),
    ("BernoulliTensor", "aclnn_bernoulli.h", T + "self, const aclTensor* prob, int64_t seed, int64_t offset, "
     "aclTensor* out"),
    ("InplaceBernoulli", "aclnn_bernoulli.h", T + "selfRef, const aclScalar* prob, int64_t seed, int64_t offset"),
    ("InplaceBernoulliTensor", "aclnn_bernoulli.h", T + "selfRef, const aclTensor* prob, int64_t seed, "
     "int64_t offset"),
    ("Randperm", "aclnn_randperm.h", "int64_t n, int64_t seed, int64_t offset, aclTensor* out"),
    ("Multinomial", "aclnn_multinomial.h", T + "self, int64_t numsamples, bool replacement, int64_t seed, "
     "int64_t offset, aclTensor* out"),
    ("MultinomialTensor", "aclnn_multinomial.h", T + "self, int64_t numsamples, bool replacement, " + SEEDS +
     ", int64_t offset, aclTensor* out"),
    ("DropoutGenMask", "aclnn_dropout_gen_mask.h", "const aclIntArray* shape, double prob, int64_t seed, "
     "int64_t offset, aclTensor* out"),
    ("DropoutGenMaskV2", "aclnn_dropout_gen_mask.h", "const aclIntArray* shape, double prob, int64_t seed, "
     "int64_t offset, aclDataType probDataType, aclTensor* out"),
    ("DropoutGenMaskV2Tensor", "aclnn_dropout_gen_mask.h", "const aclIntArray* shape, double prob, " + SEEDS +
     ", int64_t offset, aclDataType probDataType, aclTensor* out"),
    ("DropoutDoMask", "aclnn_dropout_do_mask.h", T + "self, const aclTensor* mask, double prob, aclTensor* out"),
]

# A2 (910B) dtype lists, from the vendor's op_api sources.
NORMAL_DT = "f16 f32 f64 s16 s32 s64 s8 u8 bool bf16"
UNIFORM_DT = "f32 s32 s64 f16 s16 s8 u8 f64 bf16"
RANDOM_DT = "f32 s32 s64 f16 s16 s8 u8 bool f64 bf16 c64 c128"
BERN_DT = "f32 s32 s64 f16 s16 s8 u8 f64 bool bf16"
PROB_DT = "f32 f16 f64 bf16"
SEED_DT = {"seedTensor": "s64", "offsetTensor": "s64"}
PERM_DT = "f32 f16 s32 f64 s64 s8 u8 s16 bf16"
MULTI_DT = "f32 f16 f64 bf16"
TENSOR_FORM = "; seedTensor / offsetTensor: one INT64 each, read at launch (offset adds to *offsetTensor)"

# name -> (kernel, ins, outs, per-parameter dtypes, other Op fields)
ROWS = {
    "InplaceNormal": ("NORMAL", NORMAL_DT, NORMAL_DT, {}, dict(
        note="mean + std * z, z from Box-Muller on the Philox words (docs/random.md), rounded once to selfRef's "
             "dtype; std < 0: 161002")),
    "InplaceNormalTensor": ("NORMAL_T", NORMAL_DT, NORMAL_DT, SEED_DT, dict(
        note="as InplaceNormal" + TENSOR_FORM + " (shape [1])")),
    "InplaceUniform": ("UNIFORM", UNIFORM_DT, UNIFORM_DT, {}, dict(
        note="from + u * (to - from), u in [0, 1) with the dtype's mantissa bits (fp16 11, bf16 8, fp64 53, else "
             "24); from > to: 161002")),
    "InplaceUniformTensor": ("UNIFORM_T", UNIFORM_DT, UNIFORM_DT, SEED_DT, dict(
        note="as InplaceUniform" + TENSOR_FORM)),
    "InplaceRandom": ("RANDOM", RANDOM_DT, RANDOM_DT, {}, dict(
        note="exact integers in [from, to) (64 random bits each, multiply-shift), then converted to selfRef's "
             "dtype; from >= to: 161002")),
    "InplaceRandomTensor": ("RANDOM_T", RANDOM_DT, RANDOM_DT, SEED_DT, dict(
        note="as InplaceRandom" + TENSOR_FORM)),
    "Bernoulli": ("BERNOULLI", BERN_DT, BERN_DT, {"prob": PROB_DT}, dict(
        note="1 where u24 >= fp32(1 - prob): the same bits as DropoutGenMaskV2 with drop probability 1 - prob")),
    "BernoulliTensor": ("BERNOULLI_T", BERN_DT, BERN_DT, {"prob": PROB_DT}, dict(
        note="prob broadcast to self; a probability outside [0, 1]: 361001 at launch, nothing written")),
    "InplaceBernoulli": ("BERNOULLI", BERN_DT, BERN_DT, {"prob": PROB_DT}, dict(note="as Bernoulli")),
    "InplaceBernoulliTensor": ("BERNOULLI_T", BERN_DT, BERN_DT, {"prob": PROB_DT}, dict(note="as BernoulliTensor")),
    "Randperm": ("RANDPERM", None, PERM_DT, {}, dict(
        note="Fisher-Yates driven by the Philox stream; workspace 8n bytes; out NULL: 161001 (CANN: 561103)")),
    "Multinomial": ("MULTINOMIAL", MULTI_DT, "s64", {}, dict(
        note="with replacement: inverse CDF (fp64); without: the top numsamples of w / Exp(1); an invalid row "
             "(negative, non-finite, zero sum, too few non-zero weights): 361001 at launch")),
    "MultinomialTensor": ("MULTINOMIAL_T", MULTI_DT, "s64", SEED_DT, dict(note="as Multinomial" + TENSOR_FORM)),
    "DropoutGenMask": ("GEN_MASK", None, "u8", {}, dict(
        note="as DropoutGenMaskV2 with probDataType FLOAT")),
    "DropoutGenMaskV2": ("GEN_MASK_V2", None, "u8", {}, dict(
        note="bit i (byte i / 8, LSB first) = 1 (keep) where u24(i) >= prob (rounded to probDataType); out holds "
             "ceil(numel / 128) * 16 bytes, every bit drawn; prob 0 / 1: 0xFF / 0x00")),
    "DropoutGenMaskV2Tensor": ("GEN_MASK_V2_T", None, "u8", SEED_DT, dict(
        note="as DropoutGenMaskV2" + TENSOR_FORM)),
    "DropoutDoMask": ("DO_MASK", "f32 f16 bf16", "f32 f16 bf16 f64 c64 c128", {"mask": "u8"}, dict(
        note="out = self * (1 / (1 - prob)) where the mask bit is 1, else 0 (fp32 math, rounded to self's dtype, "
             "then cast to out's); prob 0: a copy, prob 1: zeros")),
}

for _n, _h, _p in RANDOM:
    _k, _ins, _outs, _dts, _kw = ROWS[_n]
    op(_n, _h, _p, family="random", kernel=_k, ins=_ins, outs=_outs, dtypes=_dts, **_kw)
