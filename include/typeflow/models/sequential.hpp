// typeflow/models/sequential.hpp — a Keras Sequential model whose type is its
// list of layers: output shapes and parameter counts are compile-time
// constants, a layer that does not take the previous layer's output is a
// compile error naming both layers and both shapes, and every layer gets
// Keras' automatic name ("conv2d", "dense", "dense_1", ...) unless named.
//
//   using cnn = tf::models::sequential<tf::layers::input<float, 28, 28, 1>,
//                                      tf::layers::conv2d<32, 3, tf::layers::relu>, tf::layers::max_pool2d<2>,
//                                      tf::layers::flatten, tf::layers::dense<64, tf::layers::relu>,
//                                      tf::layers::dense<10>>;
//   static_assert(cnn::params == 347146);
//   cnn model;                                   // owns "conv2d/kernel", ..., "dense_1/bias"
//   auto logits = model(x, tf::training);        // an expression: [?, 28, 28, 1] -> [?, 10]
//   model.summary();
#pragma once
#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include <typeflow/core/config.hpp>
#include <typeflow/core/device.hpp>
#include <typeflow/core/type_list.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/layers/layer.hpp>

namespace typeflow::layers {
/// A layer specification with the name the user gives it:
/// named<"encoder", dense<64>> owns "encoder/kernel" and "encoder/bias".
template <fixed_string Name, class Spec>
struct named : Spec {
    static constexpr fixed_string given_name = Name;
};
}  // namespace typeflow::layers

namespace typeflow::models {

namespace detail {
template <class Spec>
concept has_given_name = requires { Spec::given_name; };

// The name of layer I of Specs: its given name, or its kind numbered by the
// layers of that kind before it.
template <std::size_t I, class... Specs>
constexpr auto layer_name() {
    using S = meta::at_t<I, Specs...>;
    if constexpr (has_given_name<S>) {
        return S::given_name;
    } else {
        constexpr std::size_t k = [] {
            constexpr std::string_view kinds[] = {Specs::kind.view()...};
            constexpr bool given[] = {has_given_name<Specs>...};
            std::size_t c = 0;
            for (std::size_t i = 0; i < I; ++i)
                if (kinds[i] == kinds[I] && !given[i]) ++c;
            return c;
        }();
        return layers::detail::auto_name<S::kind, k>();
    }
}

// The name of layer I of Specs, as a constant with static storage (its view outlives any call).
template <std::size_t I, class... Specs>
inline constexpr auto layer_name_v = layer_name<I, Specs...>();

// A bound layer's output dtype: its output_type, or T.
template <class B, class T>
struct output_type_of {
    using type = T;
};
template <class B, class T>
    requires requires { typename B::output_type; }
struct output_type_of<B, T> {
    using type = typename B::output_type;
};

// Binds the specs one after another, each to the previous output.
template <class T, class D, class Names, dims In, std::size_t I, class Prev, class Done, class... Rest>
struct chain {
    using type = Done;
    static constexpr dims output = In;
};
template <class T, class D, class Names, dims In, std::size_t I, class Prev, class... Done, class L, class... Rest>
struct chain<T, D, Names, In, I, Prev, meta::list<Done...>, L, Rest...> {
    static constexpr bool fits = L::accepts(In);
    static constexpr bool check() {
        if constexpr (!fits) {
            diagnostic::layer_shapes_do_not_chain<Prev, shape_from_dims<In>, L, typename L::expects> error;
        }
        static_assert(fits, "typeflow: sequential: a layer does not take the output of the layer before it; the "
                            "first error names both layers, that output's shape and what the layer expects");
        return fits;
    }
    template <bool F, int = 0>
    struct next_t {
        using bound = typename L::template bind<Names::template name<I>(), In, T, D>;
        // The next layer's dtype: this one's output dtype (an embedding's
        // table) where it says, else the same.
        using out_t = typename output_type_of<bound, T>::type;
        using type = chain<out_t, D, Names, bound::output, I + 1, L, meta::list<Done..., bound>, Rest...>;
    };
    template <int Z>
    struct next_t<false, Z> {  // stop: one error, not one per following layer
        using type = chain<T, D, Names, In, I, L, meta::list<Done...>>;
    };
    using next = typename next_t<check()>::type;  // check() here: the error comes with the type
    using type = typename next::type;
    static constexpr dims output = next::output;
};

template <class... Specs>
struct names_of {
    template <std::size_t I>
    static constexpr auto name() {
        return layer_name<I, Specs...>();
    }
};

template <class L>
struct as_tuple;
template <class... B>
struct as_tuple<meta::list<B...>> {
    using type = std::tuple<B...>;
};

// "(None, 26, 26, 32)" as Keras prints output shapes.
TYPEFLOW_DECL std::string keras_shape(const dims& d);
/// One row of a summary: a layer's name, class, output extents and parameters.
struct summary_entry {
    std::string_view name, class_name;
    dims output{};
    index_t params = 0, trainable_params = 0;
};
/// The table Keras' model.summary() prints for a model named `model`, its
/// first column `width` wide: the rows, then the totals.
TYPEFLOW_DECL std::string summary_table(std::string_view model, std::size_t width, const summary_entry* rows,
                                        std::size_t n);
}  // namespace detail

/// A stack of layers applied in order to one input (Keras' Sequential):
/// sequential<layers::input<T, extents...>, layer specs...> (or
/// layers::input_on<device, T, extents...> for a model on another device). Copies share the
/// variables. Calling it on an expression [batch, extents...] gives the
/// output expression in the mode given (tf::training or tf::inference).
template <class Input, class... Specs>
class sequential;
namespace detail {
template <class M>
inline constexpr bool is_sequential_v = false;
template <class Input, class... Specs>
inline constexpr bool is_sequential_v<sequential<Input, Specs...>> = true;
}  // namespace detail

template <class Input, class... Specs>
class sequential {
    static_assert(sizeof...(Specs) > 0, "typeflow: sequential: a model needs at least one layer");
    using chain_t = detail::chain<typename Input::value_type, typename Input::device, detail::names_of<Specs...>, Input::batched, 0,
                                  Input, meta::list<>, Specs...>;

public:
    using value_type = typename Input::value_type;
    /// The device of the input, the variables and the ops (layers::input_on).
    using device = typename Input::device;
    using input_type = Input;
    /// The bound layers, in order.
    using layers_type = typename detail::as_tuple<typename chain_t::type>::type;
    static constexpr std::size_t layer_count = std::tuple_size_v<layers_type>;
    /// Extents of the input and output, the batch axis first (dyn).
    static constexpr dims input_dims = Input::batched;
    static constexpr dims output_dims = chain_t::output;
    using input_shape = shape_from_dims<input_dims>;
    using output_shape = shape_from_dims<output_dims>;
    /// The placeholder a compiled model feeds: "input", [batch, extents...].
    using input_placeholder = placeholder<"input", value_type, input_shape, device>;

private:
    template <std::size_t... I>
    static constexpr index_t sum_params(std::index_sequence<I...>, bool trainable) {
        return (index_t{0} + ... +
                (trainable ? std::tuple_element_t<I, layers_type>::trainable_params
                           : std::tuple_element_t<I, layers_type>::params));
    }

public:
    /// Parameters of all layers (known at compile time, as summary() prints them).
    static constexpr index_t params = sum_params(std::make_index_sequence<layer_count>{}, false);
    static constexpr index_t trainable_params = sum_params(std::make_index_sequence<layer_count>{}, true);

