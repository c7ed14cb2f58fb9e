"""The aclnn operator table: every operator pyaclnn knows, described once.

Each row names the operator, the vendor header that declares it, its
parameters exactly as CANN declares them (without the trailing
``uint64_t *workspaceSize, aclOpExecutor **executor``), and how pyaclnn runs
it: the family (its planner in ``native/ops/<family>/``), the kernel, the
role of each parameter, the dtypes each parameter accepts on Atlas A2 and the
dtype rules. ``tools/gen_ops.py`` derives from it the headers under
``include/aclnnop/``, the descriptors and exported entry points
(``native/ops/gen/optable.c``) and ``docs/operators.md``; the tests derive
their expectations (every NULL, dtype and rank check) from it, and
:mod:`pyaclnn.aclnn` calls any operator by name from it.

Dtype lists use CANN's shorthand: f32 f16 bf16 f64 s8 u8 s16 u16 s32 u32 s64
u64 bool c64 c128 (complex dtypes are accepted by CANN but not implemented by
pyaclnn: they fail with 161002 naming the dtype).

Roles (elementwise families, one per parameter, in API order):
  a b c   kernel inputs (a tensor, or a scalar used as a constant input)
  o       the output;  ao / co: an in-place tensor, input a (c) and output
  p0..p3  a scalar or number passed to the kernel as a parameter
  k       an int attribute choosing the kernel (``kernels=`` maps its values)
  dt      a dtype attribute (the output dtype)
  -       not used by the kernel
"""

# ---- dtype shorthand -------------------------------------------------------

DTYPES = {  # shorthand -> (aclDataType name, value)
    "f32": ("ACL_FLOAT", 0), "f16": ("ACL_FLOAT16", 1), "s8": ("ACL_INT8", 2), "s32": ("ACL_INT32", 3),
    "u8": ("ACL_UINT8", 4), "s16": ("ACL_INT16", 6), "u16": ("ACL_UINT16", 7), "u32": ("ACL_UINT32", 8),
    "s64": ("ACL_INT64", 9), "u64": ("ACL_UINT64", 10), "f64": ("ACL_DOUBLE", 11), "bool": ("ACL_BOOL", 12),
    "c64": ("ACL_COMPLEX64", 16), "c128": ("ACL_COMPLEX128", 17), "bf16": ("ACL_BF16", 27),
    "int4": ("ACL_INT4", 29), "c32": ("ACL_COMPLEX32", 33),
}
IMPLEMENTED_DTYPES = ("f32", "f16", "bf16", "f64", "s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64", "bool")

ALL12 = "f32 f16 f64 s32 s64 s16 s8 u8 bool c64 c128 bf16"
FLOAT3 = "f32 f16 bf16"
FLOAT4 = "f32 f16 bf16 f64"
ANY = "f32 f16 bf16 f64 s8 u8 s16 u16 s32 u32 s64 u64 bool c64 c128"
FLOAT_OUT = "f32 f16 f64 c64 c128 bf16"


import re as _re

OUT_NAMES = ("out", "y", "result", "output", "gradInput")


class Param:
    """One parameter of an operator, as the generator and pyaclnn.aclnn see it.
    kind: TENSOR TENSOR_LIST SCALAR SCALAR_LIST INT_ARRAY BOOL_ARRAY FLOAT_ARRAY
    INT FLOAT BOOL DTYPE STRING OUT_U64; io: IN OUT INOUT."""

    def __init__(self, ctype, name, kind, io, optional, dtypes, flags):
        self.ctype, self.name, self.kind, self.io = ctype, name, kind, io
        self.optional, self.dtypes, self.flags = optional, dtypes, flags

    @property
    def decl(self):
        return "%s %s" % (self.ctype, self.name)

    def __repr__(self):
        return "Param(%r, %s, %s)" % (self.name, self.kind, self.io)


def kind_of(ctype):
    t = ctype.replace("const ", "").replace(" ", "")
    for key, kind in (("aclTensorList*", "TENSOR_LIST"), ("aclTensor*", "TENSOR"),
                      ("aclScalarList*", "SCALAR_LIST"), ("aclScalar*", "SCALAR"),
                      ("aclIntArray*", "INT_ARRAY"), ("aclBoolArray*", "BOOL_ARRAY"),
                      ("aclFloatArray*", "FLOAT_ARRAY"), ("aclDataType", "DTYPE"), ("char*", "STRING"),
                      ("uint64_t*", "OUT_U64")):
        if t == key:
            return kind
    if t in ("double", "float"):
        return "FLOAT"
    if t == "bool":
        return "BOOL"
    if t in ("int64_t", "int32_t", "int8_t", "int", "uint64_t", "uint32_t"):
        return "INT"
    raise ValueError("unknown parameter type %r" % ctype)


