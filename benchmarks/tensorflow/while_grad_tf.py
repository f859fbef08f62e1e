"""The peer of benchmarks/while_grad.cpp: the gradient of a tf.while_loop in
TensorFlow (see there): h <- tanh(h W + b) for 20 iterations (at most 20),
h0 [32, 64], in a tf.function under a GradientTape, giving y = sum(h^2) and
its gradients with respect to W, b and h0. Prints
`while_grad_step threads=<n> tensorflow=<us>`, the median of rounds; the
thread count is TensorFlow's intra-op parallelism (inter-op 1), fixed per
process: run once per count (scripts/bench_tf.sh does).

    python while_grad_tf.py THREADS [WORKLOAD]
"""
import numpy as np

from bench_timing import median_us, tensorflow_for

threads, _, tf = tensorflow_for("while_grad_step")

rng = np.random.default_rng(7)
W = tf.Variable(rng.normal(0.0, 0.1, size=(64, 64)).astype(np.float32))
b = tf.Variable(rng.normal(0.0, 0.1, size=(64,)).astype(np.float32))
h0 = tf.Variable(rng.normal(0.0, 1.0, size=(32, 64)).astype(np.float32))


@tf.function
def step():
    with tf.GradientTape() as tape:
        _, h = tf.while_loop(lambda i, h: i < 20, lambda i, h: (i + 1, tf.tanh(tf.matmul(h, W) + b)),
                             (tf.constant(0), h0), maximum_iterations=20)
        y = tf.reduce_sum(tf.square(h))
    return (y,) + tuple(tape.gradient(y, [W, b, h0]))


print(f"while_grad_step threads={threads} tensorflow={median_us(lambda: [t.numpy() for t in step()]):.1f}", flush=True)
