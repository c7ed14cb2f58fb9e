"""The HCCL sweep shared by the thread and process tests (tests/test_hccl*.py).

Every collective x dtype x reduce op, in place and out of place, for one rank
count n: `cases(n)` lists them, `inputs(case, n)` makes every rank's input
(deterministic), `expected(case, n)` folds them in rank order with numpy (the
independent reference: functools.reduce over ranks 0..n-1 in the dtype), and
`run(comm, rank, n, stream)` runs every case on one rank and returns the raw
bytes of each output. Comparisons are of bytes: bitwise.
"""
import functools
import zlib

import ml_dtypes
import numpy as np

import pyaclnn
import pyaclnn.hccl as hccl

REDUCTIONS = ("all_reduce", "reduce", "reduce_scatter", "reduce_scatter_v")
MOVEMENT = ("broadcast", "scatter", "all_gather", "all_gather_v", "all_to_all", "all_to_all_v", "all_to_all_vc",
            "send_recv", "batch_send_recv")
IN_PLACE = ("all_reduce", "reduce", "reduce_scatter", "broadcast", "scatter", "all_gather")
OPS = ("sum", "prod", "max", "min")
HIF8 = 14  # no numpy dtype: moved as bytes

REDUCE_DTYPES = [np.dtype(d) for d in (np.int8, np.int16, np.int32, np.int64, np.uint64, np.float16, np.float32,
                                       np.float64, ml_dtypes.bfloat16)]
MOVE_DTYPES = list(hccl.DTYPES) + [HIF8]
NO_PROD = (np.dtype(np.int16), np.dtype(ml_dtypes.bfloat16))


def cases(n):
    out = []
    for kind in REDUCTIONS:
        for dt in REDUCE_DTYPES:
            for op in OPS:
                if op == "prod" and dt in NO_PROD:
                    continue
                for inplace in (False, True) if kind in IN_PLACE else (False,):
                    out.append((kind, dt, op, inplace))
    for kind in MOVEMENT:
        if kind in ("send_recv",) and n % 2:
            continue
        for dt in MOVE_DTYPES:
            for inplace in (False, True) if kind in IN_PLACE else (False,):
                out.append((kind, dt, None, inplace))
    return out


def elem_size(dt):
    return 1 if dt == HIF8 else np.dtype(dt).itemsize


def block(n):
    """Elements per rank block: uneven against n so that AllReduce's chunks differ."""
    return 2 * n + 3


def matrix(n):
    """C[i][j]: elements rank i sends to rank j in the all-to-all-v cases (zeros included)."""
    return [[(2 * i + j) % 3 for j in range(n)] for i in range(n)]


def v_counts(n):
    """Per-rank block sizes of the V variants (rank 0's is empty)."""
    return [(q % 3) * 2 for q in range(n)]


def displs(counts, gap=1):
    out, at = [], 0
    for c in counts:
        out.append(at)
        at += c + gap
    return out


def _random(dt, size, rng):
    if dt == HIF8 or np.dtype(dt).itemsize == 1 and np.dtype(dt).kind not in "iu":
        return rng.integers(0, 256, size, dtype=np.uint8)  # fp8 / hif8: any bit pattern, moved as bytes
    dt = np.dtype(dt)
    if dt.kind == "f" or dt == np.dtype(ml_dtypes.bfloat16):
        mag = rng.uniform(0.5, 2.0, size)
        return (mag * rng.choice([-1.0, 1.0], size)).astype(dt)
    if dt.kind == "u":
        return rng.integers(0, np.iinfo(dt).max, size, dtype=dt, endpoint=True)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size, dtype=dt, endpoint=True)


def _storage(dt):
    """The numpy dtype inputs are made in (fp8 / hif8: their bytes)."""
    return np.uint8 if dt == HIF8 or np.dtype(dt).itemsize == 1 and np.dtype(dt).kind not in "iu" else dt


