"""One-call operator helpers on numpy arrays.

Each helper initialises the runtime on demand, copies the inputs to device
tensors (keeping strided views strided), runs both aclnn phases on a private
stream of the calling thread, waits for the result, copies it back and frees
every device resource, also when something fails.
"""
import contextlib
import threading

import numpy as np

from . import runtime
from ._ffi import lib
from ._twophase import (aclnnNsaSelectedAttention, aclnnNsaSelectedAttentionGetWorkspaceSize,
                        aclnnNsaSelectedAttentionGrad, aclnnNsaSelectedAttentionGradGetWorkspaceSize,
                        aclnnScaledMaskedSoftmax, aclnnScaledMaskedSoftmaxGetWorkspaceSize,
                        aclnnScaledMaskedSoftmaxBackward,
                        aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize)
from .runtime import DeviceBuffer, Stream
from .tensor import Tensor, as_dtype

__all__ = ["scaled_masked_softmax", "scaled_masked_softmax_backward", "nsa_selected_attention",
           "nsa_selected_attention_grad"]

_tls = threading.local()


def _private_stream():
    """The calling thread's helper stream (recreated after finalize())."""
    stream = getattr(_tls, "stream", None)
    if stream is None or not runtime._alive(stream._gen):
        runtime.ensure_initialized()
        stream = _tls.stream = Stream()
    return stream


def _run(phase1, phase1_args, phase2, outputs, stack):
    """Plan, allocate the workspace, launch, synchronize; return outputs as numpy."""
    stream = _private_stream()
    size, executor = phase1(*phase1_args)
    stack.callback(executor.destroy)
    workspace = stack.enter_context(DeviceBuffer(size)) if size else None
    try:
        phase2(workspace, size, executor, stream)
        stream.synchronize()
    except BaseException:
        # Nothing may be freed while queued work could still touch it.
        lib.aclrtSynchronizeStream(stream.handle)
        del stream._pending[:]
        raise
    return tuple(t.numpy() for t in outputs)


def scaled_masked_softmax(x, mask, scale=1.0, fix_triu_mask=False):
    """``softmax(z)`` over the last dim, ``z = x * scale`` where mask is False and
    -10000 where it is True, via aclnnScaledMaskedSoftmax.

    x: [B, N, S1, S2] float32 / float16 / bfloat16 (views may be non-contiguous),
    S2 <= 4096. mask: bool [B|1, N|1, S1, S2], True = masked; integer 0/1 masks
    are converted. Returns an array of x's dtype and shape.
    """
    x = np.asarray(x)
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        mask = mask.astype(np.bool_)
    with contextlib.ExitStack() as stack:
        xt = stack.enter_context(Tensor(x))
        m = stack.enter_context(Tensor(mask))
        out = stack.enter_context(Tensor.empty(x.shape, x.dtype))
        (result,) = _run(aclnnScaledMaskedSoftmaxGetWorkspaceSize, (xt, m, scale, fix_triu_mask, out),
                         aclnnScaledMaskedSoftmax, (out,), stack)
    return result


def scaled_masked_softmax_backward(grad_output, y, mask, scale=1.0, fix_triu_mask=False):
    """Gradient of ``y = softmax(scale * x masked)`` w.r.t. x via
    aclnnScaledMaskedSoftmaxBackward.

    grad_output, y: [B, N, S1, S2] float32 / float16 / bfloat16 (same dtype;
    views may be non-contiguous). mask: bool [B|1, N|1, S1, S2], True = masked
    (the output is 0 there); integer 0/1 masks are converted. Returns an array
    of grad_output's dtype and shape.
    """
    grad_output = np.asarray(grad_output)
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        mask = mask.astype(np.bool_)
    with contextlib.ExitStack() as stack:
        g = stack.enter_context(Tensor(grad_output))
        yt = stack.enter_context(Tensor(y))
        m = stack.enter_context(Tensor(mask))
        out = stack.enter_context(Tensor.empty(grad_output.shape, grad_output.dtype))
        (result,) = _run(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize,
                         (g, yt, m, scale, fix_triu_mask, out),
                         aclnnScaledMaskedSoftmaxBackward, (out,), stack)
    return result


