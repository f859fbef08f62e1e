// Test program run under typeflow-launch: checks what the launcher hands down.
//   launch_probe hello            print task, rank, size; check the inherited socket
//   launch_probe fail TASK CODE   TASK exits with CODE, the others sleep
//   launch_probe fail-early TASK CODE   TASK exits with CODE at once, the others finish
//   launch_probe fail-first TASK CODE N   TASK exits with CODE in attempts 0..N-1 (TYPEFLOW_ATTEMPT)
//   launch_probe sleep            sleep until signalled; report SIGTERM
//   launch_probe cpus             print task, the CPUs it may run on and TYPEFLOW_NUM_THREADS
#include <typeflow/distributed/cluster_spec.hpp>

#include <arpa/inet.h>
#include <sched.h>
#include <csignal>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {
volatile std::sig_atomic_t got_term = 0;
void on_term(int) { got_term = 1; }
// Waits for SIGTERM. The signal is blocked except inside sigsuspend, so one
// that comes between the check and the wait is not lost (a bare pause()
// there slept until the launcher's SIGKILL).
void wait_for_term() {
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, &old);
    std::signal(SIGTERM, on_term);
    sigdelset(&old, SIGTERM);
    while (!got_term) sigsuspend(&old);
}
} // namespace

int main(int argc, char** argv) {
    auto spec = typeflow::dist::cluster_spec::from_env();
    std::string mode = argc > 1 ? argv[1] : "hello";
    if (mode == "hello") {
        int fd = std::atoi(std::getenv("TYPEFLOW_LISTEN_FD"));
        sockaddr_in a{};
        socklen_t len = sizeof a;
        int listening = 0;
        socklen_t ll = sizeof listening;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
            ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) != 0 || !listening) {
            std::printf("no listening socket\n");
            return 3;
        }
        auto [host, port] = typeflow::dist::split_address(spec.address_of(spec.rank()), "own");
        if (ntohs(a.sin_port) != port || host != "127.0.0.1") {
            std::printf("socket port %d does not match spec %s\n", ntohs(a.sin_port), spec.address_of(spec.rank()).c_str());
            return 4;
        }
        const char* secret = std::getenv("TYPEFLOW_SECRET");
        const char* threads = std::getenv("TYPEFLOW_NUM_THREADS");
        std::printf("task=%s rank=%d size=%d secret_len=%zu threads=%s\n", spec.task.name().c_str(), spec.rank(), spec.size(),
                    secret ? std::strlen(secret) : 0, threads ? threads : "unset");
        std::fprintf(stderr, "partial line without newline");
        return 0;
    }
    if (mode == "fail") {
        if (spec.task.name() == argv[2]) {
            usleep(100000);
            std::printf("failing now\n");
            return std::atoi(argv[3]);
        }
        wait_for_term();
        std::printf("got SIGTERM\n");
        return 0;
    }
    if (mode == "fail-early") { // TASK exits with CODE at once, the others finish 0.5 s later
        if (spec.task.name() == argv[2]) return std::atoi(argv[3]);
        usleep(500000);
        std::printf("finished\n");
        return 0;
    }
    if (mode == "fail-first") { // TASK exits with CODE in attempts 0..N-1, then every task finishes
        const char* a = std::getenv("TYPEFLOW_ATTEMPT");
        std::printf("attempt %s\n", a ? a : "?");
        if (spec.task.name() == argv[2] && a && std::atoi(a) < std::atoi(argv[4])) return std::atoi(argv[3]);
        std::printf("finished\n");
        return 0;
    }
    if (mode == "cpus") {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (::sched_getaffinity(0, sizeof set, &set) != 0) return 5;
        std::string list;
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) list += (list.empty() ? "" : ",") + std::to_string(c);
        const char* threads = std::getenv("TYPEFLOW_NUM_THREADS");
        std::printf("task=%s cpus=%s threads=%s\n", spec.task.name().c_str(), list.c_str(), threads ? threads : "unset");
        return 0;
    }
    if (mode == "sleep") {
        // blocked before "ready", so a SIGTERM right after it waits for sigsuspend
        sigset_t term;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        sigprocmask(SIG_BLOCK, &term, nullptr);
        std::printf("ready\n");
        std::fflush(stdout);
        wait_for_term();
        std::printf("got SIGTERM\n");
        return 0;
    }
    return 2;
}
