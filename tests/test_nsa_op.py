"""aclnnNsaSelectedAttentionGrad against the float64 reference (and torch).

Every case builds a self-consistent problem: random q/k/v/dO rounded to the
input dtype, topk lists valid for each token's batch, and attention_out plus the
softmax statistics from ``pyaclnn.reference.nsa_selected_attention_forward`` on
those exact (rounded) values. The expected gradients are the float64 reference
grad of the very inputs the op receives.

Tolerances (per output): fp32 outputs max|ours - ref| <= 1e-4 * max|ref|; fp16 /
bf16 outputs |ours - ref| <= 2 ulp(ref) + 1e-4 * max|ref| elementwise. Keys that
no token selects (for a kv head) must get exactly 0.
"""
import contextlib
import dataclasses
import zlib

import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import reference as R
from tiers import supported_tiers

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
DT = {"fp32": F32, "fp16": F16, "bf16": BF16}


@pytest.fixture(autouse=True)
def high_precision(monkeypatch):
    """These are the float64 tests of PYACLNN_NSA_PRECISION=high (P and dS in fp32);
    the default npu precision is tested bit for bit in test_nsa_precision.py."""
    monkeypatch.setenv("PYACLNN_NSA_PRECISION", "high")


# --------------------------------------------------------------------------- case builder

@dataclasses.dataclass
class Case:
    query: np.ndarray
    key: np.ndarray
    value: np.ndarray
    attention_out: np.ndarray
    attention_out_grad: np.ndarray
    softmax_max: np.ndarray
    softmax_sum: np.ndarray
    topk_indices: np.ndarray
    attrs: dict  # scale_value, selected_block_size, selected_block_count, head_num,
    #             actual_seq_qlen, actual_seq_kvlen, sparse_mode

    def inputs(self):
        return (self.query, self.key, self.value, self.attention_out, self.attention_out_grad,
                self.softmax_max, self.softmax_sum, self.topk_indices)


def _topk(rng, seq_q, seq_kv, n2, block, count, sparse_mode, dup, future_rows):
    """[T1, N2, count] int32 block numbers valid for each token's batch.

    sparse_mode 2: mostly blocks at or before the token's diagonal block (so rows
    keep visible keys), filled up with later blocks; `future_rows` tokens get only
    blocks wholly after the diagonal (fully masked rows) where the batch has enough.
    dup: about half the rows repeat one of their entries.
    """
    T1 = sum(seq_q)
    topk = np.empty((T1, n2, count), np.int32)
    t = 0
    future_left = future_rows
    for sq, skv in zip(seq_q, seq_kv):
        nblk = skv // block
        for s in range(sq):
            diag = s // block
            for h in range(n2):
                if sparse_mode == 2:
                    past = rng.permutation(min(diag, nblk - 1) + 1)
                    future = rng.permutation(np.arange(diag + 1, nblk))
                    if future_left > 0 and len(future) >= count and h == 0:
                        sel = future[:count]
                        future_left -= 1
                    else:
                        sel = np.concatenate([past, future])[:count]
                else:
                    sel = rng.permutation(nblk)[:count]
                sel = rng.permutation(sel)
                if dup and count >= 2 and rng.random() < 0.5:
                    i, j = rng.choice(count, 2, replace=False)
                    sel[i] = sel[j]
                topk[t, h] = sel
            t += 1
    return topk


