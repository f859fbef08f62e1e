// typeflow/models.hpp — Keras-style layers and models (opt-in, on top of
// typeflow.hpp): tf::layers, tf::models::sequential, compile / fit /
// evaluate / predict, losses, metrics, optimizers and callbacks.
//
//   #include <typeflow/models.hpp>
//   namespace tf = typeflow;
//   using mlp = tf::models::sequential<tf::layers::input<float, 784>, tf::layers::dense<64, tf::layers::relu>,
//                                      tf::layers::dense<10>>;
//   auto model = mlp{}.compile(tf::losses::sparse_categorical_crossentropy<tf::losses::from_logits>{},
//                              tf::optimizers::adam{}, tf::metrics::accuracy{});
//   model.fit(train, {.epochs = 2});
#pragma once

#include <typeflow/typeflow.hpp>

#include <typeflow/layers/conv.hpp>
#include <typeflow/layers/core.hpp>
#include <typeflow/layers/dropout.hpp>
#include <typeflow/layers/embedding.hpp>
#include <typeflow/layers/layer.hpp>
#include <typeflow/layers/merge.hpp>
#include <typeflow/layers/normalization.hpp>
#include <typeflow/layers/pooling.hpp>
#include <typeflow/layers/recurrent.hpp>
#include <typeflow/models/callbacks.hpp>
#include <typeflow/models/functional.hpp>
#include <typeflow/models/losses.hpp>
#include <typeflow/models/metrics.hpp>
#include <typeflow/models/model.hpp>
#include <typeflow/models/optimizers.hpp>
#include <typeflow/models/sequential.hpp>
