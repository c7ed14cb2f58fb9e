"""The runtime under failures of the system beneath it (tests/faultinject/):
libfaultinject.so (LD_PRELOAD) makes the library's calls of malloc, calloc,
realloc, aligned_alloc, posix_memalign, mmap, pthread_create, memfd_create,
pthread_mutex_init, pthread_cond_init and fopen fail, and
  - fi_rows.c checks each known failure mode on its own (mutex / condition
    variable creation, worker threads, event records, unmapping, launches,
    cgroup limits, a thread's first error message);
  - the sweep fails every call of a C driver and of the Python binding in
    turn, once at call N and from call N on, and requires no crash, abort,
    hang or wrong result, the expected statuses, and a working retry.
The vendor samples are swept by `python tests/faultinject/sweep.py` (not here:
their real-size NSA kernels take half a second a run).
"""
import importlib.util
import os
import pathlib
import platform
import re
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fi_sweep", REPO / "tests" / "faultinject" / "sweep.py")
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)

pytestmark = pytest.mark.skipif(platform.system() != "Linux", reason="LD_PRELOAD fault injection needs glibc")


@pytest.fixture(scope="module")
def built(home, tmp_path_factory):
    if shutil.which(os.environ.get("CC", "gcc")) is None:
        if os.environ.get("CI"):
            pytest.fail("gcc not found in CI")
        pytest.skip("gcc not found")
    return sweep.build(str(home), tmp_path_factory.mktemp("faultinject"))


def test_thread_local_storage_is_static(home):
    """Row 1: a dlopen'ed library's dynamic TLS is malloc'ed by the loader on a
    thread's first access, and glibc aborts when that fails; ours is
    initial-exec (no __tls_get_addr) and small enough for the loader's static
    TLS surplus."""
    if platform.machine() != "x86_64":
        pytest.skip("the TLS model check reads x86-64 relocations")
    if shutil.which("readelf") is None:
        if os.environ.get("CI"):
            pytest.fail("readelf not found in CI")
        pytest.skip("readelf not found")
    lib = str(home / "lib64" / "libascendcl.so")
    syms = subprocess.run(["readelf", "--dyn-syms", "-W", lib], stdout=subprocess.PIPE,
                          universal_newlines=True, check=True).stdout
    assert "__tls_get_addr" not in syms
    relocs = subprocess.run(["readelf", "-r", "-W", lib], stdout=subprocess.PIPE,
                            universal_newlines=True, check=True).stdout
    assert not re.search(r"R_X86_64_DTP", relocs), "dynamic TLS relocations:\n" + relocs
    segments = subprocess.run(["readelf", "-l", "-W", lib], stdout=subprocess.PIPE,
                              universal_newlines=True, check=True).stdout
    m = re.search(r"^\s*TLS\s+\S+\s+\S+\s+\S+\s+\S+\s+(0x[0-9a-f]+)", segments, re.M)
    assert m is not None, segments
    assert int(m.group(1), 16) <= 128, "thread-local data of %s bytes" % int(m.group(1), 16)


def test_failure_modes_one_by_one(built):
    """Rows 2-4 and the other known failure modes (tests/faultinject/fi_rows.c)."""
    proc = subprocess.run([str(built["rows"])], cwd=str(built["rows"].parent),
                          env=sweep.injector_env(built["injector"]), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    for name in ("limits", "message", "sync-init", "record", "vmm", "launch"):
        assert re.search(r"^%s\s+ok$" % name, proc.stdout, re.M), proc.stdout


def test_python_survives_allocations_failing_from_the_first_call(built):
    """Row 1 through the Python binding: every allocation of the library (and
    of the loader on its behalf) fails from the first one on. Each run must
    end in statuses, never in glibc's "cannot allocate memory for thread-local
    data: ABORT" (exit 127)."""
    cases = [(f, 1, "from") for f in ("malloc", "calloc", "aligned_alloc", "any")]
    for run in sweep.python_runs(built["injector"], cases, 2, 60):
        assert run.rc == 3, (run, "thread-local" in run.out)
        assert "GAVE-UP" in run.out and "failed with" in run.out, run


def _check(results):
    text = []
    bad = sweep.report(results, out=_Collect(text))
    assert bad == 0, "".join(text)
    for res in results.values():
        # the sweep cannot pass without testing: the library really failed calls and said so
        assert res["counts"]["malloc"] >= 20 and res["counts"]["pthread_mutex_init"] >= 2, res["counts"]
        assert res["reported"] >= len(res["runs"]) // 2, "".join(text)
    return "".join(text)


class _Collect:
    def __init__(self, out):
        self.out = out

    def write(self, s):
        self.out.append(s)


def test_sweep_c_driver(built, tmp_path):
    """Every failure point of the C driver (runtime, memory incl. virtual, events,
    all four ops), once and from N on."""
    print(_check(sweep.sweep(["c"], built, built["injector"], work=tmp_path)))


def test_sweep_python_binding(built):
    """Every failure point of the Python driver (pyaclnn's runtime classes, the
    one-call helpers of all four ops, the two-phase API), once and from N on."""
    print(_check(sweep.sweep(["python"], built, built["injector"])))
