"""Foreach (tensor-list) operators, the optimizer step ApplyAdamWV2 and the AMP
loss-scale update (native/ops/foreach/, kernels in native/kernels/foreach/):
what torch_npu's foreach AdamW / Adam / SGD, fused AdamW, clip_grad_norm_ and
GradScaler call. Every list element runs through the map engine's element
functions (kernels/map), one tensor at a time."""
import re as _re

from . import op


L = "const aclTensorList* "
LO = "aclTensorList* out"          # hand-written headers (ops-nn op_api)
LOC = "const aclTensorList *out"   # headers generated from the op definition

# name, params (as the vendor declares them), kernel, A2 dtypes of the lists, note
UNARY = [  # (name, A2 dtypes, math)
    ("Abs", "bf16 f16 f32", "abs"), ("Neg", "f32 f16 s32 bf16 s16 s8 u8", "-x"),
    ("Exp", "bf16 f16 f32 s16 s8 u8", "exp"), ("Expm1", "bf16 f16 f32 s16 s8 u8", "expm1"),
    ("Log", "bf16 f16 f32", "log"), ("Log2", "bf16 f16 f32", "log2"), ("Log10", "bf16 f16 f32", "log10"),
    ("Log1p", "bf16 f16 f32", "log1p"), ("Sin", "f32 f16 bf16", "sin"), ("Cos", "bf16 f16 f32", "cos"),
    ("Tan", "f32 f16 bf16", "tan"), ("Tanh", "f32 f16 bf16", "tanh"), ("Erf", "bf16 f16 f32", "erf"),
    ("Sigmoid", "f32 f16 bf16", "sigmoid"), ("Sign", "f32 f16 bf16 s8 s32 s64", "sign"),
    ("Reciprocal", "f32 f16 bf16", "1 / x"),
]
ARITH = "f32 f16 bf16 s32"
ARITH7 = "f32 f16 bf16 s32 s16 s8 u8"
FLOATS = "f32 f16 bf16"

ROWS = []  # (name, header, params, dtypes of the lists, extra dtypes, note, op fields)


def _hdr(name):
    return "aclnn_foreach_%s.h" % _re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def row(name, params, ldt, note="", dtypes=None, **kw):
    ROWS.append(("Foreach" + name, _hdr(name), params, ldt, dtypes or {}, note, kw))


for _n, _dt, _m in UNARY:
    row(_n, "const aclTensorList *x, " + LOC, _dt, "out[i] = %s(x[i])" % _m if _m[0].isalpha() else
        "out[i] = %s" % _m.replace("x", "x[i]"))
row("Sqrt", L + "x, " + LO, FLOATS, "out[i] = sqrt(x[i]) (fp16 / bf16 in fp32, rounded once)")
row("Copy", L + "x, " + LO, "f32 f16 bf16 s8 u8 s16 u16 s32 u32 s64 f64 bool", "out[i] = x[i]")
row("ZeroInplace", "const aclTensorList *x", "f32 f16 bf16 s16 s32", "x[i] = 0", roles="ao")

S_NOTE = "; scalar rounded to the lists' dtype (bf16 lists: to fp32), as CANN converts it"
for _n, _k, _dt in [("Add", "+", ARITH7), ("Sub", "-", ARITH), ("Mul", "*", ARITH), ("Div", "/", FLOATS),
                    ("Maximum", "max", ARITH), ("Minimum", "min", ARITH), ("Pow", "pow", ARITH)]:
    f = ("x[i] %s s" % _k) if len(_k) == 1 else ("%s(x[i], s)" % _k)
    v2dt = {"Add": ARITH7, "Pow": FLOATS}.get(_n, ARITH if _n != "Div" else FLOATS)
    v1 = (L + "x, const aclTensor* scalar, " + LO) if _n == "Div" else \
        ("const aclTensorList *x, const aclTensor *scalar, " + LOC)  # DivScalar's header is hand-written
    row(_n + "Scalar", v1, _dt, "out[i] = %s, s = scalar[0] (a device tensor, read at launch)" % f)
    row(_n + "ScalarV2", L + "x, const aclScalar* scalar, " + LO, v2dt, "out[i] = %s%s" % (f, S_NOTE))
    row(_n + "ScalarList", "const aclTensorList *x, const aclScalarList *scalars, " + LOC,
        ARITH if _n not in ("Div",) else FLOATS, "out[i] = %s with s = scalars[i]" % f)
for _n, _k, _dt in [("Mul", "*", ARITH7), ("Div", "/", FLOATS), ("Maximum", "max", ARITH),
                    ("Minimum", "min", ARITH), ("Pow", "pow", ARITH)]:
    f = ("x1[i] %s x2[i]" % _k) if len(_k) == 1 else ("%s(x1[i], x2[i])" % _k)
    if _n in ("Mul", "Div"):
        row(_n + "List", L + "x1, " + L + "x2, " + LO, _dt, "out[i] = " + f)
    else:
        row(_n + "List", "const aclTensorList *x1, const aclTensorList *x2, " + LOC, _dt, "out[i] = " + f)
row("AddList", L + "x1, " + L + "x2, const aclTensor* alpha, " + LO, ARITH7,
    "out[i] = x1[i] + alpha * x2[i], alpha = alpha[0] (a device tensor, read at launch)")
row("AddListV2", L + "x1, " + L + "x2, const aclScalar* alpha, " + LO, ARITH7,
    "out[i] = x1[i] + alpha * x2[i]" + S_NOTE)
