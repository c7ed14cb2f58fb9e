"""The vendor's C++ example for aclnnScaledMaskedSoftmax, compiled in place and
unchanged with the documented link line, prints the documented output:
``0.500000 0.500000 0.268941 0.731059`` four times (x = 1..16, mask {1,1,0,0}
repeated: every s1=0 row is fully masked and so uniform, every s1=1 row is
softmax([2k+1, 2k+2]))."""
import hashlib
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

from pyaclnn import reference as R

REPO = pathlib.Path(__file__).resolve().parents[1]
VENDOR_SAMPLE = REPO.parent / "shared" / "samples" / "forward" / "aclnn_scaled_masked_softmax.cpp"
EXPECTED = ["0.500000", "0.500000", "0.268941", "0.731059"] * 4


def test_vendor_forward_sample_output(home, tmp_path):
    assert VENDOR_SAMPLE.is_file(), "vendor sample missing: %s" % VENDOR_SAMPLE
    if shutil.which("g++") is None:
        pytest.skip("g++ not found")
    digest = hashlib.sha256(VENDOR_SAMPLE.read_bytes()).hexdigest()
    cmd = ["g++", str(VENDOR_SAMPLE), "-I%s/include" % home, "-L%s/lib64" % home, "-lascendcl", "-lnnopbase",
           "-lopapi", "-Wl,-rpath,%s/lib64" % home]
    proc = subprocess.run(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    assert proc.returncode == 0, "build failed:\n$ %s\n%s" % (" ".join(cmd), proc.stdout)
    run = subprocess.run([str(tmp_path / "a.out")], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    assert run.returncode == 0, "exit %d\n%s\n%s" % (run.returncode, run.stdout, run.stderr)
    lines = run.stdout.splitlines()
    assert len(lines) == 16, run.stdout
    found = [re.fullmatch(r"mean result\[(\d+)\] is: (\S+)", ln) for ln in lines]
    assert all(found), run.stdout
    assert [int(m.group(1)) for m in found] == list(range(16))
    assert [m.group(2) for m in found] == EXPECTED
    # and the same numbers from the float64 reference
    x = np.arange(1, 17, dtype=np.float32).reshape(2, 2, 2, 2)
    mask = np.array([1, 1, 0, 0] * 4, bool).reshape(2, 2, 2, 2)
    assert ["%f" % v for v in R.scaled_masked_softmax(x, mask, 1.0).ravel()] == EXPECTED
    assert hashlib.sha256(VENDOR_SAMPLE.read_bytes()).hexdigest() == digest, "the sample was modified"