def input_size(kind, n):
    m = block(n)
    if kind in ("reduce_scatter", "scatter", "all_to_all"):
        return n * m
    if kind == "reduce_scatter_v":
        c = v_counts(n)
        return displs(c)[-1] + c[-1]
    if kind in ("all_to_all_v", "all_to_all_vc"):
        c = matrix(n)
        return sum(c[0]) + n  # enough for every rank's row with gaps
    return m


def inputs(case, n):
    kind, dt, op, inplace = case
    seed = zlib.crc32(repr((kind, str(dt), op, inplace, n)).encode())  # the same in every process
    rng = np.random.default_rng(seed)
    size = input_size(kind, n)
    if kind in ("all_to_all_v", "all_to_all_vc"):
        size = max(sum(row) for row in matrix(n)) + n
    return [_random(dt, size, rng) for _ in range(n)]


def _fold(dt, op, arrays):
    ufunc = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[op]
    with np.errstate(all="ignore"):
        return functools.reduce(lambda a, b: ufunc(a, b).astype(dt), [a.astype(dt) for a in arrays])


def output_size(kind, n):
    m = block(n)
    if kind in ("all_gather",):
        return n * m
    if kind == "all_gather_v":
        c = v_counts(n)
        return displs(c)[-1] + c[-1]
    if kind in ("reduce_scatter", "scatter"):
        return m
    if kind == "reduce_scatter_v":
        return max(v_counts(n))
    if kind == "all_to_all":
        return n * m
    if kind in ("all_to_all_v", "all_to_all_vc"):
        return max(sum(matrix(n)[i][r] for i in range(n)) for r in range(n)) + n
    return m


FILL = 0x5A  # what the output buffers hold before the operation


def expected(case, n):
    """Each rank's output bytes (None where the API leaves the output undefined)."""
    kind, dt, op, inplace = case
    xs = inputs(case, n)
    m = block(n)
    es = elem_size(dt)
    out = []
    for r in range(n):
        y = np.frombuffer(bytes([FILL]) * (output_size(kind, n) * es), dtype=_storage(dt)).copy()
        if kind == "all_reduce":
            y = _fold(dt, op, xs)
        elif kind == "reduce":
            y = _fold(dt, op, xs) if r == n - 1 else None
        elif kind == "reduce_scatter":
            y = _fold(dt, op, xs)[r * m:(r + 1) * m]
        elif kind == "reduce_scatter_v":
            c, d = v_counts(n), displs(v_counts(n))
            y[:c[r]] = _fold(dt, op, [x[d[r]:d[r] + c[r]] for x in xs])
        elif kind == "broadcast":
            y = xs[1 % n]
        elif kind == "scatter":
            y = xs[0][r * m:(r + 1) * m]
        elif kind == "all_gather":
            y = np.concatenate(xs)
        elif kind == "all_gather_v":
            c, d = v_counts(n), displs(v_counts(n))
            for q in range(n):
                y[d[q]:d[q] + c[q]] = xs[q][:c[q]]
        elif kind == "all_to_all":
            y = np.concatenate([x[r * m:(r + 1) * m] for x in xs])
        elif kind in ("all_to_all_v", "all_to_all_vc"):
            c = matrix(n)
            gap = 1 if kind == "all_to_all_v" else 0
            at = 0
            for q in range(n):
                sdispl = displs(c[q], gap)[r]
                y[at:at + c[q][r]] = xs[q][sdispl:sdispl + c[q][r]]
                at += c[q][r] + gap
        elif kind == "send_recv":  # even ranks send to the next odd one
            y = xs[r - 1] if r % 2 else xs[r]
        elif kind == "batch_send_recv":  # a ring: from the previous rank
            y = xs[(r - 1) % n]
        out.append(None if y is None else np.ascontiguousarray(y).tobytes())
    return out


