"""The cffi declarations against the headers and the library (drift both ways)."""
import os
import shutil
import subprocess
import sys

import pytest

import pyaclnn
from pyaclnn import _ffi

from conftest import REPO

GEN = REPO / "tools" / "gen_cdef.py"


def generate(tmp_path, name="cdef.h"):
    out = tmp_path / name
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc.split()[0]) is None:
        pytest.skip("C compiler %s not found" % cc)
    subprocess.run([sys.executable, str(GEN), "--cc", cc, "--include", str(REPO / "include"),
                    "--out", str(out)], check=True)
    return out.read_text()


def test_installed_cdef_matches_headers(tmp_path, home):
    installed = (home / "share" / "cdef.h").read_text()
    assert generate(tmp_path) == installed, \
        "share/cdef.h is stale: reinstall (pip install .) after changing include/"


def test_generation_is_deterministic(tmp_path):
    assert generate(tmp_path, "a.h") == generate(tmp_path, "b.h")


def test_cdef_keeps_integer_macros_only(home):
    text = (home / "share" / "cdef.h").read_text()
    defines = [line for line in text.splitlines() if line.startswith("#")]
    assert "#define ACLNN_ERR_PARAM_NULLPTR 161001" in defines
    assert "#define ACL_UNKNOWN_RANK 0xFFFFFFFFFFFFFFFE" in defines
    for line in defines:
        name = line.split()[1]
        assert line.startswith("#define ") and not name.startswith("_") and "(" not in name, line
    assert "#include" not in text and "__attribute__" not in text


def test_constants_come_from_the_headers():
    assert pyaclnn.lib.ACL_BF16 == pyaclnn.ACL_BF16 == 27
    assert pyaclnn.ACL_FORMAT_ND == 2
    assert pyaclnn.ACLNN_ERR_PARAM_NULLPTR == 161001
    assert pyaclnn.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT == 507046
    assert pyaclnn.ACL_EVENT_RECORDED_STATUS_COMPLETE == 1


def test_every_declared_function_resolves():
    skip_ext = not pyaclnn.has_extensions()
    missing = []
    for name in _ffi.FUNCTION_NAMES:
        if skip_ext and name.startswith(_ffi.EXT_PREFIX):
            continue
        try:
            getattr(pyaclnn.lib, name)
        except AttributeError:
            missing.append(name)
    assert not missing, "declared in include/ but not exported: %s" % missing
    assert len(_ffi.FUNCTION_NAMES) > 100


def exported_symbols(path):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm not found")
    out = subprocess.run([nm, "-D", "--defined-only", path], check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    return {line.split()[-1] for line in out.splitlines() if len(line.split()) >= 3}


def test_every_exported_api_symbol_is_declared():
    lib_path = pyaclnn.library_paths()[0]
    assert os.path.basename(lib_path) == "libascendcl.so"
    api = {s for s in exported_symbols(lib_path) if s.startswith(("acl", "Acl", "Hccl"))}
    if pyaclnn.has_extensions():
        api |= {s for s in exported_symbols(lib_path) if s.startswith(_ffi.EXT_PREFIX)}
    undeclared = sorted(api - set(_ffi.FUNCTION_NAMES))
    assert not undeclared, "exported but missing from include/: %s" % undeclared
    assert "aclnnScaledMaskedSoftmaxBackward" in api


@pytest.mark.skipif("not pyaclnn.has_extensions()", reason="bundled libraries only")
def test_shim_libraries_export_no_api():
    # libnnopbase / libopapi only forward to libascendcl: one runtime per process.
    for path in pyaclnn.library_paths()[1:]:
        assert not {s for s in exported_symbols(path) if s.startswith(("acl", "Acl"))}, path
