"""The NN family (native/ops/nn/, kernels in native/kernels/nn/) through the C
entry points (pyaclnn.aclnn), against torch CPU in float64: Softmax,
LogSoftmax, SoftmaxBackward, LogSoftmaxBackward, RmsNorm, AddRmsNorm,
RmsNormGrad, LayerNorm, LayerNormBackward, GroupNorm, SwiGlu, GeGluV3,
RotaryPositionEmbedding, SoftmaxCrossEntropyWithLogits, NLLLoss,
NLLLossBackward. Every listed dtype and mode, strided views, 0-size and 0-d
tensors, the gradients against torch autograd, every error path with its
status code (the vendor's 161001 / 161002 / 561002, 361001 at launch with
nothing written), the ggml-cann call patterns, and bits that do not depend on
the thread count or the ISA tier."""
import ml_dtypes
import numpy as np
import pytest
import torch

import pyaclnn
from pyaclnn import aclnn, optable
from tiers import bits, supported_tiers

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F16, F64 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64)
NP = {"f32": F32, "f16": F16, "bf16": BF16, "f64": F64}
FLOAT3 = [F32, F16, BF16]
OPS = optable.by_name()
NULLPTR, INVALID, RUNTIME, TILING = 161001, 161002, 361001, 561002
TOL = {F32: 2e-5, F16: 2e-3, BF16: 1.6e-2, F64: 1e-12}
IDS = {F32: "f32", F16: "f16", BF16: "bf16", F64: "f64"}


def did(d):
    return IDS[np.dtype(d)]


def rnd(shape, dt, rng, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, shape).astype(np.float32).astype(dt)


def t64(a):
    return torch.from_numpy(np.asarray(a, np.float64))


def f64(a):
    return np.asarray(a, np.float64)


def close(got, ref, dt, scale=1.0):
    """got (any float dtype) against a float64 reference, relative to the reference's size."""
    got, ref = f64(got), f64(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    tol = TOL[np.dtype(dt)] * scale
    err = np.abs(got - ref)
    lim = tol * (1.0 + np.abs(ref))
    bad = ~(err <= lim) & ~(np.isnan(got) & np.isnan(ref))
    assert not bad.any(), (np.argwhere(bad)[:5], got[bad][:5], ref[bad][:5])


def strided(a):
    """The same values through a non-contiguous view (every other element of the last dim)."""
    if a.ndim == 0 or a.size == 0:
        return a
    base = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), a.dtype)
    v = base[..., ::2]
    v[...] = a
    return v


def status(fn, *args):
    with pytest.raises(pyaclnn.AclError) as e:
        fn(*args)
    return e.value.status


def same(got, ref):
    assert bits(got) == bits(ref)


# ---- the table -------------------------------------------------------------------

MINE = ["Softmax", "LogSoftmax", "SoftmaxBackward", "LogSoftmaxBackward", "RmsNorm", "AddRmsNorm", "RmsNormGrad",
        "LayerNorm", "LayerNormBackward", "GroupNorm", "SwiGlu", "GeGluV3", "RotaryPositionEmbedding",
        "SoftmaxCrossEntropyWithLogits", "NLLLoss", "NLLLossBackward"]


def test_rows_are_in_the_nn_family():
    for name in MINE:
        o = OPS[name]
        assert o.family == "nn" and o.kernel, name
    p = {q.name: q for q in OPS["GroupNorm"].parsed()}
    assert p["gamma"].optional and p["beta"].optional and not p["meanOut"].optional
    p = {q.name: q for q in OPS["LayerNormBackward"].parsed()}
    assert p["gradOut"].io == "IN" and p["gradInputOut"].io == "OUT" and p["gradInputOut"].optional
    p = {q.name: q for q in OPS["SoftmaxCrossEntropyWithLogits"].parsed()}
    assert p["labels"].io == "IN" and p["loss"].io == "OUT" and p["backprop"].io == "OUT"


# ---- softmax ---------------------------------------------------------------------

SM_DT = [F32, F16, BF16, F64]


@pytest.mark.parametrize("dt", SM_DT, ids=did)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log"])
def test_softmax_forward(dt, log):
    rng = np.random.default_rng(1)
    op = aclnn.LogSoftmax if log else aclnn.Softmax
    ref_fn = torch.log_softmax if log else torch.softmax
    for shape, dim in (((4, 37), -1), ((3, 5, 70), 1), ((2, 3, 4), 0), ((7,), 0), ((1, 1000), -1), ((3, 200), 1)):
        x = rnd(shape, dt, rng, -8, 8)
        out = np.empty(shape, dt)
        op(x, dim, out)
        close(out, ref_fn(t64(x), dim), dt, 2 if log else 1)
        out2 = strided(np.empty(shape, dt))
        op(strided(x), dim, out2)
        same(out2, out)
    x = np.array(2.5, dt)  # 0-d: one row of one element
    out = np.empty((), dt)
    op(x, 0, out)
    assert float(out) == (0.0 if log else 1.0)
    op(np.empty((0, 3), dt), 1, np.empty((0, 3), dt))


def test_softmax_dtypes_across():
    rng = np.random.default_rng(2)
    x = rnd((5, 33), F32, rng)
    # Softmax computes in self's dtype, then casts: f32 -> f16 out rounds once
    out = np.empty(x.shape, F16)
    aclnn.Softmax(x, -1, out)
    same(out, torch.softmax(torch.from_numpy(x), -1).numpy().astype(F16))
    # f16 self, f32 out: the f16 result widened
    xh = x.astype(F16)
    o32 = np.empty(x.shape, F32)
    aclnn.Softmax(xh, -1, o32)
    oh = np.empty(x.shape, F16)
    aclnn.Softmax(xh, -1, oh)
    same(o32, oh.astype(F32))
    # LogSoftmax casts self to out's dtype first
    aclnn.LogSoftmax(x, -1, oh)
    o2 = np.empty(x.shape, F16)
    aclnn.LogSoftmax(x.astype(F16), -1, o2)
    same(oh, o2)
    # f64 computes in double
    o64 = np.empty(x.shape, F64)
    aclnn.Softmax(x.astype(F64), -1, o64)
    close(o64, torch.softmax(t64(x), -1), F64)


def test_softmax_special_values():
    x = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 0.0], [-np.inf, 0.0, 1.0], [-np.inf] * 3, [1e30, 0, -1e30]],
                 np.float32)
    out = np.empty_like(x)
    aclnn.Softmax(x, -1, out)
    assert np.isnan(out[0]).all() and np.isnan(out[1]).all() and np.isnan(out[3]).all()
    close(out[2], torch.softmax(t64(x[2]), -1), F32)
    close(out[4], [1, 0, 0], F32)
    aclnn.LogSoftmax(x, -1, out)
    assert np.isnan(out[0]).all()
    assert out[2][0] == -np.inf


