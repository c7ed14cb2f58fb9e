"""Numpy references for testing pyaclnn ops.

Most functions define the intended mathematics of each op in float64 (no
emulation of device precision).  Inputs of any dtype (including
ml_dtypes.bfloat16) are converted with ``np.asarray(x).astype(np.float64)``.
The ``*_npu`` functions are float32 goldens of the NPU's precision for the NSA
ops (what pyaclnn computes by default, PYACLNN_NSA_PRECISION=npu).
Also holds the rounding helpers ``round_to``, ``round_half`` and ``ulp``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "scaled_masked_softmax",
    "scaled_masked_softmax_backward",
    "nsa_selected_attention_forward",
    "nsa_selected_attention",
    "nsa_selected_attention_grad",
    "nsa_selected_attention_npu",
    "nsa_selected_attention_grad_npu",
    "round_to",
    "round_half",
    "ulp",
]


def _f64(x):
    return np.asarray(x).astype(np.float64)


# ---------------------------------------------------------------------------
# aclnnScaledMaskedSoftmax
# ---------------------------------------------------------------------------

def _check_mask(m, shape):
    if m.ndim != 4 or m.shape[2:] != tuple(shape[2:]) or any(
            md not in (1, xd) for md, xd in zip(m.shape[:2], shape[:2])):
        raise ValueError(f"mask shape {m.shape} not broadcastable as [B|1,N|1,S1,S2] to {tuple(shape)}")


def scaled_masked_softmax(x, mask, scale=1.0, fix_triu_mask=False, half_scale=None):
    """y = softmax(z) over the last dim in float64, z = x*scale where mask is
    False and -10000 where it is True (any non-zero mask value counts as True).

    The scaled value is formed as the op forms it: ``scale`` is rounded to fp32;
    z = fp32(x * scale) for float32 / bfloat16 inputs. For float16 inputs
    (``half_scale=None`` means "if x is float16"; True / False force it) the
    vendor's kernel multiplies in fp16: the scale is rounded on to fp16 and
    z = fp16(x * scale), which overflows to +-inf. A masked input is replaced,
    never used: NaN / Inf there have no effect. Everything after z is exact
    float64 (max-subtracted exp, sum, divide). A fully masked row is 1/S2.
    mask [B|1, N|1, S1, S2].
    """
    if fix_triu_mask:
        raise ValueError("fix_triu_mask=True is not supported (only False)")
    xa = np.asarray(x)
    if half_scale is None:
        half_scale = xa.dtype == np.float16
    m = np.asarray(mask).astype(bool)
    if xa.ndim != 4:
        raise ValueError(f"x must be 4-D, got {xa.shape}")
    _check_mask(m, xa.shape)
    x32 = xa.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        sc = np.float32(scale)
        if half_scale:
            z = (x32 * np.float32(np.float16(sc))).astype(np.float16)
        else:
            z = x32 * sc
    z = np.where(m, -10000.0, z.astype(np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------------------
# aclnnScaledMaskedSoftmaxBackward
# ---------------------------------------------------------------------------

def scaled_masked_softmax_backward(grad_output, y, mask, scale=1.0, fix_triu_mask=False):
    """out = scale*(g*y - sum(g*y)*y) per row; exactly 0 where mask is True.

    The row sum covers every column, masked or not.  ``scale`` is rounded to
    fp32 first (the op stores it as float).  mask [B|1, N|1, S1, S2].
    """
    if fix_triu_mask:
        raise ValueError("fix_triu_mask=True is not supported (only False)")
    g = _f64(grad_output)
    yy = _f64(y)
    m = np.asarray(mask).astype(bool)
    if g.ndim != 4 or g.shape != yy.shape:
        raise ValueError(f"grad_output/y must be 4-D with equal shapes, got {g.shape}, {yy.shape}")
    if m.ndim != 4 or m.shape[2:] != g.shape[2:] or any(
            md not in (1, gd) for md, gd in zip(m.shape[:2], g.shape[:2])):
        raise ValueError(f"mask shape {m.shape} not broadcastable as [B|1,N|1,S1,S2] to {g.shape}")
    sc = float(np.float32(scale))
    with np.errstate(invalid="ignore", over="ignore"):
        p = g * yy
        s = p.sum(axis=-1, keepdims=True)
        out = sc * (p - s * yy)
    return np.where(m, 0.0, out)


# ---------------------------------------------------------------------------
# NSA selected attention (layout TND)
# ---------------------------------------------------------------------------

def _cumlens(seq, total, name):
    if seq is None:
        return np.array([total], dtype=np.int64)
    c = np.asarray(seq, dtype=np.int64).reshape(-1)
    if c.size == 0 or np.any(c < 0) or np.any(np.diff(c) < 0) or c[-1] != total:
        raise ValueError(f"{name} must be non-decreasing cumulative lengths ending at {total}, got {list(c)}")
    return c


def _nsa_index(T1, T2, N2, topk, block, count, actual_seq_qlen, actual_seq_kvlen, sparse_mode):
    """Return (J [T1,N2,L] global key rows, vis [T1,N2,L] bool)."""
    if sparse_mode not in (0, 2):
        raise ValueError(f"sparse_mode must be 0 or 2, got {sparse_mode}")
    if block < 1 or count < 1:
        raise ValueError("selected_block_size and selected_block_count must be >= 1")
    cq = _cumlens(actual_seq_qlen, T1, "actual_seq_qlen")
    ckv = _cumlens(actual_seq_kvlen, T2, "actual_seq_kvlen")
    if cq.size != ckv.size:
        raise ValueError("actual_seq_qlen and actual_seq_kvlen must have equal length")
    tk = np.asarray(topk)
    if tk.shape != (T1, N2, count):
        raise ValueError(f"topk_indices shape {tk.shape} != {(T1, N2, count)}")
    tk = tk.astype(np.int64)
    qstart = np.concatenate([[0], cq[:-1]])
    kvstart = np.concatenate([[0], ckv[:-1]])
    b = np.searchsorted(cq, np.arange(T1), side="right")
    s = np.arange(T1) - qstart[b]                      # batch-local query position
    kv0 = kvstart[b]
    kvlen = (ckv - kvstart)[b]
    loc = (tk[..., None] * block + np.arange(block)).reshape(T1, N2, count * block)
    if np.any(loc < 0) or np.any(loc >= kvlen[:, None, None]):
        raise ValueError("topk_indices selects keys outside the token's own batch")
    J = loc + kv0[:, None, None]
    if sparse_mode == 2:
        vis = loc <= s[:, None, None]
    else:
        vis = np.ones(loc.shape, dtype=bool)
    return J, vis


def _block_groups(starts, N2, max_rows):
    """Group the (token, i) pairs of starts [n, N2, C] by (block start row, kv head).

    Yields (r0, n2, t, i): every pair in t/i (local token index, slot) selected
    rows r0..r0+B-1 of kv head n2.  Within a group t is non-decreasing.  Large
    groups are split into pieces of at most max_rows pairs.
    """
    key = (starts * N2 + np.arange(N2)[None, :, None]).ravel()
    if key.size == 0:
        return
    order = np.argsort(key, kind="stable")
    sk = key[order]
    t_all, _, i_all = np.unravel_index(order, starts.shape)
    cut = np.flatnonzero(np.diff(sk)) + 1
    for a, b in zip(np.r_[0, cut], np.r_[cut, sk.size]):
        r0, n2 = divmod(int(sk[a]), N2)
        for c in range(a, b, max_rows):
            e = min(b, c + max_rows)
            yield r0, n2, t_all[c:e], i_all[c:e]


def _add_rows(dst, t, n2, val):
    """dst[t, n2] += val, correct when t repeats (same block chosen twice by a token)."""
    if t.size > 1 and np.any(t[1:] == t[:-1]):
        np.add.at(dst, (t, n2), val)
    else:
        dst[t, n2] += val


def _nsa_shapes(q, k, v):
    if q.ndim != 3 or k.ndim != 3 or v.ndim != 3:
        raise ValueError("query/key/value must be 3-D (TND)")
    T1, N1, D = q.shape
    T2, N2, Dk = k.shape
    if Dk != D or v.shape[:2] != (T2, N2) or N2 < 1 or N1 % N2:
        raise ValueError(f"incompatible shapes q{q.shape} k{k.shape} v{v.shape}")
    return T1, N1, D, T2, N2, v.shape[2]


# The computation is organised per selected KV block rather than per token: the
# pairs (token, slot) that chose the same block are gathered (queries are small,
# G x D per pair) and multiplied against the block's B keys in one matmul.  This
# avoids materialising the gathered K/V (L x D per token).

def nsa_selected_attention_forward(query, key, value, topk_indices, *, scale_value,
                                   selected_block_size, selected_block_count,
                                   actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0):
    """Selected-block attention forward (TND).

    Returns (attention_out [T1,N1,Dv], softmax_max [T1,N1,8], softmax_sum [T1,N1,8]).
    Stats are over the visible selected keys (duplicates counted twice).
    A row with no visible key (sparse_mode 2 only) gives out=0, max=0, sum=0.
    """
    q, k, v = _f64(query), _f64(key), _f64(value)
    T1, N1, D, T2, N2, Dv = _nsa_shapes(q, k, v)
    G = N1 // N2
    B, C = int(selected_block_size), int(selected_block_count)
    L = B * C
    scale = float(scale_value)
    J, vis = _nsa_index(T1, T2, N2, topk_indices, B, C, actual_seq_qlen, actual_seq_kvlen, sparse_mode)
    q4 = q.reshape(T1, N2, G, D)
    out = np.zeros((T1, N2, G, Dv))
    mx = np.zeros((T1, N2, G))
    sm = np.zeros((T1, N2, G))
    step = max(1, (1 << 22) // (N1 * L))              # tokens per chunk (bounds S storage)
    max_rows = max(1, 8192 // G)
    for t0 in range(0, T1, step):
        t1 = min(T1, t0 + step)
        n = t1 - t0
        groups = list(_block_groups(J[t0:t1, :, ::B], N2, max_rows))
        S = np.zeros((n, N2, G, C, B))
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            for r0, n2, t, i in groups:
                qg = q4[t0 + t, n2].reshape(-1, D)
                S[t, n2, :, i, :] = (qg @ k[r0:r0 + B, n2].T).reshape(t.size, G, B)
            S = scale * S.reshape(n, N2, G, L)
            vc = np.broadcast_to(vis[t0:t1, :, None, :], S.shape)
            Sm = np.where(vc, S, -np.inf)
            any_vis = vc.any(axis=-1)
            m = np.where(any_vis, Sm.max(axis=-1), 0.0)
            e = np.where(vc, np.exp(Sm - m[..., None]), 0.0)
            l = e.sum(axis=-1)
            P = (e / np.where(l == 0, 1.0, l)[..., None]).reshape(n, N2, G, C, B)
            oc = out[t0:t1]
            for r0, n2, t, i in groups:
                pg = P[t, n2, :, i, :].reshape(-1, B)
                _add_rows(oc, t, n2, (pg @ v[r0:r0 + B, n2]).reshape(t.size, G, Dv))
        mx[t0:t1] = m
        sm[t0:t1] = l
    rep = lambda a: np.ascontiguousarray(np.broadcast_to(a.reshape(T1, N1, 1), (T1, N1, 8)))
    return out.reshape(T1, N1, Dv), rep(mx), rep(sm)


_FLT_MAX = float(np.finfo(np.float32).max)


def nsa_selected_attention(query, key, value, topk_indices, *, scale_value, head_num,
                           selected_block_size, selected_block_count, actual_seq_qlen=None,
                           actual_seq_kvlen=None, atten_mask=None, input_layout="TND", sparse_mode=0):
    """aclnnNsaSelectedAttention exactly as the vendor kernel defines it, in float64.

    Same arguments as pyaclnn.ops.nsa_selected_attention. Differences from
    nsa_selected_attention_forward (the "intended" math):
    - the causal rule (key j visible iff j <= s) applies only with sparse_mode 2
      AND an atten_mask (its values are never read);
    - the scale is rounded to float32, a masked score is fp32(-FLT_MAX * scale)
      and takes part in the softmax over all L gathered columns. So a row with no
      visible key gets uniform P = 1/L over its gathered keys (0 < scale <= 1),
      max = -FLT_MAX*scale and sum = L; NaN for scale > 1 (-inf - -inf).
    Returns (attention_out [T1,N1,Dv], softmax_max, softmax_sum [T1,N1,8]) in float64.
    """
    if input_layout != "TND":
        raise ValueError(f"input_layout must be 'TND', got {input_layout!r}")
    q, k, v = _f64(query), _f64(key), _f64(value)
    T1, N1, D, T2, N2, Dv = _nsa_shapes(q, k, v)
    if int(head_num) != N1:
        raise ValueError(f"head_num {head_num} != query heads {N1}")
    G = N1 // N2
    B, C = int(selected_block_size), int(selected_block_count)
    L = B * C
    sc32 = np.float32(scale_value)
    scale = float(sc32)
    with np.errstate(over="ignore"):
        masked = float(np.float32(-np.finfo(np.float32).max) * sc32)
    causal = sparse_mode == 2 and atten_mask is not None
    J, vis = _nsa_index(T1, T2, N2, topk_indices, B, C, actual_seq_qlen, actual_seq_kvlen,
                        2 if causal else 0)
    if sparse_mode not in (0, 2):
        raise ValueError(f"sparse_mode must be 0 or 2, got {sparse_mode}")
    q4 = q.reshape(T1, N2, G, D)
    out = np.zeros((T1, N2, G, Dv))
    mx = np.zeros((T1, N2, G))
    sm = np.zeros((T1, N2, G))
    step = max(1, (1 << 22) // (N1 * L))
    max_rows = max(1, 8192 // G)
    for t0 in range(0, T1, step):
        t1 = min(T1, t0 + step)
        n = t1 - t0
        groups = list(_block_groups(J[t0:t1, :, ::B], N2, max_rows))
        S = np.zeros((n, N2, G, C, B))
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            for r0, n2, t, i in groups:
                qg = q4[t0 + t, n2].reshape(-1, D)
                S[t, n2, :, i, :] = (qg @ k[r0:r0 + B, n2].T).reshape(t.size, G, B)
            S = scale * S.reshape(n, N2, G, L)
            vc = np.broadcast_to(vis[t0:t1, :, None, :], S.shape)
            Sm = np.where(vc, S, masked)
            m = Sm.max(axis=-1)
            e = np.exp(Sm - m[..., None])
            l = e.sum(axis=-1)
            P = (e / l[..., None]).reshape(n, N2, G, C, B)
            oc = out[t0:t1]
            for r0, n2, t, i in groups:
                pg = P[t, n2, :, i, :].reshape(-1, B)
                vb = v[r0:r0 + B, n2]
                if not np.any(pg):
                    continue                              # masked blocks: exact zeros
                _add_rows(oc, t, n2, (pg @ vb).reshape(t.size, G, Dv))
        mx[t0:t1] = m
        sm[t0:t1] = l
    rep = lambda a: np.ascontiguousarray(np.broadcast_to(a.reshape(T1, N1, 1), (T1, N1, 8)))
    return out.reshape(T1, N1, Dv), rep(mx), rep(sm)


def nsa_selected_attention_grad(query, key, value, attention_out, attention_out_grad,
                                softmax_max, softmax_sum, topk_indices, *, scale_value,
                                selected_block_size, selected_block_count, head_num,
                                actual_seq_qlen=None, actual_seq_kvlen=None, atten_mask=None,
                                input_layout="TND", sparse_mode=0, out_dtype=None):
    """Selected-block attention backward (TND), float64 (dq, dk, dv).

    P = exp(S - softmax_max[...,0]) / softmax_sum[...,0] (not renormalised; 0 when
    masked or when the sum is 0); Dsum = sum(dO*attention_out); dS = P*(dP - Dsum);
    dq = scale*dS K, dk = scale*dS^T q, dv = P^T dO.  atten_mask values and
    out_dtype are ignored.
    """
    del atten_mask, out_dtype
    if input_layout != "TND":
        raise ValueError(f"input_layout must be 'TND', got {input_layout!r}")
    q, k, v = _f64(query), _f64(key), _f64(value)
    o, do = _f64(attention_out), _f64(attention_out_grad)
    T1, N1, D, T2, N2, Dv = _nsa_shapes(q, k, v)
    if int(head_num) != N1:
        raise ValueError(f"head_num {head_num} != query heads {N1}")
    if o.shape != (T1, N1, Dv) or do.shape != (T1, N1, Dv):
        raise ValueError("attention_out/attention_out_grad must be [T1,N1,Dv]")
    smax, ssum = _f64(softmax_max), _f64(softmax_sum)
    for a in (smax, ssum):
        if a.ndim != 3 or a.shape[:2] != (T1, N1) or a.shape[2] < 1:
            raise ValueError("softmax_max/softmax_sum must be [T1,N1,8]")
    G = N1 // N2
    B, C = int(selected_block_size), int(selected_block_count)
    scale = float(scale_value)
    J, vis = _nsa_index(T1, T2, N2, topk_indices, B, C, actual_seq_qlen, actual_seq_kvlen, sparse_mode)
    vis4 = vis.reshape(T1, N2, C, B)
    q4 = q.reshape(T1, N2, G, D)
    do4 = do.reshape(T1, N2, G, Dv)
    m3 = smax[..., 0].reshape(T1, N2, G)
    l3 = ssum[..., 0].reshape(T1, N2, G)
    dq = np.zeros((T1, N2, G, D))
    dk = np.zeros((T2, N2, D))
    dv = np.zeros((T2, N2, Dv))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        dsum = (do * o).sum(axis=-1).reshape(T1, N2, G)
        for r0, n2, t, i in _block_groups(J[:, :, ::B], N2, max(1, 8192 // G)):
            p = t.size
            Kb, Vb = k[r0:r0 + B, n2], v[r0:r0 + B, n2]
            qg = q4[t, n2].reshape(-1, D)                   # [p*G, D]
            dog = do4[t, n2].reshape(-1, Dv)                # [p*G, Dv]
            vg = vis4[t, n2, i][:, None, :]                 # [p, 1, B]
            mg, lg = m3[t, n2][..., None], l3[t, n2][..., None]
            S = scale * (qg @ Kb.T).reshape(p, G, B)
            P = np.where(vg & (lg != 0), np.exp(np.where(vg, S - mg, -np.inf)) / lg, 0.0)
            dP = (dog @ Vb.T).reshape(p, G, B)
            dS = np.where(vg, P * (dP - dsum[t, n2][..., None]), 0.0).reshape(-1, B)
            P = P.reshape(-1, B)
            _add_rows(dq, t, n2, (dS @ Kb).reshape(p, G, D))
            dk[r0:r0 + B, n2] += dS.T @ qg
            dv[r0:r0 + B, n2] += P.T @ dog
        dq *= scale
        dk *= scale
    return dq.reshape(T1, N1, D), dk, dv


# ---------------------------------------------------------------------------
# NSA at the NPU's precision: float32 goldens
# ---------------------------------------------------------------------------

def _half_name(dtype):
    name = np.dtype(dtype).name
    if name not in ("float16", "bfloat16", "float32"):
        raise ValueError(f"unsupported dtype {dtype!r}")
    return name


def round_half(x, dtype, ties="away"):
    """float32 values rounded to float16 / bfloat16 precision (returned as float32).

    ties="away": to nearest, ties away from zero (AscendC CAST_ROUND, what the
    NPU's NSA kernels apply to P and dS); ties="even": to nearest even (torch's
    ``.to()``). Subnormals are kept, overflow gives +-inf, NaN stays NaN. float32:
    unchanged.
    """
    if ties not in ("away", "even"):
        raise ValueError(f"ties must be 'away' or 'even', got {ties!r}")
    name = _half_name(dtype)
    x = np.asarray(x, dtype=np.float32)
    if name == "float32":
        return x.copy()
    if name == "bfloat16":
        # the top 16 bits of a float32: add half of the dropped part to the magnitude
        u = x.view(np.uint32)
        bias = np.uint32(0x8000) if ties == "away" else np.uint32(0x7fff) + ((u >> np.uint32(16)) & np.uint32(1))
        r = ((u + bias) & np.uint32(0xffff0000)).view(np.float32)
        return np.where(np.isnan(x), x, r)
    with np.errstate(over="ignore"):
        r = x.astype(np.float16)                        # to nearest even
    if ties == "away":
        # a tie rounded toward zero moves one step away: |x| - |r| is exact in float32
        fin = np.isfinite(r)
        ar = np.where(fin, np.abs(r), np.float16(0))
        step = np.spacing(ar).astype(np.float32)
        tie = fin & (np.abs(x) - ar.astype(np.float32) == step / 2)
        r = np.where(tie, r + np.copysign(step, x).astype(np.float16), r)
    return r.astype(np.float32)


def _cast_out(x32, dtype, ties):
    """float32 -> dtype, rounded once."""
    name = _half_name(dtype)
    if name == "float32":
        return np.asarray(x32, np.float32)
    r = round_half(x32, dtype, ties)
    if name == "bfloat16":
        import ml_dtypes
        return r.astype(ml_dtypes.bfloat16)          # exact
    return r.astype(np.float16)                        # exact


def _gather_rows(x, J, N2):
    """x [T, N2, W] -> [T1, N2, L, W] rows J [T1, N2, L] of each kv head."""
    return x[J, np.arange(N2)[None, :, None]]


def nsa_selected_attention_npu(query, key, value, topk_indices, *, scale_value, head_num,
                               selected_block_size, selected_block_count, actual_seq_qlen=None,
                               actual_seq_kvlen=None, atten_mask=None, input_layout="TND",
                               sparse_mode=0, ties="away"):
    """aclnnNsaSelectedAttention at the NPU's precision, in float32 (numpy).

    As the vendor's kernel and its test golden: S = q K_J^T in float32, masked keys
    (sparse_mode 2 AND an atten_mask) -FLT_MAX, then S *= scale (float32);
    m = max S, e = exp(S - m), l = sum e, P = e / l rounded to the input dtype
    (ties away from zero as CAST_ROUND; ties="even" as the test golden's ``.to()``),
    O = P V_J accumulated in float32 and rounded once (to nearest even).
    Returns (attention_out in the input dtype, softmax_max, softmax_sum [T1,N1,8] float32).
    """
    if input_layout != "TND":
        raise ValueError(f"input_layout must be 'TND', got {input_layout!r}")
    dt = np.asarray(query).dtype
    q, k, v = (np.asarray(a).astype(np.float32) for a in (query, key, value))
    T1, N1, D, T2, N2, Dv = _nsa_shapes(q, k, v)
    if int(head_num) != N1:
        raise ValueError(f"head_num {head_num} != query heads {N1}")
    G = N1 // N2
    B, C = int(selected_block_size), int(selected_block_count)
    causal = sparse_mode == 2 and atten_mask is not None
    J, vis = _nsa_index(T1, T2, N2, topk_indices, B, C, actual_seq_qlen, actual_seq_kvlen,
                        2 if causal else 0)
    sc = np.float32(scale_value)
    out = np.zeros((T1, N2, G, Dv), np.float32)
    mx = np.zeros((T1, N2, G), np.float32)
    sm = np.zeros((T1, N2, G), np.float32)
    step = max(1, (1 << 21) // (N2 * C * B * max(D, Dv)))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for t0 in range(0, T1, step):
            t1 = min(T1, t0 + step)
            kj = _gather_rows(k, J[t0:t1], N2)                      # [n, N2, L, D]
            vj = _gather_rows(v, J[t0:t1], N2)
            S = np.matmul(q[t0:t1].reshape(-1, N2, G, D), kj.transpose(0, 1, 3, 2))
            S = np.where(vis[t0:t1, :, None, :], S, np.float32(-_FLT_MAX)) * sc
            m = S.max(axis=-1, keepdims=True)
            e = np.exp(S - m)
            l = e.sum(axis=-1, keepdims=True, dtype=np.float32)
            P = round_half(e / l, dt, ties)
            out[t0:t1] = np.matmul(P, vj)
            mx[t0:t1] = m[..., 0]
            sm[t0:t1] = l[..., 0]
    rep = lambda a: np.ascontiguousarray(np.broadcast_to(a.reshape(T1, N1, 1), (T1, N1, 8)))
    return _cast_out(out.reshape(T1, N1, Dv), dt, "even"), rep(mx), rep(sm)


def nsa_selected_attention_grad_npu(query, key, value, attention_out, attention_out_grad,
                                    softmax_max, softmax_sum, topk_indices, *, scale_value,
                                    selected_block_size, selected_block_count, head_num,
                                    actual_seq_qlen=None, actual_seq_kvlen=None, atten_mask=None,
                                    input_layout="TND", sparse_mode=0, out_dtype=None, ties="away"):
    """aclnnNsaSelectedAttentionGrad at the NPU's precision, in float32 (numpy).

    As the vendor's kernels: S = scale * q K_J^T and dP = dO V_J^T in float32;
    P = exp(S - max) / sum from the given stats (0 where masked, sparse_mode 2, or
    where the sum is 0); Dsum = sum(dO * attention_out) (float64, rounded to float32);
    dS = P * (dP - Dsum) from the float32 P; P and dS rounded to the input dtype (ties
    away from zero, CAST_ROUND); dV = P^T dO, dQ = dS K, dK = dS^T q accumulated in
    float32, dQ and dK scaled after accumulation, each rounded once to out_dtype (default:
    the input dtype; ties away from zero, as the vendor's post kernel).
    """
    del atten_mask
    if input_layout != "TND":
        raise ValueError(f"input_layout must be 'TND', got {input_layout!r}")
    dt = np.asarray(query).dtype
    odt = dt if out_dtype is None else np.dtype(out_dtype)
    q, k, v = (np.asarray(a).astype(np.float32) for a in (query, key, value))
    o, do = (np.asarray(a).astype(np.float32) for a in (attention_out, attention_out_grad))
    T1, N1, D, T2, N2, Dv = _nsa_shapes(q, k, v)
    if int(head_num) != N1:
        raise ValueError(f"head_num {head_num} != query heads {N1}")
    G = N1 // N2
    B, C = int(selected_block_size), int(selected_block_count)
    J, vis = _nsa_index(T1, T2, N2, topk_indices, B, C, actual_seq_qlen, actual_seq_kvlen, sparse_mode)
    sc = np.float32(scale_value)
    m = np.asarray(softmax_max, np.float32)[..., 0].reshape(T1, N2, G, 1)
    l = np.asarray(softmax_sum, np.float32)[..., 0].reshape(T1, N2, G, 1)
    dsum = (do.astype(np.float64) * o).sum(-1).astype(np.float32).reshape(T1, N2, G, 1)
    q4, do4 = q.reshape(T1, N2, G, D), do.reshape(T1, N2, G, Dv)
    dq = np.zeros((T1, N2, G, D), np.float32)
    dk = np.zeros((T2, N2, D), np.float32)
    dv = np.zeros((T2, N2, Dv), np.float32)
    heads = np.arange(N2)[:, None]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for t in range(T1):
            kj, vj = k[J[t], heads], v[J[t], heads]                      # [N2, L, D]
            S = np.matmul(q4[t], kj.transpose(0, 2, 1)) * sc             # [N2, G, L]
            w = vis[t][:, None, :] & (l[t] != 0)
            P = np.where(w, np.exp(np.where(w, S - m[t], -np.inf)) / l[t], np.float32(0))
            dP = np.matmul(do4[t], vj.transpose(0, 2, 1))
            dS = np.where(w, P * (dP - dsum[t]), np.float32(0))
            P16, dS16 = round_half(P, dt, ties), round_half(dS, dt, ties)
            dq[t] = np.matmul(dS16, kj)
            gk = np.matmul(dS16.transpose(0, 2, 1), q4[t])               # [N2, L, D]
            gv = np.matmul(P16.transpose(0, 2, 1), do4[t])
            for i in range(C):        # one selected block at a time: its rows are distinct
                cols = slice(i * B, (i + 1) * B)
                rows = (J[t][:, cols], heads)
                dk[rows] += gk[:, cols]
                dv[rows] += gv[:, cols]
        dq, dk = dq * sc, dk * sc
    return (_cast_out(dq.reshape(T1, N1, D), odt, ties), _cast_out(dk, odt, ties),
            _cast_out(dv, odt, ties))


# ---------------------------------------------------------------------------
# Rounding helpers
# ---------------------------------------------------------------------------

# name -> (explicit mantissa bits, min normal exponent, max finite value)
_FMT = {
    "float32": (23, -126, float(np.finfo(np.float32).max)),
    "float16": (10, -14, 65504.0),
    "bfloat16": (7, -126, float.fromhex("0x1.fep127")),
}


def _fmt_name(dtype):
    name = dtype.lower() if isinstance(dtype, str) else np.dtype(dtype).name
    name = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32",
            "float": "float32"}.get(name, name)
    if name not in _FMT:
        raise ValueError(f"unsupported dtype {dtype!r}")
    return name


def _round_exact(x, name):
    """Round float64 values to the format's grid (RNE, one step); returns float64."""
    mant, emin, fmax = _FMT[name]
    x = _f64(x)
    ax = np.abs(x)
    fin = np.isfinite(ax)
    a = np.where(fin, ax, 0.0)
    _, e = np.frexp(a)                                  # a = f*2**e, f in [0.5, 1)
    q = np.ldexp(1.0, np.where(a == 0, emin, np.maximum(e - 1, emin)) - mant)  # spacing at a
    r = np.rint(a / q) * q                              # exact scaling; rint is half-to-even
    r = np.where(r > fmax, np.inf, r)
    r = np.where(fin, r, ax)
    return np.copysign(r, x)


def round_to(x, dtype):
    """Correctly rounded (RNE, directly from float64) conversion to float32/float16/bfloat16.

    Overflow gives +-inf, NaN stays NaN, subnormals handled.  For float32/float16 the
    result equals numpy's astype from float64 (checked in the tests).
    """
    name = _fmt_name(dtype)
    r = _round_exact(x, name)
    if name == "bfloat16":
        import ml_dtypes
        # r is exactly representable in float32 and bfloat16: both casts are exact.
        bits = (r.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        nan = np.isnan(r)
        bits = np.where(nan, (bits | 0x0040).astype(np.uint16), bits)  # keep NaN quiet
        return bits.view(ml_dtypes.bfloat16)
    with np.errstate(over="ignore"):
        return r.astype(np.float32 if name == "float32" else np.float16)


def ulp(x, dtype):
    """Spacing of the dtype's grid at |x|: 2**(E - mant) for |x| in [2**E, 2**(E+1)).

    Zero/subnormal range gives the smallest subnormal spacing; inf -> inf, NaN -> NaN.
    Returns float64.
    """
    mant, emin, _ = _FMT[_fmt_name(dtype)]
    ax = np.abs(_f64(x))
    fin = np.isfinite(ax)
    a = np.where(fin, ax, 0.0)
    _, e = np.frexp(a)
    u = np.ldexp(1.0, np.where(a == 0, emin, np.maximum(e - 1, emin)) - mant)
    return np.where(fin, u, ax)
