"""Prod / ProdDim, LogSumExp, Var / VarCorrection / VarMean / Std /
StdMeanCorrection and Cumprod (issue 26), against float64 numpy: every dtype
the table lists, dims and keepdim, strided views, 0-size and 1-element
tensors, error paths with their status codes, and bit-identical results
across thread counts and ISA tiers."""
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
OPS = optable.by_name()
REAL = [d for d in NP]


def dt(d):
    return pyaclnn.acl_dtype_of(NP[d])


def f64(a):
    return np.asarray(a).astype(np.float64)


def sample(d, shape, rng, lo=0.5, hi=1.5):
    t = NP[d]
    if t == np.dtype(bool):
        return rng.random(shape) < 0.8
    if t.kind in "iu":
        return rng.integers(max(int(np.iinfo(t).min), -3), 4, shape).astype(t)
    return rng.uniform(lo, hi, shape).astype(t)


def close(got, ref, d, k=2.0):
    """one rounding of the float64 value (k ulp of the dtype for 16-bit dtypes' products)"""
    eps = float(ml_dtypes.finfo(NP[d]).eps) if NP[d].kind == "f" or NP[d] == BF16 else 0
    return np.allclose(f64(got), ref, rtol=k * eps, atol=1e-30, equal_nan=True)


@pytest.mark.parametrize("d", [d for d in OPS["Prod"].ins.split() if d in NP])
def test_prod(runtime, d):
    rng = np.random.default_rng(1)
    x = sample(d, (4, 6, 5), rng)
    got = aclnn.Prod(x, dt(d), np.empty((), NP[d]))
    if NP[d].kind in "iub":
        assert int(got) == int(np.prod(x.astype(np.int64)).astype(NP[d])), d
    else:
        assert close(got, np.prod(f64(x)), d), d
    for dim, keep in ((1, False), (-1, True), (0, False)):
        shape = list(x.shape)
        if keep:
            shape[dim] = 1
        else:
            del shape[dim]
        got = aclnn.ProdDim(x, dim, keep, dt(d), np.empty(shape, NP[d]))
        ref = np.prod(x.astype(np.int64) if NP[d].kind in "iub" else f64(x), axis=dim, keepdims=keep)
        if NP[d].kind in "iub":
            assert np.array_equal(got, ref.astype(NP[d])), d
        else:
            assert close(got, ref, d), d


def test_prod_rules(runtime):
    x = np.arange(1, 13, dtype=np.int32).reshape(3, 4)[:, ::2]  # a strided view
    assert aclnn.ProdDim(x, 1, False, dt("s64"), np.empty(3, np.int64)).tolist() == [3, 35, 99]
    # self cast to dtype first: a float product of an integer tensor
    assert aclnn.Prod(x, dt("f32"), np.empty((), np.float32)) == np.prod(x.astype(np.float64))
    # empty: 1; a 0-d self
    assert aclnn.Prod(np.empty((0, 3), np.float32), dt("f32"), np.empty((), np.float32)) == 1
    assert aclnn.ProdDim(np.empty((2, 0), np.float32), 1, False, dt("f32"), np.empty(2, np.float32)).tolist() == [1, 1]
    assert aclnn.Prod(np.array(3.0, np.float32), dt("f32"), np.empty((), np.float32)) == 3
    for bad, status in ((lambda: aclnn.Prod(x, dt("f32"), np.empty((), np.float64)), 161002),
                        (lambda: aclnn.ProdDim(x, 2, False, dt("f32"), np.empty(3, np.float32)), 161002),
                        (lambda: aclnn.ProdDim(x, 1, False, dt("f32"), np.empty(4, np.float32)), 161002),
                        (lambda: aclnn.Prod(None, dt("f32"), np.empty((), np.float32)), 161001)):
        with pytest.raises(pyaclnn.AclError) as e:
            bad()
        assert e.value.status == status


@pytest.mark.parametrize("d", OPS["LogSumExp"].ins.split())
def test_logsumexp(runtime, d):
    rng = np.random.default_rng(2)
    x = sample(d, (3, 5, 7), rng, -30, 30)
    out_d = d if d in ("f32", "f16", "bf16") else "f32"
    got = aclnn.LogSumExp(x, [0, 2], False, np.empty(5, NP[out_d]))
    xf = f64(x)
    m = xf.max((0, 2), keepdims=True)
    ref = (m + np.log(np.exp(xf - m).sum((0, 2), keepdims=True))).reshape(5)
    assert close(got, ref, out_d, 1.0), d


