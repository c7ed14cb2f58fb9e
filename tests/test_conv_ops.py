"""The conv family (native/ops/conv/) through the C entry points, against torch CPU in
float64: Convolution (1-D / 2-D / 3-D, transposed, groups, strides, asymmetric padding,
dilation, output padding, bias or none, cubeMathType, NCL / NCHW / NCDHW / NDHWC), Im2col
(torch's unfold), AvgPool2d, MaxPool and TriangularSolve. Every listed dtype, strided
inputs and outputs, empty tensors, the vendor's checks with their status codes (outputs
unchanged after an error), the ggml-cann call patterns (SSM_CONV, CONV_TRANSPOSE_1D,
IM2COL, POOL_2D, SOLVE_TRI), in-place outputs, and bits that do not depend on the thread
count or the ISA tier."""
import contextlib

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import pyaclnn
from pyaclnn import optable
from pyaclnn._errors import AclError, check
from pyaclnn._ffi import ffi, lib
from pyaclnn.ops import _private_stream
from pyaclnn.tensor import Tensor
from tiers import bits, supported_tiers

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F16, F64 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64)
NP = {"f32": F32, "f16": F16, "bf16": BF16, "f64": F64}
OPS = optable.by_name()
NULLPTR, INVALID = 161001, 161002
NCL, NCHW, NCDHW, NDHWC, ND = (lib.ACL_FORMAT_NCL, lib.ACL_FORMAT_NCHW, lib.ACL_FORMAT_NCDHW,
                              lib.ACL_FORMAT_NDHWC, lib.ACL_FORMAT_ND)
SP_FMT = {3: NCL, 4: NCHW, 5: NCDHW}


# ---- calling an operator with explicit formats --------------------------------

def _default_format(name, pname, a):
    if a is None or a.ndim == 0:
        return ND
    if name == "Convolution" and pname in ("input", "weight", "output"):
        return SP_FMT.get(a.ndim, ND)
    if name in ("AvgPool2d", "MaxPool"):
        return {3: NCL, 4: NCHW}.get(a.ndim, ND)
    return ND


def call(name, *args, fmt=None):
    """Runs aclnn<name> on numpy arrays (tensors keep their strides; formats from `fmt`
    {param: format} or the op's usual ones); returns the output arrays (one or a tuple).
    A failing status raises AclError."""
    fmt = fmt or {}
    params = OPS[name].parsed()
    assert len(args) == len(params), (name, [p.name for p in params])
    pyaclnn.ensure_initialized()
    with contextlib.ExitStack() as st:
        cargs, outs = [], []
        for p, v in zip(params, args):
            if p.kind == "TENSOR":
                if v is None:
                    cargs.append(ffi.NULL)
                    continue
                a = np.asarray(v)
                t = st.enter_context(Tensor(a, format=fmt.get(p.name, _default_format(name, p.name, a))))
                cargs.append(t.handle)
                if p.io != "IN":
                    outs.append(t)
            elif p.kind == "INT_ARRAY":
                if v is None:
                    cargs.append(ffi.NULL)
                    continue
                vals = [int(x) for x in v]
                h = lib.aclCreateIntArray(ffi.new("int64_t[]", vals or [0]), len(vals))
                st.callback(lib.aclDestroyIntArray, h)
                cargs.append(h)
            else:
                cargs.append(v)
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        check(getattr(lib, "aclnn%sGetWorkspaceSize" % name)(*cargs, ws, ex), "aclnn%sGetWorkspaceSize" % name)
        assert ws[0] == 0
        stream = _private_stream()
        check(getattr(lib, "aclnn" + name)(ffi.NULL, 0, ex[0], stream.handle), "aclnn" + name)
        stream.synchronize()
        res = [t.numpy() for t in outs]
    return res[0] if len(res) == 1 else tuple(res)


def status(name, *args, fmt=None):
    try:
        call(name, *args, fmt=fmt)
    except AclError as e:
        return e.status
    return 0


# ---- numbers -----------------------------------------------------------------

def sample(dt, shape, rng, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(dt)


def t64(a):
    return torch.from_numpy(np.ascontiguousarray(np.asarray(a, dtype=np.float64)))


def ulp(x, dt):
    """The spacing of dtype dt at |x| (elementwise)."""
    mant, emin = {F32: (23, -126), F16: (10, -14), BF16: (7, -126), F64: (52, -1022)}[np.dtype(dt)]
    ax = np.abs(np.asarray(x, np.float64))
    e = np.floor(np.log2(np.where(ax > 0, ax, 1.0)))
    e = np.maximum(e, emin)
    return np.exp2(e - mant)


def assert_rounded(got, ref, dt, terms=None):
    """got (dtype dt) is ref (float64) rounded once to dt, within one unit of the last place
    (the fp32 sums may land a tie on either side) plus the fp32 accumulation error."""
    got = np.asarray(got).astype(np.float64)
    ref = np.asarray(ref, np.float64)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    tol = ulp(ref, dt) * 1.0
    if terms is not None:
        tol = tol + np.asarray(terms, np.float64) * 2.0 ** -21
    bad = ~(np.abs(got - ref) <= tol)
    assert not bad.any(), (np.argwhere(bad)[:5], got[bad][:5], ref[bad][:5])


def strided(a):
    """The same values as a non-contiguous view (every other element of a bigger buffer)."""
    if a.ndim == 0 or a.size == 0:
        return a
    base = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), a.dtype)
    v = base[..., ::2]
    v[...] = a
    return v


def rounded(a, dt):
    return np.asarray(a, np.float64).astype(dt).astype(np.float64)


# ---- Convolution -----------------------------------------------------------------

TORCH_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
TORCH_CONVT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def conv_ref(x, w, b, stride, pad, dil, groups, transposed=False, outpad=None):
    nd = x.ndim - 2
    bb = None if b is None else t64(b)
    if transposed:
        return TORCH_CONVT[nd](t64(x), t64(w), bb, stride=stride, padding=pad, output_padding=outpad,
                               groups=groups, dilation=dil).numpy()
    return TORCH_CONV[nd](t64(x), t64(w), bb, stride=stride, padding=pad, dilation=dil, groups=groups).numpy()


def conv_terms(x, w, stride, pad, dil, groups, transposed=False, outpad=None):
    """sum |x| |w| per output: the scale of the fp32 accumulation error."""
    return conv_ref(np.abs(np.asarray(x, np.float64)), np.abs(np.asarray(w, np.float64)), None, stride, pad, dil,
                    groups, transposed, outpad)


