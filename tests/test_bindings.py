"""Python bindings: Tensor <-> numpy, AclError, the two-phase functions, executors."""
import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import AclError, Tensor, ffi, lib, reference

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.bool_,
          np.int8, np.uint8, np.int16, np.int32, np.int64]
ACL_CODES = {np.float32: "ACL_FLOAT", np.float16: "ACL_FLOAT16", ml_dtypes.bfloat16: "ACL_BF16",
             np.float64: "ACL_DOUBLE", np.bool_: "ACL_BOOL", np.int8: "ACL_INT8",
             np.uint8: "ACL_UINT8", np.int16: "ACL_INT16", np.int32: "ACL_INT32",
             np.int64: "ACL_INT64"}


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(np.dtype(dtype), np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape).astype(dtype)
    return rng.uniform(-8, 8, shape).astype(dtype)


def c_view(t):
    """(shape, strides, offset, dtype, format) as the C library sees the tensor."""
    shape, strides = ffi.new("int64_t **"), ffi.new("int64_t **")
    ndim, nstr = ffi.new("uint64_t *"), ffi.new("uint64_t *")
    offset, dtype, fmt = ffi.new("int64_t *"), ffi.new("aclDataType *"), ffi.new("aclFormat *")
    assert lib.aclGetViewShape(t.handle, shape, ndim) == 0
    assert lib.aclGetViewStrides(t.handle, strides, nstr) == 0
    assert lib.aclGetViewOffset(t.handle, offset) == 0
    assert lib.aclGetDataType(t.handle, dtype) == 0
    assert lib.aclGetFormat(t.handle, fmt) == 0
    # (the two small arrays are C++ new[] allocations; a test may leak them)
    return (tuple(shape[0][i] for i in range(ndim[0])), tuple(strides[0][i] for i in range(nstr[0])),
            offset[0], dtype[0], fmt[0])


