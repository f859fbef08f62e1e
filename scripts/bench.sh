#!/usr/bin/env bash
# Installs the benchmark peers (Debian packages: libtorch-dev with OpenBLAS),
# builds the benchmarks in ./build-bench (-O3 -march=native) and runs the CPU
# training/forward benchmarks, printing typeflow/peer ratios; mlp_train runs
# a second time built with -DTYPEFLOW_USE_BLAS=ON (./build-bench-blas).
# typeflow runs at 1 and 2 threads (session_options{.threads}); each benchmark
# prints `<workload> threads=1 typeflow=<us> eigen=<us> ratio=<eigen/typeflow>`
# and `<workload> threads=2 typeflow=<us> speedup=<t1/t2>`. Run it on a quiet
# machine: other processes on the cores take the second thread's share.
#   bash scripts/bench.sh                 # all of them
#   bash scripts/bench.sh mlp_train       # one
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/deps.sh
PEERS=(libtorch-dev libopenblas0)
missing=()
for pkg in "${PEERS[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=(); [ "$(id -u)" -eq 0 ] || SUDO=(sudo)
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
BUILD_DIR="${BUILD_DIR:-build-bench}"
generator=(); [ -f "$BUILD_DIR/CMakeCache.txt" ] || generator=(-G Ninja)
cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DTYPEFLOW_BUILD_TESTS=OFF -DTYPEFLOW_BUILD_EXAMPLES=OFF
names=("$@"); [ "${#names[@]}" -gt 0 ] || names=(fused_chain mlp_forward mlp_train)
for n in "${names[@]}"; do
  cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target "bench_$n"
  OMP_NUM_THREADS=1 "$BUILD_DIR/benchmarks/bench_$n"
done
# The training step once more with typeflow and Eigen calling OpenBLAS, the
# BLAS libtorch uses (-DTYPEFLOW_USE_BLAS=ON): the like-for-like comparison
# with libtorch.
for n in "${names[@]}"; do
  [ "$n" = mlp_train ] || continue
  gen_blas=(); [ -f "$BUILD_DIR-blas/CMakeCache.txt" ] || gen_blas=(-G Ninja)
  cmake -S . -B "$BUILD_DIR-blas" "${gen_blas[@]}" -DCMAKE_BUILD_TYPE=Release -DTYPEFLOW_BUILD_TESTS=OFF \
    -DTYPEFLOW_BUILD_EXAMPLES=OFF -DTYPEFLOW_USE_BLAS=ON
  cmake --build "$BUILD_DIR-blas" -j "${JOBS:-$(nproc)}" --target "bench_$n"
  OMP_NUM_THREADS=1 "$BUILD_DIR-blas/benchmarks/bench_$n"
done
