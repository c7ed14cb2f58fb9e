"""Work on a created stream waits for the work queued before it on the device's
default (NULL) stream: llama.cpp's CANN backend converts its weights in place with
aclnnTransMatmulWeight on the default stream and reads them from its own stream
with no event in between (test-llama-archs gave wrong logits, now and then, before
this ordering). The default stream does not wait for created streams; work queued
on the default stream after the other stream's task does not hold it back."""
import threading
import time

import numpy as np
import pytest

import pyaclnn
from pyaclnn import ffi, lib

N = 4096


class Gate:
    """A host function queued on a stream (handle) that blocks it until opened."""

    def __init__(self, handle):
        self.opened = threading.Event()
        self.ran = threading.Event()

        def hold(_arg):
            self.ran.set()
            self.opened.wait(30)

        self._cb = ffi.callback("void(void *)", hold)  # must outlive the task
        pyaclnn.check(lib.aclrtLaunchHostFunc(handle, self._cb, ffi.NULL), "aclrtLaunchHostFunc")
        assert self.ran.wait(10)

    def open(self):
        self.opened.set()


class Marker:
    """A host function that records when it ran."""

    def __init__(self, handle):
        self.ran = threading.Event()
        self._cb = ffi.callback("void(void *)", lambda _arg: self.ran.set())
        pyaclnn.check(lib.aclrtLaunchHostFunc(handle, self._cb, ffi.NULL), "aclrtLaunchHostFunc")


def device_buffer(nbytes):
    p = ffi.new("void **")
    pyaclnn.check(lib.aclrtMalloc(p, nbytes, lib.ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")
    return p[0]


def test_created_stream_waits_for_the_default_stream(runtime):
    with pyaclnn.Stream() as s:
        gate = Gate(ffi.NULL)
        m = Marker(s.handle)
        time.sleep(0.2)
        assert not m.ran.is_set(), "work on a created stream ran before the default stream's earlier work"
        gate.open()
        assert m.ran.wait(10)
        pyaclnn.check(lib.aclrtSynchronizeStream(s.handle), "aclrtSynchronizeStream")
    pyaclnn.check(lib.aclrtSynchronizeStream(ffi.NULL), "aclrtSynchronizeStream")


def test_default_stream_data_is_visible_to_a_created_stream(runtime):
    """An async copy on the default stream, then a copy of its result on a created
    stream (no event): the second sees the first's bytes even when the default
    stream is held up."""
    src = np.arange(N, dtype=np.float32)
    a, b = device_buffer(N * 4), device_buffer(N * 4)
    out = np.zeros(N, np.float32)
    try:
        pyaclnn.check(lib.aclrtMemset(a, N * 4, 0, N * 4), "aclrtMemset")
        with pyaclnn.Stream() as s:
            gate = Gate(ffi.NULL)
            pyaclnn.check(lib.aclrtMemcpyAsync(a, N * 4, ffi.cast("void *", src.ctypes.data), N * 4,
                                               lib.ACL_MEMCPY_HOST_TO_DEVICE, ffi.NULL), "aclrtMemcpyAsync")
            pyaclnn.check(lib.aclrtMemcpyAsync(b, N * 4, a, N * 4, lib.ACL_MEMCPY_DEVICE_TO_DEVICE, s.handle),
                          "aclrtMemcpyAsync")
            time.sleep(0.05)
            gate.open()
            pyaclnn.check(lib.aclrtSynchronizeStream(s.handle), "aclrtSynchronizeStream")
        pyaclnn.check(lib.aclrtMemcpy(ffi.cast("void *", out.ctypes.data), N * 4, b, N * 4,
                                      lib.ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy")
        assert np.array_equal(out, src)
    finally:
        pyaclnn.check(lib.aclrtSynchronizeDevice(), "aclrtSynchronizeDevice")
        assert lib.aclrtFree(a) == 0 and lib.aclrtFree(b) == 0


def test_later_default_work_does_not_hold_back_a_created_stream(runtime):
    """Only the default stream's work queued *before* the task counts."""
    with pyaclnn.Stream() as s:
        m = Marker(s.handle)
        assert m.ran.wait(10)
        pyaclnn.check(lib.aclrtSynchronizeStream(s.handle), "aclrtSynchronizeStream")
        m2 = Marker(s.handle)  # queued before the gate below
        assert m2.ran.wait(10)
        gate = Gate(ffi.NULL)
        try:
            pyaclnn.check(lib.aclrtSynchronizeStream(s.handle), "aclrtSynchronizeStream")
        finally:
            gate.open()
    pyaclnn.check(lib.aclrtSynchronizeStream(ffi.NULL), "aclrtSynchronizeStream")


def test_default_stream_does_not_wait_for_created_streams(runtime):
    with pyaclnn.Stream() as s:
        gate = Gate(s.handle)
        try:
            m = Marker(ffi.NULL)
            assert m.ran.wait(10), "the default stream waited for a created stream"
        finally:
            gate.open()
        pyaclnn.check(lib.aclrtSynchronizeStream(s.handle), "aclrtSynchronizeStream")
    pyaclnn.check(lib.aclrtSynchronizeStream(ffi.NULL), "aclrtSynchronizeStream")


def test_many_threads_default_then_created(runtime):
    """Threads that alternate default-stream and created-stream copies of the same
    buffers always see the default stream's value (no event between them)."""
    errors = []

    def worker(k):
        try:
            pyaclnn.check(lib.aclrtSetDevice(0), "aclrtSetDevice")
            a, b = device_buffer(N * 4), device_buffer(N * 4)
            got = np.zeros(N, np.float32)
            with pyaclnn.Stream() as s:
                for i in range(20):
                    v = np.full(N, k * 100 + i, np.float32)
                    pyaclnn.check(lib.aclrtMemcpyAsync(a, N * 4, ffi.cast("void *", v.ctypes.data), N * 4,
                                                       lib.ACL_MEMCPY_HOST_TO_DEVICE, ffi.NULL), "aclrtMemcpyAsync")
                    pyaclnn.check(lib.aclrtMemcpyAsync(b, N * 4, a, N * 4, lib.ACL_MEMCPY_DEVICE_TO_DEVICE,
                                                       s.handle), "aclrtMemcpyAsync")
                    pyaclnn.check(lib.aclrtMemcpyAsync(ffi.cast("void *", got.ctypes.data), N * 4, b, N * 4,
                                                       lib.ACL_MEMCPY_DEVICE_TO_HOST, s.handle), "aclrtMemcpyAsync")
                    pyaclnn.check(lib.aclrtSynchronizeStream(s.handle), "aclrtSynchronizeStream")
                    pyaclnn.check(lib.aclrtSynchronizeStream(ffi.NULL), "aclrtSynchronizeStream")
                    if not np.array_equal(got, v):
                        errors.append((k, i))
            assert lib.aclrtFree(a) == 0 and lib.aclrtFree(b) == 0
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
