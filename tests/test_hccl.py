"""HCCL in one process (threads as ranks, the in-process engine): CANN's enum
values and layouts, the collective sweep against rank-order numpy folds,
argument errors, timeouts, stream semantics, HcclCommInitAll, groups and the
device rules. Each scenario runs in a fresh interpreter with
PYACLNN_DEVICE_COUNT=8."""
import json
import pathlib
import time

import pytest

import pyaclnn
import pyaclnn.hccl as hccl
from conftest import run_python

TESTS = pathlib.Path(__file__).resolve().parent

PRELUDE = """
import json, sys, threading, time
import numpy as np
sys.path.insert(0, %r)
import pyaclnn, pyaclnn.hccl as hccl
from pyaclnn.hccl import HcclError

def ranks(n, fn, root=None):
    '''Runs fn(comm, rank, stream) on n threads (device r each); returns their results.'''
    root = hccl.get_root_info() if root is None else root
    out, errs = [None] * n, []
    def work(r):
        try:
            pyaclnn.set_device(r)
            with hccl.Comm(n, root, r) as c, pyaclnn.Stream() as s:
                out[r] = fn(c, r, s)
        except BaseException as e:
            errs.append((r, e))
    th = [threading.Thread(target=work, args=(r,)) for r in range(n)]
    [t.start() for t in th]
    [t.join() for t in th]
    if errs:
        raise errs[0][1]
    return out
""" % str(TESTS)


def run_ranks(code, **env):
    env = dict({"PYACLNN_DEVICE_COUNT": "8"}, **env)
    proc = run_python(PRELUDE + code, env)
    return proc.stdout


def test_enum_values_and_layouts_match_cann():
    lib, ffi = pyaclnn.lib, pyaclnn.ffi
    assert ffi.sizeof("HcclRootInfo") == lib.HCCL_ROOT_INFO_BYTES == 4108
    assert [lib.HCCL_SUCCESS, lib.HCCL_E_PARA, lib.HCCL_E_PTR, lib.HCCL_E_NOT_SUPPORT, lib.HCCL_E_TIMEOUT,
            lib.HCCL_E_TCP_TRANSFER, lib.HCCL_E_REMOTE, lib.HCCL_E_OOM] == [0, 1, 2, 5, 9, 13, 21, 24]
    assert [lib.HCCL_REDUCE_SUM, lib.HCCL_REDUCE_PROD, lib.HCCL_REDUCE_MAX, lib.HCCL_REDUCE_MIN] == [0, 1, 2, 3]
    names = ["INT8", "INT16", "INT32", "FP16", "FP32", "INT64", "UINT64", "UINT8", "UINT16", "UINT32", "FP64",
             "BFP16", "INT128"]
    assert [getattr(lib, "HCCL_DATA_TYPE_" + n) for n in names] == list(range(13))
    assert [lib.HCCL_DATA_TYPE_HIF8, lib.HCCL_DATA_TYPE_FP8E4M3, lib.HCCL_DATA_TYPE_FP8E5M2,
            lib.HCCL_DATA_TYPE_FP8E8M0, lib.HCCL_DATA_TYPE_RESERVED] == [14, 15, 16, 17, 255]
    # the versioned config: a 24-byte header, then the fields at CANN's offsets
    assert lib.HCCL_COMM_CONFIG_MAGIC_WORD == 0xF0F0F0F0 and lib.HCCL_COMM_CONFIG_VERSION == 10
    assert ffi.offsetof("HcclCommConfig", "hcclBufferSize") == 24
    assert ffi.offsetof("HcclCommConfig", "hcclCommName") == 32
    assert ffi.offsetof("HcclCommConfig", "hcclExecTimeOut") == 32 + 128 + 128 + 16 + 8 + 4  # after the uint8 + pad
    assert lib.HCCL_SEND == 0 and lib.HCCL_RECV == 1 and ffi.sizeof("HcclSendRecvItem") == 32
    assert pyaclnn.HCCL_E_TIMEOUT == 9  # module constants
    assert hccl.error_string(lib.HCCL_E_TIMEOUT) == "timeout"


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_every_collective_matches_the_rank_order_fold_threads(n):
    out = run_ranks("""
import hccl_sweep as hs
res = ranks(%d, lambda c, r, s: hs.run(c, r, %d, s))
bad = hs.compare(%d, res)
print(json.dumps({"cases": len(hs.cases(%d)), "bad": [str(b) for b in bad[:5]], "nbad": len(bad)}))
""" % (n, n, n, n))
    got = json.loads(out.splitlines()[-1])
    assert got["nbad"] == 0, got["bad"]
    assert got["cases"] >= 400  # 4 reductions x 9 dtypes x 4 ops (+ in place), 9 movements x 16 dtypes


