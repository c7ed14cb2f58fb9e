#!/usr/bin/env bash
# Builds and runs the C tests in tests/c/*.c against libascendcl.so.
#
#   tests/c/run_c_tests.sh [LIBDIR]
#
# LIBDIR holds libascendcl.so, libnnopbase.so and libopapi.so; without it the
# library is built with cmake into a temporary directory first.
# Optional environment:
#   PA_TEST_CFLAGS   extra compiler flags (e.g. "-fsanitize=address,undefined -g")
#   PA_TEST_WRAPPER  command prefix for running each test (e.g. "valgrind --error-exitcode=1")
#   CC               compiler (default gcc)
# Exits non-zero if any test fails to build or run.
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CC="${CC:-gcc}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/pa_ctests.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

if [ $# -ge 1 ] && [ -n "$1" ]; then
    LIB="$(cd "$1" && pwd)"
else
    LIB="$WORK/build"
    echo "== building the library in $LIB"
    cmake -S "$ROOT/native" -B "$LIB" -DCMAKE_BUILD_TYPE=Release >"$WORK/cmake.log" 2>&1 &&
        cmake --build "$LIB" -j2 --target ascendcl nnopbase opapi >>"$WORK/cmake.log" 2>&1 || {
        cat "$WORK/cmake.log"
        echo "FAILED: library build"
        exit 1
    }
fi
for l in ascendcl nnopbase opapi; do
    if [ ! -e "$LIB/lib$l.so" ]; then
        echo "FAILED: $LIB/lib$l.so not found"
        exit 1
    fi
done

fail=0
ran=0
for src in "$ROOT"/tests/c/*.c; do
    name="$(basename "$src" .c)"
    exe="$WORK/$name"
    # shellcheck disable=SC2086
    if ! "$CC" -std=c11 -Wall -Wextra -Werror ${PA_TEST_CFLAGS:-} -I "$ROOT/include" -I "$ROOT/native" \
        "$src" -o "$exe" -L"$LIB" -lascendcl -lnnopbase -lopapi -Wl,-rpath,"$LIB" -pthread -lm; then
        echo "FAILED (build): $name"
        fail=1
        continue
    fi
    echo "== $name"
    ran=$((ran + 1))
    # shellcheck disable=SC2086
    if ! (cd "$WORK" && ${PA_TEST_WRAPPER:-} "$exe"); then
        echo "FAILED: $name"
        fail=1
    fi
done
if [ "$ran" -eq 0 ]; then
    echo "FAILED: no test ran"
    exit 1
fi
[ "$fail" -eq 0 ] && echo "all C tests passed" || echo "some C tests FAILED"
exit "$fail"
