"""Issue 7 from Python: the scale rule of both ops (row 7), handles through the raw
cffi layer (row 6), and the launch-time address check with its switch
PYACLNN_CHECK_ADDRESSES. The C side (rows 1-6, every handle kind, the view and
address rules) is tests/c/test_memory_safety.c, run by test_c_suite.py."""
import numpy as np
import pytest

import pyaclnn
from pyaclnn._ffi import ffi, lib
from conftest import run_python
from test_nsa_op import make_case, run_op

F32_MAX = float(np.finfo(np.float32).max)
TIE = float.fromhex("0x1.ffffffp127")  # halfway between FLT_MAX and 2^128


def _msg():
    return ffi.string(lib.aclGetRecentErrMsg()).decode()


def _f32_bits(x):
    return np.asarray(x, np.float32).view(np.uint32)


def _to_f32(d):
    """IEEE double -> float, round to nearest even (what the rule says)."""
    with np.errstate(over="ignore"):
        return np.float64(d).astype(np.float32)


# --------------------------------------------------------------------------- row 7: scale

@pytest.mark.parametrize("scale", [1e300, -1e300, float("inf"), float("-inf"), TIE, -TIE,
                                   np.nextafter(TIE, 0.0), F32_MAX, 3.0e38, 0.125, 1e-40, 1e-50,
                                   -0.0])
def test_softmax_scale_is_rounded_to_fp32(runtime, scale):
    """One element with p - sum*y = 1 exactly: out is the fp32 scale the op used."""
    g = np.full((1, 1, 1, 1), 4.0, np.float32)
    y = np.full((1, 1, 1, 1), 0.5, np.float32)
    mask = np.zeros((1, 1, 1, 1), bool)
    out = pyaclnn.ops.scaled_masked_softmax_backward(g, y, mask, scale=scale)
    assert _f32_bits(out)[0, 0, 0, 0] == _f32_bits(_to_f32(scale))
    if abs(scale) >= TIE:
        assert np.isinf(out).all() and np.sign(out[0, 0, 0, 0]) == np.sign(scale)


def test_softmax_scale_nan(runtime):
    g = np.full((1, 1, 2, 4), 4.0, np.float32)
    y = np.full((1, 1, 2, 4), 0.25, np.float32)
    mask = np.zeros((1, 1, 2, 4), bool)
    mask[0, 0, 1] = True
    out = pyaclnn.ops.scaled_masked_softmax_backward(g, y, mask, scale=float("nan"))
    assert np.isnan(out[0, 0, 0]).all()
    assert (out[0, 0, 1] == 0).all() and not np.signbit(out[0, 0, 1]).any()  # masked: +0 whatever the scale


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_softmax_out_of_range_scale_is_infinite(runtime, dtype):
    """scale = 1e300 behaves exactly as +inf: each unmasked element is (p - s*y) * inf
    (NaN where that difference is 0), masked ones stay +0."""
    rng = np.random.default_rng(7)
    g = rng.standard_normal((2, 2, 4, 8)).astype(dtype)
    y = rng.random((2, 2, 4, 8)).astype(dtype)
    g[0, 0, 0] = 0  # a row whose differences are all exactly 0
    mask = rng.random((2, 1, 4, 8)) < 0.3
    unit = pyaclnn.ops.scaled_masked_softmax_backward(g, y, mask, scale=1.0)  # p - s*y, rounded to dtype
    big = pyaclnn.ops.scaled_masked_softmax_backward(g, y, mask, scale=1e300)
    inf = pyaclnn.ops.scaled_masked_softmax_backward(g, y, mask, scale=float("inf"))
    assert big.tobytes() == inf.tobytes()
    m = np.broadcast_to(mask, g.shape)
    with np.errstate(invalid="ignore"):
        want = np.where(m, dtype(0), unit.astype(np.float32) * np.float32(np.inf))
    assert np.array_equal(np.isnan(big), np.isnan(want))
    assert np.isnan(big[0, 0, 0][~m[0, 0, 0]]).all()
    fin = ~np.isnan(want)
    assert np.array_equal(big[fin].astype(np.float32), want[fin])


def _nsa_case():
    return make_case(11, seq_q=[24], seq_kv=[128], n1=2, n2=1, d=128, dv=128, block=16, count=4)


def _nsa_bits(case, scale):
    case.attrs["scale_value"] = scale
    return [o.view(np.uint16).copy() for o in run_op(case)]


def test_nsa_scale_follows_the_same_rule(runtime):
    """Both ops share one conversion: 1e300 gives the bits of +inf, a double just below
    the halfway point gives the bits of FLT_MAX, and the result is not finite."""
    case = _nsa_case()
    big, inf = _nsa_bits(case, 1e300), _nsa_bits(case, float("inf"))
    for a, b in zip(big, inf):
        assert np.array_equal(a, b)
    dq = big[0].view(np.float16)
    assert np.isnan(dq).all()  # every dq: inf * S saturates the softmax to inf / 0 / NaN
    below, fmax = _nsa_bits(case, np.nextafter(TIE, 0.0)), _nsa_bits(case, F32_MAX)
    for a, b in zip(below, fmax):
        assert np.array_equal(a, b)
    nan = _nsa_bits(case, float("nan"))
    assert all(np.isnan(o.view(np.float16)).all() for o in nan[:2])


