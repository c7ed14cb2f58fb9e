"""The elementwise (map family) operators of the op table, through their C
entry points (pyaclnn.aclnn), against float64 numpy / torch: every kernel and
its ulp bound, every A2 dtype the table lists, strided and broadcast
operands, 0-size and 1-element tensors, in-place aliasing, the vendor's dtype
rules, and bit-identical results across ISA tiers and thread counts."""
import math
import zlib

import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import aclnn, optable
from tiers import bits, supported_tiers

BF16 = np.dtype(ml_dtypes.bfloat16)
NP = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": BF16, "f64": np.dtype(np.float64),
      "s8": np.dtype(np.int8), "u8": np.dtype(np.uint8), "s16": np.dtype(np.int16), "u16": np.dtype(np.uint16),
      "s32": np.dtype(np.int32), "u32": np.dtype(np.uint32), "s64": np.dtype(np.int64), "u64": np.dtype(np.uint64),
      "bool": np.dtype(bool)}
FLOATS = (NP["f32"], NP["f16"], BF16, NP["f64"])
OPS = optable.by_name()


def f64(a):
    return np.asarray(a).astype(np.float64)


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def gelu_tanh(x):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in the form that does not cancel."""
    with np.errstate(over="ignore"):
        return x / (1 + np.exp(-2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def softplus(x, beta=1.0, th=20.0):
    with np.errstate(over="ignore"):
        return np.where(x * beta > th, x, np.log1p(np.exp(beta * x)) / beta)


# kernel -> (float64 reference, input domain (lo, hi), fp32 ulp bound)
UNARY = {
    "Neg": (np.negative, (-50, 50), 0), "Abs": (np.abs, (-50, 50), 0),
    "Reciprocal": (lambda x: 1 / x, (0.1, 50), 0), "Sqrt": (np.sqrt, (0, 100), 0),
    "Rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 100), 1.5), "Exp": (np.exp, (-80, 80), 1),
    "Exp2": (np.exp2, (-120, 120), 1), "Expm1": (np.expm1, (-5, 5), 2), "Log": (np.log, (1e-30, 1e30), 1),
    "Log2": (np.log2, (1e-30, 1e30), 2), "Log10": (np.log10, (1e-30, 1e30), 2), "Log1p": (np.log1p, (-0.9, 100), 3),
    "Sin": (np.sin, (-8000, 8000), 2), "Cos": (np.cos, (-8000, 8000), 2), "Tan": (np.tan, (-1.5, 1.5), 1),
    "Tanh": (np.tanh, (-10, 10), 2), "Erf": (erf, (-5, 5), 3), "Sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-30, 30), 3),
    "Silu": (lambda x: x / (1 + np.exp(-x)), (-30, 30), 3), "Gelu": (gelu_tanh, (-8, 8), 4),
    "Relu": (lambda x: np.maximum(x, 0), (-50, 50), 0), "Floor": (np.floor, (-50, 50), 0),
    "Ceil": (np.ceil, (-50, 50), 0), "Round": (np.round, (-50, 50), 0), "Trunc": (np.trunc, (-50, 50), 0),
    "Sign": (np.sign, (-50, 50), 0), "Square": (np.square, (-50, 50), 0),
    "Mish": (lambda x: x * np.tanh(softplus(x)), (-20, 20), 6),
    "Hardsigmoid": (lambda x: np.clip(x + 3, 0, 6) / 6, (-8, 8), 1),
    "Hardswish": (lambda x: x * np.clip(x + 3, 0, 6) / 6, (-8, 8), 2),
}


def sample(dt, shape, rng, lo=-50, hi=50):
    if dt == np.dtype(bool):
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, int(lo)), min(info.max, int(hi)), shape, endpoint=True).astype(dt)
    if lo > 0 and hi / lo > 1e3:  # a wide positive range: log-uniform
        return np.exp(rng.uniform(np.log(lo), np.log(hi), shape)).astype(dt)
    return rng.uniform(lo, hi, shape).astype(dt)


def ulp_err(got, ref, dt):
    """|got - ref| in units of the last place of ref rounded to dt; where ref
    rounds to inf / NaN in dt, got must be that; results below dt's smallest
    normal count in units of that normal (flush-level differences)."""
    got, ref = f64(got), np.asarray(ref, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        r = ref.astype(dt).astype(np.float64)
    fin = np.isfinite(r)
    assert np.array_equal(np.isnan(got[~fin]), np.isnan(r[~fin])), "NaN mismatch"
    assert np.array_equal(got[~fin & ~np.isnan(r)], r[~fin & ~np.isnan(r)]), "inf mismatch"
    info = ml_dtypes.finfo(dt)
    a = np.abs(r[fin])
    sp = 2.0 ** (np.floor(np.log2(np.maximum(a, float(info.tiny)))) - info.nmant)
    sp = np.where(a < float(info.tiny), float(info.tiny), sp)
    return float(np.max(np.abs(got[fin] - ref[fin]) / sp, initial=0.0))


def close_terms(got, terms, dt, k=2.0):
    """|got - sum(terms)| <= k eps sum|terms| (for results that may cancel)."""
    ref = sum(terms)
    scale = sum(np.abs(t) for t in terms)
    info = ml_dtypes.finfo(dt)
    return bool(np.all(np.abs(f64(got) - ref) <= k * float(info.eps) * scale + float(info.tiny)))


def run_unary(name, x, out_dt=None):
    out = np.empty(x.shape, out_dt or x.dtype)
    return aclnn.call(name, x, out)


@pytest.mark.parametrize("name,dt", [(n, d) for n in sorted(UNARY) for d in ("f32", "f16", "bf16", "f64")
                                     if d in OPS[n].ins.split()])
def test_unary_accuracy(runtime, name, dt):
    """Each float dtype the op lists: within the kernel's ulp bound (fp32), one
    rounding of a correct value (fp16 / bf16: at most 1 ulp), double libm (fp64)."""
    ref_fn, (lo, hi), bound = UNARY[name]
    d = NP[dt]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x = sample(d, (7, 333), rng, lo, hi)
    got = run_unary(name, x)
    with np.errstate(all="ignore"):
        ref = ref_fn(f64(x))
    limit = {"f32": max(bound, 0.5) + 0.01, "f64": 2, "f16": 1, "bf16": 1}[dt]
    if name == "Round":  # numpy rounds half to even too
        limit = 0
    if name == "Gelu" and dt == "f32":
        # exp's argument (up to ~50 for x near -8) carries fp32 roundings: relative ~2^-24 * 50 * 3
        assert np.allclose(f64(got), ref, rtol=1e-5, atol=0), name
        return
    assert ulp_err(got, ref, d) <= limit, name


@pytest.mark.parametrize("name", ["Exp", "Log", "Sin", "Cos", "Tanh", "Erf", "Sigmoid", "Silu", "Gelu", "Expm1",
                                  "Log1p", "Exp2"])
def test_unary_special_values(runtime, name):
    """inf, -inf, NaN, +-0, the edges of exp's range and huge sin/cos arguments."""
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 88.72, 88.73, -87.3, -103.9, -104.0, 1e-40, -1e-40, 1e5,
                  -3e7, 1e30, 8191.9, 8192.5], np.float32)
    got = run_unary(name, x)
    ref_fn = UNARY[name][0]
    with np.errstate(all="ignore"):
        ref = ref_fn(f64(x))
    assert ulp_err(got, ref, np.dtype(np.float32)) <= 4


