"""Host memory that kernels use in place: ranges registered with aclrtHostRegister.

On the CPU backend device memory is host memory, so a numpy array can be given
to a kernel as it is once its memory is registered (aclrtHostRegister is CANN's
own way to let a device use host memory). The runtime refuses overlapping
registrations, while arrays often share memory (the same array passed twice,
views of one buffer). So pyaclnn registers the whole underlying buffer of an
array (the memory of the base array it is a view of) once and counts its
users; the last user's release unregisters it.

Large outputs come from a small cache of memory blocks (:func:`empty`): fresh
memory from the OS costs a page fault and a zero fill per page on first
write, which for a 128 MiB output takes longer than the softmax kernel itself.
A block goes back to the cache when its array (and every view of it) is gone.
"""
import mmap
import os
import threading
import weakref

import numpy as np

from ._errors import get_recent_err_msg
from ._ffi import ffi, lib
from .runtime import ensure_initialized

__all__ = ["HostRange", "BorrowError", "byte_span", "buffer_span", "registered_ranges", "empty",
           "empty_cache", "cached_bytes"]


class BorrowError(ValueError):
    """An array cannot be used in place by the kernels (the message says why)."""


def byte_span(array):
    """[lo, hi) byte addresses a non-empty view touches."""
    addr = array.__array_interface__["data"][0]
    lo = hi = 0
    for n, s in zip(array.shape, array.strides):
        if n > 1:
            if s < 0:
                lo += (n - 1) * s
            else:
                hi += (n - 1) * s
    return addr + lo, addr + hi + array.itemsize


def buffer_span(array):
    """[lo, hi) of the underlying buffer: the span of the base array the view
    belongs to (following .base through ndarrays), widened to cover the view."""
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    lo, hi = byte_span(array)
    if root is not array and root.size:
        rlo, rhi = byte_span(root)
        lo, hi = min(lo, rlo), max(hi, rhi)
    return lo, hi


class _Entry:
    __slots__ = ("lo", "hi", "dev", "users")

    def __init__(self, lo, hi, dev):
        self.lo, self.hi, self.dev, self.users = lo, hi, dev, 1


class HostRange:
    """One user's hold on a registered range covering [lo, hi).

    ``device_address(addr)`` maps a host address inside it to the device address
    kernels must be given (the same address on the CPU backend). ``close()``
    drops the hold (idempotent); the range is unregistered with its last hold."""

    __slots__ = ("lo", "hi", "_entry", "__weakref__")

    def __init__(self, entry, lo, hi):
        self._entry = entry
        self.lo, self.hi = lo, hi

    @property
    def closed(self):
        return self._entry is None

    def device_address(self, addr):
        entry = self._entry
        if entry is None:
            raise ValueError("host range is released")
        if not self.lo <= addr < self.hi:
            raise ValueError("address %#x is outside the range [%#x, %#x)" % (addr, self.lo, self.hi))
        return entry.dev + (addr - entry.lo)

    def close(self):
        entry, self._entry = self._entry, None
        if entry is not None:
            _registry.release(entry, wait=True)

    def __del__(self):
        entry, self._entry = getattr(self, "_entry", None), None
        if entry is not None:
            try:
                _registry.release(entry, wait=False)
            except Exception:
                pass  # interpreter teardown

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Registry:
    def __init__(self):
        self._lock = threading.Lock()
        self._entries = []   # live registrations made by pyaclnn (few: a linear scan is fine)
        self._deferred = []  # entries released by the garbage collector while the lock was busy

    def acquire(self, lo, hi):
        """A HostRange covering [lo, hi). Raises BorrowError when the memory is
        partly inside a range in use, or the runtime refuses the registration."""
        ensure_initialized()  # aclrtHostRegister needs a device
        with self._lock:
            self._drain()
            for e in self._entries:
                if e.lo <= lo and hi <= e.hi:
                    e.users += 1
                    return HostRange(e, lo, hi)
                if lo < e.hi and e.lo < hi:
                    raise BorrowError(
                        "memory [%#x, %#x) partly overlaps the registered range [%#x, %#x) of another "
                        "array in use (arrays sharing memory without being views of one base array)"
                        % (lo, hi, e.lo, e.hi))
            dev = ffi.new("void **")
            status = lib.aclrtHostRegister(ffi.cast("void *", lo), hi - lo,
                                           lib.ACL_HOST_REGISTER_MAPPED, dev)
            if status != 0:
                raise BorrowError("aclrtHostRegister failed with status %d: %s"
                                  % (status, get_recent_err_msg()))
            e = _Entry(lo, hi, int(ffi.cast("uintptr_t", dev[0])))
            self._entries.append(e)
            return HostRange(e, lo, hi)

    def release(self, entry, wait):
        if not self._lock.acquire(wait):
            self._deferred.append(entry)  # the garbage collector ran inside acquire()
            return
        try:
            self._drop(entry)
            self._drain()
        finally:
            self._lock.release()

    def _drain(self):
        while self._deferred:
            self._drop(self._deferred.pop())

    def _drop(self, entry):
        entry.users -= 1
        if entry.users == 0:
            self._entries.remove(entry)
            lib.aclrtHostUnregister(ffi.cast("void *", entry.lo))  # cannot fail: we registered it

    def ranges(self):
        with self._lock:
            self._drain()
            return [(e.lo, e.hi, e.users) for e in self._entries]


_registry = _Registry()


def acquire(lo, hi):
    return _registry.acquire(lo, hi)


def registered_ranges():
    """[(lo, hi, users)] of the ranges pyaclnn has registered now."""
    return _registry.ranges()


# ---------------------------------------------------------------- output cache

_CACHE_MIN_BYTES = 4 << 20  # smaller arrays: np.empty (malloc reuses its own memory)


def _cache_limit():
    try:
        return max(0, int(os.environ.get("PYACLNN_OUTPUT_CACHE_MB", "1024"))) << 20
    except ValueError:
        return 1024 << 20


class _BlockCache:
    """Anonymous mappings of whole pages, kept for reuse after their array dies,
    up to PYACLNN_OUTPUT_CACHE_MB (default 1024; 0 turns the cache off)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._free = {}  # size in bytes -> [mmap]
        self._bytes = 0

    def empty(self, shape, dtype):
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        limit = _cache_limit()
        if nbytes < _CACHE_MIN_BYTES or nbytes > limit:
            return np.empty(shape, dtype)
        size = -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE
        with self._lock:
            blocks = self._free.get(size)
            block = blocks.pop() if blocks else None
            if block is not None:
                self._bytes -= size
        if block is None:
            # private: shared anonymous memory is shmem, which gets no transparent huge pages
            block = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            if hasattr(block, "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
                try:
                    block.madvise(mmap.MADV_HUGEPAGE)
                except OSError:
                    pass
        array = np.ndarray(shape, dtype, buffer=block)
        weakref.finalize(array, self._give_back, block, size).atexit = False
        return array

    def _give_back(self, block, size):
        with self._lock:
            if self._bytes + size <= _cache_limit():
                self._free.setdefault(size, []).append(block)
                self._bytes += size

    def clear(self):
        with self._lock:
            freed, self._free, self._bytes = self._bytes, {}, 0
        return freed

    def cached_bytes(self):
        return self._bytes


_cache = _BlockCache()
empty = _cache.empty


def empty_cache():
    """Return the cached output blocks to the OS; the number of bytes freed."""
    return _cache.clear()


def cached_bytes():
    """Bytes of output blocks cached for reuse now."""
    return _cache.cached_bytes()
