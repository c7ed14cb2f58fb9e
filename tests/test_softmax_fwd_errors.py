"""aclnnScaledMaskedSoftmax: every parameter check (status and message) and the
launch errors. Order and codes follow the vendor's aclnn layer: NULL tensors give
ACLNN_ERR_INNER_NULLPTR (561103; the vendor's doc says 161001), then dtypes, ranks,
mask broadcast, S2, pyaclnn's memory-safety checks, and fixedTriuMask last."""
import contextlib

import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import reference as R

from mutations import cast, fmt, reshape, setv, expect_rejected

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
PARAM_NULLPTR = 161001
PARAM_INVALID = 161002
INNER_NULLPTR = 561103
WS_API = "aclnnScaledMaskedSoftmaxGetWorkspaceSize"
API = "aclnnScaledMaskedSoftmax"
NAMES = ("x", "mask", "y")
NZ = pyaclnn.ACL_FORMAT_FRACTAL_NZ
NC1HWC0 = pyaclnn.ACL_FORMAT_NC1HWC0


def problem(shape=(2, 3, 4, 64), mshape=None, dtype=F32, seed=0):
    rng = np.random.default_rng(seed)
    mshape = shape if mshape is None else mshape
    return dict(x=R.round_to(rng.uniform(-2, 2, shape), dtype), mask=rng.random(mshape) < 0.3,
                y=(tuple(shape), np.dtype(dtype)), formats={}, scale=0.5, fix_triu_mask=False)


@contextlib.contextmanager
def device_tensors(p):
    with contextlib.ExitStack() as st:
        ts = []
        for name in NAMES:
            v = p[name]
            f = p["formats"].get(name)
            if v is None:
                ts.append(None)
            elif isinstance(v, np.ndarray):
                ts.append(st.enter_context(pyaclnn.Tensor(v, format=f)))
            elif callable(v):
                t = v(st, f)
                st.callback(t.close)
                ts.append(t)
            else:
                ts.append(st.enter_context(pyaclnn.Tensor.empty(v[0], v[1], format=f)))
        yield ts


def plan(p, ts):
    return pyaclnn.aclnnScaledMaskedSoftmaxGetWorkspaceSize(ts[0], ts[1], p["scale"], p["fix_triu_mask"], ts[2])


def get_workspace(p):
    with device_tensors(p) as ts:
        ws, ex = plan(p, ts)
        ex.destroy()
        return ws


def run(p):
    with device_tensors(p) as ts, pyaclnn.Stream() as s:
        ws, ex = plan(p, ts)
        pyaclnn.aclnnScaledMaskedSoftmax(None, ws, ex, s)
        s.synchronize()
        return ts[2].numpy()


def strided_y(strides, offset=0):
    def f(p):
        shape, dt = p["y"]

        def make(st, format_):
            n = int(np.prod(shape)) * 2 + offset + 64
            buf = st.enter_context(pyaclnn.DeviceBuffer(n * dt.itemsize))
            return pyaclnn.Tensor.from_buffer(buf, shape, dt, strides=strides, offset=offset, format=format_)
        p["y"] = make
    return f


