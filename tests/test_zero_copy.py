"""Zero-copy data path: the one-call helpers on the cpu backend use numpy memory in
place (aclrtHostRegister), Tensor.borrow does the same for two-phase callers, and
the cann backend keeps copying (exercised with a fake toolkit)."""
import gc
import os
import shutil
import threading
import weakref

import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import AclError, Tensor, ffi, lib, ops, reference
from pyaclnn._hostmem import BorrowError, registered_ranges

from conftest import run_python

BF16 = np.dtype(ml_dtypes.bfloat16)
HOST_REGISTERED = 2  # pyaclnnCountMemRanges kind


def registered():
    """(ranges, bytes) registered with aclrtHostRegister, from the runtime's registry."""
    nbytes = ffi.new("uint64_t *")
    n = lib.pyaclnnCountMemRanges(HOST_REGISTERED, nbytes)
    return int(n), int(nbytes[0])


@pytest.fixture(autouse=True)
def no_range_left(runtime):
    assert registered() == (0, 0)
    yield
    gc.collect()
    assert registered() == (0, 0), "a host-registered range outlived the test"
    assert registered_ranges() == []


def softmax_inputs(shape, dtype, mask_shape=None, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal(shape)
    y = np.exp(logits - logits.max(-1, keepdims=True))
    y /= y.sum(-1, keepdims=True)
    g = rng.standard_normal(shape)
    mask = rng.random(mask_shape or (1, 1) + tuple(shape[2:])) < 0.3
    return g.astype(dtype), y.astype(dtype), mask


def softmax_with_copies(g, y, mask, scale):
    """The two-phase path through device copies (pyaclnn.Tensor)."""
    with pyaclnn.Stream() as stream, Tensor(g) as gt, Tensor(y) as yt, Tensor(mask) as mt, \
            Tensor.empty(g.shape, g.dtype) as out:
        size, executor = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(
            gt, yt, mt, scale, False, out)
        assert size == 0
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, 0, executor, stream)
        stream.synchronize()
        return out.numpy()


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def snapshot(*arrays):
    return [np.array(a, copy=True) for a in arrays]


def check_unchanged(arrays, copies):
    for a, c in zip(arrays, copies):
        assert same_bits(np.ascontiguousarray(a), np.ascontiguousarray(c))


def check_fresh_output(out, inputs):
    assert out.flags.c_contiguous and out.flags.writeable
    for a in inputs:
        assert not np.shares_memory(out, a)


def test_cpu_backend_is_zero_copy():
    assert pyaclnn.backend() == "cpu" and ops.zero_copy()


# ---------------------------------------------------------------- softmax

SOFTMAX_LAYOUTS = {
    "contiguous": lambda g, y, m: (g, y, m),
    "read_only": lambda g, y, m: tuple(_read_only(a) for a in (g, y, m)),
    "broadcast_mask": lambda g, y, m: (g, y, np.broadcast_to(m, g.shape)),     # stride 0 in B and N
    "broadcast_grad": lambda g, y, m: (np.broadcast_to(g[:1, :1], g.shape), y, m),
    "strided": lambda g, y, m: (_wide(g)[..., ::2], _wide(y)[..., 1::2], m),
    "fortran": lambda g, y, m: (np.asfortranarray(g), y, np.asfortranarray(m)),
    "same_array_twice": lambda g, y, m: (y, y, m),
    "overlapping_views": lambda g, y, m: _overlapping(g),
    "overlapping_roots": lambda g, y, m: _overlapping_roots(g, m),
    "byte_swapped": lambda g, y, m: (g.astype(g.dtype.newbyteorder()) if g.dtype.itemsize > 1 else g,
                                     y, m),
    "misaligned": lambda g, y, m: (_misaligned(g), _misaligned(y), m),
    "negative_strides": lambda g, y, m: (g[:, ::-1], y[:, :, ::-1], m[:, :, ::-1]),
    "int_mask": lambda g, y, m: (g, y, m.astype(np.int32)),
}


