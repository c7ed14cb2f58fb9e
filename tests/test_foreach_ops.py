"""The foreach family (native/ops/foreach/) through the C entry points
(pyaclnn.aclnn), against torch CPU's torch._foreach_* (in float64, the
scalar rounded as CANN converts it) and torch.optim (the optimizer math):
every list operator on lists of 12-50 tensors of mixed shapes (0-d, empty,
strided and transposed views included) in every listed dtype, in place and
out of place; ForeachNorm, the AMP pair (NonFiniteCheckAndUnscale,
AmpUpdateScale) and ApplyAdamWV2 against torch's own ops; results that do not
depend on the thread count; and each error path with its status code."""
import math

import ml_dtypes
import numpy as np
import pytest
import torch

import pyaclnn
from pyaclnn import AclError, aclnn, optable

BF16 = np.dtype(ml_dtypes.bfloat16)
NP = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": BF16, "f64": np.dtype(np.float64),
      "s8": np.dtype(np.int8), "u8": np.dtype(np.uint8), "s16": np.dtype(np.int16), "u16": np.dtype(np.uint16),
      "s32": np.dtype(np.int32), "u32": np.dtype(np.uint32), "s64": np.dtype(np.int64), "bool": np.dtype(bool)}
OPS = optable.by_name()
NULLPTR, INVALID, RUNTIME, TILING = 161001, 161002, 361001, 561002
TOL = {np.dtype(np.float64): (1e-12, 1e-12), np.dtype(np.float32): (3e-6, 1e-6), np.dtype(np.float16): (2e-3, 1e-3), BF16: (1.6e-2, 1e-2)}
SHAPES = [(3, 4), (7,), (), (2, 3, 5), (1,), (0,), (4, 4), (5, 1, 2), (33,), (2, 0, 3), (6, 6), (1, 1, 1)]


def status(fn, *args):
    with pytest.raises(AclError) as e:
        fn(*args)
    return e.value.status, str(e.value)


def dtypes_of(name):
    return [NP[d] for d in OPS[name].ins.split() if d in NP]


def values(dt, shape, rng, lo=-3.0, hi=3.0):
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else lo
        return rng.integers(int(lo), int(hi) + 1, shape).astype(dt)
    return rng.uniform(lo, hi, shape).astype(dt)


def tlist(dt, n, rng, lo=-3.0, hi=3.0, views=True):
    """n tensors of the mixed SHAPES; two of them strided / transposed views."""
    out = []
    for i in range(n):
        shape = SHAPES[i % len(SHAPES)]
        a = values(dt, shape, rng, lo, hi)
        if views and i == 1:
            base = np.zeros((a.shape[0] * 2,), dt)
            base[::2] = a
            a = base[::2]
        if views and i == 6:
            a = np.ascontiguousarray(a.T).T
        out.append(a)
    return out


def like(xs):
    return [np.zeros_like(x) for x in xs]


def f64(xs):
    return [torch.from_numpy(np.asarray(x, np.float64).copy()) for x in xs]


def scalar_as(s, dt):
    """The scalar as CANN converts it: fp16 lists round it to fp16, the others keep fp32."""
    if dt == np.dtype(np.float16):
        return float(np.float16(s))
    if dt.kind == "f" or dt == BF16:
        return float(np.float32(s))
    return s


def check(got, ref, dt):
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        r = r.numpy() if isinstance(r, torch.Tensor) else np.asarray(r)
        assert g.shape == r.shape
        if dt.kind in "iub":  # integer results wrap to the dtype
            np.testing.assert_array_equal(g, np.asarray(r, np.float64).astype(np.int64).astype(dt))
        else:
            rtol, atol = TOL[dt]
            want = r.astype(dt).astype(np.float64)  # rounded once to the dtype
            np.testing.assert_allclose(g.astype(np.float64), want, rtol=rtol, atol=atol, equal_nan=True)


# ---- unary ------------------------------------------------------------------------

