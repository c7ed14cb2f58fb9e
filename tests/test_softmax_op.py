"""aclnnScaledMaskedSoftmaxBackward against the float64 reference (and torch).

Every case feeds the op inputs already rounded to its dtype; the expected result is
``pyaclnn.reference.scaled_masked_softmax_backward`` (float64) of exactly those
values.

Tolerances. The op computes in fp32, so its error is relative to the size of the
terms a row adds up, not to each output. For a row with p = g*y (all S2 columns)
and s = sum(p), the row scale is

    M = |scale| * (max|p| + max|y| * max(|s|, ||p||_2))

i.e. the magnitude of p_i and s*y_i, with |s| replaced by its typical no-cancellation
size ||p||_2 when the sum happens to cancel (a cancelling fp32 sum keeps an absolute
error of about u*||p||_2, so such rows cannot meet a bound relative to the tiny s).
M >= max|ref| over the row. (A bound of 1e-5 * max|ref| alone is too tight for fp32:
with 4096 uniform terms whose sum cancels, a correct fp32 implementation was measured
at 1.24x that bound, while its worst error is 0.07x the bound used here.)

* fp32: |ours - ref| <= 1e-5 * M elementwise.
* fp16 / bf16: |ours - ref| <= ulp(ref) + 1e-6 * M. ulp(ref) is one step of the
  output grid at ref: correct rounding of an fp32 value within a hair of ref lands
  at most one step away. The 1e-6 * M floor covers elements whose value cancels to
  near zero, where the fp32 error (absolute, about u*M) exceeds their tiny ulp.
  Besides, almost all elements (all but 1% + 2) must equal round_to(ref) exactly.

Masked outputs must be exactly +0.0 (sign bit clear), also in rows holding NaN/Inf.
"""
import contextlib
import zlib

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
FMAX = {F32: float(np.finfo(np.float32).max), F16: 65504.0, BF16: float.fromhex("0x1.fep127")}
VIEW_KINDS = ["step2_lastdim", "swap_N_S1", "outer_steps_offset", "fortran"]  # see _embed

MASK_LAYOUTS = {
    "BNSS": lambda B, N: (B, N),
    "B1SS": lambda B, N: (B, 1),
    "1NSS": lambda B, N: (1, N),
    "11SS": lambda B, N: (1, 1),
}


# --------------------------------------------------------------------------- helpers

def softmax_y(rng, shape, dtype):
    """y = softmax(random logits) over the last dim, rounded to dtype."""
    z = rng.standard_normal(shape) * 2.0
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return R.round_to(e / e.sum(axis=-1, keepdims=True), dtype)


def make_inputs(seed, shape, mshape=None, dtype=F32, y_kind="uniform", p_mask=0.3):
    """(grad, y, mask) with grad, y rounded to dtype. y_kind: "softmax" (a real softmax
    output, grad ~ N(0,1)) or "uniform" (grad and y uniform in [-5, 5], y not summing to 1)."""
    rng = np.random.default_rng(seed)
    B, N, S1, S2 = shape
    mshape = shape if mshape is None else mshape
    if y_kind == "softmax":
        g = R.round_to(rng.standard_normal(shape), dtype)
        y = softmax_y(rng, shape, dtype)
    else:
        g = R.round_to(rng.uniform(-5, 5, shape), dtype)
        y = R.round_to(rng.uniform(-5, 5, shape), dtype)
    mask = rng.random(mshape) < p_mask
    return g, y, mask


def row_scale(g, y, scale):
    """M per row (keepdims), see the module docstring."""
    p = g.astype(np.float64) * y.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        s = np.abs(p.sum(axis=-1, keepdims=True))
        l2 = np.sqrt((p * p).sum(axis=-1, keepdims=True))
        ymax = np.abs(y.astype(np.float64)).max(axis=-1, keepdims=True)
        pmax = np.abs(p).max(axis=-1, keepdims=True)
    sc = abs(float(np.float32(scale)))
    return sc * (pmax + ymax * np.maximum(s, l2))


