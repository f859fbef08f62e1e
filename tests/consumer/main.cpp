// Built against an installed typeflow (find_package(typeflow) + typeflow::typeflow):
// runs a small graph and checks its result.
#include <cstdio>

#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

int main() {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 2>> x;
    tf::variable<"W", float, tf::shape<2, 2>> W{tf::init::ones{}};
    tf::session s;
    auto y = s.run(tf::sum(tf::relu(tf::matmul(x, W) - 1.0f)), tf::feed(x, tf::tensor<float>({2, 2}, {1, 2, -3, 1})));
    std::printf("consumer: %g\n", y.item());
    return y.item() == 4.f ? 0 : 1;  // rows: [3,3]-1 -> 2+2; [-2,-2]-1 -> 0
}