UNARY = {"Abs": (torch._foreach_abs, -3, 3), "Neg": (torch._foreach_neg, -3, 3), "Exp": (torch._foreach_exp, -3, 3),
         "Expm1": (torch._foreach_expm1, -3, 3), "Log": (torch._foreach_log, 0.1, 5),
         "Log2": (torch._foreach_log2, 0.1, 5), "Log10": (torch._foreach_log10, 0.1, 5),
         "Log1p": (torch._foreach_log1p, -0.5, 5), "Sin": (torch._foreach_sin, -3, 3),
         "Cos": (torch._foreach_cos, -3, 3), "Tan": (torch._foreach_tan, -1.2, 1.2),
         "Tanh": (torch._foreach_tanh, -3, 3), "Erf": (torch._foreach_erf, -3, 3),
         "Sigmoid": (torch._foreach_sigmoid, -5, 5), "Sign": (torch._foreach_sign, -3, 3),
         "Reciprocal": (torch._foreach_reciprocal, 0.5, 4), "Sqrt": (torch._foreach_sqrt, 0, 9),
         "Copy": (lambda xs: [x.clone() for x in xs], -3, 3)}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    fn, lo, hi = UNARY[name]
    rng = np.random.default_rng(len(name))
    for dt in dtypes_of("Foreach" + name):
        xs = tlist(dt, 14, rng, lo, hi)
        outs = like(xs)
        getattr(aclnn, "Foreach" + name)(xs, outs)
        if dt.kind in "iu" and name in ("Exp", "Expm1"):
            ref = [torch.trunc(r) for r in fn(f64(xs))]  # fp32 math, truncated into the integer dtype
            ref = [np.clip(r.numpy(), np.iinfo(dt).min, np.iinfo(dt).max) for r in ref]
            for g, r in zip(outs, ref):
                np.testing.assert_allclose(g.astype(np.float64), r, atol=1)
            continue
        check(outs, fn(f64(xs)), dt)
        # in place
        ys = [x.copy() for x in xs]
        getattr(aclnn, "Foreach" + name)(ys, ys)
        check(ys, fn(f64(xs)), dt)


def test_zero_inplace():
    rng = np.random.default_rng(1)
    for dt in dtypes_of("ForeachZeroInplace"):
        xs = tlist(dt, 13, rng)
        aclnn.ForeachZeroInplace(xs)
        assert all(not x.astype(np.float64).any() for x in xs)


# ---- scalar forms -------------------------------------------------------------------

BINARY = {"Add": torch._foreach_add, "Sub": torch._foreach_sub, "Mul": torch._foreach_mul,
          "Div": torch._foreach_div, "Maximum": torch._foreach_maximum, "Minimum": torch._foreach_minimum,
          "Pow": torch._foreach_pow}


def domain(name, dt):
    if name == "Pow":
        return (0.5, 2.0) if dt.kind == "f" or dt == BF16 else (0, 3)
    return (-3, 3)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_scalar_forms(name):
    fn = BINARY[name]
    rng = np.random.default_rng(len(name) + 10)
    for form in ("Scalar", "ScalarV2", "ScalarList"):
        op = "Foreach" + name + form
        for dt in dtypes_of(op):
            lo, hi = domain(name, dt)
            xs = tlist(dt, 20, rng, lo, hi)
            integer = dt.kind in "iu"
            s = 2 if integer else 1.7
            outs = like(xs)
            if form == "Scalar":
                getattr(aclnn, op)(xs, np.array([s], np.float32 if not integer else np.int32), outs)
                ref = fn(f64(xs), scalar_as(s, dt))
            elif form == "ScalarV2":
                getattr(aclnn, op)(xs, s, outs)
                ref = fn(f64(xs), scalar_as(s, dt))
            else:
                ss = [(k % 3) + 1 if integer else 0.5 + 0.25 * k for k in range(len(xs))]
                getattr(aclnn, op)(xs, ss, outs)
                ref = fn(f64(xs), [scalar_as(v, dt) for v in ss])
            if integer and name == "Sub":
                ref = [r.numpy() for r in ref]
            check(outs, ref, dt)


def test_scalar_rounding_follows_the_list_dtype():
    """fp16 lists take the scalar in fp16, bf16 lists in fp32 (CANN converts it so)."""
    x16 = [np.ones(8, np.float16)]
    o16 = like(x16)
    aclnn.ForeachMulScalarV2(x16, 1.0009765625 + 2 ** -12, o16)  # rounds to 1.0009765625 in fp16
    assert (o16[0] == np.float16(1.0009765625)).all()
    xb = [np.full(8, 256, BF16)]
    ob = like(xb)
    aclnn.ForeachAddScalarV2(xb, 1.5, ob)  # 257.5 rounds to 258 in bf16 (256 + bf16(1.5) would too)
    aclnn.ForeachAddScalarV2(xb, 0.75, ob)
    assert (ob[0].astype(np.float32) == 256).all()  # 256.75 -> 256 (bf16 has 8 bits)
    aclnn.ForeachMulScalarV2([np.full(8, 3, BF16)], 1.0 / 3, ob)  # fp32 1/3 * 3 rounds to 1 in bf16
    assert (ob[0].astype(np.float32) == 1).all()


