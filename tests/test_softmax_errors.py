"""aclnnScaledMaskedSoftmaxBackward: every parameter check and the launch errors.

Each invalid case changes one thing of a valid problem and goes through the
two-phase API: GetWorkspaceSize must fail with the expected status and an
aclGetRecentErrMsg() text naming the culprit parameter.
"""
import contextlib

import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import reference as R

from mutations import cast, reshape, setv, fmt, expect_rejected

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
PARAM_NULLPTR = 161001
PARAM_INVALID = 161002
WS_API = "aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize"
API = "aclnnScaledMaskedSoftmaxBackward"

NAMES = ("grad", "y", "mask", "out")
API_NAMES = {"grad": "gradOutput", "y": "y", "mask": "mask", "out": "out"}

NZ = pyaclnn.ACL_FORMAT_FRACTAL_NZ
NC1HWC0 = pyaclnn.ACL_FORMAT_NC1HWC0


def problem(shape=(2, 3, 4, 64), mshape=None, dtype=F32, seed=0):
    """A valid problem: numpy grad / y / mask, out as (shape, dtype) or a
    callable making the out Tensor, per-tensor formats, attributes."""
    rng = np.random.default_rng(seed)
    mshape = shape if mshape is None else mshape
    return dict(
        grad=R.round_to(rng.uniform(-2, 2, shape), dtype),
        y=R.round_to(rng.uniform(-2, 2, shape), dtype),
        mask=rng.random(mshape) < 0.3,
        out=(tuple(shape), np.dtype(dtype)),
        formats={},
        scale=0.5,
        fix_triu_mask=False,
    )


@contextlib.contextmanager
def device_tensors(p):
    """(grad, y, mask, out) as pyaclnn.Tensor; None stays None."""
    with contextlib.ExitStack() as st:
        fmt = p["formats"]
        ts = []
        for name in NAMES:
            v = p[name]
            if v is None:
                ts.append(None)
            elif isinstance(v, np.ndarray):
                ts.append(st.enter_context(pyaclnn.Tensor(v, format=fmt.get(name))))
            elif callable(v):
                t = v(st, fmt.get(name))
                st.callback(t.close)
                ts.append(t)
            else:
                shape, dt = v
                ts.append(st.enter_context(pyaclnn.Tensor.empty(shape, dt, format=fmt.get(name))))
        yield ts


def plan(p, ts):
    return pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(
        ts[0], ts[1], ts[2], p["scale"], p["fix_triu_mask"], ts[3])


def get_workspace(p):
    with device_tensors(p) as ts:
        ws, ex = plan(p, ts)
        ex.destroy()
        return ws


def run(p):
    with device_tensors(p) as ts, pyaclnn.Stream() as s:
        ws, ex = plan(p, ts)
        buf = pyaclnn.DeviceBuffer(ws) if ws else None
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(buf, ws, ex, s)
        s.synchronize()
        return ts[3].numpy()


# --------------------------------------------------------------------------- mutations


def strided_out(strides, offset=0, extra=0):
    """out as a view over a buffer with explicit element strides."""
    def f(p):
        shape, dt = p["out"]

        def make(st, format_):
            n = int(np.prod(shape)) * 2 + extra + offset
            buf = st.enter_context(pyaclnn.DeviceBuffer(n * dt.itemsize))
            return pyaclnn.Tensor.from_buffer(buf, shape, dt, strides=strides, offset=offset, format=format_)
        p["out"] = make
    return f


def negative_stride_grad(p):
    """gradOutput read back to front along S2 (a view with a negative stride)."""
    g = p["grad"]
    shape = g.shape

    def make(st, format_):
        buf = st.enter_context(pyaclnn.DeviceBuffer(g.nbytes))
        buf.copy_from_host(np.ascontiguousarray(g[..., ::-1]))
        strides = (shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], -1)
        return pyaclnn.Tensor.from_buffer(buf, shape, g.dtype, strides=strides, offset=shape[3] - 1,
                                          format=format_)
    p["grad"] = make


