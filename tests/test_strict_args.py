"""Python strictness (issue 7 rows 8-10): arguments are converted only when the
conversion is exact, a missing tensor reaches C as NULL, and an Executor's
state follows the C executor's."""
import numpy as np
import pytest

import pyaclnn
from pyaclnn import AclError, Stream, Tensor, lib, ops
from pyaclnn import _args

from test_nsa_errors import problem as nsa_problem

PARAM_NULLPTR = 161001
PARAM_INVALID = 161002


def softmax_arrays(shape=(1, 2, 3, 16), seed=0):
    rng = np.random.default_rng(seed)
    g = rng.uniform(-1, 1, shape).astype(np.float32)
    y = rng.uniform(0, 1, shape).astype(np.float32)
    mask = rng.random(shape) < 0.3
    return g, y, mask


def nsa_kwargs(**change):
    p = nsa_problem()
    args = [p[n] for n in ("query", "key", "value", "attention_out", "attention_out_grad",
                           "softmax_max", "softmax_sum", "topk_indices")]
    kw = {n: p[n] for n in ("scale_value", "selected_block_size", "selected_block_count", "head_num",
                            "actual_seq_qlen", "actual_seq_kvlen", "input_layout", "sparse_mode")}
    kw.update(change)
    return args, kw


# ---------------------------------------------------------------- row 8: executor state


def _softmax_executor(g, y, mask):
    ts = [Tensor(g), Tensor(y), Tensor(mask), Tensor.empty(g.shape, g.dtype)]
    ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(ts[0], ts[1], ts[2], 0.5, False, ts[3])
    return ts, ws, ex


def test_launch_on_a_destroyed_stream_spends_the_executor(runtime):
    ts, ws, ex = _softmax_executor(*softmax_arrays())
    raw = ex.handle
    s = Stream()
    dead, s._handle = s._handle, None
    assert lib.aclrtDestroyStream(dead) == 0
    with pytest.raises(AclError) as e:
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, ws, ex, dead)
    assert e.value.status == lib.ACL_ERROR_INVALID_PARAM
    assert "not a live stream" in e.value.message
    # C took the executor before the stream refused the task; Python agrees
    assert ex.spent
    ex.destroy()  # a no-op, not 161002
    assert lib.aclDestroyAclOpExecutor(raw) == PARAM_INVALID
    assert "already released by its launch" in pyaclnn._errors.get_recent_err_msg()
    for t in ts:
        t.close()


def test_launch_refused_by_its_own_checks_keeps_the_executor(runtime, stream):
    args, kw = nsa_kwargs()
    p = nsa_problem()
    ins = [Tensor(a) for a in args]
    outs = [Tensor.empty(*p[n]) for n in ("dq", "dk", "dv")]
    ws, ex = pyaclnn.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
        *ins, kw["actual_seq_qlen"], kw["actual_seq_kvlen"], None, kw["scale_value"],
        kw["selected_block_size"], kw["selected_block_count"], kw["head_num"], kw["input_layout"],
        kw["sparse_mode"], *outs)
    assert ws > 0
    with pyaclnn.DeviceBuffer(ws) as buf:
        with pytest.raises(AclError) as e:
            pyaclnn.aclnnNsaSelectedAttentionGrad(buf, ws - 1, ex, stream)
        assert e.value.status == PARAM_INVALID and "workspaceSize must be at least" in e.value.message
        assert not ex.spent
        pyaclnn.aclnnNsaSelectedAttentionGrad(buf, ws, ex, stream)  # still usable
        assert ex.spent
        stream.synchronize()
    expect = ops.nsa_selected_attention_grad(*args, **kw)
    for t, want in zip(outs, expect):
        np.testing.assert_array_equal(t.numpy(), want)
    for t in ins + outs:
        t.close()


