"""Pythonic wrappers over the AscendCL runtime (aclInit, devices, streams,
events, memory). Every failure raises :class:`pyaclnn.AclError`.

Objects that own a runtime resource (Stream, Event, DeviceBuffer, and Tensor /
executors built on them) release it on ``close()``, as context managers, or
when garbage collected. Streams and events created before ``finalize()`` are
released by it and never destroyed a second time; device memory is still
returned with aclrtFree (errors ignored), so collection at interpreter exit is
safe. ``finalize()`` runs automatically at exit when this package initialised
the runtime.

Like CANN, work on a stream is asynchronous: memory used by queued work must
stay alive until the stream is synchronized. Objects handed to a launch
through this package (tensors, workspaces, host buffers of async copies) are
kept referenced by the stream until its next successful synchronize.
"""
import atexit
import json
import threading

import numpy as np

from ._args import as_int
from ._errors import AclError, check, get_recent_err_msg
from ._ffi import as_ptr, c_string, ffi, lib

__all__ = [
    "init", "ensure_initialized", "finalize", "is_initialized",
    "set_device", "reset_device", "get_device", "get_device_count", "synchronize_device",
    "get_version", "get_soc_name", "get_cann_version", "get_mem_info",
    "Stream", "Event", "DeviceBuffer", "elapsed_ms", "synchronize_stream",
    "memcpy", "memcpy_async", "memset",
    "runtime_info", "set_max_isa", "get_isa", "set_num_threads", "get_num_threads",
    "get_recent_err_msg",
]

_lock = threading.RLock()
_initialized = False     # aclInit succeeded (by us) and finalize() not called since
_atexit_registered = False
_generation = 0          # bumped by finalize(): older handles are already gone
_tls = threading.local()  # .device_gen: generation in which this thread set a device
_default_pending = []    # objects kept alive for work queued on the default stream


# ---------------------------------------------------------------- init

def init(config=None):
    """aclInit(config). Raises AclError (e.g. ACL_ERROR_REPEAT_INITIALIZE) like C."""
    global _initialized
    with _lock:
        check(lib.aclInit(_cstr(config)), "aclInit")
        _initialized = True
        _register_atexit()


def ensure_initialized():
    """Initialise the runtime once per process (aclInit) and select device 0 once
    per thread (aclrtSetDevice) unless the thread already chose a device with
    :func:`set_device`. Safe to call any number of times."""
    generation = _init_process()
    if getattr(_tls, "device_gen", None) != generation:
        check(lib.aclrtSetDevice(0), "aclrtSetDevice")
        _tls.device_gen = generation


def _init_process():
    """aclInit once per process (tolerating an aclInit made elsewhere);
    returns the current runtime generation."""
    global _initialized
    with _lock:
        if not _initialized:
            status = lib.aclInit(ffi.NULL)
            if status != lib.ACL_ERROR_REPEAT_INITIALIZE:
                check(status, "aclInit")
                # Ours: finalize at exit. A runtime another client initialised
                # (torch_npu, C code in this process) is theirs to finalize: its
                # exit handlers may still use their streams after ours ran.
                _register_atexit()
            _initialized = True
        return _generation


def is_initialized():
    return _initialized


def finalize():
    """aclFinalize(). Every resource created before is considered released."""
    global _initialized, _generation
    with _lock:
        try:
            check(lib.aclFinalize(), "aclFinalize")
        finally:
            _initialized = False
            _generation += 1
            del _default_pending[:]


def _register_atexit():
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(_finalize_at_exit)
        _atexit_registered = True


def _finalize_at_exit():
    if _initialized:
        try:
            finalize()
        except Exception:
            pass


def _current_generation():
    return _generation


def _alive(generation):
    """True while the runtime that created a resource of `generation` is up."""
    return generation == _generation


# ---------------------------------------------------------------- devices

def set_device(device_id):
    """aclrtSetDevice(device_id) for the calling thread."""
    _init_process()
    check(lib.aclrtSetDevice(as_int("device_id", device_id)), "aclrtSetDevice")
    _tls.device_gen = _generation