@pytest.mark.parametrize("name", sorted(UNARY) + ["Add", "Mul", "Div", "Maximum", "Lerp", "Addcdiv", "GtTensor"])
def test_isa_tiers_and_threads_bitwise(runtime, name, restore_runtime_knobs):
    """Every tier gives the scalar tier's bits, for fp32, fp16 and bf16, with any thread count."""
    rng = np.random.default_rng(7)
    op = OPS[name]
    params = op.parsed()
    results = {}
    for tier in supported_tiers():
        for threads in (1, 2, 3):
            pyaclnn.set_max_isa(tier)
            pyaclnn.set_num_threads(threads)
            for dt in ("f32", "f16", "bf16"):
                if dt not in (op.ins or "").split():
                    continue
                d = NP[dt]
                lo, hi = UNARY[name][1] if name in UNARY else (-5, 5)
                r = np.random.default_rng(3)
                args = []
                for p in params:
                    if p.kind == "TENSOR" and p.io == "IN":
                        args.append(sample(d, (5, 1000 + 13), r, lo, hi))
                    elif p.kind == "SCALAR":
                        args.append(0.75)
                    elif p.kind == "TENSOR":
                        args.append(np.empty((5, 1013), bool if name.startswith("Gt") else d))
                got = aclnn.call(name, *args)
                key = dt
                if key in results:
                    assert bits(got) == bits(results[key]), (name, dt, tier, threads)
                else:
                    results[key] = got
    assert results
    _ = rng


