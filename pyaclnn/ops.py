"""One-call operator helpers on numpy arrays.

Each helper initialises the runtime on demand, runs both aclnn phases on a
private stream of the calling thread, waits for the result and releases every
resource, also when something fails. How the arrays reach the kernels depends
on the backend (:func:`zero_copy`):

* cpu backend (the bundled library): no copies. Device memory is host memory,
  so the input arrays are registered with aclrtHostRegister and used in place,
  strides and all; the outputs are new numpy arrays that the op writes
  directly. Outputs of 4 MiB or more reuse the memory of earlier outputs that
  are gone (a cache of up to PYACLNN_OUTPUT_CACHE_MB, default 1024;
  :func:`empty_cache` releases it), since first writes to fresh memory cost a
  page fault per page. An input the kernels cannot take as it is (non-native byte order,
  data misaligned for its dtype, negative strides, a dtype conversion such as
  an integer mask to bool) is copied once, on the host. Registrations are
  released before the helper returns or raises.
* cann backend: the inputs are copied to device memory (aclrtMalloc) and the
  outputs copied back, since NPU kernels read host memory slowly.
"""
import contextlib
import threading

import numpy as np

from . import runtime
from ._args import as_mask, check_rank
from ._ffi import lib
from ._hostmem import BorrowError, acquire as _acquire_host, buffer_span, cached_bytes, empty_cache
from ._hostmem import empty as _empty_output
from ._twophase import (aclnnNsaSelectedAttention, aclnnNsaSelectedAttentionGetWorkspaceSize,
                        aclnnNsaSelectedAttentionGrad, aclnnNsaSelectedAttentionGradGetWorkspaceSize,
                        aclnnScaledMaskedSoftmax, aclnnScaledMaskedSoftmaxGetWorkspaceSize,
                        aclnnScaledMaskedSoftmaxBackward,
                        aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize)
from .runtime import DeviceBuffer, Stream
from .tensor import Tensor, as_dtype, unborrowable_reason

__all__ = ["scaled_masked_softmax", "scaled_masked_softmax_backward", "nsa_selected_attention",
           "nsa_selected_attention_grad", "zero_copy", "empty_cache", "cached_bytes"]

_tls = threading.local()


def zero_copy():
    """True when the helpers use numpy memory in place (the cpu backend);
    False when they copy through device memory (the cann backend)."""
    return lib.backend == "cpu"


def _private_stream():
    """The calling thread's helper stream (recreated after finalize())."""
    stream = getattr(_tls, "stream", None)
    if stream is None or not runtime._alive(stream._gen):
        runtime.ensure_initialized()
        stream = _tls.stream = Stream()
    return stream


class _Call:
    """The device side of one helper call; everything is released on exit.

        with _Call() as call:
            g, m = call.inputs(grad, mask)          # aclTensors (None stays None)
            out = call.output(grad.shape, grad.dtype)
            (result,) = call.run(phase1, (g, m, ..., out), phase2, (out,))

    cpu backend: inputs are borrowed in place (each underlying buffer is
    registered once, however many inputs share it) and outputs are new numpy
    arrays registered for the op to write. cann backend: device copies.
    """

    def __init__(self):
        self.in_place = zero_copy()
        self._stack = contextlib.ExitStack()
        self._results = {}  # id(output Tensor) -> the numpy array it writes

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)

    def _device_copy(self, array):
        return self._stack.enter_context(Tensor(array))

    def inputs(self, *arrays):
        """aclTensors for `arrays` (numpy arrays or array-likes; None -> None)."""
        arrays = [None if a is None else np.asarray(a) for a in arrays]
        out = [None] * len(arrays)
        if not self.in_place:
            return [None if a is None else self._device_copy(a) for a in arrays]
        spans = []  # (lo, hi, index) of the underlying buffer of each in-place input
        for i, a in enumerate(arrays):
            if a is None:
                continue
            dt = as_dtype(a.dtype)
            if a.size == 0:
                out[i] = self._device_copy(a)
                continue
            if unborrowable_reason(a, dt) is not None:
                a = arrays[i] = np.array(a, dtype=dt, order="C")  # the one host copy
            spans.append((*buffer_span(a), i))
        # One registration per group of overlapping buffers.
        spans.sort()
        groups = []
        for lo, hi, i in spans:
            if groups and lo < groups[-1][1]:
                groups[-1][1] = max(groups[-1][1], hi)
                groups[-1][2].append(i)
            else:
                groups.append([lo, hi, [i]])
        for lo, hi, members in groups:
            try:
                host_range = _acquire_host(lo, hi)
            except BorrowError:  # e.g. memory registered elsewhere: copy instead
                for i in members:
                    out[i] = self._device_copy(arrays[i])
                continue
            self._stack.callback(host_range.close)
            for i in members:
                out[i] = self._stack.enter_context(Tensor._over_host(arrays[i], host_range, False))
        return out

    def output(self, shape, dtype):
        """An output aclTensor of `shape` and `dtype`; run() returns its array."""
        shape = tuple(int(n) for n in shape)
        dt = as_dtype(dtype)
        if self.in_place and all(shape):
            array = _empty_output(shape, dt)
            try:
                host_range = _acquire_host(*buffer_span(array))
            except BorrowError:
                pass
            else:
                self._stack.callback(host_range.close)
                t = self._stack.enter_context(Tensor._over_host(array, host_range, False))
                self._results[id(t)] = array
                return t
        return self._stack.enter_context(Tensor.empty(shape, dt))

    def run(self, phase1, phase1_args, phase2, outputs):
        """Plan, allocate the workspace, launch, synchronize; the outputs as numpy."""
        stream = _private_stream()
        size, executor = phase1(*phase1_args)
        self._stack.callback(executor.destroy)
        workspace = self._stack.enter_context(DeviceBuffer(size)) if size else None
        try:
            phase2(workspace, size, executor, stream)
            stream.synchronize()
        except BaseException:
            # Nothing may be released while queued work could still touch it.
            lib.aclrtSynchronizeStream(stream.handle)
            del stream._pending[:]
            raise
        return tuple(self._results[id(t)] if id(t) in self._results else t.numpy()
                     for t in outputs)