def run(comm, rank, n, stream):
    """Runs every case of cases(n) on this rank (queued on `stream`, then one
    synchronize) and returns the output bytes of each."""
    todo = []
    for case in cases(n):
        kind, dt, op, inplace = case
        x = inputs(case, n)[rank]
        es = elem_size(dt)
        hdt = HIF8 if dt == HIF8 else dt
        m = block(n)
        src = pyaclnn.DeviceBuffer(max(x.nbytes, 1))
        src.copy_from_host(x)
        out_bytes = output_size(kind, n) * es
        dst = pyaclnn.DeviceBuffer(max(out_bytes, 1))
        dst.copy_from_host(bytes([FILL]) * out_bytes)
        c, d = v_counts(n), displs(v_counts(n))
        mat = matrix(n)
        read = (dst, 0)  # the buffer and byte offset holding the result
        if kind == "all_reduce":
            if inplace:
                comm.all_reduce(src, src, m, hdt, op, stream)
                read = (src, 0)
            else:
                comm.all_reduce(src, dst, m, hdt, op, stream)
        elif kind == "reduce":
            if inplace:
                comm.reduce(src, src, m, hdt, op, n - 1, stream)
                read = (src, 0)
            else:
                comm.reduce(src, dst, m, hdt, op, n - 1, stream)
        elif kind == "reduce_scatter":
            if inplace:  # recvBuf = sendBuf + rank * recvCount
                comm.reduce_scatter(src, src.ptr + rank * m * es, m, hdt, op, stream)
                read = (src, rank * m * es)
            else:
                comm.reduce_scatter(src, dst, m, hdt, op, stream)
        elif kind == "reduce_scatter_v":
            comm.reduce_scatter_v(src, c, d, dst, c[rank], hdt, op, stream)
        elif kind == "broadcast":
            comm.broadcast(src, m, hdt, 1 % n, stream)
            read = (src, 0)
        elif kind == "scatter":
            if inplace and rank == 0:  # the root's own block stays in place
                comm.scatter(src, src.ptr, m, hdt, 0, stream)
                read = (src, 0)
            else:
                comm.scatter(src, dst, m, hdt, 0, stream)
        elif kind == "all_gather":
            if inplace:  # sendBuf = recvBuf + rank * sendCount
                dst.copy_from_host(x, offset=rank * m * es)
                comm.all_gather(dst.ptr + rank * m * es, dst, m, hdt, stream)
            else:
                comm.all_gather(src, dst, m, hdt, stream)
        elif kind == "all_gather_v":
            comm.all_gather_v(src, c[rank], dst, c, d, hdt, stream)
        elif kind == "all_to_all":
            comm.all_to_all(src, m, dst, m, hdt, stream)
        elif kind == "all_to_all_v":
            recv_counts = [mat[q][rank] for q in range(n)]
            comm.all_to_all_v(src, mat[rank], displs(mat[rank]), dst, recv_counts, displs(recv_counts), hdt, stream)
        elif kind == "all_to_all_vc":
            comm.all_to_all_vc(src, mat, dst, hdt, stream)
        elif kind == "send_recv":
            if rank % 2 == 0:
                comm.send(src, m, hdt, rank + 1, stream)
                read = (src, 0)
            else:
                comm.recv(dst, m, hdt, rank - 1, stream)
        elif kind == "batch_send_recv":
            comm.batch_send_recv([("send", src, m, hdt, (rank + 1) % n), ("recv", dst, m, hdt, (rank - 1) % n)],
                                 stream)
        todo.append((case, read, src, dst))
    comm.barrier(stream)
    stream.synchronize()
    results = []
    for case, (buf, off), src, dst in todo:
        results.append(buf.to_host(result_size(case, n), off))
        src.close()
        dst.close()
    return results


def result_size(case, n):
    """Bytes of a case's output."""
    kind, dt = case[0], case[1]
    if kind in ("all_reduce", "reduce", "broadcast", "send_recv", "batch_send_recv", "scatter"):
        return block(n) * elem_size(dt)
    return output_size(kind, n) * elem_size(dt)


def compare(n, results_per_rank):
    """[] if every rank's outputs equal the folds, else a list of (case, rank) mismatches."""
    bad = []
    for i, case in enumerate(cases(n)):
        want = expected(case, n)
        for r in range(n):
            if want[r] is not None and results_per_rank[r][i] != want[r]:
                bad.append((case, r))
    return bad
