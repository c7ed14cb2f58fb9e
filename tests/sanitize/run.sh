#!/usr/bin/env bash
# Builds the library under the sanitizers and runs the C-level checks with it.
#
#   tests/sanitize/run.sh [--only asan|tsan] [BUILD_ROOT]
#
# address variant (-DPA_SANITIZE=address: ASan + UBSan, every finding aborts):
#   the C suites (tests/c/, test_hccl.c included: the in-process HCCL engine),
#   the vendor samples in ../shared/samples (compiled unchanged; the forward
#   samples only when their header is in include/; the HCCL thread samples with
#   PYACLNN_DEVICE_COUNT=2), and a fuzz smoke run of tests/fuzz/fuzz_ops.c (all
#   four ops and two plumbing ops).
# thread variant (-DPA_SANITIZE=thread: TSan): the C suites, the HCCL thread
#   samples, and tests/sanitize/stress_streams.c (4 threads, a stream each,
#   all four ops, events).
#
# BUILD_ROOT (default: a temporary directory, removed at the end) receives
# build-address/ and build-thread/. Environment:
#   FUZZ_CASES (default 50000), FUZZ_SEED (default 1), STRESS_ITERATIONS (default 200),
#   FUZZ_AVOID (malformations fuzz_ops leaves out, e.g. "destroy-twice"; default none),
#   FUZZ_TABLE_CASES (cases of tests/fuzz/fuzz_table.c, every operator of the op table; default 60000),
#   SAMPLES_DIR (default ../shared/samples beside the checkout), CC / CXX (default gcc / g++).
# Exits non-zero if any step fails or any sanitizer reports anything.
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SAMPLES="${SAMPLES_DIR:-$(cd "$ROOT/.." && pwd)/shared/samples}"
CC="${CC:-gcc}"
CXX="${CXX:-g++}"
ONLY=""
if [ "${1:-}" = "--only" ]; then
    ONLY="$2"
    shift 2
