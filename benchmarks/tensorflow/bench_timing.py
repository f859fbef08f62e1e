"""Shared by the Keras peers of the benchmarks: the median time per call.

The thread count is set by each peer before it imports this module's user
code; this module only times."""
import os
import statistics
import sys
import time

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