# ---- list forms ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["Mul", "Div", "Maximum", "Minimum", "Pow", "Add", "AddV2", "Sub", "SubV2"])
def test_list_forms(name):
    base = name.replace("V2", "")
    op = "Foreach%sList%s" % (base, "V2" if name.endswith("V2") else "")
    fn = BINARY[base]
    rng = np.random.default_rng(len(name) + 20)
    for dt in dtypes_of(op):
        lo, hi = domain(base, dt)
        x1, x2 = tlist(dt, 16, rng, lo, hi), tlist(dt, 16, rng, 0.5 if base == "Div" else lo, hi)
        integer = dt.kind in "iu"
        outs = like(x1)
        if base in ("Add", "Sub"):
            alpha = 2 if integer else 0.75
            a = np.array([alpha], np.int32 if integer else np.float32) if op.endswith("List") else alpha
            getattr(aclnn, op)(x1, x2, a, outs)
            ref = fn(f64(x1), f64(x2), alpha=scalar_as(alpha, dt))
        else:
            getattr(aclnn, op)(x1, x2, outs)
            ref = fn(f64(x1), f64(x2))
        check(outs, ref, dt)
        # in place into x1
        y1 = [x.copy() for x in x1]
        if base in ("Add", "Sub"):
            getattr(aclnn, op)(y1, x2, a, y1)
        else:
            getattr(aclnn, op)(y1, x2, y1)
        check(y1, ref, dt)


@pytest.mark.parametrize("name", ["Addcmul", "Addcdiv"])
def test_addcmul_addcdiv(name):
    fn = getattr(torch, "_foreach_" + name.lower())
    rng = np.random.default_rng(len(name) + 30)
    for form in ("Scalar", "ScalarV2", "ScalarList", "List"):
        op = "Foreach" + name + form
        for dt in dtypes_of(op):
            integer = dt.kind in "iu"
            x1, x2 = tlist(dt, 24, rng), tlist(dt, 24, rng)
            x3 = tlist(dt, 24, rng, 0.5, 3) if name == "Addcdiv" else tlist(dt, 24, rng)
            outs = like(x1)
            s = 2 if integer else 0.3
            if form == "Scalar":
                getattr(aclnn, op)(x1, x2, x3, np.array([s], np.float32), outs)
                ref = fn(f64(x1), f64(x2), f64(x3), value=scalar_as(s, dt))
            elif form == "ScalarV2":
                getattr(aclnn, op)(x1, x2, x3, s, outs)
                ref = fn(f64(x1), f64(x2), f64(x3), value=scalar_as(s, dt))
            else:
                ss = np.array([k % 3 + 1 if integer else 0.1 * (k + 1) for k in range(24)],
                              np.int32 if integer else np.float32)
                getattr(aclnn, op)(x1, x2, x3, ss, outs)
                ref = fn(f64(x1), f64(x2), f64(x3), [scalar_as(float(v), dt) for v in ss])
            check(outs, ref, dt)


def test_lerp():
    rng = np.random.default_rng(40)
    for dt in dtypes_of("ForeachLerpScalar"):
        x1, x2 = tlist(dt, 24, rng), tlist(dt, 24, rng)
        outs = like(x1)
        aclnn.ForeachLerpScalar(x1, x2, 0.1, outs)
        check(outs, torch._foreach_lerp(f64(x1), f64(x2), float(np.float32(0.1))), dt)
        ref9 = torch._foreach_lerp(f64(x1), f64(x2), float(np.float32(0.9)))
        aclnn.ForeachLerpScalar(x1, x2, 0.9, x1)  # in place, the weight >= 0.5 branch
        check(x1, ref9, dt)
        w = [values(dt, x.shape, rng, 0, 1) for x in x2]
        o2 = like(x2)
        aclnn.ForeachLerpList(outs, x2, w, o2)
        check(o2, torch._foreach_lerp(f64(outs), f64(x2), f64(w)), dt)


