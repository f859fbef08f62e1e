#pragma once
// typeflow::dist::error — the exception type of the distributed runtime.

#include <string>

#include <typeflow/core/error.hpp>

namespace typeflow::dist {

/// Thrown for every run-time failure of the distributed runtime: a malformed
/// cluster spec, a refused or dead peer, a timeout, a mismatched collective.
/// The message names the peer, field or file concerned.
/// A `typeflow::error`, so one catch clause serves the whole library.
class error : public typeflow::error {
public:
    using typeflow::error::error;
};

/// Thrown by a send or receive whose peer this task has dropped (see
/// `transport::tolerate_loss` and `transport::drop`), while the transport
/// itself stays healthy: `peer()` is that peer's rank.
class peer_lost : public error {
public:
    peer_lost(int peer, const std::string& what) : error(what), peer_(peer) {}
    int peer() const noexcept { return peer_; }

private:
    int peer_;
};

} // namespace typeflow::dist
