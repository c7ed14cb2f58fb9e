"""The single-operator API (acl/acl_op.h, acl/acl_op_compiler.h) through the C API
from Python: attributes, aclopCompileAndExecute(V2) for the op types pyaclnn runs
(ScaledMaskedSoftmax / ScaledMaskedSoftmaxGrad with the TBE op's semantics, the
fixed triu mask, Identity / Cast / Greater / Fill), FRACTAL_NZ operands, and the errors."""
import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import ffi, lib
from pyaclnn import reference as R

BF16 = np.dtype(ml_dtypes.bfloat16)


def errmsg():
    m = lib.aclGetRecentErrMsg()
    return ffi.string(m).decode() if m != ffi.NULL else ""


class Desc:
    """An aclTensorDesc (origin shape and format; storage format and shape when
    given, as torch_npu's OpCommand sets them) with an aclDataBuffer over device memory."""

    def __init__(self, array=None, *, shape=None, dtype=None, nz=False, host=False):
        self.dtype = np.dtype(dtype if array is None else array.dtype)
        self.shape = tuple(shape if array is None else array.shape)
        self.nz = nz
        acl = pyaclnn.acl_dtype_of(self.dtype)
        dims = ffi.new("int64_t[]", list(self.shape) or [0])
        self.desc = lib.aclCreateTensorDesc(acl, len(self.shape), dims, lib.ACL_FORMAT_ND)
        data = None if array is None else np.ascontiguousarray(array)
        if nz:
            lay = nz_layout(self.shape, self.dtype)
            sdims = ffi.new("int64_t[]", lay["storage"])
            lib.aclSetTensorFormat(self.desc, lib.ACL_FORMAT_FRACTAL_NZ)
            lib.aclSetTensorShape(self.desc, len(lay["storage"]), sdims)
            if data is not None:
                data = to_nz(data)
        nbytes = (data.nbytes if data is not None else
                  int(np.prod(nz_layout(self.shape, self.dtype)["storage"] if nz else self.shape)) * self.dtype.itemsize)
        if host:
            lib.aclSetTensorPlaceMent(self.desc, lib.ACL_MEMTYPE_HOST)
            self.host = data.copy()
            self.buf = lib.aclCreateDataBuffer(ffi.cast("void *", self.host.ctypes.data), self.host.nbytes)
        else:
            self.mem = pyaclnn.DeviceBuffer(max(nbytes, 1))
            if data is not None and data.nbytes:
                self.mem.copy_from_host(data)
            self.buf = lib.aclCreateDataBuffer(self.mem.cdata, nbytes)

    def numpy(self):
        raw = self.mem.copy_to_host(np.empty(self.mem.nbytes // self.dtype.itemsize, self.dtype))
        if self.nz:
            return from_nz(raw, self.shape)
        return raw[: int(np.prod(self.shape))].reshape(self.shape)

    def close(self):
        lib.aclDestroyDataBuffer(self.buf)
        lib.aclDestroyTensorDesc(self.desc)


def nz_layout(shape, dt):
    shape = tuple(shape) if len(shape) >= 2 else ((1,) + tuple(shape) if shape else (1, 1))
    c0 = 32 // min(dt.itemsize, 2)
    h, w = shape[-2], shape[-1]
    w1, h1 = -(-w // c0), -(-h // 16)
    return {"c0": c0, "storage": list(shape[:-2]) + [w1, h1, 16, c0], "hw": (h, w)}


def to_nz(a):
    """numpy reference of the ND -> FRACTAL_NZ layout (zero padding)."""
    lay = nz_layout(a.shape, a.dtype)
    h, w = lay["hw"]
    c0 = lay["c0"]
    batch = a.reshape(-1, h, w)
    w1, h1 = lay["storage"][-4], lay["storage"][-3]
    pad = np.zeros((batch.shape[0], h1 * 16, w1 * c0), a.dtype)
    pad[:, :h, :w] = batch
    nz = pad.reshape(batch.shape[0], h1 * 16, w1, c0).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(nz).reshape(lay["storage"])


def from_nz(raw, shape):
    lay = nz_layout(shape, raw.dtype)
    h, w = lay["hw"]
    st = lay["storage"]
    nz = raw[: int(np.prod(st))].reshape(-1, st[-4], st[-3] * 16, st[-1])
    nd = nz.transpose(0, 2, 1, 3).reshape(nz.shape[0], st[-3] * 16, st[-4] * st[-1])
    return np.ascontiguousarray(nd[:, :h, :w]).reshape(shape)


def attrs(**kw):
    a = lib.aclopCreateAttr()
    assert a != ffi.NULL
    for k, v in kw.items():
        name = k.encode()
        if isinstance(v, bool):
            assert lib.aclopSetAttrBool(a, name, v) == 0
        elif isinstance(v, int):
            assert lib.aclopSetAttrInt(a, name, v) == 0
        else:
            assert lib.aclopSetAttrFloat(a, name, v) == 0
    return a


def execute(op, ins, outs, attr, stream, v2=False):
    idesc = ffi.new("aclTensorDesc *[]", [d.desc for d in ins])
    ibuf = ffi.new("aclDataBuffer *[]", [d.buf for d in ins])
    odesc = ffi.new("aclTensorDesc *[]", [d.desc for d in outs])
    obuf = ffi.new("aclDataBuffer *[]", [d.buf for d in outs])
    fn = lib.aclopCompileAndExecuteV2 if v2 else lib.aclopCompileAndExecute
    rc = fn(op.encode(), len(ins), idesc, ibuf, len(outs), odesc, obuf, attr, lib.ACL_ENGINE_SYS,
            lib.ACL_COMPILE_SYS, ffi.NULL, stream.handle if stream is not None else ffi.NULL)
    if rc == 0 and stream is not None:
        stream.synchronize()
    return rc


def bits(a):
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


@pytest.mark.parametrize("dt", [np.dtype(np.float32), np.dtype(np.float16), BF16], ids=str)
@pytest.mark.parametrize("nz", [False, True], ids=["ND", "NZ"])
@pytest.mark.parametrize("triu", [False, True])
def test_scaled_masked_softmax_pair(runtime, stream, dt, nz, triu):
    """The op types run the aclnn kernels: the same bits as aclnnScaledMaskedSoftmax and
    its backward (with triu(ones(mask.shape), 1) for fixed_triu_mask), whatever the format."""
    rng = np.random.default_rng(7)
    shape, mshape = (2, 3, 40, 48), (2, 1, 40, 48)
    x = (rng.standard_normal(shape) * 3).astype(dt)
    mask = rng.random(mshape) < 0.3
    scale = 0.375
    m_used = np.broadcast_to(np.triu(np.ones(mshape[-2:], bool), 1), mshape) if triu else mask
    want = pyaclnn.ops.scaled_masked_softmax(x, m_used, scale)
    a = attrs(scale=scale, fixed_triu_mask=triu)
    dx, dm, dy = Desc(x, nz=nz), Desc(mask, nz=nz), Desc(shape=shape, dtype=dt, nz=nz)
    assert execute("ScaledMaskedSoftmax", [dx, dm], [dy], a, stream, v2=nz) == 0, errmsg()
    y = dy.numpy()
    assert bits(y) == bits(want)
    g = rng.standard_normal(shape).astype(dt)
    want_dx = pyaclnn.ops.scaled_masked_softmax_backward(g, y, m_used, scale)
    dg, dyin, dout = Desc(g, nz=nz), Desc(y, nz=nz), Desc(shape=shape, dtype=dt, nz=nz)
    assert execute("ScaledMaskedSoftmaxGrad", [dg, dyin, dm], [dout], a, stream) == 0, errmsg()
    assert bits(dout.numpy()) == bits(want_dx)
    # and the math is the vendor's: the float64 reference with the mask actually used
    ref = R.scaled_masked_softmax(x, m_used, scale)
    assert np.abs(y.astype(np.float64) - ref).max() <= 2 ** -7
    lib.aclopDestroyAttr(a)
    for d in (dx, dm, dy, dg, dyin, dout):
        d.close()


def test_softmax_defaults_and_int_scale(runtime, stream):
    """No attribute set: scale 1.0, fixed_triu_mask false; an int scale reads as float."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 2, 8, 16)).astype(np.float32)
    mask = rng.random((1, 1, 8, 16)) < 0.5
    for attr, scale in ((ffi.NULL, 1.0), (attrs(scale=2), 2.0)):
        dx, dm, dy = Desc(x), Desc(mask), Desc(shape=x.shape, dtype=np.float32)
        assert execute("ScaledMaskedSoftmax", [dx, dm], [dy], attr, stream) == 0, errmsg()
        assert bits(dy.numpy()) == bits(pyaclnn.ops.scaled_masked_softmax(x, mask, scale))
        for d in (dx, dm, dy):
            d.close()


def test_identity_cast_greater_and_nz_round_trip(runtime, stream):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 20, 37)).astype(np.float16)
    # ND -> NZ (the layout torch_npu's format cast asks for) -> ND
    dx, dnz, dnd = Desc(x), Desc(shape=x.shape, dtype=np.float16, nz=True), Desc(shape=x.shape, dtype=np.float16)
    assert execute("Identity", [dx], [dnz], ffi.NULL, stream) == 0, errmsg()
    raw = dnz.mem.copy_to_host(np.empty(dnz.mem.nbytes // 2, np.float16))
    assert bits(raw) == bits(to_nz(x))                     # the layout, padding zeros included
    assert execute("Identity", [dnz], [dnd], ffi.NULL, stream) == 0, errmsg()
    assert bits(dnd.numpy()) == bits(x)
    # Cast with dst_type, from an NZ input to an ND output
    dc = Desc(shape=x.shape, dtype=BF16)
    a = attrs(dst_type=int(lib.ACL_BF16))
    assert execute("Cast", [dnz], [dc], a, stream) == 0, errmsg()
    assert bits(dc.numpy()) == bits(x.astype(BF16))
    lib.aclopDestroyAttr(a)
    # Greater against a host-placed fp16 scalar (torch_npu passes `x > 0` so)
    zero = Desc(np.array(0.5, np.float16), host=True)
    dg = Desc(shape=x.shape, dtype=bool)
    assert execute("Greater", [dx, zero], [dg], ffi.NULL, stream) == 0, errmsg()
    assert np.array_equal(dg.numpy(), x > np.float16(0.5))
    # a host constant given with aclSetTensorConst needs no buffer
    cdesc = lib.aclCreateTensorDesc(lib.ACL_FLOAT16, 0, ffi.NULL, lib.ACL_FORMAT_ND)
    lib.aclSetTensorPlaceMent(cdesc, lib.ACL_MEMTYPE_HOST_COMPILE_INDEPENDENT)
    value = np.array(-0.25, np.float16)
    assert lib.aclSetTensorConst(cdesc, ffi.cast("void *", value.ctypes.data), 2) == 0
    cbuf = lib.aclCreateDataBuffer(ffi.NULL, 0)
    idesc = ffi.new("aclTensorDesc *[]", [dx.desc, cdesc])
    ibuf = ffi.new("aclDataBuffer *[]", [dx.buf, cbuf])
    odesc = ffi.new("aclTensorDesc *[]", [dg.desc])
    obuf = ffi.new("aclDataBuffer *[]", [dg.buf])
    assert lib.aclopCompileAndExecute(b"Greater", 2, idesc, ibuf, 1, odesc, obuf, ffi.NULL, lib.ACL_ENGINE_SYS,
                                      lib.ACL_COMPILE_SYS, ffi.NULL, stream.handle) == 0, errmsg()
    stream.synchronize()
    assert np.array_equal(dg.numpy(), x > np.float16(-0.25))
    lib.aclDestroyDataBuffer(cbuf)
    lib.aclDestroyTensorDesc(cdesc)
    for d in (dx, dnz, dnd, dc, zero, dg):
        d.close()


@pytest.mark.parametrize("dims_dt", [np.int64, np.int32])
@pytest.mark.parametrize("host", [True, False], ids=["host-dims", "device-dims"])
def test_fill(runtime, stream, dims_dt, host):
    """Fill (dims, value) -> y: y's every element is value converted to y's type
    (torch_npu's zeros / full on some paths: host int64 dims and a 0-d value)."""
    shape = (3, 5, 2)
    dims = Desc(np.array(shape, dims_dt), host=host)
    value = Desc(np.array(-1.75, np.float32), host=True)
    for ydt in (np.float32, np.float16, BF16, np.int32):
        y = Desc(np.full(shape, 9, ydt))
        assert execute("Fill", [dims, value], [y], ffi.NULL, stream) == 0, errmsg()
        want = np.full(shape, -1.75, np.float32).astype(ydt)
        assert bits(y.numpy()) == bits(want), ydt
        y.close()
    # y's shape must be what a host dims says, and dims one entry per dimension
    y = Desc(np.zeros((3, 5, 3), np.float32))
    rc = execute("Fill", [dims, value], [y], ffi.NULL, stream)
    if host:
        assert rc == lib.ACL_ERROR_OP_OUTPUT_NOT_MATCH and "y shape [3,5,3] must equal dims" in errmsg()
    else:  # device dims are not read (that would wait for the stream): y's shape rules
        assert rc == 0, errmsg()
    y.close()
    y = Desc(np.zeros((3, 5), np.float32))
    assert execute("Fill", [dims, value], [y], ffi.NULL, stream) == lib.ACL_ERROR_OP_INPUT_NOT_MATCH
    assert "dims must be 1-D with one entry per dimension of y" in errmsg()
    fdims = Desc(np.array(shape, np.float32), host=True)
    assert execute("Fill", [fdims, value], [y], ffi.NULL, stream) == lib.ACL_ERROR_OP_INPUT_NOT_MATCH
    assert "dims data type must be int32 or int64, got" in errmsg()
    two = Desc(np.array([1.0, 2.0], np.float32), host=True)
    y2 = Desc(np.zeros(shape, np.float32))
    assert execute("Fill", [dims, two], [y2], ffi.NULL, stream) == 161002
    assert "op Fill" in errmsg() and "exactly one element" in errmsg()
    for d in (dims, value, y, fdims, two, y2):
        d.close()


def test_attr_api(runtime):
    live = lib.pyaclnnCountHandles(8)
    a = lib.aclopCreateAttr()
    assert lib.pyaclnnCountHandles(8) == live + 1
    assert lib.aclopSetAttrFloat(a, b"scale", 0.5) == 0
    assert lib.aclopSetAttrString(a, b"scale", b"x") == 0        # replaces, of any kind
    vals = ffi.new("int64_t[]", [1, 2])
    assert lib.aclopSetAttrListInt(a, b"l", 2, vals) == 0
    assert lib.aclopSetAttrListInt(a, b"l", 2, ffi.NULL) == lib.ACL_ERROR_INVALID_PARAM
    assert lib.aclopSetAttrBool(a, ffi.NULL, 1) == lib.ACL_ERROR_INVALID_PARAM and "attrName" in errmsg()
    assert lib.aclopSetAttrBool(ffi.NULL, b"b", 1) == lib.ACL_ERROR_INVALID_PARAM
    lib.aclopDestroyAttr(a)
    assert lib.pyaclnnCountHandles(8) == live
    assert lib.aclopSetAttrBool(a, b"b", 1) == lib.ACL_ERROR_INVALID_PARAM and "not a live aclopAttr" in errmsg()
    lib.aclopDestroyAttr(a)                                       # twice: an error, not a crash
    assert "already destroyed" in errmsg()
    lib.aclopDestroyAttr(ffi.NULL)


def test_errors(runtime, stream):
    x = np.zeros((1, 1, 4, 8), np.float32)
    dx, dm, dy = Desc(x), Desc(np.zeros((1, 1, 4, 8), bool)), Desc(shape=x.shape, dtype=np.float32)
    assert execute("MatMul", [dx, dx], [dy], ffi.NULL, stream) == lib.ACL_ERROR_OP_NOT_FOUND
    assert "op type MatMul is not supported by pyaclnn" in errmsg()
    assert execute("ScaledMaskedSoftmax", [dx], [dy], ffi.NULL, stream) == lib.ACL_ERROR_OP_INPUT_NOT_MATCH
    a = attrs(scale=1.0, fixed_triu_mask=1)                       # an int where a bool is expected
    assert execute("ScaledMaskedSoftmax", [dx, dm], [dy], a, stream) == lib.ACL_ERROR_OP_ATTR_NOT_MATCH
    assert "fixed_triu_mask must be a bool" in errmsg()
    lib.aclopDestroyAttr(a)
    a = attrs(axis=1)
    assert execute("ScaledMaskedSoftmax", [dx, dm], [dy], a, stream) == lib.ACL_ERROR_OP_ATTR_NOT_MATCH
    assert "no attribute named axis" in errmsg()
    lib.aclopDestroyAttr(a)
    # the aclnn op's own checks come through with its status, naming the op type
    bad = Desc(shape=(1, 1, 4, 9), dtype=np.float32)
    assert execute("ScaledMaskedSoftmax", [dx, dm], [bad], ffi.NULL, stream) == 161002
    assert "op ScaledMaskedSoftmax" in errmsg() and "y shape" in errmsg()
    # a format pyaclnn does not lay out
    lib.aclSetTensorFormat(dx.desc, lib.ACL_FORMAT_NC1HWC0)
    assert execute("Identity", [dx], [dy], ffi.NULL, stream) == lib.ACL_ERROR_FORMAT_NOT_MATCH
    assert "NC1HWC0" in errmsg()
    lib.aclSetTensorFormat(dx.desc, lib.ACL_FORMAT_ND)
    # a buffer smaller than its descriptor
    small = lib.aclCreateDataBuffer(dy.mem.cdata, 8)
    idesc = ffi.new("aclTensorDesc *[]", [dx.desc])
    ibuf = ffi.new("aclDataBuffer *[]", [dx.buf])
    odesc = ffi.new("aclTensorDesc *[]", [dy.desc])
    obuf = ffi.new("aclDataBuffer *[]", [small])
    assert lib.aclopCompileAndExecute(b"Identity", 1, idesc, ibuf, 1, odesc, obuf, ffi.NULL, lib.ACL_ENGINE_SYS,
                                      lib.ACL_COMPILE_SYS, ffi.NULL, stream.handle) == lib.ACL_ERROR_INVALID_PARAM
    assert "needs a buffer of 128 bytes" in errmsg()
    lib.aclDestroyDataBuffer(small)
    assert lib.aclopCompileAndExecute(ffi.NULL, 0, ffi.NULL, ffi.NULL, 0, ffi.NULL, ffi.NULL, ffi.NULL,
                                      lib.ACL_ENGINE_SYS, lib.ACL_COMPILE_SYS, ffi.NULL,
                                      stream.handle) == lib.ACL_ERROR_INVALID_PARAM
    for d in (dx, dm, dy, bad):
        d.close()


def test_aclnn_keeps_rejecting_fixed_triu_mask(runtime):
    x = np.zeros((1, 1, 2, 8), np.float32)
    with pytest.raises(pyaclnn.AclError) as ei:
        pyaclnn.ops.scaled_masked_softmax(x, np.zeros(x.shape, bool), 1.0, True)
    assert ei.value.status == 161002 and "fixedTriuMask" in ei.value.message
    with pytest.raises(pyaclnn.AclError) as ei:
        pyaclnn.ops.scaled_masked_softmax_backward(x, x, np.zeros(x.shape, bool), 1.0, True)
    assert ei.value.status == 161002
