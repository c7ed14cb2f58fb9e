"""Elementwise operators (the map family, native/ops/map/)."""
from . import ANY, ALL12, FLOAT3, FLOAT4, FLOAT_OUT, op, _planned  # noqa: F401


def _map(name, header, params, kernel, roles, ins, outs=None, **kw):
    return op(name, header, params, family="map", kernel=kernel, roles=roles, ins=ins, outs=outs, **kw)


# ---- elementwise: arithmetic ----------------------------------------------

T = "const aclTensor* "
for nm, k in (("Add", "ADD"), ("Sub", "SUB")):
    h = "aclnn_%s.h" % nm.lower()
    _map(nm, h, T + "self, const aclTensor* other, const aclScalar* alpha, aclTensor* out", k, "a b p0 o", ALL12,
         compute="promote_alpha_" + nm.lower(), note="out = self %s alpha * other" % ("+" if k == "ADD" else "-"))
    _map(nm + "s", h, T + "self, const aclScalar* other, const aclScalar* alpha, aclTensor* out", k, "a b p0 o",
         ALL12, compute="scalar_alpha_" + nm.lower())
    _map("Inplace" + nm, h, ("const " if nm == "Add" else "") + "aclTensor* selfRef, const aclTensor* other, "
         "const aclScalar* alpha", k, "ao b p0", ALL12, compute="promote_alpha_" + nm.lower())
    _map("Inplace" + nm + "s", h, ("const " if nm == "Add" else "") + "aclTensor* selfRef, const aclScalar* other, "
         "const aclScalar* alpha", k, "ao b p0", ALL12, compute="scalar_alpha_" + nm.lower())

MUL_DT = ALL12
_map("Mul", "aclnn_mul.h", T + "self, const aclTensor* other, aclTensor* out", "MUL", "a b o", MUL_DT, MUL_DT)
_map("Muls", "aclnn_mul.h", T + "self, const aclScalar* other, aclTensor* out", "MUL", "a b o", MUL_DT, MUL_DT,
     compute="scalar_muls", outrule="any")
_map("InplaceMul", "aclnn_mul.h", "aclTensor* selfRef, const aclTensor* other", "MUL", "ao b", MUL_DT)
_map("InplaceMuls", "aclnn_mul.h", "aclTensor* selfRef, const aclScalar* other", "MUL", "ao b", MUL_DT,
     compute="scalar_muls", outrule="any")
_map("Div", "aclnn_div.h", T + "self, const aclTensor* other, aclTensor* out", "DIV", "a b o", ALL12,
     compute="div", note="true division; integer inputs divide in FLOAT")
_map("Divs", "aclnn_div.h", T + "self, const aclScalar* other, aclTensor* out", "DIV", "a b o", ALL12,
     compute="scalar_div", outrule="cast_self")
_map("InplaceDiv", "aclnn_div.h", "aclTensor* selfRef, const aclTensor* other", "DIV", "ao b", ALL12,
     compute="div")
_map("InplaceDivs", "aclnn_div.h", "aclTensor* selfRef, const aclScalar* other", "DIV", "ao b", ALL12,
     compute="scalar_div", outrule="cast_self")
DIVMODE = {0: "DIV", 1: "DIV_TRUNC", 2: "DIV_FLOOR"}
_map("DivMod", "aclnn_div.h", T + "self, const aclTensor* other, int mode, aclTensor* out", None, "a b k o",
     ALL12, compute="divmod", kernels=DIVMODE, note="mode 0 true, 1 truncating, 2 floor division")
_map("DivMods", "aclnn_div.h", T + "self, const aclScalar* other, int mode, aclTensor* out", None, "a b k o",
     ALL12, compute="divmod", kernels=DIVMODE)
_map("InplaceDivMod", "aclnn_div.h", "aclTensor* selfRef, const aclTensor* other, int mode", None, "ao b k",
     ALL12, compute="divmod", kernels=DIVMODE)
_map("InplaceDivMods", "aclnn_div.h", "aclTensor* selfRef, const aclScalar* other, int mode", None, "ao b k",
     ALL12, compute="divmod", kernels=DIVMODE)
POW_DT = "f32 s32 s64 f16 s8 u8 f64 bool s16 c64 c128 bf16"
_map("PowTensorScalar", "aclnn_pow.h", T + "self, const aclScalar* exponent, const aclTensor* out", "POW",
     "a b o", POW_DT, compute="scalar_pow")
_map("InplacePowTensorScalar", "aclnn_pow.h", T + "self, const aclScalar* exponent", "POW", "ao b", POW_DT,
     compute="scalar_pow")