def test_logsumexp_special(runtime):
    x = np.array([[1.0, np.inf], [-np.inf, -np.inf], [np.nan, 1.0], [1e30, 1e30]], np.float32)
    got = aclnn.LogSumExp(x, [1], True, np.empty((4, 1), np.float32))
    assert got[0, 0] == np.inf and got[1, 0] == -np.inf and np.isnan(got[2, 0])
    assert got[3, 0] == np.float32(1e30 + np.log(2))
    # empty dims: everything; an empty self: -inf; transposed view
    assert aclnn.LogSumExp(np.zeros((2, 2), np.float32), [], False, np.empty((), np.float32)) == np.float32(np.log(4))
    assert aclnn.LogSumExp(np.empty((0, 3), np.float32), [0], False, np.empty(3, np.float32)).tolist() == [-np.inf] * 3
    y = np.arange(6, dtype=np.float32).reshape(2, 3).T
    ref = np.log(np.exp(f64(y)).sum(1))
    assert close(aclnn.LogSumExp(y, [1], False, np.empty(3, np.float32)), ref, "f32", 1.0)
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.LogSumExp(x, [1], False, np.empty(4, np.int32))
    assert e.value.status == 161002
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.LogSumExp(x, [1, 1], False, np.empty(4, np.float32))
    assert e.value.status == 161002


@pytest.mark.parametrize("d", ["f32", "f16", "bf16"])
def test_var_std(runtime, d):
    rng = np.random.default_rng(3)
    x = sample(d, (4, 9, 6), rng, -3, 5)
    xf = f64(x)
    for dims, corr, keep in (([1], 1, False), ([0, 2], 0, True), ([], 2, False), ([-1], 1, True)):
        ax = tuple(dims) if dims else None
        shape = np.var(xf, axis=ax, keepdims=keep).shape
        v = aclnn.VarCorrection(x, dims, corr, keep, np.empty(shape, NP[d]))
        assert close(v, np.var(xf, axis=ax, ddof=corr, keepdims=keep), d, 1.0), (dims, corr)
        s = aclnn.Std(x, dims, corr, keep, np.empty(shape, NP[d]))
        assert close(s, np.std(xf, axis=ax, ddof=corr, keepdims=keep), d, 1.0), (dims, corr)
        o, m = np.empty(shape, NP[d]), np.empty(shape, NP[d])
        aclnn.StdMeanCorrection(x, dims, corr, keep, o, m)
        assert bits(o) == bits(s) and close(m, np.mean(xf, axis=ax, keepdims=keep), d, 1.0)
        o2, m2 = np.empty(shape, NP[d]), np.empty(shape, NP[d])
        aclnn.VarMean(x, dims, corr, keep, o2, m2)
        assert bits(o2) == bits(v) and bits(m2) == bits(m)
        vb = aclnn.Var(x, dims, corr == 1, keep, np.empty(shape, NP[d]))
        if corr in (0, 1):
            assert bits(vb) == bits(v)


def test_var_edges(runtime):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1::2]  # strided
    got = aclnn.VarCorrection(x, [1], 1, False, np.empty(3, np.float32))
    assert np.array_equal(got, np.var(f64(x), axis=1, ddof=1).astype(np.float32))
    # one element with correction 1: 0 / 0 = NaN; correction above n: inf-or-NaN as torch (divides by 0)
    assert np.isnan(aclnn.VarCorrection(np.ones(1, np.float32), [0], 1, False, np.empty((), np.float32)))
    assert aclnn.Std(np.array([1.0, 2.0], np.float32), [0], 5, False, np.empty((), np.float32)) == np.inf
    o, m = np.zeros(3, np.float32), np.zeros(3, np.float32)
    aclnn.StdMeanCorrection(np.empty((0, 3), np.float32), [0], 1, False, o, m)
    assert np.isnan(o).all() and np.isnan(m).all()
    for bad in (lambda: aclnn.VarCorrection(x, [1], 1, False, np.empty(3, np.float16)),
                lambda: aclnn.VarCorrection(x, [2], 1, False, np.empty(3, np.float32)),
                lambda: aclnn.VarCorrection(x.astype(np.float64), [1], 1, False, np.empty(3, np.float64)),
                lambda: aclnn.VarMean(x, [1], 1, False, np.empty(3, np.float32), np.empty(2, np.float32))):
        with pytest.raises(pyaclnn.AclError) as e:
            bad()
        assert e.value.status == 161002
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.VarMean(x, [1], 1, False, np.empty(3, np.float32), None)
    assert e.value.status == 161001


