// typeflow/expr/ops/gather.hpp — gather and embedding_lookup (tf.gather), the
// sparse gradient of a gather (indexed_slices), and the sparse optimizer
// updates that gradient lowers to (sparse_apply).
//
//   tf::gather(params, indices)            rows of params: [indices..., params.shape[1:]...]
//   tf::gather<1>(params, indices)         along axis 1: params.shape[:1] + indices.shape + params.shape[2:]
//   tf::embedding_lookup(table, ids)       gather along axis 0
//
// Indices are int32 or int64 of any rank; an index outside [0, extent) is a
// tf::error at run time naming the op, the index and the extent (TensorFlow's
// CPU behaviour).
//
// The gradient with respect to params is TensorFlow's IndexedSlices: the
// vector-Jacobian product of gather is a node indexed_slices<Axis>(params,
// values, indices), whose value is dense (zeros of params' shape with each
// values row added at its index: the "densify" kernel), so a fetched or
// otherwise used gradient is always correct. Two such gradients of one params
// add by concatenation, indexed_slices(p, v1, i1, v2, i2) (the `+` below), so
// a table used twice still has a sparse gradient. An optimizer that receives
// an axis-0 indexed_slices of the very variable it updates recognises its type
// (is_indexed_slices_of) and does not read its value: it updates only the rows
// present through one sparse_apply kernel (train/optimizers.hpp), whose work
// is proportional to the rows in the batch.
//
// A sparse_apply node writes its variable and slots when its kernel runs, not
// at the end of the run like assign: it runs after the gathers that read the
// variable (they are its control inputs), and the forward pass and the other
// gradients are computed before it whenever they are fetched with it, but a
// node of the same run that reads the variable without being ordered before
// the update (a fetch of the variable itself, say) may see the new rows. See
// docs: "Sparse gradients".
// Kernels: backend/eigen/ops/gather.hpp, backend/reference/ops/gather.hpp.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/ops/apply.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow::diagnostic {
/// The indices of a gather (or of an indexed_slices) are not int32 or int64.
template <class Op, class Type>
struct gather_indices_must_be_int32_or_int64;
/// params' rank - 1 + indices' rank exceeds typeflow::max_rank.
template <class Op, class ParamsShape, class IndicesShape>
struct gather_result_rank_exceeds_max_rank;
/// The values of an indexed_slices do not have the shape
/// params.shape[:axis] + indices.shape + params.shape[axis+1:].
template <class Op, class ValuesShape, class ExpectedShape>
struct indexed_slices_values_shape_differs;
/// indexed_slices takes params and then (values, indices) pairs.
template <class Op, class... Children>
struct indexed_slices_needs_values_and_indices_pairs;
}  // namespace typeflow::diagnostic

