"""The index family (native/ops/index/) through the C entry points
(pyaclnn.aclnn), against numpy / torch CPU: GatherV2, Gather, IndexSelect,
(Inplace)IndexCopy, (Inplace)IndexFillTensor, (Inplace)Scatter, ScatterAdd,
IndexPutImpl, Embedding, EmbeddingDenseBackward, the four RepeatInterleave
forms and UpsampleNearest2d. Every listed dtype, strided inputs and outputs,
negative dims and indices, 0-size and 0-d tensors, the vendor's shape and dtype
checks (161001 / 161002), out-of-range indices failing the launch (361001)
with nothing written, the ggml-cann call patterns, and results that do not
depend on the thread count."""
import warnings

import ml_dtypes
import numpy as np
import pytest
import torch

import pyaclnn
from pyaclnn import aclnn, optable
from pyaclnn._errors import check
from pyaclnn._ffi import ffi, lib
from pyaclnn.ops import _private_stream
from pyaclnn.tensor import Tensor

BF16 = np.dtype(ml_dtypes.bfloat16)
NP = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": BF16, "f64": np.dtype(np.float64),
      "s8": np.dtype(np.int8), "u8": np.dtype(np.uint8), "s16": np.dtype(np.int16), "u16": np.dtype(np.uint16),
      "s32": np.dtype(np.int32), "u32": np.dtype(np.uint32), "s64": np.dtype(np.int64), "u64": np.dtype(np.uint64),
      "bool": np.dtype(bool)}
OPS = optable.by_name()
MINE = ["GatherV2", "Gather", "IndexSelect", "InplaceIndexCopy", "IndexCopy", "InplaceIndexFillTensor",
        "IndexFillTensor", "Scatter", "InplaceScatter", "ScatterAdd", "IndexPutImpl", "Embedding",
        "EmbeddingDenseBackward", "RepeatInterleave", "RepeatInterleaveWithDim", "RepeatInterleaveInt",
        "RepeatInterleaveIntWithDim", "UpsampleNearest2d"]
NULLPTR, INVALID, RUNTIME = 161001, 161002, 361001
S64 = np.int64


def dtypes_of(name, param=None):
    o = OPS[name]
    lst = o.dtypes.get(param) if param else o.ins
    return [NP[d] for d in lst.split() if d in NP]


def sample(dt, shape, rng):
    if dt == np.dtype(bool):
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -100, 100, shape).astype(dt)
    return rng.uniform(-10, 10, shape).astype(dt)


def strided(a):
    """The same values as a non-contiguous view (every other element of a bigger buffer)."""
    if a.ndim == 0 or a.size == 0:
        return a
    base = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), a.dtype)
    v = base[..., ::2]
    v[...] = a
    return v


def transposed(a):
    """The same values through a transposed view (2-D and up)."""
    if a.ndim < 2:
        return strided(a)
    return np.ascontiguousarray(np.swapaxes(a, 0, 1)).swapaxes(0, 1)


def same(got, ref):
    got, ref = np.ascontiguousarray(got), np.ascontiguousarray(ref)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert got.tobytes() == ref.tobytes(), (got, ref)


def tt(a):
    """numpy -> torch (bf16 by its bits)."""
    a = np.ascontiguousarray(a)
    if a.dtype == BF16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def tn(t):
    """torch -> numpy (bf16 by its bits)."""
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(BF16)
    return t.numpy()


def status(fn, *args):
    with pytest.raises(pyaclnn.AclError) as e:
        fn(*args)
    return e.value.status


def launch_fails(fn, *args, untouched=()):
    """fn fails its launch with 361001 and leaves the given arrays as they were."""
    before = [np.array(a, copy=True) for a in untouched]
    with pytest.raises(pyaclnn.AclError) as e:
        fn(*args)
    assert e.value.status == RUNTIME, e.value
    for a, b in zip(untouched, before):
        same(a, b)
    return e.value


def sentinel(shape, dt):
    a = np.empty(shape, dt)
    a.view(np.uint8)[...] = 0x5A
    return a


# ---- GatherV2 / IndexSelect / Embedding -------------------------------------------

@pytest.mark.parametrize("dt", dtypes_of("GatherV2"), ids=str)
@pytest.mark.parametrize("idt", [np.int32, np.int64], ids=["s32", "s64"])
def test_gather_v2_every_dtype(runtime, dt, idt):
    rng = np.random.default_rng(1)
    x = sample(dt, (4, 5, 3), rng)
    for dim in (0, 1, -1):
        size = x.shape[dim]
        idx = rng.integers(-size, size, (2, 3)).astype(idt)  # negatives wrap
        ref = np.take(x, np.where(idx < 0, idx + size, idx), axis=dim)
        same(aclnn.GatherV2(transposed(x), dim, strided(idx), sentinel(ref.shape, dt)), ref)


def test_gather_v2_shapes(runtime):
    rng = np.random.default_rng(2)
    x = sample(NP["f32"], (4, 5), rng)
    # a 0-d index keeps the dim as 1
    same(aclnn.GatherV2(x, 1, np.array(3, S64), np.zeros((4, 1), np.float32)), x[:, 3:4])
    # a 0-d self gives a 0-d out
    s = np.array(2.5, np.float32)
    same(aclnn.GatherV2(s, 0, np.array([0, -1, 0], S64), np.zeros((), np.float32)), s)
    # empty index or self: nothing written
    out = sentinel((0, 5), np.float32)
    aclnn.GatherV2(x, 0, np.zeros((0,), S64), out)
    out = sentinel((2, 0), np.float32)
    keep = out.copy()
    aclnn.GatherV2(np.zeros((2, 0), np.float32), 1, np.zeros((0,), S64), out)
    same(out, keep)
    # strided out
    base = sentinel((3, 10), np.float32)
    aclnn.GatherV2(x, 0, np.array([3, 0, 1], np.int32), base[:, 2:7])
    same(base[:, 2:7], x[[3, 0, 1]])


def test_gather_v2_ggml_get_rows(runtime):
    """ggml GET_ROWS: per (i2, i3) slice, a 2-D view of the weight with a row
    stride above ne0, an int32 or int64 index, a strided dst."""
    rng = np.random.default_rng(3)
    for wdt in (np.float32, np.float16, BF16):
        buf = sample(np.dtype(wdt), (2, 3, 7, 40), rng)  # ne3, ne2, ne1, padded ne0
        w = buf[..., :32]                                   # ne0 = 32, row stride 40
        for idt in (np.int32, np.int64):
            idx = rng.integers(0, 7, (2, 3, 5)).astype(idt)
            dst = sentinel((2, 3, 5, 48), np.dtype(wdt))
            for i3 in range(2):
                for i2 in range(3):
                    aclnn.GatherV2(w[i3, i2], 0, idx[i3, i2], dst[i3, i2, :, :32])
            ref = np.stack([np.stack([w[i3, i2][idx[i3, i2]] for i2 in range(3)]) for i3 in range(2)])
            same(dst[..., :32], ref)


