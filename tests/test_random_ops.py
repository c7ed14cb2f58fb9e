"""The random family (native/ops/random/, kernels/random/) through the C entry
points (pyaclnn.aclnn): the Philox4x32-10 block against Random123's
known-answer vectors, every operator against a numpy model of docs/random.md
(bit for bit), the same tensor for the same (seed, offset) across runs and
thread counts, distributions (mean, variance, Kolmogorov-Smirnov at 10^6
samples), the dropout mask's format and DoMask's 1 / keep scaling, every listed
dtype, strided and 0-size outputs, and each error path with its status code."""
import math

import ml_dtypes
import numpy as np
import pytest
import torch

import pyaclnn
from pyaclnn import AclError, aclnn, optable

BF16 = np.dtype(ml_dtypes.bfloat16)
NP = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": BF16, "f64": np.dtype(np.float64),
      "s8": np.dtype(np.int8), "u8": np.dtype(np.uint8), "s16": np.dtype(np.int16), "s32": np.dtype(np.int32),
      "s64": np.dtype(np.int64), "bool": np.dtype(bool)}
OPS = optable.by_name()
NULLPTR, INVALID, RUNTIME, INNER_NULLPTR = 161001, 161002, 361001, 561103
M32 = np.uint64(0xFFFFFFFF)


def dtypes_of(name, param=None):
    o = OPS[name]
    lst = o.dtypes.get(param) if param else o.ins
    return [NP[d] for d in lst.split() if d in NP]


def status(fn, *args):
    with pytest.raises(AclError) as e:
        fn(*args)
    return e.value.status, str(e.value)


# ---- a numpy model of docs/random.md -------------------------------------------

def philox(c, key):
    """Philox4x32-10 on arrays of counters c = (c0, c1, c2, c3) (uint64 arrays
    holding 32-bit values) with key (k0, k1)."""
    c0, c1, c2, c3 = (np.asarray(x, np.uint64) for x in c)
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & M32, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & M32
        k0 = (k0 + np.uint64(0x9E3779B9)) & M32
        k1 = (k1 + np.uint64(0xBB67AE85)) & M32
    return np.stack([c0, c1, c2, c3], -1)


def blocks(seed, offset, nblocks):
    seed, offset = seed & (2 ** 64 - 1), offset & (2 ** 64 - 1)
    b = np.arange(nblocks, dtype=np.uint64)
    return philox((b & M32, b >> np.uint64(32), np.full_like(b, offset & 0xFFFFFFFF), np.full_like(b, offset >> 32)),
                  (seed & 0xFFFFFFFF, seed >> 32))


