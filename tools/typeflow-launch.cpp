// typeflow-launch: starts a local typeflow cluster.
//
//   typeflow-launch -n N [--ps K] [--chief] [--keep-going] [--restart R] [--bind-cores] [--timeout SEC] [--grace-ms MS] [--] prog args...
//
// Starts N worker tasks (the first is "chief:0" with --chief) and K ps tasks,
// each with TYPEFLOW_CONFIG set to a cluster spec on loopback ports. Each
// task's listening socket is created here and inherited (TYPEFLOW_LISTEN_FD),
// so no port can be taken between choosing it and using it. TYPEFLOW_SECRET is
// a fresh random secret unless already set. Output lines are prefixed with the
// task ("[worker:1] "). SIGINT/SIGTERM are forwarded to every task. When one
// task fails, the others get `--grace-ms` (default 2000) to finish on their
// own, then SIGTERM, then SIGKILL 2 s later; the exit status is that of the
// first task that failed (128+signal if killed), 124 on --timeout. With
// --keep-going a worker task that fails (not the chief, nor worker:0 when
// there is no chief job, nor a ps) is reported and the others go on, as
// asynchronous or backup-worker training does without it; the exit status is
// then that of the other tasks. With --restart R, a job that fails (once
// every task has ended) is started again, all tasks on fresh ports, at most
// R times; each task sees TYPEFLOW_ATTEMPT (0 first), and resumes from its
// checkpoints. Not after --timeout or a signal to the launcher. Unless
// TYPEFLOW_NUM_THREADS is set, each task gets TYPEFLOW_NUM_THREADS = the
// launcher's cores (its CPU affinity) / the tasks, at least 1: the threads
// its sessions run kernels on, so the tasks do not oversubscribe the machine
// (as torchrun sets OMP_NUM_THREADS). With --bind-cores each task runs on
// cores of its own: the launcher's CPUs (its affinity, in order) are cut into
// one run of `share` CPUs per task, task k (workers, then ps tasks) on run k,
// as mpirun's --bind-to core with --map-by slot:PE=share; more tasks than
// those CPUs is a usage error.

#include <arpa/inet.h>
#include <csignal>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

int signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
    const int saved = errno;
    unsigned char b = static_cast<unsigned char>(sig);
    (void)!::write(signal_pipe[1], &b, 1);
    errno = saved;
}

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "typeflow-launch: %s\n"
                 "usage: typeflow-launch -n N [--ps K] [--chief] [--keep-going] [--restart R] [--bind-cores] [--timeout SEC] [--grace-ms MS] [--] prog args...\n",
                 why);
    std::exit(2);
}

int parse_int(const char* s, const char* what, int lo, int hi) {
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(s, &end, 10);
    if (errno || !end || *end || v < lo || v > hi) {
        std::string m = std::string("bad value for ") + what + ": \"" + s + "\"";
        usage(m.c_str());
    }
    return static_cast<int>(v);
}

struct stream {
    int fd = -1;
    std::string partial;
    FILE* out = stdout;
};

struct child {
    std::string name;
    pid_t pid = -1;
    int listen_fd = -1;
    int port = 0;
    stream out, err;
    bool running = false;
    int status = 0;
};

void emit(const std::string& prefix, FILE* out, const char* data, std::size_t n) {
    std::string line = prefix;
    line.append(data, n);
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), out);
    std::fflush(out);
}

/// Reads what is available; returns false at EOF.
bool pump(const std::string& prefix, stream& s) {
    char buf[65536];
    ssize_t n = ::read(s.fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) {
        if (!s.partial.empty()) emit(prefix, s.out, s.partial.data(), s.partial.size());
        s.partial.clear();
        ::close(s.fd);
        s.fd = -1;
        return false;
    }
    s.partial.append(buf, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (;;) {
        auto nl = s.partial.find('\n', start);
        if (nl == std::string::npos) break;
        emit(prefix, s.out, s.partial.data() + start, nl - start);
        start = nl + 1;
    }
    s.partial.erase(0, start);
    if (s.partial.size() > (1 << 20)) { // a huge line without newline: flush it
        emit(prefix, s.out, s.partial.data(), s.partial.size());
        s.partial.clear();
    }
    return true;
}

std::string random_secret() {
    unsigned char b[24];
    FILE* f = std::fopen("/dev/urandom", "rb");
    if (!f || std::fread(b, 1, sizeof b, f) != sizeof b) {
        std::fprintf(stderr, "typeflow-launch: cannot read /dev/urandom\n");
        std::exit(2);
    }
    std::fclose(f);
    std::string s;
    char hex[3];
    for (auto c : b) {
        std::snprintf(hex, sizeof hex, "%02x", c);
        s += hex;
    }
    return s;
}

int listen_loopback(int& port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, SOMAXCONN) != 0) return -1;
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    return fd;
}

