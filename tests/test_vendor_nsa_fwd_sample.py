"""The vendor's C++ example for aclnnNsaSelectedAttention, compiled in place and
unchanged with the documented link line, runs to completion.

It prints attentionOut [1024, 16, 128] as ``attention out result is: %f`` with an
int64 and an aclFloat16 passed to %f (undefined behaviour: the printed numbers
carry no meaning), so the test checks the exit status and the line count
(2,097,152), counted from the pipe without keeping the ~75 MB of output. Its
cleanup passes the ADDRESSES of its stream and context variables to
aclrtDestroyStream / aclrtDestroyContext; a second program checks that the
runtime refuses such bogus handles with an error status instead of crashing.
"""
import hashlib
import pathlib
import subprocess
import textwrap

REPO = pathlib.Path(__file__).resolve().parents[1]
VENDOR_SAMPLE = REPO.parent / "shared" / "samples" / "forward" / "aclnn_nsa_selected_attention.cpp"
EXPECTED_LINES = 2 * 512 * 16 * 128


def test_vendor_forward_sample_compiles_and_runs(compile_program):
    assert VENDOR_SAMPLE.is_file(), "vendor sample missing: %s" % VENDOR_SAMPLE
    digest = hashlib.sha256(VENDOR_SAMPLE.read_bytes()).hexdigest()
    exe = compile_program(VENDOR_SAMPLE)
    proc = subprocess.Popen([str(exe)], cwd=exe.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    prefix = b"attention out result is: "
    results = others = 0
    other_lines = []
    for line in proc.stdout:
        if line.startswith(prefix):
            results += 1
        else:
            others += 1
            if len(other_lines) < 20:
                other_lines.append(line)
    stderr = proc.stderr.read()
    rc = proc.wait(timeout=600)
    assert rc == 0, "exit %d\nother lines: %r\nstderr: %s" % (rc, other_lines, stderr[-2000:])
    assert results == EXPECTED_LINES, results
    assert others == 0, other_lines
    assert hashlib.sha256(VENDOR_SAMPLE.read_bytes()).hexdigest() == digest, "the sample was modified"


BOGUS_HANDLES = textwrap.dedent(r"""
    #include <cstdio>
    #include "acl/acl.h"
    int main() {
        if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 10;
        aclrtContext context;
        aclrtStream stream;
        if (aclrtCreateContext(&context, 0) != ACL_SUCCESS) return 11;
        if (aclrtSetCurrentContext(context) != ACL_SUCCESS) return 12;
        if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 13;
        /* what the vendor sample's FreeResource does: addresses of the variables */
        aclError s = aclrtDestroyStream(&stream);
        aclError c = aclrtDestroyContext(&context);
        std::printf("destroy(&stream)=%d destroy(&context)=%d\n", (int)s, (int)c);
        if (s == ACL_SUCCESS || c == ACL_SUCCESS) return 20;
        /* the real handles are still alive and usable */
        if (aclrtSynchronizeStream(stream) != ACL_SUCCESS) return 21;
        if (aclrtDestroyStream(stream) != ACL_SUCCESS) return 22;
        if (aclrtDestroyContext(context) != ACL_SUCCESS) return 23;
        aclrtResetDevice(0);
        aclFinalize();
        std::printf("ok\n");
        return 0;
    }
""")


def test_destroy_with_address_of_handle_is_refused(compile_program, tmp_path):
    src = tmp_path / "bogus_handles.cpp"
    src.write_text(BOGUS_HANDLES)
    exe = compile_program(src)
    proc = subprocess.run([str(exe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout.strip().endswith("ok")
