// typeflow/expr/ops/nn.hpp — activations and losses: softmax, log_softmax,
// one_hot, softmax_cross_entropy, sparse_softmax_cross_entropy,
// sigmoid_cross_entropy, mean_squared_error.
//
// softmax, log_softmax and one_hot are kernels (backend/eigen/ops/nn.hpp);
// the losses are compositions of ops, written in numerically stable forms,
// so their gradients come from the rules of the ops they are built from.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include <typeflow/core/axes.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/compare.hpp>
#include <typeflow/expr/ops/math.hpp>
#include <typeflow/expr/ops/reduce.hpp>
#include <typeflow/expr/ops/where.hpp>

namespace typeflow::diagnostic {
template <class Op, class Type>
struct needs_integer;
template <class Op, class ShapeA, class ShapeB>
struct shapes_differ;
template <class Op, class LogitsShape, class LabelsShape>
struct labels_do_not_match_logits;
template <class Op, class LogitsShape>
struct class_count_must_be_static;
}  // namespace typeflow::diagnostic

namespace typeflow {

namespace check {
/// T must be an integer dtype (int32 or int64).
template <class Op, class T>
constexpr bool integer() {
    constexpr bool ok = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;
    if constexpr (!ok) {
        diagnostic::needs_integer<Op, T> error;
    }
    static_assert(ok, "typeflow: this op needs integer (int32 or int64) operands; use tf::cast<std::int64_t>(e)");
    return ok;
}
}  // namespace check

namespace require {
/// An integer dtype, int32 or int64 (use tf::cast<std::int64_t>(e)).
template <class Op, class T>
using integer = that<std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>, diagnostic::needs_integer<Op, T>>;
}  // namespace require

namespace detail {
// Equal ranks and extents (dyn matches anything).
constexpr bool same_extents(dims a, dims b) {
    if (a.rank != b.rank) return false;
    for (std::size_t i = 0; i < a.rank; ++i)
        if (a.d[i] != b.d[i] && a.d[i] != dyn && b.d[i] != dyn) return false;
    return true;
}
// a without its last axis equals b (dyn matches anything).
constexpr bool matches_leading(dims a, dims b) {
    if (a.rank != b.rank + 1) return false;
    for (std::size_t i = 0; i < b.rank; ++i)
        if (a.d[i] != b.d[i] && a.d[i] != dyn && b.d[i] != dyn) return false;
    return true;
}
constexpr dims with_last(dims a, index_t n) {
    dims o = a;
    if (o.rank < max_rank) o.d[o.rank++] = n;
    return o;
}
}  // namespace detail

namespace op {
/// softmax (Log = false) or log_softmax (Log = true) along Axis.
template <bool Log, index_t Axis>
struct softmax_along {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = Log ? "log_softmax" : "softmax";
    static constexpr bool log = Log;
    template <class A>
    static constexpr auto rule() {
        using failure = require::first_failure_t<
            require::floating<softmax_along, value_type_t<A>>,
            // the axis is out of range
            require::that<detail::make_axis_mask<Axis>(shape_t<A>::rank).ok, diagnostic::axis_out_of_range<softmax_along, shape_t<A>>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<A>, shape_t<A>, device_t<A>>{};
    }
    template <class A>
    using traits = decltype(rule<A>());
    static constexpr std::size_t axis(std::size_t rank) {
        return static_cast<std::size_t>(normalize_axis(Axis, rank));
    }
    static dims infer(const dims& a) { return a; }
};

/// One-hot rows of Depth elements of dtype T from integer labels.
template <index_t Depth, class T>
struct one_hot {
    static_assert(Depth > 0, "typeflow: one_hot: Depth must be positive");
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "one_hot";
    static constexpr index_t depth = Depth;
    template <class L>
    static constexpr auto rule() {
        using failure = require::first_failure_t<
            require::integer<one_hot, value_type_t<L>>,
            // labels of rank max_rank leave no room for the depth axis
            require::that<(shape_t<L>::rank < max_rank), diagnostic::rank_too_small<one_hot, shape_t<L>>>>;
        if constexpr (!std::is_void_v<failure>) {
            return rule_failed<failure>{};
        } else {
            constexpr dims out = detail::with_last(shape_t<L>::value, Depth);
            return result_traits<T, shape_from_dims<out>, device_t<L>>{};
        }
    }
    template <class L>
    using traits = decltype(rule<L>());
    static dims infer(const dims& l) { return detail::with_last(l, Depth); }
};

// Name tags of the composite losses (they build no node of their own): the
// first argument of their compile-time diagnostics.
struct softmax_cross_entropy {};
struct sparse_softmax_cross_entropy {};
struct sigmoid_cross_entropy {};
}  // namespace op

/// exp(x) / sum(exp(x)) along Axis (default: the last), computed stably.
template <index_t Axis = -1, operand A>
decltype(auto) softmax(const A& a) {
    return make_node<op::softmax_along<false, Axis>>(a);
}
/// log(softmax(x)) along Axis (default: the last), computed stably.
template <index_t Axis = -1, operand A>
decltype(auto) log_softmax(const A& a) {
    return make_node<op::softmax_along<true, Axis>>(a);
}
/// The labels (int32 or int64, any shape) as one-hot vectors of Depth
/// elements of dtype T along a new last axis; a label outside [0, Depth) is a
/// tf::error at run time. No gradient flows through it.
template <index_t Depth, value_type_c T = float, operand L>
    requires numeric_c<T>
decltype(auto) one_hot(const L& labels) {
    return make_node<op::one_hot<Depth, T>>(labels);
}

namespace detail {
// The rules of the composite losses: the diagnostic of the first failing
// requirement, or void.
template <class Z, class Y>
using softmax_cross_entropy_failure = require::first_failure_t<
    require::same_dtype<op::softmax_cross_entropy, value_type_t<Z>, value_type_t<Y>>,
    require::floating<op::softmax_cross_entropy, value_type_t<Z>>,
    // logits and labels must have one shape [..., classes]
    require::that<same_extents(shape_t<Z>::value, shape_t<Y>::value) && shape_t<Z>::rank >= 1,
                  diagnostic::shapes_differ<op::softmax_cross_entropy, shape_t<Z>, shape_t<Y>>>>;
template <class Z, class L>
using sparse_softmax_cross_entropy_failure = require::first_failure_t<
    require::floating<op::sparse_softmax_cross_entropy, value_type_t<Z>>,
    require::integer<op::sparse_softmax_cross_entropy, value_type_t<L>>,
    // labels must have the shape of logits without its last (class) axis
    require::that<matches_leading(shape_t<Z>::value, shape_t<L>::value),
                  diagnostic::labels_do_not_match_logits<op::sparse_softmax_cross_entropy, shape_t<Z>, shape_t<L>>>,
    // the number of classes (last extent of logits) must be static
    require::that<shape_t<Z>::rank == 0 || shape_t<Z>::value.d[shape_t<Z>::rank - 1] != dyn,
                  diagnostic::class_count_must_be_static<op::sparse_softmax_cross_entropy, shape_t<Z>>>>;
template <class Z, class Y>
using sigmoid_cross_entropy_failure = require::first_failure_t<
    require::same_dtype<op::sigmoid_cross_entropy, value_type_t<Z>, value_type_t<Y>>,
    require::floating<op::sigmoid_cross_entropy, value_type_t<Z>>,
    // logits and labels must have one shape
    require::that<same_extents(shape_t<Z>::value, shape_t<Y>::value),
                  diagnostic::shapes_differ<op::sigmoid_cross_entropy, shape_t<Z>, shape_t<Y>>>>;
template <class Z, class Y>
auto sigmoid_cross_entropy_of(const Z& logits, const Y& labels) {
    const auto zero = ad::lit_like<0>(logits);
    // where() rather than relu/abs, so that the gradient at z = 0 is exact
    const auto positive = logits >= zero;
    const auto relu_z = typeflow::where(positive, logits, zero);
    const auto neg_abs_z = typeflow::where(positive, -logits, logits);
    return relu_z - logits * labels + typeflow::log(ad::lit_like<1>(logits) + typeflow::exp(neg_abs_z));
}
}  // namespace detail

/// Per-example cross entropy between the class distribution `labels` and
/// softmax(logits) along the last axis: -sum(labels * log_softmax(logits), -1).
/// Shapes [..., classes] in, [...] out.
template <operand Z, operand Y>
decltype(auto) softmax_cross_entropy(const Z& logits, const Y& labels) {
    if constexpr (detail::is_misuse_v<Z> || detail::is_misuse_v<Y>) return detail::first_misuse<Z, Y>();
    else if constexpr (!std::is_void_v<detail::softmax_cross_entropy_failure<Z, Y>>)
        return detail::misuse<detail::softmax_cross_entropy_failure<Z, Y>>();
    else return -sum<-1>(labels * log_softmax<-1>(logits));
}

/// Per-example cross entropy of integer class indices `labels` [...] (int32
/// or int64) against logits [..., classes]: -log_softmax(logits)[label]. The
/// number of classes must be static; a label outside [0, classes) is a
/// tf::error at run time. Its gradient is softmax(logits) - one_hot(labels).
template <operand Z, operand L>
decltype(auto) sparse_softmax_cross_entropy(const Z& logits, const L& labels) {
    if constexpr (detail::is_misuse_v<Z> || detail::is_misuse_v<L>) {
        return detail::first_misuse<Z, L>();
    } else if constexpr (!std::is_void_v<detail::sparse_softmax_cross_entropy_failure<Z, L>>) {
        return detail::misuse<detail::sparse_softmax_cross_entropy_failure<Z, L>>();
    } else {
        constexpr dims z = shape_t<Z>::value;
        return softmax_cross_entropy(logits, one_hot<z.d[z.rank - 1], value_type_t<Z>>(labels));
    }
}

/// Element-wise logistic loss of logits z against targets y in [0, 1]:
/// -y log(sigmoid(z)) - (1 - y) log(1 - sigmoid(z)), computed as
/// max(z, 0) - z y + log(1 + exp(-|z|)) (stable for large |z|). Its gradient
/// with respect to z is sigmoid(z) - y.
template <operand Z, operand Y>
decltype(auto) sigmoid_cross_entropy(const Z& logits, const Y& labels) {
    if constexpr (detail::is_misuse_v<Z> || detail::is_misuse_v<Y>) {
        return detail::first_misuse<Z, Y>();
    } else if constexpr (!std::is_void_v<detail::sigmoid_cross_entropy_failure<Z, Y>>) {
        return detail::misuse<detail::sigmoid_cross_entropy_failure<Z, Y>>();
    } else {
        return detail::sigmoid_cross_entropy_of(logits, labels);
    }
}

/// mean((a - b)^2) over every element (a scalar); a and b broadcast.
template <operand A, operand B>
decltype(auto) mean_squared_error(const A& a, const B& b) {
    return mean(square(a - b));
}

// ---- vector-Jacobian products ----

/// softmax s: dx = s (g - sum(g s)); log_softmax l: dx = g - exp(l) sum(g)
/// (sums along the axis).
template <bool Log, index_t Axis>
struct gradient<op::softmax_along<Log, Axis>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (Log) return g - exp(n) * sum<Axis>(g, keepdims);
        else return n * (g - sum<Axis>(g * n, keepdims));
    }
};
template <index_t Depth, class T>
struct gradient<op::one_hot<Depth, T>> : no_gradient {};

}  // namespace typeflow
