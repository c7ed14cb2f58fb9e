"""HCCL AllReduce latency and bandwidth on the emulated devices, both engines.

    python benchmarks/hccl_bench.py [--ranks 2,4,8] [--sizes 4,65536,4194304] [--iters 50]

`threads`: one process, a thread per rank (the in-process engine); `processes`:
a process per rank (gloo over loopback TCP). Prints the time per AllReduce
(float32, sum, in place; queued back to back on one stream, one synchronize)
and the algorithm bandwidth (bytes / time). Timings on a shared machine are
noisy: compare figures taken in one run.
"""
import argparse
import os
import subprocess
import sys
import threading
import time

import numpy as np

import pyaclnn
import pyaclnn.hccl as hccl

RANK = """
import sys, time, numpy as np, pyaclnn, pyaclnn.hccl as hccl
n, r, root, iters, nbytes = int(sys.argv[1]), int(sys.argv[2]), bytes.fromhex(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
pyaclnn.set_device(r)
c = hccl.Comm(n, root, r); s = pyaclnn.Stream(); b = pyaclnn.DeviceBuffer(nbytes)
b.copy_from_host(np.ones(nbytes // 4, np.float32))
c.all_reduce(b, b, nbytes // 4, np.float32, "sum", s); s.synchronize()
t0 = time.perf_counter()
for _ in range(iters):
    c.all_reduce(b, b, nbytes // 4, np.float32, "sum", s)
s.synchronize()
if r == 0:
    print((time.perf_counter() - t0) / iters)
c.close()
"""


def run_threads(n, iters, nbytes):
    root, out = hccl.get_root_info(), {}

    def work(r):
        pyaclnn.set_device(r)
        c = hccl.Comm(n, root, r)
        s = pyaclnn.Stream()
        b = pyaclnn.DeviceBuffer(nbytes)
        b.copy_from_host(np.ones(nbytes // 4, np.float32))
        c.all_reduce(b, b, nbytes // 4, np.float32, "sum", s)
        s.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            c.all_reduce(b, b, nbytes // 4, np.float32, "sum", s)
        s.synchronize()
        out[r] = (time.perf_counter() - t0) / iters
        c.close()

    th = [threading.Thread(target=work, args=(r,)) for r in range(n)]
    [t.start() for t in th]
    [t.join() for t in th]
    return out[0]


def run_processes(n, iters, nbytes):
    root = hccl.get_root_info().hex()
    env = dict(os.environ, PYACLNN_DEVICE_COUNT=str(max(n, 1)))
    ps = [subprocess.Popen([sys.executable, "-c", RANK, str(n), str(r), root, str(iters), str(nbytes)], env=env,
                           stdout=subprocess.PIPE, universal_newlines=True) for r in range(n)]
    outs = [p.communicate()[0] for p in ps]
    return float(outs[0].strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="2,4,8")
    ap.add_argument("--sizes", default="4,65536,4194304")
    ap.add_argument("--iters", type=int, default=50)
    args = ap.parse_args()
    ranks = [int(x) for x in args.ranks.split(",")]
    sizes = [int(x) for x in args.sizes.split(",")]
    if int(os.environ.get("PYACLNN_DEVICE_COUNT", "1")) < max(ranks):
        os.environ["PYACLNN_DEVICE_COUNT"] = str(max(ranks))
        os.execv(sys.executable, [sys.executable] + sys.argv)
    print("%-10s %5s %10s %12s %12s" % ("engine", "ranks", "bytes", "ms/allreduce", "algbw MB/s"))
    for engine, fn in (("threads", run_threads), ("processes", run_processes)):
        for n in ranks:
            for nbytes in sizes:
                t = fn(n, args.iters, nbytes)
                print("%-10s %5d %10d %12.3f %12.1f" % (engine, n, nbytes, t * 1e3, nbytes / t / 1e6))


if __name__ == "__main__":
    main()