def check_result(ours, g, y, mask, scale, dtype, ref=None, exact_frac=0.99):
    """Checks ours against the reference under the documented tolerances; returns ref."""
    dtype = np.dtype(dtype)
    ref = R.scaled_masked_softmax_backward(g, y, mask, scale) if ref is None else ref
    assert ours.dtype == dtype, f"dtype {ours.dtype} != {dtype}"
    assert ours.shape == ref.shape, f"shape {ours.shape} != {ref.shape}"
    o = ours.astype(np.float64)
    mfull = np.broadcast_to(np.asarray(mask, bool), ref.shape)
    # masked: exactly +0.0
    assert np.all(o[mfull] == 0.0), "masked outputs must be 0"
    assert not np.any(np.signbit(o[mfull])), "masked outputs must be +0.0, not -0.0"
    M = np.broadcast_to(row_scale(g, y, scale), ref.shape)
    # finite references beyond the output range round to +-Inf (or, within the fp32
    # error of the threshold, to the largest finite value)
    fmax = FMAX[dtype]
    with np.errstate(invalid="ignore"):
        over = np.isfinite(ref) & ~np.isfinite(R.round_to(ref, dtype).astype(np.float64))
    if over.any():
        assert np.all((np.sign(o[over]) == np.sign(ref[over])) & (np.abs(o[over]) >= fmax)), \
            "values beyond the output range must round to the same-signed Inf"
    fin = np.isfinite(ref) & ~over
    assert np.array_equal(np.isfinite(o) | over, np.isfinite(ref)), \
        "finite/non-finite pattern differs from the reference"
    err = np.abs(o - ref)
    if dtype == F32:
        bound = 1e-5 * M
    else:
        bound = R.ulp(ref, dtype) + 1e-6 * M
    bad = np.argwhere(fin & ~(err <= bound))
    if bad.size:
        i = tuple(bad[0])
        raise AssertionError(f"{len(bad)} of {ref.size} elements out of tolerance ({dtype}); first at {i}: "
                             f"ours {o[i]!r} ref {ref[i]!r} bound {bound[i]:.3g} row scale {M[i]:.3g}")
    if dtype != F32 and exact_frac is not None:
        # fp32 compute then one RNE rounding: nearly every element is the correctly
        # rounded reference (misses only where ref lies within the fp32 error of a tie)
        rr = R.round_to(ref, dtype).astype(np.float64)
        miss = int(np.count_nonzero((rr != o) & fin))
        assert miss <= 2 + (1 - exact_frac) * ref.size, \
            f"{miss} of {ref.size} elements are not the correctly rounded reference"
    return ref


def run_two_phase(g, y, mask, scale, *, out_dtype=None, stream=None, prefill=None):
    """Both phases through pyaclnn.Tensor / Stream; returns out as numpy."""
    out_dtype = np.dtype(g.dtype if out_dtype is None else out_dtype)
    with contextlib.ExitStack() as st:
        s = stream or st.enter_context(pyaclnn.Stream())
        tg = st.enter_context(pyaclnn.Tensor(g))
        ty = st.enter_context(pyaclnn.Tensor(y))
        tm = st.enter_context(pyaclnn.Tensor(mask))
        if prefill is None:
            out = st.enter_context(pyaclnn.Tensor.empty(g.shape, out_dtype))
        else:
            out = st.enter_context(pyaclnn.Tensor(np.full(g.shape, prefill, out_dtype)))
        ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(tg, ty, tm, scale, False, out)
        buf = st.enter_context(pyaclnn.DeviceBuffer(ws)) if ws else None
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(buf, ws, ex, s)
        s.synchronize()
        # the inputs on the device are not modified
        for t, a in ((tg, g), (ty, y), (tm, mask)):
            assert np.array_equal(t.numpy().view(np.uint8), np.ascontiguousarray(a).view(np.uint8)), \
                "an input tensor was modified"
        return out.numpy()


def op(g, y, mask, scale):
    return pyaclnn.scaled_masked_softmax_backward(g, y, mask, scale)


# --------------------------------------------------------------------------- random cases

S2_VALUES = [1, 2, 3, 17, 64, 1000, 1024, 1025, 4096]
SCALES = [1.0, 0.125, -2.5, 3]


def _bns(S2):
    """Small B, N, S1 for long rows (the file must stay fast)."""
    return (2, 3, 4) if S2 <= 1025 else (2, 2, 3)


@pytest.mark.parametrize("S2", S2_VALUES)
@pytest.mark.parametrize("layout", list(MASK_LAYOUTS))
@pytest.mark.parametrize("dt", list(DT))
def test_random_vs_reference(dt, layout, S2):
    B, N, S1 = _bns(S2)
    k = S2_VALUES.index(S2) + 7 * list(MASK_LAYOUTS).index(layout) + 31 * list(DT).index(dt)
    y_kind = ("softmax", "uniform")[k % 2]
    scale = SCALES[k % len(SCALES)]
    mshape = MASK_LAYOUTS[layout](B, N) + (S1, S2)
    g, y, mask = make_inputs(1000 + k, (B, N, S1, S2), mshape, DT[dt], y_kind)
    ours = op(g, y, mask, scale)
    check_result(ours, g, y, mask, scale, DT[dt])


@pytest.mark.parametrize("y_kind", ["softmax", "uniform"])
@pytest.mark.parametrize("scale", SCALES, ids=["1.0", "0.125", "-2.5", "int3"])
@pytest.mark.parametrize("dt", list(DT))
def test_scales_and_y_kinds(dt, scale, y_kind):
    shape = (2, 2, 5, 200)
    seed = zlib.crc32(f"{dt}-{scale!r}-{y_kind}".encode()) % 997
    g, y, mask = make_inputs(seed, shape, (2, 1, 5, 200), DT[dt], y_kind)
    ours = op(g, y, mask, scale)
    check_result(ours, g, y, mask, scale, DT[dt])