def test_gather_v2_errors(runtime):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.array([0, 2], S64)
    assert status(aclnn.GatherV2, None, 0, i, np.zeros((2, 4), np.float32)) == NULLPTR
    assert status(aclnn.GatherV2, x, 0, None, np.zeros((2, 4), np.float32)) == NULLPTR
    assert status(aclnn.GatherV2, x, 0, i, None) == NULLPTR
    assert status(aclnn.GatherV2, x, 0, i, np.zeros((2, 4), np.float16)) == INVALID  # out dtype != self
    assert status(aclnn.GatherV2, x, 0, i.astype(np.int16), np.zeros((2, 4), np.float32)) == INVALID
    assert status(aclnn.GatherV2, x, 2, i, np.zeros((2, 4), np.float32)) == INVALID
    assert status(aclnn.GatherV2, x, -3, i, np.zeros((2, 4), np.float32)) == INVALID
    assert status(aclnn.GatherV2, x, 0, i, np.zeros((4, 2), np.float32)) == INVALID
    assert status(aclnn.GatherV2, x.astype(np.uint16), 0, i, np.zeros((2, 4), np.uint16)) == INVALID
    out = np.full((3, 4), 7, np.float32)
    e = launch_fails(aclnn.GatherV2, x, 0, np.array([0, 1, 3], S64), out, untouched=[out])
    assert "index value 3" in str(e)
    launch_fails(aclnn.GatherV2, x, 0, np.array([0, -4, 1], S64), out, untouched=[out])


@pytest.mark.parametrize("dt", dtypes_of("IndexSelect"), ids=str)
def test_index_select_every_dtype(runtime, dt):
    rng = np.random.default_rng(4)
    x = sample(dt, (5, 4, 3), rng)
    for dim in (0, 1, 2, -2):
        idx = rng.integers(0, x.shape[dim], 6).astype(np.int32 if dim % 2 else np.int64)
        ref = np.take(x, idx, axis=dim)
        same(aclnn.IndexSelect(transposed(x), dim, strided(idx), sentinel(ref.shape, dt)), ref)
    if dt not in (NP["u16"], NP["u32"], NP["u64"]):
        ref = tn(torch.index_select(tt(x), 1, torch.tensor([3, 3, 0])))
        same(aclnn.IndexSelect(x, 1, np.array([3, 3, 0], S64), sentinel(ref.shape, dt)), ref)


def test_index_select_shapes_and_errors(runtime):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    same(aclnn.IndexSelect(x, 0, np.array(2, S64), np.zeros((1, 5), np.float32)), x[2:3])
    s = np.array(3.0, np.float32)
    same(aclnn.IndexSelect(s, 0, np.array([0], S64), np.zeros((), np.float32)), s)
    assert status(aclnn.IndexSelect, s, 0, np.array([0], S64), np.zeros((1,), np.float32)) == INVALID
    assert status(aclnn.IndexSelect, x, 0, np.zeros((2, 1), S64), np.zeros((2, 5), np.float32)) == INVALID
    assert status(aclnn.IndexSelect, x, 0, np.array([1], S64), np.zeros((2, 5), np.float32)) == INVALID
    assert status(aclnn.IndexSelect, x, 2, np.array([1], S64), np.zeros((4, 1), np.float32)) == INVALID
    assert status(aclnn.IndexSelect, x, 0, np.array([1], S64), np.zeros((1, 5), np.int32)) == INVALID
    # empty index: nothing checked or written
    aclnn.IndexSelect(x, 0, np.zeros((0,), S64), np.zeros((7, 7), np.float32))
    out = np.full((2, 5), 9, np.float32)
    launch_fails(aclnn.IndexSelect, x, 0, np.array([1, -1], S64), out, untouched=[out])  # no negatives
    launch_fails(aclnn.IndexSelect, x, 1, np.array([5], np.int32), np.zeros((4, 1), np.float32))


def test_index_select_ggml_mul_mat_id(runtime):
    """MUL_MAT_ID: IndexSelect of expert weights (3-D) along dim 0."""
    rng = np.random.default_rng(5)
    w = sample(NP["f16"], (6, 8, 16), rng)
    ids = np.array([5, 0, 5, 2], np.int32)
    same(aclnn.IndexSelect(w, 0, ids, np.empty((4, 8, 16), np.float16)), w[ids])


@pytest.mark.parametrize("dt", dtypes_of("Embedding"), ids=str)
def test_embedding_every_dtype(runtime, dt):
    rng = np.random.default_rng(6)
    w = sample(dt, (7, 5), rng)
    idx = rng.integers(0, 7, (3, 4)).astype(np.int32)
    same(aclnn.Embedding(transposed(w), idx, sentinel((3, 4, 5), dt)), w[idx])
    same(aclnn.Embedding(w, np.array(6, S64), np.zeros((5,), dt)), w[6])
    if dt == NP["f32"]:
        ref = tn(torch.nn.functional.embedding(tt(idx).long(), tt(w)))
        same(aclnn.Embedding(w, idx.astype(S64), np.zeros((3, 4, 5), dt)), ref)


def test_embedding_errors(runtime):
    w = np.arange(15, dtype=np.float32).reshape(5, 3)
    i = np.array([1, 4], S64)
    assert status(aclnn.Embedding, w, i, np.zeros((2, 3), np.float16)) == INVALID
    assert status(aclnn.Embedding, w, i, np.zeros((2,), np.float32)) == INVALID
    assert status(aclnn.Embedding, w, i, np.zeros((3, 3), np.float32)) == INVALID
    assert status(aclnn.Embedding, w, i, np.zeros((2, 4), np.float32)) == INVALID
    assert status(aclnn.Embedding, w.reshape(5, 3, 1), i, np.zeros((2, 3), np.float32)) == INVALID
    assert status(aclnn.Embedding, w, i.astype(np.float32), np.zeros((2, 3), np.float32)) == INVALID
    out = np.zeros((2, 3), np.float32)
    launch_fails(aclnn.Embedding, w, np.array([0, 5], S64), out, untouched=[out])
    launch_fails(aclnn.Embedding, w, np.array([-1, 0], S64), out, untouched=[out])
    aclnn.Embedding(np.zeros((0, 3), np.float32), np.zeros((2,), S64), out)  # empty weight: nothing


# ---- Gather (torch.gather) -------------------------------------------------------

@pytest.mark.parametrize("dt", dtypes_of("Gather"), ids=str)
def test_gather_every_dtype(runtime, dt):
    rng = np.random.default_rng(7)
    x = sample(dt, (4, 5, 3), rng)
    for dim in (0, 1, -1):
        shape = [3, 4, 2]
        shape[dim] = 6
        idx = rng.integers(-x.shape[dim], x.shape[dim], shape)
        ref = _gather_ref(x, dim, idx)
        got = aclnn.Gather(transposed(x), dim, strided(idx.astype(np.int32)), sentinel(idx.shape, dt))
        same(got, ref)
    if dt in (NP["f32"], NP["s64"], NP["bool"]):
        idx = rng.integers(0, 5, (2, 5, 3))
        same(aclnn.Gather(x, 1, idx, np.zeros(idx.shape, dt)), tn(torch.gather(tt(x), 1, tt(idx))))


