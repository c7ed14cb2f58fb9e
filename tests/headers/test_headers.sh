#!/usr/bin/env bash
# Header self-containment test for pyaclnn's public headers.
#  1. every header compiles on its own as C11 and as C++11 (-Wall -Wextra -Werror);
#  2. the vendor samples in $SAMPLES_DIR compile (-c, not linked) unchanged,
#     the HCCL ones with their own flags (MPI_HOME for the MPI sample's mpi.h).
# Exits non-zero on the first class of failure (all failures are reported).
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
INC="$ROOT/include"
SAMPLES_DIR="${SAMPLES_DIR:-/work/shared/samples}"
CC="${CC:-gcc}"
CXX="${CXX:-g++}"
CFLAGS_T=(-std=c11 -Wall -Wextra -Werror -fsyntax-only)
CXXFLAGS_T=(-std=c++11 -Wall -Wextra -Werror -fsyntax-only)

fail=0
npass=0
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

check() { # name, command...
    local name="$1"; shift
    if "$@" >"$TMP/log" 2>&1; then
        npass=$((npass + 1))
    else
        echo "FAIL: $name"
        sed 's/^/    /' "$TMP/log"
        fail=1
    fi
}

mapfile -t HEADERS < <(cd "$INC" && find . -name '*.h' | sed 's|^\./||' | sort)
if [ "${#HEADERS[@]}" -eq 0 ]; then
    echo "FAIL: no headers found under $INC"; exit 1
fi

for h in "${HEADERS[@]}"; do
    # Include the header from a one-line translation unit, so it is checked
    # exactly as a user sees it (alone, first).
    printf '#include "%s"\n' "$h" >"$TMP/tu.c"
    cp "$TMP/tu.c" "$TMP/tu.cpp"
    check "C11   $h" "$CC" "${CFLAGS_T[@]}" -I"$INC" "$TMP/tu.c"
    check "C++11 $h" "$CXX" "${CXXFLAGS_T[@]}" -I"$INC" "$TMP/tu.cpp"
    # Also include it twice (include guard) in C.
    printf '#include "%s"\n#include "%s"\n' "$h" "$h" >"$TMP/tu2.c"
    check "C11 x2 $h" "$CC" "${CFLAGS_T[@]}" -I"$INC" "$TMP/tu2.c"
done

# All headers together, in both languages.
: >"$TMP/all.c"
for h in "${HEADERS[@]}"; do printf '#include "%s"\n' "$h" >>"$TMP/all.c"; done
cp "$TMP/all.c" "$TMP/all.cpp"
check "C11   all headers" "$CC" "${CFLAGS_T[@]}" -I"$INC" "$TMP/all.c"
check "C++11 all headers" "$CXX" "${CXXFLAGS_T[@]}" -I"$INC" "$TMP/all.cpp"

# Vendor samples, unchanged, compile only.
shopt -s nullglob
samples=("$SAMPLES_DIR"/*.cpp "$SAMPLES_DIR"/*/*.cpp)
if [ "${#samples[@]}" -eq 0 ]; then
    echo "FAIL: no samples found in $SAMPLES_DIR"; fail=1
fi
for s in "${samples[@]}"; do
    check "sample ${s#"$SAMPLES_DIR"/}" "$CXX" -I"$INC" -c "$s" -o "$TMP/$(basename "$s").o"
done

# The vendor's HCCL samples, unchanged, with their Makefiles' language flags
# (-std=c++14 -Werror; the MPI one -std=c++17 and mpi.h from MPI_HOME).
nhccl=0
for s in "$SAMPLES_DIR"/hccl/*/main.cc; do
    [ -e "$s" ] || continue
    name="$(basename "$(dirname "$s")")"
    if grep -q "mpi.h" "$s"; then
        if [ -z "${MPI_HOME:-}" ] || [ ! -e "$MPI_HOME/include/mpi.h" ]; then
            echo "FAIL: hccl sample $name needs mpi.h: set MPI_HOME"; fail=1; continue
        fi
        check "hccl sample $name" "$CXX" -std=c++17 -Werror -I"$INC" -I"$MPI_HOME/include" -c "$s" -o "$TMP/$name.o"
    else
        check "hccl sample $name" "$CXX" -std=c++14 -Werror -I"$INC" -c "$s" -o "$TMP/$name.o"
    fi
    nhccl=$((nhccl + 1))
done
if [ "$nhccl" -eq 0 ]; then
    echo "FAIL: no HCCL samples in $SAMPLES_DIR/hccl"; fail=1
fi

if [ "$fail" -ne 0 ]; then
    echo "test_headers: FAILED ($npass checks passed)"
    exit 1
fi
echo "test_headers: OK ($npass checks, ${#HEADERS[@]} headers, ${#samples[@]} samples, $nhccl HCCL samples)"