CONV_CASES = [  # (input shape, weight shape, stride, padding, dilation, groups)
    ((2, 4, 11), (6, 2, 3), [2], [1], [2], 2),
    ((1, 3, 9), (5, 3, 1), [1], [0], [1], 1),
    ((2, 6, 7, 9), (4, 3, 3, 2), [2, 1], [1, 0], [1, 2], 2),
    ((1, 3, 8, 8), (8, 3, 1, 1), [1, 1], [0, 0], [1, 1], 1),
    ((1, 4, 5, 6, 7), (4, 1, 2, 3, 2), [1, 2, 1], [1, 0, 1], [2, 1, 1], 4),
]


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("with_bias", [False, True])
def test_convolution_forward(runtime, dt, case, with_bias):
    xs, wsh, stride, pad, dil, groups = CONV_CASES[case]
    d = NP[dt]
    rng = np.random.default_rng(case)
    x, w = sample(d, xs, rng), sample(d, wsh, rng)
    b = sample(d, (wsh[0],), rng) if with_bias else None
    ref = conv_ref(x, w, b, stride, pad, dil, groups)
    y = np.full(ref.shape, 7, d)
    got = call("Convolution", x, w, b, stride, pad, dil, False, [0] * len(stride), groups, y, 1 if d == F32 else 0)
    assert got.dtype == d
    assert_rounded(got, ref, d, conv_terms(x, w, stride, pad, dil, groups))
    # strided (non-contiguous) input, weight and output give the same bits
    ys = strided(np.zeros(ref.shape, d))
    got2 = call("Convolution", strided(x), strided(w), None if b is None else strided(b), stride, pad, dil, False,
                [0] * len(stride), groups, ys, 1 if d == F32 else 0)
    assert bits(got2) == bits(got)


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_convolution_transposed(runtime, dt, nd):
    d = NP[dt]
    rng = np.random.default_rng(10 + nd)
    cases = {
        1: ((2, 4, 7), (4, 3, 3), [3], [1], [2], [1], 2),
        2: ((2, 4, 5, 6), (4, 3, 3, 2), [2, 3], [1, 0], [1, 2], [1, 2], 2),
        3: ((1, 2, 3, 4, 3), (2, 2, 2, 3, 2), [2, 1, 2], [1, 1, 0], [1, 1, 2], [1, 0, 1], 1),
    }
    xs, wsh, stride, pad, dil, outpad, groups = cases[nd]
    x, w = sample(d, xs, rng), sample(d, wsh, rng)
    b = sample(d, (wsh[1] * groups,), rng)
    ref = conv_ref(x, w, b, stride, pad, dil, groups, True, outpad)
    y = np.zeros(ref.shape, d)
    got = call("Convolution", x, w, b, stride, pad, dil, True, outpad, groups, y, 0)
    assert_rounded(got, ref, d, conv_terms(x, w, stride, pad, dil, groups, True, outpad))


def test_convolution_asymmetric_padding(runtime):
    """conv1d: padding (left, right); conv2d: (top, bottom, left, right); transposed 2-D with
    4 values crops top / left from the front."""
    rng = np.random.default_rng(3)
    x, w = sample(F32, (1, 2, 9), rng), sample(F32, (3, 2, 3), rng)
    ref = F.conv1d(F.pad(t64(x), (2, 1)), t64(w), stride=2).numpy()
    got = call("Convolution", x, w, None, [2], [2, 1], [1], False, [0], 1, np.zeros(ref.shape, F32), 0)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    x, w = sample(F32, (1, 2, 6, 7), rng), sample(F32, (3, 2, 3, 2), rng)
    ref = F.conv2d(F.pad(t64(x), (0, 3, 2, 1)), t64(w)).numpy()  # top 2, bottom 1, left 0, right 3
    got = call("Convolution", x, w, None, [1, 1], [2, 1, 0, 3], [1, 1], False, [0, 0], 1,
               np.zeros(ref.shape, F32), 0)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    # transposed: the full output cropped by (top, bottom, left, right)
    x, w = sample(F32, (1, 2, 4, 5), rng), sample(F32, (2, 3, 3, 3), rng)
    full = F.conv_transpose2d(t64(x), t64(w), stride=2).numpy()
    ref = full[:, :, 1:full.shape[2] - 2, 0:full.shape[3] - 1]
    got = call("Convolution", x, w, None, [2, 2], [1, 2, 0, 1], [1, 1], True, [0, 0], 1,
               np.zeros(ref.shape, F32), 0)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_convolution_ndhwc(runtime):
    """3-D tensors may be NDHWC: the view's dims are (N, D, H, W, C); weight NDHWC is (O, kD, kH, kW, I)."""
    rng = np.random.default_rng(4)
    x, w = sample(F32, (2, 3, 4, 5, 6), rng), sample(F32, (4, 3, 2, 3, 2), rng)
    ref = conv_ref(x, w, None, [1, 1, 2], [1, 0, 1], [1, 1, 1], 1)
    xh = np.ascontiguousarray(np.moveaxis(x, 1, 4))
    wh = np.ascontiguousarray(np.moveaxis(w, 1, 4))
    y = np.zeros(np.moveaxis(ref, 1, 4).shape, F32)
    got = call("Convolution", xh, wh, None, [1, 1, 2], [1, 0, 1], [1, 1, 1], False, [0, 0, 0], 1, y, 0,
               fmt={"input": NDHWC, "weight": NDHWC, "output": NDHWC})
    np.testing.assert_allclose(np.moveaxis(got, 4, 1), ref, rtol=1e-5, atol=1e-5)
    # NCDHW weight with NDHWC activations
    got = call("Convolution", xh, w, None, [1, 1, 2], [1, 0, 1], [1, 1, 1], False, [0, 0, 0], 1, y, 0,
               fmt={"input": NDHWC, "output": NDHWC})
    np.testing.assert_allclose(np.moveaxis(got, 4, 1), ref, rtol=1e-5, atol=1e-5)


