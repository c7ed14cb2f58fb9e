"""aclnnNsaSelectedAttention against the exact float64 reference
(pyaclnn.reference.nsa_selected_attention: the vendor's mask-enable rule, masked
scores -FLT_MAX*scale in the softmax), plus round trips through
aclnnNsaSelectedAttentionGrad against torch autograd of the gather formulation.

Tolerances: attention_out |ours - ref| <= 1 ulp(ref) + 1e-4 * max|ref| elementwise
(one rounding of an fp32 result); softmaxMax / softmaxSum relative 1e-5.
"""
import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import reference as R
from tiers import supported_tiers

F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.dtype(np.float32)
DT = {"fp16": F16, "bf16": BF16}
FLT_MAX = float(np.finfo(np.float32).max)


@pytest.fixture(autouse=True)
def high_precision(monkeypatch):
    """These are the float64 tests of PYACLNN_NSA_PRECISION=high (P and dS in fp32);
    the default npu precision is tested bit for bit in test_nsa_precision.py."""
    monkeypatch.setenv("PYACLNN_NSA_PRECISION", "high")


def make_topk(rng, seq_q, seq_kv, n2, block, count, dup=True, future_rows=0):
    """[T1, N2, count]: mostly blocks at or before each token's diagonal block, then later
    ones; `future_rows` tokens (kv head 0) get only later blocks (no visible key under the
    causal rule); about half the rows repeat an entry when dup (never dropping the last
    visible block of a row)."""
    T1 = sum(seq_q)
    topk = np.empty((T1, n2, count), np.int32)
    t = 0
    left = future_rows
    for sq, skv in zip(seq_q, seq_kv):
        nblk = skv // block
        for s in range(sq):
            diag = min(s // block, nblk - 1)
            for h in range(n2):
                past = rng.permutation(diag + 1)
                future = rng.permutation(np.arange(diag + 1, nblk))
                if left > 0 and h == 0 and len(future) >= count:
                    sel = future[:count]
                    left -= 1
                else:
                    sel = np.concatenate([past, future])[:count]
                sel = rng.permutation(sel)
                if dup and count >= 2 and rng.random() < 0.5:
                    i, j = rng.choice(count, 2, replace=False)
                    had_visible = np.any(sel <= diag)
                    old, sel[i] = sel[i], sel[j]
                    if had_visible and not np.any(sel <= diag):
                        sel[i] = old                 # keep the row's visible block
                topk[t, h] = sel
            t += 1
    return topk


def make_case(seed, *, seq_q, seq_kv, n1, n2, d, dv, block, count, dtype=BF16, sparse_mode=2,
              mask=True, dup=True, future_rows=0, scale=None):
    rng = np.random.default_rng(seed)
    T1, T2 = sum(seq_q), sum(seq_kv)
    q = R.round_to(rng.standard_normal((T1, n1, d)), dtype)
    k = R.round_to(rng.standard_normal((T2, n2, d)), dtype)
    v = R.round_to(rng.standard_normal((T2, n2, dv)), dtype)
    topk = make_topk(rng, seq_q, seq_kv, n2, block, count, dup, future_rows)
    kw = dict(scale_value=d ** -0.5 if scale is None else scale, head_num=n1,
              selected_block_size=block, selected_block_count=count,
              actual_seq_qlen=list(np.cumsum(seq_q)), actual_seq_kvlen=list(np.cumsum(seq_kv)),
              atten_mask=np.ones((4, 4), bool) if mask else None, sparse_mode=sparse_mode)
    return (q, k, v, topk), kw


def check(ins, kw, got, ref=None):
    o, m, l = got
    ro, rm, rl = ref if ref is not None else R.nsa_selected_attention(*ins, **kw)
    dt = ins[0].dtype
    assert o.dtype == dt and o.shape == ro.shape
    assert m.dtype == F32 and l.dtype == F32 and m.shape == rm.shape == l.shape
    o64 = o.astype(np.float64)
    assert np.array_equal(np.isnan(o64), np.isnan(ro))
    fin = ~np.isnan(ro)
    peak = np.abs(ro[fin]).max() if fin.any() else 0.0
    err = np.abs(o64 - ro)[fin]
    tol = (R.ulp(ro, dt)[fin] + 1e-4 * peak)
    assert np.all(err <= tol), f"attention_out: max err {err.max():.3g}, worst excess {(err - tol).max():.3g}"
    for name, a, r in (("softmax_max", m, rm), ("softmax_sum", l, rl)):
        assert np.array_equal(np.isnan(a), np.isnan(r)), name
        assert np.all(a == a[..., :1]) or np.isnan(a).any(), f"{name}: lanes differ"
        f = ~np.isnan(r) & (a != r)      # equal values (also -inf) are exact
        if not f.any():
            continue
        rel = np.abs(a[f] - r[f]) / np.maximum(1.0, np.abs(r[f]))
        assert rel.max() <= 1e-5, f"{name}: rel err {rel.max():.3g}"


def run(ins, kw):
    return pyaclnn.ops.nsa_selected_attention(*ins, **kw)


CASES = {
    "bf16_D192_causal_gqa8": dict(seq_q=[40, 88], seq_kv=[128, 256], n1=16, n2=2, d=192, dv=128,
                                  block=32, count=4, future_rows=3),
    "fp16_D192_causal": dict(seq_q=[70], seq_kv=[192], n1=4, n2=1, d=192, dv=128, block=16, count=6,
                             dtype=F16, future_rows=2),
    "bf16_D128_G32": dict(seq_q=[9, 17], seq_kv=[64, 128], n1=32, n2=1, d=128, dv=128, block=16,
                          count=4),
    "fp16_D128_N2_4": dict(seq_q=[12, 5, 30], seq_kv=[64, 96, 128], n1=8, n2=4, d=128, dv=128,
                           block=16, count=4, dtype=F16),
    "bf16_sparse0": dict(seq_q=[33], seq_kv=[256], n1=4, n2=2, d=192, dv=128, block=64, count=4,
                         sparse_mode=0),
    "fp16_sparse0_mask": dict(seq_q=[20, 20], seq_kv=[64, 128], n1=2, n2=1, d=128, dv=128, block=16,
                              count=3, dtype=F16, sparse_mode=0, mask=True),
    "bf16_sparse2_nomask_unmasked": dict(seq_q=[48], seq_kv=[128], n1=4, n2=1, d=192, dv=128,
                                         block=16, count=5, mask=False),
    "bf16_block128_count32": dict(seq_q=[3], seq_kv=[4096], n1=2, n2=1, d=192, dv=192, block=128,
                                  count=32, mask=False),
    "fp16_block16_count32_causal": dict(seq_q=[530], seq_kv=[512 + 16], n1=2, n2=1, d=128, dv=128,
                                        block=16, count=32, dtype=F16, future_rows=4),
}


@pytest.mark.parametrize("name", list(CASES))
def test_vs_reference(name):
    ins, kw = make_case(zlib_seed(name), **CASES[name])
    check(ins, kw, run(ins, kw))


def zlib_seed(name):
    import zlib
    return zlib.crc32(name.encode())


def _sweep(n=12, seed=77):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        block = int(rng.choice([16, 32, 64]))
        count = int(rng.integers(1, 6))
        nb = int(rng.integers(1, 4))
        seq_kv = [block * int(rng.integers(count, count + 4)) for _ in range(nb)]
        seq_q = [int(rng.integers(1, 40)) for _ in range(nb)]
        n2 = int(rng.choice([1, 2, 4]))
        g = int(rng.choice([1, 2, 3, 8, 32]))
        d, dv = [(192, 128), (128, 128), (192, 192)][int(rng.integers(3))]
        out.append(dict(seq_q=seq_q, seq_kv=seq_kv, n1=n2 * g, n2=n2, d=d, dv=dv, block=block,
                        count=count, dtype=[F16, BF16][int(rng.integers(2))],
                        sparse_mode=int(rng.choice([0, 2])), mask=bool(rng.integers(2)),
                        future_rows=int(rng.integers(0, 3))))
    return out


@pytest.mark.parametrize("i,kw", list(enumerate(_sweep())))
def test_sweep_vs_reference(i, kw):
    ins, akw = make_case(1000 + i, **kw)
    check(ins, akw, run(ins, akw))


# --------------------------------------------------------------------------- vendor edge cases

def _no_visible_rows(ins, kw):
    """(t, n1) rows of tokens whose selected blocks all start after the token."""
    q, k, v, topk = ins
    B = kw["selected_block_size"]
    cq = np.asarray(kw["actual_seq_qlen"])
    t = np.arange(q.shape[0])
    s = t - np.concatenate([[0], cq[:-1]])[np.searchsorted(cq, t, side="right")]
    G = q.shape[1] // topk.shape[1]
    rows = np.all(topk.astype(np.int64) * B > s[:, None, None], axis=-1)   # [T1, N2]
    return np.repeat(rows, G, axis=1)                                      # [T1, N1]


@pytest.mark.parametrize("scale", [0.125, 1.0])
def test_row_without_visible_key_is_uniform(scale):
    """0 < scale <= 1: every score is -FLT_MAX*scale, P = 1/L over the gathered keys:
    out = mean of the gathered V rows, max = -FLT_MAX*scale, sum = L (exactly)."""
    ins, kw = make_case(5, seq_q=[40], seq_kv=[128], n1=4, n2=1, d=128, dv=128, block=16, count=4,
                        dtype=F16, future_rows=6, dup=False, scale=scale)
    o, m, l = run(ins, kw)
    rows = _no_visible_rows(ins, kw)
    assert rows.sum() >= 6 * 4
    mv = np.float32(-FLT_MAX) * np.float32(scale)
    assert np.all(m[rows] == mv) and np.all(l[rows] == 16 * 4)
    q, k, v, topk = ins
    for t, n1 in zip(*np.nonzero(rows)):
        keys = (topk[t, 0].astype(np.int64)[:, None] * 16 + np.arange(16)).ravel()
        mean = v[keys, 0].astype(np.float64).mean(axis=0)
        assert np.all(np.abs(o[t, n1].astype(np.float64) - mean) <= R.ulp(mean, F16) + 1e-6)
    check(ins, kw, (o, m, l))


def test_row_without_visible_key_scale_above_1_is_nan():
    ins, kw = make_case(6, seq_q=[40], seq_kv=[128], n1=2, n2=1, d=128, dv=128, block=16, count=4,
                        dtype=BF16, future_rows=5, scale=2.0)
    o, m, l = run(ins, kw)
    rows = _no_visible_rows(ins, kw)
    assert rows.any()
    assert np.all(np.isnan(o[rows].astype(np.float32)))
    assert not np.isnan(o[~rows].astype(np.float32)).any()
    check(ins, kw, (o, m, l))


def test_negative_scale_masked_keys_dominate():
    """scale < 0: masked scores become +FLT_MAX*|scale| and take all the weight."""
    ins, kw = make_case(7, seq_q=[40], seq_kv=[128], n1=2, n2=1, d=128, dv=128, block=16, count=4,
                        dtype=F16, scale=-0.05)
    check(ins, kw, run(ins, kw))


def test_sparse2_without_mask_equals_sparse0():
    """The vendor's forward masks only with sparseMode 2 AND an attenMask."""
    ins, kw = make_case(8, seq_q=[30], seq_kv=[128], n1=4, n2=2, d=192, dv=128, block=32, count=3,
                        mask=False, sparse_mode=2)
    a = run(ins, kw)
    b = run(ins, dict(kw, sparse_mode=0))
    c = run(ins, dict(kw, sparse_mode=0, atten_mask=np.ones((2, 2), bool)))
    masked = run(ins, dict(kw, atten_mask=np.ones((2, 2), bool)))
    for x, y, z in zip(a, b, c):
        assert np.array_equal(x.view(np.uint8), y.view(np.uint8))
        assert np.array_equal(x.view(np.uint8), z.view(np.uint8))
    assert not np.array_equal(a[0].view(np.uint8), masked[0].view(np.uint8))


def test_duplicates_count_twice():
    """Selecting block b twice equals selecting it once with its keys counted twice:
    the sum doubles that block's share."""
    rng = np.random.default_rng(3)
    q = R.round_to(rng.standard_normal((2, 1, 128)), F16)
    k = R.round_to(rng.standard_normal((64, 1, 128)), F16)
    v = R.round_to(rng.standard_normal((64, 1, 128)), F16)
    kw = dict(scale_value=0.1, head_num=1, selected_block_size=16, selected_block_count=2,
              actual_seq_qlen=[2], actual_seq_kvlen=[64])
    same = np.array([[[1, 1]], [[3, 3]]], np.int32)
    o2, m2, l2 = run((q, k, v, same), kw)
    o1, m1, l1 = run((q, k, v, same[:, :, :1].copy()), dict(kw, selected_block_count=1))
    np.testing.assert_allclose(l2, 2 * l1, rtol=1e-6)
    np.testing.assert_array_equal(m2, m1)
    np.testing.assert_allclose(o2.astype(np.float32), o1.astype(np.float32), rtol=2e-3, atol=1e-3)


def test_noncontiguous_inputs():
    ins, kw = make_case(9, seq_q=[20, 12], seq_kv=[64, 96], n1=4, n2=2, d=128, dv=128, block=16,
                        count=3, dtype=BF16)
    q, k, v, topk = ins
    qs = np.ascontiguousarray(np.swapaxes(q, 0, 1)).swapaxes(0, 1)      # strides permuted
    kbig = np.zeros((k.shape[0], k.shape[1], 2 * k.shape[2]), k.dtype)
    kbig[..., ::2] = k
    ks = kbig[..., ::2]                                                 # stride 2 in D
    tbig = np.zeros((topk.shape[0] * 2,) + topk.shape[1:], np.int32)
    tbig[::2] = topk
    got = run((qs, ks, v, tbig[::2]), kw)
    want = run(ins, kw)
    for a, b in zip(got, want):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


# --------------------------------------------------------------------------- determinism

def _bits(outs):
    return [o.view(np.uint8).tobytes() for o in outs]


DET = dict(seq_q=[5, 23, 36], seq_kv=[64, 128, 192], n1=8, n2=2, d=192, dv=128, block=16, count=4,
           future_rows=2)


def test_deterministic_across_thread_counts(restore_runtime_knobs):
    ins, kw = make_case(61, **DET)
    first = run(ins, kw)
    assert _bits(first) == _bits(run(ins, kw))
    for n in (1, 2, 3, 5):
        pyaclnn.set_num_threads(n)
        assert _bits(run(ins, kw)) == _bits(first), f"{n} threads differ"
    check(ins, kw, first)


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_isa_tiers_deterministic_and_bitwise_equal(restore_runtime_knobs, dt):
    ins, kw = make_case(71, dtype=DT[dt], **DET)
    ref = R.nsa_selected_attention(*ins, **kw)
    results = {}
    for tier in supported_tiers():
        pyaclnn.set_max_isa(tier)
        assert pyaclnn.get_isa() == tier
        a = run(ins, kw)
        pyaclnn.set_num_threads(1)
        b = run(ins, kw)
        pyaclnn.set_num_threads(0)
        assert _bits(a) == _bits(b), f"{tier}: not deterministic"
        check(ins, kw, a, ref)
        results[tier] = a
    s = results["scalar"]
    for tier, outs in results.items():  # the scalar oracle defines the bits
        assert _bits(outs) == _bits(s), f"{tier} differs from scalar"


def test_isa_env_cap_in_subprocess(run_py):
    code = r"""
import numpy as np, pyaclnn
assert pyaclnn.get_isa() == "scalar"
q = np.ones((3, 2, 128), np.float16); k = np.ones((32, 1, 128), np.float16)
topk = np.array([[[0, 1]], [[1, 1]], [[0, 0]]], np.int32)
o, m, l = pyaclnn.ops.nsa_selected_attention(q, k, k, topk, scale_value=1.0, head_num=2,
    selected_block_size=16, selected_block_count=2)
assert np.all(o == 1) and np.all(m == 128) and np.all(l == 32)
print("ok")
"""
    r = run_py(code, env_update={"PYACLNN_MAX_ISA": "scalar"})
    assert "ok" in r.stdout


# --------------------------------------------------------------------------- round trip

def torch_gather_attention(q, k, v, topk, kw, causal):
    """float64 torch tensors (requires_grad) -> attention_out of the gather formulation."""
    import torch
    T1, N1, D = q.shape
    T2, N2, _ = k.shape
    G = N1 // N2
    B, C = kw["selected_block_size"], kw["selected_block_count"]
    cq = np.asarray(kw["actual_seq_qlen"])
    ckv = np.asarray(kw["actual_seq_kvlen"])
    t = np.arange(T1)
    b = np.searchsorted(cq, t, side="right")
    s = t - np.concatenate([[0], cq[:-1]])[b]
    kv0 = np.concatenate([[0], ckv[:-1]])[b]
    pos = (topk.astype(np.int64)[..., None] * B + np.arange(B)).reshape(T1, N2, C * B)
    idx = torch.from_numpy(pos + kv0[:, None, None])
    heads = torch.arange(N2)[None, :, None]
    kj, vj = k[idx, heads], v[idx, heads]                      # [T1, N2, L, D]
    S = torch.matmul(q.view(T1, N2, G, D), kj.transpose(-1, -2)) * float(np.float32(kw["scale_value"]))
    if causal:
        S = S.masked_fill(torch.from_numpy(pos[:, :, None, :] > s[:, None, None, None]), float("-inf"))
    P = torch.softmax(S, -1)
    return torch.matmul(P, vj).reshape(T1, N1, -1)


RT_CASES = {
    "fp16_sparse0": dict(seq_q=[24, 40], seq_kv=[96, 128], n1=8, n2=2, d=192, dv=128, block=16,
                         count=4, dtype=F16, sparse_mode=0, mask=False),
    "fp16_sparse2_mask": dict(seq_q=[24, 40], seq_kv=[96, 128], n1=8, n2=2, d=192, dv=128, block=16,
                              count=4, dtype=F16, sparse_mode=2, mask=True),
    "bf16_sparse2_mask_G16": dict(seq_q=[50], seq_kv=[256], n1=16, n2=1, d=128, dv=128, block=32,
                                  count=4, dtype=BF16, sparse_mode=2, mask=True),
    "fp16_sparse0_mask": dict(seq_q=[30], seq_kv=[64], n1=4, n2=1, d=128, dv=128, block=16, count=3,
                              dtype=F16, sparse_mode=0, mask=True),
}


@pytest.mark.parametrize("name", list(RT_CASES))
def test_round_trip_vs_torch_autograd(name):
    """forward -> grad with the same arguments = the true gradients of that forward
    whenever both kernels mask alike (sparseMode 0, or 2 with an attenMask)."""
    import torch
    cfg = RT_CASES[name]
    ins, kw = make_case(zlib_seed(name), **cfg)
    q, k, v, topk = ins
    o, m, l = run(ins, kw)
    rng = np.random.default_rng(1)
    do = R.round_to(rng.standard_normal(o.shape), q.dtype)
    dq, dk, dv = pyaclnn.ops.nsa_selected_attention_grad(
        q, k, v, o, do, m, l, topk, scale_value=kw["scale_value"],
        selected_block_size=kw["selected_block_size"], selected_block_count=kw["selected_block_count"],
        head_num=kw["head_num"], actual_seq_qlen=kw["actual_seq_qlen"],
        actual_seq_kvlen=kw["actual_seq_kvlen"], atten_mask=kw["atten_mask"],
        sparse_mode=kw["sparse_mode"], out_dtype=np.float32)
    tq, tk, tv = (torch.from_numpy(a.astype(np.float64)).requires_grad_() for a in (q, k, v))
    causal = kw["sparse_mode"] == 2 and kw["atten_mask"] is not None
    out = torch_gather_attention(tq, tk, tv, topk, kw, causal)
    out.backward(torch.from_numpy(do.astype(np.float64)))
    # the forward itself
    ot = out.detach().numpy()
    assert np.all(np.abs(o.astype(np.float64) - ot) <= R.ulp(ot, q.dtype) + 1e-4 * np.abs(ot).max())
    # the gradients: error budget dominated by Dsum from the rounded attention_out
    tol = 8e-3 if q.dtype == BF16 else 1e-3
    for name_, ours, want in (("dq", dq, tq.grad), ("dk", dk, tk.grad), ("dv", dv, tv.grad)):
        want = want.numpy()
        err = np.abs(ours - want).max()
        assert err <= tol * np.abs(want).max(), f"{name_}: {err:.3g} vs peak {np.abs(want).max():.3g}"


def test_round_trip_sparse2_without_mask_is_the_vendor_mismatch():
    """sparseMode 2, no mask: the forward runs unmasked, the grad causal (as on the NPU),
    so the grad is NOT the gradient of that forward (documented; pyaclnn keeps it)."""
    import torch
    ins, kw = make_case(11, seq_q=[40], seq_kv=[128], n1=4, n2=1, d=128, dv=128, block=16, count=4,
                        dtype=F16, sparse_mode=2, mask=False)
    q, k, v, topk = ins
    o, m, l = run(ins, kw)
    do = R.round_to(np.random.default_rng(2).standard_normal(o.shape), F16)
    dq, _, _ = pyaclnn.ops.nsa_selected_attention_grad(
        q, k, v, o, do, m, l, topk, scale_value=kw["scale_value"], selected_block_size=16,
        selected_block_count=4, head_num=4, actual_seq_qlen=kw["actual_seq_qlen"],
        actual_seq_kvlen=kw["actual_seq_kvlen"], sparse_mode=2, out_dtype=np.float32)
    tq, tk, tv = (torch.from_numpy(a.astype(np.float64)).requires_grad_() for a in (q, k, v))
    torch_gather_attention(tq, tk, tv, topk, kw, causal=False).backward(torch.from_numpy(do.astype(np.float64)))
    want = tq.grad.numpy()
    assert np.abs(dq - want).max() > 0.1 * np.abs(want).max()


def test_nan_input_gives_the_same_nan_rows_in_every_tier(restore_runtime_knobs):
    """A NaN score makes its row's max, sum and output NaN (all tiers alike); other rows
    are unaffected."""
    ins, kw = make_case(12, seq_q=[30], seq_kv=[128], n1=4, n2=1, d=128, dv=128, block=16, count=4,
                        dtype=F16, mask=True, sparse_mode=2)
    q = ins[0].copy()
    q[5, 2, 7] = np.nan
    ins = (q,) + ins[1:]
    seen = None
    for tier in supported_tiers():
        pyaclnn.set_max_isa(tier)
        o, m, l = run(ins, kw)
        nan_rows = np.isnan(m[..., 0])
        assert nan_rows[5, 2] and nan_rows.sum() == 1, tier
        assert np.isnan(l[5, 2]).all() and np.isnan(o[5, 2].astype(np.float32)).all()
        assert not np.isnan(o[~nan_rows].astype(np.float32)).any()
        if seen is not None:
            assert np.array_equal(nan_rows, seen)
        seen = nan_rows
