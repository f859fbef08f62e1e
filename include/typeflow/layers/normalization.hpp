// typeflow/layers/normalization.hpp — batch and layer normalisation layers
// (Keras' BatchNormalization and LayerNormalization, over the last axis). See
// layer.hpp for the protocol.
//
//   tf::layers::batch_norm<>              momentum 0.99, epsilon 1e-3, as BatchNormalization()
//   tf::layers::batch_norm<0.9, 1e-5>
//   tf::layers::layer_norm<>              epsilon 1e-3, as LayerNormalization()
//
// batch_norm over input [batch, ..., C] owns "<name>/gamma" (ones) and
// "<name>/beta" (zeros), trainable, and "<name>/moving_mean" (zeros) and
// "<name>/moving_variance" (ones), non-trainable variables, all of shape [C].
// In training mode it normalises with the batch's mean and (biased) variance
// over every axis but the last, and its output carries control dependencies
// on the updates moving = momentum * moving + (1 - momentum) * batch, so each
// run that computes the output (each training step) updates the moving
// statistics; in inference mode it normalises with the moving statistics.
// Like Keras, the parameter count includes the moving statistics: params is
// 4 C, trainable_params 2 C.
//
// layer_norm owns "<name>/gamma" and "<name>/beta" [C] and normalises each
// example over its last axis in both modes (tf::layer_normalization).
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>

#include <typeflow/expr/init.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/let.hpp>
#include <typeflow/expr/ops/assign.hpp>
#include <typeflow/expr/ops/control.hpp>
#include <typeflow/expr/ops/normalization.hpp>
#include <typeflow/layers/core.hpp>

namespace typeflow::layers {

namespace detail {
/// V as a fraction Num / Den with Den the smallest power of ten (up to
/// 10^18) for which Num / Den rounds to V: 0.99 is 99 / 100, 1e-3 is 1 / 1000.
template <double V>
struct decimal {
    static_assert(V >= 0.0 && V < 1.0e18, "typeflow: layers: a hyperparameter is negative or too large");
    struct fraction {
        long long num, den;
    };
    static constexpr fraction find() {
        long long den = 1;
        for (int k = 0; k <= 18; ++k, den *= 10) {
            const double scaled = V * static_cast<double>(den);
            if (scaled >= 9.0e18) break;
            const auto num = static_cast<long long>(scaled + 0.5);
            if (static_cast<double>(num) / static_cast<double>(den) == V) return {num, den};
            if (k == 18) return {num, den};
        }
        return {static_cast<long long>(V + 0.5), 1};
    }
    static constexpr long long num = find().num, den = find().den;
};
/// V as a tf::literal of dtype T on device D (identified by its type).
template <class T, double V, class D>
using decimal_literal = literal<T, decimal<V>::num, decimal<V>::den, D>;
/// 1 - V as a literal, exactly (Den - Num) / Den for V = Num / Den.
template <class T, double V, class D>
using complement_literal = literal<T, decimal<V>::den - decimal<V>::num, decimal<V>::den, D>;

/// What a member of a layer is when the layer does not use it.
struct absent {
    absent() = default;
    template <class Init>
    constexpr explicit absent(Init) noexcept {}
};
/// The extents that a normalisation over the last axis takes.
constexpr bool last_axis_static(dims in) { return in.rank >= 2 && in.d[in.rank - 1] != dyn; }

/// moments over axes 0 .. R-2 of a rank-R expression (per-channel statistics).
template <std::size_t... I, class X>
auto moments_but_last(const X& x, std::index_sequence<I...>) {
    return typeflow::moments<static_cast<index_t>(I)...>(x);
}
}  // namespace detail

/// Batch normalisation over the last axis (Keras' BatchNormalization(axis=-1)):
/// momentum and epsilon as in Keras (0.99, 1e-3); Center adds beta, Scale gamma.
template <double Momentum = 0.99, double Epsilon = 1e-3, bool Center = true, bool Scale = true>
struct batch_norm {
    static_assert(Momentum >= 0.0 && Momentum <= 1.0, "typeflow: layers::batch_norm: the momentum must be in [0, 1]");
    static_assert(Epsilon > 0.0, "typeflow: layers::batch_norm: epsilon must be positive");
    static constexpr fixed_string kind = "batch_normalization";
    static constexpr std::string_view class_name = "BatchNormalization";
    static constexpr double momentum = Momentum, epsilon = Epsilon;
    using expects = expects::batch_and_features;
    static constexpr bool accepts(dims in) { return detail::last_axis_static(in); }

