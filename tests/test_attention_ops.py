"""The attention family (native/ops/attention/, kernels in native/kernels/attention/)
through the C entry points (pyaclnn.aclnn): FlashAttentionScore and
FlashAttentionScoreGrad against torch autograd in float64 (every layout, GQA,
the sparse modes and masks, realShift, dropout with a given mask, every dtype),
FusedInferAttentionScoreV2 on the paths llama.cpp's CANN backend takes (BSND /
BNSD, GQA, fp16 pse with -inf, decode), the error paths with their status
codes, bits that do not depend on the thread count or the ISA tier, and the
real torch_npu's scaled_dot_product_attention in a subprocess."""
import re

import ml_dtypes
import numpy as np
import pytest
import torch

import pyaclnn
from pyaclnn import aclnn
from tiers import bits, supported_tiers
from torch_npu_env import SCRIPTS, error_lines, require_torch_npu, run_script

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
IDS = {F32: "f32", F16: "f16", BF16: "bf16"}
NULLPTR, INVALID = 161001, 161002
BIG = 2147483647
TOL = {F32: 3e-5, F16: 4e-3, BF16: 3e-2}


def did(d):
    return IDS[np.dtype(d)]


def status(fn, *args):
    with pytest.raises(pyaclnn.AclError) as e:
        fn(*args)
    return e.value.status


def t64(a):
    return torch.from_numpy(np.asarray(a, np.float64))


# ---- layouts ----

def to_layout(x, L):
    """[B, N, S, D] -> the layout's array (a copy)."""
    B, N, S, D = x.shape
    if L == "BNSD":
        return np.ascontiguousarray(x)
    if L == "BSND":
        return np.ascontiguousarray(x.transpose(0, 2, 1, 3))
    if L == "BSH":
        return np.ascontiguousarray(x.transpose(0, 2, 1, 3).reshape(B, S, N * D))
    return np.ascontiguousarray(x.transpose(2, 0, 1, 3).reshape(S, B, N * D))  # SBH


