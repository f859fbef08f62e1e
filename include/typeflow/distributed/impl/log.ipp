#pragma once
#include <typeflow/distributed/log.hpp>

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

namespace typeflow::dist {
namespace detail {
struct log_state {
    std::mutex mutex;
    log_sink sink;
};
TYPEFLOW_DIST_DECL log_state& log_globals() {
    static log_state s;
    return s;
}
} // namespace detail

TYPEFLOW_DIST_DECL void set_log_sink(log_sink sink) {
    auto& g = detail::log_globals();
    std::lock_guard lock(g.mutex);
    g.sink = std::move(sink);
}

TYPEFLOW_DIST_DECL void log(log_level level, std::string_view message) {
    auto& g = detail::log_globals();
    std::lock_guard lock(g.mutex);
    if (g.sink) {
        g.sink(level, message);
        return;
    }
    if (level < log_level::warning) return;
    std::string line = level == log_level::error ? "typeflow.dist error: " : "typeflow.dist warning: ";
    line.append(message);
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stderr);
}
} // namespace typeflow::dist
