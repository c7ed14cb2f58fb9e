"""Tests that make pyaclnn.reference trustworthy (independent loops, finite
differences, torch oracles, exact rounding oracles)."""

from fractions import Fraction

import numpy as np
import pytest

try:
    from pyaclnn import reference as R
except ImportError:
    # The package __init__ loads the native library; the reference is pure numpy,
    # so these tests still run from a source tree without the native build.
    import importlib.util
    import pathlib

    _spec = importlib.util.spec_from_file_location(
        "pyaclnn_reference", pathlib.Path(__file__).resolve().parents[1] / "pyaclnn" / "reference.py")
    R = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(R)

try:
    from tests import oracles as O
except ImportError:  # tests/ is not a package: pytest puts tests/ on sys.path
    import oracles as O


# ---------------------------------------------------------------------------
# (a) scaled masked softmax backward
# ---------------------------------------------------------------------------

def _smsb_loop(g, y, mask, scale):
    """Independent elementwise loop (Python floats)."""
    B, N, S1, S2 = g.shape
    mb = np.broadcast_to(mask, g.shape)
    sc = float(np.float32(scale))
    out = np.zeros(g.shape)
    for b in range(B):
        for n in range(N):
            for i in range(S1):
                s = 0.0
                for j in range(S2):
                    s += float(g[b, n, i, j]) * float(y[b, n, i, j])
                for j in range(S2):
                    gy = float(g[b, n, i, j]) * float(y[b, n, i, j])
                    out[b, n, i, j] = 0.0 if mb[b, n, i, j] else sc * (gy - s * float(y[b, n, i, j]))
    return out


def _smsb_case(rng, shape=(2, 3, 4, 16), mshape=None):
    g = rng.uniform(-5, 5, shape)
    y = rng.uniform(-5, 5, shape)          # y need not be a softmax output
    mask = rng.random(mshape or shape) < 0.3
    return g, y, mask


def test_smsb_matches_loop():
    rng = np.random.default_rng(1)
    g, y, mask = _smsb_case(rng)
    for scale in (1.0, 0.37, -2.5):
        ref = R.scaled_masked_softmax_backward(g, y, mask, scale)
        assert ref.dtype == np.float64 and ref.shape == g.shape
        np.testing.assert_allclose(ref, _smsb_loop(g, y, mask, scale), rtol=1e-12, atol=1e-12)
        assert np.all(ref[mask] == 0.0)


def test_smsb_scale_is_fp32():
    rng = np.random.default_rng(2)
    g, y, mask = _smsb_case(rng)
    ref = R.scaled_masked_softmax_backward(g, y, mask, 0.1)
    one = R.scaled_masked_softmax_backward(g, y, mask, 1.0)
    np.testing.assert_array_equal(ref, float(np.float32(0.1)) * one)
    assert not np.allclose(ref, 0.1 * one, rtol=1e-10, atol=0)


def test_smsb_sum_over_whole_row_including_masked():
    g = np.array([1.0, 2.0, 3.0, 4.0]).reshape(1, 1, 1, 4)
    y = np.array([0.5, 1.0, -1.0, 2.0]).reshape(1, 1, 1, 4)
    mask = np.array([False, True, True, False]).reshape(1, 1, 1, 4)
    s = 0.5 + 2.0 - 3.0 + 8.0
    want = np.array([0.5 - s * 0.5, 0.0, 0.0, 8.0 - s * 2.0]).reshape(1, 1, 1, 4)
    np.testing.assert_array_equal(R.scaled_masked_softmax_backward(g, y, mask), want)


def test_smsb_nan_row_masked_positions_stay_zero():
    rng = np.random.default_rng(3)
    g, y, mask = _smsb_case(rng, (1, 2, 3, 8))
    g[0, 1, 2, 4], y[0, 1, 2, 4] = np.inf, 0.0   # inf*0 = NaN poisons the row sum
    mask[0, 1, 2, :] = [True, False, True, False, True, False, False, True]
    with np.errstate(invalid="ignore"):
        ref = R.scaled_masked_softmax_backward(g, y, mask, 2.0)
    row, mrow = ref[0, 1, 2], mask[0, 1, 2]
    assert np.all(row[mrow] == 0.0)
    assert np.all(np.isnan(row[~mrow]))
    others = np.ones(ref.shape, bool)
    others[0, 1, 2] = False
    assert np.all(np.isfinite(ref[others]))


