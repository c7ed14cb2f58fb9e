"""The project's own aclnnScaledMaskedSoftmax samples build, run and pass their
own checks; the C++ one prints a fully masked row as uniform 1/S2."""
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_cpp_sample(compile_program):
    exe = compile_program(REPO / "samples" / "scaled_masked_softmax.cpp")
    proc = subprocess.run([str(exe)], cwd=exe.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "PASSED"
    assert lines[-3].split() == ["0.125000"] * 8  # the fully masked query row of y[0,0]
    assert lines[2].split() == ["1.000000"] + ["0.000000"] * 7  # query 0 sees key 0 only
    assert float(lines[-2].rsplit("=", 1)[1]) <= 1e-6


def test_python_sample():
    proc = subprocess.run([sys.executable, str(REPO / "samples" / "scaled_masked_softmax.py")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                          cwd="/")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("PASSED")
    assert "fully masked row gradient is 0: True" in proc.stdout