def test_convolution_dtype_rules(runtime):
    """Compute dtype: f32 if either input is f32, f16 / bf16 when both are, f32 for f16 + bf16;
    cubeMathType 2 rounds the inputs and the result to f16. The forward kernel's output is in
    the compute dtype (then converted to output's); the transposed one gives f32 straight to
    an f32 output. A bias is rounded to the compute dtype (bf16: kept in f32)."""
    rng = np.random.default_rng(5)
    x32, w32 = sample(F32, (1, 3, 10), rng, -3, 3), sample(F32, (2, 3, 4), rng, -3, 3)
    b32 = sample(F32, (2,), rng, -3, 3)
    args = ([1], [1], [1], False, [0], 1)

    def run(x, w, b, ydt, cube=0, transposed=False):
        ref_shape = conv_ref(x.astype(F64), w.astype(F64), None, [1], [1], [1], 1, transposed, [0]).shape
        return call("Convolution", x, w, b, [1], [1], [1], transposed, [0], 1, np.zeros(ref_shape, ydt), cube)

    # f16 inputs, f32 output: the result is rounded to f16 first
    x16, w16 = x32.astype(F16), w32.astype(F16)
    ref = conv_ref(x16, w16, None, *args[:3], 1)
    got = run(x16, w16, None, F32)
    assert (got.astype(F16).astype(F32) == got).all()
    assert_rounded(got, ref, F16, conv_terms(x16, w16, *args[:3], 1))
    # ... but not for a transposed convolution
    wt16 = sample(F16, (3, 2, 4), rng)
    reft = conv_ref(x16, wt16, None, [1], [1], [1], 1, True, [0])
    gott = call("Convolution", x16, wt16, None, [1], [1], [1], True, [0], 1, np.zeros(reft.shape, F32), 0)
    np.testing.assert_allclose(gott, reft, rtol=1e-5, atol=1e-4)
    assert (gott.astype(F16).astype(F32) != gott).any()
    # f16 x with f32 w: computed in f32
    got = run(x16, w32, None, F32)
    np.testing.assert_allclose(got, conv_ref(x16, w32, None, *args[:3], 1), rtol=1e-5, atol=1e-5)
    # f16 x bf16: f32
    wb = w32.astype(BF16)
    got = run(x16, wb, None, F32)
    np.testing.assert_allclose(got, conv_ref(x16, wb, None, *args[:3], 1), rtol=1e-5, atol=1e-5)
    # cubeMathType 2 (USE_FP16) with f32: inputs and result in f16
    got = run(x32, w32, None, F32, cube=2)
    ref = conv_ref(rounded(x32, F16), rounded(w32, F16), None, *args[:3], 1)
    assert (got.astype(F16).astype(F32) == got).all()
    assert_rounded(got, ref, F16, conv_terms(x32, w32, *args[:3], 1))
    # an f32 bias of an f16 convolution is rounded to f16
    b16r = rounded(b32, F16)
    got = run(x16, w16, b32, F16)
    assert_rounded(got, conv_ref(x16, w16, b16r, *args[:3], 1), F16, conv_terms(x16, w16, *args[:3], 1))
    # bf16 convolution: the bias stays f32
    xb = x32.astype(BF16)
    got = run(xb, wb, b32, BF16)
    assert_rounded(got, conv_ref(xb, wb, b32, *args[:3], 1), BF16, conv_terms(xb, wb, *args[:3], 1))
    # forward allows another output dtype: f32 inputs into a bf16 output
    got = run(x32, w32, None, BF16)
    assert_rounded(got, conv_ref(x32, w32, None, *args[:3], 1), BF16, conv_terms(x32, w32, *args[:3], 1))


def test_convolution_empty(runtime):
    """Empty tensors: no work (the output must be empty too)."""
    x = np.zeros((0, 2, 5), F32)
    w = sample(F32, (3, 2, 2), np.random.default_rng(0))
    got = call("Convolution", x, w, None, [1], [0], [1], False, [0], 1, np.zeros((0, 3, 4), F32), 0)
    assert got.shape == (0, 3, 4)
    # a non-empty output for an empty input is refused
    x = np.zeros((1, 0, 5), F32)
    assert status("Convolution", x, np.zeros((3, 0, 2), F32), None, [1], [0], [1], False, [0], 1,
                  np.zeros((1, 3, 4), F32), 0) == INVALID
    got = call("Convolution", x, np.zeros((0, 0, 2), F32), None, [1], [0], [1], False, [0], 1,
               np.zeros((1, 0, 4), F32), 0)
    assert got.shape == (1, 0, 4)


def test_convolution_ggml_ssm_conv(runtime):
    """SSM_CONV: depthwise conv1d (groups = channels), the weight a view [C, 1, K] with strides
    (nb1, nb1, nb0), the output a transposed view of ggml's {d_inner, n_t, n_s}; no bias."""
    rng = np.random.default_rng(6)
    nc, nr, n_t, n_s = 4, 16, 9, 2
    conv_x = sample(F32, (n_s, nr, nc - 1 + n_t), rng)
    wbuf = sample(F32, (nr, nc), rng)  # ggml {nc, nr}
    w = np.lib.stride_tricks.as_strided(wbuf, (nr, 1, nc), (wbuf.strides[0], wbuf.strides[0], wbuf.strides[1]))
    dst = np.zeros((n_s, n_t, nr), F32)  # ggml {nr, n_t, n_s}
    yv = np.lib.stride_tricks.as_strided(dst, (n_s, nr, n_t), (dst.strides[0], dst.strides[2], dst.strides[1]))
    got = call("Convolution", conv_x, w, None, [1], [0], [1], False, [0], nr, yv, 0)
    ref = F.conv1d(t64(conv_x), t64(w), groups=nr).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_convolution_ggml_conv_transpose_1d(runtime):
    """CONV_TRANSPOSE_1D: transposed, bias NULL, padding [0] also passed as outputPadding."""
    rng = np.random.default_rng(7)
    x, w = sample(F32, (1, 8, 13), rng), sample(F32, (8, 5, 7), rng)
    for s0 in (1, 2, 3):
        ref = F.conv_transpose1d(t64(x), t64(w), stride=s0).numpy()
        got = call("Convolution", x, w, None, [s0], [0], [1], True, [0], 1, np.zeros(ref.shape, F32), 0)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_convolution_in_place(runtime):
    """An output sharing the input's storage is computed into a private buffer first."""
    rng = np.random.default_rng(8)
    x = sample(F32, (1, 2, 8), rng)
    w = sample(F32, (2, 2, 1), rng)
    ref = conv_ref(x, w, None, [1], [0], [1], 1)
    buf = x.copy()
    with Tensor(buf, format=NCL) as tx, Tensor(w, format=NCL) as tw:
        arr = [lib.aclCreateIntArray(ffi.new("int64_t[]", [v]), 1) for v in (1, 0, 1)]
        try:
            ws = ffi.new("uint64_t *")
            ex = ffi.new("aclOpExecutor **")
            check(lib.aclnnConvolutionGetWorkspaceSize(tx.handle, tw.handle, ffi.NULL, arr[0], arr[1], arr[2], False,
                                                       arr[1], 1, tx.handle, 0, ws, ex), "gws")
            stream = _private_stream()
            check(lib.aclnnConvolution(ffi.NULL, 0, ex[0], stream.handle), "aclnnConvolution")
            stream.synchronize()
        finally:
            for h in arr:
                lib.aclDestroyIntArray(h)
        got = tx.numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def _aliased(name, base, views, args):
    """Runs aclnn<name> with tensors that are views of one buffer holding `base`: views
    {param: (shape, strides, offset, format)}; other tensors copied from args. Returns the
    buffer's contents afterwards."""
    params = OPS[name].parsed()
    with contextlib.ExitStack() as st:
        tb = st.enter_context(Tensor(base))
        cargs = []
        for p, v in zip(params, args):
            if p.name in views:
                shape, strides, off, f = views[p.name]
                t = st.enter_context(Tensor.from_buffer(tb.buffer, shape, base.dtype, strides=strides, offset=off,
                                                        format=f))
                cargs.append(t.handle)
            elif p.kind == "TENSOR" and v is None:
                cargs.append(ffi.NULL)
            elif p.kind == "TENSOR":
                t = st.enter_context(Tensor(np.asarray(v), format=_default_format(name, p.name, np.asarray(v))))
                cargs.append(t.handle)
            elif p.kind == "INT_ARRAY":
                h = lib.aclCreateIntArray(ffi.new("int64_t[]", list(v) or [0]), len(v))
                st.callback(lib.aclDestroyIntArray, h)
                cargs.append(h)
            else:
                cargs.append(v)
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        check(getattr(lib, "aclnn%sGetWorkspaceSize" % name)(*cargs, ws, ex), name)
        stream = _private_stream()
        check(getattr(lib, "aclnn" + name)(ffi.NULL, 0, ex[0], stream.handle), name)
        stream.synchronize()
        return tb.numpy()


