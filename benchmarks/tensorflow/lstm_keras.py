"""The peer of benchmarks/lstm_train.cpp: an LSTM(128) layer's training step
in Keras (see there). Prints `lstm_train_step threads=<n> tensorflow=<us>`,
the median of rounds; the thread count is TensorFlow's intra-op parallelism
(inter-op 1), fixed per process: run once per count (scripts/bench_tf.sh does).

    python lstm_keras.py THREADS [WORKLOAD]
"""
import os
import sys

threads = int(sys.argv[1])
only = sys.argv[2] if len(sys.argv) > 2 else ""
if only and only != "lstm_train_step":
    sys.exit(0)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(threads)
tf.config.threading.set_inter_op_parallelism_threads(1)
import statistics  # noqa: E402
import time  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "9"))
MIN_SECONDS = float(os.environ.get("BENCH_MIN_SECONDS", "0.5"))


def model():
    m = tf.keras.Sequential([
        tf.keras.Input(shape=(28, 28, 1)),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    m.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              optimizer=tf.keras.optimizers.Adam(), metrics=["accuracy"])
    return m


def median_us(fn):
    """Median over ROUNDS of the time per call, each round >= MIN_SECONDS."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        s = time.perf_counter() - t0
        if s >= MIN_SECONDS / 4:
            n = max(1, int(n * MIN_SECONDS / s + 0.999))
            break
        n *= 2
    us = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        us.append((time.perf_counter() - t0) * 1e6 / n)
    print(f"  [tensorflow] {ROUNDS} rounds x {n}: median {statistics.median(us):.1f} us, "
          f"min {min(us):.1f}, max {max(us):.1f}", file=sys.stderr)
    return statistics.median(us)



rng = np.random.default_rng(7)
xb = rng.normal(size=(64, 50, 64)).astype(np.float32)
yb = rng.normal(size=(64, 1)).astype(np.float32)
m = tf.keras.Sequential([tf.keras.Input(shape=(50, 64)), tf.keras.layers.LSTM(128), tf.keras.layers.Dense(1)])
m.compile(loss="mse", optimizer=tf.keras.optimizers.Adam())
print(f"lstm_train_step threads={threads} tensorflow={median_us(lambda: m.train_on_batch(xb, yb)):.1f}", flush=True)
