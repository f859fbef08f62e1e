// Graphs the CUDA tests run on a device D and on the cpu and compare.
#pragma once
#include <typeflow/typeflow.hpp>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace tftest {
namespace tf = typeflow;

// The five pooling ops of a KHxKW window, strides SHxSW and padding P on device D.
template <class D, class T, class XS, tf::index_t KH, tf::index_t KW, tf::index_t SH, tf::index_t SW, tf::padding_mode P>
std::vector<tf::tensor<T>> pools_on(const tf::tensor<T>& tx, const tf::tensor<T>& tdy, const tf::tensor<T>& tg) {
    constexpr auto st = tf::strides<SH, SW>;
    constexpr auto pad = tf::padding_tag<P>{};
    tf::placeholder<"x", T, XS, D> x;
    tf::placeholder<"g", T, XS, D> g;
    using YS = tf::shape_t<decltype(tf::max_pool2d<KH, KW>(x, st, pad))>;
    tf::placeholder<"dy", T, YS, D> dy;
    tf::session s;
    auto [a, b, c, d, e] = s.run(tf::fetch(tf::max_pool2d<KH, KW>(x, st, pad), tf::avg_pool2d<KH, KW>(x, st, pad),
                                           tf::max_pool2d_grad<KH, KW>(x, dy, st, pad), tf::avg_pool2d_grad<KH, KW>(x, dy, st, pad),
                                           tf::max_pool2d_grad_grad<KH, KW>(x, g, st, pad)),
                                 tf::feed(x, tx), tf::feed(dy, tdy), tf::feed(g, tg));
    return {a, b, c, d, e};
}

// The results of arrays_on, in order.
inline const char* const array_names[] = {"concat<1>", "concat<0>", "slice", "split 0", "split 1", "split 2", "pad constant",
                                          "pad reflect", "pad symmetric", "tile", "stack", "loss", "gradient x", "gradient y"};

// Every array op on [dyn, 5, 4] and [dyn, 3, 4] operands of device D, with
// the gradient of a weighted sum of all of them with respect to both.
template <class D>
std::vector<tf::tensor<float>> arrays_on(const tf::tensor<float>& xv, const tf::tensor<float>& yv) {
    constexpr auto reflect = tf::pad_mode::reflect;
    constexpr auto symmetric = tf::pad_mode::symmetric;
    tf::placeholder<"x", float, tf::shape<tf::dyn, 5, 4>, D> x;
    tf::placeholder<"y", float, tf::shape<tf::dyn, 3, 4>, D> y;
    auto cat = tf::concat<1>(x, y, x);                        // [n, 13, 4]
    auto cat0 = tf::concat<0>(y, y);                          // [2n, 3, 4]
    auto sl = tf::slice<0, 1, 1>(x, tf::sizes<-1, 3, 2>);    // [n, 3, 2]
    auto parts = tf::split<1>(x, tf::sizes<2, -1, 1>);       // [n, 2|2|1, 4]
    auto pc = tf::pad<tf::paddings<tf::pad_width{0, 1}, tf::pad_width{2, 0}, tf::pad_width{1, 3}>>(y, 2.5f);
    auto pr = tf::pad<tf::paddings<tf::pad_width{0, 0}, tf::pad_width{2, 1}, tf::pad_width{3, 2}>, reflect>(x);
    auto ps = tf::pad<tf::paddings<tf::pad_width{1, 0}, tf::pad_width{3, 2}, tf::pad_width{0, 4}>, symmetric>(y);
    auto tl = tf::tile<2, 1, 3>(y);
    auto st = tf::stack<1>(y, y);                             // [n, 2, 3, 4]
    auto loss = tf::sum(cat * cat) + tf::sum(tf::sin(cat0)) + tf::sum(sl * sl * sl) + tf::sum(std::get<0>(parts) * 3.0f) +
                tf::sum(std::get<1>(parts) * std::get<1>(parts)) + tf::sum(tf::exp(std::get<2>(parts))) + tf::sum(pc * pc) +
                tf::sum(tf::tanh(pr) * pr) + tf::sum(ps * ps * ps) + tf::sum(tl * tl) + tf::sum(tf::cos(st));
    auto [gx, gy] = tf::grad(loss, x, y);
    tf::session s;
    auto [a, b, cc, d, e, f, g, h, i, j, k, l, m, o] =
        s.run(tf::fetch(cat, cat0, sl, std::get<0>(parts), std::get<1>(parts), std::get<2>(parts), pc, pr, ps, tl, st, loss, gx, gy),
              tf::feed(x, xv), tf::feed(y, yv));
    return {a, b, cc, d, e, f, g, h, i, j, k, l, m, o};
}

