// typeflow/layers/core.hpp — dense, flatten and activation layers (Keras'
// Dense, Flatten, Activation). See layer.hpp for the protocol.
//
//   tf::layers::dense<64, tf::layers::relu>   [batch, in] -> [batch, 64]; dense/kernel [in, 64], dense/bias [64]
//   tf::layers::flatten                       [batch, d1, d2, ...] -> [batch, d1 * d2 * ...]
//   tf::layers::activation<tf::layers::relu>  the activation alone
#pragma once
#include <typeflow/expr/init.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/matmul.hpp>
#include <typeflow/expr/ops/reshape.hpp>
#include <typeflow/layers/layer.hpp>

namespace typeflow::layers {

/// What a layer expects of its input, as the chain error names it.
namespace expects {
/// [batch, features]
struct batch_features;
/// [batch, height, width, channels]
struct batch_height_width_channels;
/// a batch axis and at least one more
struct batch_and_features;
}  // namespace expects

/// A densely connected layer: act(x W + b), x [batch, in], W [in, Units]
/// (Glorot-uniform initialised, as Keras), b [Units] (zeros).
template <index_t Units, class Act = linear, bool UseBias = true>
struct dense {
    static_assert(Units > 0, "typeflow: layers::dense: the number of units must be positive");
    static constexpr fixed_string kind = "dense";
    static constexpr std::string_view class_name = "Dense";
    using expects = expects::batch_features;
    static constexpr bool accepts(dims in) { return in.rank == 2 && in.d[1] != dyn; }

    template <fixed_string Name, dims In, class T, class D>
    struct bind {
        static constexpr index_t in = In.d[1];
        static constexpr dims output = detail::with_last(In, Units);
        static constexpr index_t params = in * Units + (UseBias ? Units : 0), trainable_params = params;
        variable<detail::var_name<Name, "kernel">(), T, shape<in, Units>, D> kernel{init::glorot_uniform{}};
        variable<detail::var_name<Name, "bias">(), T, shape<Units>, D> bias{init::zeros{}};

        template <class X, mode_c M>
        auto operator()(const X& x, M) const {
            if constexpr (UseBias) return Act::apply(matmul(x, kernel) + bias);
            else return Act::apply(matmul(x, kernel));
        }
        template <class F>
        void for_each_variable(F&& f) const {
            f(kernel);
            if constexpr (UseBias) f(bias);
        }
    };
};

/// Flattens each example: [batch, d1, d2, ...] -> [batch, d1 * d2 * ...].
struct flatten {
    static constexpr fixed_string kind = "flatten";
    static constexpr std::string_view class_name = "Flatten";
    using expects = expects::batch_and_features;
    static constexpr bool accepts(dims in) { return in.rank >= 2 && detail::example_size(in) != dyn; }

    template <fixed_string Name, dims In, class T, class D>
    struct bind {
        static constexpr dims output{In.d[0], detail::example_size(In)};
        static constexpr index_t params = 0, trainable_params = 0;
        template <class X, mode_c M>
        auto operator()(const X& x, M) const {
            return reshape<-1, detail::example_size(In)>(x);
        }
        template <class F>
        void for_each_variable(F&&) const {}
    };
};

/// An activation on its own (Keras' Activation("relu")).
template <class Act>
struct activation {
    static constexpr fixed_string kind = "activation";
    static constexpr std::string_view class_name = "Activation";
    using expects = expects::batch_and_features;
    static constexpr bool accepts(dims in) { return in.rank >= 1; }

    template <fixed_string Name, dims In, class T, class D>
    struct bind {
        static constexpr dims output = In;
        static constexpr index_t params = 0, trainable_params = 0;
        template <class X, mode_c M>
        auto operator()(const X& x, M) const {
            return Act::apply(x);
        }
        template <class F>
        void for_each_variable(F&&) const {}
    };
};

}  // namespace typeflow::layers
