#!/usr/bin/env python3
"""The aten sweep: torch's own OpInfo samples (torch.testing._internal.
common_methods_invocations.op_db) of common ops, run through the real torch_npu on
pyaclnn (.npu()) and compared with the same call on the CPU.

    python tools/aten_sweep.py [--ops add,mul,...] [--all] [--dtype float32]
                               [--samples N] [--update-doc docs/torch_npu.md] [--json FILE]

Each op's first N samples (default 8) run on the CPU and on the NPU; an op *works*
when every sample gives the CPU's result (torch.testing.assert_close at rtol 1e-4,
atol 1e-5 for fp32; 1.6e-2 / 1e-2 for bf16 / fp16), dtypes included. Otherwise it
*fails*, with the first reason: an error (its first line: usually the aclnn
operator pyaclnn does not implement, or the single-op API op type torch_npu fell
back to), or a mismatch (the largest difference). The ops run in a worker process
(with set_env.sh's environment) that a failed op may leave unusable (torch_npu ends
a process after an operator error): the worker then restarts on the next op.

--update-doc writes the table between the markers of docs/torch_npu.md, and the
counts into README.md's line that carries the counts marker.
Needs torch, torch_npu and pyaclnn installed; takes a few minutes for the default list."""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC_BEGIN = "<!-- aten_sweep results: begin (python tools/aten_sweep.py --update-doc docs/torch_npu.md writes them) -->"
DOC_END = "<!-- aten_sweep results: end -->"
README_MARK = "<!-- the aten sweep's counts: tools/aten_sweep.py --update-doc writes this line -->"
ROW = re.compile(r"^\| `([^`]+)` \| (\d+)/(\d+) \| (works|fails) \| (.*) \|$")
SUMMARY = re.compile(r"^\*\*(\d+) ops tried, (\d+) work, (\d+) fail\*\*")

# OpInfo names (name or name.variant) of the ops ordinary models and scripts use.
COMMON = """
abs add sub mul div.no_rounding_mode div.trunc_rounding div.floor_rounding neg reciprocal sqrt rsqrt exp exp2
expm1 log log2 log10 log1p sin cos tan tanh sigmoid asin acos atan atan2 sinh cosh erf erfinv sign sgn floor
ceil round trunc frac pow float_power remainder fmod clamp clamp_min clamp_max maximum minimum lerp addcmul
addcdiv where masked_fill nan_to_num isnan isinf isfinite eq ne lt le gt ge logical_and logical_or logical_not
logical_xor bitwise_and bitwise_or bitwise_not bitwise_xor
sum mean prod amax amin max.reduction_with_dim min.reduction_with_dim argmax argmin var std logsumexp
cumsum cumprod any all norm linalg.vector_norm count_nonzero
mm bmm addmm matmul mv dot baddbmm outer einsum nn.functional.linear
cat stack split chunk reshape view permute transpose t expand flip roll repeat narrow squeeze unsqueeze
tril triu index_select gather scatter scatter_add index_add index_put take_along_dim masked_select
nonzero sort argsort topk unique zeros_like ones_like full_like clone contiguous flatten
nn.functional.relu nn.functional.gelu nn.functional.silu nn.functional.elu nn.functional.leaky_relu
nn.functional.hardtanh nn.functional.softplus nn.functional.mish nn.functional.hardswish
softmax log_softmax nn.functional.layer_norm nn.functional.group_norm nn.functional.rms_norm
nn.functional.embedding nn.functional.cross_entropy nn.functional.nll_loss nn.functional.mse_loss
nn.functional.l1_loss nn.functional.binary_cross_entropy_with_logits nn.functional.pad.constant
nn.functional.conv1d nn.functional.conv2d nn.functional.max_pool2d nn.functional.avg_pool2d
nn.functional.adaptive_avg_pool2d nn.functional.interpolate.nearest nn.functional.normalize
nn.functional.cosine_similarity nn.functional.one_hot nn.functional.glu
""".split()


# ---------------------------------------------------------------- the worker