def _read_only(a):
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


def _wide(a):
    w = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    w[..., ::2] = a
    w[..., 1::2] = a
    return w


def _overlapping(g):
    """Two views of one buffer that overlap in part (views of one base array)."""
    buf = np.concatenate([g, g[:1]], axis=0)
    return buf[1:], buf[:-1], np.zeros((1, 1) + g.shape[2:], bool)


def _overlapping_roots(g, m):
    """Two arrays over overlapping parts of one bytearray, neither a view of the
    other (as torch's .numpy() gives): their buffers are registered together."""
    raw = bytearray(np.concatenate([g, g[:1]], axis=0).tobytes())
    n = g.nbytes
    step = g[:1].nbytes
    a = np.frombuffer(raw, g.dtype, count=g.size, offset=step).reshape(g.shape)
    b = np.frombuffer(raw, g.dtype, count=g.size).reshape(g.shape)
    assert a.base is not b.base and len(raw) == n + step
    return a, b, m


def _misaligned(a):
    raw = np.zeros(a.nbytes + a.itemsize, np.uint8)
    out = raw[1:1 + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned or a.itemsize == 1
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", sorted(SOFTMAX_LAYOUTS))
def test_softmax_helper_equals_two_phase_with_copies(dtype, layout):
    g0, y0, m0 = softmax_inputs((2, 3, 8, 40), dtype)
    g, y, m = SOFTMAX_LAYOUTS[layout](g0, y0, m0)
    before = snapshot(g, y, m)
    got = ops.scaled_masked_softmax_backward(g, y, m, 0.375)
    want = softmax_with_copies(np.ascontiguousarray(g, dtype=np.dtype(dtype)),
                               np.ascontiguousarray(y), np.ascontiguousarray(m, dtype=bool), 0.375)
    assert same_bits(got, want)
    check_unchanged((g, y, m), before)
    check_fresh_output(got, (g, y, m))
    # and the numbers are right, not only equal to the other path
    ref = reference.scaled_masked_softmax_backward(g, y, m.astype(bool), 0.375)
    rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-2
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=rtol, atol=rtol * np.abs(ref).max())


def test_softmax_inputs_are_used_in_place(monkeypatch):
    """Inputs the kernels can read are registered, not copied: no aclrtMalloc,
    no aclrtMemcpy, and the registered ranges are the arrays' own memory."""
    g, y, m = softmax_inputs((2, 2, 4, 64), np.float32)
    seen = []
    real = pyaclnn._hostmem._registry.acquire

    def spy(lo, hi):
        seen.append((lo, hi))
        return real(lo, hi)

    n_dev = lib.pyaclnnCountMemRanges(0, ffi.NULL)
    with monkeypatch.context() as patch:
        patch.setattr(pyaclnn._hostmem._registry, "acquire", spy)
        patch.setattr(pyaclnn.tensor, "DeviceBuffer", lambda *a, **k: pytest.fail("device copy"))
        out = ops.scaled_masked_softmax_backward(g, y, m, 0.5)
    assert lib.pyaclnnCountMemRanges(0, ffi.NULL) == n_dev
    spans = {(a.ctypes.data, a.ctypes.data + a.nbytes) for a in (g, y, m)}
    assert spans <= set(seen)
    assert len(seen) == 4  # three inputs and the output
    assert same_bits(out, softmax_with_copies(g, y, m, 0.5))


def test_arrays_sharing_memory_are_registered_once(monkeypatch):
    g, y, m = softmax_inputs((2, 2, 4, 64), np.float32)
    seen = []
    real = pyaclnn._hostmem._registry.acquire
    monkeypatch.setattr(pyaclnn._hostmem._registry, "acquire",
                        lambda lo, hi: seen.append((lo, hi)) or real(lo, hi))
    ops.scaled_masked_softmax_backward(y[:, :1], y[:, 1:], m, 0.5)  # two views of y
    assert (y.ctypes.data, y.ctypes.data + y.nbytes) in seen and len(seen) == 3
    del seen[:]
    a, b, _ = _overlapping_roots(g, m)  # overlapping, neither a view of the other
    ops.scaled_masked_softmax_backward(a, b, m, 0.5)
    lo = b.ctypes.data
    assert (lo, a.ctypes.data + a.nbytes) in seen and len(seen) == 3