VIEWS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.transpose(2, 0, 1),
    "stepped": lambda a: a[:, ::2, 1::3],
    "offset_block": lambda a: a[1:, 2:, 3:5],
    "single_column": lambda a: a[..., 4],
    "negative_step": lambda a: a[:, ::-1],
    "broadcast": lambda a: np.broadcast_to(a[:1, :1], (3, 4, 6)),
    "scalar": lambda a: a[1, 2, 3],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_tensor_round_trip(runtime, dtype, view):
    base = sample((3, 5, 6), dtype)
    a = np.asarray(VIEWS[view](base))
    with Tensor(a) as t:
        got = t.numpy()
        assert got.dtype == np.dtype(dtype) and got.shape == a.shape
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(got, a)
        shape, strides, offset, acl_dtype, fmt = c_view(t)
        assert shape == a.shape == t.shape
        assert strides == t.strides and offset == t.offset
        assert acl_dtype == t.acl_dtype == getattr(lib, ACL_CODES[dtype])
        assert fmt == lib.ACL_FORMAT_ND
        if view != "negative_step" and a.ndim:
            # numpy's view is kept: same element strides over the base storage
            assert strides == tuple(s // a.itemsize for s in a.strides)


def test_tensor_view_keeps_storage_and_offset(runtime):
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    view = base[1:, 1:3, ::2]
    with Tensor(view) as t:
        assert t.offset == 1 * 20 + 1 * 5       # element offset of view[0, 0, 0] in base
        assert t.strides == (20, 5, 2)
        assert t.storage_shape == (60,)
        assert t.buffer.nbytes >= base.nbytes
        assert t.buffer.to_host(base.nbytes) == base.tobytes()   # one allocation, whole storage
        np.testing.assert_array_equal(t.numpy(), view)


def test_tensor_dtype_conversion_and_byte_order(runtime):
    a = np.arange(6, dtype=">f4").reshape(2, 3)
    with Tensor(a) as t:
        assert t.dtype == np.float32
        np.testing.assert_array_equal(t.numpy(), a)
    with Tensor([[1, 2], [3, 4]], dtype="bfloat16") as t:
        assert t.acl_dtype == lib.ACL_BF16
        np.testing.assert_array_equal(t.numpy().astype(np.float32), [[1, 2], [3, 4]])


@pytest.mark.parametrize("bad", [np.complex64, object, "U3", np.float128 if hasattr(np, "float128") else "V4"])
def test_tensor_rejects_unsupported_dtypes(runtime, bad):
    with pytest.raises(TypeError):
        Tensor(np.zeros(3, dtype=bad))


def test_tensor_empty_and_from_buffer(runtime):
    with Tensor.empty((2, 3, 4), np.float16) as t:
        assert t.shape == (2, 3, 4) and t.strides == (12, 4, 1) and t.offset == 0
        assert t.numpy().shape == (2, 3, 4)
    buf = pyaclnn.DeviceBuffer(40 * 4)
    buf.copy_from_host(np.arange(40, dtype=np.float32))
    with Tensor.from_buffer(buf, (3, 4), np.float32, strides=(8, 2), offset=3) as t:
        want = np.lib.stride_tricks.as_strided(np.arange(40, dtype=np.float32)[3:], (3, 4), (32, 8))
        np.testing.assert_array_equal(t.numpy(), want)
    assert not buf.closed  # the tensor did not own it
    with pytest.raises(ValueError):
        Tensor.from_buffer(buf, (5, 4), np.float32, strides=(8, 2), offset=3)
    buf.close()


def test_closed_tensor_rejects_use(runtime):
    t = Tensor(np.ones(4, np.float32))
    t.close()
    t.close()  # idempotent
    with pytest.raises(ValueError):
        t.handle
    assert t.buffer.closed


# ---------------------------------------------------------------- errors

def test_acl_error_fields_from_a_bad_malloc(runtime):
    with pytest.raises(AclError) as info:
        pyaclnn.DeviceBuffer(0)
    e = info.value
    assert e.status == lib.ACL_ERROR_INVALID_PARAM and e.api == "aclrtMalloc"
    assert e.message and "size" in e.message
    assert "ACL_ERROR_INVALID_PARAM" in str(e) and "100000" in str(e)
    assert isinstance(e, RuntimeError)


def test_check_passes_zero_and_names_statuses(runtime):
    pyaclnn.check(0, "anything")
    assert pyaclnn.status_name(161001) == "ACLNN_ERR_PARAM_NULLPTR"
    assert pyaclnn.status_name(507046) == "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT"
    assert pyaclnn.status_name(0) == "ACL_SUCCESS"
    with pytest.raises(AclError) as info:
        pyaclnn.check(lib.ACLNN_ERR_PARAM_INVALID, "someApi")
    assert info.value.status == 161002 and info.value.api == "someApi"


def softmax_inputs(shape, dtype=np.float32, mask_shape=None, seed=1):
    rng = np.random.default_rng(seed)
    mask_shape = mask_shape or (1, 1) + shape[2:]
    mask = rng.random(mask_shape) < 0.3
    logits = rng.normal(size=shape)
    y = np.exp(logits - logits.max(-1, keepdims=True))
    y = (y / y.sum(-1, keepdims=True)).astype(dtype)
    grad = rng.uniform(-1, 1, shape).astype(dtype)
    return grad, y, mask


def test_softmax_null_and_invalid_args(runtime):
    grad, y, mask = softmax_inputs((1, 2, 4, 8))
    with Tensor(grad) as g, Tensor(y) as yt, Tensor(mask) as m, Tensor.empty(grad.shape, grad.dtype) as out:
        with pytest.raises(AclError) as info:
            pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(None, yt, m, 1.0, False, out)
        assert info.value.status == lib.ACLNN_ERR_PARAM_NULLPTR
        assert info.value.api == "aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize"
        assert info.value.message and "gradOutput" in info.value.message
        with pytest.raises(AclError) as info:
            pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g, yt, m, 1.0, True, out)
        assert info.value.status == lib.ACLNN_ERR_PARAM_INVALID
        assert "fixTriuMask" in info.value.message
    with pytest.raises(TypeError):
        pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(grad, y, mask, 1.0, False, None)


def run_two_phase(stream, grad, y, mask, scale):
    with Tensor(grad) as g, Tensor(y) as yt, Tensor(mask) as m, \
            Tensor.empty(grad.shape, grad.dtype) as out:
        size, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g, yt, m, scale, False, out)
        assert isinstance(size, int) and size >= 0
        ws = pyaclnn.DeviceBuffer(size) if size else None
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(ws, size, ex, stream)
        assert ex.spent
        stream.synchronize()
        return out.numpy()


