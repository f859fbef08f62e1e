// typeflow/models/optimizers.hpp — optimizers for compile(), as Keras names
// them: settings only; compile() builds the tf::train optimizer with the
// model's learning-rate variable (which LearningRateScheduler changes).
//
//   model.compile(loss, tf::optimizers::adam{}, tf::metrics::accuracy{});
//   tf::optimizers::sgd{.learning_rate = 0.1}, tf::optimizers::rmsprop{.rho = 0.95}
#pragma once
#include <typeflow/train/optimizers.hpp>

namespace typeflow::optimizers {

/// Plain gradient descent.
struct sgd {
    double learning_rate = 0.01;
    template <class LR>
    auto make(const LR& lr) const {
        return train::sgd(lr);
    }
};
/// Gradient descent with momentum (Nesterov's when nesterov is true).
struct momentum {
    double learning_rate = 0.01, momentum = 0.9;
    bool nesterov = false;
    template <class LR>
    auto make(const LR& lr) const {
        return train::momentum(lr, train::momentum_options{.momentum = momentum, .nesterov = nesterov});
    }
};
/// Adam (Keras' defaults).
struct adam {
    double learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7, weight_decay = 0;
    template <class LR>
    auto make(const LR& lr) const {
        return train::adam(lr, train::adam_options{.beta1 = beta_1, .beta2 = beta_2, .epsilon = epsilon,
                                                   .weight_decay = weight_decay});
    }
};
/// RMSProp (Keras' defaults).
struct rmsprop {
    double learning_rate = 0.001, rho = 0.9, momentum = 0, epsilon = 1e-7;
    template <class LR>
    auto make(const LR& lr) const {
        return train::rmsprop(lr, train::rmsprop_options{.rho = rho, .epsilon = epsilon, .momentum = momentum});
    }
};
/// Adagrad (Keras' defaults).
struct adagrad {
    double learning_rate = 0.001, initial_accumulator_value = 0.1;
    template <class LR>
    auto make(const LR& lr) const {
        return train::adagrad(lr, train::adagrad_options{.initial_accumulator = initial_accumulator_value});
    }
};

}  // namespace typeflow::optimizers