def _run(phase1, phase1_args, phase2, outputs, stack):
    """The copying path of helpers written before _Call (device Tensors entered
    into `stack`): plan, launch, synchronize; the outputs as numpy. New helpers
    use _Call, which also avoids the copies on the cpu backend."""
    call = stack.enter_context(_Call())
    return call.run(phase1, phase1_args, phase2, outputs)


def scaled_masked_softmax(x, mask, scale=1.0, fix_triu_mask=False):
    """``softmax(z)`` over the last dim via aclnnScaledMaskedSoftmax, with
    ``z = x * scale`` where the mask is False and -10000 where it is True.

    x: [B, N, S1, S2] float32 / float16 / bfloat16 (ml_dtypes), 0 < S2 <= 4096;
    views may be strided or broadcast (stride 0). mask: bool [B or 1, N or 1, S1,
    S2], True = masked; an integer mask must hold only 0/1 (else ValueError) and
    is converted (a copy); other dtypes go to the C layer as they are (a float
    mask fails there with 161002). None for an input passes NULL (561103, as the
    vendor's code). fp16 multiplies in fp16 by the fp16-rounded scale, as the
    vendor's kernel. A fully masked row is uniform 1/S2. fix_triu_mask must be
    False. Returns a new C-contiguous array of x's dtype and shape.

    On the cpu backend nothing is copied (see :mod:`pyaclnn.ops` and
    :func:`zero_copy`); on the cann backend the arrays go through device memory.

    Example::

        import numpy as np, pyaclnn
        x = np.random.default_rng(0).standard_normal((2, 4, 64, 64), dtype=np.float32)
        mask = np.triu(np.ones((64, 64), bool), 1)[None, None]     # [1, 1, S1, S2]
        y = pyaclnn.ops.scaled_masked_softmax(x, mask, scale=0.125)
    """
    x = _array("x", x)
    mask = None if mask is None else check_rank("mask", as_mask("mask", mask))
    with _Call() as call:
        xt, m = call.inputs(x, mask)
        out = None if x is None else call.output(x.shape, x.dtype)
        (result,) = call.run(aclnnScaledMaskedSoftmaxGetWorkspaceSize, (xt, m, scale, fix_triu_mask, out),
                             aclnnScaledMaskedSoftmax, (out,))
    return result


def _array(name, a):
    """None, or `a` as an ndarray an aclTensor can hold (rank <= 8)."""
    return None if a is None else check_rank(name, np.asarray(a))


