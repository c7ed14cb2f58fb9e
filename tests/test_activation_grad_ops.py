"""The activation gradients of the map family (aclnnGeluBackward, GeluBackwardV2,
SiluBackward, TanhBackward, SigmoidBackward, ThresholdBackward, LeakyReluBackward,
HardswishBackward, HardsigmoidBackward, HardtanhBackward, SoftplusBackward,
EluBackward, MishBackward) and aclnnStack, through their C entry points
(pyaclnn.aclnn), against torch's CPU backward in float64 (torch.ops.aten.*_backward
and torch.autograd.grad): every dtype the table lists, the vendor's promotion and
broadcast rules, strided views, 0-size and 0-d tensors, every error path with its
status, outputs untouched after an error, the places where the vendor's kernels
differ from torch, and bit-identical results across ISA tiers and thread counts."""
import ml_dtypes
import numpy as np
import pytest
import torch

import pyaclnn
from pyaclnn import aclnn, optable
from pyaclnn._ffi import ffi, lib
from tiers import bits, supported_tiers

A = torch.ops.aten
F = torch.nn.functional
BF16 = np.dtype(ml_dtypes.bfloat16)
NP = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": BF16, "f64": np.dtype(np.float64),
      "s8": np.dtype(np.int8), "u8": np.dtype(np.uint8), "s16": np.dtype(np.int16), "u16": np.dtype(np.uint16),
      "s32": np.dtype(np.int32), "u32": np.dtype(np.uint32), "s64": np.dtype(np.int64), "u64": np.dtype(np.uint64),
      "bool": np.dtype(bool)}
OPS = optable.by_name()


def T(a):
    return torch.from_numpy(np.asarray(a).astype(np.float64))


def f64(a):
    return np.asarray(a).astype(np.float64)


def status(fn, *args):
    with pytest.raises(pyaclnn.AclError) as e:
        fn(*args)
    return e.value.status, str(e.value)


def spacing(r, dt):
    """The spacing of dt's values at |r| (the subnormal spacing below the normals)."""
    info = ml_dtypes.finfo(dt)
    e = np.floor(np.log2(np.maximum(np.abs(r), float(info.tiny))))
    return 2.0 ** (e - info.nmant)


def assert_close(got, ref, dy, x, dt, k=4.0, in_fp32=False):
    """One rounding to dt of a value within k fp32 (fp64) roundings of |dy| max(1, |x|)
    of the exact derivative: the vendor kernels compute in fp32 (fp64 for DOUBLE,
    unless in_fp32)."""
    got, ref = f64(got), np.asarray(ref, np.float64)
    unit = 2.0 ** -53 if dt == NP["f64"] and not in_fp32 else 2.0 ** -24
    bound = spacing(ref, dt) + k * unit * np.abs(f64(dy)) * np.maximum(1.0, np.abs(f64(x)))
    bad = ~(np.abs(got - ref) <= bound)
    assert not bad.any(), list(zip(f64(x)[bad][:5], got[bad][:5], ref[bad][:5]))


# ---- the operators: how to call each, its torch reference and its input domain ----
# name -> (call(dy, x, out), reference(dy, x) in float64, x domain, what x is)

def _y_tanh(x):
    return np.tanh(x)


def _y_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _y_elu(x, alpha=1.25, scale=1.5, iscale=0.75):
    return np.where(x > 0, scale * x, scale * alpha * np.expm1(iscale * x))