def reset_device(device_id):
    """aclrtResetDevice(device_id)."""
    check(lib.aclrtResetDevice(as_int("device_id", device_id)), "aclrtResetDevice")
    _tls.device_gen = None


def get_device():
    out = ffi.new("int32_t *")
    check(lib.aclrtGetDevice(out), "aclrtGetDevice")
    return out[0]


def get_device_count():
    out = ffi.new("uint32_t *")
    check(lib.aclrtGetDeviceCount(out), "aclrtGetDeviceCount")
    return out[0]


def synchronize_device(timeout_ms=None):
    """Wait for all work on the current device (aclrtSynchronizeDevice[WithTimeout])."""
    if timeout_ms is None:
        check(lib.aclrtSynchronizeDevice(), "aclrtSynchronizeDevice")
    else:
        check(lib.aclrtSynchronizeDeviceWithTimeout(as_int("timeout_ms", timeout_ms)),
              "aclrtSynchronizeDeviceWithTimeout")
    del _default_pending[:]


def get_version():
    """(major, minor, patch) from aclrtGetVersion."""
    v = ffi.new("int32_t[3]")
    check(lib.aclrtGetVersion(v, v + 1, v + 2), "aclrtGetVersion")
    return tuple(v)


def get_soc_name():
    return c_string(lib.aclrtGetSocName())


def get_cann_version(package=None):
    """The CANN version string (aclsysGetCANNVersion), e.g. "8.3.RC1"."""
    v = ffi.new("aclCANNPackageVersion *")
    name = lib.ACL_PKG_NAME_CANN if package is None else package
    check(lib.aclsysGetCANNVersion(name, v), "aclsysGetCANNVersion")
    return ffi.string(v.version).decode()


def get_mem_info(attr=None):
    """(free, total) device memory in bytes (aclrtGetMemInfo), e.g. to size workspaces."""
    free, total = ffi.new("size_t *"), ffi.new("size_t *")
    check(lib.aclrtGetMemInfo(lib.ACL_HBM_MEM if attr is None else attr, free, total), "aclrtGetMemInfo")
    return free[0], total[0]


# ---------------------------------------------------------------- helpers

def _cstr(s):
    if s is None:
        return ffi.NULL
    if isinstance(s, str):
        s = s.encode()
    return ffi.new("char[]", s)


def _host_source(data):
    """(void* cdata, nbytes, keepalive) for bytes-like objects and numpy arrays."""
    if isinstance(data, np.ndarray):
        arr = np.ascontiguousarray(data)
        return ffi.cast("void *", arr.ctypes.data), arr.nbytes, arr
    view = memoryview(data).cast("B")
    return ffi.from_buffer(view), view.nbytes, view


def _host_dest(out):
    """(void* cdata, nbytes, keepalive) for a writable C-contiguous buffer."""
    if isinstance(out, np.ndarray):
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("destination array must be writable and C-contiguous")
        return ffi.cast("void *", out.ctypes.data), out.nbytes, out
    view = memoryview(out).cast("B")
    if view.readonly:
        raise ValueError("destination buffer is read-only")
    return ffi.from_buffer(view, require_writable=True), view.nbytes, view


def _ptr_arg(x):
    """Pointer argument: DeviceBuffer / int / cdata / None, or a host buffer."""
    if x is None or isinstance(x, (int, ffi.CData, DeviceBuffer)):
        return as_ptr(x), None
    ptr, _, keep = _host_source(x)
    return ptr, keep


# ---------------------------------------------------------------- streams

def _stream_handle(stream):
    if stream is None:
        return ffi.NULL
    if isinstance(stream, Stream):
        return stream.handle
    if isinstance(stream, ffi.CData):
        return stream
    raise TypeError("stream must be a pyaclnn.Stream, an aclrtStream cdata or None, got %r"
                    % type(stream).__name__)