def scaled_masked_softmax_backward(grad_output, y, mask, scale=1.0, fix_triu_mask=False):
    """Gradient of ``y = softmax(scale * x masked)`` w.r.t. x via
    aclnnScaledMaskedSoftmaxBackward: ``out = scale * (g*y - sum(g*y, -1)*y)``,
    and exactly 0 where the mask is True.

    grad_output, y: [B, N, S1, S2] float32 / float16 / bfloat16 (ml_dtypes),
    the same dtype, 0 < S2 <= 4096; views may be strided or broadcast (stride 0).
    mask: bool [B or 1, N or 1, S1, S2], True = masked; an integer mask must
    hold only 0/1 (else ValueError) and is converted (a copy); other dtypes go to
    the C layer as they are (a float mask fails there with 161002). None for an
    input passes NULL (161001). fix_triu_mask must be False. Returns a new
    C-contiguous array of grad_output's dtype and shape.

    On the cpu backend nothing is copied (see :mod:`pyaclnn.ops` and
    :func:`zero_copy`); on the cann backend the arrays go through device memory.

    Example::

        import numpy as np, pyaclnn
        rng = np.random.default_rng(0)
        x = rng.standard_normal((2, 4, 64, 64), dtype=np.float32)
        y = np.exp(x - x.max(-1, keepdims=True)); y /= y.sum(-1, keepdims=True)
        g = rng.standard_normal(y.shape, dtype=np.float32)
        mask = np.triu(np.ones((64, 64), bool), 1)[None, None]     # [1, 1, S1, S2]
        dx = pyaclnn.ops.scaled_masked_softmax_backward(g, y, mask, scale=0.125)
    """
    grad_output, y = _array("grad_output", grad_output), _array("y", y)
    mask = None if mask is None else check_rank("mask", as_mask("mask", mask))
    like = grad_output if grad_output is not None else y
    with _Call() as call:
        g, yt, m = call.inputs(grad_output, y, mask)
        out = None if like is None else call.output(like.shape, like.dtype)
        (result,) = call.run(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize,
                             (g, yt, m, scale, fix_triu_mask, out),
                             aclnnScaledMaskedSoftmaxBackward, (out,))
    return result


def nsa_selected_attention(query, key, value, topk_indices, *, scale_value, head_num,
                           selected_block_size, selected_block_count, actual_seq_qlen=None,
                           actual_seq_kvlen=None, atten_mask=None, input_layout="TND", sparse_mode=0):
    """Forward of NSA selected-block attention via aclnnNsaSelectedAttention.

    Each query token t attends, per key/value head, to `selected_block_count`
    blocks of `selected_block_size` consecutive keys of its own batch, chosen by
    topk_indices (in list order; a block listed twice counts twice); N1 query
    heads share N2 key/value heads (G = N1 / N2, query head n1 = n2 * G + g).

    Shapes (layout "TND", the only one; T = tokens of all batches packed):
      query          [T1, N1, D]    fp16 or bf16 (ml_dtypes.bfloat16)
      key            [T2, N2, D]    dtype of query
      value          [T2, N2, Dv]   dtype of query
      topk_indices   [T1, N2, selected_block_count] int32: block numbers in
                                    [0, S2_b / selected_block_size) of the token's
                                    batch (others fail the launch with 361001)
      atten_mask     None, or bool/uint8 2-D (only its presence matters)
    Returns (attention_out [T1, N1, Dv] of query's dtype, softmax_max,
    softmax_sum): float32 [T1, N1, 8], 8 equal lanes: the row max of the
    scaled, masked scores and the sum of exp(score - max), the inputs the grad
    (nsa_selected_attention_grad) expects.

    Strict limits (the hardware's; AclError 161002 otherwise): fp16 or bf16; D
    in {128, 192}, Dv <= D; selected_block_size a multiple of 16 in [16, 128];
    selected_block_count in [1, 32]; head_num == N1 <= 128, N1 a multiple of
    N2, G <= 32; at most 1024 batches; every batch's KV length a multiple of
    the block size and >= count * size. PYACLNN_NSA_RELAXED=1 lifts them for
    research (float32 inputs, any D, ...).

    sparse_mode: 0 = every selected key is visible; 2 = causal (key j of the
    batch visible to query s iff j <= s), but only when atten_mask is given,
    as in the vendor's kernel (sparse_mode 2 without a mask runs unmasked).
    A row with no visible key gets the vendor's uniform weights (see native/ops/nsa_selected_attention/README.md).

    Precision: by default the NPU's (PYACLNN_NSA_PRECISION=npu): P = softmax
    is rounded to the input dtype (ties away from zero) before P V, the output
    rounded once; PYACLNN_NSA_PRECISION=high keeps P in float32. The float32
    golden of the default is pyaclnn.reference.nsa_selected_attention_npu.

    actual_seq_qlen / actual_seq_kvlen: cumulative lengths per batch, e.g.
    [512, 1024] for two batches of 512 tokens; None means one batch ([T1] /
    [T2]; the C operator itself requires both arrays).

    On the cpu backend nothing is copied (see :func:`zero_copy`); on the cann
    backend the arrays go through device memory.

    Example::

        import ml_dtypes, numpy as np, pyaclnn
        bf16 = ml_dtypes.bfloat16
        T, N1, N2, D, Dv, block, count = 256, 4, 1, 128, 128, 16, 4
        rng = np.random.default_rng(0)
        q = rng.standard_normal((T, N1, D)).astype(bf16)
        k = rng.standard_normal((T, N2, D)).astype(bf16)
        v = rng.standard_normal((T, N2, Dv)).astype(bf16)
        own = np.arange(T) // block                # each token's own block, then earlier ones
        topk = np.stack([(own - i) % (T // block) for i in range(count)], -1)
        topk = topk[:, None, :].astype(np.int32)   # [T, N2, count]
        out, smax, ssum = pyaclnn.ops.nsa_selected_attention(
            q, k, v, topk, scale_value=D ** -0.5, head_num=N1, selected_block_size=block,
            selected_block_count=count, atten_mask=np.ones((T, T), bool), sparse_mode=2)
    """
    names = ("query", "key", "value", "topk_indices")
    query, key, value, topk_indices = (_array(n, a) for n, a in
                                       zip(names, (query, key, value, topk_indices)))
    atten_mask = _array("atten_mask", atten_mask)
    if actual_seq_qlen is None and query is not None and query.ndim > 0:
        actual_seq_qlen = [query.shape[0]]
    if actual_seq_kvlen is None and key is not None and key.ndim > 0:
        actual_seq_kvlen = [key.shape[0]]
    with _Call() as call:
        *ins, mask = call.inputs(query, key, value, topk_indices, atten_mask)
        # outputs need query's T1, N1 and value's Dv; without them, NULL (the C layer names the input)
        ok = query is not None and value is not None and query.ndim == 3 and value.ndim == 3
        T1, N1 = query.shape[:2] if ok else (0, 0)
        smax = call.output((T1, N1, 8), np.float32) if ok else None
        ssum = call.output((T1, N1, 8), np.float32) if ok else None
        out = call.output((T1, N1, value.shape[-1]), query.dtype) if ok else None
        args = (*ins, mask, actual_seq_qlen, actual_seq_kvlen, scale_value, head_num, input_layout,
                sparse_mode, selected_block_size, selected_block_count, smax, ssum, out)
        return call.run(aclnnNsaSelectedAttentionGetWorkspaceSize, args, aclnnNsaSelectedAttention,
                        (out, smax, ssum))


