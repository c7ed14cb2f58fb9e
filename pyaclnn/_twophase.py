"""The aclnn two-phase operator functions, under their C names.

Phase 1 (``aclnnXxxGetWorkspaceSize``) takes pyaclnn.Tensor objects (or raw
``aclTensor *`` cdata, or None for NULL) and returns
``(workspace_size, Executor)``. Phase 2 (``aclnnXxx``) takes the workspace
(DeviceBuffer, int address or None), its size, the executor and a stream
(pyaclnn.Stream or None for the default stream) and queues the work.
A non-zero status raises AclError.

As in CANN, an executor is consumed by its phase-2 call unless
``set_repeatable()`` was called; a repeatable one lives until ``destroy()``.
"""
from ._args import as_bool, as_double, as_int, as_int_list, as_layout
from ._errors import AclError, check, get_recent_err_msg
from ._ffi import as_ptr, ffi, lib
from . import runtime
from .runtime import DeviceBuffer, _keep_until_sync, _stream_handle
from .tensor import Tensor

__all__ = [
    "Executor",
    "aclnnScaledMaskedSoftmaxGetWorkspaceSize", "aclnnScaledMaskedSoftmax",
    "aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize", "aclnnScaledMaskedSoftmaxBackward",
    "aclnnNsaSelectedAttentionGetWorkspaceSize", "aclnnNsaSelectedAttention",
    "aclnnNsaSelectedAttentionGradGetWorkspaceSize", "aclnnNsaSelectedAttentionGrad",
]


class Executor:
    """An ``aclOpExecutor *`` from a phase-1 call.

    It keeps the Tensor objects it was planned with referenced, so their device
    memory outlives every launch (the stream holds them until synchronized).
    """

    def __init__(self, handle, api, keep):
        self._handle = handle
        self.api = api                 # the phase-2 function it belongs to
        self._keep = tuple(keep)
        self._gen = runtime._current_generation()
        self.repeatable = False
        self.spent = False             # consumed by a launch (not repeatable)

    @property
    def handle(self):
        """The ``aclOpExecutor *`` cdata."""
        if self._handle is None:
            raise ValueError("executor is destroyed")
        return self._handle

    def set_repeatable(self):
        """aclSetAclOpExecutorRepeatable: survive launches until destroy()."""
        check(lib.aclSetAclOpExecutorRepeatable(self._live_handle("aclSetAclOpExecutorRepeatable")),
              "aclSetAclOpExecutorRepeatable")
        self.repeatable = True
        return self

    def set_input(self, index, tensor):
        """aclSetInputTensorAddr: rebind input ``index`` (API order) to ``tensor``'s memory,
        e.g. to relaunch a repeatable executor on new data of the same layout."""
        self._rebind(lib.aclSetInputTensorAddr, "aclSetInputTensorAddr", index, tensor)

    def set_output(self, index, tensor):
        """aclSetOutputTensorAddr: rebind output ``index`` to ``tensor``'s memory."""
        _out_arg(tensor, "output %d" % index)
        self._rebind(lib.aclSetOutputTensorAddr, "aclSetOutputTensorAddr", index, tensor)

    def _rebind(self, fn, api, index, tensor):
        handle = self._live_handle(api)
        check(fn(handle, index, tensor.handle, tensor.buffer.cdata), api)
        self._keep = self._keep + (tensor,)  # its memory must outlive later launches

    def destroy(self):
        """aclDestroyAclOpExecutor (no-op once consumed or destroyed)."""
        handle, self._handle = self._handle, None
        if handle is not None and not self.spent and runtime._alive(self._gen):
            check(lib.aclDestroyAclOpExecutor(handle), "aclDestroyAclOpExecutor")
        self._keep = ()

    close = destroy

    def _live_handle(self, api):
        if self.spent or self._handle is None:
            # Never hand a released executor to C: it would be a dangling pointer.
            raise AclError(lib.ACLNN_ERR_PARAM_INVALID, api,
                           "the executor was already %s; call set_repeatable() after "
                           "GetWorkspaceSize to launch it more than once"
                           % ("consumed by a launch" if self.spent else "destroyed"))
        return self._handle

    def _launched(self):
        if not self.repeatable:
            self.spent = True
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __del__(self):
        # An executor that was never launched (or is repeatable) still owns C memory.
        try:
            if self._handle is not None and not self.spent and runtime._alive(self._gen):
                lib.aclDestroyAclOpExecutor(self._handle)
            self._handle = None
        except Exception:
            pass

    def __repr__(self):
        state = ("spent" if self.spent else "destroyed" if self._handle is None
                 else "repeatable" if self.repeatable else "ready")
        return "<pyaclnn.Executor for %s, %s>" % (self.api, state)


