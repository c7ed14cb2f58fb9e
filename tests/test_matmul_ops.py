"""The matmul family (native/ops/matmul/ on the library GEMM native/kernels/gemm/)
through the C entry points, against float64 numpy: Mm, BatchMatMul, Matmul, Mv,
Addmm / InplaceAddmm, Baddbmm / InplaceBaddbmm, Ger, WeightQuantBatchMatmulV2
(int8 and int4 weights, per-channel and per-group scales, offsets, bias),
TransMatmulWeight with NZ weights in every matmul, CalculateMatmulWeightSizeV2.
Every dtype combination and cubeMathType, shapes with 1, odd sizes, transposed
and strided views, batch broadcast, empty k and empty outputs, the vendor's
checks (161002) with outputs untouched, and bits that do not depend on the
thread count or the ISA tier."""
import zlib

import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import aclnn, optable
from pyaclnn._errors import check
from pyaclnn._ffi import ffi, lib
from pyaclnn.runtime import DeviceBuffer
from tiers import bits, supported_tiers

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
FLOATS = {"f32": F32, "f16": F16, "bf16": BF16}
INVALID = 161002
EPS = {F32: 2.0 ** -24, F16: 2.0 ** -11, BF16: 2.0 ** -8}


def status(fn, *args):
    with pytest.raises(pyaclnn.AclError) as e:
        fn(*args)
    return e.value.status


def sentinel(shape, dt):
    a = np.empty(shape, dt)
    a.reshape(-1).view(np.uint8)[...] = 0x5A
    return a


def transposed(a):
    """The same values through a view with swapped last two strides."""
    return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)


def strided(a):
    base = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), a.dtype)
    v = base[..., ::2]
    v[...] = a
    return v


def f64(a):
    return np.asarray(a).astype(F64)


def r16(a):
    return f64(a).astype(F16).astype(F64)


def upper(da, db, cube):
    """The vendor's (A2) compute dtype of A x B."""
    if da == BF16 and db == BF16:
        return BF16
    if cube == 2:
        return F16
    if F32 in (da, db) or {da, db} == {F16, BF16}:
        return F32
    return F16


def ref_mm(a, b, out_dt, cube, addmm=False):
    """(product before the output cast, its rounding dtype) per the rules."""
    u = upper(a.dtype, b.dtype, cube)
    x, y = f64(a), f64(b)
    if u == F16:
        x, y = r16(a), r16(b)
    p = np.matmul(x, y)
    mid = None
    low16 = (a.dtype, b.dtype) in ((F16, F16), (BF16, BF16))
    fp32_out = out_dt == F32 and cube != 2
    if addmm and low16 and cube in (0, 3, 4):
        fp32_out = True
    if not fp32_out and u != F32:
        mid = u
    mag = np.matmul(np.abs(x), np.abs(y))
    return p, mid, mag


def close(got, p, mid, mag, k, extra=0.0):
    """got within the GEMM's fp32 chain error plus one rounding of mid and of got's dtype."""
    g = f64(got)
    tol = (k + 2) * 2.0 ** -24 * mag + extra
    ref = p
    if mid is not None:
        tol = tol + EPS[mid] * np.abs(p)
    tol = tol + EPS.get(np.dtype(got.dtype), 0) * (np.abs(p) + tol) + 1e-37
    err = np.abs(g - ref)
    assert np.all(err <= tol), (np.max(err - tol), np.unravel_index(np.argmax(err - tol), err.shape))


def sample(shape, dt, rng):
    return rng.uniform(-1, 1, shape).astype(F32).astype(dt)


# ---- Mm / BatchMatMul / Matmul / Mv ------------------------------------------------

@pytest.mark.parametrize("da", FLOATS, ids=str)
@pytest.mark.parametrize("db", FLOATS, ids=str)
@pytest.mark.parametrize("do", FLOATS, ids=str)
def test_mm_every_dtype(runtime, da, db, do):
    rng = np.random.default_rng(zlib.crc32((da + db + do).encode()))
    for cube in (0, 1, 2, 3, 4):
        m, k, n = 13, 70, 37
        a, b = sample((m, k), FLOATS[da], rng), sample((k, n), FLOATS[db], rng)
        out = sentinel((m, n), FLOATS[do])
        aclnn.Mm(a, b, out, cube)
        p, mid, mag = ref_mm(a, b, out.dtype, cube)
        close(out, p, mid, mag, k)


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 4096, 33), (3, 1, 5), (37, 300, 1), (65, 257, 129),
                                   (2, 0, 3), (0, 5, 4), (4, 5, 0)], ids=str)
