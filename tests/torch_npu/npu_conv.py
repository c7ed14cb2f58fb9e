"""Run by tests/test_conv_ops_torch_npu.py with set_env.sh's environment: torch's
convolutions (1-D / 2-D / 3-D, transposed, groups, bias), avg_pool2d, unfold and
linalg.solve_triangular on the NPU device (torch_npu sends them to aclnnConvolution,
aclnnAvgPool2d, aclnnIm2col and aclnnTriangularSolve), against torch CPU in float64."""
import torch
import torch.nn.functional as F
import torch_npu  # noqa: F401
from torch_npu.testing.testcase import TestCase, run_tests


class TestConvFamily(TestCase):
    def close(self, npu, ref, tol):
        npu = npu.detach().cpu().double()
        self.assertEqual(npu.shape, ref.shape)
        self.assertTrue(torch.allclose(npu, ref, rtol=tol, atol=tol), (npu - ref).abs().max().item())

    def test_convolution(self):
        torch.manual_seed(0)
        for nd, conv in ((1, F.conv1d), (2, F.conv2d), (3, F.conv3d)):
            for dtype, tol in ((torch.float32, 1e-4), (torch.float16, 2e-2), (torch.bfloat16, 1e-1)):
                x = torch.randn((2, 4) + (6,) * nd).to(dtype)
                w = torch.randn((6, 2) + (3,) * nd).to(dtype)
                b = torch.randn(6).to(dtype)
                ref = conv(x.double(), w.double(), b.double(), stride=2, padding=1, dilation=1, groups=2)
                self.close(conv(x.npu(), w.npu(), b.npu(), stride=2, padding=1, groups=2), ref, tol)

    def test_conv_transpose(self):
        torch.manual_seed(1)
        x, w = torch.randn(2, 4, 7, 7), torch.randn(4, 3, 3, 3)
        ref = F.conv_transpose2d(x.double(), w.double(), stride=2, padding=1, output_padding=1, groups=2)
        self.close(F.conv_transpose2d(x.npu(), w.npu(), stride=2, padding=1, output_padding=1, groups=2), ref, 1e-4)
        x, w = torch.randn(1, 4, 9), torch.randn(4, 2, 5)
        ref = F.conv_transpose1d(x.double(), w.double(), stride=3)
        self.close(F.conv_transpose1d(x.npu(), w.npu(), stride=3), ref, 1e-4)

    def test_avg_pool_unfold_solve(self):
        torch.manual_seed(2)
        x = torch.randn(2, 3, 9, 8)
        self.close(F.avg_pool2d(x.npu(), 3, 2, 1), F.avg_pool2d(x.double(), 3, 2, 1), 1e-5)
        self.close(F.avg_pool2d(x.npu(), 3, 2, 1, ceil_mode=True, count_include_pad=False),
                   F.avg_pool2d(x.double(), 3, 2, 1, ceil_mode=True, count_include_pad=False), 1e-5)
        self.close(F.unfold(x.npu(), (3, 2), padding=1, stride=(2, 1)),
                   F.unfold(x.double(), (3, 2), padding=1, stride=(2, 1)), 0)
        A = torch.randn(3, 5, 5).tril() + 4 * torch.eye(5)
        B = torch.randn(3, 5, 2)
        for upper in (False, True):
            Au = A.transpose(-1, -2) if upper else A
            self.close(torch.linalg.solve_triangular(Au.npu(), B.npu(), upper=upper),
                       torch.linalg.solve_triangular(Au.double(), B.double(), upper=upper), 1e-4)


if __name__ == "__main__":
    run_tests()