# ---- binary and ternary arithmetic --------------------------------------------

def _arith(dt):
    return [NP[d] for d in ("f32", "f16", "bf16", "f64", "s32", "s64", "s16", "s8", "u8") if d in dt.split()]


@pytest.mark.parametrize("d", _arith(optable.ALL12), ids=str)
def test_add_sub_mul_broadcast_every_dtype(runtime, d):
    rng = np.random.default_rng(1)
    a = sample(d, (3, 1, 5), rng, -20, 20)
    b = sample(d, (4, 1), rng, -20, 20)
    shape = (3, 4, 5)
    for name, ref in (("Add", lambda x, y: x + 2 * y), ("Sub", lambda x, y: x - 2 * y), ("Mul", np.multiply)):
        alpha = (2,) if name != "Mul" else ()
        got = aclnn.call(name, a, b, *alpha, np.empty(shape, d))
        want = ref(f64(a), f64(b))
        if d.kind in "iu":
            assert np.array_equal(got, want.astype(np.int64).astype(d)), name
        else:
            assert ulp_err(got, want, d) <= (0.5 if d != np.float64 else 0.5) + 0.01, name


def test_add_alpha_bool_and_int_rules(runtime):
    # bool + bool -> bool; the sum is cast back to bool (1, never 2)
    a = np.array([True, True, False])
    assert aclnn.Add(a, a, True, np.empty(3, np.int32)).tolist() == [1, 1, 0]
    # an integer tensor with a float alpha: 161002
    i = np.arange(4, dtype=np.int32)
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.Add(i, i, 0.5, np.empty(4, np.int32))
    assert e.value.status == 161002 and "alpha" in str(e.value)
    # a float result into an integer out: 161002 (CanCast)
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.Add(i.astype(np.float32), i.astype(np.float32), 1, np.empty(4, np.int32))
    assert e.value.status == 161002 and "cannot be cast" in str(e.value)
    # integer arithmetic wraps in the promoted dtype before the cast to out
    b = np.array([100, -100], np.int8)
    assert aclnn.Add(b, b, 1, np.empty(2, np.int32)).tolist() == [-56, 56]


def test_scalar_forms_round_the_scalar_to_the_tensor_dtype(runtime):
    x = np.arange(-8, 8, dtype=np.float16) / np.float16(3)
    got = aclnn.Muls(x, 0.1, np.empty_like(x))
    want = (f64(x) * f64(np.float16(0.1))).astype(np.float16)
    assert bits(got) == bits(want)
    got = aclnn.Adds(x, 0.1, 1, np.empty_like(x))
    assert bits(got) == bits((f64(x) + f64(np.float16(0.1))).astype(np.float16))
    # bf16 Muls computes in fp32 with the fp32 scalar, one rounding
    y = (np.arange(16) / 7).astype(BF16)
    got = aclnn.Muls(y, aclnn.scalar(0.1, np.float32), np.empty_like(y))
    assert bits(got) == bits((f64(y) * f64(np.float32(0.1))).astype(np.float32).astype(BF16))


