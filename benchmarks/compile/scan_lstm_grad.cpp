// The LSTM scan step of tests/test_lstm_kernel.cpp as a named functor, its gradient run on the CPU.
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;
constexpr tf::index_t n = 20;
template <class U>
struct lstm_step {
    const U* u;
    template <class S, class Z>
    auto operator()(const S& s, const Z& zt) const {
        const auto h = tf::slice<0, 0>(s, tf::sizes<-1, n>);
        const auto c = tf::slice<0, n>(s, tf::sizes<-1, n>);
        const auto a = tf::slice<0, 0>(zt, tf::sizes<-1, 4 * n>) + tf::matmul(h, *u);
        const auto i = tf::sigmoid(tf::slice<0, 0>(a, tf::sizes<-1, n>));
        const auto f = tf::sigmoid(tf::slice<0, n>(a, tf::sizes<-1, n>));
        const auto g = tf::tanh(tf::slice<0, 2 * n>(a, tf::sizes<-1, n>));
        const auto o = tf::sigmoid(tf::slice<0, 3 * n>(a, tf::sizes<-1, n>));
        const auto c2 = f * c + i * g;
        const auto keep = tf::slice<0, 4 * n>(zt, tf::sizes<-1, 1>);
        return keep * tf::concat<1>(o * tf::tanh(c2), c2) + (tf::literal<double, 1, 1, tf::device_t<S>>{} - keep) * s;
    }
};
int main() {
    tf::placeholder<"z", double, tf::shape<tf::dyn, tf::dyn, 4 * n>> z;
    tf::placeholder<"m", double, tf::shape<tf::dyn, tf::dyn>> m;
    tf::placeholder<"w", double, tf::shape<tf::dyn, tf::dyn, 2 * n>> w;
    tf::placeholder<"s0", double, tf::shape<tf::dyn, 2 * n>> s0;
    tf::variable<"u", double, tf::shape<n, 4 * n>> u{tf::init::normal{0.0, 0.3, 11}};
    const auto zm = tf::concat<2>(z, tf::expand_dims<2>(m));
    const auto hc = tf::scan(lstm_step<decltype(u)>{&u}, zm, s0);
    const auto y = tf::sum(hc * w);
    tf::session s;
    tf::tensor<double> zv({3, 2, 4 * n}), mv({3, 2}), wv({3, 2, 2 * n}), s0v({2, 2 * n});
#if GRAD
    auto [gz, gu] = s.run(tf::fetch(tf::grad(y, z), tf::grad(y, u)), tf::feed(z, zv), tf::feed(m, mv), tf::feed(w, wv), tf::feed(s0, s0v));
    return int(gz[0] + gu[0]);
#else
    auto r = s.run(hc, tf::feed(z, zv), tf::feed(m, mv), tf::feed(w, wv), tf::feed(s0, s0v));
    return int(r[0]);
#endif
}
