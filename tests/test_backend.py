"""Backend selection (PYACLNN_BACKEND, ASCEND_HOME_PATH / ASCEND_TOOLKIT_HOME)
and the command line (python -m pyaclnn ...). Each case runs in a fresh process."""
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

import pyaclnn

from conftest import run_python

REPORT = "import pyaclnn; print(pyaclnn.backend()); print(*pyaclnn.library_paths(), sep='\\n')"

SOFTMAX_CALL = """
import numpy as np, pyaclnn
from pyaclnn import reference
rng = np.random.default_rng(0)
g = rng.uniform(-1, 1, (1, 2, 4, 8)).astype(np.float32)
y = rng.uniform(0, 1, (1, 2, 4, 8)).astype(np.float32)
m = np.triu(np.ones((4, 8), bool), 1)[None, None]
out = pyaclnn.scaled_masked_softmax_backward(g, y, m, 0.5)
assert np.allclose(out, reference.scaled_masked_softmax_backward(g, y, m, 0.5), atol=1e-6)
print(pyaclnn.backend())
try:
    pyaclnn.runtime_info()
except NotImplementedError as e:
    print("no-ext:", e)
"""


@pytest.fixture(scope="module")
def fake_toolkit(tmp_path_factory):
    """A directory shaped like a CANN toolkit, holding copies of the bundled libraries."""
    root = tmp_path_factory.mktemp("fake_cann")
    (root / "lib64").mkdir()
    for name in ("libascendcl.so", "libnnopbase.so", "libopapi.so"):
        shutil.copy(os.path.join(pyaclnn.lib_dir(), name), root / "lib64" / name)
    return root


def lines(proc):
    return proc.stdout.strip().splitlines()


def test_default_is_the_bundled_cpu_library(home):
    out = lines(run_python(REPORT))
    assert out[0] == "cpu"
    assert out[1:] == [str(home / "lib64" / n) for n in ("libascendcl.so", "libnnopbase.so", "libopapi.so")]


def test_cann_backend_loads_the_toolkit_libraries(fake_toolkit):
    out = lines(run_python(SOFTMAX_CALL, {"PYACLNN_BACKEND": "cann",
                                          "ASCEND_HOME_PATH": str(fake_toolkit)}))
    assert out[0] == "cann"
    assert out[1].startswith("no-ext:") and "cpu backend" in out[1]
    paths = lines(run_python(REPORT, {"PYACLNN_BACKEND": "cann", "ASCEND_TOOLKIT_HOME": str(fake_toolkit)}))
    assert paths[0] == "cann"
    assert all(p.startswith(str(fake_toolkit / "lib64")) for p in paths[1:])


def test_cann_backend_without_a_toolkit_fails_clearly(tmp_path):
    proc = run_python(REPORT, {"PYACLNN_BACKEND": "cann"}, check=False)
    assert proc.returncode != 0
    assert "BackendError" in proc.stderr and "ASCEND_HOME_PATH" in proc.stderr
    empty = tmp_path / "empty"
    (empty / "lib64").mkdir(parents=True)
    (empty / "lib64" / "libascendcl.so").write_bytes(b"")
    proc = run_python(REPORT, {"PYACLNN_BACKEND": "cann", "ASCEND_HOME_PATH": str(empty)}, check=False)
    assert proc.returncode != 0
    for missing in ("libnnopbase.so", "libopapi.so"):  # every failed candidate is listed
        assert str(empty / "lib64" / missing) in proc.stderr


def test_cann_backend_with_a_broken_library_names_it(tmp_path):
    broken = tmp_path / "broken"
    (broken / "lib64").mkdir(parents=True)
    for name in ("libascendcl.so", "libnnopbase.so", "libopapi.so"):
        (broken / "lib64" / name).write_bytes(b"not an ELF file")
    proc = run_python(REPORT, {"PYACLNN_BACKEND": "cann", "ASCEND_HOME_PATH": str(broken)}, check=False)
    assert proc.returncode != 0 and str(broken / "lib64" / "libascendcl.so") in proc.stderr


