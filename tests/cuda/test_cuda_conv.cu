// conv2d (cuDNN) and pooling on tf::gpu<0> against the CPU backend: the
// forward ops and their gradient ops over padding, stride and dilation
// cases, float and double; a dyn batch across runs (including 0 images);
// and the lectures' CNN (conv2d, relu, max_pool2d, dense, softmax cross
// entropy, Adam) trained on the GPU step for step with the CPU. Built by
// nvcc; without a CUDA device the program reports itself skipped.
#include <catch2/catch.hpp>

#include "../support.hpp"
#include "compare.hpp"
#include "graphs.hpp"

#include <typeflow/typeflow.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace tf = typeflow;
using namespace tftest;
using G = tf::gpu<0>;

namespace {

// conv2d and both backprop ops on device D, x fed with extents xd.
template <class D, class T, class XS, class WS, tf::index_t SH, tf::index_t SW, tf::padding_mode P, tf::index_t DH, tf::index_t DW>
std::vector<tf::tensor<T>> convs_on(const tf::tensor<T>& tx, const tf::tensor<T>& tw, const tf::tensor<T>& tdy) {
    tf::placeholder<"x", T, XS, D> x;
    tf::placeholder<"w", T, WS, D> w;
    const auto y = tf::conv2d(x, w, tf::strides<SH, SW>, tf::padding_tag<P>{}, tf::dilations<DH, DW>);
    tf::placeholder<"dy", T, tf::shape_t<decltype(y)>, D> dy;
    const auto dx = tf::conv2d_backprop_input(x, w, dy, tf::strides<SH, SW>, tf::padding_tag<P>{}, tf::dilations<DH, DW>);
    const auto dw = tf::conv2d_backprop_filter(x, w, dy, tf::strides<SH, SW>, tf::padding_tag<P>{}, tf::dilations<DH, DW>);
    tf::session s;
    auto [a, b, c] = s.run(tf::fetch(y, dx, dw), tf::feed(x, tx), tf::feed(w, tw), tf::feed(dy, tdy));
    return {a, b, c};
}

template <class T, class XS, class WS, tf::index_t SH, tf::index_t SW, tf::padding_mode P, tf::index_t DH = 1, tf::index_t DW = 1>
void check_conv(std::uint32_t seed, tf::dims xd = XS::value) {
    const auto g = tf::op::conv2d<SH, SW, P, DH, DW>::geometry(xd, WS::value);
    rng_t r(seed);
    const auto tx = uniform_tensor<T>(r, xd, 0, 0, -2, 2), tw = uniform_tensor<T>(r, WS::value, 0, 0, -1, 1);
    const auto tdy = uniform_tensor<T>(r, g.out(), 0, 0, -1, 1);
    const auto got = convs_on<G, T, XS, WS, SH, SW, P, DH, DW>(tx, tw, tdy);
    const auto want = convs_on<tf::cpu, T, XS, WS, SH, SW, P, DH, DW>(tx, tw, tdy);
    std::ostringstream what;
    what << "conv2d x " << tf::to_string(xd) << " w " << tf::to_string(WS::value) << " strides " << SH << "," << SW
         << (P == tf::padding_mode::same ? " SAME" : " VALID") << " dilations " << DH << "," << DW;
    // sums of up to KH*KW*C_in (forward) or N*OH*OW (filter gradient) products, in another order
    const double rt = std::is_same_v<T, float> ? 1e-4 : 1e-11;
    expect_close(what.str() + ": forward", got[0], want[0], rt);
    expect_close(what.str() + ": backprop_input", got[1], want[1], rt);
    expect_close(what.str() + ": backprop_filter", got[2], want[2], rt);
}

template <class T, class XS, tf::index_t KH, tf::index_t KW, tf::index_t SH, tf::index_t SW, tf::padding_mode P>
void check_pools(std::uint32_t seed) {
    const auto geo = tf::op::max_pool2d<KH, KW, SH, SW, P>::geometry(XS::value);
    rng_t r(seed);
    auto tx = uniform_tensor<T>(r, XS::value, 0, 0, -3, 3);
    for (tf::index_t i = 0; i < tx.size(); i += 3) tx[i] = static_cast<T>(static_cast<int>(tx[i]));  // some ties
    const auto tdy = uniform_tensor<T>(r, geo.out(), 0, 0, -2, 2), tg = uniform_tensor<T>(r, XS::value, 0, 0, -2, 2);
    const auto got = pools_on<G, T, XS, KH, KW, SH, SW, P>(tx, tdy, tg);
    const auto want = pools_on<tf::cpu, T, XS, KH, KW, SH, SW, P>(tx, tdy, tg);
    std::ostringstream what;
    what << "window " << KH << "x" << KW << " strides " << SH << "," << SW << (P == tf::padding_mode::same ? " SAME" : " VALID");
    const char* names[] = {"max_pool2d", "avg_pool2d", "max_pool2d_grad", "avg_pool2d_grad", "max_pool2d_grad_grad"};
    for (std::size_t i = 0; i < got.size(); ++i) expect_close(what.str() + ": " + names[i], got[i], want[i], rtol_of<T>());
}

}  // namespace