@pytest.mark.parametrize("d", OPS["Cumprod"].ins.split())
def test_cumprod(runtime, d):
    rng = np.random.default_rng(4)
    x = sample(d, (3, 7), rng)
    for dim in (0, 1, -1):
        got = aclnn.Cumprod(x, aclnn.scalar(dim, np.int64), dt(d), np.empty(x.shape, NP[d]))
        if NP[d].kind in "iu":
            ref = np.cumprod(x.astype(np.int64), axis=dim).astype(NP[d])
            assert np.array_equal(got, ref), (d, dim)
        else:
            assert close(got, np.cumprod(f64(x), axis=dim), d, 1.0), (d, dim)
        y = x.copy()
        aclnn.InplaceCumprod(y, aclnn.scalar(dim, np.int32))
        assert bits(y) == bits(got)


def test_cumprod_rules(runtime):
    x = np.arange(1, 13, dtype=np.int32).reshape(3, 4).T  # transposed
    got = aclnn.Cumprod(x, aclnn.scalar(1, np.int64), dt("f32"), np.empty((4, 3), np.float32))
    assert np.array_equal(got, np.cumprod(f64(x), axis=1).astype(np.float32))
    assert aclnn.Cumprod(np.empty((0, 2), np.float32), aclnn.scalar(0, np.int64), dt("f32"),
                         np.empty((0, 2), np.float32)).shape == (0, 2)
    assert aclnn.Cumprod(np.array(5.0, np.float32), aclnn.scalar(0, np.int64), dt("f32"),
                         np.empty((), np.float32)) == 5
    for bad in (lambda: aclnn.Cumprod(x, aclnn.scalar(2, np.int64), dt("f32"), np.empty((4, 3), np.float32)),
                lambda: aclnn.Cumprod(x, aclnn.scalar(1, np.int64), dt("f32"), np.empty((4, 3), np.float64)),
                lambda: aclnn.Cumprod(x, aclnn.scalar(1.0, np.float32), dt("f32"), np.empty((4, 3), np.float32)),
                lambda: aclnn.Cumprod(x, aclnn.scalar(1, np.int64), dt("f32"), np.empty((3, 4), np.float32))):
        with pytest.raises(pyaclnn.AclError) as e:
            bad()
        assert e.value.status == 161002


def test_threads_and_tiers_bitwise(runtime, restore_runtime_knobs):
    rng = np.random.default_rng(5)
    x = rng.uniform(0.9, 1.1, (37, 300)).astype(np.float32)
    first = None
    for tier in supported_tiers():
        for threads in (1, 2, 3):
            pyaclnn.set_max_isa(tier)
            pyaclnn.set_num_threads(threads)
            o, m = np.empty(300, np.float32), np.empty(300, np.float32)
            aclnn.StdMeanCorrection(x, [0], 1, False, o, m)
            r = (aclnn.ProdDim(x, 1, False, dt("f32"), np.empty(37, np.float32)),
                 aclnn.LogSumExp(x, [1], False, np.empty(37, np.float32)), o, m,
                 aclnn.Prod(x, dt("f32"), np.empty((), np.float32)),
                 aclnn.Cumprod(x, aclnn.scalar(1, np.int64), dt("f32"), np.empty_like(x)))
            if first is None:
                first = r
            else:
                assert all(bits(a) == bits(b) for a, b in zip(r, first)), (tier, threads)
    _ = REAL


@pytest.mark.parametrize("d", OPS["Dot"].ins.split())
def test_dot(runtime, d):
    rng = np.random.default_rng(6)
    x, y = sample(d, (301,), rng, -2, 2), sample(d, (301,), rng, -2, 2)
    got = aclnn.Dot(x, y, np.empty((), NP[d]))
    if NP[d].kind in "iu":
        assert int(got) == int(np.dot(x.astype(np.int64), y.astype(np.int64)).astype(NP[d]))
    else:
        assert close(got, np.dot(f64(x), f64(y)), d, 1.0)
    # strided views
    got = aclnn.Dot(x[1::3], y[1::3], np.empty((), NP[d]))
    if NP[d].kind == "f":
        assert close(got, np.dot(f64(x[1::3]), f64(y[1::3])), d, 1.0)


