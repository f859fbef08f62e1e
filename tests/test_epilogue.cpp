// A matmul computing the bias and ReLU of its one reader in the same call
// (kernel::run_epilogue; cuBLASLt's BIAS and RELU_BIAS epilogues on a GPU),
// and a weight gradient's matmul computing the bias gradient beside it
// (BGRADA),
// on the CPU: the taped test device's matmul offers the epilogue as the same
// element operations as the fused add and relu it replaces, so every result
// here is compared bit for bit with the same graph on tf::reference, whose
// plans pair nothing.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "taped_device.hpp"

#include <typeflow/typeflow.hpp>

#include <cstdint>
#include <vector>

namespace tf = typeflow;
using namespace tftest;
using P = tftest::taped;

namespace {
void expect_bits(const tf::tensor<float>& got, const tf::tensor<float>& want) {
    REQUIRE(got.dims() == want.dims());
    for (tf::index_t k = 0; k < got.size(); ++k) {
        INFO("element " << k);
        CHECK(got[k] == want[k]);
    }
}

// A two-layer MLP on device D, relu(x W1 + b1) W2 + b2, its weights drawn
// from `seed` (biases in [-bias, bias]).
template <class D>
struct mlp {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 6>, D> x;
    tf::variable<"W1", float, tf::shape<6, 5>, D> W1;
    tf::variable<"b1", float, tf::shape<5>, D> b1;
    tf::variable<"W2", float, tf::shape<5, 3>, D> W2;
    tf::variable<"b2", float, tf::shape<3>, D> b2;
    mlp(std::uint64_t seed, double bias) {
        rng_t r(seed);
        W1.load(uniform_tensor<float>(r, tf::dims{6, 5}, 0, 0, -0.5, 0.5).view());
        b1.load(uniform_tensor<float>(r, tf::dims{5}, 0, 0, -bias, bias).view());
        W2.load(uniform_tensor<float>(r, tf::dims{5, 3}, 0, 0, -0.5, 0.5).view());
        b2.load(uniform_tensor<float>(r, tf::dims{3}, 0, 0, -bias, bias).view());
    }
    auto logits() const { return tf::matmul(tf::relu(tf::matmul(x, W1) + b1), W2) + b2; }
};

// The MLP's forward pass on device D.
template <class D>
std::pair<tf::tensor<float>, tf::run_stats> forward(const tf::tensor<float>& xv, std::uint64_t seed) {
    mlp<D> m(seed, 0.5);
    tf::session s(tf::session_options{.threads = 1, .replay = false});
    auto out = s.run(m.logits(), tf::feed(m.x, xv));
    return {out, s.stats()};
}

// Losses of `steps` SGD steps of the MLP with a cross-entropy loss on device
// D, then its first layer's weights and both biases.
template <class D>
std::vector<float> train(const tf::tensor<float>& xv, const tf::tensor<std::int32_t>& yv, int steps, bool replay) {
    mlp<D> m(21, 0.1);
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>, D> y;
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(m.logits(), y));
    auto step = tf::train::sgd(0.3f).minimize(loss);
    tf::session s(tf::session_options{.threads = 1, .replay = replay});
    std::vector<float> losses;
    for (int i = 0; i < steps; ++i) losses.push_back(std::get<0>(s.run(tf::fetch(loss, step), tf::feed(m.x, xv), tf::feed(y, yv)))[0]);
    for (float v : m.W1.value().to_vector()) losses.push_back(v);
    for (float v : m.b1.value().to_vector()) losses.push_back(v);
    for (float v : m.b2.value().to_vector()) losses.push_back(v);
    return losses;
}
}  // namespace

TEST_CASE("epilogue: a matmul computes the bias and ReLU of its one reader", "[epilogue]") {
    rng_t r(4);
    for (tf::index_t rows : {1, 7, 16}) {
        INFO(rows << " rows");
        const auto xv = uniform_tensor<float>(r, tf::dims{rows, 6}, 0, 0, -1, 1);
        reset_taped();
        const auto [got, gs] = forward<P>(xv, 9);
        const auto [want, ws] = forward<tf::reference>(xv, 9);
        expect_bits(got, want);
        CHECK(tp().epilogues == 2);  // relu(x W1 + b1) and h W2 + b2
        CHECK(tp().relu_epilogues == 1);
        CHECK(gs.evaluations == ws.evaluations - 2);  // the two regions are not run
    }
    // some ReLU outputs are zero and some not: both branches of the epilogue ran
    const auto xv = uniform_tensor<float>(r, tf::dims{16, 6}, 0, 0, -1, 1);
    tf::placeholder<"x", float, tf::shape<tf::dyn, 6>, P> x;
    tf::variable<"W", float, tf::shape<6, 5>, P> W;
    tf::variable<"b", float, tf::shape<5>, P> b;
    W.load(uniform_tensor<float>(r, tf::dims{6, 5}, 0, 0, -0.5, 0.5).view());
    b.load(uniform_tensor<float>(r, tf::dims{5}, 0, 0, -0.5, 0.5).view());
    tf::session s;
    const auto h = s.run(tf::relu(tf::matmul(x, W) + b), tf::feed(x, xv));
    int zeros = 0;
    for (tf::index_t k = 0; k < h.size(); ++k) zeros += h[k] == 0.0f;
    CHECK(zeros > 0);
    CHECK(zeros < h.size());
}

