"""Backward of NSA selected-block attention with aclnnNsaSelectedAttentionGrad,
from Python (the same problem as the C++ sample, built with numpy).

    python nsa_selected_attention_grad.py

Layout TND: two batches with query lengths 3 and 5 and key/value lengths 128
and 160; N1 = 4 query heads share N2 = 2 key/value heads; D = 192 (query/key) and
Dv = 128 (value); every (token, kv head) selects 4 blocks of 16 keys of its own
batch. The forward pass (attention_out and the softmax statistics the backward
reads) comes from pyaclnn.reference, and the gradients are compared with the
float32 golden of the NPU's precision (pyaclnn.reference.nsa_selected_attention_grad_npu:
P and dS rounded to the input dtype, the default; see PYACLNN_NSA_PRECISION in
docs/environment.md). Two runs:

1. the one-call helper pyaclnn.nsa_selected_attention_grad: float16 inputs,
   float32 gradients, sparse_mode 0 (every selected key visible);
2. the two-phase API on a stream: bfloat16 inputs and gradients, sparse_mode 2
   (a token sees the keys at or before its own position), with a strided query.

Exits non-zero if a call fails or a result is out of tolerance.
"""
import sys

import ml_dtypes
import numpy as np

import pyaclnn
from pyaclnn import reference

SEQ_Q, SEQ_KV = (3, 5), (128, 160)
N1, N2, D, DV = 4, 2, 192, 128
BLOCK, COUNT = 16, 4
SCALE = 1.0 / np.sqrt(D)
CUM_Q = [int(x) for x in np.cumsum(SEQ_Q)]
CUM_KV = [int(x) for x in np.cumsum(SEQ_KV)]


def make_problem(rng, dtype, sparse_mode):
    """Inputs rounded to `dtype`, topk, and a forward pass consistent with them."""
    t1, t2 = CUM_Q[-1], CUM_KV[-1]
    q = rng.uniform(-1, 1, (t1, N1, D)).astype(dtype)
    k = rng.uniform(-1, 1, (t2, N2, D)).astype(dtype)
    v = rng.uniform(-1, 1, (t2, N2, DV)).astype(dtype)
    dy = rng.uniform(-1, 1, (t1, N1, DV)).astype(dtype)
    topk = np.empty((t1, N2, COUNT), np.int32)
    t = 0
    for sq, skv in zip(SEQ_Q, SEQ_KV):
        for s in range(sq):
            for h in range(N2):
                if sparse_mode == 2:
                    # the token's own block first (so some keys are visible), then others
                    others = [b for b in rng.permutation(skv // BLOCK) if b != s // BLOCK]
                    topk[t, h] = [s // BLOCK] + others[:COUNT - 1]
                else:
                    topk[t, h] = rng.permutation(skv // BLOCK)[:COUNT]
            t += 1
    out, smax, ssum = reference.nsa_selected_attention_forward(
        q, k, v, topk, scale_value=SCALE, selected_block_size=BLOCK, selected_block_count=COUNT,
        actual_seq_qlen=CUM_Q, actual_seq_kvlen=CUM_KV, sparse_mode=sparse_mode)
    return dict(query=q, key=k, value=v, attention_out=out.astype(dtype), attention_out_grad=dy,
                softmax_max=smax.astype(np.float32), softmax_sum=ssum.astype(np.float32),
                topk_indices=topk)


def attrs(sparse_mode):
    return dict(scale_value=SCALE, selected_block_size=BLOCK, selected_block_count=COUNT, head_num=N1,
                actual_seq_qlen=CUM_Q, actual_seq_kvlen=CUM_KV, sparse_mode=sparse_mode)


def report(title, got, want, out_dtype):
    """Print the error of each gradient; True if all are within tolerance: 2 ulp of
    the output dtype + 1e-4 of the peak elementwise, except where the golden rounded
    a P or dS term to the other side (it sums in another order, so a term halfway
    between two 16-bit values may round the other way): at most 1% of the elements
    may instead be within the vendor's own rule (op-plugin's assertRtolEqual,
    |error| <= 0.004 or relative error <= 0.004)."""
    print(title)
    ok = True
    for name, g, w in zip(("dq", "dk", "dv"), got, want):
        g, w = g.astype(np.float64), w.astype(np.float64)
        err = np.abs(g - w)
        peak = float(np.abs(w).max())
        tight = err <= 2 * reference.ulp(w, out_dtype) + 1e-4 * peak
        vendor = (err <= 0.004) | (err <= 0.004 * np.maximum(np.abs(g), np.abs(w)))
        good = bool(np.all(tight | vendor) and np.mean(~tight) <= 0.01)
        ok &= good
        print("  %s %-14s max |error| %.3e  max |expected| %.3e  %s"
              % (name, str(g.shape), err.max(), peak, "ok" if good else "MISMATCH"))
    return ok


def one_call(rng):
    x = make_problem(rng, np.float16, sparse_mode=0)
    got = pyaclnn.nsa_selected_attention_grad(**x, **attrs(0), out_dtype=np.float32)
    want = reference.nsa_selected_attention_grad_npu(**x, **attrs(0), out_dtype=np.float32)
    return report("one-call helper: float16 in, float32 out, sparse_mode 0", got, want, np.float32)


def two_phase(rng):
    bf16 = np.dtype(ml_dtypes.bfloat16)
    x = make_problem(rng, bf16, sparse_mode=2)
    # query as a strided view: the first D of 2*D channels of a wider array
    wide = np.zeros(x["query"].shape[:2] + (2 * D,), bf16)
    wide[:, :, :D] = x["query"]
    names = ("query", "key", "value", "attention_out", "attention_out_grad", "softmax_max",
             "softmax_sum", "topk_indices")
    arrays = [wide[:, :, :D]] + [x[n] for n in names[1:]]
    a = attrs(2)
    with pyaclnn.Stream() as stream:
        inputs = [pyaclnn.Tensor(arr) for arr in arrays]
        outputs = [pyaclnn.Tensor.empty(x[n].shape, bf16) for n in ("query", "key", "value")]
        size, executor = pyaclnn.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
            *inputs, a["actual_seq_qlen"], a["actual_seq_kvlen"], None, a["scale_value"],
            a["selected_block_size"], a["selected_block_count"], a["head_num"], "TND",
            a["sparse_mode"], *outputs)
        print("two-phase API: workspace %d bytes" % size)
        workspace = pyaclnn.DeviceBuffer(size) if size else None
        pyaclnn.aclnnNsaSelectedAttentionGrad(workspace, size, executor, stream)
        stream.synchronize()
        got = [t.numpy() for t in outputs]
        for t in inputs + outputs:
            t.close()
        if workspace is not None:
            workspace.close()
    want = reference.nsa_selected_attention_grad_npu(**x, **a)
    return report("two-phase API: bfloat16 in and out, sparse_mode 2, strided query", got, want, bf16)


def main():
    rng = np.random.default_rng(2024)
    ok = one_call(rng)
    ok = two_phase(rng) and ok
    print("result check passed" if ok else "result check FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