def test_div_rules(runtime):
    i = np.array([7, -7, 1, 0], np.int32)
    j = np.array([2, 2, 3, 5], np.int32)
    assert np.array_equal(aclnn.Div(i, j, np.empty(4, np.float32)), (f64(i) / f64(j)).astype(np.float32))
    # true division then truncation into an integer out
    assert aclnn.Div(i, j, np.empty(4, np.int32)).tolist() == [3, -3, 0, 0]
    for mode, want in ((0, [3.5, -3.5]), (1, [3, -3]), (2, [3, -4])):
        got = aclnn.DivMod(np.array([7.0, -7.0], np.float32), np.array([2.0, 2.0], np.float32), mode,
                           np.empty(2, np.float32))
        assert got.tolist() == want, mode
    assert aclnn.DivMod(np.array([7, -7], np.int64), np.array([2, 2], np.int64), 2,
                        np.empty(2, np.int64)).tolist() == [3, -4]
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.DivMod(i, j, 3, np.empty(4, np.float32))
    assert e.value.status == 161002 and "mode" in str(e.value)
    # integer division by zero: a defined value, no trap
    z = aclnn.DivMod(np.array([5], np.int32), np.array([0], np.int32), 2, np.empty(1, np.int32))
    assert z.tolist() == [0]


@pytest.mark.parametrize("name,ref", [("Maximum", np.maximum), ("Minimum", np.minimum),
                                      ("RemainderTensorTensor", np.mod), ("FmodTensor", np.fmod),
                                      ("PowTensorTensor", np.power)])
@pytest.mark.parametrize("dt", ["f32", "f16", "s32", "s64"])
def test_binary_kernels(runtime, name, ref, dt):
    d = NP[dt]
    rng = np.random.default_rng(5)
    lo, hi = (0.5, 3) if name.startswith("Pow") else (-20, 20)
    a = sample(d, (6, 50), rng, lo, hi)
    b = sample(d, (50,), rng, 1 if d.kind in "iu" else lo, hi)
    if d.kind in "iu" and name != "PowTensorTensor":
        b[b == 0] = 3
    if name.startswith("Pow") and d.kind in "iu":
        a, b = a % 5, b % 4
    got = aclnn.call(name, a, b, np.empty((6, 50), d))
    with np.errstate(all="ignore"):
        want = ref(f64(a), f64(b))
    if d.kind in "iu":
        assert np.array_equal(got, want.astype(d)), name
    else:
        assert ulp_err(got, want, d) <= 1, name


def test_nan_propagation(runtime):
    a = np.array([np.nan, 1.0, 2.0, np.nan], np.float32)
    b = np.array([1.0, np.nan, 1.0, np.nan], np.float32)
    assert np.isnan(aclnn.Maximum(a, b, np.empty(4, np.float32))[[0, 1, 3]]).all()
    assert np.isnan(aclnn.Minimum(a, b, np.empty(4, np.float32))[[0, 1, 3]]).all()
    assert np.isnan(aclnn.Relu(a, np.empty(4, np.float32))[0])
    assert np.isnan(aclnn.Clamp(a, -1.0, 1.5, np.empty(4, np.float32))[0])


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
def test_ternary(runtime, dt):
    d = NP[dt]
    rng = np.random.default_rng(9)
    s, t1, t2 = (sample(d, (4, 9), rng, -3, 3) for _ in range(3))
    t2 = np.where(np.abs(f64(t2)) < 0.2, 1, t2).astype(d)
    w = sample(d, (9,), rng, -0.5, 1.5)
    c = lambda v: f64(v.astype(np.float32) if d != np.float64 else v)  # noqa: E731
    got = aclnn.Addcmul(s, t1, t2, 0.5, np.empty((4, 9), d))
    assert close_terms(got, [f64(s), 0.5 * f64(t1) * f64(t2)], d)
    got = aclnn.Addcdiv(s, t1, t2, 0.5, np.empty((4, 9), d))
    assert close_terms(got, [f64(s), 0.5 * f64(t1) / f64(t2)], d)
    got = aclnn.Lerp(s, t1, w, np.empty((4, 9), d))
    assert close_terms(got, [c(s), c(w) * (c(t1) - c(s))], d, 3)
    got = aclnn.Lerps(s, t1, 0.25, np.empty((4, 9), d))
    assert close_terms(got, [c(s), 0.25 * (c(t1) - c(s))], d, 3)