def test_outputs_sharing_an_input(runtime):
    """Outputs over an input's storage (another layout of the same bytes): computed from the
    inputs as they were, then written."""
    rng = np.random.default_rng(25)
    # Convolution: output a transposed view over the input's bytes
    base = sample(F32, (2 * 3 * 8,), rng)
    x = base.reshape(2, 3, 8)
    w = sample(F32, (3, 3, 3), rng)
    ref = conv_ref(x, w, None, [1], [1], [1], 1)  # (2, 3, 8)
    got = _aliased("Convolution", base, {"input": ((2, 3, 8), (24, 8, 1), 0, NCL),
                                         "output": ((2, 3, 8), (24, 1, 3), 0, NCL)},
                   [None, w, None, [1], [1], [1], False, [0], 1, None, 0])
    yv = np.lib.stride_tricks.as_strided(got, (2, 3, 8), (96, 4, 12))
    np.testing.assert_allclose(yv, ref, rtol=1e-5, atol=1e-5)
    # Im2col: out (C*kh*kw, L) over self's (C, H, W) buffer, from an offset
    base = sample(F32, (96,), rng)
    x = base[:2 * 4 * 4].reshape(2, 4, 4)
    ref = F.unfold(t64(x)[None], (2, 2))[0].numpy()  # (8, 9)
    got = _aliased("Im2col", base, {"self": ((2, 4, 4), (16, 4, 1), 0, ND), "out": ((8, 9), (1, 8), 4, ND)},
                   [None, [2, 2], [1, 1], [0, 0], [1, 1], None])
    out = np.lib.stride_tricks.as_strided(got[4:], (8, 9), (4, 32))
    assert (out == ref).all()
    # AvgPool2d / MaxPool: out over the start of self
    for name in ("AvgPool2d", "MaxPool"):
        base = sample(F32, (1 * 2 * 6 * 6,), rng)
        x = base.reshape(1, 2, 6, 6)
        if name == "AvgPool2d":
            ref = _avg_ref(x, (2, 2), (2, 2), (0, 0), False, True, 0)
            args = [None, [2, 2], [2, 2], [0, 0], False, True, 0, 0, None]
        else:
            ref = _max_ref(x, (2, 2), (2, 2), (0, 0, 0, 0), False)
            args = [None, [2, 2], [2, 2], 0, [0, 0], [1, 1], 0, None]
        got = _aliased(name, base, {"self": ((1, 2, 6, 6), (72, 36, 6, 1), 0, NCHW),
                                    "out": ((1, 2, 3, 3), (18, 1, 6, 2), 5, NCHW)}, args)
        out = np.lib.stride_tricks.as_strided(got[5:], (1, 2, 3, 3), (72, 4, 24, 8))
        np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
    # TriangularSolve: xOut over self transposed, mOut over A
    A = np.tril(sample(F32, (4, 4), rng)) + 3 * np.eye(4, dtype=F32)
    B = sample(F32, (4, 4), rng)
    ref = torch.linalg.solve_triangular(t64(A), t64(B), upper=False).numpy()
    base = np.concatenate([B.ravel(), A.ravel()])
    got = _aliased("TriangularSolve", base, {"self": ((4, 4), (4, 1), 0, ND), "A": ((4, 4), (4, 1), 16, ND),
                                             "xOut": ((4, 4), (1, 4), 0, ND), "mOut": ((4, 4), (1, 4), 16, ND)},
                   [None, None, False, False, False, None, None])
    np.testing.assert_allclose(got[:16].reshape(4, 4).T, ref, rtol=1e-5, atol=1e-5)
    assert (got[16:].reshape(4, 4).T == A).all()


def _conv_args(**kw):
    rng = np.random.default_rng(9)
    a = dict(input=sample(F32, (2, 4, 9), rng), weight=sample(F32, (6, 2, 3), rng), bias=None, stride=[1],
             padding=[1], dilation=[1], transposed=False, outputPadding=[0], groups=2,
             output=np.full((2, 6, 9), 5, F32), cube=0)
    a.update(kw)
    return a


def _conv_status(fmt=None, **kw):
    a = _conv_args(**kw)
    return status("Convolution", a["input"], a["weight"], a["bias"], a["stride"], a["padding"], a["dilation"],
                  a["transposed"], a["outputPadding"], a["groups"], a["output"], a["cube"], fmt=fmt)


def test_convolution_errors(runtime):
    rng = np.random.default_rng(10)
    assert _conv_status() == 0
    assert _conv_status(input=None) == NULLPTR
    assert _conv_status(weight=None) == NULLPTR
    assert _conv_status(stride=None) == NULLPTR
    assert _conv_status(output=None) == NULLPTR
    assert _conv_status(outputPadding=None) == 0  # not read unless transposed
    assert _conv_status(transposed=True, weight=sample(F32, (4, 3, 3), rng), outputPadding=None) == NULLPTR
    # dtypes
    assert _conv_status(input=sample(F64, (2, 4, 9), rng)) == INVALID
    assert _conv_status(bias=np.zeros(6, np.int32)) == INVALID
    # dims
    assert _conv_status(input=sample(F32, (4, 9), rng), fmt={"input": ND}) == INVALID
    assert _conv_status(weight=sample(F32, (6, 2, 3, 1), rng), fmt={"weight": NCHW}) == INVALID
    assert _conv_status(bias=np.zeros((6, 1), F32)) == INVALID
    assert _conv_status(bias=np.zeros(5, F32)) == INVALID
    assert _conv_status(stride=[1, 1]) == INVALID
    assert _conv_status(dilation=[]) == INVALID
    assert _conv_status(padding=[1, 1, 1]) == INVALID
    assert _conv_status(padding=[1, 1]) == 0  # conv1d: (left, right)
    # formats
    assert _conv_status(fmt={"input": ND, "output": ND}) == INVALID
    assert _conv_status(fmt={"weight": NCHW}) == INVALID
    assert _conv_status(fmt={"output": NCHW}) == INVALID
    assert _conv_status(bias=np.zeros(6, F32), fmt={"bias": NDHWC}) == INVALID
    # values
    assert _conv_status(stride=[0]) == INVALID
    assert _conv_status(dilation=[-1]) == INVALID
    assert _conv_status(padding=[-1]) == INVALID
    assert _conv_status(groups=0) == INVALID
    assert _conv_status(groups=3) == INVALID  # 2 * 3 != 4 channels
    assert _conv_status(weight=sample(F32, (6, 2, 0), rng)) == INVALID
    assert _conv_status(input=sample(F32, (2, 4, 1), rng), padding=[0], output=np.zeros((2, 6, 0), F32)) == INVALID
    assert _conv_status(output=np.zeros((2, 6, 8), F32)) == INVALID
    assert _conv_status(output=np.zeros((2, 5, 9), F32)) == INVALID
    assert _conv_status(cube=5) == INVALID
    assert _conv_status(cube=-1) == INVALID
    for cube in range(5):
        assert _conv_status(cube=cube) == 0
    # transposed
    wt = sample(F32, (4, 3, 3), rng)
    good = dict(transposed=True, weight=wt, output=np.zeros((2, 6, 9), F32))
    assert _conv_status(**good) == 0
    assert _conv_status(**dict(good, weight=sample(F32, (3, 3, 3), rng))) == INVALID  # weight.shape[0] != C
    assert _conv_status(**dict(good, outputPadding=[1])) == INVALID  # >= stride 1 and dilation 1
    assert _conv_status(**dict(good, stride=[2], outputPadding=[1], output=np.zeros((2, 6, 18), F32))) == 0
    assert _conv_status(**dict(good, padding=[1, 1])) == INVALID  # transposed 1-D: one value
    assert _conv_status(**dict(good, outputPadding=[0, 0])) == INVALID
    assert _conv_status(**dict(good, bias=np.zeros(4, F32))) == INVALID  # weight.shape[1] * groups = 6
    assert _conv_status(**dict(good, bias=np.zeros(6, F32))) == 0
    # the vendor's limit: (k - 1) * dilation - padding <= 255
    wbig = sample(F32, (4, 3, 258), rng)
    assert _conv_status(**dict(good, weight=wbig, padding=[0], output=np.zeros((2, 6, 266), F32))) == INVALID
    assert _conv_status(**dict(good, weight=wbig, padding=[2], output=np.zeros((2, 6, 262), F32))) == 0