# ---- norm, AMP ---------------------------------------------------------------------------

@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, math.inf, 0.0])
def test_norm(p):
    rng = np.random.default_rng(50)
    for dt in dtypes_of("ForeachNorm"):
        xs = tlist(dt, 24, rng)
        outs = [np.zeros(1 if i % 2 else (), dt) for i in range(len(xs))]
        aclnn.ForeachNorm(xs, p, outs)
        # torch refuses the inf-norm of an empty tensor; pyaclnn gives 0 (its max of nothing)
        ref = [torch.linalg.vector_norm(x, p) if x.numel() or p != math.inf else torch.tensor(0.0, dtype=x.dtype)
               for x in f64(xs)]
        check([o.reshape(()) for o in outs], ref, dt)
    aclnn.ForeachNorm([np.ones(4, np.float32)], aclnn.scalar(2, np.int64), [np.zeros(1, np.float32)])


def test_non_finite_check_and_unscale():
    rng = np.random.default_rng(60)
    for dt in dtypes_of("ForeachNonFiniteCheckAndUnscale"):
        for bad in (None, np.inf, -np.inf, np.nan):
            gs = tlist(dt, 30, rng, views=False)
            if bad is not None:
                gs[16].reshape(-1)[0] = bad
            found, inv = np.zeros(1, np.float32), np.array([1 / 1024], np.float32)
            tg = [torch.from_numpy(g.astype(np.float32)) for g in gs]
            tf, ti = torch.zeros(1), torch.tensor([1 / 1024])
            torch._amp_foreach_non_finite_check_and_unscale_(tg, tf, ti)
            aclnn.ForeachNonFiniteCheckAndUnscale(gs, found, inv)
            assert found[0] == tf[0] == (0 if bad is None else 1)
            check(gs, [t.double() for t in tg], dt)
    # found_inf is only ever set, never cleared
    found = np.ones(1, np.float32)
    aclnn.ForeachNonFiniteCheckAndUnscale([np.ones(3, np.float32)], found, np.ones(1, np.float32))
    assert found[0] == 1


@pytest.mark.parametrize("dt", [np.dtype(np.float32), np.dtype(np.float16), BF16])
def test_amp_update_scale(dt):
    for found_v, tracker_v, interval in [(0, 0, 3), (0, 2, 3), (1, 2, 3), (np.nan, 1, 3), (0, 0, 1)]:
        for shape in ((), (1,)):
            scale, tracker = np.full(shape, 1024, dt), np.full(shape, tracker_v, np.int32)
            found = np.full(shape, found_v, dt)
            ts, tt, tf = torch.full(shape, 1024.0), torch.full(shape, tracker_v, dtype=torch.int32), \
                torch.full(shape, float(found_v))
            torch._amp_update_scale_(ts, tt, tf, 2.0, 0.5, interval)
            aclnn.AmpUpdateScale(scale, tracker, found, 2.0, 0.5, interval, scale, tracker)
            assert float(scale.reshape(-1)[0]) == ts.item() and int(tracker.reshape(-1)[0]) == tt.item()
    # growth that overflows fp32 keeps the scale
    scale, tracker = np.array([3e38], np.float32), np.array([0], np.int32)
    us, ut = np.zeros(1, np.float32), np.full(1, 9, np.int32)
    aclnn.AmpUpdateScale(scale, tracker, np.zeros(1, np.float32), 2.0, 0.5, 1, us, ut)
    assert us[0] == np.float32(3e38) and ut[0] == 0


# ---- ApplyAdamWV2 --------------------------------------------------------------------------

