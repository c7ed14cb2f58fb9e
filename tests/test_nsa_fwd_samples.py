"""The project's own aclnnNsaSelectedAttention samples: the C++ program (built with
the standard link line) checks itself against a double-precision loop with the
vendor's rules and must print OK; the Python program (one call, two phases, round
trip into the grad, all against pyaclnn.reference) must exit 0 with every line ok."""
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
CPP_SAMPLE = REPO / "samples" / "nsa_selected_attention.cpp"
PY_SAMPLE = REPO / "samples" / "nsa_selected_attention.py"


def test_cpp_sample(compile_program):
    exe = compile_program(CPP_SAMPLE, ["-std=c++11", "-Wall", "-Wextra", "-Werror"])
    proc = subprocess.run([str(exe)], cwd=exe.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = re.search(r"max \|attentionOut - reference\| = (\S+) \(fp16 output\), max relative stat error = (\S+)",
                  proc.stdout)
    assert m, proc.stdout
    assert float(m.group(1)) <= 1e-3 and float(m.group(2)) <= 1e-5
    assert proc.stdout.rstrip().endswith("OK")


def test_python_sample():
    proc = subprocess.run([sys.executable, str(PY_SAMPLE)], cwd="/", stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    checks = [ln for ln in lines if ln.rstrip().endswith(("ok", "FAILED"))]
    assert len(checks) == 3 and all(ln.rstrip().endswith("ok") for ln in checks), proc.stdout
    assert lines[-1] == "OK"
