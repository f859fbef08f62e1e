// tests/distributed/separate/main.cpp — the distributed layer built with
// TYPEFLOW_SEPARATE_COMPILATION: its code is compiled once, in src.cpp, and
// this file sees only the headers (no Asio, OpenSSL or RapidJSON). Run under
// typeflow-launch -n 2: all_reduce on the latency path and on the ring,
// all_gather, broadcast, a bool reduction, a barrier, and errors thrown by
// the out-of-line code. Exits non-zero on any failure.
#include <typeflow/dist.hpp>

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#error "tests/distributed/separate is built with TYPEFLOW_SEPARATE_COMPILATION"
#elif defined(BOOST_ASIO_VERSION) || defined(OPENSSL_VERSION_NUMBER) || defined(RAPIDJSON_VERSION_STRING)
#error "with TYPEFLOW_SEPARATE_COMPILATION the distributed headers must leave their implementation out"
#endif

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <vector>

namespace tfd = typeflow::dist;

int main() {
    int failures = 0;
    auto check = [&](bool ok, const char* what) {
        if (!ok) {
            std::printf("FAIL: %s\n", what);
            ++failures;
        }
    };
    try {
        tfd::ring_collective c(tfd::cluster_spec::from_env());
        const int N = c.size(), r = c.rank();

        // Small integers, so every sum is exact: 16 floats take the latency
        // path, 1M + 3 the ring.
        for (std::size_t n : {std::size_t{16}, (std::size_t{1} << 20) + 3}) {
            std::vector<float> v(n);
            for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 1000) + static_cast<float>(r);
            c.all_reduce(std::span<float>(v), tfd::reduce_op::sum);
            bool ok = true;
            for (std::size_t i = 0; i < n; ++i)
                ok = ok && v[i] == static_cast<float>(N * static_cast<int>(i % 1000) + N * (N - 1) / 2);
            check(ok, n == 16 ? "all_reduce(sum) of 16 floats" : "all_reduce(sum) of 1M floats");
        }

        const std::int64_t mine = 100 + r;
        std::vector<std::int64_t> all(static_cast<std::size_t>(N));
        c.all_gather(&mine, all.data(), 1, tfd::dtype::int64);
        for (int k = 0; k < N; ++k) check(all[static_cast<std::size_t>(k)] == 100 + k, "all_gather of int64");

        std::vector<double> b(5, static_cast<double>(r));
        c.broadcast(std::span<double>(b), N - 1);
        for (double x : b) check(x == N - 1, "broadcast from the last task");

        bool any[2] = {r == 0, false};
        c.all_reduce(any, any, 2, tfd::dtype::boolean, tfd::reduce_op::max);
        check(any[0] && !any[1], "all_reduce(max) of bool");

        c.barrier();

        try {
            c.broadcast(b.data(), b.size(), tfd::dtype::float64, N);
            check(false, "a broadcast from a root out of range did not throw");
        } catch (const tfd::error& e) {
            check(std::strstr(e.what(), "out of range") != nullptr, "a broadcast root out of range: wrong message");
        }
        try {
            (void)tfd::cluster_spec::parse("{\"cluster\": ", "test spec");
            check(false, "a truncated cluster spec did not throw");
        } catch (const tfd::error& e) {
            check(std::strstr(e.what(), "test spec") != nullptr, "a truncated cluster spec: the message names no source");
        }
        check(c.get_transport().stats().data_frames_sent > 0, "no data frames counted");
    } catch (const std::exception& e) {
        std::printf("FAIL: %s\n", e.what());
        return 1;
    }
    if (failures == 0) std::puts("distributed separate compilation: OK");
    return failures == 0 ? 0 : 1;
}
