"""The NSA ops at the NPU's precision (the default, PYACLNN_NSA_PRECISION=npu).

- bitwise against tests/nsa_exact_golden.py (float32 numpy in the kernels' order:
  fp32 scores and softmax, P and dS rounded to the input dtype, ties away from
  zero, fp32 accumulation, the scale after accumulation, one output cast);
- against pyaclnn.reference's vendor-like float32 goldens (np.exp, BLAS products:
  another exp and summation order): >= 99% of the forward outputs and of dk / dv
  bit-equal, >= 95% of dq (cancellation), every element within one ulp plus one
  16-bit rounding step of the rounded terms (the figures are printed with -s);
- the vendor's forward unit test (op-plugin test_npu_nsa_select_attention.py), its
  golden and its fp16 tolerance rule, reproduced;
- the mode switch (invalid values, fixed per executor), bitwise determinism across
  tiers and thread counts in both modes, and the forward -> grad round trip.
The float64 tests of the `high` mode are test_nsa_op.py / test_nsa_fwd_op.py.
"""
import numpy as np
import pytest

import pyaclnn
from pyaclnn import reference as R
from mutations import expect_rejected
from tiers import bits, supported_tiers
import nsa_exact_golden as X
import test_nsa_fwd_op as F

F16, BF16, F32 = F.F16, F.BF16, F.F32
DT = {"fp16": F16, "bf16": BF16}


@pytest.fixture
def precision(monkeypatch):
    """precision(mode): sets PYACLNN_NSA_PRECISION for the rest of the test."""
    def set_mode(mode):
        if mode is None:
            monkeypatch.delenv("PYACLNN_NSA_PRECISION", raising=False)
        else:
            monkeypatch.setenv("PYACLNN_NSA_PRECISION", mode)
    set_mode(None)
    return set_mode


# name -> forward make_case kwargs (dtype given separately)
CASES = {
    # G = 1, N2 = 4, two batches, sparse 0, D = 128
    "G1_N2_4_varlen_sparse0_D128": dict(seq_q=[9, 14], seq_kv=[64, 96], n1=4, n2=4, d=128, dv=128,
                                        block=16, count=3, sparse_mode=0, mask=False),
    # G = 4, N2 = 2, three batches, causal with duplicates and rows without a visible key, D = 192/128
    "G4_N2_2_varlen_causal_D192": dict(seq_q=[5, 23, 36], seq_kv=[64, 128, 192], n1=8, n2=2, d=192, dv=128,
                                       block=16, count=4, future_rows=2),
    # G = 16, block 64, causal, D = 192/128
    "G16_b64_causal_D192": dict(seq_q=[70], seq_kv=[256], n1=16, n2=1, d=192, dv=128, block=64, count=3),
    # G = 16, N2 = 2, sparse 2 without a mask (forward unmasked, grad causal), D = Dv = 128
    "G16_N2_2_sparse2_nomask_D128": dict(seq_q=[20, 12], seq_kv=[64, 96], n1=32, n2=2, d=128, dv=128,
                                         block=32, count=2, mask=False),
}


# relaxed shapes (PYACLNN_NSA_RELAXED=1): odd G, odd B, D and Dv not multiples of 16 (the
# bf16 dot GEMM pads pairs of heads, of keys and of dims with zeros)
RELAXED_CASES = {
    "relaxed_G3_B5_D40_Dv24": dict(seq_q=[7, 5], seq_kv=[20, 15], n1=6, n2=2, d=40, dv=24, block=5, count=3),
    "relaxed_G1_B3_D19_Dv9": dict(seq_q=[6], seq_kv=[12], n1=2, n2=2, d=19, dv=9, block=3, count=2,
                                  mask=False, sparse_mode=0),
}


def grad_kw(kw):
    return {k: kw[k] for k in ("scale_value", "selected_block_size", "selected_block_count", "head_num",
                               "actual_seq_qlen", "actual_seq_kvlen", "atten_mask", "sparse_mode")}


def grad_inputs(ins, fwd, seed=1):
    o, m, l = fwd
    do = R.round_to(np.random.default_rng(seed).standard_normal(o.shape), ins[0].dtype)
    return (*ins[:3], o, do, m, l, ins[3])


