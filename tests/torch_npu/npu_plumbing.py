"""Run by tests/test_torch_npu.py with set_env.sh's environment: the tensor plumbing
torch_npu runs on pyaclnn's aclnn ops around the fused operators (host <-> device
copies, contiguous and strided copies, dtype casts, fills, zeros and ones, adds,
comparisons, sums, constant padding, concatenation), each result equal to the CPU's."""
import torch
import torch_npu  # noqa: F401
from torch_npu.testing.testcase import TestCase, run_tests

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.bool, torch.int8, torch.uint8,
          torch.int16, torch.int32, torch.int64)


def same(a, b):
    a = a.cpu()
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


class TestPlumbing(TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.x = torch.randn(3, 4, 5) * 10

    def test_round_trips(self):
        for dt in DTYPES:
            t = self.x.to(dt)
            self.assertTrue(same(t.npu(), t), dt)
            self.assertTrue(same(t.npu().clone(), t), dt)

    def test_casts_on_device(self):
        kinds = (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.bool)
        for a in kinds:
            t = self.x.to(a)
            for b in kinds:
                self.assertTrue(same(t.npu().to(b), t.to(b)), (a, b))
        # host -> device with a cast, device -> host with a cast
        self.assertTrue(same(torch.empty(3, 4, 5, dtype=torch.float16, device="npu").copy_(self.x), self.x.half()))
        h = torch.empty(3, 4, 5, dtype=torch.bfloat16)
        h.copy_(self.x.npu())
        self.assertTrue(torch.equal(h, self.x.bfloat16()))

    def test_strided_and_broadcast_copies(self):
        x, xn = self.x, self.x.npu()
        self.assertTrue(same(xn.transpose(0, 2).contiguous(), x.transpose(0, 2).contiguous()))
        self.assertTrue(same(xn[:, 1:3, ::2].contiguous(), x[:, 1:3, ::2].contiguous()))
        self.assertTrue(same(xn.transpose(0, 2), x.transpose(0, 2)))
        self.assertTrue(same(xn[0].expand(3, 4, 5).contiguous(), x[0].expand(3, 4, 5).contiguous()))
        self.assertTrue(same(x.transpose(0, 1).npu(), x.transpose(0, 1)))
        dst = torch.zeros(5, 4, 3, device="npu")
        dst.copy_(xn.permute(2, 1, 0))
        self.assertTrue(same(dst, x.permute(2, 1, 0).contiguous()))

    def test_fills(self):
        for dt in (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.bool):
            self.assertTrue(same(torch.zeros(3, 4, device="npu", dtype=dt), torch.zeros(3, 4, dtype=dt)))
            self.assertTrue(same(torch.ones(3, 4, device="npu", dtype=dt), torch.ones(3, 4, dtype=dt)))
            self.assertTrue(same(torch.full((3, 4), 3, device="npu", dtype=dt), torch.full((3, 4), 3, dtype=dt)))
        xn = self.x.npu()
        self.assertTrue(same(torch.zeros_like(xn), torch.zeros_like(self.x)))
        self.assertTrue(same(torch.ones_like(xn.half()), torch.ones_like(self.x.half())))
        self.assertTrue(same(xn.clone().fill_(2.5), self.x.clone().fill_(2.5)))
        self.assertTrue(same(xn.clone().zero_(), torch.zeros_like(self.x)))
        self.assertTrue(same(xn.clone().fill_(torch.tensor(1.5).npu()), self.x.clone().fill_(1.5)))

    def test_adds_compare_sum(self):
        x, xn = self.x, self.x.npu()
        h, hn = x.half(), x.half().npu()
        self.assertTrue(same(xn + xn, x + x))
        self.assertTrue(same(hn + hn[0], h + h[0]))                 # broadcast, fp16 rounding
        self.assertTrue(same(xn.clone().add_(xn), x + x))            # gradient accumulation
        self.assertTrue(same(xn + 1, x + 1))
        self.assertTrue(same(torch.add(xn, xn, alpha=2), torch.add(x, x, alpha=2)))
        self.assertTrue(same(xn > 0, x > 0))
        self.assertTrue(same(hn > hn[0], h > h[0]))
        self.assertTrue(torch.allclose(xn.sum().cpu(), x.double().sum().float(), rtol=0, atol=0))
        self.assertTrue(torch.allclose(xn.sum(1).cpu(), x.double().sum(1).float(), rtol=0, atol=0))
        b = x.bfloat16()
        self.assertTrue(same(b.npu().float().sum(), b.double().sum().float()))
        self.assertEqual(xn[0, 1, 2].item(), x[0, 1, 2].item())

    def test_constant_pad(self):
        import torch.nn.functional as F
        for dt in (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.bool):
            t = self.x.to(dt)
            for pad in ((1, 2), (0, 0, 2, -1), (-1, 1, 1, 1, 1, 1)):
                value = 1 if dt == torch.bool else -3.5 if dt.is_floating_point else 7
                self.assertTrue(same(F.pad(t.npu(), pad, value=value), F.pad(t, pad, value=value)), (dt, pad))

    def test_cat(self):
        a, b = self.x, torch.randn(3, 2, 5)
        self.assertTrue(same(torch.cat([a.npu(), b.npu()], 1), torch.cat([a, b], 1)))
        self.assertTrue(same(torch.cat([a.half().npu(), a.npu()], -1), torch.cat([a.half(), a], -1)))


if __name__ == "__main__":
    run_tests()
