"""The vendor's C++ example for aclnnNsaSelectedAttentionGrad, compiled in place
and unchanged with the documented link line, runs to completion.

The example prints every element of dq [1,1,192], dk and dv [1024,1,192] (as
aclFloat16 passed to %f, so the printed numbers themselves carry no meaning);
the test checks the exit status, that each output line appears once per element
in index order, and that the source file is left untouched.
"""
import hashlib
import pathlib
import re
import subprocess


REPO = pathlib.Path(__file__).resolve().parents[1]
VENDOR_SAMPLE = REPO.parent / "shared" / "samples" / "aclnn_nsa_selected_attention_grad.cpp"

EXPECTED_LINES = {"dq": 1 * 1 * 192, "dk": 1024 * 1 * 192, "dv": 1024 * 1 * 192}


def test_vendor_sample_compiles_and_runs(compile_program):
    assert VENDOR_SAMPLE.is_file(), "vendor sample missing: %s (shared/ must sit beside the clone)" \
        % VENDOR_SAMPLE
    digest = hashlib.sha256(VENDOR_SAMPLE.read_bytes()).hexdigest()
    exe = compile_program(VENDOR_SAMPLE)
    proc = subprocess.run([str(exe)], cwd=exe.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=600)
    assert proc.returncode == 0, "exit %d\nstdout tail:\n%s\nstderr:\n%s" % (
        proc.returncode, "\n".join(proc.stdout.splitlines()[-20:]), proc.stderr)
    assert "failed" not in proc.stdout.lower()
    pattern = re.compile(r"^result (dq|dk|dv)\[(\d+)\] is: ", re.M)
    indices = {name: [] for name in EXPECTED_LINES}
    for name, idx in pattern.findall(proc.stdout):
        indices[name].append(int(idx))
    lines = proc.stdout.splitlines()
    for name, n in EXPECTED_LINES.items():
        assert sum(1 for ln in lines if ln.startswith("result %s[" % name)) == n
        assert len(indices[name]) == n, "%d 'result %s[' lines, expected %d" % (len(indices[name]), name, n)
        assert indices[name] == list(range(n)), "%s lines are not in index order" % name
    assert hashlib.sha256(VENDOR_SAMPLE.read_bytes()).hexdigest() == digest, "the sample was modified"