def test_smsb_fully_masked_row_and_inf_inputs():
    g = np.full((1, 1, 2, 4), np.inf)
    y = np.full((1, 1, 2, 4), -np.inf)
    mask = np.zeros((1, 1, 2, 4), bool)
    mask[0, 0, 0] = True
    with np.errstate(invalid="ignore"):
        ref = R.scaled_masked_softmax_backward(g, y, mask)
    np.testing.assert_array_equal(ref[0, 0, 0], np.zeros(4))
    assert not np.any(np.signbit(ref[0, 0, 0]))


@pytest.mark.parametrize("mshape", [(1, 3, 4, 16), (2, 1, 4, 16), (1, 1, 4, 16)])
def test_smsb_broadcast_masks(mshape):
    rng = np.random.default_rng(4)
    g, y, mask = _smsb_case(rng, (2, 3, 4, 16), mshape)
    full = np.ascontiguousarray(np.broadcast_to(mask, g.shape))
    np.testing.assert_array_equal(R.scaled_masked_softmax_backward(g, y, mask, 0.7),
                                  R.scaled_masked_softmax_backward(g, y, full, 0.7))


def test_smsb_invalid_args():
    rng = np.random.default_rng(5)
    g, y, mask = _smsb_case(rng, (4, 4, 4, 128))
    with pytest.raises(ValueError):
        R.scaled_masked_softmax_backward(g, y, mask, 1.0, fix_triu_mask=True)
    with pytest.raises(ValueError):
        R.scaled_masked_softmax_backward(g, y, mask[:1, :2], 1.0)       # [1,2,4,128]
    with pytest.raises(ValueError):
        R.scaled_masked_softmax_backward(g, y, mask[:, :, :1], 1.0)     # S1 broadcast not allowed
    with pytest.raises(ValueError):
        R.scaled_masked_softmax_backward(g, y[..., :64], mask, 1.0)
    with pytest.raises(ValueError):
        R.scaled_masked_softmax_backward(g[0], y[0], mask[0], 1.0)      # 3-D


def test_smsb_low_precision_inputs():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(6)
    g, y, mask = _smsb_case(rng)
    for dt in (ml_dtypes.bfloat16, np.float16, np.float32):
        gl, yl = g.astype(dt), y.astype(dt)
        ref = R.scaled_masked_softmax_backward(gl, yl, mask, 0.5)
        want = R.scaled_masked_softmax_backward(gl.astype(np.float64), yl.astype(np.float64), mask, 0.5)
        assert ref.dtype == np.float64
        np.testing.assert_array_equal(ref, want)


@pytest.mark.parametrize("mshape", [(2, 3, 4, 16), (1, 3, 4, 16), (2, 1, 4, 16), (1, 1, 4, 16)])
def test_smsb_vs_torch(mshape):
    pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    g, y, mask = _smsb_case(rng, (2, 3, 4, 16), mshape)
    g[1, 2, 3, 5], y[1, 2, 3, 5] = np.inf, 0.0
    for scale in (1.0, 0.125, 3.3):
        with np.errstate(invalid="ignore"):
            ref = R.scaled_masked_softmax_backward(g, y, mask, scale)
        tor = O.torch_scaled_masked_softmax_backward(g, y, mask, scale)
        np.testing.assert_allclose(ref, tor, rtol=1e-12, atol=1e-12)   # NaNs compare equal
        np.testing.assert_array_equal(np.isnan(ref), np.isnan(tor))


# ---------------------------------------------------------------------------
# NSA selected attention
# ---------------------------------------------------------------------------

