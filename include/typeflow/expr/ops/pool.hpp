// typeflow/expr/ops/pool.hpp — 2-D max and average pooling (NHWC) as
// TensorFlow's tf.nn.max_pool2d / tf.nn.avg_pool2d; their gradient ops
// max_pool2d_grad, avg_pool2d_grad and max_pool2d_grad_grad; and
// global_avg_pool2d / global_max_pool2d.
//
// Window, strides and padding are compile-time, carried in the op tag
// op::max_pool2d<KH, KW, SH, SW, Pad>. The strides default to the window and
// the padding to VALID, as Keras' MaxPooling2D():
//   tf::max_pool2d<2, 2>(x)                                  2x2 window, stride 2, VALID
//   tf::max_pool2d<2>(x)                                     the same (a square window)
//   tf::max_pool2d<3, 3>(x, tf::padding::same)               stride 3, SAME
//   tf::avg_pool2d<3, 3>(x, tf::strides<1, 1>, tf::padding::same)
// x: [N, H, W, C] (any extent may be tf::dyn); the result is [N, OH, OW, C],
// with conv2d's rules for the output extent and the padding (conv.hpp; the
// odd padding row goes to the bottom, the odd column to the right). Padding
// never takes part: a window's maximum and average are those of its elements
// inside the input (TensorFlow's average divides by their count too).
//
// The gradient ops take (x, dy), dy of the pooled shape, and give x's shape:
// max_pool2d_grad routes each dy to the maximum of its window (on ties the
// first in row-major window order, as TensorFlow's CPU kernel), avg_pool2d_grad
// spreads it evenly (x gives only extents). max_pool2d_grad_grad(x, g) gathers
// g (x's shape) at those maxima (TensorFlow's MaxPoolGradGrad); it is the
// gradient of max_pool2d_grad with respect to dy.
// Kernels: backend/eigen/ops/pool.hpp and backend/reference/ops/pool.hpp.
#pragma once
#include <string_view>

#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/ops/conv.hpp>
#include <typeflow/expr/ops/reduce.hpp>

namespace typeflow::diagnostic {
/// A pooling op's input is not rank 4 (NHWC).
template <class Op, class InputShape>
struct pool_needs_rank_4;
/// A pooling window or stride extent is zero or negative (the op carries them).
template <class Op>
struct pool_window_and_strides_must_be_positive;
/// With VALID padding the pooling window is larger than the input.
template <class Op, class InputShape>
struct pool_window_larger_than_input;
/// A pooling gradient op's gradient operand does not have the expected shape
/// (the pooled shape for dy, the input's for max_pool2d_grad_grad's g).
template <class Op, class GradientShape, class ExpectedShape>
struct pool_gradient_shape_differs;
}  // namespace typeflow::diagnostic