def _gather_ref(x, dim, idx):
    """out[p] = x[p with dim -> idx[p]] (idx may be smaller than x off dim)."""
    dim = dim % x.ndim
    out = np.empty(idx.shape, x.dtype)
    for p in np.ndindex(*idx.shape):
        q = list(p)
        q[dim] = idx[p] % x.shape[dim]
        out[p] = x[tuple(q)]
    return out


def test_gather_shapes_and_errors(runtime):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    i = np.array([[0, 2], [1, 0]], S64)
    s = np.array(5, np.int32)
    same(aclnn.Gather(s, 0, np.array(0, S64), np.zeros((), np.int32)), s)
    same(aclnn.Gather(s, -1, np.array([0, -1], S64), np.zeros((2,), np.int32)), np.array([5, 5], np.int32))
    assert status(aclnn.Gather, x, 0, np.array([0, 1], S64), np.zeros((2,), np.int32)) == INVALID  # ranks
    assert status(aclnn.Gather, x, 0, i, np.zeros((2, 3), np.int32)) == INVALID                    # out != index
    assert status(aclnn.Gather, x, 2, i, np.zeros((2, 2), np.int32)) == INVALID
    assert status(aclnn.Gather, x, 0, np.zeros((2, 5), S64), np.zeros((2, 5), np.int32)) == INVALID
    assert status(aclnn.Gather, x, 0, i, np.zeros((2, 2), np.int64)) == INVALID
    assert status(aclnn.Gather, np.zeros((0, 4), np.int32), 0, i, np.zeros((2, 2), np.int32)) == INVALID
    aclnn.Gather(x, 0, np.zeros((0, 2), S64), np.zeros((0, 2), np.int32))
    out = np.full((2, 2), 3, np.int32)
    launch_fails(aclnn.Gather, x, 1, np.array([[0, 4], [1, 0]], S64), out, untouched=[out])
    launch_fails(aclnn.Gather, x, 0, np.array([[0, -4], [1, 0]], S64), out, untouched=[out])


# ---- IndexCopy ---------------------------------------------------------------------

def _index_copy_ref(self, dim, idx, src):
    out = np.array(self, copy=True)
    dim = dim % max(out.ndim, 1)
    o = out.reshape(1) if out.ndim == 0 else out
    s = np.asarray(src).reshape([1] * o.ndim) if np.ndim(src) == 0 else src
    for j, t in enumerate(np.asarray(idx).reshape(-1)):  # in index order: the last one wins
        dst = [slice(None)] * o.ndim
        sl = [slice(None)] * o.ndim
        dst[dim], sl[dim] = t, j
        o[tuple(dst)] = s[tuple(sl)]
    return out


@pytest.mark.parametrize("dt", dtypes_of("IndexCopy"), ids=str)
def test_index_copy_every_dtype(runtime, dt):
    rng = np.random.default_rng(8)
    x = sample(dt, (5, 4, 3), rng)
    for dim in (0, 1, -1):
        n = 6
        shape = list(x.shape)
        shape[dim] = n
        src = sample(dt, shape, rng)
        idx = rng.integers(0, x.shape[dim], n).astype(np.int32 if dim else np.int64)  # with duplicates
        ref = _index_copy_ref(x, dim, idx, src)
        xin = transposed(x)
        keep = np.array(xin, copy=True)
        same(aclnn.IndexCopy(xin, dim, strided(idx), strided(src), sentinel(x.shape, dt)), ref)
        same(xin, keep)  # selfRef is only read
        y = np.array(x, copy=True)
        same(aclnn.InplaceIndexCopy(y, dim, idx, src), ref)
    if dt in (NP["f32"], NP["s64"]):
        idx = np.array([4, 0, 2], S64)
        src = sample(dt, (3, 4, 3), rng)
        ref = tn(torch.index_copy(tt(x), 0, tt(idx), tt(src)))
        same(aclnn.IndexCopy(x, 0, idx, src, np.empty_like(x)), ref)


def test_index_copy_ggml_set_rows(runtime):
    """SET_ROWS: InplaceIndexCopy(dim 0) per slice into a strided dst."""
    rng = np.random.default_rng(9)
    for dt in (np.float32, np.float16, BF16):
        dst = sample(np.dtype(dt), (2, 9, 40), rng)
        view = dst[:, :, :32]
        src = sample(np.dtype(dt), (2, 4, 32), rng)
        idx = np.array([[8, 1, 3, 0], [2, 2, 5, 7]], np.int64)
        ref = np.array(view, copy=True)
        for i in range(2):
            ref[i] = _index_copy_ref(ref[i], 0, idx[i], src[i])
        for i in range(2):
            aclnn.InplaceIndexCopy(view[i], 0, idx[i].astype(np.int32 if dt == np.float16 else np.int64), src[i])
        same(view, ref)


def test_index_copy_shapes_and_errors(runtime):
    x = np.zeros((4, 3), np.float32)
    src = np.ones((2, 3), np.float32)
    i = np.array([1, 3], S64)
    same(aclnn.IndexCopy(x, 0, i, src, np.empty_like(x)), _index_copy_ref(x, 0, i, src))
    # 0-d self / source
    same(aclnn.IndexCopy(np.array(1.0, np.float32), 0, np.array([0], S64), np.array(2.0, np.float32),
                         np.zeros((), np.float32)), np.array(2.0, np.float32))
    same(aclnn.IndexCopy(np.zeros(3, np.float32), 0, np.array([2], S64), np.array(5.0, np.float32),
                         np.zeros(3, np.float32)), np.array([0, 0, 5], np.float32))
    # empty index: nothing written, not even out (the vendor returns before its copy)
    out = sentinel((4, 3), np.float32)
    keep = out.copy()
    aclnn.IndexCopy(x, 0, np.zeros((0,), S64), np.zeros((0, 3), np.float32), out)
    same(out, keep)
    o = np.empty_like(x)
    assert status(aclnn.IndexCopy, x, 0, i, src.astype(np.float16), o) == INVALID
    assert status(aclnn.IndexCopy, x, 0, i, src, o.astype(np.float64)) == INVALID
    assert status(aclnn.IndexCopy, x, 0, i.reshape(2, 1), src, o) == INVALID
    assert status(aclnn.IndexCopy, x, 0, i, src, np.empty((3, 4), np.float32)) == INVALID
    assert status(aclnn.IndexCopy, x, 0, i, np.ones((2, 4), np.float32), o) == INVALID
    assert status(aclnn.IndexCopy, x, 0, np.array([1, 2, 3], S64), src, o) == INVALID
    assert status(aclnn.IndexCopy, x, 2, i, src, o) == INVALID
    assert status(aclnn.IndexCopy, x, 0, i, np.ones((2, 3, 1), np.float32), o) == INVALID
    assert status(aclnn.IndexCopy, x, 0, i, np.array(1.0, np.float32), o) == INVALID
    assert status(aclnn.IndexCopy, x, 0, i.astype(np.float32), src, o) == INVALID
    assert status(aclnn.IndexCopy, x, 0, None, src, o) == NULLPTR
    assert status(aclnn.InplaceIndexCopy, x.astype(np.uint32), 0, i, src.astype(np.uint32)) == INVALID
    out = np.full((4, 3), 7, np.float32)
    launch_fails(aclnn.IndexCopy, x + 1, 0, np.array([1, 4], S64), src, out, untouched=[out])
    y = np.full((4, 3), 7, np.float32)
    launch_fails(aclnn.InplaceIndexCopy, y, 0, np.array([-1, 0], S64), src, untouched=[y])