def assert_bits(ours, want, what):
    for name, a, b in zip(("0", "1", "2"), ours, want):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, f"{what}[{name}]: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        eq = bits(a) == bits(b)
        if not eq:
            u = np.uint16 if a.itemsize == 2 else np.uint32
            diff = a.view(u) != b.view(u)
            first = tuple(np.argwhere(diff)[0])
            pytest.fail(f"{what}[{name}]: {int(diff.sum())} of {diff.size} elements differ, first at {first}: "
                        f"{a[first]!r} vs {b[first]!r}")


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
@pytest.mark.parametrize("name", list(CASES))
def test_bitwise_vs_exact_golden(precision, name, dt):
    ins, kw = F.make_case(F.zlib_seed(name), dtype=DT[dt], **CASES[name])
    fwd = F.run(ins, kw)
    assert_bits(fwd, X.forward(*ins, **kw), f"forward {name}")
    gin = grad_inputs(ins, fwd)
    ours = pyaclnn.ops.nsa_selected_attention_grad(*gin, **grad_kw(kw))
    assert_bits(ours, X.grad(*gin, **grad_kw(kw)), f"grad {name}")
    ours32 = pyaclnn.ops.nsa_selected_attention_grad(*gin, out_dtype=F32, **grad_kw(kw))
    assert_bits(ours32, X.grad(*gin, out_dtype=F32, **grad_kw(kw)), f"grad fp32 out {name}")


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
@pytest.mark.parametrize("name", list(RELAXED_CASES))
def test_bitwise_vs_exact_golden_relaxed_shapes(precision, monkeypatch, name, dt):
    monkeypatch.setenv("PYACLNN_NSA_RELAXED", "1")
    ins, kw = F.make_case(F.zlib_seed(name), dtype=DT[dt], **RELAXED_CASES[name])
    fwd = F.run(ins, kw)
    assert_bits(fwd, X.forward(*ins, **kw), f"forward {name}")
    gin = grad_inputs(ins, fwd)
    assert_bits(pyaclnn.ops.nsa_selected_attention_grad(*gin, **grad_kw(kw)), X.grad(*gin, **grad_kw(kw)),
                f"grad {name}")
    # fp32 outputs show the fp32 sums' last bits (the pair order over odd blocks, heads and dims)
    assert_bits(pyaclnn.ops.nsa_selected_attention_grad(*gin, out_dtype=F32, **grad_kw(kw)),
                X.grad(*gin, out_dtype=F32, **grad_kw(kw)), f"grad fp32 out {name}")


def test_exact_golden_vendor_shape_G1_115_heads(precision):
    """The vendor test's shape (one token, 115 heads with G = 1, 1088 keys, 16 blocks of 64,
    D = 192 / 128, scale 1, fp16), bit for bit; the grad on 3 tokens, 256 keys, 4 blocks."""
    ins, kw = vendor_case()
    fwd = F.run(ins, kw)
    assert_bits(fwd, X.forward(*ins, **kw), "forward vendor shape")
    ins, kw = vendor_case(**VENDOR_GRAD)
    gin = grad_inputs(ins, F.run(ins, kw))
    ours = pyaclnn.ops.nsa_selected_attention_grad(*gin, **grad_kw(kw))
    assert_bits(ours, X.grad(*gin, **grad_kw(kw)), "grad vendor shape")


# --------------------------------------------------------------------------- vendor-like goldens

def compare_to_golden(ours, gold, terms, what, dtype, min_equal):
    """Against another summation order and another exp: at least `min_equal` of the
    elements bit-equal, and every element within 1 ulp(golden) + 2^-p * terms, p the
    explicit mantissa bits of the input dtype (one 16-bit rounding step of every
    rounded P or dS that enters the element: `terms` bounds the sum of the absolute
    products). Returns (bit-equal share, share within 1 ulp, max ulp)."""
    a, b = np.asarray(ours), np.asarray(gold)
    u = np.uint16 if a.itemsize == 2 else np.uint32
    eq = float((a.view(u) == b.view(u)).mean())
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    ulps = d / R.ulp(b.astype(np.float64), a.dtype)
    within1 = float((ulps <= 1).mean())
    p = 10 if dtype == F16 else 7
    bad = d > R.ulp(b.astype(np.float64), a.dtype) + 2.0 ** -p * terms
    assert not bad.any(), f"{what}: {int(bad.sum())} elements beyond the rounding bound, max {d.max():.3g}"
    assert eq >= min_equal, f"{what}: only {eq:.2%} bit-equal"
    return eq, within1, float(ulps.max())