def _keep_until_sync(stream, objs):
    """Keep `objs` referenced until `stream` (None = default) is synchronized."""
    if isinstance(stream, Stream):
        stream._pending.extend(objs)
    elif stream is None:
        _default_pending.extend(objs)


def synchronize_stream(stream=None, timeout_ms=None):
    """aclrtSynchronizeStream[WithTimeout]; stream None is the default stream.
    A failure of queued work is raised here as AclError."""
    handle = _stream_handle(stream)
    if timeout_ms is None:
        check(lib.aclrtSynchronizeStream(handle), "aclrtSynchronizeStream")
    else:
        check(lib.aclrtSynchronizeStreamWithTimeout(handle, as_int("timeout_ms", timeout_ms)),
              "aclrtSynchronizeStreamWithTimeout")
    if isinstance(stream, Stream):
        del stream._pending[:]
    elif stream is None:
        del _default_pending[:]


class Stream:
    """An aclrtStream. ``with Stream() as s:`` synchronizes and destroys it on exit."""

    def __init__(self, priority=None, flags=None):
        ensure_initialized()
        out = ffi.new("aclrtStream *")
        if priority is None and flags is None:
            check(lib.aclrtCreateStream(out), "aclrtCreateStream")
        else:
            check(lib.aclrtCreateStreamWithConfig(out, as_int("priority", priority or 0),
                                                  as_int("flags", flags or 0)),
                  "aclrtCreateStreamWithConfig")
        self._handle = out[0]
        self._gen = _generation
        self._pending = []

    @property
    def handle(self):
        """The aclrtStream cdata (raises ValueError once destroyed)."""
        if self._handle is None:
            raise ValueError("stream is destroyed")
        return self._handle

    def synchronize(self, timeout_ms=None):
        synchronize_stream(self, timeout_ms)

    def query(self):
        """True when all queued work has completed (aclrtStreamQuery)."""
        status = ffi.new("aclrtStreamStatus *")
        check(lib.aclrtStreamQuery(self.handle, status), "aclrtStreamQuery")
        return status[0] == lib.ACL_STREAM_STATUS_COMPLETE

    def wait_event(self, event):
        """Make later work on this stream wait for `event` (aclrtStreamWaitEvent)."""
        check(lib.aclrtStreamWaitEvent(self.handle, event.handle), "aclrtStreamWaitEvent")

    def record(self, event=None):
        """Record an event (a new one if None) on this stream and return it."""
        event = event if event is not None else Event()
        event.record(self)
        return event

    def close(self):
        """aclrtDestroyStream (no-op if already destroyed or after finalize())."""
        handle, self._handle = self._handle, None
        if handle is not None and _alive(self._gen):
            check(lib.aclrtDestroyStream(handle), "aclrtDestroyStream")
        del self._pending[:]

    destroy = close

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self._handle is not None:
                if exc_type is None:
                    self.synchronize()
                else:
                    lib.aclrtSynchronizeStream(self._handle)  # best effort
        finally:
            self.close()

    def __del__(self):
        try:
            if self._handle is not None and _alive(self._gen):
                lib.aclrtSynchronizeStream(self._handle)
                lib.aclrtDestroyStream(self._handle)
            self._handle = None
        except Exception:
            pass

    def __repr__(self):
        return "<pyaclnn.Stream %s>" % ("destroyed" if self._handle is None else self._handle)


# ---------------------------------------------------------------- events