CASES = {
    "GeluBackward": (lambda dy, x, o: aclnn.GeluBackward(dy, x, o),
                     lambda dy, x: A.gelu_backward(T(dy), T(x), approximate="tanh"), None),
    "GeluBackwardV2-none": (lambda dy, x, o: aclnn.GeluBackwardV2(dy, x, "none", o),
                            lambda dy, x: A.gelu_backward(T(dy), T(x)), None),
    "GeluBackwardV2-tanh": (lambda dy, x, o: aclnn.GeluBackwardV2(dy, x, "tanh", o),
                            lambda dy, x: A.gelu_backward(T(dy), T(x), approximate="tanh"), None),
    "SiluBackward": (lambda dy, x, o: aclnn.SiluBackward(dy, x, o), lambda dy, x: A.silu_backward(T(dy), T(x)), None),
    "TanhBackward": (lambda dy, y, o: aclnn.TanhBackward(dy, y, o), lambda dy, y: A.tanh_backward(T(dy), T(y)),
                     _y_tanh),
    "SigmoidBackward": (lambda dy, y, o: aclnn.SigmoidBackward(dy, y, o),
                        lambda dy, y: A.sigmoid_backward(T(dy), T(y)), _y_sigmoid),
    "ThresholdBackward": (lambda dy, x, o: aclnn.ThresholdBackward(dy, x, 0.25, o),
                          lambda dy, x: A.threshold_backward(T(dy), T(x), 0.25), None),
    "LeakyReluBackward": (lambda dy, x, o: aclnn.LeakyReluBackward(dy, x, 0.125, False, o),
                          lambda dy, x: A.leaky_relu_backward(T(dy), T(x), 0.125, False), None),
    "LeakyReluBackward-result": (lambda dy, y, o: aclnn.LeakyReluBackward(dy, y, 0.125, True, o),
                                 lambda dy, y: A.leaky_relu_backward(T(dy), T(y), 0.125, True),
                                 lambda x: np.where(x > 0, x, 0.125 * x)),
    "HardswishBackward": (lambda dy, x, o: aclnn.HardswishBackward(dy, x, o),
                          lambda dy, x: A.hardswish_backward(T(dy), T(x)), None),
    "HardsigmoidBackward": (lambda dy, x, o: aclnn.HardsigmoidBackward(dy, x, o),
                            lambda dy, x: A.hardsigmoid_backward(T(dy), T(x)), None),
    "HardtanhBackward": (lambda dy, x, o: aclnn.HardtanhBackward(dy, x, -1.5, 2.0, o),
                         lambda dy, x: A.hardtanh_backward(T(dy), T(x), -1.5, 2.0), None),
    "SoftplusBackward": (lambda dy, x, o: aclnn.SoftplusBackward(dy, x, 1.5, 10.0, o),
                         lambda dy, x: A.softplus_backward(T(dy), T(x), 1.5, 10.0), None),
    "EluBackward": (lambda dy, x, o: aclnn.EluBackward(dy, 1.25, 1.5, 0.75, False, x, o),
                    lambda dy, x: A.elu_backward(T(dy), 1.25, 1.5, 0.75, False, T(x)), None),
    "EluBackward-result": (lambda dy, y, o: aclnn.EluBackward(dy, 1.25, 1.5, 0.75, True, y, o),
                           lambda dy, y: A.elu_backward(T(dy), 1.25, 1.5, 0.75, True, T(y)), _y_elu),
    "MishBackward": (lambda dy, x, o: aclnn.MishBackward(dy, x, o), lambda dy, x: A.mish_backward(T(dy), T(x)),
                     None),
}


def op_of(case):
    return OPS[case.split("-")[0]]


def float_dtypes(case):
    return [d for d in ("f32", "f16", "bf16", "f64") if d in op_of(case).ins.split()]


def inputs(case, dt, shape, seed, lo=-12.0, hi=12.0):
    """(dy, x): x the saved tensor of the case (the forward's result where it is one),
    both exactly representable in dt; never x = +-3 for Hardswish (see below)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(lo, hi, shape)
    fwd = CASES[case][2]
    x = (fwd(x) if fwd else x).astype(dt)
    if case == "HardswishBackward":
        x[np.abs(f64(x)) == 3] = 0.5
    dy = rng.uniform(-2, 2, shape).astype(dt)
    return dy, x


@pytest.mark.parametrize("case,dt", [(c, d) for c in CASES for d in float_dtypes(c)])
def test_accuracy_every_dtype(runtime, case, dt):
    """fp32 / fp16 / bf16: the vendor's fp32 formula rounded once to the dtype;
    DOUBLE in fp64 (Tanh, Sigmoid, LeakyRelu) or fp32 (Softplus, as the vendor);
    against torch in float64."""
    d = NP[dt]
    dy, x = inputs(case, d, (7, 301), 11)
    call, ref, _ = CASES[case]
    got = call(dy, x, np.empty(x.shape, d))
    assert got.dtype == d
    with np.errstate(all="ignore"):
        want = ref(dy, x).numpy()
    assert_close(got, want, dy, x, d, k=6.0 if case == "MishBackward" else 4.0, in_fp32=case == "SoftplusBackward")


def test_against_autograd(runtime):
    """The same gradients as torch.autograd.grad of the forward functions (float64)."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-6, 6, 999).astype(np.float32)
    x[np.abs(x) == 3] = 1
    dy = rng.uniform(-2, 2, 999).astype(np.float32)
    fns = {"GeluBackward": lambda t: F.gelu(t, approximate="tanh"), "GeluBackwardV2-none": F.gelu,
           "SiluBackward": F.silu, "MishBackward": F.mish, "HardswishBackward": F.hardswish,
           "HardsigmoidBackward": F.hardsigmoid, "HardtanhBackward": lambda t: F.hardtanh(t, -1.5, 2.0),
           "SoftplusBackward": lambda t: F.softplus(t, 1.5, 10.0),
           "EluBackward": lambda t: torch.where(t > 0, 1.5 * t, 1.5 * 1.25 * torch.expm1(0.75 * t)),
           "LeakyReluBackward": lambda t: F.leaky_relu(t, 0.125),
           "ThresholdBackward": lambda t: F.threshold(t, 0.25, 0)}
    for case, fn in fns.items():
        xt = T(x).requires_grad_()
        want = torch.autograd.grad(fn(xt), xt, T(dy))[0].numpy()
        got = CASES[case][0](dy, x, np.empty_like(x))
        assert_close(got, want, dy, x, np.dtype(np.float32), k=6.0)


