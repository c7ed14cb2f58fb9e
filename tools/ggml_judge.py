#!/usr/bin/env python3
"""Judge pyaclnn with llama.cpp's CANN backend (ggml-cann) and its test-backend-ops.

llama.cpp's CANN backend is built, unchanged, against pyaclnn's toolkit root (the
output of ``python -m pyaclnn home``: CANN's include/ and lib64/), and its
``test-backend-ops`` compares every ggml op it sends to ``CANN0`` with the CPU
backend's reference implementation. Plain Python 3, standard library only.

Usage::

    python tools/ggml_judge.py fetch                 # llama.cpp sources into the cache
    python tools/ggml_judge.py build [--archs]       # configure + (incremental) build
    python tools/ggml_judge.py run [OP ...]          # one process per ggml op, summary table
    python tools/ggml_judge.py all [OP ...]          # fetch + build + run
    python tools/ggml_judge.py list-ops              # the ops CANN0 claims, with case counts
    python tools/ggml_judge.py archs [-a REGEX]      # test-llama-archs on CANN0, per arch

    python tools/ggml_judge.py run ADD MUL GET_ROWS --json out.json --markdown out.md
    python tools/ggml_judge.py run -p 'type=f32' ADD  # only cases whose params match
    python tools/ggml_judge.py run --ops-file tests/ggml_expected.txt

Global options (before or after the command):

``--cache DIR``      cache directory (env ``PYACLNN_GGML_CACHE``; default
                     ``~/.cache/pyaclnn/llama.cpp-0.3.36``, under ``$XDG_CACHE_HOME`` if set).
                     It holds ``sdist/`` (the downloaded tarball), ``llama.cpp/`` (the
                     extracted ``vendor/llama.cpp``) and one ``build-<key>/`` per toolkit.
``--sdist FILE``     use this local ``llama_cpp_python-0.3.36.tar.gz`` instead of
                     downloading it (env ``PYACLNN_GGML_SDIST``); it is checked against
                     the sha256 of the PyPI file.
``--toolkit DIR``    the toolkit root (default: ``python -m pyaclnn home`` run with this
                     interpreter, outside the source tree so the installed package answers).

fetch
    ``python -m pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36``
    into ``CACHE/sdist``, then extracts only ``vendor/llama.cpp`` into ``CACHE/llama.cpp``
    and removes its dangling ``.git`` file. Done once (a stamp records the sdist's
    sha256). Exit status 3 means the sdist could not be obtained because there is no
    network (and nothing is cached); any other failure is status 1.

build
    ``cmake -G Ninja`` (make if ninja is missing) with ``-DGGML_CANN=ON
    -DSOC_TYPE=Ascend910B3 -DCANN_INSTALL_DIR=<toolkit>``, tests on, examples / server /
    tools / app off, OpenSSL off, ccache off, Release (with the per-target optimisation
    levels of tools/ggml_judge_build.cmake: -O0 for llama-common, -O1 for libllama, ggml
    and the test programs at -O3); then ``nice cmake --build -j2
    --target test-backend-ops`` (``--archs``: also ``test-llama-archs``). The build
    directory is ``CACHE/build-<key>``, the key hashing the toolkit's real path, the
    machine (architecture and CPU flags: ggml's CPU backend is built with its default
    ``GGML_NATIVE``, i.e. ``-march=native``, so a cache restored on another CPU model gets
    its own build) and the configure options. libggml-cann links the toolkit's
    libraries through its RUNPATH, so reinstalling pyaclnn at the same place needs no
    new configure; the incremental build still always runs (ninja recompiles what the
    changed headers touch: ~15 s for ggml-cann's three sources and the relinks, against
    3-4 minutes from scratch on 2 cores, 8 under load). A build dir configured by another
    generator or moved is reconfigured from scratch. ``--native/--no-native`` forces
    ``GGML_NATIVE``; ``--cmake-arg ARG`` (repeatable) adds configure arguments; ``-j N``
    the build jobs; ``-v`` shows the whole output (else only the steps and errors; all
    of it is in ``judge-build.log``). On failure the first compiler/linker errors are
    summarised (missing headers, undeclared identifiers, undefined symbols). A lock
    file serialises concurrent fetches / builds sharing the cache.

run
    Runs ``test-backend-ops test -b CANN0 -o OP`` once per op (a failing aclnn call
    aborts the whole process with SIGABRT), ``-j`` processes at a time (default
    min(2, CPUs)), the ops with most cases first, each with ``--timeout`` seconds
    (default 900). Without OP arguments (or ``--ops-file``) it runs every op CANN0 claims
    at least one case of (``test-backend-ops support -b CANN0``; ``--all-ops``: every op of
    ``--list-ops``). For each op it reports the cases passed / run, the failing cases
    (name and the error test-backend-ops printed, e.g. ``ERR = ... > ...``), the "not
    supported" count, and on an abort the case it happened in, the ``CANN error:``
    message, the failing call (e.g. ``aclnnGatherV2GetWorkspaceSize``) and the last output
    lines. test-backend-ops prints a case's line only once the case is done, so the case
    that aborted is inferred as the next one in support mode's list (same order).
    ``--continue N``: after an abort, up to N more processes run the op's remaining cases
    (by full case name), the first re-running the suspected case to confirm it, so every
    case gets a verdict and every distinct abort cause shows (``--no-verify``: skip the
    confirmation, half the processes). Prints a table and the distinct abort causes
    ranked by the ops and claimed cases they block; ``--json FILE`` and ``--markdown
    FILE`` write them (the JSON has every failing / aborting case). ``-p REGEX`` is
    passed through (cases whose params match). ``--log-dir DIR`` keeps each op's full
    output. ``GGML_NO_BACKTRACE=1`` is set (ggml would attach gdb on every abort;
    ``--backtrace`` keeps it) and ``PYACLNN_NUM_THREADS`` = CPUs / jobs unless already
    set. Exit status 0 if every run op passed all its cases, 1 otherwise.

archs
    Runs ``test-llama-archs -b CANN0 -s SEED [-a REGEX]`` (``build --archs`` first): small
    random models of every architecture, logits on CANN0 against the CPU backend (NMSE <=
    1e-4), the causal-attention toggle (no NaN), and a save / reload roundtrip (bitwise
    equal logits). A failing aclnn call aborts the process; the judge records the arch it
    died in as ABORT (the CANN error, the failing call) and runs the archs after it in a new
    process (a regex leaving out those done), so every arch gets a verdict. ``--flash-attn
    off``: llama's flash attention off (``-fa off``; the program has no such option and its
    default, auto, uses FLASH_ATTN_EXT wherever CANN0 claims it) through
    ``judge-archs-shim.so``, which the judge always preloads (built by ``build --archs``
    next to the binaries; it also flushes the program's asynchronous log at exit and
    before an abort, so no row is lost). ``--weight-nz on|off`` sets
    ``GGML_CANN_WEIGHT_NZ`` (ggml-cann's default is on: FRACTAL_NZ weights, whose
    roundtrip ggml-cann breaks itself, so ``--roundtrip ignore`` leaves it out of the
    verdict). ``--expected FILE``: exit status 1 unless every arch listed is OK; ``--json``,
    ``--markdown``, ``--update-doc FILE`` (its archs block) write the rows. Exit status 0 if
    no arch failed or aborted.

After ``pip install .``, ``python tools/ggml_judge.py all --json /tmp/j.json`` is the
whole judge (about 2 minutes once built); ``run --continue 400 --no-verify`` gives each
case of each op a verdict (about 7 minutes). ``tests/test_ggml_cann.py`` uses this script
with ``tests/ggml_expected.txt`` (the ops that must pass fully).
"""
import argparse
import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse

LLAMA_CPP_PYTHON = "llama-cpp-python"
VERSION = "0.3.36"
SDIST_NAME = "llama_cpp_python-%s.tar.gz" % VERSION
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
SDIST_PREFIX = "llama_cpp_python-%s/vendor/llama.cpp/" % VERSION
SOC_TYPE = "Ascend910B3"
BUILD_CMAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ggml_judge_build.cmake")
BACKEND = "CANN0"
STAMP = ".pyaclnn-judge-fetched"
EXIT_OFFLINE = 3
# Bump when the configure options below change, so that old build dirs are not reused.
CONFIG_VERSION = 1

ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class JudgeError(Exception):
    def __init__(self, msg, status=1):
        Exception.__init__(self, msg)
        self.status = status


