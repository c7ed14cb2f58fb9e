"""Running real torch_npu on pyaclnn's toolkit, for the tests: the environment a
shell has after `source $(python -m pyaclnn home)/set_env.sh` (read by sourcing
the installed script itself), and a subprocess runner. torch_npu is imported only
in those subprocesses, never in the pytest process (conftest.py turns torch's
device-backend autoload off there)."""
import importlib.util
import os
import pathlib
import subprocess
import sys
import tempfile

import pytest

SCRIPTS = pathlib.Path(__file__).resolve().parent / "torch_npu"


def require_torch_npu():
    """Skip without torch-npu (a test extra); under CI (which installs it), fail."""
    if importlib.util.find_spec("torch_npu") is None:
        msg = "torch-npu is not installed (pip install torch==2.13.0 \".[test]\" installs it)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


def set_env_environ(home):
    """os.environ plus what set_env.sh exports, with torch's autoload left at its
    default (on), as in a user's shell."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("TORCH_DEVICE_BACKEND_AUTOLOAD", "PYACLNN_BACKEND")}
    out = subprocess.run(["bash", "-c", 'source "$1" >/dev/null && env -0', "_", str(home / "set_env.sh")],
                         env=base, stdout=subprocess.PIPE, check=True).stdout
    env = dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    return env


def run_script(home, path, *args, timeout=600, extra_env=None):
    """Runs a Python file with set_env.sh's environment outside the source tree.
    Returns the CompletedProcess (stdout and stderr as text)."""
    env = set_env_environ(home)
    env.update(extra_env or {})
    return subprocess.run([sys.executable, str(path), *args], env=env, cwd=tempfile.gettempdir(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout)


# Lines torch_npu itself prints on every run of a pre-Ascend950 SoC, and its warning
# for npu_format_cast while allow_internal_format is False (the default): not errors.
BENIGN = ("The current CANN and Soc versions require processing for 32 padding size",
          "Cannot create tensor with internal format while allow_internal_format=False")


def error_lines(text):
    """The lines of stderr that report an error (torch_npu's [ERROR] log, a
    traceback, a sanitizer or a crash), ignoring the expected ones."""
    bad = ("[ERROR]", "[Error]", "Traceback", "Segmentation", "Aborted", "core dumped", "EE1", "ERR0")
    return [ln for ln in text.splitlines() if any(b in ln for b in bad) and not any(x in ln for x in BENIGN)]
