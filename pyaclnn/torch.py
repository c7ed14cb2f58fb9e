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

__all__ = ["npu_scaled_masked_softmax", "npu_scaled_masked_softmax_backward"]

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
# npu_nsa_select_attention (aclnnNsaSelectedAttention forward, backward through
# aclnnNsaSelectedAttentionGrad) goes here.
