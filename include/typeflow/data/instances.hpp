// typeflow/data/instances.hpp — the input pipelines' common element types
// (float features with int32 labels, float with float, float alone), whose
// datasets (and with them their stages, which only the datasets' members
// name) and MNIST loader TYPEFLOW_SEPARATE_COMPILATION compiles once, in
// typeflow/src.hpp (data/impl/instances.ipp). Other element types compile
// where they are used, as in a header-only build.
#pragma once
#include <cstdint>
#include <string>

#include <typeflow/core/tensor.hpp>
#include <typeflow/data/batch.hpp>
#include <typeflow/data/cache.hpp>
#include <typeflow/data/dataset.hpp>
#include <typeflow/data/from_tensors.hpp>
#include <typeflow/data/mnist.hpp>
#include <typeflow/data/prefetch.hpp>
#include <typeflow/data/repeat.hpp>
#include <typeflow/data/shuffle.hpp>
#include <typeflow/data/take.hpp>

// KW is `extern template` (declarations) or `template` (definitions); the
// element's components are the remaining arguments.
#define TYPEFLOW_DATA_STAGE_INSTANCES(KW, ...) KW class typeflow::data::dataset<__VA_ARGS__>;
#define TYPEFLOW_DATA_INSTANCES(KW)                                                                            \
    TYPEFLOW_DATA_STAGE_INSTANCES(KW, float, std::int32_t)                                                     \
    TYPEFLOW_DATA_STAGE_INSTANCES(KW, float, float)                                                            \
    TYPEFLOW_DATA_STAGE_INSTANCES(KW, float)                                                                   \
    KW typeflow::data::mnist_split<float> typeflow::data::load_mnist_split<float>(                             \
        const std::string&, const std::string&, const typeflow::data::mnist_options&);                         \
    KW typeflow::data::mnist_data<float> typeflow::data::load_mnist<float>(const std::string&,                 \
                                                                        const typeflow::data::mnist_options&);

#if defined(TYPEFLOW_SEPARATE_COMPILATION)
TYPEFLOW_DATA_INSTANCES(extern template)
#endif
