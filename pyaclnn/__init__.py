"""pyaclnn: Huawei CANN's AscendCL + aclnn C API, emulated on the CPU.

Layers, from raw to convenient:

* ``pyaclnn.lib`` / ``pyaclnn.ffi``: the C functions and constants (cffi, ABI
  mode), bound to the bundled CPU library or to a CANN toolkit (see
  ``PYACLNN_BACKEND``; :func:`backend`, :func:`library_paths`).
* runtime helpers: :func:`init`, :class:`Stream`, :class:`Event`,
  :class:`DeviceBuffer`, ... raising :class:`AclError`.
* :class:`Tensor` (numpy <-> aclTensor) and the two-phase operator functions
  under their C names, e.g. :func:`aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize`.
* one-call helpers on numpy arrays: :func:`scaled_masked_softmax`,
  :func:`scaled_masked_softmax_backward`, :func:`nsa_selected_attention`,
  :func:`nsa_selected_attention_grad` (module ``pyaclnn.ops``).
* ``pyaclnn.reference``: float64 numpy references of the ops (imported on
  first use).
* ``pyaclnn.hccl``: HCCL communicators and collectives between the emulated
  devices (imported on first use).

Every integer constant of the headers (``ACL_FLOAT``, ``ACL_FORMAT_ND``,
``ACLNN_ERR_PARAM_NULLPTR``, ...) is also an attribute of this module.
"""
import os as _os

from ._ffi import HOME as _HOME
from ._ffi import BackendError, backend, constants as _constants, ffi, has_extensions, lib, library_paths
from ._errors import AclError, check, status_name
from .runtime import *  # noqa: F401,F403
from .runtime import __all__ as _runtime_all
from .tensor import SUPPORTED_DTYPES, Tensor, acl_dtype_of, as_dtype
from ._twophase import *  # noqa: F401,F403
from ._twophase import __all__ as _twophase_all
from .ops import (nsa_selected_attention, nsa_selected_attention_grad, scaled_masked_softmax,
                  scaled_masked_softmax_backward)

__version__ = "0.1.0"

globals().update(_constants())


def __getattr__(name):
    # Submodules that `import pyaclnn` does not load until first used.
    if name in ("reference", "hccl"):
        import importlib

        module = importlib.import_module("." + name, __name__)
        globals()[name] = module
        return module
    raise AttributeError("module 'pyaclnn' has no attribute %r" % name)


def home():
    """The toolkit root shipped in the package (include/, lib64/, set_env.sh, samples/)."""
    return _HOME


def include_dir():
    return _os.path.join(_HOME, "include")


def lib_dir():
    return _os.path.join(_HOME, "lib64")


def cflags():
    """Compiler flags for C/C++ code using the bundled headers."""
    return "-I%s" % include_dir()


def libs():
    """Linker flags for the bundled libraries (with an rpath, so no LD_LIBRARY_PATH is needed)."""
    d = lib_dir()
    return "-L%s -lascendcl -lnnopbase -lopapi -Wl,-rpath,%s" % (d, d)


__all__ = [
    "ffi", "lib", "backend", "library_paths", "has_extensions", "BackendError",
    "AclError", "check", "status_name",
    "Tensor", "SUPPORTED_DTYPES", "as_dtype", "acl_dtype_of",
    "scaled_masked_softmax", "scaled_masked_softmax_backward", "nsa_selected_attention",
    "nsa_selected_attention_grad",
    "home", "include_dir", "lib_dir", "cflags", "libs",
] + list(_runtime_all) + list(_twophase_all)
