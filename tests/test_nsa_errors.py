"""aclnnNsaSelectedAttentionGrad: every parameter constraint, the launch-time
index check and the relaxed mode.

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
RUNTIME_ERROR = 361001

INPUTS = ("query", "key", "value", "attention_out", "attention_out_grad", "softmax_max",
          "softmax_sum", "topk_indices")
OUTPUTS = ("dq", "dk", "dv")


def problem(seq_q=(1, 3), seq_kv=(32, 64), n1=2, n2=1, d=128, dv=128, block=16, count=2,
            dtype=F16, out_dtype=F16, seq=True, sparse_mode=0, seed=0, consistent=False):
    """A valid problem as a dict: numpy inputs, (shape, dtype) outputs and attributes.

    With consistent=True attention_out and the stats come from the forward reference
    (needed only where results are compared)."""
    rng = np.random.default_rng(seed)
    T1, T2 = sum(seq_q), sum(seq_kv)
    p = dict(
        query=R.round_to(rng.standard_normal((T1, n1, d)), dtype),
        key=R.round_to(rng.standard_normal((T2, n2, d)), dtype),
        value=R.round_to(rng.standard_normal((T2, n2, dv)), dtype),
        attention_out=R.round_to(rng.standard_normal((T1, n1, dv)) * 0.1, dtype),
        attention_out_grad=R.round_to(rng.standard_normal((T1, n1, dv)), dtype),
        softmax_max=np.full((T1, n1, 8), 2.0, np.float32),
        softmax_sum=np.full((T1, n1, 8), float(block * count), np.float32),
        topk_indices=np.zeros((T1, n2, count), np.int32),
        dq=((T1, n1, d), out_dtype), dk=((T2, n2, d), out_dtype), dv=((T2, n2, dv), out_dtype),
        actual_seq_qlen=list(np.cumsum(seq_q)) if seq else None,
        actual_seq_kvlen=list(np.cumsum(seq_kv)) if seq else None,
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
    if consistent:
        o, mx, sm = R.nsa_selected_attention_forward(
            p["query"], p["key"], p["value"], p["topk_indices"], scale_value=p["scale_value"],
            selected_block_size=block, selected_block_count=count,
            actual_seq_qlen=p["actual_seq_qlen"], actual_seq_kvlen=p["actual_seq_kvlen"],
            sparse_mode=sparse_mode)
        p["attention_out"] = R.round_to(o, dtype)
        p["softmax_max"], p["softmax_sum"] = mx.astype(np.float32), sm.astype(np.float32)
    return p


@contextlib.contextmanager
def device_tensors(p):
    """(inputs, mask, outputs) as pyaclnn.Tensor (None stays None)."""
    with contextlib.ExitStack() as st:
        fmt = p["formats"]

        def dev(name, a):
            if a is None:
                return None
            return st.enter_context(pyaclnn.Tensor(a, format=fmt.get(name)))

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
                outs.append(st.enter_context(pyaclnn.Tensor.empty(shape, dt, format=fmt.get(n))))
        yield ins, mask, outs


def plan(p, ins, mask, outs):
    return pyaclnn.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
        *ins, p["actual_seq_qlen"], p["actual_seq_kvlen"], mask, p["scale_value"],
        p["selected_block_size"], p["selected_block_count"], p["head_num"], p["input_layout"],
        p["sparse_mode"], *outs)


def get_workspace(p):
    """Run phase 1 only; returns the workspace size (the executor is destroyed)."""
    with device_tensors(p) as (ins, mask, outs):
        ws, ex = plan(p, ins, mask, outs)
        ex.destroy()
        return ws


def run(p, stream=None):
    """Both phases and a synchronize; returns (dq, dk, dv) as numpy."""
    with device_tensors(p) as (ins, mask, outs), contextlib.ExitStack() as st:
        s = stream or st.enter_context(pyaclnn.Stream())
        ws, ex = plan(p, ins, mask, outs)
        buf = st.enter_context(pyaclnn.DeviceBuffer(ws)) if ws else None
        pyaclnn.aclnnNsaSelectedAttentionGrad(buf, ws, ex, s)
        s.synchronize()
        return tuple(t.numpy() for t in outs)


# --------------------------------------------------------------------------- mutations


NZ = 29        # ACL_FORMAT_FRACTAL_NZ
NC1HWC0 = 3    # ACL_FORMAT_NC1HWC0

# (id, problem() overrides, mutation or None, status, substring of the message)
BAD = [
    # ---- dtypes
    ("query_fp32", {}, cast("query", F32), PARAM_INVALID, "query"),
    ("all_inputs_fp32", {"dtype": F32}, None, PARAM_INVALID, "query"),
    ("query_int8", {}, cast("query", np.int8), PARAM_INVALID, "query"),
    ("key_bf16", {}, cast("key", BF16), PARAM_INVALID, "key"),
    ("value_bf16", {}, cast("value", BF16), PARAM_INVALID, "value"),
    ("attention_out_fp32", {}, cast("attention_out", F32), PARAM_INVALID, "attentionOut"),
    ("attention_out_grad_bf16", {}, cast("attention_out_grad", BF16), PARAM_INVALID, "attentionOutGrad"),
    ("bf16_query_fp16_rest", {"dtype": F16}, cast("query", BF16), PARAM_INVALID, "key"),
    ("softmax_max_fp16", {}, cast("softmax_max", F16), PARAM_INVALID, "softmaxMax"),
    ("softmax_sum_bf16", {}, cast("softmax_sum", BF16), PARAM_INVALID, "softmaxSum"),
    ("softmax_sum_fp64", {}, cast("softmax_sum", np.float64), PARAM_INVALID, "softmaxSum"),
    ("topk_int64", {}, cast("topk_indices", np.int64), PARAM_INVALID, "topkIndices"),
    ("topk_fp32", {}, cast("topk_indices", F32), PARAM_INVALID, "topkIndices"),
    ("dq_int32", {}, cast("dq", np.int32), PARAM_INVALID, "dqOut"),
    ("dk_fp64", {}, cast("dk", np.float64), PARAM_INVALID, "dkOut"),
    ("dv_int8", {}, cast("dv", np.int8), PARAM_INVALID, "dvOut"),
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
    ("count_129", {"count": 129, "seq_kv": (2064, 2064)}, None, PARAM_INVALID, "selectedBlockCount"),
    ("count_x_block_8320", {"count": 65, "block": 128, "seq_kv": (8320, 8320)}, None, PARAM_INVALID,
     "selectedBlockCount * selectedBlockSize"),
    ("count_x_block_8448", {"count": 66, "block": 128, "seq_kv": (8448, 8448)}, None, PARAM_INVALID,
     "selectedBlockCount * selectedBlockSize"),
    # ---- sparse mode
    ("sparse_mode_1", {}, setv(sparse_mode=1), PARAM_INVALID, "sparseMode"),
    ("sparse_mode_3", {}, setv(sparse_mode=3), PARAM_INVALID, "sparseMode"),
    ("sparse_mode_neg", {}, setv(sparse_mode=-1), PARAM_INVALID, "sparseMode"),
    # ---- actual_seq lists
    ("seq_q_only", {}, setv(actual_seq_kvlen=None), PARAM_INVALID, "actualSeqKvLenOptional"),
    ("seq_kv_only", {}, setv(actual_seq_qlen=None), PARAM_INVALID, "actualSeqQLenOptional"),
    ("seq_lengths_differ", {}, setv(actual_seq_qlen=[4]), PARAM_INVALID, "equal length"),
    ("seq_q_last_not_T1", {}, setv(actual_seq_qlen=[1, 5]), PARAM_INVALID, "actualSeqQLenOptional"),
    ("seq_q_last_short", {}, setv(actual_seq_qlen=[1, 3]), PARAM_INVALID, "actualSeqQLenOptional"),
    ("seq_kv_last_not_T2", {}, setv(actual_seq_kvlen=[32, 80]), PARAM_INVALID, "actualSeqKvLenOptional"),
    ("seq_q_decreasing", {}, setv(actual_seq_qlen=[3, 1]), PARAM_INVALID, "actualSeqQLenOptional"),
    ("seq_empty", {}, setv(actual_seq_qlen=[], actual_seq_kvlen=[]), PARAM_INVALID, "actualSeq"),
    # ---- per-batch KV lengths
    ("kv_len_not_multiple", {"seq_kv": (40, 56)}, None, PARAM_INVALID, "selectedBlockSize"),
    ("kv_len_below_count_x_block", {"count": 3, "seq_kv": (32, 64)}, None, PARAM_INVALID,
     "selectedBlockCount * selectedBlockSize"),
    ("kv_len_last_batch_short", {"count": 3, "seq_kv": (64, 32)}, None, PARAM_INVALID, "batch 1"),
    ("no_seq_T2_not_multiple", {"seq": False, "seq_q": (4,), "seq_kv": (72,)}, None, PARAM_INVALID,
     "selectedBlockSize"),
    ("no_seq_T2_below_count_x_block", {"seq": False, "seq_q": (4,), "seq_kv": (16,)}, None,
     PARAM_INVALID, "selectedBlockCount * selectedBlockSize"),
    # ---- shapes
    ("key_T2_differs_from_value", {}, reshape("value", (80, 1, 128)), PARAM_INVALID, "value"),
    ("value_N2_differs", {}, reshape("value", (96, 2, 128)), PARAM_INVALID, "value"),
    ("key_D_differs_from_query", {"d": 192}, reshape("key", (96, 1, 128)), PARAM_INVALID, "key"),
    ("attention_out_Dv", {}, reshape("attention_out", (4, 2, 192)), PARAM_INVALID, "attentionOut"),
    ("attention_out_T1", {}, reshape("attention_out", (5, 2, 128)), PARAM_INVALID, "attentionOut"),
    ("attention_out_grad_N1", {}, reshape("attention_out_grad", (4, 1, 128)), PARAM_INVALID,
     "attentionOutGrad"),
    ("softmax_max_last_1", {}, reshape("softmax_max", (4, 2, 1)), PARAM_INVALID, "softmaxMax"),
    ("softmax_sum_last_16", {}, reshape("softmax_sum", (4, 2, 16)), PARAM_INVALID, "softmaxSum"),
    ("softmax_max_T1", {}, reshape("softmax_max", (3, 2, 8)), PARAM_INVALID, "softmaxMax"),
    ("topk_count_plus_1", {}, reshape("topk_indices", (4, 1, 3)), PARAM_INVALID, "topkIndices"),
    ("topk_N1_not_N2", {"n1": 2, "n2": 1}, reshape("topk_indices", (4, 2, 2)), PARAM_INVALID,
     "topkIndices"),
    ("dq_shape", {}, reshape("dq", (4, 2, 192)), PARAM_INVALID, "dqOut"),
    ("dk_shape", {}, reshape("dk", (96, 2, 128)), PARAM_INVALID, "dkOut"),
    ("dv_shape", {}, reshape("dv", (95, 1, 128)), PARAM_INVALID, "dvOut"),
    ("query_4d", {}, reshape("query", (4, 2, 1, 128)), PARAM_INVALID, "query"),
    ("key_2d", {}, reshape("key", (96, 128)), PARAM_INVALID, "key"),
    ("topk_2d", {}, reshape("topk_indices", (4, 2)), PARAM_INVALID, "topkIndices"),
    ("dv_4d", {}, reshape("dv", (96, 1, 1, 128)), PARAM_INVALID, "dvOut"),
    # ---- formats
    ("query_fractal_nz", {}, fmt("query", NZ), PARAM_INVALID, "query"),
    ("softmax_sum_nc1hwc0", {}, fmt("softmax_sum", NC1HWC0), PARAM_INVALID, "softmaxSum"),
    ("dq_fractal_nz", {}, fmt("dq", NZ), PARAM_INVALID, "dqOut"),
    ("dv_nc1hwc0", {}, fmt("dv", NC1HWC0), PARAM_INVALID, "dvOut"),
]

NULLS = [(n, api) for n, api in zip(
    INPUTS + OUTPUTS,
    ("query", "key", "value", "attentionOut", "attentionOutGrad", "softmaxMax", "softmaxSum",
     "topkIndices", "dqOut", "dkOut", "dvOut"))]


@pytest.mark.parametrize("case_id,overrides,mutate,status,needle", BAD, ids=[b[0] for b in BAD])
def test_rejected(case_id, overrides, mutate, status, needle):
    p = problem(**overrides)
    if mutate is not None:
        mutate(p)
    expect_rejected(lambda: get_workspace(p), status, "aclnnNsaSelectedAttentionGradGetWorkspaceSize", needle,
                    case_id)


@pytest.mark.parametrize("name,api_name", NULLS, ids=[n for n, _ in NULLS])
def test_null_required_tensor(name, api_name):
    p = problem()
    p[name] = None
    with pytest.raises(pyaclnn.AclError) as ei:
        get_workspace(p)
    assert ei.value.status == PARAM_NULLPTR
    assert api_name in ei.value.message


def test_null_input_layout():
    """inputLayout NULL (raw call: the Python wrapper always passes a string)."""
    p = problem()
    ffi, lib = pyaclnn.ffi, pyaclnn.lib
    with device_tensors(p) as (ins, _, outs):
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        q = lib.aclCreateIntArray(ffi.new("int64_t[]", [1, 4]), 2)
        kv = lib.aclCreateIntArray(ffi.new("int64_t[]", [32, 96]), 2)
        try:
            st = lib.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
                *[t.handle for t in ins], q, kv, ffi.NULL, p["scale_value"], 16, 2, 2, ffi.NULL, 0,
                *[t.handle for t in outs], ws, ex)
            assert st == PARAM_NULLPTR
            assert "inputLayout" in pyaclnn.get_recent_err_msg()
            layout = ffi.new("char[]", b"TND")
            st = lib.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
                *[t.handle for t in ins], q, kv, ffi.NULL, p["scale_value"], 16, 2, 2, layout, 0,
                *[t.handle for t in outs], ffi.NULL, ex)
            assert st == PARAM_NULLPTR
            st = lib.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
                *[t.handle for t in ins], q, kv, ffi.NULL, p["scale_value"], 16, 2, 2, layout, 0,
                *[t.handle for t in outs], ws, ffi.NULL)
            assert st == PARAM_NULLPTR
        finally:
            lib.aclDestroyIntArray(q)
            lib.aclDestroyIntArray(kv)


# --------------------------------------------------------------------------- accepted edge cases

GOOD = [
    ("base", {}, None),
    ("kv_len_equal_count_x_block", {"seq_kv": (32, 32)}, None),
    ("no_actual_seq", {"seq": False, "seq_q": (4,), "seq_kv": (64,)}, None),
    ("block_128_count_64_max_product", {"block": 128, "count": 64, "seq_kv": (8192,), "seq_q": (2,)},
     None),
    ("block_16_count_128", {"block": 16, "count": 128, "seq_kv": (2048,), "seq_q": (1,)}, None),
    ("N1_128_G_32", {"n1": 128, "n2": 4, "seq_q": (1, 1)}, None),
    ("N2_128_G_1", {"n1": 128, "n2": 128, "seq_q": (1, 1)}, None),
    ("D192_Dv192", {"d": 192, "dv": 192}, None),
    ("D192_Dv128_fp32_out", {"d": 192, "dv": 128, "out_dtype": F32}, None),
    ("bf16_in_fp16_out", {"dtype": BF16, "out_dtype": F16}, None),
    ("sparse_mode_2", {"sparse_mode": 2}, None),
    ("mask_bool_2d", {}, setv(atten_mask=np.ones((7, 5), bool))),
    ("mask_uint8_2d", {}, setv(atten_mask=np.ones((2048, 2048), np.uint8))),
    ("nchw_format", {}, both(*[fmt(n, 0) for n in INPUTS + OUTPUTS])),
    ("mixed_output_dtypes", {}, both(cast("dq", F32), cast("dk", BF16))),
]


@pytest.mark.parametrize("case_id,overrides,mutate", GOOD, ids=[g[0] for g in GOOD])
def test_accepted(case_id, overrides, mutate):
    p = problem(**overrides)
    if mutate is not None:
        mutate(p)
    outs = run(p)
    for o in outs:
        assert np.all(np.isfinite(o.astype(np.float64)))


def test_mask_values_are_never_read():
    p = problem(sparse_mode=2, consistent=True, seq_q=(20, 20), seq_kv=(32, 64))
    plain = run(p)
    for mask in (np.ones((20, 64), bool), np.zeros((3, 3), np.uint8),
                 np.random.default_rng(1).integers(0, 2, (64, 64)).astype(bool)):
        p["atten_mask"] = mask
        got = run(p)
        for a, b in zip(plain, got):
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


# --------------------------------------------------------------------------- out-of-range indices

def _bad_index_problem(value, t=2, h=0, i=1):
    p = problem(consistent=True, n1=4, n2=2)
    p["topk_indices"][t, h, i] = value
    return p


@pytest.mark.parametrize("value", [4, 1000, -1])
def test_out_of_range_index_one_call(value):
    # token 2 is in batch 1 (KV length 64 = 4 blocks): valid blocks 0..3
    p = _bad_index_problem(value)
    p["topk_indices"][3, 1, 0] = 99  # a later bad entry: the first one must be reported
    with pytest.raises(pyaclnn.AclError) as ei:
        pyaclnn.ops.nsa_selected_attention_grad(
            *[p[n] for n in INPUTS], scale_value=p["scale_value"], selected_block_size=16,
            selected_block_count=2, head_num=4, actual_seq_qlen=p["actual_seq_qlen"],
            actual_seq_kvlen=p["actual_seq_kvlen"])
    err = ei.value
    assert err.status == RUNTIME_ERROR, err
    _check_index_message(err.message, t=2, h=0, i=1, value=value)


def _check_index_message(msg, t, h, i, value):
    assert msg, "no error message"
    assert "topkIndices" in msg, msg
    numbers = [int(x) for x in re.findall(r"-?\d+", msg)]
    # the message names (t, n2, i, value) of the first bad entry, in this order
    it = iter(numbers)
    assert all(any(n == want for n in it) for want in (t, h, i, value)), msg
    assert "99" not in re.findall(r"-?\d+", msg), f"reported a later entry: {msg}"


def test_out_of_range_index_two_phase_outputs_untouched(monkeypatch):
    monkeypatch.setenv("PYACLNN_NSA_PRECISION", "high")  # the valid launch is checked in float64
    p = _bad_index_problem(7)
    sentinel = np.float32(-1234.5)
    for n in OUTPUTS:
        shape, _ = p[n]
        p[n] = np.full(shape, sentinel, F32)
    with device_tensors(p) as (ins, mask, outs), pyaclnn.Stream() as s:
        ws, ex = plan(p, ins, mask, outs)  # the values are not inspected at planning time
        buf = pyaclnn.DeviceBuffer(ws) if ws else None
        with pytest.raises(pyaclnn.AclError) as ei:
            pyaclnn.aclnnNsaSelectedAttentionGrad(buf, ws, ex, s)
            s.synchronize()
        assert ei.value.status == RUNTIME_ERROR
        _check_index_message(ei.value.message, t=2, h=0, i=1, value=7)
        for t in outs:
            assert np.all(t.numpy() == sentinel), "outputs changed by a failed launch"
        # the stream stays usable: a valid launch on it afterwards works
        good = problem(consistent=True, n1=4, n2=2)
        ref = R.nsa_selected_attention_grad(*[good[n] for n in INPUTS], scale_value=good["scale_value"],
                                            selected_block_size=16, selected_block_count=2, head_num=4,
                                            actual_seq_qlen=good["actual_seq_qlen"],
                                            actual_seq_kvlen=good["actual_seq_kvlen"])
        good["dq"], good["dk"], good["dv"] = ((a.shape, F32) for a in ref)
        outs2 = run(good, stream=s)
        for o, r in zip(outs2, ref):
            assert np.abs(o - r).max() <= 1e-4 * np.abs(r).max()


def test_out_of_range_index_in_masked_row_still_reported():
    """sparse_mode 2 masks keys, but a bad block number is still an error; the range is
    the token's own batch (block 2 exists in batch 1, not in batch 0)."""
    p = problem(sparse_mode=2, consistent=True)
    p["topk_indices"][0, 0, 1] = 2  # batch 0 has 32 keys = 2 blocks
    with pytest.raises(pyaclnn.AclError) as ei:
        run(p)
    assert ei.value.status == RUNTIME_ERROR
    _check_index_message(ei.value.message, t=0, h=0, i=1, value=2)


