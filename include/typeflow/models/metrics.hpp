// typeflow/models/metrics.hpp — metrics kept by hand in a custom training
// loop (Keras' tf.keras.metrics.Mean, SparseCategoricalAccuracy): run-time
// objects updated with fetched values.
//
//   tf::metrics::mean train_loss;
//   tf::metrics::sparse_categorical_accuracy train_accuracy;
//   auto [l, out, _] = s.run(tf::fetch(loss, logits, step), ...);
//   train_loss.update_state(l.item());
//   train_accuracy.update_state(yb, out);
//   std::printf("loss %.4f accuracy %.4f\n", train_loss.result(), train_accuracy.result());
#pragma once
#include <cstdint>

#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/core/tensor.hpp>

namespace typeflow::metrics {

/// The (weighted) mean of the values it is given.
class mean {
public:
    void update_state(double value, double weight = 1.0) {
        sum_ += value * weight;
        count_ += weight;
    }
    /// The mean so far (0 before any value).
    double result() const noexcept { return count_ > 0 ? sum_ / count_ : 0.0; }
    void reset_state() noexcept { sum_ = count_ = 0; }

private:
    double sum_ = 0, count_ = 0;
};

/// The fraction of examples whose largest score is the integer label:
/// labels [batch] (int32), scores [batch, classes].
class sparse_categorical_accuracy {
public:
    template <class T>
    void update_state(const tensor<std::int32_t>& labels, const tensor<T>& scores) {
        const dims& d = scores.dims();
        if (d.rank != 2 || labels.dims().rank != 1 || labels.dims()[0] != d[0])
            typeflow::detail::raise(typeflow::detail::message()
                                    << "sparse_categorical_accuracy: labels " << labels.dims() << " and scores " << d
                                    << " must be [batch] and [batch, classes]");
        const index_t n = d[0], c = d[1];
        for (index_t i = 0; i < n; ++i) {
            index_t best = 0;
            for (index_t k = 1; k < c; ++k)
                if (scores[i * c + k] > scores[i * c + best]) best = k;
            right_ += best == labels[i];
        }
        total_ += n;
    }
    /// The accuracy so far (0 before any example).
    double result() const noexcept { return total_ ? static_cast<double>(right_) / static_cast<double>(total_) : 0.0; }
    void reset_state() noexcept { right_ = total_ = 0; }

private:
    std::int64_t right_ = 0, total_ = 0;
};

}  // namespace typeflow::metrics