@pytest.mark.parametrize("dtype,tol_ulps", [(np.float32, 4), (np.float16, 1), (ml_dtypes.bfloat16, 1)],
                         ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("mask_shape", [(2, 3, 5, 24), (1, 3, 5, 24), (2, 1, 5, 24), (1, 1, 5, 24)])
def test_two_phase_softmax_matches_reference(stream, dtype, tol_ulps, mask_shape):
    grad, y, mask = softmax_inputs((2, 3, 5, 24), dtype, mask_shape)
    got = run_two_phase(stream, grad, y, mask, 0.7)
    assert got.dtype == np.dtype(dtype)
    ref = reference.scaled_masked_softmax_backward(grad, y, mask, 0.7)
    err = np.abs(got.astype(np.float64) - ref)
    assert np.all(err <= tol_ulps * reference.ulp(ref, dtype) + 1e-7), err.max()
    assert np.all(got[np.broadcast_to(mask, got.shape)] == 0)


def test_two_phase_softmax_strided_inputs(stream):
    grad, y, mask = softmax_inputs((2, 2, 6, 16))
    wide = np.zeros((2, 2, 6, 48), np.float32)
    wide[..., 1::3] = grad
    g_view = wide[..., 1::3]                        # stride 3, offset 1
    y_t = np.ascontiguousarray(y.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)  # column-major rows
    got = run_two_phase(stream, g_view, y_t, mask, 1.0)
    np.testing.assert_allclose(got, reference.scaled_masked_softmax_backward(grad, y, mask), atol=2e-7)


def test_two_phase_raw_handles(stream):
    grad, y, mask = softmax_inputs((1, 1, 3, 8))
    with Tensor(grad) as g, Tensor(y) as yt, Tensor(mask) as m, Tensor.empty(grad.shape, grad.dtype) as out:
        size, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(
            g.handle, yt.handle, m.handle, 2.0, False, out.handle)
        ws = pyaclnn.DeviceBuffer(max(size, 32))
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(ws.ptr if size else 0, size, ex.handle, stream.handle)
        stream.synchronize()
        ex.spent = True  # launched through the raw handle: C released it
        np.testing.assert_allclose(out.numpy(), reference.scaled_masked_softmax_backward(grad, y, mask, 2.0),
                                   atol=1e-6)
        ws.close()


def test_executor_is_spent_after_one_launch(stream):
    grad, y, mask = softmax_inputs((1, 2, 4, 8))
    with Tensor(grad) as g, Tensor(y) as yt, Tensor(mask) as m, Tensor.empty(grad.shape, grad.dtype) as out:
        size, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g, yt, m, 1.0, False, out)
        ws = pyaclnn.DeviceBuffer(size) if size else None
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(ws, size, ex, stream)
        with pytest.raises(AclError) as info:
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(ws, size, ex, stream)
        assert info.value.status == lib.ACLNN_ERR_PARAM_INVALID
        assert "set_repeatable" in info.value.message
        ex.destroy()  # harmless once spent
        stream.synchronize()


def test_repeatable_executor_sees_new_input_data(stream):
    grad, y, mask = softmax_inputs((1, 2, 4, 8))
    with Tensor(grad) as g, Tensor(y) as yt, Tensor(mask) as m, Tensor.empty(grad.shape, grad.dtype) as out:
        size, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g, yt, m, 1.0, False, out)
        ex.set_repeatable()
        ws = pyaclnn.DeviceBuffer(size) if size else None
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(ws, size, ex, stream)
        stream.synchronize()
        first = out.numpy()
        g.buffer.copy_from_host(2 * grad)             # same address, new contents
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(ws, size, ex, stream)
        stream.synchronize()
        second = out.numpy()
        assert not ex.spent
        ex.destroy()
        with pytest.raises(AclError):
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(ws, size, ex, stream)
    np.testing.assert_allclose(first, reference.scaled_masked_softmax_backward(grad, y, mask), atol=2e-7)
    np.testing.assert_allclose(second, 2 * first, atol=4e-7)


def test_executor_for_another_op_is_refused(stream):
    grad, y, mask = softmax_inputs((1, 1, 2, 8))
    with Tensor(grad) as g, Tensor(y) as yt, Tensor(mask) as m, Tensor.empty(grad.shape, grad.dtype) as out:
        size, ex = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(g, yt, m, 1.0, False, out)
        with pytest.raises(AclError):
            pyaclnn.aclnnNsaSelectedAttentionGrad(None, size, ex, stream)
        ex.destroy()


# ---------------------------------------------------------------- one-call helpers

def test_ops_softmax_bf16_noncontiguous(runtime):
    grad, y, mask = softmax_inputs((2, 2, 4, 16))
    g16 = grad.astype(ml_dtypes.bfloat16)[:, :, ::-1]    # negative stride: copied
    y16 = np.asfortranarray(y.astype(ml_dtypes.bfloat16))
    m = mask[:, :, ::-1]
    got = pyaclnn.scaled_masked_softmax_backward(g16, y16, m, scale=0.5)
    assert got.dtype == ml_dtypes.bfloat16 and got.shape == grad.shape
    ref = reference.scaled_masked_softmax_backward(g16, y16, m, 0.5)
    assert np.all(np.abs(got.astype(np.float64) - ref) <= reference.ulp(ref, "bfloat16") + 1e-7)