namespace typeflow {

namespace detail {
/// True for the dtypes indices may have (int32, int64).
template <class T>
inline constexpr bool index_dtype_v = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;

/// The result extents of a gather along `axis`: p[:axis] + i + p[axis+1:].
constexpr dims gather_dims(dims p, dims i, std::size_t axis) {
    dims r;
    if (axis >= p.rank || p.rank - 1 + i.rank > max_rank) return r;
    r.rank = p.rank - 1 + i.rank;
    std::size_t k = 0;
    for (std::size_t a = 0; a < axis; ++a) r.d[k++] = p.d[a];
    for (std::size_t j = 0; j < i.rank; ++j) r.d[k++] = i.d[j];
    for (std::size_t a = axis + 1; a < p.rank; ++a) r.d[k++] = p.d[a];
    return r;
}
/// Equal extents, where a dyn extent matches anything.
constexpr bool dims_fit(dims a, dims b) {
    if (a.rank != b.rank) return false;
    for (std::size_t i = 0; i < a.rank; ++i)
        if (a.d[i] != b.d[i] && a.d[i] != dyn && b.d[i] != dyn) return false;
    return true;
}

/// A gather as loops: out[o, j, r] = params[o, idx[j], r] for o < outer,
/// j < count, r < inner; params has `extent` entries along the axis.
struct gather_geometry {
    index_t outer = 1, extent = 0, count = 1, inner = 1;
};
inline gather_geometry gather_geometry_of(const dims& p, const dims& i, std::size_t axis) {
    gather_geometry g;
    for (std::size_t a = 0; a < axis; ++a) g.outer *= p.d[a];
    g.extent = p.d[axis];
    g.count = i.numel();
    for (std::size_t a = axis + 1; a < p.rank; ++a) g.inner *= p.d[a];
    return g;
}

/// Throws the tf::error of an index outside [0, extent): it names the op,
/// the index's flat position and value, and the extent.
[[noreturn]] inline TYPEFLOW_NOINLINE void raise_index_out_of_range(std::string_view op, index_t position,
                                                                     long long value, index_t extent) {
    raise(message() << op << ": indices[" << static_cast<long long>(position) << "] = " << value
                    << " is not in [0, " << static_cast<long long>(extent) << ")");
}
/// Checks that every one of the n indices lies in [0, extent).
template <class I>
void check_indices(std::string_view op, const I* idx, index_t n, index_t extent) {
    for (index_t k = 0; k < n; ++k)
        if (idx[k] < 0 || static_cast<index_t>(idx[k]) >= extent) raise_index_out_of_range(op, k, idx[k], extent);
}

/// The axis Axis (negative counts from the end) of a rank-R tensor, or R when out of range.
constexpr std::size_t normalized_axis(int axis, std::size_t rank) {
    const long long a = axis < 0 ? static_cast<long long>(rank) + axis : axis;
    return a < 0 || a >= static_cast<long long>(rank) ? rank : static_cast<std::size_t>(a);
}
}  // namespace detail

namespace check {
/// Indices of a gather must be int32 or int64.
template <class Op, class T>
constexpr bool index_dtype() {
    constexpr bool ok = typeflow::detail::index_dtype_v<T>;
    if constexpr (!ok) {
        diagnostic::gather_indices_must_be_int32_or_int64<Op, T> error;
    }
    static_assert(ok, "typeflow: gather: indices must be int32 or int64; convert them with tf::cast<std::int32_t>(e)");
    return ok;
}
/// Axis must name an axis of a tensor of shape S.
template <class Op, class S, int Axis>
constexpr bool gather_axis() {
    constexpr bool ok = typeflow::detail::normalized_axis(Axis, S::rank) < S::rank;
    if constexpr (!ok) {
        diagnostic::axis_out_of_range<Op, S> error;
    }
    static_assert(ok, "typeflow: gather: the axis is outside the params' rank (a scalar cannot be gathered from)");
    return ok;
}
}  // namespace check

namespace require {
/// Indices of a gather are int32 or int64 (convert them with tf::cast<std::int32_t>(e)).
template <class Op, class T>
using index_dtype = that<typeflow::detail::index_dtype_v<T>, diagnostic::gather_indices_must_be_int32_or_int64<Op, T>>;
/// Axis names an axis of a tensor of shape S (a scalar cannot be gathered from).
template <class Op, class S, int Axis>
using gather_axis = that<(typeflow::detail::normalized_axis(Axis, S::rank) < S::rank), diagnostic::axis_out_of_range<Op, S>>;
}  // namespace require

namespace op {
/// node<gather<Axis>, P, I>: params P gathered along Axis (0 <= Axis < rank)
/// at indices I: P.shape[:Axis] + I.shape + P.shape[Axis+1:].
template <int Axis>
struct gather {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "gather";
    static constexpr std::size_t axis = static_cast<std::size_t>(Axis);
    template <class P, class I>
    static constexpr auto rule() {
        using axis_ok = require::gather_axis<gather, shape_t<P>, Axis>;
        using failure = require::first_failure_t<
            require::same_device<gather, device_t<P>, device_t<I>>, require::index_dtype<gather, value_type_t<I>>, axis_ok,
            // the result's rank (params' rank - 1 + indices' rank) exceeds typeflow::max_rank (8)
            require::that<!axis_ok::ok || shape_t<P>::rank - 1 + shape_t<I>::rank <= max_rank,
                          diagnostic::gather_result_rank_exceeds_max_rank<gather, shape_t<P>, shape_t<I>>>>;
        if constexpr (!std::is_void_v<failure>) {
            return rule_failed<failure>{};
        } else {
            constexpr dims out = typeflow::detail::gather_dims(shape_t<P>::value, shape_t<I>::value, axis);
            return result_traits<value_type_t<P>, shape_from_dims<out>, device_t<P>>{};
        }
    }
    template <class P, class I>
    using traits = decltype(rule<P, I>());
    static dims infer(const dims& p, const dims& i) { return typeflow::detail::gather_dims(p, i, axis); }
};

/// node<indexed_slices<Axis>, P, V1, I1, V2, I2, ...>: the dense tensor of P's
/// shape that is zero except that each slice V_k[.., j, ..] is added at
/// index I_k[j] along Axis (duplicates add up): the gradient of gather with
/// respect to params. P gives only its extents.
template <int Axis>
struct indexed_slices {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "indexed_slices";
    static constexpr std::size_t axis = static_cast<std::size_t>(Axis);
    // The rule of one (values, indices) pair (a type_identity of the
    // diagnostic of its first failing requirement, or of void).
    template <class P, class V, class I>
    static constexpr auto pair_failure() {
        constexpr dims want = typeflow::detail::gather_dims(shape_t<P>::value, shape_t<I>::value, axis);
        return std::type_identity<require::first_failure_t<
            require::same_device<indexed_slices, device_t<P>, device_t<V>>,
            require::same_device<indexed_slices, device_t<P>, device_t<I>>,
            require::same_dtype<indexed_slices, value_type_t<P>, value_type_t<V>>,
            require::index_dtype<indexed_slices, value_type_t<I>>,
            // the values must have the shape params.shape[:axis] + indices.shape + params.shape[axis+1:]
            require::that<typeflow::detail::dims_fit(shape_t<V>::value, want),
                          diagnostic::indexed_slices_values_shape_differs<indexed_slices, shape_t<V>, shape_from_dims<want>>>>>{};
    }
    template <class P, class Seq, class... VI>
    struct pairs_failure;
    template <class P, std::size_t... K, class... VI>
    struct pairs_failure<P, std::index_sequence<K...>, VI...> {
        using type = require::first_failure_t<
            require::none<typename decltype(pair_failure<P, meta::at_t<2 * K, VI...>, meta::at_t<2 * K + 1, VI...>>())::type>...>;
    };
    template <class P, class... VI>
    static constexpr auto rule() {
        constexpr bool pairs = sizeof...(VI) > 0 && sizeof...(VI) % 2 == 0;
        if constexpr (!pairs) {  // give params, then (values, indices) pairs
            return rule_failed<diagnostic::indexed_slices_needs_values_and_indices_pairs<indexed_slices, VI...>>{};
        } else {
            using failure = require::first_failure_t<
                require::numeric<indexed_slices, value_type_t<P>>, require::gather_axis<indexed_slices, shape_t<P>, Axis>,
                require::none<typename pairs_failure<P, std::make_index_sequence<sizeof...(VI) / 2>, VI...>::type>>;
            if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
            else return result_traits<value_type_t<P>, shape_t<P>, device_t<P>>{};
        }
    }
    template <class... C>
    using traits = decltype(rule<C...>());
    /// The params' extents, after checking that every values' extents fit.
    template <class... D>
    static dims infer(const dims& p, const D&... d) {
        const dims* r[] = {&d...};
        for (std::size_t k = 0; k + 1 < sizeof...(D); k += 2) {
            const dims want = typeflow::detail::gather_dims(p, *r[k + 1], axis);
            if (!(*r[k] == want))
                typeflow::detail::raise(typeflow::detail::message()
                                        << name << ": values " << *r[k] << " do not fit params " << p << " and indices "
                                        << *r[k + 1] << " (expected " << want << ")");
        }
        return p;
    }
};
}  // namespace op

/// tf.gather: params gathered along Axis (negative counts from the end) at
/// int32 or int64 indices of any rank; the result's shape is
/// params.shape[:Axis] + indices.shape + params.shape[Axis+1:]. An index
/// outside [0, extent) is a tf::error when the graph runs.
template <int Axis = 0, operand P, operand I>
decltype(auto) gather(const P& params, const I& indices) {
    if constexpr (detail::is_misuse_v<P> || detail::is_misuse_v<I>) return detail::first_misuse<P, I>();
    else if constexpr (constexpr std::size_t a = detail::normalized_axis(Axis, shape_t<P>::rank); a < shape_t<P>::rank)
        return make_node<op::gather<static_cast<int>(a)>>(params, indices);
    else return make_node<op::gather<Axis>>(params, indices);  // fails with the axis diagnostic
}
/// tf.nn.embedding_lookup: the rows of table at ids, [ids.shape..., table.shape[1:]...].
template <operand P, operand I>
decltype(auto) embedding_lookup(const P& table, const I& ids) {
    return make_node<op::gather<0>>(table, ids);
}
/// The dense tensor of params' shape that is zero except that the slices of
/// values are added at indices along Axis (duplicates add up): TensorFlow's
/// IndexedSlices converted to a tensor, and the gradient of gather.
template <int Axis = 0, operand P, operand V, operand I>
decltype(auto) indexed_slices(const P& params, const V& values, const I& indices) {
    if constexpr (detail::is_misuse_v<P> || detail::is_misuse_v<V> || detail::is_misuse_v<I>)
        return detail::first_misuse<P, V, I>();
    else if constexpr (constexpr std::size_t a = detail::normalized_axis(Axis, shape_t<P>::rank); a < shape_t<P>::rank)
        return make_node<op::indexed_slices<static_cast<int>(a)>>(params, values, indices);
    else return make_node<op::indexed_slices<Axis>>(params, values, indices);
}

/// True when G is an axis-0 indexed_slices whose params are V: an optimizer
/// updating variable V with gradient G may update only the rows present.
template <class G, class V>
struct is_indexed_slices_of : std::false_type {};
template <class V, class... R>
struct is_indexed_slices_of<node<op::indexed_slices<0>, V, R...>, V> : std::true_type {};

/// The sum of two sparse gradients of one params: the (values, indices)
/// pairs of both, still sparse (how tf::grad adds the gradients of a table
/// used twice).
template <int Axis, class P, class... L, class... R>
auto operator+(const node<op::indexed_slices<Axis>, P, L...>& a, const node<op::indexed_slices<Axis>, P, R...>& b) {
    return a.apply_children([&](const P& p, const L&... l) {
        return b.apply_children([&](const P&, const R&... r) { return make_node<op::indexed_slices<Axis>>(p, l..., r...); });
    });
}

/// gather: to params, indexed_slices(params, g, indices); none to the indices.
template <int Axis>
struct gradient<op::gather<Axis>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I == 0) return make_node<op::indexed_slices<Axis>>(n.template child<0>(), g, n.template child<1>());
        else return (void)n, (void)g, ad::zero{};
    }
};
/// indexed_slices is linear in each values: its adjoint gathered at the
/// indices; none to params (extents only) or to the indices.
template <int Axis>
struct gradient<op::indexed_slices<Axis>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I > 0 && I % 2 == 1) return make_node<op::gather<Axis>>(g, n.template child<I + 1>());
        else return (void)n, (void)g, ad::zero{};
    }
};