def test_where_and_masked_fill(runtime):
    rng = np.random.default_rng(2)
    cond = rng.random((3, 4)) < 0.5
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float16)
    got = aclnn.SWhere(cond, a, b, np.empty((3, 4), np.float32))
    assert np.array_equal(got, np.where(cond, a, b.astype(np.float32)))
    x = a.copy()
    aclnn.InplaceMaskedFillScalar(x, cond[0], -7.5)
    assert np.array_equal(x, np.where(cond[0], np.float32(-7.5), a))
    y = a.copy()
    aclnn.InplaceMaskedFillTensor(y, cond, np.array([3.0], np.float32))
    assert np.array_equal(y, np.where(cond, np.float32(3.0), a))
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.InplaceMaskedFillTensor(y, cond, np.array([3.0, 4.0], np.float32))
    assert e.value.status == 161002 and "exactly one element" in str(e.value)


def test_clamp_forms(runtime):
    x = np.linspace(-3, 3, 13).astype(np.float32)
    assert np.array_equal(aclnn.Clamp(x, -1.0, 2.0, np.empty_like(x)), np.clip(x, -1, 2))
    assert np.array_equal(aclnn.Clamp(x, None, 2.0, np.empty_like(x)), np.minimum(x, 2))
    assert np.array_equal(aclnn.ClampMin(x, 0.5, np.empty_like(x)), np.maximum(x, np.float32(0.5)))
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.Clamp(x, None, None, np.empty_like(x))
    assert e.value.status == 161001
    y = x.copy()
    aclnn.InplaceClampMax(y, 1.0)
    assert np.array_equal(y, np.minimum(x, 1))
    lo, hi = np.full(13, -1, np.float32), np.full(13, 1.5, np.float32)
    assert np.array_equal(aclnn.ClampTensor(x, lo, hi, np.empty_like(x)), np.clip(x, -1, 1.5))
    i = np.arange(-5, 5, dtype=np.int32)
    assert aclnn.Clamp(i, -2, 3, np.empty_like(i)).tolist() == np.clip(i, -2, 3).tolist()
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.Hardtanh(x, 2.0, -2.0, np.empty_like(x))
    assert e.value.status == 161002


def test_activations_with_parameters(runtime):
    x = np.linspace(-6, 6, 241).astype(np.float32)
    got = aclnn.LeakyRelu(x, 0.1, np.empty_like(x))
    assert ulp_err(got, np.where(x > 0, f64(x), f64(x) * f64(np.float32(0.1))), np.dtype(np.float32)) <= 0.5
    got = aclnn.Elu(x, 1.5, 2.0, 0.5, np.empty_like(x))
    want = np.where(x > 0, 2.0 * f64(x), 1.5 * 2.0 * np.expm1(0.5 * f64(x)))
    assert ulp_err(got, want, np.dtype(np.float32)) <= 3
    got = aclnn.Softplus(x, 2.0, 5.0, np.empty_like(x))
    assert ulp_err(got, softplus(f64(x), 2.0, 5.0), np.dtype(np.float32)) <= 3
    got = aclnn.Threshold(x, 0.5, -9.0, np.empty_like(x))
    assert np.array_equal(got, np.where(x > 0.5, x, np.float32(-9)))
    i = np.arange(-3, 4, dtype=np.int32)
    # threshold and value are converted to self's dtype (0.5 -> 0 for INT32)
    assert aclnn.Threshold(i, 0.5, 7, np.empty_like(i)).tolist() == np.where(i > 0, i, 7).tolist()
    got = aclnn.GeluV2(x, 1, np.empty_like(x))
    assert np.allclose(f64(got), gelu_tanh(f64(x)), rtol=1e-5, atol=0)
    for approx in (0, 5):  # any value but 1: the erf form, 0.5 x (1 + erf(x / sqrt 2)) as torch computes it
        got = aclnn.GeluV2(x, approx, np.empty_like(x))
        assert close_terms(got, [0.5 * f64(x), 0.5 * f64(x) * erf(f64(x) / math.sqrt(2))], np.float32, 6)


