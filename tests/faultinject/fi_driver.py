"""Fault-injection driver for the Python binding (the counterpart of fi_driver.c),
run under libfaultinject.so: the runtime through pyaclnn (init, streams, events,
device buffers, async copies), the four ops through the one-call helpers
(zero-copy: host registration) and one through the two-phase API.

Every step that fails must raise AclError with the status its call gives when
that resource runs out (expected_status) and a message naming the call; the
step is then retried once. Exit status: 0 and "RESULT <hash>" when every step
succeeded (the caller compares the hash with a run without faults), 3
("GAVE-UP") when a retry failed too under FI_MODE=from, 1 when a check failed.

    python fi_driver.py            one run, armed by FI_FUNC / FI_N / FI_MODE
    python fi_driver.py --serve    runs the cases read from stdin ("FUNC N MODE
                                   [TIMEOUT]" lines, N 0 = count only) and
                                   prints one JSON line per case

Importing pyaclnn takes over a second (cffi parses the headers), so --serve
imports it and loads the library once, then forks a child per case: the child
arms the injector (fi_arm) and runs main() on the fresh, never-initialised
library it inherited. Up to PYACLNN_FI_JOBS (default 2) children run at once.
"""
import gc
import hashlib
import os
import sys

os.environ["PYACLNN_NSA_RELAXED"] = "1"  # fp32 and a small head dim, read when the library loads

import numpy as np  # noqa: E402

import pyaclnn  # noqa: E402
from pyaclnn import AclError, ops  # noqa: E402
from pyaclnn._ffi import ffi, lib  # noqa: E402

FROM = os.environ.get("FI_MODE") == "from"
# The status each call gives when a resource runs out (as in fi_driver.c):
# host memory for the runtime's records 200000, memory the call asked for
# 207001, a thread or lock 207005, an op's executor 561101, its launch 561103.
ASKS_MEMORY = {"aclrtMalloc", "aclrtMallocHost", "aclrtReserveMemAddress", "aclrtMallocPhysical",
               "aclrtMapMem", "aclrtUnmapMem"}
MAKES_THREADS = {"aclrtCreateStream", "aclrtCreateStreamWithConfig", "aclrtCreateEvent",
                 "aclrtCreateEventWithFlag", "aclrtSynchronizeStream"}


def expected_status(api, status):
    if api.endswith("GetWorkspaceSize"):
        return status == 561101
    if api.startswith("aclnn") or api.startswith("aclCreate"):
        return status == 561103  # a launch or its task; pyaclnn raises 561103 for a NULL handle
    if status == 200000:
        return True
    if api in ASKS_MEMORY:
        return status == 207001
    return api in MAKES_THREADS and status == 207005
T1, T2, N1, N2, HD, BLK, CNT = 8, 16, 2, 1, 8, 4, 2


def fail(text):
    print("fi_driver.py: FAILED: " + text, flush=True)
    os._exit(1)


failures = 0


def step(name, fn):
    """fn() retried once after an AclError for an exhausted resource."""
    global failures
    for attempt in (0, 1):
        try:
            return fn()
        except AclError as e:
            failures += 1
            print("step %s: %s failed with %d (%s)" % (name, e.api, e.status, e.message), flush=True)
            if not expected_status(e.api, e.status):
                fail("%s: unexpected status %d" % (e.api, e.status))
            if not e.message or e.api not in e.message:
                fail("%s: the message %r does not name the call" % (e.api, e.message))
            if not FROM and failures > 1:
                fail("a second failure after one injected fault")
    if not FROM:
        fail("step %s: the retry failed" % name)
    print("GAVE-UP %s" % name, flush=True)
    sys.stdout.flush()
    os._exit(3)  # the process ends here; what it made goes with it


