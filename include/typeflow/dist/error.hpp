#pragma once
// typeflow::dist::error — the exception type of the distributed runtime.

#include <stdexcept>
#include <string>

namespace typeflow::dist {

/// Thrown for every run-time failure of the distributed runtime: a malformed
/// cluster spec, a refused or dead peer, a timeout, a mismatched collective.
/// The message names the peer, field or file concerned.
/// (To be unified with the foundation's `typeflow::error`.)
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace typeflow::dist
