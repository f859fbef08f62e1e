// typeflow/expr/ops/array.hpp — the array ops of TensorFlow: concat, slice,
// split, stack, unstack, pad, tile and flatten, with the ops their gradients
// are built from.
//
// Every attribute is a compile-time template argument, so every result has a
// static shape (an extent is tf::dyn where an operand's is):
//   tf::concat<1>(a, b, c)                        tf.concat([a, b, c], 1); negative axes count from the end
//   tf::slice<1, 0>(x, tf::sizes<2, -1>)          tf.slice(x, [1, 0], [2, -1]); -1: to the end
//   tf::slice<1, 0>(x)                            from [1, 0] to the end
//   auto [a, b] = tf::split<1, 2>(x);             tf.split(x, 2, axis=1): 2 equal parts
//   auto [a, b] = tf::split<1>(x, tf::sizes<2, -1>);  sizes (one may be -1: the rest)
//   tf::stack<0>(a, b)                            tf.stack([a, b], 0)
//   auto [a, b, c] = tf::unstack<0>(x);           tf.unstack(x, axis=0) (a static extent)
//   tf::pad<tf::paddings<{1, 1}, {2, 0}>>(x)      tf.pad(x, [[1, 1], [2, 0]]); tf::pad<P>(x, 1.5f) pads with 1.5
//   tf::pad<P, tf::pad_mode::reflect>(x)          "REFLECT" (and pad_mode::symmetric)
//   tf::tile<2, 3>(x)                             tf.tile(x, [2, 3])
//   tf::flatten(x)                                [N, d1, d2, ...] -> [N, d1 * d2 * ...] (a view)
//
// Kernel ops (each has a CPU and a reference kernel):
//   op::concat<Axis>                the concatenation;
//   window ops, which copy a box of their first child (its begin and size
//   computed from the extents of all children): op::slice, op::split_part
//   (one part of a split), op::concat_part (the part of a concat's adjoint
//   that belongs to one operand), op::unpad (the inside of a constant pad);
//   op::place<W>(h, c...)          the inverse of window op W applied to c...:
//                                   h inside zeros of the extents of c[0];
//   op::pad<P, Mode>, op::pad_grad<P, Mode> (the adjoint of REFLECT / SYMMETRIC);
//   op::tile<M...>, op::tile_grad<M...> (the sum of the tiles).
// The gradients: concat -> concat_part, window W -> place<W> -> W, constant
// pad -> unpad -> pad, reflect pad -> pad_grad -> pad, tile -> tile_grad ->
// tile, flatten -> reshape_like. split and stack are built from these.
// Kernels: backend/eigen/ops/array.hpp (memcpy of contiguous runs, split over
// the session's threads) and backend/reference/ops/array.hpp (naive loops).
#pragma once
#include <array>
#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <typeflow/core/error.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/expr/ops/reshape.hpp>

namespace typeflow::diagnostic {
/// The operands of concat or stack have different ranks.
template <class Op, class... Shapes>
struct operand_ranks_differ;
/// The operands of concat have different extents off the concatenation axis.
template <class Op, class... Shapes>
struct extents_differ_off_axis;
/// The operands of stack have different shapes.
template <class Op, class... Shapes>
struct stacked_shapes_differ;
/// An op's number of per-axis attributes (begins, sizes, paddings, multiples)
/// differs from its operand's rank.
template <class Op, class Shape>
struct attribute_count_differs_from_rank;
/// slice: the box (begin, size) reaches outside the operand.
template <class Op, class Shape>
struct slice_outside_operand;
/// split: the axis' extent is not a multiple of the number of parts.
template <class Op, class Shape>
struct extent_not_divisible_into_parts;
/// split: the sizes do not add up to the axis' extent.
template <class Op, class Shape>
struct split_sizes_do_not_add_up;
/// unstack: the axis' extent must be static (it is the number of results).
template <class Op, class Shape>
struct extent_must_be_static;
/// pad REFLECT / SYMMETRIC: a padding is larger than the operand's extent allows.
template <class Op, class Shape>
struct paddings_too_large;
}  // namespace typeflow::diagnostic

