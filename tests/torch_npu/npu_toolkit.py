"""Run by tests/test_torch_npu.py with set_env.sh's environment: the real torch_npu
loads on pyaclnn's toolkit through torch's device-backend autoload, and its eager
device API works (availability, devices, set_device, synchronize, the SoC name,
memory statistics, streams, events, the CANN version and compile mode)."""
import sys

import torch  # loads torch_npu by itself (torch's device-backend autoload)

AUTOLOADED = "torch_npu" in sys.modules

import torch_npu  # noqa: E402
from torch_npu.testing.testcase import TestCase, run_tests  # noqa: E402

import pyaclnn  # noqa: E402
from pyaclnn import ffi, lib  # noqa: E402


class TestToolkit(TestCase):
    # (torch_npu's TestCase.assertEqual takes a tolerance as its third argument)
    def test_autoload_and_library(self):
        self.assertTrue(AUTOLOADED, "import torch did not load torch_npu")
        # torch_npu runs on the very libascendcl.so pyaclnn's bindings use: one runtime
        maps = open("/proc/self/maps").read()
        libs = {ln.split()[-1] for ln in maps.splitlines() if ln.endswith("libascendcl.so")}
        self.assertTrue(len(libs) == 1 and next(iter(libs)).startswith(pyaclnn.home()), libs)

    def test_device_api(self):
        self.assertTrue(torch.npu.is_available())
        count = ffi.new("uint32_t *")
        self.assertEqual(lib.aclrtGetDeviceCount(count), 0)
        self.assertEqual(torch.npu.device_count(), count[0])
        self.assertEqual(torch.npu.get_device_name(0), pyaclnn.get_soc_name())
        self.assertEqual(torch.npu.get_device_name(0)[:10], "Ascend910B")   # the vendor tests' check
        torch.npu.set_device(0)
        self.assertEqual(torch.npu.current_device(), 0)
        torch.npu.synchronize()
        props = torch.npu.get_device_properties(0)
        self.assertEqual(props.name, pyaclnn.get_soc_name())

    def test_memory(self):
        torch.npu.set_device(0)
        free, total = torch.npu.mem_get_info()
        self.assertEqual(total, pyaclnn.get_mem_info()[1])
        self.assertLessEqual(free, total)
        before = torch.npu.memory_allocated()
        x = torch.ones(1 << 20, device="npu")
        self.assertGreaterEqual(torch.npu.memory_allocated() - before, 4 << 20)
        self.assertGreaterEqual(torch.npu.max_memory_allocated(), torch.npu.memory_allocated())
        self.assertGreaterEqual(torch.npu.memory_reserved(), torch.npu.memory_allocated())
        self.assertIn("allocated_bytes.all.current", torch.npu.memory_stats())
        del x
        torch.npu.empty_cache()
        self.assertLess(torch.npu.memory_reserved(), 4 << 20)

    def test_streams_and_events(self):
        x = torch.arange(4096, dtype=torch.float32).npu()
        s = torch.npu.Stream()
        start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
        with torch.npu.stream(s):
            start.record()
            y = x + 1
            end.record()
        torch.npu.current_stream().wait_event(end)
        end.synchronize()
        self.assertTrue(end.query())
        self.assertGreaterEqual(start.elapsed_time(end), 0.0)
        s.synchronize()
        self.assertTrue(s.query())
        self.assertTrue(torch.equal(y.cpu(), torch.arange(4096, dtype=torch.float32) + 1))

    def test_versions_and_compile_mode(self):
        version = ffi.new("aclCANNPackageVersion *")
        self.assertEqual(lib.aclsysGetCANNVersion(lib.ACL_PKG_NAME_CANN, version), 0)
        self.assertEqual(torch_npu.utils.get_cann_version(), ffi.string(version.version).decode())
        self.assertTrue(torch.npu.is_jit_compile_false())     # prebuilt kernels: what pyaclnn's ops are
        torch.npu.set_compile_mode(jit_compile=False)
        buf = ffi.new("char[]", lib.aclGetCompileoptSize(lib.ACL_OP_JIT_COMPILE))
        self.assertEqual(lib.aclGetCompileopt(lib.ACL_OP_JIT_COMPILE, buf, len(buf)), 0)
        self.assertEqual(ffi.string(buf), b"disable")


if __name__ == "__main__":
    run_tests()