_map("PowScalarTensor", "aclnn_pow.h", "const aclScalar* self, const aclTensor* exponent, const aclTensor* out",
     "POW", "a b o", POW_DT, compute="scalar_pow_base")
_map("PowTensorTensor", "aclnn_pow_tensor_tensor.h", T + "self, const aclTensor* exponent, aclTensor* out",
     "POW", "a b o", POW_DT, compute="pow_tt")
_map("InplacePowTensorTensor", "aclnn_pow_tensor_tensor.h", T + "self, const aclTensor* exponent", "POW",
     "ao b", POW_DT, compute="pow_tt")
MAXMIN_DT = "f32 f16 s32 s8 s64 bf16 s16 u8 f64 bool"
_map("Maximum", "aclnn_maximum.h", T + "self, const aclTensor* other, aclTensor* out", "MAXIMUM", "a b o",
     MAXMIN_DT, MAXMIN_DT, note="NaN if either is NaN")
_map("Minimum", "aclnn_minimum.h", T + "self, const aclTensor* other, aclTensor* out", "MINIMUM", "a b o",
     MAXMIN_DT, MAXMIN_DT)
REM_DT = "s32 s64 f16 f32 f64 bf16 s8 u8 s16 bool"
_map("RemainderTensorTensor", "aclnn_remainder.h", T + "self, const aclTensor* other, aclTensor* out",
     "REMAINDER", "a b o", REM_DT, compute="remainder", note="the sign of the divisor (Python's %)")
_map("RemainderTensorScalar", "aclnn_remainder.h", T + "self, const aclScalar* other, aclTensor* out",
     "REMAINDER", "a b o", REM_DT, compute="remainder_scalar")
_map("InplaceRemainderTensorTensor", "aclnn_remainder.h", "aclTensor* selfRef, const aclTensor* other",
     "REMAINDER", "ao b", REM_DT, compute="remainder")
_map("InplaceRemainderTensorScalar", "aclnn_remainder.h", "aclTensor* selfRef, const aclScalar* other",
     "REMAINDER", "ao b", REM_DT, compute="remainder_scalar")
FMOD_DT = "f32 s32 s8 f16 u8 f64 s64 bf16"
_map("FmodTensor", "aclnn_fmod_tensor.h", T + "self, const aclTensor* other, aclTensor* out", "FMOD", "a b o",
     FMOD_DT, FMOD_DT, outrule="any", note="the sign of the dividend (C fmod)")
_map("FmodScalar", "aclnn_fmod_scalar.h", T + "self, const aclScalar* other, aclTensor* out", "FMOD", "a b o",
     FMOD_DT, FMOD_DT, outrule="any", compute="promote_with_scalar")
_map("Addcmul", "aclnn_addcmul.h", T + "self, const aclTensor* tensor1, const aclTensor* tensor2, "
     "const aclScalar* value, aclTensor* out", "ADDCMUL", "a b c p0 o", "f32 f16 f64 bf16 s32 s64 s8 u8",
     note="out = self + value * tensor1 * tensor2")
_map("InplaceAddcmul", "aclnn_addcmul.h", "const aclTensor* selfRef, const aclTensor* tensor1, "
     "const aclTensor* tensor2, const aclScalar* value", "ADDCMUL", "ao b c p0", "f32 f16 f64 bf16 s32 s64 s8 u8")
_map("Addcdiv", "aclnn_addcdiv.h", T + "self, const aclTensor* tensor1, const aclTensor* tensor2, "
     "const aclScalar* value, const aclTensor* out", "ADDCDIV", "a b c p0 o", "bf16 f16 f32 f64 s64",
     compute="float", note="out = self + value * tensor1 / tensor2")
_map("InplaceAddcdiv", "aclnn_addcdiv.h", "const aclTensor* selfRef, const aclTensor* tensor1, "
     "const aclTensor* tensor2, const aclScalar* value", "ADDCDIV", "ao b c p0", "bf16 f16 f32 f64 s64",
     compute="float")
_map("Lerp", "aclnn_lerp_tensor.h", T + "self, const aclTensor* end, const aclTensor* weight, aclTensor* out",
     "LERP", "a b c o", "f32 f16 bf16", "f32 f16 bf16", note="out = self + weight * (end - self)")
_map("InplaceLerp", "aclnn_lerp_tensor.h", "aclTensor* selfRef, const aclTensor* end, const aclTensor* weight",
     "LERP", "ao b c", "f32 f16 bf16")
_map("Lerps", "aclnn_lerp_scalar.h", T + "self, const aclTensor* end, const aclScalar* weight, aclTensor* out",
     "LERP", "a b c o", "f32 f16 bf16", "f32 f16 bf16")
