// typeflow/layers/layer.hpp — what every Keras-style layer shares: the mode
// a model is called in (training or inference), activations, the input
// specification of a model, names made at compile time, and the protocol a
// layer specification follows.
//
// A layer *specification* (tf::layers::dense<64, tf::layers::relu>) says what
// the layer computes; a model binds it to a name and an input shape, which
// gives the *layer*: a value that owns its variables, named
// "<layer name>/kernel", "<layer name>/bias", ...:
//
//   template <fixed_string Name, dims In, class T, class D>
//   struct Spec::bind {
//       static constexpr dims output;                 // extent 0 is the batch (dyn)
//       static constexpr index_t params, trainable_params;
//       template <class X, class Mode> auto operator()(const X& x, Mode) const;
//       template <class F> void for_each_variable(F&& f) const;   // f(variable)
//   };
//   Spec::kind           the Keras name of the layer class ("dense", "conv2d")
//   Spec::class_name     as Keras' summary prints it ("Dense", "Conv2D")
//   Spec::accepts(dims)  whether the layer takes input of these extents
//   Spec::expects        what it expects, for the error when it does not
#pragma once
#include <cstddef>
#include <string_view>

#include <typeflow/core/device.hpp>
#include <typeflow/core/fixed_string.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/math.hpp>
#include <typeflow/expr/ops/nn.hpp>

namespace typeflow {

/// The mode a model or layer is called in: dropout drops and batch
/// normalisation uses batch statistics only in training (Keras' `training`).
struct training_t {
    static constexpr bool training = true;
};
struct inference_t {
    static constexpr bool training = false;
};
inline constexpr training_t training{};
inline constexpr inference_t inference{};
template <class M>
concept mode_c = std::is_same_v<M, training_t> || std::is_same_v<M, inference_t>;

namespace layers {

/// Activations of dense and convolution layers (Keras' `activation=`).
struct linear {
    static constexpr std::string_view name = "linear";
    template <class X>
    static auto apply(const X& x) {
        return x;
    }
};
struct relu {
    static constexpr std::string_view name = "relu";
    template <class X>
    static auto apply(const X& x) {
        return typeflow::relu(x);
    }
};
struct sigmoid {
    static constexpr std::string_view name = "sigmoid";
    template <class X>
    static auto apply(const X& x) {
        return typeflow::sigmoid(x);
    }
};
struct tanh {
    static constexpr std::string_view name = "tanh";
    template <class X>
    static auto apply(const X& x) {
        return typeflow::tanh(x);
    }
};
struct softmax {
    static constexpr std::string_view name = "softmax";
    template <class X>
    static auto apply(const X& x) {
        return typeflow::softmax<-1>(x);
    }
};

/// The input of a model: one example's extents, without the batch axis
/// (Keras' Input(shape=(28, 28, 1))): input<float, 28, 28, 1>, on the CPU.
template <value_type_c T, index_t... D>
struct input {
    using value_type = T;
    using device = cpu;
    static constexpr dims example{D...};
    /// With the batch axis in front, which is bound by each batch (dyn).
    static constexpr dims batched{dyn, D...};
};
/// The same input on device Dev: a sequential model built on it keeps its
/// variables there and runs its ops there (input_on<tf::gpu<0>, float, 28, 28, 1>);
/// batches are still fed from host tensors.
template <device_c Dev, value_type_c T, index_t... D>
struct input_on : input<T, D...> {
    using device = Dev;
};

namespace detail {
/// The decimal digits of K as a fixed_string: digits<12>() is "12".
template <std::size_t K>
constexpr auto digits() noexcept {
    constexpr std::size_t n = [] {
        std::size_t c = 1;
        for (std::size_t v = K; v >= 10; v /= 10) ++c;
        return c;
    }();
    fixed_string<n + 1> r;
    std::size_t v = K;
    for (std::size_t i = n; i-- > 0; v /= 10) r.data[i] = static_cast<char>('0' + v % 10);
    return r;
}
/// Keras' automatic names: the first layer of a kind is "dense", the next
/// "dense_1", "dense_2", ...
template <fixed_string Kind, std::size_t K>
constexpr auto auto_name() noexcept {
    if constexpr (K == 0) return Kind;
    else return concat<Kind, concat<"_", digits<K>()>()>();
}
/// "<layer>/<variable>".
template <fixed_string Layer, fixed_string Var>
constexpr auto var_name() noexcept {
    return concat<Layer, concat<"/", Var>()>();
}
/// dims with the last extent replaced by e.
constexpr dims with_last(dims d, index_t e) {
    if (d.rank) d.d[d.rank - 1] = e;
    return d;
}
/// Product of the extents after the batch axis (dyn when one is dyn).
constexpr index_t example_size(dims d) {
    index_t n = 1;
    for (std::size_t i = 1; i < d.rank; ++i) {
        if (d.d[i] == dyn) return dyn;
        n *= d.d[i];
    }
    return n;
}
}  // namespace detail
}  // namespace layers

namespace diagnostic {
/// A model's layer does not take the output of the layer before it: the
/// previous layer and its output shape, this layer and what it expects.
template <class PreviousLayer, class PreviousOutput, class Layer, class Expected>
struct layer_shapes_do_not_chain;
}  // namespace diagnostic

}  // namespace typeflow
