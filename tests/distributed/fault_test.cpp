// Fault injection, run under typeflow-launch. One task (the victim) dies or
// stops; every other task must fail with an error naming it, within a bound.
//
//   fault_test kill VICTIM DELAY_MS FROM FILE   VICTIM SIGKILLs itself DELAY_MS after FROM
//                                               (start: process start, loop: first collective);
//                                               odd DELAY_MS: frames written by the sender thread
//   fault_test stop VICTIM HB_MS FILE           VICTIM SIGSTOPs itself during the 20th all_reduce;
//                                               heartbeat timeout HB_MS (3 tasks: sender thread)
//   fault_test mismatch KIND                    task 1 calls a different collective (KIND=op)
//                                               or size (KIND=size)
//
// The victim writes "<steady_clock ns> <pid>" to FILE just before it dies or
// stops. Survivors print "DETECTED-OK ..." when the error names the victim
// within the bound, "DETECTED-BAD ..." otherwise, and "HANG ..." (then exit)
// if nothing is detected within twice the bound (watchdog).
#include <typeflow/dist.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace tfd = typeflow::dist;
using clock_type = std::chrono::steady_clock;

namespace {

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch()).count();
}

void mark(const std::string& file) {
    const std::string tmp = file + ".tmp";
    {
        std::ofstream f(tmp);
        f << now_ns() << " " << ::getpid() << "\n";
    }
    std::rename(tmp.c_str(), file.c_str()); // atomic: readers never see half a line
}

bool read_mark(const std::string& file, std::int64_t& t, long& pid) {
    std::ifstream f(file);
    return static_cast<bool>(f >> t >> pid);
}

std::atomic<bool> detected{false};

/// Survivors' watchdog: once the victim has marked, detection must come within `limit_ms`.
void start_watchdog(const std::string& file, int rank, double limit_ms) {
    std::thread([=] {
        for (;;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            if (detected.load()) return;
            std::int64_t t;
            long pid;
            if (read_mark(file, t, pid) && (now_ns() - t) / 1e6 > limit_ms) {
                std::printf("HANG rank=%d: nothing detected %.0f ms after the fault\n", rank, (now_ns() - t) / 1e6);
                std::fflush(stdout);
                if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
                std::_Exit(3);
            }
        }
    }).detach();
}