_map("InplaceLerps", "aclnn_lerp_scalar.h", "aclTensor* selfRef, const aclTensor* end, const aclScalar* weight",
     "LERP", "ao b c", "f32 f16 bf16")

# ---- elementwise: clamp ----------------------------------------------------

CLAMP_DT = "f16 f32 s32 s64 s16 s8 u8 f64 bf16"
_map("Clamp", "aclnn_clamp.h", T + "self, const aclScalar* clipValueMin, const aclScalar* clipValueMax, "
     "aclTensor* out", "CLAMP", "a p0 p1 o", CLAMP_DT, CLAMP_DT, compute="out",
     dtypes={"clipValueMin": CLAMP_DT + " bool", "clipValueMax": CLAMP_DT + " bool"},
     flags=("optional:clipValueMin", "optional:clipValueMax", "clamp_one_bound"),
     note="min(max(self, min), max); either bound may be NULL, not both")
_map("ClampMin", "aclnn_clamp.h", T + "self, const aclScalar* clipValueMin, aclTensor* out", "CLAMP",
     "a p0 o", CLAMP_DT, CLAMP_DT, compute="out", dtypes={"clipValueMin": CLAMP_DT + " bool"})
_map("ClampMax", "aclnn_clamp.h", T + "self, const aclScalar* clipValueMax, aclTensor* out", "CLAMP",
     "a p1 o", CLAMP_DT, CLAMP_DT, compute="out", dtypes={"clipValueMax": CLAMP_DT + " bool"})
_map("InplaceClampMax", "aclnn_clamp.h", "const aclTensor* selfRef, const aclScalar* clipValueMax", "CLAMP",
     "ao p1", CLAMP_DT, compute="out", dtypes={"clipValueMax": CLAMP_DT + " bool"})
_map("ClampTensor", "aclnn_clamp.h", T + "self, const aclTensor* clipValueMin, const aclTensor* clipValueMax, "
     "aclTensor* out", "CLAMP_T", "a b c o", CLAMP_DT, CLAMP_DT,
     flags=("optional:clipValueMin", "optional:clipValueMax", "clamp_one_bound"),
     note="either bound may be NULL, not both")
_map("ClampMinTensor", "aclnn_clamp.h", T + "self, const aclTensor* clipValueMin, aclTensor* out",
     "CLAMP_MIN_T", "a b o", CLAMP_DT, CLAMP_DT)
_map("ClampMaxTensor", "aclnn_clamp.h", T + "self, const aclTensor* max, aclTensor* out", "CLAMP_MAX_T",
     "a b o", CLAMP_DT, CLAMP_DT)
_map("InplaceClampMinTensor", "aclnn_clamp.h", "aclTensor* selfRef, const aclTensor* clipValueMin",
     "CLAMP_MIN_T", "ao b", CLAMP_DT)
_map("InplaceClampMaxTensor", "aclnn_clamp.h", "aclTensor* selfRef, const aclTensor* max", "CLAMP_MAX_T",
     "ao b", CLAMP_DT)
_map("Hardtanh", "aclnn_hardtanh.h", T + "self, const aclScalar* clipValueMin, const aclScalar* clipValueMax, "
     "aclTensor* out", "CLAMP", "a p0 p1 o", CLAMP_DT, outrule="same", compute="self",
     flags=("min_le_max",))
_map("InplaceHardtanh", "aclnn_hardtanh.h", "aclTensor* selfRef, const aclScalar* clipValueMin, "
     "const aclScalar* clipValueMax", "CLAMP", "ao p0 p1", CLAMP_DT, compute="self", flags=("min_le_max",))

# ---- elementwise: unary math and activations ------------------------------

U = T + "self, aclTensor* out"


def _unary(name, header, kernel, ins, outs=None, compute="self", outrule="cast", inplace="aclTensor* selfRef",
           params=U, inplace_ins=None, **kw):
    _map(name, header, params, kernel, "a o", ins, outs, compute=compute, outrule=outrule, **kw)
    if inplace:
        _map("Inplace" + name, header, inplace, kernel, "ao", inplace_ins or outs or ins, compute=compute,
             outrule=outrule)


NEG_DT = "s8 s32 s64 f16 f32 f64 c64 c128 bf16"
_unary("Neg", "aclnn_neg.h", "NEG", NEG_DT, NEG_DT)
_unary("Abs", "aclnn_abs.h", "ABS", "f64 f32 f16 s64 s32 s16 s8 u8 bool bf16 c64", outrule="same", inplace=None)
_unary("Reciprocal", "aclnn_reciprocal.h", "RECIP", ALL12, FLOAT_OUT, compute="self_or_f32",
       inplace="const aclTensor* selfRef")
