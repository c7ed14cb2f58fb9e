"""The NSA ops at the NPU's precision, in float32 numpy, operation by operation in
the order pyaclnn's kernels use (native/kernels/nsa/nsa.h), so that the results
must be bit-identical to the library's (PYACLNN_NSA_PRECISION=npu, any tier, any
thread count).

It differs from pyaclnn.reference.nsa_selected_attention_npu / _grad_npu (the
vendor-like goldens: np.exp, BLAS matmuls) only where the kernels fix what those
leave to numpy:
- every matrix product is a sequential chain over k (and over blocks / pairs in
  the kernel's order); with 16-bit operands every product is exact in float32, so
  ``acc + a*b`` in float32 is the kernel's fused multiply-add;
- bf16 inputs: the chain of the bf16 dot GEMM (vdpbf16ps): k in pairs, the odd
  element before the even one, results below FLT_MIN flushed to zero (the inputs
  here are normal, so the DAZ half and the underflow boundary never matter);
- exp is the kernels' polynomial (its fused multiply-adds emulated exactly);
- the softmax sum runs over 16 lanes (lane = column mod 16) reduced in a fixed tree.
Small problems only (Python loops over tokens).
"""
import numpy as np

from pyaclnn import reference as R

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)


def fma32(a, b, c):
    """Correctly rounded float32 a*b + c (a*b is exact in float64; the sum's
    float64 rounding error is recovered and breaks float32 ties)."""
    a, b, c = (np.asarray(x, np.float32) for x in (a, b, c))
    p = a.astype(np.float64) * b.astype(np.float64)
    c64 = c.astype(np.float64)
    s = p + c64
    bb = s - p
    err = (p - (s - bb)) + (c64 - bb)
    r = s.astype(np.float32)
    r64 = r.astype(np.float64)
    lo = np.where(r64 > s, np.nextafter(r, np.float32(-np.inf)), r)
    hi = np.where(r64 > s, r, np.nextafter(r, np.float32(np.inf)))
    mid = (lo.astype(np.float64) + hi.astype(np.float64)) / 2
    tie = (s == mid) & (r64 != s)
    return np.where(tie & (err > 0), hi, np.where(tie & (err < 0), lo, r)).astype(np.float32)


def exp_ref(x0):
    """The kernels' fp32 exp (nsa_scalar.c exp_ref)."""
    x0 = np.asarray(x0, np.float32)
    hi = F32(88.72283935546875)
    with np.errstate(invalid="ignore", over="ignore"):
        x = np.where(hi < x0, hi, x0)
        x = np.where(F32(-104.0) > x, F32(-104.0), x).astype(np.float32)
        n = np.rint(x * F32(1.44269504088896341)).astype(np.float32)
        r = fma32(-n, F32(0.693359375), x)
        r = fma32(-n, F32(-2.12194440e-4), r)
        p = np.full_like(x, F32(1.9875691500e-4))
        for c in (1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1):
            p = fma32(p, r, F32(c))
        r2 = r * r
        p = fma32(p, r2, r + F32(1.0))
        ni = np.where(np.isnan(n), 0, n).astype(np.int32)
        n1 = np.floor_divide(ni, 2)
        n2 = ni - n1
        f1 = ((n1 + 127).astype(np.uint32) << 23).view(np.float32)
        f2 = ((n2 + 127).astype(np.uint32) << 23).view(np.float32)
        y = (p * f1) * f2
    y = np.where(x0 > hi, F32(np.inf), y)
    return np.where(np.isnan(x0), x0, y).astype(np.float32)


def lane_sum(e):
    """Sum over the last axis as the kernels' expsum: 16 lanes, lane j = columns
    j, j+16, ... added in order, then lanes j + 8, j + 4, j + 2, j + 1."""
    n = e.shape[-1]
    pad = (-n) % 16
    e = np.concatenate([e, np.zeros(e.shape[:-1] + (pad,), np.float32)], -1) if pad else e
    e = e.reshape(e.shape[:-1] + (-1, 16))
    acc = np.zeros(e.shape[:-2] + (16,), np.float32)
    for j in range(e.shape[-2]):
        acc = acc + e[..., j, :]
    for w in (8, 4, 2, 1):
        acc = acc[..., :w] + acc[..., w:2 * w]
    return acc[..., 0]


