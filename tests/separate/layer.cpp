// tests/separate/layer.cpp — a second translation unit that runs a session
// and writes a summary, so the out-of-line runtime and io code are shared by
// two users in one program.
#include <typeflow/io/summary.hpp>
#include <typeflow/typeflow.hpp>

#if defined(CEREAL_CEREAL_HPP_) || defined(RAPIDJSON_RAPIDJSON_H_)
#error "with TYPEFLOW_SEPARATE_COMPILATION the io headers must not include Cereal or RapidJSON"
#endif

namespace tf = typeflow;

tf::tensor<float> relu_layer(const tf::tensor<float>& xb) {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 3>> x;
    tf::variable<"W", float, tf::shape<3, 2>> W{tf::init::constant{0.5}};
    tf::variable<"b", float, tf::shape<2>> b{tf::init::constant{-1.0}};
    tf::session s;
    return s.run(tf::relu(tf::matmul(x, W) + b), tf::feed(x, xb));
}

// Writes scalar "loss" = 0.5 at step 7 and a histogram of {1, 2, 3} into
// logdir; returns the event file's path.
std::string write_summary(const std::string& logdir) {
    tf::io::summary_writer w(logdir);
    w.scalar("loss", 0.5, 7);
    w.histogram("h", std::vector<double>{1, 2, 3}, 7);
    w.flush();
    return w.event_file();
}