def test_results_are_identical_across_runs_and_ranks():
    out = run_ranks("""
import hashlib
def fn(c, r, s):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(1000).astype(np.float32) * (r + 1)
    b = pyaclnn.DeviceBuffer(x.nbytes); b.copy_from_host(x)
    c.all_reduce(b, b, x.size, np.float32, "sum", s); s.synchronize()
    return hashlib.sha256(b.to_host()).hexdigest()
print(json.dumps([ranks(n, fn) for n in (3, 3, 8)]))
""")
    a, b, c = json.loads(out.splitlines()[-1])
    assert len(set(a)) == 1 and a == b  # every rank, every run
    assert len(set(c)) == 1


ERRORS = """
res = {}
def rec(name, fn):
    try:
        fn()
        res[name] = [0, ""]
    except HcclError as e:
        res[name] = [e.status, e.message or ""]
lib, ffi = pyaclnn.lib, pyaclnn.ffi
def fn(c, r, s):
    if r != 0:
        c.barrier(s); s.synchronize(); return
    b = pyaclnn.DeviceBuffer(64)
    h = pyaclnn.DeviceBuffer(64)
    rec("null stream", lambda: c.all_reduce(b, b, 4, np.float32, "sum", None))
    rec("null comm", lambda: hccl._check(lib.HcclAllReduce(b.cdata, b.cdata, 4, 4, 0, ffi.NULL, s.handle), "HcclAllReduce"))
    rec("null send", lambda: c.all_reduce(None, b, 4, np.float32, "sum", s))
    rec("count 0 is a no-op", lambda: c.all_reduce(None, None, 0, np.float32, "sum", s))
    rec("bad root", lambda: c.broadcast(b, 4, np.float32, 5, s))
    rec("huge count", lambda: c.all_reduce(b, b, 1 << 40, np.float32, "sum", s))
    rec("uint8 reduce", lambda: c.all_reduce(b, b, 4, np.uint8, "sum", s))
    rec("bf16 prod", lambda: c.all_reduce(b, b, 4, "bfloat16", "prod", s))
    rec("bad op", lambda: c.all_reduce(b, b, 4, np.float32, 7, s))
    rec("int128 move", lambda: c.broadcast(b, 4, lib.HCCL_DATA_TYPE_INT128, 0, s))
    rec("bad dtype", lambda: c.broadcast(b, 4, 13, 0, s))
    rec("send to self", lambda: c.send(b, 4, np.float32, 0, s))
    rec("buffer too small", lambda: c.all_reduce(b, b, 100, np.float32, "sum", s))
    rec("host buffer", lambda: c.all_reduce(np.zeros(4, np.float32).ctypes.data, b, 4, np.float32, "sum", s))
    rec("alltoall in place", lambda: c.all_to_all(b, 2, b, 2, np.float32, s))
    rec("alltoall types", lambda: hccl._check(lib.HcclAlltoAll(b.cdata, 2, 4, h.cdata, 2, 3, c.handle, s.handle), "HcclAlltoAll"))
    rec("stale comm", lambda: hccl._check(lib.HcclGetRankId(ffi.cast("void *", 0x1234), ffi.new("uint32_t *")), "HcclGetRankId"))
    rec("group end without start", lambda: hccl._check(lib.HcclGroupEnd(), "HcclGroupEnd"))
    rec("bad root info", lambda: hccl.Comm(2, bytes(4108), 0))
    rec("rank out of range", lambda: hccl.Comm(2, hccl.get_root_info(), 2))
    c.barrier(s); s.synchronize()
ranks(2, fn)
print(json.dumps(res))
"""


