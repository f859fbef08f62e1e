// typeflow/expr/ops/conv.hpp — 2-D convolution (NHWC input, HWIO filter) with
// strides, SAME / VALID padding and dilation, as TensorFlow's tf.nn.conv2d;
// and its two gradient ops, conv2d_backprop_input and conv2d_backprop_filter.
//
// The attributes are compile-time, carried in the op tag
// op::conv2d<SH, SW, Pad, DH, DW>:
//   tf::conv2d(x, w)                                      stride 1, VALID, no dilation
//   tf::conv2d(x, w, tf::strides<2, 2>, tf::padding::same)
//   tf::conv2d(x, w, tf::strides<1, 1>, tf::padding::valid, tf::dilations<2, 2>)
// x: [N, H, W, C_in] (any extent may be tf::dyn), w: [KH, KW, C_in, C_out];
// the result is [N, OH, OW, C_out] with TensorFlow's rules (effective kernel
// extent EK = (K - 1) * D + 1):
//   SAME:  OH = ceil(H / SH); the padding max((OH - 1) * SH + EK - H, 0) is
//          split with the extra row at the bottom (and column at the right);
//   VALID: OH = ceil((H - EK + 1) / SH), and H >= EK.
//
// The backprop ops take (x, w, dy), like TensorFlow's Conv2DBackpropInput /
// Conv2DBackpropFilter (which take the sizes of x or w as a tensor): the
// child whose gradient is computed gives only its extents. They are linear in
// the other two, so their own gradients are convolutions and backprops again.
// Kernels: backend/eigen/ops/conv.hpp (im2col and the GEMM), and
// backend/reference/ops/conv.hpp (naive loops).
#pragma once
#include <string_view>

#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow::diagnostic {
/// The input and filter of a convolution are not rank 4 (NHWC and HWIO).
template <class Op, class InputShape, class FilterShape>
struct conv_needs_rank_4;
/// The input's channels (last extent) differ from the filter's (third extent).
template <class Op, class InputShape, class FilterShape>
struct conv_input_channels_differ_from_filter;
/// With VALID padding the (dilated) filter window is larger than the input.
template <class Op, class InputShape, class FilterShape>
struct conv_window_larger_than_input;
/// A backprop op's output gradient does not have the convolution's output shape.
template <class Op, class OutBackpropShape, class ConvOutputShape>
struct conv_out_backprop_shape_differs;
}  // namespace typeflow::diagnostic