def from_layout(y, L, N):
    if L == "BNSD":
        return y
    if L == "BSND":
        return y.transpose(0, 2, 1, 3)
    if L == "BSH":
        B, S, H = y.shape
        return y.reshape(B, S, N, H // N).transpose(0, 2, 1, 3)
    S, B, H = y.shape
    return y.reshape(S, B, N, H // N).transpose(1, 2, 0, 3)


# ---- the reference ----

def allowed(B, N, Sq, Skv, mode, mask, pre, nxt):
    """[B, N, Sq, Skv] bool: keys a row attends to (mask given in any broadcast shape, 1 = masked)."""
    ok = np.ones((B, N, Sq, Skv), bool)
    if mask is None:
        return ok
    i = np.arange(Sq)[:, None]
    j = np.arange(Skv)[None, :]
    if mode in (0, 1):
        m = np.asarray(mask).astype(bool)
        ok &= ~np.broadcast_to(m.reshape((1,) * (4 - m.ndim) + m.shape), ok.shape)
    if mode == 0:
        ok &= (j - i <= nxt) & (i - j <= pre)
    elif mode == 2:
        ok &= j <= i
    elif mode == 3:
        ok &= j <= i + Skv - Sq
    elif mode == 4:
        d = j - i - (Skv - Sq)
        ok &= (d <= nxt) & (-d <= pre)
    return ok


def ref_attention(q, k, v, ok, scale, pse=None, pse_inner=True, keep=None, keep_prob=1.0):
    """float64 torch: out and the autograd graph's leaves. q [B,N,Sq,D], k / v [B,Nkv,Skv,D]."""
    qt, kt, vt = (t64(x).requires_grad_() for x in (q, k, v))
    G = q.shape[1] // k.shape[1]
    kk, vv = kt.repeat_interleave(G, 1), vt.repeat_interleave(G, 1)
    s = qt @ kk.transpose(-1, -2)
    if pse is not None:
        s = (s + t64(pse)) * scale if pse_inner else s * scale + t64(pse)
    else:
        s = s * scale
    okt = torch.from_numpy(ok)
    s = s.masked_fill(~okt, -float("inf"))
    p = torch.softmax(s, -1)
    p = torch.where(okt.any(-1, keepdim=True), p, torch.zeros_like(p))
    if keep is not None:
        p = p * torch.from_numpy(keep) / keep_prob
    return p @ vv, (qt, kt, vt)


def drop_bytes(keep):
    """keep [B,N,Sq,Skv] bool -> DropoutGenMaskV2's bytes (bit i of the flat index, LSB first), 128-bit aligned."""
    flat = keep.reshape(-1)
    n = (flat.size + 127) // 128 * 128
    pad = np.zeros(n, bool)
    pad[:flat.size] = flat
    return np.packbits(pad.reshape(-1, 8), axis=1, bitorder="little").reshape(-1)


def rnd(shape, dt, rng, s=1.0):
    return (rng.standard_normal(shape) * s).astype(np.float32).astype(dt)


def fa(q, k, v, L, N, scale, mode=0, mask=None, pse=None, drop=None, keep_prob=1.0, pre=BIG, nxt=BIG,
       oshape=None):
    B = q.shape[0] if L != "SBH" else q.shape[1]
    Sq = q.shape[2] if L == "BNSD" else (q.shape[1] if L != "SBH" else q.shape[0])
    mx = np.full((B, N, Sq, 8), 7.0, np.float32)
    sm = mx.copy()
    out = np.zeros(oshape or q.shape, q.dtype)
    aclnn.FlashAttentionScore(q, k, v, pse, drop, None, mask, None, scale, keep_prob, pre, nxt, N, L, 0, mode,
                              mx, sm, None, out)
    return out, mx, sm


def fa_grad(q, k, v, dy, out, mx, sm, L, N, scale, mode=0, mask=None, pse=None, drop=None, keep_prob=1.0,
            pre=BIG, nxt=BIG):
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    aclnn.FlashAttentionScoreGrad(q, k, v, dy, pse, drop, None, mask, mx, sm, None, out, None, scale, keep_prob,
                                  pre, nxt, N, L, 0, mode, dq, dk, dv, None)
    return dq, dk, dv


def close(got, want, dt, what):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    err = np.abs(got - want).max() / (np.abs(want).max() + 1e-30)
    assert err <= TOL[np.dtype(dt)], "%s: relative error %.3g" % (what, err)


def run_and_check(dt, L, B, N, Nkv, Sq, Skv, D, mode=0, mask=None, pse=None, keep=None, keep_prob=1.0,
                  pre=BIG, nxt=BIG, seed=0, Dv=None):
    rng = np.random.default_rng(seed)
    Dv = Dv or D
    q4, k4, v4 = rnd((B, N, Sq, D), dt, rng), rnd((B, Nkv, Skv, D), dt, rng), rnd((B, Nkv, Skv, Dv), dt, rng)
    dy4 = rnd((B, N, Sq, Dv), dt, rng)
    q, k, v, dy = (to_layout(x, L) for x in (q4, k4, v4, dy4))
    scale = 1.0 / np.sqrt(D)
    drop = drop_bytes(keep) if keep is not None else None
    out, mx, sm = fa(q, k, v, L, N, scale, mode, mask, pse, drop, keep_prob, pre, nxt, dy.shape)
    ok = allowed(B, N, Sq, Skv, mode, mask, pre, nxt)
    ro, leaves = ref_attention(q4, k4, v4, ok, scale, pse, True, keep, keep_prob)
    close(from_layout(out, L, N), ro.detach().numpy(), dt, "out %s" % L)
    # softmax max / sum: 8 copies of the row's max of s and of sum exp(s - max)
    assert (mx == mx[..., :1]).all() and (sm == sm[..., :1]).all()
    dq, dk, dv = fa_grad(q, k, v, dy, out, mx, sm, L, N, scale, mode, mask, pse, drop, keep_prob, pre, nxt)
    ro.backward(t64(dy4))
    for name, g, leaf, nh in (("dq", dq, leaves[0], N), ("dk", dk, leaves[1], Nkv), ("dv", dv, leaves[2], Nkv)):
        close(from_layout(g, L, nh), leaf.grad.numpy(), dt, "%s %s" % (name, L))
    return out, mx, sm


@pytest.mark.parametrize("L", ["BNSD", "BSND", "BSH", "SBH"])
def test_layouts_gqa_fp32(L):
    run_and_check(F32, L, 2, 4, 2, 70, 150, 32, seed=1)


@pytest.mark.parametrize("dt", [F32, F16, BF16], ids=did)
def test_dtypes_causal(dt):
    mask = np.triu(np.ones((2048, 2048), bool), 1)
    run_and_check(dt, "BNSD", 1, 2, 1, 200, 200, 64, mode=2, mask=mask, seed=2)


@pytest.mark.parametrize("mode,Sq,Skv,pre,nxt", [(2, 90, 140, BIG, BIG), (3, 90, 140, BIG, BIG),
                                                 (3, 140, 90, BIG, BIG), (4, 100, 130, 20, 5),
                                                 (0, 100, 130, 30, 0), (0, 100, 130, BIG, -3)])
def test_sparse_modes(mode, Sq, Skv, pre, nxt):
    mask = np.triu(np.ones((2048, 2048), np.uint8), 1) if mode in (2, 3, 4) else np.zeros((Sq, Skv), np.uint8)
    run_and_check(F32, "BSND", 1, 2, 2, Sq, Skv, 16, mode=mode, mask=mask, pre=pre, nxt=nxt, seed=3)


@pytest.mark.parametrize("shape", [(1, 1, 60, 80), (2, 1, 60, 80), (2, 3, 60, 80), (60, 80)])
def test_explicit_masks(shape):
    rng = np.random.default_rng(4)
    mask = rng.random(shape) < 0.3
    mask[..., :, 0] = False  # every row keeps a key
    for m in (mask, mask.astype(np.uint8)):
        run_and_check(F32, "BNSD", 2, 3, 1, 60, 80, 24, mode=1 if m.dtype == np.uint8 else 0, mask=m, seed=5)


def test_fully_masked_rows_give_zero():
    mask = np.zeros((40, 50), bool)
    mask[3] = True
    out, mx, sm = run_and_check(F32, "BNSD", 1, 1, 1, 40, 50, 16, mask=mask, seed=6)
    assert (out[0, 0, 3] == 0).all() and mx[0, 0, 3, 0] == -np.inf and sm[0, 0, 3, 0] == 0


@pytest.mark.parametrize("pshape", [(2, 2, 50, 70), (1, 2, 50, 70), (2, 2, 1, 70)])
def test_real_shift(pshape):
    rng = np.random.default_rng(7)
    pse = rnd(pshape, F32, rng, 2.0)
    run_and_check(F32, "BNSD", 2, 2, 2, 50, 70, 32, pse=pse, seed=8)


@pytest.mark.parametrize("dt", [F32, BF16], ids=did)
def test_dropout_with_given_mask(dt):
    rng = np.random.default_rng(9)
    B, N, S = 1, 2, 130
    keep = rng.random((B, N, S, S)) < 0.8
    mask = np.triu(np.ones((2048, 2048), bool), 1)
    run_and_check(dt, "BNSD", B, N, 1, S, S, 32, mode=2, mask=mask, keep=keep, keep_prob=0.8, seed=10)


def test_value_head_dim_smaller():
    run_and_check(F32, "BNSD", 1, 2, 1, 33, 47, 32, Dv=16, seed=11)


def test_empty_and_strided():
    # Skv = 0: out zeros, max -inf, sum 0
    q = np.ones((1, 1, 3, 8), np.float32)
    k = np.ones((1, 1, 0, 8), np.float32)
    out, mx, sm = fa(q, k, k, "BNSD", 1, 0.5)
    assert (out == 0).all() and (mx == -np.inf).all() and (sm == 0).all()
    # a transposed (strided) query view gives the contiguous result
    rng = np.random.default_rng(12)
    q = rnd((1, 2, 20, 16), F32, rng)
    k = rnd((1, 2, 30, 16), F32, rng)
    qs = np.ascontiguousarray(q.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    a, _, _ = fa(q, k, k, "BNSD", 2, 0.25)
    b, _, _ = fa(qs, k, k, "BNSD", 2, 0.25)
    assert bits(a) == bits(b)


# ---- errors ----

def fa_args(q=None, L="BNSD", N=2, mode=0, keep=1.0, drop=None, mask=None, heads=None):
    rng = np.random.default_rng(0)
    q = rnd((1, 2, 8, 16), F32, rng) if q is None else q
    k = rnd((1, 2, 8, 16), F32, rng)
    mx = np.zeros((1, 2, 8, 8), np.float32)
    return [q, k, k, None, drop, None, mask, None, 0.25, keep, BIG, BIG, heads or N, L, 0, mode, mx, mx.copy(),
            None, np.zeros_like(q)]


def test_errors():
    f = aclnn.FlashAttentionScore
    a = fa_args()
    a[0] = None
    assert status(f, *a) == NULLPTR
    assert status(f, *fa_args(L="NSD")) == INVALID
    assert status(f, *fa_args(heads=3)) == INVALID
    assert status(f, *fa_args(mode=5, mask=np.zeros((8, 8), bool))) == INVALID
    assert status(f, *fa_args(mode=7)) == INVALID
    assert status(f, *fa_args(keep=0.5)) == NULLPTR  # dropMask needed
    assert status(f, *fa_args(keep=0.5, drop=np.zeros(2, np.uint8))) == INVALID  # too few bits
    assert status(f, *fa_args(keep=0.0)) == INVALID
    a = fa_args()
    a[1] = a[1].astype(np.float16)
    assert status(f, *a) == INVALID  # key dtype
    a = fa_args()
    a[16] = np.zeros((1, 2, 8, 1), np.float32)
    assert status(f, *a) == INVALID  # softmaxMax shape
    a = fa_args(mask=np.zeros((3, 8, 8), bool))
    assert status(f, *a) == INVALID
    a = fa_args()
    a[0] = np.zeros((1, 2, 8, 16), np.int32)
    assert status(f, *a) == INVALID
    # GQA: query heads not a multiple of key heads
    rng = np.random.default_rng(0)
    a = fa_args(q=rnd((1, 3, 8, 16), F32, rng), N=3)
    a[16], a[17] = np.zeros((1, 3, 8, 8), np.float32), np.zeros((1, 3, 8, 8), np.float32)
    assert status(f, *a) == INVALID
    # the grad needs the forward's max, sum and output
    q = rnd((1, 2, 8, 16), F32, rng)
    mx = np.zeros((1, 2, 8, 8), np.float32)
    g = [q, q, q, q, None, None, None, None, mx, mx, None, q, None, 0.25, 1.0, BIG, BIG, 2, "BNSD", 0, 0,
         np.zeros_like(q), np.zeros_like(q), np.zeros_like(q), None]
    for i in (8, 9, 11):
        b = list(g)
        b[i] = None
        assert status(aclnn.FlashAttentionScoreGrad, *b) == NULLPTR
    b = list(g)
    b[21] = np.zeros((1, 2, 8, 15), np.float32)
    assert status(aclnn.FlashAttentionScoreGrad, *b) == INVALID


# ---- FusedInferAttentionScoreV2 ----

def fia(q, k, v, N, Nkv, scale, L="BSND", pse=None, mask=None, mode=0, lse=None, pre=65535, nxt=65535,
        extra=None):
    out = np.zeros(q.shape, q.dtype)
    opt = [None] * 17
    if extra is not None:
        opt[extra[0]] = extra[1]
    aclnn.FusedInferAttentionScoreV2(q, [k], [v], pse, mask, None, None, *opt, N, scale, pre, nxt, L, Nkv, mode,
                                     0 if q.shape[1] == 1 else 2, 0, 0, lse is not None, 0, 0, out, lse)
    return out


@pytest.mark.parametrize("L,Sq,dt", [("BSND", 7, F16), ("BNSD", 7, BF16), ("BSND", 1, F16), ("BSH", 1, F16),
                                      ("BNSD", 1, BF16)])
def test_fia_ggml_paths(L, Sq, dt):
    rng = np.random.default_rng(13)
    B, N, Nkv, Skv, D = 2, 8, 2, 300, 64
    q4, k4, v4 = rnd((B, N, Sq, D), dt, rng), rnd((B, Nkv, Skv, D), dt, rng), rnd((B, Nkv, Skv, D), dt, rng)
    # the KQ mask as ggml passes it: fp16 with -inf, one per batch, broadcast over the heads (stride 0)
    m = np.where(rng.random((B, 1, Sq, Skv)) < 0.2, -np.inf, rng.uniform(-1, 0, (B, 1, Sq, Skv))).astype(dt)
    m[..., 0] = 0
    pse = np.broadcast_to(m, (B, N, Sq, Skv))
    scale = 0.125
    if L == "BSH":
        q = to_layout(q4, L)
        k, v = to_layout(k4, L), to_layout(v4, L)
    else:
        q, k, v = (to_layout(x, L) for x in (q4, k4, v4))
    lse = np.zeros((B, N, Sq, 1), np.float32)
    out = fia(q, k, v, N, Nkv, scale, L, pse=pse, lse=lse)
    ok = np.ones((B, N, Sq, Skv), bool)
    ro, _ = ref_attention(q4, k4, v4, ok, scale, np.asarray(pse, np.float64), False)
    close(from_layout(out, L, N), ro.detach().numpy(), dt, "fia out")
    G = N // Nkv
    s = (t64(q4) @ t64(k4).repeat_interleave(G, 1).transpose(-1, -2)) * scale + t64(np.asarray(pse, np.float32))
    want = torch.logsumexp(s, -1, keepdim=True).numpy()
    assert np.abs(lse - want).max() < 3e-2 * (1 + np.abs(want).max())


@pytest.mark.parametrize("dt,Sq,D,strided", [(F16, 1, 72, False), (BF16, 2, 64, True), (F16, 3, 128, True)])
def test_fia_decode_chunks(dt, Sq, D, strided):
    """The decode kernel: G * Sq <= 16 rows per kv head, a KV length over several
    512-key chunks (the last one partial), a head size with a tail of the 16 lanes,
    K / V read through strided views, a pse with -inf and the lse."""
    rng = np.random.default_rng(21)
    B, N, Nkv, Skv = 2, 12, 3, 1300
    q4, k4, v4 = rnd((B, N, Sq, D), dt, rng), rnd((B, Nkv, Skv, D), dt, rng), rnd((B, Nkv, Skv, D), dt, rng)
    m = np.where(rng.random((B, 1, Sq, Skv)) < 0.2, -np.inf, rng.uniform(-1, 0, (B, 1, Sq, Skv))).astype(dt)
    m[..., 1000:1200] = -np.inf
    m[..., 5] = 0
    pse = np.broadcast_to(m, (B, N, Sq, Skv))
    k, v = to_layout(k4, "BNSD"), to_layout(v4, "BNSD")
    if strided:  # head dim strided: K as a transposed view, V every other element
        k = np.ascontiguousarray(k.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
        v2 = np.zeros(v.shape[:3] + (2 * D,), v.dtype)
        v2[..., ::2] = v
        v = v2[..., ::2]
    lse = np.zeros((B, N, Sq, 1), np.float32)
    scale = 1.0 / np.sqrt(D)
    out = fia(to_layout(q4, "BNSD"), k, v, N, Nkv, scale, "BNSD", pse=pse, lse=lse)
    ok = np.ones((B, N, Sq, Skv), bool)
    ro, _ = ref_attention(q4, k4, v4, ok, scale, np.asarray(pse, np.float64), False)
    close(out, ro.detach().numpy(), dt, "fia decode out")
    G = N // Nkv
    s = (t64(q4) @ t64(k4).repeat_interleave(G, 1).transpose(-1, -2)) * scale + t64(np.asarray(pse, np.float32))
    want = torch.logsumexp(s, -1, keepdim=True).numpy()
    assert np.abs(lse - want).max() < 3e-2 * (1 + np.abs(want).max())


@pytest.mark.parametrize("dt,L,B,N,Nkv,Sq,Skv,D", [(F16, "BNSD", 1, 4, 4, 1, 700, 32), (BF16, "BSND", 2, 8, 2, 2, 1030, 40),
                                                   (F32, "BSND", 1, 16, 1, 1, 600, 24), (F16, "BNSD", 1, 4, 2, 8, 555, 16)])
def test_fa_decode_shapes(dt, L, B, N, Nkv, Sq, Skv, D):
    """FlashAttentionScore (+Grad) on shapes the decode forward takes (G * Sq <= 16, up to
    the boundary of 16 rows): the backward's GEMM scores against the decode forward's max / sum."""
    run_and_check(dt, L, B, N, Nkv, Sq, Skv, D, seed=5)


def test_fia_mask_and_causal():
    rng = np.random.default_rng(14)
    B, N, Sq, Skv, D = 1, 4, 40, 60, 32
    q4, k4, v4 = rnd((B, N, Sq, D), F16, rng), rnd((B, N, Skv, D), F16, rng), rnd((B, N, Skv, D), F16, rng)
    mask = rng.random((Sq, Skv)) < 0.3
    mask[:, 0] = False
    for m, mode in ((mask, 0), (mask[None].astype(np.int8), 0), (np.triu(np.ones((2048, 2048), bool), 1), 3)):
        out = fia(to_layout(q4, "BNSD"), to_layout(k4, "BNSD"), to_layout(v4, "BNSD"), N, N, 0.2, "BNSD", mask=m,
                  mode=mode, pre=BIG, nxt=BIG)
        ok = allowed(B, N, Sq, Skv, mode, m if mode == 0 else m, BIG, BIG)
        ro, _ = ref_attention(q4, k4, v4, ok, 0.2)
        close(out, ro.detach().numpy(), F16, "fia mask mode %d" % mode)


def test_fia_errors():
    rng = np.random.default_rng(15)
    q = rnd((1, 4, 2, 16), F16, rng)
    k = rnd((1, 2, 5, 16), F16, rng)
    f = lambda *a, **kw: fia(*a, **kw)  # noqa: E731
    assert status(f, q, k, k, 4, 3, 0.25, "BNSD") == INVALID  # heads not a multiple
    assert status(f, q, k, k, 4, 2, 0.25, "TND") == INVALID
    blk = (7, np.zeros((1, 1), np.float16))  # blockTable (page attention): refused
    assert status(lambda: fia(q, k, k, 4, 2, 0.25, "BNSD", extra=blk)) == INVALID
    assert status(f, q.astype(np.float32), k, k, 4, 2, 0.25, "BNSD") == INVALID
    out = np.zeros_like(q)
    with pytest.raises(pyaclnn.AclError) as e:
        aclnn.FusedInferAttentionScoreV2(q, [k, k], [k, k], None, None, None, None, *([None] * 17), 4, 0.25,
                                         BIG, BIG, "BNSD", 2, 0, 0, 0, 0, False, 0, 0, out, None)
    assert e.value.status == INVALID
    assert (out == 0).all()
    with pytest.raises(pyaclnn.AclError) as e:  # softmaxLseFlag without softmaxLse
        aclnn.FusedInferAttentionScoreV2(q, [k], [k], None, None, None, None, *([None] * 17), 4, 0.25,
                                         BIG, BIG, "BNSD", 2, 0, 0, 0, 0, True, 0, 0, out, None)
    assert e.value.status == NULLPTR


# ---- bits ----

def test_bits_across_threads_and_tiers(restore_runtime_knobs):
    rng = np.random.default_rng(16)
    keep = rng.random((1, 4, 150, 150)) < 0.9
    drop = drop_bytes(keep)
    mask = np.triu(np.ones((2048, 2048), bool), 1)
    q, k, v, dy = (rnd(s, BF16, rng) for s in ((1, 4, 150, 64), (1, 2, 150, 64), (1, 2, 150, 64), (1, 4, 150, 64)))
    qd, kd = rnd((1, 8, 1, 64), F16, rng), rnd((1, 2, 300, 64), F16, rng)
    qe, ke, ve = rnd((2, 8, 2, 40), BF16, rng), rnd((2, 2, 1100, 40), BF16, rng), rnd((2, 2, 1100, 40), BF16, rng)
    ref = None
    for tier in supported_tiers():
        for threads in (1, 2, 3):
            pyaclnn.set_max_isa(tier)
            pyaclnn.set_num_threads(threads)
            out, mx, sm = fa(q, k, v, "BNSD", 4, 0.125, 2, mask, None, drop, 0.9)
            g = fa_grad(q, k, v, dy, out, mx, sm, "BNSD", 4, 0.125, 2, mask, None, drop, 0.9)
            d = fia(qd, kd, kd, 8, 2, 0.125, "BNSD")
            lse = np.zeros((2, 8, 2, 1), np.float32)
            e = fia(qe, ke, ve, 8, 2, 0.125, "BNSD", lse=lse)  # decode over three 512-key chunks
            got = b"".join(bits(a) for a in (out, mx, sm, *g, d, e, lse))
            if ref is None:
                ref = got
            assert got == ref, (tier, threads)


# ---- the real torch_npu ----

def test_torch_npu_sdpa(home):
    require_torch_npu()
    proc = run_script(home, SCRIPTS / "npu_attention.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^OK\b", proc.stderr, re.M), proc.stderr
    assert not error_lines(proc.stderr), "error lines on stderr:\n" + "\n".join(error_lines(proc.stderr))