@pytest.mark.parametrize("dt", FLOAT3, ids=did)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log"])
def test_softmax_backward(dt, log):
    rng = np.random.default_rng(3)
    for shape, dim in (((4, 37), -1), ((3, 6, 5), 1), ((9,), 0)):
        x = torch.from_numpy(rnd(shape, F32, rng)).double().requires_grad_()
        y = (torch.log_softmax if log else torch.softmax)(x, dim)
        dy = rnd(shape, dt, rng)
        y.backward(t64(dy))
        yq = y.detach().numpy().astype(dt)
        # the reference from the rounded inputs
        yd, dyd = t64(yq), t64(dy)
        ref = dyd - torch.exp(yd) * dyd.sum(dim, keepdim=True) if log else yd * (dyd - (dyd * yd).sum(dim, True))
        out = np.empty(shape, dt)
        (aclnn.LogSoftmaxBackward if log else aclnn.SoftmaxBackward)(dy, yq, dim, out)
        close(out, ref, dt, 4)
        if dt == F32:
            close(out, x.grad, F32, 10)
        out2 = strided(np.empty(shape, dt))
        (aclnn.LogSoftmaxBackward if log else aclnn.SoftmaxBackward)(strided(dy), strided(yq), dim, out2)
        same(out2, out)


def test_softmax_errors():
    x = np.zeros((2, 3), np.float32)
    assert status(aclnn.Softmax, x, 2, np.empty((2, 3), np.float32)) == INVALID
    assert status(aclnn.Softmax, x, -3, np.empty((2, 3), np.float32)) == INVALID
    assert status(aclnn.Softmax, x, 1, np.empty((3, 2), np.float32)) == INVALID
    assert status(aclnn.Softmax, x.astype(np.int32), 1, np.empty((2, 3), np.int32)) == INVALID
    assert status(aclnn.Softmax, None, 1, x) == NULLPTR
    assert status(aclnn.LogSoftmax, x, 5, np.empty((2, 3), np.float32)) == INVALID
    assert status(aclnn.LogSoftmax, x, 0, np.empty((2, 2), np.float32)) == INVALID
    # an empty self returns before the dim and shape checks (CANN)
    aclnn.Softmax(np.empty((0, 3), np.float32), 7, np.empty((5,), np.float32))
    g = np.zeros((2, 3), np.float32)
    assert status(aclnn.SoftmaxBackward, g, g.astype(F16), 1, np.empty((2, 3), np.float32)) == INVALID
    assert status(aclnn.SoftmaxBackward, g, np.zeros((3, 2), np.float32), 1, np.empty((2, 3), np.float32)) == INVALID
    assert status(aclnn.SoftmaxBackward, g, g, 1, np.empty((2, 2), np.float32)) == INVALID
    assert status(aclnn.SoftmaxBackward, g, g, 2, np.empty((2, 3), np.float32)) == INVALID
    assert status(aclnn.SoftmaxBackward, g.astype(F64), g.astype(F64), 1, np.empty((2, 3), F64)) == INVALID
    assert status(aclnn.LogSoftmaxBackward, g, g, -3, np.empty((2, 3), np.float32)) == INVALID
    assert status(aclnn.LogSoftmaxBackward, None, g, 1, g) == NULLPTR


# ---- RmsNorm / AddRmsNorm / RmsNormGrad ---------------------------------------------

RMS_COMBOS = [(F32, F32), (F16, F16), (F16, F32), (BF16, BF16), (BF16, F32)]


def rms_ref(x, g, eps):
    xd = t64(x)
    r = torch.rsqrt((xd * xd).mean(-1, keepdim=True) + eps)
    return (xd * r * t64(g)).numpy(), r.numpy()[..., 0]


@pytest.mark.parametrize("xd,gd", RMS_COMBOS, ids=lambda c: did(c))
def test_rms_norm(xd, gd):
    rng = np.random.default_rng(4)
    for shape in ((4, 64), (2, 3, 100), (1, 7)):
        x = rnd(shape, xd, rng)
        g = rnd(shape[-1:], gd, rng, 0.5, 1.5)
        y = np.empty(shape, xd)
        rstd = np.empty(shape[:-1], np.float32)
        aclnn.RmsNorm(x, g, 1e-6, y, rstd)
        ry, rr = rms_ref(x, g, 1e-6)
        close(y, ry, xd)
        close(rstd, rr, F32)
        y2, r2 = strided(np.empty(shape, xd)), strided(np.empty(shape[:-1] + (1,), np.float32))
        aclnn.RmsNorm(strided(x), strided(g), 1e-6, y2, r2)
        same(y2, y)
        same(r2[..., 0], rstd)
    # gamma over the last two dims
    x = rnd((3, 4, 5), xd, rng)
    g = rnd((4, 5), gd, rng)
    y = np.empty(x.shape, xd)
    rstd = np.empty((3, 1, 1), np.float32)
    aclnn.RmsNorm(x, g, 1e-5, y, rstd)
    xx = t64(x).reshape(3, 20)
    r = torch.rsqrt((xx * xx).mean(-1, keepdim=True) + 1e-5)
    close(y, (xx * r).reshape(3, 4, 5) * t64(g), xd)


def test_rms_norm_ggml_pattern():
    """ggml-cann: gamma a cached ones tensor, rstd [ne3, ne2, ne1] of a cached zeros buffer."""
    rng = np.random.default_rng(5)
    x = rnd((2, 3, 4, 64), F32, rng)
    y = np.empty_like(x)
    rstd = np.zeros((2, 3, 4), np.float32)
    aclnn.RmsNorm(x, np.ones(64, np.float32), 1e-5, y, rstd)
    close(y, rms_ref(x, np.ones(64), 1e-5)[0], F32)


def test_rms_norm_errors():
    x = np.zeros((2, 8), np.float32)
    y, r = np.zeros((2, 8), np.float32), np.zeros(2, np.float32)
    g = np.ones(8, np.float32)
    assert status(aclnn.RmsNorm, x, g.astype(F16), 1e-6, y, r) == INVALID           # f32 x takes f32 gamma
    assert status(aclnn.RmsNorm, x.astype(F16), g.astype(BF16), 1e-6, y.astype(F16), r) == INVALID
    assert status(aclnn.RmsNorm, x, g, 1e-6, y.astype(F16), r) == INVALID           # y of x's dtype
    assert status(aclnn.RmsNorm, x, g, 1e-6, y, r.astype(F16)) == INVALID           # rstd FLOAT
    assert status(aclnn.RmsNorm, x, np.ones(7, np.float32), 1e-6, y, r) == TILING
    assert status(aclnn.RmsNorm, x, g, 1e-6, y, np.empty((2, 3), np.float32)) == TILING
    assert status(aclnn.RmsNorm, x, np.ones((3, 2, 8), np.float32), 1e-6, y, r) == TILING
    assert status(aclnn.RmsNorm, x, g, 1e-6, np.empty((2, 9), np.float32), r) == TILING
    assert status(aclnn.RmsNorm, x, g, 1e-6, y, np.empty(3, np.float32)) == TILING
    assert status(aclnn.RmsNorm, x, g, -1.0, y, r) == TILING
    assert status(aclnn.RmsNorm, np.zeros((0, 8), np.float32), g, 1e-6, np.empty((0, 8), np.float32),
                  np.empty(0, np.float32)) == TILING
    assert status(aclnn.RmsNorm, np.array(1.0, np.float32), np.ones(1, np.float32), 1e-6,
                  np.empty((), np.float32), r) == TILING
    assert status(aclnn.RmsNorm, x, None, 1e-6, y, r) == NULLPTR
    assert status(aclnn.RmsNorm, x, g, 1e-6, y, None) == NULLPTR