// The results of embeddings_on, in order.
inline const char* const embedding_names[] = {"losses", "lookup", "lookup int64", "gather<1>", "gradient x", "table"};

// Feeds of embeddings_on: int32 ids [n, 3] and int64 ids [m] into a table of
// 9 rows (repeats within and across the two), x [n, 5, 2], and the indices
// along x's axis 1 (repeated).
struct embedding_feeds {
    tf::tensor<std::int32_t> ids;
    tf::tensor<std::int64_t> ids64;
    tf::tensor<float> x;
    tf::tensor<std::int32_t> k{tf::dims{4}, {3, 0, 3, 4}};
};

// A table of 9 x 4 on device D looked up twice, by int32 and by int64 ids,
// and a gather along axis 1 of x; `steps` steps of Opt on the table (one
// sparse update a step, its gradient two index lists), then the lookups, the
// gather, the loss's gradient with respect to x (an indexed_slices along axis
// 1) and the table.
template <class D, class Opt>
std::vector<tf::tensor<float>> embeddings_on(Opt opt, const embedding_feeds& f, int steps) {
    tf::variable<"table", float, tf::shape<9, 4>, D> table;
    std::vector<float> init(36);
    for (std::size_t i = 0; i < init.size(); ++i) init[i] = static_cast<float>((static_cast<int>(i * 7 % 11) - 5) * 0.15);
    table.load(tf::view(init, tf::dims{9, 4}));
    tf::placeholder<"ids", std::int32_t, tf::shape<tf::dyn, 3>, D> a;
    tf::placeholder<"ids64", std::int64_t, tf::shape<tf::dyn>, D> b;
    tf::placeholder<"x", float, tf::shape<tf::dyn, 5, 2>, D> x;
    tf::placeholder<"k", std::int32_t, tf::shape<4>, D> k;
    auto ea = tf::embedding_lookup(table, a);  // [n, 3, 4]
    auto eb = tf::embedding_lookup(table, b);  // [m, 4]
    auto gx = tf::gather<1>(x, k);             // [n, 4, 2]
    auto loss = tf::sum(ea * ea * ea) + tf::sum(tf::sin(eb)) + tf::sum(gx * gx * gx);
    auto step = opt.minimize(loss);
    tf::session s;
    auto feeds = [&] { return std::tuple(tf::feed(a, f.ids), tf::feed(b, f.ids64), tf::feed(x, f.x), tf::feed(k, f.k)); };
    tf::tensor<float> losses(tf::dims{steps});
    for (int i = 0; i < steps; ++i)
        losses[i] = std::apply([&](const auto&... fd) { return std::get<0>(s.run(tf::fetch(loss, step), fd...)); }, feeds())[0];
    auto [la, lb, g, dx] = std::apply([&](const auto&... fd) { return s.run(tf::fetch(ea, eb, gx, tf::grad(loss, x)), fd...); }, feeds());
    return {losses, la, lb, g, dx, table.value()};
}

// One SGD step on a 6 x 2 table of device D looked up at `ids`: the table
// after it; a tf::error of the run goes to `error`.
template <class D>
tf::tensor<float> lookup_step_on(const std::vector<std::int32_t>& ids, std::string& error) {
    tf::variable<"t", float, tf::shape<6, 2>, D> t;
    const std::vector<float> init{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 1.0f, 1.1f, 1.2f};
    t.load(tf::view(init, tf::dims{6, 2}));
    tf::placeholder<"ids", std::int32_t, tf::shape<tf::dyn>, D> p;
    auto e = tf::embedding_lookup(t, p);
    auto step = tf::train::sgd(0.5f).minimize(tf::sum(e * e));
    tf::session s;
    try {
        s.run(step, tf::feed(p, tf::view(ids, tf::dims{static_cast<tf::index_t>(ids.size())})));
    } catch (const tf::error& x) {
        error = x.what();
    }
    return t.value();
}

}  // namespace tftest
