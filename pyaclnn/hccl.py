"""HCCL collectives from Python, over the same cffi declarations (hccl/hccl.h).

A communicator has one rank per device: threads of one process (each sets its
device with :func:`pyaclnn.set_device`) or processes (across processes the
library needs gloo). Rank 0's process makes the root info, every rank joins
with it::

    import pyaclnn, pyaclnn.hccl as hccl
    root = hccl.get_root_info()                       # bytes, pass them to every rank
    # on each rank (thread or process), device r:
    pyaclnn.set_device(r)
    comm = hccl.Comm(n, root, r)                      # blocks until all n ranks joined
    with pyaclnn.Stream() as s:
        buf = pyaclnn.DeviceBuffer(x.nbytes); buf.copy_from_host(x)
        comm.all_reduce(buf, buf, x.size, x.dtype, "sum", s)   # queued on s
    out = buf.copy_to_host(np.empty_like(x))          # after the stream synchronized

Every operation only queues work on its stream (an HCCL stream may not be
None, as in CANN) and raises :class:`HcclError` when the call is refused; a
failure of the queued work (a peer that never came: HCCL_EXEC_TIMEOUT) is
raised by the stream's ``synchronize()``. Buffers are DeviceBuffer objects,
int addresses or cdata pointers; counts are in elements; ``dtype`` is a numpy
dtype (bfloat16 and the fp8 types of ml_dtypes included), a name, or an
HcclDataType value; ``op`` is "sum", "prod", "max", "min" or an HcclReduceOp.
Reductions fold the ranks in rank order, so every rank and every run gets
the same bits.
"""
import contextlib
import struct

import numpy as np

from ._args import as_int
from ._ffi import as_ptr, c_string, constants, ffi, lib
from .runtime import DeviceBuffer, _keep_until_sync, _stream_handle

__all__ = [
    "HcclError", "get_root_info", "Comm", "group", "data_type", "reduce_op", "error_string",
    "ROOT_INFO_BYTES", "DTYPES", "REDUCE_DTYPES",
]

ROOT_INFO_BYTES = lib.HCCL_ROOT_INFO_BYTES

_RESULT_NAMES = {v: k for k, v in sorted(constants().items(), reverse=True)
                 if k.startswith("HCCL_E_") or k == "HCCL_SUCCESS"}


def error_string(code):
    """HcclGetErrorString(code)."""
    return c_string(lib.HcclGetErrorString(code))


class HcclError(RuntimeError):
    """A non-zero HcclResult: ``status``, ``api``, ``message`` (aclGetRecentErrMsg)."""

    def __init__(self, status, api, message=None):
        self.status = int(status)
        self.api = api
        self.message = message
        text = "%s failed: %s (%d)" % (api, _RESULT_NAMES.get(self.status, "HcclResult"), self.status)
        if message:
            text += ": " + message
        super().__init__(text)

    def __reduce__(self):
        return (type(self), (self.status, self.api, self.message))


def _check(status, api):
    if status:
        raise HcclError(status, api, c_string(lib.aclGetRecentErrMsg()))


# ---------------------------------------------------------------- types

def _numpy_dtypes():
    out = {np.dtype(np.int8): lib.HCCL_DATA_TYPE_INT8, np.dtype(np.int16): lib.HCCL_DATA_TYPE_INT16,
           np.dtype(np.int32): lib.HCCL_DATA_TYPE_INT32, np.dtype(np.float16): lib.HCCL_DATA_TYPE_FP16,
           np.dtype(np.float32): lib.HCCL_DATA_TYPE_FP32, np.dtype(np.int64): lib.HCCL_DATA_TYPE_INT64,
           np.dtype(np.uint64): lib.HCCL_DATA_TYPE_UINT64, np.dtype(np.uint8): lib.HCCL_DATA_TYPE_UINT8,
           np.dtype(np.uint16): lib.HCCL_DATA_TYPE_UINT16, np.dtype(np.uint32): lib.HCCL_DATA_TYPE_UINT32,
           np.dtype(np.float64): lib.HCCL_DATA_TYPE_FP64}
    import ml_dtypes
    out[np.dtype(ml_dtypes.bfloat16)] = lib.HCCL_DATA_TYPE_BFP16
    for name, code in (("float8_e4m3fn", lib.HCCL_DATA_TYPE_FP8E4M3), ("float8_e5m2", lib.HCCL_DATA_TYPE_FP8E5M2),
                       ("float8_e8m0fnu", lib.HCCL_DATA_TYPE_FP8E8M0)):
        if hasattr(ml_dtypes, name):
            out[np.dtype(getattr(ml_dtypes, name))] = code
    return out