@pytest.mark.parametrize("dt", FLOAT3, ids=did)
def test_add_rms_norm(dt):
    rng = np.random.default_rng(6)
    x1, x2 = rnd((3, 48), dt, rng), rnd((3, 48), dt, rng)
    g = rnd(48, dt, rng, 0.5, 1.5)
    y, xo, rstd = np.empty((3, 48), dt), np.empty((3, 48), dt), np.empty((3, 1), np.float32)
    aclnn.AddRmsNorm(x1, x2, g, 1e-6, y, rstd, xo)
    s = f64(x1) + f64(x2)
    close(xo, s, dt)
    ry, rr = rms_ref(s, g, 1e-6)
    close(y, ry, dt, 2)
    close(rstd[:, 0], rr, dt)
    if dt != F32:  # pre (xOut only) and post (neither) modes: 16-bit only
        y2, xo2 = np.empty_like(y), np.empty_like(xo)
        aclnn.AddRmsNorm(x1, x2, g, 1e-6, y2, None, xo2)
        same(y2, y)
        same(xo2, xo)
        y3 = np.empty_like(y)
        aclnn.AddRmsNorm(x1, x2, g, 1e-6, y3, None, None)
        same(y3, y)
    else:
        assert status(aclnn.AddRmsNorm, x1, x2, g, 1e-6, y, None, None) == INVALID
    assert status(aclnn.AddRmsNorm, x1, x2, g, 1e-6, y, rstd, None) == NULLPTR
    assert status(aclnn.AddRmsNorm, x1, x2.astype(F64 if dt != F64 else F32), g, 1e-6, y, rstd, xo) == INVALID
    assert status(aclnn.AddRmsNorm, x1, x2[:2], g, 1e-6, y, rstd, xo) == INVALID
    assert status(aclnn.AddRmsNorm, x1, x2, g[:5], 1e-6, y, rstd, xo) == TILING
    assert status(aclnn.AddRmsNorm, x1, x2, g, -1e-6, y, rstd, xo) == TILING


@pytest.mark.parametrize("xd,gd", RMS_COMBOS, ids=lambda c: did(c))
def test_rms_norm_grad(xd, gd):
    rng = np.random.default_rng(7)
    for shape in ((5, 40), (2, 3, 17)):
        x, dy = rnd(shape, xd, rng), rnd(shape, xd, rng)
        g = rnd(shape[-1:], gd, rng, 0.5, 1.5)
        X, G = t64(x).requires_grad_(), t64(g).requires_grad_()
        r = torch.rsqrt((X * X).mean(-1, keepdim=True) + 1e-6)
        (X * r * G).backward(t64(dy))
        rstd = r.detach().numpy()[..., 0].astype(np.float32)
        dx, dg = np.empty(shape, xd), np.empty(shape[-1:], np.float32)
        aclnn.RmsNormGrad(dy, x, rstd, g, dx, dg)
        close(dx, X.grad, xd, 8)
        close(dg, G.grad, F32 if xd == F32 else xd, 8)
        dx2, dg2 = strided(np.empty(shape, xd)), strided(np.empty(shape[-1:], np.float32))
        aclnn.RmsNormGrad(strided(dy), strided(x), strided(rstd), strided(g), dx2, dg2)
        same(dx2, dx)
        same(dg2, dg)


def test_rms_norm_grad_errors():
    x = np.zeros((2, 8), np.float32)
    r, g = np.ones(2, np.float32), np.ones(8, np.float32)
    dx, dg = np.zeros((2, 8), np.float32), np.zeros(8, np.float32)
    assert status(aclnn.RmsNormGrad, x.astype(F16), x, r, g, dx, dg) == INVALID
    assert status(aclnn.RmsNormGrad, x, x, r, g.astype(BF16), dx, dg) == INVALID
    assert status(aclnn.RmsNormGrad, x, x, r, g, dx, dg.astype(F16)) == INVALID
    assert status(aclnn.RmsNormGrad, x, x, np.ones(3, np.float32), g, dx, dg) == TILING
    assert status(aclnn.RmsNormGrad, x, x, r, np.ones(4, np.float32), dx, np.empty(4, np.float32)) == TILING
    assert status(aclnn.RmsNormGrad, x, x, r, g, dx, np.empty(7, np.float32)) == TILING
    assert status(aclnn.RmsNormGrad, x[0], x[0], r[:1], g, dx[0], dg) == TILING  # x 2-D at least
    assert status(aclnn.RmsNormGrad, x, x, r, None, dx, dg) == NULLPTR


# ---- LayerNorm / LayerNormBackward -----------------------------------------------------

@pytest.mark.parametrize("dt", FLOAT3, ids=did)
@pytest.mark.parametrize("wb", ["none", "w", "wb", "f32wb"])
def test_layer_norm(dt, wb):
    rng = np.random.default_rng(8)
    for shape, j in (((4, 50), 1), ((2, 3, 4, 5), 2), ((7,), 1)):
        x = rnd(shape, dt, rng) + 1.5
        ns = list(shape[len(shape) - j:])
        pd = F32 if wb == "f32wb" else dt
        w = rnd(ns, pd, rng, 0.5, 1.5) if wb != "none" else None
        b = rnd(ns, pd, rng) if wb in ("wb", "f32wb") else None
        out = np.empty(shape, dt)
        sshape = tuple(shape[:len(shape) - j]) + (1,) * j
        mean, rstd = np.empty(sshape, np.float32), np.empty(sshape, np.float32)
        aclnn.LayerNorm(x, ns, w, b, 1e-5, out, mean, rstd)
        ref = torch.nn.functional.layer_norm(t64(x), ns, None if w is None else t64(w), None if b is None else t64(b),
                                             1e-5)
        close(out, ref, dt, 2)
        xx = f64(x).reshape(-1, int(np.prod(ns)))
        # the stats are rounded to the weight's dtype (LayerNormV3), FLOAT where CANN picks LayerNormV4
        n = int(np.prod(ns))
        wdt = pd if w is not None or b is not None else dt
        v4 = (dt == BF16 and wdt == BF16 and n in (1024, 4096)) or (n % (8 if dt == F32 else 16) != 0 and n < 64)
        pdt = F32 if v4 else wdt
        close(mean.reshape(-1), xx.mean(-1), pdt)
        close(rstd.reshape(-1), 1 / np.sqrt(xx.var(-1) + 1e-5), pdt)
        out2 = strided(np.empty(shape, dt))
        aclnn.LayerNorm(strided(x), ns, None if w is None else strided(w), b, 1e-5, out2, None, None)
        same(out2, out)