def _tensor_arg(x, name):
    if x is None:
        return ffi.NULL
    if isinstance(x, Tensor):
        return x.handle
    if isinstance(x, ffi.CData):
        return x
    raise TypeError("%s: expected a pyaclnn.Tensor, an aclTensor* cdata or None, got %r"
                    % (name, type(x).__name__))


def _out_arg(x, name):
    if isinstance(x, Tensor) and not x.writable:
        raise ValueError("%s: the borrowed array is read-only; an output needs a writable array" % name)
    return _tensor_arg(x, name)


def _int_array(values, name):
    """aclIntArray* for a sequence of ints (NULL for None); caller destroys it."""
    values = as_int_list(name, values)
    if values is None:
        return ffi.NULL
    arr = lib.aclCreateIntArray(ffi.new("int64_t[]", values or [0]), len(values))
    if arr == ffi.NULL:
        raise AclError(lib.ACLNN_ERR_INNER_NULLPTR, "aclCreateIntArray",
                       "%s (for %s)" % (get_recent_err_msg(), name))
    return arr


def _phase1(api, launch_api, fn, args, keep):
    size = ffi.new("uint64_t *")
    executor = ffi.new("aclOpExecutor **")
    check(fn(*args, size, executor), api)
    return int(size[0]), Executor(executor[0], launch_api, keep)


# Statuses pa_executor_launch returns before it takes the executor.
_REFUSED_BEFORE_LAUNCH = frozenset((lib.ACLNN_ERR_PARAM_NULLPTR, lib.ACLNN_ERR_PARAM_INVALID))


def _phase2(api, fn, workspace, workspace_size, executor, stream):
    if isinstance(executor, Executor):
        if executor.api != api:
            raise AclError(lib.ACLNN_ERR_PARAM_INVALID, api,
                           "the executor was planned for %s" % executor.api)
        handle = executor._live_handle(api)
    elif isinstance(executor, ffi.CData) or executor is None:
        handle = ffi.NULL if executor is None else executor
    else:
        raise TypeError("executor must be a pyaclnn Executor, an aclOpExecutor* cdata or None")
    workspace_size = as_int("workspace_size", workspace_size)
    if workspace_size < 0:
        raise ValueError("workspace_size must be >= 0, got %d" % workspace_size)
    status = fn(as_ptr(workspace), workspace_size, handle, _stream_handle(stream))
    if isinstance(executor, Executor) and status not in _REFUSED_BEFORE_LAUNCH:
        # As in pa_executor_launch: a launch that passed the executor checks has
        # taken a non-repeatable executor, even if the stream then refused the
        # task (a destroyed stream: a runtime status) or host memory ran out
        # (561103); only the checks' own statuses (dead executor, wrong op,
        # workspace) leave it usable.
        executor._launched()
    check(status, api)
    keep = list(executor._keep) if isinstance(executor, Executor) else []
    if isinstance(workspace, DeviceBuffer):
        keep.append(workspace)
    _keep_until_sync(stream, keep)


# ---------------------------------------------------------------- ScaledMaskedSoftmax