def test_convolution_error_leaves_output(runtime):
    """A refused call writes nothing."""
    out = np.full((2, 6, 9), 3, F32)
    with Tensor(out, format=NCL) as to:
        x = Tensor(sample(F32, (2, 4, 9), np.random.default_rng(1)), format=NCL)
        w = Tensor(sample(F32, (6, 2, 3), np.random.default_rng(2)), format=NCL)
        arr = [lib.aclCreateIntArray(ffi.new("int64_t[]", [v]), 1) for v in (1, 1, 1)]
        try:
            ws = ffi.new("uint64_t *")
            ex = ffi.new("aclOpExecutor **")
            rc = lib.aclnnConvolutionGetWorkspaceSize(x.handle, w.handle, ffi.NULL, arr[0], arr[1], arr[2], False,
                                                      arr[1], 3, to.handle, 0, ws, ex)
            assert rc == INVALID
        finally:
            for h in arr:
                lib.aclDestroyIntArray(h)
            x.close()
            w.close()
        assert (to.numpy() == 3).all()


# ---- Im2col ------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
def test_im2col(runtime, dt):
    d = NP[dt]
    rng = np.random.default_rng(11)
    x = sample(d, (2, 3, 7, 8), rng)
    for ks, dil, pad, st in (([3, 2], [1, 2], [1, 0], [2, 1]), ([1, 1], [1, 1], [0, 0], [1, 1]),
                             ([2, 3], [2, 1], [2, 3], [3, 2])):
        ref = F.unfold(t64(x), ks, dilation=dil, padding=pad, stride=st).numpy()
        got = call("Im2col", x, ks, dil, pad, st, np.full(ref.shape, 9, d))
        assert got.dtype == d and (got.astype(F64) == ref).all()
        # 3-D self (C, H, W) and a strided self / out
        got3 = call("Im2col", strided(x[1]), ks, dil, pad, st, strided(np.zeros(ref.shape[1:], d)))
        assert (got3.astype(F64) == ref[1]).all()
    # another output dtype: converted once
    for od in (F32, F16, BF16):
        ref = F.unfold(t64(x), [2, 2], padding=[1, 1]).numpy()
        got = call("Im2col", x, [2, 2], [1, 1], [1, 1], [1, 1], np.zeros(ref.shape, od))
        assert got.dtype == od and (got.astype(F64) == rounded(ref, od)).all()


def test_im2col_ggml_1d(runtime):
    """IM2COL 1-D (ggml-cann): self [N, IC, 1, IW] with kernel (1, KW), padding (1, p0), so out
    has 3 * OW columns per row; the middle third is the 1-D im2col."""
    rng = np.random.default_rng(12)
    x = sample(F32, (2, 3, 1, 10), rng)
    ref = F.unfold(t64(x), (1, 3), padding=(1, 1), stride=(1, 2), dilation=(1, 1)).numpy()
    assert ref.shape == (2, 9, 3 * 5)
    got = call("Im2col", x, [1, 3], [1, 1], [1, 1], [1, 2], np.zeros(ref.shape, F32))
    assert (got == ref).all()
    ref1 = F.unfold(t64(x), (1, 3), padding=(0, 1), stride=(1, 2)).numpy()
    assert (got.reshape(2, 9, 3, 5)[:, :, 1] == ref1).all()


def test_im2col_errors(runtime):
    rng = np.random.default_rng(13)
    x = sample(F32, (2, 3, 5, 5), rng)
    ok = ([2, 2], [1, 1], [0, 0], [1, 1], np.zeros((2, 12, 16), F32))
    assert status("Im2col", x, *ok) == 0
    assert status("Im2col", None, *ok) == NULLPTR
    assert status("Im2col", x, None, *ok[1:]) == NULLPTR
    assert status("Im2col", x, *ok[:4], None) == NULLPTR
    assert status("Im2col", x.astype(F64), *ok) == INVALID
    assert status("Im2col", x.reshape(2, 3, 25), *ok) == INVALID  # 3-D: (C, H, W) gives another shape
    assert status("Im2col", x.reshape(6, 5, 5, 1, 1), *ok) == INVALID
    assert status("Im2col", np.zeros((2, 0, 5, 5), F32), *ok[:4], np.zeros((2, 0, 16), F32)) == INVALID
    assert status("Im2col", np.zeros((0, 3, 5, 5), F32), *ok[:4], np.zeros((0, 12, 16), F32)) == 0
    assert status("Im2col", x, [2], *ok[1:]) == INVALID
    assert status("Im2col", x, [2, 2], [1], *ok[2:]) == INVALID
    assert status("Im2col", x, [2, 2], [1, 1], [0, 0, 0, 0], *ok[3:]) == INVALID
    assert status("Im2col", x, [2, 2], [1, 1], [0, 0], [1], ok[4]) == INVALID
    assert status("Im2col", x, [0, 2], *ok[1:]) == INVALID
    assert status("Im2col", x, [2, 2], [0, 1], *ok[2:]) == INVALID
    assert status("Im2col", x, [2, 2], [1, 1], [-1, 0], *ok[3:]) == INVALID
    assert status("Im2col", x, [2, 2], [1, 1], [0, 0], [1, 0], ok[4]) == INVALID
    assert status("Im2col", x, [6, 2], [1, 1], [0, 0], [1, 1], np.zeros((2, 36, 0), F32)) == INVALID
    assert status("Im2col", x, *ok[:4], np.zeros((2, 12, 15), F32)) == INVALID
    assert status("Im2col", x, *ok[:4], np.zeros((24, 16), F32)) == INVALID
    assert status("Im2col", x, *ok[:4], np.zeros((2, 12, 16), F64)) == INVALID


