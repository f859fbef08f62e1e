#!/usr/bin/env bash
# scripts/gpu_check.sh — the CUDA backend's checks on a machine with a CUDA
# device, in one run, shortest and most important first:
#   1. the GPU test suite (typeflow_cuda_tests: ops, gradients, training on
#      gpu<0> against the cpu and finite differences; bad input), then the
#      GPU example (Fashion-MNIST MLP);
#   2. bench_gpu: fused chain vs device copy and a hand-written kernel, GEMM
#      vs cuBLAS, the MLP training step, the lectures' CNN training step;
#   3. the PyTorch peers of the MLP and CNN steps (benchmarks/gpu/torch_mlp_step.py);
#   4. compute-sanitizer memcheck and racecheck over the GPU tests.
# Usage: scripts/gpu_check.sh [BIN_DIR] [LOG_DIR]
#   BIN_DIR holds typeflow_cuda_tests and bench_gpu (built with
#   -DTYPEFLOW_ENABLE_CUDA=ON; default build-gpu), best made beforehand on a
#   machine without a GPU by scripts/gpu_prebuild.sh and carried along; they
#   are built there with cmake when missing. Logs go to LOG_DIR (default $OUT, else /tmp/gpu_check).
# GPU_CHECK_TORCH_VARIANTS picks the PyTorch variants (default eager,compile,compile_ro).
set -u
cd "$(dirname "$0")/.."
BIN=${1:-build-gpu}
LOG=${2:-${OUT:-/tmp/gpu_check}}
mkdir -p "$LOG"
# the machine's CUDA libraries first, then the NVIDIA wheels' (cuDNN and NCCL
# where the toolkit has none), then what scripts/gpu_prebuild.sh carried in BIN_DIR/lib
LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for d in /opt/torch/.venv/lib/python3*/site-packages/nvidia/*/lib /usr/local/lib/python3*/dist-packages/nvidia/*/lib; do
    [ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
[ -d "$BIN/lib" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(cd "$BIN/lib" && pwd)"
export LD_LIBRARY_PATH
export PYTHONUNBUFFERED=1
summary=()
note() { summary+=("$1"); echo "== $1"; }

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv 2>&1 | tee "$LOG/device.txt"
nproc | sed 's/^/cpus: /' | tee -a "$LOG/device.txt"
# libraries a carried program cannot find on this machine (scripts/gpu_prebuild.sh)
for b in "$BIN"/typeflow_cuda_tests "$BIN"/bench_gpu "$BIN"/fashion_mnist_mlp_gpu; do
    [ -x "$b" ] && ldd "$b" | grep "not found" | sed "s|^|$(basename "$b"): |" | tee -a "$LOG/device.txt"
done

if [ ! -x "$BIN/typeflow_cuda_tests" ] || ! "$BIN/typeflow_cuda_tests" --list-test-names-only > /dev/null 2>&1; then
    echo "== building with cmake into build-gpu-local"
    cmake -S . -B build-gpu-local -G Ninja -DCMAKE_BUILD_TYPE=Release -DTYPEFLOW_ENABLE_CUDA=ON > "$LOG/cmake.log" 2>&1 &&
        ninja -C build-gpu-local typeflow_cuda_tests bench_gpu fashion_mnist_mlp_gpu > "$LOG/build.log" 2>&1
    mkdir -p "$BIN"
    cp build-gpu-local/tests/typeflow_cuda_tests build-gpu-local/benchmarks/bench_gpu \
        build-gpu-local/examples/fashion_mnist_mlp_gpu "$BIN"/ 2>/dev/null
fi

# 1. tests
timeout 240 "$BIN/typeflow_cuda_tests" > "$LOG/tests.log" 2>&1
rc=$?
tail -5 "$LOG/tests.log"
note "tests rc=$rc: $(grep -E '^(All tests passed|test cases:)' "$LOG/tests.log" | tail -1)"

# 1b. the GPU example (Fashion-MNIST: Debian's files, or a copy carried in BIN_DIR/fashion-mnist)
if [ -x "$BIN/fashion_mnist_mlp_gpu" ]; then
    if [ ! -d /usr/share/datasets/fashion-mnist ] && [ -d "$BIN/fashion-mnist" ]; then
        mkdir -p /usr/share/datasets && cp -r "$BIN/fashion-mnist" /usr/share/datasets/
    fi
    timeout 180 "$BIN/fashion_mnist_mlp_gpu" > "$LOG/example.log" 2>&1
    rc=$?
    tail -3 "$LOG/example.log"
    note "example rc=$rc: $(tail -1 "$LOG/example.log")"
fi

# 2. benchmarks
timeout 240 "$BIN/bench_gpu" > "$LOG/bench.log" 2>&1
rc=$?
cat "$LOG/bench.log"
note "bench rc=$rc"

# 3. the PyTorch peer
timeout "${GPU_CHECK_TORCH_SECONDS:-200}" python3 benchmarks/gpu/torch_mlp_step.py \
    --variants "${GPU_CHECK_TORCH_VARIANTS:-eager,compile,compile_ro}" --batches 256,4096 > "$LOG/torch.log" 2>&1
rc=$?
timeout "${GPU_CHECK_TORCH_SECONDS:-200}" python3 benchmarks/gpu/torch_mlp_step.py --model cnn \
    --variants "${GPU_CHECK_TORCH_VARIANTS:-eager,compile,compile_ro}" >> "$LOG/torch.log" 2>&1
rc=$((rc | $?))
cat "$LOG/torch.log"
note "torch rc=$rc"

# 4. compute-sanitizer (the out-of-memory test is left out: its failed allocation is the point)
if command -v compute-sanitizer > /dev/null 2>&1; then
    for tool in memcheck racecheck; do
        timeout "${GPU_CHECK_SANITIZER_SECONDS:-150}" compute-sanitizer --tool $tool --error-exitcode 9 \
            "$BIN/typeflow_cuda_tests" "~cuda out of device memory*" > "$LOG/$tool.log" 2>&1
        rc=$?
        tail -3 "$LOG/$tool.log"
        note "$tool rc=$rc: $(grep -E 'ERROR SUMMARY|All tests passed|test cases:' "$LOG/$tool.log" | tr '\n' ' ')"
    done
else
    note "compute-sanitizer: not found"
fi

echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
grep -hE '^(copy|fused_chain_gpu|gemm_gpu|mlp_step_gpu|cnn_step_gpu|torch_mlp_step|torch_cnn_step)' "$LOG/bench.log" "$LOG/torch.log" 2>/dev/null
