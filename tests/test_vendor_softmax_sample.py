"""The vendor's C++ example for aclnnScaledMaskedSoftmaxBackward, compiled in place
and unchanged with the documented link line, prints the right numbers.

The example uses gradOutput = y = 1..16 and mask = [1,1,0,0] x 4, all of shape
[2,2,2,2], scale 1.0, and prints every output element with "result[i] is: %f".
Each printed value must be the float64 reference rounded to fp32 (what a correct
fp32 result holds), formatted with "%f"; masked positions print exactly
"0.000000" (never "-0.000000").
"""
import hashlib
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

from pyaclnn import reference as R

REPO = pathlib.Path(__file__).resolve().parents[1]
VENDOR_SAMPLE = REPO.parent / "shared" / "samples" / "aclnn_scaled_masked_softmax_backward.cpp"

SHAPE = (2, 2, 2, 2)
GRAD = np.arange(1, 17, dtype=np.float32).reshape(SHAPE)
Y = np.arange(1, 17, dtype=np.float32).reshape(SHAPE)
MASK = np.array([1, 1, 0, 0] * 4, dtype=bool).reshape(SHAPE)
SCALE = 1.0


def build_line(source, home):
    """The documented build line, exactly."""
    return ["g++", str(source), "-I%s/include" % home, "-L%s/lib64" % home, "-lascendcl", "-lnnopbase",
            "-lopapi", "-Wl,-rpath,%s/lib64" % home]


def test_vendor_sample_output_matches_reference(home, tmp_path):
    assert VENDOR_SAMPLE.is_file(), "vendor sample missing: %s (shared/ must sit beside the clone)" \
        % VENDOR_SAMPLE
    if shutil.which("g++") is None:
        pytest.skip("g++ not found")
    digest = hashlib.sha256(VENDOR_SAMPLE.read_bytes()).hexdigest()
    cmd = build_line(VENDOR_SAMPLE, home)
    proc = subprocess.run(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    assert proc.returncode == 0, "build failed:\n$ %s\n%s" % (" ".join(cmd), proc.stdout)
    exe = tmp_path / "a.out"
    run = subprocess.run([str(exe)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=120)
    assert run.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (run.returncode, run.stdout, run.stderr)
    assert "failed" not in run.stdout.lower(), run.stdout

    found = re.findall(r"^result\[(\d+)\] is: (\S+)$", run.stdout, re.M)
    assert len(found) == 16, "expected 16 result lines:\n%s" % run.stdout
    assert [int(i) for i, _ in found] == list(range(16)), "result lines out of order"

    ref = R.scaled_masked_softmax_backward(GRAD, Y, MASK, SCALE).reshape(-1)
    flat_mask = MASK.reshape(-1)
    for (i, text), r, m in zip(found, ref, flat_mask):
        i = int(i)
        if m:
            assert text == "0.000000", "masked result[%d] printed %r" % (i, text)
        want = "%f" % float(np.float32(r))
        assert text == want, "result[%d]: printed %s, reference %s" % (i, text, want)
        assert abs(float(text) - r) <= 5e-7 * max(1.0, abs(r))
    # the unmasked values are far from trivial (rows of the example: -66, -84, ...)
    assert sorted(set(found[k][1] for k in range(16) if not flat_mask[k]))[:1] != ["0.000000"]
    assert hashlib.sha256(VENDOR_SAMPLE.read_bytes()).hexdigest() == digest, "the sample was modified"