class Op:
    """One operator. See the module docstring for the fields."""

    def __init__(self, name, header, params, family=None, kernel=None, roles=None, ins=None, outs=None,
                 dtypes=None, compute="promote", outrule="cast", kernels=None, min_rank=0, max_rank=8,
                 note="", flags=(), ws_names=("workspaceSize", "executor"), single=False, issue=None):
        self.name = name                # "Mul": aclnnMul / aclnnMulGetWorkspaceSize
        self.header = header            # "aclnn_mul.h"
        self.params = params            # C parameter list, as CANN declares it
        self.family = family            # planner family; None: not implemented (561003)
        self.kernel = kernel            # the family's kernel (map kernels: PA_K_<kernel>)
        self.roles = roles.split() if isinstance(roles, str) else roles
        self.ins = ins                  # dtypes of the tensor/scalar inputs (shorthand)
        self.outs = outs                # dtypes of the outputs; None = whatever the rule allows
        self.dtypes = dtypes or {}      # per-parameter overrides {name: "f32 f16"}
        self.compute = compute          # compute-dtype rule (native/ops/map/map_rules.c)
        self.outrule = outrule          # output-dtype rule
        self.kernels = kernels or {}    # role k: {attribute value: kernel}, "*" = any other value
        self.min_rank, self.max_rank = min_rank, max_rank
        self.note = note                # what docs/operators.md says about it
        self.flags = tuple(flags)
        self.ws_names = ws_names        # the names of the last two parameters
        self.single = single            # one call, no executor (e.g. CalculateMatmulWeightSizeV2)
        self.issue = issue              # for a planned operator: the issue that brings it

    @property
    def implemented(self):
        return self.family is not None

    def parsed(self):
        """The parameters (Param), in API order."""
        if getattr(self, "_parsed", None) is not None:
            return self._parsed
        params = []
        roles = self.roles or []
        for i, text in enumerate(p.strip() for p in self.params.split(",")):
            m = _re.match(r"^(.*?[\s*])([A-Za-z_][A-Za-z0-9_]*)$", text)
            if not m:
                raise ValueError("%s: cannot parse parameter %r" % (self.name, text))
            ctype, name = " ".join(m.group(1).split()).replace(" *", "*"), m.group(2)
            kind = kind_of(ctype)
            role = roles[i] if i < len(roles) else None
            if role == "o":
                io = "OUT"
            elif role in ("ao", "co"):
                io = "INOUT"
            elif role is not None:
                io = "IN"
            elif name.endswith("Ref"):
                io = "INOUT"
            elif name in OUT_NAMES or _re.search(r"Out(Optional)?$", name):
                io = "OUT"
            else:
                io = "IN"
            optional = name.endswith("Optional") or ("optional:" + name) in self.flags
            if name in self.dtypes:
                dts = self.dtypes[name]
            elif kind in ("TENSOR", "TENSOR_LIST"):
                dts = self.outs if io == "OUT" else self.ins
                if io == "OUT" and dts is None and name.endswith("Ref"):
                    dts = self.ins
            else:
                dts = None
            flags = []
            if ("nz:" + name) in self.flags:
                flags.append("PA_PF_NZ")
            if ("int4:" + name) in self.flags:
                flags.append("PA_PF_INT4")
            if optional:
                flags.append("PA_PF_OPTIONAL")
            params.append(Param(ctype, name, kind, io, optional, dts, flags))
        self._parsed = params
        return params

    def __repr__(self):
        return "Op(%r)" % self.name


OPS = []


def op(*args, **kw):
    o = Op(*args, **kw)
    OPS.append(o)
    return o


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
     "aclTensor* out", "CLAMP_T", "a b c o", CLAMP_DT, CLAMP_DT)
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


# ---- reductions, scans, sorting (family "reduce") --------------------------

def _planned(name, header, params, family, issue=23, **kw):
    """An operator whose family is not implemented yet: its entry points exist
    and answer 561003 naming it."""
    return op(name, header, params, family=None, issue=issue, note=kw.pop("note", ""), **kw)