def _nsa_case(rng, qlens, kvlens, N1, N2, D, Dv, B, C, dup=False, causal_friendly=False):
    """Random TND case.  qlens/kvlens per batch; returns dict of inputs + kwargs."""
    T1, T2 = sum(qlens), sum(kvlens)
    q = rng.standard_normal((T1, N1, D))
    k = rng.standard_normal((T2, N2, D))
    v = rng.standard_normal((T2, N2, Dv))
    topk = np.zeros((T1, N2, C), dtype=np.int32)
    t = 0
    for ql, kl in zip(qlens, kvlens):
        nb = kl // B
        for s in range(ql):
            for n2 in range(N2):
                if dup:
                    sel = rng.integers(0, nb, C)
                else:
                    sel = rng.permutation(nb)[:C]
                if causal_friendly:
                    sel[0] = min(s // B, nb - 1)     # at least one visible block
                topk[t, n2] = sel
            t += 1
    kw = dict(scale_value=D ** -0.5, selected_block_size=B, selected_block_count=C,
              actual_seq_qlen=list(np.cumsum(qlens)), actual_seq_kvlen=list(np.cumsum(kvlens)))
    return q, k, v, topk, kw


def _nsa_forward_loop(q, k, v, topk, scale_value, selected_block_size, selected_block_count,
                      actual_seq_qlen, actual_seq_kvlen, sparse_mode):
    """Naive per-(token, head) loop."""
    T1, N1, _ = q.shape
    N2, Dv = k.shape[1], v.shape[2]
    G, B = N1 // N2, selected_block_size
    out = np.zeros((T1, N1, Dv))
    mx = np.zeros((T1, N1))
    sm = np.zeros((T1, N1))
    q0 = kv0 = 0
    for qe, kve in zip(actual_seq_qlen, actual_seq_kvlen):
        for t in range(q0, qe):
            for n1 in range(N1):
                n2 = n1 // G
                rows = [kv0 + b * B + r for b in topk[t, n2] for r in range(B)]
                keep = [r for r in rows if sparse_mode == 0 or r - kv0 <= t - q0]
                if not keep:
                    continue
                sc = np.array([scale_value * float(q[t, n1] @ k[r, n2]) for r in keep])
                m = sc.max()
                e = np.exp(sc - m)
                out[t, n1] = sum(ei * v[r, n2] for ei, r in zip(e, keep)) / e.sum()
                mx[t, n1], sm[t, n1] = m, e.sum()
        q0, kv0 = qe, kve
    return out, mx, sm


@pytest.mark.parametrize("sparse_mode", [0, 2])
@pytest.mark.parametrize("N1,N2", [(1, 1), (4, 2), (4, 1)])
def test_nsa_forward_vs_loop(sparse_mode, N1, N2):
    rng = np.random.default_rng(10 + N1 + N2 + sparse_mode)
    q, k, v, topk, kw = _nsa_case(rng, [5, 9], [16, 24], N1, N2, 6, 5, 4, 3, dup=True)
    out, mx, sm = R.nsa_selected_attention_forward(q, k, v, topk, sparse_mode=sparse_mode, **kw)
    assert out.shape == (14, N1, 5) and mx.shape == sm.shape == (14, N1, 8)
    assert np.all(mx == mx[..., :1]) and np.all(sm == sm[..., :1])
    lo, lm, ls = _nsa_forward_loop(q, k, v, topk, sparse_mode=sparse_mode, **kw)
    np.testing.assert_allclose(out, lo, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mx[..., 0], lm, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sm[..., 0], ls, rtol=1e-12, atol=1e-12)


def test_nsa_forward_fully_masked_row():
    rng = np.random.default_rng(11)
    q, k, v, topk, kw = _nsa_case(rng, [4], [16], 2, 1, 4, 4, 4, 2)
    topk[0, 0] = [2, 3]                         # s=0 sees only key 0: nothing visible
    topk[1, 0] = [1, 0]
    out, mx, sm = R.nsa_selected_attention_forward(q, k, v, topk, sparse_mode=2, **kw)
    assert np.all(out[0] == 0) and np.all(mx[0] == 0) and np.all(sm[0] == 0)
    assert np.all(sm[1] > 0)
    out0, _, _ = R.nsa_selected_attention_forward(q, k, v, topk, sparse_mode=0, **kw)
    assert np.all(out0[0] != 0)


def _exact_forward_loop(q, k, v, topk, scale_value, selected_block_size, selected_block_count,
                       actual_seq_qlen, actual_seq_kvlen, causal):
    """Naive loop with the vendor's rules: masked score fp32(-FLT_MAX*scale), all L columns."""
    T1, N1, _ = q.shape
    N2, Dv = k.shape[1], v.shape[2]
    G, B = N1 // N2, selected_block_size
    sc32 = np.float32(scale_value)
    with np.errstate(over="ignore"):
        masked = float(np.float32(-np.finfo(np.float32).max) * sc32)
    out = np.zeros((T1, N1, Dv))
    mx = np.zeros((T1, N1))
    sm = np.zeros((T1, N1))
    q0 = kv0 = 0
    for qe, kve in zip(actual_seq_qlen, actual_seq_kvlen):
        for t in range(q0, qe):
            for n1 in range(N1):
                n2 = n1 // G
                rows = [kv0 + b * B + r for b in topk[t, n2] for r in range(B)]
                sc = np.array([masked if causal and r - kv0 > t - q0 else float(sc32) * float(q[t, n1] @ k[r, n2])
                               for r in rows])
                m = sc.max()
                e = np.exp(sc - m)
                out[t, n1] = sum(ei * v[r, n2] for ei, r in zip(e, rows)) / e.sum()
                mx[t, n1], sm[t, n1] = m, e.sum()
        q0, kv0 = qe, kve
    return out, mx, sm


@pytest.mark.parametrize("mask,sparse_mode", [(True, 2), (False, 2), (True, 0), (False, 0)])
def test_nsa_exact_forward_vs_loop(mask, sparse_mode):
    """pyaclnn.reference.nsa_selected_attention: causal only with sparse_mode 2 AND a mask,
    rows without a visible key uniform over the gathered keys."""
    rng = np.random.default_rng(20 + 2 * mask + sparse_mode)
    q, k, v, topk, kw = _nsa_case(rng, [5, 9], [16, 24], 4, 2, 6, 5, 4, 3, dup=True)
    topk[0, 0] = [3, 2, 3]                      # s = 0: no visible key under the causal rule
    am = np.zeros((3, 3), bool) if mask else None
    out, mx, sm = R.nsa_selected_attention(q, k, v, topk, head_num=4, atten_mask=am,
                                           sparse_mode=sparse_mode, **kw)
    lo, lm, ls = _exact_forward_loop(q, k, v, topk, causal=mask and sparse_mode == 2, **kw)
    np.testing.assert_allclose(out, lo, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mx[..., 0], lm, rtol=1e-12)
    np.testing.assert_allclose(sm[..., 0], ls, rtol=1e-12)
    if mask and sparse_mode == 2:
        assert np.all(sm[0, :2] == 12)          # uniform over L = 12 keys
        np.testing.assert_allclose(out[0, 0], v[[12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15], 0].mean(0))
    # where every row sees a key, it equals the intended-math reference (which keeps the
    # scale in float64: differences of the fp32 rounding of the scale only)
    ref = R.nsa_selected_attention_forward(q, k, v, topk, sparse_mode=2 if mask and sparse_mode == 2 else 0,
                                           **kw)
    seen = ref[2][..., 0] > 0                   # rows with a visible key
    assert seen.sum() > seen.size // 2
    np.testing.assert_allclose(out[seen], ref[0][seen], rtol=1e-5, atol=1e-6)


def test_nsa_forward_large_chunked_vs_gather():
    """Several token chunks and big groups, against a plain numpy gather version."""
    rng = np.random.default_rng(12)
    q, k, v, topk, kw = _nsa_case(rng, [600], [1024], 8, 1, 8, 4, 64, 16, dup=True,
                                  causal_friendly=True)
    out, mx, sm = R.nsa_selected_attention_forward(q, k, v, topk, sparse_mode=2, **kw)
    J = (topk[..., None].astype(np.int64) * 64 + np.arange(64)).reshape(600, 1, 1024)
    vis = J <= np.arange(600)[:, None, None]
    S = kw["scale_value"] * np.einsum("tgd,tld->tgl", q, k[J[:, 0], 0])
    S = np.where(vis, S, -np.inf)
    m = S.max(-1)
    e = np.exp(S - m[..., None])
    np.testing.assert_allclose(out, np.einsum("tgl,tld->tgd", e / e.sum(-1, keepdims=True),
                                              v[J[:, 0], 0]), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(mx[..., 0], m, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sm[..., 0], e.sum(-1), rtol=1e-12)


def _grad_kwargs(kw, N1, sparse_mode):
    return dict(kw, head_num=N1, sparse_mode=sparse_mode)


@pytest.mark.parametrize("sparse_mode", [0, 2])
def test_nsa_grad_finite_differences(sparse_mode):
    rng = np.random.default_rng(20 + sparse_mode)
    N1, N2 = 4, 2
    q, k, v, topk, kw = _nsa_case(rng, [3, 4], [8, 12], N1, N2, 3, 2, 2, 3, dup=True)
    if sparse_mode == 2:
        topk[0, 0] = [1, 2, 3]                  # fully masked row (token 0, kv head 0)
    out, mx, sm = R.nsa_selected_attention_forward(q, k, v, topk, sparse_mode=sparse_mode, **kw)
    W = rng.standard_normal(out.shape)
    dq, dk, dv = R.nsa_selected_attention_grad(q, k, v, out, W, mx, sm, topk,
                                               **_grad_kwargs(kw, N1, sparse_mode))

    def loss(q_, k_, v_):
        o, _, _ = R.nsa_selected_attention_forward(q_, k_, v_, topk, sparse_mode=sparse_mode, **kw)
        return float((o * W).sum())

    h = 1e-6
    for arr, grad, which in ((q, dq, 0), (k, dk, 1), (v, dv, 2)):
        num = np.zeros(arr.shape)
        for idx in np.ndindex(arr.shape):
            args = [q, k, v]
            plus, minus = arr.copy(), arr.copy()
            plus[idx] += h
            minus[idx] -= h
            args[which] = plus
            fp = loss(*args)
            args[which] = minus
            num[idx] = (fp - loss(*args)) / (2 * h)
        np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-8)
    if sparse_mode == 2:
        assert np.all(dq[0, :2] == 0)           # heads 0,1 belong to kv head 0


def test_nsa_grad_semantics():
    rng = np.random.default_rng(30)
    N1, N2 = 4, 2
    q, k, v, topk, kw = _nsa_case(rng, [6, 5], [32, 24], N1, N2, 8, 6, 4, 3)
    gkw = _grad_kwargs(kw, N1, 0)
    out, mx, sm = R.nsa_selected_attention_forward(q, k, v, topk, **kw)
    dO = rng.standard_normal(out.shape)
    dq, dk, dv = R.nsa_selected_attention_grad(q, k, v, out, dO, mx, sm, topk, **gkw)
    # never-selected keys: exactly 0
    sel = np.zeros((sum([32, 24]), N2), bool)
    starts = [0] * 6 + [32] * 5
    for t in range(11):
        for n2 in range(N2):
            for b in topk[t, n2]:
                sel[starts[t] + b * 4: starts[t] + b * 4 + 4, n2] = True
    assert (~sel).any() and np.all(dk[~sel] == 0) and np.all(dv[~sel] == 0)
    # P is NOT renormalised: doubling the sum halves every gradient
    h = R.nsa_selected_attention_grad(q, k, v, out, dO, mx, 2 * sm, topk, **gkw)
    for a, b in zip(h, (dq, dk, dv)):
        np.testing.assert_allclose(a, b / 2, rtol=1e-13, atol=1e-15)
    # Dsum uses the attention_out input: dv unaffected, dq/dk change
    out2 = out + 0.1 * rng.standard_normal(out.shape)
    e = R.nsa_selected_attention_grad(q, k, v, out2, dO, mx, sm, topk, **gkw)
    np.testing.assert_array_equal(e[2], dv)
    assert not np.allclose(e[0], dq) and not np.allclose(e[1], dk)
    # 8 stat copies: only copy 0 is read; mask/out_dtype are ignored
    mx2, sm2 = mx.copy(), sm.copy()
    mx2[..., 1:], sm2[..., 1:] = np.nan, -1.0
    f = R.nsa_selected_attention_grad(q, k, v, out, dO, mx2, sm2, topk, atten_mask=np.ones((4, 4)),
                                      out_dtype=np.float16, **gkw)
    for a, b in zip(f, (dq, dk, dv)):
        np.testing.assert_array_equal(a, b)


def test_nsa_grad_duplicates_count_twice():
    rng = np.random.default_rng(31)
    q, k, v, topk, kw = _nsa_case(rng, [1], [8], 1, 1, 4, 3, 4, 2)
    topk[0, 0] = [1, 1]
    out, mx, sm = R.nsa_selected_attention_forward(q, k, v, topk, **kw)
    dO = rng.standard_normal(out.shape)
    dq, dk, dv = R.nsa_selected_attention_grad(q, k, v, out, dO, mx, sm, topk, **_grad_kwargs(kw, 1, 0))
    # both copies: P = 1/8 on each of 8 columns (4 distinct keys twice) -> dv = 2 * (1/8) * dO
    S = kw["scale_value"] * (k[4:8, 0] @ q[0, 0])
    p = np.exp(S - S.max()) / (2 * np.exp(S - S.max()).sum())
    np.testing.assert_allclose(dv[4:8, 0], 2 * p[:, None] * dO[0, 0][None, :], rtol=1e-13)
    assert np.all(dv[:4] == 0)


def test_nsa_validation():
    rng = np.random.default_rng(32)
    q, k, v, topk, kw = _nsa_case(rng, [3, 2], [8, 8], 2, 1, 4, 4, 4, 2)
    out, mx, sm = R.nsa_selected_attention_forward(q, k, v, topk, **kw)
    args = (q, k, v, out, out, mx, sm, topk)
    gkw = _grad_kwargs(kw, 2, 0)
    R.nsa_selected_attention_grad(*args, **gkw)
    bad = [dict(gkw, sparse_mode=1), dict(gkw, input_layout="BSND"), dict(gkw, head_num=1),
           dict(gkw, actual_seq_qlen=[3]), dict(gkw, actual_seq_kvlen=[8, 15]),
           dict(gkw, actual_seq_qlen=[4, 3]), dict(gkw, selected_block_count=3)]
    for b in bad:
        with pytest.raises(ValueError):
            R.nsa_selected_attention_grad(*args, **b)
    for val in (2, -1):                          # block 2 lies outside an 8-key batch with B=4
        t2 = topk.copy()
        t2[3, 0, 1] = val
        with pytest.raises(ValueError):
            R.nsa_selected_attention_grad(q, k, v, out, out, mx, sm, t2, **gkw)
        with pytest.raises(ValueError):
            R.nsa_selected_attention_forward(q, k, v, t2, **kw)


def _perturbed_grad_inputs(rng, q, k, v, topk, kw, sparse_mode):
    out, mx, sm = R.nsa_selected_attention_forward(q, k, v, topk, sparse_mode=sparse_mode, **kw)
    dO = rng.standard_normal(out.shape)
    out_in = out + 0.05 * rng.standard_normal(out.shape)       # Dsum from this input
    mx_in = mx + 0.3 * rng.standard_normal(mx.shape[:2])[..., None]
    sm_in = sm * rng.uniform(0.5, 2.0, sm.shape[:2])[..., None]
    return out_in, dO, mx_in, sm_in


@pytest.mark.parametrize("sparse_mode", [0, 2])
@pytest.mark.parametrize("G", [1, 2, 4])
def test_nsa_grad_vs_torch(G, sparse_mode):
    pytest.importorskip("torch")
    rng = np.random.default_rng(40 + 3 * G + sparse_mode)
    N2 = 2
    N1 = N2 * G
    q, k, v, topk, kw = _nsa_case(rng, [7, 12], [32, 48], N1, N2, 8, 6, 4, 4, dup=True,
                                  causal_friendly=(G == 2))
    out_in, dO, mx_in, sm_in = _perturbed_grad_inputs(rng, q, k, v, topk, kw, sparse_mode)
    gkw = _grad_kwargs(kw, N1, sparse_mode)
    ref = R.nsa_selected_attention_grad(q, k, v, out_in, dO, mx_in, sm_in, topk, **gkw)
    tg = O.torch_nsa_grad(q, k, v, out_in, dO, mx_in, sm_in, topk, **gkw)
    td = O.torch_nsa_grad_dense(q, k, v, out_in, dO, mx_in, sm_in, topk, **gkw)
    for name, a, b, c in zip("qkv", ref, tg, td):
        assert a.shape == b.shape == c.shape, name
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"d{name} vs gather")
        np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-12, err_msg=f"d{name} vs dense")


