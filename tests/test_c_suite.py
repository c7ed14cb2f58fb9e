"""The C test suite (tests/c/*.c) against the INSTALLED libraries (<home>/lib64)."""
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tests" / "c" / "run_c_tests.sh"


def test_python_m_pyaclnn_home_is_the_installed_home(home):
    proc = subprocess.run([sys.executable, "-m", "pyaclnn", "home"], cwd=tempfile.gettempdir(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode == 0, proc.stderr
    assert pathlib.Path(proc.stdout.strip()).resolve() == home.resolve()


def test_c_suite_against_installed_library(home):
    if shutil.which("bash") is None or shutil.which("gcc") is None:
        pytest.skip("bash or gcc not found")
    libdir = home / "lib64"
    for name in ("libascendcl.so", "libnnopbase.so", "libopapi.so"):
        assert (libdir / name).exists(), "%s missing from the installed toolkit" % name
    proc = subprocess.run(["bash", str(SCRIPT), str(libdir)], cwd=REPO, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=900)
    assert proc.returncode == 0, "run_c_tests.sh %s exited %d:\n%s" % (libdir, proc.returncode, proc.stdout)
    assert "all C tests passed" in proc.stdout, proc.stdout