def test_helper_reports_the_launch_error_not_a_destroy_error(runtime, monkeypatch):
    s = Stream()
    dead = s._handle
    assert lib.aclrtDestroyStream(dead) == 0  # the helper's stream dies under it
    monkeypatch.setattr(ops._tls, "stream", s, raising=False)
    with pytest.raises(AclError) as e:
        ops.scaled_masked_softmax_backward(*softmax_arrays())
    assert e.value.api == "aclnnScaledMaskedSoftmaxBackward"
    assert e.value.status == lib.ACL_ERROR_INVALID_PARAM
    s._handle = None


# ---------------------------------------------------------------- row 9: masks


def test_float_mask_is_refused_by_the_c_layer(runtime):
    g, y, _ = softmax_arrays()
    with pytest.raises(AclError) as e:
        ops.scaled_masked_softmax_backward(g, y, np.zeros_like(g))
    assert e.value.status == PARAM_INVALID
    assert "mask dtype must be BOOL, got FLOAT" in e.value.message


def test_integer_mask_of_0_and_1_equals_the_bool_mask(runtime):
    g, y, mask = softmax_arrays()
    want = ops.scaled_masked_softmax_backward(g, y, mask, scale=0.5)
    for dt in (np.uint8, np.int32, np.int64):
        np.testing.assert_array_equal(ops.scaled_masked_softmax_backward(g, y, mask.astype(dt), scale=0.5),
                                      want)


@pytest.mark.parametrize("bad", [2, -1])
def test_integer_mask_with_other_values_is_a_value_error(runtime, bad):
    g, y, mask = softmax_arrays()
    m = mask.astype(np.int32)
    m[0, 0, 0, 0] = bad
    with pytest.raises(ValueError, match=r"mask: an integer mask must hold only 0 and 1, got %d" % bad):
        ops.scaled_masked_softmax_backward(g, y, m)


# ---------------------------------------------------------------- row 10: exact conversions


@pytest.mark.parametrize("name, value, exc, text", [
    ("actual_seq_qlen", [4.7], TypeError, r"actual_seq_qlen\[0\] must be an integer, got float 4.7"),
    ("actual_seq_qlen", [1, True], TypeError, r"actual_seq_qlen\[1\] must be an integer, got bool"),
    ("actual_seq_kvlen", "32", TypeError, r"actual_seq_kvlen must be a sequence of integers, got str"),
    ("actual_seq_kvlen", np.array([32.0, 96.0]), TypeError, r"actual_seq_kvlen must hold integers"),
    ("actual_seq_kvlen", np.array([[32, 96]]), ValueError, r"actual_seq_kvlen must be 1-D"),
    ("actual_seq_qlen", [1, 1 << 64], ValueError, r"actual_seq_qlen\[1\] must fit in int64"),
    ("head_num", "2", TypeError, r"head_num must be an integer, got str '2'"),
    ("head_num", 2.0, TypeError, r"head_num must be an integer, got float 2.0"),
    ("head_num", True, TypeError, r"head_num must be an integer, got bool"),
    ("selected_block_size", np.float32(16), TypeError, r"selected_block_size must be an integer"),
    ("selected_block_count", None, TypeError, r"selected_block_count must be an integer, got NoneType"),
    ("sparse_mode", "0", TypeError, r"sparse_mode must be an integer, got str"),
    ("scale_value", "0.1", TypeError, r"scale_value must be a real number, got str"),
    ("scale_value", True, TypeError, r"scale_value must be a real number, got bool"),
    ("input_layout", "TND\0x", ValueError, r"input_layout must not contain a NUL character"),
    ("input_layout", 3, TypeError, r"input_layout must be a str, got int"),
])
def test_inexact_arguments_are_refused_by_name(runtime, name, value, exc, text):
    args, kw = nsa_kwargs(**{name: value})
    with pytest.raises(exc, match=text):
        ops.nsa_selected_attention_grad(*args, **kw)