def test_bad_arguments_give_cann_status_codes_with_messages():
    res = json.loads(run_ranks(ERRORS).splitlines()[-1])
    E = pyaclnn.lib
    want = {
        "null stream": (E.HCCL_E_PTR, "stream must not be NULL"),
        "null comm": (E.HCCL_E_PTR, "comm must not be NULL"),
        "null send": (E.HCCL_E_PTR, "sendBuf must not be NULL"),
        "count 0 is a no-op": (0, ""),
        "bad root": (E.HCCL_E_PARA, "root must be below the rank size 2, got 5"),
        "huge count": (E.HCCL_E_PARA, "count must be at most"),
        "uint8 reduce": (E.HCCL_E_NOT_SUPPORT, "uint8 is not supported by reductions"),
        "bf16 prod": (E.HCCL_E_NOT_SUPPORT, "op prod does not support bfloat16"),
        "bad op": (E.HCCL_E_PARA, "op must be HCCL_REDUCE_SUM"),
        "int128 move": (E.HCCL_E_NOT_SUPPORT, "int128 is not supported"),
        "bad dtype": (E.HCCL_E_NOT_SUPPORT, "HcclDataType(13) is not supported"),
        "send to self": (E.HCCL_E_PARA, "destRank must be another rank"),
        "buffer too small": (E.HCCL_E_PARA, "runs past the end of"),
        "host buffer": (E.HCCL_E_PARA, "not inside one device allocation"),
        "alltoall in place": (E.HCCL_E_PARA, "overlap"),
        "alltoall types": (E.HCCL_E_PARA, "sendType float32 and recvType float16 must be the same"),
        "stale comm": (E.HCCL_E_PARA, "is not a live communicator"),
        "group end without start": (E.HCCL_E_PARA, "no HcclGroupStart"),
        "bad root info": (E.HCCL_E_PARA, "was not made by HcclGetRootInfo"),
        "rank out of range": (E.HCCL_E_PARA, "rank must be below nRanks (2), got 2"),
    }
    for name, (status, text) in want.items():
        assert res[name][0] == status, (name, res[name])
        assert text in res[name][1], (name, res[name])


def test_a_missing_rank_times_out_at_init():
    out = run_ranks("""
root = hccl.get_root_info()
pyaclnn.set_device(0)
t0 = time.time()
try:
    hccl.Comm(3, root, 0)
except HcclError as e:
    print(json.dumps([e.status, e.message, time.time() - t0]))
""", HCCL_CONNECT_TIMEOUT="1")
    status, msg, took = json.loads(out.splitlines()[-1])
    assert status == pyaclnn.lib.HCCL_E_TIMEOUT
    assert "1 of 3 ranks joined within HCCL_CONNECT_TIMEOUT (1 s); missing: 1 2" in msg
    assert took < 10


def test_a_missing_peer_fails_the_collective_at_synchronize():
    out = run_ranks("""
root = hccl.get_root_info()
res = {}
gate = threading.Event()
def fn(c, r, s):
    b = pyaclnn.DeviceBuffer(16); b.copy_from_host(np.ones(4, np.float32))
    if r == 0:
        t0 = time.time()
        c.all_reduce(b, b, 4, np.float32, "sum", s)   # rank 1 never comes
        try:
            s.synchronize()
        except pyaclnn.AclError as e:
            res[0] = [e.status, e.message, time.time() - t0, c.async_error()]
        gate.set()
    else:
        gate.wait()
        c.all_reduce(b, b, 4, np.float32, "sum", s)   # too late: the group is broken
        t0 = time.time()
        try:
            s.synchronize()
        except pyaclnn.AclError as e:
            res[1] = [e.status, e.message, time.time() - t0, c.async_error()]
ranks(2, fn, root)
print(json.dumps(res))
""", HCCL_EXEC_TIMEOUT="1")
    res = json.loads(out.splitlines()[-1])
    status, msg, took, async_err = res["0"]
    assert status == pyaclnn.lib.ACL_ERROR_RT_FFTS_PLUS_TIMEOUT  # 507048, the NPU's HCCL task timeout
    assert "rank 0 waited 1000 ms (HCCL_EXEC_TIMEOUT) for rank(s) 1 of 2, which never arrived" in msg
    assert "HcclAllReduce (rank 0 of 2, device 0, in-process engine)" in msg
    assert 0.9 < took < 10 and async_err == pyaclnn.lib.HCCL_E_TIMEOUT
    status, msg, took, async_err = res["1"]
    assert status == pyaclnn.lib.ACL_ERROR_RT_SUSPECT_REMOTE_ERROR and "which never arrived" in msg
    assert took < 1 and async_err == pyaclnn.lib.HCCL_E_REMOTE