#: numpy dtype -> HcclDataType (HIF8 and INT128 have no numpy dtype: pass their value).
DTYPES = _numpy_dtypes()
#: The dtypes the reductions accept (CANN's list; PROD also refuses int16 and bfloat16).
REDUCE_DTYPES = tuple(d for d, c in DTYPES.items() if c in (
    lib.HCCL_DATA_TYPE_INT8, lib.HCCL_DATA_TYPE_INT16, lib.HCCL_DATA_TYPE_INT32, lib.HCCL_DATA_TYPE_INT64,
    lib.HCCL_DATA_TYPE_UINT64, lib.HCCL_DATA_TYPE_FP16, lib.HCCL_DATA_TYPE_FP32, lib.HCCL_DATA_TYPE_FP64,
    lib.HCCL_DATA_TYPE_BFP16))
_OPS = {"sum": lib.HCCL_REDUCE_SUM, "prod": lib.HCCL_REDUCE_PROD, "max": lib.HCCL_REDUCE_MAX,
        "min": lib.HCCL_REDUCE_MIN}


def data_type(dtype):
    """The HcclDataType of a numpy dtype (or name), or an HcclDataType value as is."""
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        return int(dtype)
    try:
        return DTYPES[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise TypeError("no HcclDataType for dtype %r" % (dtype,)) from None


def reduce_op(op):
    """The HcclReduceOp of "sum" / "prod" / "max" / "min", or an HcclReduceOp value as is."""
    if isinstance(op, (int, np.integer)) and not isinstance(op, bool):
        return int(op)
    try:
        return _OPS[op]
    except (TypeError, KeyError):
        raise ValueError("op must be 'sum', 'prod', 'max', 'min' or an HcclReduceOp, got %r" % (op,)) from None


def _counts(name, values, n):
    values = [as_int(name, v) for v in values]
    if len(values) != n:
        raise ValueError("%s must have %d entries (one per rank), got %d" % (name, n, len(values)))
    return ffi.new("uint64_t[]", values)


# ---------------------------------------------------------------- communicators

def get_root_info():
    """HcclGetRootInfo: the root info bytes every rank passes to :class:`Comm`.
    This process serves the rendezvous: it must keep running until all joined."""
    info = ffi.new("HcclRootInfo *")
    _check(lib.HcclGetRootInfo(info), "HcclGetRootInfo")
    return bytes(ffi.buffer(info))


def _config(config):
    """An HcclCommConfig set up as HcclCommConfigInit does, then `config`'s fields."""
    c = ffi.new("HcclCommConfig *")
    # the version header: {size_t size; uint32_t magicWord; uint32_t version; uint64_t reserved}
    ffi.memmove(c, struct.pack("=QIIQ", ffi.sizeof("HcclCommConfig"), lib.HCCL_COMM_CONFIG_MAGIC_WORD,
                               lib.HCCL_COMM_CONFIG_VERSION, 0), 24)
    unset = {"hcclBufferSize": lib.HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET,
             "hcclDeterministic": lib.HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET,
             "hcclRdmaTrafficClass": lib.HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET,
             "hcclRdmaServiceLevel": lib.HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET,
             "hcclExecTimeOut": lib.HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET,
             "hcclQos": lib.HCCL_COMM_QOS_CONFIG_NOT_SET,
             "hcclSymWinMaxMemSizePerRank": lib.HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE}
    for k, v in unset.items():
        setattr(c, k, v)
    for k, v in dict(config).items():
        if isinstance(v, str):
            v = v.encode()
        if isinstance(v, bytes):
            field = getattr(c, k)
            if len(v) >= len(field):
                raise ValueError("config %s: at most %d bytes" % (k, len(field) - 1))
            ffi.memmove(field, v + b"\0", len(v) + 1)
        else:
            setattr(c, k, as_int(k, v))
    return c


class Comm:
    """One rank's communicator (HcclCommInitRootInfo / HcclCommInitRootInfoConfig
    with ``config``, a dict of HcclCommConfig fields, e.g. ``{"hcclCommName": "tp"}``).
    The calling thread's device (:func:`pyaclnn.set_device`) is the rank's device."""

    def __init__(self, nranks, root_info, rank, config=None, *, _handle=None):
        if _handle is None:
            from .runtime import _init_process
            _init_process()
            root_info = bytes(root_info)
            if len(root_info) != ROOT_INFO_BYTES:
                raise ValueError("root_info must be the %d bytes of get_root_info(), got %d"
                                 % (ROOT_INFO_BYTES, len(root_info)))
            info = ffi.new("HcclRootInfo *")
            ffi.memmove(info, root_info, ROOT_INFO_BYTES)
            out = ffi.new("HcclComm *")
            n, r = as_int("nranks", nranks), as_int("rank", rank)
            if config is None:
                _check(lib.HcclCommInitRootInfo(n, info, r, out), "HcclCommInitRootInfo")
            else:
                _check(lib.HcclCommInitRootInfoConfig(n, info, r, _config(config), out),
                       "HcclCommInitRootInfoConfig")
            _handle = out[0]
        self._handle = _handle

    @classmethod
    def init_all(cls, devices):
        """HcclCommInitAll: one communicator per device of this process (rank i on devices[i])."""
        from .runtime import _init_process
        _init_process()
        devices = [as_int("devices[i]", d) for d in devices]
        out = ffi.new("HcclComm[]", max(len(devices), 1))
        _check(lib.HcclCommInitAll(len(devices), ffi.new("int32_t[]", devices), out), "HcclCommInitAll")
        return [cls(None, None, None, _handle=out[i]) for i in range(len(devices))]

    @classmethod
    def from_rank_table(cls, path, rank, config=None):
        """HcclCommInitClusterInfo(Config) from a rank table file."""
        from .runtime import _init_process
        _init_process()
        out = ffi.new("HcclComm *")
        p = ffi.new("char[]", str(path).encode())
        if config is None:
            _check(lib.HcclCommInitClusterInfo(p, as_int("rank", rank), out), "HcclCommInitClusterInfo")
        else:
            _check(lib.HcclCommInitClusterInfoConfig(p, as_int("rank", rank), _config(config), out),
                   "HcclCommInitClusterInfoConfig")
        return cls(None, None, None, _handle=out[0])

    @property
    def handle(self):
        if self._handle is None:
            raise ValueError("communicator is destroyed")
        return self._handle

    @property
    def rank(self):
        out = ffi.new("uint32_t *")
        _check(lib.HcclGetRankId(self.handle, out), "HcclGetRankId")
        return out[0]

    @property
    def size(self):
        out = ffi.new("uint32_t *")
        _check(lib.HcclGetRankSize(self.handle, out), "HcclGetRankSize")
        return out[0]

    @property
    def name(self):
        out = ffi.new("char[]", lib.COMM_NAME_MAX_LENGTH)
        _check(lib.HcclGetCommName(self.handle, out), "HcclGetCommName")
        return ffi.string(out).decode()

    def async_error(self):
        """HcclGetCommAsyncError: 0, or the HcclResult of the first failed queued operation."""
        out = ffi.new("HcclResult *")
        _check(lib.HcclGetCommAsyncError(self.handle, out), "HcclGetCommAsyncError")
        return int(out[0])

    def close(self):
        """HcclCommDestroy (queued work keeps running)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            _check(lib.HcclCommDestroy(handle), "HcclCommDestroy")

    destroy = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if self._handle is not None:
                lib.HcclCommDestroy(self._handle)
            self._handle = None
        except Exception:
            pass

    # ------------------------------------------------------------ operations

    def _run(self, api, stream, keep, *args):
        _check(getattr(lib, api)(*args), api)
        _keep_until_sync(stream, [k for k in keep if isinstance(k, DeviceBuffer)])

    def all_reduce(self, send, recv, count, dtype, op="sum", stream=None):
        self._run("HcclAllReduce", stream, (send, recv), as_ptr(send), as_ptr(recv), as_int("count", count),
                  data_type(dtype), reduce_op(op), self.handle, _stream_handle(stream))

    def reduce(self, send, recv, count, dtype, op="sum", root=0, stream=None):
        self._run("HcclReduce", stream, (send, recv), as_ptr(send), as_ptr(recv), as_int("count", count),
                  data_type(dtype), reduce_op(op), as_int("root", root), self.handle, _stream_handle(stream))

    def reduce_scatter(self, send, recv, recv_count, dtype, op="sum", stream=None):
        self._run("HcclReduceScatter", stream, (send, recv), as_ptr(send), as_ptr(recv),
                  as_int("recv_count", recv_count), data_type(dtype), reduce_op(op), self.handle,
                  _stream_handle(stream))

    def reduce_scatter_v(self, send, send_counts, send_displs, recv, recv_count, dtype, op="sum", stream=None):
        n = self.size
        self._run("HcclReduceScatterV", stream, (send, recv), as_ptr(send), _counts("send_counts", send_counts, n),
                  _counts("send_displs", send_displs, n), as_ptr(recv), as_int("recv_count", recv_count),
                  data_type(dtype), reduce_op(op), self.handle, _stream_handle(stream))

    def broadcast(self, buf, count, dtype, root=0, stream=None):
        self._run("HcclBroadcast", stream, (buf,), as_ptr(buf), as_int("count", count), data_type(dtype),
                  as_int("root", root), self.handle, _stream_handle(stream))

    def scatter(self, send, recv, recv_count, dtype, root=0, stream=None):
        self._run("HcclScatter", stream, (send, recv), as_ptr(send), as_ptr(recv), as_int("recv_count", recv_count),
                  data_type(dtype), as_int("root", root), self.handle, _stream_handle(stream))

    def all_gather(self, send, recv, send_count, dtype, stream=None):
        self._run("HcclAllGather", stream, (send, recv), as_ptr(send), as_ptr(recv), as_int("send_count", send_count),
                  data_type(dtype), self.handle, _stream_handle(stream))

    def all_gather_v(self, send, send_count, recv, recv_counts, recv_displs, dtype, stream=None):
        n = self.size
        self._run("HcclAllGatherV", stream, (send, recv), as_ptr(send), as_int("send_count", send_count),
                  as_ptr(recv), _counts("recv_counts", recv_counts, n), _counts("recv_displs", recv_displs, n),
                  data_type(dtype), self.handle, _stream_handle(stream))

    def all_to_all(self, send, send_count, recv, recv_count, dtype, stream=None):
        dt = data_type(dtype)
        self._run("HcclAlltoAll", stream, (send, recv), as_ptr(send), as_int("send_count", send_count), dt,
                  as_ptr(recv), as_int("recv_count", recv_count), dt, self.handle, _stream_handle(stream))

    def all_to_all_v(self, send, send_counts, send_displs, recv, recv_counts, recv_displs, dtype, stream=None):
        n, dt = self.size, data_type(dtype)
        self._run("HcclAlltoAllV", stream, (send, recv), as_ptr(send), _counts("send_counts", send_counts, n),
                  _counts("send_displs", send_displs, n), dt, as_ptr(recv), _counts("recv_counts", recv_counts, n),
                  _counts("recv_displs", recv_displs, n), dt, self.handle, _stream_handle(stream))

    def all_to_all_vc(self, send, count_matrix, recv, dtype, stream=None):
        """count_matrix[i][j]: elements rank i sends to rank j (the same matrix on every rank)."""
        n, dt = self.size, data_type(dtype)
        rows = [list(r) for r in count_matrix]
        if len(rows) != n or any(len(r) != n for r in rows):
            raise ValueError("count_matrix must be %d x %d" % (n, n))
        flat = _counts("count_matrix", [v for r in rows for v in r], n * n)
        self._run("HcclAlltoAllVC", stream, (send, recv), as_ptr(send), flat, dt, as_ptr(recv), dt, self.handle,
                  _stream_handle(stream))

    def send(self, buf, count, dtype, dest, stream=None):
        self._run("HcclSend", stream, (buf,), as_ptr(buf), as_int("count", count), data_type(dtype),
                  as_int("dest", dest), self.handle, _stream_handle(stream))

    def recv(self, buf, count, dtype, src, stream=None):
        self._run("HcclRecv", stream, (buf,), as_ptr(buf), as_int("count", count), data_type(dtype),
                  as_int("src", src), self.handle, _stream_handle(stream))

    def batch_send_recv(self, items, stream=None):
        """items: (kind, buf, count, dtype, peer) with kind "send" or "recv"."""
        items = list(items)
        arr = ffi.new("HcclSendRecvItem[]", max(len(items), 1))
        keep = []
        for i, (kind, buf, count, dtype, peer) in enumerate(items):
            if kind not in ("send", "recv"):
                raise ValueError("items[%d]: kind must be 'send' or 'recv', got %r" % (i, kind))
            arr[i].sendRecvType = lib.HCCL_SEND if kind == "send" else lib.HCCL_RECV
            arr[i].buf = as_ptr(buf)
            arr[i].count = as_int("count", count)
            arr[i].dataType = data_type(dtype)
            arr[i].remoteRank = as_int("peer", peer)
            keep.append(buf)
        self._run("HcclBatchSendRecv", stream, keep, arr, len(items), self.handle, _stream_handle(stream))

    def barrier(self, stream=None):
        self._run("HcclBarrier", stream, (), self.handle, _stream_handle(stream))


@contextlib.contextmanager
def group():
    """HcclGroupStart / HcclGroupEnd around the block (this thread's calls are
    queued at the end; its sends and receives run as one batch)."""
    _check(lib.HcclGroupStart(), "HcclGroupStart")
    try:
        yield
    finally:
        _check(lib.HcclGroupEnd(), "HcclGroupEnd")