namespace typeflow {

/// Extents of a slice (tf::slice<B...>(x, tf::sizes<S...>)) or the part sizes
/// of a split; -1 means "the rest".
template <index_t... S>
struct sizes_tag {
    static_assert(((S >= -1) && ...), "typeflow: sizes: an extent must be >= 0, or -1 (the rest)");
};
template <index_t... S>
inline constexpr sizes_tag<S...> sizes{};

/// A split into N parts of equal extent (tf::split<Axis, N>).
template <std::size_t N>
struct equal_parts {};

/// The padding of one axis: elements added before and after.
struct pad_width {
    index_t before = 0, after = 0;
};
/// The paddings of a pad, one {before, after} per axis: tf::paddings<{1, 1}, {2, 0}>
/// (tf::paddings<tf::pad_width{1, 1}, tf::pad_width{2, 0}> where a compiler
/// takes no braced template arguments, as Clang 14).
template <pad_width... P>
struct paddings {
    static_assert(((P.before >= 0 && P.after >= 0) && ...), "typeflow: pad: paddings must be >= 0");
    static constexpr std::size_t rank = sizeof...(P);
    static constexpr std::array<pad_width, sizeof...(P)> value{P...};
};

/// How a pad fills: TensorFlow's "CONSTANT", "REFLECT" (the edge not repeated)
/// and "SYMMETRIC" (the edge repeated).
enum class pad_mode { constant, reflect, symmetric };

namespace detail {
/// A box inside a tensor: `size` elements from `begin` along each axis (an
/// entry may be dyn in static shapes).
struct window_box {
    dims begin, size;
};

inline void print_list(message& m, const index_t* v, std::size_t n) {
    m << "[";
    for (std::size_t i = 0; i < n; ++i) {
        if (i) m << ",";
        m << static_cast<long long>(v[i]);
    }
    m << "]";
}

constexpr bool axis_in_range(index_t axis, std::size_t rank) {
    const index_t a = normalize_axis(axis, rank);
    return a >= 0 && a < static_cast<index_t>(rank);
}
constexpr index_t add_extents(index_t a, index_t b) { return a == dyn || b == dyn ? dyn : a + b; }

// ---- concat ----
struct concat_result {
    dims out;
    bool rank_ok = true, axis_ok = true, extents_ok = true;
    constexpr bool ok() const { return rank_ok && axis_ok && extents_ok; }
};
/// The extents of the concatenation of n operands on `axis` (dyn meets anything).
constexpr concat_result concat_dims(const dims* in, std::size_t n, index_t axis) {
    concat_result r;
    const std::size_t rank = in[0].rank;
    for (std::size_t k = 1; k < n; ++k)
        if (in[k].rank != rank) r.rank_ok = false;
    if (!r.rank_ok) return r;
    if (!axis_in_range(axis, rank)) {
        r.axis_ok = false;
        return r;
    }
    const auto ax = static_cast<std::size_t>(normalize_axis(axis, rank));
    r.out.rank = rank;
    for (std::size_t a = 0; a < rank; ++a) {
        index_t e = a == ax ? 0 : dyn;
        for (std::size_t k = 0; k < n; ++k) {
            const index_t x = in[k].d[a];
            if (a == ax) e = add_extents(e, x);
            else if (e == dyn) e = x;
            else if (x != dyn && x != e) r.extents_ok = false;
        }
        r.out.d[a] = e;
    }
    return r;
}

// ---- slice ----
struct slice_result {
    window_box box;
    bool rank_ok = true, inside = true;
};
/// The box of slice(x, begin, size): size -1 runs to the end.
constexpr slice_result slice_box(dims x, const index_t* begin, std::size_t nb, const index_t* size, std::size_t ns) {
    slice_result r;
    if (nb != x.rank || ns != x.rank) {
        r.rank_ok = false;
        return r;
    }
    r.box.begin.rank = r.box.size.rank = x.rank;
    for (std::size_t a = 0; a < x.rank; ++a) {
        const index_t e = x.d[a], b = begin[a], s = size[a];
        r.box.begin.d[a] = b;
        if (s == -1) {
            r.box.size.d[a] = e == dyn ? dyn : e - b;
            if (e != dyn && b > e) r.inside = false;
        } else {
            r.box.size.d[a] = s;
            if (e != dyn && b + s > e) r.inside = false;
        }
    }
    if (!r.inside) r.box.size = x;  // keeps the static shape well-formed
    return r;
}

// ---- split ----
struct split_range {
    index_t begin = 0, size = 0;
    bool ok = true;
};
template <class Parts>
struct split_parts;
template <std::size_t N>
struct split_parts<equal_parts<N>> {
    static constexpr std::size_t count = N;
    /// Part k of an axis of extent e (dyn when e is).
    static constexpr split_range range(std::size_t k, index_t e) {
        if (e == dyn) return {dyn, dyn, true};
        const index_t len = e / static_cast<index_t>(N);
        return {static_cast<index_t>(k) * len, len, e % static_cast<index_t>(N) == 0};
    }
};
template <index_t... S>
struct split_parts<sizes_tag<S...>> {
    static constexpr std::size_t count = sizeof...(S);
    static constexpr std::array<index_t, sizeof...(S)> sizes{S...};
    static_assert(((S == -1 ? 1 : 0) + ... + 0) <= 1, "typeflow: split: at most one size may be -1");
    static constexpr split_range range(std::size_t k, index_t e) {
        index_t known = 0;
        bool rest = false;
        for (index_t s : sizes) {
            if (s == -1) rest = true;
            else known += s;
        }
        const index_t rest_size = rest && e != dyn ? e - known : dyn;
        split_range r;
        r.ok = e == dyn || (rest ? rest_size >= 0 : known == e);
        for (std::size_t i = 0; i < k; ++i) r.begin = add_extents(r.begin, sizes[i] == -1 ? rest_size : sizes[i]);
        r.size = sizes[k] == -1 ? rest_size : sizes[k];
        if (!r.ok) r.begin = 0, r.size = 0;
        return r;
    }
};

// ---- pad ----
/// Where output position i along an axis of extent e padded by `before`
/// reads its input: -1 for a constant, else the (reflected) input position.
constexpr index_t pad_source(pad_mode m, index_t i, index_t before, index_t e) {
    index_t j = i - before;
    if (j >= 0 && j < e) return j;
    if (m == pad_mode::constant) return -1;
    if (m == pad_mode::reflect) return j < 0 ? -j : 2 * (e - 1) - j;
    return j < 0 ? -j - 1 : 2 * e - 1 - j;
}
/// The output positions along one axis that a REFLECT / SYMMETRIC pad reads
/// from input position j (the position itself first, at most 3): what its
/// adjoint sums (pad_grad's kernels on every backend).
struct pad_positions {
    std::array<index_t, 3> at{};
    int n = 0;
};
constexpr pad_positions pad_sources_of(pad_mode m, index_t j, index_t before, index_t after, index_t e) {
    pad_positions p;
    p.at[p.n++] = j + before;
    const index_t shift = m == pad_mode::reflect ? 0 : 1;  // symmetric repeats the edge
    // left: output o < before reads before - o - shift
    const index_t left = before - j - shift;
    if (left >= 0 && left < before) p.at[p.n++] = left;
    // right: output o >= before + e reads 2e - 2 + shift - (o - before)
    const index_t right = before + 2 * e - 2 + shift - j;
    if (right >= before + e && right < before + e + after) p.at[p.n++] = right;
    return p;
}
struct pad_result {
    dims out;
    bool rank_ok = true, fits = true;
};
constexpr pad_result pad_dims(dims x, const pad_width* p, std::size_t n, pad_mode m) {
    pad_result r;
    if (n != x.rank) {
        r.rank_ok = false;
        return r;
    }
    r.out.rank = x.rank;
    for (std::size_t a = 0; a < x.rank; ++a) {
        const index_t e = x.d[a];
        r.out.d[a] = e == dyn ? dyn : e + p[a].before + p[a].after;
        if (e == dyn || m == pad_mode::constant) continue;
        const index_t most = m == pad_mode::reflect ? e - 1 : e;
        if ((p[a].before > most || p[a].after > most) && (p[a].before > 0 || p[a].after > 0)) r.fits = false;
    }
    return r;
}

// ---- tile ----
constexpr dims tiled_dims(dims x, const index_t* m) {
    dims o = x;
    for (std::size_t a = 0; a < x.rank; ++a) o.d[a] = m[a] == 0 ? 0 : x.d[a] == dyn ? dyn : x.d[a] * m[a];
    return o;
}

// ---- flatten ----
constexpr dims flattened_dims(dims x) {
    index_t inner = 1;
    bool unknown = false;
    for (std::size_t a = 1; a < x.rank; ++a) {
        if (x.d[a] == 0) return dims{x.d[0], 0};
        if (x.d[a] == dyn) unknown = true;
        else inner *= x.d[a];
    }
    return dims{x.d[0], unknown ? dyn : inner};
}

template <class Op, class... C, std::size_t... J>
auto make_node_of_children(const auto& n, std::index_sequence<J...>, const C&... first) {
    return make_node<Op>(first..., n.template child<J>()...);
}
}  // namespace detail

namespace op {

/// concat<Axis>(c...): the operands joined along Axis.
template <index_t Axis>
struct concat {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "concat";
    static constexpr index_t axis = Axis;
    template <class C0, class... C>
    static constexpr auto rule() {
        constexpr dims in[] = {shape_t<C0>::value, shape_t<C>::value...};
        constexpr detail::concat_result r = detail::concat_dims(in, 1 + sizeof...(C), Axis);
        using failure = require::first_failure_t<
            require::same_device<concat, device_t<C0>, device_t<C>>..., require::same_dtype<concat, value_type_t<C0>, value_type_t<C>>...,
            // the operands have different ranks
            require::that<r.rank_ok, diagnostic::operand_ranks_differ<concat, shape_t<C0>, shape_t<C>...>>,
            // the axis is out of range for the operands' rank
            require::that<!r.rank_ok || r.axis_ok, diagnostic::axis_out_of_range<concat, shape_t<C0>>>,
            // the operands' extents differ on an axis other than the concatenation axis
            require::that<!r.rank_ok || !r.axis_ok || r.extents_ok, diagnostic::extents_differ_off_axis<concat, shape_t<C0>, shape_t<C>...>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<C0>, shape_from_dims<r.out>, device_t<C0>>{};
    }
    template <class... C>
    using traits = decltype(rule<operand_sig_t<C>...>());
    template <class... D>
        requires(std::is_same_v<D, dims> && ...)
    static dims infer(const D&... d) {
        const dims in[] = {d...};
        const detail::concat_result r = detail::concat_dims(in, sizeof...(D), Axis);
        if (!r.ok()) {
            typeflow::detail::message m;
            m << "concat on axis " << static_cast<long long>(Axis) << ": the operands";
            for (std::size_t k = 0; k < sizeof...(D); ++k) m << (k ? ", " : " ") << in[k];
            typeflow::detail::raise(m << (!r.rank_ok  ? " have different ranks"
                                          : !r.axis_ok ? " have no such axis"
                                                       : " differ off the concatenation axis"));
        }
        return r.out;
    }
};

/// slice<begin_tag, sizes_tag>(x): the box of x from B with extents S (-1: to the end).
template <class Begin, class Sizes>
struct slice;
template <index_t... B>
struct begin_tag {};
template <index_t... B, index_t... S>
struct slice<begin_tag<B...>, sizes_tag<S...>> {
    static_assert(((B >= 0) && ...), "typeflow: slice: begin must be >= 0");
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "slice";
    static constexpr std::string_view place_name = "slice_grad";  // of place<slice>
    static constexpr std::array<index_t, sizeof...(B) + 1> begin{B..., 0};
    static constexpr std::array<index_t, sizeof...(S) + 1> size{S..., 0};
    static constexpr detail::slice_result of(dims x) {
        return detail::slice_box(x, begin.data(), sizeof...(B), size.data(), sizeof...(S));
    }
    /// The box copied (window op protocol).
    static constexpr detail::window_box window(dims x) { return of(x).box; }
    template <class X>
    static constexpr auto rule() {
        constexpr detail::slice_result r = of(shape_t<X>::value);
        using failure = require::first_failure_t<
            // give one begin and one size per axis of the operand
            require::that<r.rank_ok, diagnostic::attribute_count_differs_from_rank<slice, shape_t<X>>>,
            // begin + size exceeds the operand's extent
            require::that<!r.rank_ok || r.inside, diagnostic::slice_outside_operand<slice, shape_t<X>>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<X>, shape_from_dims<r.box.size>, device_t<X>>{};
    }
    template <class X>
    using traits = decltype(rule<operand_sig_t<X>>());
    static dims infer(const dims& x) {
        const detail::slice_result r = of(x);
        if (!r.rank_ok || !r.inside) {
            typeflow::detail::message m;
            m << "slice: begin ";
            detail::print_list(m, begin.data(), sizeof...(B));
            m << " and size ";
            detail::print_list(m, size.data(), sizeof...(S));
            typeflow::detail::raise(m << " do not fit the operand's shape " << x);
        }
        return r.box.size;
    }
};

/// split_part<Axis, K, Parts>(x): part K of a split of x along Axis
/// (Parts: equal_parts<N> or sizes_tag<S...>).
template <index_t Axis, std::size_t K, class Parts>
struct split_part;
/// Names the split in diagnostics (split<Axis, Parts>).
template <index_t Axis, class Parts>
struct split {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "split";
};
template <index_t Axis, std::size_t K, class Parts>
struct split_part {
    using parts = detail::split_parts<Parts>;
    static_assert(K < parts::count);
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "split";
    static constexpr std::string_view place_name = "split_grad";
    static constexpr detail::window_box window(dims x) {
        detail::window_box w{x, x};
        for (std::size_t a = 0; a < x.rank; ++a) w.begin.d[a] = 0;
        if (!detail::axis_in_range(Axis, x.rank)) return w;
        const auto ax = static_cast<std::size_t>(normalize_axis(Axis, x.rank));
        const detail::split_range r = parts::range(K, x.d[ax]);
        w.begin.d[ax] = r.begin;
        w.size.d[ax] = r.size;
        return w;
    }
    template <class X>
    static constexpr auto rule() {
        using S = shape_t<X>;
        using Diag = split<Axis, Parts>;
        constexpr bool axis_ok = detail::axis_in_range(Axis, S::rank);
        constexpr bool fits = !axis_ok || parts::range(0, S::value.d[normalize_axis(Axis, S::rank)]).ok;
        using failure = require::first_failure_t<
            // the axis is out of range
            require::that<axis_ok, diagnostic::axis_out_of_range<Diag, S>>,
            // the parts do not divide the axis' extent
            require::that<fits, meta::if_t<std::is_same_v<Parts, equal_parts<parts::count>>,
                                                   diagnostic::extent_not_divisible_into_parts<Diag, S>,
                                                   diagnostic::split_sizes_do_not_add_up<Diag, S>>>>;
        if constexpr (!std::is_void_v<failure>) {
            return rule_failed<failure>{};
        } else {
            constexpr dims out = window(S::value).size;
            return result_traits<value_type_t<X>, shape_from_dims<out>, device_t<X>>{};
        }
    }
    template <class X>
    using traits = decltype(rule<operand_sig_t<X>>());
    static dims infer(const dims& x) {
        const bool axis_ok = detail::axis_in_range(Axis, x.rank);
        if (!axis_ok || !parts::range(K, x.d[static_cast<std::size_t>(normalize_axis(Axis, x.rank))]).ok) {
            typeflow::detail::message m;
            m << "split: axis " << static_cast<long long>(Axis) << " of shape " << x;
            if constexpr (std::is_same_v<Parts, equal_parts<parts::count>>) m << " does not split into " << parts::count << " equal parts";
            else {
                m << " does not split into the sizes ";
                detail::print_list(m, parts::sizes.data(), parts::count);
            }
            typeflow::detail::raise(m);
        }
        return window(x).size;
    }
};

/// concat_part<Axis, I>(g, c0, ..., cI): the part of g, the adjoint of
/// concat<Axis>(c0, ...), that belongs to operand I (c... give only extents).
template <index_t Axis, std::size_t I>
struct concat_part {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "concat_grad";
    static constexpr std::string_view place_name = "concat_grad_grad";
    template <class... D>
    static constexpr detail::window_box window(dims g, const D&... c) {
        const dims in[] = {c...};
        detail::window_box w{g, in[I]};
        for (std::size_t a = 0; a < g.rank; ++a) w.begin.d[a] = 0;
        const auto ax = static_cast<std::size_t>(normalize_axis(Axis, g.rank));
        for (std::size_t k = 0; k != I; ++k) w.begin.d[ax] = detail::add_extents(w.begin.d[ax], in[k].d[ax]);
        return w;
    }
    template <class G, class... C>
    using traits = result_traits<value_type_t<G>, meta::at_t<I, shape_t<C>...>, device_t<G>>;
    template <class... D>
        requires(std::is_same_v<D, dims> && ...)
    static dims infer(const dims&, const D&... c) {
        const dims in[] = {c...};
        return in[I];
    }
};

/// unpad<P>(g): the inside of a constant pad<P> (its adjoint's part that
/// belongs to the operand).
template <class P>
struct unpad {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "pad_grad";
    static constexpr std::string_view place_name = "pad";
    static constexpr detail::window_box window(dims g) {
        detail::window_box w{g, g};
        for (std::size_t a = 0; a < g.rank && a < P::rank; ++a) {
            w.begin.d[a] = P::value[a].before;
            w.size.d[a] = g.d[a] == dyn ? dyn : g.d[a] - P::value[a].before - P::value[a].after;
        }
        return w;
    }
    template <class G>
    static constexpr auto rule() {
        constexpr dims out = window(shape_t<G>::value).size;
        return result_traits<value_type_t<G>, shape_from_dims<out>, device_t<G>>{};
    }
    template <class G>
    using traits = decltype(rule<operand_sig_t<G>>());
    static dims infer(const dims& g) { return window(g).size; }
};

/// True for the window ops: they copy the box W::window(children's extents...)
/// of their first child; place<W> is named W::place_name.
template <class W>
inline constexpr bool is_window_v = false;
template <class B, class S>
inline constexpr bool is_window_v<slice<B, S>> = true;
template <index_t A, std::size_t K, class P>
inline constexpr bool is_window_v<split_part<A, K, P>> = true;
template <index_t A, std::size_t I>
inline constexpr bool is_window_v<concat_part<A, I>> = true;
template <class P>
inline constexpr bool is_window_v<unpad<P>> = true;

/// place<W>(h, c...): zeros with the extents of c[0], and h in the box that
/// window op W takes from c... (W's adjoint; c... give only extents).
template <class W>
struct place {
    static_assert(is_window_v<W>);
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = W::place_name;
    template <class H, class C0, class... C>
    using traits = result_traits<value_type_t<H>, shape_t<C0>, device_t<H>>;
    template <class... D>
        requires(std::is_same_v<D, dims> && ...)
    static dims infer(const dims& h, const dims& c0, const D&... c) {
        const detail::window_box w = W::window(c0, c...);
        if (!(w.size == h))
            typeflow::detail::raise(typeflow::detail::message()
                                    << name << ": the gradient's shape " << h << " differs from the part's " << w.size);
        return c0;
    }
};

/// pad<P, Mode>(x) and pad<P, constant>(x, value): x padded by P.
template <class P, pad_mode Mode = pad_mode::constant>
struct pad {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "pad";
    static constexpr pad_mode mode = Mode;
    static constexpr detail::pad_result of(dims x) { return detail::pad_dims(x, P::value.data(), P::rank, Mode); }
    template <class X, class... V>
    static constexpr auto rule() {
        static_assert(sizeof...(V) == 0 || Mode == pad_mode::constant, "typeflow: pad: only a CONSTANT pad takes a value");
        constexpr detail::pad_result r = of(shape_t<X>::value);
        using failure = require::first_failure_t<
            // give one {before, after} pair per axis of the operand
            require::that<r.rank_ok, diagnostic::attribute_count_differs_from_rank<pad, shape_t<X>>>,
            // REFLECT needs paddings < the extent, SYMMETRIC paddings <= the extent
            require::that<r.fits, diagnostic::paddings_too_large<pad, shape_t<X>>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<X>, shape_from_dims<r.out>, device_t<X>>{};
    }
    template <class X, class... V>
    using traits = decltype(rule<operand_sig_t<X>, V...>());
    template <class... V>
        requires(std::is_same_v<V, dims> && ...)
    static dims infer(const dims& x, const V&...) {
        const detail::pad_result r = of(x);
        if (!r.rank_ok || !r.fits) {
            typeflow::detail::message m;
            m << "pad: the paddings [";
            for (std::size_t a = 0; a < P::rank; ++a)
                m << (a ? ", " : "") << "{" << static_cast<long long>(P::value[a].before) << ","
                  << static_cast<long long>(P::value[a].after) << "}";
            typeflow::detail::raise(m << "] do not fit the operand's shape " << x);
        }
        return r.out;
    }
};

/// pad_grad<P, Mode>(g, x): the adjoint of pad<P, Mode>(x) (REFLECT or
/// SYMMETRIC): each element of g added to the element of x it was read from.
template <class P, pad_mode Mode>
struct pad_grad {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "pad_grad";
    template <class G, class X>
    using traits = result_traits<value_type_t<G>, shape_t<X>, device_t<G>>;
    static dims infer(const dims& g, const dims& x) {
        if (!(pad<P, Mode>::infer(x) == g))
            typeflow::detail::raise(typeflow::detail::message() << "pad_grad: the gradient's shape " << g
                                                                << " differs from the pad's " << pad<P, Mode>::infer(x));
        return x;
    }
};

/// tile<M...>(x): x repeated M[i] times along axis i.
template <index_t... M>
struct tile {
    static_assert(((M >= 0) && ...), "typeflow: tile: multiples must be >= 0");
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "tile";
    static constexpr std::array<index_t, sizeof...(M) + 1> multiples{M..., 0};
    template <class X>
    static constexpr auto rule() {
        constexpr bool ok = sizeof...(M) == shape_t<X>::rank;
        if constexpr (!ok) {  // give one multiple per axis of the operand
            return rule_failed<diagnostic::attribute_count_differs_from_rank<tile, shape_t<X>>>{};
        } else {
            constexpr dims out = detail::tiled_dims(shape_t<X>::value, multiples.data());
            return result_traits<value_type_t<X>, shape_from_dims<out>, device_t<X>>{};
        }
    }
    template <class X>
    using traits = decltype(rule<operand_sig_t<X>>());
    static dims infer(const dims& x) { return detail::tiled_dims(x, multiples.data()); }
};

/// tile_grad<M...>(g, x): the adjoint of tile<M...>(x): the sum of g's tiles.
template <index_t... M>
struct tile_grad {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "tile_grad";
    template <class G, class X>
    using traits = result_traits<value_type_t<G>, shape_t<X>, device_t<G>>;
    static dims infer(const dims& g, const dims& x) {
        if (!(tile<M...>::infer(x) == g))
            typeflow::detail::raise(typeflow::detail::message() << "tile_grad: the gradient's shape " << g
                                                                << " differs from the tiling's " << tile<M...>::infer(x));
        return x;
    }
};

/// flatten(x): [N, d1, d2, ...] -> [N, d1 * d2 * ...], [N] -> [N, 1] (a view).
struct flatten {
    static constexpr op_kind kind = op_kind::view;
    static constexpr std::string_view name = "flatten";
    template <class X>
    static constexpr auto rule() {
        constexpr bool ok = shape_t<X>::rank >= 1;
        if constexpr (!ok) {  // the operand needs a batch axis (rank >= 1)
            return rule_failed<diagnostic::rank_too_small<flatten, shape_t<X>>>{};
        } else {
            constexpr dims out = detail::flattened_dims(shape_t<X>::value);
            return result_traits<value_type_t<X>, shape_from_dims<out>, device_t<X>>{};
        }
    }
    template <class X>
    using traits = decltype(rule<operand_sig_t<X>>());
    static dims infer(const dims& x) { return detail::flattened_dims(x); }
};

/// Names stack<Axis> and unstack<Axis> in diagnostics (they are built from
/// expand_dims and concat, squeeze and split).
template <index_t Axis>
struct stack {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "stack";
};
template <index_t Axis>
struct unstack {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "unstack";
};
}  // namespace op

/// The operands joined along Axis (negative counts from the end); their
/// extents must agree on every other axis (TensorFlow's tf.concat).
template <index_t Axis, operand A, operand B, operand... R>
decltype(auto) concat(const A& a, const B& b, const R&... r) {
    return make_node<op::concat<Axis>>(a, b, r...);
}

/// The box of x from B... with extents S... (-1: to the end of the axis),
/// TensorFlow's tf.slice(x, begin, size): tf::slice<1, 0>(x, tf::sizes<2, -1>).
template <index_t... B, operand X, index_t... S>
decltype(auto) slice(const X& x, sizes_tag<S...>) {
    return make_node<op::slice<op::begin_tag<B...>, sizes_tag<S...>>>(x);
}
/// The box of x from B... to the end of every axis.
template <index_t... B, operand X>
decltype(auto) slice(const X& x) {
    return make_node<op::slice<op::begin_tag<B...>, sizes_tag<(B * 0 - 1)...>>>(x);
}

namespace detail {
// The parts as a tuple of nodes; one misuse (not a tuple) when x is one or
// the split's rule does not hold.
template <index_t Axis, class Parts, class X, std::size_t... K>
decltype(auto) split_nodes(const X& x, std::index_sequence<K...>) {
    if constexpr (is_misuse_v<X>) return first_misuse<X>();
    else if constexpr (is_rule_failed_v<typename op::split_part<Axis, 0, Parts>::template traits<X>>)
        return misuse<typename op::split_part<Axis, 0, Parts>::template traits<X>::diagnostic>();
    else return std::make_tuple(make_node<op::split_part<Axis, K, Parts>>(x)...);
}
}  // namespace detail

/// x split along Axis into N parts of equal extent (tf.split(x, N, axis)): a
/// std::tuple of N nodes, e.g. auto [a, b] = tf::split<1, 2>(x).
template <index_t Axis, std::size_t N, operand X>
decltype(auto) split(const X& x) {
    static_assert(N > 0, "typeflow: split: the number of parts must be positive");
    return detail::split_nodes<Axis, equal_parts<N>>(x, std::make_index_sequence<N>{});
}
/// x split along Axis into parts of extents S... (one may be -1: the rest):
/// auto [a, b] = tf::split<0>(x, tf::sizes<2, -1>).
template <index_t Axis, operand X, index_t... S>
decltype(auto) split(const X& x, sizes_tag<S...>) {
    return detail::split_nodes<Axis, sizes_tag<S...>>(x, std::make_index_sequence<sizeof...(S)>{});
}

namespace detail {
// stack's rule: one rank, an axis in [-(rank + 1), rank], one shape (dyn
// meets anything): a type_identity of the first failure's diagnostic, or of void.
template <index_t Axis, class S0, class... S>
constexpr auto stack_failure_of() {
    using Op = op::stack<Axis>;
    constexpr bool rank_ok = ((S::rank == S0::rank) && ...);
    constexpr bool same = [] {
        if (!rank_ok) return true;
        const dims in[] = {S0::value, S::value...};
        for (const dims& d : in)
            for (std::size_t a = 0; a < S0::rank; ++a)
                if (d.d[a] != in[0].d[a] && d.d[a] != dyn && in[0].d[a] != dyn) return false;
        return true;
    }();
    return std::type_identity<require::first_failure_t<
        // the operands have different ranks
        require::that<rank_ok, diagnostic::operand_ranks_differ<Op, S0, S...>>,
        // the axis is out of range (-(rank + 1) <= axis <= rank)
        require::that<axis_in_range(Axis, S0::rank + 1), diagnostic::axis_out_of_range<Op, S0>>,
        // the operands have different shapes
        require::that<same, diagnostic::stacked_shapes_differ<Op, S0, S...>>>>{};
}
}  // namespace detail

/// The operands (of one shape) stacked along a new axis Axis (tf.stack).
template <index_t Axis, operand A, operand B, operand... R>
decltype(auto) stack(const A& a, const B& b, const R&... r) {
    if constexpr (detail::is_misuse_v<A> || detail::is_misuse_v<B> || (detail::is_misuse_v<R> || ...)) {
        return detail::first_misuse<A, B, R...>();
    } else {
        using failure = typename decltype(detail::stack_failure_of<Axis, shape_t<A>, shape_t<B>, shape_t<R>...>())::type;
        if constexpr (!std::is_void_v<failure>) {
            return detail::misuse<failure>();
        } else {
            constexpr index_t ax = normalize_axis(Axis, shape_t<A>::rank + 1);
            return concat<ax>(expand_dims<ax>(a), expand_dims<ax>(b), expand_dims<ax>(r)...);
        }
    }
}

/// x unstacked along Axis (tf.unstack): a std::tuple of the extent's slices,
/// each without the axis. The extent must be static.
template <index_t Axis, operand X>
decltype(auto) unstack(const X& x) {
    if constexpr (detail::is_misuse_v<X>) {
        return detail::first_misuse<X>();
    } else {
        using S = shape_t<X>;
        using Op = op::unstack<Axis>;
        constexpr bool axis_ok = detail::axis_in_range(Axis, S::rank);
        constexpr index_t ax = axis_ok ? normalize_axis(Axis, S::rank) : 0;
        constexpr index_t n = S::rank > 0 ? S::value.d[ax] : 0;
        using failure = require::first_failure_t<
            // the axis is out of range
            require::that<axis_ok, diagnostic::axis_out_of_range<Op, S>>,
            // the axis' extent must be static (it is the number of results)
            require::that<n != dyn, diagnostic::extent_must_be_static<Op, S>>>;
        if constexpr (!std::is_void_v<failure>) {
            return detail::misuse<failure>();
        } else {
            return [&]<std::size_t... K>(std::index_sequence<K...>) {
                return std::make_tuple(squeeze<ax>(make_node<op::split_part<ax, K, equal_parts<n>>>(x))...);
            }(std::make_index_sequence<static_cast<std::size_t>(n)>{});
        }
    }
}

/// x padded by P (tf::paddings<{before, after}...>, one pair per axis), as
/// tf.pad: CONSTANT (zeros) by default, or pad_mode::reflect / symmetric.
template <class P, pad_mode Mode = pad_mode::constant, operand X>
decltype(auto) pad(const X& x) {
    return make_node<op::pad<P, Mode>>(x);
}
/// x padded by P with the constant `value`.
template <class P, operand X, class V>
    requires std::is_arithmetic_v<V>
decltype(auto) pad(const X& x, V value) {
    if constexpr (detail::is_misuse_v<X>) {
        return detail::first_misuse<X>();
    } else {
        using S = scalar<value_type_t<X>, device_t<X>>;
        return make_node<op::pad<P, pad_mode::constant>>(x, S(static_cast<value_type_t<X>>(value)));
    }
}

/// x repeated M[i] times along axis i (tf.tile).
template <index_t... M, operand X>
decltype(auto) tile(const X& x) {
    return make_node<op::tile<M...>>(x);
}

/// [N, d1, d2, ...] -> [N, d1 * d2 * ...] (Keras' Flatten; [N] -> [N, 1]): a view.
template <operand X>
decltype(auto) flatten(const X& x) {
    return make_node<op::flatten>(x);
}

// ---- gradients ----

/// concat: operand I's adjoint is its part of g.
template <index_t Axis>
struct gradient<op::concat<Axis>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        return detail::make_node_of_children<op::concat_part<Axis, I>>(n, std::make_index_sequence<I + 1>{}, g);
    }
};

