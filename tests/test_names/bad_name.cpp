// The control for tests/test_names/check_test_names.cmake: this name must be refused.
TEST_CASE("a name; split by CTest") {}