_unary("Sqrt", "aclnn_sqrt.h", "SQRT", ALL12, FLOAT_OUT, compute="float_s64_f64", inplace="aclTensor* self",
       params=U, ws_names=("workspaceSize", "opExecutor"))
_unary("Rsqrt", "aclnn_rsqrt.h", "RSQRT", ALL12, FLOAT_OUT, compute="self_or_out")
_unary("Exp", "aclnn_exp.h", "EXP", "f32 f16 bf16 f64 c64 c128 bool s64", FLOAT_OUT, compute="float")
_unary("Exp2", "aclnn_exp2.h", "EXP2", "f32 s32 s64 f16 s8 u8 f64 s16 bool bf16", FLOAT_OUT, compute="float",
       inplace_ins="f32 f16 f64 bf16")
_unary("Expm1", "aclnn_expm1.h", "EXPM1", "f32 f16 s64 bool bf16", "f32 f16 bf16", compute="float")
for nm, k in (("Log", "LOG"), ("Log2", "LOG2"), ("Log10", "LOG10")):
    _unary(nm, "aclnn_%s.h" % nm.lower(), k, ALL12, FLOAT_OUT, compute="float",
           params=U if nm != "Log2" else T + "self, const aclTensor* out",
           inplace="aclTensor* selfRef" if nm != "Log2" else "const aclTensor* selfRef")
_unary("Log1p", "aclnn_log1p.h", "LOG1P", "f32 f16 f64 s8 s16 s32 s64 bool u8 bf16", "f32 f16 f64 bf16",
       compute="self_or_out")
_unary("Sin", "aclnn_sin.h", "SIN", ALL12, FLOAT_OUT, compute="self_or_f32", inplace_ins="f32 bf16 f16")
_unary("Cos", "aclnn_cos.h", "COS", ALL12, FLOAT_OUT, compute="self_or_f32", params=T + "input, aclTensor* out",
       inplace="aclTensor* inputRef")
_unary("Tan", "aclnn_tan.h", "TAN", ALL12, FLOAT_OUT, compute="self_or_f32", inplace="const aclTensor* selfRef")
_unary("Tanh", "aclnn_tanh.h", "TANH", "f32 f16 bool u8 s8 s16 s32 s64 bf16", "f32 f16 bf16", compute="float",
       inplace_ins="f32 f16 bf16")
TRIG_IN = "f32 f16 f64 s8 s16 s32 s64 bool u8 bf16"
TRIG_OUT = "f32 f16 f64 bf16"
for nm, k, arg in (("Asin", "ASIN", "self"), ("Acos", "ACOS", "input"), ("Atan", "ATAN", "input"),
                   ("Sinh", "SINH", "self"), ("Cosh", "COSH", "self"), ("Asinh", "ASINH", "input"),
                   ("Acosh", "ACOSH", "self"), ("Atanh", "ATANH", "input")):
    _unary(nm, "aclnn_%s.h" % nm.lower(), k, TRIG_IN, TRIG_OUT, compute="self_or_f32",
           params=T + arg + ", aclTensor* out", inplace="aclTensor* %sRef" % arg, inplace_ins=TRIG_OUT,
           note="computed in double, rounded once" if nm == "Asin" else "")
_map("Atan2", "aclnn_atan2.h", T + "self, const aclTensor* other, aclTensor* out", "ATAN2", "a b o", TRIG_IN,
     TRIG_OUT, compute="div", note="atan2(self, other); integer inputs compute in FLOAT")
_map("InplaceAtan2", "aclnn_atan2.h", "aclTensor* selfRef, aclTensor* other", "ATAN2", "ao b", TRIG_IN,
     compute="div")
_unary("Erfinv", "aclnn_erfinv.h", "ERFINV", "f32 f16 bf16 bool s8 s16 s32 s64 u8", FLOAT3, compute="float",
       inplace="const aclTensor* selfRef", inplace_ins=FLOAT3, note="+-1 give +-inf, |x| > 1 NaN")
NTN_DT = "f16 f32 bf16 s8 s16 s32 s64 u8 bool"
_map("NanToNum", "aclnn_nan_to_num.h", T + "self, float nan, float posinf, float neginf, aclTensor* out",
     "NAN_TO_NUM", "a p0 p1 p2 o", NTN_DT, NTN_DT, compute="self", outrule="same", flags=("no_broadcast",),
     note="NaN, +inf, -inf replaced (in self's dtype); integers copied")
_map("InplaceNanToNum", "aclnn_nan_to_num.h", "aclTensor* selfRef, float nan, float posinf, float neginf",
     "NAN_TO_NUM", "ao p0 p1 p2", NTN_DT, compute="self", outrule="same")