/// A window op: the adjoint of its source is g placed into zeros; the other
/// children give only extents.
template <class W>
struct window_gradient {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I == 0)
            return detail::make_node_of_children<op::place<W>>(n, std::make_index_sequence<meta::children_t<N>::size>{}, g);
        else return (void)n, (void)g, ad::zero{};
    }
};
template <class B, class S>
struct gradient<op::slice<B, S>> : window_gradient<op::slice<B, S>> {};
template <index_t Axis, std::size_t K, class Parts>
struct gradient<op::split_part<Axis, K, Parts>> : window_gradient<op::split_part<Axis, K, Parts>> {};
template <index_t Axis, std::size_t I>
struct gradient<op::concat_part<Axis, I>> : window_gradient<op::concat_part<Axis, I>> {};

/// place<W>(h, c0, c...) is linear in h: its adjoint is W's box of g (g in
/// the place of c0, which has g's extents).
template <class W>
struct gradient<op::place<W>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I == 0) {
            return [&]<std::size_t... J>(std::index_sequence<J...>) {
                return make_node<W>(g, n.template child<J + 2>()...);
            }(std::make_index_sequence<meta::children_t<N>::size - 2>{});
        } else {
            return (void)n, (void)g, ad::zero{};
        }
    }
};

/// unpad<P>: the adjoint is the constant pad of g.
template <class P>
struct gradient<op::unpad<P>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N&, const G& g) {
        return make_node<op::pad<P, pad_mode::constant>>(g);
    }
};

