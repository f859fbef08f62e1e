"""The peer of benchmarks/lstm_train.cpp: an LSTM(128) layer's training step
in Keras (see there). Prints `lstm_train_step threads=<n> tensorflow=<us>`,
the median of rounds; the thread count is TensorFlow's intra-op parallelism
(inter-op 1), fixed per process: run once per count (scripts/bench_tf.sh does).

    python lstm_keras.py THREADS [WORKLOAD]
"""
import numpy as np

from bench_timing import median_us, tensorflow_for

threads, _, tf = tensorflow_for("lstm_train_step")

rng = np.random.default_rng(7)
xb = rng.normal(size=(64, 50, 64)).astype(np.float32)
yb = rng.normal(size=(64, 1)).astype(np.float32)
m = tf.keras.Sequential([tf.keras.Input(shape=(50, 64)), tf.keras.layers.LSTM(128), tf.keras.layers.Dense(1)])
m.compile(loss="mse", optimizer=tf.keras.optimizers.Adam())
print(f"lstm_train_step threads={threads} tensorflow={median_us(lambda: m.train_on_batch(xb, yb)):.1f}", flush=True)
