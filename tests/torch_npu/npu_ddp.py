"""Data-parallel training on pyaclnn: torch.nn.parallel.DistributedDataParallel with
torch_npu's "hccl" backend, WORLD processes (one emulated device each, pyaclnn's HCCL
over gloo), an unchanged transformers LlamaForCausalLM (tiny, random init) and AdamW.

Run without RANK, this script starts WORLD ranks of itself (MASTER_ADDR / MASTER_PORT,
as torchrun would) and checks what they report. Each rank trains STEPS steps on its
slice of one batch, twice: with DDP's own gradient averaging, and with a comm hook
that all-reduces each bucket with ReduceOp.AVG. After every step:
- the parameters are bit-identical on every rank (all_gather_into_tensor);
- they are bit-identical to one process doing the same arithmetic by hand on one
  device: the gradients of each slice, summed in rank order and halved (what the
  HCCL sum of pyaclnn folds, docs/devices.md), then the same AdamW step;
- and equal, within 1e-4 relative (fp32: the gradient's batch sum is split
  differently), to one process training on the whole batch.
Prints one line per rank and check, then OK."""
import json
import os
import socket
import subprocess
import sys

WORLD, STEPS, PER_RANK, SEQ, VOCAB = 2, 3, 2, 16, 128


def make():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    cfg = LlamaConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=64, vocab_size=VOCAB,
                      attn_implementation="eager")
    return LlamaForCausalLM(cfg)


def data():
    import torch
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, VOCAB, (WORLD * PER_RANK, SEQ), generator=g)


def flat(model):
    import torch
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def optimizer(params):
    import torch
    return torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, foreach=True)


def reference_by_hand(dev, ids):
    """One process: per step, the gradient of each rank's slice, folded in rank order
    ((g0 + g1) / 2, as HCCL's sum then the division by the world size), then AdamW."""
    import torch
    model = make().to(dev)
    opt = optimizer(model.parameters())
    out = []
    for _ in range(STEPS):
        acc = None
        for r in range(WORLD):
            part = ids[r * PER_RANK:(r + 1) * PER_RANK]
            model(input_ids=part, labels=part).loss.backward()
            g = [p.grad.clone() for p in model.parameters()]
            acc = g if acc is None else [a + b for a, b in zip(acc, g)]
            model.zero_grad()
        for p, a in zip(model.parameters(), acc):
            p.grad = a / WORLD
        opt.step()
        opt.zero_grad()
        out.append(flat(model).cpu())
    return out


def reference_whole_batch(dev, ids):
    model = make().to(dev)
    opt = optimizer(model.parameters())
    out = []
    for _ in range(STEPS):
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
        out.append(flat(model).cpu())
    return out


def avg_hook(state, bucket):
    import torch.distributed as dist
    fut = dist.all_reduce(bucket.buffer(), op=dist.ReduceOp.AVG, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


def run_rank(rank):
    import torch
    import torch.distributed as dist
    import torch_npu  # noqa: F401
    import transformers
    from torch.nn.parallel import DistributedDataParallel as DDP

    transformers.logging.set_verbosity_error()
    torch.npu.set_device(rank)
    dist.init_process_group("hccl", rank=rank, world_size=WORLD)
    dev = torch.device("npu", rank)
    ids = data().to(dev)
    by_hand = reference_by_hand(dev, ids)
    whole = reference_whole_batch(dev, ids)
    report = {}
    for variant in ("ddp", "avg_hook"):
        model = make().to(dev)
        ddp = DDP(model, device_ids=[rank])
        if variant == "avg_hook":
            ddp.register_comm_hook(None, avg_hook)
        opt = optimizer(ddp.parameters())
        part = ids[rank * PER_RANK:(rank + 1) * PER_RANK]
        same_ranks, same_hand, worst = True, True, 0.0
        for step in range(STEPS):
            ddp(input_ids=part, labels=part).loss.backward()
            opt.step()
            opt.zero_grad()
            mine = flat(model)
            every = torch.empty(WORLD * mine.numel(), device=dev)
            dist.all_gather_into_tensor(every, mine)
            every = every.cpu().view(WORLD, -1)
            same_ranks &= all(torch.equal(every[0].view(torch.int32), every[r].view(torch.int32))
                              for r in range(WORLD))
            mine = mine.cpu()
            same_hand &= torch.equal(mine.view(torch.int32), by_hand[step].view(torch.int32))
            worst = max(worst, ((mine - whole[step]).norm() / whole[step].norm()).item())
        report[variant] = {"ranks_bit_identical": same_ranks, "bit_identical_to_by_hand": same_hand,
                           "rel_to_whole_batch": worst}
        del ddp
    torch.npu.synchronize()
    dist.destroy_process_group()
    print("RESULT " + json.dumps(report), flush=True)


def launch():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(WORLD):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(WORLD), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), PYACLNN_DEVICE_COUNT=str(WORLD),
                   HCCL_CONNECT_TIMEOUT="120", HCCL_EXEC_TIMEOUT="120", PYACLNN_NUM_THREADS="1")
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
        for variant, r in json.loads(lines[0][len("RESULT "):]).items():
            good = r["ranks_bit_identical"] and r["bit_identical_to_by_hand"] and r["rel_to_whole_batch"] <= 1e-4
            print("rank %d %-8s ranks bit-identical %s, bit-identical to the by-hand fold %s, "
                  "relative to whole-batch training %.3g: %s" % (
                      rank, variant, r["ranks_bit_identical"], r["bit_identical_to_by_hand"],
                      r["rel_to_whole_batch"], "ok" if good else "MISMATCH"))
            ok &= good
    print("OK" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if "RANK" in os.environ:
        run_rank(int(os.environ["RANK"]))
    else:
        launch()
