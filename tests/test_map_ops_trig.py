"""The inverse / hyperbolic trigonometric map operators, Atan2, Erfinv,
NanToNum and ClampTensor with one bound (issue 26), against float64 numpy /
torch: every dtype the table lists, special values, strided views, 0-size and
1-element tensors, error paths with their status codes, in-place forms and
bit-identical results across ISA tiers and thread counts."""
import zlib

import ml_dtypes
import numpy as np
import pytest
import torch

import pyaclnn
from pyaclnn import aclnn, optable
from test_map_ops import NP, f64, sample, ulp_err
from tiers import bits, supported_tiers

OPS = optable.by_name()


def erfinv(x):
    return torch.erfinv(torch.from_numpy(np.asarray(x, np.float64))).numpy()


# name -> (float64 reference, input domain)
TRIG = {
    "Asin": (np.arcsin, (-1, 1)), "Acos": (np.arccos, (-1, 1)), "Atan": (np.arctan, (-50, 50)),
    "Sinh": (np.sinh, (-20, 20)), "Cosh": (np.cosh, (-20, 20)), "Asinh": (np.arcsinh, (-1e4, 1e4)),
    "Acosh": (np.arccosh, (1, 1e4)), "Atanh": (np.arctanh, (-0.999, 0.999)), "Erfinv": (erfinv, (-0.9999, 0.9999)),
}


@pytest.mark.parametrize("name,dt", [(n, d) for n in TRIG for d in ("f32", "f16", "bf16", "f64")
                                     if d in OPS[n].ins.split()])
def test_accuracy(runtime, name, dt):
    """fp32 / fp64: computed in double, rounded once; fp16 / bf16: within 1 ulp."""
    ref_fn, (lo, hi) = TRIG[name]
    d = NP[dt]
    x = sample(d, (3, 257), np.random.default_rng(zlib.crc32(name.encode())), lo, hi)
    got = aclnn.call(name, x, np.empty(x.shape, d))
    with np.errstate(all="ignore"):
        ref = ref_fn(f64(x))
    limit = {"f32": 0.51, "f64": 1 if name != "Erfinv" else 4, "f16": 1, "bf16": 1}[dt]
    assert ulp_err(got, ref, d) <= limit, name
    # the in-place form gives the same bits
    if dt in OPS["Inplace" + name].ins.split():
        y = x.copy()
        aclnn.call("Inplace" + name, y)
        assert bits(y) == bits(got)


@pytest.mark.parametrize("name", sorted(TRIG))
def test_integer_inputs_and_errors(runtime, name):
    """Integer and bool inputs compute in FLOAT; an integer out is 161002."""
    ins = OPS[name].ins.split()
    for dt in ("s8", "u8", "s16", "s32", "s64", "bool"):
        if dt not in ins:
            continue
        x = (np.arange(6) % 2).astype(NP[dt]) if name != "Acosh" else np.arange(1, 7).astype(NP[dt])
        got = aclnn.call(name, x, np.empty(6, np.float32))
        with np.errstate(all="ignore"):
            ref = TRIG[name][0](f64(x))
        assert ulp_err(got, ref, np.dtype(np.float32)) <= 0.51, (name, dt)
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.call(name, np.zeros(3, np.float32), np.empty(3, np.int32))
    assert e.value.status == 161002
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.call(name, np.zeros(3, np.float32), np.empty(4, np.float32))
    assert e.value.status == 161002
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.call(name, None, np.empty(3, np.float32))
    assert e.value.status == 161001


def test_special_values(runtime):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5], np.float32)
    for name, (ref_fn, _) in TRIG.items():
        got = aclnn.call(name, x, np.empty_like(x))
        with np.errstate(all="ignore"):
            ref = ref_fn(f64(x))
        assert ulp_err(got, ref, np.dtype(np.float32)) <= 0.51, name
        assert bits(np.signbit(got[3:5])) == bits(np.signbit(ref[3:5].astype(np.float32))), name
    got = aclnn.Erfinv(np.array([1, -1, 1.5, 0, 1e-30], np.float32), np.empty(5, np.float32))
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2]) and got[3] == 0
    assert abs(got[4] / np.float32(1e-30 * 0.886226925452758) - 1) < 1e-6


def test_atan2(runtime):
    rng = np.random.default_rng(5)
    for dt in ("f32", "f16", "bf16", "f64"):
        d = NP[dt]
        a = sample(d, (4, 65), rng, -10, 10)
        b = sample(d, (65,), rng, -10, 10)  # broadcast
        got = aclnn.Atan2(a, b, np.empty((4, 65), d))
        assert ulp_err(got, np.arctan2(f64(a), f64(b)), d) <= (0.51 if dt == "f32" else 1), dt  # f64: double libm
        y = a.copy()
        aclnn.InplaceAtan2(y, b)
        assert bits(y) == bits(got)
    # signed zeros and infinities
    z = np.array([0.0, -0.0, 0.0, -0.0, np.inf, -np.inf, 1.0, np.nan], np.float32)
    w = np.array([0.0, 0.0, -0.0, -0.0, np.inf, 1.0, -np.inf, 1.0], np.float32)
    got = aclnn.Atan2(z, w, np.empty(8, np.float32))
    ref = np.arctan2(f64(z), f64(w)).astype(np.float32)
    assert bits(got) == bits(ref)
    # integers compute in FLOAT; a mixed pair promotes
    i = np.array([1, -2, 3], np.int32)
    got = aclnn.Atan2(i, np.array([2, 2, -1], np.int64), np.empty(3, np.float32))
    assert bits(got) == bits(np.arctan2([1.0, -2.0, 3.0], [2.0, 2.0, -1.0]).astype(np.float32))
    got = aclnn.Atan2(i, np.array([2, 2, -1], np.float16), np.empty(3, np.float16))
    assert got.dtype == np.float16
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.Atan2(i, i, np.empty(3, np.int32))
    assert e.value.status == 161002
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.Atan2(np.ones((2, 3), np.float32), np.ones((3, 3), np.float32), np.empty((2, 3), np.float32))
    assert e.value.status == 161002