std::string describe_status(int status) {
    if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                                    strsignal(WTERMSIG(status)) + ")";
    return "ended with status " + std::to_string(status);
}

int exit_code_of(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

} // namespace

int main(int argc, char** argv) {
    int n = -1, nps = 0, timeout_s = 0, grace_ms = 2000, restarts = 0;
    bool with_chief = false, keep_going = false, bind_cores = false;
    int i = 1;
    for (; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](const char* what) {
            if (i + 1 >= argc) usage((std::string(what) + " needs a value").c_str());
            return argv[++i];
        };
        if (a == "-n") n = parse_int(value("-n"), "-n", 1, 1024);
        else if (a == "--ps") nps = parse_int(value("--ps"), "--ps", 0, 1024);
        else if (a == "--timeout") timeout_s = parse_int(value("--timeout"), "--timeout", 1, 1 << 20);
        else if (a == "--grace-ms") grace_ms = parse_int(value("--grace-ms"), "--grace-ms", 0, 1 << 24);
        else if (a == "--chief") with_chief = true;
        else if (a == "--keep-going") keep_going = true;
        else if (a == "--bind-cores") bind_cores = true;
        else if (a == "--restart") restarts = parse_int(value("--restart"), "--restart", 0, 1000);
        else if (a == "--") { ++i; break; }
        else if (a == "-h" || a == "--help") usage("help");
        else if (!a.empty() && a[0] == '-') usage(("unknown option " + a).c_str());
        else break;
    }
    if (n < 1) usage("-n N is required");
    if (i >= argc) usage("no program given");
    char** prog = argv + i;
    const char* env_secret = std::getenv("TYPEFLOW_SECRET");
    const std::string secret = env_secret && *env_secret ? env_secret : random_secret();
    // The tasks share this machine's cores: each task's sessions default to
    // its share (at least 1), unless TYPEFLOW_NUM_THREADS is already set.
    // With --bind-cores, task k runs on the k-th run of `share` CPUs among
    // those the launcher may use.
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    std::vector<int> cores;  // the launcher's CPUs, in order
    if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &allowed)) cores.push_back(c);
    if (bind_cores && static_cast<int>(cores.size()) < n + nps) {
        const std::string m = "--bind-cores: " + std::to_string(n + nps) + " tasks but the launcher may run on only " +
                              std::to_string(cores.size()) + " cores (its CPU affinity)";
        usage(m.c_str());
    }
    long cpus = static_cast<long>(cores.size());
    if (cpus < 1) cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    const long share = std::max<long>(1, cpus / (n + nps));
    std::string task_threads;
    if (!std::getenv("TYPEFLOW_NUM_THREADS")) task_threads = std::to_string(share);
    if (::pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return 2;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaction(s, &sa, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    bool interrupted = false; // a signal to the launcher: no restart
    const auto start = clock_type::now(); // --timeout counts from here, over every restart
    // one run of the whole job; returns its exit status
    auto run_job = [&](int attempt) -> int {
        std::vector<child> kids(static_cast<std::size_t>(n + nps));
        for (int k = 0; k < n + nps; ++k) {
            auto& c = kids[static_cast<std::size_t>(k)];
            c.name = k < n ? (with_chief && k == 0 ? "chief:0" : "worker:" + std::to_string(with_chief ? k - 1 : k))
                           : "ps:" + std::to_string(k - n);
            c.listen_fd = listen_loopback(c.port);
            if (c.listen_fd < 0) {
                std::perror("typeflow-launch: listen");
                return 2;
            }
        }
        auto addr = [&](int k) { return "\"127.0.0.1:" + std::to_string(kids[static_cast<std::size_t>(k)].port) + "\""; };
        std::string cluster = "{";
        int first_worker = 0;
        if (with_chief) {
            cluster += "\"chief\": [" + addr(0) + "]";
            first_worker = 1;
        }
        if (n > first_worker) {
            cluster += std::string(with_chief ? ", " : "") + "\"worker\": [";
            for (int k = first_worker; k < n; ++k) cluster += (k > first_worker ? ", " : "") + addr(k);
            cluster += "]";
        }
        if (nps) {
            cluster += ", \"ps\": [";
            for (int k = 0; k < nps; ++k) cluster += (k ? ", " : "") + addr(n + k);
            cluster += "]";
        }
        cluster += "}";

        for (int k = 0; k < n + nps; ++k) {
            auto& c = kids[static_cast<std::size_t>(k)];
            auto colon = c.name.find(':');
            std::string spec = "{\"cluster\": " + cluster + ", \"task\": {\"type\": \"" + c.name.substr(0, colon) +
                               "\", \"index\": " + c.name.substr(colon + 1) + "}}";
            int po[2], pe[2];
            if (::pipe2(po, O_CLOEXEC) != 0 || ::pipe2(pe, O_CLOEXEC) != 0) return 2;
            pid_t pid = ::fork();
            if (pid < 0) {
                std::perror("typeflow-launch: fork");
                return 2;
            }
            if (pid == 0) {
                ::setpgid(0, 0); // signals reach tasks only through the launcher
                if (bind_cores) {
                    cpu_set_t mine;
                    CPU_ZERO(&mine);
                    const auto first = static_cast<std::size_t>(k * share);
                    for (std::size_t j = first; j < first + static_cast<std::size_t>(share); ++j) CPU_SET(cores[j], &mine);
                    if (::sched_setaffinity(0, sizeof mine, &mine) != 0) {
                        std::fprintf(stderr, "typeflow-launch: cannot bind %s to CPUs from %d: %s\n", c.name.c_str(),
                                     cores[first], std::strerror(errno));
                        ::_exit(126);
                    }
                }
                struct sigaction dfl {};
                dfl.sa_handler = SIG_DFL;
                for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) sigaction(s, &dfl, nullptr);
                ::dup2(po[1], 1);
                ::dup2(pe[1], 2);
                int fl = ::fcntl(c.listen_fd, F_GETFD);
                ::fcntl(c.listen_fd, F_SETFD, fl & ~FD_CLOEXEC);
                ::setenv("TYPEFLOW_CONFIG", spec.c_str(), 1);
                ::setenv("TYPEFLOW_SECRET", secret.c_str(), 1);
                ::setenv("TYPEFLOW_LISTEN_FD", std::to_string(c.listen_fd).c_str(), 1);
                ::setenv("TYPEFLOW_ATTEMPT", std::to_string(attempt).c_str(), 1);
                if (!task_threads.empty()) ::setenv("TYPEFLOW_NUM_THREADS", task_threads.c_str(), 1);
                ::unsetenv("TYPEFLOW_CONFIG_FILE");
                ::execvp(prog[0], prog);
                std::fprintf(stderr, "typeflow-launch: cannot run %s: %s\n", prog[0], std::strerror(errno));
                ::_exit(127);
            }
            ::setpgid(pid, pid);
            ::close(po[1]);
            ::close(pe[1]);
            c.pid = pid;
            c.running = true;
            c.out.fd = po[0];
            c.err.fd = pe[0];
            c.err.out = stderr;
            ::close(c.listen_fd);
        }

        std::optional<clock_type::time_point> term_at, kill_at;
        std::optional<int> exit_code;
        auto signal_all = [&](int sig) {
            for (auto& c : kids)
                if (c.running) {
                    ::kill(c.pid, sig);
                    if (sig != SIGKILL) ::kill(c.pid, SIGCONT); // a stopped task must see it
                }
    };
    auto schedule_stop = [&](std::chrono::milliseconds grace) {
        auto t = clock_type::now() + grace;
        if (!term_at || t < *term_at) term_at = t;
    };

    for (;;) {
        bool any_running = false, any_open = false;
        for (auto& c : kids) {
            any_running |= c.running;
            any_open |= c.out.fd >= 0 || c.err.fd >= 0;
        }
        if (!any_running && !any_open) break;

        std::vector<pollfd> fds;
        fds.push_back({signal_pipe[0], POLLIN, 0});
        for (auto& c : kids) {
            if (c.out.fd >= 0) fds.push_back({c.out.fd, POLLIN, 0});
            if (c.err.fd >= 0) fds.push_back({c.err.fd, POLLIN, 0});
        }
        int wait_ms = 200;
        auto now = clock_type::now();
        for (auto t : {term_at, kill_at})
            if (t) wait_ms = std::min<int>(wait_ms, static_cast<int>(std::max<long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(*t - now).count())));
        ::poll(fds.data(), fds.size(), wait_ms);

        if (fds[0].revents & POLLIN) {
            unsigned char sigs[64];
            ssize_t k = ::read(signal_pipe[0], sigs, sizeof sigs);
            for (ssize_t j = 0; j < k; ++j) {
                int sig = sigs[j];
                if (sig == SIGCHLD) continue;
                std::fprintf(stderr, "typeflow-launch: got signal %d (%s); forwarding to all tasks\n", sig, strsignal(sig));
                signal_all(sig);
                interrupted = true;
                if (!exit_code) exit_code = 128 + sig;
                auto t = clock_type::now() + std::chrono::seconds(5);
                if (!kill_at || t < *kill_at) kill_at = t;
            }
        }
        for (auto& c : kids) {
            const std::string prefix = "[" + c.name + "] ";
            for (auto* s : {&c.out, &c.err}) {
                if (s->fd < 0) continue;
                for (auto& p : fds)
                    if (p.fd == s->fd && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
                        pump(prefix, *s);
                        break;
                    }
            }
        }
        for (;;) {
            int status = 0;
            pid_t pid = ::waitpid(-1, &status, WNOHANG);
            if (pid <= 0) break;
            for (auto& c : kids)
                if (c.pid == pid && c.running) {
                    c.running = false;
                    c.status = status;
                    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
                    if (!ok && keep_going && c.name.rfind("worker:", 0) == 0 && (with_chief || c.name != "worker:0")) {
                        std::fprintf(stderr, "typeflow-launch: %s %s; the other tasks go on (--keep-going)\n", c.name.c_str(),
                                     describe_status(status).c_str());
                    } else if (!ok) {
                        std::fprintf(stderr, "typeflow-launch: %s %s\n", c.name.c_str(), describe_status(status).c_str());
                        if (!exit_code) {
                            exit_code = exit_code_of(status);
                            schedule_stop(std::chrono::milliseconds(grace_ms));
                        }
                    }
                }
        }
        now = clock_type::now();
        if (timeout_s && now - start > std::chrono::seconds(timeout_s) && !kill_at) {
            std::fprintf(stderr, "typeflow-launch: timeout after %d s; killing all tasks\n", timeout_s);
            signal_all(SIGKILL);
            exit_code = 124;
            kill_at = now;
        }
        if (term_at && now >= *term_at) {
            bool any = false;
            for (auto& c : kids) any |= c.running;
            if (any) std::fprintf(stderr, "typeflow-launch: stopping the remaining tasks\n");
            signal_all(SIGTERM);
            term_at.reset();
            auto t = now + std::chrono::seconds(2);
            if (!kill_at || t < *kill_at) kill_at = t;
        }
        if (kill_at && now >= *kill_at) {
            signal_all(SIGKILL);
            kill_at = now + std::chrono::seconds(1);
        }
    }
    return exit_code.value_or(0);
    };
    for (int attempt = 0;; ++attempt) {
        const int rc = run_job(attempt);
        if (rc == 0 || interrupted || rc == 124 || attempt >= restarts) return rc;
        std::fprintf(stderr, "typeflow-launch: restarting the job (restart %d of %d)\n", attempt + 1, restarts);
    }
}
