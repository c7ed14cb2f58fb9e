"""The reduce and scan families (sums, means, extrema, any/all, norms;
cumsum, sort, argsort, top-k) through their C entry points, against float64
numpy / torch: every listed dtype, dims (negative, repeated, empty = all),
keepdim, strided and transposed inputs, 0-size and 0-d tensors, the
one-element output ggml passes, error codes, and bit-identical results across
ISA tiers and thread counts."""
import os

import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import aclnn
from tiers import bits, supported_tiers

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
torch = pytest.importorskip("torch")

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F16, F64 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64)
ACL = pyaclnn.acl_dtype_of


def f64(a):
    return np.asarray(a).astype(np.float64)


def is_float(dt):
    return np.dtype(dt) in (F32, F16, BF16, F64)


def sample(dt, shape, rng):
    dt = np.dtype(dt)
    if dt == np.dtype(bool):
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -50, 50, shape).astype(dt)
    if dt == BF16:
        return rng.standard_normal(shape).astype(BF16)
    return rng.standard_normal(shape).astype(dt)


def err(code, fn, *args):
    with pytest.raises(pyaclnn.AclError) as e:
        fn(*args)
    assert e.value.status == code, str(e.value)
    return str(e.value)


@pytest.mark.parametrize("dt", [F32, F16, BF16, F64, np.int32, np.int64, np.int8, np.uint8, bool], ids=str)
@pytest.mark.parametrize("dims,keep", [((), False), ((1,), False), ((0, 2), True), ((-1,), True), ((0, 1, 2), False)])
def test_reduce_sum(runtime, dt, dims, keep):
    rng = np.random.default_rng(1)
    x = sample(dt, (5, 7, 33), rng)
    axes = tuple(range(3)) if not dims else tuple(d % 3 for d in dims)
    shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape) if keep or i not in axes)
    od = np.dtype(dt) if np.dtype(dt) != np.dtype(bool) else np.dtype(np.int64)
    got = aclnn.ReduceSum(x, list(dims), keep, ACL(od), np.empty(shape, od))
    want = f64(x).sum(axis=axes, keepdims=keep)
    if is_float(od):
        want = want.astype(od) if od != BF16 else want.astype(np.float32).astype(BF16)
        assert np.allclose(f64(got), f64(want), rtol=1e-6 if od in (F32, F64) else 0, atol=0), (dims, keep)
    else:
        assert np.array_equal(got, want.astype(np.int64).astype(od))


def test_reduce_sum_rules(runtime):
    x = np.ones((4, 6), np.float32)
    # ggml's CROSS_ENTROPY_LOSS: a 1-D sum into a [1] output
    assert aclnn.ReduceSum(np.arange(6, dtype=np.float32), [0], False, ACL(F32), np.empty(1, np.float32)).tolist() == [15]
    # the dtype argument casts self first and must be out's dtype
    y = np.array([1.7, 2.6, -0.5], np.float32)
    assert aclnn.ReduceSum(y, [], False, ACL(np.int32), np.empty((), np.int32)) == 1 + 2 + 0
    assert "must be INT32" in err(161002, aclnn.ReduceSum, y, [], False, ACL(np.int32), np.empty((), np.float32))
    assert "appears twice" in err(161002, aclnn.ReduceSum, x, [1, -1], False, ACL(F32), np.empty(4, np.float32))
    assert "out of range" in err(161002, aclnn.ReduceSum, x, [2], False, ACL(F32), np.empty(4, np.float32))
    assert "shape must be" in err(161002, aclnn.ReduceSum, x, [1], False, ACL(F32), np.empty(6, np.float32))
    # an empty self sums to 0; a 0-d self is its own sum
    assert aclnn.ReduceSum(np.empty((0, 3), np.float32), [0], False, ACL(F32), np.full(3, 9, np.float32)).tolist() == [0, 0, 0]
    assert aclnn.ReduceSum(np.array(2.5, np.float32), [0], False, ACL(F32), np.empty((), np.float32)) == 2.5


def test_reduce_sum_strided_and_large(runtime, restore_runtime_knobs):
    rng = np.random.default_rng(2)
    base = rng.standard_normal((300, 400)).astype(np.float32)
    t = base.T  # reduce over a strided dim and a contiguous one
    for axes in ([0], [1], []):
        shape = tuple(n for i, n in enumerate(t.shape) if axes and i not in axes)
        got = aclnn.ReduceSum(t, axes, False, ACL(F32), np.empty(shape, np.float32))
        assert np.allclose(f64(got), f64(t).sum(axis=tuple(axes) if axes else None), rtol=1e-6)
    big = rng.standard_normal(3_000_000).astype(np.float32)  # one long run: blocks in parallel
    results = []
    for tier in supported_tiers():
        for threads in (1, 2, 3):
            pyaclnn.set_max_isa(tier)
            pyaclnn.set_num_threads(threads)
            for arr in (big, base, t):
                results.append((arr.shape, bits(aclnn.ReduceSum(arr, [], False, ACL(F32), np.empty((), np.float32)))))
                results.append((arr.shape, bits(aclnn.ReduceSum(arr, [0], False, ACL(F32),
                                                                np.empty(arr.shape[1:], np.float32)))))
    by_shape = {}
    for key, b in results:
        by_shape.setdefault(key, set()).add(b)
    # per array and reduction: one result whatever the tier or thread count
    assert all(len(v) <= 2 for v in by_shape.values())
    assert np.isclose(float(aclnn.ReduceSum(big, [], False, ACL(F32), np.empty((), np.float32))), f64(big).sum(),
                      rtol=1e-6)