def test_layer_norm_ggml_and_empty():
    rng = np.random.default_rng(9)
    x = rnd((2, 3, 4, 32), F32, rng)
    out = np.empty_like(x)
    aclnn.LayerNorm(x, [32], None, None, 1e-5, out, None, None)  # ggml-cann's NORM
    close(out, torch.nn.functional.layer_norm(t64(x), [32], eps=1e-5), F32)
    # empty rows: nothing; an empty normalized part: mean 0, rstd NaN
    aclnn.LayerNorm(np.empty((0, 4), np.float32), [4], None, None, 1e-5, np.empty((0, 4), np.float32),
                    np.empty((0, 1), np.float32), None)
    mean, rstd = np.full((3, 1), 7, np.float32), np.full((3, 1), 7, np.float32)
    aclnn.LayerNorm(np.empty((3, 0), np.float32), [0], None, None, 1e-5, np.empty((3, 0), np.float32), mean, rstd)
    assert (mean == 0).all() and np.isnan(rstd).all()


def test_layer_norm_errors():
    x = np.zeros((2, 8), np.float32)
    out, st = np.zeros((2, 8), np.float32), np.zeros((2, 1), np.float32)
    w = np.ones(8, np.float32)
    ln = aclnn.LayerNorm
    assert status(ln, x.astype(F16), [8], w.astype(BF16), None, 1e-5, out.astype(F16), None, None) == INVALID
    assert status(ln, x, [8], w, w.astype(F16), 1e-5, out, None, None) == INVALID
    assert status(ln, x.astype(F16), [8], w, w.astype(F16), 1e-5, out.astype(F16), None, None) == INVALID
    assert status(ln, x, [], None, None, 1e-5, out, None, None) == INVALID
    assert status(ln, x, [2, 8, 1], None, None, 1e-5, out, None, None) == INVALID
    assert status(ln, x, [7], None, None, 1e-5, out, None, None) == INVALID
    assert status(ln, x, [8], np.ones(7, np.float32), None, 1e-5, out, None, None) == INVALID
    assert status(ln, x, [8], np.ones((1, 8), np.float32), None, 1e-5, out, None, None) == INVALID
    assert status(ln, x, [8], None, None, 1e-5, np.empty((2, 9), np.float32), None, None) == INVALID
    assert status(ln, x, [8], None, None, 1e-5, out, np.empty((3, 1), np.float32), None) == INVALID
    assert status(ln, x, [1] * 9, None, None, 1e-5, out, None, None) == INVALID
    assert status(ln, x, None, None, None, 1e-5, out, st, st) == NULLPTR
    assert status(ln, x, [8], None, None, 1e-5, None, st, st) == NULLPTR


@pytest.mark.parametrize("dt", FLOAT3, ids=did)
def test_layer_norm_backward(dt):
    rng = np.random.default_rng(10)
    for shape, j, with_w in (((6, 30), 1, True), ((2, 3, 4, 5), 2, False), ((5, 16), 1, True)):
        x, dy = rnd(shape, dt, rng), rnd(shape, dt, rng)
        ns = list(shape[len(shape) - j:])
        w = rnd(ns, dt, rng, 0.5, 1.5) if with_w else None
        X = t64(x).requires_grad_()
        W = t64(w if with_w else np.ones(ns)).requires_grad_()
        B = torch.zeros(ns, dtype=torch.float64, requires_grad=True)
        torch.nn.functional.layer_norm(X, ns, W, B, 1e-5).backward(t64(dy))
        xx = f64(x).reshape(-1, int(np.prod(ns)))
        sshape = tuple(shape[:len(shape) - j]) + (1,) * j
        mean = xx.mean(-1).astype(np.float32).reshape(sshape)
        rstd = (1 / np.sqrt(xx.var(-1) + 1e-5)).astype(np.float32).reshape(sshape)
        gi, gw, gb = np.empty(shape, dt), np.empty(ns, np.float32), np.empty(ns, dt)
        aclnn.LayerNormBackward(dy, x, ns, mean, rstd, w, None, [True, True, True], gi, gw, gb)
        close(gi, X.grad, dt, 8)
        close(gw, W.grad, dt, 8)
        close(gb, B.grad, dt, 4)
        # the masks: only what is asked is written, NULL elsewhere
        gi2 = np.empty(shape, dt)
        aclnn.LayerNormBackward(dy, x, ns, mean, rstd, w, None, [True, False, False], gi2, None, None)
        same(gi2, gi)
        gw2 = strided(np.empty(ns, np.float32))
        aclnn.LayerNormBackward(strided(dy), x, ns, mean, rstd, w, None, [False, True, False], None, gw2, None)
        same(gw2, gw)
        aclnn.LayerNormBackward(dy, x, ns, mean, rstd, w, None, [False, False, False], None, None, None)


def test_layer_norm_backward_errors_and_empty():
    x = np.zeros((2, 8), np.float32)
    st = np.ones((2, 1), np.float32)
    o = np.empty((2, 8), np.float32)
    v = np.empty(8, np.float32)
    lb = aclnn.LayerNormBackward
    assert status(lb, x, x, [8], st, st, None, None, [True, True], o, v, v) == INVALID
    assert status(lb, x, x, [8], st, st, None, None, [True, True, True], None, v, v) == NULLPTR
    assert status(lb, x, x, [8], st, st, None, None, [False, True, True], None, None, v) == NULLPTR
    assert status(lb, x, x, [8], st, st, None, None, None, o, v, v) == NULLPTR
    assert status(lb, x.astype(F16), x, [8], st, st, None, None, [True] * 3, o, v, v) == INVALID
    assert status(lb, x, x, [8], st, st, np.ones(8, F16), None, [True] * 3, o, v, v) == INVALID
    assert status(lb, x, x, [7], st, st, None, None, [True] * 3, o, v, v) == INVALID
    assert status(lb, x, x, [8], np.ones(3, np.float32), np.ones(3, np.float32), None, None, [True] * 3, o, v,
                  v) == INVALID
    assert status(lb, x, x, [8], st, np.ones(2, np.float32), None, None, [True] * 3, o, v, v) == INVALID
    assert status(lb, x, x, [8], st, st, None, None, [True] * 3, o, np.empty(7, np.float32), v) == INVALID
    assert status(lb, x, x, [8], st, st, None, None, [True] * 3, np.empty((2, 7), np.float32), v, v) == INVALID
    # no rows: gradWeight / gradBias 0
    gw, gb = np.full(8, 5, np.float32), np.full(8, 5, np.float32)
    e = np.empty((0, 8), np.float32)
    lb(e, e, [8], np.empty((0, 1), np.float32), np.empty((0, 1), np.float32), None, None, [True] * 3, e, gw, gb)
    assert (gw == 0).all() and (gb == 0).all()


# ---- GroupNorm ------------------------------------------------------------------------

