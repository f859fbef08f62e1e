"""The peer of benchmarks/two_tower_train.cpp: the two-tower ticket ranker's
training step in Keras (see there). Prints
`two_tower_train_step threads=<n> tensorflow=<us>`, the median of rounds; the
thread count is TensorFlow's intra-op parallelism (inter-op 1), fixed per
process: run once per count (scripts/bench_tf.sh does).

    python two_tower_keras.py THREADS [WORKLOAD]
"""
import numpy as np

from bench_timing import median_us, tensorflow_for

threads, _, tf = tensorflow_for("two_tower_train_step")

BATCH, TITLE, BODY, VOCAB = 64, 10, 50, 10000
rng = np.random.default_rng(7)
title = np.zeros((BATCH, TITLE), np.int32)
body = np.zeros((BATCH, BODY), np.int32)
for i in range(BATCH):
    tl, bl = rng.integers(3, TITLE + 1), rng.integers(10, BODY + 1)
    title[i, :tl] = rng.integers(1, VOCAB, tl)
    body[i, :bl] = rng.integers(1, VOCAB, bl)
tags = rng.integers(0, 2, (BATCH, 12)).astype(np.float32)
priority = rng.integers(0, 2, (BATCH, 1)).astype(np.float32)
department = rng.integers(0, 4, (BATCH,)).astype(np.int32)

L = tf.keras.layers
ti, bi, gi = L.Input(shape=(None,), dtype="int32"), L.Input(shape=(None,), dtype="int32"), L.Input(shape=(12,))
t = L.LSTM(128)(L.Embedding(VOCAB, 64, mask_zero=True)(ti))
b = L.LSTM(32)(L.Embedding(VOCAB, 64, mask_zero=True)(bi))
x = L.concatenate([t, b, gi])
model = tf.keras.Model([ti, bi, gi], [L.Dense(1, name="priority")(x), L.Dense(4, name="department")(x)])
model.compile(optimizer=tf.keras.optimizers.Adam(),
              loss=[tf.keras.losses.BinaryCrossentropy(from_logits=True),
                    tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)],
              loss_weights=[1.0, 0.5],
              metrics=[[tf.keras.metrics.BinaryAccuracy(threshold=0.0)], ["accuracy"]])
step = lambda: model.train_on_batch([title, body, tags], [priority, department])  # noqa: E731
print(f"two_tower_train_step threads={threads} tensorflow={median_us(step):.1f}", flush=True)
