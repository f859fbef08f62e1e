// typeflow/models/functional.hpp — Keras' functional API: layers applied to
// expressions, and models with several inputs and outputs.
//
//   tf::placeholder<"image", float, tf::shape<tf::dyn, 8>> image;
//   tf::placeholder<"meta", float, tf::shape<tf::dyn, 3>> meta;
//   tf::layers::layer<"image_dense", tf::layers::dense<16, tf::layers::relu>> image_dense;
//   tf::layers::layer<"kind", tf::layers::dense<4>> kind;          // a head: 4 classes
//   tf::layers::layer<"score", tf::layers::dense<1>> score;        // a head: one number
//   auto net = tf::models::functional(tf::models::inputs(image, meta), [=](auto mode) {
//       auto h = image_dense(image, mode);
//       return tf::models::outputs<"kind", "score">(kind(h, mode), score(tf::concat<-1>(h, meta), mode));
//   });
//   auto model = net.compile(tf::models::per_output(sparse_ce, mse), tf::optimizers::adam{}, tf::metrics::accuracy{});
//
// A layer<Name, Spec> creates its variables ("<Name>/kernel", ...) the first
// time it is called, for that input's shape and dtype (as Keras builds a
// layer on its first call); later calls share them, and a call on another
// input shape is a tf::error naming the layer and both shapes. Copies of a
// layer share its variables.
#pragma once
#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <typeinfo>
#include <utility>
#include <vector>

#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/layers/layer.hpp>
#include <typeflow/models/sequential.hpp>

namespace typeflow::diagnostic {
/// A functional layer is called on an input it does not take.
template <class Layer, class InputShape, class Expected>
struct layer_input_does_not_fit;
}  // namespace typeflow::diagnostic

namespace typeflow::layers {

namespace detail {
/// One row of a functional model's summary: a layer as it was built.
struct summary_row {
    std::string name, class_name;
    dims output{};
    index_t params = 0, trainable_params = 0;
};
/// Where layers called on this thread report themselves while a functional
/// model writes its summary (null otherwise).
inline thread_local std::vector<summary_row>* summary_sink = nullptr;
}  // namespace detail

/// A named layer for the functional API (see the file comment).
template <fixed_string Name, class Spec>
class layer {
public:
    static constexpr std::string_view name() { return Name.view(); }

    /// The layer applied to x in mode m.
    template <expression X, mode_c M>
    auto operator()(const X& x, M m) const {
        return bound<X>()(x, m);
    }
    /// The layer applied to x with a mask (the recurrent layers: [batch, time] bool), in mode m.
    template <expression X, expression K, mode_c M>
    auto operator()(const X& x, const K& mask, M m) const {
        return bound<X>()(x, mask, m);
    }
    /// A recurrent layer's output and final state (Keras' return_state=True):
    /// std::tuple(output, h), or (output, h, c) for LSTM.
    template <expression X, mode_c M>
    auto with_state(const X& x, M m) const {
        return bound<X>().with_state(x, m);
    }
    /// The same with a mask [batch, time] (bool).
    template <expression X, expression K, mode_c M>
    auto with_state(const X& x, const K& mask, M m) const {
        return bound<X>().with_state(x, mask, m);
    }
    /// True once the layer has been called (and so has variables).
    bool built() const noexcept { return st_->bound != nullptr; }

private:
    template <class X>
    const auto& bound() const {
        constexpr dims in = shape_t<X>::value;
        constexpr bool fits = Spec::accepts(in);
        if constexpr (!fits) {
            diagnostic::layer_input_does_not_fit<layer, shape_t<X>, typename Spec::expects> error;
        }
        static_assert(fits, "typeflow: layer: the layer does not take an input of this shape (the first error names "
                            "the layer, the shape and what the layer expects)");
        using B = typename Spec::template bind<Name, in, value_type_t<X>, device_t<X>>;
        if (!st_->bound) {
            st_->bound = std::make_shared<B>();
            st_->type = &typeid(B);
            st_->input = in;
        } else if (*st_->type != typeid(B)) {
            typeflow::detail::raise(typeflow::detail::message()
                                    << "layer '" << Name.view() << "' was built for input " << st_->input
                                    << " and is now called on " << in << " (or another dtype or device)");
        }
        if (auto* sink = detail::summary_sink) {  // a shared layer is listed once
            bool listed = false;
            for (const auto& r : *sink) listed = listed || r.name == Name.view();
            if (!listed)
                sink->push_back({std::string(Name.view()), std::string(Spec::class_name), B::output, B::params,
                                 B::trainable_params});
        }
        return *static_cast<const B*>(st_->bound.get());
    }
    struct state {
        std::shared_ptr<void> bound;
        const std::type_info* type = nullptr;
        dims input{};
    };
    std::shared_ptr<state> st_ = std::make_shared<state>();
};

}  // namespace typeflow::layers


