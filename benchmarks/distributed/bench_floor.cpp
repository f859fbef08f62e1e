// The machine's floor for small-message tail latency: N processes (as many
// as a collective's tasks) each time a busy loop of a fixed length (the
// window, about a small all_reduce's p50) many times, at the same time.
// Nothing is communicated, so every slow window is the machine's (timer and
// hypervisor interrupts, a vCPU descheduled by the host). A collective waits
// for all its tasks, so the floor of its p99 / p50 is that of the slowest of
// the N tasks' windows: sample i of the combined distribution is the largest
// of the tasks' i-th windows (the tasks are not in step, so this treats their
// stalls as independent, as they are for a collective's tasks).
//   bench_dist_floor [window_us=8] [tasks=2] [windows=20000] [bytes=0]
// Prints one line:
//   FLOOR tasks=N window_us=W p50_us=.. p99_us=.. p99_over_p50=.. slowed_pct=..
// slowed_pct: windows of one task that took 25% longer than the median.
// With bytes > 0 and tasks = 2, a second line is the floor of a 2-task
// exchange over loopback TCP with nothing on top: two processes send each
// other `bytes` (TCP_NODELAY, busy-polling non-blocking sockets, no framing,
// no reduction), timed like the all-reduce benchmarks (a 1-byte exchange as
// the barrier before and after each timed exchange, 3 warm-up then 2000
// timed ones):
//   FLOOR_TCP bytes=B p50_us=.. p99_us=.. p99_over_p50=..
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
using clk = std::chrono::steady_clock;

double spin(long k) {
    volatile double x = 0;
    for (long i = 0; i < k; ++i) x = x + 1.0;
    return x;
}

long calibrate(double window_us) {
    long k = 1000;
    for (;;) {
        std::vector<double> t;
        for (int r = 0; r < 50; ++r) {
            auto a = clk::now();
            spin(k);
            t.push_back(std::chrono::duration<double, std::micro>(clk::now() - a).count());
        }
        std::sort(t.begin(), t.end());
        if (t[25] >= window_us * 0.98 || k > (1L << 30)) return k;
        k = static_cast<long>(static_cast<double>(k) * window_us / std::max(t[25], 0.01)) + 1;
    }
}
/// Moves n bytes with io(fd, p, n, flags) (send or recv, non-blocking),
/// busy-polling until all are through.
template <class P, class Io> void all_of(Io io, int fd, P* p, std::size_t n, int flags) {
    while (n) {
        const ssize_t k = io(fd, p, n, flags | MSG_DONTWAIT);
        if (k > 0) {
            p += k;
            n -= static_cast<std::size_t>(k);
        } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
            std::perror("loopback exchange");
            std::exit(1);
        }
    }
}
void send_all(int fd, const char* p, std::size_t n) { all_of(::send, fd, p, n, MSG_NOSIGNAL); }
void recv_all(int fd, char* p, std::size_t n) { all_of(::recv, fd, p, n, 0); }

/// The 2-task exchange over loopback TCP (see the top of the file).
int tcp_floor(std::size_t bytes) {
    const int ls = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (ls < 0 || ::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(ls, 1) != 0 ||
        ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &al) != 0) {
        std::perror("listen");
        return 1;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        std::perror("fork");
        return 1;
    }
    int fd = -1;
    if (pid == 0) {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) _exit(1);
    } else {
        fd = ::accept(ls, nullptr, nullptr);
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<char> out(bytes, 1), in(bytes);
    char token = 0;
    const int iters = 2000;
    std::vector<double> us;
    for (int it = -3; it < iters; ++it) {
        send_all(fd, &token, 1);
        recv_all(fd, &token, 1);
        const auto t0 = clk::now();
        send_all(fd, out.data(), bytes);
        recv_all(fd, in.data(), bytes);
        const auto t1 = clk::now();
        send_all(fd, &token, 1);
        recv_all(fd, &token, 1);
        if (it >= 0) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    if (pid == 0) _exit(0);
    int st = 0;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
    std::sort(us.begin(), us.end());
    const double p50 = us[us.size() / 2], p99 = us[us.size() * 99 / 100];
    std::printf("FLOOR_TCP bytes=%zu p50_us=%.1f p99_us=%.1f p99_over_p50=%.2f\n", bytes, p50, p99, p99 / p50);
    return 0;
}
} // namespace

int main(int argc, char** argv) {
    const double window_us = argc > 1 ? std::atof(argv[1]) : 8.0;
    const int tasks = argc > 2 ? std::atoi(argv[2]) : 2;
    const int windows = argc > 3 ? std::atoi(argv[3]) : 20000;
    const std::size_t bytes = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0;
    if (window_us <= 0 || tasks < 1 || windows < 100) {
        std::fprintf(stderr, "usage: bench_dist_floor [window_us>0] [tasks>=1] [windows>=100]\n");
        return 2;
    }
    const long k = calibrate(window_us);
    // Shared results: tasks x windows microseconds.
    const std::size_t n = static_cast<std::size_t>(tasks) * static_cast<std::size_t>(windows);
    void* mem = mmap(nullptr, n * sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        std::perror("mmap");
        return 1;
    }
    auto* us = static_cast<double*>(mem);
    for (int t = 0; t < tasks; ++t) {
        const pid_t pid = fork();
        if (pid < 0) {
            std::perror("fork");
            return 1;
        }
        if (pid == 0) {
            double* mine = us + static_cast<std::size_t>(t) * static_cast<std::size_t>(windows);
            for (int i = 0; i < windows; ++i) {
                auto a = clk::now();
                spin(k);
                mine[i] = std::chrono::duration<double, std::micro>(clk::now() - a).count();
            }
            _exit(0);
        }
    }
    for (int t = 0; t < tasks; ++t) {
        int st = 0;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            std::fprintf(stderr, "bench_dist_floor: a task failed\n");
            return 1;
        }
    }
    std::vector<double> slowest(static_cast<std::size_t>(windows));
    double slowed = 0;
    for (int t = 0; t < tasks; ++t) {
        const double* mine = us + static_cast<std::size_t>(t) * static_cast<std::size_t>(windows);
        std::vector<double> s(mine, mine + windows);
        std::sort(s.begin(), s.end());
        const double med = s[s.size() / 2];
        slowed += static_cast<double>(std::count_if(mine, mine + windows, [&](double x) { return x > 1.25 * med; }));
        for (int i = 0; i < windows; ++i) slowest[static_cast<std::size_t>(i)] = std::max(slowest[static_cast<std::size_t>(i)], mine[i]);
    }
    std::sort(slowest.begin(), slowest.end());
    const double p50 = slowest[slowest.size() / 2], p99 = slowest[slowest.size() * 99 / 100];
    std::printf("FLOOR tasks=%d window_us=%.1f p50_us=%.1f p99_us=%.1f p99_over_p50=%.2f slowed_pct=%.2f\n", tasks, window_us,
                p50, p99, p99 / p50, 100.0 * slowed / (static_cast<double>(tasks) * windows));
    std::fflush(stdout);
    return bytes && tasks == 2 ? tcp_floor(bytes) : 0;
}