TEST_CASE("epilogue: training with paired matmuls follows the reference step for step", "[epilogue]") {
    rng_t r(8);
    const auto xv = uniform_tensor<float>(r, tf::dims{32, 6}, 0, 0, -1, 1);
    const auto yv = uniform_tensor<std::int32_t>(r, tf::dims{32}, 0, 2, 0, 0);
    for (bool replay : {false, true}) {
        INFO("replay " << replay);
        reset_taped();
        const auto got = train<P>(xv, yv, 8, replay);
        // the forward pass's two bias adds, in every run not replayed (2 + 2 recorded with replay);
        // ReLU's gradient reads the pre-activation, so the ReLU is not in the GEMM
        CHECK(tp().epilogues == (replay ? 8 : 16));
        CHECK(tp().relu_epilogues == 0);
        // the backward pass's two weight gradients with their bias gradients (sum_like over rows)
        CHECK(tp().grad_epilogues == (replay ? 8 : 16));
        const auto want = train<tf::reference>(xv, yv, 8, replay);
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            INFO("value " << i);
            CHECK(got[i] == want[i]);
        }
        CHECK(got[7] < got[0]);
    }
}

namespace {
// A dense layer's inputs x (extents XS), w [6, 3] and b [3] on device D, and a session.
template <class D, class XS = tf::shape<4, 6>>
struct layer_in {
    tf::placeholder<"x", float, XS, D> x;
    tf::placeholder<"w", float, tf::shape<6, 3>, D> w;
    tf::placeholder<"b", float, tf::shape<3>, D> b;
    tf::session s;
    template <class F>
    auto run(const F& f, const tf::tensor<float>& xv, const tf::tensor<float>& wv, const tf::tensor<float>& bv) {
        return s.run(f, tf::feed(x, xv), tf::feed(w, wv), tf::feed(b, bv));
    }
};
}  // namespace

namespace mine {
// A user's element-wise ops named like the builtins the epilogue computes,
// doing something else: a - b and tanh.
struct add {
    static constexpr tf::op_kind kind = tf::op_kind::elementwise;
    static constexpr std::string_view name = "add";
    template <class A, class B>
    using traits = decltype(tf::binary_rule<add, tf::rule::numeric, tf::operand_sig_t<A>, tf::operand_sig_t<B>>());
    template <class A>
    static constexpr auto apply(A a, A b) { return A(a - b); }
};
struct relu {
    static constexpr tf::op_kind kind = tf::op_kind::elementwise;
    static constexpr std::string_view name = "relu";
    template <class A>
    using traits = decltype(tf::unary_rule<relu, tf::rule::floating, tf::operand_sig_t<A>>());
    template <class A>
    static constexpr auto apply(A a) { return tf::math::tanh(a); }
};
}  // namespace mine