# (id, problem() overrides, mutation or None, status, substring of the message)
BAD = [
    # ---- dtypes
    ("grad_int32", {}, cast("grad", np.int32), PARAM_INVALID, "gradOutput dtype"),
    ("grad_fp64", {}, cast("grad", np.float64), PARAM_INVALID, "gradOutput dtype"),
    ("grad_and_y_int32", {}, lambda p: (cast("grad", np.int32)(p), cast("y", np.int32)(p)), PARAM_INVALID,
     "gradOutput dtype"),
    ("y_fp16_grad_fp32", {}, cast("y", F16), PARAM_INVALID, "y dtype"),
    ("y_bf16_grad_fp16", {"dtype": F16}, cast("y", BF16), PARAM_INVALID, "y dtype"),
    ("out_fp32_inputs_fp16", {"dtype": F16}, cast("out", F32), PARAM_INVALID, "out dtype"),
    ("out_bf16_inputs_fp32", {}, cast("out", BF16), PARAM_INVALID, "out dtype"),
    ("mask_fp32", {}, cast("mask", F32), PARAM_INVALID, "mask dtype"),
    ("mask_fp16", {}, cast("mask", F16), PARAM_INVALID, "mask dtype"),
    ("mask_uint8", {}, cast("mask", np.uint8), PARAM_INVALID, "mask dtype"),
    ("mask_int8", {}, cast("mask", np.int8), PARAM_INVALID, "mask dtype"),
    # ---- ranks
    ("grad_rank3", {}, reshape("grad", (6, 4, 64)), PARAM_INVALID, "gradOutput must be 4-D"),
    ("grad_rank5", {}, reshape("grad", (2, 3, 4, 1, 64)), PARAM_INVALID, "gradOutput must be 4-D"),
    ("y_rank3", {}, reshape("y", (6, 4, 64)), PARAM_INVALID, "y must be 4-D"),
    ("y_rank5", {}, reshape("y", (1, 2, 3, 4, 64)), PARAM_INVALID, "y must be 4-D"),
    ("mask_rank3", {}, reshape("mask", (6, 4, 64)), PARAM_INVALID, "mask must be 4-D"),
    ("mask_rank2", {}, reshape("mask", (4, 64)), PARAM_INVALID, "mask must be 4-D"),
    ("mask_rank5", {}, reshape("mask", (1, 2, 3, 4, 64)), PARAM_INVALID, "mask must be 4-D"),
    ("out_rank3", {}, reshape("out", (6, 4, 64)), PARAM_INVALID, "out must be 4-D"),
    ("out_rank5", {}, reshape("out", (2, 3, 4, 64, 1)), PARAM_INVALID, "out must be 4-D"),
    ("all_rank3", {"shape": (6, 4, 64)}, None, PARAM_INVALID, "gradOutput must be 4-D"),
    # ---- shapes
    ("y_shape_S2", {}, reshape("y", (2, 3, 4, 32)), PARAM_INVALID, "y shape"),
    ("y_shape_B", {}, reshape("y", (1, 3, 4, 64)), PARAM_INVALID, "y shape"),
    ("out_shape_S1", {}, reshape("out", (2, 3, 5, 64)), PARAM_INVALID, "out shape"),
    ("out_shape_N", {}, reshape("out", (2, 1, 4, 64)), PARAM_INVALID, "out shape"),
    ("mask_S1_differs", {}, reshape("mask", (2, 3, 5, 64)), PARAM_INVALID, "mask shape"),
    ("mask_S1_is_1", {}, reshape("mask", (2, 3, 1, 64)), PARAM_INVALID, "mask shape"),
    ("mask_S2_differs", {}, reshape("mask", (2, 3, 4, 63)), PARAM_INVALID, "mask shape"),
    ("mask_S2_is_1", {}, reshape("mask", (1, 1, 4, 1)), PARAM_INVALID, "mask shape"),
    ("mask_B_neither", {"shape": (4, 4, 4, 128)}, reshape("mask", (2, 4, 4, 128)), PARAM_INVALID,
     "mask shape"),
    ("mask_N_neither_vendor_ut", {"shape": (4, 4, 4, 128)}, reshape("mask", (1, 2, 4, 128)), PARAM_INVALID,
     "mask shape"),
    ("mask_B_larger", {}, reshape("mask", (4, 3, 4, 64)), PARAM_INVALID, "mask shape"),
    # ---- sizes
    ("S2_4097", {"shape": (1, 1, 2, 4097)}, None, PARAM_INVALID, "S2 must be in (0, 4096]"),
    ("S2_8192", {"shape": (1, 1, 1, 8192)}, None, PARAM_INVALID, "S2 must be in (0, 4096]"),
    ("S2_0", {"shape": (2, 3, 4, 0)}, None, PARAM_INVALID, "S2 must be in (0, 4096]"),
    ("B_0", {"shape": (0, 3, 4, 64), "mshape": (1, 3, 4, 64)}, None, PARAM_INVALID, "gradOutput dims"),
    ("N_0", {"shape": (2, 0, 4, 64), "mshape": (2, 1, 4, 64)}, None, PARAM_INVALID, "gradOutput dims"),
    ("S1_0", {"shape": (2, 3, 0, 64)}, None, PARAM_INVALID, "gradOutput dims"),
    # ---- layouts
    ("out_noncontiguous_step2", {}, strided_out((3 * 4 * 128, 4 * 128, 128, 2)), PARAM_INVALID,
     "out must be contiguous"),
    ("out_transposed", {}, strided_out((3 * 4 * 64, 64, 3 * 64, 1)), PARAM_INVALID, "out must be contiguous"),
    ("out_padded_rows", {}, strided_out((3 * 4 * 65, 4 * 65, 65, 1)), PARAM_INVALID, "out must be contiguous"),
    ("out_stride0", {}, strided_out((0, 4 * 64, 64, 1)), PARAM_INVALID, "out must be contiguous"),
    ("grad_negative_stride", {}, negative_stride_grad, PARAM_INVALID, "gradOutput strides"),
    # ---- attribute
    ("fixTriuMask_true", {}, setv(fix_triu_mask=True), PARAM_INVALID, "fixTriuMask"),
]

