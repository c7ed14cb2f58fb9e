"""aclnnScaledMaskedSoftmaxBackward bit for bit against the vendor's system-test golden.

Huawei's system tests for this op (hicann/ops-nn,
vfusion/scaled_masked_softmax_grad_v2/tests/st) compare the NPU with a golden that
computes in fp32 and sums each row in a fixed blocked order (the NPU's own, it
seems). ``golden`` below is our own numpy float32 implementation of that
description (../shared/reference/softmax_backward_vendor_golden.md), written out
literally and vectorised over rows:

1. p = g * y (inputs cast to fp32 first);
2. s = rowsum(p):
   S2 <= 1024: pad with zeros to a multiple of 64; blocks of 8 summed pairwise;
   block sums 0-7 start 8 accumulators, acc[j] += block[8m + j] for m = 1, 2, ...;
   then ((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7)).
   S2 > 1024: blocks of 64 (the last shorter, unpadded), each summed pairwise with a
   zero appended to every level of odd length; then the block sums the same way;
3. t = p - s * y (multiply, then subtract); 4. t = t * fp32(scale);
5. masked positions = 0; 6. round to the output dtype (nearest even).

pyaclnn must equal it bit for bit, for every dtype, ISA tier and thread count,
except that NaNs are compared by position only (pyaclnn writes one canonical NaN).
The float64-reference tests (test_softmax_op.py) check the same op against exact
maths under tolerances.
"""
import contextlib

import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from tiers import supported_tiers

