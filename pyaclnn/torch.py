"""PyTorch drop-ins for torch_npu's fused operators, on CPU tensors.

    import torch, pyaclnn.torch as pt
    y = pt.npu_scaled_masked_softmax(x, mask, scale=0.125)   # like torch_npu.npu_scaled_masked_softmax
    y.sum().backward()                                       # through aclnnScaledMaskedSoftmaxBackward

Optional: this module needs torch (``pip install "pyaclnn[torch]"``); ``import
pyaclnn`` never imports it. Tensors must live on the CPU; float32, float16 and
bfloat16 are handed to the operators without a host copy (a numpy view of the
tensor's memory; bfloat16 through an int16 view), whatever their strides.
"""
import threading
import warnings

import ml_dtypes
import numpy as np
import torch

from . import ops

__all__ = ["npu_scaled_masked_softmax", "npu_scaled_masked_softmax_backward", "npu_nsa_select_attention",
           "npu_nsa_select_attention_grad"]

_BF16 = np.dtype(ml_dtypes.bfloat16)
_FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def _as_numpy(t, name):
    """A numpy view of a CPU tensor's memory (no copy)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
    if t.device.type != "cpu":
        raise ValueError("%s must be a CPU tensor, got device %s" % (name, t.device))
    t = t.detach().resolve_conj().resolve_neg()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(_BF16)
    return t.numpy()


def _as_tensor(a):
    """A torch tensor over a numpy array's memory (no copy)."""
    if a.dtype == _BF16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _float_input(t, name):
    if isinstance(t, torch.Tensor) and t.dtype not in _FLOATS:
        raise TypeError("%s dtype must be float32, float16 or bfloat16, got %s" % (name, t.dtype))
    return _as_numpy(t, name)


def _bool_mask(mask):
    if isinstance(mask, torch.Tensor) and mask.dtype != torch.bool:
        mask = mask != 0  # torch_npu wants bool; other dtypes: non-zero = masked
    return mask


def _scalar(v):
    return float(v.item() if isinstance(v, torch.Tensor) else v)


