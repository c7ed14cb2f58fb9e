"""PyTorch (CPU, float64) oracles for the pyaclnn references.

torch is imported lazily, so this module imports without torch installed.
All functions take numpy (or array-like) inputs and return float64 numpy arrays.
"""

from __future__ import annotations

import numpy as np

_FN = {}


def _torch():
    import torch
    return torch


def _t(x, dtype=None):
    torch = _torch()
    a = np.asarray(x)
    a = a.astype(np.float64) if dtype is None else a.astype(dtype)
    return torch.from_numpy(np.ascontiguousarray(a))


# ---------------------------------------------------------------------------
# scaled masked softmax backward
# ---------------------------------------------------------------------------

def torch_scaled_masked_softmax_backward(grad, y, mask, scale):
    """torch._softmax_backward_data in float64, times fp32(scale), masked_fill(mask, 0)."""
    torch = _torch()
    g, yy = _t(grad), _t(y)
    m = _t(mask, bool)
    r = torch._softmax_backward_data(g, yy, -1, torch.float64) * float(np.float32(scale))
    return r.masked_fill(m, 0.0).numpy()


# ---------------------------------------------------------------------------
# NSA selected attention grad
# ---------------------------------------------------------------------------

def _stats_softmax_fn():
    """autograd.Function: P from scores S with GIVEN stats (m, l).

    Why a custom Function: the op computes P = exp(S - m)/l with m, l taken from
    the forward (constants here), but its backward uses dS = P*(dP - Dsum) with
    Dsum = sum(dO * attention_out) computed from the attention_out INPUT -- the
    full softmax Jacobian with the row sum replaced by that input.  Plain
    autograd through constant stats would give dS = P*dP instead.  Everything
    around it (gathers, matmuls, index scatter-add for dK/dV) is left to autograd.
    """
    if "stats" in _FN:
        return _FN["stats"]
    torch = _torch()

    class StatsSoftmax(torch.autograd.Function):
        @staticmethod
        def forward(ctx, S, m, l, w, dsum):
            # w: visibility (bool) or multiplicity (float) weights, broadcastable to S
            keep = (w != 0) & (l != 0)
            e = torch.exp(torch.where(w != 0, S - m, torch.full_like(S, -torch.inf)))
            P = torch.where(keep, w * e / l, torch.zeros_like(S))
            ctx.save_for_backward(P, w, dsum)
            return P

        @staticmethod
        def backward(ctx, dP):
            P, w, dsum = ctx.saved_tensors
            dS = torch.where(w != 0, P * (dP - dsum), torch.zeros_like(P))
            return dS, None, None, None, None

    _FN["stats"] = StatsSoftmax
    return StatsSoftmax


def _selection(T1, T2, N2, topk, B, C, actual_seq_qlen, actual_seq_kvlen, sparse_mode):
    """Per-token loop: J [T1,N2,C*B] global key rows, vis [T1,N2,C*B] bool."""
    cq = [T1] if actual_seq_qlen is None else [int(x) for x in actual_seq_qlen]
    ckv = [T2] if actual_seq_kvlen is None else [int(x) for x in actual_seq_kvlen]
    assert len(cq) == len(ckv) and cq[-1] == T1 and ckv[-1] == T2
    topk = np.asarray(topk)
    J = np.zeros((T1, N2, C * B), dtype=np.int64)
    vis = np.zeros((T1, N2, C * B), dtype=bool)
    q0 = kv0 = 0
    for qe, kve in zip(cq, ckv):
        for t in range(q0, qe):
            s = t - q0
            for n2 in range(N2):
                col = 0
                for i in range(C):
                    for r in range(B):
                        j = int(topk[t, n2, i]) * B + r          # batch-local key position
                        assert 0 <= j < kve - kv0
                        J[t, n2, col] = kv0 + j
                        vis[t, n2, col] = sparse_mode == 0 or j <= s
                        col += 1
        q0, kv0 = qe, kve
    return J, vis


