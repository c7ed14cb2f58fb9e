"""pyaclnn.torch.npu_nsa_select_attention: torch_npu's signature on CPU tensors. As
torch_npu, the backward is causal (sparse_mode 2) with or without atten_mask, while the
forward is causal only with one; exact_grad=True gives the gradients of the forward
that ran. Checked against torch autograd (float64) of the plain gather formulation."""
import warnings

import numpy as np
import pytest

import pyaclnn
from pyaclnn import reference as R

torch = pytest.importorskip("torch")
import pyaclnn.torch as pt  # noqa: E402

TDT = {"fp16": torch.float16, "bf16": torch.bfloat16}


def make(seed, dt, seq_q=(24, 40), seq_kv=(96, 128), n1=8, n2=2, d=192, dv=128, block=16, count=4):
    g = torch.Generator().manual_seed(seed)
    T1, T2 = sum(seq_q), sum(seq_kv)
    q = torch.randn((T1, n1, d), generator=g).to(TDT[dt])
    k = torch.randn((T2, n2, d), generator=g).to(TDT[dt])
    v = torch.randn((T2, n2, dv), generator=g).to(TDT[dt])
    rng = np.random.default_rng(seed)
    topk = np.empty((T1, n2, count), np.int32)
    t = 0
    for sq, skv in zip(seq_q, seq_kv):
        for s in range(sq):
            for h in range(n2):
                # the token's own block (visible keys), then any blocks, duplicates allowed
                topk[t, h] = [s // block] + list(rng.integers(0, skv // block, count - 1))
            t += 1
    return q, k, v, torch.from_numpy(topk), list(np.cumsum(seq_q)), list(np.cumsum(seq_kv))


def gather_attention(q, k, v, topk, scale, block, seq_q, seq_kv, causal):
    T1, N1, D = q.shape
    T2, N2, _ = k.shape
    G = N1 // N2
    C = topk.shape[-1]
    cq, ckv = np.asarray(seq_q), np.asarray(seq_kv)
    t = np.arange(T1)
    b = np.searchsorted(cq, t, side="right")
    s = t - np.concatenate([[0], cq[:-1]])[b]
    kv0 = np.concatenate([[0], ckv[:-1]])[b]
    pos = (topk.numpy().astype(np.int64)[..., None] * block + np.arange(block)).reshape(T1, N2, C * block)
    idx = torch.from_numpy(pos + kv0[:, None, None])
    heads = torch.arange(N2)[None, :, None]
    S = torch.matmul(q.view(T1, N2, G, D), k[idx, heads].transpose(-1, -2)) * float(np.float32(scale))
    if causal:
        S = S.masked_fill(torch.from_numpy(pos[:, :, None, :] > s[:, None, None, None]), float("-inf"))
    return torch.matmul(torch.softmax(S, -1), v[idx, heads]).reshape(T1, N1, -1)


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
@pytest.mark.parametrize("with_mask,exact_grad", [(True, False), (False, False), (False, True), (True, True)])
def test_values_and_gradients(dt, with_mask, exact_grad):
    q, k, v, topk, sq, skv = make(3, dt)
    scale = 192 ** -0.5
    mask = torch.ones((2048, 2048), dtype=torch.bool) if with_mask else None
    qq, kk, vv = (x.clone().requires_grad_() for x in (q, k, v))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out, smax, ssum = pt.npu_nsa_select_attention(qq, kk, vv, topk, scale, 8, 16, 4, atten_mask=mask,
                                                      actual_seq_qlen=sq, actual_seq_kvlen=skv,
                                                      exact_grad=exact_grad)
    assert out.dtype == q.dtype and smax.dtype == ssum.dtype == torch.float32
    assert out.shape == (64, 8, 128) and smax.shape == ssum.shape == (64, 8, 8)
    assert out.requires_grad and not smax.requires_grad and not ssum.requires_grad
    # the forward is the op's (sparse_mode 2: causal only with the mask)
    ro, rm, rl = R.nsa_selected_attention(
        *(x.float().numpy() for x in (q, k, v)), topk.numpy(), scale_value=scale, head_num=8,
        selected_block_size=16, selected_block_count=4, actual_seq_qlen=sq, actual_seq_kvlen=skv,
        atten_mask=None if mask is None else mask.numpy(), sparse_mode=2)
    np.testing.assert_allclose(out.detach().float().numpy(), ro, rtol=0, atol=float(np.abs(ro).max()) * 8e-3)
    np.testing.assert_allclose(smax.numpy(), rm, rtol=1e-5, atol=1e-6)
    dy = torch.randn(out.shape, generator=torch.Generator().manual_seed(9)).to(q.dtype)
    out.backward(dy)
    tol = 1.5e-2 if dt == "bf16" else 2e-3
    if with_mask or exact_grad:
        # the gradients of the forward that ran: torch autograd of the gather formulation
        # with the same mask rule, float64
        q64, k64, v64 = (x.double().requires_grad_() for x in (q, k, v))
        ref = gather_attention(q64, k64, v64, topk, scale, 16, sq, skv, causal=with_mask)
        ref.backward(dy.double())
        wants = (q64.grad, k64.grad, v64.grad)
    else:
        # torch_npu's rule: an unmasked forward, a causal (sparse_mode 2) backward on the
        # forward's softmax statistics (the vendor grad test's golden); float64 reference
        wants = tuple(torch.from_numpy(g) for g in R.nsa_selected_attention_grad(
            *(pt._as_numpy(x, "x") for x in (q, k, v, out.detach(), dy, smax, ssum, topk)), scale_value=scale,
            selected_block_size=16, selected_block_count=4, head_num=8, actual_seq_qlen=sq,
            actual_seq_kvlen=skv, sparse_mode=2))
    for name, ours, want in zip(("dq", "dk", "dv"), (qq.grad, kk.grad, vv.grad), wants):
        assert ours.dtype == q.dtype
        err = (ours.double() - want).abs().max().item()
        assert err <= tol * want.abs().max().item(), f"{name}: {err:.3g} vs peak {want.abs().max().item():.3g}"


def test_defaults_one_batch_and_errors():
    q, k, v, topk, _, _ = make(4, "fp16", seq_q=(8,), seq_kv=(64,), n1=2, n2=1, d=128)
    out, _, _ = pt.npu_nsa_select_attention(q, k, v, topk, 0.1, 2, 16, 4)
    ro, _, _ = R.nsa_selected_attention(*(x.float().numpy() for x in (q, k, v)), topk.numpy(),
                                        scale_value=0.1, head_num=2, selected_block_size=16,
                                        selected_block_count=4)
    np.testing.assert_allclose(out.float().numpy(), ro, atol=2e-3)
    with pytest.raises(TypeError):
        pt.npu_nsa_select_attention(q.float(), k, v, topk, 0.1, 2, 16, 4)
    with pytest.raises(pyaclnn.AclError) as ei:
        pt.npu_nsa_select_attention(q, k, v, topk, 0.1, 3, 16, 4)
    assert ei.value.status == 161002 and "headNum" in ei.value.message


def test_train_step_sample():
    import pathlib
    import subprocess
    import sys
    sample = pathlib.Path(__file__).resolve().parents[1] / "samples" / "train_step.py"
    proc = subprocess.run([sys.executable, str(sample)], cwd="/", stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    grads = [ln for ln in proc.stdout.splitlines() if ln.startswith("grad ")]
    assert len(grads) == 4 and all(ln.endswith("ok") for ln in grads), proc.stdout
    assert proc.stdout.rstrip().endswith("OK")


def test_causal_gradient_warning_once():
    q, k, v, topk, sq, skv = make(5, "bf16", seq_q=(16,), seq_kv=(64,), n1=2, n2=1, d=128)
    args = (topk, 0.1, 2, 16, 4)
    kw = dict(actual_seq_qlen=sq, actual_seq_kvlen=skv)
    pt._CAUSAL_GRAD_WARNED = False
    qq = q.clone().requires_grad_()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        pt.npu_nsa_select_attention(q, k, v, *args, **kw)                         # no grad wanted
        pt.npu_nsa_select_attention(qq, k, v, *args, exact_grad=True, **kw)       # exact: no warning
        pt.npu_nsa_select_attention(qq, k, v, *args, atten_mask=torch.ones(64, 64, dtype=torch.bool), **kw)
        assert not rec
        pt.npu_nsa_select_attention(qq, k, v, *args, **kw)
        pt.npu_nsa_select_attention(qq, k, v, *args, **kw)                        # once per process
    assert len(rec) == 1 and rec[0].category is RuntimeWarning
    text = str(rec[0].message)
    assert "causal" in text and "atten_mask" in text and "exact_grad=True" in text


@pytest.mark.parametrize("with_mask", [True, False])
def test_grad_function_is_the_autograd_backward(with_mask):
    """npu_nsa_select_attention_grad (torch_npu's signature and return) gives the bits of
    the autograd backward of npu_nsa_select_attention: the same sparse_mode 2 call."""
    q, k, v, topk, sq, skv = make(6, "fp16")
    mask = torch.ones((2048, 2048), dtype=torch.bool) if with_mask else None
    qq, kk, vv = (x.clone().requires_grad_() for x in (q, k, v))
    kw = dict(atten_mask=mask, actual_seq_qlen=sq, actual_seq_kvlen=skv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out, smax, ssum = pt.npu_nsa_select_attention(qq, kk, vv, topk, 0.07, 8, 16, 4, **kw)
    dy = torch.randn(out.shape, generator=torch.Generator().manual_seed(2)).half()
    out.backward(dy)
    grads = pt.npu_nsa_select_attention_grad(dy, q, k, v, out.detach(), smax, ssum, topk, 0.07, 8, 16, 4, **kw)
    assert isinstance(grads, tuple) and len(grads) == 3
    for got, want in zip(grads, (qq.grad, kk.grad, vv.grad)):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert torch.equal(got.view(torch.int16), want.view(torch.int16))
    with pytest.raises(TypeError):
        pt.npu_nsa_select_attention_grad(dy, q, k, v, out.detach(), smax.half(), ssum, topk, 0.07, 8, 16, 4, **kw)