def test_nsa_grad_vs_torch_big_group_split():
    """One block chosen (twice) by every token: groups larger than the split size."""
    pytest.importorskip("torch")
    rng = np.random.default_rng(50)
    q, k, v, topk, kw = _nsa_case(rng, [700, 500], [32, 32], 8, 1, 4, 3, 16, 2)
    topk[:] = 0
    topk[::3, 0, 1] = 1
    out_in, dO, mx_in, sm_in = _perturbed_grad_inputs(rng, q, k, v, topk, kw, 2)
    gkw = _grad_kwargs(kw, 8, 2)
    ref = R.nsa_selected_attention_grad(q, k, v, out_in, dO, mx_in, sm_in, topk, **gkw)
    td = O.torch_nsa_grad_dense(q, k, v, out_in, dO, mx_in, sm_in, topk, **gkw)
    for a, c in zip(ref, td):
        np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-12)


def test_nsa_bf16_inputs_accepted():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(51)
    q, k, v, topk, kw = _nsa_case(rng, [4], [16], 2, 1, 4, 4, 4, 2)
    bq, bk, bv = (x.astype(ml_dtypes.bfloat16) for x in (q, k, v))
    a = R.nsa_selected_attention_forward(bq, bk, bv, topk, **kw)
    b = R.nsa_selected_attention_forward(*(x.astype(np.float64) for x in (bq, bk, bv)), topk, **kw)
    for x, y in zip(a, b):
        assert x.dtype == np.float64
        np.testing.assert_array_equal(x, y)


