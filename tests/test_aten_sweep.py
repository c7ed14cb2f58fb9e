"""The aten sweep's generated table (tools/aten_sweep.py --update-doc; torch's OpInfo
samples through torch_npu on .npu() against the CPU): docs/torch_npu.md's block is in
the tool's format and its counts add up, README.md's line carries the same counts,
and a few rows, rerun here, still say what the table says (the full sweep takes
minutes, so CI reruns only these)."""
import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

from torch_npu_env import require_torch_npu

REPO = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("aten_sweep", REPO / "tools" / "aten_sweep.py")
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)

RERUN = ["add", "mul", "sum", "softmax", "nn.functional.layer_norm", "nonzero"]


def doc():
    return sweep.parse_doc((REPO / "docs" / "torch_npu.md").read_text())


def test_the_table_is_in_the_tools_format_and_adds_up():
    (tried, ok, bad), rows = doc()
    assert rows and len(rows) == tried and tried == ok + bad
    assert sum(r["result"] == "works" for r in rows) == ok
    for r in rows:
        assert 0 < r["tried"] and 0 <= r["passed"] <= r["tried"], r
        if r["result"] == "works":
            assert r["passed"] == r["tried"] and r["reason"].strip() == "", r
        else:
            assert r["passed"] < r["tried"] and r["reason"].strip(), r
    assert len({r["op"] for r in rows}) == len(rows)
    assert set(r["op"] for r in rows) <= set(sweep.COMMON), "rows outside the common list"


def test_the_readme_line_carries_the_counts():
    (tried, ok, _), _ = doc()
    lines = [ln for ln in (REPO / "README.md").read_text().splitlines() if sweep.README_MARK in ln]
    assert lines == [sweep.readme_line(tried, ok)]


def test_a_few_rows_rerun_as_the_table_says(tmp_path):
    require_torch_npu()
    out = tmp_path / "sweep.json"
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "aten_sweep.py"), "--ops", ",".join(RERUN),
                           "--json", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = {r["op"]: r for r in json.loads(out.read_text())["rows"]}
    want = {r["op"]: r for r in doc()[1]}
    for name in RERUN:
        assert name in want, name
        g, w = got[name], want[name]
        assert (g["passed"], g["tried"]) == (w["passed"], w["tried"]), (name, g, w)
        assert ("works" if sweep.works(g) else "fails") == w["result"], (name, g, w)
        if w["result"] == "fails":
            assert g["reason"].replace("|", "\\|") == w["reason"].strip(), (name, g, w)
    # the markdown the tool writes parses back to the same rows
    meta = {"dtype": "float32", "torch": "t", "torch_npu": "n", "samples": 8}
    text = sweep.DOC_BEGIN + "\n\n" + sweep.markdown(list(got.values()), meta) + "\n" + sweep.DOC_END
    counts, rows = sweep.parse_doc(text)
    assert counts == sweep.counts(list(got.values()))
    assert [r["op"] for r in rows] == [r["op"] for r in got.values() if r["tried"]]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