def aclnnScaledMaskedSoftmaxGetWorkspaceSize(x, mask, scale, fixed_triu_mask, y):
    """Phase 1 of aclnnScaledMaskedSoftmax -> (workspace_size, Executor)."""
    args = (_tensor_arg(x, "x"), _tensor_arg(mask, "mask"), as_double("scale", scale),
            as_bool("fixed_triu_mask", fixed_triu_mask), _out_arg(y, "y"))
    return _phase1("aclnnScaledMaskedSoftmaxGetWorkspaceSize", "aclnnScaledMaskedSoftmax",
                   lib.aclnnScaledMaskedSoftmaxGetWorkspaceSize, args, (x, mask, y))


def aclnnScaledMaskedSoftmax(workspace, workspace_size, executor, stream=None):
    """Phase 2 of aclnnScaledMaskedSoftmax: queue the work on `stream`."""
    _phase2("aclnnScaledMaskedSoftmax", lib.aclnnScaledMaskedSoftmax,
            workspace, workspace_size, executor, stream)


# ---------------------------------------------------------------- ScaledMaskedSoftmaxBackward

def aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(grad, y, mask, scale, fix_triu_mask, out):
    """Phase 1 of aclnnScaledMaskedSoftmaxBackward -> (workspace_size, Executor)."""
    args = (_tensor_arg(grad, "gradOutput"), _tensor_arg(y, "y"), _tensor_arg(mask, "mask"),
            as_double("scale", scale), as_bool("fix_triu_mask", fix_triu_mask), _out_arg(out, "out"))
    return _phase1("aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize",
                   "aclnnScaledMaskedSoftmaxBackward",
                   lib.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize, args,
                   (grad, y, mask, out))


def aclnnScaledMaskedSoftmaxBackward(workspace, workspace_size, executor, stream=None):
    """Phase 2 of aclnnScaledMaskedSoftmaxBackward: queue the work on `stream`."""
    _phase2("aclnnScaledMaskedSoftmaxBackward", lib.aclnnScaledMaskedSoftmaxBackward,
            workspace, workspace_size, executor, stream)


# ---------------------------------------------------------------- NsaSelectedAttention

def _layout_arg(input_layout):
    """input_layout as a NUL-terminated char[] (None passes NULL)."""
    if input_layout is None:
        return ffi.NULL
    return ffi.new("char[]", as_layout("input_layout", input_layout))


def aclnnNsaSelectedAttentionGetWorkspaceSize(
        query, key, value, topk_indices, atten_mask, actual_seq_qlen, actual_seq_kvlen,
        scale_value, head_num, input_layout, sparse_mode, selected_block_size,
        selected_block_count, softmax_max, softmax_sum, attention_out):
    """Phase 1 of aclnnNsaSelectedAttention -> (workspace_size, Executor).

    Parameters in the C order (note: headNum, inputLayout, sparseMode, then the
    block size and count). actual_seq_qlen / actual_seq_kvlen: sequences of
    ints (cumulative lengths; both required by the operator) or None for NULL;
    they become aclIntArrays that live only for this call.
    """
    layout = _layout_arg(input_layout)
    attrs = (as_double("scale_value", scale_value), as_int("head_num", head_num), layout,
             as_int("sparse_mode", sparse_mode), as_int("selected_block_size", selected_block_size),
             as_int("selected_block_count", selected_block_count))
    qlen = _int_array(actual_seq_qlen, "actual_seq_qlen")
    try:
        kvlen = _int_array(actual_seq_kvlen, "actual_seq_kvlen")
        try:
            args = (_tensor_arg(query, "query"), _tensor_arg(key, "key"),
                    _tensor_arg(value, "value"), _tensor_arg(topk_indices, "topkIndices"),
                    _tensor_arg(atten_mask, "attenMaskOptional"), qlen, kvlen, *attrs,
                    _out_arg(softmax_max, "softmaxMaxOut"), _out_arg(softmax_sum, "softmaxSumOut"),
                    _out_arg(attention_out, "attentionOut"))
            return _phase1("aclnnNsaSelectedAttentionGetWorkspaceSize",
                           "aclnnNsaSelectedAttention",
                           lib.aclnnNsaSelectedAttentionGetWorkspaceSize, args,
                           (query, key, value, topk_indices, atten_mask, softmax_max,
                            softmax_sum, attention_out))
        finally:
            lib.aclDestroyIntArray(kvlen)
    finally:
        lib.aclDestroyIntArray(qlen)