def test_exact_integer_kinds_are_accepted(runtime):
    args, kw = nsa_kwargs()
    want = ops.nsa_selected_attention_grad(*args, **kw)
    kw.update(head_num=np.int32(kw["head_num"]), selected_block_size=np.int64(kw["selected_block_size"]),
              actual_seq_qlen=np.array(kw["actual_seq_qlen"], np.int32),
              actual_seq_kvlen=tuple(int(v) for v in kw["actual_seq_kvlen"]),
              scale_value=np.float64(kw["scale_value"]), input_layout=b"TND")
    for a, b in zip(ops.nsa_selected_attention_grad(*args, **kw), want):
        np.testing.assert_array_equal(a, b)


def test_two_phase_functions_check_too(runtime):
    g, y, mask = softmax_arrays()
    with Tensor(g) as tg, Tensor(y) as ty, Tensor(mask) as tm, Tensor.empty(g.shape, g.dtype) as out:
        with pytest.raises(TypeError, match="fix_triu_mask must be a bool, got str"):
            pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(tg, ty, tm, 0.5, "False", out)
        with pytest.raises(TypeError, match="scale must be a real number, got str"):
            pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(tg, ty, tm, "0.5", False, out)
        ws, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(tg, ty, tm, 0.5, 0, out)
        with pytest.raises(TypeError, match="workspace_size must be an integer, got float"):
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, 0.0, ex)
        assert not ex.spent
        ex.destroy()


def test_rank_9_arrays_are_refused_by_name(runtime):
    args, kw = nsa_kwargs()
    args[0] = args[0].reshape(args[0].shape + (1,) * 6)
    with pytest.raises(ValueError, match=r"query has 9 dims; an aclTensor holds at most 8"):
        ops.nsa_selected_attention_grad(*args, **kw)
    g, y, mask = softmax_arrays()
    with pytest.raises(ValueError, match=r"mask has 9 dims"):
        ops.scaled_masked_softmax_backward(g, y, mask.reshape(mask.shape + (1,) * 5))
    with pytest.raises(ValueError, match=r"at most 8 dims"):
        Tensor(np.zeros((1,) * 9, np.float32))


@pytest.mark.parametrize("index, cname", [(0, "query"), (3, "attentionOut"), (7, "topkIndices")])
def test_none_for_a_required_nsa_input_is_the_c_null_error(runtime, index, cname):
    args, kw = nsa_kwargs()
    args[index] = None
    with pytest.raises(AclError) as e:
        ops.nsa_selected_attention_grad(*args, **kw)
    assert e.value.status == PARAM_NULLPTR
    assert cname in e.value.message


@pytest.mark.parametrize("which, cname", [(0, "gradOutput"), (1, "y"), (2, "mask")])
def test_none_for_a_required_softmax_input_is_the_c_null_error(runtime, which, cname):
    arrays = list(softmax_arrays())
    arrays[which] = None
    with pytest.raises(AclError) as e:
        ops.scaled_masked_softmax_backward(*arrays)
    assert e.value.status == PARAM_NULLPTR
    assert "%s is NULL" % cname in e.value.message


def test_shared_helpers():
    assert _args.as_int("n", np.uint8(3)) == 3 and type(_args.as_int("n", np.uint8(3))) is int
    assert _args.as_int_list("a", None) is None
    assert _args.as_int_list("a", np.array([1, 2], np.uint16)) == [1, 2]
    assert _args.as_layout("l", "TND") == b"TND"
    assert _args.as_bool("b", 1) is True and _args.as_bool("b", np.bool_(False)) is False
    with pytest.raises(TypeError, match="b must be a bool, got int 2"):
        _args.as_bool("b", 2)
    m = _args.as_mask("m", np.array([0, 1], np.int8))
    assert m.dtype == np.bool_ and m.tolist() == [False, True]
    f = np.array([0.0, 1.0], np.float32)
    assert _args.as_mask("m", f) is f


