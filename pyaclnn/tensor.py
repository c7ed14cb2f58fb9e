"""numpy arrays as aclTensors.

A :class:`Tensor` mirrors a numpy array the way torch_npu mirrors a torch
tensor: the array's whole storage (the memory of the base array it is a view
of) is copied into ONE device allocation, and the aclTensor's view shape,
strides and offset (in elements) reproduce the numpy view on it. A strided
slice therefore stays a strided aclTensor instead of being made contiguous.

:meth:`Tensor.borrow` instead uses the array's memory in place, registered
with aclrtHostRegister (see ``pyaclnn._hostmem``): no copy at all.
"""
import ml_dtypes
import numpy as np

from ._args import MAX_DIMS, as_int, as_int_list
from ._errors import AclError, check, get_recent_err_msg
from ._ffi import ffi, lib
from ._hostmem import BorrowError, acquire as _acquire_host, buffer_span, byte_span
from .runtime import DeviceBuffer, ensure_initialized

__all__ = ["Tensor", "as_dtype", "acl_dtype_of", "SUPPORTED_DTYPES", "BorrowError"]

# numpy dtype -> aclDataType member name
_ACL_DTYPE_NAMES = (
    (np.dtype(np.float32), "ACL_FLOAT"),
    (np.dtype(np.float16), "ACL_FLOAT16"),
    (np.dtype(ml_dtypes.bfloat16), "ACL_BF16"),
    (np.dtype(np.float64), "ACL_DOUBLE"),
    (np.dtype(np.bool_), "ACL_BOOL"),
    (np.dtype(np.int8), "ACL_INT8"),
    (np.dtype(np.uint8), "ACL_UINT8"),
    (np.dtype(np.int16), "ACL_INT16"),
    (np.dtype(np.uint16), "ACL_UINT16"),
    (np.dtype(np.int32), "ACL_INT32"),
    (np.dtype(np.uint32), "ACL_UINT32"),
    (np.dtype(np.int64), "ACL_INT64"),
    (np.dtype(np.uint64), "ACL_UINT64"),
)
_TO_ACL = {dt: getattr(lib, name) for dt, name in _ACL_DTYPE_NAMES}
_FROM_ACL = {v: dt for dt, v in _TO_ACL.items()}
SUPPORTED_DTYPES = tuple(_TO_ACL)

_DTYPE_ALIASES = {"bfloat16": ml_dtypes.bfloat16, "bf16": ml_dtypes.bfloat16,
                  "fp16": np.float16, "half": np.float16, "fp32": np.float32}


def as_dtype(dtype):
    """numpy dtype for a numpy/ml_dtypes type, a dtype, a name ("float16",
    "bfloat16", ...) or an aclDataType value (int). Raises TypeError for types
    aclTensor cannot hold."""
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        try:
            return _FROM_ACL[int(dtype)]
        except KeyError:
            raise TypeError("unsupported aclDataType %d" % dtype) from None
    if isinstance(dtype, str):
        dtype = _DTYPE_ALIASES.get(dtype.lower(), dtype)
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError("not a dtype: %r" % (dtype,)) from e
    if dt.newbyteorder("=") not in _TO_ACL:
        raise TypeError("dtype %s has no aclDataType; supported: %s"
                        % (dt, ", ".join(str(d) for d in SUPPORTED_DTYPES)))
    return dt.newbyteorder("=")


def acl_dtype_of(dtype):
    """aclDataType value of a numpy dtype (TypeError if unsupported)."""
    return _TO_ACL[as_dtype(dtype)]


def _extent(shape, byte_strides):
    """(lowest, highest) byte offsets reached by a view, relative to element 0."""
    lo = hi = 0
    for n, s in zip(shape, byte_strides):
        if n > 1:
            if s < 0:
                lo += (n - 1) * s
            else:
                hi += (n - 1) * s
    return lo, hi


def _root(array):
    """The ndarray at the bottom of a chain of views."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _storage_of(array):
    """Describe `array` as (first byte address of its storage, storage
    elements, element offset, element strides); all None if the view cannot be
    expressed in whole elements with non-negative strides. The storage is the
    memory span of the base array the view belongs to (`array` must be kept
    alive while the address is used)."""
    item = array.itemsize
    if array.size == 0:
        return 0, 0, 0, (0,) * array.ndim
    root = _root(array)
    if any(s < 0 for s in array.strides):
        return None, None, None, None
    addr = array.__array_interface__["data"][0]
    root_addr = root.__array_interface__["data"][0]
    root_lo, root_hi = _extent(root.shape, root.strides)
    start, stop = root_addr + root_lo, root_addr + root_hi + root.itemsize
    _, view_hi = _extent(array.shape, array.strides)
    byte_offset = addr - start
    if (byte_offset % item or any(s % item for s in array.strides)
            or addr < start or addr + view_hi + item > stop):
        return None, None, None, None
    return start, (stop - start) // item, byte_offset // item, tuple(s // item for s in array.strides)


def unborrowable_reason(array, dt):
    """Why kernels cannot use `array`'s memory in place as dtype `dt` (None if they can)."""
    if array.dtype != dt:
        return "its dtype %s is not the kernels' %s (a byte-swapped or other dtype)" % (
            array.dtype.str, dt)
    if array.size == 0:
        return "it is empty"
    item = array.itemsize
    if not array.flags.aligned or array.__array_interface__["data"][0] % item:
        return "its data is not aligned to its %d-byte elements" % item
    if any(s < 0 for s in array.strides):
        return "it has negative strides %s" % (array.strides,)
    if any(s % item for s in array.strides):
        return "its strides %s are not whole %d-byte elements" % (array.strides, item)
    return None