def test_ops_softmax_int_mask_and_errors(runtime):
    grad, y, mask = softmax_inputs((1, 2, 3, 8))
    got = pyaclnn.scaled_masked_softmax_backward(grad, y, mask.astype(np.int32))
    np.testing.assert_allclose(got, reference.scaled_masked_softmax_backward(grad, y, mask), atol=2e-7)
    with pytest.raises(AclError) as info:
        pyaclnn.scaled_masked_softmax_backward(grad, y.astype(np.float16), mask)
    assert info.value.status == lib.ACLNN_ERR_PARAM_INVALID
    with pytest.raises(AclError):
        pyaclnn.scaled_masked_softmax_backward(grad[0], y[0], mask[0])  # 3-D


def nsa_problem(rng, dtype):
    """Two batches (query lengths 2 and 3, key lengths 32 and 48), N1=2 query heads
    on one KV head, D=Dv=128, 2 selected blocks of 16 keys per token."""
    cum_q, cum_kv, block, count = [2, 5], [32, 80], 16, 2
    q = rng.uniform(-1, 1, (5, 2, 128)).astype(dtype)
    k = rng.uniform(-1, 1, (80, 1, 128)).astype(dtype)
    v = rng.uniform(-1, 1, (80, 1, 128)).astype(dtype)
    dy = rng.uniform(-1, 1, (5, 2, 128)).astype(dtype)
    topk = np.array([[[1, 0]], [[0, 1]], [[2, 0]], [[0, 0]], [[0, 2]]], np.int32)  # block 1 of batch 1 unused
    kw = dict(scale_value=128 ** -0.5, selected_block_size=block, selected_block_count=count,
              actual_seq_qlen=cum_q, actual_seq_kvlen=cum_kv)
    out, smax, ssum = reference.nsa_selected_attention_forward(q, k, v, topk, **kw)
    args = (q, k, v, out.astype(dtype), dy, smax.astype(np.float32), ssum.astype(np.float32), topk)
    return args, dict(kw, head_num=2)


@pytest.mark.parametrize("dtype,out_dtype", [(np.float16, None), (ml_dtypes.bfloat16, "float32")])
def test_ops_nsa_grad_matches_reference(runtime, dtype, out_dtype):
    args, kw = nsa_problem(np.random.default_rng(3), dtype)
    grads = pyaclnn.nsa_selected_attention_grad(*args, **kw, out_dtype=out_dtype)
    refs = reference.nsa_selected_attention_grad(*args, **kw)
    want_dtype = np.dtype(dtype if out_dtype is None else np.float32)
    for name, got, ref, like in zip("dq dk dv".split(), grads, refs, args[:3]):
        assert got.dtype == want_dtype and got.shape == like.shape, name
        tol = 2e-2 * np.max(np.abs(ref))  # half-precision matmul inputs
        assert np.max(np.abs(got.astype(np.float64) - ref)) <= tol, name
    assert np.all(grads[1][48:64] == 0) and np.all(grads[2][48:64] == 0)  # never-selected keys


def test_nsa_two_phase_int_arrays_and_errors(stream):
    args, kw = nsa_problem(np.random.default_rng(4), np.float16)
    ins = [Tensor(a) for a in args]
    outs = [Tensor.empty(a.shape, np.float16) for a in args[:3]]
    common = (kw["scale_value"], kw["selected_block_size"], kw["selected_block_count"], kw["head_num"])
    with pytest.raises(AclError) as info:   # kv lengths that do not add up to T2
        pyaclnn.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
            *ins, [2, 5], [32, 64], None, *common, "TND", 0, *outs)
    assert info.value.status == lib.ACLNN_ERR_PARAM_INVALID and "actualSeqKvLen" in info.value.message
    with pytest.raises(AclError) as info:
        pyaclnn.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
            *ins, [2, 5], [32, 80], None, *common, "BSND", 0, *outs)
    assert "inputLayout" in info.value.message
    size, ex = pyaclnn.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
        *ins, (2, 5), np.array([32, 80]), None, *common, "TND", 0, *outs)
    assert size > 0  # fp32 accumulation buffers
    with pytest.raises(AclError) as info:  # a failed launch does not consume the executor
        pyaclnn.aclnnNsaSelectedAttentionGrad(None, size, ex, stream)
    assert info.value.status == lib.ACLNN_ERR_PARAM_NULLPTR and not ex.spent
    ws = pyaclnn.DeviceBuffer(size)
    pyaclnn.aclnnNsaSelectedAttentionGrad(ws, size, ex, stream)
    assert ex.spent
    stream.synchronize()
    want = pyaclnn.nsa_selected_attention_grad(*args, **kw)
    for got, ref in zip(outs, want):
        np.testing.assert_array_equal(got.numpy(), ref)
    for t in ins + outs:
        t.close()