# ---------------------------------------------------------------------------
# (d) rounding helpers
# ---------------------------------------------------------------------------

def _bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def _same(a, b):
    """Bit-identical, except that any NaN matches any NaN."""
    na, nb = np.isnan(a.astype(np.float64)), np.isnan(b.astype(np.float64))
    np.testing.assert_array_equal(na, nb)
    np.testing.assert_array_equal(_bits(a)[~na], _bits(b)[~nb])


def _random_wide(rng, n, lo, hi):
    x = np.ldexp(rng.uniform(1, 2, n), rng.integers(lo, hi, n))
    return np.where(rng.random(n) < 0.5, -x, x)


_SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324, 1e308, -1e308]


def _midpoints(grid):
    """Exact float64 midpoints (and near-midpoints) of consecutive grid values."""
    a, b = grid[:-1], grid[1:]
    mid = a + (b - a) / 2
    return np.concatenate([mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf)])


def _grid(dtype):
    """All finite non-negative values of a 16-bit float type, plus the overflow point."""
    vals = np.arange(0, 0x8000, dtype=np.uint16).view(dtype)
    with np.errstate(invalid="ignore"):
        f = vals.astype(np.float64)
    ok = np.isfinite(f)
    top = float(2.0 ** (np.floor(np.log2(f[ok].max())) + 1))
    return np.r_[f[ok], top], np.r_[_bits(vals)[ok] & 1 == 0, True], top