S = (2, 3, 4, 64)
BAD = [
    # ---- dtypes (x first, then mask, then y)
    ("x_int32", {}, cast("x", np.int32), "x dtype"),
    ("x_fp64", {}, cast("x", np.float64), "x dtype"),
    ("x_int8_and_mask_fp32", {}, lambda p: (cast("x", np.int8)(p), cast("mask", F32)(p)), "x dtype"),
    ("mask_fp32", {}, cast("mask", F32), "mask dtype"),
    ("mask_uint8", {}, cast("mask", np.uint8), "mask dtype"),
    ("mask_int8", {}, cast("mask", np.int8), "mask dtype"),
    ("mask_fp16_and_y_bf16", {}, lambda p: (cast("mask", F16)(p), cast("y", BF16)(p)), "mask dtype"),
    ("y_fp16_x_fp32", {}, cast("y", F16), "y dtype"),
    ("y_fp32_x_bf16", {"dtype": BF16}, cast("y", F32), "y dtype"),
    ("y_int32", {}, cast("y", np.int32), "y dtype"),
    # ---- ranks (vendor UT: 5-D)
    ("x_rank3", {}, reshape("x", (6, 4, 64)), "x must be 4-D"),
    ("x_rank5", {}, reshape("x", (2, 3, 4, 1, 64)), "x must be 4-D"),
    ("mask_rank3", {}, reshape("mask", (6, 4, 64)), "mask must be 4-D"),
    ("mask_rank5", {}, reshape("mask", (1, 2, 3, 4, 64)), "mask must be 4-D"),
    ("y_rank2", {}, reshape("y", (24, 64)), "y must be 4-D"),
    ("y_rank5", {}, reshape("y", (2, 3, 4, 64, 1)), "y must be 4-D"),
    ("mask_rank5_and_S2_big", {"shape": (1, 1, 2, 5000)}, reshape("mask", (1, 1, 1, 2, 5000)), "mask must be 4-D"),
    # ---- mask broadcast
    ("mask_S1_differs", {}, reshape("mask", (2, 3, 5, 64)), "mask shape"),
    ("mask_S1_is_1", {}, reshape("mask", (2, 3, 1, 64)), "mask shape"),
    ("mask_S2_differs", {}, reshape("mask", (2, 3, 4, 63)), "mask shape"),
    ("mask_B_neither", {"shape": (4, 4, 4, 128)}, reshape("mask", (2, 4, 4, 128)), "mask shape"),
    ("mask_N_neither", {"shape": (4, 4, 4, 128)}, reshape("mask", (1, 2, 4, 128)), "mask shape"),
    ("mask_B_larger", {}, reshape("mask", (4, 3, 4, 64)), "mask shape"),
    ("mask_bad_and_S2_big", {"shape": (1, 1, 2, 5000)}, reshape("mask", (1, 1, 3, 5000)), "mask shape"),
    # ---- S2 range (before the checks pyaclnn adds)
    ("S2_4097", {"shape": (1, 1, 2, 4097)}, None, "S2 must be in (0, 4096]"),
    ("S2_8192", {"shape": (1, 1, 1, 8192)}, None, "S2 must be in (0, 4096]"),
    ("S2_0", {"shape": (2, 3, 4, 0)}, None, "S2 must be in (0, 4096]"),
    ("S2_4097_and_y_shape", {"shape": (1, 1, 2, 4097)}, reshape("y", (1, 1, 3, 4097)), "S2 must be in"),
    # ---- pyaclnn's additions
    ("y_shape_S1", {}, reshape("y", (2, 3, 5, 64)), "y shape must equal x shape"),
    ("y_shape_B", {}, reshape("y", (1, 3, 4, 64)), "y shape must equal x shape"),
    ("B_0", {"shape": (0, 3, 4, 64), "mshape": (1, 3, 4, 64)}, None, "x dims must all be > 0"),
    ("N_0", {"shape": (2, 0, 4, 64), "mshape": (2, 1, 4, 64)}, None, "x dims must all be > 0"),
    ("S1_0", {"shape": (2, 3, 0, 64)}, None, "x dims must all be > 0"),
    ("y_noncontiguous_step2", {}, strided_y((3 * 4 * 128, 4 * 128, 128, 2)), "y must be contiguous"),
    ("y_transposed", {}, strided_y((3 * 4 * 64, 64, 3 * 64, 1)), "y must be contiguous"),
    ("y_padded_rows", {}, strided_y((3 * 4 * 65, 4 * 65, 65, 1)), "y must be contiguous"),
    ("y_stride0", {}, strided_y((0, 4 * 64, 64, 1)), "y must be contiguous"),
    # ---- attribute, last
    ("fixedTriuMask_true", {}, setv(fix_triu_mask=True), "fixedTriuMask"),
    ("fixedTriuMask_true_after_layout", {}, lambda p: (setv(fix_triu_mask=True)(p),
                                                      strided_y((3 * 4 * 128, 4 * 128, 128, 2))(p)),
     "y must be contiguous"),
]
for _n in NAMES:
    for _fid, _fv in (("NC1HWC0", NC1HWC0), ("FRACTAL_NZ", NZ)):
        BAD.append((f"{_n}_{_fid}", {}, fmt(_n, _fv), f"{_n} format"))


@pytest.mark.parametrize("case_id,overrides,mutate,needle", BAD, ids=[b[0] for b in BAD])
def test_rejected(case_id, overrides, mutate, needle):
    p = problem(**overrides)
    if mutate is not None:
        mutate(p)
    expect_rejected(lambda: get_workspace(p), PARAM_INVALID, WS_API, needle, case_id)


@pytest.mark.parametrize("name", NAMES)
def test_null_tensor_is_inner_nullptr(name):
    p = problem()
    p[name] = None
    with pytest.raises(pyaclnn.AclError) as ei:
        get_workspace(p)
    assert ei.value.status == INNER_NULLPTR
    assert f"{name} is NULL" in ei.value.message


def test_null_mask_with_fixed_triu_mask_is_still_nullptr():
    """The vendor's null check runs before the fixedTriuMask check: 561103."""
    p = problem()
    p["mask"] = None
    p["fix_triu_mask"] = True
    cast("x", np.int32)(p)
    with pytest.raises(pyaclnn.AclError) as ei:
        get_workspace(p)
    assert ei.value.status == INNER_NULLPTR and "mask is NULL" in ei.value.message