def test_output_memory_is_reused_after_the_result_dies(monkeypatch):
    g, y, m = softmax_inputs((2, 8, 64, 512), np.float32)  # 2 MiB per array... make the output >= 4 MiB
    g, y = np.concatenate([g, g]), np.concatenate([y, y])
    monkeypatch.setenv("PYACLNN_OUTPUT_CACHE_MB", "64")
    ops.empty_cache()
    first = ops.scaled_masked_softmax_backward(g, y, m, 0.5)
    addr = first.ctypes.data
    want = first.copy()
    del first
    gc.collect()
    assert ops.cached_bytes() >= want.nbytes
    again = ops.scaled_masked_softmax_backward(g, y, m, 0.5)
    assert again.ctypes.data == addr and same_bits(again, want)
    keep = again  # alive: the next result needs new memory
    other = ops.scaled_masked_softmax_backward(g, y, m, 0.5)
    assert not np.shares_memory(keep, other) and same_bits(other, want)
    del keep, other, again
    gc.collect()
    assert ops.empty_cache() >= want.nbytes and ops.cached_bytes() == 0
    monkeypatch.setenv("PYACLNN_OUTPUT_CACHE_MB", "0")
    out = ops.scaled_masked_softmax_backward(g, y, m, 0.5)
    del out
    gc.collect()
    assert ops.cached_bytes() == 0


def test_views_of_the_result_keep_its_memory():
    g, y, m = softmax_inputs((4, 8, 64, 512), np.float32)
    out = ops.scaled_masked_softmax_backward(g, y, m, 0.5)
    row = out[1, 2]
    want = row.copy()
    del out
    gc.collect()
    ops.scaled_masked_softmax_backward(y, g, m, 0.25)  # would take the block if it were free
    assert same_bits(row, want)
    del row
    gc.collect()
    ops.empty_cache()


# ---------------------------------------------------------------- errors release everything

def test_phase1_error_releases_every_range():
    g, y, m = softmax_inputs((1, 2, 3, 8), np.float32)
    with pytest.raises(AclError) as info:
        ops.scaled_masked_softmax_backward(g, y.astype(np.float16), m)
    assert info.value.status == lib.ACLNN_ERR_PARAM_INVALID
    with pytest.raises(AclError):
        ops.scaled_masked_softmax_backward(g[0], y[0], m[0])  # 3-D


def test_unsupported_dtypes_are_refused_clearly():
    g, y, m = softmax_inputs((1, 2, 3, 8), np.float32)
    with pytest.raises(TypeError, match="object"):
        ops.scaled_masked_softmax_backward(g, y.astype(object), m)
    with pytest.raises(TypeError, match="complex"):
        ops.scaled_masked_softmax_backward(g.astype(np.complex64), y, m)


def test_launch_error_releases_every_range():
    """An out-of-range topk index fails at synchronize (361001): the helper waits,
    then unregisters everything."""
    x = nsa_problem(np.dtype(BF16))
    x["topk"][3, 0, 1] = 1000
    with pytest.raises(AclError) as info:
        nsa_call(x)
    assert info.value.status == lib.ACLNN_ERR_RUNTIME_ERROR


def test_memory_registered_elsewhere_is_copied_instead():
    """A buffer partly registered by someone else cannot be registered again: the
    helper copies that input (once) and still gives the right result."""
    g, y, m = softmax_inputs((2, 2, 8, 64), np.float32)
    dev = ffi.new("void **")
    middle = ffi.cast("void *", g.ctypes.data + 4096)
    assert lib.aclrtHostRegister(middle, 64, lib.ACL_HOST_REGISTER_MAPPED, dev) == 0
    try:
        assert registered() == (1, 64)
        got = ops.scaled_masked_softmax_backward(g, y, m, 0.5)
        assert registered() == (1, 64)
    finally:
        assert lib.aclrtHostUnregister(middle) == 0
    assert same_bits(got, softmax_with_copies(g, y, m, 0.5))


