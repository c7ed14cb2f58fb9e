"""The project's own aclnnNsaSelectedAttentionGrad samples.

The C++ sample is built with the standard link line and run with ``--dump DIR``:
it writes its exact inputs and outputs as raw files, so the test recomputes the
expected gradients with pyaclnn.reference from the same data and checks every
printed value, the checksums, the forward statistics the program computed and the
complete outputs. The Python sample must run and exit 0.
"""
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from pyaclnn import reference as R

REPO = pathlib.Path(__file__).resolve().parents[1]
CPP_SAMPLE = REPO / "samples" / "nsa_selected_attention_grad.cpp"
PY_SAMPLE = REPO / "samples" / "nsa_selected_attention_grad.py"

VALUE_LINE = re.compile(r"^(dq|dk|dv)\[(\d+)\] = (\S+)$", re.M)
CHECKSUM_LINE = re.compile(r"^checksum (dq|dk|dv): sum=(\S+) abs=(\S+)$", re.M)
ZERO_ROWS_LINE = re.compile(r"^key rows \(key, kv head\) with zero dk and dv: (\d+) of (\d+)$", re.M)


@pytest.fixture(scope="module")
def cpp_run(compile_program, tmp_path_factory):
    """(stdout, dump directory) of one run of the C++ sample with --dump."""
    exe = compile_program(CPP_SAMPLE)
    dump = tmp_path_factory.mktemp("nsa_dump")
    proc = subprocess.run([str(exe), "--dump", str(dump)], cwd=exe.parent, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, "exit %d\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout, dump, exe


def load_dump(dump):
    meta = {}
    for line in (dump / "meta.txt").read_text().splitlines():
        key, *vals = line.split()
        meta[key] = vals
    m = {k: (float(v[0]) if k == "scale" else int(v[0])) for k, v in meta.items()
         if not k.startswith("actual_seq")}
    m["actual_seq_qlen"] = [int(x) for x in meta["actual_seq_qlen"]]
    m["actual_seq_kvlen"] = [int(x) for x in meta["actual_seq_kvlen"]]
    T1, T2, N1, N2, D, Dv, C = (m[k] for k in ("T1", "T2", "N1", "N2", "D", "Dv", "count"))

    def raw(name, dtype, shape):
        a = np.fromfile(dump / (name + ".bin"), dtype=dtype)
        assert a.size == int(np.prod(shape)), name
        return a.reshape(shape)

    x = dict(
        query=raw("query", np.float16, (T1, N1, D)),
        key=raw("key", np.float16, (T2, N2, D)),
        value=raw("value", np.float16, (T2, N2, Dv)),
        attention_out=raw("attention_out", np.float16, (T1, N1, Dv)),
        attention_out_grad=raw("attention_out_grad", np.float16, (T1, N1, Dv)),
        softmax_max=raw("softmax_max", np.float32, (T1, N1, 8)),
        softmax_sum=raw("softmax_sum", np.float32, (T1, N1, 8)),
        topk_indices=raw("topk_indices", np.int32, (T1, N2, C)),
    )
    outs = (raw("dq", np.float32, (T1, N1, D)), raw("dk", np.float32, (T2, N2, D)),
            raw("dv", np.float32, (T2, N2, Dv)))
    attrs = dict(scale_value=m["scale"], selected_block_size=m["block"], selected_block_count=C,
                 head_num=N1, actual_seq_qlen=m["actual_seq_qlen"],
                 actual_seq_kvlen=m["actual_seq_kvlen"], sparse_mode=m["sparse_mode"])
    return x, outs, attrs


def test_cpp_sample_reports_success(cpp_run):
    out, _, _ = cpp_run
    assert "result check passed" in out
    assert out.count("-> ok") == 3


def test_cpp_sample_problem_shape(cpp_run):
    _, dump, _ = cpp_run
    x, outs, attrs = load_dump(dump)
    assert x["query"].shape == (8, 4, 192) and x["value"].shape == (288, 2, 128)
    assert attrs["actual_seq_qlen"] == [3, 8] and attrs["actual_seq_kvlen"] == [128, 288]
    assert attrs["selected_block_size"] == 16 and attrs["selected_block_count"] == 4
    # the stats carry 8 identical lanes; topk lists are distinct blocks of the token's batch
    assert np.all(x["softmax_max"] == x["softmax_max"][..., :1])
    assert np.all(x["softmax_sum"] == x["softmax_sum"][..., :1])
    for t in range(8):
        nblk = 8 if t < 3 else 10
        for h in range(2):
            row = x["topk_indices"][t, h]
            assert len(set(row.tolist())) == 4 and row.min() >= 0 and row.max() < nblk


def test_cpp_sample_forward_matches_reference(cpp_run):
    """The program's own forward (attention_out, max, sum) agrees with pyaclnn.reference."""
    _, dump, _ = cpp_run
    x, _, attrs = load_dump(dump)
    fwd = {k: attrs[k] for k in ("scale_value", "selected_block_size", "selected_block_count",
                                 "actual_seq_qlen", "actual_seq_kvlen", "sparse_mode")}
    o, mx, sm = R.nsa_selected_attention_forward(x["query"], x["key"], x["value"], x["topk_indices"], **fwd)
    np.testing.assert_allclose(x["softmax_max"], mx, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(x["softmax_sum"], sm, rtol=1e-6)
    err = np.abs(x["attention_out"].astype(np.float64) - o)
    assert np.all(err <= R.ulp(o, np.float16)), err.max()


def test_cpp_sample_values_match_reference(cpp_run):
    out, dump, _ = cpp_run
    x, outs, attrs = load_dump(dump)
    # the default precision is the NPU's: P and dS rounded to fp16 (float32 golden)
    ref = [r.astype(np.float64) for r in R.nsa_selected_attention_grad_npu(*x.values(), out_dtype=np.float32,
                                                                          **attrs)]
    names = ("dq", "dk", "dv")
    # whole outputs
    for name, o, r in zip(names, outs, ref):
        peak = float(np.abs(r).max())
        assert peak > 0
        assert np.abs(o - r).max() <= 1e-4 * peak, name
    # every printed value: equal to the dumped output, close to the reference
    printed = VALUE_LINE.findall(out)
    assert len(printed) == 16, out
    seen = set()
    for name, idx, val in printed:
        i, v = int(idx), float(val)
        o = outs[names.index(name)].reshape(-1)
        r = ref[names.index(name)].reshape(-1)
        assert np.float32(v) == o[i], (name, i, v, o[i])
        assert abs(v - r[i]) <= 1e-4 * float(np.abs(r).max()), (name, i, v, r[i])
        seen.add(name)
    assert seen == set(names)
    # the printed dk/dv values belong to a selected key, so they are not all zero
    assert any(float(v) != 0.0 for n, _, v in printed if n == "dk")
    # checksums
    sums = {name: (float(s), float(a)) for name, s, a in CHECKSUM_LINE.findall(out)}
    assert set(sums) == set(names)
    for name, o, r in zip(names, outs, ref):
        s, a = sums[name]
        o64 = o.astype(np.float64)
        assert s == pytest.approx(o64.sum(), rel=1e-7, abs=1e-7 * np.abs(o64).sum())
        assert a == pytest.approx(np.abs(o64).sum(), rel=1e-7)
        assert a == pytest.approx(np.abs(r).sum(), rel=1e-4)


def test_cpp_sample_unselected_keys_are_zero(cpp_run):
    out, dump, _ = cpp_run
    x, (dq, dk, dv), attrs = load_dump(dump)
    T2, N2 = dk.shape[:2]
    B = attrs["selected_block_size"]
    used = np.zeros((T2, N2), bool)
    q0 = kv0 = 0
    for qe, kve in zip(attrs["actual_seq_qlen"], attrs["actual_seq_kvlen"]):
        for t in range(q0, qe):
            for h in range(N2):
                for blk in x["topk_indices"][t, h]:
                    used[kv0 + blk * B: kv0 + (blk + 1) * B, h] = True
        q0, kv0 = qe, kve
    assert np.all(dk[~used] == 0) and np.all(dv[~used] == 0)
    assert np.all(np.abs(dv[used]).max(axis=-1) > 0)
    (zero, total), = ZERO_ROWS_LINE.findall(out)
    assert int(total) == T2 * N2
    assert int(zero) == int((~used).sum())
    assert 0 < int(zero) < T2 * N2, "the sample should leave some keys unselected"


def test_cpp_sample_rejects_unknown_arguments(cpp_run):
    _, _, exe = cpp_run
    proc = subprocess.run([str(exe), "--bogus"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60)
    assert proc.returncode == 2 and "usage" in proc.stdout


def test_python_sample_runs(tmp_path):
    proc = subprocess.run([sys.executable, str(PY_SAMPLE)], cwd=tmp_path, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "result check passed" in proc.stdout
    assert proc.stdout.count(" ok") >= 6
    assert "MISMATCH" not in proc.stdout
