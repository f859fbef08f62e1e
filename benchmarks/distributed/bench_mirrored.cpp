// The data-parallel MLP step of the mirrored strategy (distributed/mirrored.hpp)
// against its parts, in one run: the step on N tasks (global batch B, B/N
// rows each) with its buckets summed on the step's thread during the
// backward pass (typeflow=), the same step with every bucket summed after it
// on the caller's thread (serial=), the step's compute alone (the same code
// through a one-task collective that moves nothing), and one all_reduce of
// the gradients' floats. Rounds interleave the four; medians of all rounds,
// the slowest task's.
// The overlap goal: step <= compute + 50% of the all-reduce.
// Run with the launcher:
//   build/typeflow-launch -n 2 build/bench_dist_mirrored [global batch] [rounds] [bucket bytes]
// Prints (rank 0):
//   mirrored_mlp_step tasks=N batch=B params=P buckets=K typeflow=<us> compute=<us> allreduce=<us>
//       compute_plus_allreduce=<us> ratio=<(compute + allreduce) / step> overlap_goal=<met|not met>
//       serial=<us> serial_ratio=<(compute + allreduce) / serial>
#include <typeflow/dist.hpp>
#include <typeflow/typeflow.hpp>
#include <typeflow/distributed/mirrored.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

namespace tf = typeflow;
namespace tfd = typeflow::dist;

namespace {
// A collective of one task: every operation leaves its buffer as it is.
class solo_collective final : public tfd::collective {
public:
    int rank() const noexcept override { return 0; }
    int size() const noexcept override { return 1; }
    void all_reduce(const void* in, void* out, std::size_t count, tf::dtype t, tfd::reduce_op) override {
        if (in != out) std::copy_n(static_cast<const std::byte*>(in), count * tf::dtype_size(t), static_cast<std::byte*>(out));
    }
    void broadcast(void*, std::size_t, tf::dtype, int) override {}
    void all_gather(const void* in, void* out, std::size_t count, tf::dtype t) override {
        all_reduce(in, out, count, t, tfd::reduce_op::sum);
    }
    void reduce_scatter(const void* in, void* out, std::size_t count, tf::dtype t, tfd::reduce_op op) override {
        all_reduce(in, out, count, t, op);
    }
    void barrier() override {}
    void set_timeout(std::chrono::milliseconds) override {}
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
    const int batch = argc > 1 ? std::atoi(argv[1]) : 256;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
    tfd::mirrored_options options;
    if (argc > 3) options.bucket_bytes = static_cast<std::size_t>(std::atoll(argv[3]));
    try {
        tfd::ring_collective comm(tfd::cluster_spec::from_env());
        solo_collective solo;
        const int rank = comm.rank(), tasks = comm.size();
        const tf::index_t rows = (batch - rank + tasks - 1) / tasks;
        // the MLP 784 -> 256 -> 10 of bench_mlp_train, mean squared error, SGD
        tf::placeholder<"x", float, tf::shape<tf::dyn, 784>> x;
        tf::placeholder<"y", float, tf::shape<tf::dyn, 10>> y;
        tf::variable<"w1", float, tf::shape<784, 256>> w1{tf::init::glorot_uniform{}};
        tf::variable<"b1", float, tf::shape<256>> b1;
        tf::variable<"w2", float, tf::shape<256, 10>> w2{tf::init::glorot_uniform{}};
        tf::variable<"b2", float, tf::shape<10>> b2;
        auto loss = tf::mean(tf::square(tf::matmul(tf::relu(tf::matmul(x, w1) + b1), w2) + b2 - y));
        tf::tensor<float> xb({rows, 784}), yb({rows, 10});
        for (tf::index_t i = 0; i < xb.size(); ++i) xb[i] = static_cast<float>(std::sin(0.001 * static_cast<double>(i + rank)));
        for (tf::index_t i = 0; i < yb.size(); ++i) yb[i] = static_cast<float>(i % 10 == 3);
        auto opt = tf::train::sgd(0.01f);
        auto step = tfd::mirrored(comm, opt, options).minimize(loss);
        tfd::mirrored_options serial_options = options;
        serial_options.overlap = false;
        auto serial = tfd::mirrored(comm, opt, serial_options).minimize(loss);
        auto local = tfd::mirrored(solo, opt, serial_options).minimize(loss);
        step.broadcast_variables();
        const std::size_t params = 784 * 256 + 256 + 256 * 10 + 10;
        std::vector<float> grads(params);
        tf::session s(tf::session_options{.threads = 1});
        using clock = std::chrono::steady_clock;
        auto us = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
        std::vector<double> t_step, t_serial, t_compute, t_reduce;
        const int per = 10;
        for (int r = -1; r < rounds; ++r) {  // round -1 warms up (plans, buffers)
            comm.barrier();
            auto t0 = clock::now();
            for (int k = 0; k < per; ++k) step.run(s, tf::feed(x, xb), tf::feed(y, yb));
            auto t1 = clock::now();
            for (int k = 0; k < per; ++k) local.run(s, tf::feed(x, xb), tf::feed(y, yb));
            auto t2 = clock::now();
            comm.barrier();
            auto t5 = clock::now();
            for (int k = 0; k < per; ++k) serial.run(s, tf::feed(x, xb), tf::feed(y, yb));
            auto t6 = clock::now();
            comm.barrier();
            auto t3 = clock::now();
            for (int k = 0; k < per; ++k) comm.all_reduce(std::span<float>(grads));
            auto t4 = clock::now();
            if (r < 0) continue;
            t_step.push_back(us(t0, t1) / per);
            t_compute.push_back(us(t1, t2) / per);
            t_serial.push_back(us(t5, t6) / per);
            t_reduce.push_back(us(t3, t4) / per);
        }
        // the slowest task sets the pace: the maximum over tasks of each median
        double m[4] = {median(t_step), median(t_compute), median(t_reduce), median(t_serial)};
        comm.all_reduce(std::span<double>(m), tfd::reduce_op::max);
        if (rank == 0) {
            const double sum = m[1] + m[2];
            std::printf("mirrored_mlp_step tasks=%d batch=%d params=%zu buckets=%zu typeflow=%.1f compute=%.1f allreduce=%.1f "
                        "compute_plus_allreduce=%.1f ratio=%.3f overlap_goal=%s serial=%.1f serial_ratio=%.3f\n",
                        tasks, batch, params, step.buckets(), m[0], m[1], m[2], sum, sum / m[0],
                        m[0] <= m[1] + 0.5 * m[2] ? "met" : "not met", m[3], sum / m[3]);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_dist_mirrored: %s\n", e.what());
        return 1;
    }
    return 0;
}