# --------------------------------------------------------------------------- relaxed mode

RELAXED = dict(seq_q=(5, 6), seq_kv=(24, 40), n1=4, n2=2, d=64, dv=32, block=8, count=3,
               dtype=F32, out_dtype=F32, sparse_mode=2, consistent=True)


def _ref(p):
    return R.nsa_selected_attention_grad(
        *[p[n] for n in INPUTS], scale_value=p["scale_value"], selected_block_size=p["selected_block_size"],
        selected_block_count=p["selected_block_count"], head_num=p["head_num"],
        actual_seq_qlen=p["actual_seq_qlen"], actual_seq_kvlen=p["actual_seq_kvlen"],
        sparse_mode=p["sparse_mode"])


def test_relaxed_mode_env_toggles_limits(monkeypatch):
    p = problem(**RELAXED)
    monkeypatch.delenv("PYACLNN_NSA_RELAXED", raising=False)
    with pytest.raises(pyaclnn.AclError) as ei:
        get_workspace(p)
    assert ei.value.status == PARAM_INVALID and "query" in ei.value.message
    monkeypatch.setenv("PYACLNN_NSA_RELAXED", "1")
    outs = run(p)
    for o, r in zip(outs, _ref(p)):
        assert o.dtype == F32
        assert np.abs(o - r).max() <= 1e-4 * np.abs(r).max()
    monkeypatch.setenv("PYACLNN_NSA_RELAXED", "0")
    expect_rejected(lambda: get_workspace(p), PARAM_INVALID, "aclnnNsaSelectedAttentionGradGetWorkspaceSize", "query")