def nsa_selected_attention_grad(query, key, value, attention_out, attention_out_grad, softmax_max,
                                softmax_sum, topk_indices, *, scale_value, selected_block_size,
                                selected_block_count, head_num, actual_seq_qlen=None,
                                actual_seq_kvlen=None, atten_mask=None, input_layout="TND",
                                sparse_mode=0, out_dtype=None):
    """Backward of NSA selected-block attention via aclnnNsaSelectedAttentionGrad.

    Each query token t attends, per key/value head, to `selected_block_count`
    blocks of `selected_block_size` consecutive keys of its own batch, chosen by
    topk_indices; N1 query heads share N2 key/value heads (G = N1 / N2 per group).

    Shapes (layout "TND", the only one; T = tokens of all batches packed):
      query               [T1, N1, D]     fp16 or bf16 (ml_dtypes.bfloat16)
      key                 [T2, N2, D]     dtype of query
      value               [T2, N2, Dv]    dtype of query
      attention_out       [T1, N1, Dv]    the forward's output, dtype of query
      attention_out_grad  [T1, N1, Dv]    dtype of query
      softmax_max         [T1, N1, 8]     float32: the forward's row max of
                                          scale_value * q.k over the visible selected
                                          keys, repeated 8 times
      softmax_sum         [T1, N1, 8]     float32: the forward's sum of
                                          exp(scale_value * q.k - max), repeated 8 times
      topk_indices        [T1, N2, selected_block_count] int32: block numbers in
                                          [0, S2_b / selected_block_size) of the
                                          token's batch (S2_b its KV length)
      atten_mask          None, or bool/uint8 2-D (validated, never read, as on the NPU)
    Returns (dq, dk, dv) shaped like query, key and value, of `out_dtype`
    (default: query's dtype; float16 / bfloat16 / float32 or their names).

    Strict limits (the hardware's; checked, AclError 161002 otherwise): fp16 or
    bf16 inputs; D and Dv in {128, 192} with Dv <= D; selected_block_size a
    multiple of 16 in [16, 128]; selected_block_count in [1, 128] and
    count * size <= 8192; head_num == N1 <= 128, N1 a multiple of N2, G <= 32;
    every batch's KV length a multiple of the block size and >= count * size.
    PYACLNN_NSA_RELAXED=1 in the environment (read at each call) lifts them for
    research: float32 inputs, any D in [1, 65536], Dv in [1, 1024], block size
    and count in [1, 1024], up to 1024 heads, short KV lengths.

    sparse_mode: 0 = every selected key is visible; 2 = causal: key j of the
    batch is visible to query s of the batch iff j <= s (positions counted
    from the start of each batch).

    Precision: by default the NPU's (PYACLNN_NSA_PRECISION=npu): P and dS are
    rounded to the input dtype (ties away from zero) before dv = P^T dO,
    dq = dS K and dk = dS^T q, and the outputs are rounded once (ties away);
    PYACLNN_NSA_PRECISION=high keeps P and dS in float32. The float32 golden
    of the default is pyaclnn.reference.nsa_selected_attention_grad_npu.

    actual_seq_qlen / actual_seq_kvlen: cumulative lengths per batch, e.g.
    [512, 1024] for two batches of 512 tokens; give both or neither. Leaving
    them out means one batch: all T1 queries and all T2 keys.

    Integer attributes must be ints, input_layout a str without NUL, the seq
    arrays integer sequences (TypeError / ValueError naming the argument); None
    for a required input passes NULL, which the C layer rejects with 161001.

    On the cpu backend nothing is copied (see :mod:`pyaclnn.ops` and
    :func:`zero_copy`); on the cann backend the arrays go through device memory.

    Example: valid softmax_max / softmax_sum come from the forward pass, here
    the float64 reference (pyaclnn.reference.nsa_selected_attention_forward)::

        import ml_dtypes, numpy as np, pyaclnn
        from pyaclnn import reference
        bf16 = ml_dtypes.bfloat16
        T, N1, N2, D, Dv, block, count = 256, 4, 1, 128, 128, 16, 4
        rng = np.random.default_rng(0)
        q = rng.standard_normal((T, N1, D)).astype(bf16)
        k = rng.standard_normal((T, N2, D)).astype(bf16)
        v = rng.standard_normal((T, N2, Dv)).astype(bf16)
        dout = rng.standard_normal((T, N1, Dv)).astype(bf16)
        # per token and kv head: `count` distinct blocks, the token's own block first
        own = np.arange(T) // block
        topk = np.empty((T, N2, count), np.int32)
        for t in range(T):
            others = rng.permutation(np.delete(np.arange(T // block), own[t]))[:count - 1]
            topk[t, :] = np.concatenate([[own[t]], others])
        scale = D ** -0.5
        out, smax, ssum = reference.nsa_selected_attention_forward(
            q, k, v, topk, scale_value=scale, selected_block_size=block,
            selected_block_count=count, sparse_mode=2)
        dq, dk, dv = pyaclnn.ops.nsa_selected_attention_grad(
            q, k, v, out.astype(bf16), dout, smax.astype(np.float32), ssum.astype(np.float32),
            topk, scale_value=scale, selected_block_size=block, selected_block_count=count,
            head_num=N1, sparse_mode=2, out_dtype="float32")
    """
    names = ("query", "key", "value", "attention_out", "attention_out_grad", "softmax_max",
             "softmax_sum", "topk_indices")
    arrays = [_array(n, a) for n, a in zip(names, (query, key, value, attention_out,
                                                     attention_out_grad, softmax_max, softmax_sum,
                                                     topk_indices))]
    atten_mask = _array("atten_mask", atten_mask)
    query = arrays[0]
    odt = as_dtype(out_dtype) if out_dtype is not None else None if query is None else query.dtype
    with _Call() as call:
        *ins, mask = call.inputs(*arrays, atten_mask)
        # an output shaped like a missing input is NULL too (the C layer names the input)
        outs = [None if a is None else call.output(a.shape, a.dtype if odt is None else odt)
                for a in arrays[:3]]
        args = (*ins, actual_seq_qlen, actual_seq_kvlen, mask, scale_value, selected_block_size,
                selected_block_count, head_num, input_layout, sparse_mode, *outs)
        return call.run(aclnnNsaSelectedAttentionGradGetWorkspaceSize, args,
                        aclnnNsaSelectedAttentionGrad, outs)
