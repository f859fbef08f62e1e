#!/usr/bin/env bash
# scripts/sanitize.sh — the test suite under the sanitizers (after the main
# suite, .ci/run runs this). Exits non-zero on any failure or sanitizer report.
#
#   bash scripts/sanitize.sh            # both runs below
#   bash scripts/sanitize.sh asan       # or: tsan
#
# 1. build-asan: AddressSanitizer + UndefinedBehaviorSanitizer (GCC, -O1,
#    every report fatal): the unit tests whose file names match $ASAN_UNITS,
#    the examples matching $ASAN_EXAMPLES, and the distributed tests.
# 2. build-tsan: ThreadSanitizer: the distributed tests and the unit tests
#    that run threads ($TSAN_UNITS: the thread pool, sessions with threads,
#    prefetch, checkpoint writers).
# The fuzz targets (fuzz.*, dist.fuzz.frame) run in the main suite.
# Sanitizer builds have no -g (debug information of deep expression types
# costs gigabytes of compiler memory; symbols still name every frame).
# Suppressions, each with the upstream bug it works around:
# tests/fuzz/ubsan.supp.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
JOBS="${JOBS:-$(nproc)}"
what="${1:-all}"

ASAN_UNITS="${ASAN_UNITS:-test_(tensor|session|alloc|memory_plan|threads|data|io_.*|models|ops_gather|ops_array|ops_pool|train)\\.cpp}"
ASAN_EXAMPLES="${ASAN_EXAMPLES:-readme_tour|readme_training|iris_logistic|io_checkpoint|tensor_api|custom_op}"
TSAN_UNITS="${TSAN_UNITS:-test_(threads|session|data|io_checkpoint|io_crash)\\.cpp}"

bash scripts/deps.sh
supp="$PWD/tests/fuzz/ubsan.supp"
start=$SECONDS

run_build() {  # run_build <dir> <flags> <units regex> <examples regex|""> <ctest label regex> <ctest name regex>
    local dir="$1" flags="$2" units="$3" examples="$4" labels="$5" names="$6"
    local generator=()
    [ -f "$dir/CMakeCache.txt" ] || generator=(-G Ninja)
    cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS="$flags" \
        -DCMAKE_EXE_LINKER_FLAGS="$flags" -DTYPEFLOW_UNIT_TEST_FILTER="$units" \
        -DTYPEFLOW_BUILD_BENCHMARKS=OFF -DTYPEFLOW_INSTALL=OFF >/dev/null
    local targets=(typeflow_tests)
    if [ -n "$examples" ]; then
        for e in ${examples//|/ }; do targets+=("$e"); done
    fi
    # the distributed layer's executables (cmake/dist.cmake: dist_* and the
    # launcher its tests start); Ninja's `help` does not list them all
    while read -r t; do targets+=("$t"); done < <(ninja -C "$dir" -t targets all |
        sed -n 's/^\(dist_[a-z0-9_]*\|typeflow-launch\): CXX_EXECUTABLE_LINKER.*/\1/p' | grep -v -e fuzz -e bench)
    cmake --build "$dir" -j "$JOBS" --target "${targets[@]}"
    ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$JOBS" -L "$labels" -R "$names" -E "fuzz|bench"
}

if [[ "$what" == all || "$what" == asan ]]; then
    echo "== sanitize: AddressSanitizer + UndefinedBehaviorSanitizer"
    # allocator_may_return_null: the tests that ask for 2^48 bytes check that a
    # failed allocation is a tf::error; ASan's default aborts on any request
    # above its 2^40-byte limit instead of failing it like malloc.
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:allocator_may_return_null=1"
    export UBSAN_OPTIONS="suppressions=$supp:halt_on_error=1:print_stacktrace=1"
    run_build build-asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize-recover=pointer-overflow -fno-omit-frame-pointer" \
        "$ASAN_UNITS" "$ASAN_EXAMPLES" "unit|example|dist" "^(unit\\.|dist\\.|example\\.(${ASAN_EXAMPLES})$)"
    unset ASAN_OPTIONS UBSAN_OPTIONS
    echo "== sanitize: asan+ubsan done after $((SECONDS - start)) s"
fi
if [[ "$what" == all || "$what" == tsan ]]; then
    echo "== sanitize: ThreadSanitizer"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
    run_build build-tsan "-fsanitize=thread" "$TSAN_UNITS" "" "unit|dist" "^(unit\\.|dist\\.)"
    unset TSAN_OPTIONS
    echo "== sanitize: tsan done after $((SECONDS - start)) s"
fi
echo "sanitize: all clean ($((SECONDS - start)) s)"