namespace typeflow {

/// Padding of a convolution: TensorFlow's "SAME" and "VALID".
enum class padding_mode { valid, same };
template <padding_mode P>
struct padding_tag {
    static constexpr padding_mode value = P;
};
namespace padding {
inline constexpr padding_tag<padding_mode::same> same{};
inline constexpr padding_tag<padding_mode::valid> valid{};
}  // namespace padding

/// Strides and dilations of a convolution (height, width): tf::strides<2, 2>.
template <index_t H, index_t W>
struct strides_tag {};
template <index_t H, index_t W>
inline constexpr strides_tag<H, W> strides{};
template <index_t H, index_t W>
struct dilations_tag {};
template <index_t H, index_t W>
inline constexpr dilations_tag<H, W> dilations{};

namespace detail {
/// The geometry of one convolution: input [n, h, w, c], filter [kh, kw, c, co],
/// output [n, oh, ow, co], strides, dilations and the top / left padding.
struct conv2d_geometry {
    index_t n = 0, h = 0, w = 0, c = 0, kh = 0, kw = 0, co = 0, oh = 0, ow = 0;
    index_t sh = 1, sw = 1, dh = 1, dw = 1, pad_top = 0, pad_left = 0;
    bool rank_ok = true, channels_ok = true, window_ok = true;
    constexpr bool ok() const { return rank_ok && channels_ok && window_ok; }
    constexpr dims out() const { return dims{n, oh, ow, co}; }
};
// Output extent and leading padding along one axis (dyn when in or k is dyn).
struct conv_axis {
    index_t out = dyn, pad = 0;
    bool ok = true;
};
constexpr conv_axis conv_axis_rule(index_t in, index_t k, index_t s, index_t d, bool same) {
    conv_axis a;
    if (in == dyn || k == dyn) return a;
    const index_t ek = (k - 1) * d + 1;
    if (same) {
        a.out = (in + s - 1) / s;
        const index_t total = (a.out - 1) * s + ek - in;
        a.pad = total > 0 ? total / 2 : 0;  // the odd row goes to the bottom / right
    } else {
        a.ok = in >= ek;
        a.out = a.ok ? (in - ek + s) / s : 0;
    }
    return a;
}
constexpr conv2d_geometry conv2d_geometry_of(dims x, dims f, index_t sh, index_t sw, bool same, index_t dh,
                                             index_t dw) {
    conv2d_geometry g;
    g.sh = sh, g.sw = sw, g.dh = dh, g.dw = dw;
    if (x.rank != 4 || f.rank != 4) {
        g.rank_ok = false;
        return g;
    }
    g.n = x.d[0], g.h = x.d[1], g.w = x.d[2], g.c = x.d[3];
    g.kh = f.d[0], g.kw = f.d[1], g.co = f.d[3];
    if (g.c != f.d[2] && g.c != dyn && f.d[2] != dyn) g.channels_ok = false;
    const conv_axis ah = conv_axis_rule(g.h, g.kh, sh, dh, same), aw = conv_axis_rule(g.w, g.kw, sw, dw, same);
    g.oh = ah.out, g.pad_top = ah.pad, g.ow = aw.out, g.pad_left = aw.pad;
    g.window_ok = ah.ok && aw.ok;
    return g;
}
// dy's extents fit the convolution's output (dyn meets anything).
constexpr bool conv_out_fits(dims dy, dims out) {
    if (dy.rank != 4) return false;
    for (std::size_t i = 0; i < 4; ++i)
        if (dy.d[i] != out.d[i] && dy.d[i] != dyn && out.d[i] != dyn) return false;
    return true;
}
}  // namespace detail

namespace op {
/// What the three convolution ops share: the attributes, the geometry and
/// the static and run-time checks of input and filter.
template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct conv2d_attrs {
    static_assert(SH > 0 && SW > 0, "typeflow: conv2d: strides must be positive");
    static_assert(DH > 0 && DW > 0, "typeflow: conv2d: dilations must be positive");
    static constexpr index_t stride_h = SH, stride_w = SW, dilation_h = DH, dilation_w = DW;
    static constexpr padding_mode pad = Pad;
    static constexpr detail::conv2d_geometry geometry(dims x, dims f) {
        return detail::conv2d_geometry_of(x, f, SH, SW, Pad == padding_mode::same, DH, DW);
    }
    // The static rule on input X and filter F: the diagnostic of its first
    // failing requirement, or void.
    template <class Op, class X, class F>
    using failure = require::first_failure_t<
        require::same_device<Op, device_t<X>, device_t<F>>, require::same_dtype<Op, value_type_t<X>, value_type_t<F>>,
        require::floating<Op, value_type_t<X>>,
        // the input must be [N, H, W, C_in] and the filter [KH, KW, C_in, C_out]
        require::that<geometry(shape_t<X>::value, shape_t<F>::value).rank_ok, diagnostic::conv_needs_rank_4<Op, shape_t<X>, shape_t<F>>>,
        // the input's channels (last extent) differ from the filter's C_in (third extent)
        require::that<geometry(shape_t<X>::value, shape_t<F>::value).channels_ok,
                      diagnostic::conv_input_channels_differ_from_filter<Op, shape_t<X>, shape_t<F>>>,
        // with VALID padding the (dilated) filter is larger than the input; use tf::padding::same
        require::that<geometry(shape_t<X>::value, shape_t<F>::value).window_ok,
                      diagnostic::conv_window_larger_than_input<Op, shape_t<X>, shape_t<F>>>>;
    // The run-time geometry, or a tf::error naming the op and both extents.
    static detail::conv2d_geometry checked(std::string_view name, const dims& x, const dims& f) {
        const detail::conv2d_geometry g = geometry(x, f);
        if (!g.ok())
            typeflow::detail::raise(typeflow::detail::message()
                                    << name << ": input " << x << " and filter " << f
                                    << (!g.rank_ok        ? " must both have rank 4"
                                        : !g.channels_ok ? ": the input's channels differ from the filter's"
                                                         : ": the filter window is larger than the input (VALID padding)"));
        return g;
    }
};

/// conv2d(x, w): [N, H, W, C_in] * [KH, KW, C_in, C_out] -> [N, OH, OW, C_out].
template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct conv2d : conv2d_attrs<SH, SW, Pad, DH, DW> {
    using base = conv2d_attrs<SH, SW, Pad, DH, DW>;
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "conv2d";
    template <class X, class F>
    static constexpr auto rule() {
        using failure = typename base::template failure<conv2d, X, F>;
        if constexpr (!std::is_void_v<failure>) {
            return rule_failed<failure>{};
        } else {
            constexpr dims out = base::geometry(shape_t<X>::value, shape_t<F>::value).out();
            return result_traits<value_type_t<X>, shape_from_dims<out>, device_t<X>>{};
        }
    }
    template <class X, class F>
    using traits = decltype(rule<X, F>());
    static dims infer(const dims& x, const dims& f) { return base::checked(name, x, f).out(); }
};

// The rule of both backprop ops over (x, w, dy): x and w as for conv2d, dy
// of the convolution's output shape.
// (A function, not an alias template: GCC 12 crashes on shape_from_dims of a
// computed dims in an alias template.)
template <class Op, class Base, class X, class F, class DY>
constexpr auto conv2d_backprop_failure_of() {
    constexpr dims out = Base::geometry(shape_t<X>::value, shape_t<F>::value).out();
    return std::type_identity<require::first_failure_t<
        require::none<typename Base::template failure<Op, X, F>>, require::same_device<Op, device_t<X>, device_t<DY>>,
        require::same_dtype<Op, value_type_t<X>, value_type_t<DY>>,
        // the output gradient's shape differs from the convolution's output
        require::that<detail::conv_out_fits(shape_t<DY>::value, out),
                      diagnostic::conv_out_backprop_shape_differs<Op, shape_t<DY>, shape_from_dims<out>>>>>{};
}
template <class Op, class Base, class X, class F, class DY>
using conv2d_backprop_failure = typename decltype(conv2d_backprop_failure_of<Op, Base, X, F, DY>())::type;
inline void conv2d_backprop_infer(std::string_view name, const detail::conv2d_geometry& g, const dims& dy) {
    if (!detail::conv_out_fits(dy, g.out()))
        typeflow::detail::raise(typeflow::detail::message()
                                << name << ": the output gradient " << dy << " differs from the convolution's output " << g.out());
}

/// conv2d_backprop_input(x, w, dy): the gradient of conv2d(x, w) with respect
/// to x given dy, the gradient of its output (x gives only its extents).
template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct conv2d_backprop_input : conv2d_attrs<SH, SW, Pad, DH, DW> {
    using base = conv2d_attrs<SH, SW, Pad, DH, DW>;
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "conv2d_backprop_input";
    template <class X, class F, class DY>
    static constexpr auto rule() {
        using failure = conv2d_backprop_failure<conv2d_backprop_input, base, X, F, DY>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<X>, shape_t<X>, device_t<X>>{};
    }
    template <class X, class F, class DY>
    using traits = decltype(rule<X, F, DY>());
    static dims infer(const dims& x, const dims& f, const dims& dy) {
        conv2d_backprop_infer(name, base::checked(name, x, f), dy);
        return x;
    }
};

/// conv2d_backprop_filter(x, w, dy): the gradient of conv2d(x, w) with
/// respect to w given dy (w gives only its extents).
template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct conv2d_backprop_filter : conv2d_attrs<SH, SW, Pad, DH, DW> {
    using base = conv2d_attrs<SH, SW, Pad, DH, DW>;
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "conv2d_backprop_filter";
    template <class X, class F, class DY>
    static constexpr auto rule() {
        using failure = conv2d_backprop_failure<conv2d_backprop_filter, base, X, F, DY>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<F>, shape_t<F>, device_t<F>>{};
    }
    template <class X, class F, class DY>
    using traits = decltype(rule<X, F, DY>());
    static dims infer(const dims& x, const dims& f, const dims& dy) {
        conv2d_backprop_infer(name, base::checked(name, x, f), dy);
        return f;
    }
};
}  // namespace op

/// 2-D convolution of x [N, H, W, C_in] with filter w [KH, KW, C_in, C_out]
/// (TensorFlow's tf.nn.conv2d, NHWC): [N, OH, OW, C_out].
template <operand X, operand F, index_t SH = 1, index_t SW = 1, padding_mode Pad = padding_mode::valid,
          index_t DH = 1, index_t DW = 1>
decltype(auto) conv2d(const X& x, const F& w, strides_tag<SH, SW> = {}, padding_tag<Pad> = {}, dilations_tag<DH, DW> = {}) {
    return make_node<op::conv2d<SH, SW, Pad, DH, DW>>(x, w);
}

/// conv2d(x, w, padding) and conv2d(x, w, padding, dilations): stride 1.
template <operand X, operand F, padding_mode Pad, index_t DH = 1, index_t DW = 1>
decltype(auto) conv2d(const X& x, const F& w, padding_tag<Pad>, dilations_tag<DH, DW> = {}) {
    return make_node<op::conv2d<1, 1, Pad, DH, DW>>(x, w);
}

/// The gradient of conv2d(x, w, ...) with respect to x, given dy (x gives its extents).
template <operand X, operand F, operand DY, index_t SH = 1, index_t SW = 1,
          padding_mode Pad = padding_mode::valid, index_t DH = 1, index_t DW = 1>
decltype(auto) conv2d_backprop_input(const X& x, const F& w, const DY& dy, strides_tag<SH, SW> = {}, padding_tag<Pad> = {},
                           dilations_tag<DH, DW> = {}) {
    return make_node<op::conv2d_backprop_input<SH, SW, Pad, DH, DW>>(x, w, dy);
}

/// The gradient of conv2d(x, w, ...) with respect to w, given dy (w gives its extents).
template <operand X, operand F, operand DY, index_t SH = 1, index_t SW = 1,
          padding_mode Pad = padding_mode::valid, index_t DH = 1, index_t DW = 1>
decltype(auto) conv2d_backprop_filter(const X& x, const F& w, const DY& dy, strides_tag<SH, SW> = {}, padding_tag<Pad> = {},
                            dilations_tag<DH, DW> = {}) {
    return make_node<op::conv2d_backprop_filter<SH, SW, Pad, DH, DW>>(x, w, dy);
}

/// conv2d: dx = conv2d_backprop_input(x, w, g), dw = conv2d_backprop_filter(x, w, g).
template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct gradient<op::conv2d<SH, SW, Pad, DH, DW>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I == 0)
            return make_node<op::conv2d_backprop_input<SH, SW, Pad, DH, DW>>(n.template child<0>(), n.template child<1>(), g);
        else
            return make_node<op::conv2d_backprop_filter<SH, SW, Pad, DH, DW>>(n.template child<0>(), n.template child<1>(), g);
    }
};