TEST_CASE("cuda conv2d and its gradients through cuDNN match the cpu", "[cuda]") {
    using tf::shape;
    constexpr auto same = tf::padding_mode::same;
    constexpr auto valid = tf::padding_mode::valid;
    check_conv<float, shape<tf::dyn, 28, 28, 1>, shape<3, 3, 1, 32>, 1, 1, valid>(31, tf::dims{64, 28, 28, 1});  // the lecture's layer
    check_conv<float, shape<2, 8, 8, 2>, shape<3, 3, 2, 3>, 2, 2, same>(32);         // asymmetric SAME: padded input
    check_conv<float, shape<1, 6, 7, 2>, shape<2, 2, 2, 2>, 1, 1, same>(33);         // even kernel
    check_conv<double, shape<1, 7, 6, 3>, shape<3, 3, 3, 2>, 1, 1, same>(34);        // symmetric SAME
    check_conv<double, shape<1, 9, 8, 1>, shape<3, 2, 1, 2>, 2, 3, valid>(35);       // unequal strides
    check_conv<double, shape<1, 9, 9, 2>, shape<3, 3, 2, 2>, 1, 1, same, 2, 2>(36);  // dilation
    check_conv<double, shape<1, 8, 10, 1>, shape<2, 3, 1, 2>, 3, 2, same, 2, 1>(37); // dilation, strides, asymmetric
}

TEST_CASE("cuda conv2d with a dyn batch across runs, including 0 images", "[cuda]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 6, 6, 2>, G> x;
    tf::placeholder<"w", float, tf::shape<3, 3, 2, 4>, G> w;
    tf::placeholder<"xc", float, tf::shape<tf::dyn, 6, 6, 2>> xc;
    tf::placeholder<"wc", float, tf::shape<3, 3, 2, 4>> wc;
    rng_t r(38);
    const auto tw = uniform_tensor<float>(r, tf::dims{3, 3, 2, 4}, 0, 0, -1, 1);
    tf::session s;
    for (long long n : {3LL, 0LL, 5LL, 1LL}) {
        const auto tx = uniform_tensor<float>(r, tf::dims{n, 6, 6, 2}, 0, 0, -1, 1);
        const auto got = s.run(tf::conv2d(x, w, tf::padding::same), tf::feed(x, tx), tf::feed(w, tw));
        const auto want = s.run(tf::conv2d(xc, wc, tf::padding::same), tf::feed(xc, tx), tf::feed(wc, tw));
        expect_close("batch " + std::to_string(n), got, want, 1e-5);
    }
}

TEST_CASE("cuda pooling and its gradients match the cpu", "[cuda]") {
    using tf::shape;
    constexpr auto same = tf::padding_mode::same;
    constexpr auto valid = tf::padding_mode::valid;
    check_pools<float, shape<64, 26, 26, 32>, 2, 2, 2, 2, valid>(41);  // the lecture's MaxPooling2D()
    check_pools<float, shape<1, 7, 5, 2>, 3, 3, 2, 2, same>(42);
    check_pools<double, shape<2, 5, 6, 3>, 3, 2, 1, 1, same>(43);
    check_pools<double, shape<1, 9, 7, 2>, 2, 3, 3, 2, valid>(44);
}

