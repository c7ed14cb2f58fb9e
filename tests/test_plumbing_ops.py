"""The tensor plumbing aclnn ops torch_npu calls around the fused operators
(aclnnInplaceCopy, aclnnCast, aclnnInplaceFillScalar / FillTensor / Zero / One,
aclnnAdd / Adds / InplaceAdd / InplaceAdds, aclnnGtScalar / GtTensor and their
in-place forms, aclnnReduceSum, aclnnConstantPadNd, aclnnCat), through the C API from Python, against numpy:
every dtype pair of the conversions, strided and broadcast operands, and the
error codes of bad arguments."""
import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import ffi, lib

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)]
ALL = FLOATS + INTS + [np.dtype(bool)]


def run(stream, name, *args):
    """Both phases of aclnn<name>; raises AclError like the bindings."""
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    pyaclnn.check(getattr(lib, "aclnn%sGetWorkspaceSize" % name)(*args, ws, ex), "aclnn%s" % name)
    assert ws[0] == 0
    pyaclnn.check(getattr(lib, "aclnn" + name)(ffi.NULL, 0, ex[0], stream.handle), "aclnn" + name)
    stream.synchronize()


def status(name, *args):
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    rc = getattr(lib, "aclnn%sGetWorkspaceSize" % name)(*args, ws, ex)
    return rc, ffi.string(lib.aclGetRecentErrMsg()).decode() if rc else ""


def scalar(value, dt):
    a = np.array([value], dtype=dt)
    s = lib.aclCreateScalar(ffi.cast("void *", a.ctypes.data), pyaclnn.acl_dtype_of(dt))
    assert s != ffi.NULL
    return s


def is_float(dt):
    return dt in FLOATS


def sample(dt, shape, rng, lo=-100, hi=100):
    if dt == bool:
        return rng.random(shape) < 0.5
    if is_float(dt):
        return (rng.standard_normal(shape) * 30).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, lo), min(info.max, hi), shape, endpoint=True).astype(dt)


def cast_ref(a, dt):
    """numpy's conversion with the ops' rules for what numpy leaves undefined:
    float -> int truncates toward zero and saturates (NaN -> 0)."""
    if is_float(a.dtype) and dt.kind in "iu":
        f = a.astype(np.float64)
        info = np.iinfo(dt)
        f = np.where(np.isnan(f), 0, np.clip(np.trunc(f), float(info.min), float(info.max)))
        out = np.empty(a.shape, dt)
        big = f >= float(info.max)
        out[~big] = f[~big].astype(dt)
        out[big] = info.max
        return out
    return a.astype(np.float64).astype(dt) if a.dtype == BF16 and not is_float(dt) else a.astype(dt)


def bits(a):
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


@pytest.mark.parametrize("src", ALL, ids=str)
def test_cast_every_dtype_pair(runtime, stream, src):
    rng = np.random.default_rng(1)
    a = sample(src, (3, 5, 7), rng)
    with pyaclnn.Tensor(a) as ta:
        for dst in ALL:
            with pyaclnn.Tensor.empty(a.shape, dst) as out:
                run(stream, "Cast", ta.handle, pyaclnn.acl_dtype_of(dst), out.handle)
                got = out.numpy()
            assert bits(got) == bits(cast_ref(a, dst)), (src, dst)