TEST_CASE("epilogue: a matmul is not paired where its value is needed as it is", "[epilogue]") {
    rng_t r(12);
    const auto xv = uniform_tensor<float>(r, tf::dims{4, 6}, 0, 0, -1, 1);
    const auto wv = uniform_tensor<float>(r, tf::dims{6, 3}, 0, 0, -1, 1);
    const auto bv = uniform_tensor<float>(r, tf::dims{3}, 0, 0, -1, 1);
    const auto mv = uniform_tensor<float>(r, tf::dims{4, 3}, 0, 0, -1, 1);
    const auto x3v = uniform_tensor<float>(r, tf::dims{2, 4, 6}, 0, 0, -1, 1);
    const auto run_both = [&](auto make) {
        reset_taped();
        const auto got = make.template operator()<P>();
        const int paired = tp().epilogues;
        const auto want = make.template operator()<tf::reference>();
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < got.size(); ++i) expect_bits(got[i], want[i]);
        return paired;
    };
    // the matmul fetched beside the relu
    CHECK(run_both([&]<class D>() {
              layer_in<D> l;
              auto mm = tf::matmul(l.x, l.w);
              auto [a, m] = l.run(tf::fetch(tf::relu(mm + l.b), mm), xv, wv, bv);
              return std::vector<tf::tensor<float>>{a, m};
          }) == 0);
    // the matmul read twice
    CHECK(run_both([&]<class D>() {
              layer_in<D> l;
              auto mm = tf::matmul(l.x, l.w);
              return std::vector<tf::tensor<float>>{l.run(tf::relu(mm + l.b) * mm, xv, wv, bv)};
          }) == 0);
    // a matrix added, not a vector along the last axis
    CHECK(run_both([&]<class D>() {
              layer_in<D> l;
              tf::placeholder<"m", float, tf::shape<4, 3>, D> m;
              return std::vector<tf::tensor<float>>{
                  l.s.run(tf::relu(tf::matmul(l.x, l.w) + m), tf::feed(l.x, xv), tf::feed(l.w, wv), tf::feed(m, mv))};
          }) == 0);
    // a batched matmul (3-D): paired by the plan, off in a binding that is not 2-D
    CHECK(run_both([&]<class D>() {
              layer_in<D, tf::shape<2, 4, 6>> l;
              return std::vector<tf::tensor<float>>{l.run(tf::relu(tf::matmul(l.x, l.w) + l.b), x3v, wv, bv)};
          }) == 0);
    // user ops named "add" and "relu" are not the builtins: computed as written
    CHECK(run_both([&]<class D>() {
              layer_in<D> l;
              return std::vector<tf::tensor<float>>{
                  l.run(tf::relu(tf::make_node<mine::add>(tf::matmul(l.x, l.w), l.b)), xv, wv, bv)};
          }) == 0);
    CHECK(run_both([&]<class D>() {
              layer_in<D> l;
              return std::vector<tf::tensor<float>>{l.run(tf::make_node<mine::relu>(tf::matmul(l.x, l.w) + l.b), xv, wv, bv)};
          }) == 0);
    // the sum fetched on the device, with the bias first: paired, the value read from the matmul's buffer
    CHECK(run_both([&]<class D>() {
              layer_in<D> l;
              auto z = l.b + tf::matmul(l.x, l.w);
              auto [zz, t] = l.run(tf::fetch(z, tf::tanh(z)), xv, wv, bv);
              return std::vector<tf::tensor<float>>{zz, t};
          }) == 1);
}

TEST_CASE("epilogue: a weight gradient's matmul computes the bias gradient beside it", "[epilogue]") {
    rng_t r(15);
    const auto xv = uniform_tensor<float>(r, tf::dims{9, 6}, 0, 0, -1, 1);
    const auto gv = uniform_tensor<float>(r, tf::dims{9, 4}, 0, 0, -1, 1);
    const auto run = [&]<class D>(D) {
        tf::placeholder<"x", float, tf::shape<tf::dyn, 6>, D> x;
        tf::placeholder<"g", float, tf::shape<tf::dyn, 4>, D> g;
        tf::placeholder<"b", float, tf::shape<4>, D> b;
        tf::session s;
        // what the gradient of matmul(x, W) + b builds: matmul(x, g, transpose_a) and sum_like(g, b)
        auto [dw, db, both] = s.run(tf::fetch(tf::matmul(x, g, tf::transpose_a), tf::sum_like(g, b), tf::sum_like(g, b) * 2.0f),
                                    tf::feed(x, xv), tf::feed(g, gv), tf::feed(b, tf::tensor<float>(tf::dims{4})));
        return std::vector<tf::tensor<float>>{dw, db, both};
    };
    reset_taped();
    const auto got = run(P{});
    CHECK(tp().grad_epilogues == 1);
    const auto want = run(tf::reference{});
    for (std::size_t i = 0; i < got.size(); ++i) expect_bits(got[i], want[i]);
    // a sum over another axis, or of another operand, is not paired
    reset_taped();
    tf::placeholder<"x", float, tf::shape<tf::dyn, 6>, P> x;
    tf::placeholder<"g", float, tf::shape<tf::dyn, 4>, P> g;
    tf::placeholder<"c", float, tf::shape<9, 1>, P> c;
    tf::session s;
    (void)s.run(tf::fetch(tf::matmul(x, g, tf::transpose_a), tf::sum_like(g, c), tf::sum_like(x, c)), tf::feed(x, xv), tf::feed(g, gv),
                tf::feed(c, tf::tensor<float>(tf::dims{9, 1})));
    CHECK(tp().grad_epilogues == 0);
}
