// tests/separate/layer.cpp — a second translation unit that runs a session,
// so the out-of-line runtime is shared by two users in one program.
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

tf::tensor<float> relu_layer(const tf::tensor<float>& xb) {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 3>> x;
    tf::variable<"W", float, tf::shape<3, 2>> W{tf::init::constant{0.5}};
    tf::variable<"b", float, tf::shape<2>> b{tf::init::constant{-1.0}};
    tf::session s;
    return s.run(tf::relu(tf::matmul(x, W) + b), tf::feed(x, xb));
}
