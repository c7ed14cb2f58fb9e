"""Header self-containment (C11 and C++11, alone and twice) and the vendor samples
compiling against the headers: tests/headers/test_headers.sh."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tests" / "headers" / "test_headers.sh"
SAMPLES = REPO.parent / "shared" / "samples"


def test_headers_script():
    if shutil.which("bash") is None or shutil.which("gcc") is None or shutil.which("g++") is None:
        pytest.skip("bash, gcc or g++ not found")
    assert SAMPLES.is_dir(), "vendor samples missing: %s" % SAMPLES
    env = dict(os.environ, SAMPLES_DIR=str(SAMPLES))
    if os.path.exists(os.path.join(sys.prefix, "include", "mpi.h")):  # the mpich wheel (a test extra)
        env.setdefault("MPI_HOME", sys.prefix)
    proc = subprocess.run(["bash", str(SCRIPT)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=900)
    assert proc.returncode == 0, "test_headers.sh exited %d:\n%s" % (proc.returncode, proc.stdout)
    assert "test_headers: OK" in proc.stdout, proc.stdout
