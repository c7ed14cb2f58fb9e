"""The entry points a CANN toolkit has for torch_npu beyond the operators
(native/compat/): the implemented ones, and every stand-in's not-supported status
with aclGetRecentErrMsg() naming it; the libraries and folders of the toolkit."""
import ctypes
import subprocess

import pytest

import pyaclnn
from pyaclnn import ffi, lib


def errmsg():
    m = lib.aclGetRecentErrMsg()
    return ffi.string(m).decode() if m != ffi.NULL else ""


@pytest.fixture(scope="module")
def libascendcl(home):
    return ctypes.CDLL(str(home / "lib64" / "libascendcl.so"))


def test_toolkit_layout(home):
    for name in ("libascendcl.so", "libnnopbase.so", "libopapi.so", "libacl_op_compiler.so", "libge_runner.so",
                 "libgraph.so", "libacl_tdt_channel.so", "libhccl.so", "libatb.so"):
        assert (home / "lib64" / name).is_file(), name
    for d in ("opp", "runtime", "compiler"):
        assert (home / d).is_dir(), d
    env = subprocess.run(["bash", "-c", 'source "$1" && echo "$ASCEND_OPP_PATH"', "_", str(home / "set_env.sh")],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
    assert env == str(home / "opp")


@pytest.mark.parametrize("name", ["libacl_op_compiler.so", "libge_runner.so", "libgraph.so", "libacl_tdt_channel.so"])
def test_shims_depend_on_libascendcl(home, name):
    """One runtime per process: the other CANN libraries are empty and need libascendcl.so."""
    out = subprocess.run(["readelf", "-d", "-W", str(home / "lib64" / name)],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert "[libascendcl.so]" in out
    syms = subprocess.run(["nm", "-D", "--defined-only", str(home / "lib64" / name)],
                          stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert not [s for s in syms.split() if s.startswith(("acl", "Acl", "Hccl", "ge", "_Z"))]


def test_libatb_exports_only_atb(home):
    out = subprocess.run(["nm", "-D", "--defined-only", "-C", str(home / "lib64" / "libatb.so")],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    names = [ln.split(" ", 2)[2] for ln in out.splitlines() if " T " in ln]
    assert len(names) == 12 and all(n.startswith(("atb::", "int atb::")) for n in names), names


@pytest.mark.parametrize("call,status,name", [
    (lambda: lib.aclrtBinaryLoadFromData(b"x", 1, ffi.NULL, ffi.new("aclrtBinHandle *")),
     "ACL_ERROR_API_NOT_SUPPORT", "aclrtBinaryLoadFromData"),
    (lambda: lib.aclrtBinaryGetFunction(ffi.NULL, b"k", ffi.new("aclrtFuncHandle *")),
     "ACL_ERROR_API_NOT_SUPPORT", "aclrtBinaryGetFunction"),
    (lambda: lib.aclrtGetFunctionAddr(ffi.NULL, ffi.new("void **"), ffi.new("void **")),
     "ACL_ERROR_API_NOT_SUPPORT", "aclrtGetFunctionAddr"),
    (lambda: lib.aclrtMemExportToShareableHandle(ffi.NULL, 0, 0, ffi.new("uint64_t *")),
     "ACL_ERROR_API_NOT_SUPPORT", "aclrtMemExportToShareableHandle"),
    (lambda: lib.aclrtMemImportFromShareableHandle(1, 0, ffi.new("aclrtDrvMemHandle *")),
     "ACL_ERROR_API_NOT_SUPPORT", "aclrtMemImportFromShareableHandle"),
    (lambda: lib.aclrtMemSetPidToShareableHandle(1, ffi.new("int32_t *"), 1),
     "ACL_ERROR_API_NOT_SUPPORT", "aclrtMemSetPidToShareableHandle"),
    (lambda: lib.aclmdlInitDump(), "ACL_ERROR_API_NOT_SUPPORT", "aclmdlInitDump"),
    (lambda: lib.aclmdlSetDump(b"/tmp/dump.json"), "ACL_ERROR_API_NOT_SUPPORT", "aclmdlSetDump"),
    (lambda: lib.aclmdlFinalizeDump(), "ACL_ERROR_API_NOT_SUPPORT", "aclmdlFinalizeDump"),
])
def test_not_supported_acl(runtime, call, status, name):
    assert call() == getattr(lib, status)
    assert errmsg().startswith(name + ": not supported by pyaclnn (")


@pytest.mark.parametrize("name,args,want", [
    ("rtKernelLaunch", (None, 1, None, 0, None, None), 207000),
    ("rtDevBinaryRegister", (None, None), 207000),
    ("rtFunctionRegister", (None, None, b"k", None, 0), 207000),
    ("rtGetC2cCtrlAddr", (None, None), 207000),
    ("MsprofReportApi", (0, None), -1),
    ("MsprofReportCompactInfo", (0, None, 0), -1),
    ("MsprofReportAdditionalInfo", (0, None, 0), -1),
])
def test_not_supported_internal(runtime, libascendcl, name, args, want):
    """CANN's libruntime / libmsprofiler calls (not AscendCL, no header)."""
    fn = getattr(libascendcl, name)
    fn.restype = ctypes.c_int32
    assert fn(*args) == want
    assert errmsg().startswith(name + ": not supported by pyaclnn (")


def test_profiler_clock_hash_and_callback(runtime, libascendcl):
    libascendcl.MsprofSysCycleTime.restype = ctypes.c_uint64
    a = libascendcl.MsprofSysCycleTime()
    assert libascendcl.MsprofSysCycleTime() >= a > 0
    libascendcl.MsprofGetHashId.restype = ctypes.c_uint64
    h = libascendcl.MsprofGetHashId
    assert h(b"aclnnAdd", 8) == h(b"aclnnAdd", 8) != h(b"aclnnMul", 8)
    cb_type = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32)
    cb = cb_type(lambda *a: 0)
    libascendcl.MsprofRegisterCallback.restype = ctypes.c_int32
    assert libascendcl.MsprofRegisterCallback(1, cb) == 0
    assert libascendcl.MsprofRegisterCallback(1000, cb) == -1 and "moduleId" in errmsg()
    assert libascendcl.MsprofRegisterCallback(1, None) == -1


def test_compile_options(runtime):
    size = lib.aclGetCompileoptSize(lib.ACL_OP_JIT_COMPILE)
    buf = ffi.new("char[]", size)
    assert lib.aclGetCompileopt(lib.ACL_OP_JIT_COMPILE, buf, size) == 0 and ffi.string(buf) == b"disable"
    assert lib.aclSetCompileopt(lib.ACL_OP_DEBUG_OPTION, b"oom") == 0
    assert lib.aclGetCompileopt(lib.ACL_OP_DEBUG_OPTION, buf, size) == 0 and ffi.string(buf) == b"oom"
    assert lib.aclGetCompileopt(lib.ACL_OP_DEBUG_OPTION, buf, 3) == lib.ACL_ERROR_INVALID_PARAM
    assert "too small" in errmsg()
    assert lib.aclSetCompileopt(lib.ACL_OP_DEBUG_OPTION, ffi.NULL) == lib.ACL_ERROR_INVALID_PARAM
    assert lib.aclSetCompileopt(lib.ACL_OP_DEBUG_OPTION, b"x" * size) == lib.ACL_ERROR_INVALID_PARAM
    assert lib.aclSetCompileopt(lib.ACL_OP_JIT_COMPILE, b"sometimes") == lib.ACL_ERROR_INVALID_PARAM
    assert lib.aclGetCompileopt(lib.ACL_OP_JIT_COMPILE, ffi.NULL, size) == lib.ACL_ERROR_INVALID_PARAM
    assert lib.aclGetCompileoptSize(99) == 0 and "aclCompileOpt" in errmsg()
    assert lib.aclopSetCompileFlag(5) == lib.ACL_ERROR_INVALID_PARAM


def test_device_settings_and_versions(runtime):
    mode = ffi.new("aclrtFloatOverflowMode *")
    assert lib.aclrtSetDeviceSatMode(lib.ACL_RT_OVERFLOW_MODE_INFNAN) == 0
    assert lib.aclrtGetDeviceSatMode(mode) == 0 and mode[0] == lib.ACL_RT_OVERFLOW_MODE_INFNAN
    assert lib.aclrtSetDeviceSatMode(lib.ACL_RT_OVERFLOW_MODE_SATURATION) == lib.ACL_ERROR_FEATURE_UNSUPPORTED
    assert "IEEE" in errmsg()
    assert lib.aclrtGetDeviceSatMode(ffi.NULL) == lib.ACL_ERROR_INVALID_PARAM
    pid = ffi.new("int32_t *")
    assert lib.aclrtDeviceGetBareTgid(pid) == 0 and pid[0] > 0
    v = ffi.new("char[]", 128)
    for pkg in (b"CANN", b"RUNTIME", b"runtime", b"ops_transformer"):
        assert lib.aclsysGetVersionStr(pkg, v) == 0 and ffi.string(v).decode() == pyaclnn.get_cann_version()
    assert lib.aclsysGetVersionStr(b"nope", v) == lib.ACL_ERROR_INVALID_FILE and "nope" in errmsg()
    assert lib.aclsysGetVersionStr(ffi.NULL, v) == lib.ACL_ERROR_INVALID_PARAM
    value = ffi.new("int32_t *")
    for attr, want in ((lib.ACL_CANN_ATTR_INF_NAN, 1), (lib.ACL_CANN_ATTR_BF16, 1),
                       (lib.ACL_CANN_ATTR_JIT_COMPILE, 0)):
        assert lib.aclGetCannAttribute(attr, value) == 0 and value[0] == want
    assert lib.aclGetCannAttribute(7, value) == lib.ACL_ERROR_INVALID_PARAM
    attrs, n = ffi.new("aclCannAttr **"), ffi.new("size_t *")
    assert lib.aclGetCannAttributeList(ffi.cast("const aclCannAttr **", attrs), n) == 0 and n[0] == 3