def test_mm_shapes_and_layouts(runtime, shape):
    m, k, n = shape
    rng = np.random.default_rng(m * 1000 + k + n)
    a, b = sample((m, k), F32, rng), sample((k, n), F32, rng)
    for la in (lambda x: x, transposed, strided):
        for lb in (lambda x: x, transposed, strided):
            out = sentinel((m, n), F32)
            aclnn.Mm(la(a), lb(b), out, 0)
            if m and n:
                close(out, f64(a) @ f64(b), None, np.abs(f64(a)) @ np.abs(f64(b)), k)
            else:
                assert out.size == 0
    # a transposed / strided output
    out = transposed(sentinel((m, n), F32))
    aclnn.Mm(a, b, out, 0)
    if m and n:
        close(out, f64(a) @ f64(b), None, np.abs(f64(a)) @ np.abs(f64(b)), k)


def test_mm_k0_gives_zeros(runtime):
    out = sentinel((3, 4), F16)
    aclnn.Mm(np.zeros((3, 0), F16), np.zeros((0, 4), F16), out, 0)
    assert np.all(out == 0) and not np.signbit(out).any()


def test_mm_errors(runtime):
    a, b = np.ones((3, 4), F32), np.ones((4, 5), F32)
    for args in ((a, np.ones((5, 5), F32), np.zeros((3, 5), F32), 0),   # k differs
                 (a, b, np.zeros((3, 4), F32), 0),                        # out shape
                 (a[None], b, np.zeros((3, 5), F32), 0),                  # 3-D self
                 (a, b, np.zeros((3, 5), F32), 5),                        # cubeMathType
                 (a, b, np.zeros((3, 5), F32), -2)):
        out = args[2]
        before = out.copy()
        assert status(aclnn.Mm, *args) == INVALID
        assert bits(out) == bits(before)


def test_batch_matmul(runtime):
    rng = np.random.default_rng(5)
    for (ba, bb), dt in (((4, 4), F32), ((1, 3), F16), ((3, 1), BF16)):
        a, b = sample((ba, 9, 33), dt, rng), sample((bb, 33, 17), dt, rng)
        out = sentinel((max(ba, bb), 9, 17), dt)
        aclnn.BatchMatMul(transposed(a), b, out, 0)
        p, mid, mag = ref_mm(a, b, dt, 0)
        close(out, p, mid, mag, 33)
    a, b = np.ones((2, 3, 4), F32), np.ones((3, 4, 5), F32)
    assert status(aclnn.BatchMatMul, a, b, np.zeros((3, 3, 5), F32), 0) == INVALID   # batch 2 vs 3
    assert status(aclnn.BatchMatMul, a, b[:2, :3], np.zeros((2, 3, 5), F32), 0) == INVALID
    assert status(aclnn.BatchMatMul, a[0], b[0], np.zeros((3, 5), F32), 0) == INVALID   # 2-D
    # route 4 -> 0 (accepted)
    aclnn.BatchMatMul(a, b[:2], np.zeros((2, 3, 5), F32), 4)


@pytest.mark.parametrize("sa,sb", [((7,), (7,)), ((5, 7), (7,)), ((7,), (7, 4)), ((3, 5, 7), (7, 4)),
                                   ((2, 1, 5, 7), (3, 7, 4)), ((7,), (2, 3, 7, 4)), ((2, 3, 5, 7), (7,)),
                                   ((1, 2, 1, 2, 5, 7), (2, 1, 2, 1, 7, 3)), ((4, 5, 7), (4, 7, 6))], ids=str)
def test_matmul_torch_rules(runtime, sa, sb):
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    sb = tuple(sb)
    a, b = sample(sa, F32, rng), sample(sb, F32, rng)
    ref = np.matmul(f64(a), f64(b))
    out = sentinel(ref.shape, F32)
    aclnn.Matmul(a, b if b.ndim < 2 else transposed(b), out, 1)
    close(out, ref, None, np.matmul(np.abs(f64(a)), np.abs(f64(b))), sa[-1])


def test_matmul_errors(runtime):
    f = lambda *s: np.ones(s, F32)  # noqa: E731
    assert status(aclnn.Matmul, np.float32(1.0) * f(), f(3), f(), 0) == INVALID          # 0-d
    assert status(aclnn.Matmul, f(2, 3, 4), f(3, 5, 6), f(2, 3, 6), 0) == INVALID        # k 4 vs 5
    assert status(aclnn.Matmul, f(2, 3, 4), f(3, 4, 6), f(3, 3, 6), 0) == INVALID        # batch 2 vs 3
    assert status(aclnn.Matmul, f(3, 4), f(4, 6), f(3, 5), 0) == INVALID                 # out
    assert status(aclnn.Matmul, f(1, 1, 1, 1, 1, 1, 3, 4), f(4, 5), f(1, 1, 1, 1, 1, 1, 3, 5), 0) == INVALID


