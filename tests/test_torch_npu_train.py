"""Training steps through the real torch_npu (a test extra) on pyaclnn's random
and foreach families, in a subprocess with set_env.sh's environment
(tests/torch_npu/npu_train.py): torch.optim's AdamW (foreach, for-loop, fused),
Adam, SGD with momentum and GradScaler equal to the CPU's, and the random calls
reproducible under torch.npu.manual_seed."""
import re

import pytest

from torch_npu_env import SCRIPTS, error_lines, require_torch_npu, run_script


@pytest.fixture(scope="module", autouse=True)
def torch_npu_installed():
    require_torch_npu()


def test_training_steps_through_torch_npu(home):
    proc = run_script(home, SCRIPTS / "npu_train.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^OK\b", proc.stderr, re.M), proc.stderr
    assert not error_lines(proc.stderr), "error lines on stderr:\n" + "\n".join(error_lines(proc.stderr))