# ---- AvgPool2d -------------------------------------------------------------------------

def _avg_ref(x, k, s, p, ceil, cip, div):
    return F.avg_pool2d(t64(x), k, s, p, ceil, cip, div if div else None).numpy()


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
def test_avg_pool2d(runtime, dt):
    d = NP[dt]
    rng = np.random.default_rng(14)
    x = sample(d, (2, 3, 9, 10), rng)
    for k, s, p in (((3, 2), (2, 2), (1, 1)), ((2, 2), (2, 2), (0, 0)), ((3, 3), (1, 2), (1, 0)),
                    ((9, 10), (1, 1), (0, 0))):
        for ceil in (False, True):
            for cip in (False, True):
                for div in (0, 5, -3):
                    ref = _avg_ref(x, k, s, p, ceil, cip, div)
                    got = call("AvgPool2d", x, list(k), list(s), list(p), ceil, cip, div, 0, np.zeros(ref.shape, d))
                    terms = _avg_ref(np.abs(x.astype(F64)), k, s, p, ceil, cip, abs(div)) * 16
                    assert_rounded(got, ref, d, terms)
    # 3-D (C, H, W) NCL, strides empty (= kernel), one-value kernel and padding, strided views
    ref = F.avg_pool2d(t64(x[0]), 3, padding=1).numpy()
    got = call("AvgPool2d", strided(x[0]), [3], [], [1], False, True, 0, 0, strided(np.zeros(ref.shape, d)))
    assert_rounded(got, ref, d, F.avg_pool2d(t64(np.abs(x[0].astype(F64))), 3, padding=1).numpy() * 16)


def test_avg_pool2d_cube_math(runtime):
    """Where CANN's cube (or global mean) kernel runs (no ceil mode, a small kernel, a not
    too long strip), an fp32 self with cubeMathType 1, 3 or 4 is refused and 2 computes in
    fp16; its vector kernel (ceil mode here) takes every cubeMathType in full fp32."""
    rng = np.random.default_rng(15)
    x = sample(F32, (1, 2, 8, 8), rng)
    args = ([2, 2], [2, 2], [0, 0])
    y = np.zeros((1, 2, 4, 4), F32)
    for cube in (1, 3, 4):
        assert status("AvgPool2d", x, *args, False, True, 0, cube, y) == INVALID
        assert status("AvgPool2d", x, *args, True, True, 0, cube, y) == 0
        assert status("AvgPool2d", x.astype(F16), *args, False, True, 0, cube, y.astype(F16)) == 0
    got = call("AvgPool2d", x, *args, False, True, 0, 2, y)
    ref = _avg_ref(rounded(x, F16), *args, False, True, 0)
    assert (got.astype(F16).astype(F32) == got).all()
    assert_rounded(got, ref, F16, _avg_ref(np.abs(x.astype(F64)), *args, False, True, 0) * 16)
    got = call("AvgPool2d", x, *args, True, True, 0, 2, y)  # vector kernel: fp32
    np.testing.assert_allclose(got, _avg_ref(x, *args, True, True, 0), rtol=1e-6, atol=1e-6)
    # a long strip (W / H >= 2) takes the vector kernel too
    xs = sample(F32, (1, 2, 4, 8), rng)
    assert status("AvgPool2d", xs, *args, False, True, 0, 1, np.zeros((1, 2, 2, 4), F32)) == 0


def test_avg_pool2d_ggml(runtime):
    """POOL_2D avg: NCHW, kernel (k1, k0), stride (s1, s0), padding (p1, p0), count_include_pad."""
    rng = np.random.default_rng(16)
    x = sample(F32, (1, 3, 10, 12), rng)
    ref = _avg_ref(x, (3, 3), (2, 1), (1, 1), False, True, 0)
    got = call("AvgPool2d", x, [3, 3], [2, 1], [1, 1], False, True, 0, 0, np.zeros(ref.shape, F32))
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)


def test_avg_pool2d_errors(runtime):
    rng = np.random.default_rng(17)
    x = sample(F32, (2, 3, 6, 6), rng)
    y = np.zeros((2, 3, 3, 3), F32)
    ok = ([2, 2], [2, 2], [0, 0], False, True, 0, 0)

    def st(xx=x, yy=y, args=ok, fmt=None):
        return status("AvgPool2d", xx, *args, yy, fmt=fmt)

    assert st() == 0
    assert st(xx=None) == NULLPTR
    assert status("AvgPool2d", x, None, *ok[1:], y) == NULLPTR
    assert st(yy=None) == NULLPTR
    assert st(xx=x.astype(F64)) == INVALID
    assert st(yy=y.astype(F16)) == INVALID
    assert st(fmt={"self": ND}) == INVALID
    assert st(fmt={"out": NCL}) == INVALID
    assert st(xx=x[0], fmt={"self": NCHW}) == INVALID
    assert st(args=([0, 2],) + ok[1:]) == INVALID
    assert st(args=(ok[0], [2, -1]) + ok[2:]) == INVALID
    assert st(args=ok[:2] + ([-1, 0],) + ok[3:]) == INVALID
    assert st(args=([],) + ok[1:]) == INVALID
    assert st(args=ok[:2] + ([0, 0, 0],) + ok[3:]) == INVALID
    assert st(args=(ok[0], [2, 2, 2]) + ok[2:]) == INVALID
    assert st(args=ok[:2] + ([2, 0],) + ok[3:], yy=np.zeros((2, 3, 5, 3), F32)) == INVALID  # > half kernel
    assert st(yy=np.zeros((2, 3, 3, 4), F32)) == INVALID
    assert st(yy=np.zeros((3, 3, 3), F32)) == INVALID
    assert st(xx=np.zeros((2, 0, 6, 6), F32), yy=np.zeros((2, 0, 3, 3), F32)) == INVALID
    assert st(xx=np.zeros((0, 3, 6, 6), F32), yy=np.zeros((0, 3, 3, 3), F32)) == 0
    assert st(args=([7, 7], [1, 1], [0, 0]) + ok[3:], yy=np.zeros((2, 3, 0, 0), F32)) == INVALID
    assert st(args=ok[:-1] + (9,)) == INVALID


# ---- MaxPool --------------------------------------------------------------------------------