RED = [
    ("ReduceSum", "aclnn_reduce_sum.h", T + "self, const aclIntArray* dims, bool keepDims, aclDataType dtype, "
     "aclTensor* out"),
    ("Sum", "aclnn_sum.h", "const aclTensorList* tensors, aclTensor* out"),
    ("Mean", "aclnn_mean.h", T + "self, const aclIntArray* dim, bool keepDim, aclDataType dtype, aclTensor* out"),
    ("Max", "aclnn_max.h", T + "self, aclTensor* out"),
    ("Min", "aclnn_min.h", T + "self, aclTensor* out"),
    ("MaxDim", "aclnn_max_dim.h", T + "self, int64_t dim, bool keepdim, aclTensor* out, aclTensor* indices"),
    ("MinDim", "aclnn_min_dim.h", T + "self, int64_t dim, bool keepdim, aclTensor* out, aclTensor* indices"),
    ("Amax", "aclnn_amax.h", T + "self, const aclIntArray* dim, bool keepDim, aclTensor* out"),
    ("Amin", "aclnn_amin.h", T + "self, const aclIntArray* dim, bool keepDim, aclTensor* out"),
    ("ArgMax", "aclnn_argmax.h", T + "self, int64_t dim, bool keepdim, aclTensor* out"),
    ("ArgMin", "aclnn_argmin.h", T + "self, int64_t dim, bool keepdim, aclTensor* out"),
    ("Any", "aclnn_any.h", T + "self, const aclIntArray* dim, bool keepdim, aclTensor* out"),
    ("All", "aclnn_all.h", T + "self, const aclIntArray* dim, bool keepdim, aclTensor* out"),
    ("Norm", "aclnn_norm.h", T + "self, const aclScalar* pScalar, const aclIntArray* dim, bool keepdim, "
     "aclTensor* out"),
    ("LinalgVectorNorm", "aclnn_linalg_vector_norm.h", T + "self, const aclScalar* ord, const aclIntArray* dims, "
     "bool keepDims, const aclDataType dtype, aclTensor* out"),
    ("Cumsum", "aclnn_cumsum.h", T + "self, int64_t dim, aclDataType dtype, aclTensor* out"),
    ("Argsort", "aclnn_argsort.h", T + "self, int64_t dim, bool descending, aclTensor* out"),
    ("Sort", "aclnn_sort.h", T + "self, bool stable, int64_t dim, bool descending, aclTensor* valuesOut, "
     "aclTensor* indicesOut"),
    ("Topk", "aclnn_topk.h", T + "self, int64_t k, int64_t dim, bool largest, bool sorted, aclTensor* valuesOut, "
     "aclTensor* indicesOut"),
]
for _n, _h, _p in RED:
    if _n == "ReduceSum":
        op(_n, _h, _p, family="op", ins="f16 f32 s8 s16 s32 s64 u8 bool f64 c64 c128 bf16")
    else:
        _planned(_n, _h, _p, "reduce")

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
    ("TriangularSolve", "aclnn_triangular_solve.h", T + "self, const aclTensor* A, bool upper, bool transpose, "
     "bool unitriangular, aclTensor* xOut, aclTensor* mOut", 25),
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
    ("Convolution", "aclnn_convolution.h", "const aclTensor* input, const aclTensor* weight, const aclTensor* bias, "
     "const aclIntArray* stride, const aclIntArray* padding, const aclIntArray* dilation, bool transposed, "
     "const aclIntArray* outputPadding, const int64_t groups, aclTensor* output, int8_t cubeMathType", 25),
    ("Im2col", "aclnn_im2col.h", T + "self, const aclIntArray* kernelSize, const aclIntArray* dilation, "
     "const aclIntArray* padding, const aclIntArray* stride, const aclTensor* out", 25),
    ("AvgPool2d", "aclnn_avgpool2d.h", T + "self, const aclIntArray* kernelSize, const aclIntArray* strides, "
     "const aclIntArray* paddings, const bool ceilMode, const bool countIncludePad, const int64_t divisorOverride, "
     "const int8_t cubeMathType, aclTensor* out", 25),
    ("MaxPool", "aclnn_max_pool.h", T + "self, const aclIntArray* kernelShape, const aclIntArray* strides, "
     "const int64_t autoPad, const aclIntArray* pads, const aclIntArray* dilations, const int64_t ceilMode, "
     "aclTensor* out", 25),
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


def by_name():
    return {o.name: o for o in OPS}


def headers():
    """{header: [ops]} in table order."""
    out = {}
    for o in OPS:
        out.setdefault(o.header, []).append(o)
    return out
