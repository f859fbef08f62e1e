// tests/distributed/impl.cpp — the plain (non-template) code of the runtime, models,
// io and distributed layers, compiled once for every distributed test program
// (cmake/dist.cmake: typeflow_dist_test_impl). The test files are built with
// TYPEFLOW_SEPARATE_COMPILATION, so each of them compiles only the headers,
// not Asio, OpenSSL, Cereal or RapidJSON.
#include <typeflow/src.hpp>
#include <typeflow/io/src.hpp>
#include <typeflow/models/src.hpp>
#include <typeflow/distributed/src.hpp>