@pytest.mark.parametrize("dt", FLOAT3, ids=did)
@pytest.mark.parametrize("affine", [False, True])
def test_group_norm(dt, affine):
    rng = np.random.default_rng(11)
    for shape, g in (((2, 6, 3, 4), 3), ((3, 4), 2), ((1, 8, 5), 8), ((2, 4, 2, 2, 3), 1)):
        N, C = shape[:2]
        hw = int(np.prod(shape[2:]))
        x = rnd(shape, dt, rng) + 0.5
        gamma = rnd(C, dt, rng, 0.5, 1.5) if affine else None
        beta = rnd(C, dt, rng) if affine else None
        out, mean, rstd = np.empty(shape, dt), np.empty((N, g), dt), np.empty((N, g), dt)
        aclnn.GroupNorm(x, gamma, beta, N, C, hw, g, 1e-5, out, mean, rstd)
        ref = torch.nn.functional.group_norm(t64(x), g, None if gamma is None else t64(gamma),
                                             None if beta is None else t64(beta), 1e-5)
        close(out, ref, dt, 4)
        xx = f64(x).reshape(N, g, -1)
        close(mean, xx.mean(-1), dt)
        # the vendor's one-pass variance (E[x^2] - mean^2) loses ~ eps * mean^2 / var
        var = xx.var(-1) + 1e-5
        cond = 1 + xx.mean(-1) ** 2 / var
        assert (np.abs(f64(rstd) * np.sqrt(var) - 1) <= 4 * TOL[np.dtype(dt)] * cond).all()
        out2 = strided(np.empty(shape, dt))
        aclnn.GroupNorm(strided(x), None if gamma is None else strided(gamma), beta, N, C, hw, g, 1e-5, out2,
                        strided(np.empty((N, g), dt)), np.empty((N, g), dt))
        same(out2, out)