def test_dot_rules(runtime):
    x = np.ones(4, np.float32)
    assert aclnn.Dot(np.empty(0, np.float32), np.empty(0, np.float32), np.full((), 7, np.float32)) == 0
    assert aclnn.Dot(x[:1] * 3, x[:1] * 2, np.empty((), np.float32)) == 6
    for bad in (lambda: aclnn.Dot(x, np.ones(3, np.float32), np.empty((), np.float32)),
                lambda: aclnn.Dot(x.reshape(2, 2), x.reshape(2, 2), np.empty((), np.float32)),
                lambda: aclnn.Dot(x, x.astype(np.float16), np.empty((), np.float32)),
                lambda: aclnn.Dot(x, x, np.empty((), np.float16)),
                lambda: aclnn.Dot(x, x, np.empty(1, np.float32))):
        with pytest.raises(pyaclnn.AclError) as e:
            bad()
        assert e.value.status == 161002
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.Dot(x, None, np.empty((), np.float32))
    assert e.value.status == 161001


@pytest.mark.parametrize("name", ["MseLoss", "L1Loss"])
@pytest.mark.parametrize("d", ["f32", "f16", "bf16", "s64"])
def test_losses(runtime, name, d):
    if d not in OPS[name].ins.split():
        pytest.skip("not a listed dtype")
    rng = np.random.default_rng(7)
    x, y = sample(d, (3, 5, 4), rng, -2, 2), sample(d, (5, 1), rng, -2, 2)  # target broadcasts
    diff = f64(x) - f64(y)
    elem = diff ** 2 if name == "MseLoss" else np.abs(diff)
    got = aclnn.call(name, x, y, 0, np.empty((3, 5, 4), NP[d]))
    assert np.array_equal(f64(got), elem.astype(NP[d]).astype(np.float64)) if d == "s64" else close(got, elem, d, 1.0)
    assert close(aclnn.call(name, x, y, 2, np.empty((), NP[d])), elem.sum(), d, 1.0) or d == "s64"
    if d != "s64":
        assert close(aclnn.call(name, x, y, 1, np.empty((), NP[d])), elem.mean(), d, 1.0)
        # a transposed self
        xt = x[0].T
        e2 = (f64(xt) - f64(y[:, 0])) ** 2 if name == "MseLoss" else np.abs(f64(xt) - f64(y[:, 0]))
        assert close(aclnn.call(name, xt, y[:, 0].copy(), 1, np.empty((), NP[d])), e2.mean(), d, 1.0)


def test_loss_rules(runtime):
    x = np.ones((2, 3), np.float32)
    assert np.isnan(aclnn.MseLoss(np.empty((0, 3), np.float32), np.empty(3, np.float32), 1, np.empty((), np.float32)))
    assert aclnn.L1Loss(np.empty(0, np.float32), np.empty(0, np.float32), 2, np.full((), 5, np.float32)) == 0
    assert aclnn.MseLoss(np.array(3.0, np.float32), np.array(1.0, np.float32), 1, np.empty((), np.float32)) == 4
    i = np.arange(6, dtype=np.int64).reshape(2, 3)
    assert aclnn.L1Loss(i, i * 0, 2, np.empty((), np.int64)) == 15
    for bad in (lambda: aclnn.MseLoss(x, x, 3, np.empty((), np.float32)),
                lambda: aclnn.MseLoss(x, np.ones((3, 3), np.float32), 1, np.empty((), np.float32)),
                lambda: aclnn.MseLoss(x, x, 0, np.empty((3, 2), np.float32)),
                lambda: aclnn.MseLoss(x, x, 1, np.empty(1, np.float32)),
                lambda: aclnn.MseLoss(x, x, 1, np.empty((), np.float16)),
                lambda: aclnn.L1Loss(i, i, 1, np.empty((), np.int64))):
        with pytest.raises(pyaclnn.AclError) as e:
            bad()
        assert e.value.status == 161002


@pytest.mark.parametrize("d", ["f32", "f16", "bf16", "f64"])
def test_glu(runtime, d):
    import torch
    rng = np.random.default_rng(8)
    x = sample(d, (4, 6, 2), rng, -4, 4)
    for dim in (0, 1, -1, 2):
        sh = list(x.shape)
        sh[dim] //= 2
        got = aclnn.Glu(x, dim, np.empty(sh, NP[d]))
        ref = torch.nn.functional.glu(torch.from_numpy(f64(x)), dim).numpy()
        assert close(got, ref, d, 1.0), (d, dim)
    # a transposed view
    xt = x[:, :, 0].T  # (6, 4)
    got = aclnn.Glu(xt, 0, np.empty((3, 4), NP[d]))
    assert close(got, torch.nn.functional.glu(torch.from_numpy(f64(xt)), 0).numpy(), d, 1.0)