def test_gelu_backward_is_the_tanh_form(runtime):
    """aclnnGeluBackward differentiates the tanh approximation whatever torch's
    approximate was (the vendor's GeluGrad kernel); V2 "none" is the erf form."""
    x = np.linspace(-4, 4, 401).astype(np.float32)
    dy = np.ones_like(x)
    v1 = aclnn.GeluBackward(dy, x, np.empty_like(x))
    assert bits(v1) == bits(aclnn.GeluBackwardV2(dy, x, "tanh", np.empty_like(x)))
    erf = aclnn.GeluBackwardV2(dy, x, "none", np.empty_like(x))
    assert np.max(np.abs(f64(v1) - f64(erf))) > 1e-4  # the two forms differ visibly
    assert np.allclose(f64(erf), A.gelu_backward(T(dy), T(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_threshold_backward_integer_dtypes(runtime):
    """INT32 / INT8 / UINT8: self compared with the fp32 threshold, gradOutput kept (exact)."""
    for dt in ("s32", "s8", "u8"):
        d = NP[dt]
        info = np.iinfo(d)
        rng = np.random.default_rng(2)
        x = rng.integers(max(info.min, -9), 10, (6, 11)).astype(d)
        dy = rng.integers(max(info.min, -100), 100, (6, 11)).astype(d)
        for t in (2.5, -3.0, 0, 7):
            got = aclnn.ThresholdBackward(dy, x, t, np.empty_like(x))
            assert np.array_equal(got, np.where(f64(x) <= t, 0, dy).astype(d)), (dt, t)
    # values beyond fp32's integers go through fp32, as in the vendor's kernel
    dy = np.array([16777217, -2147483647], np.int32)
    got = aclnn.ThresholdBackward(dy, np.array([5, 5], np.int32), 0, np.empty_like(dy))
    assert got.tolist() == [16777216, -2147483648]


def test_threshold_backward_near_zero_is_relu_backward(runtime):
    """|threshold| <= FLT_EPSILON runs the vendor's ReluGrad (threshold 0)."""
    x = np.array([-1e-9, 0, 1e-9, 5e-8, 2e-7], np.float32)
    dy = np.full(5, 2.0, np.float32)
    assert aclnn.ThresholdBackward(dy, x, 1e-7, np.empty_like(x)).tolist() == [0, 0, 2, 2, 2]
    assert aclnn.ThresholdBackward(dy, x, 1.5e-7, np.empty_like(x)).tolist() == [0, 0, 0, 0, 2]
    assert aclnn.ThresholdBackward(dy, x, float("nan"), np.empty_like(x)).tolist() == [2] * 5


def test_vendor_kernel_values_where_torch_differs(runtime):
    """Where the vendor's kernels give other values than torch's CPU backward (kept
    as the vendor's): Hardswish's derivative at exactly +-3 is x/3 + 1/2 (the doc's
    -3 <= x <= 3), NaN inputs of Hardswish, Hardtanh and Elu select by comparison
    (gradOutput through), GeluBackward's limits at +-inf."""
    x = np.array([-3, 3, np.nan], np.float32)
    dy = np.full(3, 1.5, np.float32)
    assert aclnn.HardswishBackward(dy, x, np.empty_like(x)).tolist() == [-0.75, 2.25, 1.5]
    assert aclnn.HardtanhBackward(dy, x, -1.0, 1.0, np.empty_like(x)).tolist() == [0, 0, 1.5]
    assert aclnn.EluBackward(dy, 1.0, 2.0, 1.0, False, x, np.empty_like(x))[2] == 3.0
    g = aclnn.GeluBackward(dy, np.array([np.inf, -np.inf, np.nan], np.float32), np.empty_like(x))
    assert g[0] == 1.5 and g[1] == 0 and np.isnan(g[2])


def test_special_values_follow_torch(runtime):
    """NaN, +-inf, +-0 and large arguments: torch's values (fp32), apart from the
    cases above and underflow below fp32's normals."""
    x = np.array([np.nan, 0.0, -0.0, 1e30, -1e30, 100, -100, 20, -20, 88, -88, 1e-30, 10, -10], np.float32)
    dy = np.full(x.shape, 1.5, np.float32)
    skip = {"GeluBackward", "GeluBackwardV2-tanh", "HardswishBackward", "HardtanhBackward", "EluBackward",
            "EluBackward-result", "TanhBackward", "SigmoidBackward"}
    for case, (call, ref, _) in CASES.items():
        if case in skip:
            continue
        got = f64(call(dy, x, np.empty_like(x)))
        with np.errstate(all="ignore"):
            want = ref(dy, x).numpy()
        ok = (got == want) | (np.isnan(got) & np.isnan(want)) | (np.abs(got - want) <= 1e-6 * np.abs(want) + 1e-37)
        assert ok.all(), (case, x[~ok], got[~ok], want[~ok])


def test_promotion_rules(runtime):
    rng = np.random.default_rng(3)
    x32 = rng.uniform(-5, 5, 64).astype(np.float32)
    x16, xb = x32.astype(np.float16), x32.astype(BF16)
    g32 = rng.uniform(-2, 2, 64).astype(np.float32)
    g16 = g32.astype(np.float16)
    # promoted to FLOAT, computed once, then cast to the output's dtype
    full = aclnn.GeluBackward(f64(g16).astype(np.float32), x32, np.empty(64, np.float32))
    assert bits(aclnn.GeluBackward(g16, x32, np.empty(64, np.float16))) == bits(full.astype(np.float16))
    assert bits(aclnn.MishBackward(xb, x32, np.empty(64, np.float32))) == \
        bits(aclnn.MishBackward(f64(xb).astype(np.float32), x32, np.empty(64, np.float32)))
    y16 = (1 / (1 + np.exp(-x32))).astype(np.float16)
    got = aclnn.SigmoidBackward(g16, y16.astype(BF16), np.empty(64, np.float32))  # f16 + bf16 -> f32
    want = aclnn.SigmoidBackward(f64(g16).astype(np.float32), f64(y16.astype(BF16)).astype(np.float32),
                                 np.empty(64, np.float32))
    assert bits(got) == bits(want)
    got = aclnn.LeakyReluBackward(g32, f64(x32), 0.125, False, np.empty(64, np.float64))
    assert got.tolist() == np.where(x32 > 0, f64(g32), f64(g32) * 0.125).tolist()
    assert aclnn.HardsigmoidBackward(g16, x32, np.empty(64, np.float16)).dtype == np.float16
    # GeluBackwardV2: gradInput must be the promoted dtype
    assert aclnn.GeluBackwardV2(g16, x32, "none", np.empty(64, np.float32)).dtype == np.float32
    rc, msg = status(aclnn.GeluBackwardV2, g16, x32, "none", np.empty(64, np.float16))
    assert rc == 161002 and "gradInput" in msg and "promoted" in msg, msg
    # the ops of one dtype refuse a mix
    for name, args in (("SiluBackward", (g16, x32, np.empty(64, np.float32))),
                       ("TanhBackward", (g32, f64(x32), np.empty(64, np.float64))),
                       ("ThresholdBackward", (g32, x16, 0.0, np.empty(64, np.float32))),
                       ("HardswishBackward", (g16, x32, np.empty(64, np.float16))),
                       ("HardtanhBackward", (g32, xb, -1.0, 1.0, np.empty(64, np.float32))),
                       ("EluBackward", (g32, 1.0, 1.0, 1.0, False, x16, np.empty(64, np.float32)))):
        rc, msg = status(aclnn.call, name, *args)
        assert rc == 161002 and "dtype" in msg, (name, msg)
    # ... and an output of another dtype
    for name, args in (("SiluBackward", (g32, x32, np.empty(64, np.float16))),
                       ("TanhBackward", (g32, x32, np.empty(64, np.float16))),
                       ("ThresholdBackward", (g32, x32, 0.0, np.empty(64, np.float16))),
                       ("HardswishBackward", (g32, x32, np.empty(64, BF16))),
                       ("HardtanhBackward", (g32, x32, -1.0, 1.0, np.empty(64, np.float16)))):
        rc, msg = status(aclnn.call, name, *args)
        assert rc == 161002 and "dtype" in msg, (name, msg)
    # casting gradInput to another float dtype is allowed where the vendor casts
    assert aclnn.EluBackward(g32, 1.0, 1.0, 1.0, False, x32, np.empty(64, np.float16)).dtype == np.float16
    assert aclnn.SigmoidBackward(g32, x32, np.empty(64, np.float16)).dtype == np.float16


def test_softplus_backward_dtypes(runtime):
    """Both inputs FLOAT, FLOAT16 or BF16 alike: that dtype; anything else (DOUBLE,
    integers, BOOL, a mix) is computed in FLOAT, then cast to gradInput."""
    rng = np.random.default_rng(4)
    x = rng.uniform(-8, 8, 50).astype(np.float32)
    dy = rng.uniform(-2, 2, 50).astype(np.float32)
    ref = aclnn.SoftplusBackward(dy, x, 1.5, 10.0, np.empty(50, np.float64))
    assert bits(aclnn.SoftplusBackward(f64(dy), f64(x), 1.5, 10.0, np.empty(50, np.float64))) == bits(ref)
    assert bits(aclnn.SoftplusBackward(dy, x, 1.5, 10.0, np.empty(50, np.float32))) == bits(ref.astype(np.float32))
    xi = rng.integers(-5, 5, 50)
    for d in (np.int8, np.int16, np.int32, np.int64, np.uint8, bool):
        xs = np.abs(xi).astype(d) if d in (np.uint8, bool) else xi.astype(d)
        got = aclnn.SoftplusBackward(dy, xs, 1.5, 10.0, np.empty(50, np.float32))
        want = aclnn.SoftplusBackward(dy, f64(xs).astype(np.float32), 1.5, 10.0, np.empty(50, np.float32))
        assert bits(got) == bits(want), d
    h = aclnn.SoftplusBackward(dy.astype(np.float16), x.astype(np.float16), 1.5, 10.0, np.empty(50, np.float16))
    assert_close(h, A.softplus_backward(T(dy.astype(np.float16)), T(x.astype(np.float16)), 1.5, 10.0).numpy(),
                 dy, x, np.dtype(np.float16))


def test_fp32_attributes(runtime):
    """Scalars reach the kernels as fp32 values (the vendor's float attributes), also
    for DOUBLE LeakyReluBackward; Elu's negcoef is alpha * scale in fp32."""
    x = np.array([-2.0, -1.0, 1.0], np.float64)
    dy = np.ones(3, np.float64)
    got = aclnn.LeakyReluBackward(dy, x, 0.1, False, np.empty(3, np.float64))
    assert got.tolist() == [float(np.float32(0.1))] * 2 + [1.0]
    xs = np.array([-0.5], np.float32)
    got = aclnn.EluBackward(np.ones(1, np.float32), 0.3, 0.7, 1.0, True, xs, np.empty(1, np.float32))
    assert got[0] == np.float32(np.float32(0.3) * np.float32(0.7)) + np.float32(-0.5)


def test_is_result_needs_a_nonnegative_slope(runtime):
    x = np.ones(4, np.float32)
    rc, msg = status(aclnn.LeakyReluBackward, x, x, -0.1, True, np.empty(4, np.float32))
    assert rc == 161002 and "negativeSlope" in msg, msg
    aclnn.LeakyReluBackward(x, x, -0.1, False, np.empty(4, np.float32))
    aclnn.LeakyReluBackward(x, x, 0.0, True, np.empty(4, np.float32))
    rc, msg = status(aclnn.EluBackward, x, -1.0, 1.0, 1.0, True, x, np.empty(4, np.float32))
    assert rc == 161002 and "alpha" in msg, msg
    aclnn.EluBackward(x, -1.0, 1.0, 1.0, False, x, np.empty(4, np.float32))


def test_gelu_backward_v2_approximate(runtime):
    x = np.ones(4, np.float32)
    for bad in ("", "Tanh", "erf", "none ", "tanhh"):
        rc, msg = status(aclnn.GeluBackwardV2, x, x, bad, np.empty(4, np.float32))
        assert rc == 161002 and "approximate" in msg and '"none" or "tanh"' in msg, (bad, msg)
    rc, msg = status(aclnn.GeluBackwardV2, x, x, None, np.empty(4, np.float32))
    assert rc == 161001 and "approximate" in msg, msg


BROADCASTING = ["GeluBackward", "GeluBackwardV2-none", "GeluBackwardV2-tanh", "TanhBackward", "SigmoidBackward",
                "ThresholdBackward", "LeakyReluBackward", "LeakyReluBackward-result", "MishBackward"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_broadcast_where_the_vendor_allows_it(runtime, case):
    dy, x = inputs(case, np.dtype(np.float32), (3, 4, 5), 8)
    dy, x = dy[:, :1, :], x[0, :, :1]  # (3, 1, 5) with (4, 1)
    call, ref, _ = CASES[case]
    out = np.empty((3, 4, 5), np.float32)
    if case in BROADCASTING:
        got = call(dy, x, out)
        db, xb = np.broadcast_arrays(dy, x)
        assert_close(got, ref(db, xb).numpy(), db, xb, np.dtype(np.float32))
        for o in ((3, 4, 1), (4, 5), (3, 4, 5, 1)):
            rc, msg = status(call, dy, x, np.empty(o, np.float32))
            assert rc == 161002 and "shape" in msg, (case, msg)
        rc, msg = status(call, dy, np.ones((4, 2), np.float32), np.empty((3, 4, 5), np.float32))
        assert rc == 161002 and "broadcast" in msg, (case, msg)
    else:
        rc, msg = status(call, dy, x, out)
        assert rc == 161002 and "no broadcasting" in msg, (case, msg)
        rc, msg = status(call, dy, dy[:, :, :4], out[:, :1, :])
        assert rc == 161002 and "shape" in msg, (case, msg)
        dy, x = inputs(case, np.dtype(np.float32), (3, 4), 8)
        rc, msg = status(call, dy, x, np.empty((4, 3), np.float32))
        assert rc == 161002 and "shape" in msg, (case, msg)


@pytest.mark.parametrize("case", sorted(CASES))
def test_strided_views_and_small_shapes(runtime, case):
    """Transposed and sliced inputs and a strided output give the contiguous call's
    bits; 0-size tensors succeed and write nothing; 0-d tensors work."""
    call = CASES[case][0]
    dy, x = inputs(case, np.dtype(np.float32), (9, 14), 6)
    want = call(dy, x, np.empty((9, 14), np.float32))
    big = np.full((9, 30), 7.0, np.float32)
    out = big[:, ::2][:, :14]
    dyt = np.ascontiguousarray(dy.T).T  # same values, transposed storage
    call(dyt, np.pad(x, ((0, 0), (0, 3)))[:, :14], out)
    assert bits(np.ascontiguousarray(out)) == bits(want)
    assert (big[:, 1::2] == 7.0).all()
    e = np.empty((0, 3), np.float32)
    assert call(e, e, np.empty((0, 3), np.float32)).shape == (0, 3)
    dy0, x0 = np.array(dy[2, 3]), np.array(x[2, 3])
    assert call(dy0, x0, np.empty((), np.float32)) == want[2, 3]


def test_errors_leave_the_output_untouched(runtime):
    """Every failing check returns before anything is written."""
    x = np.ones((2, 3), np.float32)
    out = np.full((2, 3), 9.0, np.float32)
    bad = [
        ("GeluBackwardV2", (x, x, "bogus", out)),
        ("LeakyReluBackward", (x, x, -1.0, True, out)),
        ("EluBackward", (x, -1.0, 1.0, 1.0, True, x, out)),
        ("SiluBackward", (x, x.astype(np.float16), out)),
        ("HardtanhBackward", (x, x[:1], 0.0, 1.0, out)),
        ("TanhBackward", (x, x, np.full((2, 3), 9.0, np.float16))),
        ("ThresholdBackward", (x.astype(np.int16), x.astype(np.int16), 0.0, out.astype(np.int16))),
        ("GeluBackward", (x.astype(np.float64), x, out)),
        ("MishBackward", (x, x[:, :2], out)),
    ]
    for name, args in bad:
        rc, msg = status(aclnn.call, name, *args)
        assert rc == 161002, (name, rc, msg)
        o = args[-1]
        assert (f64(o) == 9.0).all(), name


def _map_cases_for_bitwise():
    return [c for c in CASES if not c.endswith("-tanh")]


@pytest.mark.parametrize("case", _map_cases_for_bitwise())
def test_isa_tiers_and_threads_bitwise(runtime, case, restore_runtime_knobs):
    """Every tier gives the scalar tier's bits (fp32, fp16, bf16; DOUBLE across thread
    counts), with 1, 2 and 3 threads."""
    call = CASES[case][0]
    results = {}
    for tier in supported_tiers():
        for threads in (1, 2, 3):
            pyaclnn.set_max_isa(tier)
            pyaclnn.set_num_threads(threads)
            for dt in float_dtypes(case):
                d = NP[dt]
                dy, x = inputs(case, d, (5, 1013), 3)
                if case == "HardswishBackward":
                    x[0, :7] = [-3, 3, np.nan, np.inf, -np.inf, 0, -0.0]
                got = call(dy, x, np.empty(x.shape, d))
                if dt in results:
                    assert bits(got) == bits(results[dt]), (case, dt, tier, threads)
                else:
                    results[dt] = got
    assert results


# ---- aclnnStack ------------------------------------------------------------------

STACK_DT = [d for d in OPS["Stack"].ins.split() if d in NP]


def rand(dt, shape, rng):
    d = NP[dt]
    if d == np.dtype(bool):
        return rng.random(shape) < 0.5
    if d.kind in "iu":
        return rng.integers(0 if d.kind == "u" else -100, 100, shape).astype(d)
    return rng.uniform(-50, 50, shape).astype(d)


@pytest.mark.parametrize("dt", STACK_DT)
def test_stack_every_dtype_and_dim(runtime, dt):
    rng = np.random.default_rng(1)
    ts = [rand(dt, (2, 3, 4), rng) for _ in range(5)]
    for dim in range(-4, 4):
        want = np.stack(ts, dim)
        got = aclnn.Stack(ts, dim, np.empty(want.shape, NP[dt]))
        assert bits(got) == bits(want), (dt, dim)
    one = aclnn.Stack(ts[:1], 0, np.empty((1, 2, 3, 4), NP[dt]))
    assert bits(one) == bits(ts[0][None])


def test_stack_promotes_into_out(runtime):
    rng = np.random.default_rng(2)
    a = rng.integers(-50, 50, (3, 4)).astype(np.int32)
    b = rng.uniform(-5, 5, (3, 4)).astype(np.float16)
    c = rng.random((3, 4)) < 0.5
    got = aclnn.Stack([a, b, c], 1, np.empty((3, 3, 4), np.float32))
    assert bits(got) == bits(np.stack([a, b, c], 1).astype(np.float32))
    got = aclnn.Stack([a, c], 0, np.empty((2, 3, 4), np.int64))
    assert got.tolist() == np.stack([a, c.astype(np.int32)]).tolist()
    # a float into an integer out, a number into BOOL, no promoted dtype
    rc, msg = status(aclnn.Stack, [a, b], 0, np.empty((2, 3, 4), np.int32))
    assert rc == 161002 and "cannot be cast" in msg, msg
    rc, msg = status(aclnn.Stack, [a, a], 0, np.empty((2, 3, 4), bool))
    assert rc == 161002 and "cannot be cast" in msg, msg
    rc, msg = status(aclnn.Stack, [a.astype(np.uint16), a.astype(np.int8)], 0, np.empty((2, 3, 4), np.int32))
    assert rc == 161002 and "promoted" in msg, msg


def test_stack_views_and_shapes(runtime):
    rng = np.random.default_rng(3)
    base = rng.uniform(-1, 1, (6, 10)).astype(np.float32)
    ts = [base.T[:5, :4], base[1:6, 2:6], np.broadcast_to(base[0, :4], (5, 4))]
    want = np.stack(ts, 1)
    big = np.full((5, 3, 8), -1.0, np.float32)
    out = big[:, :, ::2]
    aclnn.Stack(ts, 1, out)
    assert bits(np.ascontiguousarray(out)) == bits(want)
    assert (big[:, :, 1::2] == -1.0).all()
    # 0-d tensors stack to 1-D
    assert aclnn.Stack([np.array(1.5, np.float32), np.array(2.5, np.float32)], 0,
                       np.empty(2, np.float32)).tolist() == [1.5, 2.5]
    assert aclnn.Stack([np.array(1.5, np.float32)], -1, np.empty(1, np.float32)).tolist() == [1.5]


def test_stack_empty_tensors_write_nothing(runtime):
    """0-size tensors: success without a look at out's shape (the vendor's early
    return); nothing is written."""
    e = np.empty((0, 3), np.float32)
    assert aclnn.Stack([e, e], 0, np.empty((2, 0, 3), np.float32)).shape == (2, 0, 3)
    out = np.full((4,), 5.0, np.float32)
    aclnn.Stack([e, e, e], 1, out)
    assert (out == 5.0).all()


def test_stack_errors(runtime):
    a = np.ones((2, 3), np.float32)
    out = np.full((2, 2, 3), 4.0, np.float32)
    cases = [
        (([a, np.ones((3, 2), np.float32)], 0, out), "shape"),
        (([a, np.ones((2, 3, 1), np.float32)], 0, out), "shape"),
        (([a, a], 3, out), "out of range"),
        (([a, a], -4, out), "out of range"),
        (([a, a], 0, np.full((2, 2, 4), 4.0, np.float32)), "shape"),
        (([a, a], 0, np.full((2, 6), 4.0, np.float32)), "shape"),
        (([], 0, out), "empty"),
        (([np.ones((1,) * 8, np.float32)] * 2, 0, out), "at most 7 dims"),
    ]
    for args, what in cases:
        rc, msg = status(aclnn.Stack, *args)
        assert rc == 161002 and what in msg, (what, msg)
        assert (args[2] == 4.0).all()
    # NULL list / out: the vendor's 561103; a NULL element: 161001
    rc, msg = status(aclnn.Stack, None, 0, out)
    assert rc == 561103 and "tensors" in msg, msg
    rc, msg = status(aclnn.Stack, [a, a], 0, None)
    assert rc == 561103 and "out" in msg, msg
    t = pyaclnn.Tensor.empty((2, 3), np.float32)
    o = pyaclnn.Tensor.empty((2, 2, 3), np.float32)
    lst = lib.aclCreateTensorList(ffi.new("aclTensor *[]", [t.handle, ffi.NULL]), 2)
    try:
        rc = lib.aclnnStackGetWorkspaceSize(lst, 0, o.handle, ffi.new("uint64_t *"), ffi.new("aclOpExecutor **"))
        assert rc == 161001 and "tensors[1]" in ffi.string(lib.aclGetRecentErrMsg()).decode()
    finally:
        lib.aclDestroyTensorList(lst)


def test_stack_threads_bitwise(runtime, restore_runtime_knobs):
    rng = np.random.default_rng(4)
    ts = [rng.uniform(-1, 1, (37, 61)).astype(np.float32) for _ in range(9)]
    want = np.stack(ts, 1).astype(np.float16)
    for threads in (1, 2, 3):
        pyaclnn.set_num_threads(threads)
        assert bits(aclnn.Stack(ts, 1, np.empty((37, 9, 61), np.float16))) == bits(want)


def test_stack_and_cat_beyond_the_executors_views(runtime, stream):
    """More tensors than an executor holds views for (63; clip_grad_norm_ stacks one
    norm per parameter): the right result, and the launch checks the addresses of
    the others too (NULL data: 361001, outside the allocation: 507015), with
    nothing written."""
    n = 100
    with pyaclnn.DeviceBuffer(n * 4) as buf, pyaclnn.DeviceBuffer(n * 4) as obuf:
        host = np.arange(n, dtype=np.float32)
        lib.aclrtMemcpy(buf.cdata, n * 4, ffi.cast("void *", host.ctypes.data), n * 4, lib.ACL_MEMCPY_HOST_TO_DEVICE)
        one, st, sd = ffi.new("int64_t[]", [1]), ffi.new("int64_t[]", [1]), ffi.new("int64_t[]", [n])
        dims_out = ffi.new("int64_t[]", [n])

        def run(name, bad=None):
            nd = 1 if name == "Cat" else 0
            eight = ffi.new("int64_t[]", [8])
            hs = []
            for i in range(n):
                if i == 70 and bad == "null":
                    hs.append(lib.aclCreateTensor(one, nd, lib.ACL_FLOAT, st, 0, lib.ACL_FORMAT_ND, one, 1, ffi.NULL))
                elif i == 70 and bad == "far":
                    hs.append(lib.aclCreateTensor(one, nd, lib.ACL_FLOAT, st, 400, lib.ACL_FORMAT_ND, eight, 1,
                                                  buf.cdata))
                else:
                    hs.append(lib.aclCreateTensor(one, nd, lib.ACL_FLOAT, st, i, lib.ACL_FORMAT_ND, sd, 1, buf.cdata))
            lst = lib.aclCreateTensorList(ffi.new("aclTensor *[]", hs), n)
            o = lib.aclCreateTensor(dims_out, 1, lib.ACL_FLOAT, st, 0, lib.ACL_FORMAT_ND, dims_out, 1, obuf.cdata)
            lib.aclrtMemset(obuf.cdata, n * 4, 0, n * 4)
            ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
            try:
                assert getattr(lib, "aclnn%sGetWorkspaceSize" % name)(lst, 0, o, ws, ex) == 0, \
                    ffi.string(lib.aclGetRecentErrMsg())
                assert getattr(lib, "aclnn" + name)(ffi.NULL, 0, ex[0], stream.handle) == 0
                rc = lib.aclrtSynchronizeStream(stream.handle)
                msg = ffi.string(lib.aclGetRecentErrMsg()).decode() if rc else ""
                got = np.empty(n, np.float32)
                lib.aclrtMemcpy(ffi.cast("void *", got.ctypes.data), n * 4, obuf.cdata, n * 4,
                                lib.ACL_MEMCPY_DEVICE_TO_HOST)
                return rc, msg, got
            finally:
                lib.aclDestroyTensorList(lst)
                lib.aclDestroyTensor(o)

        for name in ("Stack", "Cat"):
            rc, msg, got = run(name)
            assert rc == 0 and got.tolist() == host.tolist(), (name, msg)
            rc, msg, got = run(name, "null")
            assert rc == 361001 and "tensors[70] has no device address" in msg and not got.any(), (name, msg)
            rc, msg, got = run(name, "far")
            assert rc == 507015 and "tensors[70] storage" in msg and not got.any(), (name, msg)
