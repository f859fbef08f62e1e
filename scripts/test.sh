#!/usr/bin/env bash
# Install missing Debian packages, configure (Ninja, Release, ./build), build
# everything (library checks, tests, examples, benchmarks) and run the whole
# CTest suite. Exits non-zero on any failure.
#   JOBS=N bash scripts/test.sh     # limit parallelism (default: nproc)
#   BUILD_DIR=dir bash scripts/test.sh
#   extra arguments are passed to the cmake configure step, e.g.
#   bash scripts/test.sh -DTYPEFLOW_USE_BLAS=ON
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
JOBS="${JOBS:-$(nproc)}"
BUILD_DIR="${BUILD_DIR:-build}"

bash scripts/deps.sh

generator=()
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  generator=(-G Ninja)
fi
# Where the CUDA toolkit is installed (nvcc), the CUDA backend's tests and
# benchmark are built too; its GPU tests run where a device is present and
# report themselves skipped elsewhere (the host-side ones always run).
cuda=()
if [[ " $* " != *TYPEFLOW_ENABLE_CUDA* ]] && { command -v nvcc > /dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }; then
  cuda=(-DTYPEFLOW_ENABLE_CUDA=ON)
  # Without a device (no /dev/nvidia0), the device-only test files are
  # compiled as a check: they could not run here anyway. With one, in full
  # (also in a build directory first configured without a device).
  if [[ " $* " != *TYPEFLOW_CUDA_DEVICE_TESTS_CHECK_ONLY* ]]; then
    if [ -e /dev/nvidia0 ]; then cuda+=(-DTYPEFLOW_CUDA_DEVICE_TESTS_CHECK_ONLY=OFF)
    else cuda+=(-DTYPEFLOW_CUDA_DEVICE_TESTS_CHECK_ONLY=ON); fi
  fi
fi
# The benchmarks are compiled as a check only (their programs are
# scripts/bench.sh's, in build-bench): -DTYPEFLOW_BENCHMARKS_CHECK_ONLY=OFF
# builds them here too.
check_only=()
if [[ " $* " != *TYPEFLOW_BENCHMARKS_CHECK_ONLY* ]]; then
  check_only=(-DTYPEFLOW_BENCHMARKS_CHECK_ONLY=ON)
fi
cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${cuda[@]}" "${check_only[@]}" "$@"
cmake --build "$BUILD_DIR" -j "$JOBS"
ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error -j "$JOBS"
