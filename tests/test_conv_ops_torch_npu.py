"""The conv family through the real torch_npu (a test extra) on pyaclnn's toolkit, in a
subprocess with set_env.sh's environment (tests/torch_npu/npu_conv.py): convolutions,
transposed convolutions, avg_pool2d, unfold and solve_triangular on the NPU device
against torch CPU, with a clean exit (no error line on stderr)."""
import re

from torch_npu_env import SCRIPTS, error_lines, require_torch_npu, run_script


def test_conv_family_through_torch_npu(home):
    require_torch_npu()
    proc = run_script(home, SCRIPTS / "npu_conv.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^OK\b", proc.stderr, re.M), proc.stderr
    assert not error_lines(proc.stderr), "error lines on stderr:\n" + "\n".join(error_lines(proc.stderr))