def test_mv(runtime):
    rng = np.random.default_rng(8)
    for dt in FLOATS.values():
        a, v = sample((33, 70), dt, rng), sample(70, dt, rng)
        out = sentinel(33, dt)
        aclnn.Mv(transposed(a), strided(v), out, 0)
        p, mid, mag = ref_mm(a, v, dt, 0)
        close(out, p, mid, mag, 70)
    out = sentinel(4, F32)
    aclnn.Mv(np.zeros((4, 0), F32), np.zeros(0, F32), out, 0)
    assert np.all(out == 0)
    assert status(aclnn.Mv, np.ones((4, 3), F32), np.ones(3, F16), np.zeros(4, F16), 0) == INVALID
    assert status(aclnn.Mv, np.ones((4, 3), F32), np.ones(4, F32), np.zeros(4, F32), 0) == INVALID
    assert status(aclnn.Mv, np.ones((4, 3), F32), np.ones(3, F32), np.zeros(3, F32), 0) == INVALID


# ---- Addmm / Baddbmm ---------------------------------------------------------------

@pytest.mark.parametrize("dt", FLOATS.values(), ids=str)
@pytest.mark.parametrize("sshape", [(17,), (1,), (9, 1), (1, 17), (9, 17), ()], ids=str)
def test_addmm(runtime, dt, sshape):
    rng = np.random.default_rng(len(sshape))
    m, k, n = 9, 40, 17
    a, b = sample((m, k), dt, rng), sample((k, n), dt, rng)
    s = sample(sshape, dt, rng)
    for beta, alpha in ((1.0, 1.0), (0.5, -2.0), (2.0, 0.25)):
        out = sentinel((m, n), dt)
        aclnn.Addmm(s, a, transposed(b), beta, alpha, out, 0)
        p, mid, mag = ref_mm(a, b, dt, 0, addmm=True)
        ref = beta * f64(s) + alpha * p
        close(out, ref, mid, abs(alpha) * mag + abs(beta) * np.abs(f64(s)), k)


def test_addmm_beta0_alpha0_k0(runtime):
    rng = np.random.default_rng(3)
    a, b = sample((4, 6), F32, rng), sample((6, 5), F32, rng)
    s = np.full((4, 5), np.nan, F32)
    out = sentinel((4, 5), F32)
    aclnn.Addmm(s, a, b, 0.0, 1.5, out, 0)           # beta 0: self's NaNs are not read
    close(out, 1.5 * (f64(a) @ f64(b)), None, 1.5 * np.abs(f64(a)) @ np.abs(f64(b)), 6)
    s = sample((4, 5), F32, rng)
    an = np.full((4, 6), np.nan, F32)
    out = sentinel((4, 5), F16)
    aclnn.Addmm(s, an, b, 0.5, 0.0, out, 0)          # alpha 0: beta * self, no product
    assert bits(out) == bits((np.float32(0.5) * s).astype(F16))
    out = sentinel((4, 5), F32)
    aclnn.Addmm(s[0], np.zeros((4, 0), F32), np.zeros((0, 5), F32), 2.0, 1.0, out, 0)   # k 0
    assert bits(out) == bits(np.broadcast_to(np.float32(2) * s[0], (4, 5)))
    out = sentinel((0, 5), F32)
    aclnn.Addmm(s[0], np.zeros((0, 3), F32), np.zeros((3, 5), F32), 1.0, 1.0, out, 0)   # m 0


def test_inplace_addmm(runtime):
    rng = np.random.default_rng(4)
    for dt in FLOATS.values():
        a, b = sample((6, 30), dt, rng), sample((30, 7), dt, rng)
        s = sample((6, 7), dt, rng)
        ref = 0.5 * f64(s) + 2.0 * f64(a) @ f64(b)
        _, mid, mag = ref_mm(a, b, dt, 0, addmm=True)
        aclnn.InplaceAddmm(s, a, b, 0.5, 2.0, 0)
        close(s, ref, mid, 2.0 * mag + 0.5, 30)
    assert status(aclnn.InplaceAddmm, np.ones((1, 7), F32), np.ones((6, 3), F32), np.ones((3, 7), F32), 1.0, 1.0,
                  0) == INVALID   # selfRef is the output: no broadcast


