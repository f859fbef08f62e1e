// typeflow/layers/embedding.hpp — the embedding layer (Keras' Embedding). See
// layer.hpp for the protocol.
//
//   tf::layers::embedding<1000, 64>   int ids [batch, seq] -> [batch, seq, 64];
//                                     embedding/embeddings [1000, 64], uniform(-0.05, 0.05)
//
// The layer is a tf::embedding_lookup of its table, so its gradient is sparse
// (expr/ops/gather.hpp): sgd, momentum, adagrad and adam update only the rows
// of the ids in the batch. The ids are int32 or int64; the table's dtype is
// the model's floating dtype, float when the model's input is integer (as
// Keras' default float32).
#pragma once
#include <type_traits>

#include <typeflow/expr/init.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/ops/gather.hpp>
#include <typeflow/layers/layer.hpp>

namespace typeflow::layers {

namespace expects {
/// [batch, ...] of int32 or int64 ids
struct batch_ids;
}  // namespace expects

/// Maps each id in [0, InputDim) to a learned vector of OutputDim elements:
/// [batch, d...] -> [batch, d..., OutputDim]; the table "<name>/embeddings"
/// [InputDim, OutputDim] starts uniform on [-0.05, 0.05). An id outside
/// [0, InputDim) is a tf::error when the model runs.
template <index_t InputDim, index_t OutputDim>
struct embedding {
    static_assert(InputDim > 0 && OutputDim > 0,
                  "typeflow: layers::embedding: the vocabulary size and the output dimension must be positive");
    static constexpr fixed_string kind = "embedding";
    static constexpr std::string_view class_name = "Embedding";
    using expects = expects::batch_ids;
    static constexpr bool accepts(dims in) { return in.rank >= 1 && in.rank < max_rank; }

    template <fixed_string Name, dims In, class T, class D>
    struct bind {
        /// The table's dtype: the model's when floating point, else float.
        using weight_type = std::conditional_t<std::is_floating_point_v<T>, T, float>;
        /// The dtype of the layer's output (the table's), which a model's
        /// following layers and its learning rate should use.
        using output_type = weight_type;
        static constexpr dims output = [] {
            dims d = In;
            d.d[d.rank++] = OutputDim;
            return d;
        }();
        static constexpr index_t params = InputDim * OutputDim, trainable_params = params;
        variable<detail::var_name<Name, "embeddings">(), weight_type, shape<InputDim, OutputDim>, D> embeddings{
            init::uniform{-0.05, 0.05}};

        template <class X, mode_c M>
        auto operator()(const X& x, M) const {
            return embedding_lookup(embeddings, x);
        }
        template <class F>
        void for_each_variable(F&& f) const {
            f(embeddings);
        }
    };
};

}  // namespace typeflow::layers