def test_auto_detects_a_toolkit(fake_toolkit, tmp_path):
    assert lines(run_python(REPORT, {"ASCEND_HOME_PATH": str(fake_toolkit)}))[0] == "cann"
    assert lines(run_python(REPORT, {"PYACLNN_BACKEND": "auto",
                                     "ASCEND_TOOLKIT_HOME": str(fake_toolkit)}))[0] == "cann"
    # an incomplete toolkit is not used
    assert lines(run_python(REPORT, {"ASCEND_HOME_PATH": str(tmp_path)}))[0] == "cpu"
    # neither is our own toolkit (what sourcing _home/set_env.sh exports)
    assert lines(run_python(REPORT, {"ASCEND_HOME_PATH": pyaclnn.home()}))[0] == "cpu"
    # and an explicit cpu choice wins over the environment
    assert lines(run_python(REPORT, {"PYACLNN_BACKEND": "cpu",
                                     "ASCEND_HOME_PATH": str(fake_toolkit)}))[0] == "cpu"


def test_unknown_backend_is_rejected():
    proc = run_python(REPORT, {"PYACLNN_BACKEND": "gpu"}, check=False)
    assert proc.returncode != 0 and "PYACLNN_BACKEND" in proc.stderr and "gpu" in proc.stderr


def test_import_does_not_load_the_library():
    # `python -m pyaclnn home` must work even where no backend can be loaded.
    code = "import pyaclnn; print(pyaclnn.home()); print(pyaclnn.ACL_FLOAT16)"
    out = lines(run_python(code, {"PYACLNN_BACKEND": "cann"}))
    assert out == [pyaclnn.home(), "1"]


# ---------------------------------------------------------------- command line

def cli(*args, env=None):
    env = dict(os.environ if env is None else env)
    return subprocess.run([sys.executable, "-m", "pyaclnn", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, env=env,
                          cwd=tempfile.gettempdir(), timeout=600)


def test_cli_home_and_flags(home):
    proc = cli("home")
    assert proc.returncode == 0 and proc.stdout.strip() == str(home)
    for sub in ("include/acl/acl.h", "lib64/libascendcl.so", "set_env.sh", "share/cdef.h",
                "samples/scaled_masked_softmax_backward.cpp", "samples/CMakeLists.txt"):
        assert (home / sub).is_file(), sub
    assert cli("cflags").stdout.strip() == "-I%s/include" % home
    assert cli("libs").stdout.split() == ["-L%s/lib64" % home, "-lascendcl", "-lnnopbase", "-lopapi",
                                          "-Wl,-rpath,%s/lib64" % home]


def test_cli_info():
    proc = cli("info")
    assert proc.returncode == 0, proc.stderr
    assert "backend:  cpu" in proc.stdout and "libascendcl.so" in proc.stdout
    assert "runtime:  {" in proc.stdout


def test_set_env_exports_the_toolkit(home):
    out = subprocess.run(["bash", "-c", 'source "$1/set_env.sh" && echo "$ASCEND_HOME_PATH" && '
                          'echo "$LD_LIBRARY_PATH"', "_", str(home)],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.split("\n")
    assert out[0] == str(home) and out[1].split(":")[0] == str(home / "lib64")


def test_cli_demo():
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        pytest.skip("no C++ compiler")
    proc = cli("demo")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "-lascendcl -lnnopbase -lopapi -Wl,-rpath," in out
    assert "C++ result vs pyaclnn.reference (float64): max abs error" in out
    assert out.count("PASSED") == 3 and out.rstrip().endswith("demo OK")


def test_samples_build_with_cmake(home, tmp_path):
    if shutil.which("cmake") is None or shutil.which(os.environ.get("CXX", "g++")) is None:
        pytest.skip("cmake or a C++ compiler is missing")
    env = dict(os.environ, ASCEND_HOME_PATH=str(home))
    build = tmp_path / "build"
    for cmd in (["cmake", "-S", str(home / "samples"), "-B", str(build)],
                ["cmake", "--build", str(build)]):
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True)
        assert proc.returncode == 0, proc.stdout
    proc = subprocess.run([str(build / "scaled_masked_softmax_backward")], stdout=subprocess.PIPE,
                          universal_newlines=True)
    assert proc.returncode == 0 and "PASSED" in proc.stdout
