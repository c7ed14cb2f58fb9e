"""pyaclnn.torch: torch_npu-style drop-ins on CPU tensors (values and gradients).

The reference gradient is torch autograd (float64) of the plain formulation
``torch.softmax((x*scale).masked_fill(mask, -10000), -1)``."""
import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import reference as R

torch = pytest.importorskip("torch")
import pyaclnn.torch as pt  # noqa: E402

TDT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
NDT = {"fp32": np.dtype(np.float32), "fp16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}


def inputs(seed, shape, mshape, dt, p_mask=0.3):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * 2).to(TDT[dt])
    mask = torch.rand(mshape, generator=g) < p_mask
    return x, mask


def plain(x64, mask, scale):
    return torch.softmax((x64 * scale).masked_fill(mask, -10000), -1)


def bits(t):
    return t.contiguous().view(torch.uint8).numpy().tobytes() if t.dtype != torch.bfloat16 else \
        t.contiguous().view(torch.int16).numpy().tobytes()


def test_import_pyaclnn_does_not_import_torch(run_py):
    run_py("import sys, pyaclnn, pyaclnn.ops, pyaclnn.reference, pyaclnn.__main__\n"
           "assert 'torch' not in sys.modules, 'pyaclnn imported torch'\n")


def test_no_host_copy_of_inputs():
    for dt in TDT:
        x = torch.randn(2, 3, 4, 8).to(TDT[dt]).transpose(1, 2)
        a = pt._as_numpy(x, "x")
        assert a.__array_interface__["data"][0] == x.data_ptr()
        assert a.strides == tuple(s * x.element_size() for s in x.stride())
        assert a.dtype == NDT[dt]
        back = pt._as_tensor(np.ascontiguousarray(a))
        assert back.dtype == TDT[dt] and torch.equal(back, x)


@pytest.mark.parametrize("mshape", [(2, 3, 5, 40), (2, 1, 5, 40), (1, 3, 5, 40), (1, 1, 5, 40)])
@pytest.mark.parametrize("dt", list(TDT))
def test_forward_values(dt, mshape):
    x, mask = inputs(1, (2, 3, 5, 40), mshape, dt)
    y = pt.npu_scaled_masked_softmax(x, mask, 0.5)
    assert y.dtype == x.dtype and y.shape == x.shape
    want = pyaclnn.scaled_masked_softmax(pt._as_numpy(x, "x"), mask.numpy(), 0.5)
    assert bits(y) == bits(pt._as_tensor(want))
    ref = R.scaled_masked_softmax(pt._as_numpy(x, "x"), mask.numpy(), 0.5)
    tol = 4 * 2.0 ** -24 if dt == "fp32" else R.ulp(ref, NDT[dt]) + 2.0 ** -125
    assert np.all(np.abs(y.double().numpy() - ref) <= tol)