def test_mismatched_collectives_fail_on_every_rank_without_moving_data():
    out = run_ranks("""
def fn(c, r, s):
    b = pyaclnn.DeviceBuffer(16); b.copy_from_host(np.full(4, r, np.float32))
    if r == 0:
        c.all_reduce(b, b, 4, np.float32, "sum", s)
    else:
        c.broadcast(b, 4, np.float32, 0, s)
    try:
        s.synchronize()
        return None
    except pyaclnn.AclError as e:
        return [e.status, e.message, b.to_host()[0:4].hex()]
print(json.dumps(ranks(2, fn)))
""")
    for r, (status, msg, data) in enumerate(json.loads(out.splitlines()[-1])):
        assert status == pyaclnn.lib.ACL_ERROR_RT_PARAM_INVALID
        assert "mismatched collectives: rank 0 HcclAllReduce(count 4, float32, sum" in msg
        assert "rank 1 HcclBroadcast" in msg
        assert data == bytes(pyaclnn.ffi.buffer(pyaclnn.ffi.new("float *", r))).hex()  # untouched


def test_collectives_are_stream_tasks_ordered_with_ops_copies_and_events():
    out = run_ranks("""
def fn(c, r, s):
    x = np.arange(8, dtype=np.float32) + r
    b = pyaclnn.DeviceBuffer(x.nbytes)
    host = np.empty_like(x)
    # copy in, reduce, copy out: all queued, one synchronize
    pyaclnn.memcpy_async(b, x.nbytes, x, x.nbytes, pyaclnn.ACL_MEMCPY_HOST_TO_DEVICE, s)
    c.all_reduce(b, b, 8, np.float32, "sum", s)
    pyaclnn.memcpy_async(host, x.nbytes, b, x.nbytes, pyaclnn.ACL_MEMCPY_DEVICE_TO_HOST, s)
    # another stream waits for the reduction through an event
    e = pyaclnn.Event(); e.record(s)
    s2 = pyaclnn.Stream(); s2.wait_event(e)
    y = pyaclnn.DeviceBuffer(x.nbytes)
    pyaclnn.memcpy_async(y, x.nbytes, b, x.nbytes, pyaclnn.ACL_MEMCPY_DEVICE_TO_DEVICE, s2)
    s2.synchronize(); s.synchronize()
    # an aclnn op consumes the reduced tensor on the same stream
    g = pyaclnn.Tensor(np.ones((1, 1, 1, 8), np.float32))
    yt = pyaclnn.Tensor.from_buffer(y, (1, 1, 1, 8), np.float32)
    m = pyaclnn.Tensor(np.zeros((1, 1, 1, 8), bool))
    out = pyaclnn.Tensor.empty((1, 1, 1, 8), np.float32)
    c.all_reduce(y, y, 8, np.float32, "max", s)
    ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g, yt, m, 1.0, False, out)
    pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, s)
    s.synchronize()
    return [host.tolist(), y.copy_to_host(np.empty_like(x)).tolist(), out.numpy().ravel().tolist()]
print(json.dumps(ranks(3, fn)))
""")
    res = json.loads(out.splitlines()[-1])
    want = [3 * i + 3.0 for i in range(8)]
    for host, y, dx in res:
        assert host == want and y == want
        # softmax backward of g = 1 on y: y * (1 - sum(y)), reduced through the op
        s = sum(want)
        assert dx == pytest.approx([v * (1 - s) for v in want], rel=1e-6)


def test_init_all_one_thread_drives_every_device():
    out = run_ranks("""
comms = hccl.Comm.init_all([3, 1, 2, 0])
streams, bufs = [], []
for i, c in enumerate(comms):
    pyaclnn.set_device([3, 1, 2, 0][i])
    s = pyaclnn.Stream(); b = pyaclnn.DeviceBuffer(8)
    b.copy_from_host(np.array([i, 1], np.int32))
    c.all_reduce(b, b, 2, np.int32, "sum", s)     # queued: the next rank's call comes from this thread
    streams.append(s); bufs.append(b)
for s in streams:
    s.synchronize()
print(json.dumps({"vals": [np.frombuffer(b.to_host(), np.int32).tolist() for b in bufs],
                  "ranks": [c.rank for c in comms], "sizes": [c.size for c in comms],
                  "names": len({c.name for c in comms})}))
try:
    hccl.Comm.init_all([0, 0])
except HcclError as e:
    print(json.dumps([e.status, e.message]))
""")
    lines = out.splitlines()
    got = json.loads(lines[-2])
    assert got["vals"] == [[6, 4]] * 4 and got["ranks"] == [0, 1, 2, 3] and got["sizes"] == [4] * 4
    assert got["names"] == 1
    status, msg = json.loads(lines[-1])
    assert status == pyaclnn.lib.HCCL_E_PARA and "are both device 0" in msg