def make_case(seed, *, seq_q, seq_kv, n1, n2, d, dv, block, count, sparse_mode=0, dtype=F16,
              dup=False, future_rows=0, with_seq=True, scale=None):
    """A consistent problem; dtype is the input dtype (fp16 / bf16, fp32 in relaxed mode)."""
    if not with_seq:
        assert len(seq_q) == 1 and len(seq_kv) == 1
    rng = np.random.default_rng(seed)
    T1, T2 = sum(seq_q), sum(seq_kv)
    q = R.round_to(rng.standard_normal((T1, n1, d)), dtype)
    k = R.round_to(rng.standard_normal((T2, n2, d)), dtype)
    v = R.round_to(rng.standard_normal((T2, n2, dv)), dtype)
    do = R.round_to(rng.standard_normal((T1, n1, dv)), dtype)
    topk = _topk(rng, seq_q, seq_kv, n2, block, count, sparse_mode, dup, future_rows)
    attrs = dict(scale_value=float(1.0 / np.sqrt(d)) if scale is None else float(scale),
                 selected_block_size=block, selected_block_count=count, head_num=n1,
                 actual_seq_qlen=[int(x) for x in np.cumsum(seq_q)] if with_seq else None,
                 actual_seq_kvlen=[int(x) for x in np.cumsum(seq_kv)] if with_seq else None,
                 sparse_mode=sparse_mode)
    fwd = {k_: attrs[k_] for k_ in ("scale_value", "selected_block_size", "selected_block_count",
                                    "actual_seq_qlen", "actual_seq_kvlen", "sparse_mode")}
    o, smax, ssum = R.nsa_selected_attention_forward(q, k, v, topk, **fwd)
    return Case(q, k, v, R.round_to(o, dtype), do, smax.astype(np.float32), ssum.astype(np.float32),
                topk, attrs)


def reference(case, inputs=None):
    return R.nsa_selected_attention_grad(*(inputs or case.inputs()), **case.attrs)


def run_op(case, out_dtype=None, inputs=None):
    return pyaclnn.ops.nsa_selected_attention_grad(*(inputs or case.inputs()), out_dtype=out_dtype,
                                                   **case.attrs)


def never_selected(case):
    """[T2, N2] bool: True for (key, kv head) pairs no token's topk list contains."""
    T2, N2 = case.key.shape[:2]
    B = case.attrs["selected_block_size"]
    T1 = case.query.shape[0]
    cq = case.attrs["actual_seq_qlen"] or [T1]
    ckv = case.attrs["actual_seq_kvlen"] or [T2]
    used = np.zeros((T2, N2), bool)
    q0 = kv0 = 0
    for qe, kve in zip(cq, ckv):
        for t in range(q0, qe):
            for h in range(N2):
                for blk in np.unique(case.topk_indices[t, h]):
                    used[kv0 + blk * B: kv0 + (blk + 1) * B, h] = True
        q0, kv0 = qe, kve
    return ~used


def assert_close(ours, ref, out_dtype, name):
    out_dtype = np.dtype(out_dtype)
    assert ours.dtype == out_dtype, f"{name}: dtype {ours.dtype} != {out_dtype}"
    assert ours.shape == ref.shape, f"{name}: shape {ours.shape} != {ref.shape}"
    o = ours.astype(np.float64)
    assert np.all(np.isfinite(o)), f"{name}: non-finite values"
    peak = float(np.abs(ref).max())
    err = np.abs(o - ref)
    if out_dtype == F32:
        assert err.max() <= 1e-4 * peak, f"{name}: max err {err.max():.3g} > 1e-4 * {peak:.3g}"
    else:
        bound = 2 * R.ulp(ref, out_dtype) + 1e-4 * peak
        bad = np.argwhere(err > bound)
        assert bad.size == 0, (f"{name}: {len(bad)} elements out of tolerance, first at {tuple(bad[0])}: "
                               f"ours {o[tuple(bad[0])]!r} ref {ref[tuple(bad[0])]!r}")


def check_case(case, outs, out_dtype, ref=None):
    ref = reference(case) if ref is None else ref
    for name, o, r in zip(("dq", "dk", "dv"), outs, ref):
        assert_close(o, r, out_dtype, name)
    zero = never_selected(case)
    assert np.all(outs[1][zero] == 0), "dk of never-selected keys must be exactly 0"
    assert np.all(outs[2][zero] == 0), "dv of never-selected keys must be exactly 0"
    return ref


# --------------------------------------------------------------------------- random cases

