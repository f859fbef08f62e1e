// Ceiling for the ring: plain blocking loopback TCP, each task streams the
// bytes a ring all_reduce moves (2(n-1)/n * size) to its successor while
// reading as much from its predecessor; no framing, no reduction.
// Runs under typeflow-launch (uses TYPEFLOW_CONFIG and TYPEFLOW_LISTEN_FD).
//   bench_tcp_ring [min_bytes max_bytes iters]
#include <typeflow/distributed/cluster_spec.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {
void write_all(int fd, const char* p, std::size_t n) {
    while (n) {
        ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) { std::perror("send"); std::exit(1); }
        p += k; n -= static_cast<std::size_t>(k);
    }
}
void read_all(int fd, char* p, std::size_t n) {
    while (n) {
        ssize_t k = ::recv(fd, p, n, 0);
        if (k <= 0) { std::perror("recv"); std::exit(1); }
        p += k; n -= static_cast<std::size_t>(k);
    }
}
} // namespace

int main(int argc, char** argv) {
    std::size_t lo = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4096;
    std::size_t hi = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : std::size_t{64} << 20;
    int iters_arg = argc > 3 ? std::atoi(argv[3]) : 0;
    auto spec = typeflow::dist::cluster_spec::from_env();
    const int N = spec.size(), r = spec.rank();
    const int lfd = std::atoi(std::getenv("TYPEFLOW_LISTEN_FD"));
    auto [host, port] = typeflow::dist::split_address(spec.address_of((r + 1) % N), "next");
    int out = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    while (::connect(out, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(out);
        out = ::socket(AF_INET, SOCK_STREAM, 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    int in = ::accept(lfd, nullptr, nullptr);
    int one = 1;
    ::setsockopt(out, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(in, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char token = 0;
    for (std::size_t bytes = lo; bytes <= hi; bytes *= 4) {
        const std::size_t moved = bytes * 2 * static_cast<std::size_t>(N - 1) / static_cast<std::size_t>(N);
        std::vector<char> sbuf(moved, 1), rbuf(moved);
        const int iters = iters_arg ? iters_arg : static_cast<int>(std::clamp<std::size_t>((std::size_t{256} << 20) / bytes, 10, 2000));
        std::vector<double> us;
        for (int it = -3; it < iters; ++it) {
            // ring barrier: a token goes around twice
            for (int k = 0; k < 2; ++k) {
                if (r == 0) { write_all(out, &token, 1); read_all(in, &token, 1); }
                else { read_all(in, &token, 1); write_all(out, &token, 1); }
            }
            auto t0 = std::chrono::steady_clock::now();
            std::thread s([&] { write_all(out, sbuf.data(), moved); });
            read_all(in, rbuf.data(), moved);
            s.join();
            auto t1 = std::chrono::steady_clock::now();
            if (it >= 0) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        std::sort(us.begin(), us.end());
        const double p50 = us[us.size() / 2], p99 = us[std::min(us.size() - 1, us.size() * 99 / 100)];
        const double p90 = us[std::min(us.size() - 1, us.size() * 90 / 100)], mx = us.back();
        const double algbw = static_cast<double>(bytes) / (p50 * 1e-6) / 1e9;
        if (r == 0)
            std::printf("RESULT impl=tcpring np=%d bytes=%zu p50_us=%.1f p99_us=%.1f algbw_GBps=%.3f busbw_GBps=%.3f iters=%d p90_us=%.1f max_us=%.1f\n",
                        N, bytes, p50, p99, algbw, algbw * 2.0 * (N - 1) / N, iters, p90, mx);
        std::fflush(stdout);
    }
    return 0;
}
