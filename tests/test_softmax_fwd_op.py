"""aclnnScaledMaskedSoftmax (forward) against the float64 reference.

Every case feeds the op inputs already in its dtype; the expected result is
``pyaclnn.reference.scaled_masked_softmax`` (float64 after forming z as the op
does: fp32 x*scale, or the fp16 product for fp16 inputs) of exactly those values.

Tolerances (the op computes in fp32: exp is good to ~1 ulp, the sum
is a 64-way tree, y = e * (1/sum); exp(t) for t < -87 is flushed to 0, an
absolute difference below exp(-87) < 2^-125):
* fp32: within the worst-case bound of f32_bound, and on average within 1 u of the
  row's max;
* fp16 / bf16: |ours - ref| <= ulp(ref) + 2^-125 (within one step of the output
  grid of the correctly rounded value), and almost every element (all but 1% + 2)
  equals round_to(ref) exactly.
Masked outputs of partially masked rows are exactly +0 (their exp underflows);
fully masked rows are exactly round(1/S2).
"""
import contextlib

import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import reference as R
from tiers import bits, supported_tiers

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
DT = {"fp32": F32, "fp16": F16, "bf16": BF16}
FLUSH = 2.0 ** -125  # > exp(-87), the largest value flushed to 0
MASK_LAYOUTS = {"BNSS": lambda B, N: (B, N), "B1SS": lambda B, N: (B, 1),
                "1NSS": lambda B, N: (1, N), "11SS": lambda B, N: (1, 1)}


U32 = 2.0 ** -24