def worker(names, dtype_name, samples):
    """Runs in a process with set_env.sh's environment; one JSON line per op."""
    import torch
    import torch_npu  # noqa: F401
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.utils._pytree import tree_flatten, tree_map

    dtype = getattr(torch, dtype_name)
    tol = {torch.float32: (1e-4, 1e-5), torch.bfloat16: (1.6e-2, 1e-2), torch.float16: (1e-2, 1e-3)}[dtype]
    by_name = {o.name + ("." + o.variant_test_name if o.variant_test_name else ""): o for o in op_db}
    to_npu = lambda x: x.to("npu") if torch.is_tensor(x) else x  # noqa: E731

    def first_line(e):
        text = str(e).strip()
        for pat in (r"(aclnn\w+ is not implemented by pyaclnn)", r"op type (\w+) is not supported by pyaclnn",
                    r"(aclnn\w+) or \w+GetWorkspaceSize not in"):
            m = re.search(pat, text)
            if m:
                return ("single-op API: %s" % m.group(1)) if "op type" in pat else (
                    ("%s missing" % m.group(1)) if "GetWorkspaceSize" in pat else m.group(1))
        # torch_npu's "call aclnnX failed, error code ..." has pyaclnn's message further down
        why = [ln.strip() for ln in text.splitlines() if re.match(r"\s*aclnn\w+: ", ln)]
        if why:
            return why[-1][:200]
        line = text.splitlines()[0] if text else type(e).__name__
        return "%s: %s" % (type(e).__name__, line[:160])

    for name in names:
        op = by_name.get(name)
        if op is None:
            print(json.dumps({"op": name, "tried": 0, "passed": 0, "reason": "no such OpInfo in this torch"}),
                  flush=True)
            continue
        if dtype not in op.supported_dtypes("cpu"):
            print(json.dumps({"op": name, "tried": 0, "passed": 0, "reason": "not a %s op on the CPU" % dtype_name}),
                  flush=True)
            continue
        tried = passed = 0
        reason = ""
        torch.manual_seed(0)
        try:
            cases = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:samples]
        except Exception as e:  # noqa: BLE001
            cases = []
            reason = "samples: " + first_line(e)
        for s in cases:
            try:
                want = op(s.input, *s.args, **s.kwargs)
            except Exception:  # noqa: BLE001  (an invalid sample on the CPU too)
                continue
            tried += 1
            try:
                got = op(to_npu(s.input), *tree_map(to_npu, s.args), **tree_map(to_npu, s.kwargs))
                torch.npu.synchronize()
                got = tree_map(lambda x: x.cpu() if torch.is_tensor(x) else x, got)
                w, _ = tree_flatten(want)
                g, _ = tree_flatten(got)
                if len(w) != len(g):
                    raise AssertionError("%d outputs, the CPU gives %d" % (len(g), len(w)))
                for a, b in zip(g, w):
                    if torch.is_tensor(b):
                        torch.testing.assert_close(a, b, rtol=tol[0], atol=tol[1], equal_nan=True,
                                                   check_device=False)
                    elif a != b and not (isinstance(a, float) and a != a and b != b):
                        raise AssertionError("%r, the CPU gives %r" % (a, b))
                passed += 1
            except AssertionError as e:
                m = re.search(r"Greatest absolute difference: (\S+)", str(e))
                reason = reason or ("mismatch: greatest difference %s" % m.group(1) if m else
                                    "mismatch: " + str(e).strip().splitlines()[0][:160])
            except Exception as e:  # noqa: BLE001
                reason = reason or first_line(e)
                try:
                    torch.npu.synchronize()
                except Exception:  # noqa: BLE001
                    print(json.dumps({"op": name, "tried": tried, "passed": passed, "reason": reason}),
                          flush=True)
                    os._exit(3)  # the device is unusable: the parent restarts on the next op
        if tried == 0 and not reason:
            reason = "no sample runs on the CPU"
        print(json.dumps({"op": name, "tried": tried, "passed": passed, "reason": reason}), flush=True)


# ---------------------------------------------------------------- the parent

