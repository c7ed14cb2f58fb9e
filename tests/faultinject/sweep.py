"""Fault-injection sweep: every failure point of a program, one run each.

For each target program and each function libfaultinject.so can fail, the
program first runs once counting the calls the library makes; then it runs
again for every N in 1 .. count + 1, once with only call N failing ("once")
and once with every call from N on failing ("from"). A run passes when it
  - neither crashes (signal) nor aborts (exit 127) nor hangs (timeout);
  - succeeds with the reference result of a run without faults, or reports
    the failure with an expected status and recovers on retry (the drivers
    check this themselves and exit 1 otherwise), or, under "from", gives up
    cleanly (drivers: exit 3; vendor samples: any non-zero exit after
    printing an expected status).
Calls are counted in the library and in the dynamic loader (the loader
allocates the thread-local storage of dlopen'ed libraries); see
faultinject.c for how.

    python tests/faultinject/sweep.py [--targets c,python,samples] [--jobs 2]
        [--home DIR] [--samples DIR] [--work DIR] [--funcs malloc,...] [--modes once,from]

prints one line per target and function and every failing run, and exits 1
if any run failed. tests/test_faultinject.py runs the C and Python drivers.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
FUNCS = ("malloc", "calloc", "realloc", "aligned_alloc", "posix_memalign", "mmap", "pthread_create",
         "memfd_create", "pthread_mutex_init", "pthread_cond_init", "fopen")
SCOPE = "libascendcl.so:ld-linux"
# What a vendor sample may print as "ERROR: <status>" when the system runs out
# of something: the drivers' statuses, and 161001 for a tensor that could not
# be created (the samples pass the NULL on to GetWorkspaceSize).
SAMPLE_STATUSES = {200000, 207001, 207005, 561101, 561103, 161001}
# A sample that ignores a failed aclCreateIntArray passes NULL for an optional
# argument (actualSeqQLenOptional), so the op sees other, inconsistent arguments
# and rejects them as such.
SAMPLE_STATUS_AFTER = {"aclCreateIntArray": {161002}}
VENDOR_SAMPLES = ("aclnn_scaled_masked_softmax_backward.cpp", "aclnn_nsa_selected_attention_grad.cpp",
                  "forward/aclnn_scaled_masked_softmax.cpp", "forward/aclnn_nsa_selected_attention.cpp")

Run = collections.namedtuple("Run", "func n mode rc out stdout")  # out: stdout, then stderr


def sh(cmd, **kw):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, **kw)
    if proc.returncode != 0:
        raise RuntimeError("$ %s\n%s" % (" ".join(map(str, cmd)), proc.stdout))
    return proc.stdout


def build(home, work, samples_dir=None):
    """Compiles the injector, the C driver and fi_rows (and the vendor samples
    when samples_dir is given) against the toolkit at `home`. Returns their paths."""
    work = pathlib.Path(work)
    work.mkdir(parents=True, exist_ok=True)
    cc = os.environ.get("CC", "gcc")
    link = ["-I%s/include" % home, "-L%s/lib64" % home, "-lascendcl", "-lnnopbase", "-lopapi",
            "-Wl,-rpath,%s/lib64" % home, "-ldl", "-pthread"]
    out = {"injector": work / "libfaultinject.so", "c": work / "fi_driver", "rows": work / "fi_rows"}
    sh([cc, "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", str(HERE / "faultinject.c"),
        "-o", str(out["injector"]), "-ldl"])
    for name, src in (("c", "fi_driver.c"), ("rows", "fi_rows.c")):
        sh([cc, "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", str(HERE / src), "-o", str(out[name])] + link)
    if samples_dir is not None:
        cxx = os.environ.get("CXX", "g++")
        for rel in VENDOR_SAMPLES:
            src = pathlib.Path(samples_dir) / rel
            if not src.exists():
                raise FileNotFoundError("vendor sample %s is missing" % src)
            exe = work / ("sample_" + src.stem)
            sh([cxx, str(src), "-o", str(exe)] + link)  # the samples' usual build line, unchanged source
            out["sample:" + src.stem] = exe
    return out


def injector_env(injector, **fi):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FI_")}
    env.update(LD_PRELOAD=str(injector), FI_LIB=SCOPE, PYACLNN_NUM_THREADS=env.get("PYACLNN_NUM_THREADS", "2"))
    env.update({k: str(v) for k, v in fi.items()})
    return env


# ---- C programs: a process per run ----

def run_program(exe, injector, func, n, mode, timeout, report=None):
    env = injector_env(injector, FI_FUNC=func, FI_N=n, FI_MODE=mode, FI_VERBOSE=1)
    if report is not None:
        env["FI_REPORT"] = str(report)
    try:
        proc = subprocess.run([str(exe)], cwd=str(exe.parent), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", e.stdout or b"", e.stderr or b""
    out, err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    return Run(func, n, mode, rc, out + err, out)


def program_counts(exe, injector, work, timeout):
    report = pathlib.Path(work) / ("counts_%s.txt" % exe.name)
    run = run_program(exe, injector, "any", 0, "once", timeout, report)
    if run.rc != 0:
        raise RuntimeError("%s fails without faults (status %s):\n%s" % (exe.name, run.rc, run.out))
    counts = dict(line.split() for line in report.read_text().splitlines())
    return {f: int(counts[f]) for f in FUNCS}, run.stdout


def sweep_program(exe, injector, cases, jobs, timeout):
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda c: run_program(exe, injector, c[0], c[1], c[2], timeout), cases))


# ---- the Python binding: fi_driver.py --serve forks a child per run ----

def python_runs(injector, cases, jobs, timeout):
    env = injector_env(injector, PYACLNN_FI_JOBS=jobs)
    text = "".join("%s %d %s %s\n" % (f, n, m, timeout) for f, n, m in cases)
    proc = subprocess.run([sys.executable, str(HERE / "fi_driver.py"), "--serve"], input=text, env=env,
                          cwd=tempfile.gettempdir(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60 + 2 * timeout * len(cases) / jobs)
    if proc.returncode != 0:
        raise RuntimeError("fi_driver.py --serve exited %d:\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
    runs = []
    for line in proc.stdout.splitlines():
        d = json.loads(line)
        f, n, m = d["case"]
        runs.append(Run(f, int(n), m, d["rc"], d["out"], d["out"]))
    if len(runs) != len(cases):
        raise RuntimeError("fi_driver.py --serve answered %d of %d cases:\n%s" % (len(runs), len(cases), proc.stderr))
    return runs


def python_counts(injector, timeout):
    run = python_runs(injector, [("any", 0, "once")], 1, timeout)[0]
    m = re.search(r"^COUNTS (.*)$", run.out, re.M)
    if run.rc != 0 or m is None:
        raise RuntimeError("fi_driver.py fails without faults (status %s):\n%s" % (run.rc, run.out))
    counts = dict(kv.split("=") for kv in m.group(1).split())
    return {f: int(counts[f]) for f in FUNCS}, run.out


# ---- judging a run ----

def verdict(kind, run, reference):
    """None if the run passed, else what went wrong."""
    if run.rc == "timeout":
        return "hang (timeout)"
    if run.rc == 127:
        return "abort (exit 127)"
    if isinstance(run.rc, int) and run.rc < 0:
        return "crash (signal %d)" % -run.rc
    if kind == "sample":
        if run.rc == 0:
            return None if run.stdout == reference else "wrong result with a success status"
        codes = {int(c) for c in re.findall(r"ERROR: (-?\d+)", run.out)}
        if not codes:
            return "exit %d without a status" % run.rc
        allowed = set(SAMPLE_STATUSES)
        for fn in re.findall(r"^faultinject: failing .* \(in or after (\w+)\)$", run.out, re.M):
            allowed |= SAMPLE_STATUS_AFTER.get(fn, set())
        bad = codes - allowed
        return "unexpected status %s" % sorted(bad) if bad else None
    if run.rc == 0:
        return None if reference in run.out else "wrong result with a success status"
    if run.rc == 3:
        return None if run.mode == "from" else "gave up after a single failure"
    if run.rc == 1:
        lines = [l for l in run.out.splitlines() if "FAILED" in l]
        return "check failed: " + (lines[-1] if lines else run.out.strip()[-200:])
    return "exit %s" % run.rc


def make_cases(counts, funcs, modes):
    return [(f, n, m) for f in funcs for n in range(1, counts[f] + 2) for m in modes]


def sweep(targets, built, injector, funcs=FUNCS, modes=("once", "from"), jobs=2, timeout=30.0, work=None):
    """Runs the sweep; returns {target: {"counts", "runs", "failures": [(run, why)], "reported"}}.
    "reported": runs in which the library reported a failure (a fault was seen)."""
    results = {}
    for target in targets:
        if target == "python":
            counts, ref_out = python_counts(injector, timeout)
            kind = "driver"
        else:
            exe = built[target]
            counts, ref_out = program_counts(exe, injector, work, timeout)
            kind = "sample" if target.startswith("sample:") else "driver"
        if kind == "driver":
            m = re.search(r"^RESULT \S+$", ref_out, re.M)
            if m is None:
                raise RuntimeError("%s printed no RESULT without faults:\n%s" % (target, ref_out))
            reference = m.group(0)
        else:
            reference = ref_out
        cases = make_cases(counts, funcs, modes)
        if target == "python":
            runs = python_runs(injector, cases, jobs, timeout)
        else:
            runs = sweep_program(built[target], injector, cases, jobs, timeout)
        failures = [(r, why) for r in runs for why in [verdict(kind, r, reference)] if why is not None]
        reported = sum(1 for r in runs if r.rc == 3 or "failed with" in r.out or "ERROR:" in r.out)
        results[target] = {"counts": counts, "runs": runs, "failures": failures, "reported": reported}
    return results


def report(results, out=sys.stdout):
    total = bad = 0
    for target, res in results.items():
        per = collections.Counter(r.func for r in res["runs"])
        badf = collections.Counter(r.func for r, _ in res["failures"])
        out.write("%-40s %5d runs, %4d reported a failure, %3d failed\n"
                  % (target, len(res["runs"]), res["reported"], len(res["failures"])))
        for f in FUNCS:
            if per[f]:
                out.write("    %-20s %4d calls  %5d runs  %3d failed\n" % (f, res["counts"][f], per[f], badf[f]))
        for r, why in res["failures"]:
            tail = " | ".join(r.out.strip().splitlines()[-3:])
            out.write("  FAIL %s %s N=%d: %s\n        %s\n" % (r.func, r.mode, r.n, why, tail[:400]))
        total += len(res["runs"])
        bad += len(res["failures"])
    out.write("total: %d runs, %d failed\n" % (total, bad))
    return bad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--targets", default="c,python,samples")
    ap.add_argument("--funcs", default=",".join(FUNCS))
    ap.add_argument("--modes", default="once,from")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--home", help="toolkit root (default: python -m pyaclnn home)")
    ap.add_argument("--samples", default=str(REPO.parent / "shared" / "samples"))
    ap.add_argument("--work", help="build directory (default: a temporary one)")
    a = ap.parse_args(argv)
    home = a.home or sh([sys.executable, "-m", "pyaclnn", "home"], cwd=tempfile.gettempdir()).strip()
    targets = a.targets.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(a.work or tmp)
        built = build(home, work, a.samples if "samples" in targets else None)
        names = []
        for t in targets:
            names += sorted(k for k in built if k.startswith("sample:")) if t == "samples" else [t]
        results = sweep(names, built, built["injector"], a.funcs.split(","), a.modes.split(","), a.jobs,
                        a.timeout, work)
        return 1 if report(results) else 0


if __name__ == "__main__":
    sys.exit(main())