def test_glu_rules(runtime):
    x = np.ones((3, 4), np.float32)
    assert aclnn.Glu(np.empty((0, 4), np.float32), 1, np.empty((0, 2), np.float32)).shape == (0, 2)
    assert aclnn.Glu(np.array([2.0, 0.0], np.float32), 0, np.empty(1, np.float32)) == 1
    for bad in (lambda: aclnn.Glu(x, 0, np.empty((1, 4), np.float32)),  # odd size
                lambda: aclnn.Glu(x, 2, np.empty((3, 2), np.float32)),
                lambda: aclnn.Glu(x, 1, np.empty((3, 4), np.float32)),
                lambda: aclnn.Glu(x, 1, np.empty((3, 2), np.float16)),
                lambda: aclnn.Glu(np.array(1.0, np.float32), 0, np.empty((), np.float32)),
                lambda: aclnn.Glu(x.astype(np.int32), 1, np.empty((3, 2), np.int32))):
        with pytest.raises(pyaclnn.AclError) as e:
            bad()
        assert e.value.status == 161002


def _bce_ref(x, y, w, pw, red):
    import torch
    t = lambda v: None if v is None else torch.from_numpy(f64(v))  # noqa: E731
    return torch.nn.functional.binary_cross_entropy_with_logits(
        t(x), t(y), weight=t(w), pos_weight=t(pw), reduction=("none", "mean", "sum")[red]).numpy()


@pytest.mark.parametrize("d", ["f32", "f16", "bf16"])
def test_bce_with_logits(runtime, d):
    rng = np.random.default_rng(9)
    x = sample(d, (3, 4, 5), rng, -8, 8)
    y = sample(d, (3, 4, 5), rng, 0, 1)
    w, pw = sample(d, (5,), rng, 0, 2), sample(d, (4, 1), rng, 0.5, 2)
    for weights in ((None, None), (w, None), (None, pw), (w, pw)):
        for red in (0, 1, 2):
            out = np.empty((3, 4, 5) if red == 0 else (), NP[d])
            got = aclnn.BinaryCrossEntropyWithLogits(x, y, *weights, red, out)
            assert close(got, _bce_ref(x, y, *weights, red), d, 1.0), (d, red)
    # transposed self / target
    xt, yt = x[0].T, y[0].T
    got = aclnn.BinaryCrossEntropyWithLogits(xt, yt, None, None, 0, np.empty((5, 4), NP[d]))
    assert close(got, _bce_ref(xt, yt, None, None, 0), d, 1.0)


def test_bce_with_logits_rules(runtime):
    x = np.zeros((2, 3), np.float32)
    got = aclnn.BinaryCrossEntropyWithLogits(x, x, None, None, 1, np.empty((), np.float32))
    assert got == np.float32(np.log(2))
    assert np.isnan(aclnn.BinaryCrossEntropyWithLogits(np.empty((0, 3), np.float32), np.empty((0, 3), np.float32),
                                                       None, None, 1, np.empty((), np.float32)))
    assert aclnn.BinaryCrossEntropyWithLogits(np.empty(0, np.float32), np.empty(0, np.float32), None, None, 2,
                                              np.full((), 3, np.float32)) == 0
    big = np.array([100.0, -100.0], np.float32)  # no overflow in exp
    got = aclnn.BinaryCrossEntropyWithLogits(big, np.array([1.0, 0.0], np.float32), None, None, 0,
                                             np.empty(2, np.float32))
    assert np.all(np.isfinite(got)) and np.all(got < 1e-30)
    for bad in (lambda: aclnn.BinaryCrossEntropyWithLogits(x, np.zeros(3, np.float32), None, None, 0,
                                                           np.empty((2, 3), np.float32)),
                lambda: aclnn.BinaryCrossEntropyWithLogits(x, x, np.ones(2, np.float32), None, 0,
                                                           np.empty((2, 3), np.float32)),
                lambda: aclnn.BinaryCrossEntropyWithLogits(x, x, None, None, 3, np.empty((), np.float32)),
                lambda: aclnn.BinaryCrossEntropyWithLogits(x, x, None, None, 0, np.empty((3, 2), np.float32)),
                lambda: aclnn.BinaryCrossEntropyWithLogits(x, x, None, None, 1, np.empty((), np.float16))):
        with pytest.raises(pyaclnn.AclError) as e:
            bad()
        assert e.value.status == 161002
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.BinaryCrossEntropyWithLogits(x, None, None, None, 1, np.empty((), np.float32))
    assert e.value.status == 161001