def test_cast_rounding_and_edge_values(runtime, stream):
    # double -> fp16 / bf16 rounds once (no double rounding through fp32)
    tie16 = 1 + 2.0 ** -11            # exactly halfway between two fp16 values
    x = np.array([tie16 + 2.0 ** -40, tie16, -tie16 - 2.0 ** -40, 65520.0, 1e-8, np.nan, np.inf, -0.0])
    with pyaclnn.Tensor(x) as t, pyaclnn.Tensor.empty(x.shape, np.float16) as o16, \
            pyaclnn.Tensor.empty(x.shape, BF16) as ob:
        run(stream, "Cast", t.handle, lib.ACL_FLOAT16, o16.handle)
        run(stream, "Cast", t.handle, lib.ACL_BF16, ob.handle)
        got16, gotb = o16.numpy(), ob.numpy()
    with np.errstate(over="ignore"):
        assert bits(got16[[0, 1, 2, 3, 4, 6, 7]]) == bits(x[[0, 1, 2, 3, 4, 6, 7]].astype(np.float16))
    assert got16[1] == np.float16(1.0) and got16[0] == np.float16(1 + 2.0 ** -10)
    assert np.isnan(got16[5]) and np.isnan(gotb[5].astype(np.float32))
    tieb = 1 + 2.0 ** -8
    y = np.array([tieb + 2.0 ** -30, tieb])
    with pyaclnn.Tensor(y) as t, pyaclnn.Tensor.empty(y.shape, BF16) as o:
        run(stream, "Cast", t.handle, lib.ACL_BF16, o.handle)
        assert o.numpy().astype(np.float64).tolist() == [1 + 2.0 ** -7, 1.0]
    # float -> int: toward zero, saturated, NaN -> 0; int narrowing wraps
    f = np.array([2.9, -2.9, 300.0, -300.0, np.nan, 1e30], np.float32)
    with pyaclnn.Tensor(f) as t, pyaclnn.Tensor.empty(f.shape, np.int8) as o:
        run(stream, "Cast", t.handle, lib.ACL_INT8, o.handle)
        assert o.numpy().tolist() == [2, -2, 127, -128, 0, 127]
    i = np.array([300, -129, 255], np.int32)
    with pyaclnn.Tensor(i) as t, pyaclnn.Tensor.empty(i.shape, np.int8) as o:
        run(stream, "Cast", t.handle, lib.ACL_INT8, o.handle)
        assert o.numpy().tolist() == [44, 127, -1]


@pytest.mark.parametrize("dst", [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.int32),
                                 np.dtype(bool)], ids=str)
def test_inplace_copy_strided_broadcast_and_cast(runtime, stream, dst):
    rng = np.random.default_rng(2)
    base = sample(np.dtype(np.float32), (6, 8, 10), rng)
    src = base.transpose(2, 0, 1)[:, ::2, 1:7]                   # [10, 3, 6], strided
    out_base = np.zeros((10, 4, 12), dst)
    with pyaclnn.Tensor(src) as ts, pyaclnn.Tensor(out_base) as tb:
        # the destination view: every other column of a bigger buffer
        view = pyaclnn.Tensor.__new__(pyaclnn.Tensor)
        view._init(tb.buffer, False, (10, 3, 6), dst, (48, 12, 2), 1, (out_base.size,), None)
        run(stream, "InplaceCopy", view.handle, ts.handle)
        got = tb.numpy()
        view.close()
    want = out_base.copy().reshape(-1)
    item = want.itemsize
    np.lib.stride_tricks.as_strided(want[1:], (10, 3, 6), (48 * item, 12 * item, 2 * item))[...] = \
        cast_ref(src, dst)
    assert bits(got) == bits(want)
    # broadcast: a [6] row into [10, 3, 6]
    row = base[0, 0, :6]
    with pyaclnn.Tensor(row) as tr, pyaclnn.Tensor.empty((10, 3, 6), dst) as out:
        run(stream, "InplaceCopy", out.handle, tr.handle)
        assert bits(out.numpy()) == bits(np.broadcast_to(cast_ref(row, dst), (10, 3, 6)))


@pytest.mark.parametrize("dt", [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.int64),
                                np.dtype(np.uint8), np.dtype(bool)], ids=str)
def test_fills(runtime, stream, dt):
    shape = (4, 5, 3)
    for name, args, want in (("InplaceZero", (), 0), ("InplaceOne", (), 1)):
        with pyaclnn.Tensor(np.full(shape, 7, dt)) as t:
            run(stream, name, t.handle, *args)
            assert bits(t.numpy()) == bits(np.full(shape, want, dt))
    for value, vdt in ((2.75, np.float64), (-3, np.int64), (True, bool)):
        s = scalar(value, vdt)
        with pyaclnn.Tensor(np.zeros(shape, dt)) as t:
            run(stream, "InplaceFillScalar", t.handle, s)
            want = cast_ref(np.array(value, vdt), dt)
            assert bits(t.numpy()) == bits(np.full(shape, want, dt))
        lib.aclDestroyScalar(s)
    v = np.array([[1.5]], np.float32)
    with pyaclnn.Tensor(v) as tv, pyaclnn.Tensor(np.zeros(shape, dt)) as t:
        run(stream, "InplaceFillTensor", t.handle, tv.handle)
        assert bits(t.numpy()) == bits(np.full(shape, cast_ref(v, dt)[0, 0], dt))