/// pad: CONSTANT -> unpad<P>(g) (the value is a constant); REFLECT and
/// SYMMETRIC -> pad_grad (g's elements added where they were read from).
template <class P, pad_mode Mode>
struct gradient<op::pad<P, Mode>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I != 0) return (void)n, (void)g, ad::zero{};
        else if constexpr (Mode == pad_mode::constant) return (void)n, make_node<op::unpad<P>>(g);
        else return make_node<op::pad_grad<P, Mode>>(g, n.template child<0>());
    }
};
/// pad_grad is linear in g: its adjoint is the pad of the adjoint.
template <class P, pad_mode Mode>
struct gradient<op::pad_grad<P, Mode>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I == 0) return (void)n, make_node<op::pad<P, Mode>>(g);
        else return (void)n, (void)g, ad::zero{};
    }
};

/// tile: the adjoint is the sum of g's tiles.
template <index_t... M>
struct gradient<op::tile<M...>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        return make_node<op::tile_grad<M...>>(g, n.template child<0>());
    }
};
/// tile_grad is linear in g: its adjoint is the tiling of the adjoint.
template <index_t... M>
struct gradient<op::tile_grad<M...>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I == 0) return (void)n, make_node<op::tile<M...>>(g);
        else return (void)n, (void)g, ad::zero{};
    }
};

/// flatten: a view; the adjoint gets the operand's extents back.
template <>
struct gradient<op::flatten> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        return reshape_like(g, n.template child<0>());
    }
};

}  // namespace typeflow
