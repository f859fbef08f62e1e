// Parameter-server pull+push throughput (distributed/parameter_server.hpp)
// against the transport's own point-to-point bandwidth, in one run, on
// 1 ps x 2 workers: a model of one float variable of <MiB> MiB (default 64),
// loss sum(w) * mean(x), SGD. Phases, each timed on every task:
//   p2p:     the ps sends <MiB> to both workers at once, then both send <MiB>
//            back (the transport's point-to-point frames, the same segments,
//            no protocol): the peer;
//   ps step: training.run on both workers (pull the model, compute the
//            gradient, push it; the ps averages and applies SGD);
//   compute: the worker's loss and gradient alone; the ps's update time is
//            counted by the ps.
// pull+push = step - compute - update. Medians over rounds, the slowest task's.
// The goal: pull+push throughput >= 0.8x the point-to-point figure.
//   build/typeflow-launch -n 2 --ps 1 build/bench_dist_ps [MiB] [rounds]
// Prints (worker:0):
//   ps_pull_push tasks=2+1 model_mib=M typeflow=<us> p2p=<us> ratio=<p2p / typeflow>
//       step=<us> compute=<us> update=<us> goal=<met|not met>
#include <typeflow/dist.hpp>
#include <typeflow/typeflow.hpp>
#include <typeflow/distributed/parameter_server.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

namespace tf = typeflow;
namespace tfd = typeflow::dist;

namespace {
double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
    const int mib = argc > 1 ? std::atoi(argv[1]) : 64;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
    constexpr tf::index_t cols = 1024;
    try {
        tfd::transport t(tfd::cluster_spec::from_env());
        tfd::ring_collective comm(t);
        const bool is_ps = t.spec().task.type == tfd::role::ps;
        if (mib != 64) throw tfd::error("this build's model is 64 MiB (rows are a compile-time extent)");
        tf::placeholder<"x", float, tf::shape<tf::dyn, 1>> x;
        tf::variable<"w", float, tf::shape<64 * 256, cols>> w;
        auto loss = tf::sum(w) * tf::mean(x);
        auto opt = tf::train::sgd(1e-6f);
        auto training = tfd::parameter_servers<tfd::ps_placement<1>>(t, opt).minimize(loss, w);
        auto local = opt.compute_gradients(loss, w);
        const std::size_t n = static_cast<std::size_t>(64 * 256 * cols);
        std::vector<float> buf(n, 1.0f), buf2(n, 0.0f);
        tfd::detail::ps_channels ch(t, 1);
        tf::tensor<float> xb({8, 1});
        for (tf::index_t i = 0; i < 8; ++i) xb[i] = 1.0f;
        tf::session s(tf::session_options{.threads = 1});
        using clock = std::chrono::steady_clock;
        auto us = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
        std::vector<double> t_p2p, t_step, t_compute;
        std::vector<tfd::request> rs;
        for (int r = -1; r < rounds; ++r) {  // round -1 warms up
            comm.barrier();
            auto a = clock::now();
            if (is_ps) {
                for (int wk : ch.workers) ch.send(rs, wk, tfd::op_code::send, buf.data(), n);
                ch.wait_all(rs);
                for (int wk : ch.workers) ch.recv(rs, wk, tfd::op_code::send, wk == ch.workers[0] ? buf.data() : buf2.data(), n);
                ch.wait_all(rs);
            } else {
                ch.recv(rs, ch.ps[0], tfd::op_code::send, buf.data(), n);
                ch.wait_all(rs);
                ch.send(rs, ch.ps[0], tfd::op_code::send, buf.data(), n);
                ch.wait_all(rs);
            }
            auto b = clock::now();
            comm.barrier();
            auto c = clock::now();
            if (is_ps) training.serve(s);
            else {
                training.run(s, tf::feed(x, xb));
                training.finish();
            }
            auto d = clock::now();
            comm.barrier();
            auto e = clock::now();
            if (!is_ps) s.run(tf::fetch(loss, local.get<0>().grad), tf::feed(x, xb));
            auto f = clock::now();
            if (r < 0) continue;
            t_p2p.push_back(us(a, b));
            t_step.push_back(us(c, d));
            t_compute.push_back(us(e, f));
        }
        const auto st = training.stats();
        double m[4] = {median(t_p2p), median(t_step), median(t_compute),
                       is_ps && st.rounds ? 1e6 * st.update_seconds / static_cast<double>(rounds + 1) : 0.0};
        comm.all_reduce(std::span<double>(m), tfd::reduce_op::max);
        if (t.rank() == 0) {
            const double pp = m[1] - m[2] - m[3];
            std::printf("ps_pull_push tasks=2+1 model_mib=%d typeflow=%.1f p2p=%.1f ratio=%.3f step=%.1f compute=%.1f "
                        "update=%.1f goal=%s\n",
                        mib, pp, m[0], m[0] / pp, m[1], m[2], m[3], m[0] / pp >= 0.8 ? "met" : "not met");
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_dist_ps: %s\n", e.what());
        return 1;
    }
    return 0;
}