def test_addmm_errors(runtime):
    a, b, s = np.ones((3, 4), F32), np.ones((4, 5), F32), np.ones(5, F32)
    o = np.zeros((3, 5), F32)
    assert status(aclnn.Addmm, np.ones(4, F32), a, b, 1.0, 1.0, o, 0) == INVALID        # self does not broadcast
    assert status(aclnn.Addmm, np.ones((1, 3, 5), F32), a, b, 1.0, 1.0, o, 0) == INVALID  # 3-D self
    assert status(aclnn.Addmm, s, a, b, 1.0, 1.0, np.zeros((3, 4), F32), 0) == INVALID
    assert status(aclnn.Addmm, s, a, b, 1.0, 1.0, o, 5) == INVALID
    assert status(aclnn.Addmm, s, a, b[:3], 1.0, 1.0, o, 0) == INVALID


@pytest.mark.parametrize("dt", FLOATS.values(), ids=str)
def test_baddbmm(runtime, dt):
    rng = np.random.default_rng(6)
    b1, b2 = sample((3, 5, 24), dt, rng), sample((1, 24, 7), dt, rng)
    for sshape in ((7,), (5, 7), (3, 1, 7), (3, 5, 7)):
        s = sample(sshape, dt, rng)
        out = sentinel((3, 5, 7), dt)
        aclnn.Baddbmm(s, b1, transposed(b2), 0.75, 1.25, out, 0)
        p, mid, mag = ref_mm(b1, b2, dt, 0, addmm=True)
        close(out, 0.75 * f64(s) + 1.25 * p, mid, 1.25 * mag + 0.75 * np.abs(f64(s)), 24)
    s = np.full((3, 5, 7), np.nan, dt)
    out = sentinel((3, 5, 7), dt)
    aclnn.Baddbmm(s, b1, b2, 0.0, 1.0, out, 0)       # beta 0 ignores self
    assert not np.isnan(f64(out)).any()
    s = sample((3, 5, 7), dt, rng)
    ref = 0.5 * f64(s) + f64(b1) @ f64(b2)
    aclnn.InplaceBaddbmm(s, b1, b2, 0.5, 1.0, 0)
    _, mid, mag = ref_mm(b1, b2, dt, 0, addmm=True)
    close(s, ref, mid, mag + 0.5, 24)


def test_baddbmm_errors(runtime):
    o = np.zeros((3, 5, 7), F32)
    b1, b2 = np.ones((3, 5, 4), F32), np.ones((3, 4, 7), F32)
    assert status(aclnn.Baddbmm, np.ones((2, 5, 7), F32), b1, b2, 1.0, 1.0, o, 0) == INVALID
    assert status(aclnn.Baddbmm, np.ones(7, F32), b1[:1], b2, 1.0, 1.0, o, 0) == INVALID   # batch1 broadcast
    assert status(aclnn.Baddbmm, np.ones(7, F32), b1, b2[:, :3], 1.0, 1.0, o, 0) == INVALID
    assert status(aclnn.Baddbmm, np.ones(7, F32), b1, b2, 1.0, 1.0, o, 9) == INVALID


# ---- Ger -------------------------------------------------------------------------------

@pytest.mark.parametrize("da,db,do", [("f32", "f32", "f32"), ("f16", "f16", "f16"), ("f16", "f32", "f64"),
                                      ("s32", "s8", "s64"), ("u8", "bool", "s16"), ("bool", "bool", "bool"),
                                      ("f64", "s64", "f32"), ("s16", "s16", "f16")])
def test_ger(runtime, da, db, do):
    np_dt = {"f32": F32, "f16": F16, "f64": F64, "s32": np.int32, "s8": np.int8, "s64": np.int64,
             "u8": np.uint8, "bool": np.bool_, "s16": np.int16}
    rng = np.random.default_rng(7)
    x = (rng.uniform(-50, 50, 9)).astype(np_dt[da]) if da != "bool" else rng.random(9) < 0.5
    y = (rng.uniform(-50, 50, 6)).astype(np_dt[db]) if db != "bool" else rng.random(6) < 0.5
    if da == "u8":
        x = rng.integers(0, 200, 9).astype(np.uint8)
    out = sentinel((9, 6), np_dt[do])
    aclnn.Ger(strided(x), y, out)
    ref = np.outer(x, y).astype(np.result_type(x, y)).astype(np_dt[do])
    if np.dtype(np_dt[do]).kind == "f":
        np.testing.assert_allclose(f64(out), f64(ref), rtol=2e-3 if do == "f16" else 1e-6)
    else:
        assert bits(out) == bits(ref)
    assert status(aclnn.Ger, np.ones(3, F32), np.ones(2, F32), np.zeros((2, 3), F32)) == INVALID
    assert status(aclnn.Ger, np.ones(3, F32), np.ones(2, F32), np.zeros((3, 2), np.int32)) == INVALID   # cast


