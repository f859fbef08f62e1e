"""The peer of benchmarks/cnn_train.cpp: the TensorFlow lecture's CNN in Keras.

Prints `<workload> threads=<n> tensorflow=<us>` for the workloads of
cnn_train.cpp (see there), each timed as the median of rounds. The thread
count is TensorFlow's intra-op parallelism (inter-op 1), which is fixed per
process: run once per count (scripts/bench_tf.sh does).

    python cnn_keras.py THREADS [WORKLOAD]
"""
import gzip
import os
import statistics
import struct
import sys
import time

import numpy as np

from bench_timing import median_us, tensorflow_for

threads, only, tf = tensorflow_for("cnn_train_step", "conv2d_fwd_bwd", "cnn_fit_epoch")


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


def idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def fashion_mnist():
    d = "/usr/share/datasets/fashion-mnist"
    for suffix in ("", ".gz"):
        img, lab = f"{d}/train-images-idx3-ubyte{suffix}", f"{d}/train-labels-idx1-ubyte{suffix}"
        if os.path.exists(img) and os.path.exists(lab):
            return (idx(img).reshape(-1, 28, 28, 1).astype(np.float32) / 255.0,
                    idx(lab).astype(np.int32))
    print("cnn_fit_epoch: Fashion-MNIST not found; using random images", file=sys.stderr)
    rng = np.random.default_rng(7)
    return rng.random((60000, 28, 28, 1), dtype=np.float32), rng.integers(0, 10, 60000).astype(np.int32)


rng = np.random.default_rng(7)
xb = rng.random((64, 28, 28, 1), dtype=np.float32)
yb = rng.integers(0, 10, 64).astype(np.int32)

if not only or only == "cnn_train_step":
    m = model()
    print(f"cnn_train_step threads={threads} tensorflow={median_us(lambda: m.train_on_batch(xb, yb)):.1f}", flush=True)

if not only or only == "conv2d_fwd_bwd":
    k = tf.Variable(tf.keras.initializers.GlorotUniform(seed=1)((3, 3, 1, 32)))
    x = tf.constant(xb)

    @tf.function
    def fwd_bwd(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.conv2d(x, k, strides=1, padding="VALID")
            loss = tf.reduce_sum(y)
        dx, dk = tape.gradient(loss, [x, k])
        return y, dx, dk

    def run():
        y, dx, dk = fwd_bwd(x)
        dk.numpy()  # wait for the result, as typeflow's run returns values

    print(f"conv2d_fwd_bwd threads={threads} tensorflow={median_us(run):.1f}", flush=True)

if not only or only == "cnn_fit_epoch":
    images, labels = fashion_mnist()
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).cache().shuffle(60000, seed=1).batch(64)
    m = model()
    m.fit(ds, epochs=1, verbose=0)  # warm-up: tracing, the cache
    us = []
    for _ in range(int(os.environ.get("BENCH_EPOCHS", "3"))):
        t0 = time.perf_counter()
        m.fit(ds, epochs=1, verbose=0)
        us.append((time.perf_counter() - t0) * 1e6)
    print(f"  [tensorflow] cnn_fit_epoch threads={threads}: min {min(us):.0f} us, max {max(us):.0f} us", file=sys.stderr)
    print(f"cnn_fit_epoch threads={threads} tensorflow={statistics.median(us):.1f}", flush=True)