# ---- private formats, on each tensor
for _name in NAMES:
    for _fid, _fv in (("NC1HWC0", NC1HWC0), ("FRACTAL_NZ", NZ)):
        BAD.append((f"{_name}_{_fid}", {}, fmt(_name, _fv), PARAM_INVALID, f"{API_NAMES[_name]} format"))


@pytest.mark.parametrize("case_id,overrides,mutate,status,needle", BAD, ids=[b[0] for b in BAD])
def test_rejected(case_id, overrides, mutate, status, needle):
    p = problem(**overrides)
    if mutate is not None:
        mutate(p)
    expect_rejected(lambda: get_workspace(p), status, WS_API, needle, case_id)


@pytest.mark.parametrize("name", NAMES)
def test_null_tensor(name):
    p = problem()
    p[name] = None
    with pytest.raises(pyaclnn.AclError) as ei:
        get_workspace(p)
    assert ei.value.status == PARAM_NULLPTR
    assert f"{API_NAMES[name]} is NULL" in ei.value.message


def test_null_checked_before_dtypes():
    """A NULL tensor is reported as 161001 even when other arguments are invalid too."""
    p = problem()
    cast("grad", np.int32)(p)
    p["out"] = None
    with pytest.raises(pyaclnn.AclError) as ei:
        get_workspace(p)
    assert ei.value.status == PARAM_NULLPTR and "out is NULL" in ei.value.message


