#!/usr/bin/env bash
# Install missing Debian packages, build the main example
# (examples/fashion_mnist_cnn.cpp: the lectures' CNN on Fashion-MNIST, 2 epochs)
# and run it. Without that file, build and run every example.
#   JOBS=N bash scripts/example.sh     # limit parallelism (default: nproc)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
JOBS="${JOBS:-$(nproc)}"
BUILD_DIR="${BUILD_DIR:-build}"
MAIN_EXAMPLE=fashion_mnist_cnn

bash scripts/deps.sh

generator=()
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  generator=(-G Ninja)
fi
cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DTYPEFLOW_BUILD_EXAMPLES=ON "$@"

if [ -f "examples/$MAIN_EXAMPLE.cpp" ]; then
  cmake --build "$BUILD_DIR" -j "$JOBS" --target "$MAIN_EXAMPLE"
  echo "== running $MAIN_EXAMPLE"
  cd "$BUILD_DIR/examples"
  exec "./$MAIN_EXAMPLE"
fi

shopt -s nullglob
examples=(examples/*.cpp)
if [ "${#examples[@]}" -eq 0 ]; then
  echo "example: no examples/*.cpp yet" >&2
  exit 1
fi
echo "example: examples/$MAIN_EXAMPLE.cpp not found; building and running every example"
cmake --build "$BUILD_DIR" -j "$JOBS"
ctest --test-dir "$BUILD_DIR" -L example --output-on-failure -V