def test_group_norm_ggml_pattern():
    """ggml-cann's GROUP_NORM: NULL gamma / beta, mean and rstd views that overlap in one small buffer."""
    rng = np.random.default_rng(12)
    N, C, H, W, g = 2, 8, 3, 5, 4
    x = rnd((N, C, H, W), F32, rng)
    buf = np.zeros(2 * N * g + 8, np.float32)
    mean = buf[:N * g].reshape(N, g)
    rstd = buf[N * g // 4:N * g // 4 + N * g].reshape(N, g)  # starts inside mean
    outs = []
    for threads in (1, 2):
        pyaclnn.set_num_threads(threads)
        out = np.empty_like(x)
        aclnn.GroupNorm(x, None, None, N, C, H * W, g, 1e-6, out, mean, rstd)
        outs.append((out.copy(), buf.copy()))
    pyaclnn.set_num_threads(0)
    close(outs[0][0], torch.nn.functional.group_norm(t64(x), g, eps=1e-6), F32)
    same(outs[0][0], outs[1][0])
    same(outs[0][1], outs[1][1])


def test_group_norm_errors_and_empty():
    x = np.zeros((2, 4, 3), np.float32)
    out, st = np.empty((2, 4, 3), np.float32), np.empty((2, 2), np.float32)
    gn = aclnn.GroupNorm
    assert status(gn, x, None, None, 2, 4, 3, 2, 1e-5, out, st, None) == NULLPTR
    assert status(gn, x, np.ones(4, F16), None, 2, 4, 3, 2, 1e-5, out, st, st) == INVALID
    assert status(gn, x, None, None, 2, 4, 3, 2, 1e-5, out, st.astype(F16), st) == INVALID
    assert status(gn, x, None, None, 2, 4, 3, 0, 1e-5, out, st, st) == INVALID
    assert status(gn, x, None, None, 2, 4, 3, 3, 1e-5, out, st, st) == INVALID
    assert status(gn, x, None, None, 2, 4, 3, 2, 0.0, out, st, st) == INVALID
    assert status(gn, x[0, 0], None, None, 1, 3, 1, 1, 1e-5, out[0, 0], st, st) == INVALID
    assert status(gn, x, None, None, 2, 4, 3, 2, 1e-5, np.empty((2, 4, 4), np.float32), st, st) == INVALID
    assert status(gn, x, None, None, 2, 4, 3, 2, 1e-5, out, np.empty((2, 3), np.float32), st) == INVALID
    assert status(gn, x, None, None, 3, 4, 3, 2, 1e-5, out, np.empty((3, 2), np.float32),
                  np.empty((3, 2), np.float32)) == INVALID
    assert status(gn, x, None, None, 2, 4, 4, 2, 1e-5, out, st, st) == INVALID
    assert status(gn, x, np.ones(3, np.float32), None, 2, 4, 3, 2, 1e-5, out, st, st) == INVALID
    mean, rstd = np.full((2, 2), 7, np.float32), np.full((2, 2), 7, np.float32)
    e = np.empty((2, 4, 0), np.float32)
    gn(e, None, None, 2, 4, 0, 2, 1e-5, e, mean, rstd)
    assert (mean == 0).all() and np.isnan(rstd).all()


# ---- SwiGlu / GeGluV3 --------------------------------------------------------------------

@pytest.mark.parametrize("dt", FLOAT3, ids=did)
def test_swiglu(dt):
    rng = np.random.default_rng(13)
    for shape, dim in (((3, 8, 5), 1), ((4, 64), -1), ((6, 2), 0), ((2, 3, 4, 10), 3)):
        x = rnd(shape, dt, rng, -6, 6)
        oshape = list(shape)
        oshape[dim] //= 2
        out = np.empty(oshape, dt)
        aclnn.SwiGlu(x, dim, out)
        a, b = t64(x).chunk(2, dim)
        close(out, torch.nn.functional.silu(a) * b, dt, 2)
        out2 = strided(np.empty(oshape, dt))
        aclnn.SwiGlu(strided(x) if dim not in (-1, len(shape) - 1) else x, dim, out2)
        same(out2, out)
    x = np.zeros((2, 6), np.float32)
    assert status(aclnn.SwiGlu, x, 2, np.empty((2, 3), np.float32)) == INVALID
    assert status(aclnn.SwiGlu, x, 1, np.empty((2, 3), F16)) == INVALID
    assert status(aclnn.SwiGlu, np.zeros((2, 5), np.float32), 1, np.empty((2, 2), np.float32)) == TILING
    assert status(aclnn.SwiGlu, x, 1, np.empty((2, 6), np.float32)) == TILING
    assert status(aclnn.SwiGlu, None, 1, x) == NULLPTR
    aclnn.SwiGlu(np.empty((0, 4), dt), 1, np.empty((0, 2), dt))


@pytest.mark.parametrize("dt", FLOAT3, ids=did)
@pytest.mark.parametrize("approx", [0, 1], ids=["erf", "tanh"])
@pytest.mark.parametrize("left", [True, False], ids=["left", "right"])
def test_geglu_v3(dt, approx, left):
    rng = np.random.default_rng(14)
    for shape, dim in (((3, 8, 5), 1), ((4, 66), -1)):
        x = rnd(shape, dt, rng, -7, 7)
        oshape = list(shape)
        oshape[dim] //= 2
        out, og = np.empty(oshape, dt), np.empty(oshape, dt)
        aclnn.GeGluV3(x, dim, approx, left, out, og)
        a, b = t64(x).chunk(2, dim)
        act, other = (a, b) if left else (b, a)
        g = torch.nn.functional.gelu(act, approximate="tanh" if approx else "none")
        close(og, g, dt, 20 if dt == F32 else 2)  # the vendor's erf form is an approximation (~1e-4)
        close(out, g * other, dt, 20 if dt == F32 else 3)
        out2, og2 = strided(np.empty(oshape, dt)), np.empty(oshape, dt)
        aclnn.GeGluV3(x, dim, approx, left, out2, og2)
        same(out2, out)
        same(og2, og)


def test_geglu_errors():
    x = np.zeros((2, 6), np.float32)
    o = np.empty((2, 3), np.float32)
    g = aclnn.GeGluV3
    assert status(g, x, 2, 0, True, o, o) == INVALID
    assert status(g, x, 1, 2, True, o, o) == INVALID
    assert status(g, x, 1, -1, True, o, o) == INVALID
    assert status(g, x, 1, 0, True, o.astype(F16), o) == INVALID
    assert status(g, np.zeros((2, 5), np.float32), 1, 0, True, np.empty((2, 2), np.float32), o) == INVALID
    assert status(g, x, 1, 0, True, np.empty((2, 6), np.float32), o) == INVALID
    assert status(g, x, 1, 0, True, np.empty((3, 3), np.float32), o) == INVALID
    assert status(g, x, 1, 0, True, o, None) == NULLPTR
    g(np.empty((0, 6), np.float32), 1, 0, True, np.empty((0, 3), np.float32), np.empty((0, 3), np.float32))


# ---- RotaryPositionEmbedding -------------------------------------------------------------

def rope_ref(x, c, s, mode):
    X = t64(x)
    if mode == 0:
        x1, x2 = X.chunk(2, -1)
        rot = torch.cat((-x2, x1), -1)
    else:
        rot = torch.stack((-X[..., 1::2], X[..., 0::2]), -1).reshape(X.shape)
    return X * t64(c) + rot * t64(s)


@pytest.mark.parametrize("dt", FLOAT3, ids=did)
@pytest.mark.parametrize("mode", [0, 1], ids=["half", "interleave"])
def test_rope(dt, mode):
    rng = np.random.default_rng(15)
    B, S, N, D = 2, 5, 3, 16
    for xs, cs in (((B, S, N, D), (1, S, 1, D)),   # BSND with 1S1D (ggml-cann)
                   ((B, N, S, D), (1, 1, S, D)),   # BNSD with 11SD
                   ((S, B, N, D), (S, 1, 1, D)),   # SBND with S11D
                   ((B, N, S, D), (B, N, S, D)),
                   ((S * B, N, D), (S * B, 1, D))):  # TND with T1D
        x = rnd(xs, dt, rng)
        c, s = rnd(cs, dt, rng, -1, 1), rnd(cs, dt, rng, -1, 1)
        out = np.empty(xs, dt)
        aclnn.RotaryPositionEmbedding(x, c, s, mode, out)
        close(out, rope_ref(x, c, s, mode), dt, 2)
        out2 = strided(np.empty(xs, dt))
        aclnn.RotaryPositionEmbedding(strided(x), strided(c), s, mode, out2)
        same(out2, out)
    # in place (ggml-cann's contiguous in-place call)
    x = rnd((B, S, N, D), dt, rng)
    c, s = rnd((1, S, 1, D), dt, rng), rnd((1, S, 1, D), dt, rng)
    ref = np.empty_like(x)
    aclnn.RotaryPositionEmbedding(x, c, s, mode, ref)
    aclnn.RotaryPositionEmbedding(x, c, s, mode, x)
    same(x, ref)


def test_rope_errors():
    x = np.zeros((1, 2, 3, 8), np.float32)
    c = np.zeros((1, 2, 1, 8), np.float32)
    o = np.empty_like(x)
    r = aclnn.RotaryPositionEmbedding
    assert status(r, x, c.astype(F16), c, 0, o) == INVALID
    assert status(r, x, c, c, 0, o.astype(F16)) == INVALID
    assert status(r, x, c, c, 2, o) == TILING
    assert status(r, x, c, c, -1, o) == TILING
    assert status(r, x[0, 0], c[0, 0], c[0, 0], 0, o[0, 0]) == TILING
    assert status(r, x, c, c, 0, np.empty((1, 2, 3, 6), np.float32)) == TILING
    assert status(r, x, c, np.zeros((1, 1, 1, 8), np.float32), 0, o) == TILING
    assert status(r, x, np.zeros((1, 3, 1, 8), np.float32), np.zeros((1, 3, 1, 8), np.float32), 0, o) == TILING
    x7 = np.zeros((1, 2, 3, 7), np.float32)
    c7 = np.zeros((1, 2, 1, 7), np.float32)
    assert status(r, x7, c7, c7, 0, np.empty_like(x7)) == TILING
    x9 = np.zeros((1, 1, 1, 896), np.float32)
    assert status(r, x9, x9, x9, 0, np.empty_like(x9)) == TILING
    assert status(r, x, None, c, 0, o) == NULLPTR


# ---- losses -------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", FLOAT3, ids=did)
def test_softmax_cross_entropy(dt):
    rng = np.random.default_rng(16)
    f = rnd((6, 11), dt, rng, -5, 5)
    lb = rng.random((6, 11)).astype(np.float32)
    lb = (lb / lb.sum(1, keepdims=True)).astype(dt)
    loss, bp = np.empty(6, dt), np.empty((6, 11), dt)
    aclnn.SoftmaxCrossEntropyWithLogits(f, lb, loss, bp)
    F, L = t64(f), t64(lb)
    close(loss, -(L * torch.log_softmax(F, 1)).sum(1), dt, 2)
    close(bp, torch.softmax(F, 1) - L, dt, 2)
    loss2, bp2 = strided(np.empty(6, dt)), strided(np.empty((6, 11), dt))
    aclnn.SoftmaxCrossEntropyWithLogits(strided(f), lb, loss2, bp2)
    same(loss2, loss)
    same(bp2, bp)
    ce = aclnn.SoftmaxCrossEntropyWithLogits
    assert status(ce, f, lb, loss.astype(F64), bp) == INVALID
    assert status(ce, f, lb, loss, bp.astype(F64 if dt != F64 else F32)) == INVALID
    assert status(ce, f[0], lb[0], loss, bp[0]) == INVALID
    assert status(ce, f, lb[:5], loss, bp) == INVALID
    assert status(ce, f, lb, np.empty(5, dt), bp) == INVALID
    assert status(ce, f, None, loss, bp) == NULLPTR
    ce(np.empty((0, 3), dt), np.empty((0, 3), dt), np.empty(0, dt), np.empty((0, 3), dt))


def test_cross_entropy_ggml_pattern():
    """ggml-cann's CROSS_ENTROPY_LOSS: SoftmaxCrossEntropyWithLogits, ReduceSum of the per-row losses, Muls."""
    rng = np.random.default_rng(17)
    f = rnd((10, 7), F32, rng)
    lb = torch.softmax(torch.from_numpy(rnd((10, 7), F32, rng)), 1).numpy()
    loss, bp = np.empty(10, np.float32), np.empty((10, 7), np.float32)
    aclnn.SoftmaxCrossEntropyWithLogits(f, lb, loss, bp)
    total = np.empty(1, np.float32)
    aclnn.ReduceSum(loss, [0], False, pyaclnn.acl_dtype_of(np.float32), total)
    close(total[0] / 10, torch.nn.functional.cross_entropy(t64(f), t64(lb)), F32)


@pytest.mark.parametrize("dt", FLOAT3, ids=did)
@pytest.mark.parametrize("reduction", [0, 1, 2], ids=["none", "mean", "sum"])
@pytest.mark.parametrize("tdt", [np.int64, np.int32, np.uint8], ids=["s64", "s32", "u8"])
def test_nll_loss_and_backward(dt, reduction, tdt):
    rng = np.random.default_rng(18)
    name = ("none", "mean", "sum")[reduction]
    N, C = 7, 5
    x = rnd((N, C), dt, rng)
    w = rnd(C, dt, rng, 0.1, 2)
    ignore = 3 if tdt == np.uint8 else -100
    t = rng.integers(0, C, N).astype(tdt)
    t[2] = ignore
    out, tw = np.empty(N if reduction == 0 else 1, dt), np.full(1, 9, dt)
    aclnn.NLLLoss(x, t, w, reduction, ignore, out, tw)
    X = t64(x).requires_grad_()
    ref = torch.nn.functional.nll_loss(X, torch.from_numpy(t.astype(np.int64)), t64(w), reduction=name,
                                       ignore_index=ignore)
    close(out, ref.detach().reshape(out.shape), dt, 2)
    if reduction != 0:
        close(tw, [f64(w)[t[t != ignore].astype(np.int64)].sum()], dt)
    else:
        assert tw[0] == 9  # not written for reduction none (CANN)
    g = rnd(out.shape, dt, rng)
    ref.backward(t64(g).reshape(ref.shape))
    twin = np.array([f64(w)[t[t != ignore].astype(np.int64)].sum()], dt)
    gi = np.empty((N, C), dt)
    aclnn.NLLLossBackward(g, x, t, w, reduction, ignore, twin, gi)
    close(gi, X.grad, dt, 2)
    gi2 = strided(np.empty((N, C), dt))
    aclnn.NLLLossBackward(g, strided(x), strided(t), strided(w), reduction, ignore, twin, gi2)
    same(gi2, gi)
    # 1-D self with a 0-D target
    out1 = np.empty(1, dt)
    aclnn.NLLLoss(x[0], np.array(t[0]), w, reduction, ignore, out1, tw)
    ref1 = torch.nn.functional.nll_loss(t64(x[0]), torch.tensor(int(t[0])), t64(w), reduction=name,
                                        ignore_index=ignore)
    close(out1, ref1.reshape(1), dt)


def test_nll_loss_errors_and_targets():
    x = np.zeros((3, 4), np.float32)
    t = np.array([0, 1, 2], np.int64)
    w = np.ones(4, np.float32)
    o, tw = np.empty(1, np.float32), np.empty(1, np.float32)
    nl = aclnn.NLLLoss
    assert status(nl, x, t, None, 1, -100, o, tw) == NULLPTR  # weight is required (torch_npu passes ones)
    assert status(nl, x, t, w.astype(F16), 1, -100, o, tw) == INVALID
    assert status(nl, x, t.astype(np.int16), w, 1, -100, o, tw) == INVALID
    assert status(nl, x, t, w, 3, -100, o, tw) == INVALID
    assert status(nl, x, t, w, -1, -100, o, tw) == INVALID
    assert status(nl, x[None], t, w, 1, -100, o, tw) == INVALID
    assert status(nl, x, t[None], w, 1, -100, o, tw) == INVALID
    assert status(nl, x, t[:2], w, 1, -100, o, tw) == INVALID
    assert status(nl, x, t, np.ones(5, np.float32), 1, -100, o, tw) == INVALID
    assert status(nl, x, t, w, 0, -100, o, tw) == INVALID  # none over [N, C]: out [N]
    assert status(nl, x, t, w, 1, -100, np.empty(2, np.float32), tw) == INVALID
    assert status(nl, x, t, w, 1, -100, o, np.empty(2, np.float32)) == INVALID
    assert status(nl, x, t, w, 1, -100, o.astype(np.int32), tw) == INVALID
    # targets out of range fail the launch with nothing written
    for bad in (4, -1):
        o2, tw2 = np.full(1, 5, np.float32), np.full(1, 5, np.float32)
        assert status(nl, x, np.array([0, bad, 1], np.int64), w, 1, -100, o2, tw2) == RUNTIME
        assert o2[0] == 5 and tw2[0] == 5
        gi = np.full((3, 4), 5, np.float32)
        assert status(aclnn.NLLLossBackward, np.ones(1, np.float32), x, np.array([0, bad, 1], np.int64), w, 1,
                      -100, np.ones(1, np.float32), gi) == RUNTIME
        assert (gi == 5).all()
    # empty self: mean NaN, sum 0, totalWeight 0
    e = np.empty((0, 4), np.float32)
    for red, want in ((1, np.nan), (2, 0.0)):
        o2, tw2 = np.full(1, 5, np.float32), np.full(1, 5, np.float32)
        nl(e, np.empty(0, np.int64), w, red, -100, o2, tw2)
        assert (np.isnan(o2[0]) if red == 1 else o2[0] == want) and tw2[0] == 0
    nlb = aclnn.NLLLossBackward
    g1, tw1 = np.ones(1, np.float32), np.ones(1, np.float32)
    gi = np.empty((3, 4), np.float32)
    assert status(nlb, g1.astype(F16), x, t, w, 1, -100, tw1, gi) == INVALID
    assert status(nlb, g1, x, t, w, 1, -100, tw1.astype(F16), gi) == INVALID
    assert status(nlb, g1, x, t, w, 0, -100, tw1, gi) == INVALID  # none: gradOutput [N]
    assert status(nlb, g1, x, t, w, 1, -100, np.ones(2, np.float32), gi) == INVALID
    assert status(nlb, g1, x, t, w, 1, -100, tw1, np.empty((3, 5), np.float32)) == INVALID
    assert status(nlb, g1, x, t, w, 5, -100, tw1, gi) == INVALID


# ---- bits: threads and ISA tiers ---------------------------------------------------------

def _cases(dt, rng):
    """(name, args, outputs) for every op, odd sizes (partial 64-lane blocks, several chunks)."""
    R, C = 37, 1000 + 13
    x, y, z = rnd((R, C), dt, rng, -6, 6), rnd((R, C), dt, rng, -6, 6), rnd((R, C), dt, rng, -6, 6)
    g = rnd(C, dt, rng, 0.5, 1.5)
    sm = torch.softmax(torch.from_numpy(x.astype(np.float32)), -1).numpy().astype(dt)
    e = lambda shape, d=dt: np.empty(shape, d)  # noqa: E731
    rs = (1 / np.sqrt((f64(x) ** 2).mean(-1) + 1e-6)).astype(np.float32)
    mean = f64(x).mean(-1).astype(np.float32)[:, None]
    t = rng.integers(0, C, R).astype(np.int64)
    cases = [
        ("Softmax", [x, -1, e((R, C))]), ("Softmax", [x, 0, e((R, C))]), ("LogSoftmax", [x, 1, e((R, C))]),
        ("SoftmaxBackward", [y, sm, -1, e((R, C))]), ("LogSoftmaxBackward", [y, np.log(sm + 1e-3).astype(dt), -1,
                                                                             e((R, C))]),
        ("RmsNorm", [x, g, 1e-6, e((R, C)), e(R, F32)]),
        ("AddRmsNorm", [x, y, g, 1e-6, e((R, C)), e(R, F32), e((R, C))]),
        ("RmsNormGrad", [y, x, rs, g, e((R, C)), e(C, F32)]),
        ("LayerNorm", [x, [C], g, g, 1e-5, e((R, C)), e((R, 1), F32), e((R, 1), F32)]),
        ("LayerNormBackward", [y, x, [C], mean, rs[:, None], g, None, [True] * 3, e((R, C)), e(C, F32), e(C)]),
        ("GroupNorm", [x.reshape(R, 1, C), None, None, R, 1, C, 1, 1e-5, e((R, 1, C)), e((R, 1)), e((R, 1))]),
        ("SwiGlu", [x[:, :1012], 1, e((R, 506))]), ("GeGluV3", [x[:, :1012], 1, 0, True, e((R, 506)), e((R, 506))]),
        ("GeGluV3", [x[:, :1012], 1, 1, False, e((R, 506)), e((R, 506))]),
        ("RotaryPositionEmbedding", [x[:, :512].reshape(R, 4, 1, 128), y[:1, :128].reshape(1, 1, 1, 128),
                                     z[:1, :128].reshape(1, 1, 1, 128), 0, e((R, 4, 1, 128))]),
        ("RotaryPositionEmbedding", [x[:, :512].reshape(R, 4, 1, 128), y[:, :128].reshape(R, 1, 1, 128),
                                     z[:, :128].reshape(R, 1, 1, 128), 1, e((R, 4, 1, 128))]),
        ("SoftmaxCrossEntropyWithLogits", [x, sm, e(R), e((R, C))]),
        ("NLLLoss", [x, t, g, 1, -100, e(1), e(1)]),
        ("NLLLossBackward", [y[:1, :1].reshape(1), x, t, g, 1, -100, np.ones(1, dt), e((R, C))]),
    ]
    return cases


@pytest.mark.parametrize("dt", FLOAT3, ids=did)
def test_bits_across_threads_and_tiers(dt, restore_runtime_knobs):
    ref = None
    for tier in supported_tiers():
        for threads in (1, 2, 3):
            pyaclnn.set_max_isa(tier)
            pyaclnn.set_num_threads(threads)
            cases = _cases(dt, np.random.default_rng(19))
            got = []
            for name, args in cases:
                r = aclnn.call(name, *args)
                got.append(b"".join(bits(a) for a in (r if isinstance(r, tuple) else (r,))))
            if ref is None:
                ref = got
            else:
                for (name, _), a, b in zip(cases, got, ref):
                    assert a == b, (name, tier, threads)


def test_big_rows_cross_chunks_bitwise(restore_runtime_knobs):
    """Rows longer than a chunk's share of scratch, and many rows: fp32 softmax / norms at 1 and 2 threads."""
    rng = np.random.default_rng(20)
    x = rnd((3, 70000), F32, rng)
    outs = []
    for threads in (1, 2):
        pyaclnn.set_num_threads(threads)
        o = np.empty_like(x)
        aclnn.Softmax(x, -1, o)
        y, r = np.empty_like(x), np.empty(3, np.float32)
        aclnn.RmsNorm(x, np.ones(70000, np.float32), 1e-6, y, r)
        outs.append((o, y, r))
    close(outs[0][0], torch.softmax(t64(x), -1), F32)
    for a, b in zip(outs[0], outs[1]):
        same(a, b)


@pytest.mark.parametrize("dt", [F32, BF16], ids=did)
def test_streamed_outputs_same_bits(dt):
    """Outputs of 8 MiB and more are written with non-temporal stores: the same bits as smaller ones."""
    rng = np.random.default_rng(21)
    rows = (8 << 20) // (2048 * dt.itemsize)
    x = rnd((rows, 2048), dt, rng)
    g = rnd(2048, dt, rng, 0.5, 1.5)
    half = rows // 2
    for name, extra in (("Softmax", None), ("RmsNorm", None), ("LayerNorm", None)):
        def run(a):
            y = np.empty(a.shape, dt)
            if name == "Softmax":
                aclnn.Softmax(a, -1, y)
            elif name == "RmsNorm":
                aclnn.RmsNorm(a, g, 1e-6, y, np.empty(a.shape[0], np.float32))
            else:
                aclnn.LayerNorm(a, [2048], g, g, 1e-5, y, None, None)
            return y
        whole = run(x)
        same(whole[:half], run(x[:half]))
        same(whole[half:], run(x[half:]))


def test_through_torch_npu(home):
    """torch_npu's aten ops (softmax, log_softmax, native_layer_norm(_backward), nll_loss(_backward),
    cross_entropy) reach these operators and match torch CPU (tests/torch_npu/nn_ops.py)."""
    from torch_npu_env import SCRIPTS, error_lines, require_torch_npu, run_script
    require_torch_npu()
    proc = run_script(home, SCRIPTS / "nn_ops.py", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if "max err" in ln]
    assert len(lines) == 12 and all(" OK " in ln for ln in lines), proc.stdout
    assert proc.stdout.rstrip().endswith("DONE"), proc.stdout
    assert not error_lines(proc.stderr), proc.stderr


def test_bf16_denormal_outputs_across_tiers(restore_runtime_knobs):
    """Softmax outputs below 2^-126 round to bf16 denormals on every tier (AVX512_BF16's
    vcvtneps2bf16 would flush them: vectors holding one take the integer path)."""
    x = np.zeros((3, 100), np.float32)
    x[:, 4:] = np.where(np.arange(96) % 2 == 0, -86.5, -86.0)  # exp / 4 below 2^-126
    x = x.astype(BF16)
    got = {}
    for tier in supported_tiers():
        pyaclnn.set_max_isa(tier)
        y = np.empty(x.shape, BF16)
        aclnn.Softmax(x, -1, y)
        got[tier] = bits(y)
    assert len(set(got.values())) == 1, list(got)
    y = np.frombuffer(got["scalar"], np.uint16).reshape(x.shape)
    assert ((y[:, 4:] & 0x7f80) == 0).all() and (y[:, 4:] != 0).all()  # denormal, not flushed
