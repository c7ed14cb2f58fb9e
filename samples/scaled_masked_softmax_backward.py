"""Backward of a causal attention softmax with aclnnScaledMaskedSoftmaxBackward,
from Python, through pyaclnn's two-phase API (the same flow as the C++ sample).

    python scaled_masked_softmax_backward.py [--inputs DIR]

It builds attention probabilities y = softmax(scale * logits) under a causal
mask and a random upstream gradient dy, runs the operator on a stream, and
compares the result with pyaclnn.reference (float64). Exits non-zero on failure.
With --inputs DIR it takes dy, y, the mask and the scale from the files the C++
sample writes with --dump DIR instead, so both print dx[0,0] of the same data,
and checks that its result equals the C++ one bit for bit.
"""
import argparse
import os
import sys

import ml_dtypes
import numpy as np

import pyaclnn
from pyaclnn import reference

B, N, S1, S2 = 2, 2, 8, 8
SCALE = 1.0 / np.sqrt(8.0)  # 1/sqrt(head_dim) for head_dim = 8


def make_inputs(rng):
    """Causal mask [1,1,S1,S2] (True = masked), softmax outputs y and dy (float32)."""
    mask = np.triu(np.ones((S1, S2), dtype=bool), k=1)[None, None]
    logits = rng.uniform(-4.0, 4.0, size=(B, N, S1, S2)) * SCALE
    z = np.where(mask, -10000.0, logits)
    p = np.exp(z - z.max(axis=-1, keepdims=True))
    y = (p / p.sum(axis=-1, keepdims=True)).astype(np.float32)
    dy = rng.uniform(-1.0, 1.0, size=(B, N, S1, S2)).astype(np.float32)
    return dy, y, mask


def load_inputs(dump):
    """dy, y, mask, scale and the C++ result from the C++ sample's --dump directory."""
    with open(os.path.join(dump, "meta.txt")) as f:
        b, n, s1, s2, mb, mn, scale = f.read().split()
    shape = (int(b), int(n), int(s1), int(s2))
    load = lambda name, dtype, shp: np.fromfile(os.path.join(dump, name), dtype).reshape(shp)
    mask = load("mask.bin", np.uint8, (int(mb), int(mn), shape[2], shape[3])).astype(bool)
    return (load("grad.bin", np.float32, shape), load("y.bin", np.float32, shape), mask, float(scale),
            load("out.bin", np.float32, shape))


def two_phase(dy, y, mask, stream):
    """Phase 1 (plan) and phase 2 (launch) on `stream`; returns dx as numpy."""
    with pyaclnn.Tensor(dy) as dy_t, pyaclnn.Tensor(y) as y_t, pyaclnn.Tensor(mask) as mask_t, \
            pyaclnn.Tensor.empty(dy.shape, dy.dtype) as out_t:
        size, executor = pyaclnn.aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(
            dy_t, y_t, mask_t, SCALE, False, out_t)
        workspace = pyaclnn.DeviceBuffer(size) if size else None
        try:
            pyaclnn.aclnnScaledMaskedSoftmaxBackward(workspace, size, executor, stream)
            stream.synchronize()  # like CANN: wait before reading the output
        finally:
            if workspace is not None:
                workspace.close()
        return out_t.numpy(), size


def main(argv=None):
    global SCALE
    parser = argparse.ArgumentParser(description="aclnnScaledMaskedSoftmaxBackward from Python")
    parser.add_argument("--inputs", metavar="DIR", help="use the inputs the C++ sample dumped to DIR")
    args = parser.parse_args(argv)
    cpp_dx = None
    if args.inputs:
        dy, y, mask, SCALE, cpp_dx = load_inputs(args.inputs)
        print("inputs: the C++ sample's (from %s)" % args.inputs)
    else:
        dy, y, mask = make_inputs(np.random.default_rng(2024))
        print("inputs: random (seed 2024); --inputs DIR takes the C++ sample's instead")
    ref = reference.scaled_masked_softmax_backward(dy, y, mask, SCALE)
    ok = True

    with pyaclnn.Stream() as stream:
        print("backend: %s" % pyaclnn.backend())

        # float32, contiguous inputs.
        dx, size = two_phase(dy, y, mask, stream)
        err = float(np.max(np.abs(dx - ref)))
        print("aclnnScaledMaskedSoftmaxBackward: dy, y %s float32, causal mask %s, scale %.6f, "
              "workspace %d bytes" % (list(dy.shape), list(mask.shape), SCALE, size))
        print("dx[0,0] (rows = queries, columns = keys; masked entries are 0):")
        print(np.array2string(dx[0, 0], precision=6, suppress_small=True, max_line_width=120))
        print("largest |row sum of dx| = %.3g (softmax gradients sum to 0 per row)"
              % np.max(np.abs(dx.sum(axis=-1, dtype=np.float64))))
        print("float32:  max |dx - reference| = %.3g" % err)
        ok &= err <= 1e-5
        if cpp_dx is not None:
            same = bool(np.array_equal(dx.view(np.uint32), cpp_dx.view(np.uint32)))
            print("float32:  equal bit for bit to the C++ sample's dx: %s" % same)
            ok &= same

        # bfloat16 through a strided view: every other key column of a wider
        # array, passed as a non-contiguous aclTensor over one allocation.
        wide = np.zeros((B, N, S1, 2 * S2), dtype=ml_dtypes.bfloat16)
        wide[..., ::2] = dy
        dy16 = wide[..., ::2]
        y16 = y.astype(ml_dtypes.bfloat16)
        dx16, _ = two_phase(dy16, y16, mask, stream)
        ref16 = reference.scaled_masked_softmax_backward(dy16, y16, mask, SCALE)
        tol = reference.ulp(ref16, "bfloat16") + 1e-6
        err16 = float(np.max(np.abs(dx16.astype(np.float64) - ref16) / tol))
        print("bfloat16 (strided view, %s elements stride): max |dx - reference| = %.2f ulp"
              % (dy16.strides[-1] // dy16.itemsize, err16))
        ok &= err16 <= 1.0

    # The same computation in one call.
    dx1 = pyaclnn.scaled_masked_softmax_backward(dy, y, mask, SCALE)
    print("one-call pyaclnn.scaled_masked_softmax_backward equals the two-phase result: %s"
          % bool(np.array_equal(dx1, dx)))
    ok &= bool(np.array_equal(dx1, dx))

    print("PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