@pytest.mark.parametrize("dt", list(TDT))
def test_gradient_vs_torch_autograd(dt):
    x, mask = inputs(2, (2, 3, 6, 64), (2, 1, 6, 64), dt)
    mask[1, 0, 3] = True  # a fully masked row (for every head)
    scale = 0.3
    gy = torch.randn(x.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    xa = x.clone().requires_grad_()
    y = pt.npu_scaled_masked_softmax(xa, mask, scale)
    y.backward(gy.to(TDT[dt]))
    x64 = x.double().requires_grad_()
    plain(x64, mask, float(np.float32(scale))).backward(gy.to(TDT[dt]).double())
    want = x64.grad
    assert xa.grad.dtype == x.dtype
    got = xa.grad.double()
    assert torch.all(got[1, :, 3] == 0)
    assert torch.all(got[mask.expand_as(got)] == 0)
    tol = 1e-5 if dt == "fp32" else (4e-3 if dt == "fp16" else 3e-2)
    assert (got - want).abs().max() <= tol * max(1.0, want.abs().max().item())
    # and it is exactly the backward op applied to the forward's y
    dx = pyaclnn.scaled_masked_softmax_backward(pt._as_numpy(gy.to(TDT[dt]), "g"), pt._as_numpy(y, "y"),
                                                mask.numpy(), scale)
    assert bits(xa.grad) == bits(pt._as_tensor(dx))


def test_gradient_strided_input_and_expanded_grad():
    """A transposed (non-contiguous) x and the stride-0 gradient of y.sum()."""
    base, mask = inputs(4, (2, 7, 3, 33), (2, 1, 7, 33), "fp32")
    x = base.transpose(1, 2).requires_grad_()   # [2, 3, 7, 33], non-contiguous
    assert not x.is_contiguous()
    (pt.npu_scaled_masked_softmax(x, mask, 1.5) * torch.arange(33.0)).sum().backward()
    x64 = x.detach().double().requires_grad_()
    (plain(x64, mask, 1.5) * torch.arange(33.0, dtype=torch.float64)).sum().backward()
    assert (x.grad.double() - x64.grad).abs().max() <= 1e-5 * max(1.0, x64.grad.abs().max().item())
    # y.sum(): every row's gradient is (close to) 0 since each row sums to 1
    x2 = base.clone().requires_grad_()
    pt.npu_scaled_masked_softmax(x2, torch.zeros(1, 1, 3, 33, dtype=torch.bool)).sum().backward()
    assert x2.grad.abs().max() <= 1e-6


def test_mask_no_grad_and_no_graph_without_requires_grad():
    x, mask = inputs(5, (1, 2, 3, 16), (1, 1, 3, 16), "fp32")
    y = pt.npu_scaled_masked_softmax(x, mask)
    assert y.grad_fn is None and not y.requires_grad
    y = pt.npu_scaled_masked_softmax(x.requires_grad_(), mask)
    assert y.grad_fn is not None


def test_integer_mask_and_tensor_scale():
    x, mask = inputs(6, (1, 2, 3, 16), (1, 1, 3, 16), "bf16")
    a = pt.npu_scaled_masked_softmax(x, mask.to(torch.uint8), torch.tensor(0.25))
    b = pt.npu_scaled_masked_softmax(x, mask, 0.25)
    assert bits(a) == bits(b)


def test_backward_function_matches_op():
    x, mask = inputs(7, (2, 2, 4, 24), (2, 1, 4, 24), "fp16")
    y = pt.npu_scaled_masked_softmax(x, mask, 2)
    g = torch.randn(x.shape).half()
    got = pt.npu_scaled_masked_softmax_backward(g, y, mask, 2)
    want = pyaclnn.scaled_masked_softmax_backward(g.numpy(), y.numpy(), mask.numpy(), 2.0)
    assert bits(got) == bits(torch.from_numpy(want))


def test_errors():
    x, mask = inputs(8, (1, 1, 2, 8), (1, 1, 2, 8), "fp32")
    with pytest.raises(TypeError):
        pt.npu_scaled_masked_softmax(x.double(), mask)
    # the aclnn API keeps rejecting fixedTriuMask=true (the drop-in builds the triu mask itself)
    with pytest.raises(pyaclnn.AclError) as ei:
        pyaclnn.ops.scaled_masked_softmax(x.numpy(), mask.numpy(), 1.0, True)
    assert ei.value.status == 161002 and "fixedTriuMask" in ei.value.message
    with pytest.raises(pyaclnn.AclError) as ei:
        pt.npu_scaled_masked_softmax(x[0], mask)
    assert ei.value.status == 161002


@pytest.mark.parametrize("dt", list(TDT))
def test_fixed_triu_mask(dt):
    """fixed_triu_mask=True masks triu(ones(mask.shape), 1) whatever the mask holds, as
    torch_npu's ScaledMaskedSoftmax op on A2/A3 (the vendor test's golden)."""
    x, mask = inputs(9, (2, 3, 24, 40), (2, 1, 24, 40), dt, p_mask=0.5)
    triu = torch.triu(torch.ones(mask.shape, dtype=torch.bool), diagonal=1)
    xx = x.clone().requires_grad_()
    y = pt.npu_scaled_masked_softmax(xx, mask, 0.75, True)
    assert bits(y) == bits(pt.npu_scaled_masked_softmax(x, triu, 0.75, False))
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(3)).to(x.dtype)
    y.backward(g)
    want = pt.npu_scaled_masked_softmax_backward(g, y.detach(), triu, 0.75)
    assert bits(xx.grad) == bits(want)
    assert bits(pt.npu_scaled_masked_softmax_backward(g, y.detach(), mask, 0.75, True)) == bits(want)
    # against torch autograd of the plain formulation with the triu mask
    x64 = x.double().requires_grad_()
    plain(x64, triu, 0.75).backward(g.double())
    tol = 1e-5 if dt == "fp32" else 2e-2
    assert (xx.grad.double() - x64.grad).abs().max().item() <= tol * x64.grad.abs().max().item()
