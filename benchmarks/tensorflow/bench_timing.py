"""Shared by the TensorFlow peers of the benchmarks (cnn_keras.py,
lstm_keras.py, two_tower_keras.py, while_grad_tf.py): their command line and
TensorFlow's threads, and the median time per call, over BENCH_ROUNDS rounds
of at least BENCH_MIN_SECONDS each."""
import os
import statistics
import sys
import time



def tensorflow_for(*workloads):
    """Reads `THREADS [WORKLOAD]` from the command line and exits when WORKLOAD
    is given and is none of `workloads`; returns (threads, workload or "",
    the tensorflow module), TensorFlow set to THREADS intra-op threads and one
    inter-op thread (fixed per process: run once per count)."""
    threads = int(sys.argv[1])
    only = sys.argv[2] if len(sys.argv) > 2 else ""
    if only and only not in workloads:
        sys.exit(0)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    return threads, only, tf


ROUNDS = int(os.environ.get("BENCH_ROUNDS", "9"))
MIN_SECONDS = float(os.environ.get("BENCH_MIN_SECONDS", "0.5"))


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