class Event:
    """An aclrtEvent."""

    def __init__(self, flags=None):
        ensure_initialized()
        out = ffi.new("aclrtEvent *")
        if flags is None:
            check(lib.aclrtCreateEvent(out), "aclrtCreateEvent")
        else:
            check(lib.aclrtCreateEventWithFlag(out, as_int("flags", flags)), "aclrtCreateEventWithFlag")
        self._handle = out[0]
        self._gen = _generation

    @property
    def handle(self):
        if self._handle is None:
            raise ValueError("event is destroyed")
        return self._handle

    def record(self, stream=None):
        check(lib.aclrtRecordEvent(self.handle, _stream_handle(stream)), "aclrtRecordEvent")
        return self

    def reset(self, stream=None):
        check(lib.aclrtResetEvent(self.handle, _stream_handle(stream)), "aclrtResetEvent")

    def synchronize(self, timeout_ms=None):
        if timeout_ms is None:
            check(lib.aclrtSynchronizeEvent(self.handle), "aclrtSynchronizeEvent")
        else:
            check(lib.aclrtSynchronizeEventWithTimeout(self.handle, as_int("timeout_ms", timeout_ms)),
                  "aclrtSynchronizeEventWithTimeout")

    def query(self):
        """True once the recorded work has completed (aclrtQueryEventStatus)."""
        status = ffi.new("aclrtEventRecordedStatus *")
        check(lib.aclrtQueryEventStatus(self.handle, status), "aclrtQueryEventStatus")
        return status[0] == lib.ACL_EVENT_RECORDED_STATUS_COMPLETE

    @staticmethod
    def elapsed_ms(start, end):
        """Milliseconds between two recorded events (aclrtEventElapsedTime)."""
        ms = ffi.new("float *")
        check(lib.aclrtEventElapsedTime(ms, start.handle, end.handle), "aclrtEventElapsedTime")
        return float(ms[0])

    def close(self):
        handle, self._handle = self._handle, None
        if handle is not None and _alive(self._gen):
            check(lib.aclrtDestroyEvent(handle), "aclrtDestroyEvent")

    destroy = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if self._handle is not None and _alive(self._gen):
                lib.aclrtDestroyEvent(self._handle)
            self._handle = None
        except Exception:
            pass


elapsed_ms = Event.elapsed_ms


# ---------------------------------------------------------------- memory

class DeviceBuffer:
    """One aclrtMalloc allocation of `nbytes` bytes (uninitialised).

    ``.ptr`` is the address as an int, ``.cdata`` the ``void *``. Freed with
    aclrtFree on ``close()``, on leaving a ``with`` block, or when collected.
    """

    def __init__(self, nbytes, policy=None):
        ensure_initialized()
        nbytes = as_int("nbytes", nbytes)
        policy = lib.ACL_MEM_MALLOC_HUGE_FIRST if policy is None else as_int("policy", policy)
        out = ffi.new("void **")
        check(lib.aclrtMalloc(out, nbytes, policy), "aclrtMalloc")
        self._ptr = out[0]
        self._gen = _generation
        self.nbytes = nbytes

    @property
    def cdata(self):
        if self._ptr is None:
            raise ValueError("device buffer is freed")
        return self._ptr

    @property
    def ptr(self):
        return int(ffi.cast("uintptr_t", self.cdata))

    @property
    def closed(self):
        return self._ptr is None

    def _at(self, offset, count):
        offset, count = as_int("offset", offset), as_int("count", count)
        if offset < 0 or offset > self.nbytes:
            raise ValueError("offset %d outside a %d-byte buffer" % (offset, self.nbytes))
        return ffi.cast("char *", self.cdata) + offset, self.nbytes - offset, count

    def copy_from_host(self, data, offset=0):
        """Copy a bytes-like object or numpy array (its elements in C order)
        to the buffer at byte `offset` (synchronous aclrtMemcpy)."""
        src, count, keep = _host_source(data)
        dst, dest_max, count = self._at(offset, count)
        check(lib.aclrtMemcpy(dst, dest_max, src, count, lib.ACL_MEMCPY_HOST_TO_DEVICE),
              "aclrtMemcpy")
        del keep

    def copy_to_host(self, out, offset=0):
        """Fill a writable C-contiguous host buffer / array from byte `offset`."""
        dst, count, keep = _host_dest(out)
        src, _, count = self._at(offset, count)
        check(lib.aclrtMemcpy(dst, count, src, count, lib.ACL_MEMCPY_DEVICE_TO_HOST),
              "aclrtMemcpy")
        del keep
        return out

    def to_host(self, nbytes=None, offset=0):
        """Bytes of the buffer (all of it from `offset`, or `nbytes` of them)."""
        if nbytes is None:
            nbytes = self.nbytes - as_int("offset", offset)
        return bytes(self.copy_to_host(bytearray(as_int("nbytes", nbytes)), offset))

    def close(self):
        """aclrtFree (no-op if already freed). After finalize() the free is still
        attempted, but a failure is not reported: the runtime owns the memory."""
        ptr, self._ptr = self._ptr, None
        if ptr is not None:
            status = lib.aclrtFree(ptr)
            if _alive(self._gen):
                check(status, "aclrtFree")

    free = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if self._ptr is not None:
                lib.aclrtFree(self._ptr)
            self._ptr = None
        except Exception:
            pass  # interpreter teardown: the module globals may be gone

    def __repr__(self):
        state = "freed" if self._ptr is None else hex(self.ptr)
        return "<pyaclnn.DeviceBuffer %d bytes at %s>" % (self.nbytes, state)


