// typeflow/data/range.hpp — the counting source: scalars start, start +
// step, ... below stop (TensorFlow's Dataset.range).
#pragma once
#include <cstdint>

#include <typeflow/core/config.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/data/dataset.hpp>

namespace typeflow::data {

/// The int64 scalars start, start + step, ... up to but excluding stop.
TYPEFLOW_DECL dataset<std::int64_t> range(index_t start, index_t stop, index_t step = 1);
/// The int64 scalars 0, 1, ..., n - 1.
TYPEFLOW_DECL dataset<std::int64_t> range(index_t n);

}  // namespace typeflow::data

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/data/impl/range.ipp>
#endif