# name -> make_case kwargs (input dtype and output dtype are given separately)
CASES = {
    # single batch without actual_seq, G = 1
    "g1_noseq_b16": dict(seq_q=[7], seq_kv=[128], n1=2, n2=2, d=128, dv=128, block=16, count=4,
                         with_seq=False),
    # G = 2, three batches of different lengths, MLA head dims, causal
    "g2_3batch_mla_causal": dict(seq_q=[3, 10, 16], seq_kv=[64, 128, 96], n1=4, n2=2, d=192, dv=128,
                                 block=16, count=4, sparse_mode=2, future_rows=3),
    # G = 4, longer query batches so several blocks are on/below the diagonal, duplicates
    "g4_causal_dup": dict(seq_q=[5, 23, 36], seq_kv=[64, 128, 192], n1=8, n2=2, d=128, dv=128,
                          block=16, count=4, sparse_mode=2, dup=True, future_rows=4),
    # G = 16, block 64
    "g16_b64": dict(seq_q=[6, 10], seq_kv=[256, 128], n1=16, n2=1, d=192, dv=128, block=64, count=2),
    # block 128
    "b128": dict(seq_q=[4, 4], seq_kv=[256, 384], n1=2, n2=1, d=128, dv=128, block=128, count=2,
                 dup=True),
    # count at its maximum 128 (block 16 -> 2048 keys), T1 small, duplicates
    "count128": dict(seq_q=[3], seq_kv=[2048], n1=2, n2=1, d=128, dv=128, block=16, count=128,
                     dup=True),
    # count * block at its maximum 8192 (block 64, count 128); KV length equals it
    "sel8192": dict(seq_q=[2], seq_kv=[8192], n1=1, n2=1, d=128, dv=128, block=64, count=128),
    # count 1, KV length of a batch equal to count*block, causal, D = Dv = 192
    "count1_causal": dict(seq_q=[9, 7], seq_kv=[32, 16], n1=4, n2=4, d=192, dv=192, block=16,
                          count=1, sparse_mode=2),
    # causal with block 64 and long enough queries to see the diagonal move
    "b64_causal": dict(seq_q=[70], seq_kv=[256], n1=4, n2=2, d=192, dv=128, block=64, count=3,
                       sparse_mode=2, future_rows=2, with_seq=False),
    # batch 1 selects all of its 3 blocks, batch 0 picks 3 of 6
    "all_blocks": dict(seq_q=[12, 4], seq_kv=[96, 48], n1=2, n2=1, d=128, dv=128, block=16, count=3),
}

# (case, input dtype, output dtype): every case runs once; the dtype grid runs on a mid case.
MATRIX = [
    ("g1_noseq_b16", "fp16", "fp16"),
    ("g2_3batch_mla_causal", "bf16", "bf16"),
    ("g4_causal_dup", "fp16", "fp32"),
    ("g16_b64", "bf16", "fp32"),
    ("b128", "fp16", "bf16"),
    ("count128", "bf16", "bf16"),
    ("sel8192", "fp16", "fp32"),
    ("count1_causal", "fp16", "fp16"),
    ("b64_causal", "bf16", "fp16"),
    ("all_blocks", "bf16", "bf16"),
] + [("g2_3batch_mla_causal", i, o) for i in ("fp16", "bf16") for o in ("fp16", "bf16", "fp32")
     if (i, o) != ("bf16", "bf16")]


@pytest.mark.parametrize("name,in_dt,out_dt", MATRIX, ids=["-".join(m) for m in MATRIX])
def test_random_case_vs_reference(name, in_dt, out_dt):
    case = make_case(zlib.crc32(name.encode()) % 1000 + 7, dtype=DT[in_dt], **CASES[name])
    outs = run_op(case, DT[out_dt])
    check_case(case, outs, DT[out_dt])