row("SubList", "const aclTensorList *x1, const aclTensorList *x2, const aclTensor *alpha, " + LOC, ARITH7,
    "out[i] = x1[i] - alpha * x2[i], alpha = alpha[0] (a device tensor, read at launch)")
row("SubListV2", L + "x1, " + L + "x2, const aclScalar* alpha, " + LO, ARITH7,
    "out[i] = x1[i] - alpha * x2[i]" + S_NOTE)
X123 = L + "x1, " + L + "x2, " + L + "x3, "
X123C = "const aclTensorList *x1, const aclTensorList *x2, const aclTensorList *x3, "
for _n, _k, _dt in [("Addcmul", "*", ARITH), ("Addcdiv", "/", FLOATS)]:
    f = "x1[i] + s * x2[i] %s x3[i]" % _k
    if _n == "Addcmul":
        row(_n + "Scalar", X123C + "const aclTensor *scalar, " + LOC, _dt, "out[i] = %s, s = scalar[0]" % f)
        row(_n + "ScalarList", X123C + "const aclTensor *scalars, " + LOC, _dt, "out[i] = %s, s = scalars[i]" % f)
        row(_n + "List", X123C + "const aclTensor *scalars, " + LOC, _dt, "out[i] = %s, s = scalars[i]" % f)
    else:
        row(_n + "Scalar", X123 + "const aclTensor* scalar, " + LO, _dt, "out[i] = %s, s = scalar[0]" % f)
        row(_n + "ScalarList", X123 + "const aclTensor* scalars, " + LO, _dt, "out[i] = %s, s = scalars[i]" % f)
        row(_n + "List", X123C + "const aclTensor *scalars, " + LOC, _dt, "out[i] = %s, s = scalars[i]" % f)
    row(_n + "ScalarV2", X123 + "const aclScalar* scalar, " + LO, _dt, "out[i] = %s%s" % (f, S_NOTE))
row("LerpScalar", L + "x1, " + L + "x2, const aclScalar* weight, " + LO, FLOATS,
    "out[i] = x1[i] + weight * (x2[i] - x1[i]) (torch's two-sided form); weight FLOAT or DOUBLE")
row("LerpList", L + "x1, " + L + "x2, " + L + "weight, " + LO, FLOATS,
    "out[i] = x1[i] + weight[i] * (x2[i] - x1[i])")
row("Norm", "const aclTensorList *x, const aclScalar *scalar, " + LOC, FLOATS,
    "out[i] (one element) = the p-norm of x[i], p = scalar (inf: the largest abs(x), 0: the count of non-zeros), summed in "
    "fp64 in a fixed order", dtypes={"scalar": "f32 f64 s64"})
row("NonFiniteCheckAndUnscale", "const aclTensorList *scaledGrads, const aclTensor *foundInf, "
    "const aclTensor *invScale", FLOATS,
    "scaledGrads[i] *= invScale[0] (fp32); foundInf[0] = 1 if any element was inf or NaN",
    dtypes={"foundInf": "f32", "invScale": "f32"}, roles="ao ao a")

for _name, _header, _params, _ldt, _dts, _note, _kw in ROWS:
    _dtypes = dict(_dts)
    for _p in _params.split(","):
        _pn = _p.strip().split("*")[-1].split()[-1]
        if "aclTensorList" in _p and _pn not in _dtypes:
            _dtypes[_pn] = _ldt
    _kernel = _re.sub(r"(?<!^)(?=[A-Z])", "_", _name[len("Foreach"):]).upper()
    op(_name, _header, _params, family="foreach", kernel=_kernel, ins=_ldt, outs=_ldt, dtypes=_dtypes,
       note=_note, **_kw)

# ---- optimizer step and loss-scale update ---------------------------------------
op("ApplyAdamWV2", "aclnn_apply_adam_w_v2.h",
   "aclTensor* varRef, aclTensor* mRef, aclTensor* vRef, aclTensor* maxGradNormOptionalRef, const aclTensor* grad, "
   "const aclTensor* step, float lr, float beta1, float beta2, float weightDecay, float eps, bool amsgrad, "
   "bool maximize", family="foreach", kernel="APPLY_ADAM_W_V2", ins=FLOATS, outs=FLOATS,
   dtypes={"step": "f32 s64"}, flags=("optional:maxGradNormOptionalRef",),
   note="one AdamW step in fp32 (CANN's order of operations): t = step + 1; var *= 1 - lr * wd; m += (1 - b1) * "
        "(g - m); v = b2 * v + (1 - b2) * g * g; var -= lr / (1 - b1^t) * m / (sqrt(v') / sqrt(1 - b2^t) + eps), "
        "v' = max(maxGradNorm, v) with amsgrad; fp32 var / m / v may take fp16 / bf16 grads")
op("AmpUpdateScale", "aclnn_amp_update_scale.h",
   "const aclTensor* currentScale, const aclTensor* growthTracker, const aclTensor* foundInf, double growthFactor, "
   "double backoffFactor, int64_t growthInterval, const aclTensor* updatedScale, "
   "const aclTensor* updatedGrowthTracker", family="foreach", kernel="AMP_UPDATE_SCALE", ins=FLOATS, outs=FLOATS,
   dtypes={"growthTracker": "s32", "updatedGrowthTracker": "s32"},
   flags=("out:updatedScale", "out:updatedGrowthTracker"),
   note="torch's _amp_update_scale_ in fp32: found_inf: scale * backoff, tracker 0; else tracker + 1 == interval: "
        "scale * growth (kept if that is not finite), tracker 0; one element each, interval in [1, 2^31 - 1] (561002)")