@pytest.mark.parametrize("dt", [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.int32)], ids=str)
def test_add_forms(runtime, stream, dt):
    rng = np.random.default_rng(3)
    a = sample(dt, (4, 6, 5), rng)
    b = sample(dt, (6, 1), rng)                                  # broadcast
    alpha = 1 if dt.kind == "i" else 0.5

    def ref(x, y, al):
        if dt.kind == "i":
            return (x.astype(np.int64) + al * y.astype(np.int64)).astype(dt)
        return (x.astype(np.float64) + al * y.astype(np.float64)).astype(dt)

    s_alpha = scalar(alpha, np.int64 if dt.kind == "i" else np.float64)
    with pyaclnn.Tensor(a) as ta, pyaclnn.Tensor(b) as tb, pyaclnn.Tensor.empty(a.shape, dt) as out:
        run(stream, "Add", ta.handle, tb.handle, s_alpha, out.handle)
        assert bits(out.numpy()) == bits(ref(a, b, alpha))
        run(stream, "InplaceAdd", ta.handle, tb.handle, s_alpha)
        assert bits(ta.numpy()) == bits(ref(a, b, alpha))
    s_other = scalar(3, np.int64)
    with pyaclnn.Tensor(a) as ta, pyaclnn.Tensor.empty(a.shape, dt) as out:
        run(stream, "Adds", ta.handle, s_other, s_alpha, out.handle)
        assert bits(out.numpy()) == bits(ref(a, np.array(3), alpha))
        run(stream, "InplaceAdds", ta.handle, s_other, s_alpha)
        assert bits(ta.numpy()) == bits(ref(a, np.array(3), alpha))
    lib.aclDestroyScalar(s_alpha)
    lib.aclDestroyScalar(s_other)


def test_fp16_add_is_correctly_rounded(runtime, stream):
    # a + b rounded once to fp16 (a double sum of two fp16 values is exact)
    rng = np.random.default_rng(4)
    a = (rng.standard_normal(4096) * np.exp2(rng.integers(-14, 14, 4096))).astype(np.float16)
    b = (rng.standard_normal(4096) * np.exp2(rng.integers(-14, 14, 4096))).astype(np.float16)
    one = scalar(1.0, np.float32)
    with pyaclnn.Tensor(a) as ta, pyaclnn.Tensor(b) as tb, pyaclnn.Tensor.empty(a.shape, np.float16) as out:
        run(stream, "Add", ta.handle, tb.handle, one, out.handle)
        assert bits(out.numpy()) == bits(a + b)   # numpy's fp16 add: correctly rounded
    lib.aclDestroyScalar(one)


def test_gt(runtime, stream):
    rng = np.random.default_rng(5)
    x = sample(np.dtype(np.float16), (3, 4, 8), rng)
    x.reshape(-1)[0] = np.nan
    s = scalar(0.25, np.float64)
    with pyaclnn.Tensor(x) as t, pyaclnn.Tensor.empty(x.shape, bool) as out:
        run(stream, "GtScalar", t.handle, s, out.handle)
        assert np.array_equal(out.numpy(), x > np.float16(0.25))
    y = sample(np.dtype(np.float16), (4, 1), rng)
    with pyaclnn.Tensor(x) as t, pyaclnn.Tensor(y) as ty, pyaclnn.Tensor.empty(x.shape, bool) as out:
        run(stream, "GtTensor", t.handle, ty.handle, out.handle)
        assert np.array_equal(out.numpy(), x > y)
        run(stream, "InplaceGtTensor", t.handle, ty.handle)
        assert bits(t.numpy()) == bits((x > y).astype(np.float16))
    i = np.array([5, -3, 9], np.int64)
    s9 = scalar(5, np.int32)
    with pyaclnn.Tensor(i) as t, pyaclnn.Tensor.empty(i.shape, np.uint8) as out:
        run(stream, "GtScalar", t.handle, s9, out.handle)
        assert out.numpy().tolist() == [0, 0, 1]
        run(stream, "InplaceGtScalar", t.handle, s9)
        assert t.numpy().tolist() == [0, 0, 1]
    lib.aclDestroyScalar(s)
    lib.aclDestroyScalar(s9)