// ---------------------------------------------------------------------------
// Sparse optimizer updates
// ---------------------------------------------------------------------------

namespace op {
/// node<sparse_apply<Rule, R, P>, Readers x R, Var, Slots..., Hypers..., V1..VP, I1..IP>:
/// updates the rows of variable Var (axis 0) and of its slots that appear in
/// the indices I_k, once per distinct row with the sum of that row's values,
/// by Rule (update_rule::..., expr/ops/apply.hpp). The first R children are
/// control inputs (the gathers that read Var, so they run first). Its value is the number of
/// distinct rows updated (int64). The write happens when the kernel runs.
template <class Rule, std::size_t R, std::size_t P>
struct sparse_apply {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = Rule::sparse_name;
    /// Its hyperparameters are the rule's, then the rule's counters (which a
    /// sparse update reads and leaves to its caller to increment).
    static constexpr std::size_t readers = R, slots = Rule::slots, hypers = Rule::hypers + Rule::counters, pairs = P;
    /// Positions of the variable, of the first slot, hyperparameter, values and indices.
    static constexpr std::size_t var_at = R, slot_at = R + 1, hyper_at = slot_at + slots, values_at = hyper_at + hypers,
                                 indices_at = values_at + P;
    /// The children it writes where they are: the variable and its slots.
    static constexpr std::size_t writes_first = var_at, writes_end = hyper_at;
    template <class... C>
    struct traits {
        static_assert(sizeof...(C) == indices_at + P && P > 0,
                      "typeflow: sparse_apply: give readers, the variable, its slots, the hyperparameters, the "
                      "values, then the indices");
        using V = meta::at_t<var_at, C...>;
        static_assert(floating_c<value_type_t<V>>, "typeflow: sparse_apply: the variable must be floating point");
        using value_type = std::int64_t;
        using shape_type = shape<>;
        using device = device_t<V>;
        static constexpr std::size_t control_inputs = R;
    };
    /// A scalar, after checking each values' extents against the variable's and its indices'.
    template <class... D>
    static dims infer(const D&... d) {
        const dims* r[] = {&d...};
        const dims& var = *r[var_at];
        for (std::size_t k = 0; k < P; ++k) {
            const dims want = typeflow::detail::gather_dims(var, *r[indices_at + k], 0);
            if (!(*r[values_at + k] == want))
                typeflow::detail::raise(typeflow::detail::message()
                                        << name << ": values " << *r[values_at + k] << " do not fit the variable " << var
                                        << " and indices " << *r[indices_at + k] << " (expected " << want << ")");
        }
        return dims{};
    }
};
}  // namespace op

/// Sparse updates have no gradient.
template <class Rule, std::size_t R, std::size_t P>
struct gradient<op::sparse_apply<Rule, R, P>> : no_gradient {};

}  // namespace typeflow