def test_groups_batch_sends_and_receives_of_one_thread():
    out = run_ranks("""
def fn(c, r, s):
    n = c.size
    a = pyaclnn.DeviceBuffer(8); a.copy_from_host(np.array([r, r], np.int32))
    b = pyaclnn.DeviceBuffer(8)
    with hccl.group():             # a ring: without the group, every send would wait for a receive
        c.send(a, 2, np.int32, (r + 1) % n, s)
        c.recv(b, 2, np.int32, (r - 1) % n, s)
    s.synchronize()
    return np.frombuffer(b.to_host(), np.int32).tolist()
print(json.dumps(ranks(4, fn)))
""")
    assert json.loads(out.splitlines()[-1]) == [[3, 3], [0, 0], [1, 1], [2, 2]]


def test_config_names_the_communicator_and_sets_its_timeout():
    out = run_ranks("""
root = hccl.get_root_info()
def work(r):
    pyaclnn.set_device(r)
    return hccl.Comm(2, root, r, {"hcclCommName": "tp_group", "hcclBufferSize": 1024, "hcclDeterministic": 1,
                                  "hcclExecTimeOut": 1})
comms = [None, None]
th = [threading.Thread(target=lambda r=r: comms.__setitem__(r, work(r))) for r in range(2)]
[t.start() for t in th]; [t.join() for t in th]
ffi = pyaclnn.ffi
h = ffi.new("HcclComm *")
pyaclnn.set_device(1)
hccl._check(pyaclnn.lib.HcclCommGetHandleWithName(b"tp_group", h), "HcclCommGetHandleWithName")
s = pyaclnn.Stream(); b = pyaclnn.DeviceBuffer(4)
comms[1].barrier(s)                                # rank 0 never comes: the config's 1 s timeout
t0, status = time.time(), 0
try:
    s.synchronize()
except pyaclnn.AclError as e:
    status = e.status
print(json.dumps([comms[0].name, h[0] == comms[1].handle, status, time.time() - t0]))
""")
    name, found, status, took = json.loads(out.splitlines()[-1])
    assert name == "tp_group" and found
    assert status == pyaclnn.lib.ACL_ERROR_RT_FFTS_PLUS_TIMEOUT and 0.9 < took < 10


def test_device_rules_for_streams_and_buffers():
    out = run_ranks("""
res = {}
def fn(c, r, s):
    mine = pyaclnn.DeviceBuffer(16)
    mine.copy_from_host(np.full(4, 10 * r, np.float32))
    if r == 1:
        c.all_reduce(mine, mine, 4, np.float32, "sum", s); s.synchronize(); return
    pyaclnn.set_device(1)
    other = pyaclnn.DeviceBuffer(16)             # device 1's memory
    other.copy_from_host(np.ones(4, np.float32))
    s1 = pyaclnn.Stream()
    pyaclnn.set_device(0)
    for name, f in (("stream of another device", lambda: c.all_reduce(mine, mine, 4, np.float32, "sum", s1)),
                    ("buffer of another device", lambda: c.all_reduce(other, mine, 4, np.float32, "sum", s))):
        try:
            f(); res[name] = None
        except HcclError as e:
            res[name] = [e.status, e.message]
    pyaclnn.check(pyaclnn.lib.aclrtDeviceEnablePeerAccess(1, 0), "aclrtDeviceEnablePeerAccess")
    c.all_reduce(other, mine, 4, np.float32, "sum", s)   # device 0 may now read device 1's memory
    s.synchronize()
    res["after peer access"] = np.frombuffer(mine.to_host(), np.float32).tolist()
ranks(2, fn)
print(json.dumps(res))
""")
    res = json.loads(out.splitlines()[-1])
    status, msg = res["stream of another device"]
    assert status == pyaclnn.lib.HCCL_E_PARA
    assert "belongs to device 1, but the communicator's rank 0 runs on device 0" in msg
    status, msg = res["buffer of another device"]
    assert status == pyaclnn.lib.HCCL_E_PARA and "lies in device 1's aclrtMalloc block" in msg
    assert "aclrtDeviceEnablePeerAccess(1, 0)" in msg
    assert res["after peer access"] == [11.0] * 4


