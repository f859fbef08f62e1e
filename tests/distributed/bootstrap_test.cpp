// Bootstrap test, run under typeflow-launch -n 16: every task rendezvouses
// through the chief and connects to every other; checks the full mesh by
// exchanging a token with every peer, and that the whole cluster was connected
// within 1 s of the first task starting.
#include <typeflow/dist.hpp>

#include <chrono>
#include <cstdio>
#include <vector>

namespace tfd = typeflow::dist;

namespace {
std::int64_t now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
} // namespace

int main() {
    const std::int64_t started = now_us();
    try {
        auto spec = tfd::cluster_spec::from_env();
        tfd::transport t(spec);
        const std::int64_t connected = now_us();
        const int N = t.size(), r = t.rank();
        // Full mesh: a token to and from every peer.
        std::vector<std::int32_t> got(static_cast<std::size_t>(N), -1);
        std::vector<tfd::request> reqs;
        std::int32_t mine = 1000 + r;
        auto h = [&](std::uint64_t count) {
            tfd::frame_header f;
            f.type = tfd::frame_type::data;
            f.op = tfd::op_code::send;
            f.dtype_code = tfd::wire_code(tfd::dtype::int32);
            f.epoch = t.epoch();
            f.seq = 1;
            f.count = count;
            f.length = 4;
            return f;
        };
        for (int p = 0; p < N; ++p)
            if (p != r) {
                reqs.push_back(t.recv(p, h(1), &got[static_cast<std::size_t>(p)]));
                reqs.push_back(t.send(p, h(1), &mine));
            }
        const auto dl = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        for (auto& q : reqs) t.wait(q, dl);
        for (int p = 0; p < N; ++p)
            if (p != r && got[static_cast<std::size_t>(p)] != 1000 + p) {
                std::printf("FAIL: wrong token from rank %d\n", p);
                return 1;
            }
        tfd::ring_collective c(t);
        std::int64_t times[2] = {started, connected};
        std::vector<std::int64_t> all(2 * static_cast<std::size_t>(N));
        c.all_gather(times, all.data(), 2, tfd::dtype::int64);
        std::int64_t first = all[0], last = all[1];
        for (int p = 0; p < N; ++p) {
            first = std::min(first, all[2 * static_cast<std::size_t>(p)]);
            last = std::max(last, all[2 * static_cast<std::size_t>(p) + 1]);
        }
        const double ms = (last - first) / 1000.0;
        if (r == 0)
            std::printf("%s: %d tasks rendezvoused and fully connected in %.1f ms after the first started "
                        "(this task's bootstrap %.1f ms)\n",
                        ms < 1000 ? "PASSED" : "FAILED", N, ms,
                        std::chrono::duration<double, std::milli>(t.bootstrap_time()).count());
        return ms < 1000 ? 0 : 1;
    } catch (const std::exception& e) {
        std::printf("FAILED: %s\n", e.what());
        return 1;
    }
}
