"""The vendor's HCCL samples (../shared/samples/hccl), unchanged: each is built
with its own Makefile in a temporary copy (the folder is read-only) against
the installed toolkit root, then run as its README says: the thread samples
with PYACLNN_DEVICE_COUNT=8 (all at once: each rank sleeps `device` seconds
before printing), the per-process one under MPI (`make test N=2/4/8`, the
PyPI mpich wheel's mpirun, MPI_HOME=sys.prefix). The output must be the
README's "Sample Output" block (for MPI: its rankId lines, in any order)."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import pyaclnn

from conftest import SHARED_SAMPLES

HCCL_SAMPLES = SHARED_SAMPLES / "hccl"
THREAD_SAMPLES = {"allreduce": "all_reduce", "broadcast": "broadcast", "allgather": "allgather",
                  "reduce_scatter": "reduce_scatter", "send_recv": "send_recv"}


def readme_output(sample):
    text = (HCCL_SAMPLES / sample / "README_en.md").read_text()
    blocks = [b for b in re.findall(r"```[a-z]*\n(.*?)```", text, re.S) if "rankId" in b]
    assert blocks, "no Sample Output block in %s/README_en.md" % sample
    return blocks[-1].strip().splitlines()


def build(sample, dest, home, extra_env=None):
    assert (HCCL_SAMPLES / sample / "Makefile").exists(), "missing %s" % (HCCL_SAMPLES / sample)
    if shutil.which("make") is None or shutil.which("g++") is None:
        if os.environ.get("CI"):
            pytest.fail("make and g++ are needed")
        pytest.skip("make or g++ not found")
    work = dest / sample
    shutil.copytree(HCCL_SAMPLES / sample, work)
    for p in work.iterdir():
        p.chmod(0o644)
    env = dict(os.environ, ASCEND_HOME_PATH=str(home), **(extra_env or {}))
    proc = subprocess.run(["make"], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300)
    assert proc.returncode == 0, "make failed for %s:\n%s" % (sample, proc.stdout)
    return work


def run_env(home, extra=None):
    env = dict(os.environ, PYACLNN_DEVICE_COUNT="8", HCCL_CONNECT_TIMEOUT="120", HCCL_EXEC_TIMEOUT="300")
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(home / "lib64"), env.get("LD_LIBRARY_PATH")]))
    env.update(extra or {})
    return env


def test_thread_samples_build_unchanged_and_print_their_readme_output(home, tmp_path):
    works = {s: build(s, tmp_path, home) for s in THREAD_SAMPLES}
    procs = {s: subprocess.Popen(["./" + exe], cwd=works[s], env=run_env(home), stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, universal_newlines=True)
             for s, exe in THREAD_SAMPLES.items()}
    for s, p in procs.items():
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, "%s exited %d:\n%s" % (s, p.returncode, out)
        assert out.strip().splitlines() == readme_output(s), "%s printed:\n%s" % (s, out)


def mpi_home():
    prefix = sys.prefix
    if os.path.exists(os.path.join(prefix, "include", "mpi.h")) and os.path.exists(
            os.path.join(prefix, "bin", "mpirun")):
        return prefix
    if os.environ.get("CI"):
        pytest.fail("the mpich wheel is not installed in %s (it is a test extra)" % prefix)
    pytest.skip("no MPI in %s (pip install mpich)" % prefix)


@pytest.mark.skipif(
    not (pathlib.Path(pyaclnn.lib_dir()) / "libhccl_gloo.so").exists() and not os.environ.get("CI"),
    reason="pyaclnn was built without gloo, so ranks in different processes cannot meet "
           "(install libgloo-dev, then pip install .)")
def test_the_mpi_sample_runs_one_device_per_process(home, tmp_path):
    mpi = mpi_home()
    work = build("one_device_per_process", tmp_path, home, {"MPI_HOME": mpi})
    want8 = sorted(line for line in readme_output("one_device_per_process") if line.startswith("rankId"))
    procs = {}
    for n in (2, 4, 8):
        env = run_env(home, {"MPI_HOME": mpi, "ASCEND_HOME_PATH": str(home)})
        procs[n] = subprocess.Popen(["make", "test", "N=%d" % n], cwd=work, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, universal_newlines=True)
    for n, p in procs.items():
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, "make test N=%d exited %d:\n%s" % (n, p.returncode, out)
        lines = sorted(line for line in out.splitlines() if line.startswith("rankId"))
        want = ["rankId: %d, output: [ %s ]" % (r, " ".join(str(i * n) for i in range(n))) for r in range(n)]
        assert lines == want, "N=%d printed:\n%s" % (n, out)
        if n == 8:
            assert lines == want8