def _exact_oracle(x, grid, even, top):
    """Nearest grid value by exact rational comparison, ties to even; >= top -> inf."""
    out = np.empty(len(x))
    for n, xv in enumerate(x):
        if not np.isfinite(xv):
            out[n] = xv
            continue
        a = abs(xv)
        j = int(np.searchsorted(grid, a, side="left"))
        if j < len(grid) and grid[j] == a:
            r = grid[j]
        elif j >= len(grid):
            r = np.inf
        else:
            lo, hi = grid[j - 1], grid[j]
            dl, dh = Fraction(a) - Fraction(lo), Fraction(hi) - Fraction(a)
            r = lo if dl < dh else hi if dh < dl else (lo if even[j - 1] else hi)
        if r == top:
            r = np.inf
        out[n] = np.copysign(r, xv)
    return out


def test_round_f16_f32_match_numpy_astype():
    """numpy's float64 -> float16/float32 astype is correctly rounded (RNE, single step):
    round_to agrees bit for bit, including ties, subnormals and overflow."""
    rng = np.random.default_rng(60)
    g16 = _grid(np.float16)[0][:-1]
    x16 = np.r_[_random_wide(rng, 20000, -30, 18), _midpoints(g16), 65504.0, 65519.99, 65520.0,
                65536.0, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -26, _SPECIAL]
    x16 = np.r_[x16, -x16]
    with np.errstate(over="ignore"):
        _same(R.round_to(x16, np.float16), x16.astype(np.float16))
    with np.errstate(over="ignore"):
        f32 = _random_wide(rng, 20000, -150, 129).astype(np.float32)
    f32 = f32[np.isfinite(f32)].astype(np.float64)
    nxt = np.nextafter(f32.astype(np.float32), np.float32(np.inf)).astype(np.float64)
    mids = f32 + (nxt - f32) / 2
    x32 = np.r_[_random_wide(rng, 20000, -160, 140), mids, np.nextafter(mids, 0),
                float(np.finfo(np.float32).max), float.fromhex("0x1.ffffffp127"),
                float.fromhex("0x1.fffffefffffffp127"), 2.0 ** -150, 3 * 2.0 ** -151, _SPECIAL]
    x32 = np.r_[x32, -x32]
    with np.errstate(over="ignore"):
        _same(R.round_to(x32, "float32"), x32.astype(np.float32))