    template <fixed_string Name, dims In, class T, class D>
    struct bind {
        static constexpr index_t channels = In.d[In.rank - 1];
        static constexpr dims output = In;
        static constexpr index_t trainable_params = (index_t{Center} + index_t{Scale}) * channels;
        static constexpr index_t params = trainable_params + 2 * channels;
        using vector = shape<channels>;
        [[no_unique_address]] meta::if_t<Scale, variable<detail::var_name<Name, "gamma">(), T, vector, D>,
                                                 detail::absent>
            gamma{init::ones{}};
        [[no_unique_address]] meta::if_t<Center, variable<detail::var_name<Name, "beta">(), T, vector, D>,
                                                 detail::absent>
            beta{init::zeros{}};
        non_trainable_variable<detail::var_name<Name, "moving_mean">(), T, vector, D> moving_mean{init::zeros{}};
        non_trainable_variable<detail::var_name<Name, "moving_variance">(), T, vector, D> moving_variance{init::ones{}};

        // The training output: x normalised with its batch statistics, which
        // also update the moving ones. A tf::let named by bind and X: its
        // graph spells x five times (the normalisation, the two statistics
        // and their two updates), and a model's later layers would spell it
        // five times again for each batch_norm.
        template <class X>
        struct training_output {
            const bind* self;
            const X* x;
            auto operator()() const {
                const detail::decimal_literal<T, Epsilon, D> eps;
                auto [m, v] = detail::moments_but_last(*x, std::make_index_sequence<In.rank - 1>{});
                const detail::decimal_literal<T, Momentum, D> keep;
                const detail::complement_literal<T, Momentum, D> take;
                auto update_mean = assign(self->moving_mean, self->moving_mean * keep + m * take);
                auto update_variance = assign(self->moving_variance, self->moving_variance * keep + v * take);
                return with_dependencies(batch_normalization(*x, m, v, self->offset(), self->scale(), eps),
                                         update_mean, update_variance);
            }
        };
        template <class X, mode_c M>
        auto operator()(const X& x, M) const {
            if constexpr (M::training) {
                return let(training_output<X>{this, &x});
            } else {
                const detail::decimal_literal<T, Epsilon, D> eps;
                return batch_normalization(x, moving_mean, moving_variance, offset(), scale(), eps);
            }
        }
        template <class F>
        void for_each_variable(F&& f) const {
            if constexpr (Scale) f(gamma);
            if constexpr (Center) f(beta);
            f(moving_mean);
            f(moving_variance);
        }

    private:
        auto scale() const {
            if constexpr (Scale) return gamma;
            else return literal<T, 1, 1, D>{};
        }
        auto offset() const {
            if constexpr (Center) return beta;
            else return literal<T, 0, 1, D>{};
        }
    };
};

/// Layer normalisation over the last axis (Keras' LayerNormalization(axis=-1)):
/// epsilon as in Keras (1e-3); Center adds beta, Scale gamma.
template <double Epsilon = 1e-3, bool Center = true, bool Scale = true>
struct layer_norm {
    static_assert(Epsilon > 0.0, "typeflow: layers::layer_norm: epsilon must be positive");
    static constexpr fixed_string kind = "layer_normalization";
    static constexpr std::string_view class_name = "LayerNormalization";
    static constexpr double epsilon = Epsilon;
    using expects = expects::batch_and_features;
    static constexpr bool accepts(dims in) { return detail::last_axis_static(in); }

    template <fixed_string Name, dims In, class T, class D>
    struct bind {
        static constexpr index_t channels = In.d[In.rank - 1];
        static constexpr dims output = In;
        static constexpr index_t params = (index_t{Center} + index_t{Scale}) * channels, trainable_params = params;
        using vector = shape<channels>;
        [[no_unique_address]] meta::if_t<Scale, variable<detail::var_name<Name, "gamma">(), T, vector, D>,
                                                 detail::absent>
            gamma{init::ones{}};
        [[no_unique_address]] meta::if_t<Center, variable<detail::var_name<Name, "beta">(), T, vector, D>,
                                                 detail::absent>
            beta{init::zeros{}};

        template <class X, mode_c M>
        auto operator()(const X& x, M) const {
            const detail::decimal_literal<T, Epsilon, D> eps;
            if constexpr (Scale && Center) return layer_normalization(x, gamma, beta, eps);
            else if constexpr (Scale) return layer_normalization(x, gamma, literal<T, 0, 1, D>{}, eps);
            else if constexpr (Center) return layer_normalization(x, literal<T, 1, 1, D>{}, beta, eps);
            else return layer_normalization(x, literal<T, 1, 1, D>{}, literal<T, 0, 1, D>{}, eps);
        }
        template <class F>
        void for_each_variable(F&& f) const {
            if constexpr (Scale) f(gamma);
            if constexpr (Center) f(beta);
        }
    };
};

}  // namespace typeflow::layers
