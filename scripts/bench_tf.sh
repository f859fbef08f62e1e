#!/usr/bin/env bash
# The lecture's CNN, an LSTM layer, the two-tower ticket ranker and a while
# loop's and a scan's gradients against TensorFlow itself, in one run: builds
# benchmarks/cnn_train.cpp, benchmarks/lstm_train.cpp,
# benchmarks/two_tower_train.cpp and benchmarks/while_grad.cpp in ./build-bench (-O3 -march=native, the
# configuration the README recommends), creates a virtual environment with
# tensorflow-cpu from PyPI in ./build-bench/venv-tf (once), runs both at 1
# and 2 threads and prints, per workload and thread count,
#   <workload> threads=<n> typeflow=<us> tensorflow=<us> ratio=<tensorflow/typeflow>
# and typeflow's own 2-thread speed-up. Run it on a quiet machine.
#   bash scripts/bench_tf.sh                    # cnn_train_step, conv2d_fwd_bwd, cnn_fit_epoch, lstm_train_step,
#                                               # two_tower_train_step, while_grad_step, scan_grad_step
#   bash scripts/bench_tf.sh cnn_train_step     # one workload
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/deps.sh
BUILD_DIR="${BUILD_DIR:-build-bench}"
TF_VERSION="${TF_VERSION:-2.21.0}"
only="${1:-}"
generator=(); [ -f "$BUILD_DIR/CMakeCache.txt" ] || generator=(-G Ninja)
cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DTYPEFLOW_BUILD_TESTS=OFF \
  -DTYPEFLOW_BUILD_EXAMPLES=OFF > /dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target bench_cnn_train bench_lstm_train bench_two_tower_train \
  bench_while_grad
venv="$BUILD_DIR/venv-tf"
if ! "$venv/bin/python" -c "import tensorflow" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "tensorflow-cpu==$TF_VERSION"
fi
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
OMP_NUM_THREADS=1 "$BUILD_DIR/benchmarks/bench_cnn_train" $only | tee -a "$out"
OMP_NUM_THREADS=1 "$BUILD_DIR/benchmarks/bench_lstm_train" $only | tee -a "$out"
OMP_NUM_THREADS=1 "$BUILD_DIR/benchmarks/bench_two_tower_train" $only | tee -a "$out"
OMP_NUM_THREADS=1 "$BUILD_DIR/benchmarks/bench_while_grad" $only | tee -a "$out"
for n in 1 2; do
  case "$only" in lstm_train_step|two_tower_train_step|while_grad_step|scan_grad_step) ;; *) "$venv/bin/python" benchmarks/tensorflow/cnn_keras.py "$n" $only | tee -a "$out" ;; esac
  "$venv/bin/python" benchmarks/tensorflow/lstm_keras.py "$n" $only | tee -a "$out"
  "$venv/bin/python" benchmarks/tensorflow/two_tower_keras.py "$n" $only | tee -a "$out"
  "$venv/bin/python" benchmarks/tensorflow/while_grad_tf.py "$n" $only | tee -a "$out"
done
echo "--- $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), tensorflow-cpu $TF_VERSION"
python3 - "$out" <<'PY'
import re, sys
vals = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) threads=(\d+) (typeflow|tensorflow)=([0-9.]+)", line)
    if m:
        vals.setdefault((m[1], int(m[2])), {})[m[3]] = float(m[4])
for (w, n), v in sorted(vals.items()):
    if "typeflow" in v and "tensorflow" in v:
        print(f"{w} threads={n} typeflow={v['typeflow']:.1f} tensorflow={v['tensorflow']:.1f} "
              f"ratio={v['tensorflow'] / v['typeflow']:.3f}")
for (w, n), v in sorted(vals.items()):
    one = vals.get((w, 1), {}).get("typeflow")
    if n > 1 and one and "typeflow" in v:
        print(f"{w} threads={n} typeflow_speedup={one / v['typeflow']:.3f}")
PY
