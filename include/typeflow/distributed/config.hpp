#pragma once
// The distributed layer's build configuration. Header-only by default, like
// the rest of typeflow: its plain code lives in impl/*.ipp, included and
// inline. With TYPEFLOW_SEPARATE_COMPILATION (see typeflow/core/config.hpp)
// the headers leave the .ipp files out (and with them Asio, OpenSSL, Cereal
// and RapidJSON), and one source file of the program compiles them by
// including <typeflow/distributed/src.hpp>.

#include <typeflow/core/config.hpp>

/// Declares a function of the distributed layer's plain code: inline in
/// header-only builds, compiled once by typeflow/distributed/src.hpp under
/// TYPEFLOW_SEPARATE_COMPILATION. (TYPEFLOW_DECL_HOT, not TYPEFLOW_DECL: the
/// transport and the collectives are data-path code, not to be built -Og.)
#define TYPEFLOW_DIST_DECL TYPEFLOW_DECL_HOT
