"""torch.distributed with torch_npu's "hccl" backend on pyaclnn: one process per emulated
device (pyaclnn's HCCL over gloo), as a launcher such as torchrun starts them: all_reduce,
reduce, broadcast, all_gather (list and tensor), gather, scatter, reduce_scatter_tensor,
all_to_all (list and single), all_gather_object, barrier, send / recv.

Run without RANK, this script starts WORLD ranks of itself and checks what each
returns, bit for bit, against numpy: the reductions fold the ranks in rank order
(fp16 / bf16 rounded at every step), as pyaclnn's docs/devices.md says. Prints OK."""
import json
import os
import socket
import subprocess
import sys

import ml_dtypes
import numpy as np

WORLD = 3
N = 64
TYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
BITS = {2: np.uint16, 4: np.uint32}


def rank_input(rank, name, n=N):
    """The same data in the rank and in the checker."""
    rng = np.random.default_rng([rank, sum(map(ord, name))])
    return rng.standard_normal(n).astype(np.float32)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(BITS[a.dtype.itemsize]).tolist()


def run_rank(rank):
    import torch
    import torch.distributed as dist
    import torch_npu  # noqa: F401

    torch.npu.set_device(rank)
    dist.init_process_group("hccl", rank=rank, world_size=WORLD)
    tdt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
    out = {}

    def keep(name, t):
        t = t.cpu()
        a = t.view(torch.int16 if t.element_size() == 2 else torch.int32).numpy()
        out[name] = a.astype(np.int64).tolist()

    for name, dt in tdt.items():
        x = torch.from_numpy(rank_input(rank, "sum_" + name)).to(dt).npu()
        dist.all_reduce(x)
        keep("sum_" + name, x)
    x = torch.from_numpy(rank_input(rank, "max")).npu()
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    keep("max", x)
    x = torch.from_numpy(rank_input(rank, "bcast")).npu()
    dist.broadcast(x, src=1)
    keep("bcast", x)
    g = torch.zeros(WORLD * N).npu()
    dist.all_gather_into_tensor(g, torch.from_numpy(rank_input(rank, "gather")).npu())
    keep("gather", g)
    parts = [torch.zeros(N - 1).npu() for _ in range(WORLD)]  # a list: torch_npu pads each to 512 bytes
    dist.all_gather(parts, torch.from_numpy(rank_input(rank, "glist", N - 1)).npu())
    keep("glist", torch.cat([p.cpu() for p in parts]))
    rs = torch.zeros(N).npu()
    dist.reduce_scatter_tensor(rs, torch.from_numpy(rank_input(rank, "rs", WORLD * N)).npu())
    keep("rs", rs)
    a2a = torch.zeros(WORLD * N).npu()
    dist.all_to_all_single(a2a, torch.from_numpy(rank_input(rank, "a2a", WORLD * N)).npu())
    keep("a2a", a2a)
    x = torch.from_numpy(rank_input(rank, "reduce")).npu()
    dist.reduce(x, dst=1)
    if rank == 1:
        keep("reduce", x)
    x = torch.from_numpy(rank_input(rank, "glist")[:N // 2]).npu()
    g = [torch.zeros(N // 2).npu() for _ in range(WORLD)] if rank == 2 else None
    dist.gather(x, g, dst=2)                           # torch_npu concatenates with aclnnCat
    if rank == 2:
        keep("gather_root", torch.cat([t.cpu() for t in g]))
    r = torch.zeros(N).npu()
    src = [torch.from_numpy(rank_input(i, "scatter")).npu() for i in range(WORLD)] if rank == 0 else None
    dist.scatter(r, src, src=0)
    keep("scatter", r)
    outs = [torch.zeros(N).npu() for _ in range(WORLD)]
    dist.all_to_all(outs, [torch.from_numpy(rank_input(rank, "a2al", WORLD * N)[i * N:(i + 1) * N]).npu()
                           for i in range(WORLD)])
    keep("a2a_list", torch.cat([t.cpu() for t in outs]))
    objs = [None] * WORLD
    dist.all_gather_object(objs, {"rank": rank})
    assert objs == [{"rank": i} for i in range(WORLD)], objs
    dist.barrier()
    if rank == 0:
        dist.send(torch.from_numpy(rank_input(0, "p2p")).npu(), dst=WORLD - 1)
    elif rank == WORLD - 1:
        r = torch.zeros(N).npu()
        dist.recv(r, src=0)
        keep("p2p", r)
    torch.npu.synchronize()
    dist.destroy_process_group()
    print("RESULT " + json.dumps(out), flush=True)


def fold(name, dtype):
    acc = rank_input(0, name).astype(dtype)
    for r in range(1, WORLD):
        acc = (acc.astype(np.float32) + rank_input(r, name).astype(dtype).astype(np.float32)).astype(dtype)
    return acc


def expected(rank):
    want = {"sum_" + n: bits(fold("sum_" + n, dt)) for n, dt in TYPES.items()}
    want["max"] = bits(np.maximum.reduce([rank_input(r, "max") for r in range(WORLD)]))
    want["bcast"] = bits(rank_input(1, "bcast"))
    want["gather"] = bits(np.concatenate([rank_input(r, "gather") for r in range(WORLD)]))
    want["glist"] = bits(np.concatenate([rank_input(r, "glist", N - 1) for r in range(WORLD)]))
    rs = rank_input(0, "rs", WORLD * N)
    for r in range(1, WORLD):
        rs = (rs + rank_input(r, "rs", WORLD * N)).astype(np.float32)
    want["rs"] = bits(rs[rank * N:(rank + 1) * N])
    want["a2a"] = bits(np.concatenate([rank_input(r, "a2a", WORLD * N)[rank * N:(rank + 1) * N]
                                       for r in range(WORLD)]))
    if rank == 1:
        want["reduce"] = bits(fold("reduce", np.float32))
    if rank == 2:
        want["gather_root"] = bits(np.concatenate([rank_input(r, "glist")[:N // 2] for r in range(WORLD)]))
    want["scatter"] = bits(rank_input(rank, "scatter"))
    want["a2a_list"] = bits(np.concatenate([rank_input(r, "a2al", WORLD * N)[rank * N:(rank + 1) * N]
                                            for r in range(WORLD)]))
    if rank == WORLD - 1:
        want["p2p"] = bits(rank_input(0, "p2p"))
    return want


def launch():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(WORLD):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), PYACLNN_DEVICE_COUNT=str(WORLD), HCCL_CONNECT_TIMEOUT="120",
                   HCCL_EXEC_TIMEOUT="120")
        procs.append(subprocess.Popen([sys.executable, __file__], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, universal_newlines=True))
    ok = True
    for rank, p in enumerate(procs):
        try:
            stdout, stderr = p.communicate(timeout=400)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            sys.exit("rank %d timed out" % rank)
        sys.stderr.write(stderr)
        lines = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
        if p.returncode != 0 or len(lines) != 1:
            print("rank %d failed (exit %d):\n%s" % (rank, p.returncode, stdout))
            ok = False
            continue
        got = json.loads(lines[0][len("RESULT "):])
        want = expected(rank)
        # the results are signed views of the same bits
        got = {k: [b & (0xFFFF if k.endswith(("float16", "bfloat16")) else 0xFFFFFFFF) for b in v]
               for k, v in got.items()}
        for k in sorted(set(want) | set(got)):
            same = got.get(k) == want.get(k)
            print("rank %d %-14s %s" % (rank, k, "bit-identical" if same else "MISMATCH"))
            ok &= same
    print("OK" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if "RANK" in os.environ:
        run_rank(int(os.environ["RANK"]))
    else:
        launch()
