"""Forward of NSA selected-block attention with aclnnNsaSelectedAttention, from
Python, then its gradients with aclnnNsaSelectedAttentionGrad (a round trip).

    python nsa_selected_attention.py

Layout TND: two batches with query lengths 40 and 24 and key/value lengths 128
and 96; N1 = 4 query heads share N2 = 2 key/value heads; D = 192 (query/key) and
Dv = 128 (value); every (token, kv head) selects 4 blocks of 16 keys of its own
batch. Three runs, each compared with pyaclnn.reference: the float32 golden of the
NPU's precision (the default: P and dS rounded to the input dtype, see
PYACLNN_NSA_PRECISION in docs/environment.md), which the outputs match within an ulp:

1. the one-call helper pyaclnn.nsa_selected_attention: float16, sparse_mode 2
   with an atten_mask (causal: the vendor kernel masks only when both are given);
2. the two-phase API on a stream: bfloat16 with a strided query, sparse_mode 0;
3. the forward outputs fed to pyaclnn.nsa_selected_attention_grad with the same
   arguments: the gradients of that forward.

Exits non-zero if a call fails or a result is out of tolerance.
"""
import sys

import ml_dtypes
import numpy as np

import pyaclnn
from pyaclnn import reference

SEQ_Q, SEQ_KV = (40, 24), (128, 96)
N1, N2, D, DV = 4, 2, 192, 128
BLOCK, COUNT = 16, 4
CUM_Q = [int(x) for x in np.cumsum(SEQ_Q)]
CUM_KV = [int(x) for x in np.cumsum(SEQ_KV)]
ATTRS = dict(scale_value=1.0 / np.sqrt(D), head_num=N1, selected_block_size=BLOCK,
             selected_block_count=COUNT, actual_seq_qlen=CUM_Q, actual_seq_kvlen=CUM_KV)


def make_inputs(rng, dtype):
    t1, t2 = CUM_Q[-1], CUM_KV[-1]
    q = rng.uniform(-1, 1, (t1, N1, D)).astype(dtype)
    k = rng.uniform(-1, 1, (t2, N2, D)).astype(dtype)
    v = rng.uniform(-1, 1, (t2, N2, DV)).astype(dtype)
    topk = np.empty((t1, N2, COUNT), np.int32)
    t = 0
    for sq, skv in zip(SEQ_Q, SEQ_KV):
        for s in range(sq):
            for h in range(N2):
                # the token's own block first (visible keys), then any blocks (duplicates allowed)
                topk[t, h] = [s // BLOCK] + list(rng.integers(0, skv // BLOCK, COUNT - 1))
            t += 1
    return q, k, v, topk


def report(label, got, ref, dtype):
    o, m, l = got
    ro, rm, rl = (np.asarray(a).astype(np.float64) for a in ref)
    err_o = float(np.abs(o.astype(np.float64) - ro).max())
    tol_o = float(reference.ulp(ro, dtype).max())
    err_s = float(max(np.abs(m - rm).max() / np.abs(rm).max(), np.abs(l - rl).max() / np.abs(rl).max()))
    ok = err_o <= tol_o and err_s <= 1e-5
    print("%-44s out err %.3g (1 ulp: %.3g), stats rel err %.3g  %s"
          % (label, err_o, tol_o, err_s, "ok" if ok else "FAILED"))
    return ok


def main():
    rng = np.random.default_rng(7)
    ok = True

    # 1. one call, float16, causal (sparse_mode 2 + atten_mask)
    q, k, v, topk = make_inputs(rng, np.float16)
    mask = np.ones((2048, 2048), bool)   # only its presence matters
    got = pyaclnn.nsa_selected_attention(q, k, v, topk, atten_mask=mask, sparse_mode=2, **ATTRS)
    ref = reference.nsa_selected_attention_npu(q, k, v, topk, atten_mask=mask, sparse_mode=2, **ATTRS)
    ok &= report("one call, fp16, sparse_mode 2 + atten_mask:", got, ref, np.float16)
    print("  attention_out[0, 0, :4] =", got[0][0, 0, :4], " softmax_max[0, 0] =", got[1][0, 0, 0])

    # 2. two phases, bfloat16, a strided query view, sparse_mode 0
    bf16 = ml_dtypes.bfloat16
    qb, kb, vb, topkb = make_inputs(rng, bf16)
    wide = np.zeros(qb.shape[:2] + (2 * D,), bf16)
    wide[..., ::2] = qb
    q_view = wide[..., ::2]                                  # stride 2 along D
    t1 = qb.shape[0]
    with pyaclnn.Stream() as stream, \
            pyaclnn.Tensor(q_view) as tq, pyaclnn.Tensor(kb) as tk, pyaclnn.Tensor(vb) as tv, \
            pyaclnn.Tensor(topkb) as tt, \
            pyaclnn.Tensor.empty((t1, N1, 8), np.float32) as tmax, \
            pyaclnn.Tensor.empty((t1, N1, 8), np.float32) as tsum, \
            pyaclnn.Tensor.empty((t1, N1, DV), bf16) as tout:
        ws, ex = pyaclnn.aclnnNsaSelectedAttentionGetWorkspaceSize(
            tq, tk, tv, tt, None, CUM_Q, CUM_KV, ATTRS["scale_value"], N1, "TND", 0, BLOCK, COUNT,
            tmax, tsum, tout)
        with pyaclnn.DeviceBuffer(ws) as workspace:
            pyaclnn.aclnnNsaSelectedAttention(workspace, ws, ex, stream)
            stream.synchronize()
        got = (tout.numpy(), tmax.numpy(), tsum.numpy())
    ref = reference.nsa_selected_attention_npu(qb, kb, vb, topkb, sparse_mode=0, **ATTRS)
    ok &= report("two phases, bf16, strided query, sparse_mode 0:", got, ref, bf16)

    # 3. round trip: the forward's outputs into the grad, same arguments
    o, m, l = pyaclnn.nsa_selected_attention(q, k, v, topk, atten_mask=mask, sparse_mode=2, **ATTRS)
    dy = rng.uniform(-1, 1, o.shape).astype(np.float16)
    grad_kw = {kk: vv for kk, vv in ATTRS.items()}
    dq, dk, dv = pyaclnn.nsa_selected_attention_grad(q, k, v, o, dy, m, l, topk, atten_mask=mask,
                                                     sparse_mode=2, out_dtype=np.float32, **grad_kw)
    want = reference.nsa_selected_attention_grad_npu(q, k, v, o, dy, m, l, topk, sparse_mode=2,
                                                     out_dtype=np.float32, **grad_kw)
    errs = [float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip((dq, dk, dv), want)]
    good = max(errs) <= 1e-4
    print("%-44s dq/dk/dv rel err %s  %s" % ("round trip forward -> grad (fp32 grads):",
                                             " ".join("%.2g" % e for e in errs), "ok" if good else "FAILED"))
    ok &= good
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