CMP = {"Eq": np.equal, "Ne": np.not_equal, "Lt": np.less, "Le": np.less_equal, "Gt": np.greater,
       "Ge": np.greater_equal}


@pytest.mark.parametrize("name", sorted(CMP))
@pytest.mark.parametrize("dt", ["f32", "f16", "bf16", "s32", "s8", "u8", "bool", "s64"])
def test_comparisons(runtime, name, dt):
    d = NP[dt]
    rng = np.random.default_rng(3)
    a = sample(d, (5, 8), rng, -4, 4)
    b = sample(d, (8,), rng, -4, 4)
    got = aclnn.call(name + "Tensor", a, b, np.empty((5, 8), bool))
    assert np.array_equal(got, CMP[name](f64(a), f64(b)))
    got = aclnn.call(name + "Tensor", a, b, np.empty((5, 8), np.float32))  # any dtype bool casts to
    assert np.array_equal(got, CMP[name](f64(a), f64(b)).astype(np.float32))
    s = np.array(2, d)[()] if dt != "bool" else np.bool_(True)
    got = aclnn.call(name + "Scalar", a, s, np.empty((5, 8), bool))
    assert np.array_equal(got, CMP[name](f64(a), f64(s)))
    x = a.copy()
    aclnn.call("Inplace%sScalar" % name, x, s)
    assert np.array_equal(x, CMP[name](f64(a), f64(s)).astype(d))


def test_uint64_ordering(runtime):
    a = np.array([2 ** 63 + 5, 3, 2 ** 64 - 1], np.uint64)
    b = np.array([4, 2 ** 63, 2 ** 64 - 2], np.uint64)
    assert aclnn.GtScalar(a, np.uint64(2 ** 63), np.empty(3, bool)).tolist() == [True, False, True]
    assert aclnn.LtScalar(a, np.uint64(2 ** 63), np.empty(3, bool)).tolist() == [False, True, False]
    assert aclnn.GeScalar(b, np.uint64(2 ** 64 - 2), np.empty(3, bool)).tolist() == [False, False, True]


def test_logical_and_bitwise(runtime):
    a = np.array([0, 1, 2, -3, 0], np.int32)
    b = np.array([0.0, 0.0, 0.5, np.nan, 1.0], np.float32)
    assert aclnn.LogicalAnd(a, b, np.empty(5, bool)).tolist() == [False, False, True, True, False]
    assert aclnn.LogicalOr(a, b, np.empty(5, bool)).tolist() == [False, True, True, True, True]
    assert aclnn.LogicalXor(a, b, np.empty(5, bool)).tolist() == [False, True, False, False, True]
    assert aclnn.LogicalNot(b, np.empty(5, bool)).tolist() == [True, True, False, False, False]
    x, y = np.array([12, -7, 5], np.int16), np.array([10, 3, -1], np.int16)
    assert aclnn.BitwiseAndTensor(x, y, np.empty(3, np.int16)).tolist() == (x & y).tolist()
    assert aclnn.BitwiseOrScalar(x, 3, np.empty(3, np.int16)).tolist() == (x | 3).tolist()
    assert aclnn.BitwiseXorTensor(x, y, np.empty(3, np.int16)).tolist() == (x ^ y).tolist()
    assert aclnn.BitwiseNot(x, np.empty(3, np.int16)).tolist() == (~x).tolist()
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.BitwiseAndScalar(x, 1.5, np.empty(3, np.int16))
    assert e.value.status == 161002