def test_y_need_not_sum_to_one():
    """No softmax property of y is assumed: with y rows far from summing to 1 the
    result still matches the formula, and differs from g*y - (g.y)*y/sum(y) (what
    renormalising y would give)."""
    g, y, mask = make_inputs(5, (1, 2, 3, 33), dtype=F32, y_kind="uniform")
    ysum = y.astype(np.float64).sum(-1, keepdims=True)
    assert np.abs(ysum - 1).min() > 1e-3
    ours = op(g, y, mask, 1.0)
    check_result(ours, g, y, mask, 1.0, F32)
    ynorm = y.astype(np.float64) / ysum
    wrong = R.scaled_masked_softmax_backward(g, ynorm, mask, 1.0) * ysum
    assert np.abs(ours - wrong).max() > 1e-2 * np.abs(wrong).max()


def test_sum_covers_masked_columns():
    """Masked columns still contribute g*y to the row sum."""
    g = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 1, 4)
    y = np.array([0.5, 1, -1, 2], np.float32).reshape(1, 1, 1, 4)
    mask = np.array([False, True, True, False]).reshape(1, 1, 1, 4)
    s = 0.5 + 2 - 3 + 8
    want = np.array([0.5 - s * 0.5, 0, 0, 8 - s * 2], np.float64).reshape(1, 1, 1, 4)
    ours = op(g, y, mask, 1.0)
    assert np.array_equal(ours.astype(np.float64), want)


def test_scale_rounded_to_fp32():
    """scale is stored as fp32: 1 + 2**-30 behaves exactly like 1.0; 0.1 like fp32(0.1)."""
    g, y, mask = make_inputs(8, (2, 2, 3, 100))
    assert bits(op(g, y, mask, 1.0 + 2.0 ** -30)) == bits(op(g, y, mask, 1.0))
    ours = op(g, y, mask, 0.1)
    check_result(ours, g, y, mask, 0.1, F32)


def test_integer_mask_in_one_call_helper():
    g, y, mask = make_inputs(9, (1, 2, 4, 40), (1, 1, 4, 40))
    a = op(g, y, mask, 0.5)
    b = op(g, y, mask.astype(np.int32), 0.5)
    assert bits(a) == bits(b)


def test_all_masked_and_no_masked():
    g, y, _ = make_inputs(10, (2, 2, 3, 70), dtype=BF16)
    full = np.ones((1, 1, 3, 70), bool)
    out = op(g, y, full, 2.0)
    assert np.all(out.astype(np.float64) == 0) and not np.any(np.signbit(out.astype(np.float64)))
    none = np.zeros((2, 2, 3, 70), bool)
    check_result(op(g, y, none, 2.0), g, y, none, 2.0, BF16)