F32 = np.dtype(np.float32)
DT = {"fp32": F32, "fp16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}
UINT = {4: np.uint32, 2: np.uint16}
LAYOUTS = {  # mask dims 0 and 1 against [B, N]
    "BNSS": lambda B, N: (B, N),
    "B1SS": lambda B, N: (B, 1),
    "1NSS": lambda B, N: (1, N),
    "11SS": lambda B, N: (1, 1),
}
S2_VALUES = [1, 7, 8, 63, 64, 65, 1000, 1024, 1025, 1100, 2048, 4095, 4096]


# --------------------------------------------------------------------------- the golden

def _pairwise(x):
    """Pairwise sum of each row of x (fp32 [R, L], L >= 1): adjacent pairs level by
    level, a zero appended to each level of odd length."""
    while x.shape[1] > 1:
        if x.shape[1] % 2:
            x = np.concatenate([x, np.zeros((x.shape[0], 1), F32)], axis=1)
        x = x[:, 0::2] + x[:, 1::2]
    return x[:, 0]


def vendor_rowsum(p):
    """The row sums of p (fp32 [R, S2]) in the vendor's order."""
    R, n = p.shape
    with np.errstate(invalid="ignore", over="ignore"):
        if n <= 1024:
            width = -(-n // 64) * 64
            x = np.zeros((R, width), F32)
            x[:, :n] = p
            blocks = _pairwise(x.reshape(R * width // 8, 8)).reshape(R, width // 8)
            acc = blocks[:, :8].copy()
            for m in range(1, width // 64):
                acc = acc + blocks[:, 8 * m:8 * m + 8]
            return _pairwise(acc)
        full = n // 64
        sums = [_pairwise(p[:, :64 * full].reshape(R * full, 64)).reshape(R, full)]
        if n % 64:
            sums.append(_pairwise(p[:, 64 * full:])[:, None])
        return _pairwise(np.concatenate(sums, axis=1))


def golden(g, y, mask, scale):
    """The vendor's golden for [B,N,S1,S2] inputs of one dtype; a mask broadcast over dims 0, 1."""
    g32 = np.asarray(g).astype(F32)
    y32 = np.asarray(y).astype(F32)
    shape = g32.shape
    with np.errstate(invalid="ignore", over="ignore"):
        p = g32 * y32
        s = vendor_rowsum(np.ascontiguousarray(p).reshape(-1, shape[3])).reshape(shape[:3] + (1,))
        t = p - s * y32
        t = t * np.float32(scale)
        t = np.where(np.broadcast_to(np.asarray(mask, bool), shape), F32.type(0), t)
        return t.astype(np.asarray(g).dtype)


def test_golden_order_is_not_a_plain_sum():
    """The golden really is the blocked order: its sums differ from numpy's pairwise
    sum and from a sequential sum on cancelling rows, and a hand-written case pins it."""
    rng = np.random.default_rng(0)
    p = rng.uniform(-25, 25, (400, 1000)).astype(F32)
    s = vendor_rowsum(p)
    seq = np.zeros(400, F32)
    for i in range(1000):
        seq = seq + p[:, i]
    assert np.count_nonzero(s != seq) > 100 and np.count_nonzero(s != p.sum(axis=1)) > 100
    # S2 = 9: block 0 = x0..x7, block 1 = x8 + zeros, acc = blocks; then the tree of 8
    x = np.array([[1e8, 1, -1e8, 1, 0, 0, 0, 0, 3]], F32)
    want = ((F32.type(1e8) + F32.type(1)) + (F32.type(-1e8) + F32.type(1))) + F32.type(3)
    assert vendor_rowsum(x)[0] == want == 3  # the exact sum is 4
    # S2 = 1025: 16 blocks of 64, then a block holding x[1024] alone, summed last
    x = np.zeros((1, 1025), F32)
    x[0, 0], x[0, 1], x[0, 1024] = 2.0 ** 25, 1, 1
    assert vendor_rowsum(x)[0] == 2.0 ** 25  # (2^25 + 1) rounds to 2^25, and so does + 1 later


# --------------------------------------------------------------------------- helpers

def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(UINT[a.dtype.itemsize])


def assert_bitwise(ours, want, what=""):
    assert ours.dtype == want.dtype and ours.shape == want.shape
    on = np.isnan(ours.astype(np.float64))
    wn = np.isnan(want.astype(np.float64))
    assert np.array_equal(on, wn), f"{what}: NaN positions differ ({np.count_nonzero(on != wn)} elements)"
    bad = np.argwhere((bits(ours) != bits(want)) & ~on)
    if bad.size:
        i = tuple(bad[0])
        raise AssertionError(f"{what}: {len(bad)} of {ours.size} elements differ from the golden; first at {i}: "
                             f"ours {ours[i]!r} ({int(bits(ours)[i]):#x}) golden {want[i]!r} "
                             f"({int(bits(want)[i]):#x})")


def check_all_tiers(g, y, mask, scale, want, what):
    """Every supported tier, with 1 and 3 threads: bitwise the golden."""
    for tier in supported_tiers():
        pyaclnn.set_max_isa(tier)
        for threads in (1, 3):
            pyaclnn.set_num_threads(threads)
            ours = pyaclnn.scaled_masked_softmax_backward(g, y, mask, scale)
            assert_bitwise(ours, want, f"{what} tier={tier} threads={threads}")


def strided(a, kind):
    """A non-contiguous view holding a's values."""
    B, N, S1, S2 = a.shape
    if kind == "step2":  # last-dim stride 2, offset 1
        big = np.zeros((B, N, S1, 2 * S2 + 1), a.dtype)
        big[..., 1::2] = a
        v = big[..., 1::2]
    elif kind == "swap":  # [B, S1, N, S2] storage seen as [B, N, S1, S2]
        v = np.swapaxes(np.ascontiguousarray(np.swapaxes(a, 1, 2)), 1, 2)
    else:  # outer steps with an offset, rows not back to back
        big = np.zeros((2 * B, N + 1, 2 * S1, S2 + 5), a.dtype)
        big[1::2, 1:, ::2, 5:] = a
        v = big[1::2, 1:, ::2, 5:]
    assert np.array_equal(v.astype(np.float64), a.astype(np.float64), equal_nan=True)
    return v


def inputs(seed, shape, mshape, dtype, kind):
    """g, y in dtype; kind "vendor": uniform in [-5, 5] like the vendor's system
    tests (heavy cancellation in the sum), "softmax": y a softmax output."""
    rng = np.random.default_rng(seed)
    if kind == "vendor":
        g = rng.uniform(-5, 5, shape)
        y = rng.uniform(-5, 5, shape)
    else:
        g = rng.standard_normal(shape)
        z = rng.standard_normal(shape) * 2
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        y = e / e.sum(axis=-1, keepdims=True)
    mask = rng.random(mshape) < 0.3
    return g.astype(F32).astype(dtype), y.astype(F32).astype(dtype), mask


def special_rows(g, y, mask):
    """Writes rows of NaN, +-Inf and signed zeros into g, y (2-D row views)."""
    R, S2 = g.shape[0] * g.shape[1] * g.shape[2], g.shape[3]
    gr, yr = g.reshape(R, S2), y.reshape(R, S2)
    one, zero = gr.dtype.type(1), gr.dtype.type(0)
    k = 0
    if R > k:  # NaN in g
        gr[k, S2 // 2] = np.nan
    k += 1
    if R > k:  # Inf in g: the sum is +-Inf, outputs Inf or NaN
        gr[k, S2 - 1] = np.inf
    k += 1
    if R > k:  # -Inf in y at column 0
        yr[k, 0] = -np.inf
    k += 1
    if R > k and S2 > 1:  # +Inf and -Inf products: the sum is NaN
        gr[k, 0], gr[k, S2 - 1] = np.inf, -np.inf
        yr[k, 0] = yr[k, S2 - 1] = one
    k += 1
    if R > k:  # Inf * 0 = NaN
        gr[k, 0], yr[k, 0] = np.inf, zero
    k += 1
    if R > k:  # every product -0.0 (g = +0, y < 0): the sign of a zero sum matters
        gr[k, :] = zero
        yr[k, :] = -one
    k += 1
    if R > k:  # products -0.0 except one +0.0 at the end of the row
        gr[k, :] = zero
        yr[k, :] = -one
        yr[k, S2 - 1] = one
    k += 1
    if R > k:  # the sum cancels to exactly 0 while y stays large
        gr[k, :] = zero
        if S2 > 1:
            gr[k, 0], gr[k, S2 - 1] = one, -one
            yr[k, 0] = yr[k, S2 - 1] = one


# --------------------------------------------------------------------------- the matrix

SCALES = [1.0, 0.125, 0.0, -2.5, 0.7, -0.0441941738]


def _case(dt, layout, S2):
    i = S2_VALUES.index(S2) + 13 * list(LAYOUTS).index(layout) + 52 * list(DT).index(dt)
    B, N, S1 = (2, 3, 11) if S2 <= 256 else (2, 2, 3) if S2 <= 1100 else (1, 2, 4)
    return i, (B, N, S1, S2)


@pytest.mark.parametrize("S2", S2_VALUES)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dt", list(DT))
def test_bitwise_vs_golden(dt, layout, S2, restore_runtime_knobs):
    i, shape = _case(dt, layout, S2)
    mshape = LAYOUTS[layout](*shape[:2]) + shape[2:]
    g, y, mask = inputs(100 + i, shape, mshape, DT[dt], ("vendor", "softmax")[i % 2])
    if i % 3 == 0:
        special_rows(g, y, mask)
    scale = SCALES[i % len(SCALES)]
    want = golden(g, y, mask, scale)
    check_all_tiers(g, y, mask, scale, want, f"{dt} {layout} S2={S2} scale={scale}")
    if i % 2 == 0:  # strided inputs: the same bits
        kind = ("step2", "swap", "outer")[i % 3]
        check_all_tiers(strided(g, kind), strided(y, kind), strided(mask, ("outer", "step2", "swap")[i % 3]),
                        scale, want, f"{dt} {layout} S2={S2} strided {kind}")


@pytest.mark.parametrize("S2", [1, 8, 63, 65, 1024, 1025, 4096])
@pytest.mark.parametrize("dt", list(DT))
def test_special_values_bitwise(dt, S2, restore_runtime_knobs):
    """Rows of NaN, +-Inf and signed zeros in every dtype (NaNs by position; masked
    outputs exactly +0.0, as in the golden's masked_fill)."""
    shape = (1, 2, 5, S2)
    g, y, mask = inputs(7 + S2, shape, (1, 1, 5, S2), DT[dt], "vendor")
    special_rows(g, y, mask)
    mask[0, 0, 3, :] = False  # the -0.0 rows fully unmasked
    mask[0, 0, 2, 0] = True   # the -Inf column of row 2 masked
    for scale in (-2.5, 0.5):
        want = golden(g, y, mask, scale)
        check_all_tiers(g, y, mask, scale, want, f"{dt} S2={S2} scale={scale}")
        out = pyaclnn.scaled_masked_softmax_backward(g, y, mask, scale).astype(np.float64)
        m = np.broadcast_to(mask, shape)
        assert np.all(out[m] == 0) and not np.any(np.signbit(out[m]))


@pytest.mark.parametrize("dt,shape,mshape", [
    ("fp32", (2, 16, 300, 17), (2, 1, 300, 17)),       # short rows in groups, many chunks
    ("fp16", (4, 4, 32, 1000), (4, 1, 32, 1000)),      # several chunks per thread
    ("bf16", (2, 4, 16, 100), (1, 1, 16, 100)),        # 100 columns: AVX-512 groups of 8 rows
    ("fp32", (2, 8, 128, 1025), (1, 8, 128, 1025)),    # 8 MiB out: non-temporal stores
    ("bf16", (1, 4, 256, 4095), (1, 1, 256, 4095)),
])
def test_many_rows_bitwise(dt, shape, mshape, restore_runtime_knobs):
    g, y, mask = inputs(sum(shape), shape, mshape, DT[dt], "vendor")
    want = golden(g, y, mask, -0.125)
    check_all_tiers(g, y, mask, -0.125, want, f"{dt} {shape}")


def test_misaligned_streamed_output_bitwise(restore_runtime_knobs):
    """A large output written one element past an aligned address (the streamed
    stores peel a head) equals the golden and leaves its neighbours alone."""
    shape = (1, 4, 256, 2100)
    g, y, mask = inputs(3, shape, (1, 1, 256, 2100), DT["fp16"], "vendor")
    want = golden(g, y, mask, 0.3)
    n = g.size
    with contextlib.ExitStack() as st:
        ts = [st.enter_context(pyaclnn.Tensor(a)) for a in (g, y, mask)]
        buf = st.enter_context(pyaclnn.DeviceBuffer((n + 2) * 2))
        buf.copy_from_host(np.full(n + 2, 9, np.float16))
        out = pyaclnn.Tensor.from_buffer(buf, shape, np.float16, offset=1)
        st.callback(out.close)
        s = st.enter_context(pyaclnn.Stream())
        for tier in supported_tiers():
            pyaclnn.set_max_isa(tier)
            ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(*ts, 0.3, False, out)
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, s)
            s.synchronize()
            assert_bitwise(out.numpy(), want, tier)
        edge = np.empty(n + 2, np.float16)
        buf.copy_to_host(edge)
    assert edge[0] == 9 and edge[-1] == 9