def aclnnNsaSelectedAttention(workspace, workspace_size, executor, stream=None):
    """Phase 2 of aclnnNsaSelectedAttention: queue the work on `stream`."""
    _phase2("aclnnNsaSelectedAttention", lib.aclnnNsaSelectedAttention,
            workspace, workspace_size, executor, stream)


# ---------------------------------------------------------------- NsaSelectedAttentionGrad

def aclnnNsaSelectedAttentionGradGetWorkspaceSize(
        query, key, value, attention_out, attention_out_grad, softmax_max, softmax_sum,
        topk_indices, actual_seq_qlen, actual_seq_kvlen, atten_mask, scale_value,
        selected_block_size, selected_block_count, head_num, input_layout, sparse_mode,
        dq, dk, dv):
    """Phase 1 of aclnnNsaSelectedAttentionGrad -> (workspace_size, Executor).

    actual_seq_qlen / actual_seq_kvlen: sequences of ints (cumulative lengths)
    or None; they become aclIntArrays that live only for this call (the
    operator copies what it needs). input_layout: a str such as "TND" (None
    passes NULL). Integer arguments must be ints (see pyaclnn._args).
    """
    layout = _layout_arg(input_layout)
    attrs = (as_double("scale_value", scale_value), as_int("selected_block_size", selected_block_size),
             as_int("selected_block_count", selected_block_count), as_int("head_num", head_num))
    sparse_mode = as_int("sparse_mode", sparse_mode)
    qlen = _int_array(actual_seq_qlen, "actual_seq_qlen")
    try:
        kvlen = _int_array(actual_seq_kvlen, "actual_seq_kvlen")
        try:
            args = (_tensor_arg(query, "query"), _tensor_arg(key, "key"),
                    _tensor_arg(value, "value"), _tensor_arg(attention_out, "attentionOut"),
                    _tensor_arg(attention_out_grad, "attentionOutGrad"),
                    _tensor_arg(softmax_max, "softmaxMax"), _tensor_arg(softmax_sum, "softmaxSum"),
                    _tensor_arg(topk_indices, "topkIndices"), qlen, kvlen,
                    _tensor_arg(atten_mask, "attenMaskOptional"), *attrs, layout,
                    sparse_mode, _out_arg(dq, "dqOut"), _out_arg(dk, "dkOut"),
                    _out_arg(dv, "dvOut"))
            return _phase1("aclnnNsaSelectedAttentionGradGetWorkspaceSize",
                           "aclnnNsaSelectedAttentionGrad",
                           lib.aclnnNsaSelectedAttentionGradGetWorkspaceSize, args,
                           (query, key, value, attention_out, attention_out_grad, softmax_max,
                            softmax_sum, topk_indices, atten_mask, dq, dk, dv))
        finally:
            lib.aclDestroyIntArray(kvlen)
    finally:
        lib.aclDestroyIntArray(qlen)


def aclnnNsaSelectedAttentionGrad(workspace, workspace_size, executor, stream=None):
    """Phase 2 of aclnnNsaSelectedAttentionGrad: queue the work on `stream`."""
    _phase2("aclnnNsaSelectedAttentionGrad", lib.aclnnNsaSelectedAttentionGrad,
            workspace, workspace_size, executor, stream)
