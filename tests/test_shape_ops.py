"""The shape family (permute, slice, expand, flip, repeat, roll, tril/triu,
reflection padding, arange) through their C entry points, against numpy:
every dtype moved bit for bit (NaN payloads included), strided and
transposed inputs and outputs, negative dims, 0-size tensors, error codes."""
import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import aclnn
from tiers import bits

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.float32, np.float16, BF16, np.float64, np.int8, np.uint8, np.int16, np.int32, np.int64, bool]


def sample(dt, shape, rng):
    dt = np.dtype(dt)
    if dt == np.dtype(bool):
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0, 100, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def err(code, fn, *args):
    with pytest.raises(pyaclnn.AclError) as e:
        fn(*args)
    assert e.value.status == code, str(e.value)
    return str(e.value)


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_permute_slice_expand_flip(runtime, dt):
    rng = np.random.default_rng(1)
    x = sample(dt, (3, 4, 5), rng)
    got = aclnn.Permute(x, [2, 0, -2], np.empty((5, 3, 4), dt))
    assert bits(got) == bits(np.transpose(x, (2, 0, 1)))
    if np.dtype(dt) in (np.dtype(np.float64), np.dtype(np.int16)):  # not in Slice's A2 list
        assert "dtype must be" in err(161002, aclnn.Slice, x, 2, 1, -1, 2, np.empty((3, 4, 2), dt))
    else:
        got = aclnn.Slice(x, 2, 1, -1, 2, np.empty((3, 4, 2), dt))
        assert bits(got) == bits(x[:, :, 1:-1:2])
        got = aclnn.Slice(x, -3, -100, 100, 1, np.empty((3, 4, 5), dt))  # clamped
        assert bits(got) == bits(x)
    row = x[:1, :1, :]
    got = aclnn.Expand(row, [2, 3, 4, 5], np.empty((2, 3, 4, 5), dt))
    assert bits(got) == bits(np.broadcast_to(row, (2, 3, 4, 5)))
    got = aclnn.Flip(x, [0, -1], np.empty_like(x))
    assert bits(got) == bits(x[::-1, :, ::-1])
    t = np.ascontiguousarray(x).transpose(1, 0, 2)  # a strided input
    assert bits(aclnn.Flip(t, [1], np.empty(t.shape, dt))) == bits(t[:, ::-1])


def test_bits_move_unchanged(runtime):
    x = np.array([0x7c01, 0xfe00, 0x0001, 0x8000], np.uint16).view(np.float16)  # signaling NaN, -NaN, subnormal, -0
    assert bits(aclnn.Permute(x, [0], np.empty_like(x))) == bits(x)
    assert bits(aclnn.Flip(x, [0], np.empty_like(x))) == bits(x[::-1])


@pytest.mark.parametrize("dt", [np.float32, np.int64, bool, BF16], ids=str)
def test_repeat(runtime, dt):
    rng = np.random.default_rng(2)
    x = sample(dt, (2, 3), rng)
    for reps in ([2, 3], [1, 1], [3, 1, 2], [2, 1, 4, 2], [1, 0]):
        want = np.tile(x, reps)
        got = aclnn.Repeat(x, reps, np.empty(want.shape, dt))
        assert bits(got) == bits(want), reps
    assert "at least as many" in err(161002, aclnn.Repeat, x, [2], np.empty((4, 3), dt))
    assert "negative" in err(161002, aclnn.Repeat, x, [1, -1], np.empty((2, 3), dt))


@pytest.mark.parametrize("dt", [np.float32, np.int8, bool], ids=str)
def test_roll(runtime, dt):
    rng = np.random.default_rng(3)
    x = sample(dt, (4, 5, 6), rng)
    for shifts, dims in (([1], [0]), ([-2, 7], [1, 2]), ([3, 3], [0, 0]), ([13], [])):
        want = np.roll(x, shifts, axis=tuple(dims) if dims else None)
        got = aclnn.Roll(x, shifts, dims, np.empty_like(x))
        assert bits(got) == bits(want), (shifts, dims)
    assert "must match" in err(161002, aclnn.Roll, x, [1, 2], [0], np.empty_like(x))


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32, bool], ids=str)
@pytest.mark.parametrize("diag", [0, 1, -2, 10])
def test_tril_triu(runtime, dt, diag):
    rng = np.random.default_rng(4)
    x = sample(dt, (2, 5, 7), rng)
    assert bits(aclnn.Tril(x, diag, np.empty_like(x))) == bits(np.tril(x, diag))
    assert bits(aclnn.Triu(x, diag, np.empty_like(x))) == bits(np.triu(x, diag))
    y = x.copy()
    aclnn.InplaceTriu(y, diag)
    assert bits(y) == bits(np.triu(x, diag))
    y = x.copy()
    aclnn.InplaceTril(y, diag)
    assert bits(y) == bits(np.tril(x, diag))
    t = x.transpose(0, 2, 1)  # a transposed view
    assert bits(aclnn.Tril(t, diag, np.empty(t.shape, dt))) == bits(np.tril(t, diag))
    err(161002, aclnn.Tril, np.ones(3, dt), 0, np.empty(3, dt))


@pytest.mark.parametrize("dt", [np.float32, np.int64, BF16], ids=str)
def test_reflection_pad1d(runtime, dt):
    rng = np.random.default_rng(5)
    x = sample(dt, (2, 3, 6), rng)
    for l, r in ((2, 3), (0, 5), (5, 0), (0, 0)):
        want = np.pad(x, ((0, 0), (0, 0), (l, r)), mode="reflect")
        got = aclnn.ReflectionPad1d(x, [l, r], np.empty(want.shape, dt))
        assert bits(got) == bits(want), (l, r)
    assert "padding" in err(161002, aclnn.ReflectionPad1d, x, [6, 0], np.empty((2, 3, 12), dt))
    err(161002, aclnn.ReflectionPad1d, x[0, 0], [1, 1], np.empty(8, dt))  # 1-D


def test_arange(runtime):
    assert aclnn.Arange(0, 5, 1, np.empty(5, np.int64)).tolist() == [0, 1, 2, 3, 4]
    got = aclnn.Arange(1.0, 2.0, 0.25, np.empty(4, np.float32))
    assert got.tolist() == [1.0, 1.25, 1.5, 1.75]
    assert aclnn.Arange(10, 0, -3, np.empty(4, np.int32)).tolist() == [10, 7, 4, 1]
    assert "step" in err(161002, aclnn.Arange, 0, 5, 0, np.empty(5, np.int64))
    assert "sign" in err(161002, aclnn.Arange, 0, 5, -1, np.empty(5, np.int64))


def test_shape_errors_and_empty(runtime):
    x = np.ones((2, 3), np.float32)
    err(161002, aclnn.Permute, x, [0, 0], np.empty((2, 3), np.float32))
    err(161002, aclnn.Permute, x, [1, 0], np.empty((2, 3), np.float32))  # out shape
    err(161002, aclnn.Permute, x, [1, 0], np.empty((3, 2), np.float64))  # out dtype
    err(161002, aclnn.Slice, x, 0, 0, 2, 0, np.empty((2, 3), np.float32))  # step 0
    err(161001, aclnn.Permute, None, [1, 0], np.empty((3, 2), np.float32))
    e = np.empty((0, 3), np.float32)
    assert aclnn.Permute(e, [1, 0], np.empty((3, 0), np.float32)).shape == (3, 0)
