"""The real torch_npu (torch-npu==2.13.0, a test extra) on pyaclnn's toolkit, in
subprocesses with set_env.sh's environment: the libraries it links against, the
device API, the four operators through torch_npu modelled on the vendor's tests,
the tensor plumbing, errors for what pyaclnn lacks, a training step bit-identical
to pyaclnn.torch's, and a clean exit (no error line at all on stderr)."""
import os
import pathlib
import re
import shutil
import subprocess
import sysconfig
import textwrap

import pytest

from conftest import REPO
from torch_npu_env import SCRIPTS, error_lines, require_torch_npu, run_script

pytestmark = pytest.mark.usefixtures("torch_npu_installed")


@pytest.fixture(scope="module")
def torch_npu_installed():
    require_torch_npu()


def torch_npu_dir():
    return pathlib.Path(sysconfig.get_paths()["purelib"]) / "torch_npu"


def readelf(flag, path):
    if shutil.which("readelf") is None:
        pytest.skip("readelf not found")
    return subprocess.run(["readelf", flag, "-W", str(path)], stdout=subprocess.PIPE, check=True,
                          universal_newlines=True).stdout


def check_unittest(proc):
    """A torch_npu.testing script passed and the process exited cleanly."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^OK\b", proc.stderr, re.M), proc.stderr
    assert not error_lines(proc.stderr), "error lines on stderr:\n" + "\n".join(error_lines(proc.stderr))


def test_every_library_torch_npu_links_against_is_in_lib64(home):
    """Every DT_NEEDED of torch_npu's objects is found in torch_npu, torch, the system
    or pyaclnn's lib64, and what lib64 provides are CANN's names."""
    objects = sorted(torch_npu_dir().glob("_C*.so")) + sorted((torch_npu_dir() / "lib").glob("*.so"))
    assert objects
    system = subprocess.run(["ldconfig", "-p"], stdout=subprocess.PIPE, universal_newlines=True).stdout
    local = {p.name for d in (torch_npu_dir() / "lib", torch_npu_dir().parent / "torch" / "lib") for p in d.glob("*.so*")}
    from_lib64 = set()
    for obj in objects:
        for name in re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", readelf("-d", obj)):
            if name in local or name in system:
                continue
            assert (home / "lib64" / name).exists(), "%s needs %s, which lib64 does not ship" % (obj.name, name)
            from_lib64.add(name)
    assert from_lib64 == {"libascendcl.so", "libhccl.so", "libacl_op_compiler.so", "libge_runner.so",
                          "libgraph.so", "libacl_tdt_channel.so", "libatb.so"}, from_lib64


def test_every_symbol_torch_npu_binds_at_load_is_exported(home):
    """torch_npu is linked with BIND_NOW: every undefined symbol of its objects that
    torch, Python and the system do not define must come from lib64 (the C entry
    points from libascendcl.so, the atb:: ones from libatb.so)."""
    def symbols(path, defined):
        out = readelf("--dyn-syms", path)
        rows = [ln.split() for ln in out.splitlines() if re.match(r"\s*\d+:", ln)]
        pick = (lambda r: r[6] != "UND") if defined else (lambda r: r[6] == "UND" and r[4] == "GLOBAL")
        return {r[7].split("@")[0] for r in rows if len(r) >= 8 and pick(r)}

    needed = set()
    for obj in list(torch_npu_dir().glob("_C*.so")) + list((torch_npu_dir() / "lib").glob("*.so")):
        needed |= symbols(obj, False)
    provided = set()
    for d in (torch_npu_dir() / "lib", torch_npu_dir().parent / "torch" / "lib"):
        for so in d.glob("*.so*"):
            provided |= symbols(so, True)
    cann = {s for s in needed - provided if s.startswith(("acl", "rt", "Msprof", "_ZN3atb"))}
    ours = symbols(home / "lib64" / "libascendcl.so", True) | symbols(home / "lib64" / "libatb.so", True)
    assert len(cann) > 80 and not (cann - ours), sorted(cann - ours)


def test_toolkit_and_device_api(home):
    check_unittest(run_script(home, SCRIPTS / "npu_toolkit.py"))


def test_nsa_select_attention_through_torch_npu(home):
    check_unittest(run_script(home, SCRIPTS / "npu_nsa.py"))


def test_scaled_masked_softmax_through_torch_npu(home):
    check_unittest(run_script(home, SCRIPTS / "npu_softmax.py"))


def test_tensor_plumbing(home):
    check_unittest(run_script(home, SCRIPTS / "npu_plumbing.py"))


def test_activation_gradients_and_stack(home):
    check_unittest(run_script(home, SCRIPTS / "npu_activation_grad.py"))


@pytest.mark.parametrize("case,missing", [
    ("y = torch.nonzero(x).cpu()", "op type NonZero is not supported by pyaclnn"),
    ("torch.npu.set_compile_mode(jit_compile=True); y = (x + 1).cpu()", "op type Add is not supported by pyaclnn"),
])
def test_what_pyaclnn_lacks_is_an_error_naming_it(home, tmp_path, case, missing):
    """An op pyaclnn does not implement: torch_npu finds no aclnn function, falls back
    to the single-op API, and gets an error naming the op type (no crash, no hang)."""
    script = tmp_path / "unsupported.py"
    script.write_text(textwrap.dedent("""\
        import torch, torch_npu
        x = torch.ones(4, 4).npu()
        try:
            %s
        except RuntimeError as e:
            print("RAISED", str(e))
        else:
            print("NO ERROR")
        """ % case))
    proc = run_script(home, script, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "RAISED" in proc.stdout and missing in proc.stdout, proc.stdout + proc.stderr


def test_train_step_written_for_torch_npu(home):
    """samples/train_step_torch_npu.py: NSA forward + backward on .npu() tensors,
    loss.backward(), Adam on the CPU; every gradient bit-identical to pyaclnn.torch's."""
    proc = run_script(home, REPO / "samples" / "train_step_torch_npu.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if " grad " in ln]
    assert len(lines) == 8 and all(ln.endswith("bit-identical") for ln in lines), proc.stdout
    assert proc.stdout.rstrip().endswith("OK"), proc.stdout
    assert not error_lines(proc.stderr), proc.stderr


def test_torch_distributed_hccl_backend_across_processes(home):
    """torch.distributed with torch_npu's "hccl" backend, 3 processes (one device each)
    on pyaclnn's HCCL over gloo: all_reduce (fp32, fp16, bf16 sums; MAX), reduce,
    broadcast, all_gather into a list (torch_npu pads each entry with aclnnConstantPadNd)
    and into a tensor, gather (concatenated with aclnnCat), scatter,
    reduce_scatter_tensor, all_to_all (list and single), all_gather_object, barrier,
    send / recv, each bit-identical to numpy's rank-order fold, and every rank exits
    cleanly."""
    import pyaclnn
    if not (pathlib.Path(pyaclnn.lib_dir()) / "libhccl_gloo.so").exists() and not os.environ.get("CI"):
        pytest.skip("pyaclnn was built without gloo (install libgloo-dev, then pip install .)")
    proc = run_script(home, SCRIPTS / "npu_distributed.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("rank ")]
    assert len(lines) == 36 and all(ln.endswith("bit-identical") for ln in lines), proc.stdout
    assert proc.stdout.rstrip().endswith("OK"), proc.stdout
    assert not error_lines(proc.stderr), "\n".join(error_lines(proc.stderr))