namespace typeflow {

namespace detail {
/// The geometry of one pooling: input [n, h, w, c], window kh x kw, strides,
/// output [n, oh, ow, c] and the top / left padding.
struct pool2d_geometry {
    index_t n = 0, h = 0, w = 0, c = 0, kh = 1, kw = 1, sh = 1, sw = 1, oh = 0, ow = 0, pad_top = 0, pad_left = 0;
    bool attrs_ok = true, rank_ok = true, window_ok = true;
    constexpr bool ok() const { return attrs_ok && rank_ok && window_ok; }
    constexpr dims in() const { return dims{n, h, w, c}; }
    constexpr dims out() const { return dims{n, oh, ow, c}; }
    /// The input rows [row_begin, row_end) of output row o's window (padding left out).
    constexpr index_t row_begin(index_t o) const { return clamp_to(o * sh - pad_top, h); }
    constexpr index_t row_end(index_t o) const { return clamp_to(o * sh - pad_top + kh, h); }
    /// The input columns [col_begin, col_end) of output column o's window.
    constexpr index_t col_begin(index_t o) const { return clamp_to(o * sw - pad_left, w); }
    constexpr index_t col_end(index_t o) const { return clamp_to(o * sw - pad_left + kw, w); }
    static constexpr index_t clamp_to(index_t v, index_t hi) { return v < 0 ? 0 : v > hi ? hi : v; }
};
constexpr pool2d_geometry pool2d_geometry_of(dims x, index_t kh, index_t kw, index_t sh, index_t sw, bool same) {
    pool2d_geometry g;
    g.kh = kh, g.kw = kw, g.sh = sh, g.sw = sw;
    if (kh <= 0 || kw <= 0 || sh <= 0 || sw <= 0) {
        g.attrs_ok = false;
        return g;
    }
    if (x.rank != 4) {
        g.rank_ok = false;
        return g;
    }
    g.n = x.d[0], g.h = x.d[1], g.w = x.d[2], g.c = x.d[3];
    const conv_axis ah = conv_axis_rule(g.h, kh, sh, 1, same), aw = conv_axis_rule(g.w, kw, sw, 1, same);
    g.oh = ah.out, g.pad_top = ah.pad, g.ow = aw.out, g.pad_left = aw.pad;
    g.window_ok = ah.ok && aw.ok;
    return g;
}
}  // namespace detail

namespace op {
/// What the pooling ops share: the attributes, the geometry and the static
/// and run-time checks of the input.
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct pool2d_attrs {
    static constexpr index_t window_h = KH, window_w = KW, stride_h = SH, stride_w = SW;
    static constexpr padding_mode pad = Pad;
    static constexpr detail::pool2d_geometry geometry(dims x) {
        return detail::pool2d_geometry_of(x, KH, KW, SH, SW, Pad == padding_mode::same);
    }
    // The static rule on input X: the diagnostic of its first failing
    // requirement, or void.
    template <class Op, class X>
    using failure = require::first_failure_t<
        // the window and the strides must be positive
        require::that<(KH > 0 && KW > 0 && SH > 0 && SW > 0), diagnostic::pool_window_and_strides_must_be_positive<Op>>,
        require::floating<Op, value_type_t<X>>,
        // the input must be [N, H, W, C]
        require::that<geometry(shape_t<X>::value).rank_ok, diagnostic::pool_needs_rank_4<Op, shape_t<X>>>,
        // with VALID padding the window is larger than the input; use tf::padding::same
        require::that<geometry(shape_t<X>::value).window_ok, diagnostic::pool_window_larger_than_input<Op, shape_t<X>>>>;
    // The run-time geometry, or a tf::error naming the op, the input and the window.
    static detail::pool2d_geometry checked(std::string_view name, const dims& x) {
        const detail::pool2d_geometry g = geometry(x);
        if (!g.ok())
            typeflow::detail::raise(typeflow::detail::message()
                                    << name << ": input " << x << " with a " << KH << "x" << KW << " window"
                                    << (!g.rank_ok ? " must have rank 4 (NHWC)"
                                                   : ": the window is larger than the input (VALID padding)"));
        return g;
    }
    // The rule of the gradient ops over (x, d): x as for the pool, d of the
    // shape `expected`.
    // (A function, not an alias template: GCC 12 crashes on shape_from_dims
    // of a computed dims in an alias template.)
    template <class Op, class X, class D, dims Expected>
    static constexpr auto gradient_failure() {
        return std::type_identity<require::first_failure_t<
            require::none<failure<Op, X>>, require::same_device<Op, device_t<X>, device_t<D>>,
            require::same_dtype<Op, value_type_t<X>, value_type_t<D>>,
            // the gradient operand's shape differs from the one the op expects
            require::that<detail::conv_out_fits(shape_t<D>::value, Expected),
                          diagnostic::pool_gradient_shape_differs<Op, shape_t<D>, shape_from_dims<Expected>>>>>{};
    }
    static void checked_gradient(std::string_view name, const dims& d, const dims& expected) {
        if (!detail::conv_out_fits(d, expected))
            typeflow::detail::raise(typeflow::detail::message()
                                    << name << ": the gradient " << d << " differs from the expected " << expected);
    }
};

/// max_pool2d(x): [N, H, W, C] -> [N, OH, OW, C], each window's maximum.
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct max_pool2d : pool2d_attrs<KH, KW, SH, SW, Pad> {
    using base = pool2d_attrs<KH, KW, SH, SW, Pad>;
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "max_pool2d";
    template <class X>
    static constexpr auto rule() {
        using failure = typename base::template failure<max_pool2d, X>;
        if constexpr (!std::is_void_v<failure>) {
            return rule_failed<failure>{};
        } else {
            constexpr dims out = base::geometry(shape_t<X>::value).out();
            return result_traits<value_type_t<X>, shape_from_dims<out>, device_t<X>>{};
        }
    }
    template <class X>
    using traits = decltype(rule<X>());
    static dims infer(const dims& x) { return base::checked(name, x).out(); }
};

/// avg_pool2d(x): [N, H, W, C] -> [N, OH, OW, C], each window's mean over
/// its elements inside the input.
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct avg_pool2d : pool2d_attrs<KH, KW, SH, SW, Pad> {
    using base = pool2d_attrs<KH, KW, SH, SW, Pad>;
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "avg_pool2d";
    template <class X>
    static constexpr auto rule() {
        using failure = typename base::template failure<avg_pool2d, X>;
        if constexpr (!std::is_void_v<failure>) {
            return rule_failed<failure>{};
        } else {
            constexpr dims out = base::geometry(shape_t<X>::value).out();
            return result_traits<value_type_t<X>, shape_from_dims<out>, device_t<X>>{};
        }
    }
    template <class X>
    using traits = decltype(rule<X>());
    static dims infer(const dims& x) { return base::checked(name, x).out(); }
};

/// max_pool2d_grad(x, dy): the gradient of max_pool2d(x) with respect to x
/// given dy, the gradient of its output (TensorFlow's MaxPoolGrad).
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct max_pool2d_grad : pool2d_attrs<KH, KW, SH, SW, Pad> {
    using base = pool2d_attrs<KH, KW, SH, SW, Pad>;
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "max_pool2d_grad";
    template <class X, class DY>
    static constexpr auto rule() {
        constexpr dims out = base::geometry(shape_t<X>::value).out();
        using failure = typename decltype(base::template gradient_failure<max_pool2d_grad, X, DY, out>())::type;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<X>, shape_t<X>, device_t<X>>{};
    }
    template <class X, class DY>
    using traits = decltype(rule<X, DY>());
    static dims infer(const dims& x, const dims& dy) {
        base::checked_gradient(name, dy, base::checked(name, x).out());
        return x;
    }
};

/// avg_pool2d_grad(x, dy): the gradient of avg_pool2d(x) with respect to x
/// given dy (x gives only its extents; TensorFlow's AvgPoolGrad).
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct avg_pool2d_grad : pool2d_attrs<KH, KW, SH, SW, Pad> {
    using base = pool2d_attrs<KH, KW, SH, SW, Pad>;
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "avg_pool2d_grad";
    template <class X, class DY>
    static constexpr auto rule() {
        constexpr dims out = base::geometry(shape_t<X>::value).out();
        using failure = typename decltype(base::template gradient_failure<avg_pool2d_grad, X, DY, out>())::type;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<X>, shape_t<X>, device_t<X>>{};
    }
    template <class X, class DY>
    using traits = decltype(rule<X, DY>());
    static dims infer(const dims& x, const dims& dy) {
        base::checked_gradient(name, dy, base::checked(name, x).out());
        return x;
    }
};

/// max_pool2d_grad_grad(x, g): g (x's shape) at each window's maximum of x,
/// [N, OH, OW, C] (TensorFlow's MaxPoolGradGrad).
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct max_pool2d_grad_grad : pool2d_attrs<KH, KW, SH, SW, Pad> {
    using base = pool2d_attrs<KH, KW, SH, SW, Pad>;
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "max_pool2d_grad_grad";
    template <class X, class G>
    static constexpr auto rule() {
        using failure = typename decltype(base::template gradient_failure<max_pool2d_grad_grad, X, G, shape_t<X>::value>())::type;
        if constexpr (!std::is_void_v<failure>) {
            return rule_failed<failure>{};
        } else {
            constexpr dims out = base::geometry(shape_t<X>::value).out();
            return result_traits<value_type_t<X>, shape_from_dims<out>, device_t<X>>{};
        }
    }
    template <class X, class G>
    using traits = decltype(rule<X, G>());
    static dims infer(const dims& x, const dims& g) {
        base::checked_gradient(name, g, x);
        return base::checked(name, x).out();
    }
};

/// Names global_avg_pool2d and global_max_pool2d in diagnostics (their nodes
/// are mean and max reductions).
struct global_avg_pool2d {
    static constexpr std::string_view name = "global_avg_pool2d";
};
struct global_max_pool2d {
    static constexpr std::string_view name = "global_max_pool2d";
};
}  // namespace op

/// Max pooling of x [N, H, W, C] with a KH x KW window (KW defaults to KH),
/// stride the window, VALID padding (Keras' MaxPooling2D): [N, OH, OW, C].
template <index_t KH, index_t KW = KH, operand X>
decltype(auto) max_pool2d(const X& x) {
    return make_node<op::max_pool2d<KH, KW, KH, KW, padding_mode::valid>>(x);
}
/// max_pool2d with stride the window and the given padding.
template <index_t KH, index_t KW = KH, operand X, padding_mode Pad>
decltype(auto) max_pool2d(const X& x, padding_tag<Pad>) {
    return make_node<op::max_pool2d<KH, KW, KH, KW, Pad>>(x);
}
/// max_pool2d with the given strides and padding (VALID by default).
template <index_t KH, index_t KW = KH, operand X, index_t SH, index_t SW, padding_mode Pad = padding_mode::valid>
decltype(auto) max_pool2d(const X& x, strides_tag<SH, SW>, padding_tag<Pad> = {}) {
    return make_node<op::max_pool2d<KH, KW, SH, SW, Pad>>(x);
}

/// Average pooling of x [N, H, W, C] with a KH x KW window, stride the window,
/// VALID padding (Keras' AveragePooling2D): [N, OH, OW, C]. A window's
/// average counts only its elements inside the input.
template <index_t KH, index_t KW = KH, operand X>
decltype(auto) avg_pool2d(const X& x) {
    return make_node<op::avg_pool2d<KH, KW, KH, KW, padding_mode::valid>>(x);
}
/// avg_pool2d with stride the window and the given padding.
template <index_t KH, index_t KW = KH, operand X, padding_mode Pad>
decltype(auto) avg_pool2d(const X& x, padding_tag<Pad>) {
    return make_node<op::avg_pool2d<KH, KW, KH, KW, Pad>>(x);
}
/// avg_pool2d with the given strides and padding (VALID by default).
template <index_t KH, index_t KW = KH, operand X, index_t SH, index_t SW, padding_mode Pad = padding_mode::valid>
decltype(auto) avg_pool2d(const X& x, strides_tag<SH, SW>, padding_tag<Pad> = {}) {
    return make_node<op::avg_pool2d<KH, KW, SH, SW, Pad>>(x);
}

/// The gradient of max_pool2d<KH, KW>(x, ...) with respect to x, given dy;
/// strides and padding as for max_pool2d.
template <index_t KH, index_t KW = KH, operand X, operand DY>
decltype(auto) max_pool2d_grad(const X& x, const DY& dy) {
    return make_node<op::max_pool2d_grad<KH, KW, KH, KW, padding_mode::valid>>(x, dy);
}
template <index_t KH, index_t KW = KH, operand X, operand DY, padding_mode Pad>
decltype(auto) max_pool2d_grad(const X& x, const DY& dy, padding_tag<Pad>) {
    return make_node<op::max_pool2d_grad<KH, KW, KH, KW, Pad>>(x, dy);
}
template <index_t KH, index_t KW = KH, operand X, operand DY, index_t SH, index_t SW,
          padding_mode Pad = padding_mode::valid>
decltype(auto) max_pool2d_grad(const X& x, const DY& dy, strides_tag<SH, SW>, padding_tag<Pad> = {}) {
    return make_node<op::max_pool2d_grad<KH, KW, SH, SW, Pad>>(x, dy);
}

/// The gradient of avg_pool2d<KH, KW>(x, ...) with respect to x, given dy (x
/// gives only its extents); strides and padding as for avg_pool2d.
template <index_t KH, index_t KW = KH, operand X, operand DY>
decltype(auto) avg_pool2d_grad(const X& x, const DY& dy) {
    return make_node<op::avg_pool2d_grad<KH, KW, KH, KW, padding_mode::valid>>(x, dy);
}
template <index_t KH, index_t KW = KH, operand X, operand DY, padding_mode Pad>
decltype(auto) avg_pool2d_grad(const X& x, const DY& dy, padding_tag<Pad>) {
    return make_node<op::avg_pool2d_grad<KH, KW, KH, KW, Pad>>(x, dy);
}
template <index_t KH, index_t KW = KH, operand X, operand DY, index_t SH, index_t SW,
          padding_mode Pad = padding_mode::valid>
decltype(auto) avg_pool2d_grad(const X& x, const DY& dy, strides_tag<SH, SW>, padding_tag<Pad> = {}) {
    return make_node<op::avg_pool2d_grad<KH, KW, SH, SW, Pad>>(x, dy);
}

/// g (x's shape) at the maximum of each max_pool2d<KH, KW>(x, ...) window:
/// the gradient of max_pool2d_grad(x, dy) with respect to dy.
template <index_t KH, index_t KW = KH, operand X, operand G>
decltype(auto) max_pool2d_grad_grad(const X& x, const G& g) {
    return make_node<op::max_pool2d_grad_grad<KH, KW, KH, KW, padding_mode::valid>>(x, g);
}
template <index_t KH, index_t KW = KH, operand X, operand G, padding_mode Pad>
decltype(auto) max_pool2d_grad_grad(const X& x, const G& g, padding_tag<Pad>) {
    return make_node<op::max_pool2d_grad_grad<KH, KW, KH, KW, Pad>>(x, g);
}
template <index_t KH, index_t KW = KH, operand X, operand G, index_t SH, index_t SW,
          padding_mode Pad = padding_mode::valid>
decltype(auto) max_pool2d_grad_grad(const X& x, const G& g, strides_tag<SH, SW>, padding_tag<Pad> = {}) {
    return make_node<op::max_pool2d_grad_grad<KH, KW, SH, SW, Pad>>(x, g);
}

namespace detail {
// The rank and dtype rule of the global pools (the input must be [N, H, W, C]).
template <class Op, class X>
using global_pool_failure =
    require::first_failure_t<require::floating<Op, value_type_t<X>>,
                             require::that<shape_t<X>::rank == 4, diagnostic::pool_needs_rank_4<Op, shape_t<X>>>>;
}  // namespace detail

/// The mean of x [N, H, W, C] over H and W: [N, C] (Keras'
/// GlobalAveragePooling2D); the node is tf::mean<1, 2>(x).
template <operand X>
decltype(auto) global_avg_pool2d(const X& x) {
    if constexpr (detail::is_misuse_v<X>) return detail::first_misuse<X>();
    else if constexpr (!std::is_void_v<detail::global_pool_failure<op::global_avg_pool2d, X>>)
        return detail::misuse<detail::global_pool_failure<op::global_avg_pool2d, X>>();
    else return mean<1, 2>(x);
}
/// The maximum of x [N, H, W, C] over H and W: [N, C] (Keras'
/// GlobalMaxPooling2D); the node is tf::max<1, 2>(x), whose gradient shares
/// among ties as TensorFlow's reduce_max does.
template <operand X>
decltype(auto) global_max_pool2d(const X& x) {
    if constexpr (detail::is_misuse_v<X>) return detail::first_misuse<X>();
    else if constexpr (!std::is_void_v<detail::global_pool_failure<op::global_max_pool2d, X>>)
        return detail::misuse<detail::global_pool_failure<op::global_max_pool2d, X>>();
    else return max<1, 2>(x);
}

/// max_pool2d: dx = max_pool2d_grad(x, g).
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct gradient<op::max_pool2d<KH, KW, SH, SW, Pad>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        return make_node<op::max_pool2d_grad<KH, KW, SH, SW, Pad>>(n.template child<0>(), g);
    }
};