def test_null_workspace_size_and_executor_raw():
    ffi, lib = pyaclnn.ffi, pyaclnn.lib
    p = problem()
    with device_tensors(p) as ts:
        hs = [t.handle for t in ts]
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        fn = lib.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize
        assert fn(*hs[:3], 1.0, False, hs[3], ffi.NULL, ex) == PARAM_NULLPTR
        assert "workspaceSize is NULL" in pyaclnn.get_recent_err_msg()
        assert fn(*hs[:3], 1.0, False, hs[3], ws, ffi.NULL) == PARAM_NULLPTR
        assert "executor is NULL" in pyaclnn.get_recent_err_msg()
        # all tensors NULL at the raw level too
        assert fn(ffi.NULL, ffi.NULL, ffi.NULL, 1.0, False, ffi.NULL, ws, ex) == PARAM_NULLPTR
        assert "gradOutput is NULL" in pyaclnn.get_recent_err_msg()
        # and a valid raw call succeeds
        assert fn(*hs[:3], 1.0, False, hs[3], ws, ex) == 0
        assert lib.aclDestroyAclOpExecutor(ex[0]) == 0


# --------------------------------------------------------------------------- accepted

def _all_formats(value):
    def f(p):
        for n in NAMES:
            p["formats"][n] = value
    return f


GOOD = [
    ("ND", {}, None),
    ("NCHW_all", {}, _all_formats(pyaclnn.ACL_FORMAT_NCHW)),
    ("NHWC_all", {}, _all_formats(pyaclnn.ACL_FORMAT_NHWC)),
    ("NCL_all", {}, _all_formats(pyaclnn.ACL_FORMAT_NCL)),
    ("mixed_plain_formats", {}, lambda p: p["formats"].update(
        grad=pyaclnn.ACL_FORMAT_NCHW, y=pyaclnn.ACL_FORMAT_NHWC, mask=pyaclnn.ACL_FORMAT_NCL,
        out=pyaclnn.ACL_FORMAT_ND)),
    ("S2_4096", {"shape": (1, 1, 2, 4096)}, None),
    ("S2_1", {"shape": (2, 3, 4, 1)}, None),
    ("mask_B1", {"mshape": (2, 1, 4, 64)}, None),
    ("mask_1N", {"mshape": (1, 3, 4, 64)}, None),
    ("mask_11", {"mshape": (1, 1, 4, 64)}, None),
    ("fp16", {"dtype": F16}, None),
    ("bf16", {"dtype": BF16}, None),
    ("out_contiguous_with_offset", {}, strided_out((3 * 4 * 64, 4 * 64, 64, 1), offset=9)),
    ("scale_int", {}, setv(scale=3)),
    ("scale_negative", {}, setv(scale=-2.5)),
]


@pytest.mark.parametrize("case_id,overrides,mutate", GOOD, ids=[g[0] for g in GOOD])
def test_accepted(case_id, overrides, mutate):
    p = problem(**overrides)
    if mutate is not None:
        mutate(p)
    out = run(p).astype(np.float64)
    ref = R.scaled_masked_softmax_backward(p["grad"], p["y"], p["mask"], p["scale"])
    dt = p["grad"].dtype
    tol = (1e-5 if dt == F32 else 2 * float(np.finfo(np.float16).eps if dt == F16 else 2.0 ** -7)) \
        * max(1.0, float(np.abs(ref).max()))
    assert np.abs(out - ref).max() <= tol


# --------------------------------------------------------------------------- launch errors

def _nsa_executor(st):
    """A valid aclnnNsaSelectedAttentionGrad executor (TND, fp16, D = 128)."""
    rng = np.random.default_rng(7)
    T1, T2, N1, N2, D = 2, 32, 2, 1, 128
    h = lambda *s: st.enter_context(pyaclnn.Tensor(rng.standard_normal(s).astype(F16)))
    q, k, v, o, do = h(T1, N1, D), h(T2, N2, D), h(T2, N2, D), h(T1, N1, D), h(T1, N1, D)
    smax = st.enter_context(pyaclnn.Tensor(np.zeros((T1, N1, 8), np.float32)))
    ssum = st.enter_context(pyaclnn.Tensor(np.ones((T1, N1, 8), np.float32)))
    topk = st.enter_context(pyaclnn.Tensor(np.array([[[0, 1]], [[1, 0]]], np.int32)))
    outs = [st.enter_context(pyaclnn.Tensor.empty(s, F16)) for s in ((T1, N1, D), (T2, N2, D), (T2, N2, D))]
    ws, ex = pyaclnn.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
        q, k, v, o, do, smax, ssum, topk, None, None, None, 0.1, 16, 2, N1, "TND", 0, *outs)
    st.callback(ex.destroy)
    return ws, ex


