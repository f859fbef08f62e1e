#pragma once
// Shared timing loop of the all-reduce benchmarks: float32 sum, sizes from
// lo to hi bytes (x4), 3 warm-up then timed iterations (by default
// 256 MiB / size, clamped to 10..2000, so p99 of a small size is the 20th
// largest of 2000 samples, not the 2nd of 200), each result checked (after a
// second barrier, outside the timed region); prints
// one line per size with p50/p90/p99/max latency and nccl-tests bandwidths.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace bench {

/// run(buf, n) all-reduces n floats in place; barrier() synchronises tasks.
template <class Run, class Barrier>
int allreduce_sweep(const char* impl, int rank, int size, std::size_t lo, std::size_t hi, int iters_arg, Run run,
                    Barrier barrier) {
    for (std::size_t bytes = lo; bytes <= hi; bytes *= 4) {
        const std::size_t n = bytes / 4;
        std::vector<float> buf(n);
        const int iters = iters_arg ? iters_arg : static_cast<int>(std::clamp<std::size_t>((std::size_t{256} << 20) / bytes, 10, 2000));
        std::vector<double> us;
        for (int it = -3; it < iters; ++it) {
            const int k = it & 7;
            for (std::size_t i = 0; i < n; ++i) buf[i] = static_cast<float>((rank + 1) * ((i + static_cast<std::size_t>(k)) & 7));
            barrier();
            auto t0 = std::chrono::steady_clock::now();
            run(buf.data(), n);
            auto t1 = std::chrono::steady_clock::now();
            // Untimed: no task checks its result and fills the next input
            // while another is still in the timed call (on a machine with
            // fewer cores than tasks that work would compete with the call;
            // the TCP ring has no such work).
            barrier();
            const float tri = static_cast<float>(size * (size + 1) / 2);
            for (std::size_t i = 0; i < n; i += 61)
                if (buf[i] != tri * static_cast<float>((i + static_cast<std::size_t>(k)) & 7)) {
                    std::fprintf(stderr, "%s: wrong result at %zu: %g\n", impl, i, static_cast<double>(buf[i]));
                    return 1;
                }
            if (it >= 0) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        std::sort(us.begin(), us.end());
        const double p50 = us[us.size() / 2], p99 = us[std::min(us.size() - 1, us.size() * 99 / 100)];
        const double p90 = us[std::min(us.size() - 1, us.size() * 90 / 100)], mx = us.back();
        const double algbw = static_cast<double>(bytes) / (p50 * 1e-6) / 1e9;
        if (rank == 0) {
            std::printf("RESULT impl=%s np=%d bytes=%zu p50_us=%.1f p99_us=%.1f algbw_GBps=%.3f busbw_GBps=%.3f iters=%d p90_us=%.1f max_us=%.1f\n",
                        impl, size, bytes, p50, p99, algbw, algbw * 2.0 * (size - 1) / size, iters, p90, mx);
            std::fflush(stdout);
        }
    }
    return 0;
}

} // namespace bench
