// typeflow/models/losses.hpp — Keras losses and metrics for compile(): each
// says what labels it takes (the labels placeholder's dtype and shape, from
// the model's output shape) and builds its per-example graph.
//
//   tf::losses::sparse_categorical_crossentropy<tf::losses::from_logits>   int32 labels [batch]
//   tf::losses::categorical_crossentropy<>                                 one-hot labels [batch, classes]
//   tf::losses::binary_crossentropy<>, tf::losses::mean_squared_error      labels of the output's shape
//   tf::metrics::accuracy                                                  as the loss implies (Keras' "accuracy")
#pragma once
#include <cmath>
#include <cstdint>
#include <string_view>

#include <typeflow/core/message.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/cast.hpp>
#include <typeflow/expr/ops/compare.hpp>
#include <typeflow/expr/ops/math.hpp>
#include <typeflow/expr/ops/nn.hpp>
#include <typeflow/expr/ops/reduce.hpp>

namespace typeflow::losses {

/// The loss takes logits (unnormalised scores), not probabilities: Keras' from_logits=True.
inline constexpr bool from_logits = true;

namespace detail {
constexpr dims drop_last(dims d) {
    if (d.rank) --d.rank;
    return d;
}
}  // namespace detail

/// Cross entropy of integer class labels [batch] (int32) against the model's
/// class scores [batch, classes]: probabilities (softmax output) by default,
/// logits with FromLogits = true.
template <bool FromLogits = false>
struct sparse_categorical_crossentropy {
    static constexpr bool sparse = true, binary = false, classification = true, from_logits = FromLogits;
    template <class T>
    using label_type = std::int32_t;
    /// The labels' extents for the model's output extents.
    static constexpr dims label_dims(dims out) { return detail::drop_last(out); }
    /// Per example: -log p[label].
    template <class Z, class Y>
    static auto per_example(const Z& out, const Y& labels) {
        if constexpr (FromLogits) {
            return sparse_softmax_cross_entropy(out, labels);
        } else {
            // log p is the logits of p (softmax(log p) = p); clipped as Keras does.
            using T = value_type_t<Z>;
            return sparse_softmax_cross_entropy(log(maximum(out, scalar<T, device_t<Z>>(T(1e-7)))), labels);
        }
    }
};

/// Cross entropy of one-hot (or soft) labels [batch, classes] against the
/// model's class probabilities (or logits with FromLogits = true).
template <bool FromLogits = false>
struct categorical_crossentropy {
    static constexpr bool sparse = false, binary = false, classification = true, from_logits = FromLogits;
    template <class T>
    using label_type = T;
    static constexpr dims label_dims(dims out) { return out; }
    template <class Z, class Y>
    static auto per_example(const Z& out, const Y& labels) {
        if constexpr (FromLogits) {
            return softmax_cross_entropy(out, labels);
        } else {
            using T = value_type_t<Z>;
            return -sum<-1>(labels * log(maximum(out / sum<-1>(out, keepdims), scalar<T, device_t<Z>>(T(1e-7)))));
        }
    }
};

/// Binary cross entropy of targets in [0, 1] against probabilities (or logits
/// with FromLogits = true), averaged over the last axis.
template <bool FromLogits = false>
struct binary_crossentropy {
    static constexpr bool sparse = false, binary = true, classification = true, from_logits = FromLogits;
    template <class T>
    using label_type = T;
    static constexpr dims label_dims(dims out) { return out; }
    template <class Z, class Y>
    static auto per_example(const Z& out, const Y& labels) {
        using T = value_type_t<Z>;
        using D = device_t<Z>;
        if constexpr (FromLogits) {
            return mean<-1>(sigmoid_cross_entropy(out, labels));
        } else {
            const auto eps = scalar<T, D>(T(1e-7));
            const auto p = minimum(maximum(out, eps), scalar<T, D>(T(1)) - eps);
            return -mean<-1>(labels * log(p) + (scalar<T, D>(T(1)) - labels) * log(scalar<T, D>(T(1)) - p));
        }
    }
};

/// Mean of the squared errors over the last axis.
struct mean_squared_error {
    static constexpr bool sparse = false, binary = false, classification = false, from_logits = false;
    template <class T>
    using label_type = T;
    static constexpr dims label_dims(dims out) { return out; }
    template <class Z, class Y>
    static auto per_example(const Z& out, const Y& labels) {
        return mean<-1>(square(out - labels));
    }
};

}  // namespace typeflow::losses

