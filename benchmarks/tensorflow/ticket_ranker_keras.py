"""Keras' figures for examples/ticket_ranker.cpp: the same two-tower model
(Embedding(10000, 64, mask_zero) -> LSTM(128) for the title, -> LSTM(32) for the body,
concatenated with 12 tags, Dense(1) priority and Dense(4) department; binary
and sparse categorical cross entropy from logits weighted 1 and 0.5; Adam
0.01; batch 32; 4 epochs) on tickets drawn by the same rule (from NumPy's
generator, so the same distribution, not the same samples). Prints the
held-out accuracies and the time per epoch.

    build-bench/venv-tf/bin/python benchmarks/tensorflow/ticket_ranker_keras.py [THREADS]
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
tf.config.threading.set_intra_op_parallelism_threads(threads)
tf.config.threading.set_inter_op_parallelism_threads(1)
TITLE, BODY, VOCAB, BATCH = 8, 20, 10000, 32
rng = np.random.default_rng(2026)


def tickets(n):
    title = np.zeros((n, TITLE), np.int32)
    body = np.zeros((n, BODY), np.int32)
    tags = np.zeros((n, 12), np.float32)
    pri = np.zeros((n, 1), np.float32)
    dep = np.zeros((n,), np.int32)
    for i in range(n):
        tl, bl, d, urgent = rng.integers(3, TITLE + 1), rng.integers(5, BODY + 1), rng.integers(0, 4), rng.integers(0, 2)
        title[i, :tl] = rng.integers(100, VOCAB, tl)
        if urgent:
            title[i, rng.integers(0, tl)] = rng.integers(1, 11)
        body[i, :bl] = rng.integers(100, VOCAB, bl)
        for _ in range(rng.integers(1, 3)):
            body[i, rng.integers(0, bl)] = 20 + 20 * d + rng.integers(0, 20)
        for t in range(12):
            tags[i, t] = 1.0 if (rng.integers(0, 2) == 1 if t == d else rng.integers(0, 10) == 0) else 0.0
        pri[i, 0], dep[i] = float(urgent), d
    return (title, body, tags), (pri, dep)


(xt, yt), (xv, yv) = tickets(100 * BATCH), tickets(20 * BATCH)
L = tf.keras.layers
title, body, tags = L.Input(shape=(None,), dtype="int32"), L.Input(shape=(None,), dtype="int32"), L.Input(shape=(12,))
t = L.LSTM(128)(L.Embedding(VOCAB, 64, mask_zero=True)(title))
b = L.LSTM(32)(L.Embedding(VOCAB, 64, mask_zero=True)(body))
x = L.concatenate([t, b, tags])
model = tf.keras.Model([title, body, tags], [L.Dense(1, name="priority")(x), L.Dense(4, name="department")(x)])
model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
              loss=[tf.keras.losses.BinaryCrossentropy(from_logits=True),
                    tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)],
              loss_weights=[1.0, 0.5],
              metrics=[[tf.keras.metrics.BinaryAccuracy(threshold=0.0)], ["accuracy"]])
t0 = time.perf_counter()
model.fit(list(xt), list(yt), batch_size=BATCH, epochs=4, verbose=0, shuffle=False)
per_epoch = (time.perf_counter() - t0) / 4
r = model.evaluate(list(xv), list(yv), batch_size=BATCH, verbose=0, return_dict=True)
acc = {k: v for k, v in r.items() if "acc" in k}
print(f"keras ticket_ranker threads={threads}: held-out {acc}, {per_epoch * 1e3:.0f} ms per epoch "
      f"(tensorflow-cpu {tf.__version__})")