GOLDEN_CASES = {
    "G1_115heads_vendor": None,
    "G8_causal_D192": dict(seq_q=[96], seq_kv=[256], n1=8, n2=1, d=192, dv=128, block=64, count=4),
    "G16_causal_D128": dict(seq_q=[64], seq_kv=[256], n1=16, n2=1, d=128, dv=128, block=64, count=4),
    "G4_N2_2_varlen_D192": CASES["G4_N2_2_varlen_causal_D192"],
}


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
@pytest.mark.parametrize("name", list(GOLDEN_CASES))
def test_vs_vendor_like_golden(precision, name, dt, record_property):
    if GOLDEN_CASES[name] is None:
        ins, kw = vendor_case(DT[dt])
    else:
        ins, kw = F.make_case(F.zlib_seed(name), dtype=DT[dt], **GOLDEN_CASES[name])
    fwd = F.run(ins, kw)
    gold = R.nsa_selected_attention_npu(*ins, **kw)
    f64 = [np.abs(x.astype(np.float64)) for x in ins[:3]]
    figs = {"out": compare_to_golden(fwd[0], gold[0], f64[2].max(), f"{name} out", DT[dt], 0.99)}
    for i, s in ((1, "max"), (2, "sum")):  # fp32 stats from another summation order
        np.testing.assert_allclose(fwd[i], gold[i], rtol=1e-5, atol=1e-6, err_msg=s)
    if GOLDEN_CASES[name] is None:
        ins, kw = vendor_case(DT[dt], **VENDOR_GRAD)
        f64 = [np.abs(x.astype(np.float64)) for x in ins[:3]]
        fwd = F.run(ins, kw)
    gin = grad_inputs(ins, fwd)
    ours = pyaclnn.ops.nsa_selected_attention_grad(*gin, **grad_kw(kw))
    ggold = R.nsa_selected_attention_grad_npu(*gin, **grad_kw(kw))
    # bounds of the summed |products|: dq = scale dS K, dk = scale dS^T q (|dS| <= |dP - Dsum| P,
    # P summing to <= 1 per row), dv = P^T dO
    sc = abs(kw["scale_value"])
    dsb = (np.abs(gin[4].astype(np.float64)).max() * (f64[2].max() + f64[2].max())) * (1 + 2.0 ** -6)
    G = ins[0].shape[1] // ins[1].shape[1]
    T1 = ins[0].shape[0]
    terms = (sc * dsb * f64[1].max(), sc * dsb * f64[0].max() * G * T1,
             np.abs(gin[4].astype(np.float64)).max() * G * T1)
    for n, a, b, tb in zip(("dq", "dk", "dv"), ours, ggold, terms):
        # dq sums terms of both signs (sum_j dS_j is about 0): the cancellation leaves
        # it most exposed to the golden's other order and exp
        figs[n] = compare_to_golden(a, b, tb, f"{name} {n}", DT[dt], 0.95 if n == "dq" else 0.99)
    record_property("golden_figures", figs)
    print(f"\n{name} {dt}: " + ", ".join(f"{k} {e:.4%} bit-equal, {w:.4%} <= 1 ulp, max {m:.0f} ulp"
                                         for k, (e, w, m) in figs.items()))


# --------------------------------------------------------------------------- the vendor's forward test

def vendor_case(dtype=F16, seed=2025, keys=1088, count=16, tokens=1):
    """op-plugin test_npu_nsa_select_attention.py: one token, N1 = N2 = 115, D = 192,
    Dv = 128, 1088 keys, blocks of 64, count 16, topk = arange(16), scale 1, no mask
    (the grads use fewer keys and blocks: dk and dv of 1088 x 115 x 192 make slow goldens)."""
    rng = np.random.default_rng(seed)
    q = R.round_to(rng.standard_normal((tokens, 115, 192)), dtype)
    k = R.round_to(rng.standard_normal((keys, 115, 192)), dtype)
    v = R.round_to(rng.standard_normal((keys, 115, 128)), dtype)
    topk = np.broadcast_to(np.arange(count, dtype=np.int32), (tokens, 115, count)).copy()
    kw = dict(scale_value=1.0, head_num=115, selected_block_size=64, selected_block_count=count,
              actual_seq_qlen=[tokens], actual_seq_kvlen=[keys], atten_mask=None, sparse_mode=2)
    return (q, k, v, topk), kw