# ---- cast, copy, fill ------------------------------------------------------------

def test_cast_and_copy_strided(runtime):
    rng = np.random.default_rng(4)
    base = rng.standard_normal((6, 10)).astype(np.float32)
    view = base[::2, 1::3]  # strided input
    out = np.empty((10, 6), np.float16)[::2, ::2]  # strided output: shape (5, 3)... match below
    src = base[:5, :3]
    got = aclnn.Cast(src, pyaclnn.acl_dtype_of(np.float16), out)
    assert bits(np.ascontiguousarray(got)) == bits(src.astype(np.float16))
    sel = np.zeros((3, 3), np.float64)
    aclnn.InplaceCopy(sel, view)
    assert np.array_equal(sel, view.astype(np.float64))
    # a broadcast source
    row = np.arange(3, dtype=np.int8)
    aclnn.InplaceCopy(sel, row)
    assert np.array_equal(sel, np.broadcast_to(row, (3, 3)).astype(np.float64))


def test_fills(runtime):
    x = np.empty((3, 5), np.float16)
    aclnn.InplaceFillScalar(x, 0.1)
    assert bits(x) == bits(np.full((3, 5), 0.1, np.float16))
    aclnn.InplaceZero(x)
    assert not x.any()
    aclnn.InplaceOne(x)
    assert (x == 1).all()
    i = np.empty(4, np.int8)
    aclnn.InplaceFillTensor(i, np.array([-3], np.int64))
    assert i.tolist() == [-3] * 4


# ---- shapes, views, aliasing --------------------------------------------------

def test_empty_and_one_element(runtime):
    e = np.empty((0, 5), np.float32)
    assert aclnn.Exp(e, np.empty((0, 5), np.float32)).shape == (0, 5)
    assert aclnn.Add(e, np.ones(5, np.float32), 1, np.empty((0, 5), np.float32)).shape == (0, 5)
    one = np.array(2.0, np.float32)  # 0-d
    assert aclnn.Mul(one, one, np.empty((), np.float32)) == 4.0
    assert aclnn.Sqrt(np.array([4.0], np.float32), np.empty(1, np.float32)).tolist() == [2.0]


def test_inplace_aliasing_and_broadcast(runtime):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = x.copy()
    aclnn.InplaceMul(y, np.array([1, 2, 3, 4], np.float32))
    assert np.array_equal(y, x * np.array([1, 2, 3, 4], np.float32))
    z = x.copy()
    aclnn.Add(z, z, 1, z)  # out is self and other
    assert np.array_equal(z, 2 * x)
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.InplaceAdd(np.ones(4, np.float32), np.ones((3, 4), np.float32), 1)
    assert e.value.status == 161002 and "cannot be broadcast to the shape [4] of selfRef" in str(e.value)
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.Mul(np.ones((3, 4), np.float32), np.ones((2, 4), np.float32), np.empty((3, 4), np.float32))
    assert e.value.status == 161002 and "do not broadcast" in str(e.value)


def test_eight_dim_broadcast_and_transposed(runtime):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 1, 3, 1, 2, 1, 2, 3)).astype(np.float32)
    b = rng.standard_normal((1, 2, 1, 2, 1, 3, 2, 1)).astype(np.float32)
    got = aclnn.Sub(a, b, 1, np.empty(np.broadcast_shapes(a.shape, b.shape), np.float32))
    assert np.array_equal(got, a - b)
    t = rng.standard_normal((64, 48)).astype(np.float32).T  # a transposed (non-contiguous) view
    got = aclnn.Tanh(t, np.empty((48, 64), np.float32))
    want = aclnn.Tanh(np.ascontiguousarray(t), np.empty((48, 64), np.float32))
    assert bits(got) == bits(want)
    out_t = np.empty((64, 48), np.float32).T  # a transposed output
    assert bits(np.ascontiguousarray(aclnn.Tanh(t, out_t))) == bits(want)
