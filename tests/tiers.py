"""The ISA tiers the kernel tests compare bit for bit (the restore_runtime_knobs
fixture in conftest.py puts the thread count and tier cap back afterwards)."""
import numpy as np

import pyaclnn

ISA_TIERS = ("scalar", "avx2", "avx512", "avx512bf16")


def supported_tiers():
    """The tiers this host can run, lowest first (scalar only off x86)."""
    detected = pyaclnn.runtime_info().get("detected_isa", "scalar")
    if detected not in ISA_TIERS:
        return ["scalar"]
    return list(ISA_TIERS[:ISA_TIERS.index(detected) + 1])


def bits(a):
    """The bytes of an array, for bit-for-bit comparisons."""
    return np.ascontiguousarray(a).view(np.uint8).tobytes()