fi
if [ $# -ge 1 ]; then
    OUT="$1"
    mkdir -p "$OUT"
else
    OUT="$(mktemp -d "${TMPDIR:-/tmp}/pa_sanitize.XXXXXX")"
    trap 'rm -rf "$OUT"' EXIT
fi
OUT="$(cd "$OUT" && pwd)"

# Any report stops the program with a distinctive status.
export ASAN_OPTIONS="halt_on_error=1:exitcode=86:detect_leaks=1:check_initialization_order=1:strict_init_order=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=86"
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1"
ASAN_FLAGS="-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer -g"
TSAN_FLAGS="-fsanitize=thread -fno-omit-frame-pointer -g"

failed=()
step() { # step NAME LOG COMMAND...: runs it, keeps its output in LOG, fails on status or on a report
    local name="$1" log="$2"
    shift 2
    local t0=$SECONDS
    "$@" >"$log" 2>&1
    local rc=$?
    if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:|WARNING: ThreadSanitizer|ThreadSanitizer: " "$log"; then
        [ "$rc" -eq 0 ] && rc=99
    fi
    if [ "$rc" -eq 0 ]; then
        echo "PASS  $name ($((SECONDS - t0)) s)"
    else
        echo "FAIL  $name (status $rc, $((SECONDS - t0)) s); log $log:"
        grep -E "SUMMARY|runtime error|ERROR:|WARNING: ThreadSanitizer|FAILED|CRASH|ACCEPTED|SUCCEEDED|differ" "$log" | head -40
        tail -n 20 "$log"
        failed+=("$name")
    fi
}

build() { # build VARIANT
    local dir="$OUT/build-$1" extra=()
    # TSan looks for races in the runtime, the pool and the ops' splits of work, the same on
    # every ISA tier: the scalar kernels suffice, and skip two thirds of the kernel compiles.
    [ "$1" = thread ] && extra=(-DPA_SCALAR_ONLY=ON)
    cmake -S "$ROOT/native" -B "$dir" -DPA_SANITIZE="$1" -DCMAKE_BUILD_TYPE=Release "${extra[@]}" &&
        cmake --build "$dir" -j2 --target ascendcl nnopbase opapi hccl
}

link_line() { # link_line LIBDIR
    echo "-I$ROOT/include -L$1 -lascendcl -lnnopbase -lopapi -Wl,-rpath,$1 -pthread -lm"
}

hccl_samples() { # hccl_samples LIBDIR FLAGS LABEL: the thread samples, unchanged, 2 devices
    local lib="$1" flags="$2" label="$3" dir name exe
    for dir in "$SAMPLES"/hccl/*/; do
        name="$(basename "$dir")"
        [ "$name" = one_device_per_process ] && continue # MPI: tests/test_hccl_samples.py
        [ -e "$dir/main.cc" ] || continue
        exe="$OUT/samples/hccl_$name.$label"
        # shellcheck disable=SC2086
        step "hccl sample $name (build, $label)" "$exe.build.log" \
            "$CXX" -std=c++14 $flags "$dir/main.cc" -o "$exe" -I"$ROOT/include" -L"$lib" -lhccl -lascendcl \
            -Wl,-rpath,"$lib" -pthread
        [ -x "$exe" ] || continue
        step "hccl sample $name ($label)" "$exe.log" \
            run_in "$OUT/samples" env PYACLNN_DEVICE_COUNT=2 LSAN_OPTIONS="suppressions=$ROOT/tests/sanitize/vendor_samples.supp" "$exe"
    done
}

run_in() { # run_in DIR COMMAND...
    (cd "$1" && shift && "$@")
}

if [ -z "$ONLY" ] || [ "$ONLY" = asan ]; then
    LIB="$OUT/build-address"
    step "build (address)" "$OUT/build-address.log" build address
    if [ -e "$LIB/libascendcl.so" ]; then
        # 1. the C suites, built with the same sanitizers
        step "C suites (ASan+UBSan)" "$OUT/c-suites.log" \
            env PA_TEST_CFLAGS="$ASAN_FLAGS" CC="$CC" bash "$ROOT/tests/c/run_c_tests.sh" "$LIB"

        # 2. the vendor samples, unchanged. Leaks are checked, except of objects the
        # library handed to the sample (vendor_samples.supp: some samples never free
        # them). UBSan cannot see the NSA forward sample's printf("%f") of a half
        # value (a sample bug, not the library's); it is not reported.
        mkdir -p "$OUT/samples"
        if [ ! -e "$SAMPLES/aclnn_scaled_masked_softmax_backward.cpp" ]; then
            echo "FAIL  vendor samples: none in $SAMPLES (set SAMPLES_DIR)"
            failed+=("vendor samples")
        fi
        for src in "$SAMPLES"/*.cpp "$SAMPLES"/forward/*.cpp; do
            [ -e "$src" ] || continue
            header="$(sed -n 's/^#include "\(aclnnop\/[^"]*\)"/\1/p' "$src" | head -n 1)"
            name="$(basename "$src" .cpp)"
            if [ -n "$header" ] && [ ! -e "$ROOT/include/$header" ]; then
                echo "SKIP  sample $name: include/$header is not in this checkout yet"
                continue
            fi
            exe="$OUT/samples/$name"
            # shellcheck disable=SC2046
            step "sample $name (build)" "$OUT/samples/$name.build.log" \
                "$CXX" $ASAN_FLAGS "$src" -o "$exe" $(link_line "$LIB")
            [ -x "$exe" ] || continue
            step "sample $name (ASan+UBSan+LSan)" "$OUT/samples/$name.log" \
                run_in "$OUT/samples" env LSAN_OPTIONS="suppressions=$ROOT/tests/sanitize/vendor_samples.supp" "$exe"
        done

        hccl_samples "$LIB" "$ASAN_FLAGS" "ASan+UBSan"

        # 3. fuzz smoke
        # shellcheck disable=SC2046
        step "fuzz_ops (build)" "$OUT/fuzz-build.log" \
            "$CC" -std=c11 -Wall -Wextra -Werror $ASAN_FLAGS "$ROOT/tests/fuzz/fuzz_ops.c" -o "$OUT/fuzz_ops" \
            $(link_line "$LIB")
        if [ -x "$OUT/fuzz_ops" ]; then
            step "fuzz_ops --seed ${FUZZ_SEED:-1} --cases ${FUZZ_CASES:-50000} (ASan+UBSan)" "$OUT/fuzz.log" \
                "$OUT/fuzz_ops" --seed "${FUZZ_SEED:-1}" --cases "${FUZZ_CASES:-50000}" ${FUZZ_AVOID:+--avoid "$FUZZ_AVOID"}
            grep -E "^(fuzz_ops:|  |accepted|bad-address|crashes)" "$OUT/fuzz.log" | grep -v "^    " | tail -n 14
        fi
        # 4. the table fuzzer: every operator of the op table, round robin
        # shellcheck disable=SC2046
        step "fuzz_table (build)" "$OUT/fuzz-table-build.log" \
            "$CC" -std=c11 -Wall -Wextra -Werror $ASAN_FLAGS -I"$ROOT/tests/fuzz" "$ROOT/tests/fuzz/fuzz_table.c" \
            -o "$OUT/fuzz_table" $(link_line "$LIB")
        if [ -x "$OUT/fuzz_table" ]; then
            step "fuzz_table --seed ${FUZZ_SEED:-1} --cases ${FUZZ_TABLE_CASES:-60000} (ASan+UBSan)" \
                "$OUT/fuzz-table.log" "$OUT/fuzz_table" --seed "${FUZZ_SEED:-1}" --cases "${FUZZ_TABLE_CASES:-60000}"
            grep -E "^(fuzz_table:|  |accepted|crashes)" "$OUT/fuzz-table.log" | tail -n 6
        fi
    fi
fi

if [ -z "$ONLY" ] || [ "$ONLY" = tsan ]; then
    LIB="$OUT/build-thread"
    step "build (thread)" "$OUT/build-thread.log" build thread
    if [ -e "$LIB/libascendcl.so" ]; then
        step "C suites (TSan)" "$OUT/c-suites-tsan.log" \
            env PA_TEST_CFLAGS="$TSAN_FLAGS" CC="$CC" bash "$ROOT/tests/c/run_c_tests.sh" "$LIB"
        mkdir -p "$OUT/samples"
        hccl_samples "$LIB" "$TSAN_FLAGS" "TSan"
        # shellcheck disable=SC2046
        step "stress_streams (build)" "$OUT/stress-build.log" \
            "$CC" -std=c11 -Wall -Wextra -Werror $TSAN_FLAGS "$ROOT/tests/sanitize/stress_streams.c" \
            -o "$OUT/stress_streams" $(link_line "$LIB")
        if [ -x "$OUT/stress_streams" ]; then
            # more kernel threads than CPUs, so the pool's workers interleave too
            step "stress_streams ${STRESS_ITERATIONS:-200} (TSan)" "$OUT/stress.log" \
                env PYACLNN_NUM_THREADS=3 "$OUT/stress_streams" "${STRESS_ITERATIONS:-200}"
            tail -n 1 "$OUT/stress.log"
        fi
    fi
fi

if [ ${#failed[@]} -ne 0 ]; then
    echo "sanitizer run FAILED: ${failed[*]}"
    exit 1
fi
echo "sanitizer run passed"