def test_round_f16_vs_exact_oracle():
    rng = np.random.default_rng(61)
    grid, even, top = _grid(np.float16)
    x = np.r_[_random_wide(rng, 1500, -28, 17), rng.choice(_midpoints(grid[:-1]), 1500), 65520.0,
              65519.999, 2.0 ** -25, _SPECIAL]
    _same(R.round_to(x, np.float16), _exact_oracle(x, grid, even, top).astype(np.float16))


def test_round_bf16_vs_exact_oracle_and_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    rng = np.random.default_rng(62)
    grid, even, top = _grid(bf16)
    x = np.r_[_random_wide(rng, 1500, -140, 130), rng.choice(_midpoints(grid[:-1]), 1500), _SPECIAL]
    r = R.round_to(x, "bfloat16")
    assert r.dtype == bf16 and r.shape == x.shape
    with np.errstate(over="ignore"):
        _same(r, _exact_oracle(x, grid, even, top).astype(np.float32).astype(bf16))
    # values that are exactly float32: ml_dtypes (float32 -> bf16, RNE) must agree bit for bit
    f = np.r_[_random_wide(rng, 20000, -140, 128).astype(np.float32),
              _midpoints(grid[:-1]).astype(np.float32)].astype(np.float64)
    f = f[np.isfinite(f)]
    _same(R.round_to(f, bf16), f.astype(np.float32).astype(bf16))


