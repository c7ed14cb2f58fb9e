"""The library under AddressSanitizer + UBSan and ThreadSanitizer
(tests/sanitize/run.sh): the C suites, the vendor samples, a fuzz run of
tests/fuzz/fuzz_ops.c (all four ops), and the multi-thread multi-stream stress test. Any
sanitizer report fails the test.

This builds the library from the source tree twice more (about a minute each
on two cores); the sanitizer runtimes come with gcc (libasan, libubsan, libtsan).
"""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tests" / "sanitize" / "run.sh"


def _compiles_with(flag, tmp_path):
    src = tmp_path / "probe.c"
    src.write_text("int main(void) { return 0; }\n")
    proc = subprocess.run(["gcc", flag, str(src), "-o", str(tmp_path / "probe")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return proc.returncode == 0


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    for tool in ("bash", "gcc", "g++", "cmake"):
        if shutil.which(tool) is None:
            pytest.skip("%s not found" % tool)
    tmp = tmp_path_factory.mktemp("probe")
    for flag in ("-fsanitize=address,undefined", "-fsanitize=thread"):
        if not _compiles_with(flag, tmp):
            if os.environ.get("CI"):  # .ci/run installs the runtimes: missing there is a failure
                pytest.fail("gcc cannot link %s in CI" % flag)
            pytest.skip("gcc cannot link %s (install libasan/libubsan/libtsan)" % flag)


def run_script(variant, out_dir):
    env = dict(os.environ)
    for name in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS", "LSAN_OPTIONS", "LD_PRELOAD"):
        env.pop(name, None)
    proc = subprocess.run(["bash", str(SCRIPT), "--only", variant, str(out_dir)], cwd=REPO, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=1500)
    assert proc.returncode == 0, "run.sh --only %s exited %d:\n%s" % (variant, proc.returncode, proc.stdout)
    assert "sanitizer run passed" in proc.stdout, proc.stdout
    return proc.stdout


def test_asan_ubsan_c_suites_samples_and_fuzz(tools, tmp_path):
    out = run_script("asan", tmp_path)
    assert "PASS  C suites (ASan+UBSan)" in out
    assert "PASS  sample aclnn_scaled_masked_softmax_backward (ASan+UBSan+LSan)" in out
    assert "PASS  sample aclnn_nsa_selected_attention_grad (ASan+UBSan+LSan)" in out
    assert "PASS  sample aclnn_scaled_masked_softmax (ASan+UBSan+LSan)" in out
    assert "PASS  sample aclnn_nsa_selected_attention (ASan+UBSan+LSan)" in out
    assert "SKIP" not in out
    assert "accepted views past their storage: 0" in out
    assert "bad-address launches that succeeded: 0" in out
    assert "crashes: 0" in out
    assert "PASS  fuzz_table" in out
    table = re.search(r"fuzz_table: seed \d+, cases \d+\.\.\d+: (\d+) run over (\d+) operators", out)
    assert table and int(table.group(1)) >= 20000, out
    reached = re.search(r"implemented operators that accepted at least one case: (\d+) of (\d+)", out)
    assert reached and int(reached.group(1)) >= int(reached.group(2)) * 3 // 4, out
    runs = re.search(r"fuzz_ops: seed \d+, cases \d+\.\.\d+: (\d+) run", out)
    assert runs and int(runs.group(1)) >= 20000, out
    assert "(0 with an unexpected status)" in out
    for op in ("ScaledMaskedSoftmaxBackward", "ScaledMaskedSoftmax", "NsaSelectedAttentionGrad",
               "NsaSelectedAttention"):
        m = re.search(r"^  %s +(\d+) cases(?: \((\d+) relaxed\))?: GetWorkspaceSize accepted (\d+), "
                      r"rejected (\d+); ran (\d+)$" % op, out, re.M)
        assert m, (op, out)
        cases, relaxed, accepted, rejected, ran = (int(g or 0) for g in m.groups())
        assert cases >= 2000 and accepted + rejected <= cases, (op, out)
        # every op is both refused and run, and in relaxed mode too for NSA
        assert accepted >= cases // 10 and rejected >= cases // 10 and ran >= cases // 10, (op, out)
        assert op.startswith("Scaled") or relaxed >= cases // 4, (op, out)


def test_tsan_multi_thread_multi_stream_stress(tools, tmp_path):
    out = run_script("tsan", tmp_path)
    assert "PASS  C suites (TSan)" in out
    assert "results bitwise equal to the single-thread run" in out
