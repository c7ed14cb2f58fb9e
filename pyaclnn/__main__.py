"""Command line: python -m pyaclnn {home,info,cflags,libs,demo}

home    print the toolkit root (include/, lib64/, set_env.sh, samples/)
info    print the backend, the loaded libraries and the runtime description
cflags  print the compiler flags for the bundled headers
libs    print the linker flags for the bundled libraries
demo    build and run the C and C++ samples with gcc / g++, run the Python samples, and
        check the results against pyaclnn.reference
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import pyaclnn

SAMPLE = "scaled_masked_softmax_backward"
NSA_SAMPLE = "nsa_selected_attention_grad"
VMM_SAMPLE = "vmm_pool_softmax_backward"


def samples_dir():
    """The installed samples (``<home>/samples``), or the source tree's."""
    for d in (os.path.join(pyaclnn.home(), "samples"),
              os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "samples")):
        if os.path.isfile(os.path.join(d, SAMPLE + ".cpp")):
            return d
    raise SystemExit("pyaclnn: the samples are not installed (looked in %s/samples)" % pyaclnn.home())


def compile_command(source, home=None, compiler=None):
    """The documented build line for an aclnn program against the toolkit:
    ``g++ app.cpp -I<home>/include -L<home>/lib64 -lascendcl -lnnopbase -lopapi
    -Wl,-rpath,<home>/lib64`` ($CXX or g++; $CC or gcc for a .c file)."""
    home = home or pyaclnn.home()
    source = str(source)
    if compiler is None:
        compiler = (os.environ.get("CC", "gcc") if source.endswith(".c")
                    else os.environ.get("CXX", "g++"))
    return [compiler, source, "-I%s/include" % home, "-L%s/lib64" % home,
            "-lascendcl", "-lnnopbase", "-lopapi", "-Wl,-rpath,%s/lib64" % home]


def cmd_home(_args):
    print(pyaclnn.home())


def cmd_cflags(_args):
    print(pyaclnn.cflags())


def cmd_libs(_args):
    print(pyaclnn.libs())


def cmd_info(_args):
    print("pyaclnn %s" % pyaclnn.__version__)
    print("home:     %s" % pyaclnn.home())
    print("backend:  %s" % pyaclnn.backend())
    for path in pyaclnn.library_paths():
        print("library:  %s" % path)
    if pyaclnn.has_extensions():
        print("runtime:  %s" % json.dumps(pyaclnn.runtime_info(), sort_keys=True))
    else:
        print("runtime:  (runtime_info is a pyaclnn extension: not available in the cann backend)")


def _run(cmd, cwd):
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        raise SystemExit("pyaclnn demo: %s exited with status %d" % (cmd[0], proc.returncode))


def _check_dump(dump):
    """Compare the C++ program's output with the float64 reference."""
    from pyaclnn import reference

    def load(name, dtype, shape):
        return np.fromfile(os.path.join(dump, name), dtype).reshape(shape)

    with open(os.path.join(dump, "meta.txt")) as f:
        b, n, s1, s2, mb, mn, scale = f.read().split()
    shape = (int(b), int(n), int(s1), int(s2))
    grad = load("grad.bin", np.float32, shape)
    y = load("y.bin", np.float32, shape)
    mask = load("mask.bin", np.uint8, (int(mb), int(mn), shape[2], shape[3])).astype(bool)
    out = load("out.bin", np.float32, shape)
    ref = reference.scaled_masked_softmax_backward(grad, y, mask, float(scale))
    err = float(np.max(np.abs(out.astype(np.float64) - ref)))
    print("C++ result vs pyaclnn.reference (float64): max abs error %.3g over %d values"
          % (err, out.size))
    if not err <= 1e-5:
        raise SystemExit("pyaclnn demo: the C++ result differs from the reference")


def cmd_demo(args):
    home = pyaclnn.home()
    src_dir = samples_dir()
    tmp = tempfile.mkdtemp(prefix="pyaclnn_demo_")
    try:
        print("== toolkit: %s (%s backend in this process)" % (home, pyaclnn.backend()))
        print("== 1. build the C++ two-phase sample with the CANN-style link line")
        shutil.copy(os.path.join(src_dir, SAMPLE + ".cpp"), os.path.join(tmp, "app.cpp"))
        _run(compile_command("app.cpp", home, args.cxx), tmp)
        print("\n== 2. run it")
        dump = os.path.join(tmp, "dump")
        os.mkdir(dump)
        _run([os.path.join(tmp, "a.out"), "--dump", dump], tmp)
        _check_dump(dump)
        print("\n== 3. the same flow from Python (pyaclnn two-phase API), on the inputs of step 2")
        _run([sys.executable, os.path.join(src_dir, SAMPLE + ".py"), "--inputs", dump], tmp)
        print("\n== 4. aclnnNsaSelectedAttentionGrad: build and run its C++ sample"
              " (it checks itself against a double-precision loop)")
        shutil.copy(os.path.join(src_dir, NSA_SAMPLE + ".cpp"), os.path.join(tmp, "nsa.cpp"))
        _run(compile_command("nsa.cpp", home, args.cxx) + ["-o", "nsa"], tmp)
        _run([os.path.join(tmp, "nsa")], tmp)
        print("\n== 5. the same op from Python (one call and two phases, vs pyaclnn.reference)")
        _run([sys.executable, os.path.join(src_dir, NSA_SAMPLE + ".py")], tmp)
        print("\n== 6. plain C: a growing virtual-memory pool (aclrtReserveMemAddress / aclrtMallocPhysical /"
              " aclrtMapMem) feeding the softmax backward, included through the CANN 8.1 path aclnnop/level2/")
        shutil.copy(os.path.join(src_dir, VMM_SAMPLE + ".c"), os.path.join(tmp, "vmm.c"))
        _run(compile_command("vmm.c", home) + ["-lm", "-o", "vmm"], tmp)
        _run([os.path.join(tmp, "vmm")], tmp)
        print("\ndemo OK")
    finally:
        if args.keep:
            print("(kept %s)" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m pyaclnn", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="pyaclnn %s: Huawei CANN's aclnn and AscendCL API on the CPU." % pyaclnn.__version__,
        epilog=__doc__.split("\n", 2)[2].rstrip() + "\n\nThe benchmark: python -m pyaclnn.bench --help")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("home", help="print the toolkit root").set_defaults(fn=cmd_home)
    sub.add_parser("info", help="print backend, libraries, runtime info").set_defaults(fn=cmd_info)
    sub.add_parser("cflags", help="print compiler flags").set_defaults(fn=cmd_cflags)
    sub.add_parser("libs", help="print linker flags").set_defaults(fn=cmd_libs)
    demo = sub.add_parser("demo", help="build and run the samples")
    demo.add_argument("--cxx", default=None, help="C++ compiler (default: $CXX or g++)")
    demo.add_argument("--keep", action="store_true", help="keep the temporary build directory")
    demo.set_defaults(fn=cmd_demo)
    args = parser.parse_args(argv)
    args.fn(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
