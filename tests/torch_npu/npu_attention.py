"""Run by tests/test_attention_ops.py with set_env.sh's environment: torch_npu's
F.scaled_dot_product_attention (aclnnFlashAttentionScore and its Grad, with
DropoutGenMaskV2 for dropout) forward and backward, against torch on the CPU."""
import math

import torch
import torch.nn.functional as F
import torch_npu  # noqa: F401
from torch_npu.testing.testcase import TestCase, run_tests

TOL = {torch.float32: 2e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}


def rel(a, b):
    return ((a.double() - b.double()).abs().max() / (b.double().abs().max() + 1e-12)).item()


class TestSdpa(TestCase):
    def run_case(self, dt, B, N, Nkv, S, D, causal=False, mask=False):
        torch.manual_seed(1)
        q = torch.randn(B, N, S, D).to(dt)
        k = torch.randn(B, Nkv, S, D).to(dt)
        v = torch.randn(B, Nkv, S, D).to(dt)
        dy = torch.randn(B, N, S, D).to(dt)
        am = (torch.rand(B, 1, S, S) > 0.3) | torch.eye(S, dtype=torch.bool) if mask else None
        outs = []
        for dev in ("npu", "cpu"):
            qs, ks, vs = (t.clone().to(dev).requires_grad_() for t in (q, k, v))
            if dev == "cpu":  # the reference in fp64 (GQA by repeat)
                qc, kc, vc = (t.double() for t in (qs, ks, vs))
                kc, vc = kc.repeat_interleave(N // Nkv, 1), vc.repeat_interleave(N // Nkv, 1)
                o = F.scaled_dot_product_attention(qc, kc, vc, attn_mask=am, is_causal=causal)
            else:
                o = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=None if am is None else am.npu(),
                                                   is_causal=causal, enable_gqa=Nkv != N)
            o.backward(dy.to(dev).to(o.dtype))
            outs.append([t.detach().cpu() for t in (o, qs.grad, ks.grad, vs.grad)])
        for name, a, b in zip(("out", "dq", "dk", "dv"), *outs):
            self.assertLessEqual(rel(a, b), TOL[dt], "%s %s causal=%s mask=%s" % (name, dt, causal, mask))

    def test_causal(self):
        for dt in (torch.float32, torch.bfloat16, torch.float16):
            self.run_case(dt, 2, 4, 4, 80, 64, causal=True)

    def test_mask_and_gqa(self):
        self.run_case(torch.float32, 1, 4, 4, 70, 32, mask=True)
        self.run_case(torch.bfloat16, 1, 8, 2, 64, 64, causal=True)

    def test_dropout(self):
        # forward and backward see the same mask: dropout with p and the keep
        # scale; the output's mean over many draws stays near the undropped one
        torch.manual_seed(3)
        B, N, S, D = 1, 2, 64, 32
        q, k, v = (torch.randn(B, N, S, D) for _ in range(3))
        qn, kn, vn = (t.npu().requires_grad_() for t in (q, k, v))
        torch.npu.manual_seed(7)
        o1 = F.scaled_dot_product_attention(qn, kn, vn, dropout_p=0.3, is_causal=True)
        torch.npu.manual_seed(7)
        o2 = F.scaled_dot_product_attention(qn, kn, vn, dropout_p=0.3, is_causal=True)
        self.assertEqual(o1.cpu(), o2.cpu())
        o0 = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        self.assertGreater((o1.cpu() - o0).abs().max().item(), 1e-3)
        # the gradient of sum(o * w) wrt v is (P_drop)^T w: check it against a
        # finite difference of the same (re-seeded) dropped forward
        w = torch.randn(B, N, S, D)
        torch.npu.manual_seed(7)
        o = F.scaled_dot_product_attention(qn, kn, vn, dropout_p=0.3, is_causal=True)
        (o * w.npu()).sum().backward()
        gv = vn.grad.cpu()
        eps = 1e-2
        for idx in ((0, 0, 5, 3), (0, 1, 40, 7)):
            vp = v.clone()
            vp[idx] += eps
            torch.npu.manual_seed(7)
            op = F.scaled_dot_product_attention(qn.detach(), kn.detach(), vp.npu(), dropout_p=0.3, is_causal=True)
            fd = ((op.cpu() - o1.detach().cpu()) * w).sum().item() / eps
            self.assertLess(abs(fd - gv[idx].item()), 2e-3 * (1 + abs(fd)))
        gq = qn.grad.cpu()
        for idx in ((0, 0, 9, 1), (0, 1, 60, 30)):
            qp = q.clone()
            qp[idx] += eps
            torch.npu.manual_seed(7)
            op = F.scaled_dot_product_attention(qp.npu(), kn.detach(), vn.detach(), dropout_p=0.3, is_causal=True)
            fd = ((op.cpu() - o1.detach().cpu()) * w).sum().item() / eps
            self.assertLess(abs(fd - gq[idx].item()), 2e-2 * (1 + abs(fd)))
        self.assertTrue(math.isfinite(gq.abs().sum().item()))


if __name__ == "__main__":
    run_tests()