_unary("Erf", "aclnn_erf.h", "ERF", "f64 f32 f16 bf16 bool s64", FLOAT_OUT, compute="float",
       inplace_ins="f64 f32 f16 bf16")
_unary("Sign", "aclnn_sign.h", "SIGN", "f64 f32 f16 s32 s64 c64 c128 bool bf16", outrule="same", inplace=None,
       params=T + "self, aclTensor* result")
_unary("Floor", "aclnn_floor.h", "FLOOR", "s64 s32 s16 s8 u64 u32 u16 u8 f64 f32 f16 bf16", outrule="same")
_unary("Ceil", "aclnn_ceil.h", "CEIL", "f64 f32 f16 bf16", outrule="same")
_unary("Round", "aclnn_round.h", "ROUND", "f32 f16 bf16 f64 s32 s64", outrule="same",
       inplace="const aclTensor* selfRef", note="half to even")
_unary("Trunc", "aclnn_trunc.h", "TRUNC", "f32 f16 bf16", outrule="same")
_unary("Square", "aclnn_square.h", "SQUARE", "f32 f16 bf16 f64 s8 u8 s16 s32 s64", inplace=None)
_unary("Relu", "aclnn_relu.h", "RELU", "f32 f16 s8 u8 s32 s64 bf16", outrule="same",
       params=T + "self, const aclTensor* out")
_unary("Sigmoid", "aclnn_sigmoid.h", "SIGMOID", ALL12, FLOAT_OUT, compute="self_or_out")
_unary("Silu", "aclnn_silu.h", "SILU", FLOAT3, outrule="same", inplace=None, note="x * sigmoid(x)")
_unary("Gelu", "aclnn_gelu.h", "GELU_TANH", FLOAT3, outrule="same", inplace=None,
       note="the tanh approximation, as the vendor's kernel")
_map("GeluV2", "aclnn_gelu_v2.h", T + "x, int64_t approximate, aclTensor* y", None, "a k o", FLOAT3,
     outrule="same", compute="self", kernels={1: "GELU_TANH", "*": "GELU_ERF"},
     note="approximate 1: tanh form; any other value: erf form")
_unary("Mish", "aclnn_mish.h", "MISH", FLOAT3, outrule="same")
_unary("Hardsigmoid", "aclnn_hardsigmoid.h", "HARDSIGMOID", "f32 f16 s32 bf16", outrule="same",
       inplace="const aclTensor* self", compute="float")
_unary("Hardswish", "aclnn_hardswish.h", "HARDSWISH", FLOAT3, FLOAT3, inplace="const aclTensor* self",
       params=T + "self, const aclTensor* out")
_map("LeakyRelu", "aclnn_leaky_relu.h", T + "self, const aclScalar* negativeSlope, aclTensor* out",
     "LEAKY_RELU", "a p0 o", FLOAT4, compute="self", dtypes={"negativeSlope": ANY})
_map("InplaceLeakyRelu", "aclnn_leaky_relu.h", "aclTensor* selfRef, const aclScalar* negativeSlope",
     "LEAKY_RELU", "ao p0", FLOAT4, compute="self", dtypes={"negativeSlope": ANY})
_map("Elu", "aclnn_elu.h", T + "self, const aclScalar* alpha, const aclScalar* scale, const aclScalar* inputScale, "
     "aclTensor* out", "ELU", "a p0 p1 p2 o", FLOAT4, compute="self", dtypes={n: ANY for n in
                                                                            ("alpha", "scale", "inputScale")})
_map("InplaceElu", "aclnn_elu.h", "aclTensor* selfRef, const aclScalar* alpha, const aclScalar* scale, "
     "const aclScalar* inputScale", "ELU", "ao p0 p1 p2", FLOAT4, compute="self",
     dtypes={n: ANY for n in ("alpha", "scale", "inputScale")})
_map("Softplus", "aclnn_softplus.h", T + "self, const aclScalar* beta, const aclScalar* threshold, aclTensor* out",
     "SOFTPLUS", "a p0 p1 o", FLOAT3, compute="self", dtypes={"beta": ANY, "threshold": ANY},
     note="x where beta*x > threshold, else log1p(exp(beta*x)) / beta")
THR_DT = "bf16 f16 f32 s32 s8 u8 s16 s64"
_map("Threshold", "aclnn_threshold.h", T + "self, const aclScalar* threshold, const aclScalar* value, "
     "aclTensor* out", "THRESHOLD", "a p0 p1 o", THR_DT, compute="self", dtypes={"threshold": ANY, "value": ANY},
     flags=("params_in_self_dtype",), note="self > threshold ? self : value")