# ---- IndexFillTensor ----------------------------------------------------------------

@pytest.mark.parametrize("dt", dtypes_of("IndexFillTensor"), ids=str)
def test_index_fill_every_dtype(runtime, dt):
    rng = np.random.default_rng(10)
    x = sample(dt, (4, 5, 3), rng)
    for dim, index, value in ((0, [0, -1, 0], 2.5), (1, [4, 1], -3), (-1, [2], True)):
        ref = tn(torch.index_fill(tt(x), dim, torch.tensor(index), value))
        xin = transposed(x)
        same(aclnn.IndexFillTensor(xin, dim, index, value, sentinel(x.shape, dt)), ref)
        y = np.array(x, copy=True)
        same(aclnn.InplaceIndexFillTensor(y, dim, index, value), ref)


def test_index_fill_rules(runtime):
    x = np.zeros((2, 3), np.int64)
    # the value goes through fp32 (the vendor's ToFloat)
    got = aclnn.IndexFillTensor(x, 1, [1], 2 ** 40 + 1, np.empty_like(x))
    assert got[0, 1] == 2 ** 40 and got[0, 0] == 0
    # no index: out = self
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    same(aclnn.IndexFillTensor(x, 0, [], 1.0, np.empty_like(x)), x)
    same(aclnn.IndexFillTensor(np.array(4.0, np.float32), 0, [-1], 1.0, np.zeros((), np.float32)),
         np.array(1.0, np.float32))
    aclnn.IndexFillTensor(np.zeros((0, 3), np.float32), 5, [9], 1.0, np.zeros((2,), np.float32))  # empty: no checks
    out = np.full((4, 4), 3.0, np.float32)  # an empty self and no index: nothing written either
    same(aclnn.IndexFillTensor(np.zeros((0, 3), np.float32), 0, [], 1.0, out), np.full((4, 4), 3.0, np.float32))
    o = np.empty_like(x)
    assert status(aclnn.IndexFillTensor, x, 0, [2], 1.0, o) == INVALID       # index checked at plan time
    assert status(aclnn.IndexFillTensor, x, 0, [-3], 1.0, o) == INVALID
    assert status(aclnn.IndexFillTensor, x, 2, [0], 1.0, o) == INVALID
    assert status(aclnn.IndexFillTensor, x, 0, [0], 1.0, np.empty((3, 2), np.float32)) == INVALID
    assert status(aclnn.IndexFillTensor, x, 0, [0], 1.0, o.astype(np.float16)) == INVALID
    assert status(aclnn.IndexFillTensor, x.astype(np.int8), 0, [0], 1.0, o.astype(np.int8)) == INVALID
    assert status(aclnn.IndexFillTensor, x, 0, None, 1.0, o) == NULLPTR
    assert status(aclnn.IndexFillTensor, x, 0, [0], None, o) == NULLPTR


# ---- Scatter / ScatterAdd -------------------------------------------------------------

def _scatter_ref(self, dim, idx, src, reduce):
    out = np.array(self, copy=True)
    dim = dim % out.ndim
    for p in np.ndindex(*idx.shape):  # index order along dim, per line
        q = list(p)
        q[dim] = idx[p]
        q = tuple(q)
        if reduce == 1:
            out[q] = (out[q] | src[p]) if out.dtype == bool else out[q] + src[p]
        elif reduce == 2:
            out[q] = (out[q] & src[p]) if out.dtype == bool else out[q] * src[p]
        else:
            out[q] = src[p]
    return out


def _scatter_torch(self, dim, idx, src, reduce):
    t = tt(self)
    if reduce == 0:
        return tn(t.scatter(dim, tt(idx).long(), tt(src)))
    with warnings.catch_warnings():  # torch.scatter(reduce=) is deprecated, still the reference
        warnings.simplefilter("ignore", UserWarning)
        return tn(t.scatter(dim, tt(idx).long(), tt(src), reduce="add" if reduce == 1 else "multiply"))


