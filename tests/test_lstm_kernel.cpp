// The fused LSTM recurrence (expr/ops/rnn.hpp) against the same recurrence
// written as a tf::scan of element-wise ops and matmul (whose gradient is
// checked by finite differences in test_loops.cpp), on the CPU with one and
// two threads and on the reference device: values, gradients with respect to
// the gate inputs and the recurrent kernel, masks, and dyn lengths including
// 0 and 1. Finite differences through the layer are in test_recurrent.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

namespace {
constexpr tf::index_t units = 20;  // 4 units = 80 columns; batch 40 splits over 2 threads

// The recurrence as a scan over [time, batch, 4U + 1] (the mask as the last
// column), carrying [h, c] [batch, 2U] from s0.
template <class Z, class U, class M, class S0>
auto scan_lstm(const Z& z, const U& u, const M& m, const S0& s0) {
    constexpr tf::index_t n = units;
    const auto zm = tf::concat<2>(z, tf::expand_dims<2>(m));
    return tf::scan(
        [&u](const auto& s, const auto& zt) {
            const auto h = tf::slice<0, 0>(s, tf::sizes<-1, n>);
            const auto c = tf::slice<0, n>(s, tf::sizes<-1, n>);
            const auto a = tf::slice<0, 0>(zt, tf::sizes<-1, 4 * n>) + tf::matmul(h, u);
            const auto i = tf::sigmoid(tf::slice<0, 0>(a, tf::sizes<-1, n>));
            const auto f = tf::sigmoid(tf::slice<0, n>(a, tf::sizes<-1, n>));
            const auto g = tf::tanh(tf::slice<0, 2 * n>(a, tf::sizes<-1, n>));
            const auto o = tf::sigmoid(tf::slice<0, 3 * n>(a, tf::sizes<-1, n>));
            const auto c2 = f * c + i * g;
            const auto keep = tf::slice<0, 4 * n>(zt, tf::sizes<-1, 1>);
            return keep * tf::concat<1>(o * tf::tanh(c2), c2) + (tf::literal<double, 1, 1, tf::device_t<std::remove_cvref_t<decltype(s)>>>{} - keep) * s;
        },
        zm, s0);
}

template <class D>
void check_fused_against_scan(int threads, bool masked) {
    constexpr tf::index_t n = units;
    tf::placeholder<"z", double, tf::shape<tf::dyn, tf::dyn, 4 * n>, D> z;
    tf::placeholder<"m", double, tf::shape<tf::dyn, tf::dyn>, D> m;
    tf::placeholder<"w", double, tf::shape<tf::dyn, tf::dyn, 2 * n>, D> w;  // weights of the loss
    tf::placeholder<"s0", double, tf::shape<tf::dyn, 2 * n>, D> s0;
    tf::variable<"u", double, tf::shape<n, 4 * n>, D> u{tf::init::normal{0.0, 0.3, 11}};

    // the op without a mask child, and with one (all ones unless masked)
    const auto hc_plain = tf::slice<0, 0, 0>(tf::detail::lstm_sequence(z, u), tf::sizes<-1, -1, 2 * n>);
    const auto hc_masked = tf::slice<0, 0, 0>(tf::detail::lstm_sequence(z, u, m), tf::sizes<-1, -1, 2 * n>);
    const auto hc_scan = scan_lstm(z, u, m, s0);
    const auto y_plain = tf::sum(hc_plain * w), y_masked = tf::sum(hc_masked * w), y_scan = tf::sum(hc_scan * w);

    tf::session s{tf::session_options{.threads = threads}};
    tf::init::detail::rng r(5);
    for (tf::index_t steps : {tf::index_t{0}, tf::index_t{1}, tf::index_t{7}}) {
        const tf::index_t batch = 40;
        tf::tensor<double> zv({steps, batch, 4 * n}), mv({steps, batch}), wv({steps, batch, 2 * n}), s0v({batch, 2 * n});
        for (tf::index_t i = 0; i < zv.size(); ++i) zv[i] = r.normal();
        for (tf::index_t i = 0; i < wv.size(); ++i) wv[i] = r.normal();
        for (tf::index_t i = 0; i < mv.size(); ++i) mv[i] = masked && r.uniform01() < 0.3 ? 0.0 : 1.0;
        for (tf::index_t i = 0; i < s0v.size(); ++i) s0v[i] = 0.0;
        const auto feeds = [&] { return std::make_tuple(tf::feed(z, zv), tf::feed(m, mv), tf::feed(w, wv), tf::feed(s0, s0v)); };
        INFO("threads " << threads << " masked " << masked << " steps " << steps);
        auto [a, b, want] = std::apply([&](auto... f) { return s.run(tf::fetch(hc_plain, hc_masked, hc_scan), f...); }, feeds());
        REQUIRE(want.dims() == tf::dims{steps, batch, 2 * n});
        REQUIRE(b.dims() == want.dims());
        for (tf::index_t i = 0; i < want.size(); ++i) {
            CHECK(b[i] == Approx(want[i]).epsilon(1e-12).margin(1e-13));
            if (!masked) CHECK(a[i] == b[i]);
        }
        auto [gz, gu, gz_want, gu_want] = std::apply(
            [&](auto... f) {
                return s.run(tf::fetch(tf::grad(y_masked, z), tf::grad(y_masked, u), tf::grad(y_scan, z), tf::grad(y_scan, u)),
                             f...);
            },
            feeds());
        REQUIRE(gz.dims() == zv.dims());
        for (tf::index_t i = 0; i < gz.size(); ++i) CHECK(gz[i] == Approx(gz_want[i]).epsilon(1e-10).margin(1e-12));
        for (tf::index_t i = 0; i < gu.size(); ++i) CHECK(gu[i] == Approx(gu_want[i]).epsilon(1e-10).margin(1e-12));
        if (!masked) {
            auto gp = std::apply([&](auto... f) { return s.run(tf::grad(y_plain, u), f...); }, feeds());
            for (tf::index_t i = 0; i < gp.size(); ++i) CHECK(gp[i] == Approx(gu[i]).epsilon(1e-12).margin(1e-13));
        }
        if (masked && steps > 0) {  // a masked row's gate inputs get no gradient
            for (tf::index_t i = 0; i < mv.size(); ++i)
                if (mv[i] == 0.0)
                    for (tf::index_t j = 0; j < 4 * n; ++j) CHECK(gz[i * 4 * n + j] == 0.0);
        }
    }
}
}  // namespace

