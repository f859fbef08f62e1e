// typeflow/backend/eigen/interop.hpp — zero-copy views between typeflow
// tensors and Eigen matrices.
#pragma once
#include <Eigen/Core>

#include <typeflow/core/message.hpp>
#include <typeflow/core/tensor.hpp>

namespace typeflow {

/// A view of an Eigen matrix or array's elements as a tensor (no copy).
/// Vectors become rank 1; matrices rank 2 and must be row-major (Eigen's
/// default is column-major: declare Eigen::Matrix<T, R, C, Eigen::RowMajor>).
template <class Derived>
auto view(const Eigen::PlainObjectBase<Derived>& m) {
    using T = typename Derived::Scalar;
    if constexpr (Derived::IsVectorAtCompileTime) {
        return tensor_view<const T>{m.data(), dims{static_cast<index_t>(m.size())}};
    } else {
        static_assert(Derived::IsRowMajor,
                      "typeflow: view: a matrix must be row-major to be viewed as a tensor without a copy");
        return tensor_view<const T>{m.data(), dims{static_cast<index_t>(m.rows()), static_cast<index_t>(m.cols())}};
    }
}

/// Row-major Eigen matrix type of element T.
template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A rank-2 tensor as a mutable Eigen matrix map (no copy).
template <class T>
Eigen::Map<row_matrix<T>> as_matrix(tensor<T>& t) {
    if (t.rank() != 2) detail::raise(detail::message() << "as_matrix: tensor of shape " << t.dims() << " is not rank 2");
    return {t.data(), t.dims()[0], t.dims()[1]};
}
template <class T>
Eigen::Map<const row_matrix<T>> as_matrix(const tensor<T>& t) {
    if (t.rank() != 2) detail::raise(detail::message() << "as_matrix: tensor of shape " << t.dims() << " is not rank 2");
    return {t.data(), t.dims()[0], t.dims()[1]};
}
/// Any tensor as a mutable Eigen column array of all its elements (no copy).
template <class T>
Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> as_array(tensor<T>& t) {
    return {t.data(), t.size()};
}
template <class T>
Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> as_array(const tensor<T>& t) {
    return {t.data(), t.size()};
}

}  // namespace typeflow