def _max_out(n, k, pl, pr, s, ceil):
    o = (n + pl + pr - (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= n + pl:
        o -= 1
    return o


def _max_ref(x, k, s, pads4, ceil):
    """The vendor's max pooling: pads (top, left, bottom, right), the output size of its
    formula, the maximum of each window's elements inside the input (NaN wins)."""
    t, l, b, r = pads4
    x = np.asarray(x, np.float64)
    H, W = x.shape[-2:]
    oh, ow = _max_out(H, k[0], t, b, s[0], ceil), _max_out(W, k[1], l, r, s[1], ceil)
    out = np.empty(x.shape[:-2] + (oh, ow))
    for i in range(oh):
        h0, h1 = max(i * s[0] - t, 0), min(i * s[0] - t + k[0], H)
        for j in range(ow):
            w0, w1 = max(j * s[1] - l, 0), min(j * s[1] - l + k[1], W)
            win = x[..., h0:h1, w0:w1].reshape(x.shape[:-2] + (-1,))
            m = win.max(axis=-1)
            out[..., i, j] = np.where(np.isnan(win).any(axis=-1), np.nan, m)
    return out


@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_max_pool(runtime, dt):
    d = NP[dt]
    rng = np.random.default_rng(18)
    x = sample(d, (2, 3, 9, 10), rng)
    for k, s, pads in (([3, 2], [2, 2], [1, 1]), ([2], [], []), ([3, 3], [1], [1, 1, 1, 1]),
                       ([3, 3], [2, 3], [0, 1, 2, 1]), ([4, 4], [2, 2], [2])):
        if len(pads) == 0:
            p4 = (0, 0, 0, 0)
        elif len(pads) == 1:
            p4 = (pads[0],) * 4
        elif len(pads) == 2:
            p4 = (pads[0], pads[1], pads[0], pads[1])
        else:
            p4 = tuple(pads)
        kk = (k[0], k[-1])
        ss = (1, 1) if not s else (s[0], s[-1])
        for ceil in (0, 1):
            ref = _max_ref(x, kk, ss, p4, bool(ceil))
            got = call("MaxPool", x, k, s, 0, pads, [1, 1], ceil, np.zeros(ref.shape, d))
            assert got.dtype == d and (got.astype(F64) == ref).all(), (k, s, pads, ceil)
            if p4[0] == p4[2] and p4[1] == p4[3] and 2 * p4[0] <= kk[0] and 2 * p4[1] <= kk[1]:
                tref = F.max_pool2d(t64(x), kk, ss, (p4[0], p4[1]), ceil_mode=bool(ceil)).numpy()
                assert (tref == ref).all()
    # 3-D, strided, NaN propagates, padding never wins (all-negative input)
    xn = -np.abs(sample(d, (3, 6, 7), rng)) - 1
    xn[1, 2, 3] = np.nan
    ref = _max_ref(xn[None], (3, 3), (2, 2), (1, 1, 1, 1), False)[0]
    got = call("MaxPool", strided(xn), [3, 3], [2, 2], 0, [1], [], 0, strided(np.zeros(ref.shape, d)))
    assert np.array_equal(got.astype(F64), ref, equal_nan=True)
    assert np.isnan(got[1]).any() and (got[0] < 0).all()


def test_max_pool_ggml(runtime):
    """POOL_2D max: ggml-cann pads with -FLT_MAX (ConstantPadNd), then MaxPool with zero pads."""
    rng = np.random.default_rng(19)
    x = sample(F32, (1, 2, 10, 11), rng)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.finfo(np.float32).max)
    ref = F.max_pool2d(t64(x), (3, 3), (2, 2), (1, 1)).numpy()
    got = call("MaxPool", xp, [3, 3], [2, 2], 0, [0, 0, 0, 0], [1, 1], 0, np.zeros(ref.shape, F32))
    assert (got == ref).all()


def test_max_pool_errors(runtime):
    rng = np.random.default_rng(20)
    x = sample(F32, (2, 3, 6, 6), rng)
    y = np.zeros((2, 3, 3, 3), F32)
    ok = ([2, 2], [2, 2], 0, [0, 0], [1, 1], 0)

    def st(xx=x, yy=y, args=ok, fmt=None):
        return status("MaxPool", xx, *args, yy, fmt=fmt)

    assert st() == 0
    assert st(xx=None) == NULLPTR
    assert status("MaxPool", x, ok[0], None, *ok[2:], y) == NULLPTR
    assert status("MaxPool", x, *ok[:4], None, ok[5], y) == NULLPTR
    assert st(xx=x.astype(BF16), yy=y.astype(BF16)) == INVALID
    assert st(yy=y.astype(F16)) == INVALID
    assert st(fmt={"out": ND}) == INVALID
    assert st(xx=x[None], yy=y[None], fmt={"self": ND, "out": ND}) == INVALID
    assert st(args=([2, 2, 2],) + ok[1:]) == INVALID
    assert st(args=(ok[0], [2, 2, 2]) + ok[2:]) == INVALID
    assert st(args=ok[:2] + (1,) + ok[3:]) == INVALID
    assert st(args=ok[:3] + ([0, 0, 0],) + ok[4:]) == INVALID
    assert st(args=ok[:4] + ([1, 1, 1],) + ok[5:]) == INVALID
    assert st(args=ok[:4] + ([2, 1],) + ok[5:]) == INVALID
    assert st(args=ok[:4] + ([1, 1, 1, 1],) + ok[5:]) == 0
    assert st(args=ok[:4] + ([],) + ok[5:]) == 0
    assert st(args=([0, 2],) + ok[1:]) == INVALID
    assert st(args=(ok[0], [0]) + ok[2:]) == INVALID
    assert st(args=ok[:3] + ([2, 1],) + ok[4:], yy=np.zeros((2, 3, 5, 4), F32)) == INVALID  # 2 + 2 > 2
    assert st(args=ok[:3] + ([-1, 0],) + ok[4:]) == INVALID
    assert st(yy=np.zeros((2, 3, 3, 4), F32)) == INVALID
    assert st(xx=np.zeros((2, 3, 0, 6), F32), yy=np.zeros((2, 3, 0, 3), F32)) == INVALID
    assert st(xx=np.zeros((0, 3, 6, 6), F32), yy=np.zeros((0, 3, 3, 3), F32)) == 0


# ---- TriangularSolve ------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_triangular_solve(runtime, dt):
    d = NP[dt]
    rng = np.random.default_rng(21)
    for ashape, bshape in (((5, 5), (5, 3)), ((2, 1, 4, 4), (3, 4, 2)), ((3, 6, 6), (1, 6, 1))):
        A = sample(d, ashape, rng) + (4 * np.eye(ashape[-1])).astype(d)
        B = sample(d, bshape, rng)
        batch = np.broadcast_shapes(ashape[:-2], bshape[:-2])
        for upper in (False, True):
            for transpose in (False, True):
                for unit in ((False, True) if d == F32 else (False,)):
                    X = np.full(batch + bshape[-2:], 9, d)
                    M = np.full(batch + ashape[-2:], 9, d)
                    gx, gm = call("TriangularSolve", B, A, upper, transpose, unit, X, M)
                    At = t64(A)
                    if transpose:
                        At = At.transpose(-1, -2)
                    ref = torch.linalg.solve_triangular(
                        At.expand(batch + ashape[-2:]) if batch else At,
                        t64(B).expand(batch + bshape[-2:]) if batch else t64(B),
                        upper=upper != transpose, unitriangular=unit).numpy()
                    tol = 1e-4 if d == F32 else 1e-12
                    np.testing.assert_allclose(gx, ref, rtol=tol, atol=tol)
                    assert (gm == np.broadcast_to(A, M.shape)).all()
    # mOut may be NULL; strided views
    A = sample(d, (4, 4), rng) + (3 * np.eye(4)).astype(d)
    B = sample(d, (4, 3), rng)
    gx = call("TriangularSolve", strided(B), strided(A), True, False, False, strided(np.zeros((4, 3), d)), None)
    ref = torch.linalg.solve_triangular(t64(A), t64(B), upper=True).numpy()
    np.testing.assert_allclose(gx, ref, rtol=1e-4, atol=1e-4)


def test_triangular_solve_ggml(runtime):
    """SOLVE_TRI: A [B3, B2, N, N] lower, b [B3, B2, N, K]; mOut a scratch copy."""
    rng = np.random.default_rng(22)
    A = np.tril(sample(F32, (2, 3, 6, 6), rng)) + 3 * np.eye(6, dtype=F32)
    B = sample(F32, (2, 3, 6, 4), rng)
    gx, gm = call("TriangularSolve", B, A, False, False, False, np.zeros_like(B), np.zeros_like(A))
    ref = torch.linalg.solve_triangular(t64(A), t64(B), upper=False).numpy()
    np.testing.assert_allclose(gx, ref, rtol=1e-5, atol=1e-5)


def complex_status():
    """TriangularSolve on COMPLEX64 tensors (pyaclnn.Tensor holds no complex dtype: handles over
    float buffers)."""
    with Tensor(np.zeros((4, 4, 2), F32)) as ta, Tensor(np.zeros((4, 2, 2), F32)) as tb:
        hs = []
        for t, shape in ((tb, [4, 2]), (ta, [4, 4]), (tb, [4, 2])):
            dims = ffi.new("int64_t[]", shape)
            strides = ffi.new("int64_t[]", [shape[1], 1])
            st = ffi.new("int64_t[]", [shape[0] * shape[1]])
            hs.append(lib.aclCreateTensor(dims, 2, lib.ACL_COMPLEX64, strides, 0, ND, st, 1, t.buffer.cdata))
        try:
            ws = ffi.new("uint64_t *")
            ex = ffi.new("aclOpExecutor **")
            return lib.aclnnTriangularSolveGetWorkspaceSize(hs[0], hs[1], False, False, False, hs[2], ffi.NULL, ws, ex)
        finally:
            for h in hs:
                lib.aclDestroyTensor(h)


def test_triangular_solve_errors(runtime):
    rng = np.random.default_rng(23)
    A, B = sample(F32, (4, 4), rng), sample(F32, (4, 2), rng)
    X, M = np.zeros((4, 2), F32), np.zeros((4, 4), F32)
    assert status("TriangularSolve", B, A, False, False, False, X, M) == 0
    assert status("TriangularSolve", None, A, False, False, False, X, M) == NULLPTR
    assert status("TriangularSolve", B, None, False, False, False, X, M) == NULLPTR
    assert status("TriangularSolve", B, A, False, False, False, None, M) == NULLPTR
    assert status("TriangularSolve", B.astype(F16), A, False, False, False, X, M) == INVALID
    assert status("TriangularSolve", B.astype(F64), A, False, False, False, X, M) == INVALID
    assert status("TriangularSolve", B, A, False, False, False, X.astype(F64), M) == INVALID
    assert status("TriangularSolve", B, A, False, False, False, X, M.astype(F64)) == INVALID
    assert complex_status() == INVALID  # COMPLEX64: accepted by CANN, not implemented by pyaclnn
    assert status("TriangularSolve", B[0], A, False, False, False, X, M) == INVALID
    assert status("TriangularSolve", B, A[:, :3], False, False, False, X, M) == INVALID
    assert status("TriangularSolve", B[:3], A, False, False, False, X, M) == INVALID
    assert status("TriangularSolve", np.zeros((2, 4, 2), F32), np.zeros((3, 4, 4), F32), False, False, False,
                  np.zeros((3, 4, 2), F32), None) == INVALID
    assert status("TriangularSolve", B, A, False, False, False, np.zeros((4, 3), F32), M) == INVALID
    assert status("TriangularSolve", B, A, False, False, False, X, np.zeros((1, 4, 4), F32)) == INVALID
    assert status("TriangularSolve", B.astype(F64), A.astype(F64), False, False, True, X.astype(F64),
                  None) == INVALID  # unitriangular: FLOAT only
    assert status("TriangularSolve", np.zeros((0, 2), F64), np.zeros((0, 0), F64), False, False, True,
                  np.zeros((0, 2), F64), None) == 0  # empty: no check, no work


# ---- bits: threads and ISA tiers --------------------------------------------------------------

def test_threads_and_tiers_bitwise(runtime, restore_runtime_knobs):
    """Every thread count and ISA tier gives the same bits (the scalar tier's)."""
    rng = np.random.default_rng(24)
    cases = []
    for d in (F32, F16, BF16):
        x, w = sample(d, (2, 8, 33, 17), rng), sample(d, (12, 4, 3, 3), rng)
        b = sample(d, (12,), rng)
        cases.append(("Convolution", (x, w, b, [1, 2], [1, 1], [1, 1], False, [0, 0], 2,
                                      np.zeros((2, 12, 33, 9), d), 0)))
        wt = sample(d, (8, 3, 3, 2), rng)
        cases.append(("Convolution", (x, wt, None, [2, 1], [1, 0], [1, 1], True, [1, 0], 2,
                                      np.zeros((2, 6, 66, 18), d), 0)))
        cases.append(("AvgPool2d", (x, [3, 3], [2, 2], [1, 1], True, False, 0, 0, np.zeros((2, 8, 17, 9), d))))
    x = sample(F32, (1, 5, 40, 300), rng)
    cases.append(("Convolution", (x, sample(F32, (37, 5, 1, 5), rng), None, [1, 1], [0, 2], [1, 1], False, [0, 0],
                                  1, np.zeros((1, 37, 40, 300), F32), 0)))
    A = np.tril(sample(F32, (3, 40, 40), rng)) + 4 * np.eye(40, dtype=F32)
    cases.append(("TriangularSolve", (sample(F32, (3, 40, 7), rng), A, False, False, False,
                                      np.zeros((3, 40, 7), F32), None)))
    results = {}
    for tier in supported_tiers():
        for threads in (1, 2, 3):
            pyaclnn.set_max_isa(tier)
            pyaclnn.set_num_threads(threads)
            for i, (name, args) in enumerate(cases):
                got = call(name, *args)
                if i in results:
                    assert bits(got) == bits(results[i]), (name, i, tier, threads)
                else:
                    results[i] = got