@pytest.mark.parametrize("x,want", [
    (1 + 2.0 ** -8, 1.0),                                   # tie -> even (down)
    (1 + 3 * 2.0 ** -8, 1 + 2.0 ** -6),                     # tie -> even (up)
    (1 + 2.0 ** -8 + 2.0 ** -40, 1 + 2.0 ** -7),            # double rounding via f32 would give 1.0
    (float.fromhex("0x1.fep127"), float.fromhex("0x1.fep127")),
    (float.fromhex("0x1.fefffffffffffp127"), float.fromhex("0x1.fep127")),
    (float.fromhex("0x1.ffp127"), np.inf),                  # overflow tie -> inf
    (1e39, np.inf),
    (2.0 ** -133, 2.0 ** -133),                             # smallest subnormal
    (2.0 ** -134, 0.0),                                     # tie -> 0 (even)
    (2.0 ** -134 + 2.0 ** -180, 2.0 ** -133),
    (3 * 2.0 ** -134, 2.0 ** -132),                         # subnormal tie -> even
    (float.fromhex("0x1.fcp-127"), float.fromhex("0x1.fcp-127")),  # largest subnormal
    (float.fromhex("0x1.ffp-127"), 2.0 ** -126),            # tie -> even: up to min normal
    (-2.5, -2.5),
])
def test_round_bf16_edges(x, want):
    pytest.importorskip("ml_dtypes")
    r = R.round_to(np.array([x, -x]), "bfloat16").astype(np.float64)
    np.testing.assert_array_equal(r, [want, -want])


def test_round_bf16_signed_zero_nan():
    pytest.importorskip("ml_dtypes")
    r = R.round_to(np.array([-0.0, -1e-60, np.nan, -np.nan]), "bf16").astype(np.float64)
    assert np.signbit(r[0]) and r[0] == 0 and np.signbit(r[1]) and r[1] == 0
    assert np.isnan(r[2]) and np.isnan(r[3])
    assert R.round_to(1.0, np.float32).shape == ()


def test_ulp():
    rng = np.random.default_rng(70)
    for dt in (np.float16, np.float32):
        x = np.abs(_random_wide(rng, 5000, -30, 15)).astype(dt)
        x = np.r_[x, dt(0), np.finfo(dt).smallest_subnormal, np.finfo(dt).tiny, dt(1), dt(2)]
        np.testing.assert_array_equal(R.ulp(x, dt), np.spacing(x).astype(np.float64))
        np.testing.assert_array_equal(R.ulp(-x.astype(np.float64), dt), R.ulp(x, dt))
    assert R.ulp(0.0, np.float32) == 2.0 ** -149
    assert R.ulp(0.0, np.float16) == 2.0 ** -24
    assert R.ulp(65504.0, np.float16) == 32.0
    assert R.ulp(1.5, "bfloat16") == 2.0 ** -7
    assert R.ulp(2.0 ** -130, "bfloat16") == 2.0 ** -133
    assert R.ulp(2.0 ** -126, "bfloat16") == 2.0 ** -133
    assert R.ulp(1e-30, "bfloat16") == 2.0 ** -107
    assert R.ulp(np.inf, "bfloat16") == np.inf and np.isnan(R.ulp(np.nan, np.float16))
    ml_dtypes = pytest.importorskip("ml_dtypes")
    b = np.arange(1, 0x7F7F, 37, dtype=np.uint16)
    x = b.view(ml_dtypes.bfloat16).astype(np.float64)
    nxt = (b + 1).view(ml_dtypes.bfloat16).astype(np.float64)
    np.testing.assert_array_equal(R.ulp(x, ml_dtypes.bfloat16), nxt - x)
