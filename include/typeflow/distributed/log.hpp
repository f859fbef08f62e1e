#pragma once
// Logging hook of the distributed runtime: refused connections, dead peers.

#include <typeflow/distributed/config.hpp>

#include <functional>
#include <string_view>

namespace typeflow::dist {

enum class log_level { debug, info, warning, error };

/// Receives every log line of the distributed runtime. May be called from the
/// transport's I/O thread; must be thread-safe.
using log_sink = std::function<void(log_level, std::string_view)>;

/// Replaces the sink (default: one line per message on stderr, warnings and
/// errors only). An empty function restores the default.
void set_log_sink(log_sink sink);

/// Sends one message to the current sink.
void log(log_level level, std::string_view message);

} // namespace typeflow::dist

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/distributed/impl/log.ipp>
#endif
