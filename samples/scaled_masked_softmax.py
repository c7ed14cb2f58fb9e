"""Causal attention probabilities with aclnnScaledMaskedSoftmax, from Python,
through pyaclnn's two-phase API (the same flow as the C++ sample).

    python scaled_masked_softmax.py

It runs the operator on random logits under a causal mask (one query row fully
masked), in float32 and as a strided bfloat16 view, then the backward on the
forward's y, and compares everything with pyaclnn.reference (float64). Exits
non-zero on failure.
"""
import sys

import ml_dtypes
import numpy as np

import pyaclnn
from pyaclnn import reference

B, N, S1, S2 = 2, 2, 8, 8
SCALE = 1.0 / np.sqrt(8.0)


def two_phase(x, mask, stream):
    """Phase 1 (plan) and phase 2 (launch) on `stream`; returns y as numpy."""
    with pyaclnn.Tensor(x) as x_t, pyaclnn.Tensor(mask) as mask_t, \
            pyaclnn.Tensor.empty(x.shape, x.dtype) as y_t:
        size, executor = pyaclnn.aclnnScaledMaskedSoftmaxGetWorkspaceSize(x_t, mask_t, SCALE, False, y_t)
        workspace = pyaclnn.DeviceBuffer(size) if size else None
        try:
            pyaclnn.aclnnScaledMaskedSoftmax(workspace, size, executor, stream)
            stream.synchronize()
        finally:
            if workspace is not None:
                workspace.close()
        return y_t.numpy()


def main():
    rng = np.random.default_rng(7)
    x = rng.uniform(-4.0, 4.0, size=(B, N, S1, S2)).astype(np.float32)
    mask = np.triu(np.ones((S1, S2), dtype=bool), k=1)[None, None].copy()
    mask[..., S1 - 1, :] = True  # a padding query row: fully masked -> uniform 1/S2
    ok = True
    with pyaclnn.Stream() as stream:
        print("backend: %s" % pyaclnn.backend())
        y = two_phase(x, mask, stream)
        ref = reference.scaled_masked_softmax(x, mask, SCALE)
        err = float(np.max(np.abs(y - ref)))
        print("aclnnScaledMaskedSoftmax: x %s float32, mask %s, scale %.6f" % (list(x.shape), list(mask.shape), SCALE))
        print("y[0,0] (rows = queries, columns = keys):")
        print(np.array2string(y[0, 0], precision=6, suppress_small=True, max_line_width=120))
        print("float32:  max |y - reference| = %.3g" % err)
        ok &= err <= 1e-6

        # bfloat16 through a strided view (every other column of a wider array)
        wide = np.zeros((B, N, S1, 2 * S2), dtype=ml_dtypes.bfloat16)
        wide[..., ::2] = x
        x16 = wide[..., ::2]
        y16 = two_phase(x16, mask, stream)
        ref16 = reference.scaled_masked_softmax(x16, mask, SCALE)
        err16 = float(np.max(np.abs(y16.astype(np.float64) - ref16) / reference.ulp(ref16, "bfloat16")))
        print("bfloat16 (strided view): max |y - reference| = %.2f ulp" % err16)
        ok &= err16 <= 1.0

    # one call, and the backward on the forward's y (masked positions get 0 gradient)
    y1 = pyaclnn.scaled_masked_softmax(x, mask, SCALE)
    same = bool(np.array_equal(y1, y))
    print("one-call pyaclnn.scaled_masked_softmax equals the two-phase result: %s" % same)
    dy = rng.uniform(-1.0, 1.0, size=x.shape).astype(np.float32)
    dx = pyaclnn.scaled_masked_softmax_backward(dy, y1, mask, SCALE)
    dref = reference.scaled_masked_softmax_backward(dy, y1, mask, SCALE)
    derr = float(np.max(np.abs(dx - dref)))
    print("backward on y: max |dx - reference| = %.3g; fully masked row gradient is 0: %s"
          % (derr, bool(np.all(dx[..., S1 - 1, :] == 0))))
    ok &= same and derr <= 1e-5

    print("PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
