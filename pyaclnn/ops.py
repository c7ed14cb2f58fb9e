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
from ._args import as_mask, check_rank
from ._ffi import lib
from ._twophase import (aclnnNsaSelectedAttentionGrad, aclnnNsaSelectedAttentionGradGetWorkspaceSize,
                        aclnnScaledMaskedSoftmaxBackward,
                        aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize)
from .runtime import DeviceBuffer, Stream
from .tensor import Tensor, as_dtype

__all__ = ["scaled_masked_softmax_backward", "nsa_selected_attention_grad"]

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


def _array(name, a):
    """None, or `a` as an ndarray an aclTensor can hold (rank <= 8)."""
    return None if a is None else check_rank(name, np.asarray(a))


def _device(stack, array):
    """A Tensor copy of `array` closed with `stack` (None stays None)."""
    return None if array is None else stack.enter_context(Tensor(array))


def scaled_masked_softmax_backward(grad_output, y, mask, scale=1.0, fix_triu_mask=False):
    """Gradient of ``y = softmax(scale * x masked)`` w.r.t. x via
    aclnnScaledMaskedSoftmaxBackward.

    grad_output, y: [B, N, S1, S2] float32 / float16 / bfloat16 (same dtype;
    views may be non-contiguous). mask: bool [B|1, N|1, S1, S2], True = masked
    (the output is 0 there); integer masks must hold only 0/1 (else ValueError)
    and are converted; other dtypes go to the C layer as they are (a float mask
    fails there with 161002). None for an input passes NULL (161001). Returns
    an array of grad_output's dtype and shape.
    """
    grad_output, y = _array("grad_output", grad_output), _array("y", y)
    mask = None if mask is None else check_rank("mask", as_mask("mask", mask))
    like = grad_output if grad_output is not None else y
    with contextlib.ExitStack() as stack:
        g, yt, m = (_device(stack, a) for a in (grad_output, y, mask))
        out = None if like is None else stack.enter_context(Tensor.empty(like.shape, like.dtype))
        (result,) = _run(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize,
                         (g, yt, m, scale, fix_triu_mask, out),
                         aclnnScaledMaskedSoftmaxBackward, (out,), stack)
    return result


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
    Integer attributes must be ints, input_layout a str without NUL, the seq
    arrays integer sequences (TypeError / ValueError naming the argument); None
    for a required input passes NULL, which the C layer rejects with 161001.
    """
    names = ("query", "key", "value", "attention_out", "attention_out_grad", "softmax_max",
             "softmax_sum", "topk_indices")
    arrays = [_array(n, a) for n, a in zip(names, (query, key, value, attention_out,
                                                     attention_out_grad, softmax_max, softmax_sum,
                                                     topk_indices))]
    atten_mask = _array("atten_mask", atten_mask)
    query = arrays[0]
    odt = as_dtype(out_dtype) if out_dtype is not None else None if query is None else query.dtype
    with contextlib.ExitStack() as stack:
        ins = [_device(stack, a) for a in arrays]
        mask = _device(stack, atten_mask)
        # an output shaped like a missing input is NULL too (the C layer names the input)
        outs = [None if a is None else stack.enter_context(Tensor.empty(a.shape, odt or a.dtype))
                for a in arrays[:3]]
        args = (*ins, actual_seq_qlen, actual_seq_kvlen, mask, scale_value, selected_block_size,
                selected_block_count, head_num, input_layout, sparse_mode, *outs)
        return _run(aclnnNsaSelectedAttentionGradGetWorkspaceSize, args,
                    aclnnNsaSelectedAttentionGrad, outs, stack)
