// typeflow ring all_reduce benchmark (float32 sum), run under typeflow-launch.
// Prints per size: p50/p99 latency in microseconds, algbw and busbw (nccl-tests
// definitions: algbw = bytes / time, busbw = algbw * 2(n-1)/n). Every result is
// checked (inputs are small integers, so sums are exact).
//   bench_typeflow [min_bytes max_bytes iters segment_bytes]
#include <typeflow/dist.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace tfd = typeflow::dist;

int main(int argc, char** argv) {
    std::size_t lo = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4096;
    std::size_t hi = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : std::size_t{64} << 20;
    int iters_arg = argc > 3 ? std::atoi(argv[3]) : 0;
    auto spec = tfd::cluster_spec::from_env();
    tfd::ring_collective c(spec);
    if (argc > 4) c.set_segment_bytes(std::strtoull(argv[4], nullptr, 10));
    const int N = c.size(), r = c.rank();
    for (std::size_t bytes = lo; bytes <= hi; bytes *= 4) {
        const std::size_t n = bytes / 4;
        std::vector<float> buf(n);
        const int iters = iters_arg ? iters_arg : static_cast<int>(std::clamp<std::size_t>((std::size_t{256} << 20) / bytes, 5, 200));
        std::vector<double> us;
        for (int it = -3; it < iters; ++it) {
            for (std::size_t i = 0; i < n; ++i) buf[i] = static_cast<float>((r + 1) * ((i + it) % 7));
            c.barrier();
            auto t0 = std::chrono::steady_clock::now();
            c.all_reduce(buf.data(), buf.data(), n, tfd::dtype::float32, tfd::reduce_op::sum);
            auto t1 = std::chrono::steady_clock::now();
            for (std::size_t i = 0; i < n; i += 97)
                if (buf[i] != static_cast<float>(N * (N + 1) / 2 * ((i + it) % 7))) {
                    std::fprintf(stderr, "wrong result at %zu\n", i);
                    return 1;
                }
            if (it >= 0) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        std::sort(us.begin(), us.end());
        const double p50 = us[us.size() / 2], p99 = us[std::min(us.size() - 1, us.size() * 99 / 100)];
        const double algbw = static_cast<double>(bytes) / (p50 * 1e-6) / 1e9;
        if (r == 0)
            std::printf("allreduce_f32_sum bytes=%zu np=%d typeflow p50_us=%.1f p99_us=%.1f algbw_GBps=%.3f busbw_GBps=%.3f\n",
                        bytes, N, p50, p99, algbw, algbw * 2.0 * (N - 1) / N);
    }
    auto st = c.get_transport().stats();
    std::fprintf(stderr, "rank %d: %llu data frames sent, %llu received, %llu unexpected, %llu heartbeats\n", r,
                 (unsigned long long)st.data_frames_sent, (unsigned long long)st.data_frames_received,
                 (unsigned long long)st.unexpected_frames, (unsigned long long)st.heartbeats_sent);
    return 0;
}