def chain(a, b):
    """C = A B as one float32 chain over k per element: a [..., M, K], b [..., K, N]
    (products exact: 16-bit operands)."""
    c = np.zeros(a.shape[:-1] + b.shape[-1:], np.float32)
    for k in range(a.shape[-1]):
        c = c + a[..., k:k + 1] * b[..., k:k + 1, :]
    return c


TINY = np.float32(np.finfo(np.float32).tiny)


def ftz(c):
    """float32 results below FLT_MIN become zeros of their sign (x86 FTZ)."""
    return np.where(np.abs(c) < TINY, np.copysign(np.float32(0), c), c).astype(np.float32)


def pair_order(k):
    """The k order of the bf16 dot GEMM: pairs (2j, 2j+1), the odd element first
    (a missing odd element of the last pair adds nothing)."""
    order = []
    for j in range(0, k, 2):
        order += ([j + 1] if j + 1 < k else []) + [j]
    return order


def chain_dot(a, b, panel=None):
    """C = A B as the bf16 dot GEMM's chain: a [..., M, K], b [..., K, N]; k is cut
    into panels of `panel` (the key blocks), each taken in pairs from its start."""
    K = a.shape[-1]
    panel = K if panel is None else panel
    c = np.zeros(a.shape[:-1] + b.shape[-1:], np.float32)
    for p0 in range(0, K, panel):
        for k in pair_order(min(panel, K - p0)):
            k += p0
            c = ftz(c + a[..., k:k + 1] * b[..., k:k + 1, :])
    return c


def chain_for(dt, panel=None):
    """The product chain of the NPU precision for input dtype dt (panels: see chain_dot)."""
    if np.dtype(dt).name == "bfloat16":
        return lambda a, b: chain_dot(a, b, panel)
    return chain


def rnd(x, dt):
    return R.round_half(x, dt, "away")


def _index(q, k, topk, kw, causal):
    T1, N1, D = q.shape
    T2, N2, _ = k.shape
    B, C = kw["selected_block_size"], kw["selected_block_count"]
    J, vis = R._nsa_index(T1, T2, N2, topk, B, C, kw.get("actual_seq_qlen"), kw.get("actual_seq_kvlen"),
                          2 if causal else 0)
    return J.reshape(T1, N2, C, B), vis.reshape(T1, N2, C, B)


def forward(query, key, value, topk, **kw):
    """(attention_out, softmax_max, softmax_sum) as aclnnNsaSelectedAttention computes them."""
    dt = np.asarray(query).dtype
    q, k, v = (np.asarray(a).astype(np.float32) for a in (query, key, value))
    T1, N1, D = q.shape
    T2, N2, Dv = v.shape
    G = N1 // N2
    B, C = kw["selected_block_size"], kw["selected_block_count"]
    sc = F32(kw["scale_value"])
    causal = kw.get("sparse_mode", 0) == 2 and kw.get("atten_mask") is not None
    mm, mmb = chain_for(dt), chain_for(dt, B)        # over D; over the C*B gathered keys
    J, vis = _index(q, k, topk, kw, causal)
    mv = F32(-FLT_MAX) * sc
    heads = np.arange(N2)[:, None, None]
    out = np.zeros((T1, N1, Dv), dt)
    smax = np.zeros((T1, N1, 8), np.float32)
    ssum = np.zeros((T1, N1, 8), np.float32)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for t in range(T1):                                                 # kv heads side by side
            qg = q[t].reshape(N2, 1, G, D)
            kj, vj = k[J[t], heads], v[J[t], heads]                          # [N2, C, B, D|Dv]
            vt = vis[t]                                                      # [N2, C, B]
            nvis = vt.sum(-1)                                                # [N2, C]
            x = mm(qg, kj.transpose(0, 1, 3, 2)) * sc                     # [N2, C, G, B]
            vm = vt[:, :, None, :]
            m = np.where(vm, x, -np.inf).max(axis=(1, 3)).astype(np.float32)  # [N2, G]
            m = np.where(np.isnan(np.where(vm, x, 0)).any(axis=(1, 3)), np.nan, m).astype(np.float32)
            nmask = (~vt).sum(axis=(1, 2))[:, None]                          # [N2, 1]
            m = np.where((nmask > 0) & ((mv > m) | np.isnan(F32(mv))), mv, m).astype(np.float32)
            w = np.where(nmask > 0, exp_ref(F32(1.0) * mv - m), 0).astype(np.float32)
            e = np.where(vm, exp_ref(x - m[:, None, :, None]), 0).astype(np.float32)
            l = np.zeros((N2, G), np.float32)
            for i in range(C):
                l = l + np.where(nvis[:, i:i + 1] > 0, lane_sum(e[:, i]), 0).astype(np.float32)
            l = np.where(nmask > 0, l + nmask.astype(np.float32) * w, l).astype(np.float32)
            dense = np.any(w != 0, axis=1)                                   # [N2]
            P = np.where(vm, e, w[:, None, :, None]).astype(np.float32)
            keep = (nvis > 0) | dense[:, None]
            P = np.where(keep[:, :, None, None], rnd(P / l[:, None, :, None], dt), 0).astype(np.float32)
            o = mmb(P.transpose(0, 2, 1, 3).reshape(N2, G, C * B), vj.reshape(N2, C * B, Dv))
            out[t] = R._cast_out(o.reshape(N1, Dv), dt, "even")
            smax[t] = m.reshape(N1, 1)
            ssum[t] = l.reshape(N1, 1)
    return out, smax, ssum