# --------------------------------------------------------------------------- row 6: handles

def _tensor(data=ffi.NULL, dims=(2, 3)):
    d = ffi.new("int64_t[]", list(dims))
    t = lib.aclCreateTensor(d, len(dims), lib.ACL_FLOAT, ffi.NULL, 0, lib.ACL_FORMAT_ND, d, len(dims), data)
    assert t != ffi.NULL
    return t


def test_double_destroy_raw(runtime):
    before = lib.pyaclnnCountHandles(1)
    t = _tensor()
    assert lib.pyaclnnCountHandles(1) == before + 1
    assert lib.aclDestroyTensor(t) == 0
    assert lib.aclDestroyTensor(t) == 161002
    assert "aclDestroyTensor: tensor must be a live aclTensor" in _msg()
    assert "already destroyed" in _msg()
    arr = lib.aclCreateIntArray(ffi.new("int64_t[]", [1, 2]), 2)
    assert lib.aclDestroyIntArray(arr) == 0
    assert lib.aclDestroyIntArray(arr) == 161002
    assert "live aclIntArray" in _msg()
    assert lib.pyaclnnCountHandles(1) == before


def test_foreign_pointer_raw(runtime):
    buf = ffi.new("char[]", 512)
    assert lib.aclDestroyTensor(ffi.cast("aclTensor *", buf)) == 161002
    assert "did not create" in _msg()
    shape, n = ffi.new("int64_t **"), ffi.new("uint64_t *")
    assert lib.aclGetViewShape(ffi.cast("aclTensor *", buf), shape, n) == 161002


def test_python_tensors_release_their_handles(runtime):
    before = lib.pyaclnnCountHandles(0)
    ts = [pyaclnn.Tensor(np.ones((2, 3), np.float32)) for _ in range(5)]
    assert lib.pyaclnnCountHandles(1) >= 5
    for t in ts:
        t.close()
    assert lib.pyaclnnCountHandles(0) == before


# --------------------------------------------------------------------------- addresses

_UNREGISTERED_HOST = r"""
import numpy as np, pyaclnn, pyaclnn.reference
from pyaclnn._ffi import ffi, lib
pyaclnn.ensure_initialized()
g = np.arange(16, dtype=np.float32).reshape(1, 1, 2, 8) / 16
y = np.full((1, 1, 2, 8), 0.125, np.float32)
m = np.zeros((1, 1, 2, 8), bool)
o = np.full((1, 1, 2, 8), 7.0, np.float32)
d = ffi.new("int64_t[]", [1, 1, 2, 8]); st = ffi.new("int64_t[]", [16])
def mk(a, dt):
    return lib.aclCreateTensor(d, 4, dt, ffi.NULL, 0, lib.ACL_FORMAT_ND, st, 1, ffi.cast("void *", a.ctypes.data))
ts = [mk(g, lib.ACL_FLOAT), mk(y, lib.ACL_FLOAT), mk(m, lib.ACL_BOOL), mk(o, lib.ACL_FLOAT)]
ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
assert lib.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(ts[0], ts[1], ts[2], 1.0, False, ts[3], ws, ex) == 0
s = pyaclnn.Stream()
assert lib.aclnnScaledMaskedSoftmaxBackward(ffi.NULL, 0, ex[0], s.handle) == 0
rc = lib.aclrtSynchronizeStream(s.handle)
print(rc, ffi.string(lib.aclGetRecentErrMsg()).decode() if rc else "")
ref = pyaclnn.reference.scaled_masked_softmax_backward(g, y, m, 1.0)
print("match" if np.allclose(o, ref, atol=1e-6) else "untouched" if (o == 7).all() else "other")
"""


def test_unregistered_host_memory_is_refused_at_launch():
    proc = run_python(_UNREGISTERED_HOST)
    rc, msg = proc.stdout.splitlines()[0].split(" ", 1)
    assert int(rc) == 507015
    assert "aclnnScaledMaskedSoftmaxBackward: gradOutput storage [" in msg
    assert "not inside one device allocation or registered host range" in msg
    assert proc.stdout.splitlines()[1] == "untouched"


def test_check_addresses_switch_off():
    """PYACLNN_CHECK_ADDRESSES=0: the range check is skipped (valid host memory then works)."""
    proc = run_python(_UNREGISTERED_HOST, env_update={"PYACLNN_CHECK_ADDRESSES": "0"})
    assert proc.stdout.splitlines() == ["0 ", "match"]