    /// The output for x ([batch, extents...]) in mode m.
    template <expression X, mode_c M>
    auto operator()(const X& x, M m) const {
        return apply<0>(x, m);
    }

    /// The model as compile() sees any model: its input placeholders, and its
    /// outputs in mode m (one each here).
    static const std::tuple<input_placeholder>& input_placeholders() noexcept {
        static const std::tuple<input_placeholder> p;
        return p;
    }
    template <mode_c M>
    auto outputs(M m) const {
        return std::make_tuple((*this)(input_placeholder{}, m));
    }
    static constexpr std::array<std::string_view, 1> output_names() noexcept { return {"output"}; }

    /// Keras' model.compile(loss, optimizer, metrics...): a compiled_model
    /// (models/model.hpp) that trains and evaluates this model.
    template <class Loss, class Opt, class... Metrics>
    auto compile(Loss loss, Opt optimizer, Metrics... metrics) const;

    /// Layer I (its variables are public members: layer<0>().kernel).
    template <std::size_t I>
    const auto& layer() const noexcept {
        return std::get<I>(layers_);
    }
    /// Calls f(variable) for every variable of every layer, in order.
    template <class F>
    void for_each_variable(F&& f) const {
        std::apply([&](const auto&... l) { (l.for_each_variable(f), ...); }, layers_);
    }
    /// The table Keras' model.summary() prints: each layer's name, class,
    /// output shape and parameter count, and the totals.
    std::string summary_string() const {
        return detail::summary_table("sequential", 29, summary_rows.data(), summary_rows.size());
    }
    /// Prints summary_string() to stdout.
    void summary() const { std::fputs(summary_string().c_str(), stdout); }

private:
    template <std::size_t I, class X, class M>
    auto apply(const X& x, M m) const {
        if constexpr (I == layer_count) return x;
        else return apply<I + 1>(std::get<I>(layers_)(x, m), m);
    }
    template <std::size_t... I>
    static constexpr std::array<detail::summary_entry, layer_count> summary_entries(std::index_sequence<I...>) {
        return {detail::summary_entry{detail::layer_name_v<I, Specs...>.view(), meta::at_t<I, Specs...>::class_name,
                                      std::tuple_element_t<I, layers_type>::output,
                                      std::tuple_element_t<I, layers_type>::params,
                                      std::tuple_element_t<I, layers_type>::trainable_params}...};
    }
    static constexpr std::array<detail::summary_entry, layer_count> summary_rows =
        summary_entries(std::make_index_sequence<layer_count>{});

    layers_type layers_;
};

}  // namespace typeflow::models

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/models/impl/sequential.ipp>
#endif