int report(const std::string& file, int rank, const std::string& victim, const std::string& what, double bound_ms,
           double min_ms = 0) {
    detected.store(true);
    const std::int64_t t_detect = now_ns();
    std::int64_t t_fault = 0;
    long pid = 0;
    if (!read_mark(file, t_fault, pid)) {
        std::printf("DETECTED-BAD rank=%d: failed before the fault: %s\n", rank, what.c_str());
        return 1;
    }
    const double ms = (t_detect - t_fault) / 1e6;
    const bool names = what.find(victim) != std::string::npos;
    const bool ok = names && ms <= bound_ms && ms >= min_ms;
    std::printf("%s rank=%d latency_ms=%.1f bound_ms=%.0f names_victim=%d error: %s\n", ok ? "DETECTED-OK" : "DETECTED-BAD",
                rank, ms, bound_ms, names ? 1 : 0, what.c_str());
    return ok ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const std::string mode = argc > 1 ? argv[1] : "";
    auto spec = tfd::cluster_spec::from_env();
    const int rank = spec.rank();
    std::vector<float> buf(64 * 1024, 1.0f);

    if (mode == "kill") {
        const int victim = std::atoi(argv[2]);
        const int delay_ms = std::atoi(argv[3]);
        const bool from_start = std::string(argv[4]) == "start";
        const std::string file = argv[5];
        const std::string victim_name = spec.task_of(victim).name();
        spec.options.connect_timeout = std::chrono::milliseconds(2000);
        // Odd delays: every ring frame goes through the sender thread.
        if (delay_ms % 2) spec.options.send_thread_bytes = 16 * 1024;
        auto killer = [&] {
            std::thread([=] {
                std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
                mark(file);
                ::raise(SIGKILL);
            }).detach();
        };
        // A kill during bootstrap is only bounded by the connect timeout.
        const double bound = from_start ? 3000 : 1000;
        if (rank == victim && from_start) killer();
        if (rank != victim) start_watchdog(file, rank, 2 * bound);
        try {
            tfd::ring_collective c(spec);
            double phase_bound = 1000; // from here on, a collective is (about to be) in flight
            if (rank == victim && !from_start) killer();
            for (int i = 0;; ++i) {
                c.all_reduce(std::span<float>(buf));
                if (i > 100000) return 4;
            }
            (void)phase_bound;
        } catch (const std::exception& e) {
            if (rank == victim) return 5; // the victim must die, not fail
            std::int64_t t;
            long pid;
            // Failing in bootstrap is bounded by the connect timeout; in a collective by 1 s.
            const bool in_bootstrap = std::string(e.what()).find("bootstrap") != std::string::npos;
            (void)read_mark(file, t, pid);
            return report(file, rank, victim_name, e.what(), in_bootstrap ? bound : 1000);
        }
    }

    if (mode == "stop") {
        const int victim = std::atoi(argv[2]);
        const int hb_ms = std::atoi(argv[3]);
        const std::string file = argv[4];
        const std::string victim_name = spec.task_of(victim).name();
        spec.options.heartbeat_timeout = std::chrono::milliseconds(hb_ms);
        // With 3 tasks every ring frame goes through the sender thread.
        if (spec.size() == 3) spec.options.send_thread_bytes = 16 * 1024;
        if (rank != victim) start_watchdog(file, rank, 2.0 * hb_ms);
        try {
            tfd::ring_collective c(spec);
            for (int i = 0;; ++i) {
                if (rank == victim && i == 20) {
                    std::thread([&] {
                        std::this_thread::sleep_for(std::chrono::milliseconds(1));
                        mark(file);
                        ::raise(SIGSTOP);
                    }).detach();
                }
                c.all_reduce(std::span<float>(buf));
                if (i > 100000) return 4;
            }
        } catch (const std::exception& e) {
            if (rank == victim) return 5;
            int rc = report(file, rank, victim_name, e.what(), 1.1 * hb_ms, 0.5 * hb_ms);
            if (rank == (victim + 1) % spec.size()) { // one survivor ends the stopped task
                std::int64_t t;
                long pid;
                if (read_mark(file, t, pid)) ::kill(static_cast<pid_t>(pid), SIGKILL);
            }
            return rc;
        }
    }

    if (mode == "mismatch") {
        const std::string kind = argv[2];
        const auto t0 = clock_type::now();
        try {
            tfd::ring_collective c(spec);
            for (int i = 0; i < 3; ++i) c.all_reduce(std::span<float>(buf)); // in step
            if (rank == 1 && kind == "op") c.broadcast(buf.data(), buf.size(), tfd::dtype::float32, 0);
            else if (rank == 1 && kind == "size") c.all_reduce(buf.data(), buf.data(), buf.size() - 1, tfd::dtype::float32, tfd::reduce_op::sum);
            else if (rank == 1 && kind == "dtype") c.all_reduce(buf.data(), buf.data(), buf.size(), tfd::dtype::int32, tfd::reduce_op::sum);
            else c.all_reduce(std::span<float>(buf));
            std::printf("DETECTED-BAD rank=%d: the mismatched collective succeeded\n", rank);
            return 1;
        } catch (const std::exception& e) {
            const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
            const bool ok = std::string(e.what()).find("mismatched collective") != std::string::npos && ms < 2000;
            std::printf("%s rank=%d ms=%.1f error: %s\n", ok ? "DETECTED-OK" : "DETECTED-BAD", rank, ms, e.what());
            return ok ? 0 : 1;
        }
    }
    std::fprintf(stderr, "unknown mode\n");
    return 2;
}