_map("InplaceThreshold", "aclnn_threshold.h", "aclTensor* selfRef, const aclScalar* threshold, "
     "const aclScalar* value", "THRESHOLD", "ao p0 p1", THR_DT, compute="self",
     dtypes={"threshold": ANY, "value": ANY}, flags=("params_in_self_dtype",))

# ---- elementwise: logical, bitwise, comparisons ----------------------------

LOGIC_DT = "bool u8 s8 s16 s32 s64 f32 f16 f64 bf16"
_unary("LogicalNot", "aclnn_logical_not.h", "LNOT", LOGIC_DT, LOGIC_DT, compute="self", outrule="any")
for nm, k in (("LogicalAnd", "LAND"), ("LogicalOr", "LOR")):
    _map(nm, "aclnn_logical_%s.h" % nm[7:].lower(), T + "self, const aclTensor* other, aclTensor* out", k,
         "a b o", LOGIC_DT, LOGIC_DT, outrule="any")
    _map("Inplace" + nm, "aclnn_logical_%s.h" % nm[7:].lower(), "aclTensor* selfRef, const aclTensor* other", k,
         "ao b", LOGIC_DT, outrule="any")
_map("LogicalXor", "aclnn_logical_xor.h", T + "self, const aclTensor* other, aclTensor* out", "LXOR", "a b o",
     LOGIC_DT, LOGIC_DT, outrule="any")
BIT_DT = "s8 s16 s32 s64 u8 bool"
_unary("BitwiseNot", "aclnn_bitwise_not.h", "BNOT", BIT_DT, BIT_DT, outrule="same", inplace=None)
for nm, k in (("And", "BAND"), ("Or", "BOR"), ("Xor", "BXOR")):
    low = nm.lower()
    _map("Bitwise%sTensor" % nm, "aclnn_bitwise_%s_tensor.h" % low,
         T + "self, const aclTensor* other, aclTensor* out", k, "a b o", BIT_DT, BIT_DT, compute="integral")
    _map("Bitwise%sScalar" % nm, "aclnn_bitwise_%s_scalar.h" % low,
         T + "self, const aclScalar* other, aclTensor* out", k, "a b o", BIT_DT, BIT_DT, compute="integral_scalar")
    _map("InplaceBitwise%sTensor" % nm, "aclnn_bitwise_%s_tensor.h" % low,
         ("const " if nm == "And" else "") + "aclTensor* selfRef, const aclTensor* other", k, "ao b", BIT_DT,
         compute="integral")
    _map("InplaceBitwise%sScalar" % nm, "aclnn_bitwise_%s_scalar.h" % low,
         ("const " if nm == "And" else "") + "aclTensor* selfRef, const aclScalar* other", k, "ao b", BIT_DT,
         compute="integral_scalar")

CMP_DT = "f64 f16 f32 bf16 s64 s32 s8 u8 bool s16 c64 c128"
CMP_SC_DT = "f64 bf16 f16 f32 s32 u32 s64 u64 s16 u16 s8 u8 bool"
CONST_SELFREF = {"Eq": ("const ", "const "), "Lt": ("const ", "const "), "Gt": ("const ", "")}
for nm, k in (("Eq", "EQ"), ("Ne", "NE"), ("Lt", "LT"), ("Le", "LE"), ("Gt", "GT"), ("Ge", "GE")):
    low = nm.lower()
    ct, cs = CONST_SELFREF.get(nm, ("", ""))
    sc_rule = "scalar_cmp_self" if nm in ("Eq", "Ne") else "promote_with_scalar"
    _map(nm + "Tensor", "aclnn_%s_tensor.h" % low, T + "self, const aclTensor* other, aclTensor* out", k, "a b o",
         CMP_DT, outrule="any", compute="promote", note="out = self %s other (1 or 0)" % low if nm == "Eq" else "")
    _map(nm + "Scalar", "aclnn_%s_scalar.h" % low, T + "self, const aclScalar* other, aclTensor* out", k, "a b o",
         CMP_SC_DT, outrule="any", compute=sc_rule)
    _map("Inplace%sTensor" % nm, "aclnn_%s_tensor.h" % low, ct + "aclTensor* selfRef, const aclTensor* other", k,
         "ao b", CMP_DT, outrule="any")
    _map("Inplace%sScalar" % nm, "aclnn_%s_scalar.h" % low, cs + "aclTensor* selfRef, const aclScalar* other", k,
         "ao b", CMP_SC_DT, outrule="any", compute=sc_rule)

# ---- elementwise: select, fill, copy, cast ---------------------------------

