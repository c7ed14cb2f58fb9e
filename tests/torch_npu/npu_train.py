"""Run by tests/test_torch_npu_train.py with set_env.sh's environment: what
torch_npu calls for training steps, on pyaclnn's random and foreach families.
torch.optim's AdamW (foreach, for-loop, fused, amsgrad), Adam with weight decay
and SGD with (Nesterov) momentum on 28 small mixed-shape parameters, each equal
to the same optimizer on the CPU; GradScaler steps (with an inf gradient that
skips a step and halves the scale); torch._foreach_norm; and the random calls
(randn, rand, randint, randperm, bernoulli_, dropout and its backward,
multinomial) reproducible under torch.npu.manual_seed, with the dropout mask
applied and scaled by 1 / (1 - p)."""
import torch
import torch_npu  # noqa: F401
from torch_npu.testing.testcase import TestCase, run_tests

SHAPES = [(16, 8), (8,), (4, 4, 3), (1,), (30,), (2, 3), (), (5, 7)] * 3 + [(9,), (3, 3), (2, 2, 2), (64,)]


def run_opt(make, dev, params, grads):
    qs = [torch.nn.Parameter(p.clone().to(dev)) for p in params]
    opt = make(qs)
    for g in grads:
        for q, gi in zip(qs, g):
            q.grad = gi.clone().to(dev)
        opt.step()
    return [q.detach().cpu() for q in qs]


class TestOptimizers(TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.params = [torch.randn(s) for s in SHAPES]
        self.grads = [[torch.randn(s) for s in SHAPES] for _ in range(3)]

    def check(self, make, tol):
        a = run_opt(make, "npu", self.params, self.grads)
        b = run_opt(make, "cpu", self.params, self.grads)
        for x, y in zip(a, b):
            self.assertEqual(x.shape, y.shape)
            self.assertLessEqual((x - y).abs().max().item() if x.numel() else 0.0, tol)

    def test_adamw(self):
        for kw in (dict(foreach=True), dict(foreach=False), dict(fused=True), dict(foreach=True, amsgrad=True),
                   dict(fused=True, amsgrad=True), dict(foreach=True, maximize=True)):
            self.check(lambda qs, kw=kw: torch.optim.AdamW(qs, lr=1e-2, weight_decay=0.05, **kw), 1e-6)

    def test_adam_and_sgd(self):
        self.check(lambda qs: torch.optim.Adam(qs, lr=1e-2, weight_decay=0.1, foreach=True), 1e-6)
        self.check(lambda qs: torch.optim.SGD(qs, lr=0.1, momentum=0.9, weight_decay=0.01, foreach=True), 1e-6)
        self.check(lambda qs: torch.optim.SGD(qs, lr=0.1, momentum=0.9, nesterov=True, foreach=True), 1e-6)

    def test_foreach_norm(self):
        gs = [g.npu() for g in self.grads[0]]
        for p in (2.0, 1.0, float("inf")):
            got = torch._foreach_norm(gs, p)
            for a, g in zip(got, self.grads[0]):
                self.assertLessEqual(abs(a.cpu().item() - torch.linalg.vector_norm(g.double(), p).item()),
                                     1e-5 * (1 + abs(a.cpu().item())))

    def test_grad_scaler(self):
        def run(dev, inf_at):
            ps = [torch.nn.Parameter(p.clone().to(dev)) for p in self.params[:6]]
            opt = torch.optim.SGD(ps, lr=0.1, momentum=0.9)
            sc = torch.amp.GradScaler("npu" if dev == "npu" else "cpu", init_scale=1024.0, growth_interval=2)
            scales = []
            for step in range(5):
                loss = sc.scale(torch.ones((), device=dev))
                for i, p in enumerate(ps):
                    g = self.grads[0][i] * loss.detach().cpu()
                    if step == inf_at and i == 1:
                        g.view(-1)[0] = float("inf")
                    p.grad = g.to(dev)
                sc.step(opt)
                sc.update()
                scales.append(sc.get_scale())
            return [p.detach().cpu() for p in ps], scales
        for inf_at in (-1, 2):
            a, sa = run("npu", inf_at)
            b, sb = run("cpu", inf_at)
            self.assertEqual(sa, sb)
            for x, y in zip(a, b):
                self.assertLessEqual((x - y).abs().max().item(), 1e-6)
        self.assertEqual(sa, [1024.0, 2048.0, 1024.0, 1024.0, 2048.0])


class TestRandom(TestCase):
    def draws(self):
        out = [torch.randn(1000, device="npu"), torch.rand(1000, device="npu"),
               torch.randint(0, 10, (100,), device="npu"), torch.randperm(50, device="npu"),
               torch.empty(1000, device="npu").bernoulli_(0.3),
               torch.multinomial(torch.tensor([1.0, 2.0, 3.0], device="npu"), 20, replacement=True),
               torch.nn.functional.dropout(torch.ones(1000, device="npu"), 0.25, training=True)]
        return [t.cpu() for t in out]

    def test_reproducible_under_manual_seed(self):
        torch.npu.manual_seed(1234)
        a = self.draws()
        torch.npu.manual_seed(1234)
        b = self.draws()
        for x, y in zip(a, b):
            self.assertTrue(torch.equal(x, y))
        torch.npu.manual_seed(1235)
        c = self.draws()
        self.assertFalse(torch.equal(a[0], c[0]))
        # each call advanced the generator's offset (torch_npu: by 12, whatever the size)
        self.assertNotEqual(a[0][:10].tolist(), a[1][:10].tolist())

    def test_values(self):
        torch.npu.manual_seed(7)
        x = torch.randn(100000, device="npu").cpu()
        self.assertLess(abs(x.mean().item()), 0.02)
        self.assertLess(abs(x.std().item() - 1), 0.02)
        u = torch.rand(100000, device="npu").cpu()
        self.assertTrue(0 <= u.min().item() and u.max().item() < 1)
        r = torch.randint(3, 9, (1000,), device="npu").cpu()
        self.assertTrue(3 <= r.min().item() and r.max().item() <= 8)
        self.assertEqual(sorted(torch.randperm(100, device="npu").cpu().tolist()), list(range(100)))
        h = torch.randn(1000, device="npu", dtype=torch.float16)
        self.assertEqual(h.dtype, torch.float16)

    def test_dropout_forward_and_backward(self):
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            x = torch.randn(4, 300, dtype=dt).npu().requires_grad_()
            y = torch.nn.functional.dropout(x, 0.25, training=True)
            y.sum().backward()
            xc, yc, gc = x.detach().cpu().float(), y.detach().cpu().float(), x.grad.cpu().float()
            kept = yc != 0
            self.assertLess(abs(kept.float().mean().item() - 0.75), 0.05)
            scale = float(torch.tensor(1 / 0.75, dtype=torch.float32))
            self.assertTrue(torch.allclose(yc[kept], (xc * scale)[kept], rtol=1e-2))
            # the backward pass applies the same mask to the gradient
            self.assertTrue(torch.equal(gc != 0, kept))
            self.assertTrue(torch.allclose(gc[kept], torch.full_like(gc[kept], scale), rtol=1e-2))


if __name__ == "__main__":
    run_tests()