/// conv2d_backprop_input(x, w, dy) is <conv2d(., w), dy>'s gradient: linear in
/// w and dy; x gives only extents. With adjoint G (x's shape):
/// d/dw = conv2d_backprop_filter(G, w, dy), d/ddy = conv2d(G, w).
template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct gradient<op::conv2d_backprop_input<SH, SW, Pad, DH, DW>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        (void)n, (void)g;
        if constexpr (I == 0) return ad::zero{};
        else if constexpr (I == 1)
            return make_node<op::conv2d_backprop_filter<SH, SW, Pad, DH, DW>>(g, n.template child<1>(), n.template child<2>());
        else return make_node<op::conv2d<SH, SW, Pad, DH, DW>>(g, n.template child<1>());
    }
};

/// conv2d_backprop_filter(x, w, dy): linear in x and dy; w gives only extents.
/// With adjoint G (w's shape): d/dx = conv2d_backprop_input(x, G, dy), d/ddy = conv2d(x, G).
template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct gradient<op::conv2d_backprop_filter<SH, SW, Pad, DH, DW>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I == 0)
            return make_node<op::conv2d_backprop_input<SH, SW, Pad, DH, DW>>(n.template child<0>(), g, n.template child<2>());
        else if constexpr (I == 1) return (void)n, (void)g, ad::zero{};
        else return make_node<op::conv2d<SH, SW, Pad, DH, DW>>(n.template child<0>(), g);
    }
};

}  // namespace typeflow