def test_null_workspace_size_and_executor_raw():
    ffi, lib = pyaclnn.ffi, pyaclnn.lib
    p = problem()
    with device_tensors(p) as ts:
        x, m, y = (t.handle for t in ts)
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        fn = lib.aclnnScaledMaskedSoftmaxGetWorkspaceSize
        assert fn(x, m, 1.0, False, y, ffi.NULL, ex) == PARAM_NULLPTR
        assert "workspaceSize is NULL" in pyaclnn.get_recent_err_msg()
        assert fn(x, m, 1.0, False, y, ws, ffi.NULL) == PARAM_NULLPTR
        assert "executor is NULL" in pyaclnn.get_recent_err_msg()
        assert fn(ffi.NULL, ffi.NULL, 1.0, False, ffi.NULL, ws, ex) == INNER_NULLPTR
        assert "x is NULL" in pyaclnn.get_recent_err_msg()
        assert fn(x, m, 1.0, False, y, ws, ex) == 0
        assert ws[0] == 0
        assert lib.aclDestroyAclOpExecutor(ex[0]) == 0


GOOD = [
    ("ND", {}, None),
    ("NCHW_all", {}, lambda p: p["formats"].update(x=pyaclnn.ACL_FORMAT_NCHW, mask=pyaclnn.ACL_FORMAT_NCHW,
                                                   y=pyaclnn.ACL_FORMAT_NCHW)),
    ("S2_4096", {"shape": (1, 1, 2, 4096)}, None),
    ("S2_1", {"shape": (2, 3, 4, 1)}, None),
    ("mask_B1", {"mshape": (2, 1, 4, 64)}, None),
    ("mask_1N", {"mshape": (1, 3, 4, 64)}, None),
    ("mask_11", {"mshape": (1, 1, 4, 64)}, None),
    ("fp16", {"dtype": F16}, None),
    ("bf16", {"dtype": BF16}, None),
    ("y_contiguous_with_offset", {}, strided_y((3 * 4 * 64, 4 * 64, 64, 1), offset=9)),
    ("scale_int", {}, setv(scale=3)),
    ("scale_negative", {}, setv(scale=-2.5)),
    ("scale_huge_double", {}, setv(scale=1e300)),
]


@pytest.mark.parametrize("case_id,overrides,mutate", GOOD, ids=[g[0] for g in GOOD])
def test_accepted(case_id, overrides, mutate):
    p = problem(**overrides)
    if mutate is not None:
        mutate(p)
    out = run(p).astype(np.float64)
    ref = R.scaled_masked_softmax(p["x"], p["mask"], p["scale"])
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(out), nan)
    tol = 1e-6 if p["x"].dtype == F32 else 2.0 ** -7
    assert np.all(np.abs(out - ref)[~nan] <= tol)


@contextlib.contextmanager
def planned(p=None):
    p = p or problem()
    with device_tensors(p) as ts, pyaclnn.Stream() as s:
        ws, ex = plan(p, ts)
        try:
            yield ws, ex, ts[2], s
        finally:
            ex.destroy()


def test_spent_executor():
    with planned() as (ws, ex, y, s):
        raw = ex.handle
        pyaclnn.aclnnScaledMaskedSoftmax(None, ws, ex, s)
        s.synchronize()
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnScaledMaskedSoftmax(None, ws, ex, s)
        assert ei.value.status == PARAM_INVALID
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnScaledMaskedSoftmax(None, ws, raw, s)
        assert ei.value.status == PARAM_INVALID and ei.value.api == API
        assert "already" in ei.value.message


def test_null_executor_to_launch():
    with pyaclnn.Stream() as s:
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnScaledMaskedSoftmax(None, 0, None, s)
        assert ei.value.status == PARAM_NULLPTR and "executor" in ei.value.message


def test_backward_executor_to_forward_launch_and_back():
    p = problem()
    with planned(p) as (ws, ex, y, s), contextlib.ExitStack() as st:
        g = st.enter_context(pyaclnn.Tensor(p["x"]))
        m = st.enter_context(pyaclnn.Tensor(p["mask"]))
        out = st.enter_context(pyaclnn.Tensor.empty(p["x"].shape, p["x"].dtype))
        bws, bex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g, g, m, 1.0, False, out)
        st.callback(bex.destroy)
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnScaledMaskedSoftmax(None, bws, bex.handle, s)
        assert ei.value.status == PARAM_INVALID and "aclnnScaledMaskedSoftmaxBackward" in ei.value.message
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex.handle, s)
        assert ei.value.status == PARAM_INVALID
        pyaclnn.aclnnScaledMaskedSoftmax(None, ws, ex, s)
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, bws, bex, s)
        s.synchronize()