namespace typeflow::models {

/// The placeholders a functional model is fed, in order.
template <class... P>
struct inputs_t {
    std::tuple<P...> items;
};
template <class... P>
    requires(sizeof...(P) > 0 && (typeflow::detail::is_placeholder_v<P> && ...))
inputs_t<P...> inputs(const P&... p) {
    return {std::tuple<P...>(p...)};
}

/// The outputs of a functional model, with the names its logs use.
template <std::size_t M, class... E>
struct outputs_t {
    std::tuple<E...> items;
    std::array<std::string_view, M> names;
};
namespace detail {
inline constexpr std::string_view default_output_names[] = {"output_0", "output_1", "output_2", "output_3",
                                                            "output_4", "output_5", "output_6", "output_7"};
}
/// outputs<"kind", "score">(e1, e2): named outputs; outputs(e1, e2) names them output_0, output_1.
template <fixed_string... Names, expression... E>
    requires(sizeof...(Names) == 0 || sizeof...(Names) == sizeof...(E))
auto outputs(const E&... e) {
    static_assert(sizeof...(E) > 0 && sizeof...(E) <= 8, "typeflow: outputs: a model has 1 to 8 outputs");
    outputs_t<sizeof...(E), E...> o{std::tuple<E...>(e...), {}};
    if constexpr (sizeof...(Names) == 0) {
        for (std::size_t i = 0; i < sizeof...(E); ++i) o.names[i] = detail::default_output_names[i];
    } else {
        o.names = {Names.view()...};
    }
    return o;
}

/// A model of several inputs and outputs: `build(mode)` returns
/// outputs(...) of expressions over the inputs (see the file comment).
template <class In, class Build>
class functional_model;
template <class... P, class Build>
class functional_model<inputs_t<P...>, Build> {
public:
    using value_type = value_type_t<std::tuple_element_t<0, std::tuple<P...>>>;
    using device = device_t<std::tuple_element_t<0, std::tuple<P...>>>;

    functional_model(inputs_t<P...> in, Build b) : in_(std::move(in)), build_(std::move(b)) {
        (void)build_(training);  // build every layer now, as Keras does
    }
    /// The input placeholders, in order.
    const std::tuple<P...>& input_placeholders() const noexcept { return in_.items; }
    /// The outputs in mode m, as a tuple of expressions.
    template <mode_c M>
    auto outputs(M m) const {
        return build_(m).items;
    }
    /// The outputs' names.
    auto output_names() const { return build_(inference).names; }
    static constexpr std::size_t input_count = sizeof...(P);

    /// Keras' model.compile(loss, optimizer, metrics...) (models/model.hpp).
    template <class Loss, class Opt, class... Metrics>
    auto compile(Loss loss, Opt optimizer, Metrics... metrics) const;

    /// The table Keras' model.summary() prints: the inputs, then each layer
    /// in the order the model first calls it, with its class, output shape and
    /// parameter count, and the totals. Ops that are not layers (concatenate,
    /// arithmetic) have no row, as Keras' ops do not.
    std::string summary_string() const {
        std::vector<layers::detail::summary_row> rows;
        std::apply([&](const auto&... p) { (rows.push_back({std::string(p.name()), "InputLayer", shape_t<P>::value, 0, 0}), ...); },
                   in_.items);
        layers::detail::summary_sink = &rows;
        try {
            (void)build_(inference);
        } catch (...) {
            layers::detail::summary_sink = nullptr;
            throw;
        }
        layers::detail::summary_sink = nullptr;
        std::vector<detail::summary_entry> entries;
        for (const auto& r : rows) entries.push_back({r.name, r.class_name, r.output, r.params, r.trainable_params});
        return detail::summary_table("functional", 33, entries.data(), entries.size());
    }
    /// Prints summary_string() to stdout.
    void summary() const { std::fputs(summary_string().c_str(), stdout); }

private:
    inputs_t<P...> in_;
    Build build_;
};

/// A functional model of these inputs whose outputs `build(mode)` makes.
template <class... P, class Build>
functional_model<inputs_t<P...>, Build> functional(inputs_t<P...> in, Build build) {
    return {std::move(in), std::move(build)};
}

}  // namespace typeflow::models