def f32_bound(ref, rowmax):
    """Worst-case fp32 error of y = RN(e * RN(1/s)) (softmax_fwd.h), u = 2^-24: exp
    <= 1.01 ulp (2.02 u), its argument z - max rounded (|d| u relative, and
    e^d |d| <= 0.37), the sum through at most ceil(S2/64) + 6 additions, 1/s and
    the product u each."""
    depth = -(-ref.shape[-1] // 64) + 6
    return U32 * ((4.02 + depth) * ref + 0.37 * rowmax) + FLUSH


def make_inputs(seed, shape, mshape=None, dtype=F32, spread=3.0, p_mask=0.3):
    rng = np.random.default_rng(seed)
    mshape = shape if mshape is None else mshape
    x = R.round_to(rng.standard_normal(shape) * spread, dtype)
    mask = rng.random(mshape) < p_mask
    return x, mask


def check_result(ours, x, mask, scale, ref=None, exact_frac=0.99):
    dtype = np.dtype(x.dtype)
    ref = R.scaled_masked_softmax(x, mask, scale) if ref is None else ref
    assert ours.dtype == dtype and ours.shape == ref.shape
    o = ours.astype(np.float64)
    assert np.array_equal(np.isnan(o), np.isnan(ref)), "NaN pattern differs from the reference"
    fin = ~np.isnan(ref)
    err = np.abs(o - ref)
    if dtype == F32:
        rowmax = np.broadcast_to(np.nanmax(np.where(fin, ref, 0.0), axis=-1, keepdims=True), ref.shape)
        bound = f32_bound(ref, rowmax)
        typical = np.mean(np.where(fin, np.abs(o - ref), 0.0) / (U32 * rowmax + FLUSH))
        assert typical <= 1.0, f"mean error {typical:.2f} u of the row max (seen: <= 0.42)"
    else:
        bound = R.ulp(ref, dtype) + FLUSH
    bad = np.argwhere(fin & ~(err <= bound))
    if bad.size:
        i = tuple(bad[0])
        raise AssertionError(f"{len(bad)} of {ref.size} out of tolerance ({dtype}); first at {i}: "
                             f"ours {o[i]!r} ref {ref[i]!r} bound {bound[i]:.3g}")
    if dtype != F32 and exact_frac is not None:
        rr = R.round_to(ref, dtype).astype(np.float64)
        miss = int(np.count_nonzero((rr != o) & fin & (ref >= FLUSH)))  # (flushed ones excluded)
        assert miss <= 2 + (1 - exact_frac) * ref.size, f"{miss} of {ref.size} not correctly rounded"
    return ref


def op(x, mask, scale):
    return pyaclnn.scaled_masked_softmax(x, mask, scale)


def run_two_phase(x, mask, scale, *, stream=None, prefill=None):
    with contextlib.ExitStack() as st:
        s = stream or st.enter_context(pyaclnn.Stream())
        tx = st.enter_context(pyaclnn.Tensor(x))
        tm = st.enter_context(pyaclnn.Tensor(mask))
        if prefill is None:
            ty = st.enter_context(pyaclnn.Tensor.empty(x.shape, x.dtype))
        else:
            ty = st.enter_context(pyaclnn.Tensor(np.full(x.shape, prefill, x.dtype)))
        ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxGetWorkspaceSize(tx, tm, scale, False, ty)
        assert ws == 0
        pyaclnn.aclnnScaledMaskedSoftmax(None, ws, ex, s)
        s.synchronize()
        for t, a in ((tx, x), (tm, mask)):
            assert np.array_equal(t.numpy().view(np.uint8), np.ascontiguousarray(a).view(np.uint8)), \
                "an input tensor was modified"
        return ty.numpy()


# --------------------------------------------------------------------------- random cases

S2_VALUES = [1, 2, 3, 17, 64, 1000, 1024, 1025, 4096]


@pytest.mark.parametrize("S2", S2_VALUES)
@pytest.mark.parametrize("layout", list(MASK_LAYOUTS))
@pytest.mark.parametrize("dt", list(DT))
def test_random_vs_reference(dt, layout, S2):
    B, N, S1 = (2, 3, 4) if S2 <= 1025 else (2, 2, 3)
    k = S2_VALUES.index(S2) + 11 * list(MASK_LAYOUTS).index(layout) + 53 * list(DT).index(dt)
    x, mask = make_inputs(k, (B, N, S1, S2), (*MASK_LAYOUTS[layout](B, N), S1, S2), DT[dt])
    scale = (1.0, 0.125, -0.7, 3)[k % 4]
    ref = check_result(op(x, mask, scale), x, mask, scale)
    # the reference really is a softmax
    assert np.allclose(ref.sum(-1), 1.0)


@pytest.mark.parametrize("scale", [0.0, -0.0, -1.0, -3.5, 1e-30, 2, 7.25])
@pytest.mark.parametrize("dt", list(DT))
def test_scales(dt, scale):
    x, mask = make_inputs(5, (2, 2, 3, 97), (2, 1, 3, 97), DT[dt])
    y = op(x, mask, scale)
    check_result(y, x, mask, scale)
    if scale == 0:
        # every unmasked z is 0: uniform over the unmasked columns, masked ones 0
        mfull = np.broadcast_to(mask, x.shape)
        cnt = (~mfull).sum(-1, keepdims=True)
        assert np.all(y.astype(np.float64)[mfull] == 0)
        want = R.round_to(np.broadcast_to(1.0 / cnt, x.shape), DT[dt]).astype(np.float64)
        assert np.array_equal(y.astype(np.float64)[~mfull], want[~mfull])


def test_scale_first_then_mask_and_minus_10000():
    """z = x*scale, masked positions take -10000 after scaling (not scaled with x)."""
    x = np.zeros((1, 1, 1, 3), np.float32)
    x[..., 0] = 5.0
    mask = np.array([False, True, False]).reshape(1, 1, 1, 3)
    scale = -2000.0  # z = [-10000, -10000 (masked), 0]: the masked weight would be exp(-10000)
    y = op(x, mask, scale)
    assert y[0, 0, 0, 2] == 1.0 and y[0, 0, 0, 0] == 0.0 and y[0, 0, 0, 1] == 0.0
    # unmasked values below the fill: the masked positions take the weight
    x = np.full((1, 1, 1, 4), -1.0, np.float32)
    mask = np.array([True, False, False, True]).reshape(1, 1, 1, 4)
    y = op(x, mask, 20000.0).astype(np.float64)
    assert np.array_equal(y.ravel(), [0.5, 0.0, 0.0, 0.5])
    check_result(op(x, mask, 20000.0), x, mask, 20000.0)


def test_fp16_scale_rounded_to_fp16_and_product_in_fp16():
    """fp16: (half)scale, then the product rounded to fp16 (overflow -> inf)."""
    scale = 0.1  # fp16(0.1) = 0.0999755859375
    x = R.round_to(np.array([1000.0, 1001.0, 999.0, 1002.5]).reshape(1, 1, 1, 4), F16)
    mask = np.zeros((1, 1, 1, 4), bool)
    y = op(x, mask, scale)
    check_result(y, x, mask, scale, exact_frac=1.0)
    ref_half = R.scaled_masked_softmax(x, mask, scale, half_scale=True)
    ref_f32 = R.scaled_masked_softmax(x, mask, scale, half_scale=False)
    assert not np.allclose(ref_half, ref_f32, rtol=1e-3, atol=0)  # the step matters here
    assert np.array_equal(y, R.round_to(ref_half, F16))
    # overflow of x*scale in fp16: +inf -> NaN row; -inf -> weight 0
    x = R.round_to(np.array([60000.0, 1.0, 2.0, 3.0]).reshape(1, 1, 1, 4), F16)
    y = op(x, mask, 2.0).astype(np.float64)
    assert np.all(np.isnan(y))
    y = op(x, mask, -2.0).astype(np.float64)
    ref = R.scaled_masked_softmax(x, mask, -2.0)
    assert y[0, 0, 0, 0] == 0 and np.all(np.abs(y - ref) <= R.ulp(ref, F16))
    # the same values in fp32 do not overflow
    x32 = x.astype(np.float32)
    check_result(op(x32, mask, 2.0), x32, mask, 2.0)


def test_fully_masked_rows_are_uniform():
    for dt in DT.values():
        for S2 in (1, 3, 17, 100, 1000, 4096):
            x, _ = make_inputs(S2, (1, 2, 3, S2), dtype=dt)
            mask = np.zeros((1, 2, 3, S2), bool)
            mask[0, 1, :] = True          # fully masked rows
            mask[0, 0, 1, ::2] = True     # a partially masked row
            x[0, 1, 0, :] = np.nan        # NaN / inf at masked positions change nothing
            x[0, 1, 1, :] = np.inf
            x[0, 0, 1, ::2] = -np.inf if S2 > 1 else x[0, 0, 1, ::2]
            y = op(x, mask, 0.5).astype(np.float64)
            want = float(R.round_to(np.array(1.0 / S2), dt))
            assert np.all(y[0, 1] == want), (np.dtype(dt).name, S2)
            if S2 > 1:
                assert np.all(y[0, 0, 1, ::2] == 0.0) and not np.any(np.signbit(y[0, 0, 1, ::2]))
            check_result(op(x, mask, 0.5), x, mask, 0.5)


@pytest.mark.parametrize("dt", list(DT))
def test_nan_inf_unmasked(dt):
    """NaN or +inf at an unmasked position makes the row NaN (the default NaN in
    every element, as torch.softmax gives NaN there); -inf gets weight 0; a row of
    only -inf (unmasked) is NaN."""
    S2 = 40
    x, _ = make_inputs(9, (1, 1, 6, S2), dtype=DT[dt])
    mask = np.zeros((1, 1, 6, S2), bool)
    x[0, 0, 0, 5] = np.nan
    x[0, 0, 1, 7] = np.inf
    x[0, 0, 2, 9] = -np.inf
    x[0, 0, 3, :] = -np.inf
    x[0, 0, 4, 3] = np.nan
    mask[0, 0, 4, 3] = True   # masked NaN: no effect
    y = op(x, mask, 1.0)
    o = y.astype(np.float64)
    for r in (0, 1, 3):
        assert np.all(np.isnan(o[0, 0, r])), r
    assert o[0, 0, 2, 9] == 0.0 and not np.isnan(o[0, 0, 2]).any()
    assert not np.isnan(o[0, 0, 4]).any() and o[0, 0, 4, 3] == 0.0
    nan_bits = {F32: 0xffc00000, F16: 0xfe00, BF16: 0xffc0}[DT[dt]]
    raw = y.view(np.uint32 if DT[dt] == F32 else np.uint16)
    assert np.all(raw[0, 0, 0] == nan_bits)
    check_result(y, x, mask, 1.0)
    import torch
    tx = torch.from_numpy(x.astype(np.float32))
    want = torch.softmax(tx.masked_fill(torch.from_numpy(mask), -10000), -1).numpy()
    assert np.array_equal(np.isnan(want), np.isnan(o))


def test_nonzero_mask_bytes_count_as_masked():
    """Any non-zero mask byte masks (aclTensor BOOL over arbitrary bytes)."""
    x, _ = make_inputs(3, (1, 1, 2, 32))
    raw = np.zeros((1, 1, 2, 32), np.uint8)
    raw[0, 0, 0, ::3] = 1
    raw[0, 0, 1, ::5] = np.array([2, 7, 128, 255, 64, 3, 9], np.uint8)
    with contextlib.ExitStack() as st:
        s = st.enter_context(pyaclnn.Stream())
        buf = st.enter_context(pyaclnn.DeviceBuffer(raw.nbytes))
        buf.copy_from_host(raw)
        tm = pyaclnn.Tensor.from_buffer(buf, raw.shape, np.bool_)
        st.callback(tm.close)
        tx = st.enter_context(pyaclnn.Tensor(x))
        ty = st.enter_context(pyaclnn.Tensor.empty(x.shape, x.dtype))
        ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxGetWorkspaceSize(tx, tm, 1.0, False, ty)
        pyaclnn.aclnnScaledMaskedSoftmax(None, ws, ex, s)
        s.synchronize()
        got = ty.numpy()
    assert bits(got) == bits(op(x, raw != 0, 1.0))
    check_result(got, x, raw != 0, 1.0)


def test_integer_mask_in_one_call_helper():
    x, mask = make_inputs(4, (2, 1, 3, 20))
    assert bits(op(x, mask.astype(np.int32), 1.0)) == bits(op(x, mask, 1.0))


def test_large_spread_rows():
    """Logits spread over hundreds: exp underflow of small terms, flush below exp(-87)."""
    x, mask = make_inputs(12, (2, 2, 8, 300), dtype=F32, spread=60.0)
    for dt in DT.values():
        xd = R.round_to(x.astype(np.float64), dt)
        check_result(op(xd, mask, 1.0), xd, mask, 1.0)


# --------------------------------------------------------------------------- layouts

def _embed(a):
    B, N, S1, S2 = a.shape
    views = {}
    big = np.zeros((B, N, S1, 2 * S2 + 1), a.dtype)
    big[..., 1::2] = a
    views["step2_lastdim"] = big[..., 1::2]
    views["swap_N_S1"] = np.swapaxes(np.ascontiguousarray(np.swapaxes(a, 1, 2)), 1, 2)
    big = np.zeros((2 * B + 1, N + 2, 2 * S1, S2 + 3), a.dtype)
    big[1::2, 2:, ::2, 3:] = a
    views["outer_steps_offset"] = big[1::2, 2:, ::2, 3:]
    views["fortran"] = np.asfortranarray(a)
    for v in views.values():
        assert np.array_equal(v, a)
    return views


@pytest.mark.parametrize("kind", ["step2_lastdim", "swap_N_S1", "outer_steps_offset", "fortran"])
@pytest.mark.parametrize("dt", list(DT))
def test_noncontiguous_inputs(dt, kind, stream):
    shape = (2, 3, 4, 77)
    x, mask = make_inputs(30, shape, (2, 3, 4, 77), DT[dt])
    want = op(x, mask, 0.125)
    check_result(want, x, mask, 0.125)
    xv, mv = _embed(x)[kind], _embed(mask)[kind]
    assert not xv.flags.c_contiguous and not mv.flags.c_contiguous
    assert bits(op(xv, mv, 0.125)) == bits(want)
    assert bits(run_two_phase(xv, mv, 0.125, stream=stream)) == bits(want)


@pytest.mark.parametrize("dt", list(DT))
def test_broadcast_stride0_views(dt, stream):
    shape = (3, 2, 5, 96)
    x, m11 = make_inputs(41, shape, (1, 1, 5, 96), DT[dt])
    want = op(x, m11, -2.5)
    check_result(want, x, m11, -2.5)
    assert bits(op(x, np.broadcast_to(m11, shape), -2.5)) == bits(want)
    assert bits(run_two_phase(x, np.broadcast_to(m11, shape), -2.5, stream=stream)) == bits(want)
    # x itself as a stride-0 view over one row block
    xb = np.broadcast_to(x[:1, :1], shape)
    check_result(op(xb, m11, 1.0), np.ascontiguousarray(xb), m11, 1.0)


def test_y_with_offset_writes_only_its_view(stream):
    x, mask = make_inputs(8, (2, 2, 3, 50))
    n = x.size
    with contextlib.ExitStack() as st:
        buf = st.enter_context(pyaclnn.DeviceBuffer((n + 20) * 4))
        buf.copy_from_host(np.full(n + 20, 7.0, np.float32))
        ty = pyaclnn.Tensor.from_buffer(buf, x.shape, np.float32, offset=9)
        st.callback(ty.close)
        tx, tm = st.enter_context(pyaclnn.Tensor(x)), st.enter_context(pyaclnn.Tensor(mask))
        ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxGetWorkspaceSize(tx, tm, 1.0, False, ty)
        pyaclnn.aclnnScaledMaskedSoftmax(None, ws, ex, stream)
        stream.synchronize()
        whole = np.empty(n + 20, np.float32)
        buf.copy_to_host(whole)
    assert np.all(whole[:9] == 7.0) and np.all(whole[9 + n:] == 7.0)
    assert bits(whole[9:9 + n].reshape(x.shape)) == bits(op(x, mask, 1.0))


def test_two_phase_matches_one_call_and_fills_y(stream):
    for dt in DT.values():
        x, mask = make_inputs(2, (2, 3, 4, 33), (1, 3, 4, 33), dt)
        assert bits(run_two_phase(x, mask, 0.3, stream=stream, prefill=np.nan)) == bits(op(x, mask, 0.3))


# --------------------------------------------------------------------------- determinism / tiers

CASES = [((4, 4, 64, 512), (4, 1, 64, 512)), ((2, 3, 40, 17), (1, 1, 40, 17)),
         ((1, 2, 9, 4096), (1, 2, 9, 4096)), ((3, 2, 21, 1000), (3, 1, 21, 1000))]


@pytest.mark.parametrize("dt", list(DT))
def test_tiers_and_threads_bitwise(dt, restore_runtime_knobs):
    """Every ISA tier and thread count gives the scalar oracle's bits (large outputs
    take the non-temporal store path)."""
    for k, (shape, mshape) in enumerate(CASES):
        x, mask = make_inputs(70 + k, shape, mshape, DT[dt])
        x.reshape(-1)[::97] = np.nan if k == 1 else x.reshape(-1)[::97]
        pyaclnn.set_max_isa("scalar")
        pyaclnn.set_num_threads(1)
        want = op(x, mask, 0.7)
        check_result(want, x, mask, 0.7)
        for isa in supported_tiers():
            pyaclnn.set_max_isa(isa)
            for threads in (1, 2, 3, 5):
                pyaclnn.set_num_threads(threads)
                assert bits(op(x, mask, 0.7)) == bits(want), (isa, threads, shape)


def test_env_isa_cap_in_subprocess(run_py):
    code = ("import numpy as np, pyaclnn, hashlib\n"
            "rng = np.random.default_rng(1)\n"
            "x = rng.standard_normal((2, 2, 16, 300)).astype(np.float32)\n"
            "m = rng.random((2, 1, 16, 300)) < 0.3\n"
            "pyaclnn.ensure_initialized()\n"
            "print(pyaclnn.runtime_info()['isa'], hashlib.sha256(pyaclnn.scaled_masked_softmax(x, m, 0.5)"
            ".tobytes()).hexdigest())\n")
    outs = {}
    for isa in supported_tiers():
        out = run_py(code, {"PYACLNN_MAX_ISA": isa, "PYACLNN_NUM_THREADS": "3"}).stdout.split()
        assert out[0] == isa
        outs[isa] = out[1]
    assert len(set(outs.values())) == 1, outs


def test_repeatable_executor_relaunch_sees_new_input(stream):
    x, mask = make_inputs(21, (2, 2, 8, 64))
    with contextlib.ExitStack() as st:
        tx, tm = st.enter_context(pyaclnn.Tensor(x)), st.enter_context(pyaclnn.Tensor(mask))
        ty = st.enter_context(pyaclnn.Tensor.empty(x.shape, x.dtype))
        ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxGetWorkspaceSize(tx, tm, 1.0, False, ty)
        ex.set_repeatable()
        st.callback(ex.destroy)
        pyaclnn.aclnnScaledMaskedSoftmax(None, ws, ex, stream)
        stream.synchronize()
        assert bits(ty.numpy()) == bits(op(x, mask, 1.0))
        x2 = x * 2
        tx.buffer.copy_from_host(x2)
        pyaclnn.aclnnScaledMaskedSoftmax(None, ws, ex, stream)
        stream.synchronize()
        assert bits(ty.numpy()) == bits(op(x2, mask, 1.0))


# --------------------------------------------------------------------------- torch

@pytest.mark.parametrize("dt", list(DT))
def test_vs_torch_formulation(dt):
    """The ST golden: torch.softmax((x*scale).masked_fill(mask, -10000), -1) in fp32."""
    import torch
    x, mask = make_inputs(90, (2, 4, 16, 128), (2, 1, 16, 128), DT[dt])
    y = op(x, mask, 0.25).astype(np.float64)
    tx = torch.from_numpy(x.astype(np.float32))
    if DT[dt] == F16:
        z = (tx * float(np.float16(0.25))).half().float()
    else:
        z = tx * 0.25
    want = torch.softmax(z.masked_fill(torch.from_numpy(mask), -10000), -1).double().numpy()
    tol = 3e-7 if DT[dt] == F32 else R.ulp(want, DT[dt])
    assert np.all(np.abs(y - want) <= tol)


def test_roundtrip_forward_backward_vs_torch_autograd():
    """scaled_masked_softmax_backward on the forward's y is torch autograd's gradient
    of torch.softmax((x*scale).masked_fill(mask,-10000),-1), fully masked rows included."""
    import torch
    x, mask = make_inputs(91, (2, 3, 8, 96), (2, 1, 8, 96))
    mask[0, 0, 2] = True  # a fully masked row
    scale = 0.4
    g = np.random.default_rng(5).standard_normal(x.shape).astype(np.float32)
    y = op(x, mask, scale)
    dx = pyaclnn.scaled_masked_softmax_backward(g, y, mask, scale).astype(np.float64)
    tx = torch.from_numpy(x.astype(np.float64)).requires_grad_()
    ty = torch.softmax((tx * float(np.float32(scale))).masked_fill(torch.from_numpy(mask), -10000), -1)
    ty.backward(torch.from_numpy(g.astype(np.float64)))
    want = tx.grad.numpy()
    assert np.array_equal(dx[0, :, 2], np.zeros_like(dx[0, :, 2]))
    assert np.abs(dx - want).max() <= 1e-5 * max(1.0, np.abs(want).max())


def test_denormal_outputs_all_tiers(restore_runtime_knobs):
    """Outputs below 2^-126 (a tiny e over a large sum) are rounded like every other
    value in every tier (the AVX512_BF16 converter would flush them: not used there)."""
    S2 = 128
    x = np.zeros((1, 1, 2, S2), np.float32)
    x[..., 5] = -86.5          # e = exp(-86.5) ~ 2.7e-38, y ~ 2.5e-40: an fp32 / bf16 denormal
    x[..., 60:70] = -86.9
    mask = np.zeros((1, 1, 2, S2), bool)
    for dt in DT.values():
        xd = R.round_to(x.astype(np.float64), dt)
        pyaclnn.set_max_isa("scalar")
        want = op(xd, mask, 1.0)
        if dt != F16:
            assert 0 < want.astype(np.float64)[0, 0, 0, 5] < 2.0 ** -126
        check_result(want, xd, mask, 1.0)
        for isa in supported_tiers():
            pyaclnn.set_max_isa(isa)
            assert bits(op(xd, mask, 1.0)) == bits(want), (isa, dt)


def test_exp_accuracy_through_two_element_rows(restore_runtime_knobs):
    """A row [0, d] with d < -17 has sum = 1 + e^d == 1 in fp32, so y[1] is the op's
    exp(d) itself: at most 1.01 ulp from the true value (softmax_fwd.h), every tier."""
    rng = np.random.default_rng(11)
    d = np.concatenate([rng.uniform(-87.0, -17.0, 20000), [-87.0, -86.99, -17.5, -50.0]]).astype(F32)
    x = np.zeros((1, 1, d.size, 2), F32)
    x[0, 0, :, 1] = d
    mask = np.zeros((1, 1, d.size, 2), bool)
    true = np.exp(d.astype(np.float64))
    ulp = R.ulp(true, F32)
    for isa in supported_tiers():
        pyaclnn.set_max_isa(isa)
        y = op(x, mask, 1.0)
        assert np.all(y[0, 0, :, 0] == 1.0)
        err = np.abs(y[0, 0, :, 1].astype(np.float64) - true) / ulp
        assert err.max() <= 1.01, (isa, float(err.max()), float(d[err.argmax()]))
        assert np.mean(err <= 0.5) > 0.75, isa  # most correctly rounded (softmax_fwd.h)


@pytest.mark.parametrize("dt", list(DT))
def test_causal_mask_all_tiers(dt, restore_runtime_knobs):
    """A causal mask: whole 64-element runs are cut (their exp work is skipped in
    the AVX-512 tier); every tier still gives the scalar oracle's bits."""
    S = 300
    x, _ = make_inputs(91, (2, 2, S, S), None, DT[dt])
    mask = np.triu(np.ones((S, S), bool), 1)[None, None]
    x[0, 1, 7, 3] = np.nan  # a NaN row among them
    pyaclnn.set_max_isa("scalar")
    want = op(x, mask, 0.5)
    check_result(want, x, mask, 0.5)
    assert np.all(want[1, :, :-1, -1] == 0)  # the last key is masked for all but the last query
    assert np.all(np.isnan(want[0, 1, 7]))
    for isa in supported_tiers():
        pyaclnn.set_max_isa(isa)
        for threads in (1, 3):
            pyaclnn.set_num_threads(threads)
            assert bits(op(x, mask, 0.5)) == bits(want), (isa, threads)
