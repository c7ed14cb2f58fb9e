"""The NN family through the real torch_npu (tests/test_nn_ops.py::test_through_torch_npu):
softmax / log_softmax, layer_norm, cross_entropy and nll_loss, forward and backward,
on .npu() tensors against torch CPU; one line per check, then DONE."""
import torch, torch_npu
torch.manual_seed(0)
def chk(name, a, b, tol=1e-4):
    err = (a.cpu().double() - b.double()).abs().max().item()
    print("%-28s %s  max err %.2e" % (name, "OK " if err < tol else "BAD", err))
x = torch.randn(8, 33, requires_grad=True)
xn = x.detach().npu().requires_grad_()
for fn, nm in ((torch.softmax, "softmax"), (torch.log_softmax, "log_softmax")):
    y = fn(x, -1); yn = fn(xn, -1)
    chk(nm, yn, y)
    g = torch.randn_like(y)
    gx, = torch.autograd.grad(y, x, g); gxn, = torch.autograd.grad(yn, xn, g.npu())
    chk(nm + " backward", gxn, gx)
w = torch.randn(33, requires_grad=True); b = torch.randn(33, requires_grad=True)
wn = w.detach().npu().requires_grad_(); bn = b.detach().npu().requires_grad_()
y = torch.nn.functional.layer_norm(x, [33], w, b); yn = torch.nn.functional.layer_norm(xn, [33], wn, bn)
chk("layer_norm", yn, y)
g = torch.randn_like(y)
gs = torch.autograd.grad(y, (x, w, b), g); gsn = torch.autograd.grad(yn, (xn, wn, bn), g.npu())
for nm, a, c in zip(("dx", "dw", "db"), gsn, gs): chk("layer_norm backward " + nm, a, c, 1e-3)
t = torch.randint(0, 33, (8,))
l = torch.nn.functional.cross_entropy(x, t); ln = torch.nn.functional.cross_entropy(xn, t.npu())
chk("cross_entropy", ln, l)
gx, = torch.autograd.grad(l, x); gxn, = torch.autograd.grad(ln, xn)
chk("cross_entropy backward", gxn, gx)
l = torch.nn.functional.nll_loss(torch.log_softmax(x, 1), t, reduction="sum", ignore_index=3)
ln = torch.nn.functional.nll_loss(torch.log_softmax(xn, 1), t.npu(), reduction="sum", ignore_index=3)
chk("nll_loss sum ignore", ln, l, 1e-3)
xb = x.detach().to(torch.bfloat16).npu()
chk("softmax bf16", torch.softmax(xb, -1), torch.softmax(x.detach().to(torch.bfloat16).float(), -1), 1e-2)
print("DONE")