def test_concurrent_calls_share_registrations():
    g, y, m = softmax_inputs((2, 4, 32, 256), np.float32)
    want = softmax_with_copies(g, y, m, 0.5)
    errors, results = [], []

    def work():
        try:
            for _ in range(10):
                results.append(ops.scaled_masked_softmax_backward(g, y, m, 0.5))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 30
    assert all(same_bits(r, want) for r in results)


# ---------------------------------------------------------------- NSA

def nsa_problem(dtype, T=64, N1=4, N2=2, D=128, Dv=128, block=16, count=2, seed=1):
    """A small consistent problem; softmax stats from the reference forward."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((T, N1, D)).astype(dtype)
    k = rng.standard_normal((T, N2, D)).astype(dtype)
    v = rng.standard_normal((T, N2, Dv)).astype(dtype)
    dout = rng.standard_normal((T, N1, Dv)).astype(dtype)
    own = np.arange(T) // block
    topk = np.empty((T, N2, count), np.int32)
    for t in range(T):
        for h in range(N2):
            others = rng.permutation(np.delete(np.arange(T // block), own[t]))[:count - 1]
            topk[t, h] = np.concatenate([[own[t]], others])
    scale = D ** -0.5
    out, smax, ssum = reference.nsa_selected_attention_forward(
        q, k, v, topk, scale_value=scale, selected_block_size=block, selected_block_count=count,
        sparse_mode=2)
    return dict(q=q, k=k, v=v, o=out.astype(dtype), do=dout, smax=smax.astype(np.float32),
                ssum=ssum.astype(np.float32), topk=topk, scale=scale, block=block, count=count,
                n1=N1)


NSA_INPUTS = ("q", "k", "v", "o", "do", "smax", "ssum", "topk")


def nsa_call(x, arrays=None, **kw):
    arrays = arrays or [x[n] for n in NSA_INPUTS]
    return ops.nsa_selected_attention_grad(
        *arrays, scale_value=x["scale"], selected_block_size=x["block"],
        selected_block_count=x["count"], head_num=x["n1"], sparse_mode=2, **kw)


def nsa_with_copies(x, out_dtype):
    with pyaclnn.Stream() as stream:
        ins = [Tensor(np.ascontiguousarray(x[n])) for n in NSA_INPUTS]
        outs = [Tensor.empty(x[n].shape, out_dtype) for n in ("q", "k", "v")]
        size, executor = pyaclnn.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
            *ins, None, None, None, x["scale"], x["block"], x["count"], x["n1"], "TND", 2, *outs)
        with pyaclnn.DeviceBuffer(max(size, 1)) as ws:
            pyaclnn.aclnnNsaSelectedAttentionGrad(ws, size, executor, stream)
            stream.synchronize()
        result = [t.numpy() for t in outs]
        for t in ins + outs:
            t.close()
        return result


NSA_LAYOUTS = {
    "contiguous": lambda a: [a[n] for n in NSA_INPUTS],
    "read_only": lambda a: [_read_only(a[n]) for n in NSA_INPUTS],
    "stats_broadcast": lambda a: [a[n] for n in NSA_INPUTS[:5]]
    + [np.broadcast_to(a[n][..., :1], a[n].shape) for n in ("smax", "ssum")] + [a["topk"]],
    "strided_q": lambda a: [_wide(a["q"])[..., ::2]] + [a[n] for n in NSA_INPUTS[1:]],
    "k_and_v_one_buffer": lambda a: _kv_one_buffer(a),
}


def _kv_one_buffer(a):
    kv = np.concatenate([a["k"], a["v"]], axis=-1)  # [T, N2, D + Dv]
    d = a["k"].shape[-1]
    return [a["q"], kv[..., :d], kv[..., d:]] + [a[n] for n in NSA_INPUTS[3:]]


@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("layout", sorted(NSA_LAYOUTS))
def test_nsa_helper_equals_two_phase_with_copies(layout, out_dtype):
    x = nsa_problem(BF16)
    arrays = NSA_LAYOUTS[layout](x)
    before = snapshot(*arrays)
    got = nsa_call(x, arrays, out_dtype=out_dtype)
    want = nsa_with_copies(x, pyaclnn.as_dtype(out_dtype))
    for a, b in zip(got, want):
        assert same_bits(a, b)
        check_fresh_output(a, arrays)
    check_unchanged(arrays, before)
    assert not any(np.shares_memory(a, b) for i, a in enumerate(got) for b in got[i + 1:])


# ---------------------------------------------------------------- Tensor.borrow

def test_borrow_two_phase_equals_copies():
    g, y, m = softmax_inputs((2, 3, 8, 40), BF16)
    out = np.empty(g.shape, g.dtype)
    with pyaclnn.Stream() as stream:
        tensors = [Tensor.borrow(a) for a in (g, y[:, :, :], m, out)]
        assert registered()[0] == 4
        size, executor = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(
            *tensors[:3], 0.5, False, tensors[3])
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, size, executor, stream)
        stream.synchronize()
        for t in tensors:
            t.close()
    assert same_bits(out, softmax_with_copies(g, y, m, 0.5))
    assert registered() == (0, 0)


def test_borrow_registers_each_buffer_once_and_keeps_the_array_alive():
    base = np.arange(4 * 6 * 8, dtype=np.float32).reshape(4, 6, 8)
    views = [base, base[1:], base[:, ::2], base.T, np.broadcast_to(base[:1], base.shape)]
    tensors = [Tensor.borrow(v) for v in views]
    assert registered() == (1, base.nbytes)
    assert [t.numpy().tolist() for t in tensors] == [v.tolist() for v in views]
    t = tensors[2]
    assert (t.shape, t.strides, t.offset) == ((4, 3, 8), (48, 16, 1), 0)
    alive = weakref.ref(base)
    del base, views
    gc.collect()
    assert alive() is not None  # the tensors hold it
    for t in tensors[:-1]:
        t.close()
    assert registered() == (1, 4 * 6 * 8 * 4)
    tensors[-1].close()
    assert registered() == (0, 0)
    del tensors, t
    gc.collect()
    assert alive() is None


def test_borrow_released_by_garbage_collection():
    a = np.ones((16, 16), np.float32)
    t = Tensor.borrow(a)
    assert registered()[0] == 1
    del t
    gc.collect()
    assert registered() == (0, 0)


def test_borrow_refuses_what_kernels_cannot_read():
    a = np.ones((4, 8), np.float32)
    with pytest.raises(BorrowError, match="byte"):
        Tensor.borrow(a.astype(">f4"))
    with pytest.raises(BorrowError, match="aligned"):
        Tensor.borrow(_misaligned(a))
    with pytest.raises(BorrowError, match="negative"):
        Tensor.borrow(a[:, ::-1])
    with pytest.raises(TypeError):
        Tensor.borrow(np.array([object()]))
    dev = ffi.new("void **")
    assert lib.aclrtHostRegister(ffi.cast("void *", a.ctypes.data + 8), 8, 0, dev) == 0
    try:
        with pytest.raises(BorrowError, match="aclrtHostRegister"):
            Tensor.borrow(a)
    finally:
        assert lib.aclrtHostUnregister(ffi.cast("void *", a.ctypes.data + 8)) == 0
    assert isinstance(BorrowError("x"), ValueError)
    empty = Tensor.borrow(np.ones((0, 3), np.float32))  # nothing to borrow: a device tensor
    assert empty.array is None and empty.numpy().shape == (0, 3)
    empty.close()


def test_read_only_borrowed_array_cannot_be_an_output():
    g, y, m = softmax_inputs((1, 1, 4, 16), np.float32)
    out = _read_only(np.empty(g.shape, g.dtype))
    with Tensor.borrow(g) as gt, Tensor.borrow(y) as yt, Tensor.borrow(m) as mt, \
            Tensor.borrow(out) as ot:
        with pytest.raises(ValueError, match="read-only"):
            pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(gt, yt, mt, 1.0, False, ot)


def test_unregistered_memory_fails_the_launch_address_check():
    """Registered ranges are what makes host memory device memory: a launch on a
    borrowed tensor whose registration was dropped fails with 507015."""
    g, y, m = softmax_inputs((1, 2, 4, 16), np.float32)
    out = np.empty(g.shape, g.dtype)
    with pyaclnn.Stream() as stream:
        tensors = [Tensor.borrow(a) for a in (g, y, m, out)]
        size, executor = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(
            *tensors[:3], 1.0, False, tensors[3])
        tensors[0].close()  # unregisters g's memory (its aclTensor is gone too; the plan keeps the view)
        pyaclnn.aclnnScaledMaskedSoftmaxBackward(None, size, executor, stream)
        with pytest.raises(AclError) as info:
            stream.synchronize()
        assert info.value.status == lib.ACL_ERROR_RT_AICORE_EXCEPTION
        assert "gradOutput" in info.value.message
        for t in tensors[1:]:
            t.close()


# ---------------------------------------------------------------- cann backend: copies

CANN_CALL = """
import numpy as np, pyaclnn, ml_dtypes
from pyaclnn import ops, reference, _hostmem
calls = []
real = _hostmem._registry.acquire
_hostmem._registry.acquire = lambda lo, hi: calls.append((lo, hi)) or real(lo, hi)
rng = np.random.default_rng(0)
g = rng.uniform(-1, 1, (2, 2, 8, 64)).astype(np.float32)
y = rng.uniform(0, 1, (2, 2, 8, 64)).astype(np.float32)
m = np.triu(np.ones((8, 64), bool), 1)[None, None]
out = ops.scaled_masked_softmax_backward(g[:, :, :, :], y, np.broadcast_to(m, g.shape), 0.5)
assert np.all(np.abs(out - reference.scaled_masked_softmax_backward(g, y, m, 0.5)) <= 1e-6)
assert not np.shares_memory(out, g) and not np.shares_memory(out, y)
print(pyaclnn.backend(), ops.zero_copy(), len(calls))
"""


def test_cann_backend_copies_through_device_memory(tmp_path):
    root = tmp_path / "fake_cann"
    (root / "lib64").mkdir(parents=True)
    for name in ("libascendcl.so", "libnnopbase.so", "libopapi.so"):
        shutil.copy(os.path.join(pyaclnn.lib_dir(), name), root / "lib64" / name)
    out = run_python(CANN_CALL, {"PYACLNN_BACKEND": "cann", "ASCEND_HOME_PATH": str(root)})
    assert out.stdout.split() == ["cann", "False", "0"]
    out = run_python(CANN_CALL)
    assert out.stdout.split() == ["cpu", "True", "4"]


def test_helpers_written_the_old_way_still_work():
    """A helper that builds device Tensors itself and calls ops._run (the copying
    path before _Call) gives the same bits."""
    import contextlib

    g, y, m = softmax_inputs((2, 3, 8, 40), np.float32)
    with contextlib.ExitStack() as stack:
        ins = [stack.enter_context(Tensor(a)) for a in (g, y, m)]
        out = stack.enter_context(Tensor.empty(g.shape, g.dtype))
        (got,) = ops._run(pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize,
                          (*ins, 0.5, False, out), pyaclnn.aclnnScaledMaskedSoftmaxBackward, (out,), stack)
    assert same_bits(got, ops.scaled_masked_softmax_backward(g, y, m, 0.5))