def u32(seed, offset, n):
    return blocks(seed, offset, (n + 3) // 4).reshape(-1)[:n]


def u64(seed, offset, n):
    w = blocks(seed, offset, (n + 1) // 2).reshape(-1, 2)[:n]
    return w[:, 0] | (w[:, 1] << np.uint64(32))


def ref_normal(seed, offset, n):
    w = u32(seed, offset, (n + 3) // 4 * 4).reshape(-1, 2)
    z = []
    for w0, w1 in w.tolist():
        r = math.sqrt(-2.0 * math.log((w0 + 1.0) * 2.0 ** -32))
        t = 6.283185307179586476925286766559 * (w1 * 2.0 ** -32)
        z += [r * math.cos(t), r * math.sin(t)]
    return np.array(z[:n])


def ref_u24(seed, offset, n):
    return (u32(seed, offset, n) >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)


# ---- the generator --------------------------------------------------------------

def test_philox_known_answers():
    """Random123's kat_vectors for philox4x32_10 (the model used below)."""
    got = philox(([0], [0], [0], [0]), (0, 0))[0].tolist()
    assert got == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
    f = 0xFFFFFFFF
    assert philox(([f], [f], [f], [f]), (f, f))[0].tolist() == [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
    got = philox(([0x243f6a88], [0x85a308d3], [0x13198a2e], [0x03707344]), (0xa4093822, 0x299f31d0))[0].tolist()
    assert got == [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]


@pytest.mark.parametrize("seed,offset", [(0, 0), (1234, 12), (-1, 2 ** 40 + 7), (2 ** 63 - 1, -12)])
def test_values_follow_the_documented_mapping(seed, offset):
    n = 1001
    x = np.zeros(n, np.float64)
    aclnn.InplaceNormal(x, 0.0, 1.0, seed, offset)
    assert x.tobytes() == ref_normal(seed, offset, n).tobytes()
    x = np.zeros(n, np.float64)
    aclnn.InplaceNormal(x, 0.5, 2.0, seed, offset)
    assert x.tobytes() == (0.5 + 2.0 * ref_normal(seed, offset, n)).tobytes()
    # uniform: fp32 from 24 bits, fp64 from 53
    u = np.zeros(n, np.float32)
    aclnn.InplaceUniform(u, 0.0, 1.0, seed & (2 ** 64 - 1), offset & (2 ** 64 - 1))
    assert u.tobytes() == ref_u24(seed, offset, n).tobytes()
    d = np.zeros(n, np.float64)
    aclnn.InplaceUniform(d, -1.0, 3.0, seed & (2 ** 64 - 1), offset & (2 ** 64 - 1))
    ref = -1.0 + (u64(seed, offset, n) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53 * 4.0
    assert d.tobytes() == ref.tobytes()
    h = np.zeros(n, np.float16)
    aclnn.InplaceUniform(h, 0.0, 1.0, seed & (2 ** 64 - 1), offset & (2 ** 64 - 1))
    ref = (u32(seed, offset, n) >> np.uint64(21)).astype(np.float64) * 2.0 ** -11
    assert h.tobytes() == ref.astype(np.float16).tobytes()
    # random: exact integers in [from, to)
    r = np.zeros(n, np.int64)
    aclnn.InplaceRandom(r, -50, 1000, seed, offset)
    ref = [-50 + (int(v) * 1050 >> 64) for v in u64(seed, offset, n)]
    assert r.tolist() == ref
    # the mask: bit i = u24(i) >= p, LSB first
    m = np.zeros(1024 // 8, np.uint8)
    aclnn.DropoutGenMaskV2([n], 0.3, seed, offset, pyaclnn.acl_dtype_of(np.float32), m)
    bits = (ref_u24(seed, offset, 1024) >= np.float32(0.3)).astype(np.uint8)
    assert m.tobytes() == np.packbits(bits, bitorder="little").tobytes()
    # randperm: Fisher-Yates from the top
    p = np.zeros(50, np.int64)
    aclnn.Randperm(50, seed, offset, p)
    a = list(range(50))
    w = u64(seed, offset, 50)
    for k in range(49, 0, -1):
        j = int(w[k]) * (k + 1) >> 64
        a[k], a[j] = a[j], a[k]
    assert p.tolist() == a


def test_offsets_give_independent_streams():
    """torch_npu advances the offset by 12 per call: neighbouring offsets must
    not share (shifted) values."""
    a, b = np.zeros(4096, np.float32), np.zeros(4096, np.float32)
    aclnn.InplaceUniform(a, 0.0, 1.0, 7, 0)
    aclnn.InplaceUniform(b, 0.0, 1.0, 7, 12)
    assert len(np.intersect1d(a, b)) < 10
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.05


FILLS = {
    "InplaceNormal": lambda x, s, o: aclnn.InplaceNormal(x, 1.0, 3.0, s, o),
    "InplaceUniform": lambda x, s, o: aclnn.InplaceUniform(x, -2.0, 5.0, s, o),
    "InplaceRandom": lambda x, s, o: aclnn.InplaceRandom(x, 0, 100, s, o),
    "InplaceBernoulli": lambda x, s, o: aclnn.InplaceBernoulli(x, 0.3, s, o),
}


@pytest.mark.parametrize("name", sorted(FILLS))
def test_same_seed_same_tensor_across_runs_and_threads(name, restore_runtime_knobs):
    fill = FILLS[name]
    outs = []
    for threads in (1, 2, 3, 1):
        pyaclnn.set_num_threads(threads)
        x = np.zeros((300, 257), np.float32)  # several chunks
        fill(x, 99, 24)
        outs.append(x.tobytes())
    assert len(set(outs)) == 1
    y = np.zeros((300, 257), np.float32)
    fill(y, 99, 36)
    assert y.tobytes() != outs[0]
    z = np.zeros((300, 257), np.float32)
    fill(z, 100, 24)
    assert z.tobytes() != outs[0]


def test_masks_and_gathers_across_threads(restore_runtime_knobs):
    outs = []
    for threads in (1, 2, 3):
        pyaclnn.set_num_threads(threads)
        m = np.zeros((100000 + 127) // 128 * 16, np.uint8)
        aclnn.DropoutGenMaskV2([100000], 0.4, 5, 12, pyaclnn.acl_dtype_of(np.float16), m)
        x = np.linspace(-3, 3, 100000).astype(np.float32)
        out = np.zeros_like(x)
        aclnn.DropoutDoMask(x, m, 0.4, out)
        outs.append(m.tobytes() + out.tobytes())
    assert len(set(outs)) == 1


def test_strided_outputs_hold_the_row_major_values():
    """Element i is the view's row-major index: a strided or transposed view
    gets what a contiguous tensor of its shape gets."""
    for name, fill in FILLS.items():
        ref = np.zeros((6, 7), np.float32)
        fill(ref, 3, 0)
        base = np.zeros((6, 14), np.float32)
        fill(base[:, ::2], 3, 0)
        assert base[:, ::2].tobytes() == ref.tobytes(), name
        assert not base[:, 1::2].any(), name
        t = np.zeros((7, 6), np.float32).T
        fill(t, 3, 0)
        assert np.ascontiguousarray(t).tobytes() == ref.tobytes(), name


# ---- distributions ----------------------------------------------------------------

def ks_statistic(x, cdf):
    x = np.sort(x)
    f = cdf(x)
    n = len(x)
    i = np.arange(1, n + 1)
    return max((i / n - f).max(), (f - (i - 1) / n).max())


def normal_cdf(x):
    return 0.5 * (1 + torch.erf(torch.from_numpy(np.asarray(x, np.float64)) / math.sqrt(2))).numpy()


KS_001 = 1.63 / math.sqrt(10 ** 6)  # alpha = 0.01


def test_normal_distribution():
    x = np.zeros(10 ** 6, np.float32)
    aclnn.InplaceNormal(x, 2.0, 3.0, 42, 0)
    assert abs(x.mean() - 2.0) < 5 * 3.0 / 1000
    assert abs(x.var() - 9.0) < 9.0 * 0.01
    assert ks_statistic((x - 2.0) / 3.0, normal_cdf) < KS_001
    z = (x - 2.0) / 3.0
    assert abs((z ** 3).mean()) < 0.02 and abs((z ** 4).mean() - 3) < 0.05  # skew, kurtosis


def test_uniform_distribution():
    x = np.zeros(10 ** 6, np.float64)
    aclnn.InplaceUniform(x, -1.0, 3.0, 42, 12)
    assert x.min() >= -1 and x.max() < 3
    assert abs(x.mean() - 1.0) < 0.01 and abs(x.var() - 16 / 12) < 0.01
    assert ks_statistic(x, lambda v: (v + 1) / 4) < KS_001
    y = np.zeros(10 ** 6, np.float32)
    aclnn.InplaceUniform(y, 0.0, 1.0, 43, 12)
    assert y.min() >= 0 and y.max() < 1
    assert ks_statistic(y.astype(np.float64), lambda v: v) < KS_001


def test_integer_and_bernoulli_distributions():
    r = np.zeros(10 ** 6, np.int32)
    aclnn.InplaceRandom(r, -3, 7, 1, 0)
    counts = np.bincount(r + 3, minlength=10)
    assert counts.sum() == 10 ** 6 and r.min() == -3 and r.max() == 6
    chi2 = ((counts - 1e5) ** 2 / 1e5).sum()
    assert chi2 < 27.9  # chi-square, 9 degrees of freedom, alpha = 0.001
    b = np.zeros(10 ** 6, np.uint8)
    aclnn.InplaceBernoulli(b, 0.3, 2, 0)
    assert set(np.unique(b)) <= {0, 1} and abs(b.mean() - 0.3) < 0.002
    m = np.zeros((10 ** 6 + 127) // 128 * 16, np.uint8)
    aclnn.DropoutGenMaskV2([10 ** 6], 0.1, 3, 0, pyaclnn.acl_dtype_of(np.float32), m)
    assert abs(np.unpackbits(m).mean() - 0.9) < 0.002


def test_randperm_is_a_uniform_permutation():
    p = np.zeros(10 ** 5, np.int64)
    aclnn.Randperm(10 ** 5, 1, 0, p)
    assert sorted(p.tolist()) == list(range(10 ** 5))
    first = np.zeros(5, int)
    for s in range(2000):
        q = np.zeros(5, np.int64)
        aclnn.Randperm(5, s, 0, q)
        first[q[0]] += 1
    assert ((first - 400) ** 2 / 400).sum() < 18.5  # 4 dof, alpha = 0.001


def test_multinomial_distribution():
    w = np.array([[1, 2, 3, 4], [0, 5, 0, 5]], np.float32)
    o = np.zeros((2, 200000), np.int64)
    aclnn.Multinomial(w, 200000, True, 1, 0, o)
    for row, wr in zip(o, w):
        f = np.bincount(row, minlength=4) / len(row)
        assert np.abs(f - wr / wr.sum()).max() < 0.005
    # without replacement: distinct, never a zero weight, the heaviest first more often
    first = np.zeros(4, int)
    for s in range(2000):
        o = np.zeros((2, 2), np.int64)
        aclnn.Multinomial(w, 2, False, s, 0, o)
        assert o[0, 0] != o[0, 1] and sorted(o[1].tolist()) == [1, 3]
        first[o[0, 0]] += 1
    assert np.abs(first / 2000 - w[0] / w[0].sum()).max() < 0.04


# ---- dtypes, shapes, forms ----------------------------------------------------------

@pytest.mark.parametrize("name", ["InplaceNormal", "InplaceUniform", "InplaceRandom", "InplaceBernoulli"])
def test_every_listed_dtype(name):
    for dt in dtypes_of(name):
        x = np.zeros((3, 50), dt)
        FILLS[name](x, 5, 0)
        ref = np.zeros((3, 50), np.float64)
        if name == "InplaceNormal":
            aclnn.InplaceNormal(ref, 1.0, 3.0, 5, 0)
            if dt.kind == "f" or dt == BF16:
                # fp32 math rounded once: compare as the dtype rounds the fp64 value
                np.testing.assert_allclose(x.astype(np.float64), ref, rtol=1e-2, atol=1e-2)
            elif dt == np.dtype(bool):
                assert (x == (ref != 0)).all()
            else:
                info = np.iinfo(dt)  # truncated and saturated (the project's float -> int rule)
                assert (x.astype(np.int64) == np.clip(np.trunc(ref), info.min, info.max).astype(np.int64)).all(), dt
        elif name == "InplaceUniform":
            v = x.astype(np.float64)
            assert v.min() >= -2 and v.max() <= 5, dt
            if dt.kind in "iu":
                assert set(np.unique(v)) <= set(range(-2, 5)), dt
        elif name == "InplaceRandom":
            v = x.astype(np.float64)
            if dt == np.dtype(bool):
                assert set(np.unique(v)) <= {0, 1}
            else:
                assert v.min() >= 0 and v.max() < 100 and (v == np.round(v)).all(), dt
                r = np.zeros((3, 50), np.int64)
                aclnn.InplaceRandom(r, 0, 100, 5, 0)
                assert (v == r).all(), dt
        else:
            assert set(np.unique(x.astype(np.float64))) <= {0.0, 1.0}, dt
            r = np.zeros((3, 50), np.uint8)
            aclnn.InplaceBernoulli(r, 0.3, 5, 0)
            assert (x.astype(np.float64) == r).all(), dt


def test_zero_size_and_zero_d():
    for name, fill in FILLS.items():
        e = np.zeros((0, 5), np.float32)
        fill(e, 1, 0)
        s = np.zeros((), np.float32)
        fill(s, 1, 0)
        one = np.zeros(1, np.float32)
        fill(one, 1, 0)
        assert s.tobytes() == one.tobytes(), name
    p = np.zeros(0, np.int64)
    aclnn.Randperm(0, 1, 0, p)
    m = np.zeros(0, np.uint8)
    aclnn.DropoutGenMaskV2([0], 0.5, 1, 0, 0, m)
    aclnn.DropoutGenMaskV2([3, 0], 0.5, 1, 0, 0, m)


def test_bernoulli_is_the_dropout_mask_with_one_minus_p():
    n = 5000
    m = np.zeros((n + 127) // 128 * 16, np.uint8)
    aclnn.DropoutGenMaskV2([n], 0.25, 11, 36, pyaclnn.acl_dtype_of(np.float32), m)
    b = np.zeros(n, np.float32)
    aclnn.InplaceBernoulli(b, 0.75, 11, 36)
    assert (np.unpackbits(m, bitorder="little")[:n] == b).all()
    out = np.zeros(n, np.float16)
    aclnn.Bernoulli(np.zeros(n, np.float16), 0.75, 11, 36, out)
    assert (out == b).all()
    # the tensor form with a constant probability, and a broadcast one
    t = np.zeros(n, np.float32)
    aclnn.InplaceBernoulliTensor(t, np.full(n, 0.75, np.float32), 11, 36)
    assert (t == b).all()
    t2 = np.zeros((2, n), np.float32)
    aclnn.InplaceBernoulliTensor(t2, np.array([0.75], np.float64), 11, 36)
    b2 = np.zeros((2, n), np.float32)
    aclnn.InplaceBernoulli(b2, 0.75, 11, 36)
    assert (t2 == b2).all()
    per = np.zeros((3, 4), np.float32)
    aclnn.InplaceBernoulliTensor(per, np.array([0.0, 1.0, 0.0, 1.0], np.float32), 1, 0)
    assert (per == [0, 1, 0, 1]).all()
    o = np.zeros((3, 4), np.float32)
    aclnn.BernoulliTensor(per, np.array([[1.0], [0.0], [1.0]], np.float32), 1, 0, o)
    assert (o == [[1], [0], [1]]).all()


def test_tensor_forms_equal_the_scalar_forms():
    seed, off = np.array([77], np.int64), np.array([24], np.int64)
    for a_fn, b_fn in [
        (lambda x: aclnn.InplaceNormal(x, 0.0, 2.0, 77, 36), lambda x: aclnn.InplaceNormalTensor(x, 0.0, 2.0, seed, off, 12)),
        (lambda x: aclnn.InplaceUniform(x, 1.0, 2.0, 77, 36), lambda x: aclnn.InplaceUniformTensor(x, 1.0, 2.0, seed, off, 12)),
        (lambda x: aclnn.InplaceRandom(x, 3, 9, 77, 36), lambda x: aclnn.InplaceRandomTensor(x, 3, 9, seed, off, 12)),
    ]:
        x, y = np.zeros(999, np.float32), np.zeros(999, np.float32)
        a_fn(x)
        b_fn(y)
        assert x.tobytes() == y.tobytes()
    m1, m2 = np.zeros(128, np.uint8), np.zeros(128, np.uint8)
    aclnn.DropoutGenMaskV2([1000], 0.5, 77, 36, 1, m1)
    aclnn.DropoutGenMaskV2Tensor([1000], 0.5, seed, off, 12, 1, m2)
    assert m1.tobytes() == m2.tobytes()
    m3 = np.zeros(128, np.uint8)
    aclnn.DropoutGenMask([1000], 0.5, 77, 36, m3)
    m4 = np.zeros(128, np.uint8)
    aclnn.DropoutGenMaskV2([1000], 0.5, 77, 36, 0, m4)
    assert m3.tobytes() == m4.tobytes()
    w = np.array([[1, 2, 3, 4], [4, 3, 2, 1]], np.float32)
    for repl in (True, False):
        o1, o2 = np.zeros((2, 3), np.int64), np.zeros((2, 3), np.int64)
        aclnn.Multinomial(w, 3, repl, 77, 36, o1)
        aclnn.MultinomialTensor(w, 3, repl, seed, off, 12, o2)
        assert (o1 == o2).all()


def test_multinomial_forms_and_dtypes():
    for dt in dtypes_of("Multinomial"):
        w = np.array([0, 1, 0, 3], dt)
        o = np.zeros(6, np.int64)
        aclnn.Multinomial(w, 6, True, 3, 0, o)
        assert set(o.tolist()) <= {1, 3}
        o = np.zeros(2, np.int64)
        aclnn.Multinomial(w, 2, False, 3, 0, o)
        assert sorted(o.tolist()) == [1, 3]
    # strided weights and out
    w = np.array([[5, 0, 1], [0, 2, 0]], np.float32).T.copy().T
    o = np.zeros((2, 8), np.int64)[:, ::2]
    aclnn.Multinomial(w, 4, True, 1, 0, o)
    assert (o[1] == 1).all() and set(o[0].tolist()) <= {0, 2}
    # permutation dtypes
    for dt in dtypes_of("Randperm", "out") if OPS["Randperm"].dtypes.get("out") else [NP[d] for d in OPS["Randperm"].outs.split() if d in NP]:
        p = np.zeros(20, dt)
        aclnn.Randperm(20, 4, 0, p)
        q = np.zeros(20, np.int64)
        aclnn.Randperm(20, 4, 0, q)
        assert (p.astype(np.int64) == q).all(), dt


# ---- the dropout mask and DoMask -----------------------------------------------------

@pytest.mark.parametrize("n", [1, 127, 128, 129, 1000])
def test_mask_size_rule(n):
    need = (n + 127) // 128 * 16
    m = np.zeros(need, np.uint8)
    aclnn.DropoutGenMaskV2([n], 0.5, 1, 0, 0, m)
    for bad in (need - 16, need + 1, need - 1):
        if bad < 0:
            continue
        code, msg = status(aclnn.DropoutGenMaskV2, [n], 0.5, 1, 0, 0, np.zeros(bad, np.uint8))
        assert code == INVALID and "%d bytes" % need in msg
    # the mask's shape does not matter, its element count does
    aclnn.DropoutGenMaskV2([n], 0.5, 1, 0, 0, np.zeros((need // 16, 16), np.uint8))


def test_mask_extremes_and_prob_dtypes():
    m = np.zeros(16, np.uint8)
    aclnn.DropoutGenMaskV2([100], 0.0, 1, 0, 0, m)
    assert (m == 0xFF).all()
    aclnn.DropoutGenMaskV2([100], 1.0, 1, 0, 0, m)
    assert (m == 0).all()
    # prob is rounded to probDataType: 0.3 in bf16 is 0.30078125
    n = 2048
    bf, ref = np.zeros(n // 8, np.uint8), np.zeros(n // 8, np.uint8)
    aclnn.DropoutGenMaskV2([n], 0.3, 9, 0, pyaclnn.acl_dtype_of(BF16), bf)
    aclnn.DropoutGenMaskV2([n], 0.30078125, 9, 0, pyaclnn.acl_dtype_of(np.float32), ref)
    assert bf.tobytes() == ref.tobytes()
    # an unsupported probDataType fails only when it is used (as CANN's op)
    aclnn.DropoutGenMaskV2([100], 0.0, 1, 0, pyaclnn.acl_dtype_of(np.int32), m)
    code, msg = status(aclnn.DropoutGenMaskV2, [100], 0.5, 1, 0, pyaclnn.acl_dtype_of(np.int32), m)
    assert code == INNER_NULLPTR and "probDataType" in msg


@pytest.mark.parametrize("dt", [np.dtype(np.float32), np.dtype(np.float16), BF16])
def test_do_mask_scaling(dt):
    n, p = 1000, 0.3
    m = np.zeros(128, np.uint8)
    aclnn.DropoutGenMaskV2([n], p, 21, 0, pyaclnn.acl_dtype_of(dt), m)
    bits = np.unpackbits(m, bitorder="little")[:n].astype(bool)
    rng = np.random.default_rng(0)
    x = rng.uniform(-4, 4, n).astype(dt)
    out = np.zeros(n, dt)
    aclnn.DropoutDoMask(x, m, p, out)
    keep = np.float32(np.float32(1 - p).astype(dt))
    ref = np.where(bits, x.astype(np.float32) * (np.float32(1) / keep), 0).astype(np.float32).astype(dt)
    assert out.tobytes() == ref.tobytes()
    assert abs((out != 0).mean() - 0.7) < 0.05
    # into a wider out: rounded to self's dtype first, then cast
    wide = np.zeros(n, np.float64)
    aclnn.DropoutDoMask(x, m, p, wide)
    assert (wide == ref.astype(np.float64)).all()
    # strided self / out / mask
    xs = np.zeros(2 * n, dt)
    xs[::2] = x
    os_ = np.zeros(2 * n, dt)
    ms = np.zeros(256, np.uint8)
    ms[::2] = m
    aclnn.DropoutDoMask(xs[::2], ms[::2], p, os_[::2])
    assert os_[::2].tobytes() == ref.tobytes() and not os_[1::2].astype(np.float32).any()


def test_do_mask_special_probabilities():
    x = np.arange(1, 11, dtype=np.float32)
    m = np.zeros(16, np.uint8)  # no bit set
    out = np.zeros(10, np.float32)
    aclnn.DropoutDoMask(x, m, 0.0, out)
    assert (out == x).all()  # prob 0: a copy, whatever the mask
    out[:] = 7
    aclnn.DropoutDoMask(x, np.full(16, 255, np.uint8), 1.0, out)
    assert (out == 0).all()
    # a masked-out NaN or inf gives 0
    y = np.array([np.nan, np.inf, 1.0, 2.0], np.float32)
    mk = np.zeros(16, np.uint8)
    mk[0] = 0b1100
    o = np.full(4, 5, np.float32)
    aclnn.DropoutDoMask(y, mk, 0.5, o)
    assert o.tolist() == [0, 0, 2, 4]
    # empty self or mask: nothing is checked or written
    o = np.full(4, 5, np.float32)
    aclnn.DropoutDoMask(y, np.zeros(0, np.uint8), 0.5, o)
    assert (o == 5).all()
    aclnn.DropoutDoMask(np.zeros(0, np.float32), np.zeros(0, np.uint8), 0.5, np.zeros((0, 3), np.float16))


# ---- errors -------------------------------------------------------------------------

def test_parameter_errors():
    x = np.zeros(10, np.float32)
    code, msg = status(aclnn.InplaceNormal, x, 0.0, -1.0, 1, 0)
    assert code == INVALID and "std" in msg
    code, msg = status(aclnn.InplaceUniform, x, 2.0, 1.0, 1, 0)
    assert code == INVALID and "from" in msg
    aclnn.InplaceUniform(x, 2.0, 2.0, 1, 0)
    assert (x == 2).all()
    code, msg = status(aclnn.InplaceRandom, x, 5, 5, 1, 0)
    assert code == INVALID and "from" in msg
    code, msg = status(aclnn.InplaceBernoulli, x, 1.5, 1, 0)
    assert code == INVALID and "prob" in msg
    code, msg = status(aclnn.InplaceBernoulli, x, aclnn.scalar(1, np.int32), 1, 0)
    assert code == INVALID and "prob dtype" in msg
    code, msg = status(aclnn.Bernoulli, x, 0.5, 1, 0, np.zeros(10, np.float16))
    assert code == INVALID and "dtype" in msg
    code, msg = status(aclnn.Bernoulli, x, 0.5, 1, 0, np.zeros(11, np.float32))
    assert code == INVALID and "shape" in msg
    code, msg = status(aclnn.InplaceBernoulliTensor, x, np.zeros(3, np.float32), 1, 0)
    assert code == INVALID and "broadcast" in msg
    code, msg = status(aclnn.InplaceUniform, np.zeros(3, bool), 0.0, 1.0, 1, 0)
    assert code == INVALID and "dtype" in msg
    # seed / offset tensors
    s1 = np.array([1], np.int64)
    code, msg = status(aclnn.InplaceNormalTensor, x, 0.0, 1.0, np.array([1, 2], np.int64), s1, 0)
    assert code == INVALID and "seedTensor" in msg
    code, msg = status(aclnn.InplaceNormalTensor, x, 0.0, 1.0, s1, np.array(3, np.int64), 0)
    assert code == INVALID and "offsetTensor" in msg and "[1]" in msg
    code, msg = status(aclnn.InplaceUniformTensor, x, 0.0, 1.0, s1, np.array([1], np.int32), 0)
    assert code == INVALID and "offsetTensor" in msg and "dtype" in msg


def test_randperm_and_multinomial_errors():
    code, msg = status(aclnn.Randperm, 5, 1, 0, np.zeros(4, np.int64))
    assert code == INVALID and "[5]" in msg
    code, msg = status(aclnn.Randperm, -1, 1, 0, np.zeros(0, np.int64))
    assert code == INVALID
    code, msg = status(aclnn.Randperm, 4, 1, 0, np.zeros(4, bool))
    assert code == INVALID and "dtype" in msg
    w = np.ones((2, 4), np.float32)
    for args, text in [
        ((np.ones((2, 2, 2), np.float32), 2, True, 1, 0, np.zeros((2, 2, 2), np.int64)), "1 or 2 dims"),
        ((w, 2, True, 1, 0, np.zeros(2, np.int64)), "as many dims"),
        ((w, 3, True, 1, 0, np.zeros((2, 2), np.int64)), "numsamples"),
        ((w, 2, True, 1, 0, np.zeros((3, 2), np.int64)), "first dim"),
        ((w, 0, True, 1, 0, np.zeros((2, 0), np.int64)), "numsamples must be > 0"),
        ((w, 5, False, 1, 0, np.zeros((2, 5), np.int64)), "without replacement"),
        ((w, 2, True, 1, 0, np.zeros((2, 2), np.int32)), "out dtype"),
    ]:
        code, msg = status(aclnn.Multinomial, *args)
        assert code == INVALID and text in msg, (text, msg)


def test_launch_errors_write_nothing():
    for w, repl, text in [
        (np.array([[1, -1, 2.0]], np.float32), True, "finite and >= 0"),
        (np.array([[1, np.nan, 2.0]], np.float32), True, "finite and >= 0"),
        (np.array([[1, np.inf, 2.0]], np.float32), True, "finite and >= 0"),
        (np.array([[1, 2, 3.0], [0, 0, 0]], np.float32), True, "sum to"),
        (np.array([[1, 2, 3.0], [0, 0, 1]], np.float32), False, "non-zero"),
    ]:
        o = np.full((len(w), 2), -7, np.int64)
        code, msg = status(aclnn.Multinomial, w, 2, repl, 1, 0, o)
        assert code == RUNTIME and text in msg, msg
        assert (o == -7).all()
    x = np.full(4, 9, np.float32)
    code, msg = status(aclnn.InplaceBernoulliTensor, x, np.array([0.5, 1.5, 0, 0], np.float32), 1, 0)
    assert code == RUNTIME and "element 1" in msg
    assert (x == 9).all()


def test_mask_errors():
    m = np.zeros(16, np.uint8)
    for args, code_want, text in [
        (([100], 1.5, 1, 0, 0, m), INVALID, "prob"),
        (([100], -0.1, 1, 0, 0, m), INVALID, "prob"),
        (([100], 0.5, 1, 0, 0, np.zeros(16, np.int8)), INVALID, "dtype"),
        (([-100], 0.5, 1, 0, 0, m), INVALID, "non-negative"),
        (([2 ** 40, 2 ** 40], 0.5, 1, 0, 0, m), INVALID, "2^62"),
    ]:
        code, msg = status(aclnn.DropoutGenMaskV2, *args)
        assert code == code_want and text in msg, msg
    x = np.ones(100, np.float32)
    for args, text in [
        ((x, m, 1.5, np.zeros(100, np.float32)), "prob"),
        ((x, m, 0.5, np.zeros(99, np.float32)), "shape"),
        ((x, np.zeros(15, np.uint8), 0.5, np.zeros(100, np.float32)), "at least 16 bytes"),
        ((x, m, 0.5, np.zeros(100, np.int32)), "out dtype"),
        ((x.astype(np.float64), m, 0.5, np.zeros(100, np.float64)), "self dtype"),
        ((x, m.astype(np.int8), 0.5, np.zeros(100, np.float32)), "mask dtype"),
    ]:
        code, msg = status(aclnn.DropoutDoMask, *args)
        assert code == INVALID and text in msg, (text, msg)