def _sweep(n=40, seed=4242):
    """Random legal problems (fixed seed, stable ids): shapes, S2 log-uniform in
    [1, 4096], dtypes, mask layouts, y kinds, scales and input layouts."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        S2 = int(np.clip(np.round(np.exp(rng.uniform(0, np.log(4096)))), 1, 4096))
        cap = max(1, 6000 // S2)
        B, N, S1 = (int(rng.integers(1, 4)) for _ in range(3))
        while B * N * S1 > max(cap, 1) and max(B, N, S1) > 1:
            B, N, S1 = max(1, B - 1), max(1, N - 1), max(1, S1 - 1)
        layout = list(MASK_LAYOUTS)[i % 4]
        dt = list(DT)[(i // 4) % 3]
        y_kind = ("softmax", "uniform")[int(rng.integers(0, 2))]
        scale = float(rng.choice([1.0, 0.125, -2.5, 3.0, 0.0441941738, -0.01, 17.0]))
        views = tuple(str(rng.choice(["contig"] + VIEW_KINDS)) for _ in range(3))
        out.append(pytest.param(i, (B, N, S1, S2), layout, dt, y_kind, scale, views,
                                id=f"{i}-{dt}-{B}x{N}x{S1}x{S2}-{layout}-{y_kind}-{scale:g}-{'.'.join(views)}"))
    return out


@pytest.mark.parametrize("i,shape,layout,dt,y_kind,scale,views", _sweep())
def test_random_sweep(i, shape, layout, dt, y_kind, scale, views):
    B, N, S1, S2 = shape
    mshape = MASK_LAYOUTS[layout](B, N) + (S1, S2)
    g, y, mask = make_inputs(5000 + i, shape, mshape, DT[dt], y_kind, p_mask=(0.1, 0.5, 0.9)[i % 3])
    ins = [a if v == "contig" else _embed(a)[v] for a, v in zip((g, y, mask), views)]
    ours = op(*ins, scale)
    check_result(ours, g, y, mask, scale, DT[dt])
    if views != ("contig",) * 3:
        assert bits(ours) == bits(op(g, y, mask, scale)), "layout changed the result"


def test_degenerate_scales():
    g, y, mask = make_inputs(11, (2, 2, 3, 50), (1, 1, 3, 50))
    zero = op(g, y, mask, 0.0)
    assert np.all(zero == 0) and not np.any(np.signbit(zero[np.broadcast_to(mask, g.shape)]))
    nan = op(g, y, mask, float("nan")).astype(np.float64)
    mfull = np.broadcast_to(mask, g.shape)
    assert np.all(np.isnan(nan[~mfull])) and np.all(nan[mfull] == 0)
    # a scale below the fp32 range flushes to 0 like fp32(scale)
    tiny = op(g, y, mask, 1e-60)
    assert np.all(tiny == 0)


# --------------------------------------------------------------------------- large outputs

LARGE = [
    # out >= 8 MiB: the kernels switch to non-temporal stores; odd S2 = unaligned rows
    ("fp32", (2, 8, 128, 1025), (1, 8, 128, 1025)),
    ("bf16", (1, 4, 256, 4095), (1, 1, 256, 4095)),
]


@pytest.mark.parametrize("dt,shape,mshape", LARGE, ids=[c[0] for c in LARGE])
def test_large_output_all_tiers(dt, shape, mshape, restore_runtime_knobs):
    """Every tier, 1 and 3 threads, on an output large enough for streaming stores,
    written at a misaligned offset (one element) inside a bigger buffer."""
    g, y, mask = make_inputs(95, shape, mshape, DT[dt], "uniform")
    ref = R.scaled_masked_softmax_backward(g, y, mask, -2.5)
    n = g.size
    first = None
    with contextlib.ExitStack() as st:
        ts = [st.enter_context(pyaclnn.Tensor(a)) for a in (g, y, mask)]
        buf = st.enter_context(pyaclnn.DeviceBuffer((n + 2) * DT[dt].itemsize))
        buf.copy_from_host(np.full(n + 2, 9, DT[dt]))
        out = pyaclnn.Tensor.from_buffer(buf, shape, DT[dt], offset=1)
        st.callback(out.close)
        s = st.enter_context(pyaclnn.Stream())
        for tier in supported_tiers():
            pyaclnn.set_max_isa(tier)
            got = []
            for threads in (1, 3):
                pyaclnn.set_num_threads(threads)
                ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(*ts, -2.5, False, out)
                pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, s)
                s.synchronize()
                got.append(out.numpy())
            assert bits(got[0]) == bits(got[1]), f"{tier}: thread count changed the result"
            if first is None:
                check_result(got[0], g, y, mask, -2.5, DT[dt], ref=ref)
                first = got[0]
            else:
                assert bits(got[0]) == bits(first), f"{tier} differs from scalar"
        edge = np.empty(n + 2, DT[dt])
        buf.copy_to_host(edge)
    assert edge[0] == 9 and edge[-1] == 9, "wrote outside the out view"


# --------------------------------------------------------------------------- two-phase API

@pytest.mark.parametrize("dt", list(DT))
def test_two_phase_matches_one_call(dt, stream):
    g, y, mask = make_inputs(20, (2, 3, 4, 130), (1, 3, 4, 130), DT[dt], "softmax")
    a = run_two_phase(g, y, mask, 0.125, stream=stream)
    b = op(g, y, mask, 0.125)
    assert bits(a) == bits(b)
    check_result(a, g, y, mask, 0.125, DT[dt])


def test_out_fully_written(stream):
    """Every element of out is written (out prefilled with NaN)."""
    g, y, mask = make_inputs(21, (2, 2, 6, 333), (2, 2, 6, 333), F16)
    mask[0, 1, 2, :] = True  # a fully masked row must be overwritten too
    out = run_two_phase(g, y, mask, -2.5, stream=stream, prefill=np.nan)
    check_result(out, g, y, mask, -2.5, F16)


def test_out_with_offset_writes_only_its_view(stream):
    """A contiguous out view at a non-zero offset in a larger buffer: the
    elements around it keep their sentinel."""
    g, y, mask = make_inputs(22, (1, 2, 3, 50), (1, 1, 3, 50))
    n = g.size
    sentinel = np.float32(-7.25)
    host = np.full(n + 13, sentinel, np.float32)
    with contextlib.ExitStack() as st:
        buf = st.enter_context(pyaclnn.DeviceBuffer(host.nbytes))
        buf.copy_from_host(host)
        out = pyaclnn.Tensor.from_buffer(buf, g.shape, F32, offset=5)
        st.callback(out.close)
        tg, ty, tm = (st.enter_context(pyaclnn.Tensor(a)) for a in (g, y, mask))
        ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(tg, ty, tm, 1.0, False, out)
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, stream)
        stream.synchronize()
        back = np.empty_like(host)
        buf.copy_to_host(back)
    assert np.all(back[:5] == sentinel) and np.all(back[5 + n:] == sentinel)
    check_result(back[5:5 + n].reshape(g.shape), g, y, mask, 1.0, F32)


# --------------------------------------------------------------------------- non-contiguous

def _embed(a):
    """Strided views holding a's values (each a non-contiguous numpy view)."""
    B, N, S1, S2 = a.shape
    views = {}
    # every other element along S2 (last-dim stride 2) with an offset of 1
    big = np.zeros((B, N, S1, 2 * S2 + 1), a.dtype)
    big[..., 1::2] = a
    views["step2_lastdim"] = big[..., 1::2]
    # S1 <-> N transposed storage: [B, S1, N, S2] contiguous seen as [B, N, S1, S2]
    views["swap_N_S1"] = np.swapaxes(np.ascontiguousarray(np.swapaxes(a, 1, 2)), 1, 2)
    # a slice with an offset and steps on the outer dims
    big = np.zeros((2 * B + 1, N + 2, 2 * S1, S2 + 3), a.dtype)
    big[1::2, 2:, ::2, 3:] = a
    views["outer_steps_offset"] = big[1::2, 2:, ::2, 3:]
    # Fortran order: every stride permuted
    views["fortran"] = np.asfortranarray(a)
    for name, v in views.items():
        # (with dims of size 1 a view may still be contiguous; callers check when it matters)
        assert np.array_equal(v, a), name
    return views