VENDOR_GRAD = dict(keys=256, count=4, tokens=3)


def rtol_failures(golden, got, prec):
    """Elements failing both |d| <= prec and |d| / (max(|x|, |y|) + minimum) <= prec,
    torch_npu's assertRtolEqual rule (the test allows size * prec of them)."""
    x, y = golden.astype(np.float64), got.astype(np.float64)
    d = np.abs(y - x)
    minimum = 6e-8 if golden.dtype == np.float16 else 1e-9
    rel = d / (np.maximum(np.abs(x), np.abs(y)) + minimum)
    return int(np.sum((d > prec) & (rel > prec)))


def test_vendor_forward_unit_test(precision):
    """The golden of the vendor's test (fp32 q K^T * scale, torch-style softmax, P cast
    to fp16 with .to() (ties to even), fp32 P V, cast to fp16) and its tolerance: at most
    size * 1e-3 elements beyond 1e-3 (fp16), 1e-4 for the fp32 stats. With the default
    precision the op passes; the high precision (fp32 P) is reported for comparison."""
    ins, kw = vendor_case()
    gold = R.nsa_selected_attention_npu(*ins, ties="even", **kw)
    o, m, l = F.run(ins, kw)
    fails = rtol_failures(gold[0], o, 1e-3)
    allowed = int(o.size * 1e-3)
    print(f"vendor forward test: {fails} of {o.size} fp16 outputs beyond tolerance ({allowed} allowed)")
    assert fails <= allowed
    assert rtol_failures(gold[1], m, 1e-4) <= int(m.size * 1e-4)
    assert rtol_failures(gold[2], l, 1e-4) <= int(l.size * 1e-4)
    precision("high")
    fails_high = rtol_failures(gold[0], F.run(ins, kw)[0], 1e-3)
    print(f"  with PYACLNN_NSA_PRECISION=high: {fails_high} beyond tolerance")


# --------------------------------------------------------------------------- the mode

@pytest.mark.parametrize("value", ["NPU", "fp32", "high ", "1"])
def test_invalid_precision_is_rejected(precision, value):
    precision(value)
    ins, kw = F.make_case(3, **CASES["G1_N2_4_varlen_sparse0_D128"], dtype=F16)
    expect_rejected(lambda: F.run(ins, kw), 161002, "aclnnNsaSelectedAttentionGetWorkspaceSize",
                    "PYACLNN_NSA_PRECISION")
    precision(None)
    fwd = F.run(ins, kw)
    precision(value)
    expect_rejected(lambda: pyaclnn.ops.nsa_selected_attention_grad(*grad_inputs(ins, fwd), **grad_kw(kw)),
                    161002, "aclnnNsaSelectedAttentionGradGetWorkspaceSize", "PYACLNN_NSA_PRECISION")


def test_modes_differ_and_npu_is_default(precision):
    ins, kw = F.make_case(4, **CASES["G4_N2_2_varlen_causal_D192"], dtype=BF16)
    default = F.run(ins, kw)
    precision("npu")
    assert bits(F.run(ins, kw)[0]) == bits(default[0])
    precision("")
    assert bits(F.run(ins, kw)[0]) == bits(default[0])
    precision("high")
    high = F.run(ins, kw)
    assert bits(high[0]) != bits(default[0])
    # high keeps P in fp32: closer to float64
    ref = R.nsa_selected_attention(*ins, **kw)[0]
    err = lambda o: np.abs(o.astype(np.float64) - ref).mean()
    assert err(high[0]) < err(default[0])
    gin = grad_inputs(ins, default)
    g_high = pyaclnn.ops.nsa_selected_attention_grad(*gin, out_dtype=F32, **grad_kw(kw))
    precision(None)
    g_npu = pyaclnn.ops.nsa_selected_attention_grad(*gin, out_dtype=F32, **grad_kw(kw))
    gref = R.nsa_selected_attention_grad(*gin, **grad_kw(kw))
    for a, b, r in zip(g_high, g_npu, gref):
        assert bits(a) != bits(b)
        assert np.abs(a - r).mean() < np.abs(b - r).mean()