def inputs():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 4, 32), dtype=np.float32) * 3
    grad = rng.standard_normal(x.shape, dtype=np.float32)
    mask = np.zeros((1, 1, 4, 32), bool)
    mask[..., 20:] = True
    q = rng.standard_normal((T1, N1, HD), dtype=np.float32)
    k = rng.standard_normal((T2, N2, HD), dtype=np.float32)
    v = rng.standard_normal((T2, N2, HD), dtype=np.float32)
    dout = rng.standard_normal((T1, N1, HD), dtype=np.float32)
    topk = ((np.arange(T1 * N2 * CNT) % CNT + np.arange(T1 * N2 * CNT) // CNT) % (T2 // BLK))
    return x, grad, mask, q, k, v, dout, topk.astype(np.int32).reshape(T1, N2, CNT)


def main(data=None):
    x, grad, mask, q, k, v, dout, topk = data if data is not None else inputs()
    nsa = dict(scale_value=0.35, head_num=N1, selected_block_size=BLK, selected_block_count=CNT,
               actual_seq_qlen=[T1], actual_seq_kvlen=[T2])
    step("init", pyaclnn.ensure_initialized)
    s = step("stream", pyaclnn.Stream)
    e0 = step("event", pyaclnn.Event)
    e1 = step("event", pyaclnn.Event)
    step("record", lambda: e0.record(s))

    y = step("softmax forward", lambda: ops.scaled_masked_softmax(x, mask, scale=0.75))
    dx = step("softmax backward", lambda: ops.scaled_masked_softmax_backward(grad, y, mask, scale=0.75))
    ao, smax, ssum = step("nsa forward", lambda: ops.nsa_selected_attention(q, k, v, topk, **nsa))
    dq, dk, dv = step("nsa backward", lambda: ops.nsa_selected_attention_grad(
        q, k, v, ao, dout, smax, ssum, topk, **nsa))

    def two_phase():
        with pyaclnn.Tensor(grad) as g, pyaclnn.Tensor(y) as yt, pyaclnn.Tensor(mask) as m, \
                pyaclnn.Tensor.empty(grad.shape, grad.dtype) as out:
            ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g, yt, m, 0.75, False, out)
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, s)
            s.synchronize()
            return out.numpy()
    dx2 = step("two-phase softmax backward", two_phase)
    if not np.array_equal(dx, dx2):
        fail("the two-phase backward differs from the one-call helper")

    def copies():
        with pyaclnn.DeviceBuffer(dq.nbytes) as a, pyaclnn.DeviceBuffer(dq.nbytes) as b:
            a.copy_from_host(dq)
            pyaclnn.memcpy_async(b, b.nbytes, a, a.nbytes, lib.ACL_MEMCPY_DEVICE_TO_DEVICE, s)
            s.synchronize()
            pyaclnn.synchronize_device()
            return np.frombuffer(b.to_host(), np.float32).reshape(dq.shape)
    dq2 = step("copies", copies)
    if not np.array_equal(dq, dq2):
        fail("the copied dq differs")

    def timing():
        e1.record(s)
        e1.synchronize()
        return pyaclnn.Event.elapsed_ms(e0, e1)
    ms = step("events", timing)
    if not ms >= 0:
        fail("elapsed time %r" % (ms,))
    step("runtime info", pyaclnn.runtime_info)

    h = hashlib.sha256()
    for a in (y, dx, ao, smax, ssum, dq, dk, dv):
        h.update(np.ascontiguousarray(a).tobytes())
    for obj in (e0, e1, s):
        obj.close()
    ops.empty_cache()
    gc.collect()
    left = lib.pyaclnnCountHandles(0)
    if left != 0:
        fail("%d aclnn handles left" % left)
    for kind in range(4):  # device blocks, pinned host blocks, registrations, mappings
        left = lib.pyaclnnCountMemRanges(kind, ffi.NULL)
        if left != 0:
            fail("%d memory ranges of kind %d left" % (left, kind))
    free, total = pyaclnn.get_mem_info()
    if free != total:
        fail("%d bytes of device capacity not credited back" % (total - free))
    print("RESULT %s" % h.hexdigest()[:16], flush=True)


COUNTED = ("malloc", "calloc", "realloc", "aligned_alloc", "posix_memalign", "mmap", "pthread_create",
           "memfd_create", "pthread_mutex_init", "pthread_cond_init", "fopen")


def _injector():
    import ctypes
    fi = ctypes.CDLL(None)
    if not hasattr(fi, "fi_arm"):
        fail("libfaultinject.so is not preloaded")
    fi.fi_arm.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_int]
    fi.fi_calls.argtypes = [ctypes.c_char_p]
    fi.fi_calls.restype = ctypes.c_long
    fi.fi_injected.restype = ctypes.c_long
    return fi


def _child(fi, data, func, n, mode, wfd):
    os.dup2(wfd, 1)
    os.dup2(wfd, 2)
    global FROM
    FROM = mode == "from"
    fi.fi_arm(func.encode(), n, int(FROM))
    try:
        main(data)
    except BaseException as e:  # an escape from the steps is a failure too
        print("fi_driver.py: FAILED: %s: %s" % (type(e).__name__, e), flush=True)
        os._exit(1)
    fi.fi_disarm()
    if n == 0:
        print("COUNTS " + " ".join("%s=%d" % (f, fi.fi_calls(f.encode())) for f in COUNTED), flush=True)
    print("INJECTED %d" % fi.fi_injected(), flush=True)
    os._exit(0)


def serve():
    import json
    import select
    import signal
    import time
    fi = _injector()
    fi.fi_disarm()
    # Everything a child would otherwise load or allocate lazily, before forking:
    # the library, cffi's and ctypes' thread-local state, extension modules.
    lib.aclrtGetSocName()
    fi.fi_injected()
    json.dumps({})
    hashlib.sha256(b"")
    arrays = inputs()
    jobs = max(1, int(os.environ.get("PYACLNN_FI_JOBS", "2")))
    cases = [line.split() for line in sys.stdin if line.strip()]
    running = {}  # pid -> (case, read fd, deadline, chunks)
    while cases or running:
        while cases and len(running) < jobs:
            case = cases.pop(0)
            func, n, mode = case[0], int(case[1]), case[2]
            timeout = float(case[3]) if len(case) > 3 else 30.0
            r, w = os.pipe()
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                _child(fi, arrays, func, n, mode, w)
            os.close(w)
            running[pid] = (case, r, time.monotonic() + timeout, [])
        ready, _, _ = select.select([v[1] for v in running.values()], [], [], 0.05)
        for pid, (case, r, deadline, chunks) in list(running.items()):
            if r in ready:
                data = os.read(r, 65536)
                if data:
                    chunks.append(data)
                    continue
            done, status = os.waitpid(pid, os.WNOHANG)
            hung = done == 0 and time.monotonic() > deadline
            if hung:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            elif done == 0:
                continue
            while True:
                data = os.read(r, 65536)
                if not data:
                    break
                chunks.append(data)
            os.close(r)
            del running[pid]
            rc = "timeout" if hung else (os.WEXITSTATUS(status) if os.WIFEXITED(status)
                                         else -os.WTERMSIG(status))
            print(json.dumps({"case": case[:3], "rc": rc,
                              "out": b"".join(chunks).decode("utf-8", "replace")}), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        main()