@pytest.mark.parametrize("dims,keep", [([], False), ([1], False), ([0, -1], True), ([2], True)])
def test_reduce_sum(runtime, stream, dims, keep):
    rng = np.random.default_rng(6)
    x = sample(np.dtype(np.float32), (5, 6, 7), rng).transpose(1, 0, 2)       # strided [6, 5, 7]
    axis = tuple(d % 3 for d in dims) if dims else None
    arr = np.array(dims, np.int64)
    ia = lib.aclCreateIntArray(ffi.cast("int64_t *", arr.ctypes.data), len(dims))
    for dt in (np.dtype(np.float32), BF16):
        # self is cast to dtype first (as the vendor's op), then summed in double and rounded once
        want = x.astype(dt).astype(np.float64).sum(axis=axis, keepdims=keep)
        with pyaclnn.Tensor(x) as t, pyaclnn.Tensor.empty(want.shape, dt) as out:
            run(stream, "ReduceSum", t.handle, ia, keep, pyaclnn.acl_dtype_of(dt), out.handle)
            assert bits(out.numpy()) == bits(want.astype(dt))
    lib.aclDestroyIntArray(ia)


def test_errors(runtime):
    a = np.zeros((2, 3), np.float32)
    with pyaclnn.Tensor(a) as t, pyaclnn.Tensor.empty((4, 3), np.float32) as t4:
        dims = ffi.new("int64_t[]", [2, 3])
        tc = lib.aclCreateTensor(dims, 2, lib.ACL_COMPLEX64, ffi.NULL, 0, lib.ACL_FORMAT_ND, dims, 2,
                                 t.buffer.cdata)
        rc, msg = status("InplaceCopy", ffi.NULL, t.handle)
        assert rc == 161001 and "selfRef" in msg
        rc, msg = status("InplaceCopy", t.handle, t4.handle)
        assert rc == 161002 and "broadcast" in msg
        rc, msg = status("Cast", t.handle, lib.ACL_FLOAT16, t.handle)
        assert rc == 161002 and "out dtype" in msg
        rc, msg = status("Cast", tc, lib.ACL_FLOAT, t.handle)
        assert rc == 161002 and "COMPLEX64" in msg
        lib.aclDestroyTensor(tc)
        one = scalar(1.0, np.float32)
        rc, msg = status("Add", t.handle, t4.handle, one, t.handle)
        assert rc == 161002 and "do not broadcast" in msg
        rc, msg = status("Add", t.handle, t.handle, ffi.NULL, t.handle)
        assert rc == 161001 and "alpha" in msg
        lib.aclDestroyScalar(one)
        rc, msg = status("InplaceFillScalar", t.handle, ffi.NULL)
        assert rc == 161001 and "value" in msg
        arr = np.array([2], np.int64)
        ia = lib.aclCreateIntArray(ffi.cast("int64_t *", arr.ctypes.data), 1)
        rc, msg = status("ReduceSum", t.handle, ia, False, lib.ACL_FLOAT, t.handle)
        assert rc == 161002 and "out of range" in msg
        lib.aclDestroyIntArray(ia)
        # an output whose elements share an address
        bad = pyaclnn.Tensor.__new__(pyaclnn.Tensor)
        bad._init(t.buffer, False, (2, 3), np.dtype(np.float32), (0, 1), 0, (6,), None)
        rc, msg = status("InplaceZero", bad.handle)
        assert rc == 161002 and "share an address" in msg
        bad.close()
        # a private format
        nz = pyaclnn.Tensor.__new__(pyaclnn.Tensor)
        nz._init(t.buffer, False, (2, 3), np.dtype(np.float32), (3, 1), 0, (6,), lib.ACL_FORMAT_FRACTAL_NZ)
        rc, msg = status("InplaceZero", nz.handle)
        assert rc == 161002 and "FRACTAL_NZ" in msg
        nz.close()


def pad_ref(x, pad, value):
    """torch.nn.functional.pad(x, pad, "constant", value) in numpy: pairs from the
    last dim backward, negative entries crop; value converted as the fill ops do."""
    pairs = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        pairs[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    crop = tuple(slice(max(-lo, 0), x.shape[d] - max(-hi, 0)) for d, (lo, hi) in enumerate(pairs))
    fill = cast_ref(np.array([value]), x.dtype)[0]
    return np.pad(x[crop], [(max(lo, 0), max(hi, 0)) for lo, hi in pairs], constant_values=fill)


def int_array(values):
    arr = np.array(values, np.int64)
    return lib.aclCreateIntArray(ffi.cast("int64_t *", arr.ctypes.data), len(values))


@pytest.mark.parametrize("pad", [[0, 3], [2, 1, 0, 4], [1, 1, 1, 1, 1, 1], [-1, 2, 3, -2], [0, 0], [], [-2, -3]])
@pytest.mark.parametrize("dt", [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.int32),
                                np.dtype(np.int8), np.dtype(bool)], ids=str)
