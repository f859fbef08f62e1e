#!/usr/bin/env bash
# scripts/gpu_prebuild.sh — builds the CUDA checks' programs on a machine
# without a GPU (nvcc and the CUDA libraries under /usr/local/cuda are
# enough), so that a machine with a device only runs them:
#
#   bash scripts/gpu_prebuild.sh            # here: build-gpu/, at most 64 MiB
#   bash scripts/gpu_check.sh build-gpu     # there, with build-gpu carried along
#
# build-gpu/ gets typeflow_cuda_tests, bench_gpu and fashion_mnist_mlp_gpu
# (stripped), lib/ with the shared libraries they need from outside the CUDA
# Toolkit and the C/C++ runtime (a device machine's image may lack OpenBLAS,
# zlib or OpenSSL; gpu_check.sh puts lib/ last on the library path, so the
# machine's own copies win), and fashion-mnist/ with the example's data when
# it still fits. The CUDA libraries themselves (cuBLAS, cuDNN, NCCL) are the
# device machine's: they are far larger than what a call can carry.
# Usage: scripts/gpu_prebuild.sh [OUT_DIR (build-gpu)] [BUILD_DIR (build-gpu-prebuild)]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build-gpu}
BUILD=${2:-build-gpu-prebuild}
LIMIT=$((64 * 1024 * 1024))

command -v /usr/local/cuda/bin/nvcc > /dev/null || { echo "gpu_prebuild: no /usr/local/cuda/bin/nvcc" >&2; exit 2; }
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYPEFLOW_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc > "$BUILD/configure.log" 2>&1 ||
    { tail -20 "$BUILD/configure.log" >&2; exit 1; }
ninja -C "$BUILD" typeflow_cuda_tests bench_gpu fashion_mnist_mlp_gpu

rm -rf "$OUT"
mkdir -p "$OUT/lib"
for b in tests/typeflow_cuda_tests benchmarks/bench_gpu examples/fashion_mnist_mlp_gpu; do
    cp "$BUILD/$b" "$OUT/"
    strip "$OUT/$(basename "$b")"
done
# every library the programs load that is neither the CUDA Toolkit's nor the C/C++ runtime's
for b in "$OUT"/typeflow_cuda_tests "$OUT"/bench_gpu "$OUT"/fashion_mnist_mlp_gpu; do
    ldd "$b" | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
    case "$lib" in
        /usr/local/cuda*) ;;
        */libc.so.* | */libm.so.* | */libpthread.so.* | */libdl.so.* | */librt.so.* | */ld-linux* | \
            */libgcc_s.so.* | */libstdc++.so.*) ;;
        *) cp -L "$lib" "$OUT/lib/" ;;
    esac
done
size_of() { du -sb "$1" | awk '{ print $1 }'; }
if [ -d /usr/share/datasets/fashion-mnist ]; then
    if (($(size_of "$OUT") + $(size_of /usr/share/datasets/fashion-mnist) < LIMIT)); then
        cp -r /usr/share/datasets/fashion-mnist "$OUT/"
    else
        echo "gpu_prebuild: fashion-mnist left out (it does not fit in 64 MiB with the programs)" >&2
    fi
fi
du -ab "$OUT" | sort -n | tail -n 12
total=$(size_of "$OUT")
echo "gpu_prebuild: $OUT holds $total bytes (a call carries at most $LIMIT)"
((total < LIMIT)) || { echo "gpu_prebuild: $OUT is too large to carry" >&2; exit 1; }
