#!/usr/bin/env python3
"""Writes tests/data/keras_rnn.txt: Keras' SimpleRNN, LSTM and GRU (Keras 3 in
tensorflow-cpu 2.21.0) applied with set weights to one input, for
tests/test_recurrent.cpp. Run it with the benchmark's virtual environment:

    build-bench/venv-tf/bin/python scripts/keras_rnn_fixture.py

Each record is one line: `<name> <count> <values...>` (row-major, float32
printed with 9 significant digits). Weights and inputs come from a seeded
NumPy generator, so a rerun writes the same file."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf

batch, time, features, units = 2, 5, 4, 3
rng = np.random.default_rng(20261127)
x = rng.normal(size=(batch, time, features)).astype(np.float32)
out = [f"# Keras {tf.keras.__version__} (TensorFlow {tf.__version__}): batch {batch}, time {time}, "
       f"features {features}, units {units}; regenerate with scripts/keras_rnn_fixture.py"]


def put(name, a):
    a = np.asarray(a, dtype=np.float32).ravel()
    out.append(name + " " + str(a.size) + " " + " ".join(f"{v:.9g}" for v in a))


# a batch whose first sequence is padded after 3 steps (masked), for the masked outputs
mask = np.array([[True, True, True, False, False], [True, True, True, True, True]])
put("x", x)
put("mask", mask)
for name, cls, gates in (("simple_rnn", tf.keras.layers.SimpleRNN, 1), ("lstm", tf.keras.layers.LSTM, 4),
                         ("gru", tf.keras.layers.GRU, 3)):
    layer = cls(units, return_sequences=True)
    layer.build((batch, time, features))
    weights = [rng.normal(scale=0.5, size=w.shape).astype(np.float32) for w in layer.get_weights()]
    layer.set_weights(weights)
    y = layer(x).numpy()
    for wname, w in zip(("kernel", "recurrent_kernel", "bias"), weights):
        put(f"{name}/{wname}", w)
    put(f"{name}/output", y)
    put(f"{name}/masked_output", layer(x, mask=mask).numpy())
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "keras_rnn.txt")
with open(path, "w") as f:
    f.write("\n".join(out) + "\n")
print("wrote", os.path.normpath(path), file=sys.stderr)