def test_constant_pad_nd(runtime, stream, pad, dt):
    rng = np.random.default_rng(len(pad))
    x = sample(dt, (4, 3, 7), rng).transpose(1, 0, 2)            # strided [3, 4, 7]
    for value in (0, -2.5):
        want = pad_ref(x, pad, value)
        ia = int_array(pad)
        v = scalar(value, np.float32 if isinstance(value, float) else np.int64)
        with pyaclnn.Tensor(x) as t, pyaclnn.Tensor.empty(want.shape, dt) as out:
            run(stream, "ConstantPadNd", t.handle, ia, v, out.handle)
            assert bits(out.numpy()) == bits(want), (pad, value)
        lib.aclDestroyScalar(v)
        lib.aclDestroyIntArray(ia)


def test_constant_pad_nd_torch_npu_alignment(runtime, stream):
    """What torch_npu's all_gather asks for: [1, n] padded at the end to 512 bytes."""
    x = np.arange(2, dtype=np.float32).reshape(1, 2)
    ia = int_array([0, 126])
    v = scalar(0, np.int64)
    with pyaclnn.Tensor(x) as t, pyaclnn.Tensor.empty((1, 128), np.float32) as out:
        run(stream, "ConstantPadNd", t.handle, ia, v, out.handle)
        assert bits(out.numpy()) == bits(np.pad(x, [(0, 0), (0, 126)]))
    lib.aclDestroyScalar(v)
    lib.aclDestroyIntArray(ia)


def test_constant_pad_nd_errors(runtime):
    x = np.zeros((2, 3), np.float32)
    v = scalar(1.0, np.float32)
    with pyaclnn.Tensor(x) as t, pyaclnn.Tensor.empty((2, 5), np.float32) as o25, \
            pyaclnn.Tensor.empty((2, 5), np.float16) as o25h, pyaclnn.Tensor.empty((5,), np.float32) as o5, \
            pyaclnn.Tensor.empty((2, 0), np.float32) as o20, pyaclnn.Tensor.empty((3, 0), np.float32) as o30:
        cases = [
            ((ffi.NULL, "P", v, o25.handle), 161001, "self"),
            ((t.handle, ffi.NULL, v, o25.handle), 161001, "pad"),
            ((t.handle, "P", ffi.NULL, o25.handle), 161001, "value"),
            ((t.handle, "P", v, ffi.NULL), 161001, "out"),
            ((t.handle, "P", v, o25h.handle), 161002, "out dtype must be self's"),
            ((t.handle, "P", v, o5.handle), 161002, "out must have self's rank 2"),
            ((t.handle, [1], v, o25.handle), 161002, "pad length must be even"),
            ((t.handle, [1, 1, 0, 0, 0, 0], v, o25.handle), 161002, "at most twice self's rank"),
            ((t.handle, [1, 0], v, o25.handle), 161002, "out shape [2,5] must be 4 at dim 1"),
            ((t.handle, [-4, 2], v, o25.handle), 161002, "gives a negative size"),
            ((t.handle, [-3, 0, 1, 0], v, o30.handle), 161002, "zero-size padded dim"),
        ]
        for (a, p, val, o), code, text in cases:
            ia = int_array([1, 1]) if p == "P" else (p if p == ffi.NULL else int_array(p))
            rc, msg = status("ConstantPadNd", a, ia, val, o)
            assert rc == code and text in msg, (p, rc, msg)
            if ia != ffi.NULL:
                lib.aclDestroyIntArray(ia)
        # a stride-0 self dim may be huge (a valid view of one element): its sum overflows
        huge = pyaclnn.Tensor.__new__(pyaclnn.Tensor)
        huge._init(t.buffer, False, (2 ** 62,), np.dtype(np.float32), (0,), 0, (1,), None)
        ia = int_array([0, 2 ** 62])
        rc, msg = status("ConstantPadNd", huge.handle, ia, v, o5.handle)
        assert rc == 161002 and "overflows int64" in msg, msg
        lib.aclDestroyIntArray(ia)
        huge.close()
        # cropping a dim away entirely is allowed when nothing is padded
        ia = int_array([-3, 0])
        assert status("ConstantPadNd", t.handle, ia, v, o20.handle) == (0, "")
        lib.aclDestroyIntArray(ia)
    lib.aclDestroyScalar(v)