def adamw_ref(var, m, v, g, step, lr, b1, b2, wd, eps, amsgrad, maximize, mx=None):
    """torch.optim.AdamW's single-tensor step in float64 (the oracle of the math)."""
    p = torch.nn.Parameter(torch.from_numpy(var.astype(np.float64)))
    opt = torch.optim.AdamW([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd, amsgrad=amsgrad,
                            maximize=maximize, foreach=False)
    st = opt.state[p]
    st["step"] = torch.tensor(float(step))
    st["exp_avg"] = torch.from_numpy(m.astype(np.float64))
    st["exp_avg_sq"] = torch.from_numpy(v.astype(np.float64))
    if amsgrad:
        st["max_exp_avg_sq"] = torch.from_numpy(mx.astype(np.float64))
    p.grad = torch.from_numpy(g.astype(np.float64))
    opt.step()
    out = [p.detach().numpy(), st["exp_avg"].numpy(), st["exp_avg_sq"].numpy()]
    return out + ([st["max_exp_avg_sq"].numpy()] if amsgrad else [])


@pytest.mark.parametrize("amsgrad,maximize", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dt,gdt", [("f32", "f32"), ("f16", "f16"), ("bf16", "bf16"), ("f32", "bf16")])
def test_apply_adamw_v2(amsgrad, maximize, dt, gdt):
    dt, gdt = NP[dt], NP[gdt]
    rng = np.random.default_rng(70)
    shape = (37, 5)
    var, m = values(dt, shape, rng), values(dt, shape, rng, -0.1, 0.1)
    v = values(dt, shape, rng, 0, 0.1)
    mx = (v.astype(np.float64) + values(dt, shape, rng, 0, 0.05)).astype(dt) if amsgrad else None
    g = values(gdt, shape, rng)
    hp = dict(lr=1e-2, b1=0.9, b2=0.999, wd=0.01, eps=1e-8)
    for step in (0, 6):  # the kernel adds 1 (torch_npu passes step - 1)
        ref = adamw_ref(var, m, v, g, step, amsgrad=amsgrad, maximize=maximize, mx=mx, **hp)
        a = [var.copy(), m.copy(), v.copy(), mx.copy() if amsgrad else None]
        aclnn.ApplyAdamWV2(a[0], a[1], a[2], a[3], g, np.array([step], np.float32), hp["lr"], hp["b1"], hp["b2"],
                           hp["wd"], hp["eps"], amsgrad, maximize)
        rtol, atol = {np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float16): (2e-3, 2e-3),
                      BF16: (1.6e-2, 1e-2)}[dt]
        for got, want in zip([x for x in a if x is not None], ref):
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol)
    # an int64 step, strided operands
    big = np.zeros((37, 10), dt)
    big[:, ::2] = var
    w = big[:, ::2]
    mm, vv = m.copy(), v.copy()
    aclnn.ApplyAdamWV2(w, mm, vv, mx.copy() if amsgrad else None, g, np.array([6], np.int64), hp["lr"], hp["b1"],
                       hp["b2"], hp["wd"], hp["eps"], amsgrad, maximize)
    ref = adamw_ref(var, m, v, g, 6, amsgrad=amsgrad, maximize=maximize, mx=mx, **hp)
    np.testing.assert_allclose(w.astype(np.float64), ref[0], rtol=rtol, atol=atol)
    assert not big[:, 1::2].astype(np.float64).any()


def test_foreach_adamw_step_matches_torch_optim():
    """The foreach AdamW of torch.optim, op for op as torch_npu runs it (the list ops of
    _multi_tensor_adamw), on 28 mixed-shape fp32 parameters, against torch.optim on CPU."""
    rng = np.random.default_rng(80)
    ps = tlist(np.dtype(np.float32), 28, rng, views=False)
    gs = [tlist(np.dtype(np.float32), 28, rng, views=False) for _ in range(3)]
    lr, b1, b2, eps, wd = 1e-2, 0.9, 0.999, 1e-8, 0.01
    tp = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in ps]
    opt = torch.optim.AdamW(tp, lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd, foreach=True)
    m, v = like(ps), like(ps)
    for step, g in enumerate(gs, start=1):
        for t, gi in zip(tp, g):
            t.grad = torch.from_numpy(gi.copy())
        opt.step()
        aclnn.ForeachMulScalarV2(ps, 1 - lr * wd, ps)
        aclnn.ForeachLerpScalar(m, g, 1 - b1, m)
        aclnn.ForeachMulScalarV2(v, b2, v)
        aclnn.ForeachAddcmulScalarV2(v, g, g, 1 - b2, v)
        bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
        den = like(v)
        aclnn.ForeachSqrt(v, den)
        aclnn.ForeachDivScalarList(den, [math.sqrt(bc2)] * len(ps), den)
        aclnn.ForeachAddScalarV2(den, eps, den)
        for p, mi, d in zip(ps, m, den):  # _foreach_addcdiv_.ScalarList: torch_npu's slow path, one op per tensor
            aclnn.InplaceAddcdiv(p, mi, d, -lr / bc1)
    for p, t in zip(ps, tp):
        np.testing.assert_allclose(p, t.detach().numpy(), rtol=2e-6, atol=2e-7)