@pytest.mark.parametrize("kind", VIEW_KINDS)
@pytest.mark.parametrize("dt", list(DT))
def test_noncontiguous_inputs(dt, kind, stream):
    shape = (2, 3, 4, 77)
    k = VIEW_KINDS.index(kind)
    mshape = ((2, 3, 4, 77), (1, 3, 4, 77))[k % 2]
    g, y, mask = make_inputs(30 + k, shape, mshape, DT[dt], "uniform")
    want = op(g, y, mask, 0.125)
    check_result(want, g, y, mask, 0.125, DT[dt])
    gv, yv, mv = _embed(g)[kind], _embed(y)[kind], _embed(mask)[kind]
    assert not any(v.flags.c_contiguous for v in (gv, yv, mv))
    # one call and two phases, each bitwise equal to the contiguous run
    assert bits(op(gv, yv, mv, 0.125)) == bits(want), "one-call: strided inputs changed the result"
    assert bits(run_two_phase(gv, yv, mv, 0.125, stream=stream)) == bits(want), \
        "two-phase: strided inputs changed the result"


def test_noncontiguous_tensor_strides_are_kept():
    """The Tensor class keeps views strided (so the op really sees strided input)."""
    g, _, _ = make_inputs(40, (2, 3, 4, 10))
    v = _embed(g)["swap_N_S1"]
    with pyaclnn.Tensor(v) as t:
        assert t.strides == (3 * 4 * 10, 10, 3 * 10, 1)
    v = _embed(g)["step2_lastdim"]
    with pyaclnn.Tensor(v) as t:
        assert t.strides[-1] == 2 and t.offset == 1


@pytest.mark.parametrize("dt", list(DT))
def test_broadcast_stride0_mask_view(dt, stream):
    """A [1,1,S1,S2] mask broadcast with np.broadcast_to to the full [B,N,S1,S2]
    shape is a stride-0 view; Tensor keeps stride 0 and the op accepts it."""
    shape = (3, 2, 5, 96)
    g, y, m11 = make_inputs(41, shape, (1, 1, 5, 96), DT[dt])
    mb = np.broadcast_to(m11, shape)
    with pyaclnn.Tensor(mb) as t:
        assert t.strides[:2] == (0, 0) and t.storage_shape == (5 * 96,)
    want = op(g, y, m11, -2.5)
    check_result(want, g, y, m11, -2.5, DT[dt])
    assert bits(op(g, y, mb, -2.5)) == bits(want)
    assert bits(run_two_phase(g, y, mb, -2.5, stream=stream)) == bits(want)
    # a [B,1,S1,S2] mask broadcast over N only (stride 0 on dim 1)
    mB1 = np.random.default_rng(42).random((3, 1, 5, 96)) < 0.5
    check_result(op(g, y, np.broadcast_to(mB1, shape), 1.0), g, y, mB1, 1.0, DT[dt])


def test_broadcast_stride0_grad_and_y():
    """gradOutput and y as stride-0 views (every (b, n) the same rows)."""
    shape = (2, 3, 4, 50)
    g1, y1, _ = make_inputs(43, (1, 1, 4, 50), dtype=F16)
    mask = np.random.default_rng(44).random(shape) < 0.3
    g, y = np.broadcast_to(g1, shape), np.broadcast_to(y1, shape)
    ours = op(g, y, mask, 0.125)
    want = op(np.ascontiguousarray(g), np.ascontiguousarray(y), mask, 0.125)
    assert bits(ours) == bits(want)
    check_result(ours, g, y, mask, 0.125, F16)


