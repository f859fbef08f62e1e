// The one translation unit that holds Catch2's main(); the test cases live in
// tests/test_*.cpp (see tests/CMakeLists.txt).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
