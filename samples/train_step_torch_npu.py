"""A training step written for torch_npu, run on the CPU through pyaclnn's toolkit:

    pip install torch==2.13.0 torch-npu==2.13.0 pyaclnn
    source "$(python -m pyaclnn home)/set_env.sh"
    python train_step_torch_npu.py

The layer is train_step.py's NSA selected-attention layer written the way NPU code is:
x [T, dim] -> q, k, v projections (float32 weights), the block selection, then q, k and
v go to the NPU in float16 (`.npu()`), `torch_npu.npu_nsa_select_attention` runs there
(its backward through torch_npu's autograd: `npu_nsa_select_attention_grad`), the
output comes back with `.float().cpu()`, and the output projection, the loss and the
Adam step stay on the CPU. Nothing in the NPU code knows it runs on a CPU.

The same step is then run with pyaclnn.torch.npu_nsa_select_attention on CPU tensors:
both reach the same aclnn kernels, so every parameter gradient must be identical bit
for bit, with an atten_mask (a causal forward and backward) and without one (the
forward unmasked, the backward causal: torch_npu's sparse_mode 2). Exits non-zero on
a mismatch or if the loss does not decrease over a few steps.
"""
import sys
import warnings

import torch
import torch_npu  # noqa: F401  (registers the "npu" device and torch_npu.* ops)

import pyaclnn.torch as pt
# the layer's sizes and block selection (no gradient) are train_step.py's, beside this file
from train_step import BLOCK, COUNT, CUM, D, DIM, DV, N1, N2, T, select_blocks


class NsaLayer(torch.nn.Module):
    def __init__(self, backend, causal_mask):
        super().__init__()
        self.backend = backend  # "torch_npu" or "pyaclnn"
        self.wq = torch.nn.Linear(DIM, N1 * D, bias=False)
        self.wk = torch.nn.Linear(DIM, N2 * D, bias=False)
        self.wv = torch.nn.Linear(DIM, N2 * DV, bias=False)
        self.wo = torch.nn.Linear(N1 * DV, DIM, bias=False)
        self.mask = torch.ones((2048, 2048), dtype=torch.bool) if causal_mask else None

    def attention(self, q, k, v, topk):
        scale = D ** -0.5
        if self.backend == "torch_npu":
            # NPU code: operands to the device, the fused op there, the result back
            mask = None if self.mask is None else self.mask.npu()
            out, _, _ = torch_npu.npu_nsa_select_attention(
                q.npu(), k.npu(), v.npu(), topk.npu(), scale, N1, BLOCK, COUNT, atten_mask=mask,
                actual_seq_qlen=CUM, actual_seq_kvlen=CUM)
            return out.float().cpu()
        with warnings.catch_warnings():  # the causal-gradient note for atten_mask=None
            warnings.simplefilter("ignore", RuntimeWarning)
            out, _, _ = pt.npu_nsa_select_attention(q, k, v, topk, scale, N1, BLOCK, COUNT, atten_mask=self.mask,
                                                    actual_seq_qlen=CUM, actual_seq_kvlen=CUM)
        return out.float()

    def forward(self, x):
        q = self.wq(x).view(T, N1, D).half()
        k = self.wk(x).view(T, N2, D).half()
        v = self.wv(x).view(T, N2, DV).half()
        out = self.attention(q, k, v, select_blocks(q, k))
        return self.wo(out.reshape(T, N1 * DV))


def main():
    ok = True
    torch.manual_seed(0)
    x = torch.randn(T, DIM)
    target = torch.randn(T, DIM)
    for causal_mask in (True, False):
        torch.manual_seed(1)
        npu_model = NsaLayer("torch_npu", causal_mask)
        torch.manual_seed(1)
        cpu_model = NsaLayer("pyaclnn", causal_mask)  # the same initial weights
        for model in (npu_model, cpu_model):
            torch.nn.functional.mse_loss(model(x), target).backward()
        same = True
        for (name, p1), (_, p2) in zip(npu_model.named_parameters(), cpu_model.named_parameters()):
            equal = torch.equal(p1.grad.view(torch.int32), p2.grad.view(torch.int32))
            same &= equal
            print("atten_mask=%-5s grad %-9s torch_npu vs pyaclnn.torch: %s"
                  % ("given" if causal_mask else "None", name, "bit-identical" if equal else "DIFFERENT"))
        ok &= same

    # a few Adam steps of the NPU code (the parameters stay on the CPU)
    torch.manual_seed(1)
    model = NsaLayer("torch_npu", True)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print("loss over 4 Adam steps (torch_npu): " + " ".join("%.4f" % v for v in losses))
    if not losses[-1] < losses[0]:
        print("the loss did not decrease")
        ok = False
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