def test_mixed_layouts_and_full_row_4096():
    """Different strides on each input at the S2 limit."""
    shape = (1, 2, 3, 4096)
    g, y, mask = make_inputs(45, shape, (1, 2, 3, 4096), BF16, "softmax")
    gv = _embed(g)["swap_N_S1"]
    yv = _embed(y)["step2_lastdim"]
    mv = _embed(mask)["outer_steps_offset"]
    ours = op(gv, yv, mv, 3)
    check_result(ours, g, y, mask, 3, BF16)
    assert bits(ours) == bits(op(g, y, mask, 3))


# --------------------------------------------------------------------------- special values

@pytest.mark.parametrize("dt", list(DT))
def test_nan_in_row(dt):
    shape = (2, 2, 4, 37)
    g, y, mask = make_inputs(50, shape, shape, DT[dt])
    g = g.copy()
    y = y.copy()
    g[0, 1, 2, 5] = np.nan
    y[1, 0, 3, 36] = np.nan
    mask[1, 0, 3, 36] = True  # NaN at a masked position still poisons the row's sum
    ours = op(g, y, mask, 0.5).astype(np.float64)
    for (b, n, s) in ((0, 1, 2), (1, 0, 3)):
        row, m = ours[b, n, s], mask[b, n, s]
        assert np.all(np.isnan(row[~m])), "unmasked outputs of a NaN row must be NaN"
        assert np.all(row[m] == 0) and not np.any(np.signbit(row[m]))
    # the other rows are unaffected
    clean = np.ones(shape[:3], bool)
    clean[0, 1, 2] = clean[1, 0, 3] = False
    check_result(op(g, y, mask, 0.5)[clean][None, None], g[clean][None, None], y[clean][None, None],
                 mask[clean][None, None], 0.5, DT[dt])


@pytest.mark.parametrize("dt", list(DT))
def test_inf_in_row(dt):
    """Inf in g or y makes the row sum infinite: every unmasked output of that row is
    non-finite (Inf, or NaN where Inf - Inf or Inf * 0 occurs), exactly as in the
    reference (sign and NaN-ness), and masked outputs stay +0.0."""
    shape = (1, 2, 3, 40)
    g, y, mask = make_inputs(51, shape, (1, 1, 3, 40), DT[dt])
    g, y = g.copy(), y.copy()
    g[0, 0, 1, 7] = np.inf
    y[0, 1, 2, 0] = -np.inf
    g[0, 1, 0, 3] = np.inf
    g[0, 1, 0, 9] = -np.inf
    y[0, 1, 0, 3] = y[0, 1, 0, 9] = 1  # p = +Inf and -Inf in one row: the sum is NaN
    ours = op(g, y, mask, 0.125)
    o = ours.astype(np.float64)
    ref = R.scaled_masked_softmax_backward(g, y, mask, 0.125)
    mfull = np.broadcast_to(mask, shape)
    for (n, s) in ((0, 1), (1, 2), (1, 0)):
        row, m = o[0, n, s], mfull[0, n, s]
        assert not np.any(np.isfinite(row[~m])), (n, s)
        assert np.all(row[m] == 0) and not np.any(np.signbit(row[m]))
    assert np.all(np.isnan(o[0, 1, 0][~mfull[0, 1, 0]]))
    assert np.array_equal(np.isnan(o), np.isnan(ref))
    inf = np.isinf(ref)
    assert np.array_equal(np.isinf(o), inf) and np.array_equal(np.sign(o[inf]), np.sign(ref[inf]))
    fin = np.isfinite(ref).all(axis=-1)
    check_result(ours[fin][None, None], g[fin][None, None], y[fin][None, None],
                 mfull[fin][None, None], 0.125, DT[dt])


@pytest.mark.parametrize("dt", list(DT))
def test_fully_masked_rows_are_zero_even_with_nan(dt):
    shape = (2, 1, 3, 65)
    g, y, mask = make_inputs(52, shape, shape, DT[dt])
    g, y = g.copy(), y.copy()
    mask[1, 0, 2, :] = True
    mask[0, 0, 0, :] = True
    g[1, 0, 2, 10] = np.nan
    y[1, 0, 2, 11] = np.inf
    ours = op(g, y, mask, -2.5).astype(np.float64)
    for idx in ((1, 0, 2), (0, 0, 0)):
        assert np.all(ours[idx] == 0) and not np.any(np.signbit(ours[idx]))


def test_masked_zero_is_positive_where_value_would_be_negative():
    """mask is a select, not a multiply: no -0.0 from negative values, scales or NaN."""
    shape = (1, 1, 4, 64)
    g, y, mask = make_inputs(53, shape, shape, F32)
    for scale in (-2.5, 1.0):
        o = op(g, y, mask, scale)
        assert not np.any(np.signbit(o[mask]))


