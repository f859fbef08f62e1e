// typeflow/expr/ops/random.hpp — dropout (TensorFlow's tf.nn.dropout, inverted
// dropout) and the counter-based random bits its masks come from.
//
//   tf::dropout<0.5>(x)              rate and seed (default 0) known at compile time
//   tf::dropout<0.5, 42>(x)
//   tf::dropout(x, 0.5f)             rate given at run time (checked: [0, 1))
//   tf::dropout(x, 0.5f, 42)
//   tf::dropout(x, rate)             rate a scalar expression (a placeholder:
//                                    checked at every run)
//   tf::dropout_mask<0.5, 42>(x)     the mask alone: 0 or 1 / (1 - rate)
//
// dropout(x, ...) is x * dropout_mask(x, ...): each element of x is kept with
// probability 1 - rate and then scaled by s = 1 / (1 - rate) (rounded to x's
// dtype), or zeroed. The mask is a kernel node (backend/eigen/ops/random.hpp,
// backend/reference/ops/random.hpp) that reads only x's extents; its gradient
// is none, so the gradient of dropout is dy * mask, the mask of the same run.
//
// Masks are reproducible: element i of the mask drawn by a node's r-th run
// is a function of (seed, r, i) alone (splitmix64's mixing of a counter), so
// every device and every thread count draws the same masks. Runs are counted
// per node in one plan of a session (the kernel's state): a graph built once
// and run again and again draws a new mask at each run, and a new session
// draws the same sequence again. A session makes a new plan for another
// fetch list or for nodes built anew, and that plan starts again from run 0.
// Two dropout nodes with one seed draw the same masks: give them different
// seeds (the dropout layer mixes its name into its seed).
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <type_traits>

#include <typeflow/core/config.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/ops/arithmetic.hpp>

namespace typeflow::diagnostic {
/// A dropout rate known at compile time is outside [0, 1).
template <class Op>
struct dropout_rate_outside_0_1;
/// A dropout rate given as an expression is not a scalar.
template <class Op, class RateShape>
struct dropout_rate_must_be_scalar;
}  // namespace typeflow::diagnostic