WHERE_DT = "f32 s32 u64 s64 u32 f16 u16 s16 s8 u8 f64 bool c64 c128 bf16"
_map("SWhere", "aclnn_s_where.h", "const aclTensor* condition, const aclTensor* self, const aclTensor* other, "
     "aclTensor* out", "WHERE", "a b c o", WHERE_DT, WHERE_DT, dtypes={"condition": "u8 bool"},
     compute="promote_bc", note="out = condition ? self : other")
MF_DT = "bool s8 s32 s64 f32 f16 bf16 u8 s16 f64"
_map("InplaceMaskedFillScalar", "aclnn_masked_fill_scalar.h", "aclTensor* selfRef, const aclTensor* mask, "
     "const aclScalar* value", "WHERE", "co a b", MF_DT, dtypes={"mask": "bool u8", "value": ANY}, compute="out",
     note="selfRef where mask is false, value where it is true")
_map("InplaceMaskedFillTensor", "aclnn_masked_fill_tensor.h", "aclTensor* selfRef, const aclTensor* mask, "
     "const aclTensor* value", "WHERE", "co a b", MF_DT, dtypes={"mask": "bool u8", "value": ANY}, compute="out",
     flags=("value_one_element",))
_map("Cast", "aclnn_cast.h", T + "self, const aclDataType dtype, aclTensor* out", "COPY", "a dt o",
     "f16 f32 f64 s8 u8 s16 u16 s32 u32 s64 u64 bool c64 c128 bf16", compute="out", outrule="dtype_attr",
     note="float to integer truncates toward zero and saturates, NaN gives 0")
_map("InplaceCopy", "aclnn_copy.h", "aclTensor* selfRef, const aclTensor* src", "COPY", "o a",
     "s8 s16 s32 s64 u8 f16 f32 bool f64 c64 c128 u16 u32 u64 bf16", compute="out", outrule="any",
     note="src broadcast to selfRef, converted to its dtype")
FILL_DT = "f32 f16 u8 s8 s16 s32 s64 f64 c64 c128 bool bf16 u16 u32 u64"
_map("InplaceFillScalar", "aclnn_fill_scalar.h", "aclTensor* selfRef, const aclScalar* value", "FILL", "o p0",
     FILL_DT, compute="out", outrule="any", dtypes={"value": ANY})
_map("InplaceFillTensor", "aclnn_fill_tensor.h", "aclTensor* selfRef, const aclTensor* value", "COPY", "o a",
     FILL_DT, compute="out", outrule="any", dtypes={"value": ANY}, flags=("value_one_element",))
_map("InplaceZero", "aclnn_zero.h", "aclTensor* selfRef", "FILL", "o", FILL_DT, compute="out", outrule="any",
     flags=("fill0",))
_map("InplaceOne", "aclnn_ones.h", "const aclTensor* selfRef", "FILL", "o", FILL_DT, compute="out",
     outrule="any", flags=("fill1",))
_map("Rsub", "aclnn_rsub.h", T + "self, const aclTensor* other, const aclScalar* alpha, aclTensor* out", "RSUB",
     "a b p0 o", ALL12, compute="promote_alpha_sub", note="out = other - alpha * self")
_map("Rsubs", "aclnn_rsub.h", T + "self, const aclScalar* other, const aclScalar* alpha, aclTensor* out", "RSUB",
     "a b p0 o", ALL12, compute="scalar_alpha_sub")
_unary("IsFinite", "aclnn_isfinite.h", "ISFINITE", ALL12, None, outrule="any", compute="self", inplace=None)



# ---- elementwise: activation gradients -------------------------------------
# a = gradOutput, b = the saved forward input (or result); the kernels follow the vendor's GeluGrad,
# SiluGrad, TanhGrad, ... (native/kernels/map/map_f32.inc); 16-bit inputs compute in fp32, rounded once.

REAL = "f32 f16 bf16 f64 s8 u8 s16 u16 s32 u32 s64 u64 bool"
_map("GeluBackward", "aclnn_gelu_backward.h", T + "gradOutput, const aclTensor* self, const aclTensor* gradInput",
     "GELU_BACKWARD_TANH", "a b o", FLOAT3, FLOAT3,
     note="the derivative of the tanh approximation (whatever torch's approximate), as the vendor's kernel")
_map("GeluBackwardV2", "aclnn_gelu_backward_v2.h", T + "gradOutput, const aclTensor* self, char* approximate, "
     "aclTensor* gradInput", None, "a b k o", FLOAT3, FLOAT3, outrule="compute",
     kernels={"none": "GELU_BACKWARD_ERF", "tanh": "GELU_BACKWARD_TANH"},
     note='approximate "none" (erf form) or "tanh"; gradInput dtype = the promoted dtype')