def test_overflow_to_inf_in_half_output():
    """Values beyond the fp16 range round to Inf in the output, as correctly rounded."""
    g = np.full((1, 1, 1, 4), 200.0, np.float16)
    y = np.array([300, 1, 1, 0], np.float16).reshape(1, 1, 1, 4)  # s = 60400
    mask = np.zeros((1, 1, 1, 4), bool)
    ours = op(g, y, mask, 1.0).astype(np.float64)
    ref = R.scaled_masked_softmax_backward(g, y, mask, 1.0)
    assert np.isneginf(ours[0, 0, 0, 0]) and np.isfinite(ours[0, 0, 0, 1])
    assert np.array_equal(ours, R.round_to(ref, F16).astype(np.float64))


# --------------------------------------------------------------------------- determinism

DET_SHAPE = (4, 4, 32, 1000)   # 512 rows; grain ~10-20 rows: many chunks


@pytest.mark.parametrize("dt", list(DT))
def test_deterministic_repeat_and_threads(dt, restore_runtime_knobs):
    g, y, mask = make_inputs(60, DET_SHAPE, (4, 1, 32, 1000), DT[dt], "uniform")
    first = op(g, y, mask, 0.125)
    assert bits(first) == bits(op(g, y, mask, 0.125)), "two identical calls differ"
    pyaclnn.set_num_threads(1)
    one = op(g, y, mask, 0.125)
    pyaclnn.set_num_threads(3)
    three = op(g, y, mask, 0.125)
    assert bits(one) == bits(three), "result depends on the thread count"
    assert bits(one) == bits(first)
    check_result(one, g, y, mask, 0.125, DT[dt])


TIER_CASES = [
    # (shape, mask shape, y kind, scale, strided)
    ((2, 3, 4, 1), (1, 1, 4, 1), "uniform", 1.0, False),
    ((2, 3, 4, 3), (2, 3, 4, 3), "softmax", -2.5, False),
    ((2, 3, 4, 17), (2, 1, 4, 17), "uniform", 0.125, True),
    ((2, 2, 3, 64), (1, 2, 3, 64), "softmax", 3, False),
    ((2, 2, 3, 1025), (2, 2, 3, 1025), "uniform", 1.0, True),
    ((1, 2, 4, 4096), (1, 1, 4, 4096), "uniform", 0.125, False),
    ((8, 8, 16, 96), (8, 1, 16, 96), "softmax", 1.0, False),   # many short rows, several chunks
]


def _tier_runs(dt):
    results = []
    for k, (shape, mshape, y_kind, scale, strided) in enumerate(TIER_CASES):
        g, y, mask = make_inputs(70 + k, shape, mshape, DT[dt], y_kind)
        gi, yi = (_embed(g)["step2_lastdim"], _embed(y)["swap_N_S1"]) if strided else (g, y)
        results.append((g, y, mask, scale, gi, yi))
    return results


@pytest.mark.parametrize("dt", list(DT))
def test_isa_tiers(dt, restore_runtime_knobs):
    """Each tier up to the detected one: within tolerance of the reference and
    deterministic across thread counts."""
    cases = _tier_runs(dt)
    refs = [R.scaled_masked_softmax_backward(g, y, m, s) for g, y, m, s, _, _ in cases]
    per_tier = {}
    for tier in supported_tiers():
        pyaclnn.set_max_isa(tier)
        assert pyaclnn.get_isa() == tier
        outs = []
        for (g, y, mask, scale, gi, yi), ref in zip(cases, refs):
            pyaclnn.set_num_threads(1)
            a = op(gi, yi, mask, scale)
            pyaclnn.set_num_threads(3)
            b = op(gi, yi, mask, scale)
            assert bits(a) == bits(b), f"{tier}: result depends on the thread count ({g.shape})"
            check_result(a, g, y, mask, scale, DT[dt], ref=ref)
            outs.append(a)
        per_tier[tier] = outs
    # The kernels' documented contract (kernels/softmax_grad/softmax_grad.h): one
    # summation order for every tier, so every tier gives the same bits.
    for tier, outs in per_tier.items():
        for k, (a, s) in enumerate(zip(outs, per_tier["scalar"])):
            assert bits(a) == bits(s), f"{tier} differs from scalar in case {k} ({TIER_CASES[k][0]})"


def test_isa_cap_is_restored(restore_runtime_knobs):
    detected = pyaclnn.runtime_info()["detected_isa"]
    pyaclnn.set_max_isa("scalar")
    assert pyaclnn.get_isa() == "scalar"
    pyaclnn.set_max_isa(None)
    assert pyaclnn.get_isa() == detected


# --------------------------------------------------------------------------- executor reuse

