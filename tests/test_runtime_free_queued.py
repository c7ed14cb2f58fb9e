"""Device memory as llama.cpp's CANN backend (ggml-cann) uses it: every device
block is at least 512-byte aligned, and aclrtFree of a buffer that queued work
still uses returns at once while that work still runs on it (deferred release:
the memory comes back once the work queued before the free has finished).
tests/c/test_free_queued.c covers the same from C, with threads, under the
sanitizers."""
import threading
import time

import numpy as np
import pytest

import pyaclnn
from pyaclnn import AclError, ffi, lib

from conftest import run_python

RETIRED = 4  # pyaclnnCountMemRanges kind: freed blocks that work queued before the free may still use
N = 1024     # floats per test buffer
MIB = 1 << 20


class Gate:
    """A host function queued on a stream that blocks the stream until opened."""

    def __init__(self, stream):
        self.opened = threading.Event()
        self.ran = threading.Event()

        def hold(_arg):
            self.ran.set()
            self.opened.wait(30)

        self._cb = ffi.callback("void(void *)", hold)  # must outlive the task
        pyaclnn.check(lib.aclrtLaunchHostFunc(stream.handle, self._cb, ffi.NULL), "aclrtLaunchHostFunc")
        assert self.ran.wait(10)

    def open(self):
        self.opened.set()


def used():
    free, total = pyaclnn.get_mem_info()
    return total - free


def retired():
    return lib.pyaclnnCountMemRanges(RETIRED, ffi.NULL)


def malloc(nbytes=N * 4, policy=None):
    p = ffi.new("void **")
    pyaclnn.check(lib.aclrtMalloc(p, nbytes, lib.ACL_MEM_MALLOC_HUGE_FIRST if policy is None else policy),
                  "aclrtMalloc")
    return p[0]