namespace {
// The lectures' CNN written as a graph on device D (conv2d 3x3 relu, max
// pooling, dense relu, dense, sparse softmax cross entropy, Adam); the losses
// of `steps` steps and the final weights.
template <class D>
std::pair<std::vector<float>, std::vector<tf::tensor<float>>> train_cnn_on(const std::vector<tf::tensor<float>>& init,
                                                                           const tf::tensor<float>& xv, const tf::tensor<std::int32_t>& yv,
                                                                           int steps) {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 12, 12, 1>, D> x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>, D> y;
    tf::variable<"k", float, tf::shape<3, 3, 1, 8>, D> k;
    tf::variable<"kb", float, tf::shape<8>, D> kb;
    tf::variable<"W1", float, tf::shape<200, 16>, D> W1;
    tf::variable<"b1", float, tf::shape<16>, D> b1;
    tf::variable<"W2", float, tf::shape<16, 3>, D> W2;
    tf::variable<"b2", float, tf::shape<3>, D> b2;
    k.load(init[0].view()), kb.load(init[1].view()), W1.load(init[2].view()), b1.load(init[3].view());
    W2.load(init[4].view()), b2.load(init[5].view());
    auto h = tf::max_pool2d<2>(tf::relu(tf::conv2d(x, k) + kb));
    auto flat = tf::reshape<tf::dyn, 200>(h);
    auto logits = tf::matmul(tf::relu(tf::matmul(flat, W1) + b1), W2) + b2;
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y));
    auto step = tf::train::adam(0.01f).minimize(loss);
    tf::session s;
    std::vector<float> losses;
    for (int i = 0; i < steps; ++i) losses.push_back(std::get<0>(s.run(tf::fetch(loss, step), tf::feed(x, xv), tf::feed(y, yv)))[0]);
    return {losses, {k.value().clone(), kb.value().clone(), W1.value().clone(), b1.value().clone(), W2.value().clone(), b2.value().clone()}};
}
}  // namespace

TEST_CASE("cuda training of the lectures' CNN follows the cpu step for step", "[cuda]") {
    rng_t r(45);
    const std::vector<tf::tensor<float>> init{
        uniform_tensor<float>(r, tf::dims{3, 3, 1, 8}, 0, 0, -0.4, 0.4), uniform_tensor<float>(r, tf::dims{8}, 0, 0, -0.1, 0.1),
        uniform_tensor<float>(r, tf::dims{200, 16}, 0, 0, -0.15, 0.15),  uniform_tensor<float>(r, tf::dims{16}, 0, 0, -0.1, 0.1),
        uniform_tensor<float>(r, tf::dims{16, 3}, 0, 0, -0.4, 0.4),      uniform_tensor<float>(r, tf::dims{3}, 0, 0, -0.1, 0.1)};
    // three classes: a bright blob in the top half, in the bottom half, or none
    tf::tensor<float> xv(tf::dims{48, 12, 12, 1});
    tf::tensor<std::int32_t> yv(tf::dims{48});
    for (int i = 0; i < 48; ++i) {
        yv[i] = i % 3;
        for (int p = 0; p < 144; ++p) xv[i * 144 + p] = 0.1f * static_cast<float>((i * 7 + p * 13) % 5) / 5.0f;
        if (yv[i] < 2)
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b) xv[i * 144 + (yv[i] * 6 + 2 + a) * 12 + (i % 6) + 2 + b] = 1.0f;
    }
    const auto [lg, wg] = train_cnn_on<G>(init, xv, yv, 12);
    const auto [lc, wc] = train_cnn_on<tf::cpu>(init, xv, yv, 12);
    for (std::size_t i = 0; i < lg.size(); ++i) {
        INFO("step " << i);
        CHECK(std::abs(lg[i] - lc[i]) <= 1e-3f * std::max(1.0f, std::abs(lc[i])));
    }
    CHECK(lg.back() < 0.3f * lg.front());  // it learns
    for (std::size_t i = 0; i < wg.size(); ++i) expect_close("weights " + std::to_string(i), wg[i], wc[i], 1e-2);
}
