// benchmarks/two_tower_train.cpp — the lectures' two-tower ticket ranker's
// training step (examples/ticket_ranker.cpp's model), timed in typeflow; the
// peer is TensorFlow's Keras (benchmarks/tensorflow/two_tower_keras.py), run
// in the same invocation of scripts/bench_tf.sh, which joins the lines into
// ratios.
//
// Workload (at 1 and 2 threads, `two_tower_train_step threads=<n> typeflow=<us>`):
//   two_tower_train_step  title ids [64, 10] -> Embedding(10000, 64, mask_zero)
//                         -> LSTM(128); body ids [64, 50] -> Embedding(10000,
//                         64, mask_zero) -> LSTM(32); concatenated with 12
//                         tags; Dense(1) priority (binary cross entropy) and
//                         Dense(4) department (sparse categorical cross
//                         entropy) weighted 1 and 0.5; one Adam step with the
//                         metrics (Keras: train_on_batch). Sequences have
//                         random lengths, padded with id 0.
#include <cstdio>
#include <random>
#include <string>
#include <tuple>

#include <typeflow/models.hpp>

#include "bench_util.hpp"

namespace tf = typeflow;
namespace L = tf::layers;

int main(int argc, char** argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    if (!only.empty() && only != "two_tower_train_step") return 0;
    constexpr int batch = 64, title_len = 10, body_len = 50, vocabulary = 10000;
    std::mt19937 rng(7);
    const auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo + 1)); };
    tf::tensor<std::int32_t> title({batch, title_len}), body({batch, body_len}), department({batch});
    tf::tensor<float> tags({batch, 12}), priority({batch, 1});
    for (int i = 0; i < batch; ++i) {
        const int tl = uniform(3, title_len), bl = uniform(10, body_len);
        for (int w = 0; w < title_len; ++w) title[i * title_len + w] = w < tl ? uniform(1, vocabulary - 1) : 0;
        for (int w = 0; w < body_len; ++w) body[i * body_len + w] = w < bl ? uniform(1, vocabulary - 1) : 0;
        for (int t = 0; t < 12; ++t) tags[i * 12 + t] = uniform(0, 1) ? 1.f : 0.f;
        priority[i] = static_cast<float>(uniform(0, 1));
        department[i] = uniform(0, 3);
    }
    const auto x = std::make_tuple(title, body, tags);
    const auto y = std::make_tuple(priority, department);

    tf::placeholder<"title", std::int32_t, tf::shape<tf::dyn, tf::dyn>> title_in;
    tf::placeholder<"body", std::int32_t, tf::shape<tf::dyn, tf::dyn>> body_in;
    tf::placeholder<"tags", float, tf::shape<tf::dyn, 12>> tags_in;
    L::layer<"title_embedding", L::embedding<vocabulary, 64>> title_embedding;
    L::layer<"body_embedding", L::embedding<vocabulary, 64>> body_embedding;
    L::layer<"title_lstm", L::lstm<128>> title_lstm;
    L::layer<"body_lstm", L::lstm<32>> body_lstm;
    L::layer<"priority", L::dense<1>> priority_head;
    L::layer<"department", L::dense<4>> department_head;
    auto net = tf::models::functional(tf::models::inputs(title_in, body_in, tags_in), [=](auto mode) {
        const auto t = title_lstm(title_embedding(title_in, mode), tf::not_equal(title_in, 0), mode);
        const auto b = body_lstm(body_embedding(body_in, mode), tf::not_equal(body_in, 0), mode);
        const auto h = L::concatenate<-1>(t, b, tags_in);
        const auto p = priority_head(h, mode);
        const auto d = department_head(h, mode);
        return tf::models::outputs<"priority", "department">(p, d);
    });
    auto model = net.compile(tf::models::per_output(tf::losses::binary_crossentropy<true>{},
                                                    tf::losses::sparse_categorical_crossentropy<tf::losses::from_logits>{})
                                 .weighted({1.0, 0.5}),
                             tf::optimizers::adam{}, tf::metrics::accuracy{});
    for (int threads : {1, 2}) {
        model.set_threads(threads);
        std::vector<bench::contender> cs{{"typeflow", [&] { bench::do_not_optimize(model.train_on_batch(x, y)); }}};
        bench::measure(cs);
        std::printf("two_tower_train_step threads=%d typeflow=%.1f\n", threads, cs[0].median());
        std::fflush(stdout);
    }
}