/// avg_pool2d: dx = avg_pool2d_grad(x, g).
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct gradient<op::avg_pool2d<KH, KW, SH, SW, Pad>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        return make_node<op::avg_pool2d_grad<KH, KW, SH, SW, Pad>>(n.template child<0>(), g);
    }
};

/// max_pool2d_grad(x, dy) is linear in dy and piecewise constant in x: with
/// adjoint G (x's shape), d/dx = 0 (where the maxima are unique) and
/// d/ddy = max_pool2d_grad_grad(x, G).
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct gradient<op::max_pool2d_grad<KH, KW, SH, SW, Pad>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I == 0) return (void)n, (void)g, ad::zero{};
        else return make_node<op::max_pool2d_grad_grad<KH, KW, SH, SW, Pad>>(n.template child<0>(), g);
    }
};

/// avg_pool2d_grad(x, dy) is linear in dy; x gives only extents. With adjoint
/// G (x's shape): d/ddy = avg_pool2d(G).
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct gradient<op::avg_pool2d_grad<KH, KW, SH, SW, Pad>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        (void)n;
        if constexpr (I == 0) return (void)g, ad::zero{};
        else return make_node<op::avg_pool2d<KH, KW, SH, SW, Pad>>(g);
    }
};

/// max_pool2d_grad_grad(x, g) is linear in g and piecewise constant in x:
/// with adjoint G (the pooled shape), d/dx = 0 and d/dg = max_pool2d_grad(x, G).
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct gradient<op::max_pool2d_grad_grad<KH, KW, SH, SW, Pad>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I == 0) return (void)n, (void)g, ad::zero{};
        else return make_node<op::max_pool2d_grad<KH, KW, SH, SW, Pad>>(n.template child<0>(), g);
    }
};

}  // namespace typeflow
