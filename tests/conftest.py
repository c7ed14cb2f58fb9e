"""Shared fixtures: an initialised runtime and a stream, the toolkit root, and a
helper that compiles a C/C++ program with the documented link line."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

# With torch-npu installed (a test extra), `import torch` would load torch_npu
# (torch's device-backend autoload), which needs the toolkit's libraries on
# LD_LIBRARY_PATH. The tests that use torch_npu run it in subprocesses with
# set_env.sh's environment (tests/torch_npu_env.py); everything else sees plain torch.
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

REPO = pathlib.Path(__file__).resolve().parents[1]
# The tests exercise the installed package (with its built _home/), never the
# source tree that `python -m pytest` would put first on sys.path.
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != REPO]

import pyaclnn  # noqa: E402
from pyaclnn.__main__ import compile_command  # noqa: E402

SHARED_SAMPLES = REPO.parent / "shared" / "samples"


@pytest.fixture(scope="session")
def home():
    """The installed toolkit root (pyaclnn/_home)."""
    return pathlib.Path(pyaclnn.home())


@pytest.fixture(scope="session")
def runtime():
    """The pyaclnn module with the runtime initialised (aclInit + device 0)."""
    pyaclnn.ensure_initialized()
    return pyaclnn


@pytest.fixture
def stream(runtime):
    """A fresh stream, synchronized and destroyed after the test."""
    with pyaclnn.Stream() as s:
        yield s


@pytest.fixture(scope="session")
def compile_program(home, tmp_path_factory):
    """compile_program(source, extra_args=()) -> path of the built executable.

    Builds in a fresh directory with the standard line (pyaclnn.__main__.
    compile_command), so the program is ``a.out`` there; skips the test if no
    compiler is installed."""

    def build(source, extra_args=()):
        cmd = compile_command(source, str(home))
        if shutil.which(cmd[0]) is None:
            pytest.skip("compiler %s not found" % cmd[0])
        workdir = tmp_path_factory.mktemp("build")
        proc = subprocess.run(cmd + list(extra_args), cwd=workdir, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True)
        assert proc.returncode == 0, "build failed:\n$ %s\n%s" % (" ".join(cmd), proc.stdout)
        return workdir / "a.out"

    return build


def run_python(code, env_update=None, drop=("PYACLNN_BACKEND", "ASCEND_HOME_PATH",
                                           "ASCEND_TOOLKIT_HOME"), check=True):
    """Run `code` in a fresh interpreter with a controlled environment (the
    variables in `drop` removed, `env_update` added), outside the source tree
    so that the installed package is imported. Returns the CompletedProcess."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_update or {})
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tempfile.gettempdir(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    if check:
        assert proc.returncode == 0, "subprocess failed:\n%s\n%s" % (proc.stdout, proc.stderr)
    return proc


@pytest.fixture
def run_py():
    """The run_python helper, as a fixture."""
    return run_python


@pytest.fixture
def restore_runtime_knobs():
    """Puts the thread count and the ISA cap back after a test that changes them."""
    threads = pyaclnn.get_num_threads()
    try:
        yield
    finally:
        pyaclnn.set_num_threads(threads)
        pyaclnn.set_max_isa(None)