def set_env():
    out = subprocess.run([sys.executable, "-m", "pyaclnn", "home"], stdout=subprocess.PIPE, check=True,
                         universal_newlines=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_DEVICE_BACKEND_AUTOLOAD", "PYACLNN_BACKEND")}
    raw = subprocess.run(["bash", "-c", 'source "$1" >/dev/null && env -0', "_", out + "/set_env.sh"],
                         env=env, stdout=subprocess.PIPE, check=True).stdout
    env = dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    env["TASK_QUEUE_ENABLE"] = "0"  # an operator's error surfaces at its call
    return env


def sweep(names, dtype, samples, log=sys.stderr):
    env = set_env()
    results, todo = {}, list(names)
    while todo:
        proc = subprocess.Popen([sys.executable, __file__, "--worker", ",".join(todo), "--dtype", dtype,
                                 "--samples", str(samples)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, universal_newlines=True, cwd="/tmp")
        for line in proc.stdout:
            if line.startswith("{"):
                r = json.loads(line)
                results[r["op"]] = r
                log.write("%-40s %d/%d %s\n" % (r["op"], r["passed"], r["tried"], r["reason"]))
                log.flush()
        proc.wait()
        done = [n for n in todo if n in results]
        rest = [n for n in todo if n not in results]
        if rest and proc.returncode not in (0, 3):
            # the worker died inside rest[0]
            results[rest[0]] = {"op": rest[0], "tried": 1, "passed": 0,
                                "reason": "the process died (exit %d)" % proc.returncode}
            rest = rest[1:]
        if not done and rest and proc.returncode == 0:
            break
        todo = rest
    return [results[n] for n in names if n in results]


def works(r):
    return r["tried"] > 0 and r["passed"] == r["tried"]


def counts(rows):
    tried = [r for r in rows if r["tried"] > 0]
    ok = [r for r in tried if works(r)]
    return len(tried), len(ok), len(tried) - len(ok)


def markdown(rows, meta):
    n, ok, bad = counts(rows)
    out = ["**%d ops tried, %d work, %d fail** (%s; torch %s, torch_npu %s, up to %d OpInfo samples per op; "
           "`python tools/aten_sweep.py --update-doc docs/torch_npu.md` writes this table)." % (
               n, ok, bad, meta["dtype"], meta["torch"], meta["torch_npu"], meta["samples"]), "",
           "| op (OpInfo) | samples passed | result | first reason |", "| --- | --- | --- | --- |"]
    for r in rows:
        if r["tried"] == 0:
            continue
        out.append("| `%s` | %d/%d | %s | %s |" % (r["op"], r["passed"], r["tried"], "works" if works(r) else "fails",
                                                   (r["reason"] or "").replace("|", "\\|") if not works(r) else ""))
    return "\n".join(out) + "\n"


def parse_doc(text):
    """The rows and summary counts of the results block (for the test)."""
    i, j = text.find(DOC_BEGIN), text.find(DOC_END)
    if i < 0 or j < i:
        raise ValueError("no aten_sweep results block")
    block = text[i + len(DOC_BEGIN):j].strip().splitlines()
    m = SUMMARY.match(block[0])
    if not m:
        raise ValueError("no summary line: %r" % block[0])
    rows = []
    for ln in block[1:]:
        r = ROW.match(ln)
        if r:
            rows.append({"op": r.group(1), "passed": int(r.group(2)), "tried": int(r.group(3)),
                         "result": r.group(4), "reason": r.group(5)})
        elif ln.startswith("| `"):
            raise ValueError("bad row: %r" % ln)
    return tuple(int(x) for x in m.groups()), rows


def readme_line(n, ok):
    return ("What works, what fails and how: [torch_npu](docs/torch_npu.md); torch's own OpInfo samples of %d "
            "common aten ops give the CPU's results on `.npu()` for %d of them ([the sweep](docs/torch_npu.md#"
            "the-aten-sweep)). %s" % (n, ok, README_MARK))


def update_doc(path, rows, meta):
    text = pathlib.Path(path).read_text()
    i, j = text.find(DOC_BEGIN), text.find(DOC_END)
    if i < 0 or j < i:
        raise SystemExit("%s has no results block (%s ... %s)" % (path, DOC_BEGIN, DOC_END))
    pathlib.Path(path).write_text(text[:i + len(DOC_BEGIN)] + "\n\n" + markdown(rows, meta) + "\n" + text[j:])
    readme = ROOT / "README.md"
    lines = readme.read_text().splitlines(keepends=True)
    n, ok, _ = counts(rows)
    for k, ln in enumerate(lines):
        if README_MARK in ln:
            lines[k] = readme_line(n, ok) + "\n"
    readme.write_text("".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", help="comma-separated OpInfo names (default: the common list)")
    ap.add_argument("--all", action="store_true", help="every OpInfo with a CPU fp32 kernel")
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--update-doc", metavar="FILE")
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        worker(args.worker.split(","), args.dtype, args.samples)
        return
    if args.all:
        env = set_env()
        names = subprocess.run([sys.executable, "-c", "from torch.testing._internal.common_methods_invocations "
                                "import op_db\nfor o in op_db: print(o.name + ('.' + o.variant_test_name if "
                                "o.variant_test_name else ''))"], env=env, stdout=subprocess.PIPE, check=True,
                               universal_newlines=True, cwd="/tmp").stdout.split()
    else:
        names = args.ops.split(",") if args.ops else COMMON
    t = time.time()
    rows = sweep(names, args.dtype, args.samples)
    meta = dict(dtype=args.dtype, samples=args.samples, **json.loads(subprocess.run(
        [sys.executable, "-c", "import json, importlib.metadata as m; print(json.dumps({'torch': m.version('torch'), "
         "'torch_npu': m.version('torch_npu')}))"], stdout=subprocess.PIPE, check=True,
        universal_newlines=True).stdout))
    n, ok, bad = counts(rows)
    sys.stderr.write("%d ops tried, %d work, %d fail (%.0f s)\n" % (n, ok, bad, time.time() - t))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    if args.update_doc:
        update_doc(args.update_doc, rows, meta)
    else:
        sys.stdout.write(markdown(rows, meta))


if __name__ == "__main__":
    main()