# ---- determinism, sizes ---------------------------------------------------------------------

def test_results_do_not_depend_on_threads(restore_runtime_knobs):
    rng = np.random.default_rng(90)
    big = [values(np.dtype(np.float32), (300, 1000), rng), values(np.dtype(np.float16), (123457,), rng)]
    outs = []
    for threads in (1, 2, 3):
        pyaclnn.set_num_threads(threads)
        r = []
        for x in big:
            o = [np.zeros_like(x)]
            aclnn.ForeachAddcmulScalarV2([x], [x], [x], 0.5, o)
            n = [np.zeros(1, x.dtype)]
            aclnn.ForeachNorm([x], 2.0, n)
            r.append(o[0].tobytes() + n[0].tobytes())
        var, m, v = big[0].copy(), big[0] * 0, big[0] * 0
        aclnn.ApplyAdamWV2(var, m, v, None, big[0], np.array([3.0], np.float32), 1e-3, 0.9, 0.999, 0.01, 1e-8,
                           False, False)
        r.append(var.tobytes())
        outs.append(b"".join(r))
    assert len(set(outs)) == 1


def test_long_and_empty_lists():
    rng = np.random.default_rng(91)
    xs = tlist(np.dtype(np.float32), 256, rng, views=False)
    outs = like(xs)
    aclnn.ForeachMulScalarV2(xs, 2.0, outs)
    check(outs, torch._foreach_mul(f64(xs), 2.0), np.dtype(np.float32))
    code, msg = status(aclnn.ForeachMulScalarV2, xs + [xs[0]], 2.0, outs + [outs[0]])
    assert code == INVALID and "at most 256" in msg
    aclnn.ForeachMulScalarV2([], 2.0, [])
    aclnn.ForeachNorm([], 2.0, [])
    aclnn.ForeachNonFiniteCheckAndUnscale([], np.zeros(1, np.float32), np.ones(1, np.float32))


# ---- errors ---------------------------------------------------------------------------------

def test_list_errors():
    f32 = np.dtype(np.float32)
    x = [np.ones(3, np.float32), np.ones((2, 2), np.float32)]
    # lengths: hand-written operators 161002, generated ones 561002 (CANN's tiling error)
    code, msg = status(aclnn.ForeachAddScalarV2, x, 1.0, like(x)[:1])
    assert code == INVALID and "as long" in msg
    code, msg = status(aclnn.ForeachAddScalarList, x, [1.0], like(x))
    assert code == TILING and "scalars" in msg
    code, msg = status(aclnn.ForeachMaximumList, x, x[:1], like(x))
    assert code == TILING and "as long" in msg
    # dtypes: every tensor of the first one's
    code, msg = status(aclnn.ForeachAddScalarV2, [x[0], x[1].astype(np.float16)], 1.0, like(x))
    assert code == INVALID and "x[1] dtype" in msg
    code, msg = status(aclnn.ForeachAddScalarV2, x, 1.0, [like(x)[0], np.zeros((2, 2), np.float16)])
    assert code == INVALID and "out[1] dtype" in msg
    code, msg = status(aclnn.ForeachSqrt, [np.ones(3, np.int32)], [np.ones(3, np.int32)])
    assert code == INVALID and "dtype" in msg
    # the scalar's dtype for the lists' (V2 operators)
    x16 = [np.ones(3, np.float16)]
    code, msg = status(aclnn.ForeachMulScalarV2, x16, aclnn.scalar(2, np.float32), like(x16))
    assert code == INVALID and "FLOAT16 or DOUBLE" in msg
    aclnn.ForeachMulScalarV2(x16, aclnn.scalar(2, np.float16), like(x16))
    code, msg = status(aclnn.ForeachAddScalarV2, x, 1, like(x))
    assert code == INVALID and "FLOAT or DOUBLE" in msg
    code, msg = status(aclnn.ForeachAddScalarV2, [np.ones(3, np.int32)], 1.5, [np.ones(3, np.int32)])
    assert code == INVALID and "INT32 or INT64" in msg
    code, msg = status(aclnn.ForeachLerpScalar, x16, x16, aclnn.scalar(0.5, np.float16), like(x16))
    assert code == INVALID and "FLOAT or DOUBLE" in msg
    # shapes
    code, msg = status(aclnn.ForeachAddScalarV2, x, 1.0, [np.ones(4, np.float32), np.ones((2, 2), np.float32)])
    assert code == INVALID and "out[0] shape [4]" in msg
    code, msg = status(aclnn.ForeachMulList, x, [x[0], np.ones((2, 3), np.float32)], like(x))
    assert code == INVALID and "x2[1] shape" in msg
    code, msg = status(aclnn.ForeachPowList, x, [x[0], np.ones((2, 3), np.float32)], like(x))
    assert code == TILING and "x2[1] shape" in msg
    code, msg = status(aclnn.ForeachNorm, x, 2.0, [np.zeros(1, np.float32), np.zeros(2, np.float32)])
    assert code == TILING and "one element" in msg
    code, msg = status(aclnn.ForeachNorm, x, aclnn.scalar(2, np.int32), [np.zeros(1, np.float32)] * 2)
    assert code == INVALID and "scalar dtype" in msg
    # device-tensor scalars
    code, msg = status(aclnn.ForeachAddScalar, x, np.ones(2, np.float32), like(x))
    assert code == TILING and "one element" in msg
    code, msg = status(aclnn.ForeachAddcdivScalarList, x, x, x, np.ones(3, np.float32), like(x))
    assert code == INVALID and "one per list element" in msg
    # NULL list members (the shared check)
    code, msg = status(aclnn.ForeachNonFiniteCheckAndUnscale, x, np.zeros(2, np.float32), np.ones(1, np.float32))
    assert code == TILING and "foundInf" in msg
    assert f32 == np.dtype(np.float32)


