"""Run by tests/test_torch_npu.py with set_env.sh's environment: torch_npu's NSA
selected attention on pyaclnn, modelled on the vendor's op-plugin tests
(test_npu_nsa_select_attention.py, test_npu_nsa_select_attention_grad.py): inputs
made on the CPU and moved with .npu(), results read back with .cpu(), checked with
the vendor's assertRtolEqual against float64 goldens (the grad's is the causal
backward, sparse_mode 2, on the forward's statistics), and bit for bit against
pyaclnn.torch making the same calls on CPU tensors; autograd, strided inputs."""
import warnings

import numpy as np
import torch
import torch_npu
from torch_npu.testing.testcase import TestCase, run_tests

import pyaclnn.torch as pt
from pyaclnn import reference as R


def make_topk(seq_q, seq_kv, n2, block, count, seed):
    """Per token its own block first, then others of its batch (the vendor's layout
    for short sequences puts blocks 0..count-1 in order)."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for sq, skv in zip(seq_q, seq_kv):
        for s in range(sq):
            for _ in range(n2):
                others = torch.randperm(skv // block, generator=g)
                others = others[others != s // block][:count - 1]
                rows.append(torch.cat([torch.tensor([s // block]), others]))
    return torch.stack(rows).view(sum(seq_q), n2, count).int()


def np_(t):
    return pt._as_numpy(t, "t")


def same_bits(a, b):
    a, b = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


class TestNsaSelectAttention(TestCase):
    def forward_case(self, dt, n1, n2, seq_q, seq_kv, d=192, dv=128, block=64, count=16, scale=1.0):
        torch.manual_seed(0)
        t1, t2 = sum(seq_q), sum(seq_kv)
        q = torch.randn(t1, n1, d).to(dt)
        k = torch.randn(t2, n2, d).to(dt)
        v = torch.randn(t2, n2, dv).to(dt)
        topk = make_topk(seq_q, seq_kv, n2, block, count, 1)
        cq, ckv = list(np.cumsum(seq_q)), list(np.cumsum(seq_kv))
        npu = torch_npu.npu_nsa_select_attention(q.npu(), k.npu(), v.npu(), topk.npu(), scale, n1, block, count,
                                                 atten_mask=None, actual_seq_qlen=cq, actual_seq_kvlen=ckv)
        cpu = pt.npu_nsa_select_attention(q, k, v, topk, scale, n1, block, count, actual_seq_qlen=cq,
                                          actual_seq_kvlen=ckv)
        for a, b in zip(npu, cpu):
            self.assertTrue(same_bits(a, b))
        # float64 golden of the vendor test's cpu_op_exec (sparse_mode 2 without a mask: unmasked)
        go, gm, gs = R.nsa_selected_attention(*(np_(x) for x in (q, k, v, topk)), scale_value=scale, head_num=n1,
                                              selected_block_size=block, selected_block_count=count,
                                              actual_seq_qlen=cq, actual_seq_kvlen=ckv, sparse_mode=2)
        self.assertRtolEqual(gm.astype(np.float32), npu[1].cpu().numpy())
        self.assertRtolEqual(gs.astype(np.float32), npu[2].cpu().numpy())
        out = npu[0].cpu().float().numpy()
        self.assertLessEqual(np.abs(out - go).max(), 8e-3 * np.abs(go).max())

    def test_forward_vendor_shape(self):
        # the vendor test's case: one query token, 115 heads, KV 1088 with 17 blocks of 64
        self.forward_case(torch.float16, 115, 115, [1], [1088])

    def test_forward_batches_and_groups(self):
        self.forward_case(torch.bfloat16, 8, 2, [20, 44], [1024, 1088], d=128, block=64, count=16, scale=0.1)

    def test_grad_vendor_case(self):
        """The vendor grad test (skipped upstream): one bf16 query, D = Dv = 192, KV
        1024, a random attention_out, statistics of the causal forward, grad against
        the causal backward golden at 0.004."""
        torch.manual_seed(3)
        q = torch.randn(1, 1, 192, dtype=torch.bfloat16)
        k = torch.randn(1024, 1, 192, dtype=torch.bfloat16)
        v = torch.randn(1024, 1, 192, dtype=torch.bfloat16)
        out = torch.randn(1, 1, 192, dtype=torch.bfloat16)
        grad = torch.randn(1, 1, 192, dtype=torch.bfloat16)
        topk = torch.arange(16, dtype=torch.int32).view(1, 1, 16)
        scale, kw = 0.01, dict(selected_block_size=64, selected_block_count=16)
        _, smax, ssum = R.nsa_selected_attention_forward(*(np_(x) for x in (q, k, v, topk)), scale_value=scale,
                                                         sparse_mode=2, **kw)
        smax, ssum = torch.from_numpy(smax.astype(np.float32)), torch.from_numpy(ssum.astype(np.float32))
        golden = R.nsa_selected_attention_grad(*(np_(x) for x in (q, k, v, out, grad, smax, ssum, topk)),
                                               scale_value=scale, head_num=1, actual_seq_qlen=[1],
                                               actual_seq_kvlen=[1024], sparse_mode=2, **kw)
        npu = torch_npu.npu_nsa_select_attention_grad(grad.npu(), q.npu(), k.npu(), v.npu(), out.npu(), smax.npu(),
                                                      ssum.npu(), topk.npu(), scale, 1, 64, 16, atten_mask=None,
                                                      actual_seq_qlen=[1], actual_seq_kvlen=[1024])
        cpu = pt.npu_nsa_select_attention_grad(grad, q, k, v, out, smax, ssum, topk, scale, 1, 64, 16,
                                               actual_seq_qlen=[1], actual_seq_kvlen=[1024])
        for g, a, b in zip(golden, npu, cpu):
            self.assertRtolEqual(g.astype(np.float32), a.float().cpu().numpy(), 0.004, 0.004)
            self.assertTrue(same_bits(a, b))

    def autograd_case(self, mask, strided):
        torch.manual_seed(4)
        seq, n1, n2, d, block, count = [64, 96], 4, 2, 128, 16, 4
        t = sum(seq)
        cum = list(np.cumsum(seq))
        q = torch.randn(t, n1, d).half()
        k = torch.randn(t, n2, d).half()
        v = torch.randn(t, n2, d).half()
        topk = make_topk(seq, seq, n2, block, count, 5)
        dy = torch.randn(t, n1, d).half()
        kw = dict(actual_seq_qlen=cum, actual_seq_kvlen=cum)
        if strided:  # a [N1, T, D] buffer viewed as [T, N1, D] on the device
            qn = q.transpose(0, 1).contiguous().npu().transpose(0, 1).requires_grad_()
            self.assertFalse(qn.is_contiguous())
        else:
            qn = q.npu().requires_grad_()
        kn, vn = k.npu().requires_grad_(), v.npu().requires_grad_()
        out = torch_npu.npu_nsa_select_attention(qn, kn, vn, topk.npu(), 0.08, n1, block, count,
                                                 atten_mask=None if mask is None else mask.npu(), **kw)
        out[0].backward(dy.npu())
        qc, kc, vc = (x.clone().requires_grad_() for x in (q, k, v))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = pt.npu_nsa_select_attention(qc, kc, vc, topk, 0.08, n1, block, count, atten_mask=mask, **kw)
        ref[0].backward(dy)
        for a, b in zip(out, ref):
            self.assertTrue(same_bits(a, b))
        for a, b in ((qn, qc), (kn, kc), (vn, vc)):
            self.assertTrue(same_bits(a.grad, b.grad))

    def test_autograd_with_mask(self):
        self.autograd_case(torch.ones(2048, 2048, dtype=torch.bool), strided=False)

    def test_autograd_without_mask_is_causal_as_torch_npu(self):
        self.autograd_case(None, strided=False)

    def test_autograd_strided_query(self):
        self.autograd_case(torch.ones(2048, 2048, dtype=torch.bool), strided=True)

    def test_errors_name_the_parameter(self):
        q = torch.randn(8, 2, 128).half().npu()
        kv = torch.randn(64, 1, 128).half().npu()
        topk = torch.zeros(8, 1, 4, dtype=torch.int32).npu()
        with self.assertRaisesRegex(RuntimeError, "actualSeqQLenOptional"):
            torch_npu.npu_nsa_select_attention(q, kv, kv, topk, 0.1, 2, 16, 4)   # TND needs the lengths
            torch.npu.synchronize()


if __name__ == "__main__":
    run_tests()