def destroy_list(lst, tensors):
    """aclDestroyTensorList destroys its tensors too, as CANN's does: then free their memory."""
    assert lib.aclDestroyTensorList(lst) == 0
    for t in tensors:
        t._handle = None
        t.close()


def tensor_list(tensors):
    arr = ffi.new("aclTensor *[]", [t.handle for t in tensors])
    lst = lib.aclCreateTensorList(arr, len(tensors))
    assert lst != ffi.NULL
    return lst


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("out_dt", [np.dtype(np.float32), BF16, np.dtype(np.int64)], ids=str)
def test_cat(runtime, stream, dim, out_dt):
    rng = np.random.default_rng(dim + 5)
    d = dim % 3
    parts = []
    for i, (n, dt) in enumerate([(2, np.int32), (0, np.int8), (3, bool), (1, np.int16)] if out_dt.kind == "i" else
                                [(2, np.float16), (0, np.float32), (3, np.int32), (1, BF16), (4, bool)]):
        shape = [4, 5, 3]
        shape[d] = n
        x = sample(np.dtype(dt), tuple(shape[::-1]), rng).transpose(2, 1, 0)    # strided
        parts.append(x)
    want = np.concatenate([cast_ref(x, out_dt) for x in parts], axis=d)
    ts = [pyaclnn.Tensor(x) for x in parts]
    lst = tensor_list(ts)
    with pyaclnn.Tensor.empty(want.shape, out_dt) as out:
        run(stream, "Cat", lst, dim, out.handle)
        assert bits(out.numpy()) == bits(want)
    destroy_list(lst, ts)


def test_cat_many_and_errors(runtime, stream):
    xs = [np.full((1, 2), i, np.float32) for i in range(63)]
    ts = [pyaclnn.Tensor(x) for x in xs]
    lst = tensor_list(ts)
    with pyaclnn.Tensor.empty((63, 2), np.float32) as out:
        run(stream, "Cat", lst, 0, out.handle)
        assert bits(out.numpy()) == bits(np.concatenate(xs))
    destroy_list(lst, ts)
    # (the lists below are left alive: destroying one destroys a and b with it)
    with pyaclnn.Tensor(np.zeros((2, 3), np.float32)) as a, pyaclnn.Tensor(np.zeros((2, 4), np.float32)) as b, \
            pyaclnn.Tensor.empty((2, 7), np.float32) as o, pyaclnn.Tensor.empty((2, 7), np.int32) as oi, \
            pyaclnn.Tensor.empty((4, 3), np.float32) as o43:
        pair = tensor_list([a, b])
        assert status("Cat", ffi.NULL, 1, o.handle)[0] == 161001
        assert status("Cat", pair, 1, ffi.NULL)[0] == 161001
        rc, msg = status("Cat", pair, 2, o.handle)
        assert rc == 161002 and "dim 2 is out of range for 2-D tensors" in msg
        rc, msg = status("Cat", pair, 0, o43.handle)
        assert rc == 161002 and "tensors[1] shape [2,4] must match tensors[0] shape [2,3] outside dim 0" in msg
        rc, msg = status("Cat", pair, 1, oi.handle)
        assert rc == 161002 and "floating-point values cannot be cast to out dtype INT32" in msg
        rc, msg = status("Cat", pair, 1, o43.handle)
        assert rc == 161002 and "out shape must be [2,7], got [4,3]" in msg
        assert status("Cat", pair, -1, o.handle) == (0, "")
        nul = lib.aclCreateTensorList(ffi.new("aclTensor *[]", [a.handle, ffi.NULL]), 2)
        rc, msg = status("Cat", nul, 1, o.handle)
        assert rc == 161001 and "tensors[1] must not be NULL" in msg
        huge = pyaclnn.Tensor.__new__(pyaclnn.Tensor)
        huge._init(a.buffer, False, (2 ** 62, 3), np.dtype(np.float32), (0, 1), 0, (6,), None)
        hl = lib.aclCreateTensorList(ffi.new("aclTensor *[]", [huge.handle, huge.handle]), 2)
        rc, msg = status("Cat", hl, 0, o.handle)
        assert rc == 161002 and "sizes along dim 0 overflow int64" in msg, msg
        many = lib.aclCreateTensorList(ffi.new("aclTensor *[]", [a.handle] * 16385), 16385)
        rc, msg = status("Cat", many, 0, o.handle)
        assert rc == 161002 and "at most 16384 tensors, got 16385" in msg