def _triu_mask(mask):
    """fixed_triu_mask=True: the mask's contents are replaced by triu(ones(mask.shape),
    diagonal=1) (True above the diagonal of every [S1, S2] matrix), as the NPU's
    ScaledMaskedSoftmax op and torch_npu do."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError("mask must be a torch.Tensor, got %s" % type(mask).__name__)
    return torch.triu(torch.ones(mask.shape, dtype=torch.bool), diagonal=1)


# ---------------------------------------------------------------- scaled masked softmax

class _ScaledMaskedSoftmax(torch.autograd.Function):
    """Forward: aclnnScaledMaskedSoftmax. Backward: aclnnScaledMaskedSoftmaxBackward
    on the forward's y, which is the gradient of the forward that ran:
      * unmasked x_i: scale * (g_i*y_i - y_i * sum_j g_j*y_j), the sum over the whole
        row (masked y_j are 0 in partly masked rows, up to exp underflow);
      * masked x_i: 0 (the input was replaced by -10000, it does not reach y);
      * a fully masked row: 0 everywhere, although y is 1/S2 there (y does not
        depend on x at all).
    That is torch autograd's gradient of
    ``torch.softmax((x*scale).masked_fill(mask, -10000), -1)`` evaluated at this y.
    (fp16: the forward multiplies by the fp16-rounded scale and rounds x*scale to
    fp16; the backward treats that rounding as identity and uses the fp32 scale.)"""

    @staticmethod
    def forward(ctx, x, mask, scale, fixed_triu_mask):
        mask = _triu_mask(mask) if fixed_triu_mask else _bool_mask(mask)
        y = _as_tensor(ops.scaled_masked_softmax(_float_input(x, "x"), _as_numpy(mask, "mask"), scale))
        ctx.save_for_backward(y, mask)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, grad):
        y, mask = ctx.saved_tensors
        if grad.dtype != y.dtype:
            grad = grad.to(y.dtype)
        dx = ops.scaled_masked_softmax_backward(_as_numpy(grad, "grad"), _as_numpy(y, "y"),
                                                _as_numpy(mask, "mask"), ctx.scale)
        return _as_tensor(dx), None, None, None


def npu_scaled_masked_softmax(x, mask, scale=1, fixed_triu_mask=False):
    """torch_npu.npu_scaled_masked_softmax on the CPU (aclnnScaledMaskedSoftmax).

    x: [B, N, S1, S2] float32 / float16 / bfloat16 CPU tensor, S2 <= 4096.
    mask: bool [B|1, N|1, S1, S2], True = masked (the position takes -10000 after
    scaling). Returns y = softmax(z, -1) of x's dtype; differentiable in x.
    fixed_triu_mask=True ignores the mask's contents and masks triu(ones(mask.shape),
    diagonal=1) instead (causal), as torch_npu does on Atlas A2/A3 through the
    ScaledMaskedSoftmax op (the aclnn API itself accepts only False).
    """
    return _ScaledMaskedSoftmax.apply(x, mask, _scalar(scale), bool(fixed_triu_mask))


def npu_scaled_masked_softmax_backward(y_grad, y, mask, scale=1, fixed_triu_mask=False):
    """torch_npu.npu_scaled_masked_softmax_backward on the CPU
    (aclnnScaledMaskedSoftmaxBackward): mask ? 0 : scale * (g*y - sum(g*y) * y);
    fixed_triu_mask=True uses triu(ones(mask.shape), diagonal=1) as the mask."""
    m = _as_numpy(_triu_mask(mask) if fixed_triu_mask else _bool_mask(mask), "mask")
    return _as_tensor(ops.scaled_masked_softmax_backward(_float_input(y_grad, "y_grad"), _float_input(y, "y"),
                                                         m, _scalar(scale)))


# ---------------------------------------------------------------- NSA selected attention

def _opt_numpy(t, name):
    return None if t is None else _as_numpy(t, name)


def _int_list(v):
    if v is None:
        return None
    if isinstance(v, torch.Tensor):
        v = v.tolist()
    return [int(x) for x in v]


_CAUSAL_GRAD_WARNED = False
_CAUSAL_GRAD_LOCK = threading.Lock()


def _warn_causal_grad_once():
    global _CAUSAL_GRAD_WARNED
    with _CAUSAL_GRAD_LOCK:
        if _CAUSAL_GRAD_WARNED:
            return
        _CAUSAL_GRAD_WARNED = True
    warnings.warn(
        "npu_nsa_select_attention with atten_mask=None: the forward ran unmasked (the NPU's "
        "kernel masks only with sparse_mode 2 AND a mask), but the gradients are computed "
        "causally (sparse_mode 2), exactly as torch_npu does, so they are not the gradients "
        "of that forward. Pass atten_mask (any 2-D bool tensor, e.g. torch.ones(2048, 2048, "
        "dtype=torch.bool); its values are never read) for a causal forward, or exact_grad=True "
        "for the gradients of the unmasked forward.", RuntimeWarning, stacklevel=3)


def _nsa_grad(grad, query, key, value, out, smax, ssum, topk, scale, head_num, block, count, mask, seq_q,
              seq_kv, sparse_mode):
    return ops.nsa_selected_attention_grad(
        _as_numpy(query, "query"), _as_numpy(key, "key"), _as_numpy(value, "value"),
        _as_numpy(out, "attention_out"), _as_numpy(grad, "grad"), _as_numpy(smax, "softmax_max"),
        _as_numpy(ssum, "softmax_sum"), _as_numpy(topk, "topk_indices"), scale_value=scale,
        selected_block_size=block, selected_block_count=count, head_num=head_num,
        actual_seq_qlen=seq_q, actual_seq_kvlen=seq_kv, atten_mask=_opt_numpy(mask, "atten_mask"),
        sparse_mode=sparse_mode)


class _NsaSelectAttention(torch.autograd.Function):
    """Forward: aclnnNsaSelectedAttention with sparseMode 2, as torch_npu (causal only
    when atten_mask is given: the vendor forward ignores sparseMode 2 without a mask).
    Backward: aclnnNsaSelectedAttentionGrad with sparseMode 2 and the same mask, as
    torch_npu (its grad masks causally with or without a mask); with exact_grad, the
    mask rule of the forward that ran instead (sparseMode 0 without a mask)."""

    @staticmethod
    def forward(ctx, query, key, value, topk, scale, head_num, block, count, mask, seq_q, seq_kv, exact_grad):
        q = _float_input(query, "query")
        k = _float_input(key, "key")
        v = _float_input(value, "value")
        tk = _as_numpy(topk, "topk_indices")
        m = _opt_numpy(mask, "atten_mask")
        o, smax, ssum = ops.nsa_selected_attention(
            q, k, v, tk, scale_value=scale, head_num=head_num, selected_block_size=block,
            selected_block_count=count, actual_seq_qlen=seq_q, actual_seq_kvlen=seq_kv, atten_mask=m,
            sparse_mode=2)
        out, smax, ssum = _as_tensor(o), _as_tensor(smax), _as_tensor(ssum)
        ctx.save_for_backward(query, key, value, topk, out, smax, ssum,
                              mask if mask is not None else torch.empty(0))
        ctx.attrs = (scale, head_num, block, count, mask is not None, seq_q, seq_kv, exact_grad)
        ctx.mark_non_differentiable(smax, ssum)
        return out, smax, ssum

    @staticmethod
    def backward(ctx, d_out, _d_max, _d_sum):
        query, key, value, topk, out, smax, ssum, mask = ctx.saved_tensors
        scale, head_num, block, count, has_mask, seq_q, seq_kv, exact_grad = ctx.attrs
        if d_out is None:
            d_out = torch.zeros_like(out)
        elif d_out.dtype != out.dtype:
            d_out = d_out.to(out.dtype)
        sparse_mode = 0 if exact_grad and not has_mask else 2
        dq, dk, dv = _nsa_grad(d_out, query, key, value, out, smax, ssum, topk, scale, head_num, block, count,
                               mask if has_mask else None, seq_q, seq_kv, sparse_mode)
        return (_as_tensor(dq), _as_tensor(dk), _as_tensor(dv)) + (None,) * 9


def _check_nsa_inputs(**tensors):
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor) or t.dtype not in (torch.float16, torch.bfloat16):
            raise TypeError("%s must be a float16 or bfloat16 torch.Tensor" % name)


def _nsa_mask(atten_mask):
    if atten_mask is not None and atten_mask.dtype not in (torch.bool, torch.uint8):
        atten_mask = atten_mask != 0
    return atten_mask


def npu_nsa_select_attention(query, key, value, topk_indices, scale_value, head_num, select_block_size,
                             select_block_count, *, atten_mask=None, actual_seq_qlen=None,
                             actual_seq_kvlen=None, exact_grad=False):
    """torch_npu.npu_nsa_select_attention on the CPU (aclnnNsaSelectedAttention, layout TND,
    sparse_mode 2 as torch_npu). Returns (attention_out, softmax_max, softmax_sum);
    attention_out is differentiable in query, key and value.

    query [T1, N1, D], key [T2, N2, D], value [T2, N2, Dv] (float16 or bfloat16 CPU tensors),
    topk_indices int32 [T1, N2, select_block_count]; actual_seq_qlen / actual_seq_kvlen:
    cumulative lengths (default: one batch; torch_npu requires them).

    As on the NPU, the forward is causal only with an atten_mask (its values are never
    read), while the backward is always causal (sparse_mode 2), as torch_npu's: with
    atten_mask=None the gradients are not those of the forward that ran, and a
    RuntimeWarning says so once per process. exact_grad=True (keyword only, not in
    torch_npu) gives the gradients of the forward that ran instead (sparse_mode 0 in the
    backward when there is no mask). One exception either way: a row with no visible key
    (causal, every selected block after the token) gets the vendor's uniform forward, but
    the grad kernel treats its P as 0, so value receives no gradient from it.
    """
    _check_nsa_inputs(query=query, key=key, value=value)
    atten_mask = _nsa_mask(atten_mask)
    exact_grad = bool(exact_grad)
    if (atten_mask is None and not exact_grad and torch.is_grad_enabled()
            and any(t.requires_grad for t in (query, key, value))):
        _warn_causal_grad_once()
    return _NsaSelectAttention.apply(query, key, value, topk_indices, float(scale_value), int(head_num),
                                     int(select_block_size), int(select_block_count), atten_mask,
                                     _int_list(actual_seq_qlen), _int_list(actual_seq_kvlen), exact_grad)


def npu_nsa_select_attention_grad(grad, query, key, value, attention_out, softmax_max, softmax_sum, topk_indices,
                                  scale_value, head_num, select_block_size, select_block_count, *, atten_mask=None,
                                  actual_seq_qlen=None, actual_seq_kvlen=None):
    """torch_npu.npu_nsa_select_attention_grad on the CPU (aclnnNsaSelectedAttentionGrad,
    layout TND, sparse_mode 2 as torch_npu: causal, whether or not atten_mask is given).
    Returns (query_grad, key_grad, value_grad) shaped and typed like query, key and value.

    grad and attention_out [T1, N1, Dv] of query's dtype; softmax_max / softmax_sum float32
    [T1, N1, 8] from the forward; the other arguments as npu_nsa_select_attention's."""
    _check_nsa_inputs(grad=grad, query=query, key=key, value=value, attention_out=attention_out)
    for name, t in (("softmax_max", softmax_max), ("softmax_sum", softmax_sum)):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
            raise TypeError("%s must be a float32 torch.Tensor" % name)
    dq, dk, dv = _nsa_grad(grad, query, key, value, attention_out, softmax_max, softmax_sum, topk_indices,
                           float(scale_value), int(head_num), int(select_block_size), int(select_block_count),
                           _nsa_mask(atten_mask), _int_list(actual_seq_qlen), _int_list(actual_seq_kvlen), 2)
    return _as_tensor(dq), _as_tensor(dk), _as_tensor(dv)