TEST_CASE("the fused LSTM kernel equals a scan of the step", "[rnn][lstm]") {
    for (bool masked : {false, true}) {
        check_fused_against_scan<tf::cpu>(1, masked);
        check_fused_against_scan<tf::cpu>(2, masked);
        check_fused_against_scan<tf::reference>(1, masked);
    }
}

TEST_CASE("the fused LSTM kernel gives the same bits on 1 and 2 threads", "[rnn][lstm]") {
    constexpr tf::index_t n = 64;  // enough work per step for the split
    tf::placeholder<"z", float, tf::shape<16, 64, 4 * n>> z;
    tf::placeholder<"w", float, tf::shape<16, 64, 6 * n>> w;
    tf::variable<"u", float, tf::shape<n, 4 * n>> u{tf::init::normal{0.0f, 0.2f, 3}};
    const auto st = tf::detail::lstm_sequence(z, u);
    const auto y = tf::sum(tf::slice<0, 0, 0>(st, tf::sizes<-1, -1, 2 * n>) * tf::slice<0, 0, 0>(w, tf::sizes<-1, -1, 2 * n>));
    tf::tensor<float> zv({16, 64, 4 * n}), wv({16, 64, 6 * n});
    tf::init::detail::rng r(9);
    for (tf::index_t i = 0; i < zv.size(); ++i) zv[i] = static_cast<float>(r.normal());
    for (tf::index_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(r.normal());
    tf::session one{tf::session_options{.threads = 1}}, two{tf::session_options{.threads = 2}};
    auto [s1, gz1, gu1] = one.run(tf::fetch(st, tf::grad(y, z), tf::grad(y, u)), tf::feed(z, zv), tf::feed(w, wv));
    auto [s2, gz2, gu2] = two.run(tf::fetch(st, tf::grad(y, z), tf::grad(y, u)), tf::feed(z, zv), tf::feed(w, wv));
    int differ = 0;
    for (tf::index_t i = 0; i < s1.size(); ++i) differ += s1[i] != s2[i];
    for (tf::index_t i = 0; i < gz1.size(); ++i) differ += gz1[i] != gz2[i];
    for (tf::index_t i = 0; i < gu1.size(); ++i) differ += gu1[i] != gu2[i];
    CHECK(differ == 0);
}

TEST_CASE("the fused LSTM kernel's extents are checked", "[rnn][lstm][errors]") {
    tf::placeholder<"z", float, tf::shape<tf::dyn, tf::dyn, 8>> z;
    tf::placeholder<"m", float, tf::shape<tf::dyn, tf::dyn>> m;
    tf::variable<"u", float, tf::shape<2, 8>> u{tf::init::zeros{}};
    tf::session s;
    tf::tensor<float> zv({3, 2, 8}), mv({2, 3});
    CHECK_THROWS_WITH(s.run(tf::detail::lstm_sequence(z, u, m), tf::feed(z, zv), tf::feed(m, mv)),
                      Catch::Contains("lstm_sequence: gate inputs [3,2,8], recurrent kernel [2,8], mask [2,3] do not fit"));
}