namespace typeflow::metrics {

/// The fraction of examples classified right, as the loss implies: the
/// arg-max of the output equals the integer label (sparse losses) or the
/// arg-max of the one-hot label (categorical), or the output rounded at 0.5
/// (0 for logits) equals the target (binary). Outputs with a regression
/// loss get none.
namespace detail {
// The position of the largest of p[0], ..., p[len - 1]: the first NaN, else the
// first of equal largest values (argmax's rule).
template <class T>
index_t argmax_of(const T* p, index_t len) noexcept {
    index_t best = 0;
    for (index_t l = 1; l < len; ++l) {
        const T v = p[l], bv = p[best];
        if (bv != bv) continue;
        if (v != v || v > bv) best = l;
    }
    return best;
}
}  // namespace detail

struct accuracy {
    static constexpr std::string_view name = "accuracy";
    /// Accuracy is logged for the outputs trained with a classification loss.
    template <class Loss>
    static constexpr bool applies_to = Loss::classification;
    template <class Loss, class Z, class Y>
    static auto per_example(const Z& out, const Y& labels) {
        using T = value_type_t<Z>;
        using D = device_t<Z>;
        if constexpr (Loss::sparse) {
            return cast<T>(equal(cast<value_type_t<Y>>(argmax<-1>(out)), labels));
        } else if constexpr (Loss::binary) {
            const auto threshold = scalar<T, D>(Loss::from_logits ? T(0) : T(0.5));
            return typeflow::mean<-1>(cast<T>(equal(out > threshold, labels > scalar<T, D>(T(0.5)))));
        } else {
            return cast<T>(equal(argmax<-1>(out), argmax<-1>(labels)));
        }
    }
    /// The mean of per_example over a batch, from the output's and the
    /// labels' values (what a compiled model computes after its step, from
    /// the outputs it fetches: the same value, with no graph of its own);
    /// NaN for a batch of no examples, as the graph's mean.
    template <class Loss, class T, class L>
    static double batch_mean(const tensor<T>& out, const tensor<L>& labels) {
        const index_t n = out.size();
        const index_t len = out.rank() ? out.dims()[out.rank() - 1] : 1;
        if (n == 0 || len == 0) return std::nan("");
        const index_t want = Loss::sparse ? n / len : n;  // a label per row, or one per output value
        if (labels.size() != want)
            typeflow::detail::raise(typeflow::detail::message()
                                    << "metrics::accuracy: labels of shape " << labels.dims() << " for outputs of shape "
                                    << out.dims() << " (" << static_cast<long long>(want) << " labels expected)");
        const T* o = out.data();
        const L* y = labels.data();
        index_t right = 0, count = 0;
        if constexpr (Loss::binary) {
            const T threshold = Loss::from_logits ? T(0) : T(0.5);
            for (index_t i = 0; i < n; ++i) right += (o[i] > threshold) == (y[i] > L(0.5));
            count = n;
        } else {
            for (index_t r = 0; r * len < n; ++r, ++count) {
                const index_t k = detail::argmax_of(o + r * len, len);
                if constexpr (Loss::sparse) right += static_cast<index_t>(static_cast<std::int32_t>(k) == y[r]);
                else right += static_cast<index_t>(k == detail::argmax_of(y + r * len, len));
            }
        }
        return static_cast<double>(right) / static_cast<double>(count);
    }
};

}  // namespace typeflow::metrics
