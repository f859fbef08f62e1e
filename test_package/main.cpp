// Conan test_package: a small graph whose shapes are checked at compile time,
// run through a session and checked against the value worked out by hand.
#include <cstdio>
#include <type_traits>

#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

int main() {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 3>> x;
    tf::variable<"W", float, tf::shape<3, 2>> W{tf::init::constant{0.5}};
    tf::variable<"b", float, tf::shape<2>> b{tf::init::constant{-1.0}};
    auto y = tf::relu(tf::matmul(x, W) + b);
    auto total = tf::sum(y);
    static_assert(std::is_same_v<tf::shape_t<decltype(y)>, tf::shape<tf::dyn, 2>>);
    static_assert(std::is_same_v<tf::shape_t<decltype(total)>, tf::shape<>>);

    tf::session s;
    // rows: (1+2+3)*0.5-1 = 2 in both columns; (-1+0+1)*0.5-1 = -1 -> relu 0
    const auto out = s.run(total, tf::feed(x, tf::tensor<float>({2, 3}, {1, 2, 3, -1, 0, 1})));
    std::printf("test_package: sum(relu(x W + b)) = %g (expected 4)\n", out.item());
    return out.item() == 4.f ? 0 : 1;
}