@pytest.mark.parametrize("dt", dtypes_of("Scatter"), ids=str)
def test_scatter_every_dtype(runtime, dt):
    rng = np.random.default_rng(11)
    x = sample(dt, (4, 5, 3), rng)
    src = sample(dt, (4, 6, 3), rng)
    for dim in (0, 1, -1):
        shape = [3, 4, 2]
        shape[dim] = 3
        idx = np.stack([rng.permutation(x.shape[dim])[:3] for _ in range(int(np.prod(shape)) // 3)])
        idx = np.moveaxis(idx.reshape([s for i, s in enumerate(shape) if i != dim % 3] + [3]), -1, dim % 3)
        for reduce in (0, 1, 2):
            ref = _scatter_torch(x, dim, idx, src, reduce) if dt not in (NP["bool"],) else \
                _scatter_ref(x, dim, idx, src, reduce)
            got = aclnn.Scatter(transposed(x), dim, strided(idx.astype(np.int32)), strided(src), reduce,
                                sentinel(x.shape, dt))
            same(got, ref)
            y = np.array(x, copy=True)
            same(aclnn.InplaceScatter(y, dim, idx, src, reduce), ref)


def test_scatter_duplicates_and_rules(runtime):
    x = np.zeros((3, 4), np.float32)
    src = np.arange(20, dtype=np.float32).reshape(5, 4)
    idx = np.array([[0, 1, 2, 0], [0, 1, 2, 0], [2, 2, 2, 2]], S64)
    for reduce in (0, 1, 2, 7):  # 7: outside 0..5, the vendor's "none"
        same(aclnn.Scatter(x + 1, 0, idx, src, reduce, np.empty_like(x)),
             _scatter_ref(x + 1, 0, idx, src, reduce if reduce < 3 else 0))
    o = np.empty_like(x)
    for reduce in (3, 4, 5):
        assert status(aclnn.Scatter, x, 0, idx, src, reduce, o) == INVALID
    # no index element: out = self
    same(aclnn.Scatter(x + 2, 0, np.zeros((0, 4), S64), src, 0, np.empty_like(x)), x + 2)
    # 0-d
    same(aclnn.Scatter(np.array(1.0, np.float32), 0, np.array(0, S64), np.array(4.0, np.float32), 1,
                       np.zeros((), np.float32)), np.array(5.0, np.float32))
    assert status(aclnn.Scatter, x, 0, idx[0], src, 0, o) == INVALID                     # ranks
    assert status(aclnn.Scatter, x, 0, np.zeros((6, 4), S64), src, 0, o) == INVALID     # index > src
    assert status(aclnn.Scatter, x, 0, np.zeros((2, 5), S64), np.zeros((2, 5), np.float32), 0, o) == INVALID
    assert status(aclnn.Scatter, x, 2, idx, src, 0, o) == INVALID
    assert status(aclnn.Scatter, x, 0, idx, src.astype(np.float16), 0, o) == INVALID
    assert status(aclnn.Scatter, x, 0, idx, src, 0, o.astype(np.float64)) == INVALID
    assert status(aclnn.Scatter, x, 0, idx, src, 0, np.empty((4, 3), np.float32)) == INVALID
    assert status(aclnn.Scatter, x, 0, idx.astype(np.float32), src, 0, o) == INVALID
    out = np.full((3, 4), 9, np.float32)
    launch_fails(aclnn.Scatter, x, 0, np.array([[0, 3]], S64), src, 0, out, untouched=[out])
    y = np.full((3, 4), 9, np.float32)
    launch_fails(aclnn.InplaceScatter, y, 1, np.array([[0, -1]], S64), src, 1, untouched=[y])
    launch_fails(aclnn.ScatterAdd, x, 1, np.array([[0, 4]], S64), src, out, untouched=[out])


@pytest.mark.parametrize("dt", dtypes_of("ScatterAdd"), ids=str)
def test_scatter_add_every_dtype(runtime, dt):
    rng = np.random.default_rng(12)
    x = sample(dt, (4, 5), rng)
    src = sample(dt, (6, 5), rng)
    for dim in (0, -1):
        idx = rng.integers(0, x.shape[dim], (6, 4) if dim == 0 else (3, 5))  # duplicates accumulate
        if dt == NP["bool"]:
            ref = _scatter_ref(x, dim, idx, src, 1)
        else:
            ref = tn(torch.scatter_add(tt(x), dim, tt(idx), tt(src)))
        same(aclnn.ScatterAdd(transposed(x), dim, strided(idx), strided(src), sentinel(x.shape, dt)), ref)
    assert status(aclnn.ScatterAdd, x, 0, idx, src, np.empty((5, 4), dt)) == INVALID


# ---- IndexPutImpl -------------------------------------------------------------------

def _put_torch(x, indices, values, acc):
    """torch's index_put_ with the vendor's rule: an empty entry is a whole dim."""
    t = tt(x)
    idx = tuple(slice(None) if a.size == 0 else (tt(a) if a.dtype == bool else tt(a).long()) for a in indices)
    t[idx] = t[idx] + tt(values) if acc else tt(values)  # index_put_ for the plain form
    return t


@pytest.mark.parametrize("dt", dtypes_of("IndexPutImpl"), ids=str)
def test_index_put_every_dtype(runtime, dt):
    rng = np.random.default_rng(13)
    x = sample(dt, (4, 5, 3), rng)
    i0 = np.array([3, -1, 0], np.int64)
    i1 = np.array([[1], [4]], np.int32)
    v = sample(dt, (2, 3, 3), rng)
    ref = tn(tt(x).index_put_((tt(i0).long(), tt(i1).long()), tt(v)))  # i0, i1 broadcast to [2, 3]
    y = transposed(x)
    same(aclnn.IndexPutImpl(y, [i0, strided(i1.reshape(2, 1))], strided(v), False, False), ref)
    # accumulate with a duplicate (distinct positions here: the order does not matter)
    if dt != NP["bool"]:
        j = np.array([2, 0, 2], np.int64)
        v2 = sample(dt, (3, 5, 3), rng)
        ref = tn(tt(x).index_put_((tt(j),), tt(v2), accumulate=True))
        y = np.array(x, copy=True)
        got = aclnn.IndexPutImpl(y, [j], v2, True, False)
        if dt in (NP["f16"], BF16):  # fp32 sums, rounded once
            exp = x.astype(np.float32)
            np.add.at(exp, j, v2.astype(np.float32))
            same(got, exp.astype(dt))
        else:
            same(got, ref)


def test_index_put_forms(runtime):
    rng = np.random.default_rng(14)
    x = rng.uniform(-1, 1, (4, 5, 6)).astype(np.float32)
    e = np.zeros((0,), np.int64)
    cases = [
        ([e, np.array([1, 3], S64)], rng.uniform(size=(4, 2, 6)).astype(np.float32)),   # [:, idx]
        ([np.array([0, 2], S64), e, np.array([5, 1], S64)], np.float32(7.0) * np.ones((2, 5), np.float32)),  # apart
        ([np.array([[0], [3]], S64), np.array([1, 2, 4], S64)], np.ones((6,), np.float32)),  # broadcast values
        ([x[:, :, 0] > 0], rng.uniform(size=(6,)).astype(np.float32)),                  # 2-D mask
        ([e, x[0, :, 0] > 0], np.float32(-2.0) * np.ones((1,), np.float32)),            # mask after a slice
    ]
    for indices, values in cases:
        ref = tn(_put_torch(x, indices, values, False))
        y = np.array(x, copy=True)
        same(aclnn.IndexPutImpl(y, indices, values, False, False), ref)
    # last write wins in index order; accumulate sums in index order
    y = np.zeros(4, np.float32)
    same(aclnn.IndexPutImpl(y, [np.array([1, 1, 1], S64)], np.array([1, 2, 3], np.float32), False, False),
         np.array([0, 3, 0, 0], np.float32))
    y = np.zeros(4, np.int8)
    same(aclnn.IndexPutImpl(y, [np.array([1, 1, -4], S64)], np.array([100, 100, 5], np.int8), True, False),
         np.array([5, -56, 0, 0], np.int8))
    y = np.zeros(3, bool)
    same(aclnn.IndexPutImpl(y, [np.array([2, 2], S64)], np.array([True, False]), True, False),
         np.array([False, False, True]))
    # nothing to index / empty values: nothing written
    y = np.array(x, copy=True)
    aclnn.IndexPutImpl(y, [e], np.ones((1,), np.float32), False, False)
    aclnn.IndexPutImpl(y, [np.array([1], S64)], np.ones((0,), np.float32), False, False)
    same(y, x)


def test_index_put_errors(runtime):
    x = np.zeros((3, 4), np.float32)
    i = np.array([0, 2], S64)
    e2 = np.zeros((0,), S64)
    assert status(aclnn.IndexPutImpl, x, [i], np.ones(4, np.float16), False, False) == INVALID
    assert status(aclnn.IndexPutImpl, x, [i, i, i], np.ones(1, np.float32), False, False) == INVALID
    assert status(aclnn.IndexPutImpl, x, [np.ones((3, 3), bool)], np.ones(1, np.float32), False, False) == INVALID
    assert status(aclnn.IndexPutImpl, x, [i, np.array([0, 1, 2], S64)], np.ones(1, np.float32), False,
                  False) == INVALID
    assert status(aclnn.IndexPutImpl, x, [i], np.ones((3, 4), np.float32), False, False) == INVALID
    assert status(aclnn.IndexPutImpl, x, [i], np.ones((1, 2, 4), np.float32), False, False) == INVALID
    assert status(aclnn.IndexPutImpl, x, [i.astype(np.float32)], np.ones(4, np.float32), False, False) == INVALID
    assert status(aclnn.IndexPutImpl, x, None, np.ones(4, np.float32), False, False) == NULLPTR
    assert status(aclnn.IndexPutImpl, x, [e2, np.ones((4, 1), bool)], np.ones(1, np.float32), False,
                  False) == INVALID  # the mask needs more dims than remain
    assert status(aclnn.IndexPutImpl, x, [np.array(True)], np.ones(1, np.float32), False, False) == INVALID
    y = np.full((3, 4), 5, np.float32)
    launch_fails(aclnn.IndexPutImpl, y, [np.array([0, 3], S64)], np.ones(4, np.float32), True, False,
                 untouched=[y])
    launch_fails(aclnn.IndexPutImpl, y, [i, np.array([0, -5], S64)], np.ones(1, np.float32), False, False,
                 untouched=[y])
    # with a mask, the values' fit is known at launch only
    launch_fails(aclnn.IndexPutImpl, y, [np.array([True, True, False])], np.ones((3, 4), np.float32), False, False,
                 untouched=[y])


# ---- EmbeddingDenseBackward -------------------------------------------------------------

@pytest.mark.parametrize("dt", dtypes_of("EmbeddingDenseBackward"), ids=str)
@pytest.mark.parametrize("idt", dtypes_of("EmbeddingDenseBackward", "indices"), ids=str)
def test_embedding_dense_backward(runtime, dt, idt):
    rng = np.random.default_rng(15)
    nw = 2 if idt == NP["bool"] else 7
    grad = rng.uniform(-1, 1, (3, 4, 5)).astype(dt)
    ind = rng.integers(0, nw, (3, 4))
    for pad, scale in ((2 ** 64 - 1, False), (1, False), (3, True)):
        tpad = -1 if pad >= nw else pad
        ref = torch.ops.aten.embedding_dense_backward(tt(grad).float(), tt(ind).long(), nw, tpad, scale).numpy()
        got = aclnn.EmbeddingDenseBackward(strided(grad), strided(ind.astype(idt)), nw, pad, scale,
                                           sentinel((nw, 5), dt))
        tol = 1e-5 if dt == NP["f32"] else 1e-2
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(dt).astype(np.float64), rtol=tol, atol=tol)


def test_embedding_dense_backward_rules(runtime):
    g = np.ones((2, 3), np.float32)
    ind = np.array([1.9, 0.2], np.float32)  # float indices truncate
    same(aclnn.EmbeddingDenseBackward(g, ind, 3, 2 ** 64 - 1, False, np.zeros((3, 3), np.float16)),
         np.array([[1, 1, 1], [1, 1, 1], [0, 0, 0]], np.float16))
    out = np.full((3, 3), 7, np.float32)  # empty indices: zeros
    same(aclnn.EmbeddingDenseBackward(np.zeros((0, 3), np.float32), np.zeros(0, S64), 3, 0, False, out),
         np.zeros((3, 3), np.float32))
    o = np.zeros((3, 3), np.float32)
    assert status(aclnn.EmbeddingDenseBackward, g, np.array([0, 1, 2], S64), 3, 0, False, o) == INVALID
    assert status(aclnn.EmbeddingDenseBackward, g, ind, 4, 0, False, o) == INVALID
    assert status(aclnn.EmbeddingDenseBackward, g, ind, 3, 0, False, np.zeros((3, 2), np.float32)) == INVALID
    assert status(aclnn.EmbeddingDenseBackward, g.astype(np.float64), ind, 3, 0, False, o) == INVALID
    assert status(aclnn.EmbeddingDenseBackward, np.array(1.0, np.float32), ind[:1], 3, 0, False, o) == INVALID
    o = np.full((3, 3), 4, np.float32)
    launch_fails(aclnn.EmbeddingDenseBackward, g, np.array([0, 3], S64), 3, 0, False, o, untouched=[o])
    launch_fails(aclnn.EmbeddingDenseBackward, g, np.array([-1, 0], np.int32), 3, 0, False, o, untouched=[o])


# ---- RepeatInterleave -----------------------------------------------------------------

@pytest.mark.parametrize("dt", dtypes_of("RepeatInterleaveIntWithDim"), ids=str)
def test_repeat_interleave_every_dtype(runtime, dt):
    rng = np.random.default_rng(16)
    x = sample(dt, (3, 4), rng)
    tx = tt(x)
    for dim in (0, 1, -1):
        ref = tn(torch.repeat_interleave(tx, 3, dim=dim))
        same(aclnn.RepeatInterleaveIntWithDim(transposed(x), 3, dim, ref.shape[dim], sentinel(ref.shape, dt)), ref)
        reps = rng.integers(0, 4, x.shape[dim])
        ref = tn(torch.repeat_interleave(tx, tt(reps), dim=dim))
        got = aclnn.RepeatInterleaveWithDim(transposed(x), strided(reps.astype(np.int32)), dim, ref.shape[dim],
                                            sentinel(ref.shape, dt))
        same(got, ref)
        ref = tn(torch.repeat_interleave(tx, torch.tensor([2]), dim=dim))
        same(aclnn.RepeatInterleaveWithDim(x, np.array([2], S64), dim, ref.shape[dim], sentinel(ref.shape, dt)),
             ref)
    ref = tn(torch.repeat_interleave(tx, 2))
    same(aclnn.RepeatInterleaveInt(transposed(x), 2, 24, sentinel((24,), dt)), ref)
    reps = rng.integers(0, 3, x.size)
    ref = tn(torch.repeat_interleave(tx, tt(reps)))
    same(aclnn.RepeatInterleave(transposed(x), reps, ref.size, sentinel(ref.shape, dt)), ref)
    ref = tn(torch.repeat_interleave(tx, torch.tensor(3)))
    same(aclnn.RepeatInterleave(x, np.array(3, S64), 36, sentinel((36,), dt)), ref)


def test_repeat_interleave_rules(runtime):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    # repeats 1: a copy (flattened without dim), outputSize unused
    same(aclnn.RepeatInterleaveInt(x, 1, 99, np.zeros(6, np.float32)), x.reshape(-1))
    same(aclnn.RepeatInterleaveIntWithDim(x, 1, 1, 99, np.zeros((2, 3), np.float32)), x)
    # the vendor's shortcut: one repeat with outputSize == numel copies self
    same(aclnn.RepeatInterleave(x, np.array([2], S64), 6, np.zeros(6, np.float32)), x.reshape(-1))
    # 0-d self flattened
    same(aclnn.RepeatInterleaveInt(np.array(4.0, np.float32), 3, 3, np.zeros(3, np.float32)),
         np.full(3, 4.0, np.float32))
    # empty self or outputSize 0: nothing
    aclnn.RepeatInterleaveIntWithDim(np.zeros((0, 3), np.float32), 2, 0, 0, np.zeros((0, 3), np.float32))
    aclnn.RepeatInterleaveIntWithDim(x, 0, 0, 0, np.zeros((0, 3), np.float32))
    aclnn.RepeatInterleave(np.zeros((0,), np.float32), np.zeros(0, S64), 0, np.zeros((0,), np.float32))
    o = np.zeros((4, 3), np.float32)
    assert status(aclnn.RepeatInterleaveIntWithDim, x, -1, 0, 4, o) == INVALID      # negative repeats
    assert status(aclnn.RepeatInterleaveIntWithDim, x, 2, 2, 4, o) == INVALID       # dim
    assert status(aclnn.RepeatInterleaveIntWithDim, x, 2, 0, 5, np.zeros((5, 3), np.float32)) == INVALID
    assert status(aclnn.RepeatInterleaveIntWithDim, x, 2, 0, 4, np.zeros((4, 2), np.float32)) == INVALID
    assert status(aclnn.RepeatInterleaveIntWithDim, np.array(1.0, np.float32), 2, 0, 2, np.zeros(2, np.float32)) \
        == INVALID
    assert status(aclnn.RepeatInterleaveIntWithDim, x, 2, 0, 4, o.astype(np.float16)) == INVALID
    assert status(aclnn.RepeatInterleaveIntWithDim, x.astype(np.float64), 2, 0, 4, o.astype(np.float64)) == INVALID
    assert status(aclnn.RepeatInterleaveInt, x, 2, 11, np.zeros(11, np.float32)) == INVALID
    assert status(aclnn.RepeatInterleaveWithDim, x, np.ones((2, 1), S64), 0, 4, o) == INVALID
    assert status(aclnn.RepeatInterleaveWithDim, x, np.ones(3, S64), 0, 4, o) == INVALID
    assert status(aclnn.RepeatInterleaveWithDim, x, np.zeros(0, S64), 0, 4, o) == INVALID
    assert status(aclnn.RepeatInterleaveWithDim, x, np.ones(2, np.float32), 0, 4, o) == INVALID
    assert status(aclnn.RepeatInterleave, x, np.ones(4, S64), 4, np.zeros(4, np.float32)) == INVALID
    assert status(aclnn.RepeatInterleave, x, np.ones(6, S64), 6, np.zeros(5, np.float32)) == INVALID
    assert status(aclnn.RepeatInterleave, x, None, 6, np.zeros(6, np.float32)) == NULLPTR
    assert status(aclnn.RepeatInterleave, np.zeros((0, 2), np.float32), np.ones(2, S64), 0,
                  np.zeros(0, np.float32)) == INVALID  # an empty self takes one repeat at most
    o = np.full((4, 3), 8, np.float32)  # the sum must be outputSize; no negative repeats
    launch_fails(aclnn.RepeatInterleaveWithDim, x, np.array([1, 2], S64), 0, 4, o, untouched=[o])
    launch_fails(aclnn.RepeatInterleaveWithDim, x, np.array([5, -1], S64), 0, 4, o, untouched=[o])
    launch_fails(aclnn.RepeatInterleave, x, np.array([1, 1, 1, 1, 1, 0], S64), 6, np.zeros(6, np.float32))


def test_repeat_interleave_ggml_rope(runtime):
    """ROPE: the sin / cos caches [1, 1, n, d/2] repeated 2x along dim 3."""
    rng = np.random.default_rng(17)
    src = rng.uniform(-1, 1, (1, 1, 5, 8)).astype(np.float32)
    got = aclnn.RepeatInterleaveIntWithDim(src, 2, 3, 16, np.empty((1, 1, 5, 16), np.float32))
    same(got, np.repeat(src, 2, axis=3))


# ---- UpsampleNearest2d ------------------------------------------------------------------

def upsample(x, size, out_shape, fmt=lib.ACL_FORMAT_NCHW, out_fmt=None, out_dtype=None):
    """aclnnUpsampleNearest2d on tensors with explicit formats (pyaclnn.aclnn makes ND tensors)."""
    out_fmt = fmt if out_fmt is None else out_fmt
    with Tensor(x, format=fmt) as tx, Tensor(np.zeros(out_shape, out_dtype or x.dtype), format=out_fmt) as to:
        arr = lib.aclCreateIntArray(ffi.new("int64_t[]", list(size)), len(size))
        try:
            ws = ffi.new("uint64_t *")
            ex = ffi.new("aclOpExecutor **")
            check(lib.aclnnUpsampleNearest2dGetWorkspaceSize(tx.handle, arr, to.handle, ws, ex),
                  "aclnnUpsampleNearest2dGetWorkspaceSize")
            assert ws[0] == 0
            stream = _private_stream()
            check(lib.aclnnUpsampleNearest2d(ffi.NULL, 0, ex[0], stream.handle), "aclnnUpsampleNearest2d")
            stream.synchronize()
        finally:
            lib.aclDestroyIntArray(arr)
        return to.numpy()


def _nearest_ref(x, oh, ow, hd=2, wd=3):
    def src(n_out, n_in):
        d = np.arange(n_out)
        s = np.floor(d.astype(np.float32) * np.float32(np.float32(n_in) / np.float32(n_out))).astype(np.int64)
        return np.minimum(s, n_in - 1)
    return np.take(np.take(x, src(oh, x.shape[hd]), axis=hd), src(ow, x.shape[wd]), axis=wd)


@pytest.mark.parametrize("dt", dtypes_of("UpsampleNearest2d"), ids=str)
def test_upsample_nearest2d_every_dtype(runtime, dt):
    rng = np.random.default_rng(18)
    x = sample(dt, (2, 3, 5, 7), rng)
    for oh, ow in ((10, 14), (3, 4), (7, 11), (5, 7), (1, 1), (13, 3)):
        ref = _nearest_ref(x, oh, ow)
        same(upsample(transposed(x), (oh, ow), (2, 3, oh, ow)), ref)
        if dt == NP["f32"]:
            t = torch.nn.functional.interpolate(tt(x), size=(oh, ow), mode="nearest")
            same(ref, tn(t))
        # NHWC: the view is [N, H, W, C]
        xh = np.ascontiguousarray(np.moveaxis(x, 1, 3))
        got = upsample(xh, (oh, ow), (2, oh, ow, 3), fmt=lib.ACL_FORMAT_NHWC)
        same(got, np.moveaxis(ref, 1, 3))


def test_upsample_nearest2d_ggml_upscale(runtime):
    """UPSCALE: NCHW tensors over ggml's [ne3, ne2, ne1, ne0], output size {ne1, ne0}."""
    x = np.arange(2 * 4 * 6, dtype=np.float32).reshape(1, 2, 4, 6)
    same(upsample(x, (8, 12), (1, 2, 8, 12)), x.repeat(2, axis=2).repeat(2, axis=3))


def test_upsample_nearest2d_errors(runtime):
    x = np.zeros((1, 2, 3, 4), np.float32)
    nchw, nd = lib.ACL_FORMAT_NCHW, lib.ACL_FORMAT_ND

    def st(*args, **kw):
        with pytest.raises(pyaclnn.AclError) as e:
            upsample(*args, **kw)
        return e.value.status

    assert st(x, (6, 8), (1, 2, 6, 8), fmt=nd) == INVALID                  # ND refused, as by CANN
    assert st(x, (6, 8), (1, 2, 6, 8), out_fmt=lib.ACL_FORMAT_NHWC) == INVALID
    assert st(x, (6,), (1, 2, 6, 8)) == INVALID
    assert st(x, (0, 8), (1, 2, 0, 8)) == INVALID
    assert st(x[0], (6, 8), (2, 6, 8)) == INVALID
    assert st(x, (6, 8), (1, 2, 6, 9)) == INVALID
    assert st(x, (6, 8), (1, 3, 6, 8)) == INVALID
    assert st(x, (6, 8), (1, 2, 6, 8), out_dtype=np.float16) == INVALID
    assert st(x.astype(np.int32), (6, 8), (1, 2, 6, 8)) == INVALID
    assert st(np.zeros((1, 0, 3, 4), np.float32), (6, 8), (1, 0, 6, 8)) == INVALID
    upsample(np.zeros((0, 2, 3, 4), np.float32), (6, 8), (0, 2, 6, 8), fmt=nchw)  # empty batch: nothing


def test_index_put_null_list_element(runtime):
    """A NULL tensor inside the indices list: 161001."""
    with Tensor(np.zeros((3, 4), np.float32)) as x, Tensor(np.array([0], S64)) as i, \
            Tensor(np.ones(4, np.float32)) as v:
        h = lib.aclCreateTensor(ffi.new("int64_t[]", [1]), 1, lib.ACL_INT64, ffi.new("int64_t[]", [1]), 0,
                                lib.ACL_FORMAT_ND, ffi.new("int64_t[]", [1]), 1, i.buffer.cdata)
        lst = lib.aclCreateTensorList(ffi.new("aclTensor *[]", [h, ffi.NULL]), 2)
        assert lst != ffi.NULL
        try:
            ws = ffi.new("uint64_t *")
            ex = ffi.new("aclOpExecutor **")
            rc = lib.aclnnIndexPutImplGetWorkspaceSize(x.handle, lst, v.handle, False, False, ws, ex)
            assert rc == NULLPTR
        finally:
            lib.aclDestroyTensorList(lst)


def test_index_copy_formats_must_match(runtime):
    """IndexCopy: selfRef and outRef of one storage format."""
    with Tensor(np.zeros((2, 3), np.float32), format=lib.ACL_FORMAT_NCHW) as x, Tensor(np.array([1], S64)) as i, \
            Tensor(np.ones((1, 3), np.float32)) as s, Tensor(np.zeros((2, 3), np.float32)) as o:
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        assert lib.aclnnIndexCopyGetWorkspaceSize(x.handle, 0, i.handle, s.handle, o.handle, ws, ex) == INVALID


# ---- the shared checks of every index op, from the table ---------------------------------

def _args(name):
    """A valid call of each operator (arrays for tensors, values for the rest)."""
    f = np.zeros((3, 4), np.float32)
    i = np.array([0, 2], S64)
    return {
        "GatherV2": [f, 0, i, np.zeros((2, 4), np.float32)],
        "Gather": [f, 0, np.zeros((2, 4), S64), np.zeros((2, 4), np.float32)],
        "IndexSelect": [f, 0, i, np.zeros((2, 4), np.float32)],
        "InplaceIndexCopy": [f, 0, i, np.zeros((2, 4), np.float32)],
        "IndexCopy": [f, 0, i, np.zeros((2, 4), np.float32), np.zeros((3, 4), np.float32)],
        "InplaceIndexFillTensor": [f, 0, [1], 1.0],
        "IndexFillTensor": [f, 0, [1], 1.0, np.zeros((3, 4), np.float32)],
        "Scatter": [f, 0, np.zeros((2, 4), S64), np.zeros((2, 4), np.float32), 0, np.zeros((3, 4), np.float32)],
        "InplaceScatter": [f, 0, np.zeros((2, 4), S64), np.zeros((2, 4), np.float32), 0],
        "ScatterAdd": [f, 0, np.zeros((2, 4), S64), np.zeros((2, 4), np.float32), np.zeros((3, 4), np.float32)],
        "IndexPutImpl": [f, [i], np.zeros((4,), np.float32), False, False],
        "Embedding": [f, i, np.zeros((2, 4), np.float32)],
        "EmbeddingDenseBackward": [np.zeros((2, 4), np.float32), i, 3, 0, False, np.zeros((3, 4), np.float32)],
        "RepeatInterleave": [f, np.array([1], S64), 12, np.zeros(12, np.float32)],
        "RepeatInterleaveWithDim": [f, np.array([2], S64), 0, 6, np.zeros((6, 4), np.float32)],
        "RepeatInterleaveInt": [f, 2, 24, np.zeros(24, np.float32)],
        "RepeatInterleaveIntWithDim": [f, 2, 0, 6, np.zeros((6, 4), np.float32)],
    }[name]


@pytest.mark.parametrize("name", [n for n in MINE if n != "UpsampleNearest2d"])
def test_table_checks(runtime, name):
    """Each op runs, answers 161001 for every NULL pointer and 161002 for a dtype
    outside its parameter's list."""
    o = OPS[name]
    assert o.family == "index" and o.kernel
    aclnn.call(name, *[np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in _args(name)])
    for k, p in enumerate(o.parsed()):
        if p.kind in ("TENSOR", "TENSOR_LIST", "INT_ARRAY", "SCALAR"):
            args = _args(name)
            args[k] = None
            assert status(aclnn.call, name, *args) == NULLPTR, p.name
        if p.kind == "TENSOR" and p.dtypes:
            bad = [d for d in ("u16", "u32", "c64", "f64", "bool") if d not in p.dtypes.split()]
            args = _args(name)
            if bad and bad[0] in NP:
                args[k] = args[k].astype(NP[bad[0]])
                assert status(aclnn.call, name, *args) == INVALID, p.name


# ---- thread counts ------------------------------------------------------------------------

def test_results_do_not_depend_on_threads(runtime, restore_runtime_knobs):
    rng = np.random.default_rng(19)
    x = rng.uniform(-1, 1, (300, 70)).astype(np.float32)
    idx = rng.integers(0, 300, (2000, 70))
    src = rng.uniform(-1, 1, (2000, 70)).astype(np.float32)
    grad = rng.uniform(-1, 1, (4000, 33)).astype(np.float16)
    ind = rng.integers(0, 50, 4000)
    pidx = rng.integers(0, 300, 3000)
    pv = rng.uniform(-1, 1, (3000, 70)).astype(np.float16)
    w = rng.uniform(-1, 1, (500, 64)).astype(np.float32)
    rows = rng.integers(0, 500, 5000).astype(np.int32)
    results = []
    for threads in (1, 3, 8):
        pyaclnn.set_num_threads(threads)
        r = [aclnn.ScatterAdd(x, 0, idx, src, np.empty_like(x)),
             aclnn.EmbeddingDenseBackward(grad, ind, 50, 7, True, np.empty((50, 33), np.float16)),
             aclnn.IndexPutImpl(x.astype(np.float16), [pidx], pv, True, False),
             aclnn.GatherV2(w, 0, rows, np.empty((5000, 64), np.float32)),
             aclnn.RepeatInterleaveIntWithDim(w, 3, 1, 192, np.empty((500, 192), np.float32))]
        results.append(r)
    for r in results[1:]:
        for a, b in zip(results[0], r):
            same(a, b)
    ref = tn(torch.scatter_add(tt(x), 0, tt(idx), tt(src)))
    np.testing.assert_allclose(results[0][0], ref, rtol=1e-5, atol=1e-5)


def test_gather_empty_index_any_dtype(runtime):
    """An empty index passes whatever its dtype (as CANN's check skips empty indices); a non-empty
    UINT8 index is 161002."""
    x = np.ones((3, 4), np.float32)
    assert aclnn.Gather(x, 1, np.empty((3, 0), np.uint8), np.empty((3, 0), np.float32)).shape == (3, 0)
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.Gather(x, 1, np.zeros((3, 1), np.uint8), np.empty((3, 1), np.float32))
    assert e.value.status == 161002 and "index dtype" in str(e.value)