def log(msg):
    print("[ggml_judge] %s" % msg, flush=True)


@contextlib.contextmanager
def locked(path):
    """An exclusive lock on `path` (created), so that concurrent runs sharing the cache
    (two pytest sessions, say) wait for each other's fetch or build."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            log("waiting for %s (another run holds it)" % path)
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# ---------------------------------------------------------------------------
# paths

def default_cache():
    env = os.environ.get("PYACLNN_GGML_CACHE")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pyaclnn", "llama.cpp-%s" % VERSION)


def source_dir(cache):
    return os.path.join(cache, "llama.cpp")


def toolkit_home(opt):
    if opt:
        home = opt
    else:
        # Outside any source tree, so that `python -m pyaclnn` is the installed package.
        try:
            out = subprocess.run([sys.executable, "-m", "pyaclnn", "home"], cwd=tempfile.gettempdir(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 universal_newlines=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise JudgeError("cannot run `%s -m pyaclnn home`: %s" % (sys.executable, e))
        if out.returncode != 0 or not out.stdout.strip():
            raise JudgeError("`%s -m pyaclnn home` failed (is pyaclnn installed in this interpreter? "
                             "or pass --toolkit):\n%s%s" % (sys.executable, out.stdout, out.stderr))
        home = out.stdout.strip().splitlines()[-1]
    home = os.path.realpath(home)
    for rel in ("include", "lib64/libascendcl.so"):
        if not os.path.exists(os.path.join(home, rel)):
            raise JudgeError("%s is not a toolkit root (no %s)" % (home, rel))
    return home


# ---------------------------------------------------------------------------
# fetch

def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def network_reachable(timeout=5.0):
    """True if the package index pip would use answers a TCP connection."""
    hosts = []
    for var in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        for url in os.environ.get(var, "").split():
            host = urllib.parse.urlparse(url).hostname
            if host:
                hosts.append((host, urllib.parse.urlparse(url).port or 443))
    hosts += [("pypi.org", 443), ("files.pythonhosted.org", 443)]
    for host, port in hosts:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return True
        except OSError:
            continue
    return False


def download_sdist(cache):
    dest = os.path.join(cache, "sdist")
    path = os.path.join(dest, SDIST_NAME)
    if os.path.isfile(path) and sha256_of(path) == SDIST_SHA256:
        return path
    os.makedirs(dest, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           "%s==%s" % (LLAMA_CPP_PYTHON, VERSION), "-d", dest]
    log("$ " + " ".join(cmd))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if proc.returncode != 0 or not os.path.isfile(path):
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        if not network_reachable():
            raise JudgeError("cannot download %s==%s: no network (and no cached copy in %s); "
                             "pass --sdist FILE or set PYACLNN_GGML_SDIST to use a local copy.\npip said:\n%s"
                             % (LLAMA_CPP_PYTHON, VERSION, cache, tail), EXIT_OFFLINE)
        raise JudgeError("pip download of %s==%s failed (rc %d):\n%s" % (LLAMA_CPP_PYTHON, VERSION,
                                                                        proc.returncode, tail))
    return path


def extract_llama_cpp(sdist, dest):
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with tarfile.open(sdist, "r:gz") as tar:
        members = []
        for m in tar.getmembers():
            if not m.name.startswith(SDIST_PREFIX):
                continue
            m.name = m.name[len(SDIST_PREFIX):]
            if not m.name or m.name.startswith("/") or ".." in m.name.split("/"):
                continue
            members.append(m)
        if not members:
            raise JudgeError("%s has no %s" % (sdist, SDIST_PREFIX))
        if hasattr(tarfile, "data_filter"):
            tar.extractall(tmp, members=members, filter="data")
        else:
            tar.extractall(tmp, members=members)
    git = os.path.join(tmp, ".git")
    if os.path.isfile(git) or os.path.islink(git):
        os.remove(git)  # points to a gitdir that is not in the sdist
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)


def cmd_fetch(args):
    with locked(os.path.join(args.cache, ".fetch.lock")):
        return fetch_locked(args)


def fetch_locked(args):
    cache = args.cache
    src = source_dir(cache)
    stamp = os.path.join(src, STAMP)
    if os.path.isfile(stamp) and os.path.isfile(os.path.join(src, "tests", "test-backend-ops.cpp")):
        with open(stamp) as f:
            if f.read().strip() == SDIST_SHA256:
                log("llama.cpp %s sources: %s (cached)" % (VERSION, src))
                return src
    os.makedirs(cache, exist_ok=True)
    if args.sdist:
        sdist = os.path.abspath(args.sdist)
        if not os.path.isfile(sdist):
            raise JudgeError("--sdist %s: no such file" % sdist)
        log("using local sdist %s" % sdist)
    else:
        sdist = download_sdist(cache)
    digest = sha256_of(sdist)
    if digest != SDIST_SHA256:
        raise JudgeError("%s: sha256 %s, expected %s (the PyPI file of %s==%s)"
                         % (sdist, digest, SDIST_SHA256, LLAMA_CPP_PYTHON, VERSION))
    t0 = time.time()
    extract_llama_cpp(sdist, src)
    with open(stamp, "w") as f:
        f.write(SDIST_SHA256 + "\n")
    log("extracted vendor/llama.cpp into %s (%.1f s)" % (src, time.time() - t0))
    return src


# ---------------------------------------------------------------------------
# build

def machine_fingerprint():
    """Architecture + CPU model/flags: a -march=native build must not run on another CPU."""
    parts = [platform.machine()]
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
        for key in ("model name", "flags", "Features", "CPU part"):
            m = re.search(r"^%s\s*:\s*(.*)$" % key, info, re.M)
            if m:
                parts.append(" ".join(sorted(m.group(1).split())) if key in ("flags", "Features")
                             else m.group(1).strip())
    except OSError:
        pass
    return "|".join(parts)


def configure_args(args, home):
    cfg = [
        "-DCMAKE_BUILD_TYPE=Release",
        "-DGGML_CANN=ON", "-DSOC_TYPE=%s" % SOC_TYPE, "-DCANN_INSTALL_DIR=%s" % home,
        "-DLLAMA_BUILD_TESTS=ON", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF",
        "-DLLAMA_BUILD_TOOLS=OFF", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_OPENSSL=OFF",
        "-DGGML_CCACHE=OFF",
        # per-target optimisation levels (the file says which and why); sources unchanged
        "-DCMAKE_PROJECT_INCLUDE=%s" % BUILD_CMAKE,
    ]
    if args.native is not None:
        cfg.append("-DGGML_NATIVE=%s" % ("ON" if args.native else "OFF"))
    cfg += list(args.cmake_arg or [])
    return cfg


def generator():
    return ["-G", "Ninja"] if shutil.which("ninja") else ["-G", "Unix Makefiles"]


def cmake_cache_mismatch(cache_file, bdir, gen):
    """Why an existing build dir cannot be reused (another generator, moved), or None."""
    try:
        with open(cache_file) as f:
            text = f.read()
    except OSError:
        return "no CMakeCache.txt"
    m = re.search(r"^CMAKE_GENERATOR:INTERNAL=(.*)$", text, re.M)
    if m and m.group(1).strip() != gen:
        return "configured for %s, now %s" % (m.group(1).strip(), gen)
    m = re.search(r"^CMAKE_CACHEFILE_DIR:INTERNAL=(.*)$", text, re.M)
    if m and os.path.realpath(m.group(1).strip()) != os.path.realpath(bdir):
        return "configured in %s" % m.group(1).strip()
    return None


def build_dir(args, home):
    with open(BUILD_CMAKE, "rb") as f:
        include_sha = hashlib.sha256(f.read()).hexdigest()
    key_src = "\n".join(["v%d" % CONFIG_VERSION, home, machine_fingerprint(), include_sha]
                        + configure_args(args, home))
    key = hashlib.sha1(key_src.encode()).hexdigest()[:12]
    return os.path.join(args.cache, "build-" + key)


def summarize_build_errors(text, limit=25):
    """The distinct compiler/linker errors, first ones first."""
    pats = [r"fatal error: .*", r"error: .*", r"undefined reference to .*", r"undefined symbol: .*",
            r"CMake Error.*", r"ninja: build stopped.*"]
    seen, out = set(), []
    for line in text.splitlines():
        line = ANSI_RE.sub("", line)
        for p in pats:
            m = re.search(p, line)
            if m:
                msg = line.strip()
                # Shorten paths: keep the file name relative to llama.cpp when possible.
                msg = re.sub(r"\S*/(ggml/src/|tests/|src/|common/)", r"\1", msg)
                if msg not in seen:
                    seen.add(msg)
                    out.append(msg)
                break
    missing_headers = sorted(set(re.findall(r"fatal error: (\S+?): No such file", text)))
    undef = sorted(set(re.findall(r"undefined reference to `(\w+)'", text)))
    undeclared = sorted(set(re.findall(r"'(\w+)' was not declared in this scope", text)))
    lines = []
    if missing_headers:
        lines.append("missing headers (%d): %s" % (len(missing_headers), " ".join(missing_headers)))
    if undeclared:
        lines.append("undeclared identifiers (%d): %s" % (len(undeclared), " ".join(undeclared)))
    if undef:
        lines.append("undefined symbols (%d): %s" % (len(undef), " ".join(undef)))
    lines += out[:limit]
    if len(out) > limit:
        lines.append("... %d more error lines" % (len(out) - limit))
    return "\n".join(lines)


def run_logged(cmd, logf, verbose=False, cwd=None, env=None):
    """Runs cmd, writing its output to logf and to our stdout (only the build steps and
    error lines unless verbose: ggml's sources give thousands of warning lines); returns
    (rc, text)."""
    logf.write("$ %s\n" % " ".join(cmd))
    logf.flush()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True, errors="replace")
    chunks = []
    for line in proc.stdout:
        chunks.append(line)
        logf.write(line)
        if verbose or re.match(r"^(\[\d+/\d+\]|-- |CMake |FAILED|ninja: )", line) or re.search(
                r"\b(error|Error)\b|undefined reference", line):
            sys.stdout.write(line)
    sys.stdout.flush()
    rc = proc.wait()
    return rc, "".join(chunks)


def cmd_build(args):
    src = cmd_fetch(args)
    home = toolkit_home(args.toolkit)
    bdir = build_dir(args, home)
    with locked(bdir + ".lock"):
        return build_locked(args, src, home, bdir)


def build_locked(args, src, home, bdir):
    os.makedirs(bdir, exist_ok=True)
    ninja = shutil.which("ninja")
    nice = ["nice", "-n", str(args.nice)] if shutil.which("nice") and args.nice else []
    targets = ["test-backend-ops"] + (["test-llama-archs"] if args.archs else [])
    with open(os.path.join(bdir, "judge-key.txt"), "w") as f:
        f.write("toolkit: %s\nmachine: %s\nconfigure: %s\n"
                % (home, machine_fingerprint(), " ".join(configure_args(args, home))))
    log_path = os.path.join(bdir, "judge-build.log")
    t0 = time.time()
    with open(log_path, "w") as logf:
        cache_file = os.path.join(bdir, "CMakeCache.txt")
        generated = any(os.path.isfile(os.path.join(bdir, f)) for f in ("build.ninja", "Makefile"))
        stale = cmake_cache_mismatch(cache_file, bdir, generator()[1]) if generated else None
        if stale:
            log("reconfiguring from scratch: %s" % stale)
            for name in os.listdir(bdir):
                if not name.startswith("judge-"):
                    path = os.path.join(bdir, name)
                    shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
        if not (os.path.isfile(cache_file) and generated) or stale:
            cmd = ["cmake", "-S", src, "-B", bdir] + generator() + configure_args(args, home)
            log("configure: " + " ".join(cmd))
            rc, text = run_logged(cmd, logf, args.verbose)
            if rc != 0:
                os.remove(cache_file) if os.path.isfile(cache_file) else None
                raise JudgeError("configure failed (rc %d); log: %s\n%s" % (rc, log_path, summarize_build_errors(text)))
        t1 = time.time()
        cmd = nice + ["cmake", "--build", bdir, "-j", str(args.jobs), "--target"] + targets
        log("build (%s): %s" % ("ninja" if ninja else "make", " ".join(cmd)))
        rc, text = run_logged(cmd, logf, args.verbose)
    t2 = time.time()
    if rc != 0:
        raise JudgeError("build failed (rc %d) after %.0f s against %s; log: %s\n%s"
                         % (rc, t2 - t0, home, log_path, summarize_build_errors(text)))
    info = {"toolkit": home, "build_dir": bdir, "configure_s": round(t1 - t0, 1),
            "build_s": round(t2 - t1, 1), "total_s": round(t2 - t0, 1),
            "binaries": {t: os.path.join(bdir, "bin", t) for t in targets}}
    if args.archs:
        info["archs_shim"] = build_archs_shim(src, bdir)
    with open(os.path.join(bdir, "judge-build.json"), "w") as f:
        json.dump(info, f, indent=1)
    log("built %s in %.1f s (configure %.1f s) in %s" % (", ".join(targets), t2 - t0, t1 - t0, bdir))
    return info


# Preloaded into test-llama-archs by `archs` (built by `build --archs`, next to the
# binaries). It changes nothing the program computes:
# * its log lines go through common_log's queue, written by a worker thread, and the
#   logger is never flushed at exit (common/log.cpp leaks it on purpose), so the last rows,
#   the summary, or the CANN error before an abort can be lost; the shim flushes the
#   queue when the process exits and in ggml's abort callback (then prints the message
#   as ggml would, without the backtrace);
# * test-llama-archs has no flash-attention option (its contexts use llama's default,
#   "auto", which turns FLASH_ATTN_EXT on wherever the device claims it): with
#   PYACLNN_JUDGE_FLASH_ATTN=off its llama_context_default_params returns llama's own
#   defaults with flash_attn_type = DISABLED, which is what `-fa off` does for llama-cli.
ARCHS_SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llama.h"

typedef void *(*log_main_fn)(void);
typedef void (*log_pause_fn)(void *);
typedef void (*abort_cb_fn)(const char *);
typedef abort_cb_fn (*set_abort_cb_fn)(abort_cb_fn);

static void flush_log(void) {
    /* common_log_main() / common_log_pause(common_log *) of libllama-common */
    log_main_fn m = (log_main_fn)dlsym(RTLD_DEFAULT, "_Z15common_log_mainv");
    log_pause_fn p = (log_pause_fn)dlsym(RTLD_DEFAULT, "_Z16common_log_pauseP10common_log");
    if (m != NULL && p != NULL) p(m());
    fflush(stdout);
}

static void on_abort(const char *msg) {
    flush_log();
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
}

__attribute__((constructor)) static void shim_init(void) {
    set_abort_cb_fn set = (set_abort_cb_fn)dlsym(RTLD_DEFAULT, "ggml_set_abort_callback");
    if (set != NULL) set(on_abort);
}

__attribute__((destructor)) static void shim_fini(void) { flush_log(); }

struct llama_context_params llama_context_default_params(void) {
    typedef struct llama_context_params (*fn)(void);
    fn real = (fn)dlsym(RTLD_NEXT, "llama_context_default_params");
    struct llama_context_params p = real();
    const char *fa = getenv("PYACLNN_JUDGE_FLASH_ATTN");
    if (fa != NULL && strcmp(fa, "off") == 0) p.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    return p;
}
"""


def build_archs_shim(src, bdir):
    out = os.path.join(bdir, "judge-archs-shim.so")
    c = os.path.join(bdir, "judge-archs-shim.c")
    with open(c, "w") as f:
        f.write(ARCHS_SHIM_C)
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise JudgeError("no C compiler for the test-llama-archs shim")
    cmd = [cc, "-shared", "-fPIC", "-O2", "-I", os.path.join(src, "include"), "-I",
           os.path.join(src, "ggml", "include"), c, "-o", out, "-ldl"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if proc.returncode != 0:
        raise JudgeError("building the test-llama-archs shim failed:\n%s" % proc.stdout)
    return out


def find_binary(args, home, name="test-backend-ops"):
    path = os.path.join(build_dir(args, home), "bin", name)
    if not os.path.isfile(path):
        raise JudgeError("%s is not built (%s); run `%s build` first" % (name, path, sys.argv[0]))
    return path


# ---------------------------------------------------------------------------
# run

def run_env(args, jobs):
    env = dict(os.environ)
    if not args.backtrace:
        env["GGML_NO_BACKTRACE"] = "1"
    if "PYACLNN_NUM_THREADS" not in env:
        env["PYACLNN_NUM_THREADS"] = str(max(1, cpu_count() // max(1, jobs)))
    return env


def cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def list_all_ops(binary, env):
    out = subprocess.run([binary, "--list-ops"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, env=env, timeout=120).stdout
    ops = []
    for line in out.splitlines():
        line = ANSI_RE.sub("", line).strip()
        m = re.match(r"^(?:\d+[.:]?\s+)?([A-Z][A-Z0-9_]*)$", line)
        if m:
            ops.append(m.group(1))
    return ops


class Support(object):
    """What `test-backend-ops support -b CANN0` says: per op, its cases in run order
    with CANN0's answer (test mode runs the same cases in the same order, plus a few
    whole-graph "fusion" cases that support mode leaves out)."""

    def __init__(self, cases):
        self.cases = cases  # {op: [(case string, supported), ...]}

    def claimed(self, op):
        return sum(1 for _, sup in self.cases.get(op, ()) if sup)

    def total(self, op):
        return len(self.cases.get(op, ()))


def support_cases(binary, env, params=None):
    cmd = [binary, "support", "-b", BACKEND] + (["-p", params] if params else [])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          errors="replace", env=env, timeout=600)
    cases = {}
    for line in proc.stdout.splitlines():
        line = ANSI_RE.sub("", line)
        m = re.match(r"^  (([A-Z][A-Z0-9_]*)\(.*\)): (SUPPORTED|NOT SUPPORTED)\s*$", line)
        if m:
            cases.setdefault(m.group(2), []).append((m.group(1), m.group(3) == "SUPPORTED"))
    if not cases:
        raise JudgeError("`%s` listed no cases (rc %d):\n%s" % (" ".join(cmd), proc.returncode,
                                                                "\n".join(proc.stdout.splitlines()[-20:])))
    return Support(cases)


def read_ops_file(path):
    """[(op, params regex or None)]: one op per line, optionally followed by a
    test-backend-ops -p regex for that op's cases (the rest of the line)."""
    ops = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                op, _, params = line.partition(" ")
                ops.append((op, params.strip() or None))
    return ops


def case_params(case):
    """'OP(a=1,b=2)' -> 'a=1,b=2' (what test-backend-ops -p matches)."""
    i = case.find("(")
    return case[i + 1:-1] if i >= 0 and case.endswith(")") else case


HEADER_RE = re.compile(r"^(Testing \d+ devices|Backend \d+/\d+: .*|  Device description: .*|"
                       r"  Device memory: .*|  Skipping|  Backend \S+: (OK|FAIL)|\d+/\d+ backends passed|OK|FAIL|"
                       r"Failing tests:|  \d+/\d+ tests passed)$")
STATUS_RE = re.compile(r": (OK|FAIL|not supported \[[^\]\n]*\]|skipping large tensors for speed) *$", re.M)


def parse_output(op, text):
    """Parses one `test-backend-ops test -o ...` run of `op`.

    test mode prints a case's line ("  OP(params): OK|FAIL|not supported [..]") only when
    the case is done; what the comparison printed (e.g. "[ADD] ERR = 0.1 > 0.0001 ")
    comes before it, on the same line. A process that aborts dies inside the case after
    the last printed one."""
    text = ANSI_RE.sub("", text).replace("\r", "")
    res = {"passed": 0, "failed": 0, "not_supported": 0, "skipped": 0, "failures": [], "done": [],
           "summary": None}
    prefix = "  %s(" % op
    pos, prev_end = 0, 0
    while True:
        i = text.find(prefix, pos)
        if i < 0:
            break
        depth, j = 1, i + len(prefix)
        while j < len(text) and depth and text[j] != "\n":
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        m = STATUS_RE.match(text, j) if depth == 0 else None
        if m is None:  # e.g. the "Failing tests:" list
            pos = i + len(prefix)
            continue
        params = text[i + len(prefix):j - 1]
        status = m.group(1)
        detail = "\n".join(l for l in text[prev_end:i].split("\n") if l.strip() and not HEADER_RE.match(l))
        case = "%s(%s)" % (op, params)
        res["done"].append(case)
        if status == "OK":
            res["passed"] += 1
        elif status == "FAIL":
            res["failed"] += 1
            res["failures"].append({"case": case, "detail": " ".join(detail.split())})
        elif status.startswith("not supported"):
            res["not_supported"] += 1
        else:
            res["skipped"] += 1
        pos = prev_end = m.end()
    m = re.search(r"^  (\d+)/(\d+) tests passed$", text, re.M)
    if m:
        res["summary"] = (int(m.group(1)), int(m.group(2)))
    return res


def abort_info(text):
    """The CANN error / ggml abort messages printed before the process died."""
    lines = [ANSI_RE.sub("", l).rstrip() for l in text.splitlines()]
    info = {}
    for i, line in enumerate(lines):
        j = line.find("CANN error: ")
        if j >= 0 and "cann_error" not in info:
            info["cann_error"] = line[j + len("CANN error: "):].strip()
            # The following lines: "  current device: D, in function F at FILE:LINE" and "  STMT".
            for k in range(i + 1, min(i + 4, len(lines))):
                m = re.match(r"^\s+current device: (-?\d+), in function (\S+) at (\S+):(\d+)", lines[k])
                if m:
                    info["function"] = m.group(2)
                    info["location"] = "%s:%s" % (re.sub(r".*/ggml/src/", "", m.group(3)), m.group(4))
                    if k + 1 < len(lines):
                        info["statement"] = lines[k + 1].strip()
                    break
            # Messages may continue over several lines before "current device".
            extra = []
            for k in range(i + 1, min(i + 12, len(lines))):
                if re.match(r"^\s+current device:", lines[k]):
                    break
                extra.append(lines[k].strip())
            if extra:
                info["cann_error"] = " ".join([info["cann_error"]] + [e for e in extra if e])
        m = re.match(r"^(\S+?):(\d+): (.*)$", line)
        if m and ("/" in m.group(1) or m.group(1).endswith((".c", ".cpp", ".h"))) and "abort" not in info:
            if not re.search(r"\b(warning|note)\b", m.group(3)):
                info["abort"] = "%s:%s: %s" % (re.sub(r".*/ggml/src/", "", m.group(1)), m.group(2), m.group(3))
    stmt = info.get("statement", "")
    m = re.match(r"^\s*(?:[\w:]+\s*=\s*)?(\w+)\s*\(", stmt)
    if m:
        info["call"] = m.group(1)
    calls = re.findall(r"\b(aclnn\w+?)(?:GetWorkspaceSize)?\b", stmt)
    if calls:
        info["aclnn_op"] = calls[0]
    elif info.get("call"):
        info["aclnn_op"] = info["call"]
    return info


def run_process(binary, op_filter, params, args, env):
    """One test-backend-ops process; returns (rc, output, wall seconds, timed out)."""
    cmd = [binary, "test", "-b", BACKEND, "-o", op_filter]
    if params:
        cmd += ["-p", params]
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, _ = proc.communicate()
    return proc.returncode, out.decode("utf-8", "replace"), time.time() - t0, timed_out


def death(rc, timed_out, summary, timeout):
    """None if the process ended normally (rc 0 / 1 with its summary), else how it died."""
    if timed_out:
        return "timeout after %d s" % timeout
    if rc < 0:
        try:
            return signal.Signals(-rc).name
        except ValueError:
            return "signal %d" % -rc
    if rc > 1 or summary is None:
        return "exit %d" % rc
    return None


# The longest -o argument we pass (Linux limits one argument to 128 KiB).
MAX_FILTER_CHARS = 100000


def run_one(op, binary, args, env, support, params=None):
    """Runs op's cases: one process for the whole op; after an abort, up to
    args.continue_runs more processes run the cases from the one that aborted on
    (support mode gives their names and order): the first of them re-runs the suspected
    case alone at the head of the list, which confirms it (or shows the abort was in an
    unlisted whole-graph case), the next starts after it, and so on."""
    cases = support.cases.get(op, []) if support else []
    if params and params != args.params:
        cases = [(c, sup) for c, sup in cases if re.search(params, case_params(c))]
    claimed = dict(cases)
    rec = {"op": op, "claimed": sum(sup for _, sup in cases) if support else None, "params": params,
           "rc": None, "wall_s": 0.0,
           "processes": 0, "passed": 0, "failed": 0, "run": 0, "not_supported": 0, "skipped": 0,
           "failures": [], "summary": None, "aborted": False, "abort_case": None, "abort_case_index": None,
           "abort": None, "aborts": [], "unreached": 0, "tail": []}
    logs = []
    queue = None        # None: the whole op; else the case strings still to run, in order
    suspect = None      # the case believed to have aborted the last process (queue[0] then)
    t_start = time.time()

    def new_abort(info, case, verified=False):
        rec["aborts"].append(dict(info, case=case, verified=verified))

    def unknown_prev():
        prev = rec["aborts"][-1]
        prev["case"] = "a whole-graph case before %s (not named by support mode)" % suspect
        prev["verified"] = False

    while True:
        if queue is None:
            chunk, op_filter = None, op
        else:
            chunk, n = [], 0
            for c in queue:
                if chunk and n + len(c) + 1 > MAX_FILTER_CHARS:
                    break
                chunk.append(c)
                n += len(c) + 1
            op_filter = ",".join(chunk)
        rc, text, wall, timed_out = run_process(binary, op_filter, params, args, env)
        rec["processes"] += 1
        rec["wall_s"] += wall
        shown = op_filter if len(op_filter) < 400 else "%s,...(%d cases)" % (chunk[0], len(chunk))
        logs.append("$ test-backend-ops test -b %s -o '%s'%s\n%s" % (
            BACKEND, shown, " -p '%s'" % params if params else "", text))
        p = parse_output(op, text)
        for k in ("passed", "failed", "not_supported", "skipped"):
            rec[k] += p[k]
        rec["failures"] += p["failures"]
        how = death(rc, timed_out, p["summary"], args.timeout)
        if queue is None:
            rec["rc"], rec["summary"] = rc, p["summary"]
            rec["tail"] = [ANSI_RE.sub("", l) for l in text.splitlines()[-20:]]
            if how is None and p["summary"] != (p["passed"], p["passed"] + p["failed"]):
                rec["parse_warning"] = "summary says %d/%d, parsed %d/%d" % (
                    p["summary"] + (p["passed"], p["passed"] + p["failed"]))
                # A case can fail without its result line ("failed to allocate tensors").
                extra = p["summary"][1] - p["summary"][0] - p["failed"]
                if extra > 0:
                    rec["failed"] += extra
                    rec["failures"].append({"case": "(%d case(s) without a result line)" % extra,
                                            "detail": "test-backend-ops counted them as failed; see the log"})
        pool = [c for c, _ in cases] if queue is None else chunk
        rest = [] if queue is None else queue[len(chunk):]
        done = set(p["done"])
        if how is None:
            if suspect is not None:
                unknown_prev()  # the suspect ran to its end this time
                suspect = None
            if rest:
                queue = rest
                continue
            queue = []
            break
        # It died in the case after the last one it printed: the first case of `pool`
        # it did not finish (if that was a whole-graph case support mode does not list
        # it, and the next process finds out).
        nxt = next((i for i, c in enumerate(pool) if c not in done), None)
        info = abort_info(text)
        info["signal"] = how
        info["tail"] = [ANSI_RE.sub("", l) for l in text.splitlines()[-20:]]
        if queue is None:
            rec["aborted"] = True
            rec["abort_case_index"] = p["passed"] + p["failed"] + 1
        if suspect is not None and nxt == 0:
            rec["aborts"][-1]["verified"] = True  # died again at once in the suspect
            queue = pool[1:] + rest
            suspect = None
        else:
            if suspect is not None:
                unknown_prev()
            new_abort(info, pool[nxt] if nxt is not None else None)
            if nxt is None:
                queue = rest
                suspect = None
                break
            if args.no_verify:
                queue = pool[nxt + 1:] + rest
                suspect = None
            else:
                queue = pool[nxt:] + rest
                suspect = queue[0]
        # Only the cases CANN0 claims need running; the others are "not supported" in test mode too.
        keep = []
        for c in queue:
            if claimed.get(c, True) or c == suspect:
                keep.append(c)
            else:
                rec["not_supported"] += 1
        queue = keep
        if not queue or rec["processes"] > args.continue_runs or time.time() - t_start > args.timeout:
            break
    if rec["aborts"]:
        a0 = rec["aborts"][0]
        rec["abort"] = {k: v for k, v in a0.items() if k != "tail"}
        rec["abort_case"] = a0.get("case")
        rec["tail"] = a0["tail"]
        rec["unreached"] = sum(1 for c in (queue or []) if claimed.get(c, True) and c != suspect)
    rec["run"] = rec["passed"] + rec["failed"] + len(rec["aborts"])
    rec["wall_s"] = round(rec["wall_s"], 2)
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
        with open(os.path.join(args.log_dir, op + ".log"), "w") as f:
            f.write("\n".join(logs))
    rec["ok"] = (not rec["aborted"]) and rec["failed"] == 0 and rec["rc"] == 0 and rec["run"] > 0
    return rec


def abort_cause(info):
    """One line naming why a process died: the failing call and CANN's message."""
    a = info or {}
    if a.get("cann_error") is not None:
        msg = a["cann_error"]
        call = a.get("aclnn_op") or a.get("call")
        if call and call not in msg:
            msg = "%s: %s" % (call, msg)
        return msg
    if a.get("abort"):
        return a["abort"]
    return a.get("signal", "?")


def first_problem(rec, width=None):
    if rec["aborted"]:
        a = rec["abort"] or {}
        s = "aborts at case %s (%s): %s" % (rec["abort_case_index"], a.get("signal"), abort_cause(a))
        if a.get("case"):
            s += " in %s%s" % (a["case"], "" if a.get("verified") else " (inferred)")
        if len(rec["aborts"]) > 1:
            s += "; %d aborting cases in all" % len(rec["aborts"])
    elif rec["failures"]:
        f = rec["failures"][0]
        s = "%d failing, first: %s %s" % (rec["failed"], f["case"], f["detail"])
    elif rec["run"] == 0:
        s = "no case run (%d not supported)" % rec["not_supported"]
    else:
        s = ""
    s = " ".join(s.split())
    if width and len(s) > width:
        s = s[:width - 3] + "..."
    return s


def ranked_causes(results):
    """Distinct abort causes: the ggml ops they hit, the cases that aborted with them and
    the claimed cases they kept from running (an op's cases after its last abort count
    for that abort's cause)."""
    causes = {}
    for r in results:
        for n, a in enumerate(r["aborts"]):
            key = abort_cause(a)
            c = causes.setdefault(key, {"cause": key, "ops": [], "aborting_cases": 0, "blocked_cases": 0,
                                        "call": a.get("aclnn_op") or a.get("call"), "example": a.get("case")})
            if r["op"] not in c["ops"]:
                c["ops"].append(r["op"])
            c["aborting_cases"] += 1
            c["blocked_cases"] += 1 + (r["unreached"] if n == len(r["aborts"]) - 1 else 0)
    return sorted(causes.values(), key=lambda c: (-len(c["ops"]), -c["blocked_cases"], c["cause"]))


def failure_kinds(results):
    """Groups failing (non-aborting) cases by the kind of message."""
    kinds = {}
    for r in results:
        for f in r["failures"]:
            m = re.match(r"^\[(\w+)\] (NaN|inf|ERR|MAA)", f["detail"])
            kind = "%s %s" % (m.group(1), m.group(2)) if m else (f["detail"].split("\n")[0][:60] or "FAIL")
            k = kinds.setdefault((r["op"], kind), 0)
            kinds[(r["op"], kind)] = k + 1
    return kinds


def print_table(results, out=sys.stdout):
    w = max([len(r["op"]) for r in results] + [7])
    out.write("\n%-*s  %9s  %8s  %6s  %7s  %s\n" % (w, "ggml op", "pass/run", "claimed", "n/s", "wall s", "result"))
    for r in results:
        status = "PASS" if r["ok"] else ("ABORT" if r["aborted"] else "FAIL")
        out.write("%-*s  %9s  %8s  %6d  %7.1f  %s %s\n" % (
            w, r["op"], "%d/%d" % (r["passed"], r["run"]), r["claimed"] if r["claimed"] is not None else "-",
            r["not_supported"], r["wall_s"], status, first_problem(r, 150)))
    out.flush()


def markdown(results, causes, meta):
    md = ["| ggml op | passed / run | claimed | not supported | aborted | first failure |",
          "|---|---|---|---|---|---|"]
    for r in results:
        ab = "yes (case %s)" % r["abort_case_index"] if r["aborted"] else "no"
        md.append("| %s | %d/%d | %s | %d | %s | %s |" % (
            r["op"], r["passed"], r["run"], r["claimed"] if r["claimed"] is not None else "-",
            r["not_supported"], ab, first_problem(r, 200).replace("|", "\\|") or "—"))
    md += ["", "Abort causes (by ggml ops blocked; claimed cases not reached):", "",
           "| cause | ggml ops | cases blocked | ops |", "|---|---|---|---|"]
    for c in causes:
        md.append("| %s | %d | %d | %s |" % (c["cause"].replace("|", "\\|"), len(c["ops"]), c["blocked_cases"],
                                             ", ".join(c["ops"])))
    md += ["", "llama.cpp from llama-cpp-python %s, %s: %d ops, %d fully passing; %d of %d cases passed; "
           "wall %.0f s (-j %d)." % (meta.get("llama_cpp_python", VERSION), meta.get("date", "?"), len(results),
                                      sum(r["ok"] for r in results), sum(r["passed"] for r in results),
                                      sum(r["run"] for r in results), meta["wall_s"], meta["jobs"])]
    return "\n".join(md) + "\n"


DOC_BEGIN = "<!-- ggml_judge results: begin (python tools/ggml_judge.py all --update-doc FILE writes them) -->"
DOC_END = "<!-- ggml_judge results: end -->"


def update_doc(path, table, begin=DOC_BEGIN, end=DOC_END):
    """Replaces the results block of a markdown file (between begin and end)."""
    with open(path) as f:
        text = f.read()
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        raise JudgeError("%s has no results block (%s ... %s)" % (path, begin, end))
    with open(path, "w") as f:
        f.write(text[:i + len(begin)] + "\n\n" + table + "\n" + text[j:])


def cmd_run(args, build_info=None):
    home = toolkit_home(args.toolkit)
    binary = find_binary(args, home)
    jobs = args.jobs_run or min(2, cpu_count())
    env = run_env(args, jobs)
    t0 = time.time()
    support = None
    try:
        support = support_cases(binary, env, args.params)
    except (JudgeError, subprocess.TimeoutExpired) as e:
        log("warning: support mode failed, so no case names or claimed counts: %s" % e)
    op_params = {}
    if args.ops or args.ops_file:
        ops = list(args.ops or [])
        if args.ops_file:
            for op, params in read_ops_file(args.ops_file):
                ops.append(op)
                if params:
                    op_params[op] = params
    elif args.all_ops or support is None:
        ops = list_all_ops(binary, env)
    else:
        ops = sorted(op for op in support.cases if support.claimed(op) > 0)
    ops = list(dict.fromkeys(ops))
    if not ops:
        raise JudgeError("no ops to run")
    # Most cases first, so that the workers finish together.
    order = sorted(ops, key=lambda o: -(support.claimed(o) if support else 0))
    log("running %d ops on %s, %d at a time, timeout %d s each (%s)" % (len(ops), BACKEND, jobs, args.timeout, binary))
    results = {}
    lock = threading.Lock()

    def task(op):
        rec = run_one(op, binary, args, env, support, op_params.get(op, args.params))
        with lock:
            status = "PASS" if rec["ok"] else ("ABORT" if rec["aborted"] else "FAIL")
            log("%-20s %5d/%-5d %-5s %6.1f s  %s" % (op, rec["passed"], rec["run"], status, rec["wall_s"],
                                                   first_problem(rec, 120)))
        return rec

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        for rec in ex.map(task, order):
            results[rec["op"]] = rec
    wall = time.time() - t0
    ordered = [results[o] for o in ops]
    causes = ranked_causes(ordered)
    print_table(ordered)
    if causes:
        print("\nAbort causes, ranked by the ggml ops they stop (cases: claimed cases they keep from a verdict):")
        for c in causes:
            print("  %2d ops, %5d cases: %s  [%s]" % (len(c["ops"]), c["blocked_cases"], c["cause"], ", ".join(c["ops"])))
    kinds = failure_kinds(ordered)
    if kinds:
        print("\nFailing (non-aborting) cases by op and kind:")
        for (op, kind), n in sorted(kinds.items(), key=lambda kv: -kv[1]):
            print("  %-20s %4d  %s" % (op, n, kind))
    n_ok = sum(r["ok"] for r in ordered)
    cases_pass = sum(r["passed"] for r in ordered)
    cases_run = sum(r["run"] for r in ordered)
    print("\n%d/%d ops pass fully; %d/%d cases passed; wall %.1f s with -j %d" % (n_ok, len(ordered), cases_pass,
                                                                                cases_run, wall, jobs))
    meta = {"toolkit": home, "binary": binary, "jobs": jobs, "wall_s": round(wall, 1), "params": args.params,
            "date": time.strftime("%Y-%m-%d"),
            "llama_cpp_python": VERSION, "soc_type": SOC_TYPE, "backend": BACKEND,
            "ops_passing": [r["op"] for r in ordered if r["ok"]]}
    if build_info:
        meta["build"] = build_info
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": ordered, "abort_causes": causes}, f, indent=1)
        log("wrote %s" % args.json)
    if getattr(args, "update_doc", None):
        update_doc(args.update_doc, markdown(ordered, causes, meta))
        log("updated the results in %s" % args.update_doc)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(ordered, causes, meta))
        log("wrote %s" % args.markdown)
    return 0 if n_ok == len(ordered) else 1


def cmd_list_ops(args):
    home = toolkit_home(args.toolkit)
    binary = find_binary(args, home)
    env = run_env(args, 1)
    support = support_cases(binary, env, args.params)
    for op in sorted(support.cases, key=lambda o: (-support.claimed(o), o)):
        if support.claimed(op) or args.all_ops:
            print("%-24s %5d / %5d cases claimed" % (op, support.claimed(op), support.total(op)))
    return 0


# ---------------------------------------------------------------------------
# archs: test-llama-archs

ARCH_ROW_RE = re.compile(r"^\|\s*([^|\s]+)\|([^|]*)\|\s*(Dense|MoE)\|(.*)$")
ARCH_RES_RE = re.compile(r"^\s*(OK|FAIL|SKIP)( \(toggle\))?\s*(?:\(([^)]*)\))?\s*\|\s*(OK|FAIL|SKIP)\s*\|\s*$")


def ecma_escape(name):
    """An arch name as a literal in test-llama-archs' std::regex (ECMAScript)."""
    return re.sub(r"([.^$|?*+()\[\]{}\\])", r"\\\1", name)


def parse_archs(text, roundtrip=True):
    """test-llama-archs' table rows: one per (arch, config) it started, in order. A row is
    printed in two parts (the config, then the results once done), so a row without
    results is the one the process died in (status None). roundtrip=False: a failing
    roundtrip does not fail the row (it is still recorded)."""
    rows = []
    for line in ANSI_RE.sub("", text).replace("\r", "").splitlines():
        m = ARCH_ROW_RE.match(line)
        if not m:
            continue
        row = {"arch": m.group(1), "device": m.group(2).strip(), "config": m.group(3), "status": None,
               "nmse_status": None, "nmse": None, "toggle_failed": False, "roundtrip": None,
               "roundtrip_judged": roundtrip}
        r = ARCH_RES_RE.match(m.group(4))
        if r:
            try:
                nmse = float(r.group(3)) if r.group(3) else None
            except ValueError:
                nmse = r.group(3)
            row.update(nmse_status=r.group(1), toggle_failed=bool(r.group(2)), nmse=nmse, roundtrip=r.group(4))
            if r.group(1) == "FAIL" or (r.group(4) == "FAIL" and roundtrip):
                row["status"] = "FAIL"
            elif r.group(1) == "SKIP" and r.group(4) == "SKIP":
                row["status"] = "SKIP"
            else:
                row["status"] = "OK"
        rows.append(row)
    return rows


def run_cmd(cmd, env, timeout):
    """One process, its own session (killed whole on timeout); (rc, output, wall s, timed out)."""
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, _ = proc.communicate()
    return proc.returncode, out.decode("utf-8", "replace"), time.time() - t0, timed_out


def archs_env(args, home):
    env = run_env(args, 1)
    if args.weight_nz is not None:
        env["GGML_CANN_WEIGHT_NZ"] = args.weight_nz
    shim = os.path.join(build_dir(args, home), "judge-archs-shim.so")
    if not os.path.isfile(shim):
        raise JudgeError("%s is not built; run `%s build --archs` first" % (shim, sys.argv[0]))
    env["LD_PRELOAD"] = (shim + " " + env["LD_PRELOAD"]) if env.get("LD_PRELOAD") else shim
    env["PYACLNN_JUDGE_FLASH_ATTN"] = args.flash_attn
    return env


def run_archs(binary, args, env):
    """Runs `test-llama-archs -b CANN0 -s SEED [-a REGEX]`. Any failing aclnn call aborts
    the process, so after a death the arch it died in is recorded (ABORT, with the CANN
    error) and a new process runs the archs after it (a regex leaving out those done;
    every process recomputes its own CPU references)."""
    rows, done, procs, wall, t0 = [], [], 0, 0.0, time.time()
    while True:
        regex = args.arch_regex
        if done:
            excl = "^(?!(?:%s)$)" % "|".join(ecma_escape(a) for a in done)
            regex = excl + ("(?=.*(?:%s))" % regex if regex else "")
        cmd = [binary, "-b", BACKEND, "-s", str(args.seed)] + (["-a", regex] if regex else [])
        left = max(1, int(args.timeout - (time.time() - t0)))
        rc, text, w, timed_out = run_cmd(cmd, env, left)
        procs += 1
        wall += w
        got = parse_archs(text, args.roundtrip == "check")
        summary = re.search(r"^Summary: (.*)$", ANSI_RE.sub("", text), re.M)
        how = None
        if timed_out:
            how = "timeout after %d s" % args.timeout
        elif rc < 0:
            try:
                how = signal.Signals(-rc).name
            except ValueError:
                how = "signal %d" % -rc
        elif rc > 1 or summary is None:
            how = "exit %d" % rc
        for r in got:
            if r["status"] is not None:
                rows.append(r)
        if how is None:
            break
        # The abort message continues the row's line (the config part had no newline).
        # Its log lines start with a time stamp and a level ("0.00.142.650 E ").
        plain = re.sub(r"^\d+\.\d+\.\d+\.\d+ [A-Z] ", "", text, flags=re.M)
        info = abort_info(re.sub(r"^(\|[^|\n]*\|[^|\n]*\|\s*(?:Dense|MoE)\|)(?=[^\s\x1b])", r"\1\n",
                                 plain, flags=re.M))
        m = re.search(r"^encountered runtime error: (.*)$", ANSI_RE.sub("", text), re.M)
        if m and "abort" not in info and "cann_error" not in info:
            info["abort"] = "runtime error: " + m.group(1).strip()
        info["signal"] = how
        info["tail"] = [ANSI_RE.sub("", l) for l in text.splitlines()[-15:]]
        last = got[-1] if got and got[-1]["status"] is None else None
        if last is None:
            rows.append({"arch": "?", "device": "", "config": "", "status": "ABORT", "nmse_status": None,
                         "nmse": None, "toggle_failed": False, "roundtrip": None,
                         "abort": {k: v for k, v in info.items()}})
            break
        last["status"] = "ABORT"
        last["abort"] = info
        rows.append(last)
        for r in got:
            if r["arch"] not in done:
                done.append(r["arch"])
        if time.time() - t0 > args.timeout:
            break
    return rows, procs, time.time() - t0


def archs_verdicts(rows):
    """{arch: OK | FAIL | ABORT | SKIP} over its configs (the worst one)."""
    order = {"SKIP": 0, "OK": 1, "FAIL": 2, "ABORT": 3}
    out = {}
    for r in rows:
        a = r["arch"]
        if a not in out or order[r["status"]] > order[out[a]]:
            if not (a in out and r["status"] == "SKIP"):
                out[a] = r["status"]
        elif out[a] == "SKIP" and r["status"] != "SKIP":
            out[a] = r["status"]
    return out


def read_archs_file(path):
    """Arch names, one per line (# comments)."""
    names = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line.split()[0])
    return names


def arch_problem(r, width=160):
    parts = []
    if r["status"] == "ABORT":
        a = r.get("abort") or {}
        parts.append("%s: %s" % (a.get("signal"), abort_cause(a)))
    if r["toggle_failed"]:
        parts.append("NaN logits after the causal-attention toggle")
    elif r["nmse_status"] == "FAIL":
        parts.append("NMSE %s > 1e-4" % r["nmse"])
    if r["roundtrip"] == "FAIL":
        parts.append("roundtrip logits not bitwise equal" + ("" if r.get("roundtrip_judged", True) else " (not judged)"))
    s = " ".join("; ".join(parts).split())
    s = re.sub(r"0x[0-9a-f]{6,}", "0x...", s)  # addresses differ from run to run
    return s if len(s) <= width else s[:width - 3] + "..."


def archs_markdown(rows, meta):
    md = ["| arch | config | NMSE vs. CPU | roundtrip | result | problem |", "|---|---|---|---|---|---|"]
    for r in rows:
        nm = r["nmse_status"] or "—"
        if r["nmse"] is not None:
            nm += " (%s)" % (("%.2e" % r["nmse"]) if isinstance(r["nmse"], float) else r["nmse"])
        md.append("| %s | %s | %s | %s | %s | %s |" % (r["arch"], r["config"] or "—", nm, r["roundtrip"] or "—",
                                                        r["status"], arch_problem(r).replace("|", "\\|") or "—"))
    v = archs_verdicts(rows)
    counts = {k: sorted(a for a, s in v.items() if s == k) for k in ("OK", "FAIL", "ABORT", "SKIP")}
    md += ["", "test-llama-archs (llama.cpp from llama-cpp-python %s), %s, seed %s, flash attention %s, "
           "GGML_CANN_WEIGHT_NZ %s: %d archs: %d OK, %d FAIL, %d ABORT, %d skipped by the test itself; "
           "%d processes, wall %.0f s." % (VERSION, meta["date"], meta["seed"], meta["flash_attn"],
                                         meta["weight_nz"] or "on (default)", len(v), len(counts["OK"]),
                                         len(counts["FAIL"]), len(counts["ABORT"]), len(counts["SKIP"]),
                                         meta["processes"], meta["wall_s"])]
    for k in ("FAIL", "ABORT"):
        if counts[k]:
            md.append("%s: %s." % (k, ", ".join(counts[k])))
    return "\n".join(md) + "\n"


ARCHS_DOC_BEGIN = "<!-- ggml_judge archs: begin (python tools/ggml_judge.py archs --update-doc FILE writes them) -->"
ARCHS_DOC_END = "<!-- ggml_judge archs: end -->"


def cmd_archs(args):
    home = toolkit_home(args.toolkit)
    binary = find_binary(args, home, "test-llama-archs")
    env = archs_env(args, home)
    log("running %s on %s (seed %d, flash attention %s, GGML_CANN_WEIGHT_NZ=%s)" % (
        binary, BACKEND, args.seed, args.flash_attn, env.get("GGML_CANN_WEIGHT_NZ", "(default on)")))
    rows, procs, wall = run_archs(binary, args, env)
    verdicts = archs_verdicts(rows)
    for r in rows:
        log("%-16s %-5s %-5s NMSE %-4s %-10s roundtrip %-4s %s" % (
            r["arch"], r["config"], r["status"], r["nmse_status"] or "-",
            ("%.2e" % r["nmse"]) if isinstance(r["nmse"], float) else (r["nmse"] or ""), r["roundtrip"] or "-",
            arch_problem(r, 140)))
    counts = {k: sum(1 for s in verdicts.values() if s == k) for k in ("OK", "FAIL", "ABORT", "SKIP")}
    print("\n%d archs: %d OK, %d FAIL, %d ABORT, %d SKIP; %d processes, wall %.1f s" % (
        len(verdicts), counts["OK"], counts["FAIL"], counts["ABORT"], counts["SKIP"], procs, wall))
    rc = 0 if counts["FAIL"] == 0 and counts["ABORT"] == 0 else 1
    missing = []
    if args.expected:
        exp = read_archs_file(args.expected)
        missing = [a for a in exp if verdicts.get(a) != "OK"]
        for a in missing:
            print("expected OK, got %s: %s" % (verdicts.get(a, "not run"), a))
        rc = 1 if missing else 0
    meta = {"toolkit": home, "binary": binary, "seed": args.seed, "flash_attn": args.flash_attn,
            "roundtrip": args.roundtrip,
            "weight_nz": env.get("GGML_CANN_WEIGHT_NZ"), "processes": procs, "wall_s": round(wall, 1),
            "date": time.strftime("%Y-%m-%d"), "llama_cpp_python": VERSION, "backend": BACKEND}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows, "verdicts": verdicts, "expected_not_ok": missing}, f, indent=1)
        log("wrote %s" % args.json)
    if args.update_doc:
        update_doc(args.update_doc, archs_markdown(rows, meta), ARCHS_DOC_BEGIN, ARCHS_DOC_END)
        log("updated the archs results in %s" % args.update_doc)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(archs_markdown(rows, meta))
        log("wrote %s" % args.markdown)
    return rc