def test_adamw_and_amp_errors():
    v = np.zeros((3, 4), np.float32)
    args = lambda **kw: [kw.get("var", v.copy()), kw.get("m", v.copy()), kw.get("v", v.copy()), kw.get("mx"),
                         kw.get("g", v.copy()), kw.get("step", np.zeros(1, np.float32)), 1e-3, 0.9, 0.999, 0.0,
                         1e-8, kw.get("ams", False), False]
    code, msg = status(aclnn.ApplyAdamWV2, *args(ams=True))
    assert code == NULLPTR and "maxGradNormOptionalRef" in msg
    code, msg = status(aclnn.ApplyAdamWV2, *args(m=np.zeros((4, 3), np.float32)))
    assert code == INVALID and "mRef shape" in msg
    code, msg = status(aclnn.ApplyAdamWV2, *args(g=np.zeros(12, np.float32)))
    assert code == INVALID and "grad shape" in msg
    code, msg = status(aclnn.ApplyAdamWV2, *args(step=np.zeros(2, np.float32)))
    assert code == INVALID and "step" in msg
    code, msg = status(aclnn.ApplyAdamWV2, *args(step=np.zeros(1, np.int32)))
    assert code == INVALID and "step dtype" in msg
    aclnn.ApplyAdamWV2(*args(var=np.zeros((0, 4), np.float32), m=np.zeros((0, 4), np.float32),
                             v=np.zeros((0, 4), np.float32), g=np.zeros((0, 4), np.float32)))
    one, t = np.ones(1, np.float32), np.zeros(1, np.int32)
    code, msg = status(aclnn.AmpUpdateScale, one, t, np.zeros(1, np.float16), 2.0, 0.5, 1, one, t)
    assert code == INVALID and "foundInf dtype" in msg
    code, msg = status(aclnn.AmpUpdateScale, one, t, one, 2.0, 0.5, 1, np.ones(1, np.float16), t)
    assert code == INVALID and "updatedScale dtype" in msg
    code, msg = status(aclnn.AmpUpdateScale, one, np.zeros(1, np.int64), one, 2.0, 0.5, 1, one, t)
    assert code == INVALID and "growthTracker dtype" in msg
    code, msg = status(aclnn.AmpUpdateScale, np.ones(2, np.float32), t, one, 2.0, 0.5, 1, one, t)
    assert code == TILING and "one element" in msg
    for interval in (0, 2 ** 31):
        code, msg = status(aclnn.AmpUpdateScale, one, t, one, 2.0, 0.5, interval, one, t)
        assert code == TILING and "growthInterval" in msg
