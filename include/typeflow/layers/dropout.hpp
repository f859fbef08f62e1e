// typeflow/layers/dropout.hpp — the dropout layer (Keras' Dropout). See
// layer.hpp for the protocol.
//
//   tf::layers::dropout<0.5>        drops half of the inputs in training, the identity in inference
//   tf::layers::dropout<0.2, 7>     with seed 7
// In training mode each element is zeroed with probability Rate and the
// others scaled by 1 / (1 - Rate) (tf::dropout, expr/ops/random.hpp), a new
// mask at every training step. The masks' seed is Seed mixed with the layer's
// name, so the dropout layers of one model draw different masks, and a model
// trained again in a new session draws the same sequence of masks.
#pragma once
#include <cstdint>

#include <typeflow/expr/ops/random.hpp>
#include <typeflow/layers/core.hpp>

namespace typeflow::layers {

namespace detail {
/// Seed mixed with the FNV-1a hash of a layer's name.
template <fixed_string Name>
constexpr std::uint64_t layer_seed(std::uint64_t seed) noexcept {
    std::uint64_t h = 1469598103934665603ull;
    for (char c : Name.view()) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return typeflow::detail::mix64(h ^ typeflow::detail::mix64(seed));
}
}  // namespace detail

/// Inverted dropout of rate Rate (in [0, 1)) in training; the identity in inference.
template <double Rate, std::uint64_t Seed = 0>
struct dropout {
    static_assert(Rate >= 0.0 && Rate < 1.0, "typeflow: layers::dropout: the rate must be in [0, 1)");
    static constexpr fixed_string kind = "dropout";
    static constexpr std::string_view class_name = "Dropout";
    static constexpr double rate = Rate;
    using expects = expects::batch_and_features;
    static constexpr bool accepts(dims in) { return in.rank >= 1; }

    template <fixed_string Name, dims In, class T, class D>
    struct bind {
        static constexpr dims output = In;
        static constexpr index_t params = 0, trainable_params = 0;
        /// The seed of this layer's masks.
        static constexpr std::uint64_t seed = detail::layer_seed<Name>(Seed);
        template <class X, mode_c M>
        auto operator()(const X& x, M) const {
            if constexpr (M::training) return typeflow::dropout<Rate, seed>(x);
            else return x;
        }
        template <class F>
        void for_each_variable(F&&) const {}
    };
};

}  // namespace typeflow::layers