NO_GLOO_CHILD = """
import json, sys, time, pyaclnn, pyaclnn.hccl as hccl
pyaclnn.set_device(1)
t0 = time.time()
try:
    hccl.Comm(2, bytes.fromhex(sys.argv[1]), 1)
except hccl.HcclError as e:
    print(json.dumps([e.status, e.message, time.time() - t0]))
"""


def test_without_gloo_across_processes_is_a_clear_error(tmp_path):
    """A rank in another process than the root info's, with no gloo bridge, fails at once."""
    out = run_python("""
import subprocess, sys
import pyaclnn.hccl as hccl
root = hccl.get_root_info().hex()
print(subprocess.run([sys.executable, "-c", %r, root], capture_output=True, text=True).stdout)
""" % NO_GLOO_CHILD, {"PYACLNN_GLOO_BRIDGE": str(tmp_path / "missing.so"), "PYACLNN_DEVICE_COUNT": "2"}).stdout
    status, msg, took = json.loads(out.strip().splitlines()[-1])
    assert status == pyaclnn.lib.HCCL_E_NOT_SUPPORT
    assert "HCCL across processes needs gloo" in msg and "libgloo-dev" in msg
    assert took < 5


RANK_TABLE = {"version": "1.0", "server_count": "1", "status": "completed",
              "server_list": [{"server_id": "127.0.0.1", "device": [
                  {"device_id": str(r), "device_ip": "192.168.1.%d" % r, "rank_id": str(r)} for r in range(3)]}]}


def test_a_rank_table_creates_the_communicator(tmp_path):
    table = tmp_path / "rank_table.json"
    table.write_text(json.dumps(RANK_TABLE))
    port = 20000 + (int(time.time() * 1000) % 20000)
    out = run_ranks("""
comms, errs = [None] * 3, []
def work(r):
    try:
        pyaclnn.set_device(r)
        c = hccl.Comm.from_rank_table(%r, r)
        s = pyaclnn.Stream(); b = pyaclnn.DeviceBuffer(4); b.copy_from_host(np.array([r + 1], np.int32))
        c.all_reduce(b, b, 1, np.int32, "prod", s); s.synchronize()
        comms[r] = [c.rank, c.size, int(np.frombuffer(b.to_host(), np.int32)[0])]
        c.close()
    except Exception as e:
        errs.append(repr(e))
th = [threading.Thread(target=work, args=(r,)) for r in range(3)]
[t.start() for t in th]; [t.join() for t in th]
try:
    hccl.Comm.from_rank_table(%r, 0)
except HcclError as e:
    errs.append([e.status, e.message])
print(json.dumps([comms, errs]))
""" % (str(table), str(tmp_path / "missing.json")), HCCL_IF_BASE_PORT=str(port))
    comms, errs = json.loads(out.splitlines()[-1])
    assert comms == [[0, 3, 6], [1, 3, 6], [2, 3, 6]]
    assert errs[0][0] == pyaclnn.lib.HCCL_E_OPEN_FILE_FAILURE and "cannot open the rank table" in errs[0][1]


def test_python_devices_are_per_thread():
    out = run_ranks("""
got = {}
def work(d):
    pyaclnn.set_device(d)
    b = pyaclnn.DeviceBuffer((d + 1) << 20)
    time.sleep(0.2)
    free, total = pyaclnn.get_mem_info()
    got[d] = [pyaclnn.get_device(), total - free]
    b.close()
th = [threading.Thread(target=work, args=(d,)) for d in range(4)]
[t.start() for t in th]; [t.join() for t in th]
print(json.dumps([pyaclnn.get_device_count(), got]))
""", PYACLNN_DEVICE_COUNT="4")
    count, got = json.loads(out.splitlines()[-1])
    assert count == 4
    for d in range(4):
        assert got[str(d)] == [d, ((d + 1) << 20) + 32]  # each device's own memory