def _sweep_configs(n=14, seed=2024):
    """Random legal configurations covering every block size (16..128 step 16), G up to 32,
    the three head-dim pairs, both sparse modes and all dtype pairs (fixed seed: stable ids)."""
    rng = np.random.default_rng(seed)
    blocks = [16 * (i % 8 + 1) for i in range(n)]
    out = []
    for i in range(n):
        block = blocks[i]
        g = [1, 2, 4, 8, 16, 32][i % 6]
        n2 = int(rng.integers(1, 3)) if g < 32 else 1
        d, dv = [(128, 128), (192, 128), (192, 192)][i % 3]
        count = int(rng.integers(1, max(2, min(8, 512 // block)) + 1))
        nb = int(rng.integers(1, 4))
        seq_q = [int(x) for x in rng.integers(1, 48 // nb + 1, nb)]
        seq_kv = [block * int(x) for x in rng.integers(count, count + 4, nb)]
        sparse = int(rng.choice([0, 2]))
        with_seq = nb > 1 or bool(rng.integers(0, 2))
        in_dt = ["fp16", "bf16"][i % 2]
        out_dt = ["fp16", "bf16", "fp32"][(i // 2) % 3]
        kw = dict(seq_q=seq_q, seq_kv=seq_kv, n1=g * n2, n2=n2, d=d, dv=dv, block=block, count=count,
                  sparse_mode=sparse, dup=bool(i % 3 == 1), future_rows=2 if sparse else 0,
                  with_seq=with_seq)
        name = f"B{block}-G{g}-N2{n2}-D{d}-Dv{dv}-C{count}-b{nb}-sm{sparse}-{in_dt}-{out_dt}"
        out.append(pytest.param(i, kw, in_dt, out_dt, id=name))
    return out


@pytest.mark.parametrize("i,kw,in_dt,out_dt", _sweep_configs())
def test_sweep_vs_reference(i, kw, in_dt, out_dt):
    case = make_case(1000 + i, dtype=DT[in_dt], **kw)
    outs = run_op(case, DT[out_dt])
    check_case(case, outs, DT[out_dt])


def test_inconsistent_stats_and_attention_out():
    """The op takes P = exp(S - max)/sum from the GIVEN statistics (no renormalisation)
    and Dsum from the attention_out INPUT, even when they do not match a forward pass."""
    case = make_case(91, dtype=BF16, **CASES["g4_causal_dup"])
    rng = np.random.default_rng(92)
    smax = case.softmax_max + rng.uniform(-0.5, 0.5, case.softmax_max.shape[:2] + (1,)).astype(np.float32)
    ssum = case.softmax_sum * rng.uniform(0.5, 2.0, case.softmax_sum.shape[:2] + (1,)).astype(np.float32)
    ssum = np.where(case.softmax_sum == 0, 0, ssum).astype(np.float32)  # keep empty rows empty
    o = R.round_to(rng.standard_normal(case.attention_out.shape) * 0.3, BF16)
    odd = dataclasses.replace(case, softmax_max=np.broadcast_to(smax[..., :1], smax.shape).copy(),
                              softmax_sum=np.broadcast_to(ssum[..., :1], ssum.shape).copy(),
                              attention_out=o)
    outs = run_op(odd, F32)
    ref = check_case(odd, outs, F32)
    base = reference(case)
    assert np.abs(ref[0] - base[0]).max() > 0.05 * np.abs(base[0]).max()  # really a different problem


def test_only_stats_lane_0_is_read():
    """softmax_max/sum carry 8 copies; lanes 1..7 may hold anything."""
    case = make_case(93, dtype=F16, **CASES["g2_3batch_mla_causal"])
    junk = dataclasses.replace(case, softmax_max=case.softmax_max.copy(), softmax_sum=case.softmax_sum.copy())
    junk.softmax_max[..., 1:] = np.float32(1e30)
    junk.softmax_sum[..., 1:] = np.float32(-7.0)
    a = run_op(case, F32)
    b = run_op(junk, F32)
    assert _bits(a) == _bits(b)


def test_query_longer_than_kv_causal():
    """sparse_mode 2 compares batch-local positions directly: with more queries than keys,
    the late queries see every selected key."""
    kw = dict(seq_q=[40, 20], seq_kv=[32, 48], n1=4, n2=2, d=128, dv=128, block=16, count=2,
              sparse_mode=2)
    case = make_case(94, dtype=BF16, **kw)
    outs = run_op(case, BF16)
    check_case(case, outs, BF16)


def test_many_batches():
    seq_q = [1, 2, 3, 1, 5, 2, 4, 6, 3, 5]
    rng = np.random.default_rng(95)
    seq_kv = [int(x) * 16 for x in rng.integers(3, 9, len(seq_q))]
    case = make_case(96, seq_q=seq_q, seq_kv=seq_kv, n1=4, n2=1, d=192, dv=128, block=16, count=3,
                     sparse_mode=2, dtype=F16, dup=True)
    outs = run_op(case, F16)
    check_case(case, outs, F16)


def test_default_output_dtype_is_input_dtype():
    case = make_case(3, dtype=BF16, **CASES["g1_noseq_b16"])
    outs = run_op(case)
    assert [o.dtype for o in outs] == [BF16] * 3
    check_case(case, outs, BF16)


def test_sparse_mode_2_masks_future_keys_only():
    """Causal case with fully masked rows (every selected block after the token):
    those rows give exactly zero dq, the rest matches the reference."""
    case = make_case(11, dtype=F16, **CASES["g2_3batch_mla_causal"])
    dq, dk, dv = run_op(case, F32)
    check_case(case, (dq, dk, dv), F32)
    # fully masked rows: every selected block lies after the token (token s < first key)
    cq = case.attrs["actual_seq_qlen"]
    q0 = 0
    masked_rows = 0
    for qe in cq:
        for t in range(q0, qe):
            s = t - q0
            for h in range(case.key.shape[1]):
                if np.all(case.topk_indices[t, h] * case.attrs["selected_block_size"] > s):
                    G = case.query.shape[1] // case.key.shape[1]
                    assert np.all(dq[t, h * G:(h + 1) * G] == 0)
                    masked_rows += 1
        q0 = qe
    assert masked_rows > 0, "the case should contain fully masked rows"


def test_duplicate_indices_count_twice():
    """topk [b, b] contributes twice: with the same statistics, dq, dk and dv are exactly
    twice those of the single list [b] (each copy is its own softmax column)."""
    case = make_case(5, seq_q=[4], seq_kv=[64], n1=2, n2=1, d=128, dv=128, block=16, count=2,
                     dtype=F16, with_seq=False)
    case.topk_indices[:] = 1
    fwd = {k: case.attrs[k] for k in ("scale_value", "selected_block_size", "selected_block_count",
                                      "actual_seq_qlen", "actual_seq_kvlen", "sparse_mode")}
    o, smax, ssum = R.nsa_selected_attention_forward(case.query, case.key, case.value,
                                                     case.topk_indices, **fwd)
    case.attention_out = R.round_to(o, F16)
    case.softmax_max, case.softmax_sum = smax.astype(np.float32), ssum.astype(np.float32)
    double = run_op(case, F32)
    ref = check_case(case, double, F32)
    # only block 1 receives gradient
    assert np.all(double[1][:16] == 0) and np.all(double[1][32:] == 0)
    assert np.abs(double[1][16:32]).max() > 0 and np.abs(double[2][16:32]).max() > 0
    single = dataclasses.replace(case, topk_indices=case.topk_indices[:, :, :1].copy(),
                                 attrs=dict(case.attrs, selected_block_count=1))
    # count 1 needs only 16 keys per batch: the same 64-key problem stays valid
    once = run_op(single, F32)
    for name, x2, x1, r, r1 in zip(("dq", "dk", "dv"), double, once, ref, reference(single)):
        np.testing.assert_allclose(2 * r1, r, rtol=1e-12, atol=1e-12 * np.abs(r).max())
        assert np.abs(x2 - 2 * x1.astype(np.float64)).max() <= 1e-5 * np.abs(r).max(), name


def test_outputs_fully_overwritten():
    """Outputs are written everywhere (also rows no token selects): prefill with garbage."""
    case = make_case(21, dtype=BF16, **CASES["all_blocks"])
    with contextlib.ExitStack() as st:
        ins = [st.enter_context(pyaclnn.Tensor(a)) for a in case.inputs()]
        outs = [st.enter_context(pyaclnn.Tensor(np.full(a.shape, np.nan, np.float32)))
                for a in (case.query, case.key, case.value)]
        got = _two_phase(case, ins, outs)
    check_case(case, got, F32)


# --------------------------------------------------------------------------- two-phase + strided

def _two_phase(case, ins, outs, stream=None, mask=None):
    a = case.attrs
    own = stream is None
    stream = pyaclnn.Stream() if own else stream
    try:
        ws, ex = pyaclnn.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
            *ins, a["actual_seq_qlen"], a["actual_seq_kvlen"], mask, a["scale_value"],
            a["selected_block_size"], a["selected_block_count"], a["head_num"], "TND",
            a["sparse_mode"], *outs)
        buf = pyaclnn.DeviceBuffer(ws) if ws else None
        pyaclnn.aclnnNsaSelectedAttentionGrad(buf, ws, ex, stream)
        stream.synchronize()
        return tuple(t.numpy() for t in outs)
    finally:
        if own:
            stream.close()


def _strided_views(case):
    """Non-contiguous numpy views with the same values as the case inputs."""
    q, k, v, o, do, smax, ssum, topk = case.inputs()
    T1, N1, D = q.shape
    # query: the second half of a [T1, N1, 2D] array (non-zero offset, row stride 2D)
    qb = np.zeros((T1, N1, 2 * D), q.dtype)
    qb[:, :, D:] = q
    qv = qb[:, :, D:]
    # key: a transposed copy ([N2, T2, D] storage seen as [T2, N2, D])
    kv_ = np.ascontiguousarray(k.transpose(1, 0, 2)).transpose(1, 0, 2)
    # value: every other token of a twice-as-long array
    vb = np.zeros((2 * v.shape[0],) + v.shape[1:], v.dtype)
    vb[1::2] = v
    vv = vb[1::2]
    # attention_out: a Fortran-ordered copy (all strides permuted)
    ov = np.asfortranarray(o)
    dob = np.zeros(do.shape[:2] + (do.shape[2] + 8,), do.dtype)
    dob[:, :, 8:] = do
    dov = dob[:, :, 8:]
    # stats: every other lane of a [T1, N1, 16] array
    smb = np.zeros((T1, N1, 16), np.float32)
    smb[:, :, ::2] = smax
    ssb = np.zeros((T1, N1, 16), np.float32)
    ssb[:, :, 1::2] = ssum
    # topk: [T1, N2, C] inside [T1, N2 + 1, C + 2]
    tb = np.full((T1, topk.shape[1] + 1, topk.shape[2] + 2), -7, np.int32)
    tb[:, 1:, 2:] = topk
    views = (qv, kv_, vv, ov, dov, smb[:, :, ::2], ssb[:, :, 1::2], tb[:, 1:, 2:])
    for a, b in zip(views, case.inputs()):
        assert np.array_equal(a.astype(np.float64), b.astype(np.float64))
    return views


def test_noncontiguous_inputs_one_call():
    case = make_case(31, dtype=F16, **CASES["g4_causal_dup"])
    views = _strided_views(case)
    assert not any(v.flags.c_contiguous for v in views)
    ref_outs = run_op(case, F32)
    outs = run_op(case, F32, inputs=views)
    check_case(case, outs, F32)
    for a, b in zip(outs, ref_outs):
        assert np.array_equal(a, b), "strided inputs must give bitwise the same result"


def test_noncontiguous_inputs_and_outputs_two_phase():
    """Strided aclTensors on both sides; output gaps keep their sentinel."""
    case = make_case(32, dtype=BF16, **CASES["g2_3batch_mla_causal"])
    views = _strided_views(case)
    with contextlib.ExitStack() as st:
        ins = [st.enter_context(pyaclnn.Tensor(a)) for a in views]
        T1, N1, D = case.query.shape
        assert ins[0].strides == (N1 * 2 * D, 2 * D, 1) and ins[0].offset == D
        outs, bufs = [], []
        for a in (case.query, case.key, case.value):
            shape = a.shape
            # each output is every other element along the last dim of a sentinel buffer
            big = np.full(shape[:-1] + (2 * shape[-1],), -3.5, np.float32)
            buf = st.enter_context(pyaclnn.DeviceBuffer(big.nbytes))
            buf.copy_from_host(big)
            strides = (shape[1] * 2 * shape[2], 2 * shape[2], 2)
            outs.append(pyaclnn.Tensor.from_buffer(buf, shape, F32, strides=strides, offset=1))
            bufs.append((buf, big))
        got = _two_phase(case, ins, outs)
        check_case(case, got, F32)
        for (buf, big), g in zip(bufs, got):
            back = np.empty_like(big)
            buf.copy_to_host(back)
            assert np.all(back[..., 0::2] == -3.5), "elements outside the output view were written"
            assert np.array_equal(back[..., 1::2], g)
        for t in outs:
            t.close()


def test_actual_seq_given_vs_absent_single_batch():
    case = make_case(41, dtype=F16, **CASES["g1_noseq_b16"])
    with_seq = dataclasses.replace(case, attrs=dict(case.attrs, actual_seq_qlen=[7],
                                                    actual_seq_kvlen=[128]))
    a = run_op(case, F32)
    b = run_op(with_seq, F32)
    for x, y in zip(a, b):
        assert np.array_equal(x, y)
    check_case(case, a, F32)


def test_repeatable_executor_and_multiple_streams():
    case = make_case(51, dtype=F16, **CASES["g16_b64"])
    ref = reference(case)
    with contextlib.ExitStack() as st:
        ins = [st.enter_context(pyaclnn.Tensor(a)) for a in case.inputs()]
        outs = [st.enter_context(pyaclnn.Tensor.empty(a.shape, F32))
                for a in (case.query, case.key, case.value)]
        a = case.attrs
        ws, ex = pyaclnn.aclnnNsaSelectedAttentionGradGetWorkspaceSize(
            *ins, a["actual_seq_qlen"], a["actual_seq_kvlen"], None, a["scale_value"],
            a["selected_block_size"], a["selected_block_count"], a["head_num"], "TND",
            a["sparse_mode"], *outs)
        ex.set_repeatable()
        buf = st.enter_context(pyaclnn.DeviceBuffer(ws)) if ws else None
        results = []
        for _ in range(2):
            s = st.enter_context(pyaclnn.Stream())
            pyaclnn.aclnnNsaSelectedAttentionGrad(buf, ws, ex, s)
            s.synchronize()
            results.append(tuple(t.numpy() for t in outs))
        ex.destroy()
    for x, y in zip(*results):
        assert np.array_equal(x, y)
    check_case(case, results[0], F32, ref)


# --------------------------------------------------------------------------- determinism

def _bits(outs):
    return [o.view(np.uint8).tobytes() for o in outs]


DET_CASE = dict(seq_q=[5, 23, 36], seq_kv=[64, 128, 192], n1=8, n2=2, d=192, dv=128, block=16,
                count=4, sparse_mode=2, dup=True, future_rows=2)


def test_deterministic_repeat_and_thread_count(restore_runtime_knobs):
    case = make_case(61, dtype=BF16, **DET_CASE)
    first = run_op(case, F32)
    assert _bits(first) == _bits(run_op(case, F32)), "two identical calls differ"
    pyaclnn.set_num_threads(1)
    one = run_op(case, F32)
    pyaclnn.set_num_threads(3)
    three = run_op(case, F32)
    assert _bits(one) == _bits(three), "result depends on the thread count"
    check_case(case, one, F32)


@pytest.mark.parametrize("out_dt", ["fp32", "bf16"])
def test_isa_tiers_bitwise_equal(restore_runtime_knobs, out_dt):
    case = make_case(71, dtype=F16, **DET_CASE)
    ref = reference(case)
    results = {}
    for tier in supported_tiers():
        pyaclnn.set_max_isa(tier)
        assert pyaclnn.get_isa() == tier
        a = run_op(case, DT[out_dt])
        b = run_op(case, DT[out_dt])
        assert _bits(a) == _bits(b), f"{tier}: not deterministic"
        check_case(case, a, DT[out_dt], ref)
        results[tier] = a
    scalar = results["scalar"]
    for tier, outs in results.items():  # the scalar oracle defines the bits
        assert _bits(outs) == _bits(scalar), f"{tier} differs from scalar"


# --------------------------------------------------------------------------- torch oracle

TORCH_CASES = ["g2_3batch_mla_causal", "g4_causal_dup", "count1_causal", "b128", "g1_noseq_b16"]


@pytest.mark.parametrize("name", TORCH_CASES)
def test_vs_torch_oracle(name):
    pytest.importorskip("torch")
    try:
        from tests import oracles as O
    except ImportError:
        import oracles as O
    case = make_case(zlib.crc32(name.encode()) % 1000 + 100, dtype=BF16, **CASES[name])
    t = O.torch_nsa_grad(*case.inputs(), **case.attrs)
    ref = reference(case)
    for x, y in zip(t, ref):  # the two float64 formulations agree closely
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9 * float(np.abs(y).max()))
    outs = run_op(case, F32)
    for n, o, x in zip(("dq", "dk", "dv"), outs, t):
        assert_close(o, x, F32, n)


# --------------------------------------------------------------------------- several token tiles

def test_several_token_tiles_relaxed(monkeypatch, restore_runtime_knobs):
    """A problem whose P/dS tiles hold only a few tokens (N1 = 256, 8192 selected keys:
    16 MiB per token), so the op walks several token tiles and a short last one. Needs
    the relaxed mode for N1 = 256 / G = 128 and D = 16. The float64 reference runs per
    token (sparse_mode 0: tokens are independent; dk/dv add up)."""
    monkeypatch.setenv("PYACLNN_NSA_RELAXED", "1")
    rng = np.random.default_rng(81)
    T1, N1, N2, D, Dv, B, C, T2 = 9, 256, 2, 16, 16, 128, 64, 8192
    q = R.round_to(rng.standard_normal((T1, N1, D)), BF16)
    k = R.round_to(rng.standard_normal((T2, N2, D)), BF16)
    v = R.round_to(rng.standard_normal((T2, N2, Dv)), BF16)
    do = R.round_to(rng.standard_normal((T1, N1, Dv)), BF16)
    topk = np.stack([[rng.permutation(T2 // B)[:C] for _ in range(N2)] for _ in range(T1)]).astype(np.int32)
    topk[4, 1, :2] = topk[4, 1, 2]  # a few duplicates
    kw = dict(scale_value=0.25, selected_block_size=B, selected_block_count=C)
    fwd = [R.nsa_selected_attention_forward(q[t:t + 1], k, v, topk[t:t + 1], **kw) for t in range(T1)]
    o = R.round_to(np.concatenate([f[0] for f in fwd]), BF16)
    smax = np.concatenate([f[1] for f in fwd]).astype(np.float32)
    ssum = np.concatenate([f[2] for f in fwd]).astype(np.float32)
    dq, dk, dv = [], 0.0, 0.0
    for t in range(T1):
        a, b, c = R.nsa_selected_attention_grad(q[t:t + 1], k, v, o[t:t + 1], do[t:t + 1], smax[t:t + 1],
                                                ssum[t:t + 1], topk[t:t + 1], head_num=N1, **kw)
        dq.append(a)
        dk, dv = dk + b, dv + c
    ref = (np.concatenate(dq), dk, dv)
    args = (q, k, v, o, do, smax, ssum, topk)
    pyaclnn.set_num_threads(1)
    one = pyaclnn.ops.nsa_selected_attention_grad(*args, head_num=N1, out_dtype=F32, **kw)
    pyaclnn.set_num_threads(3)
    three = pyaclnn.ops.nsa_selected_attention_grad(*args, head_num=N1, out_dtype=F32, **kw)
    assert _bits(one) == _bits(three)
    for name, x, r in zip(("dq", "dk", "dv"), one, ref):
        assert_close(x, r, F32, name)
    bf = pyaclnn.ops.nsa_selected_attention_grad(*args, head_num=N1, **kw)
    for name, x, r in zip(("dq", "dk", "dv"), bf, ref):
        assert_close(x, r, BF16, name)


def test_concurrent_calls_from_threads():
    """Two Python threads (each with its own helper stream) running different problems
    at the same time get bitwise the results of serial calls."""
    import threading
    cases = [make_case(101, dtype=F16, **CASES["g4_causal_dup"]),
             make_case(102, dtype=BF16, **CASES["g16_b64"])]
    serial = [run_op(c, F32) for c in cases]
    results, errors = {}, []

    def work(i):
        try:
            pyaclnn.ensure_initialized()
            results[i] = [run_op(cases[i], F32) for _ in range(3)]
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    for i in range(2):
        for outs in results[i]:
            assert _bits(outs) == _bits(serial[i])