namespace typeflow {

namespace detail {
/// splitmix64's output function: a bijective mix of 64 bits.
TYPEFLOW_HOST_DEVICE constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
inline constexpr std::uint64_t golden_gamma = 0x9E3779B97F4A7C15ull;
/// The start of run `run`'s stream of a generator seeded with `seed`.
TYPEFLOW_HOST_DEVICE constexpr std::uint64_t random_stream(std::uint64_t seed, std::uint64_t run) noexcept {
    return mix64(mix64(seed + golden_gamma) ^ (run * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull));
}
/// Uniform in [0, 1) (53 bits) for element i of a stream.
TYPEFLOW_HOST_DEVICE constexpr double random_uniform(std::uint64_t stream, std::uint64_t i) noexcept {
    return static_cast<double>(mix64(stream + (i + 1) * golden_gamma) >> 11) * 0x1.0p-53;
}
/// The 53-bit integers k of the uniforms k / 2^53 that are >= rate: those
/// from ceil(rate * 2^53) (exact: rate * 2^53 only moves the exponent).
inline std::uint64_t dropout_threshold(double rate) noexcept {
    return static_cast<std::uint64_t>(std::ceil(rate * 0x1.0p53));
}
/// Fills out[b, e) with element i's dropout mask value: s where the element
/// is kept (its uniform >= rate, as tf.nn.dropout; compared as integers
/// against dropout_threshold(rate)), else 0.
template <class T>
TYPEFLOW_NOINLINE void dropout_mask_range(T* out, index_t b, index_t e, std::uint64_t threshold, T s,
                                          std::uint64_t stream) noexcept {
    // s's bits under an all-ones or all-zero mask: a branch (which GCC makes
    // of a select) would mispredict on half of the elements
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    const U bits = std::bit_cast<U>(s);
    std::uint64_t z = stream + (static_cast<std::uint64_t>(b) + 1) * golden_gamma;
    for (index_t i = b; i < e; ++i, z += golden_gamma) {
        const U keep = static_cast<U>(mix64(z) >> 11 >= threshold);
        out[i] = std::bit_cast<T>(static_cast<U>(bits & (U(0) - keep)));
    }
}
/// 1 / (1 - rate) in T, the scale of the kept elements.
template <class T>
constexpr T dropout_scale(double rate) noexcept {
    return static_cast<T>(1.0 / (1.0 - rate));
}
/// A run-time rate outside [0, 1) is a tf::error naming the op.
inline void check_dropout_rate(double rate) {
    if (!(rate >= 0.0 && rate < 1.0)) {
        char b[32];
        std::snprintf(b, sizeof b, "%.9g", rate);
        raise(message() << "dropout: the rate " << b << " is outside [0, 1)");
    }
}
}  // namespace detail

/// The state a dropout node keeps across the runs of a plan: the runs drawn.
struct dropout_state {
    std::uint64_t runs = 0;
};

namespace op {
/// node<dropout_mask<Rate, Seed>, X>: the dropout mask of X's extents, rate
/// and seed static (X gives only its extents).
template <double Rate, std::uint64_t Seed>
struct dropout_mask {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "dropout";
    static constexpr double rate = Rate;
    static constexpr std::uint64_t seed = Seed;
    static constexpr bool check_rate() {
        constexpr bool ok = Rate >= 0.0 && Rate < 1.0;
        if constexpr (!ok) {
            diagnostic::dropout_rate_outside_0_1<dropout_mask> error;
        }
        static_assert(ok, "typeflow: dropout: the rate must be in [0, 1)");
        return ok;
    }
    template <class X>
    static constexpr auto rule() {
        using failure = require::first_failure_t<
            // the rate must be in [0, 1)
            require::that<(Rate >= 0.0 && Rate < 1.0), diagnostic::dropout_rate_outside_0_1<dropout_mask>>,
            require::floating<dropout_mask, value_type_t<X>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<X>, shape_t<X>, device_t<X>>{};
    }
    template <class X>
    using traits = decltype(rule<X>());
    static dims infer(const dims& x) { return x; }
};

/// node<dropout_mask_fed, X, R, S>: the dropout mask of X's extents with rate
/// R (a scalar of X's dtype) and seed S (an int64 scalar), both read at run
/// time; a rate outside [0, 1) is a tf::error.
struct dropout_mask_fed {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "dropout";
    template <class X, class R, class S>
    static constexpr auto rule() {
        static_assert(std::is_same_v<value_type_t<S>, std::int64_t>, "typeflow: dropout: the seed must be int64");
        using failure = require::first_failure_t<
            require::floating<dropout_mask_fed, value_type_t<X>>,
            require::same_dtype<dropout_mask_fed, value_type_t<X>, value_type_t<R>>,
            require::same_device<dropout_mask_fed, device_t<X>, device_t<R>>,
            // the rate must be a scalar (shape<>)
            require::that<shape_t<R>::rank == 0, diagnostic::dropout_rate_must_be_scalar<dropout_mask_fed, shape_t<R>>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<X>, shape_t<X>, device_t<X>>{};
    }
    template <class X, class R, class S>
    using traits = decltype(rule<X, R, S>());
    static dims infer(const dims& x, const dims&, const dims&) { return x; }
};
}  // namespace op

/// The dropout mask of x's extents, rate and seed static: each element is
/// 1 / (1 - Rate) (in x's dtype) with probability 1 - Rate, else 0, a new
/// mask at each run (see the file comment). Rate must be in [0, 1).
template <double Rate, std::uint64_t Seed = 0, operand X>
decltype(auto) dropout_mask(const X& x) {
    return make_node<op::dropout_mask<Rate, Seed>>(x);
}

namespace detail {
template <class X, class R>
decltype(auto) dropout_mask_of(const X& x, const R& rate, std::uint64_t seed) {
    using T = value_type_t<X>;
    using D = device_t<X>;
    const scalar<std::int64_t, D> s(static_cast<std::int64_t>(seed));
    if constexpr (expression<R>) {
        return make_node<op::dropout_mask_fed>(x, rate, s);
    } else {
        static_assert(std::is_arithmetic_v<R>, "typeflow: dropout: the rate must be a number or a scalar expression");
        check_dropout_rate(static_cast<double>(static_cast<T>(rate)));
        return make_node<op::dropout_mask_fed>(x, scalar<T, D>(static_cast<T>(rate)), s);
    }
}
}  // namespace detail

/// The dropout mask with a rate given at run time: a number (a tf::error now
/// unless in [0, 1)) or a scalar expression of x's dtype (checked each run).
template <operand X, class R>
decltype(auto) dropout_mask(const X& x, const R& rate, std::uint64_t seed = 0) {
    if constexpr (detail::is_misuse_v<X> || detail::is_misuse_v<R>) {
        return detail::first_misuse<X, R>();
    } else {
        return detail::dropout_mask_of(x, rate, seed);
    }
}

/// Inverted dropout (tf.nn.dropout) with a static rate and seed: x * mask,
/// each element kept with probability 1 - Rate and scaled by 1 / (1 - Rate),
/// or zeroed. dropout<0>(x) is x.
template <double Rate, std::uint64_t Seed = 0, operand X>
decltype(auto) dropout(const X& x) {
    static_assert(op::dropout_mask<Rate, Seed>::check_rate());
    if constexpr (detail::is_misuse_v<X>) return detail::first_misuse<X>();
    else if constexpr (Rate == 0.0) return X(x);  // a copy, not a reference to x
    else return x * dropout_mask<Rate, Seed>(x);
}
/// Inverted dropout with a rate given at run time (see dropout_mask).
template <operand X, class R>
decltype(auto) dropout(const X& x, const R& rate, std::uint64_t seed = 0) {
    return x * dropout_mask(x, rate, seed);
}

/// No gradient flows into a mask: dropout's gradient is dy * mask.
template <double Rate, std::uint64_t Seed>
struct gradient<op::dropout_mask<Rate, Seed>> : no_gradient {};
template <>
struct gradient<op::dropout_mask_fed> : no_gradient {};

}  // namespace typeflow