@contextlib.contextmanager
def planned(p=None):
    """(workspace size, Executor, out Tensor, stream) of a valid problem."""
    p = p or problem()
    with device_tensors(p) as ts, pyaclnn.Stream() as s:
        ws, ex = plan(p, ts)
        try:
            yield ws, ex, ts[3], s
        finally:
            ex.destroy()


def test_spent_executor():
    p = problem()
    with planned(p) as (ws, ex, out, s):
        raw = ex.handle
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, s)
        s.synchronize()
        first = out.numpy()
        assert ex.spent
        # through the Python wrapper
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, s)
        assert ei.value.status == PARAM_INVALID
        # the C library itself, given the released handle (it stays in its quarantine)
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, raw, s)
        assert ei.value.status == PARAM_INVALID and ei.value.api == API
        assert "already" in ei.value.message and "repeatable" in ei.value.message.lower()
        s.synchronize()
        assert np.array_equal(out.numpy().view(np.uint8), first.view(np.uint8))
    ref = R.scaled_masked_softmax_backward(p["grad"], p["y"], p["mask"], p["scale"])
    assert np.abs(first - ref).max() <= 1e-5 * np.abs(ref).max()


def test_workspace_size_is_zero_and_null_workspace_accepted():
    p = problem()
    with planned(p) as (ws, ex, out, s):
        assert ws == 0
        ex.set_repeatable()
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, 0, ex, s)
        s.synchronize()
        first = out.numpy()
        # a workspace larger than needed is fine too
        with pyaclnn.DeviceBuffer(256) as buf:
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(buf, 256, ex, s)
            s.synchronize()
        assert np.array_equal(out.numpy().view(np.uint8), first.view(np.uint8))


def test_null_executor_to_launch():
    with pyaclnn.Stream() as s:
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, 0, None, s)
        assert ei.value.status == PARAM_NULLPTR
        assert "executor" in ei.value.message
    assert pyaclnn.lib.aclnnScaledMaskedSoftmaxBackward(pyaclnn.ffi.NULL, 0, pyaclnn.ffi.NULL,
                                                         pyaclnn.ffi.NULL) == PARAM_NULLPTR


def test_nsa_executor_to_softmax_launch():
    with contextlib.ExitStack() as st:
        s = st.enter_context(pyaclnn.Stream())
        nws, nex = _nsa_executor(st)
        buf = st.enter_context(pyaclnn.DeviceBuffer(nws)) if nws else None
        # the Python wrapper refuses it
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(buf, nws, nex, s)
        assert ei.value.status == PARAM_INVALID
        # and so does the C library given the raw handle
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(buf, nws, nex.handle, s)
        assert ei.value.status == PARAM_INVALID
        assert "aclnnNsaSelectedAttentionGrad" in ei.value.message
        # the rejected executor is still alive and usable by its own op
        pyaclnn.aclnnNsaSelectedAttentionGrad(buf, nws, nex, s)
        s.synchronize()


def test_softmax_executor_to_nsa_launch():
    with planned() as (ws, ex, out, s):
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnNsaSelectedAttentionGrad(None, ws, ex.handle, s)
        assert ei.value.status == PARAM_INVALID
        assert "aclnnScaledMaskedSoftmaxBackward" in ei.value.message
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, s)
        s.synchronize()


def test_failed_plan_leaves_no_state():
    """A rejected call followed by a valid one on the same tensors works."""
    p = problem()
    with device_tensors(p) as ts, pyaclnn.Stream() as s:
        expect_rejected(lambda: pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(ts[0], ts[1], ts[2], 1.0,
                                                                                      True, ts[3]),
                        PARAM_INVALID, WS_API, "fixTriuMask")
        ws, ex = plan(p, ts)
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, s)
        s.synchronize()
        got = ts[3].numpy()
    ref = R.scaled_masked_softmax_backward(p["grad"], p["y"], p["mask"], p["scale"])
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()
