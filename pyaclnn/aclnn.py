"""Any operator of the op table (:mod:`pyaclnn.optable`), by name, on numpy arrays.

``pyaclnn.aclnn.Mul(a, b, out)`` runs both phases of aclnnMul on a private
stream and returns ``out``. Arguments follow the C API order (without
``workspaceSize`` / ``executor``):

* tensors: numpy arrays (any strides, broadcast views included); outputs and
  in-place tensors (``selfRef``) must be writable arrays, written in place;
* tensor lists: sequences of arrays;
* scalars: Python numbers (float -> DOUBLE, int -> INT64, bool -> BOOL), numpy
  scalars (their dtype), or :func:`scalar` for an explicit dtype;
* int / bool / float arrays: sequences; dtypes: numpy dtypes or names;
  numbers, bools, strings as they are; ``None`` passes NULL.

Returns the output tensors (one array, or a tuple when there are several).
A failing status raises :class:`pyaclnn.AclError` with the status code and
``aclGetRecentErrMsg()``.

On the cpu backend arrays are used in place (no copies); on the cann backend
they go through device memory and outputs are copied back.
"""
import contextlib

import numpy as np

from . import optable, runtime
from ._errors import check
from ._ffi import ffi, lib
from ._hostmem import BorrowError, acquire as _acquire_host, buffer_span
from .ops import _private_stream, zero_copy
from .runtime import DeviceBuffer
from .tensor import Tensor, acl_dtype_of, as_dtype, unborrowable_reason

__all__ = ["call", "scalar", "OPS"]

OPS = optable.by_name()


class scalar:
    """An aclScalar value with an explicit dtype: ``scalar(0.5, np.float16)``."""

    def __init__(self, value, dtype):
        self.value, self.dtype = value, as_dtype(dtype)


def _scalar_handle(stack, v):
    if isinstance(v, scalar):
        arr = np.array([v.value], dtype=v.dtype)
    elif isinstance(v, (bool, np.bool_)):
        arr = np.array([bool(v)], dtype=np.bool_)
    elif isinstance(v, (int, np.integer)) and not isinstance(v, np.generic):
        arr = np.array([v], dtype=np.int64)
    elif isinstance(v, float):
        arr = np.array([v], dtype=np.float64)
    elif isinstance(v, np.generic):
        arr = np.array([v])
    else:
        raise TypeError("a scalar must be a number, a numpy scalar or pyaclnn.aclnn.scalar, got %r" % (v,))
    h = lib.aclCreateScalar(ffi.cast("void *", arr.ctypes.data), acl_dtype_of(arr.dtype))
    if h == ffi.NULL:
        raise MemoryError("aclCreateScalar failed")
    stack.callback(lib.aclDestroyScalar, h)
    return h


class _Tensors:
    """aclTensors over the call's arrays: borrowed in place (one registration
    per group of overlapping buffers) on the cpu backend, device copies (and
    copies back for outputs) otherwise."""

    def __init__(self, stack):
        self.stack = stack
        self.back = []  # (device Tensor, array) to copy back after the run

    def make(self, items):
        """items: [(array, is_output)] -> [Tensor]."""
        out = [None] * len(items)
        spans = []
        for i, (a, is_out) in enumerate(items):
            dt = as_dtype(a.dtype)
            if is_out and not a.flags.writeable:
                raise ValueError("output %d is a read-only array" % i)
            if zero_copy() and a.size and unborrowable_reason(a, dt) is None:
                spans.append((*buffer_span(a), i))
            else:
                out[i] = self._copy(a, is_out)
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
            except BorrowError:
                for i in members:
                    out[i] = self._copy(*items[i])
                continue
            self.stack.callback(host_range.close)
            for i in members:
                out[i] = self.stack.enter_context(Tensor._over_host(items[i][0], host_range, False))
        return out

    def _copy(self, a, is_out):
        t = self.stack.enter_context(Tensor(a))
        if is_out:
            self.back.append((t, a))
        return t

    def copy_back(self):
        for t, a in self.back:
            a[...] = t.numpy()


