"""Expectations derived from the op table (pyaclnn.optable) for EVERY operator
it describes, implemented or not:

* the generated files (headers, descriptors, entry points, docs/operators.md)
  are what tools/gen_ops.py makes from the table;
* both entry points are exported, and declared in the header the table names;
* each required pointer parameter passed as NULL gives 161001 naming it;
* each tensor parameter with a dtype list rejects a dtype outside it (161002,
  naming the parameter and the list);
* an operator without a kernel answers 561003 naming itself, and an
  implemented one never does."""
import pathlib
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import pyaclnn
from pyaclnn import ffi, lib, optable

REPO = pathlib.Path(__file__).resolve().parents[1]
OPS = optable.OPS
HELD = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64, "s8": np.int8,
        "u8": np.uint8, "s16": np.int16, "u16": np.uint16, "s32": np.int32, "u32": np.uint32, "s64": np.int64,
        "u64": np.uint64, "bool": np.bool_}


def test_generated_files_are_fresh():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "gen_ops.py"), "--check"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout


def test_every_header_declares_its_ops(home):
    for header, ops in optable.headers().items():
        text = (pathlib.Path(home) / "include" / "aclnnop" / header).read_text()
        for o in ops:
            name = "aclnn%s%s(" % (o.name, "" if o.single else "GetWorkspaceSize")
            assert name in text, (header, o.name)
    for header in optable.EMPTY_HEADERS:
        assert (pathlib.Path(home) / "include" / "aclnnop" / header).is_file()


def test_every_entry_point_is_exported():
    for o in OPS:
        assert hasattr(lib, "aclnn" + o.name), o.name
        if not o.single:
            assert hasattr(lib, "aclnn%sGetWorkspaceSize" % o.name), o.name


class Args:
    """Valid-looking arguments for every parameter of an op: tensors of a dtype
    from the parameter's list, 2x3 (the checks under test come before any
    shape rule), scalars, arrays, numbers."""

    def __init__(self, o):
        self.o = o
        self.keep = []

    def tensor(self, dt, shape=(2, 3)):
        t = pyaclnn.Tensor.empty(shape, dt)
        self.keep.append(t)
        return t.handle

    def dtype_for(self, p):
        for d in (p.dtypes or "f32").split():
            if d in HELD:
                return HELD[d]
        return np.float32

    def value(self, p):
        k = p.kind
        if k == "TENSOR":
            return self.tensor(self.dtype_for(p))
        if k == "TENSOR_LIST":
            hs = [lib.aclCreateTensor(ffi.new("int64_t[]", [2, 3]), 2, pyaclnn.acl_dtype_of(self.dtype_for(p)),
                                      ffi.NULL, 0, lib.ACL_FORMAT_ND, ffi.new("int64_t[]", [2, 3]), 2,
                                      self.tensor(np.float32) and self.keep[-1].buffer.cdata)]
            lst = lib.aclCreateTensorList(ffi.new("aclTensor *[]", hs), 1)
            self.keep.append(lst)
            return lst
        if k == "SCALAR":
            v = np.array([1.0], np.float32)
            self.keep.append(v)
            return lib.aclCreateScalar(ffi.cast("void *", v.ctypes.data), lib.ACL_FLOAT)
        if k == "SCALAR_LIST":
            v = np.array([1.0], np.float32)
            self.keep.append(v)
            s = lib.aclCreateScalar(ffi.cast("void *", v.ctypes.data), lib.ACL_FLOAT)
            return lib.aclCreateScalarList(ffi.new("aclScalar *[]", [s]), 1)
        if k == "INT_ARRAY":
            return lib.aclCreateIntArray(ffi.new("int64_t[]", [0]), 1)
        if k == "BOOL_ARRAY":
            return lib.aclCreateBoolArray(ffi.new("bool[]", [True, True, True]), 3)
        if k == "FLOAT_ARRAY":
            return lib.aclCreateFloatArray(ffi.new("float[]", [1.0]), 1)
        if k == "DTYPE":
            return pyaclnn.acl_dtype_of(self.dtype_for(p)) if p.dtypes else lib.ACL_FLOAT
        if k == "STRING":
            s = ffi.new("char[]", b"BSND")
            self.keep.append(s)
            return s
        if k == "OUT_U64":
            return ffi.new("uint64_t *")
        return 0  # INT, FLOAT, BOOL

    def all(self):
        return [self.value(p) for p in self.o.parsed()]


def call(o, args):
    if o.single:
        rc = getattr(lib, "aclnn" + o.name)(*args)
    else:
        rc = getattr(lib, "aclnn%sGetWorkspaceSize" % o.name)(*args, ffi.new("uint64_t *"),
                                                              ffi.new("aclOpExecutor **"))
    return rc, ffi.string(lib.aclGetRecentErrMsg()).decode()


POINTER_KINDS = ("TENSOR", "TENSOR_LIST", "SCALAR", "SCALAR_LIST", "INT_ARRAY", "BOOL_ARRAY", "FLOAT_ARRAY",
                 "STRING", "OUT_U64")


@pytest.mark.parametrize("o", OPS, ids=lambda o: o.name)
def test_null_pointers(runtime, o):
    checked = 0
    for i, p in enumerate(o.parsed()):
        if p.kind not in POINTER_KINDS or p.optional:
            continue
        a = Args(o)
        args = a.all()
        args[i] = ffi.NULL
        rc, msg = call(o, args)
        assert rc == 161001, (o.name, p.name, rc, msg)
        assert p.name in msg, (o.name, p.name, msg)
        checked += 1
    assert checked or not any(p.kind in POINTER_KINDS and not p.optional for p in o.parsed())


@pytest.mark.parametrize("o", OPS, ids=lambda o: o.name)
def test_dtype_lists(runtime, o):
    """For each listed tensor parameter: a held dtype outside the list is
    refused naming the parameter (aclCreateTensor itself refuses more than 8
    dims, so no operator sees them)."""
    tried = 0
    for i, p in enumerate(o.parsed()):
        if p.kind != "TENSOR" or not p.dtypes:
            continue
        outside = [d for d in HELD if d not in p.dtypes.split()]
        a = Args(o)
        args = a.all()
        if outside:
            args[i] = a.tensor(HELD[outside[0]])
            rc, msg = call(o, args)
            assert rc == 161002 and p.name in msg and "dtype" in msg, (o.name, p.name, rc, msg)
            tried += 1
    assert tried >= 0


@pytest.mark.parametrize("o", OPS, ids=lambda o: o.name)
def test_not_implemented_status(runtime, o):
    """A valid-looking call reaches the planner: 561003 exactly for the
    operators without a kernel (any other outcome for the rest)."""
    a = Args(o)
    rc, msg = call(o, a.all())
    if o.implemented:
        assert rc != 561003, (o.name, msg)
    else:
        assert rc == 561003 and ("aclnn" + o.name) in msg and "not implemented" in msg, (o.name, rc, msg)


def test_docs_list_every_operator():
    text = (REPO / "docs" / "operators.md").read_text()
    for o in OPS:
        assert re.search(r"\| aclnn%s \|" % o.name, text), o.name
