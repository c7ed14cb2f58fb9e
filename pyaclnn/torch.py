"""PyTorch drop-ins for torch_npu's fused operators, on CPU tensors.

    import torch, pyaclnn.torch as pt
    y = pt.npu_scaled_masked_softmax(x, mask, scale=0.125)   # like torch_npu.npu_scaled_masked_softmax
    y.sum().backward()                                       # through aclnnScaledMaskedSoftmaxBackward

Optional: this module needs torch (``pip install "pyaclnn[torch]"``); ``import
pyaclnn`` never imports it. Tensors must live on the CPU; float32, float16 and
bfloat16 are handed to the operators without a host copy (a numpy view of the
tensor's memory; bfloat16 through an int16 view), whatever their strides.
"""
import ml_dtypes
import numpy as np
import torch

from . import ops

__all__ = ["npu_scaled_masked_softmax", "npu_scaled_masked_softmax_backward", "npu_nsa_select_attention"]

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
        mask = _bool_mask(mask)
        y = _as_tensor(ops.scaled_masked_softmax(_float_input(x, "x"), _as_numpy(mask, "mask"), scale,
                                                 fixed_triu_mask))
        ctx.save_for_backward(y, mask)
        ctx.scale = scale
        ctx.fixed_triu_mask = fixed_triu_mask
        return y

    @staticmethod
    def backward(ctx, grad):
        y, mask = ctx.saved_tensors
        if grad.dtype != y.dtype:
            grad = grad.to(y.dtype)
        dx = ops.scaled_masked_softmax_backward(_as_numpy(grad, "grad"), _as_numpy(y, "y"),
                                                _as_numpy(mask, "mask"), ctx.scale, ctx.fixed_triu_mask)
        return _as_tensor(dx), None, None, None


def npu_scaled_masked_softmax(x, mask, scale=1, fixed_triu_mask=False):
    """torch_npu.npu_scaled_masked_softmax on the CPU (aclnnScaledMaskedSoftmax).

    x: [B, N, S1, S2] float32 / float16 / bfloat16 CPU tensor, S2 <= 4096.
    mask: bool [B|1, N|1, S1, S2], True = masked (the position takes -10000 after
    scaling). Returns y = softmax(z, -1) of x's dtype; differentiable in x.
    fixed_triu_mask must be False (as in the aclnn API).
    """
    return _ScaledMaskedSoftmax.apply(x, mask, _scalar(scale), bool(fixed_triu_mask))


def npu_scaled_masked_softmax_backward(y_grad, y, mask, scale=1, fixed_triu_mask=False):
    """torch_npu.npu_scaled_masked_softmax_backward on the CPU
    (aclnnScaledMaskedSoftmaxBackward): mask ? 0 : scale * (g*y - sum(g*y) * y)."""
    m = _as_numpy(_bool_mask(mask), "mask")
    return _as_tensor(ops.scaled_masked_softmax_backward(_float_input(y_grad, "y_grad"), _float_input(y, "y"),
                                                         m, _scalar(scale), bool(fixed_triu_mask)))


# ---------------------------------------------------------------- NSA selected attention

def _opt_numpy(t, name):
    return None if t is None else _as_numpy(t, name)


def _int_list(v):
    if v is None:
        return None
    if isinstance(v, torch.Tensor):
        v = v.tolist()
    return [int(x) for x in v]


class _NsaSelectAttention(torch.autograd.Function):
    """Forward: aclnnNsaSelectedAttention with sparseMode 2, as torch_npu (causal only
    when atten_mask is given: the vendor forward ignores sparseMode 2 without a mask).
    Backward: aclnnNsaSelectedAttentionGrad with the mask rule of the forward that ran:
    sparseMode 2 with the mask when one was given, else sparseMode 0 (torch_npu passes
    sparseMode 2 to its backward as well, which then masks causally: its gradients are
    not those of its unmasked forward)."""

    @staticmethod
    def forward(ctx, query, key, value, topk, scale, head_num, block, count, mask, seq_q, seq_kv):
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
        ctx.attrs = (scale, head_num, block, count, mask is not None, seq_q, seq_kv)
        ctx.mark_non_differentiable(smax, ssum)
        return out, smax, ssum

    @staticmethod
    def backward(ctx, d_out, _d_max, _d_sum):
        query, key, value, topk, out, smax, ssum, mask = ctx.saved_tensors
        scale, head_num, block, count, has_mask, seq_q, seq_kv = ctx.attrs
        if d_out is None:
            d_out = torch.zeros_like(out)
        elif d_out.dtype != out.dtype:
            d_out = d_out.to(out.dtype)
        dq, dk, dv = ops.nsa_selected_attention_grad(
            _as_numpy(query, "query"), _as_numpy(key, "key"), _as_numpy(value, "value"),
            _as_numpy(out, "attention_out"), _as_numpy(d_out, "grad"), _as_numpy(smax, "softmax_max"),
            _as_numpy(ssum, "softmax_sum"), _as_numpy(topk, "topk_indices"), scale_value=scale,
            selected_block_size=block, selected_block_count=count, head_num=head_num,
            actual_seq_qlen=seq_q, actual_seq_kvlen=seq_kv,
            atten_mask=_as_numpy(mask, "atten_mask") if has_mask else None,
            sparse_mode=2 if has_mask else 0)
        return _as_tensor(dq), _as_tensor(dk), _as_tensor(dv), None, None, None, None, None, None, None, None


def npu_nsa_select_attention(query, key, value, topk_indices, scale_value, head_num, select_block_size,
                             select_block_count, *, atten_mask=None, actual_seq_qlen=None,
                             actual_seq_kvlen=None):
    """torch_npu.npu_nsa_select_attention on the CPU (aclnnNsaSelectedAttention, layout TND,
    sparse_mode 2 as torch_npu). Returns (attention_out, softmax_max, softmax_sum);
    attention_out is differentiable in query, key and value.

    query [T1, N1, D], key [T2, N2, D], value [T2, N2, Dv] (float16 or bfloat16 CPU tensors),
    topk_indices int32 [T1, N2, select_block_count]; actual_seq_qlen / actual_seq_kvlen:
    cumulative lengths (default: one batch). As on the NPU, the forward is causal only
    with an atten_mask (its values are never read). Unlike torch_npu, the backward uses the
    same rule as the forward (causal with a mask, unmasked without), so the gradients are
    those of the forward that ran. One exception: a row with no visible key (causal, every
    selected block after the token) gets the vendor's uniform forward, but the grad
    kernel treats its P as 0, so value receives no gradient from it.
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor) or t.dtype not in (torch.float16, torch.bfloat16):
            raise TypeError("%s must be a float16 or bfloat16 torch.Tensor" % name)
    if atten_mask is not None and atten_mask.dtype not in (torch.bool, torch.uint8):
        atten_mask = atten_mask != 0
    return _NsaSelectAttention.apply(query, key, value, topk_indices, float(scale_value), int(head_num),
                                     int(select_block_size), int(select_block_count), atten_mask,
                                     _int_list(actual_seq_qlen), _int_list(actual_seq_kvlen))