def memcpy(dst, dest_max, src, count, kind):
    """aclrtMemcpy. dst/src: DeviceBuffer, int address, cdata, or (src only, or a
    writable dst) a host buffer / numpy array."""
    dst_ptr, dst_keep = _dst_arg(dst)
    src_ptr, src_keep = _ptr_arg(src)
    check(lib.aclrtMemcpy(dst_ptr, as_int("dest_max", dest_max), src_ptr, as_int("count", count),
                          as_int("kind", kind)), "aclrtMemcpy")
    del dst_keep, src_keep


def memcpy_async(dst, dest_max, src, count, kind, stream=None):
    """aclrtMemcpyAsync. Host buffers passed here stay referenced by the stream
    until it is synchronized."""
    dst_ptr, dst_keep = _dst_arg(dst)
    src_ptr, src_keep = _ptr_arg(src)
    check(lib.aclrtMemcpyAsync(dst_ptr, as_int("dest_max", dest_max), src_ptr, as_int("count", count),
                               as_int("kind", kind),
                               _stream_handle(stream)), "aclrtMemcpyAsync")
    _keep_until_sync(stream, [o for o in (dst, src, dst_keep, src_keep) if o is not None])


def memset(dst, max_count, value, count):
    """aclrtMemset(dst, max_count, value, count)."""
    dst_ptr, keep = _dst_arg(dst)
    check(lib.aclrtMemset(dst_ptr, as_int("max_count", max_count), as_int("value", value),
                          as_int("count", count)), "aclrtMemset")
    del keep


def _dst_arg(x):
    if x is None or isinstance(x, (int, ffi.CData, DeviceBuffer)):
        return as_ptr(x), None
    ptr, _, keep = _host_dest(x)
    return ptr, keep


# ---------------------------------------------------------------- pyaclnn extensions

def runtime_info():
    """Runtime description (ISA tier, threads, version, ...) as a dict.
    cpu backend only: raises NotImplementedError under the cann backend."""
    text = c_string(lib.pyaclnnGetRuntimeInfo())
    if text is None:  # no memory for the text
        raise AclError(lib.ACL_ERROR_BAD_ALLOC, "pyaclnnGetRuntimeInfo", get_recent_err_msg())
    return json.loads(text)


def set_max_isa(tier):
    """Cap the kernels' SIMD tier: "scalar", "avx2", "avx512", "avx512bf16", or None to reset."""
    check(lib.pyaclnnSetMaxIsa(_cstr(tier)), "pyaclnnSetMaxIsa")


def get_isa():
    """The SIMD tier kernels use now."""
    return c_string(lib.pyaclnnGetIsa())


def set_num_threads(n):
    """Kernel worker threads (0 = default)."""
    check(lib.pyaclnnSetNumThreads(as_int("n", n)), "pyaclnnSetNumThreads")


def get_num_threads():
    return int(lib.pyaclnnGetNumThreads())