# ---- raw tensors (NZ formats, INT4) -------------------------------------------------------

class Raw:
    """Device memory holding `array`'s bytes, and aclTensors over it with any
    descriptor (dtype, shape, strides, offset, format, storage)."""

    def __init__(self, array):
        self.array = np.ascontiguousarray(array)
        self.buf = DeviceBuffer(max(1, self.array.nbytes))
        check(lib.aclrtMemcpy(self.buf.cdata, self.array.nbytes or 1, ffi.cast("void *", self.array.ctypes.data),
                              self.array.nbytes, lib.ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")
        self.handles = []

    def tensor(self, dtype, shape, strides, offset=0, fmt=None, storage=None):
        fmt = lib.ACL_FORMAT_ND if fmt is None else fmt
        storage = storage or [self.array.nbytes * (2 if dtype == lib.ACL_INT4 else 1) //
                              max(1, {lib.ACL_FLOAT: 4, lib.ACL_FLOAT16: 2, lib.ACL_BF16: 2}.get(dtype, 1))]
        h = lib.aclCreateTensor(ffi.new("int64_t[]", list(shape) or [0]), len(shape), dtype,
                                ffi.new("int64_t[]", list(strides) or [0]), offset, fmt,
                                ffi.new("int64_t[]", list(storage)), len(storage), self.buf.cdata)
        assert h != ffi.NULL
        self.handles.append(h)
        return h

    def read(self):
        out = np.empty_like(self.array)
        check(lib.aclrtMemcpy(ffi.cast("void *", out.ctypes.data), out.nbytes or 1, self.buf.cdata, out.nbytes,
                              lib.ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy")
        return out

    def close(self):
        for h in self.handles:
            lib.aclDestroyTensor(h)
        self.buf.close()


def run_raw(name, *args):
    ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    check(getattr(lib, "aclnn%sGetWorkspaceSize" % name)(*args, ws, ex), "aclnn%sGetWorkspaceSize" % name)
    with pyaclnn.Stream() as s:
        w = DeviceBuffer(ws[0]) if ws[0] else None
        check(getattr(lib, "aclnn" + name)(w.cdata if w else ffi.NULL, ws[0], ex[0], s.handle), "aclnn" + name)
        s.synchronize()
        if w:
            w.close()


ACL = {F32: "ACL_FLOAT", F16: "ACL_FLOAT16", BF16: "ACL_BF16", np.dtype(np.int8): "ACL_INT8"}


def nz_layout(x, c0):
    """pyaclnn's NZ of the 2-D matrix x: column panels of c0, no padding."""
    r, c = x.shape
    return np.concatenate([x[:, q:q + c0].reshape(-1) for q in range(0, c, c0)])


@pytest.mark.parametrize("dt", [F32, F16, BF16], ids=str)
def test_trans_matmul_weight_and_nz_matmuls(runtime, dt):
    """ggml-cann's path: an [N, K] weight converted in place, then Mm / BatchMatMul /
    Matmul / Addmm with the transposed view marked FRACTAL_NZ: the same bits as ND."""
    pyaclnn.ensure_initialized()
    rng = np.random.default_rng(11)
    n, k, m = 45, 70, 5
    w = sample((n, k), dt, rng)
    x = sample((m, k), dt, rng)
    raw = Raw(w)
    try:
        t = raw.tensor(getattr(lib, ACL[dt]), (n, k), (k, 1))
        run_raw("TransMatmulWeight", t)
        c0 = 32 // dt.itemsize
        assert raw.read().tobytes() == nz_layout(w, c0).tobytes()
        fmt = ffi.new("aclFormat *")
        check(lib.aclGetFormat(t, fmt), "aclGetFormat")
        assert fmt[0] == lib.ACL_FORMAT_FRACTAL_NZ
        ref = aclnn.Mm(x, w.T, sentinel((m, n), dt), 2)
        nzt = raw.tensor(getattr(lib, ACL[dt]), (k, n), (1, k), fmt=lib.ACL_FORMAT_FRACTAL_NZ)
        for name in ("Mm", "Matmul"):
            xr, outr = Raw(x), Raw(sentinel((m, n), dt))
            run_raw(name, xr.tensor(getattr(lib, ACL[dt]), (m, k), (k, 1)), nzt,
                    outr.tensor(getattr(lib, ACL[dt]), (m, n), (n, 1)), 2)
            assert outr.read().tobytes() == ref.tobytes(), name
            xr.close(), outr.close()
        xr, outr = Raw(x), Raw(sentinel((m, n), dt))
        nz3 = raw.tensor(getattr(lib, ACL[dt]), (1, k, n), (n * k, 1, k), fmt=lib.ACL_FORMAT_FRACTAL_NZ)
        run_raw("BatchMatMul", xr.tensor(getattr(lib, ACL[dt]), (1, m, k), (m * k, k, 1)), nz3,
                outr.tensor(getattr(lib, ACL[dt]), (1, m, n), (m * n, n, 1)), 2)
        assert outr.read().tobytes() == ref.tobytes()
        xr.close(), outr.close()
    finally:
        raw.close()


def test_nz_vendor_padded_layout(runtime):
    """A weight in CANN's padded NZ ([n1, k1, 16, 16] storage) reads as such."""
    rng = np.random.default_rng(12)
    k, n, m = 20, 40, 3
    w = sample((k, n), F16, rng)          # mat2 (k, n): panels over n of 16, rows k padded to 32
    k1, n1 = 2, 3
    pad = np.zeros((n1 * 16, k1 * 16), F16)
    pad[:n, :k] = w.T
    store = np.zeros((n1, k1 * 16, 16), F16)
    for q in range(n1):
        store[q, :k, :] = np.pad(w[:, q * 16:(q + 1) * 16], ((0, 0), (0, 16 - w[:, q * 16:(q + 1) * 16].shape[1])))
    raw, x = Raw(store), sample((m, k), F16, rng)
    try:
        nzt = raw.tensor(lib.ACL_FLOAT16, (k, n), (n, 1), fmt=lib.ACL_FORMAT_FRACTAL_NZ, storage=[n1, k1, 16, 16])
        xr, outr = Raw(x), Raw(sentinel((m, n), F16))
        run_raw("Mm", xr.tensor(lib.ACL_FLOAT16, (m, k), (k, 1)), nzt,
                outr.tensor(lib.ACL_FLOAT16, (m, n), (n, 1)), 0)
        assert outr.read().tobytes() == aclnn.Mm(x, w, sentinel((m, n), F16), 0).tobytes()
        xr.close(), outr.close()
    finally:
        raw.close()


def test_calculate_matmul_weight_size_v2(runtime):
    assert aclnn.CalculateMatmulWeightSizeV2([100, 33], np.float16, None) == 112 * 48
    assert aclnn.CalculateMatmulWeightSizeV2([100, 33], np.int8, None) == 112 * 64
    assert aclnn.CalculateMatmulWeightSizeV2([2, 100, 33], np.float32, None) == 2 * 112 * 64
    assert status(aclnn.CalculateMatmulWeightSizeV2, [5], np.float16, None) == INVALID
    assert status(aclnn.CalculateMatmulWeightSizeV2, [5, 0], np.float16, None) == INVALID
    # a dim that would overflow when aligned (found by the table fuzzer), and a product past 2^64
    assert status(aclnn.CalculateMatmulWeightSizeV2, [5, 2 ** 63 - 1], np.float16, None) == INVALID
    assert status(aclnn.CalculateMatmulWeightSizeV2, [2 ** 40, 2 ** 40], np.float16, None) == INVALID


# ---- WeightQuantBatchMatmulV2 -----------------------------------------------------------

def dequant(w, scale, offset, group, dt):
    """The definition: t = R(w + offset), weight = R(t * scale), R = round to x's dtype (fp32 ops)."""
    k, n = w.shape
    g = np.arange(k) // group if group else np.zeros(k, int)
    s = f64(scale).reshape(-1, n)[g if scale.ndim == 2 and scale.shape[0] > 1 else 0]
    t = w.astype(np.float32)
    if offset is not None:
        o = f64(offset).reshape(-1, n)[g if offset.ndim == 2 and offset.shape[0] > 1 else 0]
        t = (t + o.astype(np.float32)).astype(dt).astype(np.float32)
    return (t * s.astype(np.float32)).astype(dt)


@pytest.mark.parametrize("dt", [F16, BF16], ids=str)
@pytest.mark.parametrize("group,with_offset,with_bias", [(0, False, False), (0, True, True), (32, False, True),
                                                         (64, True, False)])
def test_wqbmm_int8(runtime, dt, group, with_offset, with_bias):
    rng = np.random.default_rng(group + with_offset)
    m, k, n = 3, 160, 40
    x = sample((m, k), dt, rng)
    w = rng.integers(-128, 128, (n, k)).astype(np.int8)     # ggml's [N, K], passed transposed
    groups = (k + group - 1) // group if group else 1
    scale = (rng.uniform(0.001, 0.02, (groups, n))).astype(dt)
    offset = rng.uniform(-2, 2, (groups, n)).astype(dt) if with_offset else None
    bias = rng.uniform(-1, 1, n).astype(dt) if with_bias else None
    y = sentinel((m, n), dt)
    aclnn.WeightQuantBatchMatmulV2(x, w.T, scale, offset, None, None, bias, group, y)
    wd = dequant(w.T, scale, offset, group, dt)
    ref = f64(x) @ f64(wd) + (f64(bias) if with_bias else 0)
    close(y, ref, None, np.abs(f64(x)) @ np.abs(f64(wd)), k)
    # the same bits as Mm on the dequantised weight (fp32 product, one rounding)
    if not with_bias:
        mm = sentinel((m, n), dt)
        aclnn.Mm(x, np.ascontiguousarray(wd), mm, 0)
        assert bits(y) == bits(mm)


def test_wqbmm_int4_ggml_q4_0(runtime):
    """ggml-cann's Q4_0 call: an INT4 [N, K] weight as a transposed view in
    nibbles, fp16 scales [K/32, N] (transposed), group 32, fp16 x and y."""
    rng = np.random.default_rng(13)
    m, k, n = 2, 96, 24
    q = rng.integers(-8, 8, (n, k)).astype(np.int8)
    packed = ((q[:, 0::2] & 15) | ((q[:, 1::2] & 15) << 4)).astype(np.uint8)   # element 2e low nibble
    sc = rng.uniform(0.01, 0.1, (n, k // 32)).astype(F16)
    x = sample((m, k), F16, rng)
    raw_w, raw_s, raw_x, raw_y = Raw(packed), Raw(sc), Raw(x), Raw(sentinel((m, n), F16))
    try:
        tw = raw_w.tensor(lib.ACL_INT4, (k, n), (1, k), storage=[n * k])
        ts = raw_s.tensor(lib.ACL_FLOAT16, (k // 32, n), (1, k // 32))
        tx = raw_x.tensor(lib.ACL_FLOAT16, (m, k), (k, 1))
        ty = raw_y.tensor(lib.ACL_FLOAT16, (m, n), (n, 1))
        run_raw("WeightQuantBatchMatmulV2", tx, tw, ts, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, 32, ty)
        y = raw_y.read()
    finally:
        for r in (raw_w, raw_s, raw_x, raw_y):
            r.close()
    wd = dequant(q.T, np.ascontiguousarray(sc.T), None, 32, F16)
    close(y, f64(x) @ f64(wd), None, np.abs(f64(x)) @ np.abs(f64(wd)), k)


def test_wqbmm_errors(runtime):
    x, w, s = np.ones((2, 64), F16), np.ones((64, 8), np.int8), np.ones((1, 8), F16)
    y = np.zeros((2, 8), F16)
    call = aclnn.WeightQuantBatchMatmulV2
    assert status(call, x, w, s, None, None, None, None, 16, y) == INVALID            # group not a multiple of 32
    assert status(call, x, w, s, None, None, None, None, 64, y) == INVALID            # group > k - 1
    assert status(call, x, w, np.ones((3, 8), F16), None, None, None, None, 32, y) == INVALID   # scale shape
    assert status(call, x, w, s.astype(BF16), None, None, None, None, 0, y) == INVALID  # scale dtype
    assert status(call, x, w, s, None, None, None, None, 0, np.zeros((2, 8), BF16)) == INVALID
    assert status(call, x, w[:32], s, None, None, None, None, 0, y) == INVALID        # k differs
    assert status(call, x[:0], w, s, None, None, None, None, 0, y[:0]) == INVALID     # m 0
    assert status(call, x, w, s, np.ones((1, 4), F16), None, None, None, 0, y) == INVALID   # offset shape
    assert status(call, x, w.astype(np.int32), s, None, None, None, None, 0, y) == INVALID


# ---- bits: threads and tiers ---------------------------------------------------------------

def _bit_cases(rng):
    a32, b32 = sample((70, 300), F32, rng), sample((300, 50), F32, rng)
    a16, b16 = sample((33, 257), BF16, rng), sample((257, 41), BF16, rng)
    h16, g16 = sample((20, 130), F16, rng), sample((130, 30), F16, rng)
    w = rng.integers(-128, 128, (40, 96)).astype(np.int8)
    sc = rng.uniform(0.001, 0.02, (3, 40)).astype(F16)
    x = sample((5, 96), F16, rng)
    sub = sample((300,), BF16, rng)
    sub[::7] = np.float32(1e-39).astype(BF16)   # denormals: the bf16 chain flushes them
    a16[0] = sub[:257]
    return [
        lambda: aclnn.Mm(a32, b32, np.empty((70, 50), F32), 0),
        lambda: aclnn.Mm(transposed(a32), transposed(b32), np.empty((70, 50), F16), 2),
        lambda: aclnn.Mm(a16, transposed(b16), np.empty((33, 41), BF16), 0),
        lambda: aclnn.Mm(a16, b16, np.empty((33, 41), F32), 0),
        lambda: aclnn.Matmul(h16[None], g16, np.empty((1, 20, 30), F16), 0),
        lambda: aclnn.Addmm(sample((30,), F16, rng), h16, g16, 0.5, 1.5, np.empty((20, 30), F16), 0),
        lambda: aclnn.WeightQuantBatchMatmulV2(x, w.T, sc, None, None, None, None, 32, np.empty((5, 40), F16)),
        lambda: aclnn.Mv(a32, b32[:, 0].copy(), np.empty(70, F32), 0),
    ]


def test_bits_do_not_depend_on_threads_or_tiers(runtime, restore_runtime_knobs):
    results = []
    for tier in supported_tiers():
        pyaclnn.set_max_isa(tier)
        for threads in (1, 3):
            pyaclnn.set_num_threads(threads)
            rng = np.random.default_rng(21)
            results.append((tier, threads, [bits(f()) for f in _bit_cases(rng)]))
    for tier, threads, r in results[1:]:
        for i, (x, y) in enumerate(zip(results[0][2], r)):
            assert x == y, (tier, threads, i)


def test_table_rows(runtime):
    ops = optable.by_name()
    for name in ("Mm", "BatchMatMul", "Matmul", "Mv", "Addmm", "InplaceAddmm", "Baddbmm", "InplaceBaddbmm", "Ger",
                 "WeightQuantBatchMatmulV2", "TransMatmulWeight", "CalculateMatmulWeightSizeV2"):
        assert ops[name].family == "matmul", name


def _fp16_edge_values(rng, n):
    """fp32 values at fp16's rounding edges: ties to even, the overflow bound 65520,
    fp16 subnormals and their ties, signed zeros, inf and NaN, and ordinary values."""
    edge = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 2 ** -11), 65504.0, 65519.99, 65520.0, -65520.0,
                     2 ** -24, 2 ** -25, 3 * 2 ** -25, 2 ** -14 - 2 ** -25, 1e-30, -0.0, 0.0,
                     np.inf, -np.inf, 2049.0, 2051.0, 0.1, -0.3333333], F32)
    v = rng.uniform(-2, 2, n).astype(F32)
    v[rng.integers(0, n, n // 3)] = rng.choice(edge, n // 3)
    return v


def test_fp16_inputs_rounded_as_the_scalar_path(runtime, restore_runtime_knobs):
    """cubeMathType 2 on fp32 operands rounds them to fp16; the SIMD tiers round the packed
    panels (F16C) and must give the scalar path's bits, on every panel shape (partial
    row/column panels, several k blocks, transposed operands)."""
    rng = np.random.default_rng(7)
    shapes = [(1, 300, 33), (5, 17, 1), (13, 513, 70), (40, 31, 97)]
    ops = []
    for m, k, n in shapes:
        a = _fp16_edge_values(rng, m * k).reshape(m, k)
        b = _fp16_edge_values(rng, k * n).reshape(k, n)
        ops.append((a, b))
    results = []
    for tier in supported_tiers():
        pyaclnn.set_max_isa(tier)
        for threads in (1, 2):
            pyaclnn.set_num_threads(threads)
            out = []
            for a, b in ops:
                for x, y in ((a, b), (transposed(a), transposed(b))):
                    o = np.empty((a.shape[0], b.shape[1]), F32)
                    aclnn.Mm(x, y, o, 2)
                    out.append(bits(o))
            results.append((tier, threads, out))
    for tier, threads, r in results[1:]:
        for i, (x, y) in enumerate(zip(results[0][2], r)):
            assert x == y, (tier, threads, i)
    # and the values: fp16-rounded inputs, fp32 chain, the product rounded to fp16
    pyaclnn.set_max_isa(supported_tiers()[-1])
    for a, b in ops:
        fin = np.isfinite(a.astype(F16)).all(1)[:, None] & np.isfinite(b.astype(F16)).all(0)[None, :]
        o = np.empty((a.shape[0], b.shape[1]), F32)
        aclnn.Mm(a, b, o, 2)
        with np.errstate(all="ignore"):
            p, mid, mag = ref_mm(a, b, F32, 2)
        ok = fin & (np.abs(p) < 60000)
        close(np.where(ok, o, 0).astype(F32), np.where(ok, p, 0), mid, np.where(ok, mag, 0), a.shape[1])