def call(name, *args):
    """Runs aclnn<name>(*args) (see the module docstring); returns its outputs."""
    o = OPS.get(name)
    if o is None:
        raise KeyError("no operator aclnn%s in the op table" % name)
    params = o.parsed()
    if len(args) != len(params):
        raise TypeError("aclnn%s takes %d arguments (%s), got %d" % (
            name, len(params), ", ".join(p.name for p in params), len(args)))
    runtime.ensure_initialized()
    with contextlib.ExitStack() as stack:
        tensors = _Tensors(stack)
        items, where = [], []
        for i, (p, v) in enumerate(zip(params, args)):
            if p.kind == "TENSOR" and v is not None:
                items.append((np.asarray(v), p.io != "IN"))
                where.append((i, None))
            elif p.kind == "TENSOR_LIST" and v is not None:
                for k, a in enumerate(v):
                    items.append((np.asarray(a), p.io != "IN"))
                    where.append((i, k))
        made = tensors.make(items) if items else []
        by_param = {}
        for (i, k), t in zip(where, made):
            by_param.setdefault(i, []).append(t)
        c_args, outputs = [], []
        for i, (p, v) in enumerate(zip(params, args)):
            c_args.append(_c_arg(stack, p, v, by_param.get(i)))
            if p.io != "IN" and p.kind == "TENSOR" and v is not None:
                outputs.append(v)
        if o.single:
            res = ffi.new("uint64_t *")
            c_args[-1] = res
            check(getattr(lib, "aclnn" + name)(*c_args), "aclnn" + name)
            return int(res[0])
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        check(getattr(lib, "aclnn%sGetWorkspaceSize" % name)(*c_args, ws, ex), "aclnn%sGetWorkspaceSize" % name)
        stream = _private_stream()
        workspace = stack.enter_context(DeviceBuffer(ws[0])) if ws[0] else None
        try:
            check(getattr(lib, "aclnn" + name)(workspace.cdata if workspace else ffi.NULL, ws[0], ex[0],
                                               stream.handle), "aclnn" + name)
            stream.synchronize()
        except BaseException:
            lib.aclrtSynchronizeStream(stream.handle)
            raise
        tensors.copy_back()
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _c_arg(stack, p, v, tensors):
    if v is None:
        return ffi.NULL if p.kind not in ("INT", "FLOAT", "BOOL", "DTYPE") else 0
    k = p.kind
    if k == "TENSOR":
        return tensors[0].handle
    if k == "TENSOR_LIST":
        # the list owns its tensors: give it handles of its own (views of the same memory)
        hs = []
        for t in tensors or []:
            h = lib.aclCreateTensor(*_tensor_desc(t))
            if h == ffi.NULL:
                raise MemoryError("aclCreateTensor failed")
            hs.append(h)
        lst = lib.aclCreateTensorList(ffi.new("aclTensor *[]", hs), len(hs))
        if lst == ffi.NULL:
            raise MemoryError("aclCreateTensorList failed")
        stack.callback(lib.aclDestroyTensorList, lst)
        return lst
    if k == "SCALAR":
        return _scalar_handle(stack, v)
    if k == "SCALAR_LIST":
        hs = [_scalar_handle(contextlib.ExitStack(), x) for x in v]
        lst = lib.aclCreateScalarList(ffi.new("aclScalar *[]", hs), len(hs))
        stack.callback(lib.aclDestroyScalarList, lst)
        return lst
    if k == "INT_ARRAY":
        vals = [int(x) for x in v]
        h = lib.aclCreateIntArray(ffi.new("int64_t[]", vals), len(vals))
        stack.callback(lib.aclDestroyIntArray, h)
        return h
    if k == "BOOL_ARRAY":
        vals = [bool(x) for x in v]
        h = lib.aclCreateBoolArray(ffi.new("bool[]", vals), len(vals))
        stack.callback(lib.aclDestroyBoolArray, h)
        return h
    if k == "FLOAT_ARRAY":
        vals = [float(x) for x in v]
        h = lib.aclCreateFloatArray(ffi.new("float[]", vals), len(vals))
        stack.callback(lib.aclDestroyFloatArray, h)
        return h
    if k == "DTYPE":
        return v if isinstance(v, int) else acl_dtype_of(v)
    if k == "STRING":
        buf = ffi.new("char[]", v.encode())
        stack.callback(lambda b=buf: None)
        return buf
    return v


def _tensor_desc(t):
    """The aclCreateTensor arguments of an existing pyaclnn Tensor."""
    shape = ffi.new("int64_t[]", list(t.shape) or [0])
    strides = ffi.new("int64_t[]", list(t.strides) or [0])
    storage = ffi.new("int64_t[]", list(t.storage_shape) or [0])
    return (shape, len(t.shape), acl_dtype_of(t.dtype), strides, t.offset, lib.ACL_FORMAT_ND, storage,
            len(t.storage_shape), t.buffer.cdata)


def __getattr__(name):
    if name in OPS:
        return lambda *args: call(name, *args)
    raise AttributeError("module 'pyaclnn.aclnn' has no attribute %r" % name)


def __dir__():
    return sorted(list(globals()) + list(OPS))
