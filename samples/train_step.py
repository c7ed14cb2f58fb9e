"""A small NSA selected-attention layer trained with a torch optimizer, its attention
running through pyaclnn.torch.npu_nsa_select_attention (aclnnNsaSelectedAttention
forward, aclnnNsaSelectedAttentionGrad backward).

    python train_step.py

The layer: x [T, dim] -> q, k, v projections (float32 weights; q, k, v go to the
operator in float16), the block selection (per token its own block plus the
highest-scoring earlier blocks by q . mean(K_block), no gradient), causal selected
attention (sparse_mode 2 with an atten_mask), output projection. One step's parameter
gradients are checked against torch autograd of the same layer with a plain gather
formulation of the attention (float32 on the same float16-rounded q, k, v); then a
few Adam steps must lower the loss. Exits non-zero on a mismatch.
"""
import copy
import sys

import numpy as np
import torch

import pyaclnn.torch as pt

T, DIM, N1, N2, D, DV, BLOCK, COUNT = 256, 64, 4, 1, 128, 128, 16, 4
SEQ = [96, 160]                        # two sequences (cumulative lengths below)
CUM = list(np.cumsum(SEQ))


def select_blocks(q, k):
    """[T, N2, COUNT] int32: per token its own block, then the best earlier blocks by
    q . mean(K_block) (future blocks fill in when there are too few; the causal rule
    masks them)."""
    with torch.no_grad():
        topk = torch.empty((T, N2, COUNT), dtype=torch.int32)
        start = 0
        for length in SEQ:
            nblk = length // BLOCK
            kb = k[start:start + length].float().view(nblk, BLOCK, N2, D).mean(1)        # [nblk, N2, D]
            qg = q[start:start + length].float().view(length, N2, N1 // N2, D).mean(2)  # [len, N2, D]
            score = torch.einsum("tnd,bnd->tnb", qg, kb)
            s = torch.arange(length)
            own = s // BLOCK
            score = score.masked_fill((torch.arange(nblk)[None, :] >= own[:, None])[:, None, :], float("-inf"))
            best = score.topk(COUNT - 1, dim=-1).indices                                  # earlier blocks first
            topk[start:start + length] = torch.cat([own[:, None, None].expand(-1, N2, 1), best], -1).int()
            start += length
    return topk


def gather_attention(q, k, v, topk, scale):
    """Plain torch: gather the selected keys, causal mask, softmax, weighted sum."""
    G = N1 // N2
    cq = np.asarray(CUM)
    t = np.arange(T)
    b = np.searchsorted(cq, t, side="right")
    s = t - np.concatenate([[0], cq[:-1]])[b]
    kv0 = np.concatenate([[0], cq[:-1]])[b]
    pos = (topk.numpy().astype(np.int64)[..., None] * BLOCK + np.arange(BLOCK)).reshape(T, N2, -1)
    idx = torch.from_numpy(pos + kv0[:, None, None])
    heads = torch.arange(N2)[None, :, None]
    S = torch.matmul(q.view(T, N2, G, D), k[idx, heads].transpose(-1, -2)) * scale
    S = S.masked_fill(torch.from_numpy(pos[:, :, None, :] > s[:, None, None, None]), float("-inf"))
    return torch.matmul(torch.softmax(S, -1), v[idx, heads]).reshape(T, N1, DV)


class NsaLayer(torch.nn.Module):
    def __init__(self, use_pyaclnn):
        super().__init__()
        self.use_pyaclnn = use_pyaclnn
        self.wq = torch.nn.Linear(DIM, N1 * D, bias=False)
        self.wk = torch.nn.Linear(DIM, N2 * D, bias=False)
        self.wv = torch.nn.Linear(DIM, N2 * DV, bias=False)
        self.wo = torch.nn.Linear(N1 * DV, DIM, bias=False)
        self.mask = torch.ones((2048, 2048), dtype=torch.bool)   # presence = causal

    def forward(self, x):
        q = self.wq(x).view(T, N1, D).half()
        k = self.wk(x).view(T, N2, D).half()
        v = self.wv(x).view(T, N2, DV).half()
        topk = select_blocks(q, k)
        scale = D ** -0.5
        if self.use_pyaclnn:
            out, _, _ = pt.npu_nsa_select_attention(q, k, v, topk, scale, N1, BLOCK, COUNT,
                                                    atten_mask=self.mask, actual_seq_qlen=CUM,
                                                    actual_seq_kvlen=CUM)
        else:
            out = gather_attention(q.float(), k.float(), v.float(), topk, float(np.float32(scale)))
        return self.wo(out.float().reshape(T, N1 * DV))


def main():
    torch.manual_seed(0)
    x = torch.randn(T, DIM)
    target = torch.randn(T, DIM)
    ours = NsaLayer(use_pyaclnn=True)
    plain = copy.deepcopy(ours)
    plain.use_pyaclnn = False

    # one step: gradients against the plain gather formulation
    ok = True
    for model in (ours, plain):
        torch.nn.functional.mse_loss(model(x), target).backward()
    for (name, p1), (_, p2) in zip(ours.named_parameters(), plain.named_parameters()):
        err = ((p1.grad - p2.grad).abs().max() / p2.grad.abs().max()).item()
        good = err <= 2e-2   # float16 q, k, v, attention_out and dO in the operators
        ok &= good
        print("grad %-10s max rel err vs plain torch autograd %.2e  %s" % (name, err, "ok" if good else "FAILED"))

    # a few optimizer steps through pyaclnn
    opt = torch.optim.Adam(ours.parameters(), lr=3e-3)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ours(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print("loss over 8 Adam steps: " + " ".join("%.4f" % v for v in losses))
    if not losses[-1] < losses[0]:
        print("the loss did not decrease")
        ok = False
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