def test_relaxed_mode_read_at_get_workspace_size(monkeypatch):
    """An executor planned in relaxed mode still runs after the variable is unset."""
    p = problem(**RELAXED)
    monkeypatch.setenv("PYACLNN_NSA_RELAXED", "1")
    with device_tensors(p) as (ins, mask, outs), pyaclnn.Stream() as s:
        ws, ex = plan(p, ins, mask, outs)
        monkeypatch.delenv("PYACLNN_NSA_RELAXED")
        buf = pyaclnn.DeviceBuffer(ws) if ws else None
        pyaclnn.aclnnNsaSelectedAttentionGrad(buf, ws, ex, s)
        s.synchronize()
        got = [t.numpy() for t in outs]
    for o, r in zip(got, _ref(p)):
        assert np.abs(o - r).max() <= 1e-4 * np.abs(r).max()


def test_relaxed_mode_in_subprocess(run_py):
    code = r"""
import numpy as np, pyaclnn
from pyaclnn import reference as R
rng = np.random.default_rng(3)
q = rng.standard_normal((6, 2, 64)).astype(np.float32)
k = rng.standard_normal((32, 1, 64)).astype(np.float32)
v = rng.standard_normal((32, 1, 64)).astype(np.float32)
topk = np.array([[[0, 2]], [[1, 3]], [[3, 3]], [[2, 0]], [[1, 2]], [[0, 1]]], np.int32)
kw = dict(scale_value=0.125, selected_block_size=8, selected_block_count=2)
o, mx, sm = R.nsa_selected_attention_forward(q, k, v, topk, **kw)
o = o.astype(np.float32)
do = rng.standard_normal(o.shape).astype(np.float32)
args = (q, k, v, o, do, mx.astype(np.float32), sm.astype(np.float32), topk)
got = pyaclnn.ops.nsa_selected_attention_grad(*args, head_num=2, **kw)
ref = R.nsa_selected_attention_grad(*args, head_num=2, **kw)
for a, b in zip(got, ref):
    assert a.dtype == np.float32
    assert np.abs(a - b).max() <= 1e-4 * np.abs(b).max(), np.abs(a - b).max()
print("relaxed ok")
"""
    r = run_py(code, env_update={"PYACLNN_NSA_RELAXED": "1"})
    assert "relaxed ok" in r.stdout
    r = run_py(code, drop=("PYACLNN_BACKEND", "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME",
                           "PYACLNN_NSA_RELAXED"), check=False)
    assert r.returncode != 0 and "161002" in r.stderr, r.stderr


def test_launch_workspace_checks():
    """The launch refuses a workspace smaller than planned (161002) or a NULL one (161001);
    a refused launch leaves the executor usable."""
    p = problem()
    with device_tensors(p) as (ins, mask, outs), pyaclnn.Stream() as s:
        ws, ex = plan(p, ins, mask, outs)
        assert ws > 0
        with pyaclnn.DeviceBuffer(ws) as buf:
            with pytest.raises(pyaclnn.AclError) as ei:
                pyaclnn.aclnnNsaSelectedAttentionGrad(buf, ws - 1, ex, s)
            assert ei.value.status == PARAM_INVALID and "workspaceSize" in ei.value.message
            with pytest.raises(pyaclnn.AclError) as ei:
                pyaclnn.aclnnNsaSelectedAttentionGrad(None, ws, ex, s)
            assert ei.value.status == PARAM_NULLPTR and "workspace" in ei.value.message
            pyaclnn.aclnnNsaSelectedAttentionGrad(buf, ws, ex, s)
            s.synchronize()