def test_runtime_and_tensor_sizes_are_exact_integers(runtime, stream):
    with pytest.raises(TypeError, match=r"nbytes must be an integer, got float 16.0"):
        pyaclnn.DeviceBuffer(16.0)
    with pytest.raises(TypeError, match=r"shape\[1\] must be an integer, got float 2.5"):
        Tensor.empty((2, 2.5), np.float32)
    with pytest.raises(TypeError, match=r"timeout_ms must be an integer, got str"):
        stream.synchronize("100")
    with pyaclnn.DeviceBuffer(64) as buf:
        with pytest.raises(TypeError, match=r"offset must be an integer, got float"):
            Tensor.from_buffer(buf, (4,), np.float32, offset=1.0)
        t = Tensor.from_buffer(buf, np.array([2, 2]), np.float32, strides=(np.int64(2), 1))
        assert t.shape == (2, 2) and t.strides == (2, 1)
        t.close()


# ---------------------------------------------------------------- the forward helpers


def nsa_fwd_kwargs(**change):
    """A valid small aclnnNsaSelectedAttention problem (fp16, causal with a mask)."""
    rng = np.random.default_rng(3)
    T, N1, D, block, count = 64, 2, 128, 16, 2
    q = rng.standard_normal((T, N1, D)).astype(np.float16)
    k = rng.standard_normal((T, 1, D)).astype(np.float16)
    v = rng.standard_normal((T, 1, D)).astype(np.float16)
    own = np.arange(T) // block
    topk = np.stack([own, np.maximum(own - 1, 0)], -1)[:, None, :].astype(np.int32)
    kw = dict(scale_value=D ** -0.5, head_num=N1, selected_block_size=block, selected_block_count=count,
              atten_mask=np.ones((T, T), bool), sparse_mode=2)
    kw.update(change)
    return (q, k, v, topk), kw


def test_forward_helpers_run_with_valid_arguments(runtime):
    args, kw = nsa_fwd_kwargs()
    out, smax, ssum = ops.nsa_selected_attention(*args, **kw)
    assert out.shape == (64, 2, 128) and smax.shape == ssum.shape == (64, 2, 8)
    assert np.all(ssum[..., 0] >= 1)  # each row sums exp(S - max) over its visible keys, max included
    g, _, mask = softmax_arrays()
    y = ops.scaled_masked_softmax(g, mask, scale=0.5)
    np.testing.assert_allclose(y.sum(-1), 1, rtol=1e-5)


@pytest.mark.parametrize("name,value,exc,text", [
    ("head_num", "2", TypeError, "head_num"),
    ("head_num", 2.0, TypeError, "head_num"),
    ("selected_block_size", True, TypeError, "selected_block_size"),
    ("sparse_mode", 2.5, TypeError, "sparse_mode"),
    ("input_layout", "TND\0x", ValueError, "input_layout"),
    ("actual_seq_qlen", [64.0], TypeError, "actual_seq_qlen"),
    ("scale_value", "0.1", TypeError, "scale_value"),
])
def test_nsa_forward_refuses_inexact_arguments(runtime, name, value, exc, text):
    args, kw = nsa_fwd_kwargs(**{name: value})
    with pytest.raises(exc, match=text):
        ops.nsa_selected_attention(*args, **kw)


def test_nsa_forward_none_query_is_the_c_null_error(runtime):
    args, kw = nsa_fwd_kwargs()
    with pytest.raises(AclError) as e:
        ops.nsa_selected_attention(None, *args[1:], **kw)
    assert e.value.status == 561103 and "query" in e.value.message


def test_softmax_forward_masks_follow_the_backward_rules(runtime):
    g, _, mask = softmax_arrays()
    with pytest.raises(AclError) as e:
        ops.scaled_masked_softmax(g, mask.astype(np.float32))
    assert e.value.status == PARAM_INVALID and "mask" in e.value.message
    np.testing.assert_array_equal(ops.scaled_masked_softmax(g, mask.astype(np.uint8)),
                                  ops.scaled_masked_softmax(g, mask))
    with pytest.raises(ValueError, match="mask"):
        ops.scaled_masked_softmax(g, mask.astype(np.int32) * 2)
    with pytest.raises(TypeError, match="fixed_triu_mask"):
        pyaclnn.aclnnScaledMaskedSoftmaxGetWorkspaceSize(Tensor(g), Tensor(mask), 1.0, "no",
                                                         Tensor.empty(g.shape, g.dtype))
