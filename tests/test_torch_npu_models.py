"""Unchanged transformers models (GPT-2, Llama, BERT; tiny random-init configs)
trained on .npu() through the real torch_npu (a test extra, with transformers),
against the same training on the CPU (tests/torch_npu/npu_models.py): fp32 with
AdamW foreach and fused, op-by-op bit-identity, dropout, bf16 autocast, fp16 with
GradScaler; and no op sent to the single-operator API (aclopCompileAndExecute) or
to an acl_op fallback. The data-parallel run (DistributedDataParallel over
torch_npu's hccl backend, two processes) is tests/torch_npu/npu_ddp.py."""
import ctypes
import importlib.util
import os
import pathlib
import re

import pytest

from torch_npu_env import SCRIPTS, error_lines, require_torch_npu, run_script


@pytest.fixture(scope="module", autouse=True)
def torch_npu_and_transformers():
    require_torch_npu()
    if importlib.util.find_spec("transformers") is None:
        msg = "transformers is not installed (pip install \".[test]\" installs it)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


# pyaclnn logs each single-op API call at info level; torch_npu logs each acl_op
# fallback of DO_COMPATIBILITY (an aclnn function it did not find) at warning level.
ACLOP = re.compile(r"single-op API call: op type (\S+)")
FALLBACK = re.compile(r"(aclnn\w+) or \w+GetWorkspaceSize not in .*Will call")


def fallbacks(stderr):
    return sorted(set(ACLOP.findall(stderr)) | set(FALLBACK.findall(stderr)))


def run_models(home, *args):
    proc = run_script(home, SCRIPTS / "npu_models.py", *args, extra_env={"ASCEND_GLOBAL_LOG_LEVEL": "1"})
    assert proc.returncode == 0, proc.stdout[-4000:] + "\n".join(
        ln for ln in proc.stderr.splitlines() if "[INFO]" not in ln and "[WARNING]" not in ln)[-8000:]
    assert re.search(r"^OK\b", proc.stderr, re.M), proc.stderr[-4000:]
    assert fallbacks(proc.stderr) == [], "ops sent to the single-op API / acl_op: %s" % fallbacks(proc.stderr)
    assert not error_lines(proc.stderr), "error lines on stderr:\n" + "\n".join(error_lines(proc.stderr))
    assert "FIG " in proc.stdout
    return proc


def test_models_train_on_npu_like_on_cpu(home):
    run_models(home)


def flash_attention_status(home):
    """None when pyaclnn runs aclnnFlashAttentionScore, else why not: torch_npu's
    sdpa path calls it unguarded (EXEC_NPU_CMD), so without it sdpa fails."""
    lib = ctypes.CDLL(str(home / "lib64" / "libopapi.so"))
    try:
        fn = lib.aclnnFlashAttentionScoreGetWorkspaceSize
    except AttributeError:
        return "aclnnFlashAttentionScore is not exported"
    p, i64, dbl = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
    fn.restype = ctypes.c_int
    fn.argtypes = [p] * 8 + [dbl, dbl, i64, i64, i64, ctypes.c_char_p, i64, i64] + [p] * 4 + [p, p]
    ws, ex = ctypes.c_uint64(0), ctypes.c_void_p(0)
    rc = fn(*([None] * 8), 0.125, 1.0, 65536, 0, 4, b"BNSD", 0, 0, *([None] * 4), ctypes.byref(ws),
            ctypes.byref(ex))
    return "aclnnFlashAttentionScore answers 561003 (not implemented)" if rc == 561003 else None


def test_models_sdpa_attention(home):
    why = flash_attention_status(home)
    if why:
        pytest.skip(why + ": attn_implementation=\"sdpa\" needs it")
    run_models(home, "sdpa")


def test_distributed_data_parallel_hccl_two_processes(home):
    """DistributedDataParallel over torch_npu's hccl backend, 2 processes (pyaclnn's
    HCCL over gloo), LlamaForCausalLM + AdamW, DDP's own averaging and a ReduceOp.AVG
    comm hook: after every step the parameters are bit-identical on both ranks and to
    the same arithmetic done by hand in one process, and within 1e-4 of one process
    training on the whole batch."""
    import pyaclnn
    if not (pathlib.Path(pyaclnn.lib_dir()) / "libhccl_gloo.so").exists() and not os.environ.get("CI"):
        pytest.skip("pyaclnn was built without gloo (install libgloo-dev, then pip install .)")
    proc = run_script(home, SCRIPTS / "npu_ddp.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-8000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("rank ")]
    assert len(lines) == 4 and all(ln.endswith(": ok") for ln in lines), proc.stdout
    assert proc.stdout.rstrip().endswith("OK"), proc.stdout
    assert not error_lines(proc.stderr), "\n".join(error_lines(proc.stderr))
