"""aclnnNsaSelectedAttention: every parameter constraint, the NULL statuses, the
launch-time index check, the relaxed mode and the sparseMode-2-without-mask warning.

Each invalid case goes through the two-phase API: GetWorkspaceSize must fail with
the expected status and an aclGetRecentErrMsg() text naming the culprit. Each
case changes one thing of a valid problem (shapes kept consistent otherwise).
"""
import contextlib
import re

import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import reference as R

from mutations import cast, reshape, setv, fmt, both, expect_rejected

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
PARAM_INVALID = 161002
PARAM_NULLPTR = 161001
INNER_NULLPTR = 561103
RUNTIME_ERROR = 361001
API = "aclnnNsaSelectedAttentionGetWorkspaceSize"

INPUTS = ("query", "key", "value", "topk_indices")
OUTPUTS = ("softmax_max", "softmax_sum", "attention_out")


def problem(seq_q=(1, 3), seq_kv=(32, 64), n1=2, n2=1, d=128, dv=128, block=16, count=2,
            dtype=F16, sparse_mode=0, seed=0):
    """A valid problem as a dict: numpy inputs, (shape, dtype) outputs and attributes."""
    rng = np.random.default_rng(seed)
    T1, T2 = sum(seq_q), sum(seq_kv)
    p = dict(
        query=R.round_to(rng.standard_normal((T1, n1, d)), dtype),
        key=R.round_to(rng.standard_normal((T2, n2, d)), dtype),
        value=R.round_to(rng.standard_normal((T2, n2, dv)), dtype),
        topk_indices=np.zeros((T1, n2, count), np.int32),
        softmax_max=((T1, n1, 8), F32), softmax_sum=((T1, n1, 8), F32),
        attention_out=((T1, n1, dv), dtype),
        actual_seq_qlen=list(np.cumsum(seq_q)), actual_seq_kvlen=list(np.cumsum(seq_kv)),
        atten_mask=None, scale_value=1.0 / np.sqrt(d), selected_block_size=block,
        selected_block_count=count, head_num=n1, input_layout="TND", sparse_mode=sparse_mode,
        formats={},
    )
    t = 0
    for sq, skv in zip(seq_q, seq_kv):
        nblk = max(skv // max(block, 1), 1)
        for _ in range(sq):
            for h in range(n2):
                p["topk_indices"][t, h] = rng.permutation(max(nblk, count))[:count] % nblk
            t += 1
    return p


@contextlib.contextmanager
def device_tensors(p):
    """(inputs, mask, outputs) as pyaclnn.Tensor (None stays None)."""
    with contextlib.ExitStack() as st:
        fm = p["formats"]

        def dev(name, a):
            if a is None:
                return None
            return st.enter_context(pyaclnn.Tensor(a, format=fm.get(name)))

        ins = [dev(n, p[n]) for n in INPUTS]
        mask = dev("atten_mask", p["atten_mask"])
        outs = []
        for n in OUTPUTS:
            if p[n] is None:
                outs.append(None)
            elif isinstance(p[n], np.ndarray):
                outs.append(dev(n, p[n]))
            else:
                shape, dt = p[n]
                outs.append(st.enter_context(pyaclnn.Tensor.empty(shape, dt, format=fm.get(n))))
        yield ins, mask, outs


def plan(p, ins, mask, outs):
    return pyaclnn.aclnnNsaSelectedAttentionGetWorkspaceSize(
        *ins, mask, p["actual_seq_qlen"], p["actual_seq_kvlen"], p["scale_value"], p["head_num"],
        p["input_layout"], p["sparse_mode"], p["selected_block_size"], p["selected_block_count"], *outs)


def get_workspace(p):
    with device_tensors(p) as (ins, mask, outs):
        ws, ex = plan(p, ins, mask, outs)
        ex.destroy()
        return ws


def run(p, stream=None):
    """Both phases and a synchronize; returns (softmax_max, softmax_sum, attention_out)."""
    with device_tensors(p) as (ins, mask, outs), contextlib.ExitStack() as st:
        s = stream or st.enter_context(pyaclnn.Stream())
        ws, ex = plan(p, ins, mask, outs)
        buf = st.enter_context(pyaclnn.DeviceBuffer(ws)) if ws else None
        pyaclnn.aclnnNsaSelectedAttention(buf, ws, ex, s)
        s.synchronize()
        return tuple(t.numpy() for t in outs)


def ref(p):
    o, m, l = R.nsa_selected_attention(
        *[p[n] for n in INPUTS], scale_value=p["scale_value"], head_num=p["head_num"],
        selected_block_size=p["selected_block_size"], selected_block_count=p["selected_block_count"],
        actual_seq_qlen=p["actual_seq_qlen"], actual_seq_kvlen=p["actual_seq_kvlen"],
        atten_mask=p["atten_mask"], sparse_mode=p["sparse_mode"])
    return m, l, o


NZ = 29        # ACL_FORMAT_FRACTAL_NZ
NC1HWC0 = 3    # ACL_FORMAT_NC1HWC0


def zero_stride_out(p):
    shape, dt = p["attention_out"]
    p["attention_out"] = np.broadcast_to(np.zeros((1,) + shape[1:], dt), shape)


# (id, problem() overrides, mutation or None, status, substring of the message)
BAD = [
    # ---- dtypes
    ("query_fp32", {}, cast("query", F32), PARAM_INVALID, "query"),
    ("all_inputs_fp32", {"dtype": F32}, None, PARAM_INVALID, "query"),
    ("query_int8", {}, cast("query", np.int8), PARAM_INVALID, "query"),
    ("key_bf16", {}, cast("key", BF16), PARAM_INVALID, "key"),
    ("value_bf16", {}, cast("value", BF16), PARAM_INVALID, "value"),
    ("bf16_query_fp16_rest", {"dtype": F16}, cast("query", BF16), PARAM_INVALID, "key"),
    ("attention_out_fp32", {}, cast("attention_out", F32), PARAM_INVALID, "attentionOut"),
    ("attention_out_bf16", {}, cast("attention_out", BF16), PARAM_INVALID, "attentionOut"),
    ("softmax_max_fp16", {}, cast("softmax_max", F16), PARAM_INVALID, "softmaxMaxOut"),
    ("softmax_sum_bf16", {}, cast("softmax_sum", BF16), PARAM_INVALID, "softmaxSumOut"),
    ("softmax_sum_fp64", {}, cast("softmax_sum", np.float64), PARAM_INVALID, "softmaxSumOut"),
    ("topk_int64", {}, cast("topk_indices", np.int64), PARAM_INVALID, "topkIndices"),
    ("topk_fp32", {}, cast("topk_indices", F32), PARAM_INVALID, "topkIndices"),
    ("mask_fp16", {}, setv(atten_mask=np.zeros((16, 16), F16)), PARAM_INVALID, "attenMask"),
    ("mask_int32", {}, setv(atten_mask=np.zeros((16, 16), np.int32)), PARAM_INVALID, "attenMask"),
    ("mask_3d", {}, setv(atten_mask=np.zeros((1, 16, 16), bool)), PARAM_INVALID, "attenMask"),
    ("mask_1d", {}, setv(atten_mask=np.zeros((16,), np.uint8)), PARAM_INVALID, "attenMask"),
    # ---- layout
    ("layout_BSND", {}, setv(input_layout="BSND"), PARAM_INVALID, "inputLayout"),
    ("layout_lowercase", {}, setv(input_layout="tnd"), PARAM_INVALID, "inputLayout"),
    ("layout_TNDX", {}, setv(input_layout="TNDX"), PARAM_INVALID, "inputLayout"),
    ("layout_empty", {}, setv(input_layout=""), PARAM_INVALID, "inputLayout"),
    # ---- head dims
    ("D_64", {"d": 64, "dv": 64}, None, PARAM_INVALID, "query"),
    ("D_256", {"d": 256}, None, PARAM_INVALID, "query"),
    ("D_160", {"d": 160}, None, PARAM_INVALID, "query"),
    ("Dv_64", {"dv": 64}, None, PARAM_INVALID, "value"),
    ("Dv_256", {"d": 192, "dv": 256}, None, PARAM_INVALID, "value"),
    ("Dv_gt_D", {"d": 128, "dv": 192}, None, PARAM_INVALID, "Dv"),
    # ---- heads
    ("N1_130", {"n1": 130, "n2": 5}, None, PARAM_INVALID, "N1"),
    ("N2_129", {"n1": 129, "n2": 129}, None, PARAM_INVALID, "heads"),
    ("N1_not_multiple_of_N2", {"n1": 3, "n2": 2}, None, PARAM_INVALID, "N2"),
    ("G_33", {"n1": 33, "n2": 1}, None, PARAM_INVALID, "G = N1/N2"),
    ("G_64", {"n1": 128, "n2": 2}, None, PARAM_INVALID, "G = N1/N2"),
    ("headNum_wrong", {}, setv(head_num=1), PARAM_INVALID, "headNum"),
    ("headNum_zero", {}, setv(head_num=0), PARAM_INVALID, "headNum"),
    # ---- block size / count
    ("block_24", {"block": 24, "seq_kv": (48, 72)}, None, PARAM_INVALID, "selectedBlockSize"),
    ("block_8", {"block": 8}, None, PARAM_INVALID, "selectedBlockSize"),
    ("block_144", {"block": 144, "seq_kv": (288, 288)}, None, PARAM_INVALID, "selectedBlockSize"),
    ("block_0", {}, setv(selected_block_size=0), PARAM_INVALID, "selectedBlockSize"),
    ("block_negative", {}, setv(selected_block_size=-16), PARAM_INVALID, "selectedBlockSize"),
    ("count_0", {"count": 0}, None, PARAM_INVALID, "selectedBlockCount"),
    ("count_33", {"count": 33, "seq_kv": (528, 528)}, None, PARAM_INVALID, "selectedBlockCount"),
    ("count_64", {"count": 64, "seq_kv": (1024, 1024)}, None, PARAM_INVALID, "selectedBlockCount"),
    # ---- sparse mode
    ("sparse_mode_1", {}, setv(sparse_mode=1), PARAM_INVALID, "sparseMode"),
    ("sparse_mode_3", {}, setv(sparse_mode=3), PARAM_INVALID, "sparseMode"),
    ("sparse_mode_neg", {}, setv(sparse_mode=-1), PARAM_INVALID, "sparseMode"),
    # ---- actual_seq lists
    ("seq_lengths_differ", {}, setv(actual_seq_qlen=[4]), PARAM_INVALID, "equal length"),
    ("seq_q_last_not_T1", {}, setv(actual_seq_qlen=[1, 5]), PARAM_INVALID, "actualSeqQLenOptional"),
    ("seq_q_last_short", {}, setv(actual_seq_qlen=[1, 3]), PARAM_INVALID, "actualSeqQLenOptional"),
    ("seq_kv_last_not_T2", {}, setv(actual_seq_kvlen=[32, 80]), PARAM_INVALID, "actualSeqKvLenOptional"),
    ("seq_q_decreasing", {}, setv(actual_seq_qlen=[3, 1]), PARAM_INVALID, "actualSeqQLenOptional"),
    ("seq_q_zero_batch", {}, setv(actual_seq_qlen=[0, 4]), PARAM_INVALID, "actualSeqQLenOptional"),
    ("seq_empty", {}, setv(actual_seq_qlen=[], actual_seq_kvlen=[]), PARAM_INVALID, "actualSeq"),
    ("batches_1025", {"seq_q": (1,) * 1025, "seq_kv": (32,) * 1025}, None, PARAM_INVALID, "1024"),
    # ---- per-batch KV lengths
    ("kv_len_not_multiple", {"seq_kv": (40, 56)}, None, PARAM_INVALID, "selectedBlockSize"),
    ("kv_len_below_count_x_block", {"count": 3, "seq_kv": (32, 64)}, None, PARAM_INVALID,
     "selectedBlockCount * selectedBlockSize"),
    ("kv_len_last_batch_short", {"count": 3, "seq_kv": (64, 32)}, None, PARAM_INVALID, "batch 1"),
    # ---- shapes
    ("key_T2_differs_from_value", {}, reshape("value", (80, 1, 128)), PARAM_INVALID, "value"),
    ("value_N2_differs", {}, reshape("value", (96, 2, 128)), PARAM_INVALID, "value"),
    ("key_D_differs_from_query", {"d": 192}, reshape("key", (96, 1, 128)), PARAM_INVALID, "key"),
    ("attention_out_Dv", {}, reshape("attention_out", (4, 2, 192)), PARAM_INVALID, "attentionOut"),
    ("attention_out_T1", {}, reshape("attention_out", (5, 2, 128)), PARAM_INVALID, "attentionOut"),
    ("attention_out_N1", {}, reshape("attention_out", (4, 1, 128)), PARAM_INVALID, "attentionOut"),
    ("softmax_max_last_1", {}, reshape("softmax_max", (4, 2, 1)), PARAM_INVALID, "softmaxMaxOut"),
    ("softmax_sum_last_16", {}, reshape("softmax_sum", (4, 2, 16)), PARAM_INVALID, "softmaxSumOut"),
    ("softmax_max_T1", {}, reshape("softmax_max", (3, 2, 8)), PARAM_INVALID, "softmaxMaxOut"),
    ("topk_count_plus_1", {}, reshape("topk_indices", (4, 1, 3)), PARAM_INVALID, "topkIndices"),
    ("topk_N1_not_N2", {"n1": 2, "n2": 1}, reshape("topk_indices", (4, 2, 2)), PARAM_INVALID,
     "topkIndices"),
    ("query_4d", {}, reshape("query", (4, 2, 1, 128)), PARAM_INVALID, "query"),
    ("key_2d", {}, reshape("key", (96, 128)), PARAM_INVALID, "key"),
    ("topk_2d", {}, reshape("topk_indices", (4, 2)), PARAM_INVALID, "topkIndices"),
    ("attention_out_4d", {}, reshape("attention_out", (4, 2, 1, 128)), PARAM_INVALID, "attentionOut"),
    ("attention_out_overlapping", {}, zero_stride_out, PARAM_INVALID, "overlapping"),
    # ---- formats
    ("query_fractal_nz", {}, fmt("query", NZ), PARAM_INVALID, "query"),
    ("softmax_sum_nc1hwc0", {}, fmt("softmax_sum", NC1HWC0), PARAM_INVALID, "softmaxSumOut"),
    ("attention_out_fractal_nz", {}, fmt("attention_out", NZ), PARAM_INVALID, "attentionOut"),
]


@pytest.mark.parametrize("case_id,overrides,mutate,status,needle", BAD, ids=[b[0] for b in BAD])
def test_rejected(case_id, overrides, mutate, status, needle):
    p = problem(**overrides)
    if mutate is not None:
        mutate(p)
    expect_rejected(lambda: get_workspace(p), status, API, needle, case_id)


# Every required pointer gives 561103 (ACLNN_ERR_INNER_NULLPTR), as the vendor's aclnn
# layer (its doc says 161001); the two actualSeq arrays are required despite the name.
NULLS = [(n, api) for n, api in zip(
    INPUTS + OUTPUTS + ("actual_seq_qlen", "actual_seq_kvlen", "input_layout"),
    ("query", "key", "value", "topkIndices", "softmaxMaxOut", "softmaxSumOut", "attentionOut",
     "actualSeqQLenOptional", "actualSeqKvLenOptional", "inputLayout"))]


@pytest.mark.parametrize("name,api_name", NULLS, ids=[n for n, _ in NULLS])
def test_null_required(name, api_name):
    p = problem()
    p[name] = None
    with pytest.raises(pyaclnn.AclError) as ei:
        get_workspace(p)
    assert ei.value.status == INNER_NULLPTR, ei.value
    assert api_name in ei.value.message


def test_null_workspace_size_and_executor():
    p = problem()
    ffi, lib = pyaclnn.ffi, pyaclnn.lib
    with device_tensors(p) as (ins, _, outs):
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        q = lib.aclCreateIntArray(ffi.new("int64_t[]", [1, 4]), 2)
        kv = lib.aclCreateIntArray(ffi.new("int64_t[]", [32, 96]), 2)
        layout = ffi.new("char[]", b"TND")
        try:
            args = [t.handle for t in ins] + [ffi.NULL, q, kv, p["scale_value"], 2, layout, 0, 16, 2]
            args += [t.handle for t in outs]
            assert lib.aclnnNsaSelectedAttentionGetWorkspaceSize(*args, ffi.NULL, ex) == INNER_NULLPTR
            assert "workspaceSize" in pyaclnn.get_recent_err_msg()
            assert lib.aclnnNsaSelectedAttentionGetWorkspaceSize(*args, ws, ffi.NULL) == INNER_NULLPTR
            assert "executor" in pyaclnn.get_recent_err_msg()
            assert lib.aclnnNsaSelectedAttentionGetWorkspaceSize(*args, ws, ex) == 0
            assert lib.aclDestroyAclOpExecutor(ex[0]) == 0
        finally:
            lib.aclDestroyIntArray(q)
            lib.aclDestroyIntArray(kv)


def test_all_outputs_empty_is_a_no_op():
    """As the vendor: all three outputs empty -> success, workspace 0, nothing runs (the
    other parameters are not inspected, e.g. the layout)."""
    p = problem(seq_q=(1, 3))
    p["query"] = p["query"][:0]
    p["topk_indices"] = p["topk_indices"][:0]
    for n in OUTPUTS:
        shape, dt = p[n]
        p[n] = ((0,) + shape[1:], dt)
    p["input_layout"] = "BSND"
    with device_tensors(p) as (ins, mask, outs), pyaclnn.Stream() as s:
        ws, ex = plan(p, ins, mask, outs)
        assert ws == 0
        pyaclnn.aclnnNsaSelectedAttention(None, 0, ex, s)
        s.synchronize()


# --------------------------------------------------------------------------- accepted edge cases

GOOD = [
    ("base", {}, None),
    ("kv_len_equal_count_x_block", {"seq_kv": (32, 32)}, None),
    ("block_128_count_32", {"block": 128, "count": 32, "seq_kv": (4096,), "seq_q": (2,)}, None),
    ("block_16_count_32", {"block": 16, "count": 32, "seq_kv": (512,), "seq_q": (1,)}, None),
    ("N1_128_G_32", {"n1": 128, "n2": 4, "seq_q": (1, 1)}, None),
    ("N2_128_G_1", {"n1": 128, "n2": 128, "seq_q": (1, 1)}, None),
    ("D192_Dv192", {"d": 192, "dv": 192}, None),
    ("D192_Dv128_bf16", {"d": 192, "dv": 128, "dtype": BF16}, None),
    ("sparse_mode_2_no_mask", {"sparse_mode": 2}, None),
    ("sparse_mode_2_mask", {"sparse_mode": 2}, setv(atten_mask=np.ones((7, 5), bool))),
    ("mask_uint8_2d", {}, setv(atten_mask=np.ones((2048, 2048), np.uint8))),
    ("nchw_format", {}, both(*[fmt(n, 0) for n in INPUTS + OUTPUTS])),
    ("batches_1024", {"seq_q": (1,) * 1024, "seq_kv": (32,) * 1024}, None),
]


@pytest.mark.parametrize("case_id,overrides,mutate", GOOD, ids=[g[0] for g in GOOD])
def test_accepted(case_id, overrides, mutate):
    p = problem(**overrides)
    if mutate is not None:
        mutate(p)
    got = run(p)
    for g, r in zip(got, ref(p)):
        assert np.all(np.isfinite(g.astype(np.float64)))
        assert np.abs(g.astype(np.float64) - r).max() <= 1e-2 * max(1.0, np.abs(r).max())


def test_mask_values_are_never_read():
    p = problem(sparse_mode=2, seq_q=(20, 20), seq_kv=(32, 64))
    p["atten_mask"] = np.zeros((2, 2), bool)
    plain = run(p)
    for mask in (np.ones((20, 64), bool), np.zeros((3, 3), np.uint8),
                 np.random.default_rng(1).integers(0, 2, (64, 64)).astype(bool)):
        p["atten_mask"] = mask
        got = run(p)
        for a, b in zip(plain, got):
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


# --------------------------------------------------------------------------- out-of-range indices

def _check_index_message(msg, t, h, i, value):
    assert msg and "topkIndices" in msg, msg
    numbers = iter(int(x) for x in re.findall(r"-?\d+", msg))
    assert all(any(n == want for n in numbers) for want in (t, h, i, value)), msg
    assert "99" not in re.findall(r"-?\d+", msg), f"reported a later entry: {msg}"


@pytest.mark.parametrize("value", [4, 1000, -1])
def test_out_of_range_index_one_call(value):
    # token 2 is in batch 1 (KV length 64 = 4 blocks): valid blocks 0..3
    p = problem(n1=4, n2=2)
    p["topk_indices"][2, 0, 1] = value
    p["topk_indices"][3, 1, 0] = 99  # a later bad entry: the first one must be reported
    with pytest.raises(pyaclnn.AclError) as ei:
        pyaclnn.ops.nsa_selected_attention(
            *[p[n] for n in INPUTS], scale_value=p["scale_value"], head_num=4, selected_block_size=16,
            selected_block_count=2, actual_seq_qlen=p["actual_seq_qlen"],
            actual_seq_kvlen=p["actual_seq_kvlen"])
    assert ei.value.status == RUNTIME_ERROR, ei.value
    assert ei.value.api == "aclnnNsaSelectedAttention" or "aclnnNsaSelectedAttention" in ei.value.message
    _check_index_message(ei.value.message, t=2, h=0, i=1, value=value)


def test_out_of_range_index_outputs_untouched_stream_usable():
    p = problem(n1=4, n2=2, sparse_mode=2)
    p["atten_mask"] = np.ones((1, 1), bool)
    p["topk_indices"][0, 0, 1] = 2  # batch 0 has 32 keys = 2 blocks (masked row: still an error)
    sentinel = np.float32(-1234.0)  # exact in fp16
    for n in OUTPUTS:
        shape, dt = p[n]
        p[n] = np.full(shape, sentinel, dt)
    with device_tensors(p) as (ins, mask, outs), pyaclnn.Stream() as s:
        ws, ex = plan(p, ins, mask, outs)
        buf = pyaclnn.DeviceBuffer(ws) if ws else None
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnNsaSelectedAttention(buf, ws, ex, s)
            s.synchronize()
        assert ei.value.status == RUNTIME_ERROR
        _check_index_message(ei.value.message, t=0, h=0, i=1, value=2)
        for t in outs:
            assert np.all(t.numpy().astype(np.float32) == sentinel), "outputs changed by a failed launch"
        good = problem(n1=4, n2=2)
        got = run(good, stream=s)
        for g, r in zip(got, ref(good)):
            assert np.abs(g.astype(np.float64) - r).max() <= 1e-2 * max(1.0, np.abs(r).max())


# --------------------------------------------------------------------------- relaxed mode

RELAXED = dict(seq_q=(5, 6), seq_kv=(24, 40), n1=4, n2=2, d=64, dv=96, block=8, count=3,
               dtype=F32, sparse_mode=2)


def _relaxed_problem():
    p = problem(**RELAXED)
    p["atten_mask"] = np.ones((1, 1), bool)
    return p


def test_relaxed_mode_env_toggles_limits(monkeypatch):
    p = _relaxed_problem()
    monkeypatch.delenv("PYACLNN_NSA_RELAXED", raising=False)
    with pytest.raises(pyaclnn.AclError) as ei:
        get_workspace(p)
    assert ei.value.status == PARAM_INVALID and "query" in ei.value.message
    monkeypatch.setenv("PYACLNN_NSA_RELAXED", "1")
    for g, r in zip(run(p), ref(p)):
        assert g.dtype == F32
        assert np.abs(g - r).max() <= 1e-5 * max(1.0, np.abs(r).max())
    monkeypatch.setenv("PYACLNN_NSA_RELAXED", "0")
    expect_rejected(lambda: get_workspace(p), PARAM_INVALID, API, "query")


def test_relaxed_mode_lifts_count_and_batch_limits(monkeypatch):
    monkeypatch.setenv("PYACLNN_NSA_RELAXED", "1")
    p = problem(count=40, seq_q=(2,), seq_kv=(16 * 40,), dtype=F16)
    for g, r in zip(run(p), ref(p)):
        assert np.abs(g.astype(np.float64) - r).max() <= 1e-2 * max(1.0, np.abs(r).max())
    p = problem(count=1, seq_q=(1,) * 1030, seq_kv=(16,) * 1030, dtype=F16)
    run(p)


def test_launch_workspace_checks():
    p = problem()
    with device_tensors(p) as (ins, mask, outs), pyaclnn.Stream() as s:
        ws, ex = plan(p, ins, mask, outs)
        assert ws > 0
        with pyaclnn.DeviceBuffer(ws) as buf:
            with pytest.raises(pyaclnn.AclError) as ei:
                pyaclnn.aclnnNsaSelectedAttention(buf, ws - 1, ex, s)
            assert ei.value.status == PARAM_INVALID and "workspaceSize" in ei.value.message
            with pytest.raises(pyaclnn.AclError) as ei:
                pyaclnn.aclnnNsaSelectedAttention(None, ws, ex, s)
            assert ei.value.status == PARAM_NULLPTR and "workspace" in ei.value.message
            pyaclnn.aclnnNsaSelectedAttention(buf, ws, ex, s)
            s.synchronize()


# --------------------------------------------------------------------------- the sparseMode 2 warning

WARN_CODE = r"""
import numpy as np, pyaclnn
q = np.ones((2, 1, 128), np.float16); k = np.ones((32, 1, 128), np.float16)
topk = np.zeros((2, 1, 2), np.int32); topk[:, :, 1] = 1
for mask in (None, None, np.ones((1, 1), bool)):
    pyaclnn.ops.nsa_selected_attention(q, k, k, topk, scale_value=1.0, head_num=1,
        selected_block_size=16, selected_block_count=2, sparse_mode=2, atten_mask=mask)
print("done")
"""


@pytest.mark.parametrize("level,expect", [(None, 0), ("3", 0), ("2", 1), ("1", 1), ("0", 1)])
def test_sparse2_without_mask_warning(run_py, level, expect):
    """One warning per process, at warning level (ASCEND_GLOBAL_LOG_LEVEL <= 2); no error."""
    env = {} if level is None else {"ASCEND_GLOBAL_LOG_LEVEL": level}
    drop = ("PYACLNN_BACKEND", "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_GLOBAL_LOG_LEVEL")
    r = run_py(WARN_CODE, env_update=env, drop=drop)
    assert "done" in r.stdout
    assert r.stderr.count("sparseMode 2 without attenMaskOptional") == expect, r.stderr
    if expect:
        assert "[WARNING]" in r.stderr
