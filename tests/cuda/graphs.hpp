// Graphs the CUDA tests run on a device D and on the cpu and compare.
#pragma once
#include <typeflow/typeflow.hpp>

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

}  // namespace tftest
