"""A CMake project written the way CANN's current operator docs write theirs
(include dirs under the toolkit, link `opapi_math` / `opapi_nn` by name, not
`opapi`) builds against pyaclnn's toolkit and runs an operator of each."""
import shutil
import subprocess

import pytest

CMAKE = """cmake_minimum_required(VERSION 3.14)
project(opapi_repos CXX)
set(CMAKE_CXX_STANDARD 11)
set(TOOLKIT $ENV{ASCEND_TOOLKIT_HOME})
include_directories(${TOOLKIT}/include ${TOOLKIT}/include/aclnn)
link_directories(${TOOLKIT}/lib64)
add_executable(app main.cpp)
target_link_libraries(app ascendcl nnopbase opapi_math opapi_nn)
"""

MAIN = r"""
#include <cstdio>
#include <vector>
#include "acl/acl.h"
#include "aclnnop/aclnn_mul.h"
#include "aclnnop/aclnn_relu.h"

static aclTensor *tensor(std::vector<float> &host, void **dev) {
    int64_t n = (int64_t)host.size(), st = 1;
    aclrtMalloc(dev, host.size() * 4, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(*dev, host.size() * 4, host.data(), host.size() * 4, ACL_MEMCPY_HOST_TO_DEVICE);
    return aclCreateTensor(&n, 1, ACL_FLOAT, &st, 0, ACL_FORMAT_ND, &n, 1, *dev);
}

int main() {
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
    aclrtStream s;
    aclrtCreateStream(&s);
    std::vector<float> a = {1, -2, 3, -4}, b = {2, 2, 2, 2}, o(4);
    void *da, *db, *dout;
    aclTensor *ta = tensor(a, &da), *tb = tensor(b, &db), *to = tensor(o, &dout);
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;
    if (aclnnMulGetWorkspaceSize(ta, tb, to, &ws, &ex) != 0 || aclnnMul(nullptr, 0, ex, s) != 0) return 2;
    if (aclnnInplaceReluGetWorkspaceSize(to, &ws, &ex) != 0 || aclnnInplaceRelu(nullptr, 0, ex, s) != 0) return 3;
    aclrtSynchronizeStream(s);
    aclrtMemcpy(o.data(), 16, dout, 16, ACL_MEMCPY_DEVICE_TO_HOST);
    std::printf("%g %g %g %g\n", o[0], o[1], o[2], o[3]);
    aclDestroyTensor(ta), aclDestroyTensor(tb), aclDestroyTensor(to);
    aclrtFree(da), aclrtFree(db), aclrtFree(dout);
    aclrtDestroyStream(s);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
"""


def test_per_repository_libraries_exist(home):
    for name in ("opapi_math", "opapi_nn", "opapi_cv", "opapi_transformer", "opapi"):
        assert (home / "lib64" / ("lib%s.so" % name)).is_file(), name


def test_vendor_style_cmake_project(home, tmp_path):
    if shutil.which("cmake") is None or shutil.which("g++") is None:
        pytest.fail("cmake and g++ are needed (the test extra's build tools)")
    (tmp_path / "CMakeLists.txt").write_text(CMAKE)
    (tmp_path / "main.cpp").write_text(MAIN)
    env = {"ASCEND_TOOLKIT_HOME": str(home), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    build = tmp_path / "build"
    for cmd in (["cmake", "-S", str(tmp_path), "-B", str(build)], ["cmake", "--build", str(build)]):
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=300)
        assert proc.returncode == 0, proc.stdout
    env["LD_LIBRARY_PATH"] = str(home / "lib64")
    proc = subprocess.run([str(build / "app")], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=60)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.split() == ["2", "0", "6", "0"]
