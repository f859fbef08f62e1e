"""The peer of benchmarks/while_grad.cpp: the gradients of a tf.while_loop
and of a tf.scan in TensorFlow (see there), h0 [32, 64], W [64, 64], b [64],
float, 20 steps, in a tf.function under a GradientTape:
  while_grad_step: h <- tanh(h W + b) for 20 iterations (at most 20),
    y = sum(h^2);
  scan_grad_step: h <- tanh(h W + b + x_t) over xs [20, 32, 64] (tf.scan),
    y = sum of every step's h^2;
each giving y and its gradients with respect to W, b and h0. Prints
`<workload> threads=<n> tensorflow=<us>`, the median of rounds; the thread
count is TensorFlow's intra-op parallelism (inter-op 1), fixed per process:
run once per count (scripts/bench_tf.sh does).

    python while_grad_tf.py THREADS [WORKLOAD]
"""
import numpy as np

from bench_timing import median_us, tensorflow_for

threads, only, tf = tensorflow_for("while_grad_step", "scan_grad_step")

rng = np.random.default_rng(7)
W = tf.Variable(rng.normal(0.0, 0.1, size=(64, 64)).astype(np.float32))
b = tf.Variable(rng.normal(0.0, 0.1, size=(64,)).astype(np.float32))
h0 = tf.Variable(rng.normal(0.0, 1.0, size=(32, 64)).astype(np.float32))
xs = tf.constant(rng.normal(0.0, 0.5, size=(20, 32, 64)).astype(np.float32))


@tf.function
def while_step():
    with tf.GradientTape() as tape:
        _, h = tf.while_loop(lambda i, h: i < 20, lambda i, h: (i + 1, tf.tanh(tf.matmul(h, W) + b)),
                             (tf.constant(0), h0), maximum_iterations=20)
        y = tf.reduce_sum(tf.square(h))
    return (y,) + tuple(tape.gradient(y, [W, b, h0]))


@tf.function
def scan_step():
    with tf.GradientTape() as tape:
        hs = tf.scan(lambda h, x: tf.tanh(tf.matmul(h, W) + b + x), xs, initializer=h0)
        y = tf.reduce_sum(tf.square(hs))
    return (y,) + tuple(tape.gradient(y, [W, b, h0]))


for name, fn in (("while_grad_step", while_step), ("scan_grad_step", scan_step)):
    if not only or only == name:
        print(f"{name} threads={threads} tensorflow={median_us(lambda: [t.numpy() for t in fn()]):.1f}", flush=True)