def grad(query, key, value, attention_out, attention_out_grad, softmax_max, softmax_sum, topk, *,
         out_dtype=None, **kw):
    """(dq, dk, dv) as aclnnNsaSelectedAttentionGrad computes them."""
    dt = np.asarray(query).dtype
    odt = dt if out_dtype is None else np.dtype(out_dtype)
    q, k, v, o, do = (np.asarray(a).astype(np.float32) for a in
                      (query, key, value, attention_out, attention_out_grad))
    T1, N1, D = q.shape
    T2, N2, Dv = v.shape
    G = N1 // N2
    B, C = kw["selected_block_size"], kw["selected_block_count"]
    sc = F32(kw["scale_value"])
    J, vis = _index(q, k, topk, kw, kw.get("sparse_mode", 0) == 2)
    mm, mmb = chain_for(dt), chain_for(dt, B)
    dot = np.dtype(dt).name == "bfloat16"
    g_order = pair_order(G) if dot else range(G)      # dk, dv: a chain over g per pair
    fl = ftz if dot else (lambda c: c)
    mx = np.asarray(softmax_max, np.float32)[..., 0].reshape(T1, N2, 1, G, 1)
    sm = np.asarray(softmax_sum, np.float32)[..., 0].reshape(T1, N2, 1, G, 1)
    dsum = np.zeros((T1, N1), np.float64)
    for d in range(Dv):
        dsum = dsum + do[..., d].astype(np.float64) * o[..., d].astype(np.float64)
    dsum = dsum.astype(np.float32).reshape(T1, N2, 1, G, 1)
    q4, do4 = q.reshape(T1, N2, G, D), do.reshape(T1, N2, G, Dv)
    heads = np.arange(N2)
    dq = np.zeros((T1, N2, G, D), np.float32)
    dk = np.zeros((T2, N2, D), np.float32)
    dv = np.zeros((T2, N2, Dv), np.float32)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for t in range(T1):                                                 # kv heads side by side
            kj, vj = k[J[t], heads[:, None, None]], v[J[t], heads[:, None, None]]   # [N2, C, B, D|Dv]
            S = mm(q4[t][:, None], kj.transpose(0, 1, 3, 2))                        # [N2, C, G, B]
            dP = mm(do4[t][:, None], vj.transpose(0, 1, 3, 2))
            ok = vis[t][:, :, None, :] & (sm[t] != 0)
            p = exp_ref(S * sc - mx[t]) / sm[t]
            ds = p * (dP - dsum[t])
            P16 = np.where(ok, rnd(p, dt), 0).astype(np.float32)
            dS16 = np.where(ok, rnd(ds, dt), 0).astype(np.float32)
            dq[t] = mmb(dS16.transpose(0, 2, 1, 3).reshape(N2, G, C * B), kj.reshape(N2, C * B, D))
            for i in range(C):                 # pairs in (t, i) order; a skipped pair adds exact zeros
                rows = (J[t, :, i], heads[:, None])                                  # [N2, B]
                for g in g_order:
                    dk[rows] = fl(dk[rows] + dS16[:, i, g][..., None] * q4[t, :, g][:, None, :])
                    dv[rows] = fl(dv[rows] + P16[:, i, g][..., None] * do4[t, :, g][:, None, :])
        dq, dk = dq * sc, dk * sc
    return (R._cast_out(dq.reshape(T1, N1, D), odt, "away"), R._cast_out(dk, odt, "away"),
            R._cast_out(dv, odt, "away"))