def _executor(ins, kw):
    """A repeatable forward executor over borrowed arrays; returns (run, outputs)."""
    q, k, v, topk = (pyaclnn.Tensor(a) for a in ins)
    T1, N1 = ins[0].shape[:2]
    outs = [pyaclnn.Tensor.empty((T1, N1, 8), F32), pyaclnn.Tensor.empty((T1, N1, 8), F32),
            pyaclnn.Tensor.empty((T1, N1, ins[2].shape[2]), ins[0].dtype)]
    ws, ex = pyaclnn.aclnnNsaSelectedAttentionGetWorkspaceSize(
        q, k, v, topk, None, kw["actual_seq_qlen"], kw["actual_seq_kvlen"], kw["scale_value"], kw["head_num"],
        "TND", kw["sparse_mode"], kw["selected_block_size"], kw["selected_block_count"], *outs)
    ex.set_repeatable()
    buf = pyaclnn.DeviceBuffer(ws) if ws else None
    stream = pyaclnn.Stream()

    def run():
        pyaclnn.aclnnNsaSelectedAttention(buf, ws, ex, stream)
        stream.synchronize()
        return outs[2].numpy()
    return run, (q, k, v, topk, *outs, stream, ex)


def test_mode_is_fixed_at_get_workspace_size(precision, runtime):
    ins, kw = F.make_case(5, **CASES["G1_N2_4_varlen_sparse0_D128"], dtype=F16)
    want_npu = F.run(ins, kw)[0]
    precision("high")
    want_high = F.run(ins, kw)[0]
    assert bits(want_npu) != bits(want_high)
    run, keep = _executor(ins, kw)            # planned with high
    precision(None)
    assert bits(run()) == bits(want_high)     # still high after the variable changed
    precision("high")
    keep[-1].destroy()
    keep[-2].close()


@pytest.mark.parametrize("mode", ["npu", "high"])
@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_tiers_and_threads_bitwise(precision, restore_runtime_knobs, mode, dt):
    precision(mode)
    ins, kw = F.make_case(71, dtype=DT[dt], **CASES["G4_N2_2_varlen_causal_D192"])
    first = None
    for tier in supported_tiers():
        pyaclnn.set_max_isa(tier)
        assert pyaclnn.get_isa() == tier
        for threads in (1, 3):
            pyaclnn.set_num_threads(threads)
            fwd = F.run(ins, kw)
            grads = pyaclnn.ops.nsa_selected_attention_grad(*grad_inputs(ins, fwd), **grad_kw(kw))
            got = [bits(a) for a in (*fwd, *grads)]
            if first is None:
                first = got
            assert got == first, f"{tier}, {threads} threads differ from scalar, 1 thread"


# --------------------------------------------------------------------------- round trip

@pytest.mark.parametrize("name", ["fp16_sparse2_mask", "bf16_sparse2_mask_G16"])
def test_round_trip_npu_vs_torch_autograd(precision, name):
    """forward -> grad with the default precision: the gradients of that forward (torch
    autograd of the gather formulation in float64), within the error of rounding P and
    dS to the input dtype; and bitwise the exact golden of the grad on those outputs."""
    import torch
    ins, kw = F.make_case(F.zlib_seed(name), **F.RT_CASES[name])
    fwd = F.run(ins, kw)
    gin = grad_inputs(ins, fwd)
    dq, dk, dv = pyaclnn.ops.nsa_selected_attention_grad(*gin, out_dtype=F32, **grad_kw(kw))
    assert_bits((dq, dk, dv), X.grad(*gin, out_dtype=F32, **grad_kw(kw)), f"round trip {name}")
    tq, tk, tv = (torch.from_numpy(a.astype(np.float64)).requires_grad_() for a in ins[:3])
    out = F.torch_gather_attention(tq, tk, tv, ins[3], kw, causal=True)
    out.backward(torch.from_numpy(gin[4].astype(np.float64)))
    tol = 2e-2 if ins[0].dtype == BF16 else 3e-3
    for n, ours, want in (("dq", dq, tq.grad), ("dk", dk, tk.grad), ("dv", dv, tv.grad)):
        want = want.numpy()
        err = np.abs(ours - want).max()
        assert err <= tol * np.abs(want).max(), f"{n}: {err:.3g} vs peak {np.abs(want).max():.3g}"