@pytest.mark.parametrize("dt", [F32, F16, BF16, F64, np.int32], ids=str)
def test_mean(runtime, dt):
    rng = np.random.default_rng(3)
    x = sample(dt, (4, 9, 5), rng)
    od = np.dtype(dt)
    got = aclnn.Mean(x, [1, 2], True, ACL(od), np.empty((4, 1, 1), od))
    want = f64(x).mean(axis=(1, 2), keepdims=True)
    if is_float(od):
        assert np.allclose(f64(got), want, rtol=2 ** -7 if od in (F16, BF16) else 1e-6)
    else:
        assert np.array_equal(got, np.trunc(want).astype(od))
    nan = aclnn.Mean(np.empty((0, 3), np.float32), [0], False, ACL(F32), np.empty(3, np.float32))
    assert np.isnan(nan).all()


@pytest.mark.parametrize("dt", [F32, F16, BF16, F64, np.int32, np.int8, np.uint8, np.int64, bool], ids=str)
def test_max_min_amax_amin(runtime, dt):
    rng = np.random.default_rng(4)
    x = sample(dt, (6, 10), rng)
    assert aclnn.Max(x, np.empty((), dt)) == x.max()
    assert aclnn.Min(x, np.empty(1, dt))[0] == x.min()
    assert np.array_equal(aclnn.Amax(x, [0], False, np.empty(10, dt)), x.max(axis=0))
    assert np.array_equal(aclnn.Amin(x, [-1], True, np.empty((6, 1), dt)), x.min(axis=-1, keepdims=True))
    assert "must be" in err(161002, aclnn.Amax, x, [0], False, np.empty(10, np.float64 if dt != F64 else np.float32))


def test_extrema_nan_and_empty(runtime):
    x = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, -1.0]], np.float32)
    assert np.isnan(aclnn.Max(x, np.empty((), np.float32)))
    assert aclnn.ArgMax(x, 1, False, np.empty(2, np.int64)).tolist() == [1, 1]
    out = np.full((), 7.0, np.float32)
    aclnn.Max(np.empty((0, 2), np.float32), out)  # empty: success, nothing written
    assert out == 7.0
    assert "size 0" in err(161002, aclnn.Amax, np.empty((0, 2), np.float32), [0], False, np.empty(2, np.float32))


@pytest.mark.parametrize("dt", [F32, F16, BF16, np.int64, bool], ids=str)
def test_max_min_dim(runtime, dt):
    rng = np.random.default_rng(5)
    x = sample(dt, (5, 8, 3), rng)
    tx = torch.from_numpy(f64(x))
    for name, fn in (("MaxDim", torch.max), ("MinDim", torch.min)):
        v, i = aclnn.call(name, x, 1, True, np.empty((5, 1, 3), dt), np.empty((5, 1, 3), np.int64))
        tv, ti = fn(tx, 1, keepdim=True)
        assert np.array_equal(f64(v), tv.numpy())
        assert np.array_equal(f64(x)[np.arange(5)[:, None, None], i, np.arange(3)], tv.numpy())  # an index of it
    ties = np.array([[3, 1, 3, 0]], np.int64)
    assert aclnn.MaxDim(ties, 1, False, np.empty(1, np.int64), np.empty(1, np.int32))[1].tolist() == [0]


@pytest.mark.parametrize("dt", [F32, F16, BF16, F64, np.int32, np.int8, np.uint8], ids=str)
def test_argmax_argmin(runtime, dt):
    rng = np.random.default_rng(6)
    x = sample(dt, (7, 11), rng)
    for dim in (0, 1, -1):
        got = aclnn.ArgMax(x, dim, False, np.empty(np.delete(x.shape, dim % 2), np.int64))
        assert np.array_equal(got, np.argmax(f64(x), axis=dim))
        got = aclnn.ArgMin(x, dim, True, np.empty([1 if i == dim % 2 else n for i, n in enumerate(x.shape)], np.int32))
        assert np.array_equal(got, np.argmin(f64(x), axis=dim)[..., None] if dim % 2 else np.argmin(f64(x), axis=0)[None])


def test_any_all(runtime):
    x = np.array([[0, 0, 1], [0, 0, 0], [2, 3, 4]], np.int32)
    assert aclnn.Any(x, [1], False, np.empty(3, bool)).tolist() == [True, False, True]
    assert aclnn.All(x, [1], False, np.empty(3, np.uint8)).tolist() == [0, 0, 1]
    f = np.array([np.nan, 0.0], np.float32)
    assert aclnn.Any(f, [], False, np.empty((), bool)) == True  # noqa: E712 (NaN is true)
    assert aclnn.All(np.empty((0,), np.float32), [0], False, np.empty((), bool)) == True  # noqa: E712
    assert aclnn.Any(np.empty((0,), np.float32), [0], False, np.empty((), bool)) == False  # noqa: E712
    err(161002, aclnn.Any, x, [1], False, np.empty(3, np.int32))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf"), float("-inf"), 0.0])