class _HostMemory:
    """The memory of a borrowed array, as seen by the device: ``cdata`` is the
    device address of the lowest byte the view touches."""

    def __init__(self, host_range, lo, nbytes, owns_range):
        self._range = host_range
        self._owns_range = owns_range
        self._ptr = ffi.cast("void *", host_range.device_address(lo))
        self.nbytes = nbytes

    @property
    def cdata(self):
        if self._ptr is None:
            raise ValueError("borrowed memory is released")
        return self._ptr

    @property
    def ptr(self):
        return int(ffi.cast("uintptr_t", self.cdata))

    @property
    def closed(self):
        return self._ptr is None

    def close(self):
        self._ptr = None
        if self._owns_range:
            self._range.close()


class Tensor:
    """An aclTensor over device memory holding a copy of a numpy array, or
    over the array itself (:meth:`borrow`).

    ``Tensor(array)`` copies the array's storage to the device and keeps its
    view (shape, strides, offset); ``Tensor.empty(shape, dtype)`` allocates an
    uninitialised contiguous output. ``numpy()`` copies the view back.

    Supported dtypes: float32, float16, bfloat16 (ml_dtypes), float64, bool,
    int8/16/32/64, uint8/16/32/64. Arrays with negative strides are copied to a
    contiguous array first.
    """

    array = None  # the borrowed numpy array (None for a device copy)
    writable = True

    def __init__(self, array, *, dtype=None, format=None):
        array = np.asarray(array)
        dt = as_dtype(array.dtype if dtype is None else dtype)
        if array.dtype != dt:  # also fixes a non-native byte order
            array = array.astype(dt)
        start, storage_elems, offset, strides = _storage_of(array)
        if start is None:  # negative or odd strides, or misaligned: copy to a plain array
            array = np.array(array, order="C", copy=True)
            start, storage_elems, offset, strides = _storage_of(array)
        buffer = DeviceBuffer(max(storage_elems, 1) * dt.itemsize)
        try:
            if storage_elems:
                check(lib.aclrtMemcpy(buffer.cdata, buffer.nbytes, ffi.cast("void *", start),
                                      storage_elems * dt.itemsize, lib.ACL_MEMCPY_HOST_TO_DEVICE),
                      "aclrtMemcpy")
            self._init(buffer, True, array.shape, dt, strides, offset, (storage_elems,), format)
        except BaseException:
            buffer.close()
            raise

    @classmethod
    def empty(cls, shape, dtype, *, format=None):
        """A contiguous tensor with uninitialised contents (for outputs)."""
        ensure_initialized()
        shape = tuple(as_int_list("shape", shape))
        dt = as_dtype(dtype)
        numel = int(np.prod(shape, dtype=np.int64))
        buffer = DeviceBuffer(max(numel, 1) * dt.itemsize)
        self = cls.__new__(cls)
        try:
            self._init(buffer, True, shape, dt, _contiguous_strides(shape), 0,
                       shape, format)
        except BaseException:
            buffer.close()
            raise
        return self

    @classmethod
    def borrow(cls, array, *, format=None):
        """An aclTensor over `array`'s own memory: no copy (zero-copy).

        The array's underlying buffer is registered with aclrtHostRegister (once
        per buffer, shared by every borrowed view of it) until ``close()``; the
        view keeps its shape and strides. Kernels read inputs from the array and
        write outputs into it: borrow ``np.empty(...)`` for an output and read it
        after ``stream.synchronize()``.

        Lifetime: the array must stay alive and unchanged (no writes, no resize)
        until every stream that uses the tensor is synchronized. The Tensor keeps
        a reference to it, and an Executor or launch keeps the Tensor, so it
        stays alive; don't ``close()`` the Tensor before synchronizing either.

        Meant for the cpu backend, where device memory is host memory. On real
        CANN the tensor uses the device address aclrtHostRegister returns, but CANN
        may refuse memory that is not page-aligned, and NPU kernels read host
        memory slowly: copy with ``Tensor(array)`` there.

        Raises BorrowError (a ValueError) for arrays the kernels cannot use as
        they are: non-native byte order, misaligned data, negative strides, or
        memory that partly overlaps another registered range; TypeError for
        dtypes aclTensor cannot hold. An empty array gets a device tensor.
        """
        array = np.asarray(array)
        dt = as_dtype(array.dtype)
        if array.size == 0:
            return cls(array, format=format)
        reason = unborrowable_reason(array, dt)
        if reason is not None:
            raise BorrowError("Tensor.borrow: the kernels cannot use this array in place: %s; "
                              "Tensor(array) copies it" % reason)
        host_range = _acquire_host(*buffer_span(array))
        try:
            return cls._over_host(array, host_range, True, format)
        except BaseException:
            host_range.close()
            raise

    @classmethod
    def _over_host(cls, array, host_range, owns_range, format=None):
        """A borrowed tensor on `array` (checked by unborrowable_reason) inside
        the registered `host_range`; closing the tensor releases the range when
        `owns_range`."""
        dt = array.dtype
        lo, hi = byte_span(array)  # lo is the data address: no stride is negative
        memory = _HostMemory(host_range, lo, hi - lo, owns_range)
        self = cls.__new__(cls)
        try:
            self._init(memory, True, array.shape, dt, tuple(s // dt.itemsize for s in array.strides),
                       0, ((hi - lo) // dt.itemsize,), format)
        except BaseException:
            memory.close()
            raise
        self.array = array
        self.writable = bool(array.flags.writeable)
        return self

    @classmethod
    def from_buffer(cls, buffer, shape, dtype, *, strides=None, offset=0, format=None):
        """An aclTensor view over an existing DeviceBuffer (not owned: closing the
        tensor leaves the buffer alone). strides/offset are in elements."""
        shape = tuple(as_int_list("shape", shape))
        dt = as_dtype(dtype)
        strides = _contiguous_strides(shape) if strides is None else tuple(as_int_list("strides", strides))
        offset = as_int("offset", offset)
        if len(strides) != len(shape):
            raise ValueError("strides %r do not match shape %r" % (strides, shape))
        storage = buffer.nbytes // dt.itemsize
        lo, hi = _extent(shape, strides)
        if int(np.prod(shape, dtype=np.int64)) and (offset + lo < 0 or offset + hi >= storage):
            raise ValueError("view shape=%r strides=%r offset=%d exceeds the %d-element buffer"
                             % (shape, strides, offset, storage))
        self = cls.__new__(cls)
        self._init(buffer, False, shape, dt, strides, offset, (storage,), format)
        return self

    def _init(self, buffer, owns_buffer, shape, dt, strides, offset, storage_shape, format):
        self._handle = None
        self.buffer = buffer
        self._owns_buffer = owns_buffer
        self.shape = tuple(shape)
        self.dtype = dt
        self.acl_dtype = _TO_ACL[dt]
        self.strides = tuple(strides)
        self.offset = int(offset)
        self.storage_shape = tuple(storage_shape)
        self.format = lib.ACL_FORMAT_ND if format is None else as_int("format", format)
        if len(self.shape) > MAX_DIMS:
            raise ValueError("an aclTensor holds at most %d dims, got shape %r" % (MAX_DIMS, self.shape))
        dims = ffi.new("int64_t[]", self.shape or [0])
        strd = ffi.new("int64_t[]", self.strides or [0])
        storage = ffi.new("int64_t[]", self.storage_shape or [0])
        handle = lib.aclCreateTensor(dims, len(self.shape), self.acl_dtype, strd, self.offset,
                                     self.format, storage, len(self.storage_shape), buffer.cdata)
        if handle == ffi.NULL:
            raise AclError(lib.ACLNN_ERR_INNER_NULLPTR, "aclCreateTensor", get_recent_err_msg())
        self._handle = handle

    @property
    def handle(self):
        """The ``aclTensor *`` cdata."""
        if self._handle is None:
            raise ValueError("tensor is closed")
        return self._handle

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def numpy(self):
        """A new C-contiguous array with the view's current contents.

        This is a synchronous aclrtMemcpy: as with CANN, synchronize the stream
        that writes the tensor before reading it."""
        self.handle  # raises if closed
        if self.array is not None:
            return np.array(self.array, order="C", copy=True)
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        item = self.dtype.itemsize
        if self.strides == _contiguous_strides(self.shape):  # one copy, straight into the result
            return self.buffer.copy_to_host(np.empty(self.shape, self.dtype), self.offset * item)
        lo, hi = _extent(self.shape, self.strides)
        first = self.offset + lo
        host = np.empty(hi - lo + 1, self.dtype)
        self.buffer.copy_to_host(host, first * item)
        view = np.lib.stride_tricks.as_strided(
            host[-lo:], self.shape, tuple(s * item for s in self.strides), writeable=False)
        return view.copy(order="C")

    def close(self):
        """aclDestroyTensor, then free the device memory if the tensor owns it
        (for a borrowed array: release its registration)."""
        handle, self._handle = self._handle, None
        try:
            if handle is not None:
                check(lib.aclDestroyTensor(handle), "aclDestroyTensor")
        finally:
            if self._owns_buffer and self.buffer is not None:
                self.buffer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if getattr(self, "_handle", None) is not None:
                lib.aclDestroyTensor(self._handle)
                self._handle = None
        except Exception:
            pass
        # the DeviceBuffer frees itself when collected

    def __repr__(self):
        return ("<pyaclnn.Tensor shape=%s dtype=%s strides=%s offset=%d%s%s>"
                % (self.shape, self.dtype, self.strides, self.offset,
                   " borrowed" if self.array is not None else "",
                   " closed" if self._handle is None else ""))


def _contiguous_strides(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))
