"""Headers in step with CANN and with Python (status macros, GE codes, every
header reachable by the cdef), the reported CANN version and SoC, the emulated
device-memory capacity, and the plain-C VMM sample built with CMake."""
import os
import re
import shutil
import subprocess
import sys

import pytest

import pyaclnn
from pyaclnn import _ffi, lib

from conftest import REPO

INCLUDE = REPO / "include"
sys.path.insert(0, str(REPO / "tools"))
import gen_cdef  # noqa: E402

CC = os.environ.get("CC", "cc")
MIB = 1 << 20
GIB = 1 << 30


def header_text(rel):
    return (INCLUDE / rel).read_text()


# ---------------------------------------------------------------- headers

def test_runtime_status_codes_are_macros_with_cann_values():
    text = header_text("acl/error_codes/rt_error_codes.h")
    assert "static const" not in text
    codes = dict((n, int(v)) for n, v in re.findall(r"^#define\s+(ACL_\w+)\s+(\d+)\s*$", text, re.M))
    assert len(codes) == 145
    # the ranges the issue named, and a sample of values read from CANN's header
    for v in list(range(507037, 507046)) + list(range(507048, 507053)) + [507054, 507902, 507903] + \
            list(range(107024, 107035)):
        assert v in codes.values(), v
    assert codes["ACL_RT_SUCCESS"] == 0
    assert codes["ACL_ERROR_RT_MEMORY_ALLOCATION"] == 207001
    assert codes["ACL_ERROR_STREAM_CAPTURE_CONFLICT"] == 107032
    assert codes["ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC"] == 107041
    assert codes["ACL_ERROR_RT_CCU_EXCEPTION"] == 507916
    assert len(set(codes.values())) == len(codes)
    # every one reaches Python as a constant with the same value
    consts = _ffi.constants()
    for name, value in codes.items():
        assert consts[name] == value, name
    assert pyaclnn.status_name(207001) == "ACL_ERROR_RT_MEMORY_ALLOCATION"


def test_all_38_ge_codes():
    text = header_text("acl/error_codes/ge_error_codes.h")
    codes = dict((n, int(v)) for n, v in re.findall(r"static const uint32_t (ACL_ERROR_GE_\w+)\s*=\s*(\d+)U;", text))
    assert len(codes) == 38
    assert codes["ACL_ERROR_GE_PARAM_INVALID"] == 145000
    assert codes["ACL_ERROR_GE_DATA_NOT_ALIGNED"] == 345104
    assert codes["ACL_ERROR_GE_REDEPLOYING"] == 545602
    consts = _ffi.constants()
    assert {n: consts[n] for n in codes} == codes