@pytest.mark.parametrize("dt", [F32, F16, BF16], ids=str)
def test_norms(runtime, p, dt):
    rng = np.random.default_rng(7)
    x = sample(dt, (6, 40), rng)
    want = torch.linalg.vector_norm(torch.from_numpy(f64(x)), ord=p, dim=1).numpy()
    got = aclnn.Norm(x, p, [1], False, np.empty(6, dt))
    tol = 1e-6 if dt == F32 else 2 ** -7
    assert np.allclose(f64(got), want, rtol=tol, atol=0)
    got = aclnn.LinalgVectorNorm(x, p, [1], False, ACL(np.float32), np.empty(6, np.float32))
    assert np.allclose(f64(got), want, rtol=1e-6)


@pytest.mark.parametrize("dt,odt", [(F32, F32), (F16, F16), (BF16, F32), (np.int32, np.int64), (bool, np.int64),
                                    (np.float32, np.int32)], ids=str)
def test_cumsum(runtime, dt, odt):
    rng = np.random.default_rng(8)
    x = sample(dt, (4, 50), rng)
    for dim in (0, 1, -1):
        got = aclnn.Cumsum(x, dim, ACL(odt), np.empty(x.shape, odt))
        src = x.astype(odt)  # the input is cast to out's dtype first
        want = np.cumsum(f64(src), axis=dim)
        if is_float(odt):
            assert np.allclose(f64(got), want, rtol=1e-6 if odt != F16 else 2 ** -10, atol=1e-6)
        else:
            assert np.array_equal(got, want.astype(odt))
    assert "must be" in err(161002, aclnn.Cumsum, x, 0, ACL(np.float64), np.empty(x.shape, np.float32))


@pytest.mark.parametrize("dt", [F32, F16, BF16, np.int32, np.int64, np.int8, np.uint8], ids=str)
@pytest.mark.parametrize("desc", [False, True])
def test_sort_argsort_topk(runtime, dt, desc):
    rng = np.random.default_rng(9)
    x = sample(dt, (5, 64), rng)
    x[0, :8] = x[0, 8:16]  # ties: stable order
    tx = torch.from_numpy(f64(x))
    for dim in (1, 0, -1):
        tv, ti = torch.sort(tx, dim=dim, descending=desc, stable=True)
        v, i = aclnn.Sort(x, True, dim, desc, np.empty(x.shape, dt), np.empty(x.shape, np.int64))
        assert np.array_equal(f64(v), tv.numpy()) and np.array_equal(i, ti.numpy()), dim
        assert np.array_equal(aclnn.Argsort(x, dim, desc, np.empty(x.shape, np.int64)), ti.numpy())
    k = 10
    tv, ti = torch.sort(tx, dim=1, descending=True, stable=True)
    v, i = aclnn.Topk(x, k, 1, True, True, np.empty((5, k), dt), np.empty((5, k), np.int64))
    assert np.array_equal(f64(v), tv[:, :k].numpy()) and np.array_equal(i, ti[:, :k].numpy())
    v, i = aclnn.Topk(x, 0, 1, False, True, np.empty((5, 0), dt), np.empty((5, 0), np.int64))
    assert v.shape == (5, 0)


def test_sort_nan_and_errors(runtime):
    x = np.array([3.0, np.nan, -1.0, 2.0], np.float32)
    v, i = aclnn.Sort(x, False, 0, False, np.empty(4, np.float32), np.empty(4, np.int64))
    assert i.tolist() == [2, 3, 0, 1] and np.isnan(v[-1])
    v, i = aclnn.Sort(x, False, 0, True, np.empty(4, np.float32), np.empty(4, np.int64))
    assert i.tolist() == [1, 0, 3, 2]
    assert "k must be" in err(161002, aclnn.Topk, x, 5, 0, True, True, np.empty(5, np.float32), np.empty(5, np.int64))
    err(161002, aclnn.Argsort, x, 0, False, np.empty(4, np.int32))  # indices must be INT64
    err(161002, aclnn.Argsort, x, 1, False, np.empty(4, np.int64))  # dim out of range
    err(161001, aclnn.Sort, x, False, 0, False, None, np.empty(4, np.int64))


def test_reduce_null_and_dtype_errors(runtime):
    x = np.ones((2, 3), np.float32)
    err(161001, aclnn.ReduceSum, None, [0], False, ACL(F32), np.empty(3, np.float32))
    err(161001, aclnn.ReduceSum, x, None, False, ACL(F32), np.empty(3, np.float32))
    err(161002, aclnn.ArgMax, np.ones(3, bool), 0, False, np.empty((), np.int64))
    err(161002, aclnn.MaxDim, np.ones(3, np.int32), 0, False, np.empty((), np.int32), np.empty((), np.int64))
