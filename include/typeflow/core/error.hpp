// typeflow/core/error.hpp — the run-time error type of typeflow.
#pragma once
#include <stdexcept>
#include <string>

namespace typeflow {

/// Thrown for misuse detected at run time: bad feeds, shape mismatches of
/// dynamic dimensions, name clashes. The message names the node and the shapes.
class error : public std::runtime_error {
public:
    explicit error(const std::string& what) : std::runtime_error("typeflow: " + what) {}
};

}  // namespace typeflow