def test_every_integer_macro_of_the_headers_reaches_python(tmp_path):
    """gen_cdef must not drop a macro: compare with the preprocessor's own list."""
    if shutil.which(CC.split()[0]) is None:
        pytest.skip("no C compiler")
    umbrella = tmp_path / "all.h"
    umbrella.write_text("".join('#include "%s"\n' % h for h in gen_cdef.all_headers(str(INCLUDE))))
    out = subprocess.run(CC.split() + ["-E", "-dM", "-I", str(INCLUDE), "-x", "c", str(umbrella)],
                         check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    ours = set()
    for name, value in re.findall(r"^#define\s+([A-Za-z]\w*)\s+(.*?)\s*$", out, re.M):
        if re.match(r"^-?(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*$", value) and name.startswith(("ACL", "aclnn", "ACLNN")):
            ours.add(name)
    assert len(ours) > 150
    missing = sorted(ours - set(_ffi.CONSTANT_NAMES))
    assert not missing, "integer macros of include/ missing from the cdef: %s" % missing


def test_every_header_is_reachable_by_the_cdef(tmp_path):
    """A header that gen_cdef's list neither names nor includes would never reach Python."""
    if shutil.which(CC.split()[0]) is None:
        pytest.skip("no C compiler")
    reached = set()
    umbrella = tmp_path / "all.h"
    umbrella.write_text("".join('#include "%s"\n' % h for h in gen_cdef.all_headers(str(INCLUDE))))
    out = subprocess.run(CC.split() + ["-M", "-I", str(INCLUDE), "-x", "c", str(umbrella)],
                         check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    for dep in out.replace("\\\n", " ").split()[1:]:
        p = os.path.realpath(dep)
        if p.startswith(str(INCLUDE)):
            reached.add(os.path.relpath(p, str(INCLUDE)))
    # the 8.1-era path only re-includes the current header
    aliases = {"aclnnop/level2/aclnn_scaled_masked_softmax_backward.h"}
    headers = {str(p.relative_to(INCLUDE)) for p in INCLUDE.rglob("*.h")}
    assert not headers - reached - aliases, "not reachable from tools/gen_cdef.py all_headers()"


def test_level2_path_declares_the_same_function(tmp_path):
    if shutil.which(CC.split()[0]) is None:
        pytest.skip("no C compiler")
    src = tmp_path / "both.c"
    src.write_text('#include "aclnnop/level2/aclnn_scaled_masked_softmax_backward.h"\n'
                   '#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"\n'
                   "aclnnStatus (*f)(void *, uint64_t, aclOpExecutor *, const aclrtStream) = "
                   "aclnnScaledMaskedSoftmaxBackward;\n")
    subprocess.run(CC.split() + ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                                 "-I", str(INCLUDE), str(src)], check=True)


def test_deprecated_declarations_warn_like_cann(tmp_path):
    if shutil.which(CC.split()[0]) is None:
        pytest.skip("no C compiler")
    src = tmp_path / "dep.c"
    src.write_text('#include "acl/acl.h"\n'
                   "int f(aclrtEvent e, aclrtEventStatus *s) { return aclrtQueryEvent(e, s); }\n"
                   "size_t g(const aclDataBuffer *b) { return aclGetDataBufferSize(b); }\n")
    proc = subprocess.run(CC.split() + ["-std=c11", "-fsyntax-only", "-I", str(INCLUDE), str(src)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0
    assert "aclrtQueryEvent is deprecated, use aclrtQueryEventStatus instead" in proc.stdout
    assert "aclGetDataBufferSize is deprecated" in proc.stdout


def test_status_macros_work_in_a_c_switch(tmp_path):
    if shutil.which(CC.split()[0]) is None:
        pytest.skip("no C compiler")
    src = tmp_path / "sw.c"
    src.write_text('#include "acl/acl.h"\n'
                   "int f(int rc) { switch (rc) { case ACL_RT_SUCCESS: return 0;"
                   " case ACL_ERROR_RT_PARAM_INVALID: return 1; case ACL_ERROR_RT_MEMORY_ALLOCATION: return 2;"
                   " default: return 3; } }\n"
                   "#ifndef ACL_ERROR_RT_MEMORY_ALLOCATION\n#error not a macro\n#endif\n")
    subprocess.run(CC.split() + ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                                 "-I", str(INCLUDE), str(src)], check=True)


# ---------------------------------------------------------------- version, SoC, capacity

def run_py(code, **env):
    e = dict(os.environ)
    for k in ("PYACLNN_SOC_NAME", "PYACLNN_DEVICE_MEMORY"):
        e.pop(k, None)
    e.update(env)
    proc = subprocess.run([sys.executable, "-c", code], env=e, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


PROBE = """
import pyaclnn
pyaclnn.ensure_initialized()
free, total = pyaclnn.get_mem_info()
print(pyaclnn.get_soc_name(), total, free)
"""


def host_ram_limit():
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGESIZE")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                lim = int(f.read().split()[0])
        except (OSError, ValueError):
            continue
        if 0 < lim < ram:
            ram = lim
    return ram


def default_capacity(hbm):
    return min(hbm, host_ram_limit() // 2) // (2 * MIB) * (2 * MIB)


def test_version_is_one_cann_release(runtime):
    assert pyaclnn.get_cann_version() == "8.3.RC1"
    assert pyaclnn.get_version() == (1, 15, 0)
    assert (lib.ACL_MAJOR_VERSION, lib.ACL_MINOR_VERSION) == (1, 15)
    v = _ffi.ffi.new("aclCANNPackageVersion *")
    for pkg in range(lib.ACL_PKG_NAME_CANN, lib.ACL_PKG_NAME_DRIVER + 1):
        assert lib.aclsysGetCANNVersion(pkg, v) == 0
        fields = [_ffi.ffi.string(getattr(v, f)).decode()
                  for f in ("version", "majorVersion", "minorVersion", "releaseVersion", "patchVersion")]
        assert fields == ["8.3.RC1", "8", "3", "RC1", "0"]
    assert _ffi.ffi.sizeof("aclCANNPackageVersion") == 128 * 2 + 64 * 4
    assert lib.aclsysGetCANNVersion(8, v) == lib.ACL_ERROR_INVALID_PARAM
    assert "aclCANNPackageName (0..7), got 8" in pyaclnn.get_recent_err_msg()
    assert lib.aclsysGetCANNVersion(0, _ffi.ffi.NULL) == lib.ACL_ERROR_INVALID_PARAM
    assert "version must not be NULL" in pyaclnn.get_recent_err_msg()


def test_default_soc_and_capacity():
    out, err = run_py(PROBE)
    soc, total, free = out.split()
    assert soc == "Ascend910B3" and "Ascend910B" in soc
    assert int(total) == default_capacity(64 * GIB)
    assert int(free) <= int(total)
    assert err == ""


def test_soc_from_the_environment():
    out, _ = run_py(PROBE, PYACLNN_SOC_NAME="ascend910b4")
    soc, total, _free = out.split()
    assert soc == "Ascend910B4" and int(total) == default_capacity(32 * GIB)
    out, err = run_py(PROBE, PYACLNN_SOC_NAME="Ascend310P3")
    assert out.split()[0] == "Ascend910B3"
    assert 'ignoring PYACLNN_SOC_NAME="Ascend310P3"' in err


@pytest.mark.parametrize("value,expected", [("64M", 64 * MIB), ("3g", 3 * GIB), ("1GiB", GIB),
                                            ("123456789", 123456789), ("2048KB", 2 * MIB)])
def test_capacity_from_the_environment(value, expected):
    out, err = run_py(PROBE, PYACLNN_DEVICE_MEMORY=value)
    assert int(out.split()[1]) == expected and err == ""


@pytest.mark.parametrize("value", ["12Q", "0", "-5M", "M", "99999999999999999999", "20000000T"])
def test_bad_capacity_is_ignored_with_a_warning(value):
    out, err = run_py(PROBE, PYACLNN_DEVICE_MEMORY=value)
    assert int(out.split()[1]) == default_capacity(64 * GIB)
    assert 'ignoring PYACLNN_DEVICE_MEMORY="%s"' % value in err


def test_allocation_stops_at_the_capacity_without_touching_host_memory():
    code = """
import pyaclnn
from pyaclnn import lib, ffi
def rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * 4096
pyaclnn.ensure_initialized()
free0, total = pyaclnn.get_mem_info()
r0 = rss()
p = ffi.new('void **')
ptrs = []
while True:
    rc = lib.aclrtMalloc(p, 100 << 20, 0)
    if rc:
        break
    ptrs.append(p[0])
print(rc, len(ptrs), total, rss() - r0, pyaclnn.get_recent_err_msg())
free1, _ = pyaclnn.get_mem_info()
for q in ptrs:
    assert lib.aclrtFree(q) == 0
free2, _ = pyaclnn.get_mem_info()
print(free0 - free1, free2 == free0)
"""
    out, _ = run_py(code, PYACLNN_DEVICE_MEMORY="1G")
    line1, line2 = out.splitlines()
    rc, n, total, grown, msg = line1.split(" ", 4)
    assert int(rc) == 207001 and int(total) == GIB
    assert int(n) == GIB // ((100 << 20) + 32) == 10
    assert int(grown) < 16 * MIB, "host memory grew by %s bytes" % grown
    assert "device memory exhausted" in msg and "PYACLNN_DEVICE_MEMORY" in msg
    used, back = line2.split()
    assert int(used) == 10 * ((100 << 20) + 32) and back == "True"


# ---------------------------------------------------------------- the C sample

def test_c_vmm_sample_builds_with_cmake_and_runs(home, tmp_path):
    if shutil.which("cmake") is None or shutil.which(CC.split()[0]) is None:
        pytest.skip("cmake or a C compiler is missing")
    env = dict(os.environ, ASCEND_HOME_PATH=str(home))
    build = tmp_path / "build"
    for cmd in (["cmake", "-S", str(home / "samples"), "-B", str(build)],
                ["cmake", "--build", str(build), "--target", "vmm_pool_softmax_backward"]):
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True)
        assert proc.returncode == 0, proc.stdout
    proc = subprocess.run([str(build / "vmm_pool_softmax_backward")], stdout=subprocess.PIPE,
                          universal_newlines=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    assert "SoC Ascend910B3, CANN 8.3.RC1" in proc.stdout
    assert "aclrtSetDevice(7) -> ACL_ERROR_RT_INVALID_DEVICEID" in proc.stdout
    assert "4 chunks of 2048 KiB" in proc.stdout and proc.stdout.rstrip().endswith("PASSED")


def test_c_vmm_sample_is_plain_c(home, tmp_path):
    if shutil.which(CC.split()[0]) is None:
        pytest.skip("no C compiler")
    src = home / "samples" / "vmm_pool_softmax_backward.c"
    subprocess.run(CC.split() + ["-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                                 "-I", str(home / "include"), str(src)], check=True)
