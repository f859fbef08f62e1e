#pragma once
// Helpers for the distributed runtime's tests: free loopback ports, in-process
// clusters, a capturing log sink.
#include <typeflow/distributed/cluster_spec.hpp>
#include <typeflow/distributed/log.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace tfd_test {

/// `n` distinct free loopback ports. Every socket stays bound until all are
/// chosen, so the kernel cannot hand the same ephemeral port out twice.
inline std::vector<int> free_ports(int n) {
    std::vector<int> fds, ports;
    for (int i = 0; i < n; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = 0;
        socklen_t len = sizeof a;
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
            if (fd >= 0) ::close(fd);
            for (int f : fds) ::close(f);
            throw std::runtime_error("test support: cannot bind a loopback port");
        }
        fds.push_back(fd);
        ports.push_back(ntohs(a.sin_port));
    }
    for (int fd : fds) ::close(fd);
    return ports;
}

/// Specs for an n-worker cluster on fresh loopback ports, one per rank.
inline std::vector<typeflow::dist::cluster_spec> local_specs(int n, const std::string& options = "") {
    std::string workers;
    const auto ports = free_ports(n);
    for (int i = 0; i < n; ++i) workers += (i ? ", " : "") + std::string("\"127.0.0.1:") + std::to_string(ports[i]) + "\"";
    std::vector<typeflow::dist::cluster_spec> out;
    for (int i = 0; i < n; ++i)
        out.push_back(typeflow::dist::cluster_spec::parse(
            "{\"cluster\": {\"worker\": [" + workers + "]}, \"task\": {\"type\": \"worker\", \"index\": " +
            std::to_string(i) + "}, \"secret\": \"test-secret\"" + (options.empty() ? "" : ", \"options\": " + options) + "}"));
    return out;
}

/// Collects log lines while alive.
struct log_capture {
    std::mutex mu;
    std::vector<std::string> lines;
    log_capture() {
        typeflow::dist::set_log_sink([this](typeflow::dist::log_level, std::string_view m) {
            std::lock_guard lk(mu);
            lines.emplace_back(m);
        });
    }
    ~log_capture() { typeflow::dist::set_log_sink({}); }
    bool contains(const std::string& s) {
        std::lock_guard lk(mu);
        for (auto& l : lines)
            if (l.find(s) != std::string::npos) return true;
        return false;
    }
    std::string all() {
        std::lock_guard lk(mu);
        std::string s;
        for (auto& l : lines) s += l + "\n";
        return s;
    }
};

} // namespace tfd_test