def torch_nsa_grad(query, key, value, attention_out, attention_out_grad, softmax_max, softmax_sum,
                   topk_indices, *, scale_value, selected_block_size, selected_block_count, head_num,
                   actual_seq_qlen=None, actual_seq_kvlen=None, atten_mask=None, input_layout="TND",
                   sparse_mode=0, out_dtype=None):
    """Gather formulation: K_J, V_J by advanced indexing, autograd does the scatter."""
    torch = _torch()
    q = _t(query).requires_grad_(True)
    k = _t(key).requires_grad_(True)
    v = _t(value).requires_grad_(True)
    T1, N1, D = q.shape
    T2, N2, _ = k.shape
    Dv = v.shape[2]
    G = N1 // N2
    assert head_num == N1 and input_layout == "TND"
    B, C = selected_block_size, selected_block_count
    J, vis = _selection(T1, T2, N2, topk_indices, B, C, actual_seq_qlen, actual_seq_kvlen, sparse_mode)
    Jt = torch.from_numpy(J)
    h2 = torch.arange(N2)[None, :, None]
    Kj = k[Jt, h2]                                      # [T1,N2,L,D]
    Vj = v[Jt, h2]                                      # [T1,N2,L,Dv]
    S = float(scale_value) * (q.view(T1, N2, G, D) @ Kj.transpose(-1, -2))
    m = _t(softmax_max)[..., 0].reshape(T1, N2, G, 1)
    l = _t(softmax_sum)[..., 0].reshape(T1, N2, G, 1)
    dO = _t(attention_out_grad)
    dsum = (dO * _t(attention_out)).sum(-1).reshape(T1, N2, G, 1)
    w = torch.from_numpy(vis)[:, :, None, :]
    P = _stats_softmax_fn().apply(S, m, l, w, dsum)
    out = (P @ Vj).reshape(T1, N1, Dv)
    grads = torch.autograd.grad(out, (q, k, v), grad_outputs=dO, allow_unused=True)
    return tuple((torch.zeros_like(x) if g is None else g).detach().numpy()
                 for g, x in zip(grads, (q, k, v)))


def torch_nsa_grad_dense(query, key, value, attention_out, attention_out_grad, softmax_max,
                         softmax_sum, topk_indices, *, scale_value, selected_block_size,
                         selected_block_count, head_num, actual_seq_qlen=None, actual_seq_kvlen=None,
                         atten_mask=None, input_layout="TND", sparse_mode=0, out_dtype=None):
    """Independent dense formulation: scores against ALL keys, weighted by how many
    times each key is selected (and visible); O(T1*T2) memory, small cases only."""
    torch = _torch()
    q = _t(query).requires_grad_(True)
    k = _t(key).requires_grad_(True)
    v = _t(value).requires_grad_(True)
    T1, N1, D = q.shape
    T2, N2, _ = k.shape
    Dv = v.shape[2]
    G = N1 // N2
    B, C = selected_block_size, selected_block_count
    J, vis = _selection(T1, T2, N2, topk_indices, B, C, actual_seq_qlen, actual_seq_kvlen, sparse_mode)
    W = np.zeros((T1, N2, T2))
    for t in range(T1):
        for n2 in range(N2):
            np.add.at(W[t, n2], J[t, n2][vis[t, n2]], 1.0)
    S = float(scale_value) * torch.einsum("tngd,snd->tngs", q.view(T1, N2, G, D), k)
    m = _t(softmax_max)[..., 0].reshape(T1, N2, G, 1)
    l = _t(softmax_sum)[..., 0].reshape(T1, N2, G, 1)
    dO = _t(attention_out_grad)
    dsum = (dO * _t(attention_out)).sum(-1).reshape(T1, N2, G, 1)
    P = _stats_softmax_fn().apply(S, m, l, _t(W)[:, :, None, :], dsum)
    out = torch.einsum("tngs,snd->tngd", P, v).reshape(T1, N1, Dv)
    grads = torch.autograd.grad(out, (q, k, v), grad_outputs=dO, allow_unused=True)
    return tuple((torch.zeros_like(x) if g is None else g).detach().numpy()
                 for g, x in zip(grads, (q, k, v)))