# ---------------------------------------------------------------------------

def parser():
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cache", default=argparse.SUPPRESS, help="cache directory (env PYACLNN_GGML_CACHE)")
    common.add_argument("--sdist", default=argparse.SUPPRESS, help="local sdist instead of downloading "
                        "(env PYACLNN_GGML_SDIST)")
    common.add_argument("--toolkit", default=argparse.SUPPRESS, help="toolkit root (default: python -m pyaclnn home)")
    common.add_argument("--native", dest="native", action="store_true", default=argparse.SUPPRESS,
                        help="force GGML_NATIVE=ON")
    common.add_argument("--no-native", dest="native", action="store_false", default=argparse.SUPPRESS,
                        help="force GGML_NATIVE=OFF")
    common.add_argument("--cmake-arg", action="append", default=argparse.SUPPRESS, help="extra configure argument")

    build_opts = argparse.ArgumentParser(add_help=False)
    build_opts.add_argument("--archs", action="store_true", help="also build test-llama-archs")
    build_opts.add_argument("-j", "--jobs", type=int, default=2, help="build jobs (default 2)")
    build_opts.add_argument("--nice", type=int, default=19, help="nice level of the build (0: none)")
    build_opts.add_argument("-v", "--verbose", action="store_true", help="show the whole build output")

    run_opts = argparse.ArgumentParser(add_help=False)
    run_opts.add_argument("ops", nargs="*", help="ggml ops (default: all ops CANN0 claims)")
    run_opts.add_argument("--update-doc", metavar="FILE",
                          help="also write the results table into FILE's results block (docs/ggml.md)")
    run_opts.add_argument("--ops-file", help="file with one ggml op per line, optionally followed by a -p regex for its cases (# comments)")
    run_opts.add_argument("--all-ops", action="store_true", help="every op of --list-ops, claimed or not")
    run_opts.add_argument("-p", "--params", help="test-backend-ops -p: only cases whose params match")
    run_opts.add_argument("--timeout", type=int, default=900, help="seconds per process and per op (default 900)")
    run_opts.add_argument("--continue", dest="continue_runs", type=int, default=0, metavar="N",
                          help="after an abort, up to N more processes per op run the cases after it "
                          "(the first confirms the aborting case); default 0")
    run_opts.add_argument("--no-verify", action="store_true",
                          help="with --continue: do not re-run the case believed to have aborted (half the "
                          "processes; the case is then only inferred from the order of support mode)")
    run_opts.add_argument("--json", help="write the results as JSON")
    run_opts.add_argument("--markdown", help="write the results as a Markdown table")
    run_opts.add_argument("--log-dir", help="keep each op's full output in DIR/OP.log")
    run_opts.add_argument("--backtrace", action="store_true", help="let ggml print a gdb backtrace on aborts")

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], parents=[common],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the module docstring (tools/ggml_judge.py) for details.")
    sub = ap.add_subparsers(dest="command")
    sub.required = True
    sub.add_parser("fetch", parents=[common], help="get the llama.cpp sources")
    sub.add_parser("build", parents=[common, build_opts], help="configure and build test-backend-ops")
    p_run = sub.add_parser("run", parents=[common, run_opts], help="run test-backend-ops one op per process")
    p_run.add_argument("-j", "--jobs", dest="jobs_run", type=int, default=None,
                       help="processes at a time (default min(2, CPUs))")
    p_all = sub.add_parser("all", parents=[common, build_opts, run_opts], help="fetch + build + run")
    p_all.add_argument("--run-jobs", dest="jobs_run", type=int, default=None,
                       help="processes at a time for run (default min(2, CPUs))")
    p_archs = sub.add_parser("archs", parents=[common], help="run test-llama-archs on CANN0")
    p_archs.add_argument("-a", "--arch", dest="arch_regex", default=None,
                         help="only archs whose name matches this ECMAScript regex (e.g. '^(llama|qwen2)$')")
    p_archs.add_argument("-s", "--seed", type=int, default=42, help="test-llama-archs -s (default 42)")
    p_archs.add_argument("--flash-attn", choices=("auto", "off"), default="auto",
                         help="auto: the program's own default (FLASH_ATTN_EXT where CANN0 claims it); off: "
                         "preload the shim that disables it (like llama's -fa off)")
    p_archs.add_argument("--weight-nz", choices=("on", "off"), default=None,
                         help="set GGML_CANN_WEIGHT_NZ (default: unset, i.e. ggml-cann's default on)")
    p_archs.add_argument("--roundtrip", choices=("check", "ignore"), default="check",
                         help="ignore: a roundtrip that is not bitwise equal does not fail the arch (with "
                         "GGML_CANN_WEIGHT_NZ on, ggml-cann reads the NZ bytes back and converts them again)")
    p_archs.add_argument("--expected", help="file of arch names that must be OK (exit status 1 otherwise)")
    p_archs.add_argument("--timeout", type=int, default=1800, help="seconds for the whole run (default 1800)")
    p_archs.add_argument("--json", help="write the rows as JSON")
    p_archs.add_argument("--markdown", help="write the rows as a Markdown table")
    p_archs.add_argument("--update-doc", metavar="FILE", help="write the table into FILE's archs block")
    p_archs.add_argument("--backtrace", action="store_true", help="let ggml print a gdb backtrace on aborts")
    p_list = sub.add_parser("list-ops", parents=[common], help="ops CANN0 claims, with case counts")
    p_list.add_argument("-p", "--params", help="only cases whose params match")
    p_list.add_argument("--all-ops", action="store_true", help="also the ops with 0 claimed cases")
    p_list.add_argument("--backtrace", action="store_true", help=argparse.SUPPRESS)
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    defaults = {"cache": None, "sdist": os.environ.get("PYACLNN_GGML_SDIST") or None, "toolkit": None,
                "native": None, "cmake_arg": []}
    for k, v in defaults.items():
        if not hasattr(args, k):
            setattr(args, k, v)
    args.cache = os.path.abspath(os.path.expanduser(args.cache)) if args.cache else default_cache()
    try:
        if args.command == "fetch":
            cmd_fetch(args)
            return 0
        if args.command == "build":
            cmd_build(args)
            return 0
        if args.command == "run":
            return cmd_run(args)
        if args.command == "list-ops":
            return cmd_list_ops(args)
        if args.command == "archs":
            return cmd_archs(args)
        if args.command == "all":
            info = cmd_build(args)
            return cmd_run(args, info)
    except JudgeError as e:
        print("ggml_judge: error: %s" % e, file=sys.stderr, flush=True)
        return e.status
    except KeyboardInterrupt:
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