def test_nan_to_num(runtime):
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0, 3e38], np.float32)
    for dt in ("f32", "f16", "bf16"):
        d = NP[dt]
        with np.errstate(over="ignore"):
            xd = x.astype(d)  # 3e38 is inf in fp16
        got = aclnn.NanToNum(xd, 0.25, 100.0, -7.0, np.empty(6, d))
        ref = np.nan_to_num(xd.astype(np.float32), nan=0.25, posinf=100.0, neginf=-7.0)
        assert bits(got) == bits(ref.astype(d)), dt
        y = xd.copy()
        aclnn.InplaceNanToNum(y, 0.25, 100.0, -7.0)
        assert bits(y) == bits(got)
    for dt in ("s8", "u8", "s16", "s32", "s64", "bool"):
        i = (np.arange(5) * 37 % 7).astype(NP[dt])
        assert bits(aclnn.NanToNum(i, 1.0, 2.0, 3.0, np.empty(5, NP[dt]))) == bits(i), dt
    # a strided view in and out
    base = np.full((4, 6), np.nan, np.float32)
    base[::2, 1::2] = 2.0
    out = np.zeros((4, 6), np.float32)
    aclnn.NanToNum(base[:, ::2], 9.0, 0.0, 0.0, out[:, 1::2])
    assert np.array_equal(out[:, 1::2], np.nan_to_num(base[:, ::2], nan=9.0)) and not out[:, ::2].any()
    assert aclnn.NanToNum(np.empty((0, 3), np.float32), 0.0, 0.0, 0.0, np.empty((0, 3), np.float32)).shape == (0, 3)
    # out must match self's dtype and shape (no broadcasting); f64 is not an A2 dtype
    for o in (np.empty(6, np.float16), np.empty((2, 6), np.float32)):
        with pytest.raises(pyaclnn.AclError) as e:
            aclnn.NanToNum(x, 0.0, 1.0, -1.0, o)
        assert e.value.status == 161002
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.NanToNum(x.astype(np.float64), 0.0, 1.0, -1.0, np.empty(6, np.float64))
    assert e.value.status == 161002


def test_clamp_tensor_one_bound(runtime):
    rng = np.random.default_rng(9)
    x = rng.uniform(-5, 5, (3, 7)).astype(np.float32)
    lo = rng.uniform(-2, 0, (7,)).astype(np.float32)
    hi = rng.uniform(0, 2, (3, 1)).astype(np.float32)
    o = np.empty((3, 7), np.float32)
    assert bits(aclnn.ClampTensor(x, lo, None, o)) == bits(np.maximum(x, lo))
    assert bits(aclnn.ClampTensor(x, None, hi, o)) == bits(np.minimum(x, hi))
    assert bits(aclnn.ClampTensor(x, lo, hi, o)) == bits(np.minimum(np.maximum(x, lo), hi))
    # integers, a strided self
    xi = np.arange(-20, 20, dtype=np.int32).reshape(4, 10)[:, ::3]
    got = aclnn.ClampTensor(xi, None, np.array([3], np.int32), np.empty(xi.shape, np.int32))
    assert np.array_equal(got, np.minimum(xi, 3))
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.ClampTensor(x, None, None, o)
    assert e.value.status == 161001 and "both NULL" in str(e.value)
    before = o.copy()
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.ClampTensor(x, None, np.ones((2, 7), np.float32), o)
    assert e.value.status == 161002 and bits(o) == bits(before)


def test_one_element_and_empty(runtime):
    for name in TRIG:
        assert aclnn.call(name, np.empty((2, 0), np.float32), np.empty((2, 0), np.float32)).shape == (2, 0)
        one = np.array(0.5 if name != "Acosh" else 1.5, np.float32)
        got = aclnn.call(name, one, np.empty((), np.float32))
        assert got.shape == () and ulp_err(got, TRIG[name][0](f64(one)), np.dtype(np.float32)) <= 0.51
    # a transposed view
    x = np.linspace(-0.9, 0.9, 12, dtype=np.float32).reshape(3, 4).T
    assert bits(aclnn.Asin(x, np.empty((4, 3), np.float32))) == bits(np.arcsin(f64(x)).astype(np.float32))


NEW = sorted(TRIG) + ["Atan2", "NanToNum"]


@pytest.mark.parametrize("name", NEW)
def test_tiers_and_threads_bitwise(runtime, name, restore_runtime_knobs):
    lo, hi = TRIG[name][1] if name in TRIG else (-5, 5)
    results = {}
    for tier in supported_tiers():
        for threads in (1, 3):
            pyaclnn.set_max_isa(tier)
            pyaclnn.set_num_threads(threads)
            for dt in ("f32", "f16", "bf16"):
                if dt not in OPS[name].ins.split():
                    continue
                d = NP[dt]
                r = np.random.default_rng(3)
                x = sample(d, (5, 1013), r, lo, hi)
                x.ravel()[::97] = np.nan
                if name == "Atan2":
                    got = aclnn.Atan2(x, sample(d, (5, 1013), r, lo, hi), np.empty(x.shape, d))
                elif name == "NanToNum":
                    got = aclnn.NanToNum(x, 1.0, 2.0, 3.0, np.empty(x.shape, d))
                else:
                    got = aclnn.call(name, x, np.empty(x.shape, d))
                if dt in results:
                    assert bits(got) == bits(results[dt]), (name, dt, tier, threads)
                else:
                    results[dt] = got
    assert results
    _ = ml_dtypes