_map("SiluBackward", "aclnn_silu_backward.h", T + "gradOutput, const aclTensor* self, aclTensor* gradInput",
     "SILU_BACKWARD", "a b o", FLOAT3, FLOAT3, compute="self", outrule="same",
     flags=("same_dtype_inputs", "no_broadcast"))
_map("TanhBackward", "aclnn_tanh_backward.h", T + "gradOutput, const aclTensor* output, aclTensor* gradInput",
     "TANH_BACKWARD", "a b o", FLOAT4, FLOAT4, compute="self", outrule="same", flags=("same_dtype_inputs",),
     note="gradOutput * (1 - output^2)")
_map("SigmoidBackward", "aclnn_sigmoid_backward.h", T + "gradOutput, const aclTensor* output, aclTensor* gradInput",
     "SIGMOID_BACKWARD", "a b o", "f32 f16 f64 c64 c128 bf16", "f32 f16 f64 c64 c128 bf16",
     note="gradOutput * (1 - output) * output")
_map("ThresholdBackward", "aclnn_threshold_backward.h", T + "gradOutput, const aclTensor* self, "
     "const aclScalar* threshold, aclTensor* out", "THRESHOLD_BACKWARD", "a b p0 o", "f32 s32 f16 s8 u8 bf16",
     "f32 s32 f16 s8 u8 bf16", compute="float", outrule="same", dtypes={"threshold": ANY},
     flags=("same_dtype_inputs",),
     note="self <= threshold ? 0 : gradOutput, compared in fp32 (torch's relu backward)")
_map("LeakyReluBackward", "aclnn_leaky_relu_backward.h", T + "gradOutput, const aclTensor* self, "
     "const aclScalar* negativeSlope, bool selfIsResult, aclTensor* out", None, "a b p0 k o", FLOAT4, FLOAT4,
     kernels={"*": "LEAKY_RELU_BACKWARD"}, dtypes={"negativeSlope": "f32 f16 f64 s32 s64 s8 u8 bool s16 bf16"},
     flags=("result_nonneg",), note="selfIsResult needs negativeSlope >= 0")
_map("HardswishBackward", "aclnn_hardswish_backward.h", T + "gradOutput, const aclTensor* self, aclTensor* out",
     "HARDSWISH_BACKWARD", "a b o", FLOAT3, FLOAT3, compute="self", outrule="same",
     flags=("same_dtype_inputs", "no_broadcast"))
_map("HardsigmoidBackward", "aclnn_hardsigmoid_backward.h", T + "gradOutput, const aclTensor* self, aclTensor* out",
     "HARDSIGMOID_BACKWARD", "a b o", FLOAT3, FLOAT3, flags=("no_broadcast",))
_map("HardtanhBackward", "aclnn_hardtanh_backward.h", T + "gradOutput, const aclTensor* self, const aclScalar* min, "
     "const aclScalar* max, aclTensor* out", "HARDTANH_BACKWARD", "a b p0 p1 o", FLOAT3, FLOAT3, compute="self",
     outrule="same", dtypes={"min": ANY, "max": ANY}, flags=("same_dtype_inputs", "no_broadcast"))
_map("SoftplusBackward", "aclnn_softplus_backward.h", T + "gradOutput, const aclTensor* self, const aclScalar* beta, "
     "const aclScalar* threshold, aclTensor* gradInput", "SOFTPLUS_BACKWARD", "a b p0 p1 o", FLOAT4, FLOAT4,
     compute="same_or_f32", outrule="any",
     dtypes={"self": "s8 s16 s32 s64 u8 f16 f32 f64 bool bf16", "beta": ANY, "threshold": ANY},
     flags=("no_broadcast",), note="computed in FLOAT unless both inputs share one of FLOAT, FLOAT16, BF16")
_map("EluBackward", "aclnn_elu_backward.h", T + "gradOutput, const aclScalar* alpha, const aclScalar* scale, "
     "const aclScalar* inputScale, bool isResult, const aclTensor* selfOrResult, aclTensor* gradInput", None,
     "a p0 p1 p2 k b o", FLOAT3, FLOAT3, compute="self", kernels={1: "ELU_BACKWARD_RESULT", "*": "ELU_BACKWARD"},
     dtypes={n: REAL for n in ("alpha", "scale", "inputScale")},
     flags=("same_dtype_inputs", "no_broadcast", "result_nonneg"), note="isResult needs alpha >= 0")
_map("MishBackward", "aclnn_mish_backward.h", T + "gradOutput, const aclTensor* self, aclTensor* gradInput",
     "MISH_BACKWARD", "a b o", FLOAT3, FLOAT3)