def test_check_addresses_switch_off_keeps_the_null_check():
    code = _UNREGISTERED_HOST.replace(
        "ts = [mk(g, lib.ACL_FLOAT),",
        "ts = [lib.aclCreateTensor(d, 4, lib.ACL_FLOAT, ffi.NULL, 0, lib.ACL_FORMAT_ND, st, 1, ffi.NULL),")
    assert code != _UNREGISTERED_HOST
    proc = run_python(code, env_update={"PYACLNN_CHECK_ADDRESSES": "0"})
    rc, msg = proc.stdout.splitlines()[0].split(" ", 1)
    assert int(rc) == 361001
    assert "aclnnScaledMaskedSoftmaxBackward: gradOutput has no device address" in msg
    assert proc.stdout.splitlines()[1] == "untouched"


def test_storage_counted_from_the_offset_and_negative_storage(runtime, stream):
    """Two storages CANN accepts (ggml-cann declares both): one counted from the
    view's offset (the view's span fits, the offset lies beyond), checked at
    launch against the allocation like any address; and a negative storage dim
    for an empty view (ggml's 1 + (0 - 1) * stride)."""
    ffi, lib = pyaclnn.ffi, pyaclnn.lib
    with pyaclnn.DeviceBuffer(64 * 4) as buf, pyaclnn.DeviceBuffer(64 * 4) as obuf:
        host = np.arange(64, dtype=np.float32)
        lib.aclrtMemcpy(buf.cdata, 256, ffi.cast("void *", host.ctypes.data), 256, lib.ACL_MEMCPY_HOST_TO_DEVICE)
        dims, st = ffi.new("int64_t[]", [8]), ffi.new("int64_t[]", [1])
        sd = ffi.new("int64_t[]", [8])  # storage of 8 elements, view at offset 40
        t = lib.aclCreateTensor(dims, 1, lib.ACL_FLOAT, st, 40, lib.ACL_FORMAT_ND, sd, 1, buf.cdata)
        o = lib.aclCreateTensor(dims, 1, lib.ACL_FLOAT, st, 0, lib.ACL_FORMAT_ND, sd, 1, obuf.cdata)
        ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
        assert lib.aclnnInplaceCopyGetWorkspaceSize(o, t, ws, ex) == 0
        assert lib.aclnnInplaceCopy(ffi.NULL, 0, ex[0], stream.handle) == 0
        stream.synchronize()
        got = np.empty(8, np.float32)
        lib.aclrtMemcpy(ffi.cast("void *", got.ctypes.data), 32, obuf.cdata, 32, lib.ACL_MEMCPY_DEVICE_TO_HOST)
        assert got.tolist() == list(range(40, 48))
        # past the allocation: refused at launch (507015), nothing written
        far = lib.aclCreateTensor(dims, 1, lib.ACL_FLOAT, st, 400, lib.ACL_FORMAT_ND, sd, 1, buf.cdata)
        assert lib.aclnnInplaceCopyGetWorkspaceSize(o, far, ws, ex) == 0
        assert lib.aclnnInplaceCopy(ffi.NULL, 0, ex[0], stream.handle) == 0
        assert lib.aclrtSynchronizeStream(stream.handle) == 507015
        # a span longer than the storage is still refused at once
        nine = ffi.new("int64_t[]", [9])
        wide = lib.aclCreateTensor(nine, 1, lib.ACL_FLOAT, st, 0, lib.ACL_FORMAT_ND, sd, 1, buf.cdata)
        o9 = lib.aclCreateTensor(nine, 1, lib.ACL_FLOAT, st, 0, lib.ACL_FORMAT_ND, nine, 1, obuf.cdata)
        assert lib.aclnnInplaceCopyGetWorkspaceSize(o9, wide, ws, ex) == 161002
        assert "past its storage" in pyaclnn.get_recent_err_msg()
        # an empty view with a negative storage dim
        zero, neg = ffi.new("int64_t[]", [0]), ffi.new("int64_t[]", [-3])
        e1 = lib.aclCreateTensor(zero, 1, lib.ACL_FLOAT, st, 0, lib.ACL_FORMAT_ND, neg, 1, buf.cdata)
        e2 = lib.aclCreateTensor(zero, 1, lib.ACL_FLOAT, st, 0, lib.ACL_FORMAT_ND, neg, 1, obuf.cdata)
        assert e1 != ffi.NULL and e2 != ffi.NULL
        assert lib.aclnnInplaceCopyGetWorkspaceSize(e2, e1, ws, ex) == 0
        assert lib.aclnnInplaceCopy(ffi.NULL, 0, ex[0], stream.handle) == 0
        stream.synchronize()
        # ... but a non-empty view on it is refused
        n1 = lib.aclCreateTensor(ffi.new("int64_t[]", [1]), 1, lib.ACL_FLOAT, st, 0, lib.ACL_FORMAT_ND, neg, 1,
                                 buf.cdata)
        assert lib.aclnnInplaceCopyGetWorkspaceSize(o, n1, ws, ex) == 161002
        for h in (t, o, far, wide, o9, e1, e2, n1):
            lib.aclDestroyTensor(h)
