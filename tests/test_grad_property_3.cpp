// Property test of tf::grad, seeds 150 to 199 (see grad_property.hpp).
#include "grad_property.hpp"

TEST_CASE("grad: 50 random expressions match finite differences (seeds 150-199)", "[grad][property]") {
    const int failures = tftest::property::check_range<150>(std::make_index_sequence<50>{});
    CHECK(failures == 0);
}

TEST_CASE("grad: 10 random expressions on the reference device match finite differences (seeds 150-159)",
          "[grad][property][reference]") {
    const int failures = tftest::property::check_range<150, typeflow::reference>(std::make_index_sequence<10>{});
    CHECK(failures == 0);
}
