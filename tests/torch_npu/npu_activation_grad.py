"""Run by tests/test_torch_npu.py with set_env.sh's environment: torch_npu's
activation backward passes (gelu, silu, tanh, sigmoid, relu, leaky_relu, hardswish,
hardsigmoid, hardtanh, softplus, elu and its in-place form, mish) and stack on
pyaclnn's aclnn*Backward / aclnnStack, each gradient equal to the CPU's within the
dtype's rounding. torch_npu's gelu_backward calls aclnnGeluBackward, whose kernel
differentiates the tanh approximation whatever `approximate` says (as on the NPU):
its gradient is compared with the CPU's tanh-form gradient."""
import torch
import torch.nn.functional as F
import torch_npu  # noqa: F401
from torch_npu.testing.testcase import TestCase, run_tests

TOL = {torch.float32: (2e-5, 1e-5), torch.float16: (2e-3, 1e-3), torch.bfloat16: (1.6e-2, 1e-2)}

CASES = {
    "gelu": (F.gelu, lambda x: F.gelu(x, approximate="tanh")),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), None),
    "silu": (F.silu, None),
    "tanh": (torch.tanh, None),
    "sigmoid": (torch.sigmoid, None),
    "relu": (F.relu, None),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.125), None),
    "hardswish": (F.hardswish, None),
    "hardsigmoid": (F.hardsigmoid, None),
    "hardtanh": (lambda x: F.hardtanh(x, -1.5, 2.0), None),
    "softplus": (lambda x: F.softplus(x, 1.5, 10.0), None),
    "elu": (lambda x: F.elu(x, 1.25), None),
    "elu_inplace": (lambda x: F.elu(x * 1, 1.25, inplace=True), None),
    "mish": (F.mish, None),
}


class TestActivationGrad(TestCase):
    def test_backward_matches_cpu(self):
        torch.manual_seed(0)
        for name, (fn, cpu_fn) in CASES.items():
            for dt in TOL:
                x = (torch.randn(6, 33) * 3).to(dt)
                x[x.abs() == 3] = 0.5  # the vendor's Hardswish derivative at exactly +-3 differs from torch's
                g = torch.randn(6, 33).to(dt)
                xc = x.float().clone().requires_grad_()
                (cpu_fn or fn)(xc).backward(g.float())
                xn = x.npu().requires_grad_()
                fn(xn).backward(g.npu())
                self.assertEqual(xn.grad.dtype, dt)
                rtol, atol = TOL[dt]
                torch.testing.assert_close(xn.grad.cpu().float(), xc.grad, rtol=rtol, atol=atol,
                                           msg=lambda m: "%s %s: %s" % (name, dt, m))

    def test_stack(self):
        ts = [torch.randn(3, 4) for _ in range(5)]
        for dim in (0, 1, 2, -1):
            self.assertTrue(torch.equal(torch.stack([t.npu() for t in ts], dim).cpu(), torch.stack(ts, dim)))
        self.assertTrue(torch.equal(torch.stack([t.npu().half() for t in ts]).cpu(), torch.stack(ts).half()))
        # one 0-d tensor per parameter, as clip_grad_norm_ stacks its norms: more than an executor's 63 views
        norms = [torch.tensor(float(i)) for i in range(150)]
        self.assertTrue(torch.equal(torch.stack([t.npu() for t in norms]).cpu(), torch.arange(150.0)))


if __name__ == "__main__":
    run_tests()