def test_failed_plan_leaves_no_state():
    p = problem()
    with device_tensors(p) as ts, pyaclnn.Stream() as s:
        expect_rejected(lambda: pyaclnn.aclnnScaledMaskedSoftmaxGetWorkspaceSize(ts[0], ts[1], 1.0, True, ts[2]),
                        PARAM_INVALID, WS_API, "fixedTriuMask")
        ws, ex = plan(p, ts)
        pyaclnn.aclnnScaledMaskedSoftmax(None, ws, ex, s)
        s.synchronize()
        got = ts[2].numpy()
    ref = R.scaled_masked_softmax(p["x"], p["mask"], p["scale"])
    assert np.abs(got - ref).max() <= 1e-6


def test_null_data_pointer_is_refused():
    """A tensor without a device address never reaches the kernel."""
    p = problem()
    ffi, lib = pyaclnn.ffi, pyaclnn.lib
    shape = (2, 3, 4, 64)
    dims = ffi.new("int64_t[]", shape)
    strides = ffi.new("int64_t[]", [3 * 4 * 64, 4 * 64, 64, 1])
    y = lib.aclCreateTensor(dims, 4, pyaclnn.ACL_FLOAT, strides, 0, pyaclnn.ACL_FORMAT_ND, dims, 4, ffi.NULL)
    try:
        with device_tensors(p) as ts, pyaclnn.Stream() as s:
            rc_ws = ffi.new("uint64_t *")
            ex = ffi.new("aclOpExecutor **")
            rc = lib.aclnnScaledMaskedSoftmaxGetWorkspaceSize(ts[0].handle, ts[1].handle, 1.0, False, y, rc_ws, ex)
            if rc == 0:
                rc = lib.aclnnScaledMaskedSoftmax(ffi.NULL, 0, ex[0], s.handle)
                if rc == 0:
                    rc = lib.aclrtSynchronizeStream(s.handle)
            assert rc != 0
            assert "y" in pyaclnn.get_recent_err_msg()
    finally:
        lib.aclDestroyTensor(y)


def _raw_tensor(buf, shape, dtype_enum, strides, offset, storage):
    ffi, lib = pyaclnn.ffi, pyaclnn.lib
    dims = ffi.new("int64_t[]", list(shape))
    st = ffi.new("int64_t[]", list(strides))
    sd = ffi.new("int64_t[]", list(storage))
    return lib.aclCreateTensor(dims, len(shape), dtype_enum, st, offset, pyaclnn.ACL_FORMAT_ND, sd, len(storage),
                               buf.cdata)


@pytest.mark.parametrize("which,strides,offset,storage,needle", [
    ("x", (256, 64, -1, 1), 0, (1536,), "x strides must be non-negative"),
    ("x", (768, 256, 64, 1), -3, (1536,), "x view offset must be >= 0"),
    ("x", (768, 256, 64, 2), 0, (1536,), "x view"),               # past the storage by its span
    ("x", (768, 256, 64, 1), 1, (1535,), "x view"),               # from its offset, one element past
    ("mask", (768, 256, 64, 1), 0, (1535,), "mask view"),
])
def test_views_outside_their_storage(which, strides, offset, storage, needle):
    """The shared view check (pa_tensor_check_view) runs for every tensor."""
    ffi, lib = pyaclnn.ffi, pyaclnn.lib
    shape = (2, 3, 4, 64)
    with contextlib.ExitStack() as st:
        buf = st.enter_context(pyaclnn.DeviceBuffer(4 * 4096))
        good = {"x": _raw_tensor(buf, shape, pyaclnn.ACL_FLOAT, (768, 256, 64, 1), 0, (1536,)),
                "mask": _raw_tensor(buf, shape, pyaclnn.ACL_BOOL, (768, 256, 64, 1), 0, (1536,)),
                "y": _raw_tensor(buf, shape, pyaclnn.ACL_FLOAT, (768, 256, 64, 1), 0, (1536,))}
        dt = pyaclnn.ACL_FLOAT if which == "x" else pyaclnn.ACL_BOOL
        good[which + "_bad"] = bad = _raw_tensor(buf, shape, dt, strides, offset, storage)
        for t in good.values():
            st.callback(lib.aclDestroyTensor, t)
        args = dict(good, **{which: bad})
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        rc = lib.aclnnScaledMaskedSoftmaxGetWorkspaceSize(args["x"], args["mask"], 1.0, False, args["y"], ws, ex)
        assert rc == PARAM_INVALID
        msg = pyaclnn.get_recent_err_msg()
        assert msg.startswith(WS_API) and needle in msg, msg