def test_repeatable_executor_with_address_changes():
    """A repeatable executor launched 3 times; before the 2nd and 3rd launch the
    tensor addresses are changed with Executor.set_input / set_output
    (aclSetInputTensorAddr / aclSetOutputTensorAddr; indices: inputs 0 gradOutput,
    1 y, 2 mask; output 0 out)."""
    shape, mshape = (2, 2, 3, 48), (1, 2, 3, 48)
    sets = [make_inputs(80 + i, shape, mshape, F16, "uniform") for i in range(3)]
    with contextlib.ExitStack() as st:
        s = st.enter_context(pyaclnn.Stream())
        dev = [[st.enter_context(pyaclnn.Tensor(a)) for a in trio] for trio in sets]
        outs = [st.enter_context(pyaclnn.Tensor.empty(shape, F16)) for _ in range(3)]
        g0, y0, m0 = dev[0]
        ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g0, y0, m0, 0.125, False, outs[0])
        st.callback(ex.destroy)
        ex.set_repeatable()
        results = []
        for i in range(3):
            if i:
                g, y, m = dev[i]
                for idx, t in enumerate((g, y, m)):
                    ex.set_input(idx, t)
                ex.set_output(0, outs[i])
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, s)
            s.synchronize()
            results.append([o.numpy() for o in outs])
        assert not ex.spent
        with pytest.raises(pyaclnn.AclError) as ei:
            ex.set_input(3, dev[0][0])  # the op has 3 inputs
        assert ei.value.status == 161002
    for i, (g, y, m) in enumerate(sets):
        check_result(results[i][i], g, y, m, 0.125, F16)
        # later launches did not write the earlier outputs again
        for j in range(i + 1, 3):
            assert bits(results[j][i]) == bits(results[i][i])
    assert bits(results[0][0]) != bits(results[1][1])


def test_repeatable_executor_same_addresses_bitwise(stream):
    g, y, mask = make_inputs(85, (2, 3, 4, 200), (2, 3, 4, 200), BF16)
    with contextlib.ExitStack() as st:
        ts = [st.enter_context(pyaclnn.Tensor(a)) for a in (g, y, mask)]
        out = st.enter_context(pyaclnn.Tensor.empty(g.shape, BF16))
        ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(*ts, 3, False, out)
        st.callback(ex.destroy)
        ex.set_repeatable()
        got = []
        for _ in range(3):
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, stream)
            stream.synchronize()
            got.append(out.numpy())
    assert bits(got[0]) == bits(got[1]) == bits(got[2])
    check_result(got[0], g, y, mask, 3, BF16)


def test_input_change_after_planning_is_seen(stream):
    """The plan holds addresses, not data: new contents copied into the input
    buffers before the launch are what the op reads."""
    g, y, mask = make_inputs(86, (1, 2, 3, 40))
    g2, y2, _ = make_inputs(87, (1, 2, 3, 40))
    with contextlib.ExitStack() as st:
        tg, ty, tm = (st.enter_context(pyaclnn.Tensor(a)) for a in (g, y, mask))
        out = st.enter_context(pyaclnn.Tensor.empty(g.shape, F32))
        ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(tg, ty, tm, 1.0, False, out)
        tg.buffer.copy_from_host(g2)
        ty.buffer.copy_from_host(y2)
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, stream)
        stream.synchronize()
        got = out.numpy()
    check_result(got, g2, y2, mask, 1.0, F32)


# --------------------------------------------------------------------------- torch oracle

TORCH_CASES = [
    ("fp32", (2, 3, 4, 17), (2, 3, 4, 17), "softmax", 0.125),
    ("fp32", (1, 2, 3, 4096), (1, 1, 3, 4096), "uniform", -2.5),
    ("fp16", (2, 2, 5, 1000), (2, 1, 5, 1000), "softmax", 1.0),
    ("bf16", (2, 2, 3, 1025), (1, 2, 3, 1025), "uniform", 3),
    ("bf16", (3, 1, 2, 1), (1, 1, 2, 1), "uniform", 1.0),
]


@pytest.mark.parametrize("dt,shape,mshape,y_kind,scale", TORCH_CASES,
                         ids=[f"{c[0]}-{c[1][-1]}-{c[3]}" for c in TORCH_CASES])
def test_vs_torch_oracle(dt, shape, mshape, y_kind, scale):
    pytest.importorskip("torch")
    try:
        from tests import oracles as O
    except ImportError:
        import oracles as O
    g, y, mask = make_inputs(90 + TORCH_CASES.index((dt, shape, mshape, y_kind, scale)), shape, mshape,
                             DT[dt], y_kind)
    t = O.torch_scaled_masked_softmax_backward(g, y, np.broadcast_to(mask, shape), scale)
    ref = R.scaled_masked_softmax_backward(g, y, mask, scale)
    M = np.broadcast_to(row_scale(g, y, scale), shape)
    # the two float64 formulations (torch: y*(g - s); reference: g*y - s*y) agree closely
    assert np.all(np.abs(t - ref) <= 1e-12 * M)
    ours = op(g, y, mask, scale)
    check_result(ours, g, y, mask, scale, DT[dt], ref=t)