def read(ptr):
    out = np.empty(N, np.float32)
    pyaclnn.check(lib.aclrtMemcpy(ffi.cast("void *", out.ctypes.data), out.nbytes, ptr, out.nbytes,
                                  lib.ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy")
    return out


class Ops:
    """aclnnInplaceFillScalar / aclnnInplaceCopy on raw device pointers, queued
    without synchronising (the descriptors are kept until close())."""

    def __init__(self):
        self._keep = []

    def _tensor(self, ptr):
        dims, strides = ffi.new("int64_t[]", [N]), ffi.new("int64_t[]", [1])
        t = lib.aclCreateTensor(dims, 1, lib.ACL_FLOAT, strides, 0, lib.ACL_FORMAT_ND, dims, 1, ptr)
        assert t != ffi.NULL
        self._keep.append(("t", t))
        return t

    def _launch(self, name, stream, *args):
        ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
        pyaclnn.check(getattr(lib, "aclnn%sGetWorkspaceSize" % name)(*args, ws, ex), "aclnn%s" % name)
        assert ws[0] == 0
        pyaclnn.check(getattr(lib, "aclnn" + name)(ffi.NULL, 0, ex[0], stream.handle), "aclnn" + name)

    def fill(self, ptr, value, stream):
        v = ffi.new("float *", value)
        s = lib.aclCreateScalar(v, lib.ACL_FLOAT)
        assert s != ffi.NULL
        self._keep.append(("s", s))
        self._launch("InplaceFillScalar", stream, self._tensor(ptr), s)

    def copy(self, dst, src, stream):
        self._launch("InplaceCopy", stream, self._tensor(dst), self._tensor(src))

    def close(self):
        for kind, h in self._keep:
            assert (lib.aclDestroyTensor(h) if kind == "t" else lib.aclDestroyScalar(h)) == 0
        self._keep = []


@pytest.fixture
def ops(runtime):
    o = Ops()
    yield o
    o.close()


@pytest.fixture
def quiet(runtime):
    """No work left queued on the device (any queued task delays a free)."""
    pyaclnn.synchronize_device()


SIZES = [1, 2, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 500, 511, 512, 513, 1000, 1024,
         4095, 4096, 4097, 65536, 100000, MIB - 32, MIB, 2 * MIB - 64, 2 * MIB - 31, 2 * MIB, 2 * MIB + 1,
         3 * MIB + 7, 6 * MIB]


def test_every_device_allocation_is_512_byte_aligned(runtime, quiet):
    """aclrtMalloc / MallocAlign32 / MallocCached under every policy, from 1 byte to
    several MiB, many at once (so addresses are not simply reused): 512-byte aligned,
    2 MiB aligned from 2 MiB up with a huge-page policy; aclrtMallocHost too. The
    capacity charged is unchanged by the alignment (CANN's size rounding)."""
    used0 = used()
    policies = [lib.ACL_MEM_MALLOC_HUGE_FIRST, lib.ACL_MEM_MALLOC_HUGE_ONLY, lib.ACL_MEM_MALLOC_NORMAL_ONLY,
                lib.ACL_MEM_MALLOC_HUGE_FIRST_P2P, lib.ACL_MEM_MALLOC_NORMAL_ONLY_P2P]
    p = ffi.new("void **")
    for policy in policies:
        huge = policy not in (lib.ACL_MEM_MALLOC_NORMAL_ONLY, lib.ACL_MEM_MALLOC_NORMAL_ONLY_P2P)
        for _ in range(3):
            live = []
            for size in SIZES:
                for fn, extra in ((lib.aclrtMalloc, 32), (lib.aclrtMallocAlign32, 0), (lib.aclrtMallocCached, 32)):
                    assert fn(p, size, policy) == 0
                    addr = int(ffi.cast("uintptr_t", p[0]))
                    live.append(p[0])
                    charged = (size + 31) // 32 * 32 + extra
                    assert addr % 512 == 0, (fn, size, policy, hex(addr))
                    if huge and charged >= 2 * MIB:
                        assert addr % (2 * MIB) == 0, (fn, size, policy, hex(addr))
                    assert lib.aclrtMemset(p[0], charged, 0x5A, charged) == 0  # all of it usable
            expect = sum((s + 31) // 32 * 32 * 3 + 64 for s in SIZES)
            assert used() - used0 == expect
            for q in live:
                assert lib.aclrtFree(q) == 0
            assert used() == used0
    for _ in range(5):
        live = []
        for size in SIZES:
            assert lib.aclrtMallocHost(p, size) == 0
            assert int(ffi.cast("uintptr_t", p[0])) % 512 == 0, size
            live.append(p[0])
        for q in live:
            assert lib.aclrtFreeHost(q) == 0
    assert retired() == 0


def test_free_while_queued_work_uses_the_buffer(runtime, quiet, stream, ops):
    """ggml-cann frees cache buffers its queued ops still read: the free returns at
    once, the ops succeed on the buffer, the memory comes back after them."""
    used0 = used()
    b, c = malloc(), malloc()
    both = used() - used0
    gate = Gate(stream)
    ops.fill(b, 3.5, stream)
    ops.copy(c, b, stream)  # reads b after the free
    t0 = time.monotonic()
    assert lib.aclrtFree(b) == 0  # does not wait for the blocked stream
    assert time.monotonic() - t0 < 5
    assert not stream.query()
    assert retired() == 1
    assert used() - used0 == both  # still counted until the work is done
    assert lib.aclrtFree(b) == lib.ACL_ERROR_INVALID_PARAM  # a double free, as before
    assert "double free" in pyaclnn.get_recent_err_msg()
    gate.open()
    stream.synchronize()  # the fill and the copy succeeded
    assert np.all(read(c) == 3.5)
    assert retired() == 0  # released before the synchronise returned
    assert used() - used0 == both // 2
    assert lib.aclrtFree(c) == 0
    assert used() == used0


def test_launch_after_the_free_is_refused(runtime, quiet, stream, ops):
    """Work queued after the free may not use the block (507015 at synchronize, as
    for any freed block), even while earlier work still runs on it."""
    used0 = used()
    b, c = malloc(), malloc()
    gate = Gate(stream)
    ops.fill(b, 2.0, stream)
    ops.copy(c, b, stream)
    assert lib.aclrtFree(b) == 0
    with pyaclnn.Stream() as other:  # not blocked: runs while b is still held for the earlier work
        ops.fill(b, 1.0, other)
        with pytest.raises(AclError) as info:
            other.synchronize()
        assert info.value.status == lib.ACL_ERROR_RT_AICORE_EXCEPTION
        assert "not inside one device allocation" in info.value.message
        assert "freed by aclrtFree" in info.value.message
    assert retired() == 1
    ops.fill(b, 9.0, stream)  # the same stream, behind the earlier work
    gate.open()
    with pytest.raises(AclError) as info:
        stream.synchronize()
    assert info.value.status == lib.ACL_ERROR_RT_AICORE_EXCEPTION
    assert "not inside one device allocation" in info.value.message
    assert np.all(read(c) == 2.0)  # the work queued before the free was not affected
    assert retired() == 0
    assert lib.aclrtFree(c) == 0
    assert used() == used0


def test_free_without_queued_work_releases_at_once(runtime, quiet, stream, ops):
    used0 = used()
    b = malloc()
    assert used() > used0
    ops.fill(b, 4.0, stream)
    stream.synchronize()
    assert lib.aclrtFree(b) == 0
    assert retired() == 0
    assert used() == used0


def test_free_from_a_host_function(runtime, quiet, stream, ops):
    """aclrtFree called by a stream callback must not wait for its own stream; a copy
    queued (before the callback ran) behind it still reads the buffer."""
    used0 = used()
    b, c = malloc(), malloc()
    result = {}

    def free_it(_arg):
        result["rc"] = lib.aclrtFree(b)
        result["retired"] = retired()

    cb = ffi.callback("void(void *)", free_it)
    gate = Gate(stream)  # everything below is queued before the callback runs
    ops.fill(b, 6.0, stream)
    pyaclnn.check(lib.aclrtLaunchHostFunc(stream.handle, cb, ffi.NULL), "aclrtLaunchHostFunc")
    ops.copy(c, b, stream)
    gate.open()
    stream.synchronize()
    assert result == {"rc": 0, "retired": 1}
    assert np.all(read(c) == 6.0)
    assert retired() == 0
    assert lib.aclrtFree(c) == 0
    assert used() == used0


TEARDOWN = r"""
import threading
import pyaclnn
from pyaclnn import ffi, lib

def check(rc, what):
    assert rc == 0, (what, rc, pyaclnn.get_recent_err_msg())

def fill(ptr, value, stream):
    dims, strides = ffi.new("int64_t[]", [1024]), ffi.new("int64_t[]", [1])
    t = lib.aclCreateTensor(dims, 1, lib.ACL_FLOAT, strides, 0, lib.ACL_FORMAT_ND, dims, 1, ptr)
    s = lib.aclCreateScalar(ffi.new("float *", value), lib.ACL_FLOAT)
    ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    check(lib.aclnnInplaceFillScalarGetWorkspaceSize(t, s, ws, ex), "GetWorkspaceSize")
    check(lib.aclnnInplaceFillScalar(ffi.NULL, 0, ex[0], stream), "aclnnInplaceFillScalar")
    return t, s

gate = threading.Event()

@ffi.callback("void(void *)")
def hold(_arg):
    gate.wait(30)

def open_soon():  # while the main thread waits in the teardown call
    threading.Timer(0.1, gate.set).start()

def queued_free(stream):
    gate.clear()
    p = ffi.new("void **")
    check(lib.aclrtMalloc(p, 4096, 0), "aclrtMalloc")
    check(lib.aclrtLaunchHostFunc(stream, hold, ffi.NULL), "aclrtLaunchHostFunc")
    keep = fill(p[0], 1.0, stream)
    n = lib.pyaclnnCountMemRanges(4, ffi.NULL)
    check(lib.aclrtFree(p[0]), "aclrtFree")
    assert lib.pyaclnnCountMemRanges(4, ffi.NULL) == n + 1  # deferred
    return keep

def nothing_left():
    free, total = pyaclnn.get_mem_info()
    assert free == total, (free, total)
    assert lib.pyaclnnCountMemRanges(4, ffi.NULL) == 0
    assert lib.pyaclnnCountMemRanges(0, ffi.NULL) == 0

pyaclnn.ensure_initialized()
st = ffi.new("aclrtStream *")
# a force-destroyed stream's dropped tasks no longer hold the block
check(lib.aclrtCreateStream(st), "aclrtCreateStream")
keep = queued_free(st[0])
open_soon()
check(lib.aclrtDestroyStreamForce(st[0]), "aclrtDestroyStreamForce")
nothing_left()
# aclrtResetDevice drains the device's streams: everything deferred is released
check(lib.aclrtCreateStream(st), "aclrtCreateStream")
keep = queued_free(st[0]), queued_free(ffi.NULL)
open_soon()
check(lib.aclrtResetDevice(0), "aclrtResetDevice")
check(lib.aclrtSetDevice(0), "aclrtSetDevice")
nothing_left()
# aclFinalize too
check(lib.aclrtCreateStream(st), "aclrtCreateStream")
keep = queued_free(st[0])
open_soon()
check(lib.aclFinalize(), "aclFinalize")
check(lib.aclInit(ffi.NULL), "aclInit")
check(lib.aclrtSetDevice(0), "aclrtSetDevice")
nothing_left()
check(lib.aclrtResetDevice(0), "aclrtResetDevice")
print("ok")
"""


def test_reset_and_finalize_release_deferred_frees():
    assert run_python(TEARDOWN).stdout.strip().endswith("ok")
