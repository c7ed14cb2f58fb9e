"""Run by tests/test_torch_npu.py with set_env.sh's environment: torch_npu's
npu_scaled_masked_softmax and its backward on pyaclnn, modelled on the vendor's
op-plugin test (test_v1r11_ops/test_scaled_masked_softmax.py): inputs made on the
CPU, moved with .npu() and npu_format_cast (ND, NCHW, FRACTAL_NZ), the mask made on
the device (`npu_mask > 0`), the backward through autograd, results read back with
.cpu(); checked with the vendor's assertRtolEqual against its golden (softmax of
(x*scale).masked_fill(mask, -10000) in float, its autograd for the backward), and bit
for bit against pyaclnn.torch. On this SoC (Atlas A2) torch_npu sends the pair to
the single-op API (aclopCompileAndExecute "ScaledMaskedSoftmax" / "...Grad")."""
import random

import torch
import torch.nn.functional as F
import torch_npu
from torch_npu.testing.testcase import TestCase, run_tests

import pyaclnn.torch as pt


def golden_forward(x, mask, scale, fixed_triu_mask):
    if fixed_triu_mask:
        mask = torch.triu(torch.ones(mask.shape), diagonal=1).bool()
    return F.softmax((x.float() * scale).masked_fill(mask, value=-10000), dim=-1)


def same_bits(a, b):
    a, b = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


class TestScaledMaskedSoftmax(TestCase):
    def case(self, dtype, npu_format, shape, mask_shape, fixed_triu_mask=False, strided=False):
        cpu_x = torch.randn(shape, dtype=torch.float32).to(dtype)
        cpu_mask_src = torch.randn(mask_shape, dtype=torch.float16)
        cpu_grad = torch.randn(shape, dtype=torch.float32).to(dtype)
        scale = random.uniform(-1, 1)
        npu_x, npu_mask_src, npu_grad = cpu_x.npu(), cpu_mask_src.npu(), cpu_grad.npu()
        if npu_format != -1:
            npu_x = torch_npu.npu_format_cast(npu_x, npu_format)
            npu_mask_src = torch_npu.npu_format_cast(npu_mask_src, npu_format)
            npu_grad = torch_npu.npu_format_cast(npu_grad, npu_format)
        if strided:  # x as a transposed view of its device buffer
            npu_x = cpu_x.transpose(2, 3).contiguous().npu().transpose(2, 3)
            self.assertFalse(npu_x.is_contiguous())
        cpu_mask, npu_mask = cpu_mask_src > 0, npu_mask_src > 0
        self.assertTrue(torch.equal(npu_mask.cpu(), cpu_mask))

        npu_x.requires_grad_(True)
        npu_y = torch_npu.npu_scaled_masked_softmax(npu_x, npu_mask, scale, fixed_triu_mask)
        npu_y.backward(npu_grad)
        y, dx = npu_y.detach().cpu(), npu_x.grad.cpu()

        # the vendor's goldens, compared as the vendor does (in fp16)
        x64 = cpu_x.detach().float().requires_grad_(True)
        want = golden_forward(x64, cpu_mask, scale, fixed_triu_mask)
        want.backward(cpu_grad.float())
        self.assertRtolEqual(want.detach().half().numpy(), y.half().numpy())
        self.assertRtolEqual(x64.grad.half().numpy(), dx.half().numpy())

        # pyaclnn.torch makes the same calls on CPU tensors: the same bits
        cx = cpu_x.detach().clone().requires_grad_(True)
        cy = pt.npu_scaled_masked_softmax(cx, cpu_mask, scale, fixed_triu_mask)
        cy.backward(cpu_grad)
        self.assertTrue(same_bits(y, cy))
        self.assertTrue(same_bits(dx, cx.grad))
        direct = torch_npu.npu_scaled_masked_softmax_backward(npu_grad, npu_y.detach(), npu_mask, scale,
                                                              fixed_triu_mask)
        self.assertTrue(same_bits(direct, cx.grad))

    def test_bf16_formats(self):
        # the vendor's bf16 cases (smaller shapes): NZ, ND and NCHW requests
        self.case(torch.bfloat16, 29, (4, 6, 128, 128), (4, 6, 128, 128))
        self.case(torch.bfloat16, 2, (4, 6, 128, 256), (4, 1, 128, 256))
        self.case(torch.bfloat16, 0, (2, 2, 256, 512), (2, 1, 256, 512))

    def test_fp16_fp32(self):
        # the vendor's shape_format cases (skipped upstream), smaller
        self.case(torch.float16, 29, (4, 6, 128, 128), (4, 6, 128, 128))
        self.case(torch.float16, 2, (4, 6, 128, 256), (4, 1, 128, 256))
        self.case(torch.float32, 0, (2, 6, 128, 128), (2, 1, 128, 128))

    def test_fixed_triu_mask(self):
        # MindSpeed's causal path: npu_scaled_masked_softmax(x, mask, scale, True)
        self.case(torch.float16, -1, (2, 4, 128, 128), (2, 4, 128, 128), fixed_triu_mask=True)
        self.case(torch.bfloat16, -1, (2, 2, 64, 160), (1, 1, 64, 160), fixed_triu_mask=True)

    def test_strided_input(self):
        self.case(torch.float16, -1, (2, 3, 96, 64), (2, 1, 96, 64), strided=True)

    def test_internal_format_nz(self):
        # with internal formats allowed, npu_format_cast gives real FRACTAL_NZ tensors
        torch.npu.config.allow_internal_format = True
        try:
            x = torch_npu.npu_format_cast(torch.randn(2, 2, 48, 80).half().npu(), 29)
            self.assertEqual(torch_npu.get_npu_format(x), 29)
            self.case(torch.float16, 29, (2, 3, 48, 80), (2, 1, 48, 80))
            self.case(torch.bfloat16, 29, (2, 3, 64, 128), (2, 3, 64, 128), fixed_triu_mask=True)
        finally:
            torch.npu.config.allow_internal_format = False


if __name__ == "__main__":
    random.seed(0)
    torch.manual_seed(0)
    run_tests()