def nsa_selected_attention(query, key, value, topk_indices, *, scale_value, head_num,
                           selected_block_size, selected_block_count, actual_seq_qlen=None,
                           actual_seq_kvlen=None, atten_mask=None, input_layout="TND", sparse_mode=0):
    """Forward of NSA selected-block attention via aclnnNsaSelectedAttention.

    Layout TND: query [T1, N1, D], key [T2, N2, D], value [T2, N2, Dv] (fp16 or
    bf16, one dtype), topk_indices int32 [T1, N2, selected_block_count].
    actual_seq_qlen / actual_seq_kvlen are cumulative per-batch lengths; None
    means one batch ([T1] / [T2]; the C operator itself requires both arrays).
    As in the vendor kernel, the causal rule applies only with sparse_mode 2 AND
    an atten_mask (whose values are never read). Returns (attention_out
    [T1, N1, Dv] of query's dtype, softmax_max, softmax_sum float32 [T1, N1, 8]).
    """
    query = np.asarray(query)
    key = np.asarray(key)
    value = np.asarray(value)
    T1, N1 = query.shape[:2]
    if actual_seq_qlen is None:
        actual_seq_qlen = [T1]
    if actual_seq_kvlen is None:
        actual_seq_kvlen = [key.shape[0]]
    with contextlib.ExitStack() as stack:
        def dev(a):
            return None if a is None else stack.enter_context(Tensor(a))

        ins = [dev(a) for a in (query, key, value, topk_indices)]
        mask = dev(atten_mask)
        smax = stack.enter_context(Tensor.empty((T1, N1, 8), np.float32))
        ssum = stack.enter_context(Tensor.empty((T1, N1, 8), np.float32))
        out = stack.enter_context(Tensor.empty((T1, N1, value.shape[-1]), query.dtype))
        args = (*ins, mask, actual_seq_qlen, actual_seq_kvlen, scale_value, head_num, input_layout,
                sparse_mode, selected_block_size, selected_block_count, smax, ssum, out)
        o, m, l = _run(aclnnNsaSelectedAttentionGetWorkspaceSize, args,
                       aclnnNsaSelectedAttention, (out, smax, ssum), stack)
    return o, m, l


def nsa_selected_attention_grad(query, key, value, attention_out, attention_out_grad, softmax_max,
                                softmax_sum, topk_indices, *, scale_value, selected_block_size,
                                selected_block_count, head_num, actual_seq_qlen=None,
                                actual_seq_kvlen=None, atten_mask=None, input_layout="TND",
                                sparse_mode=0, out_dtype=None):
    """Backward of NSA selected-block attention via aclnnNsaSelectedAttentionGrad.

    Layout TND: query / attention_out / attention_out_grad [T1, N1, D],
    key / value [T2, N2, D], softmax_max / softmax_sum float32 [T1, N1, 8],
    topk_indices int32 [T1, N2, selected_block_count]. actual_seq_qlen /
    actual_seq_kvlen are cumulative per-batch lengths. Returns (dq, dk, dv)
    shaped like query, key and value, of `out_dtype` (default: query's dtype;
    np.float32 / np.float16 / ml_dtypes.bfloat16 or their names).
    """
    query = np.asarray(query)
    key = np.asarray(key)
    value = np.asarray(value)
    odt = as_dtype(query.dtype if out_dtype is None else out_dtype)
    with contextlib.ExitStack() as stack:
        def dev(a):
            return None if a is None else stack.enter_context(Tensor(a))

        ins = [dev(a) for a in (query, key, value, attention_out, attention_out_grad,
                                softmax_max, softmax_sum, topk_indices)]
        mask = dev(atten_mask)
        outs = [stack.enter_context(Tensor.empty(a.shape, odt)) for a in (query, key, value)]
        args = (*ins, actual_seq_qlen, actual_seq_kvlen, mask, scale_value, selected_block_size,
                selected_block_count, head_num, input_layout, sparse_mode, *outs)
        return _run(aclnnNsaSelectedAttentionGradGetWorkspaceSize, args,
                    aclnnNsaSelectedAttentionGrad, outs, stack)
