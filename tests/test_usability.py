"""What a new user meets first: the Python quick starts (README, docs/python.md), the helpers'
docstring examples, `pyaclnn.reference` after `import pyaclnn`, the command
line's help text, and the benchmark's end-to-end measurement."""
import re
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import pyaclnn
from pyaclnn import reference

from conftest import REPO, run_python


def python_blocks(markdown):
    return re.findall(r"```python\n(.*?)```", markdown, re.S)


@pytest.mark.parametrize("page", ["README.md", "docs/python.md"])
def test_quick_start_runs(page):
    """The first Python block of the README and of the Python API page."""
    blocks = python_blocks((REPO / page).read_text())
    assert blocks, "%s has no python block" % page
    namespace = {}
    exec(compile(blocks[0], page + " quick start", "exec"), namespace)
    want = reference.scaled_masked_softmax_backward(namespace["grad"], namespace["y"], namespace["mask"],
                                                    0.125)
    np.testing.assert_allclose(namespace["dx"], want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("helper", ["scaled_masked_softmax", "scaled_masked_softmax_backward",
                                    "nsa_selected_attention_grad"])
def test_docstring_example_runs(helper):
    doc = getattr(pyaclnn.ops, helper).__doc__
    code = textwrap.dedent(doc.split("::\n", 1)[1])
    namespace = {}
    exec(compile(code, helper + " docstring", "exec"), namespace)
    if helper == "nsa_selected_attention_grad":
        ns = namespace
        args = (ns["q"], ns["k"], ns["v"], ns["out"].astype(ns["bf16"]), ns["dout"], ns["smax"], ns["ssum"],
                ns["topk"])
        kw = dict(scale_value=ns["scale"], selected_block_size=ns["block"], selected_block_count=ns["count"],
                  head_num=ns["N1"], sparse_mode=2)
        # the default precision is the NPU's (P and dS rounded to bf16): its float32 golden,
        # and the float64 math within that rounding
        want = reference.nsa_selected_attention_grad_npu(*args, out_dtype=np.float32, **kw)
        exact = reference.nsa_selected_attention_grad(*args, **kw)
        for got, ref, ex in zip((ns["dq"], ns["dk"], ns["dv"]), want, exact):
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * np.abs(ref).max())
            np.testing.assert_allclose(got, ex, rtol=0, atol=1e-2 * np.abs(ex).max())
    elif helper == "scaled_masked_softmax":
        ns = namespace
        want = reference.scaled_masked_softmax(ns["x"], ns["mask"], 0.125)
        np.testing.assert_allclose(ns["y"], want, rtol=0, atol=4 * 2.0 ** -24)
    else:
        ns = namespace
        want = reference.scaled_masked_softmax_backward(ns["g"], ns["y"], ns["mask"], 0.125)
        np.testing.assert_allclose(ns["dx"], want, rtol=1e-5, atol=1e-7)


def test_nsa_docstring_states_the_rules():
    doc = pyaclnn.ops.nsa_selected_attention_grad.__doc__
    for needle in ("[T2, N2, Dv]", "[T1, N1, 8]", "{128, 192}", "multiple of 16", "[1, 128]",
                   "PYACLNN_NSA_RELAXED", "sparse_mode: 0", "2 = causal", "one batch",
                   "nsa_selected_attention_forward"):
        assert needle in doc, needle


def test_reference_after_plain_import():
    out = run_python("import pyaclnn\nprint(pyaclnn.reference.scaled_masked_softmax_backward.__name__)")
    assert out.stdout.strip() == "scaled_masked_softmax_backward"


def test_help_is_plain_text():
    for args in (["-m", "pyaclnn", "--help"], ["-m", "pyaclnn", "demo", "--help"],
                 ["-m", "pyaclnn.bench", "--help"]):
        proc = subprocess.run([sys.executable, *args], cwd=tempfile.gettempdir(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True)
        assert proc.returncode == 0, proc.stdout
        assert "``" not in proc.stdout and ":func:" not in proc.stdout, proc.stdout


def test_bench_end_to_end_case_measures_all_three(runtime):
    from pyaclnn import bench

    r = bench.bench_softmax((1, 2, 8, 64), (1, 1, 8, 64), "bf16", 1, np.random.default_rng(0), False, True)
    assert r["ours_s"] > 0 and r["e2e_s"] > 0 and r["op_on_numpy_arrays_s"] > 0
    rows = bench._softmax_e2e_rows(dict(r, torch_full_s=1.0))
    assert [row["target"] for row in rows] == ["<= 1.25x op", "", ">= 8x"]
